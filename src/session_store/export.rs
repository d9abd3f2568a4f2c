//! Exports: a readable Markdown transcript and a JSON object with the header and entries.

use super::entry::Entry;
use super::header::Header;
use super::load::LoadedSession;
use crate::llm::AssistantPart;
use crate::protocol::{Decision, ToolStatus};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A whole session as one JSON object (`rein sessions export --format json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedSession {
    /// The header.
    pub header: Header,
    /// Every entry in order.
    pub entries: Vec<Entry>,
}

/// The session as pretty-printed JSON: `{"header": {...}, "entries": [...]}`.
pub fn export_json(session: &LoadedSession) -> String {
    #[derive(Serialize)]
    struct View<'a> {
        header: &'a Header,
        entries: &'a [Entry],
    }
    // Serialising plain data to a String cannot fail.
    serde_json::to_string_pretty(&View {
        header: &session.header,
        entries: &session.entries,
    })
    .unwrap_or_default()
}

/// Reads back what [`export_json`] wrote.
pub fn parse_export_json(text: &str) -> Result<ExportedSession, serde_json::Error> {
    serde_json::from_str(text)
}

/// A code fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn fenced(out: &mut String, lang: &str, text: &str) {
    let f = fence(text);
    let _ = writeln!(out, "{f}{lang}\n{}\n{f}\n", text.trim_end_matches('\n'));
}

fn time(entry: &Entry) -> String {
    entry.ts().strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn pretty_args(raw: &str) -> String {
    serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| raw.to_string())
}

/// One part of an answer: its text, its reasoning folded, a call with its arguments.
fn write_part(out: &mut String, part: &AssistantPart) {
    match part {
        AssistantPart::Text { text } => {
            let _ = writeln!(out, "{}\n", text.trim_end());
        }
        AssistantPart::Thinking { text, .. } if !text.trim().is_empty() => {
            out.push_str("<details><summary>Reasoning</summary>\n\n");
            let _ = writeln!(out, "{}\n\n</details>\n", text.trim_end());
        }
        AssistantPart::Thinking { .. } => {}
        AssistantPart::RedactedThinking { .. } => {
            out.push_str("*(redacted reasoning)*\n\n");
        }
        AssistantPart::ToolCall(call) => {
            let _ = writeln!(out, "**Tool call** `{}` (id `{}`)\n", call.name, call.id);
            fenced(out, "json", &pretty_args(&call.arguments));
        }
    }
}

/// A tool's result, with how it ended.
fn write_tool_result(out: &mut String, e: &super::entry::ToolResultEntry) {
    let status = match e.status {
        Some(ToolStatus::Ok) => "ok",
        Some(ToolStatus::Error) => "error",
        Some(ToolStatus::Blocked) => "blocked",
        Some(ToolStatus::Denied) => "denied",
        Some(ToolStatus::Interrupted) => "interrupted",
        None if e.is_error => "error",
        None => "ok",
    };
    let _ = writeln!(
        out,
        "**Result** of `{}` (id `{}`, {status})\n",
        e.name, e.call_id
    );
    fenced(out, "", &e.content);
}

/// A rewind, between rules: what went back, and to where.
fn write_rewind(out: &mut String, e: &super::entry::RewindEntry, time: &str) {
    let what = match (e.context.is_some(), e.changes.is_empty()) {
        (true, true) => "conversation",
        (true, false) => "code and conversation",
        (false, _) => "code",
    };
    let _ = writeln!(
        out,
        "---\n\n*Rewound the {what} to before user message {} · {time}.*\n\n---\n",
        e.to + 1
    );
}

/// The todo list, one checkbox a line.
fn write_todos(out: &mut String, todos: &[crate::protocol::Todo]) {
    out.push_str("**Todos**\n\n");
    for t in todos {
        let mark = match t.status {
            crate::protocol::TodoStatus::Pending => "[ ]",
            crate::protocol::TodoStatus::InProgress => "[~]",
            crate::protocol::TodoStatus::Completed => "[x]",
        };
        let _ = writeln!(out, "- {mark} {}", t.content);
    }
    out.push('\n');
}

/// One entry of the transcript (`level`: the heading of a message, deeper for a subagent's).
fn write_entry(out: &mut String, entry: &Entry, level: &str) {
    match entry {
        Entry::User(e) => {
            // Only the person's own messages are the user's: rein's nudges and a `!command`'s
            // output reach the model as user messages, but nobody typed them.
            let who = match e.from {
                None => "User",
                Some(super::UserFrom::Rein) => "rein, to the model",
                Some(super::UserFrom::Shell) => "Shell output (`!` command)",
            };
            let _ = writeln!(
                out,
                "{level} {who} · {}\n\n{}\n",
                time(entry),
                e.content.trim_end()
            );
        }
        Entry::Assistant(e) => {
            let _ = writeln!(out, "{level} Assistant · {}\n", time(entry));
            for part in &e.parts {
                write_part(out, part);
            }
        }
        Entry::ToolResult(e) => write_tool_result(out, e),
        Entry::Approval(e) => {
            let answer = match e.decision {
                Decision::Yes => "approved",
                Decision::Always => "approved (always)",
                Decision::No => "refused",
            };
            let _ = write!(out, "*Call `{}` {answer}", e.call_id);
            if let Some(note) = &e.note {
                let _ = write!(out, ": {note}");
            }
            out.push_str("*\n\n");
        }
        Entry::Todos(e) => write_todos(out, &e.todos),
        Entry::Compaction(e) => {
            let _ = writeln!(
                out,
                "---\n\n*Conversation compacted · {} ({} → {} tokens). Summary:*\n",
                time(entry),
                e.before_tokens,
                e.after_tokens
            );
            for line in e.summary.trim_end().lines() {
                let _ = writeln!(out, "> {line}");
            }
            out.push_str("\n---\n\n");
        }
        Entry::Usage(_) => {}
        Entry::Image(e) => {
            let _ = writeln!(out, "{}\n", e.image.label());
        }
        Entry::ModelQuirk(e) => {
            let _ = writeln!(out, "*rein: {:?} ({})*\n", e.kind, e.detail);
        }
        Entry::Error(e) => {
            let _ = writeln!(out, "**Error:** {}\n", e.message);
        }
        Entry::Interrupted(_) => out.push_str("*Interrupted.*\n\n"),
        Entry::Rename(e) => {
            let _ = writeln!(out, "*Renamed to “{}”.*\n", e.title);
        }
        Entry::ModelChange(e) => {
            let _ = writeln!(out, "*Model switched to `{}`.*\n", e.model);
        }
        Entry::FileChange(e) => {
            let _ = writeln!(out, "*Wrote `{}`.*\n", e.path);
        }
        Entry::ModeChange(e) => {
            let _ = writeln!(out, "*Mode switched to {}.*\n", e.mode.label());
        }
        Entry::Checkpoint(e) => {
            let paths: Vec<String> = e.changes.iter().map(|c| format!("`{}`", c.path)).collect();
            let _ = writeln!(out, "*Files changed: {}.*\n", paths.join(", "));
        }
        Entry::Rewind(e) => write_rewind(out, e, &time(entry)),
        Entry::Subagent(e) => {
            let _ = write!(out, "> *subagent `{}`* · ", e.task_id);
            let mut inner = String::new();
            write_entry(&mut inner, &e.entry, "####");
            out.push_str(inner.trim_start_matches("#### "));
        }
    }
}

/// A readable transcript: messages, tool calls with their arguments and results in fenced
/// blocks, todos, compactions (with their summaries) and subagent entries.
pub fn export_markdown(session: &LoadedSession) -> String {
    let h = &session.header;
    let title = session
        .entries
        .iter()
        .rev()
        .find_map(|e| match e {
            Entry::Rename(r) => Some(r.title.clone()),
            _ => None,
        })
        .or_else(|| h.title.clone())
        .unwrap_or_else(|| format!("Session {}", h.id));
    let mut out = format!("# {title}\n\n");
    let _ = writeln!(out, "- id: `{}`", h.id);
    let _ = writeln!(out, "- directory: `{}`", h.cwd.display());
    // The model in use at the end, as `sessions list` shows it; where it started, if not that.
    let last_model = session
        .entries
        .iter()
        .rev()
        .find_map(|e| match e {
            Entry::ModelChange(m) => Some(m.model.as_str()),
            _ => None,
        })
        .unwrap_or(&h.model);
    let _ = write!(out, "- model: `{last_model}` ({})", h.provider);
    if last_model != h.model {
        let _ = write!(out, ", started with `{}`", h.model);
    }
    out.push('\n');
    let _ = writeln!(out, "- started: {}", h.created_at);
    if let Some(b) = &h.git_branch {
        let _ = writeln!(out, "- branch: `{b}`");
    }
    if let Some(p) = &h.parent {
        let _ = writeln!(out, "- forked from: `{p}`");
    }
    out.push('\n');
    for notice in &session.notices {
        let _ = writeln!(out, "> **Note:** {notice}\n");
    }
    for entry in &session.entries {
        write_entry(&mut out, entry, "##");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_person_s_messages_are_headed_user() {
        let heading = |entry: Entry| {
            let mut out = String::new();
            write_entry(&mut out, &entry, "##");
            out.lines().next().unwrap_or_default().to_string()
        };
        assert!(heading(Entry::user("fix it")).starts_with("## User · "));
        let nudge = Entry::from_message(&crate::llm::Message::User {
            content: "[rein] Your last answer was empty.".into(),
        });
        assert!(heading(nudge).starts_with("## rein, to the model · "));
        let shell = heading(Entry::shell_context("$ ls\na.txt"));
        assert!(
            shell.starts_with("## Shell output (`!` command) · "),
            "{shell}"
        );
    }

    #[test]
    fn fences_outgrow_backticks_in_the_content() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ```rust\nx\n``` b"), "````");
        let mut out = String::new();
        fenced(&mut out, "", "````\ninner\n````");
        assert!(
            out.starts_with("`````\n") && out.ends_with("`````\n\n"),
            "{out}"
        );
    }
}
