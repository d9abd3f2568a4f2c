//! Race-free file access inside the workspace for restoring checkpoints. Every path is walked
//! from a descriptor of the workspace root, one component at a time, with `O_NOFOLLOW`: a
//! symbolic link anywhere on the way (planted by a hostile repository, or swapped in while
//! rein works) ends the walk with an error instead of leading outside. Files are replaced by
//! renaming a new file over the name, which replaces a link itself rather than writing
//! through it. `.git` and `.rein` are never entered.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Directories a restore never writes into (what git and rein read as configuration).
const PROTECTED: &[&str] = &[".git", ".rein"];

/// What a path holds, read without following links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing there (or a parent directory is missing).
    Missing,
    /// A regular file.
    File {
        /// Its content.
        bytes: Vec<u8>,
        /// Its permission bits.
        mode: u32,
    },
    /// A regular file over the size limit (not read).
    TooLarge {
        /// Its size.
        size: u64,
        /// Its permission bits.
        mode: u32,
    },
    /// Something else: a directory, a symbolic link, a device... (named for people).
    Other(&'static str),
}

/// The workspace, held open.
#[derive(Debug)]
pub struct Anchor {
    root: OwnedFd,
}

fn cstr(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| invalid("a path with a NUL byte"))
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// The components of a workspace-relative path, refusing anything that could leave the
/// workspace or reach a protected directory.
pub fn components(rel: &str) -> io::Result<Vec<&str>> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty() || rel.starts_with('/') {
        return Err(invalid(format!("{rel:?} is not a workspace-relative path")));
    }
    for p in &parts {
        if p.is_empty() || *p == "." || *p == ".." {
            return Err(invalid(format!("{rel:?} is not a plain relative path")));
        }
        if PROTECTED.iter().any(|d| p.eq_ignore_ascii_case(d)) {
            return Err(invalid(format!(
                "{rel} is inside {p}, which rein never restores"
            )));
        }
    }
    Ok(parts)
}

fn kind_name(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFREG => "a file",
        _ => "a special file",
    }
}

fn fstatat(dir: RawFd, name: &CString) -> io::Result<Option<libc::stat>> {
    // SAFETY: an all-zero `stat` is a valid value; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name, valid out-pointer.
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc == 0 {
        return Ok(Some(st));
    }
    let e = last_error();
    match e.raw_os_error() {
        Some(libc::ENOENT) => Ok(None),
        _ => Err(e),
    }
}

