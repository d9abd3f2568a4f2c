//! What some commands read from disk: saved sessions (`/resume`), skills (`/skills`) and the
//! `AGENTS.md` files in effect (`/memory`). The app asks with an [`Effect::Lookup`]; the run
//! loop answers on a blocking thread and hands the result to [`App::on_found`], so the app
//! itself stays free of I/O and every step is testable.
//!
//! [`Effect::Lookup`]: crate::tui::app::Effect::Lookup
//! [`App::on_found`]: crate::tui::app::App::on_found

use crate::agent::prompt::{Instructions, load_agents_md};
use crate::session_store::{self, SessionSummary};
use crate::skills::{SkillCatalog, discover};
use crate::tui::view::session_picker::here_dirs;
use jiff::Timestamp;
use std::path::{Path, PathBuf};

/// Something to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Every saved session (for the picker), and which ran in `cwd`.
    Sessions {
        /// The workspace.
        cwd: PathBuf,
    },
    /// The skills a session in `cwd` finds.
    Skills {
        /// The home directory.
        home: Option<PathBuf>,
        /// The workspace.
        cwd: PathBuf,
    },
    /// The `AGENTS.md` files a session in `cwd` reads.
    Memory {
        /// The home directory.
        home: Option<PathBuf>,
        /// The workspace.
        cwd: PathBuf,
    },
}

/// What a [`Lookup`] found.
#[derive(Debug)]
pub enum Found {
    /// Saved sessions, newest first.
    Sessions {
        /// The sessions.
        sessions: Vec<SessionSummary>,
        /// Spellings of the current directory.
        here: Vec<PathBuf>,
        /// The time "2 h ago" is counted from.
        now: Timestamp,
    },
    /// Skills found and skipped.
    Skills(SkillCatalog),
    /// Instruction files, in the order they are given to the model.
    Memory(Vec<Instructions>),
}

impl Lookup {
    /// Reads it (sessions live under `data_dir`). Blocks on the file system.
    pub fn run(self, data_dir: &Path) -> Found {
        match self {
            Lookup::Sessions { cwd } => Found::Sessions {
                sessions: session_store::list(data_dir, None),
                here: here_dirs(&cwd),
                now: Timestamp::now(),
            },
            Lookup::Skills { home, cwd } => Found::Skills(discover(home.as_deref(), &cwd)),
            Lookup::Memory { home, cwd } => Found::Memory(load_agents_md(&cwd, home.as_deref())),
        }
    }
}
