//! Auto-compaction and `/compact`: ask the model for a handoff note, then continue from
//! [note, AGENTS.md, todos] plus the most recent turns that fit in ~35% of the window.

use super::context::{estimate, estimate_all, estimate_text};
use crate::llm::{AssistantPart, Client, LlmError, Message, Request};
use tokio_util::sync::CancellationToken;

const COMPACT_PROMPT: &str = include_str!("../../assets/compact.md");

/// Share of the window the kept recent turns may take.
const TAIL_SHARE: f64 = 0.35;

/// Marks the summary so the model never takes it for something the user said.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation, written by rein when the \
context was compacted. It is not a message from the user.]";

/// Longest slice of one tool result put in the summariser's transcript.
const RESULT_SNIPPET: usize = 2_000;

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} […{} more bytes]", &text[..end], text.len() - end)
}

/// Renders the history as a plain transcript (tool blocks can't be sent without tools).
pub fn transcript(history: &[Message], budget_tokens: u64) -> String {
    let mut blocks: Vec<String> = history
        .iter()
        .map(|m| match m {
            Message::User { content } => format!("USER:\n{content}"),
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => format!(
                "TOOL RESULT ({name}{}):\n{}",
                if *is_error { ", error" } else { "" },
                clip(content, RESULT_SNIPPET)
            ),
            Message::Assistant { parts } => {
                let mut s = String::from("ASSISTANT:");
                for p in parts {
                    match p {
                        AssistantPart::Text { text } if !text.is_empty() => {
                            s.push('\n');
                            s.push_str(text);
                        }
                        AssistantPart::ToolCall(c) => {
                            s.push_str(&format!(
                                "\n[calls {} {}]",
                                c.name,
                                clip(&c.arguments, 1_000)
                            ));
                        }
                        _ => {}
                    }
                }
                s
            }
        })
        .collect();
    // Drop the oldest blocks until the transcript fits; the note says so.
    let mut total: u64 = blocks.iter().map(|b| estimate_text(b)).sum();
    let mut dropped = 0;
    while total > budget_tokens && blocks.len() > 1 {
        total -= estimate_text(&blocks[0]);
        blocks.remove(0);
        dropped += 1;
    }
    let mut out = String::new();
    if dropped > 0 {
        out.push_str(&format!(
            "[{dropped} older entries did not fit and are left out]\n\n"
        ));
    }
    out.push_str(&blocks.join("\n\n"));
    out
}

/// Asks the model, without tools, for the handoff note.
pub async fn summarize(
    client: &Client,
    model: String,
    history: &[Message],
    focus: Option<&str>,
    context_window: u64,
    cancel: &CancellationToken,
) -> Result<String, LlmError> {
    let budget = (context_window as f64 * 0.6) as u64;
    let mut ask = format!(
        "<transcript>\n{}\n</transcript>\n\nWrite the handoff note now.",
        transcript(history, budget)
    );
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        ask.push_str(&format!(" Concentrate on: {f}"));
    }
    let request = Request {
        model,
        system: COMPACT_PROMPT.to_string(),
        messages: vec![Message::User { content: ask }],
        tools: Vec::new(),
        max_tokens: 4096,
    };
    let response = client.stream(&request, cancel, &mut |_| {}).await?;
    let text = response.text();
    if text.trim().is_empty() {
        return Err(LlmError::Malformed("the summary came back empty".into()));
    }
    Ok(text)
}

/// Where the kept tail starts: the earliest boundary whose tail fits in `budget` tokens. A
/// boundary is a user or assistant message, so a tool call is never separated from its result.
fn tail_start(history: &[Message], budget: u64) -> usize {
    let mut best = history.len();
    let mut size = 0;
    for i in (0..history.len()).rev() {
        size += estimate(&history[i]);
        if size > budget {
            break;
        }
        if !matches!(history[i], Message::ToolResult { .. }) {
            best = i;
        }
    }
    best
}

