//! The shadow: what rein last saw of every workspace file (its metadata and content hash, the
//! content itself in the blob store). A scan compares the workspace with it cheaply: a `stat`
//! per file, and a read and a hash only for files whose size, times, inode or mode moved.
//! What differs is a [`Change`], and the shadow takes the new state; that is how bash's changes
//! are found, and why the content before a change is always at hand.

use super::anchored::{Anchor, Found};
use super::blobs::{self, Batch, BlobStore};
use super::state::{Caps, Change, FileState};
use super::watch::{DirIndex, Dirty, Watch, parent_of};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The metadata that says a file may have changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    dev: u64,
    mode: u32,
}

impl Stat {
    fn of(m: &std::fs::Metadata) -> Stat {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Stat {
            size: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
            mode: m.mode(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Tracked {
    stat: Stat,
    state: FileState,
}

/// Which part of the workspace a scan looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every file (around a shell command).
    Workspace,
    /// One workspace-relative path (around a file tool's write).
    Path(&'a str),
}

/// How the workspace is walked and what is kept.
#[derive(Clone, Debug)]
pub struct Scanner {
    root: PathBuf,
    /// Directories never scanned (rein's own data when it lives inside the workspace).
    exclude: Vec<PathBuf>,
    caps: Caps,
    /// Says whether content holds a secret value: such a file is tracked but its content is
    /// not kept (a checkpoint must not copy the API key into rein's data dir).
    withhold: Withhold,
}

/// Whether content must not be copied.
pub type WithholdFn = dyn Fn(&[u8]) -> bool + Send + Sync;

/// A test for content that must not be copied (see [`Scanner`]).
#[derive(Clone)]
pub struct Withhold(pub std::sync::Arc<WithholdFn>);

impl std::fmt::Debug for Withhold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Withhold")
    }
}

impl Default for Withhold {
    fn default() -> Withhold {
        Withhold(std::sync::Arc::new(|_| false))
    }
}

/// What one scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// The paths whose state changed since the shadow last saw them.
    pub changes: Vec<Change>,
    /// The walk stopped at the file limit: files past it are not tracked.
    pub truncated: bool,
}

/// The last seen state of every tracked file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Shadow {
    files: HashMap<String, Tracked>,
    #[serde(skip)]
    live: Live,
}

/// The watch of a shadow that matches the disk but for what the watch marked (see
/// [`super::watch`]). Never saved and never copied: a loaded or copied shadow is walked in
/// full once, which starts a watch of its own.
#[derive(Default)]
struct Live {
    watch: Option<Watch>,
    /// Tracked files the last walk did not reach though they exist (ignored now, or in a
    /// directory no longer walked): no event tells of them, so every scan looks.
    unseen: Vec<String>,
    /// The tracked files by directory, made when a watched scan first needs it and kept in
    /// step with the files from then on.
    index: Option<DirIndex>,
}

impl Clone for Live {
    fn clone(&self) -> Live {
        Live::default()
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.watch.fmt(f)
    }
}

/// One entry of a walk.
enum Walked {
    /// A regular file, its metadata, and whether it has other names (links).
    File(String, Stat, bool),
    Dir(String),
}

fn is_protected(name: &std::ffi::OsStr) -> bool {
    name == ".git" || name == ".rein"
}

impl Scanner {
    /// A scanner of `root` skipping `exclude`.
    pub fn new(root: PathBuf, exclude: Vec<PathBuf>, caps: Caps) -> Scanner {
        Scanner {
            root,
            exclude,
            caps,
            withhold: Withhold::default(),
        }
    }

    /// Tracks files whose content `withhold` flags without keeping that content.
    pub fn set_withhold(&mut self, withhold: Withhold) {
        self.withhold = withhold;
    }

