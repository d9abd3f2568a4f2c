//! What a sandboxed command may read, as Landlock rules.
//!
//! Landlock only grants: a right on a directory covers everything beneath it, and nothing can
//! be taken back below. So "read everything except X" is built by granting every sibling on
//! the way down to X instead of the directory that holds it (the directories on the way get
//! only the right to list their entries). `/dev` is excluded the same way and only a few
//! harmless devices are granted, so no terminal (`/dev/tty`, `/dev/pts/*`, consoles) and no
//! raw disk can be read, not even by root.

use std::os::fd::OwnedFd;
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

/// Calls `add` with each grant for "everything but `excluded`" (absolute, canonical paths)
/// and `/dev`, and for the `shown` places of `home` (which is excluded as a whole) except what
/// lies in another excluded path. One grant is open at a time: a directory on the way with
/// more entries than the descriptor limit (a crowded `/tmp`) must not run out of descriptors
/// and lose the grants that come late.
pub(crate) fn each_grant<E>(
    excluded: &[PathBuf],
    home: Option<(&Path, &[PathBuf])>,
    add: &mut dyn FnMut(Grant) -> Result<(), E>,
) -> Result<(), E> {
    let mut excluded: Vec<&Path> = excluded.iter().map(PathBuf::as_path).collect();
    excluded.push(Path::new("/dev"));
    excluded.extend(home.map(|(h, _)| h));
    split(Path::new("/"), &excluded, add)?;
    let Some((home, shown)) = home else {
        return Ok(());
    };
    for place in shown
        .iter()
        .filter(|p| p.starts_with(home) && p.as_path() != home)
    {
        if excluded.iter().any(|e| *e != home && place.starts_with(e)) {
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
    use std::os::fd::AsRawFd;

    fn grants(excluded: &[PathBuf], home: Option<(&Path, &[PathBuf])>) -> Vec<Grant> {
        let mut out = Vec::new();
        let _ = each_grant(excluded, home, &mut |g| {
            out.push(g);
            Ok::<(), ()>(())
        });
        out
    }

    fn real_path(fd: &OwnedFd) -> PathBuf {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap()
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
        let grants = grants(&excluded, None);
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
        for g in &grants(&hidden, Some((&home, &shown))) {
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
