//! What a sandboxed command may read, as Landlock rules.
//!
//! Landlock only grants: a right on a directory covers everything beneath it, and nothing can
//! be taken back below. So "read everything except X" is built by granting every sibling on
//! the way down to X instead of the directory that holds it (the directories on the way get
//! only the right to list their entries). `/dev` is excluded the same way and only a few
//! harmless devices are granted, so no terminal (`/dev/tty`, `/dev/pts/*`, consoles) and no
//! raw disk can be read, not even by root.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Devices every command may read and write.
pub(crate) const DATA_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];
/// Devices every command may read.
pub(crate) const RANDOM_DEVICES: [&str; 2] = ["/dev/random", "/dev/urandom"];

/// One read grant.
pub(crate) enum Grant {
    /// Only listing entries (the directories on the way to an excluded path).
    List(OwnedFd),
    /// Reading (and executing) everything beneath: a directory.
    Tree(OwnedFd),
    /// Reading and executing one file.
    File(OwnedFd),
}

/// What a grant allows, without its descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    List,
    Tree,
    File,
}

impl Grant {
    /// What it allows, and the descriptor it allows it on.
    pub(crate) fn parts(&self) -> (Kind, BorrowedFd<'_>) {
        match self {
            Grant::List(fd) => (Kind::List, fd.as_fd()),
            Grant::Tree(fd) => (Kind::Tree, fd.as_fd()),
            Grant::File(fd) => (Kind::File, fd.as_fd()),
        }
    }
}

/// A grant kept from one walk.
enum Kept {
    /// Held open.
    Held(Grant),
    /// A mount's root, opened again each time: a descriptor held open would keep its file
    /// system from being unmounted ("target is busy").
    Reopen(PathBuf, Kind),
}

/// The grants of one walk ([`each_grant`]), kept and added again to later rulesets while
/// nothing they were decided by has changed: a walk opens every sibling on the way to what is
/// excluded (hundreds in a crowded `/tmp` or `/home`), a replay only adds the rules.
pub(crate) struct Walk {
    kept: Vec<Kept>,
    /// Every directory whose entries decided the grants, stamped before the walk.
    deciding: Vec<(PathBuf, super::stamp::Stamp)>,
    /// rein's mount table, opened before the walk: it polls as changed once a mount comes or
    /// goes (a new mount's root needs a rule of its own).
    mounts: Option<std::fs::File>,
    /// A change was seen: never valid again.
    stale: std::sync::atomic::AtomicBool,
    /// Something could not be kept (a path not to be named, a failed look, too many): not
    /// to be replayed.
    incomplete: bool,
    /// Descriptors it may hold.
    budget: usize,
}

impl Walk {
    /// Starts recording a walk for `excluded` and `covered` (as [`each_grant`] takes them),
    /// holding at most `budget` descriptors (past it, nothing is held and the walk is not kept:
    /// a crowded directory must not use up the descriptors rein needs).
    pub(crate) fn start(excluded: &[PathBuf], covered: &Covered, budget: usize) -> Walk {
        let mounts = std::fs::File::open("/proc/self/mountinfo").ok();
        let mut dirs: Vec<PathBuf> = vec![PathBuf::from("/")];
        let all = excluded
            .iter()
            .map(PathBuf::as_path)
            .chain(std::iter::once(Path::new("/dev")))
            .chain(covered.iter().map(|(root, _)| root.as_path()));
        for e in all {
            dirs.extend(e.ancestors().skip(1).map(Path::to_path_buf));
        }
        for (root, shown) in covered {
            for place in shown {
                let within = place
                    .ancestors()
                    .skip(1)
                    .take_while(|a| a.starts_with(root));
                dirs.extend(within.map(Path::to_path_buf));
            }
        }
        dirs.sort();
        dirs.dedup();
        Walk {
            deciding: dirs
                .into_iter()
                .map(|d| (d.clone(), super::stamp::of_entry(&d)))
                .collect(),
            kept: Vec::new(),
            mounts,
            stale: std::sync::atomic::AtomicBool::new(false),
            incomplete: false,
            budget,
        }
    }

