//! The first line of a session file, and the facts it records about where the session ran.

use super::entry::{SCHEMA, rfc3339};
use crate::config::Config;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The first line of a session file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Schema version of the file.
    pub schema: u32,
    /// Session id (12 hex digits for sessions rein starts).
    pub id: String,
    /// Workspace the session ran in.
    pub cwd: PathBuf,
    /// Git branch checked out at the start, if any.
    pub git_branch: Option<String>,
    /// Model at the start (later switches are `model_change` entries).
    pub model: String,
    /// Wire format (`openai` or `anthropic`).
    pub provider: String,
    /// When the session began.
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    /// The session this one was forked from.
    pub parent: Option<String>,
    /// Title at creation (normally none; `rename` entries set it later).
    pub title: Option<String>,
}

impl Header {
    /// A header for a new session started now in `cwd`.
    pub fn new(id: impl Into<String>, cwd: &Path, model: &str, provider: &str) -> Header {
        Header {
            schema: SCHEMA,
            id: id.into(),
            cwd: cwd.to_path_buf(),
            git_branch: git_branch(cwd),
            model: model.to_string(),
            provider: provider.to_string(),
            created_at: Timestamp::now(),
            parent: None,
            title: None,
        }
    }

    /// A header for a new session with the settings of `config` (never its API key).
    pub fn for_config(id: impl Into<String>, config: &Config) -> Header {
        Header::new(id, &config.cwd, &config.model, config.provider.as_str())
    }
}

/// The current git branch of the repository holding `cwd`, read from `HEAD` without running
/// git and without following links (see `sandbox::git`).
pub fn git_branch(cwd: &Path) -> Option<String> {
    crate::sandbox::git::current_branch(cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_branch_reads_head_and_worktree_files() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(git_branch(&repo.join("sub")).as_deref(), Some("feature/x"));

        let wt = dir.path().join("wt");
        std::fs::create_dir_all(dir.path().join("gitdirs/wt")).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../gitdirs/wt\n").unwrap();
        std::fs::write(
            dir.path().join("gitdirs/wt/HEAD"),
            "ref: refs/heads/memory\n",
        )
        .unwrap();
        // A worktree's git directory points back at its `.git` file.
        let back = format!("{}\n", wt.join(".git").display());
        std::fs::write(dir.path().join("gitdirs/wt/gitdir"), back).unwrap();
        assert_eq!(git_branch(&wt).as_deref(), Some("memory"));

        std::fs::write(repo.join(".git/HEAD"), "0123456789abcdef\n").unwrap();
        assert_eq!(git_branch(&repo), None);
    }
}
