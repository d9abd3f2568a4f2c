//! The main agent's turn hooks: token accounting, the late reminder, auto-compaction.

use super::compact;
use super::context::{self, FileWatch};
use super::dispatch::CallResult;
use super::turn::TurnHooks;
use crate::llm::{Client, LlmError, Message};
use crate::protocol::EventSink;
use crate::protocol::{Event, Todo};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

/// Context bookkeeping that lives as long as the conversation.
#[derive(Default)]
pub struct ContextState {
    /// Prompt + completion tokens the provider reported for the last request (0 = none yet).
    pub reported: u64,
    /// How many history messages that report covers.
    pub covered: usize,
    /// Estimated tokens of the system prompt and tool specs (used until a report arrives).
    pub overhead: u64,
    /// Estimated size right after the last compaction: no new compaction without growth.
    pub compacted_to: Option<u64>,
    /// Whether the "window nearly full, auto_compact is off" warning was shown.
    pub warned_full: bool,
    /// Whether the "full, but not of conversation: nothing to compact" notice was shown.
    pub warned_overhead: bool,
    /// Messages before this index are a compaction summary and are never rewritten.
    pub frozen: usize,
    /// Changed-files tracking for the reminder.
    pub files: FileWatch,
    /// Tool results sent in full (the loop's setting; `None` until the first request).
    pub keep: Option<usize>,
}

impl ContextState {
    /// Tokens the next request would take: the provider's last report plus an estimate of what
    /// was appended since; before any report, an estimate of the whole request as it is sent
    /// (micro-compacted).
    pub fn used(&self, history: &[Message]) -> u64 {
        if self.reported == 0 {
            return self.overhead + context::estimate_sent(history, self.keep, self.frozen);
        }
        let covered = self.covered.min(history.len());
        self.reported
            + context::estimate_sent(
                &history[covered..],
                self.keep,
                self.frozen.saturating_sub(covered),
            )
    }

    /// Forget the provider's report (after the history was replaced).
    pub fn reset_report(&mut self) {
        self.reported = 0;
        self.covered = 0;
    }
}

/// Compaction settings and what a compaction needs.
pub struct Compactor {
    /// Model client.
    pub client: Client,
    /// Current model.
    pub model: Arc<RwLock<String>>,
    /// Where notices go.
    pub events: EventSink,
    /// Window in tokens.
    pub window: u64,
    /// Compact at this share of the window.
    pub threshold: f64,
    /// Whether to compact automatically.
    pub auto: bool,
    /// AGENTS.md block re-injected after compaction.
    pub instructions: String,
    /// Cancels the summary request.
    pub cancel: CancellationToken,
}

/// What a successful compaction produced (for the session file).
pub struct Compaction {
    /// The handoff note.
    pub summary: String,
    /// Estimated tokens before.
    pub before: u64,
    /// Estimated tokens after.
    pub after: u64,
}

impl Compactor {
    /// Summarises and replaces `history` (re-injecting `todos`); on failure the history is
    /// kept and a notice shown.
    pub async fn compact(
        &self,
        history: &mut Vec<Message>,
        state: &mut ContextState,
        todos: &[Todo],
        focus: Option<&str>,
    ) -> Option<Compaction> {
        let before = state.used(history);
        let model = crate::sync::read(&self.model).clone();
        self.events
            .send(Event::notice("Compacting the conversation…"));
        let summary = match compact::summarize(
            &self.client,
            model,
            history,
            focus,
            self.window,
            &self.cancel,
        )
        .await
        {
            Ok(s) => s,
            Err(LlmError::Cancelled) => {
                self.events.send(Event::warn(
                    "Compaction interrupted; the conversation is kept as it was.",
                ));
                return None;
            }
            Err(e) => {
                self.events.send(Event::warn(format!(
                    "Compaction failed ({e}); the conversation is kept as it was."
                )));
                // Don't retry on every request: wait for new growth.
                state.compacted_to = Some(before);
                return None;
            }
        };
        let todos = if todos.is_empty() {
            String::new()
        } else {
            crate::tools::todos::render(todos)
        };
        let tail_budget = self.tail_budget(state, &summary, &todos);
        *history = compact::rebuild(history, &summary, &self.instructions, &todos, tail_budget);
        state.reset_report();
        state.frozen = 1;
        state.warned_full = false;
        let after = state.used(history);
        state.compacted_to = Some(after);
        self.events.send(Event::Compacted {
            before_tokens: before,
            after_tokens: after,
        });
        Some(Compaction {
            summary,
            before,
            after,
        })
    }

