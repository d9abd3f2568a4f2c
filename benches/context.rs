//! Context bookkeeping per request on a 2,000-message history: micro-compaction (the copy that
//! is sent) plus the token estimates rein makes before each request (target ≤ 1 ms together).

use criterion::{Criterion, criterion_group, criterion_main};
use rein::agent::context::{estimate_all, estimate_sent, micro_compact};
use rein::llm::{AssistantPart, Message, ToolCall};
use std::hint::black_box;

/// A long session: a user message every 20 steps; each step an assistant message (some text,
/// one tool call) and its result, from a few lines to a few pages of output.
fn history(messages: usize) -> Vec<Message> {
    let mut h = Vec::with_capacity(messages);
    let mut step = 0usize;
    while h.len() < messages {
        if step.is_multiple_of(20) {
            h.push(Message::User {
                content: format!("Please look at module {step} and fix what fails. ").repeat(4),
            });
        }
        let id = format!("call_{step}");
        h.push(Message::Assistant {
            parts: vec![
                AssistantPart::Text {
                    text: "Let me check the next file. ".repeat(3),
                },
                AssistantPart::ToolCall(ToolCall {
                    id: id.clone(),
                    name: "bash".into(),
                    arguments: format!("{{\"command\":\"cargo test -q module_{step}\"}}"),
                }),
            ],
        });
        let lines = [3, 40, 120, 15][step % 4];
        h.push(Message::ToolResult {
            call_id: id,
            name: "bash".into(),
            content: "test module::case ... ok (0.01 s) and some more output\n".repeat(lines),
            is_error: step.is_multiple_of(7),
        });
        step += 1;
    }
    h.truncate(messages);
    h
}

fn per_request(c: &mut Criterion) {
    let h = history(2_000);
    let bytes: usize = h.iter().map(|m| m.text().len()).sum();
    eprintln!(
        "history: {} messages, {:.1} MB of text",
        h.len(),
        bytes as f64 / 1e6
    );
    let mut g = c.benchmark_group("context_2000_messages");
    g.bench_function("micro_compact", |b| {
        b.iter(|| black_box(micro_compact(black_box(&h), 3, 0)))
    });
    g.bench_function("estimate_sent", |b| {
        b.iter(|| black_box(estimate_sent(black_box(&h), Some(3), 0)))
    });
    // What one request costs: the compacted copy, the compaction check (an estimate of what is
    // sent) and the usage shown afterwards (another).
    g.bench_function("per_request", |b| {
        b.iter(|| {
            let sent = micro_compact(black_box(&h), 3, 0);
            let due = estimate_sent(&h, Some(3), 0);
            let shown = estimate_all(&sent);
            black_box((sent, due, shown))
        })
    });
    g.finish();
}

criterion_group!(benches, per_request);
criterion_main!(benches);
