//! The agent's side of checkpoints: scans around the tool calls that may write, and carrying
//! out `/rewind` and `/undo` (the front end only sends ops and shows the plan it gets back).

use super::Agent;
use super::journal::Journal;
use crate::checkpoint::{Checkpoints, RestoreError, Restored, Scope};
use crate::llm::Message;
use crate::protocol::{Event, EventSink, NoticeLevel, Todo};
use crate::session_store::{self, Entry};
use crate::tools::{Access, ToolCtx};

/// What a watched call may write.
#[derive(Clone)]
enum Watched {
    Workspace,
    Path(String),
}

impl Watched {
    fn scope(&self) -> Scope<'_> {
        match self {
            Watched::Workspace => Scope::Workspace,
            Watched::Path(p) => Scope::Path(p),
        }
    }
}

/// A tool call being watched for file changes.
pub(crate) struct Watch {
    checkpoints: Checkpoints,
    watched: Watched,
}

fn record(journal: &Journal, call_id: Option<&str>, changes: Vec<crate::checkpoint::Change>) {
    if !changes.is_empty() {
        // Top level even for a subagent's call: the files are the session's.
        journal.record(Entry::checkpoint(call_id.map(str::to_string), changes));
    }
}

/// Scans before a call that may write (a shell command: the workspace; a file tool: its
/// file). `None` when the call cannot write or nothing is kept.
pub(crate) async fn before_tool(
    checkpoints: Option<&Checkpoints>,
    access: &Access,
    journal: &Journal,
) -> Option<Watch> {
    let checkpoints = checkpoints?.clone();
    let watched = match access {
        Access::Bash { .. } => Watched::Workspace,
        Access::Write { path, .. } if path.inside_workspace && !path.protected => {
            Watched::Path(path.display.clone())
        }
        _ => return None,
    };
    let (ck, w) = (checkpoints.clone(), watched.clone());
    let changes = tokio::task::spawn_blocking(move || ck.before(w.scope()))
        .await
        .unwrap_or_default();
    record(journal, None, changes);
    Some(Watch {
        checkpoints,
        watched,
    })
}

impl Watch {
    /// Scans after the call (whatever its outcome: an interrupted command may have written)
    /// and records what it changed; returns whether it changed a file (or may have, when
    /// nothing is kept to compare with).
    pub(crate) async fn finish(self, journal: &Journal, ctx: &ToolCtx, call_id: &str) -> bool {
        let Watch {
            checkpoints,
            watched,
        } = self;
        // A command's changes are shown by `/diff` as a file tool's writes are (those come
        // from the tool itself, exactly as written).
        let command = matches!(watched, Watched::Workspace);
        let (report, texts) = tokio::task::spawn_blocking(move || {
            let report = checkpoints.after(watched.scope());
            let texts = match command {
                true => report
                    .changes
                    .iter()
                    .map(|c| texts(&checkpoints, c))
                    .collect(),
                false => Vec::new(),
            };
            (report, texts)
        })
        .await
        .unwrap_or_default();
        for (change, texts) in report.changes.iter().zip(texts) {
            command_change(journal, ctx, call_id, &change.path, texts);
        }
        let changed = !report.tracked || report.changes.iter().any(|c| !is_byproduct(&c.path));
        record(journal, Some(call_id), report.changes);
        for text in report.notices {
            ctx.events.send(Event::notice(text));
        }
        changed
    }
}

/// Whether a changed path is what running code leaves behind (bytecode, caches, build
/// output), not a change anyone made: running `python3 test_x.py` writes `__pycache__/`.
fn is_byproduct(path: &str) -> bool {
    const DIRS: &[&str] = &[
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "node_modules",
    ];
    path.split('/').any(|c| DIRS.contains(&c))
        || path.starts_with("target/")
        || path.ends_with(".pyc")
}

/// A changed file's texts before and after (`None` before: it was created; after: removed),
/// when both were kept, are text, and are small enough to keep in the session file.
type Texts = Option<(Option<String>, Option<String>)>;

