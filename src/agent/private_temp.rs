//! A session's private temp dir (saved outputs, images) and the sweep of those that sessions
//! killed outright (SIGKILL, a crash, a lost machine) left behind.
//!
//! A live session holds an exclusive `flock` on its dir for its whole life: a dir nobody holds
//! a lock on belongs to a rein that is gone (the kernel drops a process's locks when it dies,
//! however it dies).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The start of every private temp dir's name; the session id follows.
const PREFIX: &str = "rein-";

/// A dir is swept only when it is at least this old: a dir just made may not hold its lock
/// yet (the lock follows the `mkdir` by microseconds).
const MIN_AGE: Duration = Duration::from_secs(60);

/// The most dirs one start removes (each may hold what a session saved; the rest wait for
/// the next start).
const MAX_SWEPT: usize = 8;

/// A directory of the session's own, private (mode 0700): saved outputs may hold what a
/// command printed. Removed with its contents when dropped, so a session whose task is dropped
/// mid-run (a runtime shut down) or whose set-up fails leaves nothing behind either.
pub(super) struct PrivateTemp {
    dir: PathBuf,
    /// Open for the lock that marks the dir as in use.
    _held: File,
}

impl PrivateTemp {
    /// Makes a new one in `parent`, locked as in use.
    pub(super) fn create_in(parent: &Path) -> std::io::Result<PrivateTemp> {
        let dir = parent.join(format!("{PREFIX}{}", super::new_session_id()));
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&dir)?;
        let held = File::open(&dir)?;
        held.lock()?;
        Ok(PrivateTemp { dir, _held: held })
    }

    /// Removes it now (the end of a session: before the agent's events end, which is what
    /// `rein exec` waits for before it exits).
    pub(super) fn remove(&self) {
        remove_logged(&self.dir);
    }
}

impl std::ops::Deref for PrivateTemp {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.dir
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes `dir` with its contents (links inside are removed, not followed); a failure is
/// only logged.
fn remove_logged(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::debug!("could not remove {}: {e}", dir.display());
        }
        _ => {}
    }
}

/// Removes the private temp dirs in `parent` that no live session holds (see the module's
/// doc); returns how many it removed. Only this user's dirs named as rein names them are
/// looked at, so nothing else in a shared `/tmp` is touched.
pub(super) fn sweep_abandoned(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut swept = 0;
    for entry in entries.flatten() {
        if swept == MAX_SWEPT {
            break;
        }
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_private_temp_name) {
            continue;
        }
        let path = entry.path();
        if is_abandoned(&path, me) {
            remove_logged(&path);
            swept += 1;
        }
    }
    if swept > 0 {
        tracing::info!("removed {swept} temp dirs of sessions that ended without cleaning up");
    }
    swept
}

/// `rein-` and a session id (twelve lowercase hex digits), as [`PrivateTemp`] names them.
fn is_private_temp_name(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|id| {
        id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// A real directory (not a link) of user `me`, old enough, that no one holds locked.
fn is_abandoned(path: &Path, me: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age >= MIN_AGE);
    if !meta.is_dir() || meta.uid() != me || !old {
        return false;
    }
    // The lock taken here goes before the removal: harmless, as no rein ever takes over a dir
    // that exists (each makes its own, under a new name).
    let Ok(dir) = File::open(path) else {
        return false;
    };
    dir.try_lock().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Makes `parent/name` with a file in it, last changed `age` ago.
    fn dir_aged(parent: &Path, name: &str, age: Duration) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("saved.txt"), "output").unwrap();
        let then = SystemTime::now() - age;
        File::open(&dir).unwrap().set_modified(then).unwrap();
        dir
    }

    #[test]
    fn a_private_temp_dir_is_private_and_goes_with_its_contents_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let temp = PrivateTemp::create_in(parent.path()).unwrap();
        let dir = temp.to_path_buf();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::create_dir(dir.join("outputs")).unwrap();
        std::fs::write(dir.join("outputs/saved.txt"), "what a command printed").unwrap();
        drop(temp);
        assert!(!dir.exists(), "{} was left behind", dir.display());
    }

    #[test]
    fn only_unheld_old_dirs_named_as_rein_names_them_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        let hour = Duration::from_secs(3600);
        let abandoned = dir_aged(p, "rein-0123456789ab", hour);
        let fresh = dir_aged(p, "rein-0123456789ac", Duration::ZERO);
        let others = [
            dir_aged(p, "rein-eval-add_function-24mbln3x", hour),
            dir_aged(p, "rein-sandbox-ci", hour),
            dir_aged(p, "rein-0123456789AB", hour),
        ];
        let live = PrivateTemp::create_in(p).unwrap();
        File::open(&*live)
            .unwrap()
            .set_modified(SystemTime::now() - hour)
            .unwrap();
        let target = dir_aged(p, "elsewhere", hour);
        std::os::unix::fs::symlink(&target, p.join("rein-0123456789ad")).unwrap();

        assert_eq!(sweep_abandoned(p), 1);
        assert!(!abandoned.exists());
        for kept in others.iter().chain([&fresh, &target]) {
            assert!(kept.join("saved.txt").exists(), "{}", kept.display());
        }
        assert!(live.exists());
    }

    #[test]
    fn a_sweep_removes_at_most_a_few_dirs_per_start() {
        let parent = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        for i in 0..MAX_SWEPT + 3 {
            dir_aged(parent.path(), &format!("rein-{i:012x}"), hour);
        }
        assert_eq!(sweep_abandoned(parent.path()), MAX_SWEPT);
        assert_eq!(sweep_abandoned(parent.path()), 3);
    }
}
