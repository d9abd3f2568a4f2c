//! Race-free file access inside the workspace for restoring checkpoints. Every path is walked
//! from a descriptor of the workspace root, one component at a time, with `O_NOFOLLOW`: a
//! symbolic link anywhere on the way (planted by a hostile repository, or swapped in while
//! rein works) ends the walk with an error instead of leading outside. Files are replaced by
//! renaming a new file over the name, which replaces a link itself rather than writing
//! through it. `.git` and `.rein` are never entered.

use crate::tools::files::anchor::Dir;
use rustix::fs::FileType;
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Mutex;

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
pub struct Anchor {
    root: Dir,
    /// For a scan: the parent directory of the last file read, kept open (see
    /// [`Anchor::scanning`]); `None` inside when nothing is kept.
    recent: Option<Mutex<Option<(String, Dir)>>>,
}

impl std::fmt::Debug for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Anchor")
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// The components of a workspace-relative path, refusing anything that could leave the
/// workspace or reach a protected directory.
pub fn components(rel: &str) -> io::Result<Vec<&str>> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty() || rel.starts_with('/') {
        return Err(invalid(format!("{rel:?} is not a workspace-relative path")));
    }
    if rel.contains('\0') {
        return Err(invalid("a path with a NUL byte"));
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

fn kind_name(mode: u32) -> &'static str {
    match FileType::from_raw_mode(mode) {
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a file",
        _ => "a special file",
    }
}

fn is_dir(st: &rustix::fs::Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

impl Anchor {
    /// Opens the workspace root (the root itself may be reached through links: it is where the
    /// person works).
    pub fn open(root: &Path) -> io::Result<Anchor> {
        match Dir::open_root(root) {
            Ok(root) => Ok(Anchor { root, recent: None }),
            Err(e) if e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) => {
                Err(invalid(format!("{} is not a directory", root.display())))
            }
            Err(e) => Err(e),
        }
    }

    /// [`Anchor::open`] for a scan, which reads a directory's files one after another: the
    /// directory of the last file read stays open, so the walk from the root is made once per
    /// directory, not per file (most of a first scan's system calls). The handle was opened
    /// without following links from the root; a rename since only changes the name its files
    /// are recorded under, as a race with a fresh walk can. Restores keep walking per file.
    pub fn scanning(root: &Path) -> io::Result<Anchor> {
        let mut anchor = Anchor::open(root)?;
        anchor.recent = Some(Mutex::new(None));
        Ok(anchor)
    }

    /// Opens the directory holding `parts`' last component; `None` when a directory on the
    /// way is missing and `create` is false.
    fn parent(&self, rel: &str, parts: &[&str], create: bool) -> io::Result<Option<Dir>> {
        let mut dir = self.root.try_clone()?;
        let dirs = &parts[..parts.len().saturating_sub(1)];
        for (i, part) in dirs.iter().enumerate() {
            let name = OsStr::new(part);
            dir = match dir.subdir(name, create.then_some(0o755)) {
                Ok(next) => next,
                Err(Errno::NOENT) if !create => return Ok(None),
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let what = dir
                        .stat(name)?
                        .map_or("not a directory", |st| kind_name(st.st_mode));
                    let at = parts[..=i].join("/");
                    return Err(invalid(format!(
                        "{at} is {what}, so rein does not restore {rel} through it"
                    )));
                }
                Err(e) => return Err(e.into()),
            };
        }
        Ok(Some(dir))
    }

    /// Reads what `rel` holds, files up to `max` bytes.
    pub fn read(&self, rel: &str, max: u64) -> io::Result<Found> {
        let parts = components(rel)?;
        let Some(name) = parts.last().map(OsStr::new) else {
            return Ok(Found::Other("a directory"));
        };
        let Some(recent) = &self.recent else {
            return match self.parent_or_found(rel, &parts)? {
                Ok(dir) => read_in(&dir, name, max),
                Err(found) => Ok(found),
            };
        };
        let key = parts[..parts.len() - 1].join("/");
        let mut recent = recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.as_ref().is_none_or(|(k, _)| *k != key) {
            *recent = None;
            match self.parent_or_found(rel, &parts)? {
                Ok(dir) => *recent = Some((key, dir)),
                Err(found) => return Ok(found),
            }
        }
        match recent.as_ref() {
            Some((_, dir)) => read_in(dir, name, max),
            None => Ok(Found::Missing),
        }
    }

    /// The directory holding `rel`, or what to report when there is none.
    fn parent_or_found(&self, rel: &str, parts: &[&str]) -> io::Result<Result<Dir, Found>> {
        match self.parent(rel, parts, false) {
            Ok(Some(dir)) => Ok(Ok(dir)),
            Ok(None) => Ok(Err(Found::Missing)),
            // A parent that is a file or a link: no file of the workspace lives there.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                Ok(Err(Found::Other("behind a symbolic link or a file")))
            }
            Err(e) => Err(e),
        }
    }
    /// Replaces (or creates) `rel` with `bytes` and permission bits `mode`, creating missing
    /// parent directories.
    pub fn write(&self, rel: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let parts = components(rel)?;
        let dir = self
            .parent(rel, &parts, true)?
            .ok_or_else(|| invalid("cannot create the parent directory"))?;
        let name = OsStr::new(parts[parts.len() - 1]);
        if dir.stat(name)?.is_some_and(|st| is_dir(&st)) {
            return Err(invalid(format!(
                "{rel} is a directory now; rein does not replace a directory"
            )));
        }
        let tmp = format!(".rein-restore-{:08x}.tmp", rand::random::<u32>());
        let tmp = OsStr::new(&tmp);
        let mut file = dir.create_new_with(tmp, 0o600)?;
        // Renaming over the name replaces a link (or a hard link) itself, never its target.
        let result = (|| {
            file.write_all(bytes)?;
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777))?;
            file.sync_all()?;
            dir.rename(tmp, name)
        })();
        if result.is_err() {
            let _ = dir.remove(tmp);
        }
        result
    }

    /// Removes the file `rel` (a link is removed itself, never its target). Missing is fine.
    pub fn remove(&self, rel: &str) -> io::Result<()> {
        let parts = components(rel)?;
        let Some(dir) = self.parent(rel, &parts, false)? else {
            return Ok(());
        };
        let name = OsStr::new(parts[parts.len() - 1]);
        match dir.stat(name)? {
            None => return Ok(()),
            Some(st) if is_dir(&st) => {
                return Err(invalid(format!(
                    "{rel} is a directory now; rein does not remove a directory"
                )));
            }
            Some(_) => {}
        }
        match dir.remove(name) {
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(()),
            other => other,
        }
    }

    /// Whether a regular file is at `rel`, reached without following any link (a file behind
    /// a link swapped in for a directory is not a workspace file).
    pub fn is_file(&self, rel: &str) -> bool {
        let Ok(parts) = components(rel) else {
            return false;
        };
        let Ok(Some(dir)) = self.parent(rel, &parts, false) else {
            return false;
        };
        dir.stat(OsStr::new(parts[parts.len() - 1]))
            .ok()
            .flatten()
            .is_some_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
    }
}

