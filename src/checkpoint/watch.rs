//! Which workspace directories changed since the last scan, from inotify, so that a scan
//! around a command walks those directories and not the whole workspace (a walk of 10,000
//! files took ~55 ms, three times per bash call).
//!
//! A watch is only a hint of where to look; every look is the scan's own (stat, read, hash).
//! Whatever the watch cannot describe exactly (a directory renamed, the event queue overflowed,
//! the watch limit reached, the root itself gone) makes the next scan a full walk again, which
//! builds a new watch. Events arriving after a scan began belong to the next scan, so a change
//! is either seen by this scan's walk or marked for the next one.

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// What changed since the last [`Watch::take`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// Not known: walk everything (and build a new watch).
    All,
    /// These directories (workspace-relative, `""` for the root).
    Dirs(BTreeSet<String>),
}

/// The directories watched, and what their events said so far.
pub(crate) struct Watch {
    fd: OwnedFd,
    root: PathBuf,
    by_wd: HashMap<i32, String>,
    by_dir: HashMap<String, i32>,
    dirty: BTreeSet<String>,
    /// Directories holding files with more than one link: a write through another name of
    /// such a file raises no event here, so they are looked at by every scan.
    linked: HashSet<String>,
    lost: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Watch({} dirs)", self.by_dir.len())
    }
}

const EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// Names whose change changes what a walk includes.
fn is_ignore_file(name: &str) -> bool {
    name == ".gitignore" || name == ".ignore"
}

/// The parent of a workspace-relative path (`""` for a top-level entry).
pub(crate) fn parent_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(p, _)| p)
}

impl Watch {
    /// A watch of nothing yet under `root`; `None` where inotify is not available.
    pub fn new(root: &Path) -> Option<Watch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
            .map_err(|e| tracing::debug!("checkpoint: no inotify: {e}"))
            .ok()?;
        Some(Watch {
            fd,
            root: root.to_path_buf(),
            by_wd: HashMap::new(),
            by_dir: HashMap::new(),
            dirty: BTreeSet::new(),
            linked: HashSet::new(),
            lost: false,
        })
    }

    /// Whether this watch describes `root`.
    pub fn is_of(&self, root: &Path) -> bool {
        self.root == root
    }

    /// Watches the directory `rel`. Returns false when the watch can no longer be complete
    /// (the limit of watches is reached, or the directory is already watched under another
    /// name); a directory that is gone already is no failure (its parent's event tells).
    pub fn add(&mut self, rel: &str) -> bool {
        match inotify::add_watch(&self.fd, self.root.join(rel), EVENTS) {
            Ok(wd) => match self.by_wd.get(&wd) {
                Some(known) if known != rel => {
                    tracing::debug!("checkpoint: {rel} is {known} again; watching stops");
                    false
                }
                _ => {
                    self.by_wd.insert(wd, rel.to_string());
                    self.by_dir.insert(rel.to_string(), wd);
                    true
                }
            },
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => true,
            Err(e) => {
                tracing::debug!("checkpoint: cannot watch {rel}: {e}; watching stops");
                false
            }
        }
    }

    /// Whether `rel` is a watched directory.
    pub fn has(&self, rel: &str) -> bool {
        self.by_dir.contains_key(rel)
    }

    /// `rel` holds a file with more than one link.
    pub fn linked(&mut self, dir: &str) {
        self.linked.insert(dir.to_string());
    }

    /// What changed since the last call.
    pub fn take(&mut self) -> Dirty {
        self.drain();
        if self.lost {
            return Dirty::All;
        }
        let mut dirs = std::mem::take(&mut self.dirty);
        dirs.extend(self.linked.iter().cloned());
        Dirty::Dirs(dirs)
    }

    /// Reads every queued event into `dirty` (or `lost`).
    fn drain(&mut self) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut events = Vec::new();
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(ev) => events.push((
                    ev.wd(),
                    ev.events(),
                    ev.file_name().map(|n| n.to_string_lossy().into_owned()),
                )),
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(e) => {
                    tracing::debug!("checkpoint: inotify read failed: {e}");
                    self.lost = true;
                    return;
                }
            }
        }
        for (wd, mask, name) in events {
            self.note(wd, mask, name);
        }
    }

    /// Takes in one event.
    fn note(&mut self, wd: i32, mask: ReadFlags, name: Option<String>) {
        if mask.contains(ReadFlags::QUEUE_OVERFLOW) || mask.contains(ReadFlags::UNMOUNT) {
            self.lost = true;
            return;
        }
        let Some(dir) = self.by_wd.get(&wd).cloned() else {
            // A watch already forgotten.
            return;
        };
        let renamed_dir = mask.contains(ReadFlags::ISDIR)
            && mask.intersects(ReadFlags::MOVED_FROM | ReadFlags::MOVED_TO);
        // A directory that moved takes its watches' names with it: they are wrong now.
        if renamed_dir || mask.contains(ReadFlags::MOVE_SELF) {
            self.lost = true;
            return;
        }
        if mask.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF) {
            if dir.is_empty() {
                self.lost = true;
                return;
            }
            if mask.contains(ReadFlags::IGNORED) {
                self.by_wd.remove(&wd);
                if self.by_dir.get(&dir) == Some(&wd) {
                    self.by_dir.remove(&dir);
                }
            }
            self.dirty.insert(parent_of(&dir).to_string());
            return;
        }
        // An ignore file changes what a walk includes anywhere below it.
        if name.is_some_and(|n| is_ignore_file(&n)) {
            self.lost = true;
            return;
        }
        self.dirty.insert(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(d: Dirty) -> Vec<String> {
        match d {
            Dirty::All => vec!["*".into()],
            Dirty::Dirs(m) => m.into_iter().collect(),
        }
    }

    #[test]
    fn a_write_marks_its_directory_and_an_ignore_file_all() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        let mut w = Watch::new(t.path()).unwrap();
        assert!(w.add("") && w.add("a") && w.add("a/b"));
        assert_eq!(dirs(w.take()), Vec::<String>::new());
        std::fs::write(t.path().join("a/b/x"), "1").unwrap();
        assert_eq!(dirs(w.take()), ["a/b"]);
        assert_eq!(dirs(w.take()), Vec::<String>::new());
        std::fs::write(t.path().join("a/.gitignore"), "x\n").unwrap();
        assert_eq!(w.take(), Dirty::All);
    }

    #[test]
    fn a_renamed_directory_or_a_gone_root_means_a_full_walk() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a")).unwrap();
        let mut w = Watch::new(t.path()).unwrap();
        assert!(w.add("") && w.add("a"));
        std::fs::rename(t.path().join("a"), t.path().join("b")).unwrap();
        assert_eq!(w.take(), Dirty::All);

        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let mut w = Watch::new(&root).unwrap();
        assert!(w.add(""));
        std::fs::remove_dir(&root).unwrap();
        assert_eq!(w.take(), Dirty::All);
    }

    #[test]
    fn a_removed_directory_marks_its_parent_and_is_forgotten() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        let mut w = Watch::new(t.path()).unwrap();
        assert!(w.add("") && w.add("a") && w.add("a/b"));
        std::fs::remove_dir(t.path().join("a/b")).unwrap();
        assert_eq!(dirs(w.take()), ["a"]);
        assert!(!w.has("a/b") && w.has("a"));
    }
}