    fn limit(&self) -> u64 {
        (self.window as f64 * self.threshold) as u64
    }

    /// Room for the kept recent turns: ~35% of the window, less when the system prompt, tools
    /// and note leave less than that below the threshold (small windows), so the result is
    /// clearly below the threshold and the next compaction needs real growth.
    fn tail_budget(&self, state: &ContextState, summary: &str, todos: &str) -> u64 {
        let head = context::estimate_text(summary)
            + context::estimate_text(todos)
            + context::estimate_text(&self.instructions)
            + 16;
        let room = self
            .limit()
            .saturating_sub(state.overhead + head + self.window / 10);
        ((self.window as f64 * compact::TAIL_SHARE) as u64)
            .min(room)
            .max(self.window / 20)
    }

    /// Whether the next request should be preceded by a compaction (and warns once when the
    /// window is nearly full but auto-compaction is off).
    pub fn due(&self, state: &mut ContextState, history: &[Message]) -> bool {
        let used = state.used(history);
        if !self.auto {
            // Obeyed strictly: never compact, only say so once when it gets tight.
            if used as f64 >= self.window as f64 * 0.95 && !state.warned_full {
                state.warned_full = true;
                self.events.send(Event::notice(format!(
                    "The context window is nearly full ({used} of {} tokens) and \
                         auto_compact is off: use /compact or /clear.",
                    self.window
                )));
            }
            return false;
        }
        if used < self.limit() {
            return false;
        }
        // The conversation itself is small (the system prompt and tools fill the window):
        // a summary would not make it smaller.
        let conversation = context::estimate_sent(history, state.keep, state.frozen);
        if conversation < self.window / 10 {
            if !state.warned_overhead {
                state.warned_overhead = true;
                self.events.send(Event::notice(overhead_notice(
                    used,
                    self.window,
                    conversation,
                )));
            }
            return false;
        }
        // No second compaction without new growth (5% of the window).
        match state.compacted_to {
            Some(after) => used > after + self.window / 20,
            None => true,
        }
    }
}

/// Why a nearly full window is not compacted: the conversation is a small part of it.
fn overhead_notice(used: u64, window: u64, conversation: u64) -> String {
    let percent = used.saturating_mul(100) / window.max(1);
    format!(
        "The context is at {percent}% of the {window}-token window, but the conversation is only \
         about {conversation} tokens of it: the rest is the system prompt, instructions and tool \
         definitions, which compaction cannot shrink, so nothing is compacted. Use a model with a \
         larger window (or set context_window if it is larger than rein assumes)."
    )
}

/// The main agent's hooks for one turn.
pub struct MainHooks<'a> {
    /// Token and compaction state.
    pub state: &'a mut ContextState,
    /// Compaction.
    pub compactor: Compactor,
    /// The todo list (the agent's own; write_todos results replace it).
    pub todos: &'a mut Vec<Todo>,
    /// Workspace, for git facts in the reminder.
    pub cwd: PathBuf,
    /// The approval mode (plan mode is explained in the reminder).
    pub mode: super::mode::ModeSwitch,
    /// Called for each appended message and each compaction (the session file).
    pub record: &'a mut (dyn FnMut(Record<'_>) + Send),
    /// The answer an interrupt cut off (the agent records it with the interruption).
    pub interrupted_answer: Option<String>,
}

