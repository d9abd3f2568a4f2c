//! The shadow: what rein last saw of every workspace file (its metadata and content hash, the
//! content itself in the blob store). A scan compares the workspace with it cheaply: a `stat`
//! per file, and a read and a hash only for files whose size, times, inode or mode moved.
//! What differs is a [`Change`], and the shadow takes the new state; that is how bash's changes
//! are found, and why the content before a change is always at hand.

use super::anchored::{Anchor, Found};
use super::blobs::{self, Batch, BlobStore};
use super::state::{Caps, Change, FileState};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
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

    /// The regular files of the workspace (respecting .gitignore, .ignore and git's excludes,
    /// never following links, skipping `.git` and `.rein`), with their metadata.
    fn walk(&self, mut each: impl FnMut(String, Stat) -> bool) {
        let exclude = self.exclude.clone();
        let walker = ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .ignore(true)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                !is_protected(e.file_name()) && !exclude.iter().any(|x| e.path().starts_with(x))
            })
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            // Paths that are not UTF-8 cannot be recorded faithfully in a session file.
            let Some(rel) = rel.to_str() else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if !each(rel.replace('\\', "/"), Stat::of(&meta)) {
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
            self.files.insert(rel, tracked);
        }
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
        let anchor = Anchor::open(&scanner.root)?;
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
            Scope::Workspace => self.scan_all(&anchor, scanner, blobs, budget, &mut out),
        }
        // Before anything that names the new blobs (the shadow, the session's log) is saved.
        batch.finish()?;
        Ok(out)
    }

    fn scan_all(
        &mut self,
        anchor: &Anchor,
        scanner: &Scanner,
        blobs: &mut Batch<'_>,
        budget: &mut u64,
        out: &mut Scan,
    ) {
        let mut seen = HashSet::with_capacity(self.files.len());
        let max = scanner.caps.max_files;
        let mut count = 0usize;
        scanner.walk(|rel, stat| {
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
        for rel in gone {
            // Not walked: deleted, or only out of the walk's sight (ignored now, past the
            // limit). Only a file that is really gone is a change.
            // Looked up without following links: `src/` swapped for a link to a directory
            // holding a file of the same name has still lost its file.
            let exists = anchor.is_file(&rel);
            if !exists {
                self.look(anchor, scanner, &rel, None, blobs, budget, out);
            }
        }
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
                self.files.remove(rel);
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
        self.files.insert(
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
