//! The file tools (`read_file`, `write_file`) and the file helpers `str_replace` shares:
//! path resolution, text detection, line numbering, atomic writes.

mod read;
mod write;

pub use read::ReadFile;
pub use write::WriteFile;

use super::{ToolCtx, ToolError};
use crate::sandbox::paths::{self, ResolvedPath};
use std::fs;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// How much of a file's start decides whether it is text.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Files larger than this are not loaded for an approval diff or an edit.
pub(crate) const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// Resolves a path argument against the workspace, as a tool error on failure.
pub(crate) fn resolve(ctx: &ToolCtx, raw: &str) -> Result<ResolvedPath, ToolError> {
    paths::resolve(&ctx.workspace, ctx.home.as_deref(), raw).map_err(ToolError)
}

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

/// Reads what `path` holds now, for [`Before`]. A directory or a special file is an error.
pub(crate) fn read_before(path: &ResolvedPath) -> Result<Before, ToolError> {
    let cannot = |e: std::io::Error| ToolError(format!("cannot read {}: {e}.", path.display));
    let meta = match fs::metadata(&path.path) {
        Ok(m) => m,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Before::Missing);
        }
        Err(e) => return Err(cannot(e)),
    };
    if meta.is_dir() {
        return Err(ToolError(format!(
            "{} is a directory; refusing to write over it. Give a file path.",
            path.display
        )));
    }
    if !meta.is_file() {
        return Err(ToolError(format!(
            "{} is not a regular file (a device, FIFO or socket); the file tools write regular files only.",
            path.display
        )));
    }
    let file = fs::File::open(&path.path).map_err(cannot)?;
    before_of(file, meta.len()).map_err(cannot)
}

/// Reads an open file to its end into a [`Before`], keeping the text of small text files.
fn before_of(mut file: fs::File, size_hint: u64) -> std::io::Result<Before> {
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
/// refuses and writes nothing. Returns whether the file was created.
pub(crate) fn write_unchanged(
    path: &ResolvedPath,
    before: &Before,
    content: &[u8],
) -> Result<bool, ToolError> {
    let now = read_before(path)?;
    if !now.same(before) {
        return Err(changed_error(path));
    }
    write_atomic(path, content)
}

/// Whether a file start looks like binary data: a NUL byte, or mostly bytes that are neither
/// valid UTF-8 nor ordinary text characters.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    if std::str::from_utf8(sample).is_ok() {
        return false;
    }
    let text = String::from_utf8_lossy(sample);
    let total = text.chars().count().max(1);
    let bad = text
        .chars()
        .filter(|&c| {
            c == char::REPLACEMENT_CHARACTER
                || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b'))
        })
        .count();
    bad * 10 > total * 3
}

/// Formats lines `cat -n` style (number right-aligned in 6 columns, then a tab), starting at
/// line number `first`.
pub(crate) fn numbered<'a>(first: usize, lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "{:>6}\t{}",
            first + i,
            line.strip_suffix('\r').unwrap_or(line)
        ));
    }
    out
}

/// Names in `dir` that look like a misspelling of `name`, best first (cheap: reads at most a
/// few thousand entries).
pub(crate) fn similar_names(dir: &Path, name: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .take(5000)
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let lower = name.to_lowercase();
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| n.to_lowercase() == lower)
        .cloned()
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for m in similar::get_close_matches(name, &refs, 3, 0.6) {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out.truncate(3);
    out
}

/// The error for a path that does not exist, with near-miss names from its directory.
pub(crate) fn missing_error(path: &ResolvedPath, hint: &str) -> ToolError {
    let mut msg = format!("{} does not exist.", path.display);
    let display_parent = Path::new(&path.display)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let (Some(parent), Some(name)) = (
        path.path.parent(),
        path.path.file_name().and_then(|n| n.to_str()),
    ) {
        if parent.is_dir() {
            let near: Vec<String> = similar_names(parent, name)
                .iter()
                .map(|n| display_parent.join(n).to_string_lossy().into_owned())
                .collect();
            if !near.is_empty() {
                msg.push_str(&format!(" Did you mean {}?", near.join(" or ")));
            }
        } else if parent.exists() {
            msg.push_str(&format!(
                " Its parent {} is a file, not a directory.",
                display_parent.display()
            ));
        } else if !display_parent.as_os_str().is_empty() {
            msg.push_str(&format!(
                " Its directory {} does not exist either.",
                display_parent.display()
            ));
        }
    }
    msg.push(' ');
    msg.push_str(hint);
    ToolError(msg)
}

