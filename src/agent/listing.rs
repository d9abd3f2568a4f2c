//! Answers to the listing ops (`/resume`, `/skills`, `/memory`): what the running agent offers
//! and what is on disk, so a front end never reads these itself and never disagrees with the
//! agent. Answered by the op router at once, also while a turn runs.

use crate::protocol::{Event, EventSink, Instructions, Op};
use crate::skills::SkillCatalog;
use std::path::PathBuf;
use std::sync::Arc;

/// What the listings are made of.
#[derive(Clone)]
pub(super) struct Listings {
    /// The skills this session offers (found once, at start).
    pub skills: Arc<SkillCatalog>,
    /// The `AGENTS.md` files in the system prompt, in order.
    pub memory: Arc<Vec<Instructions>>,
    /// Where sessions are saved.
    pub data_dir: PathBuf,
    /// The workspace.
    pub cwd: PathBuf,
    /// Where the answers go.
    pub events: EventSink,
}

impl Listings {
    /// Answers `op` if it is a listing; returns whether it was one.
    pub(super) fn answer(&self, op: &Op) -> bool {
        match op {
            Op::ListSkills => self.events.send(Event::SkillsListed {
                catalog: (*self.skills).clone(),
            }),
            Op::ListMemory => self.events.send(Event::MemoryListed {
                files: (*self.memory).clone(),
            }),
            Op::ListSessions => {
                let (data_dir, cwd, events) =
                    (self.data_dir.clone(), self.cwd.clone(), self.events.clone());
                // Reading every sidecar may take a moment: off the async threads.
                tokio::task::spawn_blocking(move || events.send(sessions(&data_dir, &cwd)));
            }
            _ => return false,
        }
        true
    }
}

/// The saved sessions under `data_dir`, and which spellings of `cwd` mean "this directory".
pub fn sessions(data_dir: &std::path::Path, cwd: &std::path::Path) -> Event {
    Event::SessionsListed {
        sessions: crate::session_store::list(data_dir, None),
        here: crate::session_store::here_dirs(cwd),
        now: jiff::Timestamp::now(),
    }
}
