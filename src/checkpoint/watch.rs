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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What changed since the last [`Watch::take`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// Not known: walk everything (and build a new watch).
    All,
    /// These directories (workspace-relative, `""` for the root).
    Dirs(BTreeSet<String>),
}

/// One event as read: the watch descriptor, what happened, the name in the directory.
type Event = (i32, ReadFlags, Option<String>);

/// The process's one inotify instance, shared by every [`Watch`].
///
/// One, because closing an instance waits for the kernel to free its marks, and when another
/// instance was closed just before, that is a full RCU grace period (5–15 ms here, measured):
/// the checkpoints' and the changed-files look's instances closed at exit were most of what
/// `rein exec` spent after its answer. The instance is never closed before the process exits.
/// Its events go to every watch; each keeps those of the directories it added.
struct Hub {
    fd: OwnedFd,
    /// What each live watch has not taken yet, by the watch's id.
    queues: Mutex<HashMap<u64, Queue>>,
}

/// The events read for one watch and not taken yet.
#[derive(Default)]
struct Queue {
    /// The watch descriptors the watch added: only their events are its.
    wds: HashSet<i32>,
    events: Vec<Event>,
    /// More arrived than [`QUEUE_LIMIT`], or reading failed: only a full walk can tell.
    lost: bool,
}

/// Events kept for a watch that is not taking them, as the kernel's own queue keeps
/// (`max_queued_events`), before the watch is treated as overflowed.
const QUEUE_LIMIT: usize = 16_384;

/// The hub, once made.
static HUB: Mutex<Option<&'static Hub>> = Mutex::new(None);

/// The hub, made on first use; `None` where inotify is not available (tried again next time).
fn hub() -> Option<&'static Hub> {
    let mut hub = HUB.lock().unwrap_or_else(|e| e.into_inner());
    if hub.is_none() {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
            .map_err(|e| tracing::debug!("checkpoint: no inotify: {e}"))
            .ok()?;
        // Leaked on purpose: it lives as long as the process.
        *hub = Some(Box::leak(Box::new(Hub {
            fd,
            queues: Mutex::default(),
        })));
    }
    *hub
}

/// Lets the process exit without waiting for the kernel to free the inotify marks.
///
/// The last close of an instance with marks waits for an RCU grace period: 8–24 ms of every
/// exit here, measured (a process exiting with one watch), most of what `rein exec` spent
/// after its answer. So, just before exiting, a forked child takes over one reference to the
/// instance (it closes everything else at once) and holds it until the parent is gone (the end
/// of a pipe only the parent writes); the child's exit pays the wait, and nobody waits for it.
/// It runs no code but `close_range`, `chdir`, `prctl`, `read` and `_exit`, named `rein-exit`
/// in `/` so that it holds nothing of the workspace. Nothing to do when no watch was made.
/// Returns the child's pid.
pub fn release_at_exit() -> Option<i32> {
    use std::os::fd::AsRawFd;
    let hub = (*HUB.lock().unwrap_or_else(|e| e.into_inner()))?;
    let inotify = hub.fd.as_raw_fd();
    let mut ends = [0; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let [read_end, write_end] = ends;
    // SAFETY: the child calls only async-signal-safe system calls before `_exit`.
    match unsafe { libc::fork() } {
        0 => hold_until_parent_exits([inotify, read_end]),
        -1 => {
            // SAFETY: both are ours and used nowhere else.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            None
        }
        // The write end stays open until this process exits, which the child waits for.
        pid => {
            // SAFETY: ours, used nowhere else.
            unsafe { libc::close(read_end) };
            Some(pid)
        }
    }
}

/// The child of [`release_at_exit`]: every descriptor but `keep` closed, then a read that
/// ends when the parent's end of the pipe (`keep[1]`) closes.
fn hold_until_parent_exits(keep: [i32; 2]) -> ! {
    // SAFETY: plain system calls on constant strings.
    unsafe {
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, c"rein-exit".as_ptr());
    }
    let (low, high) = (keep[0].min(keep[1]) as u32, keep[0].max(keep[1]) as u32);
    let ranges = [
        (0, low.wrapping_sub(1)),
        (low + 1, high - 1),
        (high + 1, u32::MAX),
    ];
    for (first, last) in ranges {
        if first <= last && !(first == 0 && low == 0) {
            // SAFETY: close_range only closes descriptors.
            unsafe {
                libc::syscall(
                    libc::SYS_close_range,
                    libc::c_ulong::from(first),
                    libc::c_ulong::from(last),
                    0 as libc::c_ulong,
                )
            };
        }
    }
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a local.
        let n = unsafe { libc::read(keep[1], (&raw mut byte).cast(), 1) };
        // SAFETY: errno of this thread.
        if n >= 0 || unsafe { *libc::__errno_location() } != libc::EINTR {
            break;
        }
    }
    // SAFETY: ends the child without running any of the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