/// The error for a directory where a file was expected, listing a few entries.
pub(crate) fn directory_error(path: &ResolvedPath) -> ToolError {
    let mut names: Vec<String> = fs::read_dir(&path.path)
        .map(|rd| {
            rd.take(5000)
                .filter_map(|e| {
                    let e = e.ok()?;
                    let mut n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().ok()?.is_dir() {
                        n.push('/');
                    }
                    Some(n)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let shown = names.len().min(20);
    let listing = if names.is_empty() {
        "It is empty.".to_string()
    } else if names.len() > shown {
        format!(
            "It contains {} (and {} more).",
            names[..shown].join(", "),
            names.len() - shown
        )
    } else {
        format!("It contains {}.", names.join(", "))
    };
    ToolError(format!(
        "{} is a directory, not a file. {listing} Use bash `ls` to list it, then name a file inside.",
        path.display
    ))
}

/// Writes `content` to `path` atomically (a temp file in the same directory, then rename),
/// creating parent directories and keeping an existing file's permission bits. Returns whether
/// the file was created (rather than overwritten).
pub(crate) fn write_atomic(path: &ResolvedPath, content: &[u8]) -> Result<bool, ToolError> {
    let target = &path.path;
    let cannot = |e: std::io::Error| ToolError(format!("cannot write {}: {e}.", path.display));
    let existing = match fs::metadata(target) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError(format!(
                "{} is a directory; refusing to write over it. Give a file path.",
                path.display
            )));
        }
        Ok(meta) => Some(meta.permissions()),
        // A parent that is a file gets a clearer message from `create_dir_all` below.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => None,
        Err(e) => return Err(cannot(e)),
    };
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(ToolError(format!(
            "{} is not a file path. Give a file path.",
            path.display
        )));
    };
    fs::create_dir_all(parent).map_err(|e| {
        ToolError(format!(
            "cannot create the directory for {}: {e}. Check that no parent is a file.",
            path.display
        ))
    })?;
    let (tmp, mut file) = create_temp_beside(parent, &name.to_string_lossy()).map_err(cannot)?;
    let result = (|| {
        file.write_all(content)?;
        if let Some(perms) = &existing {
            file.set_permissions(perms.clone())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(cannot(e));
    }
    Ok(existing.is_none())
}

/// Creates a new, uniquely named hidden file in `dir` for an atomic write.
fn create_temp_beside(dir: &Path, name: &str) -> std::io::Result<(PathBuf, fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.rein-{}-{n}.tmp", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_detection() {
        assert!(!looks_binary(b"plain text\nwith lines\n"));
        assert!(!looks_binary("unicode ünïcödé ✓\n".as_bytes()));
        assert!(looks_binary(b"ELF\x02\x01\x01\0\0\0"));
        // Latin-1 text with a few accented bytes is still text.
        assert!(!looks_binary(
            b"caf\xe9 au lait, cr\xe8me br\xfbl\xe9e and more plain words here"
        ));
        assert!(looks_binary(&[
            0x89, 0xff, 0xfe, 0x80, 0x81, 0x82, 0xc3, 0x28, 0xa0, 0xa1
        ]));
    }

    #[test]
    fn numbering_is_cat_n_style() {
        assert_eq!(numbered(9, ["a", "b\r"]), "     9\ta\n    10\tb");
    }

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let rp = paths::resolve(&ws, None, "run.sh").unwrap();
        assert!(write_atomic(&rp, b"#!/bin/sh\n").unwrap());
        fs::set_permissions(&rp.path, fs::Permissions::from_mode(0o751)).unwrap();
        assert!(!write_atomic(&rp, b"#!/bin/sh\necho hi\n").unwrap());
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
}
