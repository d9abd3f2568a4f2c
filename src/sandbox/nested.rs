//! Finding the workspace's nested repositories before bash runs, failing closed: the walk
//! looks at up to [`DEFAULT_LIMIT`] entries before the first command; a larger workspace is
//! walked on in the background, and no command runs until the walk is complete (each waits a
//! while for it, then is refused with a sentence saying why). A command never runs while a
//! nested `.git` it could plant hooks in is unknown.

use super::git::{FileId, NestedWalk};
use super::madegit::RepoWatch;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The environment variable that sets the number of entries looked at before the first
/// command (for tests of a large workspace without making 200,000 files).
pub const LIMIT_SWITCH: &str = "REIN_NESTED_SCAN_LIMIT";

/// Entries looked at before the first command.
pub const DEFAULT_LIMIT: usize = 200_000;

/// How long a command waits for a walk that went on in the background.
const WAIT: Duration = Duration::from_secs(30);

/// The nested `.git` entries of one workspace, found once per session.
#[derive(Debug, Default)]
pub(crate) struct NestedScan {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    NotStarted,
    /// Walking on in the background after `limit` entries.
    Running { limit: usize },
    /// The entries, each with its identity when the walk found it, the look for
    /// repositories made later, and the other version control systems' metadata found
    /// (`.hg`, `.jj`, …).
    Done(
        Arc<Vec<PathBuf>>,
        Arc<Vec<(PathBuf, FileId)>>,
        Arc<Mutex<RepoWatch>>,
        Arc<Vec<PathBuf>>,
    ),
}

/// The walk's result as the state keeps it.
fn done(mut walk: NestedWalk, ws: &Path) -> State {
    let repos = RepoWatch::new(ws, walk.take_watch(), &walk.other_vcs);
    let other_vcs = Arc::new(walk.other_vcs.clone());
    let identified = walk.finish_identified();
    let paths = identified.iter().map(|(p, _)| p.clone()).collect();
    State::Done(
        Arc::new(paths),
        Arc::new(identified),
        Arc::new(Mutex::new(repos)),
        other_vcs,
    )
}

/// The entries looked at before the first command: [`LIMIT_SWITCH`] or the default.
fn limit() -> usize {
    std::env::var(LIMIT_SWITCH)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_LIMIT)
}

impl NestedScan {
    /// The nested `.git` entries of `ws` (canonical), and a note for the command's result when
    /// it had to wait for a large workspace; or why the command cannot run yet.
    pub(crate) fn entries(
        self: &Arc<NestedScan>,
        ws: &Path,
    ) -> Result<(Arc<Vec<PathBuf>>, Option<String>), String> {
        self.entries_within(ws, limit(), WAIT)
    }

    /// The entries with the device and inode each `.git` had when the walk found it, before
    /// the first command (empty until the walk is done): a `.git` at the same path with
    /// another identity is not the one found.
    pub(crate) fn identities(&self) -> Arc<Vec<(PathBuf, FileId)>> {
        match &*self.state.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Done(_, ids, _, _) => ids.clone(),
            _ => Arc::default(),
        }
    }

    /// The other version control systems' metadata the walk found (`.hg`, `.jj`, …, relative
    /// to the workspace; empty until the walk is done).
    pub(crate) fn other_vcs(&self) -> Arc<Vec<PathBuf>> {
        match &*self.state.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Done(_, _, _, other) => other.clone(),
            _ => Arc::default(),
        }
    }

    /// The look for repositories commands make anywhere in the workspace (`None` until the
    /// walk is done).
    pub(crate) fn repo_watch(&self) -> Option<Arc<Mutex<RepoWatch>>> {
        match &*self.state.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Done(_, _, repos, _) => Some(repos.clone()),
            _ => None,
        }
    }

    fn entries_within(
        self: &Arc<NestedScan>,
        ws: &Path,
        limit: usize,
        wait: Duration,
    ) -> Result<(Arc<Vec<PathBuf>>, Option<String>), String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut waited = false;
        if matches!(*state, State::NotStarted) {
            let mut walk = NestedWalk::watching(ws);
            if walk.run(ws, limit) {
                *state = done(walk, ws);
            } else {
                tracing::warn!(
                    "sandbox: more than {limit} entries in {}; bash waits until all are checked \
                     for nested repositories",
                    ws.display()
                );
                *state = State::Running { limit };
                waited = true;
                let scan = self.clone();
                let ws = ws.to_path_buf();
                std::thread::spawn(move || {
                    walk.run(&ws, usize::MAX);
                    *scan.state.lock().unwrap_or_else(|p| p.into_inner()) = done(walk, &ws);
                    scan.changed.notify_all();
                });
            }
        }
        waited |= matches!(*state, State::Running { .. });
        let (state, _) = self
            .changed
            .wait_timeout_while(state, wait, |s| matches!(s, State::Running { .. }))
            .unwrap_or_else(|p| p.into_inner());
        match &*state {
            State::Done(found, _, _, _) => {
                let note = waited.then(|| {
                    format!(
                        "[this workspace has more than {limit} entries: rein looked through all of \
                         them for nested git repositories before running this command, and \
                         protects every one it found.]"
                    )
                });
                Ok((found.clone(), note))
            }
            State::Running { limit } => Err(format!(
                "this workspace has more than {limit} entries and rein is still looking through \
                 them for nested git repositories; no bash command runs before it knows them all \
                 (a hook planted in one would run when the user uses git there). Try again in a \
                 moment, or work with the file tools meanwhile."
            )),
            State::NotStarted => {
                Err("the search for nested git repositories did not start.".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with many entries and a nested repository deep inside, past `limit`.
    fn big_workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..40 {
            std::fs::create_dir_all(dir.path().join(format!("d{i}/e"))).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("d0/e/deep/.git")).unwrap();
        dir
    }

    #[test]
    fn past_the_limit_every_repository_is_still_found_before_a_command_runs() {
        let dir = big_workspace();
        let scan = Arc::new(NestedScan::default());
        let (found, note) = scan
            .entries_within(dir.path(), 5, Duration::from_secs(30))
            .unwrap();
        assert_eq!(*found, [PathBuf::from("d0/e/deep/.git")]);
        assert!(note.unwrap().contains("more than 5 entries"));
        // Later commands get the same answer without a note.
        let (again, note) = scan.entries_within(dir.path(), 5, Duration::ZERO).unwrap();
        assert_eq!(again, found);
        assert!(note.is_none());
        // Within the limit: no note at all.
        let small = Arc::new(NestedScan::default());
        let (_, note) = small
            .entries_within(dir.path(), 1_000, Duration::ZERO)
            .unwrap();
        assert!(note.is_none());
    }

    #[test]
    fn a_command_is_refused_while_the_walk_goes_on() {
        let scan = Arc::new(NestedScan::default());
        *scan.state.lock().unwrap() = State::Running { limit: 7 };
        let err = scan
            .entries_within(Path::new("/nonexistent"), 7, Duration::from_millis(10))
            .unwrap_err();
        assert!(
            err.contains("more than 7 entries") && err.contains("Try again"),
            "{err}"
        );
    }
}