fn texts(checkpoints: &Checkpoints, change: &crate::checkpoint::Change) -> Texts {
    let old = checkpoints.text_of(&change.before)?;
    let new = checkpoints.text_of(&change.after)?;
    let size = old.as_ref().map_or(0, String::len) + new.as_ref().map_or(0, String::len);
    (size <= super::dispatch::FILE_CHANGE_KEEP_BYTES).then_some((old, new))
}

/// Tells `/diff` (the front end now, the session file for a resumed one) what a command
/// changed; a file holding a secret value is recorded without its contents and not shown.
fn command_change(journal: &Journal, ctx: &ToolCtx, call_id: &str, path: &str, texts: Texts) {
    let texts = texts.filter(|(old, new)| {
        ![old, new].iter().any(|t| {
            t.as_ref()
                .is_some_and(|t| ctx.secrets.found_in(t.as_bytes()))
        })
    });
    let Some((old, new)) = texts else {
        journal.record(Entry::file_change(path, None, None));
        return;
    };
    let new = new.unwrap_or_default();
    journal.record(Entry::file_change(path, old.clone(), Some(new.clone())));
    ctx.events.send(Event::FileChanged {
        call_id: call_id.to_string(),
        path: path.to_string(),
        old,
        new: Some(new),
    });
}

/// Starts the checkpoints' first scan in the background (the status line says so while it
/// runs), so the first command that may write seldom waits for it.
pub(crate) fn start_first_scan(
    checkpoints: &Checkpoints,
    data_dir: &std::path::Path,
    events: &EventSink,
) {
    let events = events.clone();
    checkpoints.start_first_scan(
        session_store::sessions_dir(data_dir),
        std::sync::Arc::new(move |active| events.send(Event::Indexing { active })),
    );
}

/// The conversation as it was before a message: context, view and todos.
struct Before {
    messages: Vec<Message>,
    view: Vec<Event>,
    todos: Vec<Todo>,
}

impl Agent {
    /// `Op::ListRewindPoints`.
    pub(super) fn rewind_points(&self) {
        self.events.send(Event::RewindPoints {
            points: self.checkpoints.points(),
        });
    }

    fn rewind_error(&self, message: impl Into<String>) {
        self.events.send(Event::error(message));
    }

    /// `Op::Undo`: the plan that restores the code of the last turn that changed files.
    pub(super) async fn undo(&mut self) {
        let Some(to) = self.checkpoints.latest_undoable() else {
            self.events.send(Event::notice(
                "Nothing to undo: no turn of this conversation changed files that are not \
                       restored already.",
            ));
            return;
        };
        self.send_plan(to, false).await;
    }

    /// Sends the plan of a code restore; false when there was nothing to restore.
    async fn send_plan(&mut self, to: usize, conversation: bool) -> bool {
        let ck = self.checkpoints.clone();
        let plan = tokio::task::spawn_blocking(move || ck.plan(to, conversation)).await;
        match plan {
            Ok(Ok(plan)) if plan.files.is_empty() => false,
            Ok(Ok(plan)) => {
                self.events.send(Event::RewindPlan(plan));
                true
            }
            Ok(Err(e)) => {
                self.rewind_error(format!("Cannot restore the code: {e}."));
                true
            }
            Err(e) => {
                self.rewind_error(format!("Cannot restore the code: {e}."));
                true
            }
        }
    }