    /// Keeps `grant` (added to a ruleset by the walk being recorded).
    pub(crate) fn keep(&mut self, grant: Grant) {
        if self.incomplete {
            return;
        }
        if self.kept.len() >= self.budget {
            self.incomplete = true;
            self.kept.clear();
            return;
        }
        let (kind, fd) = grant.parts();
        match mount_root(fd) {
            Some(false) => self.kept.push(Kept::Held(grant)),
            Some(true) => match fd_path(fd) {
                Ok(path)
                    if path.is_absolute()
                        && !path.as_os_str().as_bytes().ends_with(b" (deleted)") =>
                {
                    self.kept.push(Kept::Reopen(path, kind))
                }
                _ => self.incomplete = true,
            },
            None => self.incomplete = true,
        }
    }

    /// Whether this walk may be kept: complete, and no deciding directory changed after
    /// `settled` (a change within the same timestamp tick would not show in its stamp).
    pub(crate) fn keepable(&self, settled: std::time::SystemTime) -> bool {
        if self.incomplete || self.mounts.is_none() {
            return false;
        }
        !self
            .deciding
            .iter()
            .any(|(_, s)| super::stamp::unsettled(s, settled))
    }

    /// Lets go of the descriptors (a walk not kept for replays still tells whether a ruleset
    /// built from it is current).
    pub(crate) fn forget_grants(&mut self) {
        self.kept.clear();
    }

    /// Whether the grants are still what a walk now would give: no deciding directory
    /// changed and no mount came or went (when the mount table could be watched). Once not,
    /// never again.
    pub(crate) fn still_valid(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.stale.load(Ordering::Acquire) {
            return false;
        }
        let mounted = self.mounts.as_ref().is_some_and(|m| {
            let mut poll = libc::pollfd {
                fd: m.as_raw_fd(),
                events: libc::POLLPRI,
                revents: 0,
            };
            // SAFETY: polling one valid descriptor without waiting.
            let events = unsafe { libc::poll(&mut poll, 1, 0) };
            events != 0
        });
        let changed = mounted
            || self
                .deciding
                .iter()
                .any(|(d, s)| super::stamp::of_entry(d) != *s);
        if changed {
            self.stale.store(true, Ordering::Release);
        }
        !changed
    }