/// Something the session file should keep.
pub enum Record<'r> {
    /// A message was appended.
    Message(&'r Message),
    /// A tool result was appended, with how the call went.
    ToolResult(&'r Message, &'r CallResult),
    /// The todo list was replaced.
    Todos(&'r [Todo]),
    /// The history was compacted into `history`.
    Compaction(&'r Compaction, &'r [Message]),
    /// The provider reported usage.
    Usage(u64, u64),
    /// The harness repaired something in an answer.
    Quirk(&'r super::repair::Quirk),
}

impl TurnHooks for MainHooks<'_> {
    fn appended(&mut self, msg: &Message) {
        (self.record)(Record::Message(msg));
    }

    fn tool_result(&mut self, msg: &Message, result: &CallResult) {
        (self.record)(Record::ToolResult(msg, result));
        if let Some(list) = &result.todos {
            self.todos.clone_from(list);
            // Kept next to its result, so a resumed session shows the list where it changed.
            (self.record)(Record::Todos(list));
            self.compactor.events.send(Event::TodosUpdated {
                todos: list.clone(),
            });
        }
    }

    fn usage(&mut self, input: u64, output: u64, history_len: usize) {
        // Some servers send zeros instead of leaving usage out: that is no report.
        if input == 0 {
            return;
        }
        self.state.reported = input + output;
        // The request covered the history so far; the answer is the next message.
        self.state.covered = history_len + 1;
        (self.record)(Record::Usage(input, output));
    }

    fn reminder(&mut self) -> Option<String> {
        let changed = self.state.files.changed(&self.cwd);
        let plan = (self.mode.get() == crate::protocol::ApprovalMode::Plan)
            .then_some(super::mode::PLAN_REMINDER);
        Some(context::reminder_with(
            &self.cwd, self.todos, &changed, plan,
        ))
    }

    fn after_tools(&mut self) {
        self.state.files.tools_ran();
    }

    fn interrupted_answer(&mut self, text: String) {
        self.interrupted_answer = Some(text);
    }

    fn quirk(&mut self, quirk: &super::repair::Quirk) {
        (self.record)(Record::Quirk(quirk));
    }

    fn frozen_prefix(&self) -> usize {
        self.state.frozen
    }

    fn before_request<'b>(
        &'b mut self,
        history: &'b mut Vec<Message>,
        keep: Option<usize>,
    ) -> BoxFuture<'b, bool> {
        Box::pin(async move {
            self.state.keep = keep;
            let mut rewrote = false;
            if self.compactor.due(self.state, history)
                && let Some(c) = self
                    .compactor
                    .compact(history, self.state, self.todos, None)
                    .await
            {
                (self.record)(Record::Compaction(&c, history));
                rewrote = true;
            }
            // The status line follows the context request by request.
            self.compactor.events.send(Event::Usage {
                used_tokens: self.state.used(history),
                context_window: self.compactor.window,
            });
            rewrote
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ClientOptions, ProviderKind};

    fn result(id: usize, len: usize) -> Message {
        Message::ToolResult {
            call_id: format!("c{id}"),
            name: "bash".into(),
            content: "r".repeat(len),
            is_error: false,
        }
    }

    fn compactor(auto: bool) -> (Compactor, tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let client = Client::new(ClientOptions::new(
            ProviderKind::OpenAi,
            "http://127.0.0.1:9/v1",
            None,
        ))
        .unwrap();
        let c = Compactor {
            client,
            model: Arc::new(RwLock::new("m".into())),
            events: EventSink::new(tx),
            window: 10_000,
            threshold: 0.85,
            auto,
            instructions: String::new(),
            cancel: CancellationToken::new(),
        };
        (c, rx)
    }

    #[test]
    fn used_is_the_report_plus_what_came_after_it() {
        let mut h = vec![Message::User {
            content: "u".repeat(400),
        }];
        let mut state = ContextState {
            overhead: 1_000,
            keep: Some(3),
            ..Default::default()
        };
        // No report yet: overhead plus the history as sent.
        assert_eq!(state.used(&h), 1_000 + 104);
        for i in 0..5 {
            h.push(result(i, 4_000));
        }
        // Only the last three results count in full; older ones are placeholders.
        let sent = context::estimate_all(&context::micro_compact(&h, 3, 0));
        assert_eq!(state.used(&h), 1_000 + sent);
        assert!(state.used(&h) < 1_000 + context::estimate_all(&h));
        // With a report covering the first two messages, only the rest is estimated.
        state.reported = 5_000;
        state.covered = 2;
        let sent = context::micro_compact(&h, 3, 0);
        assert_eq!(state.used(&h), 5_000 + context::estimate_all(&sent[2..]));
        // A report beyond the history (after it was replaced) does not panic.
        state.covered = 50;
        assert_eq!(state.used(&h), 5_000);
    }

    #[test]
    fn zero_usage_is_no_report() {
        let (c, _rx) = compactor(true);
        let mut state = ContextState::default();
        let mut record = |_r: Record<'_>| {};
        let mut todos = Vec::new();
        let mut hooks = MainHooks {
            state: &mut state,
            compactor: c,
            todos: &mut todos,
            cwd: std::env::temp_dir(),
            mode: crate::agent::mode::ModeSwitch::default(),
            record: &mut record,
            interrupted_answer: None,
        };
        hooks.usage(0, 1, 3);
        assert_eq!(hooks.state.reported, 0);
        hooks.usage(900, 20, 3);
        assert_eq!((hooks.state.reported, hooks.state.covered), (920, 4));
    }

    #[test]
    fn due_obeys_auto_compact_and_needs_growth() {
        let big: Vec<Message> = (0..3).map(|i| result(i, 4_000)).collect();
        let mut state = ContextState {
            reported: 9_000,
            covered: 3,
            keep: Some(3),
            ..Default::default()
        };
        let (off, mut rx) = compactor(false);
        assert!(!off.due(&mut state, &big));
        // Past 95% of the window: one warning, never a compaction.
        state.reported = 9_800;
        assert!(!off.due(&mut state, &big));
        assert!(!off.due(&mut state, &big));
        let mut warnings = 0;
        while let Ok(ev) = rx.try_recv() {
            assert!(
                matches!(ev, Event::Notice { ref text, .. } if text.contains("auto_compact is off"))
            );
            warnings += 1;
        }
        assert_eq!(warnings, 1);

        let (on, _rx) = compactor(true);
        state.reported = 8_000;
        assert!(!on.due(&mut state, &big));
        state.reported = 8_600;
        assert!(on.due(&mut state, &big));
        // Just compacted to 8,400: wait for 5% of the window of growth.
        state.compacted_to = Some(8_400);
        assert!(!on.due(&mut state, &big));
        state.reported = 8_901;
        assert!(on.due(&mut state, &big));
        // The conversation itself is tiny: a summary cannot make it smaller.
        let tiny = vec![Message::User {
            content: "hi".into(),
        }];
        state.compacted_to = None;
        state.covered = 0;
        assert!(!on.due(&mut state, &tiny));
    }

    #[test]
    fn tail_budget_leaves_room_below_the_threshold() {
        let (mut c, _rx) = compactor(true);
        let state = ContextState {
            overhead: 1_600,
            ..Default::default()
        };
        // Large window: 35% of it.
        c.window = 128_000;
        assert_eq!(c.tail_budget(&state, "note", ""), 44_800);
        // Small window: what is left below the threshold after prompt, note and a margin.
        c.window = 6_000;
        let budget = c.tail_budget(&state, &"n".repeat(4_000), "");
        assert!(budget < 2_100, "{budget}");
        assert!(1_600 + 1_000 + budget + 600 <= 5_100, "{budget}");
        // Never nothing at all.
        let budget = c.tail_budget(&state, &"n".repeat(40_000), "");
        assert_eq!(budget, 300);
    }
}