/// Reads what `name` in `dir` holds, files up to `max` bytes.
fn read_in(dir: &Dir, name: &OsStr, max: u64) -> io::Result<Found> {
    let Some(st) = dir.stat(name)? else {
        return Ok(Found::Missing);
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(Found::Other(kind_name(st.st_mode)));
    }
    // Non-blocking and not following: a FIFO or a link swapped in cannot hang or redirect
    // the read; fstat then checks what was really opened.
    let mut file = match dir.open(name) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(Found::Missing),
        Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            return Ok(Found::Other("a symbolic link"));
        }
        Err(e) => return Err(e),
    };
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
    fn a_scan_keeps_one_directory_open_and_it_never_leads_outside() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, outside) = (dir.path().join("ws"), dir.path().join("outside"));
        for d in [ws.join("d"), ws.join("e"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(ws.join("d/a"), "a").unwrap();
        std::fs::write(ws.join("d/b"), "b in the workspace").unwrap();
        std::fs::write(ws.join("e/x"), "x").unwrap();
        std::fs::write(outside.join("b"), "secret").unwrap();
        let a = Anchor::scanning(&ws).unwrap();
        let text = |found: Found| match found {
            Found::File { bytes, .. } => String::from_utf8(bytes).unwrap(),
            other => panic!("not a file: {other:?}"),
        };
        assert_eq!(text(a.read("d/a", 100).unwrap()), "a");
        // `d` swapped for a link to outside while the scan holds it open: its files are read
        // from the directory that was opened (now `moved`), never from outside.
        std::fs::rename(ws.join("d"), ws.join("moved")).unwrap();
        symlink(&outside, ws.join("d")).unwrap();
        assert_eq!(text(a.read("d/b", 100).unwrap()), "b in the workspace");
        // Another directory read in between: `d` is walked again, and the link refused.
        assert_eq!(text(a.read("e/x", 100).unwrap()), "x");
        assert_eq!(
            a.read("d/b", 100).unwrap(),
            Found::Other("behind a symbolic link or a file")
        );
        assert_eq!(
            Anchor::open(&ws).unwrap().read("d/b", 100).unwrap(),
            Found::Other("behind a symbolic link or a file")
        );
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
