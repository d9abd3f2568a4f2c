//! Sessions on disk: append-only JSONL, list, resume, export.
//!
//! One file per session under `<data_dir>/sessions/`, named `<UTC start>_<id>.jsonl` so a plain
//! sort is chronological. The first line is a [`Header`], then one [`Entry`] per line, written
//! as it happens by the session's single [`SessionWriter`]. A small sidecar
//! (`<name>.meta.json`, rewritten at each [`SessionWriter::sync`]) lets [`list`] summarise
//! thousands of sessions without reading them. The format is documented in `docs/sessions.md`.

mod entry;
mod export;
mod header;
mod list;
mod load;
mod meta;
mod rebuild;
mod writer;

pub use entry::{
    ApprovalEntry, AssistantEntry, CheckpointEntry, CompactionEntry, Entry, ErrorEntry, ImageEntry,
    InterruptedEntry, KNOWN_TYPES, ModelChangeEntry, RenameEntry, RewindEntry, SCHEMA,
    SubagentEntry, TodosEntry, ToolResultEntry, UsageEntry, UserEntry, UserFrom, rfc3339,
};
pub use export::{ExportedSession, export_json, export_markdown, parse_export_json};
pub use header::{Header, git_branch};
pub use list::{SessionSummary, find, here_dirs, list, newest_for_cwd, remove};
pub use load::{LoadedSession, load, read_header};
pub use rebuild::{
    DANGLING_TOOL_RESULT, Resumed, context_bytes_for_window, rebuild, resume, resume_before,
    resume_within,
};
pub use writer::{SessionWriter, fork};

use std::path::{Path, PathBuf};

/// Why a session could not be stored, found or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file has no header line.
    #[error("{path} is empty: it is not a rein session (no header line)")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The first line is not a session header.
    #[error("{path} is not a rein session: {reason}")]
    NotASession {
        /// The file.
        path: PathBuf,
        /// What is wrong with the first line.
        reason: String,
    },
    /// The file was written by a newer rein.
    #[error(
        "{path} was written by a newer rein (schema {found}); this rein reads up to schema \
         {supported}: upgrade rein"
    )]
    FutureSchema {
        /// The file.
        path: PathBuf,
        /// The file's schema.
        found: u32,
        /// The newest schema this rein reads.
        supported: u32,
    },
    /// No session matches an id or prefix.
    #[error("no session with id {id} (see `rein sessions list --all`)")]
    NotFound {
        /// What was looked up.
        id: String,
    },
    /// Several sessions match an id prefix.
    #[error("the id prefix {prefix} matches several sessions: {}; give more digits", candidates.join(", "))]
    Ambiguous {
        /// What was looked up.
        prefix: String,
        /// The matching ids.
        candidates: Vec<String>,
    },
    /// Another process is writing the session.
    #[error("{path} is open in another rein process; close it there, or fork it with /fork")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// A session id that cannot be used in a file name.
    #[error("invalid session id {0:?}: use letters, digits, '-' and '_' only")]
    InvalidId(String),
    /// An entry could not be encoded (should not happen).
    #[error("cannot encode a session entry: {0}")]
    Encode(#[from] serde_json::Error),
}

impl SessionError {
    fn io(path: &Path, source: std::io::Error) -> SessionError {
        SessionError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The directory holding the session files.
pub fn sessions_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("sessions")
}

/// The sidecar metadata file of a session file.
pub fn sidecar_path(session: &Path) -> PathBuf {
    session.with_extension("meta.json")
}

/// The session id encoded in a session file name (`<time>_<id>.jsonl`).
pub fn id_from_path(path: &Path) -> Option<&str> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    stem.rsplit_once('_').map(|(_, id)| id)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The first line of a prompt, cut to about 80 characters, for titles.
pub fn short_title(text: &str) -> String {
    const MAX: usize = 80;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let cut: String = line.chars().take(MAX - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_names_and_titles() {
        let p = Path::new("/d/sessions/2026-11-30T05-12-44_0123456789ab.jsonl");
        assert_eq!(id_from_path(p), Some("0123456789ab"));
        assert_eq!(id_from_path(Path::new("/d/x.meta.json")), None);
        assert_eq!(
            sidecar_path(p),
            Path::new("/d/sessions/2026-11-30T05-12-44_0123456789ab.meta.json")
        );
        assert!(valid_id("abc_1-2"));
        assert!(!valid_id("../x"));
        assert!(!valid_id(""));
        assert_eq!(short_title("\n  fix the bug  \nmore"), "fix the bug");
        let long = "word ".repeat(40);
        let t = short_title(&long);
        assert!(t.chars().count() <= 80 && t.ends_with('…'), "{t}");
    }
}
