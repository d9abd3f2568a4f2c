//! Checkpoints: what each turn changed in the workspace, so `/rewind` and `/undo` can put the
//! code back.
//!
//! The engine keeps a [`Shadow`] of the workspace (metadata and content hash of every file, the
//! content in a content-addressed [`BlobStore`] beside the session file). Around every command
//! that may write (a file tool's write, a shell command) it scans: before, to take in changes
//! made outside rein; after, to find what the command changed. Each change (the state before
//! and after) is recorded in the session file as a `checkpoint` entry and in the
//! [`RewindLog`]; restoring goes back through the log and writes files race-free inside the
//! workspace ([`anchored`]). The format is in `docs/sessions.md`.

pub mod anchored;
pub mod blobs;
mod log;
mod pack;
mod restore;
mod scan;
mod state;
mod store;
pub(crate) mod watch;

pub use blobs::BlobStore;
pub use log::{Planned, Point, RewindLog};
pub use scan::{Scan, Scanner, Scope, Shadow, Withhold};
pub use state::{Caps, Change, FileState, human_bytes};
pub use watch::release_at_exit as release_watches_at_exit;

use crate::protocol::{RewindPlan, RewindPoint};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use store::Store;

#[derive(Debug)]
struct Engine {
    scanner: Scanner,
    log: RewindLog,
    store: Option<Store>,
    /// Commands running now: a scan while one runs cannot tell its changes from others'.
    running: usize,
    /// New content the current turn may still keep.
    budget: u64,
    /// Paths already reported as not kept this turn.
    warned: HashSet<String>,
    /// The file limit was reported (once per engine: it holds for every scan).
    told_truncated: bool,
    /// Where and how first scans run in the background (see [`Checkpoints::start_first_scan`]).
    background: Option<Background>,
    /// A background first scan is running (it has the store's shadow).
    scanning: bool,
    /// Counts session switches.
    generation: u64,
    /// The session directory given while the first scan ran in a staging store.
    pending_dir: Option<PathBuf>,
}

/// What a background first scan needs: the sessions directory (for a staging store) and whom
/// to tell that it runs.
#[derive(Clone)]
struct Background {
    sessions: PathBuf,
    notify: Arc<dyn Fn(bool) + Send + Sync>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Background")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(s) = &self.store {
            s.discard();
        }
    }
}

/// What a scan after a command found.
#[derive(Debug, Default)]
pub struct Report {
    /// What changed (to record in the session file).
    pub changes: Vec<Change>,
    /// What the person should know (a file too large to keep).
    pub notices: Vec<String>,
    /// Whether the scope was compared at all (`false`: nothing is kept, so `changes` says
    /// nothing about what the command did).
    pub tracked: bool,
}

/// Why a code restore did not happen.
#[derive(Debug)]
pub enum RestoreError {
    /// The files moved since the plan was shown: here is the new plan.
    Stale(RewindPlan),
    /// It cannot be done (the reason, for the person).
    Failed(String),
}

/// What a code restore did.
#[derive(Debug, Default)]
pub struct Restored {
    /// The changes made (record them as a `rewind` entry).
    pub changes: Vec<Change>,
    /// Files restored.
    pub restored: Vec<String>,
    /// Files left alone, with the reason.
    pub skipped: Vec<String>,
}

/// The checkpoint engine of one agent, shared by the agent and its tool dispatchers. Scans
/// block on the disk: call them from a blocking thread.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    inner: Arc<Mutex<Engine>>,
    /// Signalled when a background first scan ends.
    scanned: Arc<Condvar>,
}

/// A first scan running in the background, outside the engine's lock.
struct Job {
    /// The engine's generation when it started (a switch to another session makes it moot).
    generation: u64,
    scanner: Scanner,
    dir: PathBuf,
    staged: bool,
    blobs: BlobStore,
    shadow: Shadow,
}

/// The checkpoint directory of a session file (`<name>.checkpoints/`).
pub fn dir_for(session: &Path) -> PathBuf {
    session.with_extension("checkpoints")
}

