//! The agent's side of the session file: one writer, created at the first message, fed with
//! entries as things happen, synced at the end of each turn.

use crate::protocol::Event;
use crate::protocol::EventSink;
use crate::session_store::{Entry, Header, SessionError, SessionWriter};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How the agent's session starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SessionStart {
    /// A new session, written under the data dir from the first message on.
    #[default]
    New,
    /// Continue this session file.
    Resume(PathBuf),
    /// Keep nothing on disk (library use, tests of other parts).
    Ephemeral,
}

struct State {
    writer: Option<SessionWriter>,
    /// The header for a file not created yet (no message so far).
    pending: Option<Header>,
    data_dir: PathBuf,
    warned: bool,
}

/// Shared handle to the session writer; cheap to clone (subagents record side chains).
#[derive(Clone)]
pub struct Journal {
    state: Arc<Mutex<State>>,
    events: EventSink,
}

impl Journal {
    /// A journal that writes nothing.
    pub fn ephemeral(events: EventSink) -> Journal {
        Journal::with(None, None, PathBuf::new(), events)
    }

    /// A journal that creates its file (with `header`) at the first entry.
    pub fn new_session(data_dir: PathBuf, header: Header, events: EventSink) -> Journal {
        Journal::with(None, Some(header), data_dir, events)
    }

    /// A journal continuing an open writer.
    pub fn continuing(writer: SessionWriter, events: EventSink) -> Journal {
        Journal::with(Some(writer), None, PathBuf::new(), events)
    }

    fn with(
        writer: Option<SessionWriter>,
        pending: Option<Header>,
        data_dir: PathBuf,
        events: EventSink,
    ) -> Journal {
        Journal {
            state: Arc::new(Mutex::new(State {
                writer,
                pending,
                data_dir,
                warned: false,
            })),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    fn warn(&self, state: &mut State, e: &SessionError) {
        tracing::error!("session file: {e}");
        if !state.warned {
            state.warned = true;
            self.events.send(Event::error(format!(
                "Cannot write the session file ({e}); this conversation may not be resumable."
            )));
        }
    }

    /// Appends one entry (creating the file first if needed).
    pub fn record(&self, entry: Entry) {
        let mut state = self.lock();
        if state.writer.is_none()
            && let Some(header) = state.pending.take()
        {
            match SessionWriter::create(&state.data_dir, header) {
                Ok(w) => state.writer = Some(w),
                Err(e) => self.warn(&mut state, &e),
            }
        }
        if let Some(w) = state.writer.as_mut() {
            let result = w.append(&entry);
            if let Err(e) = result {
                self.warn(&mut state, &e);
            }
        }
    }

    /// Flushes to disk and refreshes the listing metadata (end of a turn).
    pub fn sync(&self) {
        let mut state = self.lock();
        if let Some(w) = state.writer.as_mut() {
            let result = w.sync();
            if let Err(e) = result {
                self.warn(&mut state, &e);
            }
        }
    }

    /// Gives the session a title.
    pub fn rename(&self, title: &str) -> Result<(), String> {
        let mut state = self.lock();
        if state.writer.is_none() {
            if let Some(h) = state.pending.as_mut() {
                h.title = Some(title.to_string());
                return Ok(());
            }
            return Err("this conversation is not being saved".into());
        }
        match state.writer.as_mut().map(|w| w.rename(title)) {
            Some(Err(e)) => Err(e.to_string()),
            _ => Ok(()),
        }
    }

    /// The session file, once it exists.
    pub fn path(&self) -> Option<PathBuf> {
        self.lock().writer.as_ref().map(|w| w.path().to_path_buf())
    }

    /// Replaces the writer (after `/clear`, `/fork` or `/resume`).
    pub fn replace(
        &self,
        writer: Option<SessionWriter>,
        pending: Option<Header>,
        data_dir: PathBuf,
    ) {
        let mut state = self.lock();
        if let Some(w) = state.writer.as_mut()
            && let Err(e) = w.sync()
        {
            tracing::warn!("session sync before switching: {e}");
        }
        state.writer = writer;
        state.pending = pending;
        state.data_dir = data_dir;
        state.warned = false;
    }

    /// Syncs and releases the file (and its lock).
    pub fn close(&self) {
        self.sync();
        self.lock().writer = None;
    }
}
