//! Finding sessions: listing from the sidecars, id-prefix lookup, `--continue`, removal.

use super::meta::{self, Meta};
use super::{SessionError, id_from_path, sessions_dir, short_title, sidecar_path};
use std::path::{Path, PathBuf};

pub use crate::protocol::SessionSummary;

/// The spellings of `cwd` a session may have recorded: as given, and canonical.
pub fn here_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![cwd.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(cwd)
        && c != cwd
    {
        dirs.push(c);
    }
    dirs
}

/// The title shown for a session that has no prompt yet.
const UNTITLED: &str = "(no messages yet)";

impl SessionSummary {
    fn from_meta(meta: Meta, path: PathBuf) -> SessionSummary {
        SessionSummary {
            title: meta
                .title
                .map(|t| short_title(&t))
                .or(meta.first_prompt)
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| UNTITLED.into()),
            id: meta.id,
            cwd: meta.cwd,
            model: meta.model,
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            message_count: meta.message_count,
            path,
            parent: meta.parent,
        }
    }
}

/// The session files in the data dir (any order).
fn session_files(data_dir: &Path) -> Vec<PathBuf> {
    let dir = sessions_dir(data_dir);
    let read = match std::fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!("cannot read {}: {e}", dir.display());
            return Vec::new();
        }
    };
    read.filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

fn same_dir(stored: &Path, wanted: &Path, wanted_canonical: Option<&Path>) -> bool {
    stored == wanted || wanted_canonical.is_some_and(|c| stored == c)
}

/// Sessions, newest activity first; only those that ran in `cwd` when it is given. Reads the
/// sidecars (and only the unsynced tail of a session whose sidecar is behind); unreadable
/// files are left out with a logged reason.
pub fn list(data_dir: &Path, cwd: Option<&Path>) -> Vec<SessionSummary> {
    let canonical = cwd.and_then(|c| std::fs::canonicalize(c).ok());
    let mut out: Vec<SessionSummary> = session_files(data_dir)
        .into_iter()
        .filter_map(|path| match meta::current(&path) {
            Ok((meta, _)) => Some(SessionSummary::from_meta(meta, path)),
            Err(e) => {
                tracing::warn!("skipping {}: {e}", path.display());
                None
            }
        })
        .filter(|s| cwd.is_none_or(|c| same_dir(&s.cwd, c, canonical.as_deref())))
        .collect();
    out.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| b.path.cmp(&a.path))
    });
    out
}

/// The most recently active session that ran in `cwd` (for `--continue`).
pub fn newest_for_cwd(data_dir: &Path, cwd: &Path) -> Option<SessionSummary> {
    list(data_dir, Some(cwd)).into_iter().next()
}

/// The session file whose id is `id_or_prefix` or starts with it (from file names only).
pub fn find(data_dir: &Path, id_or_prefix: &str) -> Result<PathBuf, SessionError> {
    let wanted = id_or_prefix.trim();
    let not_found = || SessionError::NotFound {
        id: wanted.to_string(),
    };
    if wanted.is_empty() {
        return Err(not_found());
    }
    let mut matches: Vec<(String, PathBuf)> = session_files(data_dir)
        .into_iter()
        .filter_map(|p| {
            let id = id_from_path(&p)?.to_string();
            id.starts_with(wanted).then_some((id, p))
        })
        .collect();
    if let Some((_, p)) = matches.iter().find(|(id, _)| id == wanted) {
        return Ok(p.clone());
    }
    match matches.len() {
        0 => Err(not_found()),
        1 => Ok(matches.remove(0).1),
        _ => {
            let mut candidates: Vec<String> = matches.into_iter().map(|(id, _)| id).collect();
            candidates.sort();
            candidates.dedup();
            Err(SessionError::Ambiguous {
                prefix: wanted.to_string(),
                candidates,
            })
        }
    }
}

/// Deletes a session file, its sidecar and its checkpoints (the CLI asks first; nothing else
/// deletes).
pub fn remove(path: &Path) -> Result<(), SessionError> {
    std::fs::remove_file(path).map_err(|e| SessionError::io(path, e))?;
    let sidecar = sidecar_path(path);
    match std::fs::remove_file(&sidecar) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(SessionError::io(&sidecar, e));
        }
        _ => {}
    }
    let checkpoints = crate::checkpoint::dir_for(path);
    match std::fs::remove_dir_all(&checkpoints) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(SessionError::io(&checkpoints, e))
        }
        _ => Ok(()),
    }
}
