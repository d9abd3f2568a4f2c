//! Session switching for the agent: start or resume, `/clear`, `/fork`, `/resume`, `/rename`,
//! and turning loop records into session entries.

use super::budget::{ContextState, Record};
use super::journal::{Journal, SessionStart};
use super::{Agent, new_session_id};
use crate::config::Config;
use crate::llm::Message;
use crate::protocol::EventSink;
use crate::protocol::{Event, SessionInfo, Todo};
use crate::session_store::{self, Entry, Header, SessionWriter};
use std::path::Path;

/// What the agent starts from.
pub(super) struct Opened {
    pub journal: Journal,
    pub id: String,
    pub messages: Vec<Message>,
    pub todos: Vec<Todo>,
    pub view: Vec<Event>,
    pub notices: Vec<String>,
    /// The approval mode a resumed session ended in.
    pub mode: Option<crate::protocol::ApprovalMode>,
    pub rewind: crate::checkpoint::RewindLog,
}

fn header(config: &Config, id: &str, model: &str) -> Header {
    Header::new(id, &config.cwd, model, config.provider.as_str())
}

/// Opens a resumed session: lock it for writing first (fails fast when another rein has it),
/// then rebuild context and view.
fn resume_file(
    path: &Path,
    config: &Config,
) -> Result<(SessionWriter, session_store::Resumed), session_store::SessionError> {
    let writer = SessionWriter::open_append(path)?;
    // History that could never be sent stays out of memory (the view keeps it).
    let bound = session_store::context_bytes_for_window(config.context_window);
    let mut resumed = session_store::resume_within(path, Some(bound))?;
    let cwd = config.cwd.as_path();
    if resumed.header.cwd != cwd {
        resumed.notices.push(format!(
            "This session was recorded in {}; it continues here, in {}.",
            resumed.header.cwd.display(),
            cwd.display()
        ));
    }
    Ok((writer, resumed))
}

/// Sets up the journal for how the agent starts.
pub(super) fn open(
    config: &Config,
    start: SessionStart,
    events: EventSink,
) -> anyhow::Result<Opened> {
    let fresh = |journal: Journal, id: String| Opened {
        journal,
        id,
        messages: Vec::new(),
        todos: Vec::new(),
        view: Vec::new(),
        notices: Vec::new(),
        mode: None,
        rewind: Default::default(),
    };
    Ok(match start {
        SessionStart::Ephemeral => fresh(Journal::ephemeral(events), new_session_id()),
        SessionStart::New => {
            let id = new_session_id();
            let journal = Journal::new_session(
                config.data_dir.clone(),
                header(config, &id, &config.model),
                events,
            );
            fresh(journal, id)
        }
        SessionStart::Resume(path) => {
            let (writer, r) = resume_file(&path, config)?;
            Opened {
                journal: Journal::continuing(writer, events),
                id: r.header.id,
                messages: r.messages,
                todos: r.todos,
                view: r.view,
                notices: r.notices,
                mode: r.mode,
                rewind: r.rewind,
            }
        }
    })
}

/// Writes what the turn loop reports to the session file.
pub(super) fn record(journal: &Journal, r: Record<'_>) {
    match r {
        Record::Message(m) => journal.record(Entry::from_message(m)),
        Record::ToolResult(m, result) => journal.record(match m {
            Message::ToolResult {
                call_id,
                name,
                content,
                ..
            } => Entry::tool_result(
                call_id.clone(),
                name.clone(),
                content.clone(),
                result.status,
                Some(result.elapsed_ms),
            )
            .shown_as(result.display.clone(), result.exit_code),
            other => Entry::from_message(other),
        }),
        Record::Todos(list) => journal.record(Entry::todos(list.to_vec())),
        Record::Compaction(c, history) => journal.record(Entry::compaction(
            c.summary.clone(),
            c.before,
            c.after,
            history.to_vec(),
        )),
        Record::Usage(input, output) => journal.record(Entry::usage(input, output)),
        Record::Quirk(q) => journal.record(Entry::model_quirk(
            q.kind,
            q.call_id.clone(),
            q.detail.clone(),
        )),
    }
}

impl Agent {
    pub(super) fn reset_context(&mut self) {
        self.context = ContextState {
            overhead: self.context.overhead,
            ..Default::default()
        };
        // Another conversation: what this one read does not count there.
        self.reads.clear();
    }

    pub(super) fn set_todos(&mut self, list: Vec<Todo>) {
        self.todos.clone_from(&list);
        self.events.send(Event::TodosUpdated { todos: list });
    }