impl Hub {
    fn queues(&self) -> MutexGuard<'_, HashMap<u64, Queue>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads every event the kernel has queued and hands each to every watch, then takes
    /// what is queued for the watch `id` (`None`: some were lost).
    fn take(&self, id: u64) -> Option<Vec<Event>> {
        let mut queues = self.queues();
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            let event = match reader.next() {
                Ok(ev) => (
                    ev.wd(),
                    ev.events(),
                    // A name that is not UTF-8 cannot be told apart here: marked, so that the
                    // watch that gets it walks everything (a walk reads such names as they are).
                    ev.file_name().map(|n| match n.to_str() {
                        Ok(name) => name.to_string(),
                        Err(_) => NOT_UTF8.to_string(),
                    }),
                ),
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(e) => {
                    tracing::debug!("checkpoint: inotify read failed: {e}");
                    queues.values_mut().for_each(|q| q.lost = true);
                    break;
                }
            };
            // An overflow of the kernel's queue (wd -1) is everyone's.
            let overflow = event.1.contains(ReadFlags::QUEUE_OVERFLOW);
            let theirs = |q: &&mut Queue| !q.lost && (overflow || q.wds.contains(&event.0));
            for queue in queues.values_mut().filter(theirs) {
                if queue.events.len() >= QUEUE_LIMIT {
                    queue.lost = true;
                    queue.events = Vec::new();
                } else {
                    queue.events.push(event.clone());
                }
            }
        }
        let queue = queues.get_mut(&id)?;
        let events = std::mem::take(&mut queue.events);
        (!std::mem::take(&mut queue.lost)).then_some(events)
    }

    /// Watches `path` for the watch `id`. Under the lock that reading takes, so that no event
    /// of the new descriptor is handed out before it is known to be the watch's.
    fn add(&self, id: u64, path: &Path) -> Result<i32, Errno> {
        let mut queues = self.queues();
        let wd = inotify::add_watch(&self.fd, path, EVENTS)?;
        if let Some(queue) = queues.get_mut(&id) {
            queue.wds.insert(wd);
        }
        Ok(wd)
    }
}

/// The directories watched, and what their events said so far.
pub(crate) struct Watch {
    hub: &'static Hub,
    /// This watch's queue in the hub.
    id: u64,
    root: PathBuf,
    by_wd: HashMap<i32, String>,
    by_dir: HashMap<String, i32>,
    dirty: BTreeSet<String>,
    /// Directories holding files with more than one link: a write through another name of
    /// such a file raises no event here, so they are looked at by every scan.
    linked: HashSet<String>,
    lost: bool,
    /// Whether a changed `.gitignore` makes the next look a full walk (the checkpoints' scan
    /// follows ignore files; the sandbox's look for new repositories does not).
    ignore_files_matter: bool,
    /// Directories made since the last [`Watch::take_created`], when kept (`None`: not kept).
    created: Option<Vec<String>>,
    /// Other entries made or moved in since the last [`Watch::take_created`] (kept with
    /// `created`): where a new link may be.
    entries: Vec<String>,
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

/// What an event's name becomes when it is not UTF-8 (no file name holds a NUL).
const NOT_UTF8: &str = "\0not UTF-8";

/// Names whose change changes what a walk includes.
fn is_ignore_file(name: &str) -> bool {
    name == ".gitignore" || name == ".ignore"
}

/// The parent of a workspace-relative path (`""` for a top-level entry).
pub(crate) fn parent_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(p, _)| p)
}

/// The known files of each directory (workspace-relative paths by their parent), so that a
/// look at the directories a watch marked costs what is in them, not a pass over every
/// file of the workspace (10,000 files: ~8 ms per bash call before).
#[derive(Debug, Default)]
pub(crate) struct DirIndex(HashMap<String, HashSet<String>>);

