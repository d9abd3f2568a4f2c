//! A tool call as the conversation shows it: what it does, how far it got, what it printed,
//! the change it made and, for a `task` call, its subagent's calls. Plain data: `view/tool.rs`
//! lays it out.

use super::cell::FileEdit;
use crate::protocol::{ToolDisplay, ToolStatus};
use std::time::Instant;

/// Live output kept while a tool runs; older output is dropped (the result replaces it).
const LIVE_MAX_BYTES: usize = 256 * 1024;

/// One tool call of a subagent, shown folded under its `task` cell.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildCall {
    /// Call id (inside the subagent).
    pub call_id: String,
    /// One-line summary.
    pub summary: String,
    /// How it ended (`None` while running).
    pub status: Option<ToolStatus>,
    /// It runs a command (its file changes are for `/diff` only, as the main agent's are).
    pub command: bool,
}

/// State of a tool call cell.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// Call id.
    pub call_id: String,
    /// What the call does (the header and the preview are rendered from it alone).
    pub display: ToolDisplay,
    /// A command's exit code once it exited.
    pub exit_code: Option<i32>,
    /// Live output while running; the result afterwards.
    pub output: String,
    /// How it ended (`None` while running).
    pub status: Option<ToolStatus>,
    /// When it started (for the elapsed time while running).
    pub started: Instant,
    /// Wall time once finished.
    pub elapsed_ms: Option<u64>,
    /// The change an edit made (what was written, never what was proposed).
    pub diff: Option<Box<FileEdit>>,
    /// The change an edit proposed; shown (folded) when it was not written.
    pub proposed: Option<Box<FileEdit>>,
    /// The call waits for the person's answer (its clock starts when it runs).
    pub waiting: bool,
    /// A subagent's description, when this is a `task` call.
    pub subagent: Option<String>,
    /// The subagent's tool calls.
    pub children: Vec<ChildCall>,
    /// Output lines dropped from the front of a huge live output.
    dropped_lines: usize,
}

impl ToolCall {
    /// A call that just started.
    pub fn new(call_id: String, display: ToolDisplay, now: Instant) -> ToolCall {
        ToolCall {
            call_id,
            display,
            exit_code: None,
            output: String::new(),
            status: None,
            started: now,
            elapsed_ms: None,
            diff: None,
            proposed: None,
            waiting: false,
            subagent: None,
            children: Vec::new(),
            dropped_lines: 0,
        }
    }

    /// Appends live output, keeping at most the last ~256 KiB.
    pub fn push_output(&mut self, chunk: &str) {
        self.output.push_str(chunk);
        if self.output.len() > LIVE_MAX_BYTES {
            let mut cut = self.output.len() - LIVE_MAX_BYTES / 2;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            // Cut at a line start so the tail shows whole lines.
            if let Some(nl) = self.output[cut..].find('\n') {
                cut += nl + 1;
            }
            self.dropped_lines += self.output[..cut].matches('\n').count();
            self.output.drain(..cut);
        }
    }

    /// Output lines dropped from the front of a huge live output (the tail says how many).
    pub fn dropped_lines(&self) -> usize {
        self.dropped_lines
    }

    /// Records the end of the call; `output` is what the model sees.
    pub fn finish(&mut self, status: ToolStatus, output: String, elapsed_ms: u64) {
        self.status = Some(status);
        self.output = output;
        self.elapsed_ms = Some(elapsed_ms);
        self.dropped_lines = 0;
    }

    /// Whether it still runs (or waits to).
    pub fn is_running(&self) -> bool {
        self.status.is_none()
    }

    /// The person answered: the call runs from `now` on.
    pub fn answered(&mut self, now: Instant) {
        if self.waiting {
            self.waiting = false;
            self.started = now;
        }
    }

    /// The one-line summary a list of calls shows (`bash  cargo test`).
    pub fn summary(display: &ToolDisplay) -> String {
        let subject = display.subject();
        if subject.is_empty() {
            display.label().to_string()
        } else {
            format!("{}  {subject}", display.label())
        }
    }

    /// The change whose lines the cell shows: the one written, else the one proposed.
    pub fn shown_edit(&self) -> Option<&FileEdit> {
        self.diff.as_deref().or(self.proposed.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_live_output_keeps_its_tail_and_counts_what_it_dropped() {
        let display = ToolDisplay::Exec {
            command: "yes".into(),
        };
        let mut c = ToolCall::new("c".into(), display, Instant::now());
        let line = "y".repeat(99) + "\n";
        for _ in 0..3_000 {
            c.push_output(&line);
        }
        assert!(c.output.len() <= LIVE_MAX_BYTES);
        assert!(c.output.ends_with(&line) && c.output.starts_with('y'));
        assert_eq!(c.dropped_lines() + c.output.matches('\n').count(), 3_000);
        c.finish(ToolStatus::Ok, "done".into(), 1);
        assert_eq!(c.dropped_lines(), 0);
    }
}
