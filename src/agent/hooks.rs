//! The main agent's turn hooks: token accounting, the late reminder, auto-compaction.

use super::compact;
use super::context::{self, FileWatch};
use super::turn::TurnHooks;
use crate::llm::{Client, Message};
use crate::protocol::{Event, Todo};
use crate::tools::EventSink;
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
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
    /// Messages before this index are a compaction summary and are never rewritten.
    pub frozen: usize,
    /// Changed-files tracking for the reminder.
    pub files: FileWatch,
}

impl ContextState {
    /// Tokens the context holds: the last report plus an estimate of what came after it.
    pub fn used(&self, history: &[Message]) -> u64 {
        let (base, since) = if self.reported == 0 {
            (self.overhead, history)
        } else {
            (self.reported, history.get(self.covered..).unwrap_or(&[]))
        };
        base + context::estimate_all(since)
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
    /// The todo list re-injected after compaction.
    pub todos: Arc<Mutex<Vec<Todo>>>,
    /// Cancels the summary request.
    pub cancel: CancellationToken,
}

fn lock_todos(todos: &Mutex<Vec<Todo>>) -> Vec<Todo> {
    match todos.lock() {
        Ok(t) => t.clone(),
        Err(p) => p.into_inner().clone(),
    }
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
    /// Summarises and replaces `history`; on failure the history is kept and a notice shown.
    pub async fn compact(
        &self,
        history: &mut Vec<Message>,
        state: &mut ContextState,
        focus: Option<&str>,
    ) -> Option<Compaction> {
        let before = state.used(history);
        let model = match self.model.read() {
            Ok(m) => m.clone(),
            Err(p) => p.into_inner().clone(),
        };
        self.events.send(Event::Notice {
            text: "Compacting the conversation…".into(),
        });
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
            Err(e) => {
                self.events.send(Event::Notice {
                    text: format!("Compaction failed ({e}); the conversation is kept as it was."),
                });
                // Don't retry on every request: wait for new growth.
                state.compacted_to = Some(before);
                return None;
            }
        };
        let todos = crate::tools::todos::render(&lock_todos(&self.todos));
        let todos = if lock_todos(&self.todos).is_empty() {
            String::new()
        } else {
            todos
        };
        *history = compact::rebuild(history, &summary, &self.instructions, &todos, self.window);
        state.reset_report();
        state.frozen = 1;
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

    /// Whether the next request should be preceded by a compaction (and warns once when the
    /// window is nearly full but auto-compaction is off).
    pub fn due(&self, state: &mut ContextState, history: &[Message]) -> bool {
        let used = state.used(history);
        let limit = (self.window as f64 * self.threshold) as u64;
        if used < limit {
            return false;
        }
        if !self.auto {
            if used as f64 >= self.window as f64 * 0.95 && !state.warned_full {
                state.warned_full = true;
                self.events.send(Event::Notice {
                    text: format!(
                        "The context window is nearly full ({used} of {} tokens) and \
                         auto_compact is off: use /compact or /clear.",
                        self.window
                    ),
                });
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

/// The main agent's hooks for one turn.
pub struct MainHooks<'a> {
    /// Token and compaction state.
    pub state: &'a mut ContextState,
    /// Compaction.
    pub compactor: Compactor,
    /// The todo list for the reminder.
    pub todos: Arc<Mutex<Vec<Todo>>>,
    /// Workspace, for git facts in the reminder.
    pub cwd: PathBuf,
    /// Called for each appended message and each compaction (the session file).
    pub record: &'a mut (dyn FnMut(Record<'_>) + Send),
}

/// Something the session file should keep.
pub enum Record<'r> {
    /// A message was appended.
    Message(&'r Message),
    /// The history was compacted into `history`.
    Compaction(&'r Compaction, &'r [Message]),
    /// The provider reported usage.
    Usage(u64, u64),
}

impl TurnHooks for MainHooks<'_> {
    fn appended(&mut self, msg: &Message) {
        (self.record)(Record::Message(msg));
    }

    fn usage(&mut self, input: u64, output: u64, history_len: usize) {
        self.state.reported = input + output;
        // The request covered the history so far; the answer is the next message.
        self.state.covered = history_len + 1;
        (self.record)(Record::Usage(input, output));
    }

    fn reminder(&mut self) -> Option<String> {
        let changed = self.state.files.changed(&self.cwd);
        Some(context::reminder(
            &self.cwd,
            &lock_todos(&self.todos),
            &changed,
        ))
    }

    fn after_tools(&mut self) {
        self.state.files.rebase(&self.cwd);
    }

    fn frozen_prefix(&self) -> usize {
        self.state.frozen
    }

    fn before_request<'b>(&'b mut self, history: &'b mut Vec<Message>) -> BoxFuture<'b, ()> {
        Box::pin(async move {
            if !self.compactor.due(self.state, history) {
                return;
            }
            if let Some(c) = self.compactor.compact(history, self.state, None).await {
                (self.record)(Record::Compaction(&c, history));
            }
        })
    }
}