impl Checkpoints {
    /// An engine for `workspace`, never scanning `exclude` (rein's own data inside it). It
    /// keeps nothing until [`Checkpoints::attach`] gives it a session directory.
    pub fn new(workspace: &Path, exclude: Vec<PathBuf>, caps: Caps) -> Checkpoints {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let root = canonical(workspace);
        let exclude = exclude.iter().map(|p| canonical(p)).collect();
        Checkpoints {
            inner: Arc::new(Mutex::new(Engine {
                scanner: Scanner::new(root, exclude, caps),
                log: RewindLog::default(),
                store: None,
                running: 0,
                budget: caps.turn_bytes,
                warned: HashSet::new(),
                told_truncated: false,
                background: None,
                scanning: false,
                generation: 0,
                pending_dir: None,
            })),
            scanned: Arc::new(Condvar::new()),
        }
    }

    /// Files whose content `withhold` flags (a secret value) are tracked but never copied.
    pub fn withhold(&self, withhold: Withhold) {
        self.lock().scanner.set_withhold(withhold);
    }

    /// The engine once no first scan runs in the background: what a command changes, or what
    /// a restore writes, must be compared with a shadow that is complete.
    fn lock_scanned(&self) -> MutexGuard<'_, Engine> {
        let guard = self.lock();
        match self.scanned.wait_while(guard, |e| e.scanning) {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Engine> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Switches to another session: its directory (`None`: keep nothing) and its log. The
    /// current shadow is saved first. With background first scans on, the new session's
    /// first scan starts now.
    pub fn switch(&self, dir: Option<PathBuf>, log: RewindLog) {
        {
            let mut e = self.lock();
            let root = e.scanner.root().to_path_buf();
            if let Some(s) = e.store.as_mut() {
                if s.staged {
                    s.discard();
                } else {
                    s.save(&root);
                }
            }
            e.store = dir.map(Store::open);
            e.log = log;
            e.generation += 1;
            e.pending_dir = None;
        }
        self.spawn_first_scan();
    }

    /// Gives a new session its directory once its file exists (no-op when it has one); a
    /// staging store moves there.
    pub fn attach(&self, dir: PathBuf) {
        let mut e = self.lock();
        if e.scanning {
            // The scan is still writing into the staging store: it moves when the scan ends.
            e.pending_dir = Some(dir);
            return;
        }
        match e.store.as_mut() {
            None => e.store = Some(Store::open(dir)),
            Some(s) => s.promote(dir),
        }
    }

    /// Runs the first scan of every session in the background from now on, beginning with
    /// this one's: a new session's store is staged in `sessions` until its file exists.
    /// `notify(true)` and `notify(false)` say when a scan starts and ends. A command that
    /// may write waits for a scan that is still running (what it changes must be undoable),
    /// so starting early means it rarely has to.
    pub fn start_first_scan(&self, sessions: PathBuf, notify: Arc<dyn Fn(bool) + Send + Sync>) {
        self.lock().background = Some(Background { sessions, notify });
        self.spawn_first_scan();
    }

    fn spawn_first_scan(&self) {
        let ck = self.clone();
        let Some(bg) = self.lock().background.clone() else {
            return;
        };
        let run = move || {
            let Some(mut job) = ck.begin_first_scan(&bg.sessions) else {
                return;
            };
            (bg.notify)(true);
            let root = job.scanner.root().to_path_buf();
            store::seed_into(&job.dir, &root, &mut job.shadow, &job.blobs);
            let mut budget = job.scanner.caps().baseline_bytes;
            let done = job
                .shadow
                .scan(&job.scanner, Scope::Workspace, &job.blobs, &mut budget);
            if let Err(err) = &done {
                tracing::warn!("checkpoint: the first scan failed: {err}");
            }
            ck.end_first_scan(job, done.is_ok());
            (bg.notify)(false);
        };
        let spawned = std::thread::Builder::new()
            .name("rein-first-scan".into())
            .spawn(run);
        if let Err(err) = spawned {
            // The first writing command scans instead.
            tracing::warn!("checkpoint: cannot start the first scan: {err}");
        }
    }

    /// Moves to a copy of the session (`/fork`): the blobs were copied to `dir`; the shadow
    /// and the log go on as they are.
    pub fn forked(&self, dir: PathBuf) {
        let mut e = self.lock();
        let root = e.scanner.root().to_path_buf();
        if let Some(s) = e.store.as_mut() {
            s.blobs = BlobStore::new(dir.join("blobs"));
            s.dir = dir;
            s.dirty = true;
            s.save(&root);
        }
    }

    /// Takes the store's shadow for a background first scan, if one is needed.
    fn begin_first_scan(&self, sessions: &Path) -> Option<Job> {
        let mut guard = self.lock();
        let e = &mut *guard;
        if e.scanning {
            return None;
        }
        let store = e.store.get_or_insert_with(|| Store::staging(sessions));
        if store.ready {
            return None;
        }
        e.scanning = true;
        Some(Job {
            generation: e.generation,
            scanner: e.scanner.clone(),
            dir: store.dir.clone(),
            staged: store.staged,
            blobs: store.blobs.clone(),
            shadow: std::mem::take(&mut store.shadow),
        })
    }

    /// Gives the store the scanned shadow (unless the session changed meanwhile) and wakes
    /// the commands waiting for it.
    fn end_first_scan(&self, job: Job, ok: bool) {
        let mut guard = self.lock();
        let e = &mut *guard;
        e.scanning = false;
        match e.store.as_mut() {
            Some(store) if e.generation == job.generation => {
                store.shadow = job.shadow;
                store.ready = ok;
                store.dirty = true;
                if let Some(dir) = e.pending_dir.take() {
                    store.promote(dir);
                }
            }
            // Another session now: this one's staging store is nobody's.
            _ if job.staged => {
                let _ = std::fs::remove_dir_all(&job.dir);
            }
            _ => {}
        }
        drop(guard);
        self.scanned.notify_all();
    }

    /// A user message was recorded: a new turn starts. Returns the message's index.
    pub fn user_message(&self, text: &str) -> usize {
        let mut e = self.lock();
        e.budget = e.scanner.caps().turn_bytes;
        e.warned.clear();
        e.log.user_message(text)
    }

    /// Before a command that may write within `scope`: takes in what changed outside rein.
    /// Returns changes to record only when other commands are running (theirs, then).
    pub fn before(&self, scope: Scope<'_>) -> Vec<Change> {
        let mut guard = self.lock_scanned();
        let e = &mut *guard;
        if e.store.is_none() {
            return Vec::new();
        }
        e.first_scan();
        let found = e.scan(scope);
        e.running += 1;
        if e.running > 1 {
            e.log.record(found.changes.clone());
            found.changes
        } else {
            Vec::new()
        }
    }

    /// After the command: what it changed.
    pub fn after(&self, scope: Scope<'_>) -> Report {
        let mut e = self.lock();
        e.running = e.running.saturating_sub(1);
        if e.store.is_none() {
            return Report::default();
        }
        let found = e.scan(scope);
        let mut notices = Vec::new();
        if found.truncated && !std::mem::replace(&mut e.told_truncated, true) {
            notices.push(format!(
                "Checkpoints track the first {} files of the workspace only; changes to the \
                 others cannot be undone.",
                e.scanner.caps().max_files
            ));
        }
        for c in &found.changes {
            if !c.before.restorable() && e.warned.insert(c.path.clone()) {
                let size = c.before.size().map(human_bytes).unwrap_or_default();
                notices.push(format!(
                    "{} ({size}) is too large to keep in a checkpoint: /rewind cannot restore it.",
                    c.path
                ));
            }
        }
        e.log.record(found.changes.clone());
        Report {
            changes: found.changes,
            notices,
            tracked: true,
        }
    }

    /// The text a recorded state held, for showing a change: `Some(None)` when there was no
    /// file, `None` when its content was not kept or is not UTF-8 text.
    pub fn text_of(&self, state: &FileState) -> Option<Option<String>> {
        if matches!(state, FileState::Absent) {
            return Some(None);
        }
        let blobs = self.lock().store.as_ref()?.blobs.clone();
        let bytes = blobs.get(state.blob()?).ok()?;
        String::from_utf8(bytes).ok().map(Some)
    }

    /// The end of a turn: saves the shadow.
    pub fn end_turn(&self) {
        let mut e = self.lock();
        let root = e.scanner.root().to_path_buf();
        if let Some(s) = e.store.as_mut() {
            s.save(&root);
        }
    }

    /// The user messages one can go back to, oldest first.
    pub fn points(&self) -> Vec<RewindPoint> {
        let e = self.lock();
        e.log
            .points()
            .iter()
            .enumerate()
            .filter(|(_, p)| p.live)
            .map(|(i, p)| RewindPoint {
                index: i,
                text: p.text.clone(),
                files_changed: e.log.files_changed_in(i),
            })
            .collect()
    }

    /// The message of live point `to`.
    pub fn message(&self, to: usize) -> Option<String> {
        self.lock().log.live_point(to).map(|p| p.text.clone())
    }

    /// The point `/undo` goes back to.
    pub fn latest_undoable(&self) -> Option<usize> {
        self.lock().log.latest_undoable()
    }

    /// The conversation went back to before point `to`.
    pub fn conversation_rewound(&self, to: usize) {
        self.lock().log.conversation_rewound(to);
    }

    /// A copy of the log (tests, diagnostics).
    pub fn log(&self) -> RewindLog {
        self.lock().log.clone()
    }

    /// What restoring the code to before point `to` would do.
    pub fn plan(&self, to: usize, conversation: bool) -> Result<RewindPlan, String> {
        let e = self.lock();
        e.survey(to).map(|(cands, id)| RewindPlan {
            id,
            to,
            message: e
                .log
                .points()
                .get(to)
                .map(|p| p.text.clone())
                .unwrap_or_default(),
            conversation,
            files: cands.into_iter().map(|c| c.view).collect(),
        })
    }

    /// Restores the code to before point `to`, if the plan is still the one with id `id`.
    pub fn restore(
        &self,
        to: usize,
        id: &str,
        overwrite_changed: bool,
        conversation: bool,
    ) -> Result<Restored, RestoreError> {
        let mut guard = self.lock_scanned();
        let (cands, now) = guard.survey(to).map_err(RestoreError::Failed)?;
        if now != id {
            let message = guard.log.points().get(to).map(|p| p.text.clone());
            return Err(RestoreError::Stale(RewindPlan {
                id: now,
                to,
                message: message.unwrap_or_default(),
                conversation,
                files: cands.into_iter().map(|c| c.view).collect(),
            }));
        }
        let e = &mut *guard;
        let store = e
            .store
            .as_mut()
            .ok_or_else(|| RestoreError::Failed("this session keeps no checkpoints".into()))?;
        let anchor = anchored::Anchor::open(e.scanner.root())
            .map_err(|err| RestoreError::Failed(format!("cannot open the workspace: {err}")))?;
        let applied = restore::apply(&anchor, &store.blobs, cands, overwrite_changed);
        for path in &applied.restored {
            // The shadow takes the restored state; the change itself is recorded as the restore.
            let mut none = 0;
            let _ = store
                .shadow
                .scan(&e.scanner, Scope::Path(path), &store.blobs, &mut none);
        }
        store.dirty = true;
        store.save(e.scanner.root());
        e.log.restored(to, applied.changes.clone());
        Ok(Restored {
            changes: applied.changes,
            restored: applied.restored,
            skipped: applied.skipped,
        })
    }
}

impl Engine {
    /// The session's first scan, when its shadow is not known yet: every file read, hashed
    /// and kept (what a later change can go back to).
    fn first_scan(&mut self) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        if store.ready {
            return;
        }
        store.seed(self.scanner.root());
        let mut budget = self.scanner.caps().baseline_bytes;
        match store
            .shadow
            .scan(&self.scanner, Scope::Workspace, &store.blobs, &mut budget)
        {
            Ok(_) => store.ready = true,
            Err(err) => tracing::warn!("checkpoint: the first scan failed: {err}"),
        }
        store.dirty = true;
    }

    fn scan(&mut self, scope: Scope<'_>) -> Scan {
        let Some(store) = self.store.as_mut() else {
            return Scan::default();
        };
        match store
            .shadow
            .scan(&self.scanner, scope, &store.blobs, &mut self.budget)
        {
            Ok(found) => {
                store.dirty |= !found.changes.is_empty();
                found
            }
            Err(err) => {
                tracing::warn!("checkpoint scan failed: {err}");
                Scan::default()
            }
        }
    }

    fn survey(&self, to: usize) -> Result<(Vec<restore::Candidate>, String), String> {
        if self.log.live_point(to).is_none() {
            return Err("that message is no longer part of the conversation".into());
        }
        let store = self
            .store
            .as_ref()
            .ok_or("this session keeps no checkpoints (it is not saved)")?;
        let anchor = anchored::Anchor::open(self.scanner.root())
            .map_err(|e| format!("cannot open the workspace: {e}"))?;
        let planned = self.log.plan(to);
        let cands = restore::survey(&anchor, &store.blobs, planned, self.scanner.caps())
            .map_err(|e| format!("cannot read the workspace: {e}"))?;
        let id = restore::plan_id(&cands);
        Ok((cands, id))
    }
}
