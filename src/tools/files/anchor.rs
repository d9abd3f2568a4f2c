//! Opening files without races. A path is resolved once (`..` applied, symlinks followed,
//! containment and protection decided) into a physical path. From then on nothing is looked up
//! by name again: each directory on the way is opened relative to the one before with
//! `O_NOFOLLOW`, and the file is read, created and renamed relative to the directory handle
//! that was opened. A directory swapped for a symlink between the check and the use makes the
//! open fail (`ELOOP`) instead of landing where the symlink points.
//!
//! Why a component walk and not `openat2(RESOLVE_BENEATH)` or `cap-std`: the walk is the same
//! few syscalls on every Unix (one code path, tested everywhere), the physical path already has
//! no symlink in it, so "follow none" is exactly the check needed, it covers reads outside the
//! workspace (which `RESOLVE_BENEATH` cannot anchor) with the same guarantee, and writes need
//! the parent directory's handle anyway (create the temp file and rename relative to it).

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

/// A directory opened by a walk that followed no symlink.
pub(crate) struct Dir {
    fd: OwnedFd,
}

/// How directories are opened: as handles for `*at` calls only (no read permission needed).
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Whether an error means a symlink stood where a real directory or file was resolved.
pub(crate) fn is_swapped(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// Opens the directory `path` (absolute and physical) from `/`, one component at a time,
/// following no symlink. With `create`, missing directories are made on the way.
pub(crate) fn open_dir(path: &Path, create: bool) -> io::Result<Dir> {
    let mut dir = Dir {
        fd: rustix::fs::open("/", DIR_FLAGS, Mode::empty())?,
    };
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => dir = dir.child(name, create)?,
            // A physical path has neither; refusing them keeps the walk beneath each handle.
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the path is not fully resolved",
                ));
            }
        }
    }
    Ok(dir)
}

/// Opens the file `path` (absolute and physical) for reading, following no symlink on the way
/// or at the end. Never blocks on a FIFO (check the type with `metadata` before reading).
pub(crate) fn open_file(path: &Path) -> io::Result<File> {
    let (parent, name) = split(path)?;
    match open_dir(parent, false)?.open(name)? {
        Some(file) => Ok(file),
        None => Err(io::Error::from(io::ErrorKind::NotFound)),
    }
}

/// The parent directory and the last component of a file path.
pub(crate) fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        )),
    }
}

impl Dir {
    /// Opens the directory `path` itself, following links on the way: for a root the person
    /// chose (the workspace), below which every walk then follows none.
    pub(crate) fn open_root(path: &Path) -> io::Result<Dir> {
        let flags = DIR_FLAGS.difference(OFlags::NOFOLLOW);
        Ok(Dir {
            fd: rustix::fs::open(path, flags, Mode::empty())?,
        })
    }

    /// Another handle on the same directory.
    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
        })
    }

    /// The subdirectory `name`, made first when missing and `create` is set.
    fn child(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
        Ok(self.subdir(name, create.then_some(0o777))?)
    }

    /// The subdirectory `name`, never through a link (`ELOOP`); when it is missing and
    /// `create` gives permission bits, it is made with them first.
    pub(crate) fn subdir(&self, name: &OsStr, create: Option<u32>) -> Result<Dir, Errno> {
        match (self.open_dir_at(name), create) {
            (Err(Errno::NOENT), Some(mode)) => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e),
                }
                // Opened without following: a link raced in after mkdir fails here.
                self.open_dir_at(name)
            }
            (other, _) => other,
        }
    }

    /// What `name` is, without following a link; `None` when nothing has that name.
    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Option<rustix::fs::Stat>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the subdirectory `name`; a symlink there is `ELOOP` whatever the platform says
    /// (`O_PATH | O_NOFOLLOW` opens the link itself, so `O_DIRECTORY` reports `ENOTDIR`).
    fn open_dir_at(&self, name: &OsStr) -> Result<Dir, Errno> {
        match rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Dir { fd }),
            Err(Errno::NOTDIR) => {
                let link =
                    rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode)
                            == rustix::fs::FileType::Symlink
                    });
                Err(if link { Errno::LOOP } else { Errno::NOTDIR })
            }
            Err(e) => Err(e),
        }
    }

    /// Opens `name` in this directory for reading; `None` when there is nothing by that name.
    pub(crate) fn open(&self, name: &OsStr) -> io::Result<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(File::from(fd))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a new file `name` here for writing, with the permission bits `mode` (before
    /// the umask); fails if anything has that name.
    pub(crate) fn create_new_with(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))?;
        Ok(File::from(fd))
    }

    /// Renames `from` to `to`, both in this directory (replacing `to`).
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Removes the file `name` from this directory.
    pub(crate) fn remove(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }
}

/// A name for a temporary file beside `name`, unique within this process.
pub(crate) fn temp_name(name: &OsStr, n: u64) -> OsString {
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".rein-{}-{n}.tmp", std::process::id()));
    tmp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    fn base() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        (dir, path)
    }

    #[test]
    fn opens_and_creates_along_real_directories() {
        let (_t, b) = base();
        std::fs::create_dir_all(b.join("a/b")).unwrap();
        std::fs::write(b.join("a/b/f.txt"), "hi").unwrap();
        let mut text = String::new();
        open_file(&b.join("a/b/f.txt"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hi");
        open_dir(&b.join("x/y/z"), true).unwrap();
        assert!(b.join("x/y/z").is_dir());
        let err = open_file(&b.join("a/missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_symlink_anywhere_on_the_way_is_refused() {
        let (_t, b) = base();
        std::fs::create_dir_all(b.join("outside")).unwrap();
        std::fs::write(b.join("outside/f.txt"), "secret").unwrap();
        std::fs::create_dir_all(b.join("ws")).unwrap();
        symlink(b.join("outside"), b.join("ws/d")).unwrap();
        symlink(b.join("outside/f.txt"), b.join("ws/f.txt")).unwrap();
        // (what is opened, create missing directories)
        let cases = [
            (b.join("ws/d/f.txt"), false),
            (b.join("ws/d/new/dir"), true),
            (b.join("ws/f.txt"), false),
        ];
        for (path, create) in cases {
            let err = if create {
                open_dir(&path, true).err().unwrap()
            } else {
                open_file(&path).err().unwrap()
            };
            assert!(is_swapped(&err), "{}: {err}", path.display());
        }
        assert!(
            !b.join("outside/new").exists(),
            "nothing was created through the link"
        );
    }

    #[test]
    fn unresolved_paths_are_refused() {
        let (_t, b) = base();
        let err = open_dir(&b.join("a/../b"), true).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
