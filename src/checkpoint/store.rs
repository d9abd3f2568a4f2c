//! The checkpoint directory of one session: its blob store and its saved shadow. A new
//! session starts from the newest shadow of the same workspace, its blobs hard-linked, so a
//! workspace is read and stored once, not once per session.

use super::blobs::BlobStore;
use super::scan::Shadow;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const SHADOW_FILE: &str = "shadow.json";

/// Beside the sessions: one small file per workspace naming the checkpoint directory that
/// saved its newest shadow, so a new session finds it without looking at every session.
const INDEX_DIR: &str = ".shadows";

/// The index file of the workspace `root` in `sessions`.
fn index_file(sessions: &Path, root: &Path) -> PathBuf {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let digest = sha2::Sha256::digest(root.as_os_str().as_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    sessions.join(INDEX_DIR).join(name)
}

/// Records that `dir` (a checkpoint directory in `sessions`) holds the newest shadow of `root`.
fn index_newest(dir: &Path, root: &Path) -> std::io::Result<()> {
    let (Some(sessions), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(());
    };
    let file = index_file(sessions, root);
    let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::create_dir_all(sessions.join(INDEX_DIR))?;
    std::fs::write(&tmp, name.as_encoded_bytes())?;
    std::fs::rename(&tmp, &file)
}

#[derive(Serialize, Deserialize)]
struct ShadowFile {
    version: u32,
    /// The workspace it describes.
    #[serde(default)]
    root: PathBuf,
    shadow: Shadow,
}

/// The blob store and shadow of one session (`<session>.checkpoints/`).
#[derive(Debug)]
pub(super) struct Store {
    pub dir: PathBuf,
    pub blobs: BlobStore,
    pub shadow: Shadow,
    /// The shadow describes the workspace (loaded, or the first scan is done).
    pub ready: bool,
    pub dirty: bool,
    /// A store for a session whose file does not exist yet (a staging directory beside the
    /// sessions): the first scan runs before the first message, and the store moves to the
    /// session's directory when there is one ([`Store::promote`]).
    pub staged: bool,
}

/// The prefix of staging directories (`.staging-<pid>-<random>` in the sessions directory).
const STAGING: &str = ".staging-";

fn read_shadow(dir: &Path) -> Option<ShadowFile> {
    let bytes = std::fs::read(dir.join(SHADOW_FILE)).ok()?;
    serde_json::from_slice::<ShadowFile>(&bytes)
        .ok()
        .filter(|f| f.version == 1)
}

impl Store {
    /// Opens a session's store; a saved shadow (a cache) spares the first full read.
    pub fn open(dir: PathBuf) -> Store {
        let saved = read_shadow(&dir);
        Store {
            blobs: BlobStore::new(dir.join("blobs")),
            ready: saved.is_some(),
            shadow: saved.map(|f| f.shadow).unwrap_or_default(),
            dirty: false,
            staged: false,
            dir,
        }
    }

    /// A staging store in `sessions` for a session not saved yet. Staging directories of
    /// rein processes that are gone are removed first (what a killed rein left).
    pub fn staging(sessions: &Path) -> Store {
        if let Ok(entries) = std::fs::read_dir(sessions) {
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix(STAGING))
                    .and_then(|n| n.split('-').next())
                else {
                    continue;
                };
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let name = format!(
            "{STAGING}{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        );
        Store {
            staged: true,
            ..Store::open(sessions.join(name))
        }
    }

    /// Moves a staging store to its session's directory `dir` (a rename; blob by blob when
    /// that fails).
    pub fn promote(&mut self, dir: PathBuf) {
        if !self.staged {
            return;
        }
        self.staged = false;
        self.dirty = true;
        let old = std::mem::replace(&mut self.dir, dir);
        let from = std::mem::replace(&mut self.blobs, BlobStore::new(self.dir.join("blobs")));
        if !old.exists() || std::fs::rename(&old, &self.dir).is_ok() {
            return;
        }
        let mut moved = Shadow::default();
        moved.adopt(std::mem::take(&mut self.shadow), &from, &self.blobs);
        self.shadow = moved;
        let _ = std::fs::remove_dir_all(&old);
    }

    /// Removes a staging store's directory (its session was never saved).
    pub fn discard(&self) {
        if self.staged {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Saves the shadow if it changed (write, then rename).
    pub fn save(&mut self, root: &Path) {
        if !self.dirty || self.staged {
            return;
        }
        let file = ShadowFile {
            version: 1,
            root: root.to_path_buf(),
            shadow: std::mem::take(&mut self.shadow),
        };
        let result = serde_json::to_vec(&file)
            .map_err(std::io::Error::other)
            .and_then(|b| {
                let tmp = self.dir.join(format!(".{SHADOW_FILE}.tmp"));
                std::fs::create_dir_all(&self.dir)?;
                std::fs::write(&tmp, b)?;
                std::fs::rename(&tmp, self.dir.join(SHADOW_FILE))?;
                index_newest(&self.dir, root)
            });
        self.shadow = file.shadow;
        match result {
            Ok(()) => self.dirty = false,
            Err(e) => tracing::warn!("cannot save the checkpoint shadow: {e}"),
        }
    }

    /// Before the first scan: adopts the newest shadow another session saved of `root`, with
    /// its blobs linked in, so that scan reads only what changed since.
    pub fn seed(&mut self, root: &Path) {
        seed_into(&self.dir, root, &mut self.shadow, &self.blobs);
    }
}

/// [`Store::seed`] for the store in `dir` with `shadow` and `blobs` (a background scan holds
/// them outside the store).
pub(super) fn seed_into(dir: &Path, root: &Path, shadow: &mut Shadow, blobs: &BlobStore) {
    let Some(sessions) = dir.parent() else {
        return;
    };
    let Ok(name) = std::fs::read_to_string(index_file(sessions, root)) else {
        return;
    };
    // One plain name in the sessions directory, never a path elsewhere.
    let mut parts = Path::new(&name).components();
    let (Some(std::path::Component::Normal(name)), None) = (parts.next(), parts.next()) else {
        return;
    };
    let newest = sessions.join(name);
    if newest == dir {
        return;
    }
    if let Some(f) = read_shadow(&newest).filter(|f| f.root == root) {
        let from = BlobStore::new(newest.join("blobs"));
        shadow.adopt(f.shadow, &from, blobs);
    }
}