    /// Restores the code for a rewind: without `confirm`, sends the plan to accept (`None`:
    /// the rewind waits for it) or says there is nothing to restore; with it, applies exactly
    /// that plan (`None` when it is stale, a new one sent, or failed).
    async fn restore_code(
        &mut self,
        to: usize,
        conversation: bool,
        confirm: Option<String>,
        overwrite_changed: bool,
    ) -> Option<Restored> {
        match confirm {
            None => {
                if self.send_plan(to, conversation).await {
                    return None;
                }
                self.events.send(Event::notice(
                    "No file changed since that message: there is no code to restore.",
                ));
                Some(Restored::default())
            }
            Some(id) => {
                let ck = self.checkpoints.clone();
                let done = tokio::task::spawn_blocking(move || {
                    ck.restore(to, &id, overwrite_changed, conversation)
                })
                .await;
                match done {
                    Ok(Ok(r)) => Some(r),
                    Ok(Err(RestoreError::Stale(plan))) => {
                        self.events.send(Event::notice(
                            "The files changed since that plan was shown: here is the \
                                   new one.",
                        ));
                        self.events.send(Event::RewindPlan(plan));
                        None
                    }
                    Ok(Err(RestoreError::Failed(e))) => {
                        self.rewind_error(format!("Cannot restore the code: {e}."));
                        None
                    }
                    Err(e) => {
                        self.rewind_error(format!("Cannot restore the code: {e}."));
                        None
                    }
                }
            }
        }
    }

    /// `Op::Rewind`.
    pub(super) async fn rewind(
        &mut self,
        to: usize,
        code: bool,
        conversation: bool,
        confirm: Option<String>,
        overwrite_changed: bool,
    ) {
        let Some(message) = self.checkpoints.message(to) else {
            self.rewind_error(
                "That message is no longer part of the conversation; /rewind lists the ones you \
                 can go back to.",
            );
            return;
        };
        let mut restored = Restored::default();
        if code {
            let Some(r) = self
                .restore_code(to, conversation, confirm, overwrite_changed)
                .await
            else {
                return;
            };
            restored = r;
        }
        let before = if conversation {
            match self.conversation_before(to) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.rewind_error(format!("Cannot rewind the conversation: {e}."));
                    None
                }
            }
        } else {
            None
        };
        let rewound_conversation = before.is_some();
        let state = before
            .as_ref()
            .map(|b| (b.messages.clone(), b.todos.clone()));
        if state.is_some() || !restored.changes.is_empty() {
            self.journal.record(Entry::rewind(
                to,
                std::mem::take(&mut restored.changes),
                state,
            ));
            self.journal.sync();
        }
        if let Some(b) = before {
            self.apply_conversation(to, &message, b);
        }
        self.events.send(Event::Rewound {
            to,
            message,
            conversation: rewound_conversation,
            restored: restored.restored,
            skipped: restored.skipped,
        });
    }

    /// Rebuilds the conversation as it was before point `to` from the session file, the same
    /// way a resume does.
    fn conversation_before(&self, to: usize) -> Result<Before, String> {
        let path = self
            .journal
            .path()
            .ok_or("this conversation is not saved, so there is nothing to go back to")?;
        let bound = session_store::context_bytes_for_window(self.config.context_window);
        let r = session_store::resume_before(&path, to, Some(bound)).map_err(|e| e.to_string())?;
        Ok(Before {
            messages: r.messages,
            view: r.view,
            todos: r.todos,
        })
    }

    fn apply_conversation(&mut self, to: usize, message: &str, before: Before) {
        let Before {
            messages,
            mut view,
            todos,
        } = before;
        view.push(Event::Notice {
            level: NoticeLevel::Info,
            text: format!(
                "Rewound the conversation to before “{}”.",
                session_store::short_title(message)
            ),
        });
        self.history = messages;
        self.reset_context();
        self.checkpoints.conversation_rewound(to);
        self.resumed_view = view;
        let info = self.session_info();
        self.events.send(Event::SessionConfigured(info));
        self.set_todos(todos);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn caches_and_build_output_are_byproducts_sources_are_not() {
        for p in [
            "__pycache__/m.cpython-311.pyc",
            "pkg/__pycache__/x.pyc",
            "target/debug/app",
            "a/node_modules/x/i.js",
            "m.pyc",
        ] {
            assert!(super::is_byproduct(p), "{p}");
        }
        for p in ["mathops.py", "src/target.rs", "targets/x", "pycache.py"] {
            assert!(!super::is_byproduct(p), "{p}");
        }
    }
}
