//! rein's private directory for a session's per-command views of `.git`, and the views not in
//! use (kept for the next command: making one anew for every command costs file creations).

use std::path::{Path, PathBuf};

/// Idle views kept at most (one per command running in parallel is enough).
#[cfg(target_os = "linux")]
const IDLE_VIEWS: usize = 4;

/// rein's private directory for one session, next to the session temp dir and outside every
/// writable tree: traversable but not listable by others (a command running as another user
/// must reach its `.git` view by path), the entries in it 0700.
pub(super) struct PrivateDir {
    pub(super) path: PathBuf,
    made: std::sync::OnceLock<Result<(), String>>,
    counter: std::sync::atomic::AtomicU64,
    #[cfg(target_os = "linux")]
    idle: std::sync::Mutex<Vec<super::gitview::GitView>>,
}

impl std::fmt::Debug for PrivateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateDir")
            .field("path", &self.path)
            .finish()
    }
}

impl PrivateDir {
    pub(super) fn next_to(temp_dir: &Path) -> PrivateDir {
        let mut name = temp_dir.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".private-{:08x}", rand::random::<u32>()));
        PrivateDir {
            path: temp_dir.with_file_name(name),
            made: std::sync::OnceLock::new(),
            counter: std::sync::atomic::AtomicU64::new(0),
            #[cfg(target_os = "linux")]
            idle: std::sync::Mutex::default(),
        }
    }

    /// An idle view of the repository at `real`, if one is kept.
    #[cfg(target_os = "linux")]
    pub(super) fn take_view(&self, real: &Path) -> Option<super::gitview::GitView> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let i = idle.iter().position(|v| v.shows(real))?;
        Some(idle.swap_remove(i))
    }

    /// Keeps a view whose command has ended (and been synced) for the next command.
    #[cfg(target_os = "linux")]
    pub(super) fn keep_view(&self, view: super::gitview::GitView) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_VIEWS {
            idle.push(view);
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
        #[cfg(target_os = "linux")]
        self.idle
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        if self.made.get().is_some_and(|r| r.is_ok()) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