impl DirIndex {
    /// The index of `rels`.
    pub fn of<'a>(rels: impl Iterator<Item = &'a String>) -> DirIndex {
        let mut index = DirIndex::default();
        for rel in rels {
            index.insert(rel);
        }
        index
    }

    /// `rel` is known.
    pub fn insert(&mut self, rel: &str) {
        let dir = parent_of(rel);
        match self.0.get_mut(dir) {
            Some(files) => {
                if !files.contains(rel) {
                    files.insert(rel.to_string());
                }
            }
            None => {
                self.0
                    .insert(dir.to_string(), HashSet::from([rel.to_string()]));
            }
        }
    }

    /// `rel` is gone.
    pub fn remove(&mut self, rel: &str) {
        let dir = parent_of(rel);
        if let Some(files) = self.0.get_mut(dir) {
            files.remove(rel);
            if files.is_empty() {
                self.0.remove(dir);
            }
        }
    }

    /// The known files directly in `dir`.
    pub fn in_dir(&self, dir: &str) -> impl Iterator<Item = &String> {
        self.0.get(dir).into_iter().flatten()
    }

    /// The known files anywhere below `dir` (a pass over the directories, not the files).
    pub fn under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a String> {
        self.0
            .iter()
            .filter(move |(d, _)| {
                dir.is_empty()
                    || d.as_str() == dir
                    || (d.len() > dir.len()
                        && d.starts_with(dir)
                        && d.as_bytes()[dir.len()] == b'/')
            })
            .flat_map(|(_, files)| files)
    }
}

