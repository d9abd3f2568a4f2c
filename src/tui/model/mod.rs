//! Plain data the screen is drawn from: the conversation's cells, the status line's facts and
//! what `/diff` knows. No terminal types here: `view/` draws these, `app/` keeps them up to date.

pub mod approvals;
pub mod cell;
pub mod tool;
pub mod transcript;

use crate::protocol::ApprovalMode;
use std::path::PathBuf;

/// Facts shown in the status line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusInfo {
    /// Model name.
    pub model: String,
    /// Provider name.
    pub provider: String,
    /// Workspace directory.
    pub cwd: PathBuf,
    /// Session id.
    pub session_id: String,
    /// Tokens in the context now.
    pub used_tokens: u64,
    /// The model's window.
    pub context_window: u64,
    /// Who answers questions (`ask`, `yes (headless)` …).
    pub approval_mode: String,
    /// The approval mode in force (Shift+Tab cycles it).
    pub mode: ApprovalMode,
    /// Sandbox mode.
    pub sandbox_mode: String,
    /// Whether `SessionConfigured` arrived.
    pub configured: bool,
    /// The checkpoints' first scan of the workspace is running.
    pub indexing: bool,
}

/// What `/diff` knows about one file.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The file, as the tool named it.
    pub path: String,
    /// Content before the session's first change (`None`: created).
    pub old: Option<String>,
    /// Content after the last change (`None`: too large to keep).
    pub new: Option<String>,
    /// Every change was kept whole (else the diff can't be shown).
    pub complete: bool,
    /// The calls that changed it, in order (`bash  sed -i …`, `write  notes.txt`).
    pub origins: Vec<String>,
}
