//! Read before overwrite: what the model has seen of each file in this conversation, so
//! `write_file` over an existing file and `str_replace` run only on a file the model read (or
//! wrote) and that is unchanged since. Creating a new file needs nothing.
//!
//! One ledger per conversation: the main agent's lives as long as its conversation (a new one
//! after `/clear` or a switch of session); a subagent gets an empty one of its own, since what
//! it read never reaches the parent's context (only its answer does).

use super::ToolError;
use super::files::Fingerprint;
use crate::sandbox::paths::ResolvedPath;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Files larger than this are recorded as read without a fingerprint (hashing them on every
/// read would cost more than it protects; the edit tools refuse them anyway).
const FINGERPRINT_LIMIT: u64 = super::files::MAX_EDIT_BYTES;

/// A refused file up to this size comes back in the refusal (see `check_showing`).
const SHOW_BYTES: usize = 24 * 1024;
const SHOW_LINES: usize = 400;

/// Fingerprints of the files the model has seen, by physical path.
#[derive(Debug, Default)]
pub struct ReadLedger {
    /// `None`: read, but too large to fingerprint.
    files: Mutex<HashMap<PathBuf, Option<Fingerprint>>>,
}

impl ReadLedger {
    /// The model saw exactly these bytes of `path` (it read or wrote them).
    pub(crate) fn saw(&self, path: &Path, fingerprint: Option<Fingerprint>) {
        crate::sync::lock(&self.files).insert(path.to_path_buf(), fingerprint);
    }

    /// The model read the open `file` at `path`: fingerprints its content from the start
    /// (positioned reads, so the handle's offset does not matter).
    pub(crate) fn saw_open(&self, path: &Path, file: &std::fs::File) {
        let fingerprint = file
            .metadata()
            .ok()
            .filter(|m| m.len() <= FINGERPRINT_LIMIT)
            .and_then(|_| fingerprint_open(file).ok());
        self.saw(path, fingerprint);
    }

    /// Whether a write over `path`, which holds `now`, may go ahead; the error says what to
    /// do first.
    pub(crate) fn check(
        &self,
        path: &ResolvedPath,
        now: &Fingerprint,
        verb: &str,
    ) -> Result<(), ToolError> {
        match crate::sync::lock(&self.files).get(&path.path) {
            None => Err(ToolError(format!(
                "{} exists and you had not read it, so nothing was changed: read it with \
                 read_file first, then {verb} it.",
                path.display
            ))),
            Some(Some(seen)) if seen != now => Err(ToolError(format!(
                "{} changed since you read it; read it again with read_file, then {verb} it.",
                path.display
            ))),
            Some(_) => Ok(()),
        }
    }

    /// Like [`check`](Self::check), but a refused file that is small enough comes back in the
    /// error, numbered like `read_file` shows it, and counts as read from then on: the model
    /// sees what it was about to overwrite and can retry at once (small models gave up on a
    /// bare "read it first").
    pub(crate) fn check_showing(
        &self,
        path: &ResolvedPath,
        text: Option<&str>,
        now: &Fingerprint,
        verb: &str,
    ) -> Result<(), ToolError> {
        let changed = self.was_read(path);
        let Err(refusal) = self.check(path, now, verb) else {
            return Ok(());
        };
        let Some(text) = text.filter(|t| t.len() <= SHOW_BYTES && t.lines().count() <= SHOW_LINES)
        else {
            return Err(refusal);
        };
        self.saw(&path.path, Some(*now));
        let numbered: String = text
            .lines()
            .enumerate()
            .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
            .collect();
        // Said as one next step: a small model read "read it first" as "it cannot be done".
        let next = if verb == "write" {
            "Now call write_file again with the whole new file: this content plus your change \
             (or str_replace to change one part)."
        } else {
            "Now call str_replace again with old_str copied exactly from this content."
        };
        let why = if changed {
            "changed since you read it"
        } else {
            "exists and you had not read it"
        };
        Err(ToolError(format!(
            "{} {why}, so nothing was changed. Here it is (it counts as read now). \
             {next}\n{numbered}",
            path.display
        )))
    }

    /// Whether the model has read (or written) `path` in this conversation.
    pub(crate) fn was_read(&self, path: &ResolvedPath) -> bool {
        crate::sync::lock(&self.files).contains_key(&path.path)
    }

    /// Forgets everything (a new conversation).
    pub fn clear(&self) {
        crate::sync::lock(&self.files).clear();
    }
}

fn fingerprint_open(file: &std::fs::File) -> std::io::Result<Fingerprint> {
    use std::os::unix::fs::FileExt;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0u64;
    loop {
        let n = file.read_at(&mut buf, at)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        at += n as u64;
        if at > FINGERPRINT_LIMIT {
            return Err(std::io::Error::other("grew past the fingerprint limit"));
        }
    }
    Ok(Fingerprint::of(&bytes))
}