/// Cuts tool results in `tail` so the whole tail fits in `budget` (a single huge result must
/// not make compaction loop).
fn shrink_tail(tail: &mut [Message], budget: u64) {
    while estimate_all(tail) > budget {
        let biggest = tail
            .iter_mut()
            .filter_map(|m| match m {
                Message::ToolResult { content, .. } => Some(content),
                _ => None,
            })
            .max_by_key(|c| c.len());
        let Some(content) = biggest else { return };
        if content.len() <= 400 {
            return;
        }
        let keep = content.len() / 2;
        *content = clip(content, keep);
    }
}

/// The history after compaction: the note (marked), instructions and todos, then the tail.
pub fn rebuild(
    history: &[Message],
    summary: &str,
    instructions: &str,
    todos: &str,
    context_window: u64,
) -> Vec<Message> {
    let budget = (context_window as f64 * TAIL_SHARE) as u64;
    let start = tail_start(history, budget);
    let mut tail: Vec<Message> = history[start..].to_vec();
    if tail.is_empty() {
        // Not even the last turn fits: keep the last user message and cut it to size.
        if let Some(Message::User { content }) = history
            .iter()
            .rev()
            .find(|m| matches!(m, Message::User { .. }))
        {
            tail.push(Message::User {
                content: clip(content, (budget * 4) as usize),
            });
        }
    }
    shrink_tail(&mut tail, budget);
    let mut head = format!("{SUMMARY_HEADER}\n\n{}", summary.trim());
    if !instructions.trim().is_empty() {
        head.push_str(&format!("\n\n{}", instructions.trim()));
    }
    if !todos.trim().is_empty() {
        head.push_str(&format!("\n\n# Current todo list\n{}", todos.trim()));
    }
    let mut out = vec![Message::User { content: head }];
    // Keep roles alternating: after the note, the tail must not start with a user message
    // without an assistant turn in between (Anthropic merges it, others may not).
    if matches!(tail.first(), Some(Message::User { .. }) | None) {
        out.push(Message::Assistant {
            parts: vec![AssistantPart::Text {
                text: "Continuing.".into(),
            }],
        });
    }
    out.extend(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> Message {
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: "{\"command\":\"ls\"}".into(),
            })],
        }
    }

    fn result(id: &str, len: usize) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "bash".into(),
            content: "y".repeat(len),
            is_error: false,
        }
    }

    #[test]
    fn tail_never_starts_with_a_tool_result() {
        let mut h = vec![Message::User {
            content: "start".into(),
        }];
        for i in 0..10 {
            h.push(call(&format!("c{i}")));
            h.push(result(&format!("c{i}"), 2_000));
        }
        let rebuilt = rebuild(&h, "note", "", "", 6_000);
        assert!(
            matches!(&rebuilt[0], Message::User { content } if content.starts_with(SUMMARY_HEADER))
        );
        assert!(matches!(rebuilt[1], Message::Assistant { .. }));
        // Every tool result follows its call.
        for w in rebuilt.windows(2) {
            if let Message::ToolResult { call_id, .. } = &w[1] {
                match &w[0] {
                    Message::Assistant { .. } => {
                        assert!(w[0].tool_calls().any(|c| &c.id == call_id));
                    }
                    Message::ToolResult { .. } => {}
                    other => panic!("result after {other:?}"),
                }
            }
        }
        assert!(estimate_all(&rebuilt[1..]) <= 2_100 + 200);
        assert!(rebuilt.len() < h.len());
    }

    #[test]
    fn a_single_huge_result_is_truncated() {
        let h = vec![
            Message::User {
                content: "go".into(),
            },
            call("a"),
            result("a", 200_000),
        ];
        let rebuilt = rebuild(&h, "note", "AGENTS", "[ ] x", 6_000);
        assert!(estimate_all(&rebuilt) < 6_000);
        assert!(
            matches!(&rebuilt[0], Message::User { content } if content.contains("AGENTS") && content.contains("[ ] x"))
        );
    }

    #[test]
    fn transcript_fits_budget() {
        let mut h = Vec::new();
        for i in 0..100 {
            h.push(Message::User {
                content: format!("message {i} {}", "z".repeat(400)),
            });
        }
        let t = transcript(&h, 2_000);
        assert!(estimate_text(&t) <= 2_100);
        assert!(t.contains("message 99"));
        assert!(!t.contains("message 0 "));
        assert!(t.starts_with("["));
    }
}