    /// The limits in force.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The regular files and directories of the workspace at and below `from` (`""`: the
    /// root; `depth` levels, or all), respecting .gitignore, .ignore and git's excludes, never
    /// following links, skipping `.git` and `.rein`. `each` returns false to stop.
    fn walk_at(&self, from: &str, depth: Option<usize>, mut each: impl FnMut(Walked) -> bool) {
        let exclude = self.exclude.clone();
        let walker = ignore::WalkBuilder::new(self.root.join(from))
            .hidden(false)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .ignore(true)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .max_depth(depth)
            .filter_entry(move |e| {
                !is_protected(e.file_name()) && !exclude.iter().any(|x| e.path().starts_with(x))
            })
            .build();
        for entry in walker.flatten() {
            if entry.depth() == 0 {
                continue;
            }
            let Some(kind) = entry.file_type() else {
                continue;
            };
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            // Paths that are not UTF-8 cannot be recorded faithfully in a session file.
            let Some(rel) = rel.to_str() else { continue };
            let rel = rel.replace('\\', "/");
            let walked = if kind.is_dir() {
                Walked::Dir(rel)
            } else if kind.is_file() {
                let Ok(meta) = entry.metadata() else { continue };
                Walked::File(rel, Stat::of(&meta), meta.nlink() > 1)
            } else {
                continue;
            };
            if !each(walked) {
                return;
            }
        }
    }
}

impl Shadow {
    /// Number of tracked files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether nothing is tracked yet.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Takes the entries of another session's shadow of the same workspace, each with its
    /// blob linked from `from` into `to` (an entry whose blob cannot be linked is left out and
    /// read by the next scan).
    pub fn adopt(&mut self, seed: Shadow, from: &BlobStore, to: &BlobStore) {
        for (rel, tracked) in seed.files {
            if let Some(h) = tracked.state.blob()
                && from.link_one(h, to).is_err()
            {
                continue;
            }
            self.track(rel, tracked);
        }
    }

    /// Records `rel`'s state.
    fn track(&mut self, rel: String, tracked: Tracked) {
        if let Some(index) = &mut self.live.index {
            index.insert(&rel);
        }
        self.files.insert(rel, tracked);
    }

    /// Forgets `rel`.
    fn untrack(&mut self, rel: &str) {
        if let Some(index) = &mut self.live.index {
            index.remove(rel);
        }
        self.files.remove(rel);
    }

    /// The last seen state of `rel`.
    pub fn state(&self, rel: &str) -> Option<&FileState> {
        self.files.get(rel).map(|t| &t.state)
    }

    /// Brings the shadow up to date with the disk within `scope` and returns what changed.
    /// New content is kept in `blobs` while `budget` (bytes) lasts.
    pub fn scan(
        &mut self,
        scanner: &Scanner,
        scope: Scope<'_>,
        blobs: &BlobStore,
        budget: &mut u64,
    ) -> io::Result<Scan> {
        let anchor = Anchor::scanning(&scanner.root)?;
        let mut out = Scan::default();
        let mut batch = blobs.batch();
        let blobs = &mut batch;
        match scope {
            Scope::Path(rel) => {
                // A file behind a link swapped in for one of its directories is no workspace
                // file (the name alone would follow the link).
                let stat = std::fs::symlink_metadata(scanner.root.join(rel))
                    .ok()
                    .filter(|m| m.is_file() && anchor.is_file(rel))
                    .map(|m| Stat::of(&m));
                self.look(&anchor, scanner, rel, stat, blobs, budget, &mut out);
            }
            Scope::Workspace => self.scan_workspace(&anchor, scanner, blobs, budget, &mut out),
        }
        // Before anything that names the new blobs (the shadow, the session's log) is saved.
        batch.finish()?;
        Ok(out)
    }

    /// Every file, or, while a watch of the workspace holds, the directories it marked.
    fn scan_workspace(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) {
        let watch = self.live.watch.take().filter(|w| w.is_of(&scanner.root));
        if let Some(mut watch) = watch
            && let Dirty::Dirs(dirs) = watch.take()
            && self.scan_dirs(anchor, scanner, &mut watch, &dirs, blobs, budget, out)
        {
            if self.files.len() <= scanner.caps.max_files {
                self.live.watch = Some(watch);
            }
            return;
        }
        let mut watch = Watch::new(&scanner.root);
        self.scan_all(anchor, scanner, &mut watch, blobs, budget, out);
        if !out.truncated {
            self.live.watch = watch;
        }
    }

