//! Auto-compaction and `/compact`: ask the model for a handoff note, then continue from
//! [note, AGENTS.md, todos] plus the most recent turns that fit in ~35% of the window.

use super::context::{estimate, estimate_all, estimate_text};
use crate::llm::{AssistantPart, Client, LlmError, Message, Request};
use tokio_util::sync::CancellationToken;

const COMPACT_PROMPT: &str = include_str!("../../assets/compact.md");

/// Share of the window the kept recent turns may take.
pub const TAIL_SHARE: f64 = 0.35;

/// Share of the window the transcript sent to the summariser may take.
const TRANSCRIPT_SHARE: f64 = 0.6;

/// Longest handoff note asked for, in tokens (less for small windows: prompt + note must fit).
const SUMMARY_MAX_TOKENS: u64 = 4096;

/// Marks the summary so the model never takes it for something the user said.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation, written by rein when the \
context was compacted. It is not a message from the user.]";

/// Longest slice of one tool result put in the summariser's transcript.
const RESULT_SNIPPET: usize = 2_000;

fn clip(text: &str, max: usize) -> String {
    match crate::text::cut(text, max, crate::text::Unit::Bytes) {
        Some(head) => format!("{head} […{} more bytes]", text.len() - head.len()),
        None => text.to_string(),
    }
}

/// Renders the history as a plain transcript (tool blocks can't be sent without tools).
pub fn transcript(history: &[Message], budget_tokens: u64) -> String {
    let blocks: Vec<String> = history.iter().map(block).collect();
    let is_user: Vec<bool> = history
        .iter()
        .map(|m| matches!(m, Message::User { .. }))
        .collect();
    let mut kept: Vec<Option<String>> = blocks.into_iter().map(Some).collect();
    let mut total: u64 = kept.iter().flatten().map(|b| estimate_text(b) + 1).sum();
    // When it is too long, the oldest assistant messages and tool results go first; what the user
    // said matters most (the note quotes it), so user messages go only after them, the first
    // one never. The last entry always stays.
    let last = kept.len().saturating_sub(1);
    for users in [false, true] {
        for i in 0..last {
            if total <= budget_tokens {
                break;
            }
            if is_user[i] != users || (users && i == 0) {
                continue;
            }
            if let Some(b) = kept[i].take() {
                total -= estimate_text(&b) + 1;
            }
        }
    }
    // Still too long (huge messages): every entry gets an equal share.
    if total > budget_tokens {
        let count = kept.iter().flatten().count().max(1) as u64;
        let share = (budget_tokens * 4 / count) as usize;
        for b in kept.iter_mut().flatten() {
            *b = clip(b, share);
        }
    }
    render(kept)
}

/// One message of the transcript.
fn block(m: &Message) -> String {
    match m {
        Message::User { content } => format!("USER:\n{content}"),
        Message::UserImage { image } => format!("USER:\n{}", image.meta.label()),
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
    }
}

/// The kept blocks, with a note where entries were left out.
fn render(kept: Vec<Option<String>>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut gap = 0;
    for b in kept {
        match b {
            None => gap += 1,
            Some(b) => {
                if gap > 0 {
                    parts.push(format!("[{gap} entries left out to fit]"));
                    gap = 0;
                }
                parts.push(b);
            }
        }
    }
    parts.join("\n\n")
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
    let budget = (context_window as f64 * TRANSCRIPT_SHARE) as u64;
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
        reminder: None,
        force_tool: false,
        max_tokens: SUMMARY_MAX_TOKENS.min(context_window / 5).max(256) as u32,
        mark: None,
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
/// When not even the last exchange fits, it starts at the last boundary anyway (its results are
/// cut to size afterwards), so the work in progress is never lost.
fn tail_start(history: &[Message], budget: u64) -> usize {
    let mut best = None;
    let mut size = 0;
    for i in (0..history.len()).rev() {
        let boundary = !matches!(history[i], Message::ToolResult { .. });
        size += estimate(&history[i]);
        if size > budget {
            if best.is_none() && boundary {
                best = Some(i);
            }
            if best.is_some() {
                break;
            }
            continue;
        }
        if boundary {
            best = Some(i);
        }
    }
    best.unwrap_or(history.len())
}

/// Cuts the biggest tool results (or a huge pasted user message) in `tail` until the whole tail
/// fits in `budget` (a single huge result must not make compaction loop).
fn shrink_tail(tail: &mut [Message], budget: u64) {
    let mut total = estimate_all(tail);
    while total > budget {
        let biggest = tail
            .iter_mut()
            .filter_map(|m| match m {
                Message::ToolResult { content, .. } | Message::User { content } => Some(content),
                Message::Assistant { .. } | Message::UserImage { .. } => None,
            })
            .max_by_key(|c| c.len());
        let Some(content) = biggest else { return };
        if content.len() <= 400 {
            return;
        }
        let before = estimate_text(content);
        // Cut what is needed plus room for the note clip adds, but at most half at a time, so
        // several big results share the cut.
        let excess = ((total - budget) * 4) as usize + 64;
        let keep = content.len().saturating_sub(excess).max(content.len() / 2);
        *content = clip(content, keep);
        total = total - before + estimate_text(content);
    }
}

/// The history after compaction: the note (marked), instructions and todos, then the most
/// recent turns that fit in `tail_budget` tokens.
pub fn rebuild(
    history: &[Message],
    summary: &str,
    instructions: &str,
    todos: &str,
    tail_budget: u64,
) -> Vec<Message> {
    let start = tail_start(history, tail_budget);
    let mut tail: Vec<Message> = history[start..].to_vec();
    shrink_tail(&mut tail, tail_budget);
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
        let rebuilt = rebuild(&h, "note", "", "", 2_100);
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
        let rebuilt = rebuild(&h, "note", "AGENTS", "[ ] x", 2_100);
        assert!(estimate_all(&rebuilt) < 2_300);
        // The call and its (cut) result are kept: the work in progress is not lost.
        assert!(
            matches!(rebuilt.last(), Some(Message::ToolResult { content, .. }) if content.contains("more bytes]"))
        );
        assert!(rebuilt.iter().any(|m| m.tool_calls().any(|c| c.id == "a")));
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
        // The first user message is what the goal quotes: it stays.
        assert!(t.starts_with("USER:\nmessage 0 "));
        assert!(!t.contains("message 1 "));
        assert!(t.contains("entries left out to fit]"));
        // Tool output goes before what the user said.
        let mut h = vec![Message::User {
            content: "the goal".into(),
        }];
        for i in 0..20 {
            h.push(call(&format!("c{i}")));
            h.push(result(&format!("c{i}"), 2_000));
            h.push(Message::User {
                content: format!("also {i}"),
            });
        }
        let t = transcript(&h, 2_000);
        assert!(estimate_text(&t) <= 2_100, "{}", estimate_text(&t));
        for i in 0..20 {
            assert!(t.contains(&format!("also {i}")), "{t}");
        }
        // A single huge message is cut to size.
        let h = vec![Message::User {
            content: "q".repeat(100_000),
        }];
        assert!(estimate_text(&transcript(&h, 2_000)) <= 2_100);
    }
}