    /// Shows what resuming loaded (called once after the first `SessionConfigured`).
    pub(super) fn announce_resumed(&mut self) {
        if !self.todos.is_empty() {
            self.events.send(Event::TodosUpdated {
                todos: self.todos.clone(),
            });
        }
        for text in std::mem::take(&mut self.resume_notices) {
            self.events.send(Event::notice(text));
        }
        self.announce_usage();
    }

    /// What the context holds now (after a resume: not 0% until the first request).
    fn announce_usage(&self) {
        if !self.history.is_empty() {
            self.events.send(Event::Usage {
                used_tokens: self.used_tokens(),
                context_window: self.config.context_window,
            });
        }
    }

    /// `/clear`: a new, empty conversation in a new session.
    pub(super) fn clear(&mut self) {
        self.journal.sync();
        self.history.clear();
        self.reset_context();
        self.session_id = new_session_id();
        let model = self.current_model();
        self.journal.replace(
            None,
            Some(header(&self.config, &self.session_id, &model)),
            self.config.data_dir.clone(),
        );
        self.checkpoints.switch(None, Default::default());
        self.set_todos(Vec::new());
        let info = self.session_info();
        self.events.send(Event::SessionConfigured(info));
    }

    /// `/rename TITLE`.
    pub(super) fn rename(&mut self, title: &str) {
        let title = title.trim();
        if title.is_empty() {
            self.events
                .send(Event::notice("Give a title: /rename TITLE"));
            return;
        }
        match self.journal.rename(title) {
            Ok(()) => self
                .events
                .send(Event::notice(format!("Session renamed to \"{title}\"."))),
            Err(e) => self
                .events
                .send(Event::error(format!("Cannot rename the session: {e}"))),
        }
    }

    /// `/fork`: continue in a new session that starts as a copy of this one.
    pub(super) fn fork(&mut self) {
        let parent = self.session_id.clone();
        let new_id = new_session_id();
        self.journal.sync();
        let Some(path) = self.journal.path() else {
            // Nothing saved yet: a fork is just a new id.
            self.session_id = new_id;
            let model = self.current_model();
            self.journal.replace(
                None,
                Some(header(&self.config, &self.session_id, &model)),
                self.config.data_dir.clone(),
            );
            let info = SessionInfo {
                keep_view: true,
                ..self.session_info()
            };
            self.events.send(Event::SessionConfigured(info));
            return;
        };
        match session_store::fork(&self.config.data_dir, &path, &new_id) {
            Ok(writer) => {
                self.checkpoints
                    .forked(crate::checkpoint::dir_for(writer.path()));
                self.journal
                    .replace(Some(writer), None, self.config.data_dir.clone());
                self.session_id = new_id.clone();
                // The conversation on screen goes on: the front end keeps its view.
                let info = SessionInfo {
                    keep_view: true,
                    ..self.session_info()
                };
                self.events.send(Event::SessionConfigured(info));
                self.events.send(Event::notice(format!(
                    "Forked session {parent} into {new_id}; you are now in the copy."
                )));
            }
            Err(e) => self
                .events
                .send(Event::error(format!("Cannot fork the session: {e}"))),
        }
    }

    /// `/resume ID`: switch to a saved session.
    pub(super) fn switch_to(&mut self, id: &str) {
        let path = match session_store::find(&self.config.data_dir, id) {
            Ok(p) => p,
            Err(e) => {
                self.events.send(Event::error(e.to_string()));
                return;
            }
        };
        if self.journal.path().as_deref() == Some(path.as_path()) {
            self.events
                .send(Event::notice("That is the current session."));
            return;
        }
        // Release our own file first so the lock of the target can't deadlock with it.
        self.journal.sync();
        match resume_file(&path, &self.config) {
            Ok((writer, r)) => {
                // Replace the writer in place: the router, dispatchers and subagents share it.
                self.journal
                    .replace(Some(writer), None, self.config.data_dir.clone());
                self.checkpoints
                    .switch(Some(crate::checkpoint::dir_for(&path)), r.rewind);
                self.session_id = r.header.id;
                self.history = r.messages;
                self.reset_context();
                self.resumed_view = r.view;
                let info = self.session_info();
                self.events.send(Event::SessionConfigured(info));
                self.set_todos(r.todos);
                for text in r.notices {
                    self.events.send(Event::notice(text));
                }
                self.announce_usage();
            }
            Err(e) => self
                .events
                .send(Event::error(format!("Cannot resume {id}: {e}"))),
        }
    }
}