fn openat(
    dir: RawFd,
    name: &CString,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Anchor {
    /// Opens the workspace root (the root itself may be reached through links: it is where the
    /// person works).
    pub fn open(root: &Path) -> io::Result<Anchor> {
        let dir = File::open(root)?;
        if !dir.metadata()?.is_dir() {
            return Err(invalid(format!("{} is not a directory", root.display())));
        }
        Ok(Anchor { root: dir.into() })
    }

    /// Opens the directory holding `parts`' last component; `None` when a directory on the
    /// way is missing and `create` is false.
    fn parent(&self, rel: &str, parts: &[&str], create: bool) -> io::Result<Option<OwnedFd>> {
        let mut dir = self.root.try_clone()?;
        let dirs = &parts[..parts.len().saturating_sub(1)];
        for (i, part) in dirs.iter().enumerate() {
            let name = cstr(part)?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            let next = match openat(dir.as_raw_fd(), &name, flags, 0) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) && !create => return Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    // SAFETY: valid descriptor and NUL-terminated name.
                    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) } != 0 {
                        let e = last_error();
                        if e.raw_os_error() != Some(libc::EEXIST) {
                            return Err(e);
                        }
                    }
                    // Opened without following: a link raced in after mkdir fails here.
                    openat(dir.as_raw_fd(), &name, flags, 0)?
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                    let what = fstatat(dir.as_raw_fd(), &name)?
                        .map_or("not a directory", |st| kind_name(st.st_mode));
                    let at = parts[..=i].join("/");
                    return Err(invalid(format!(
                        "{at} is {what}, so rein does not restore {rel} through it"
                    )));
                }
                Err(e) => return Err(e),
            };
            dir = next;
        }
        Ok(Some(dir))
    }

    /// Reads what `rel` holds, files up to `max` bytes.
    pub fn read(&self, rel: &str, max: u64) -> io::Result<Found> {
        let parts = components(rel)?;
        let dir = match self.parent(rel, &parts, false) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(Found::Missing),
            // A parent that is a file or a link: no file of the workspace lives there.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                return Ok(Found::Other("behind a symbolic link or a file"));
            }
            Err(e) => return Err(e),
        };
        let name = cstr(parts[parts.len() - 1])?;
        let Some(st) = fstatat(dir.as_raw_fd(), &name)? else {
            return Ok(Found::Missing);
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Ok(Found::Other(kind_name(st.st_mode)));
        }
        // Non-blocking and not following: a FIFO or a link swapped in cannot hang or redirect
        // the read; fstat then checks what was really opened.
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = match openat(dir.as_raw_fd(), &name, flags, 0) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Found::Missing),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Ok(Found::Other("a symbolic link"));
            }
            Err(e) => return Err(e),
        };
        let mut file = File::from(fd);
        let meta = file.metadata()?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
        if !meta.is_file() {
            return Ok(Found::Other("a special file"));
        }
        if meta.len() > max {
            return Ok(Found::TooLarge {
                size: meta.len(),
                mode,
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        Read::by_ref(&mut file)
            .take(max + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Ok(Found::TooLarge {
                size: bytes.len() as u64,
                mode,
            });
        }
        Ok(Found::File { bytes, mode })
    }

    /// Replaces (or creates) `rel` with `bytes` and permission bits `mode`, creating missing
    /// parent directories.
    pub fn write(&self, rel: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let parts = components(rel)?;
        let dir = self
            .parent(rel, &parts, true)?
            .ok_or_else(|| invalid("cannot create the parent directory"))?;
        let name = cstr(parts[parts.len() - 1])?;
        if let Some(st) = fstatat(dir.as_raw_fd(), &name)?
            && st.st_mode & libc::S_IFMT == libc::S_IFDIR
        {
            return Err(invalid(format!(
                "{rel} is a directory now; rein does not replace a directory"
            )));
        }
        let tmp = cstr(&format!(".rein-restore-{:08x}.tmp", rand::random::<u32>()))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = openat(dir.as_raw_fd(), &tmp, flags, 0o600)?;
        let result = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777))?;
            file.sync_all()?;
            // SAFETY: valid descriptors and NUL-terminated names.
            let rc = unsafe {
                libc::renameat(
                    dir.as_raw_fd(),
                    tmp.as_ptr(),
                    dir.as_raw_fd(),
                    name.as_ptr(),
                )
            };
            if rc != 0 {
                return Err(last_error());
            }
            Ok(())
        })();
        if result.is_err() {
            // SAFETY: valid descriptor and NUL-terminated name.
            unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        }
        result
    }

    /// Removes the file `rel` (a link is removed itself, never its target). Missing is fine.
    pub fn remove(&self, rel: &str) -> io::Result<()> {
        let parts = components(rel)?;
        let Some(dir) = self.parent(rel, &parts, false)? else {
            return Ok(());
        };
        let name = cstr(parts[parts.len() - 1])?;
        match fstatat(dir.as_raw_fd(), &name)? {
            None => return Ok(()),
            Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(invalid(format!(
                    "{rel} is a directory now; rein does not remove a directory"
                )));
            }
            Some(_) => {}
        }
        // SAFETY: valid descriptor and NUL-terminated name.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
            let e = last_error();
            if e.raw_os_error() != Some(libc::ENOENT) {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn refuses_paths_that_leave_or_reach_protected_dirs() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            ".git/config",
            "sub/.GIT/hooks/pre-commit",
            ".rein/config.toml",
        ] {
            assert!(components(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(components("src/a.rs").unwrap(), vec!["src", "a.rs"]);
        assert!(components(".github/ci.yml").is_ok());
    }

    #[test]
    fn writes_reads_and_removes_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let a = Anchor::open(dir.path()).unwrap();
        a.write("new/deep/f.sh", b"#!/bin/sh\n", 0o755).unwrap();
        let p = dir.path().join("new/deep/f.sh");
        assert_eq!(std::fs::read(&p).unwrap(), b"#!/bin/sh\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            a.read("new/deep/f.sh", 100).unwrap(),
            Found::File {
                bytes: b"#!/bin/sh\n".to_vec(),
                mode: 0o755
            }
        );
        assert!(matches!(
            a.read("new/deep/f.sh", 3).unwrap(),
            Found::TooLarge { size: 10, .. }
        ));
        assert_eq!(a.read("nope/x", 100).unwrap(), Found::Missing);
        assert_eq!(a.read("new", 100).unwrap(), Found::Other("a directory"));
        a.remove("new/deep/f.sh").unwrap();
        assert!(!p.exists());
        a.remove("new/deep/f.sh").unwrap();
        assert!(a.remove("new").is_err(), "never removes a directory");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("new/deep"))
            .unwrap()
            .collect();
        assert!(names.is_empty(), "no temp file left: {names:?}");
    }

    #[test]
    fn never_follows_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "keep me").unwrap();
        symlink(&outside, ws.join("linkdir")).unwrap();
        symlink(outside.join("secret"), ws.join("linkfile")).unwrap();
        let a = Anchor::open(&ws).unwrap();

        let err = a.write("linkdir/secret", b"pwned", 0o644).unwrap_err();
        assert!(
            err.to_string().contains("linkdir is a symbolic link"),
            "{err}"
        );
        assert!(a.write("linkdir/new", b"pwned", 0o644).is_err());
        assert!(a.remove("linkdir/secret").is_err());
        assert_eq!(
            a.read("linkfile", 100).unwrap(),
            Found::Other("a symbolic link")
        );
        assert_eq!(
            a.read("linkdir/secret", 100).unwrap(),
            Found::Other("behind a symbolic link or a file")
        );
        // Writing the link's own name replaces the link, not its target.
        a.write("linkfile", b"restored", 0o644).unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "keep me"
        );
        assert!(!ws.join("linkfile").is_symlink());
        assert_eq!(
            std::fs::read_to_string(ws.join("linkfile")).unwrap(),
            "restored"
        );
        // Removing a link removes the link only.
        symlink(outside.join("secret"), ws.join("link2")).unwrap();
        a.remove("link2").unwrap();
        assert!(outside.join("secret").exists());
        assert!(!outside.join("new").exists());
    }
}