    /// Calls `add` with each kept grant (a mount's root opened anew; one gone is left out).
    pub(crate) fn replay<E>(
        &self,
        add: &mut dyn FnMut(Kind, BorrowedFd<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        for kept in &self.kept {
            match kept {
                Kept::Held(grant) => {
                    let (kind, fd) = grant.parts();
                    add(kind, fd)?;
                }
                Kept::Reopen(path, kind) => {
                    if let Some(fd) = open_path(path) {
                        add(*kind, fd.as_fd())?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The path `fd` was opened at, as the kernel names it now.
fn fd_path(fd: BorrowedFd<'_>) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Whether `fd` is the root of a mount (`None`: the kernel cannot say).
fn mount_root(fd: BorrowedFd<'_>) -> Option<bool> {
    // SAFETY: an all-zero statx is valid; the kernel fills it.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, empty NUL-terminated path, a buffer of the right type.
    let rc = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            0,
            &mut stx,
        )
    };
    let known = u64::from(libc::STATX_ATTR_MOUNT_ROOT as u32);
    (rc == 0 && stx.stx_attributes_mask & known != 0).then_some(stx.stx_attributes & known != 0)
}

/// Opens `path` for use in a Landlock rule without following a final symlink.
fn open_path(path: &Path) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: valid NUL-terminated path; the descriptor is owned by the returned value.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Directories left out of the read rules as a whole but for places shown in them, each with
/// those places (canonical): home, and the shared temporary and runtime directories.
pub(crate) type Covered = [(PathBuf, Vec<PathBuf>)];

/// Calls `add` with each grant for "everything but `excluded`" (absolute, canonical paths)
/// and `/dev`, and for the shown places of each `covered` directory (which is excluded as a
/// whole) except what lies in another excluded path inside it (a home shown in `/tmp`
/// is granted by home's own places). One grant is open at a time: a directory on
/// the way with more entries than the descriptor limit (a crowded `/tmp`) must not run out of
/// descriptors and lose the grants that come late.
pub(crate) fn each_grant<E>(
    excluded: &[PathBuf],
    covered: &Covered,
    add: &mut dyn FnMut(Grant) -> Result<(), E>,
) -> Result<(), E> {
    let mut excluded: Vec<&Path> = excluded.iter().map(PathBuf::as_path).collect();
    excluded.push(Path::new("/dev"));
    excluded.extend(covered.iter().map(|(root, _)| root.as_path()));
    split(Path::new("/"), &excluded, add)?;
    for (root, shown) in covered {
        let root = root.as_path();
        for place in shown
            .iter()
            .filter(|p| p.starts_with(root) && p.as_path() != root)
        {
            if excluded
                .iter()
                .any(|e| *e != root && !root.starts_with(e) && place.starts_with(e))
            {
                continue;
            }
            let inner: Vec<&Path> = excluded
                .iter()
                .copied()
                .filter(|e| e.starts_with(place))
                .collect();
            if inner.is_empty() {
                if let Some(grant) = grant_whole(place) {
                    add(grant)?;
                }
            } else {
                split(place, &inner, add)?;
            }
        }
    }
    Ok(())
}

/// The grant for reading all of `path` (a directory tree or a file), if it can be opened.
fn grant_whole(path: &Path) -> Option<Grant> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let fd = open_path(path)?;
    if meta.file_type().is_symlink() {
        return None;
    }
    Some(if meta.is_dir() {
        Grant::Tree(fd)
    } else {
        Grant::File(fd)
    })
}

fn split<E>(
    dir: &Path,
    excluded: &[&Path],
    add: &mut dyn FnMut(Grant) -> Result<(), E>,
) -> Result<(), E> {
    if let Some(fd) = open_path(dir) {
        add(Grant::List(fd))?;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = dir.join(entry.file_name());
        if excluded.contains(&path.as_path()) {
            continue;
        }
        // At `/`, only the system's directories are granted whole (an allow-list: one made
        // after the session's views were listed stays hidden); the others are reached
        // through their views' shown places.
        if dir == Path::new("/") && !super::secrets::is_system_dir(&entry.file_name()) {
            if excluded.iter().any(|e| e.starts_with(&path)) {
                split(&path, excluded, add)?;
            }
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // A link's target is granted (or not) where it lives; following it here could grant
        // an excluded path under another name.
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() && excluded.iter().any(|e| e.starts_with(&path)) {
            split(&path, excluded, add)?;
            continue;
        }
        let Some(fd) = open_path(&path) else {
            continue;
        };
        add(if kind.is_dir() {
            Grant::Tree(fd)
        } else {
            Grant::File(fd)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(excluded: &[PathBuf], covered: &Covered) -> Vec<Grant> {
        let mut out = Vec::new();
        let _ = each_grant(excluded, covered, &mut |g| {
            out.push(g);
            Ok::<(), ()>(())
        });
        out
    }

    fn real_path(fd: &OwnedFd) -> PathBuf {
        fd_path(fd.as_fd()).unwrap()
    }

    #[test]
    fn excluded_paths_and_dev_are_left_out_and_their_siblings_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in [".ssh", ".config/gh", ".config/nvim", "proj"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "x").unwrap();
        std::fs::write(home.join(".bashrc"), "x").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("ssh-link")).unwrap();
        let excluded = [
            home.join(".ssh"),
            home.join(".config/gh"),
            home.join(".netrc"),
        ];
        let grants = grants(&excluded, &[]);
        let (mut lists, mut full) = (Vec::new(), Vec::new());
        for g in &grants {
            match g {
                Grant::List(fd) => lists.push(real_path(fd)),
                Grant::Tree(fd) | Grant::File(fd) => full.push(real_path(fd)),
            }
        }
        assert!(lists.contains(&PathBuf::from("/")));
        assert!(lists.contains(&home) && lists.contains(&home.join(".config")));
        for p in [
            home.join("proj"),
            home.join(".bashrc"),
            home.join(".config/nvim"),
        ] {
            assert!(full.contains(&p), "{p:?} not granted");
        }
        for p in &full {
            assert!(!excluded.iter().any(|e| p.starts_with(e)), "{p:?} granted");
            assert!(!p.starts_with("/dev"), "{p:?} granted");
            assert!(!home.starts_with(p), "an ancestor {p:?} got full access");
        }
        assert!(!full.contains(&home.join("ssh-link")));
        assert!(full.contains(&PathBuf::from("/usr")));
    }

    /// A walk recorded the way the spare ruleset records one.
    fn walk(excluded: &[PathBuf], covered: &Covered) -> Walk {
        walk_within(excluded, covered, usize::MAX)
    }

    fn walk_within(excluded: &[PathBuf], covered: &Covered, budget: usize) -> Walk {
        let mut walk = Walk::start(excluded, covered, budget);
        let _ = each_grant(excluded, covered, &mut |g| {
            walk.keep(g);
            Ok::<(), ()>(())
        });
        walk
    }

    /// `walk`, watching only the deciding directories under `root`: the ones above it (`/tmp`)
    /// and the mount table change whenever other tests run, which is not under test here.
    fn walk_under(root: &Path, home: &Path, shown: &[PathBuf]) -> Walk {
        let mut walk = walk(&[], &[(home.to_path_buf(), shown.to_vec())]);
        walk.deciding.retain(|(d, _)| d.starts_with(root));
        walk.mounts = None;
        walk
    }

    fn replayed(walk: &Walk) -> Vec<(Kind, PathBuf)> {
        let mut out = Vec::new();
        let _ = walk.replay(&mut |kind, fd| {
            let path = fd_path(fd).unwrap();
            out.push((kind, path));
            Ok::<(), ()>(())
        });
        out
    }

    #[test]
    fn a_kept_walk_is_replayed_until_a_deciding_directory_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::create_dir(root.join("beside")).unwrap();
        let shown = [home.join(".cargo/bin"), home.join(".rustup")];
        let walk = walk(&[], &[(home.clone(), shown.to_vec())]);
        // Deciding: every directory on the way to home, /dev and the shown places.
        let deciding: Vec<&Path> = walk.deciding.iter().map(|(d, _)| d.as_path()).collect();
        for d in [Path::new("/"), &root, &home, &home.join(".cargo")] {
            assert!(deciding.contains(&d), "{d:?} not deciding");
        }
        assert!(!deciding.contains(&home.join(".cargo/bin").as_path()));
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        // Just made: kept only once its directories have settled.
        assert!(!walk.keepable(earlier));
        assert!(walk.keepable(later));
        let small = walk_within(&[], &[(home.clone(), shown.to_vec())], 3);
        assert!(
            small.kept.is_empty() && !small.keepable(later),
            "past its budget"
        );
        let grants = replayed(&walk);
        assert!(grants.contains(&(Kind::Tree, root.join("beside"))));
        assert!(grants.contains(&(Kind::Tree, home.join(".cargo/bin"))));
        assert!(
            grants
                .iter()
                .all(|(_, p)| !p.starts_with(&home) || p.starts_with(home.join(".cargo/bin")))
        );
        // A mount's root is opened anew, never held: /proc is one, and is granted.
        assert!(grants.contains(&(Kind::Tree, PathBuf::from("/proc"))));
        assert!(walk.kept.iter().all(|k| match k {
            Kept::Held(g) => mount_root(g.parts().1) == Some(false),
            Kept::Reopen(..) => true,
        }));
        // A directory made beside home: the walk is stale, for good.
        let walk = walk_under(&root, &home, &shown);
        assert!(walk.still_valid());
        std::fs::create_dir(root.join("new")).unwrap();
        assert!(!walk.still_valid());
        std::fs::remove_dir(root.join("new")).unwrap();
        assert!(!walk.still_valid());
        // A shown place that appears in home.
        let walk = walk_under(&root, &home, &shown);
        assert!(walk.still_valid());
        std::fs::create_dir(home.join(".rustup")).unwrap();
        assert!(!walk.still_valid());
        // A place inside a shown one is not deciding: its tree is granted whole.
        let walk = walk_under(&root, &home, &shown);
        std::fs::create_dir(home.join(".cargo/bin/more")).unwrap();
        assert!(walk.still_valid());
    }

    /// Set by the test that runs the next one in a mount namespace of its own.
    const OWN_MOUNT_NAMESPACE: &str = "REIN_TEST_OWN_MOUNT_NAMESPACE";

    /// Run by the next test in a mount namespace of its own (`unshare`): a mount made after a
    /// walk makes it stale.
    #[test]
    #[ignore = "run in a mount namespace of its own by the test below"]
    fn in_own_mount_namespace_a_new_mount_makes_a_walk_stale() {
        // Never mounts in the namespace of someone running the ignored tests by hand.
        if std::env::var_os(OWN_MOUNT_NAMESPACE).is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        std::fs::create_dir(&home).unwrap();
        let walk = walk(&[], &[(home.clone(), Vec::new())]);
        // Only the mount table is under test: the directories above change with other tests.
        let mut walk = walk;
        walk.deciding.clear();
        assert!(walk.still_valid(), "stale before any mount");
        let target = std::ffi::CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        // SAFETY: valid NUL-terminated strings; a tmpfs in this test's own mount namespace.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "mount: {}", std::io::Error::last_os_error());
        assert!(!walk.still_valid(), "a new mount went unseen");
        assert!(!walk.still_valid(), "stale is for good");
    }

    #[test]
    fn a_mount_made_after_a_walk_makes_it_stale() {
        let exe = std::env::current_exe().unwrap();
        let test =
            "sandbox::readable::tests::in_own_mount_namespace_a_new_mount_makes_a_walk_stale";
        // Root gets a plain mount namespace; others map themselves to root in a user namespace.
        // SAFETY: geteuid cannot fail.
        let flags = if unsafe { libc::geteuid() } == 0 {
            "-m"
        } else {
            "-rm"
        };
        let out = std::process::Command::new("unshare")
            .args([flags, "--propagation", "private"])
            .arg(&exe)
            .args(["--ignored", "--exact", test])
            .env(OWN_MOUNT_NAMESPACE, "1")
            .output();
        // Without `unshare` or mount namespaces here, there is nothing to run it in (as the
        // sandbox's own tests, it then passes without looking).
        let Ok(out) = out else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && err.contains("unshare failed") {
            return;
        }
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}\n{err}"
        );
    }

    #[test]
    fn a_home_inside_a_covered_directory_shows_only_its_own_places() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let run = root.join("run");
        let home = run.join("home");
        for d in ["ws", "secret", "home/.ssh", "home/.cargo/bin"] {
            std::fs::create_dir_all(run.join(d)).unwrap();
        }
        let covered = [
            (run.clone(), vec![run.join("ws"), home.clone()]),
            (home.clone(), vec![home.join(".cargo/bin")]),
        ];
        let full: Vec<PathBuf> = grants(&[], &covered)
            .iter()
            .filter_map(|g| match g {
                Grant::Tree(fd) | Grant::File(fd) => Some(real_path(fd)),
                Grant::List(_) => None,
            })
            .collect();
        assert!(full.contains(&run.join("ws")) && full.contains(&home.join(".cargo/bin")));
        for p in &full {
            assert!(
                !p.starts_with(run.join("secret")) && !p.starts_with(home.join(".ssh")),
                "{p:?} granted"
            );
            assert!(!home.starts_with(p), "{p:?}: home granted as a whole");
        }
    }

    #[test]
    fn home_is_left_out_but_for_its_shown_places() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in [".ssh", ".cargo/bin", ".cargo/registry/keys", "proj"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".cargo/env"), "x").unwrap();
        let hidden = [home.join(".cargo/registry/keys")];
        let shown = [
            home.join(".cargo/bin"),
            home.join(".cargo/env"),
            home.join(".cargo/registry"),
            home.join("gone"),
        ];
        let (mut lists, mut full) = (Vec::new(), Vec::new());
        for g in &grants(&hidden, &[(home.clone(), shown.to_vec())]) {
            match g {
                Grant::List(fd) => lists.push(real_path(fd)),
                Grant::Tree(fd) | Grant::File(fd) => full.push(real_path(fd)),
            }
        }
        assert!(full.contains(&home.join(".cargo/bin")) && full.contains(&home.join(".cargo/env")));
        assert!(lists.contains(&home.join(".cargo/registry")));
        assert!(!lists.contains(&home) && !lists.contains(&home.join(".cargo")));
        for p in &full {
            assert!(
                !p.starts_with(home.join(".ssh")) && !p.starts_with(home.join("proj")),
                "{p:?}"
            );
            assert!(!p.starts_with(&hidden[0]) && !home.starts_with(p), "{p:?}");
        }
    }
}
