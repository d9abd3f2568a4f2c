//! What a checkpoint records about one path: its state before and after a change. These are
//! the types of the `checkpoint` and `rewind` session entries (see `docs/sessions.md`).

use serde::{Deserialize, Serialize};

/// What a workspace path held at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    /// No regular file there.
    Absent,
    /// A regular file.
    File {
        /// Length in bytes.
        size: u64,
        /// Permission bits (`0o644`).
        mode: u32,
        /// SHA-256 of the content, hex; `None` when the file was too large to read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hash: Option<String>,
        /// Whether the content is in the session's blob store (so it can be restored).
        kept: bool,
    },
}

impl FileState {
    /// Whether two states are known to hold the same file (same content and mode). Unknown
    /// content (no hash) is never the same as anything.
    pub fn same_as(&self, other: &FileState) -> bool {
        match (self, other) {
            (FileState::Absent, FileState::Absent) => true,
            (
                FileState::File {
                    hash: Some(a),
                    mode: ma,
                    ..
                },
                FileState::File {
                    hash: Some(b),
                    mode: mb,
                    ..
                },
            ) => a == b && ma == mb,
            _ => false,
        }
    }

    /// The blob holding this state's content, when it was kept.
    pub fn blob(&self) -> Option<&str> {
        match self {
            FileState::File {
                hash: Some(h),
                kept: true,
                ..
            } => Some(h),
            _ => None,
        }
    }

    /// Whether the file can be brought back to this state.
    pub fn restorable(&self) -> bool {
        matches!(self, FileState::Absent) || self.blob().is_some()
    }

    /// The size, for files.
    pub fn size(&self) -> Option<u64> {
        match self {
            FileState::File { size, .. } => Some(*size),
            FileState::Absent => None,
        }
    }
}

/// One path changed: what it held before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// The state before the change.
    pub before: FileState,
    /// The state after it.
    pub after: FileState,
}

/// The limits on what checkpoints keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// A file larger than this is tracked by its metadata only: a change to it is noticed, but
    /// its content cannot be restored.
    pub file_bytes: u64,
    /// New content kept per turn (what the turn's commands wrote); past it, changed files are
    /// hashed but not kept.
    pub turn_bytes: u64,
    /// Content kept by the first scan of a session (the workspace as it was).
    pub baseline_bytes: u64,
    /// At most this many files are tracked; a bigger workspace is tracked in part.
    pub max_files: usize,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            file_bytes: 4 * 1024 * 1024,
            turn_bytes: 64 * 1024 * 1024,
            baseline_bytes: 512 * 1024 * 1024,
            max_files: 100_000,
        }
    }
}

pub use crate::text::human_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: Option<&str>, mode: u32) -> FileState {
        FileState::File {
            size: 1,
            mode,
            hash: hash.map(str::to_string),
            kept: hash.is_some(),
        }
    }

    #[test]
    fn sameness_needs_known_equal_content_and_mode() {
        assert!(FileState::Absent.same_as(&FileState::Absent));
        assert!(file(Some("a"), 0o644).same_as(&file(Some("a"), 0o644)));
        assert!(!file(Some("a"), 0o644).same_as(&file(Some("a"), 0o755)));
        assert!(!file(Some("a"), 0o644).same_as(&file(Some("b"), 0o644)));
        assert!(!file(None, 0o644).same_as(&file(None, 0o644)));
        assert!(!FileState::Absent.same_as(&file(Some("a"), 0o644)));
        assert!(FileState::Absent.restorable() && !file(None, 0o644).restorable());
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(human_bytes(12_345_678), "12.3 MB");
    }
}