    /// Walks everything, watching each directory before it is read.
    fn scan_all(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        watch: &mut Option<Watch>,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) {
        if watch.as_mut().is_some_and(|w| !w.add("")) {
            *watch = None;
        }
        let mut seen = HashSet::with_capacity(self.files.len());
        let max = scanner.caps.max_files;
        let mut count = 0usize;
        scanner.walk_at("", None, |walked| {
            let (rel, stat) = match walked {
                Walked::Dir(rel) => {
                    if watch.as_mut().is_some_and(|w| !w.add(&rel)) {
                        *watch = None;
                    }
                    return true;
                }
                Walked::File(rel, stat, linked) => {
                    if let (true, Some(w)) = (linked, watch.as_mut()) {
                        w.linked(parent_of(&rel));
                    }
                    (rel, stat)
                }
            };
            count += 1;
            if count > max {
                out.truncated = true;
                return false;
            }
            if self.files.get(&rel).is_none_or(|t| t.stat != stat) {
                self.look(anchor, scanner, &rel, Some(stat), blobs, budget, out);
            }
            seen.insert(rel);
            true
        });
        let gone: Vec<String> = self
            .files
            .keys()
            .filter(|k| !seen.contains(k.as_str()))
            .cloned()
            .collect();
        self.live.unseen = self.drop_gone(anchor, scanner, gone, blobs, budget, out);
    }

    /// Shadow entries that were not walked: deleted, or only out of the walk's sight (ignored
    /// now, past the limit). Only a file that is really gone is a change. Returns those that
    /// are still there.
    fn drop_gone(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        candidates: Vec<String>,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) -> Vec<String> {
        let mut there = Vec::new();
        for rel in candidates {
            // Looked up without following links: `src/` swapped for a link to a directory
            // holding a file of the same name has still lost its file.
            if anchor.is_file(&rel) {
                there.push(rel);
            } else {
                self.look(anchor, scanner, &rel, None, blobs, budget, out);
            }
        }
        there
    }

    /// Walks the directories a watch marked: each one level deep, a directory new to the
    /// watch in full. Returns false when only a full walk can tell (the watch could not take
    /// a new directory); what it looked at so far is in the shadow.
    /// (The names an event gave are not read regardless of their metadata: a scan trusts
    /// size, times and inode, as a full walk does.)
    #[allow(clippy::too_many_arguments)]
    fn scan_dirs(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        watch: &mut Watch,
        dirs: &BTreeSet<String>,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) -> bool {
        let mut seen = HashSet::new();
        let mut fresh = Vec::new();
        for dir in dirs {
            if !dir.is_empty() && !watch.has(dir) {
                // Removed since: its parent is marked too, and its files by their events.
                continue;
            }
            scanner.walk_at(dir, Some(1), |walked| {
                match walked {
                    Walked::Dir(rel) if !watch.has(&rel) => fresh.push(rel),
                    Walked::Dir(_) => {}
                    Walked::File(rel, stat, linked) => {
                        if linked {
                            watch.linked(dir);
                        }
                        if self.files.get(&rel).is_none_or(|t| t.stat != stat) {
                            self.look(anchor, scanner, &rel, Some(stat), blobs, budget, out);
                        }
                        seen.insert(rel);
                    }
                }
                true
            });
        }
        for d in &fresh {
            if !self.scan_fresh(anchor, scanner, watch, d, &mut seen, blobs, budget, out) {
                return false;
            }
        }
        let unseen = std::mem::take(&mut self.live.unseen);
        let files = &self.files;
        let index = self
            .live
            .index
            .get_or_insert_with(|| DirIndex::of(files.keys()));
        // The files these directories held: those not walked now are gone (or out of sight).
        let gone: Vec<String> = dirs
            .iter()
            .flat_map(|d| index.in_dir(d))
            .chain(fresh.iter().flat_map(|d| index.under(d)))
            .filter(|k| !seen.contains(k.as_str()))
            .cloned()
            .chain(unseen.into_iter().filter(|k| !seen.contains(k)))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        self.live.unseen = self.drop_gone(anchor, scanner, gone, blobs, budget, out);
        true
    }

    /// Walks a directory new to the watch (created, or replaced, since the last scan) in
    /// full, watching each of its directories before it is read.
    #[allow(clippy::too_many_arguments)]
    fn scan_fresh(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        watch: &mut Watch,
        top: &str,
        seen: &mut HashSet<String>,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) -> bool {
        let mut complete = watch.add(top);
        scanner.walk_at(top, None, |walked| {
            match walked {
                Walked::Dir(rel) => complete &= watch.add(&rel),
                Walked::File(rel, stat, linked) => {
                    if linked {
                        watch.linked(parent_of(&rel));
                    }
                    if self.files.get(&rel).is_none_or(|t| t.stat != stat) {
                        self.look(anchor, scanner, &rel, Some(stat), blobs, budget, out);
                    }
                    seen.insert(rel);
                }
            }
            complete
        });
        complete
    }

