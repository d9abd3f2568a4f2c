//! rein's private directory for a session's per-command views of `.git`.

use std::path::{Path, PathBuf};

/// rein's private directory for one session, next to the session temp dir and outside every
/// writable tree: traversable but not listable by others (a command running as another user
/// must reach its `.git` view by path), the entries in it 0700.
#[derive(Debug)]
pub(super) struct PrivateDir {
    pub(super) path: PathBuf,
    made: std::sync::OnceLock<Result<(), String>>,
    counter: std::sync::atomic::AtomicU64,
}

impl PrivateDir {
    pub(super) fn next_to(temp_dir: &Path) -> PrivateDir {
        let mut name = temp_dir.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".private-{:08x}", rand::random::<u32>()));
        PrivateDir {
            path: temp_dir.with_file_name(name),
            made: std::sync::OnceLock::new(),
            counter: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A fresh path inside (not created).
    pub(super) fn new_entry(&self, prefix: &str) -> Result<PathBuf, String> {
        use std::os::unix::fs::DirBuilderExt;
        self.made
            .get_or_init(|| {
                std::fs::DirBuilder::new()
                    .mode(0o711)
                    .create(&self.path)
                    .map_err(|e| format!("cannot create {}: {e}", self.path.display()))
            })
            .clone()?;
        let n = self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self
            .path
            .join(format!("{prefix}-{n}-{:08x}", rand::random::<u32>())))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if self.made.get().is_some_and(|r| r.is_ok()) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
