//! Project trust: what a repository may ask for only after the person agreed to it once.
//!
//! A project (the directory rein runs in) can ask for things that send data elsewhere or run
//! programs: a `base_url` in its `.rein/config.toml`, later a project MCP server's command
//! line. Each such request is a [`TrustItem`] with a fingerprint of exactly what it asks for.
//! Approving trusts the listed items; an item whose fingerprint changed asks again. Approvals
//! live in `<data dir>/trust.jsonl`, one record per project and item, keyed by the project's
//! canonical path.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One thing a project asks for that needs the person's trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustItem {
    /// Stable name within the project, e.g. `config.base_url` or `mcp.<server>`.
    pub id: String,
    /// What it asks for, in words, for the prompt and the warnings.
    pub summary: String,
    /// Changes whenever what it asks for changes.
    pub fingerprint: String,
}

impl TrustItem {
    /// An item whose fingerprint is a SHA-256 of `id` and the full `value` it asks for (the
    /// value itself is never stored: it may be a key).
    pub fn new(id: impl Into<String>, summary: impl Into<String>, value: &str) -> TrustItem {
        let id = id.into();
        let mut hash = Sha256::new();
        hash.update(id.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
        let fingerprint = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        TrustItem {
            id,
            summary: summary.into(),
            fingerprint,
        }
    }
}

/// Why a whole project is trusted without looking at its items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustedBy {
    /// `--trust` on the command line (this run only).
    Flag,
    /// Listed in `trusted_projects` of the user's config file.
    UserList(PathBuf),
}

/// The trust decision for one project in this run.
#[derive(Clone, Debug)]
pub struct ProjectTrust {
    /// The project's canonical path.
    pub project: PathBuf,
    /// Set when the whole project is trusted.
    pub everything: Option<TrustedBy>,
    /// Approved item ids with the fingerprint approved.
    approved: HashMap<String, String>,
}

impl ProjectTrust {
    /// The decision for `project` from the store, unless `everything` trusts it outright.
    pub fn load(store: &TrustStore, project: &Path, everything: Option<TrustedBy>) -> ProjectTrust {
        let project = canonical(project);
        let approved = store
            .records()
            .into_iter()
            .filter(|r| r.project == project)
            .map(|r| (r.item, r.fingerprint))
            .collect();
        ProjectTrust {
            project,
            everything,
            approved,
        }
    }

    /// Whether `item` may take effect.
    pub fn allows(&self, item: &TrustItem) -> bool {
        self.everything.is_some() || self.approved.get(&item.id) == Some(&item.fingerprint)
    }

    /// Also allows `items` for this run (approved now, whether or not saving worked).
    pub fn approve_now(&mut self, items: &[TrustItem]) {
        for item in items {
            self.approved
                .insert(item.id.clone(), item.fingerprint.clone());
        }
    }
}

/// The canonical form of a project path (the path itself when it cannot be resolved).
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One approval as stored: a line of `trust.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    project: PathBuf,
    item: String,
    fingerprint: String,
    /// What was approved, in words (for a person reading the file).
    summary: String,
    /// When (RFC 3339).
    at: String,
}

/// The persisted approvals.
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The store in rein's data directory.
    pub fn in_data_dir(data_dir: &Path) -> TrustStore {
        TrustStore {
            path: data_dir.join("trust.jsonl"),
        }
    }

    /// The file the approvals live in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every readable record; a damaged line is skipped, the others still count.
    fn records(&self) -> Vec<Record> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Vec::new();
        };
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| match serde_json::from_str::<Record>(l) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::warn!("skipping a damaged line of {}: {e}", self.path.display());
                    None
                }
            })
            .collect()
    }

    /// Records that `project` trusts `items` (replacing earlier approvals of the same items).
    pub fn approve(&self, project: &Path, items: &[TrustItem]) -> std::io::Result<()> {
        let project = canonical(project);
        let at = jiff::Timestamp::now().to_string();
        self.update(|records| {
            records.retain(|r| r.project != project || items.iter().all(|i| i.id != r.item));
            records.extend(items.iter().map(|i| Record {
                project: project.clone(),
                item: i.id.clone(),
                fingerprint: i.fingerprint.clone(),
                summary: i.summary.clone(),
                at: at.clone(),
            }));
        })
    }

    /// Forgets every approval of `project`; returns how many there were.
    pub fn revoke(&self, project: &Path) -> std::io::Result<usize> {
        let project = canonical(project);
        let mut removed = 0;
        self.update(|records| {
            let before = records.len();
            records.retain(|r| r.project != project);
            removed = before - records.len();
        })?;
        Ok(removed)
    }

    /// The approvals `project` has, as (item id, what was approved).
    pub fn approvals(&self, project: &Path) -> Vec<(String, String)> {
        let project = canonical(project);
        self.records()
            .into_iter()
            .filter(|r| r.project == project)
            .map(|r| (r.item, r.summary))
            .collect()
    }

    /// Read, change, write back atomically, under a lock so two rein processes approving at
    /// once both keep their records. The new file replaces the old by rename: a crash leaves
    /// one or the other, whole.
    fn update(&self, change: impl FnOnce(&mut Vec<Record>)) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let lock = private_file(&dir.join("trust.lock"), false)?;
        lock.lock()?;
        let mut records = self.records();
        change(&mut records);
        let mut text = String::new();
        for r in &records {
            text.push_str(&serde_json::to_string(r).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        let tmp = dir.join(format!("trust.jsonl.{}.tmp", std::process::id()));
        let written = (|| {
            let mut f = private_file(&tmp, true)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// Opens a file only its owner can read (it lists the person's projects).
fn private_file(path: &Path, truncate: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests;
