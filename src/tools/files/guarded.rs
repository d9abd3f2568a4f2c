//! Writes guarded by what the person was shown: a fingerprint of the file when the call was
//! prepared, compared byte for byte right before the write, with every open anchored
//! ([`super::anchor`]) so the checked file and the written file are the same.

use super::anchor::{self, Dir};
use super::{MAX_EDIT_BYTES, ToolError};
use crate::sandbox::paths::ResolvedPath;
use std::fs::File;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A keyed hash of a file's bytes and their length: equal means byte-for-byte equal. The key
/// is random per process, so no repository or model can craft two contents that collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    hash: u64,
}

/// Hashes bytes as they are read.
struct FingerprintBuilder {
    len: u64,
    hasher: std::hash::DefaultHasher,
}

impl FingerprintBuilder {
    fn new() -> FingerprintBuilder {
        static KEYS: OnceLock<RandomState> = OnceLock::new();
        FingerprintBuilder {
            len: 0,
            hasher: KEYS.get_or_init(RandomState::new).build_hasher(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        self.hasher.write(bytes);
    }

    fn finish(self) -> Fingerprint {
        Fingerprint {
            len: self.len,
            hash: self.hasher.finish(),
        }
    }
}

impl Fingerprint {
    /// The fingerprint of these bytes.
    pub(crate) fn of(bytes: &[u8]) -> Fingerprint {
        let mut b = FingerprintBuilder::new();
        b.push(bytes);
        b.finish()
    }
}

/// What a file held when an edit was prepared: the edit is written only over exactly this.
#[derive(Clone, Debug)]
pub(crate) enum Before {
    /// There was no file.
    Missing,
    /// A file with these bytes; `text` when they are UTF-8 text of reasonable size.
    Present {
        /// Its content's fingerprint.
        fingerprint: Fingerprint,
        /// Its content, when it is text.
        text: Option<String>,
    },
}

impl Before {
    /// Whether both describe the same content (or both no file).
    pub(crate) fn same(&self, other: &Before) -> bool {
        match (self, other) {
            (Before::Missing, Before::Missing) => true,
            (Before::Present { fingerprint: a, .. }, Before::Present { fingerprint: b, .. }) => {
                a == b
            }
            _ => false,
        }
    }

    /// The text it held (`None`: no file, or not text).
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Before::Present { text, .. } => text.as_deref(),
            Before::Missing => None,
        }
    }
}

/// The error for an open that found a symlink where the resolved path had a real directory
/// or file: something swapped it meanwhile.
fn swapped_error(path: &ResolvedPath) -> ToolError {
    ToolError(format!(
        "{} changed while rein was opening it (a symlink appeared on the way), so it was not \
         touched. Check the path and try again.",
        path.display
    ))
}

/// Maps an open error to the tool's message.
fn open_error(path: &ResolvedPath, what: &str, e: io::Error) -> ToolError {
    if anchor::is_swapped(&e) {
        swapped_error(path)
    } else {
        ToolError(format!("cannot {what} {}: {e}.", path.display))
    }
}

/// What opening a path for reading found.
pub(crate) enum Opened {
    /// Nothing by that name (or a parent is missing or not a directory).
    Missing,
    /// A directory.
    Directory,
    /// A device, FIFO or socket.
    Special,
    /// A regular file, open, with its metadata.
    File(File, std::fs::Metadata),
}

/// Opens `path` for reading race-free (no symlink followed on the way: the path is already
/// resolved) and says what it is.
pub(crate) fn open_regular(path: &ResolvedPath) -> Result<Opened, ToolError> {
    let file = match anchor::open_file(&path.path) {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Opened::Missing);
        }
        Err(e) => return Err(open_error(path, "read", e)),
    };
    let meta = file.metadata().map_err(|e| open_error(path, "read", e))?;
    Ok(if meta.is_dir() {
        Opened::Directory
    } else if meta.is_file() {
        Opened::File(file, meta)
    } else {
        Opened::Special
    })
}

/// Reads what `path` holds now, for [`Before`]. A directory or a special file is an error.
pub(crate) fn read_before(path: &ResolvedPath) -> Result<Before, ToolError> {
    match open_regular(path)? {
        Opened::Missing => Ok(Before::Missing),
        Opened::File(file, meta) => {
            before_of(file, meta.len()).map_err(|e| open_error(path, "read", e))
        }
        Opened::Directory => Err(ToolError(format!(
            "{} is a directory; refusing to write over it. Give a file path.",
            path.display
        ))),
        Opened::Special => Err(ToolError(format!(
            "{} is not a regular file (a device, FIFO or socket); the file tools write regular \
             files only.",
            path.display
        ))),
    }
}

