//! The checkpoint directory of one session: its blob store and its saved shadow. A new
//! session starts from the newest shadow of the same workspace, its blobs hard-linked, so a
//! workspace is read and stored once, not once per session.

use super::blobs::BlobStore;
use super::scan::Shadow;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const SHADOW_FILE: &str = "shadow.json";
/// Sessions looked at for a shadow of the same workspace.
const SEED_CANDIDATES: usize = 5;

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
}

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
            dir,
        }
    }

    /// Saves the shadow if it changed (write, then rename).
    pub fn save(&mut self, root: &Path) {
        if !self.dirty {
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
                std::fs::rename(&tmp, self.dir.join(SHADOW_FILE))
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
        let Some(sessions) = self.dir.parent() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(sessions) else {
            return;
        };
        let mut candidates: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| *p != self.dir && p.extension().is_some_and(|x| x == "checkpoints"))
            .filter_map(|p| {
                let modified = std::fs::metadata(p.join(SHADOW_FILE))
                    .ok()?
                    .modified()
                    .ok()?;
                Some((modified, p))
            })
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (_, dir) in candidates.into_iter().take(SEED_CANDIDATES) {
            if let Some(f) = read_shadow(&dir).filter(|f| f.root == root) {
                let from = BlobStore::new(dir.join("blobs"));
                self.shadow.adopt(f.shadow, &from, &self.blobs);
                return;
            }
        }
    }
}