    /// Compares one path (`stat`: its metadata now, `None` when there is no regular file)
    /// with the shadow, and records a change.
    #[allow(clippy::too_many_arguments)]
    fn look(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        rel: &str,
        stat: Option<Stat>,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) {
        let before = self.files.get(rel).map(|t| t.state.clone());
        let Some(stat) = stat else {
            if let Some(before) = before {
                self.untrack(rel);
                out.changes.push(Change {
                    path: rel.to_string(),
                    before,
                    after: FileState::Absent,
                });
            }
            return;
        };
        let after = match read_state(
            anchor,
            rel,
            scanner.caps.file_bytes,
            blobs,
            budget,
            &scanner.withhold,
        ) {
            Ok(Some(s)) => s,
            // Gone or replaced between the walk and the read: the next scan sees it.
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("checkpoint: cannot read {rel}: {e}");
                return;
            }
        };
        let unchanged = before.as_ref().is_some_and(|b| b.same_as(&after));
        let before = before.unwrap_or(FileState::Absent);
        self.track(
            rel.to_string(),
            Tracked {
                stat,
                state: after.clone(),
            },
        );
        if !unchanged {
            out.changes.push(Change {
                path: rel.to_string(),
                before,
                after,
            });
        }
    }
}

/// Reads `rel` and keeps its content while the budget lasts; `None` when no regular file is
/// there now.
pub(crate) fn read_state(
    anchor: &Anchor,
    rel: &str,
    max: u64,
    blobs: &mut Batch<'_>,
    budget: &mut u64,
    withhold: &Withhold,
) -> io::Result<Option<FileState>> {
    Ok(match anchor.read(rel, max)? {
        Found::File { bytes, mode } => {
            let hash = blobs::hash(&bytes);
            let size = bytes.len() as u64;
            let kept = !(withhold.0)(&bytes)
                && (blobs.has(&hash)
                    || (*budget >= size && {
                        blobs.put(&hash, &bytes)?;
                        *budget -= size;
                        true
                    }));
            Some(FileState::File {
                size,
                mode,
                hash: Some(hash),
                kept,
            })
        }
        Found::TooLarge { size, mode } => Some(FileState::File {
            size,
            mode,
            hash: None,
            kept: false,
        }),
        Found::Missing | Found::Other(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::fs;

    /// A small deterministic generator (xorshift), so a failing sequence can be replayed.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    const DIRS: &[&str] = &[
        "",
        "src",
        "src/deep",
        "src/deep/er",
        "src/deep/er/est",
        "build",
        "new",
        "new/sub",
    ];
    const NAMES: &[&str] = &["a.rs", "b.txt", "c.log", "d", ".gitignore"];

    /// One change a command could make; returns what it was (for a failure's message).
    fn mutate(root: &Path, outside: &Path, rng: &mut Rng, step: usize) -> String {
        let dir = root.join(DIRS[rng.below(DIRS.len())]);
        let file = dir.join(NAMES[rng.below(NAMES.len() - 1)]);
        let op = rng.below(12);
        let what = format!(
            "op {op} on {}",
            file.strip_prefix(root).unwrap_or(&file).display()
        );
        match op {
            0..=3 => {
                fs::create_dir_all(&dir).unwrap();
                // Same size each time: only the content (and perhaps not the mtime) moves.
                fs::write(&file, format!("{:04}\n", step % 10_000)).unwrap();
            }
            4 => {
                let _ = fs::remove_file(&file);
            }
            5 if dir != root => {
                let _ = fs::remove_dir_all(&dir);
            }
            6 => {
                let to = root.join(DIRS[rng.below(DIRS.len())]).join("moved.rs");
                if fs::create_dir_all(to.parent().unwrap()).is_ok() {
                    let _ = fs::rename(&file, to);
                }
            }
            7 => {
                // A directory renamed, or moved out: the watch cannot follow, a full walk must.
                let base = if rng.below(2) == 0 { root } else { outside };
                let to = base.join(format!("renamed{}", rng.below(3)));
                let _ = fs::remove_dir_all(&to);
                if dir != root {
                    let _ = fs::rename(&dir, &to);
                }
            }
            8 => {
                // A directory swapped for a link to one outside holding a same-named file.
                fs::write(outside.join("a.rs"), "outside\n").unwrap();
                if dir != root && fs::remove_dir_all(&dir).is_ok() {
                    std::os::unix::fs::symlink(outside, &dir).unwrap();
                }
            }
            9 => {
                // A file with a second name outside: written through that name alone, so no
                // event reaches its directory's watch.
                let links: Vec<_> = fs::read_dir(outside)
                    .unwrap()
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("link"))
                    .collect();
                if let Some(link) = links.get(rng.below(links.len().max(1))) {
                    fs::write(link.path(), format!("via link {:04}\n", step % 10_000)).unwrap();
                } else if fs::create_dir_all(&dir).is_ok() && fs::write(&file, "linked\n").is_ok() {
                    let _ = fs::hard_link(&file, outside.join(format!("link{step}")));
                }
            }
            10 => {
                let rules = ["*.log\n", "/build\n", "deep/\n", "!c.log\n*.txt\n"];
                fs::create_dir_all(&dir).unwrap();
                fs::write(dir.join(".gitignore"), rules[rng.below(rules.len())]).unwrap();
            }
            _ => {
                use std::os::unix::fs::PermissionsExt;
                let _ = fs::set_permissions(&file, fs::Permissions::from_mode(0o700));
            }
        }
        what
    }

    fn states(shadow: &Shadow) -> BTreeMap<String, FileState> {
        let mut out = BTreeMap::new();
        for (rel, t) in &shadow.files {
            // Whether content was kept depends on each scan's budget, not on the disk.
            let state = match &t.state {
                FileState::File {
                    size, mode, hash, ..
                } => FileState::File {
                    size: *size,
                    mode: *mode,
                    hash: hash.clone(),
                    kept: false,
                },
                s => s.clone(),
            };
            out.insert(rel.clone(), state);
        }
        out
    }

    /// The oracle: after any change, the watched shadow holds what a full walk of the disk
    /// from nothing finds (plus files it tracked that are only ignored now, which a full walk
    /// keeps too).
    #[test]
    fn a_watched_scan_sees_what_a_full_walk_sees() {
        for seed in [1u64, 7, 42, 1234] {
            let t = tempfile::tempdir().unwrap();
            let (root, outside) = (t.path().join("ws"), t.path().join("outside"));
            fs::create_dir_all(root.join("src/deep/er")).unwrap();
            fs::create_dir_all(&outside).unwrap();
            fs::write(root.join(".gitignore"), "*.log\n").unwrap();
            let scanner = Scanner::new(root.clone(), vec![], Caps::default());
            let blobs = BlobStore::new(t.path().join("blobs"));
            let mut watched = Shadow::default();
            let mut budget = u64::MAX;
            watched
                .scan(&scanner, Scope::Workspace, &blobs, &mut budget)
                .unwrap();
            let mut rng = Rng(seed);
            let mut partial = 0;
            let mut ops = Vec::new();
            for step in 0..150 {
                ops.push(mutate(&root, &outside, &mut rng, step));
                let recent = ops[ops.len().saturating_sub(4)..].join("; ");
                partial += usize::from(watched.live.watch.is_some());
                watched
                    .scan(&scanner, Scope::Workspace, &blobs, &mut budget)
                    .unwrap();
                let mut full = Shadow::default();
                full.scan(&scanner, Scope::Workspace, &blobs, &mut budget)
                    .unwrap();
                let (got, want) = (states(&watched), states(&full));
                for (rel, state) in &want {
                    assert_eq!(
                        got.get(rel),
                        Some(state),
                        "seed {seed} step {step}: {rel} as a full walk sees it (after {recent})"
                    );
                }
                for rel in got.keys().filter(|k| !want.contains_key(*k)) {
                    let meta = fs::symlink_metadata(root.join(rel));
                    assert!(
                        meta.is_ok_and(|m| m.is_file()),
                        "seed {seed} step {step}: {rel} is gone but still tracked (after {recent})"
                    );
                }
            }
            assert!(
                partial > 50,
                "seed {seed}: only {partial} scans used the watch"
            );
        }
    }
}