/// Reads an open file to its end into a [`Before`], keeping the text of small text files.
fn before_of(mut file: File, size_hint: u64) -> io::Result<Before> {
    let keep = size_hint <= MAX_EDIT_BYTES;
    let mut fp = FingerprintBuilder::new();
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        fp.push(&buf[..n]);
        if keep && kept.len() as u64 + n as u64 <= MAX_EDIT_BYTES {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    let fingerprint = fp.finish();
    let text = (keep && kept.len() as u64 == fingerprint.len && !kept.contains(&0))
        .then(|| String::from_utf8(kept).ok())
        .flatten();
    Ok(Before::Present { fingerprint, text })
}

/// Why an edit is refused when its file changed while the person was deciding.
pub(crate) fn changed_error(path: &ResolvedPath) -> ToolError {
    ToolError(format!(
        "the file changed since you proposed this edit; read it again. Nothing was written to {}.",
        path.display
    ))
}

/// Writes `content` to `path` only if the file still holds what `before` saw; otherwise
/// refuses and writes nothing. The check, the temp file and the rename all happen in one
/// directory handle opened without following symlinks. Returns whether the file was created.
pub(crate) fn write_unchanged(
    path: &ResolvedPath,
    before: &Before,
    content: &[u8],
) -> Result<bool, ToolError> {
    let (parent, name) = anchor::split(&path.path).map_err(|_| {
        ToolError(format!(
            "{} is not a file path. Give a file path.",
            path.display
        ))
    })?;
    let dir = anchor::open_dir(parent, true).map_err(|e| {
        if anchor::is_swapped(&e) {
            swapped_error(path)
        } else {
            ToolError(format!(
                "cannot create the directory for {}: {e}. Check that no parent is a file.",
                path.display
            ))
        }
    })?;
    let (now, mode) = match dir.open(name) {
        Ok(None) => (Before::Missing, None),
        Ok(Some(file)) => {
            let meta = file.metadata().map_err(|e| open_error(path, "read", e))?;
            if meta.is_dir() {
                return Err(ToolError(format!(
                    "{} is a directory; refusing to write over it. Give a file path.",
                    path.display
                )));
            }
            if !meta.is_file() {
                return Err(changed_error(path));
            }
            let now = before_of(file, meta.len()).map_err(|e| open_error(path, "read", e))?;
            (now, Some(meta.permissions().mode()))
        }
        // A symlink where the file was: a change like any other.
        Err(e) if anchor::is_swapped(&e) => return Err(changed_error(path)),
        Err(e) => return Err(open_error(path, "read", e)),
    };
    if !now.same(before) {
        return Err(changed_error(path));
    }
    let bits = match mode {
        None => Bits::New(new_file_mode(path, content)),
        Some(mode) => Bits::Kept(kept_mode(path, &now, mode, content)),
    };
    replace(&dir, name, content, bits)
        .map_err(|e| ToolError(format!("cannot write {}: {e}.", path.display)))?;
    Ok(mode.is_none())
}

/// The permission bits a write leaves.
#[derive(Clone, Copy)]
enum Bits {
    /// A new file's, before the umask.
    New(u32),
    /// The old file's, kept.
    Kept(u32),
}

/// The permission bits of a new file (before the umask): executable when it starts with `#!`
/// (a script the model was asked to write is meant to run, and `chmod` is denied by default),
/// except in protected places (`.git/`, `.rein/`), where an executable could be a hook.
pub(crate) fn new_file_mode(path: &ResolvedPath, content: &[u8]) -> u32 {
    if content.starts_with(b"#!") && path.inside_workspace && !path.protected {
        0o777
    } else {
        0o666
    }
}

/// The bits an existing file keeps, but for one a write turns into a script (a `#!` first
/// line where there was none, and no execute bit yet): executable where it is readable, as a
/// new script would be (a model wrote hello.sh without the line, then with it, and could not
/// run it: `chmod` is denied by default). Not in protected places, as for a new file.
fn kept_mode(path: &ResolvedPath, before: &Before, mode: u32, content: &[u8]) -> u32 {
    let became_script = content.starts_with(b"#!")
        && matches!(before, Before::Present { text: Some(old), .. } if !old.starts_with("#!"));
    if became_script && mode & 0o111 == 0 && path.inside_workspace && !path.protected {
        mode | ((mode & 0o444) >> 2)
    } else {
        mode
    }
}

/// Writes `content` to a new temp file in `dir`, then renames it over `name` (with the old
/// file's permission bits, or a new file's under the umask), so readers see the old or the
/// new file, never a part.
fn replace(dir: &Dir, name: &std::ffi::OsStr, content: &[u8], bits: Bits) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (tmp, mut file) = loop {
        let tmp = anchor::temp_name(name, COUNTER.fetch_add(1, Ordering::Relaxed));
        let create = match bits {
            Bits::New(mode) => mode,
            Bits::Kept(_) => 0o600,
        };
        match dir.create_new_with(&tmp, create) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = (|| {
        file.write_all(content)?;
        if let Bits::Kept(mode) = bits {
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
        }
        file.sync_all()?;
        drop(file);
        dir.rename(&tmp, name)
    })();
    if written.is_err() {
        let _ = dir.remove(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::paths;
    use std::fs;

    #[test]
    fn a_guarded_write_keeps_the_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let rp = paths::resolve(&ws, None, "run.sh").unwrap();
        assert!(write_unchanged(&rp, &Before::Missing, b"#!/bin/sh\n").unwrap());
        fs::set_permissions(&rp.path, fs::Permissions::from_mode(0o751)).unwrap();
        let before = read_before(&rp).unwrap();
        assert!(!write_unchanged(&rp, &before, b"#!/bin/sh\necho hi\n").unwrap());
        assert_eq!(fs::read(&rp.path).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(
            fs::metadata(&rp.path).unwrap().permissions().mode() & 0o7777,
            0o751
        );
        let names: Vec<_> = fs::read_dir(&ws)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run.sh")]);
    }

    #[test]
    fn a_write_that_makes_a_file_a_script_makes_it_executable_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let mode_of = |rel: &str| fs::metadata(ws.join(rel)).unwrap().permissions().mode() & 0o777;
        let write = |rel: &str, content: &[u8]| {
            let rp = paths::resolve(&ws, None, rel).unwrap();
            let before = read_before(&rp).unwrap();
            write_unchanged(&rp, &before, content).unwrap();
        };
        fs::write(ws.join("hello.sh"), "echo hi\n").unwrap();
        fs::set_permissions(ws.join("hello.sh"), fs::Permissions::from_mode(0o640)).unwrap();
        write("hello.sh", b"#!/bin/sh\necho hi\n");
        assert_eq!(mode_of("hello.sh"), 0o750, "x where r");
        // A file that was a script already keeps its bits (a module with a `#!` line).
        fs::write(ws.join("lib.py"), "#!/usr/bin/env python3\nX = 1\n").unwrap();
        fs::set_permissions(ws.join("lib.py"), fs::Permissions::from_mode(0o644)).unwrap();
        write("lib.py", b"#!/usr/bin/env python3\nX = 2\n");
        assert_eq!(mode_of("lib.py"), 0o644);
        // Never in a protected place, where an executable could be a hook.
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::write(ws.join(".git/hooks/pre-commit"), "x\n").unwrap();
        fs::set_permissions(
            ws.join(".git/hooks/pre-commit"),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let rp = paths::resolve(&ws, None, ".git/hooks/pre-commit").unwrap();
        assert!(rp.protected, "the test needs a protected path");
        let before = read_before(&rp).unwrap();
        write_unchanged(&rp, &before, b"#!/bin/sh\n").unwrap();
        assert_eq!(mode_of(".git/hooks/pre-commit"), 0o644);
    }

    /// The approval window: the path is checked and shown, then a directory on it becomes a
    /// symlink to somewhere else before the write. Nothing may land there.
    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (ws, outside) = (base.join("ws"), base.join("outside"));
        fs::create_dir_all(ws.join("d")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(ws.join("d/f.txt"), "orig").unwrap();
        fs::write(outside.join("f.txt"), "orig").unwrap();
        // (file, what it held when shown)
        let cases = [
            ("d/new.txt", Before::Missing),
            (
                "d/f.txt",
                read_before(&paths::resolve(&ws, None, "d/f.txt").unwrap()).unwrap(),
            ),
        ];
        for (rel, before) in cases {
            let rp = paths::resolve(&ws, None, rel).unwrap();
            assert!(rp.inside_workspace);
            fs::rename(ws.join("d"), ws.join("d.real")).unwrap();
            std::os::unix::fs::symlink(&outside, ws.join("d")).unwrap();
            let err = write_unchanged(&rp, &before, b"payload").unwrap_err();
            assert!(
                err.0.contains("a symlink appeared on the way"),
                "{rel}: {}",
                err.0
            );
            fs::remove_file(ws.join("d")).unwrap();
            fs::rename(ws.join("d.real"), ws.join("d")).unwrap();
        }
        let mut names: Vec<_> = fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["f.txt"], "nothing new outside");
        assert_eq!(fs::read_to_string(outside.join("f.txt")).unwrap(), "orig");
    }
}