impl Watch {
    /// A watch of nothing yet under `root`; `None` where inotify is not available.
    pub fn new(root: &Path) -> Option<Watch> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let hub = hub()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        hub.queues().insert(id, Queue::default());
        Some(Watch {
            hub,
            id,
            root: root.to_path_buf(),
            by_wd: HashMap::new(),
            by_dir: HashMap::new(),
            dirty: BTreeSet::new(),
            linked: HashSet::new(),
            lost: false,
            ignore_files_matter: true,
            created: None,
            entries: Vec::new(),
        })
    }

    /// A watch for the sandbox's look at new repositories: ignore files do not matter, and
    /// the directories made are kept (their subtrees are not watched yet).
    pub fn keeping_created(root: &Path) -> Option<Watch> {
        Watch::new(root).map(|mut w| {
            w.ignore_files_matter = false;
            w.created = Some(Vec::new());
            w
        })
    }

    /// The directories made (workspace-relative) since the last call, in the directories
    /// [`Watch::take`] said changed, and the other entries made or moved in there; take them
    /// after it. Empty unless the watch keeps them.
    pub fn take_created(&mut self) -> (Vec<String>, Vec<String>) {
        let dirs = self
            .created
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        (dirs, std::mem::take(&mut self.entries))
    }

    /// Whether this watch describes `root`.
    pub fn is_of(&self, root: &Path) -> bool {
        self.root == root
    }

    /// Watches the directory `rel`. Returns false when the watch can no longer be complete
    /// (the limit of watches is reached, or the directory is already watched under another
    /// name); a directory that is gone already is no failure (its parent's event tells).
    pub fn add(&mut self, rel: &str) -> bool {
        match self.hub.add(self.id, &self.root.join(rel)) {
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

    /// Takes in every event queued for this watch (or that it lost some).
    fn drain(&mut self) {
        let Some(events) = self.hub.take(self.id) else {
            self.lost = true;
            return;
        };
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
        if name.as_deref() == Some(NOT_UTF8) {
            self.lost = true;
            return;
        }
        if self.ignore_files_matter && name.as_deref().is_some_and(is_ignore_file) {
            self.lost = true;
            return;
        }
        if let (Some(created), Some(name)) = (&mut self.created, &name) {
            let rel = match dir.is_empty() {
                true => name.clone(),
                false => format!("{dir}/{name}"),
            };
            if mask.contains(ReadFlags::CREATE | ReadFlags::ISDIR) {
                created.push(rel);
            } else if mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                // Too many to look at one by one: a whole walk looks at every entry.
                if self.entries.len() >= QUEUE_LIMIT {
                    self.lost = true;
                    return;
                }
                self.entries.push(rel);
            }
        }
        self.dirty.insert(dir);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // Its marks stay: another watch may share them, and the instance is closed at exit.
        self.hub.queues().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_a_directorys_files_and_those_below_it() {
        let rels: Vec<String> = ["a.rs", "src/b.rs", "src/deep/c.rs", "srcx/d.rs", "e/f.rs"]
            .map(String::from)
            .to_vec();
        let mut index = DirIndex::of(rels.iter());
        let sorted = |it: &mut dyn Iterator<Item = &String>| {
            let mut v: Vec<String> = it.cloned().collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&mut index.in_dir("")), ["a.rs"]);
        assert_eq!(sorted(&mut index.in_dir("src")), ["src/b.rs"]);
        assert_eq!(
            sorted(&mut index.under("src")),
            ["src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(sorted(&mut index.under("")).len(), 5);
        index.remove("src/b.rs");
        index.insert("src/g.rs");
        index.insert("src/g.rs");
        assert_eq!(sorted(&mut index.in_dir("src")), ["src/g.rs"]);
        index.remove("e/f.rs");
        assert_eq!(sorted(&mut index.under("e")), Vec::<String>::new());
        assert!(
            !index.0.contains_key("e"),
            "an emptied directory is dropped"
        );
    }

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

    #[test]
    fn two_watches_of_one_directory_each_see_every_change_in_it() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a")).unwrap();
        let mut whole = Watch::new(t.path()).unwrap();
        assert!(whole.add("") && whole.add("a"));
        let mut inner = Watch::new(&t.path().join("a")).unwrap();
        assert!(inner.add(""));
        std::fs::write(t.path().join("a/x"), "1").unwrap();
        // The first to look does not take the other's events.
        assert_eq!(dirs(whole.take()), ["a"]);
        assert_eq!(dirs(inner.take()), [""]);
        std::fs::write(t.path().join("a/y"), "1").unwrap();
        assert_eq!(dirs(inner.take()), [""]);
        assert_eq!(dirs(whole.take()), ["a"]);
        // A watch gone takes nothing with it.
        drop(inner);
        std::fs::write(t.path().join("a/z"), "1").unwrap();
        assert_eq!(dirs(whole.take()), ["a"]);
    }

    #[test]
    fn a_watch_that_never_looks_is_told_to_walk_once_it_missed_too_much() {
        let t = tempfile::tempdir().unwrap();
        let mut idle = Watch::new(t.path()).unwrap();
        let mut busy = Watch::new(t.path()).unwrap();
        assert!(idle.add("") && busy.add(""));
        let file = t.path().join("x");
        // Each write is two events (modify, close); the busy watch drains the kernel's queue.
        for round in 0..QUEUE_LIMIT / 1000 + 1 {
            for i in 0..500 {
                std::fs::write(&file, format!("{round} {i}")).unwrap();
            }
            assert_eq!(dirs(busy.take()), [""]);
        }
        assert_eq!(idle.take(), Dirty::All);
        std::fs::write(&file, "again").unwrap();
        assert_eq!(dirs(busy.take()), [""]);
    }

    /// Two instances closed one after the other cost a grace period at exit (see [`Hub`]).
    #[test]
    fn every_watch_shares_the_one_inotify_instance() {
        let t = tempfile::tempdir().unwrap();
        let watches: Vec<Watch> = (0..3).map(|_| Watch::new(t.path()).unwrap()).collect();
        let instances = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:inotify")
            })
            .count();
        assert_eq!(instances, 1);
        drop(watches);
    }

    #[test]
    fn at_exit_a_child_holding_only_the_instance_takes_over_its_last_close() {
        let t = tempfile::tempdir().unwrap();
        let _watch = Watch::new(t.path()).unwrap();
        let pid = release_at_exit().expect("a child to hold the instance");
        let held = || -> Vec<String> {
            let mut links: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| std::fs::read_link(e.path()).ok())
                        .map(|l| l.to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            links.sort();
            links
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while held().len() != 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let links = held();
        assert_eq!(links.len(), 2, "{links:?}");
        assert_eq!(links[0], "anon_inode:inotify");
        assert!(links[1].starts_with("pipe:"), "{links:?}");
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
        assert_eq!(cwd, Path::new("/"), "it holds nothing of the workspace");
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_eq!(comm.trim(), "rein-exit");
    }
}
