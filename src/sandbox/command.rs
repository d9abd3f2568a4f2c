//! Preparing one command on Linux: the confinement, the private view of `.git`, the secret
//! paths to hide, and the checks to run after it.

use super::{Mechanism, Sandbox, Secrets, Supervision, gitview, linux, mounts, tripwire};
use crate::config::SandboxMode;
use std::path::{Path, PathBuf};

impl Sandbox {
    /// The confinement for one command, and the checks to run after it.
    pub(super) fn confine(
        &self,
        cmd: &std::process::Command,
        report: std::os::fd::RawFd,
        supervision: &mut Supervision,
    ) -> Result<linux::Confinement, String> {
        let here = std::env::current_dir()
            .map_err(|e| format!("The sandbox cannot read the current directory: {e}."))?;
        let cwd = cmd
            .get_current_dir()
            .map_or_else(|| here.clone(), |d| here.join(d));
        let namespaces = self.mechanism == Mechanism::Namespaces;
        let write_ws = self.mode == SandboxMode::WorkspaceWrite;
        let ws = std::fs::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        let git = if namespaces && write_ws {
            self.git_plan(&ws, supervision)
        } else {
            mounts::GitPlan::Leave
        };
        // Nested repositories (found once, before the first command) are read-only as a
        // whole: a hook or config planted there would run when the person uses git there.
        let nested: &[PathBuf] = if write_ws {
            self.nested_git
                .get_or_init(|| super::git::nested_git_entries(&ws))
        } else {
            &[]
        };
        if write_ws {
            supervision.tripwire = Some(tripwire::Tripwire::arm(&ws, !namespaces, nested));
        }
        let keep_visible: Vec<PathBuf> = std::iter::once(ws.clone())
            .chain(std::iter::once(cwd.clone()))
            .chain(self.writable_dirs().cloned())
            .collect();
        let secrets = hidden_paths(&self.secrets, &keep_visible);
        linux::Confinement::prepare(linux::Request {
            mode: self.mode,
            network: self.network,
            workspace: &self.workspace,
            temp_dir: &self.temp_dir,
            extra_writable: &self.extra_writable,
            cwd: &cwd,
            use_landlock: !self.simulate_no_landlock,
            use_namespaces: namespaces,
            secrets: &secrets,
            git,
            nested_git: if namespaces { nested } else { &[] },
            report,
        })
    }

    /// How the command sees the workspace's `.git`: a private view of a repository directory,
    /// a read-only `.git` file, or nothing to do.
    fn git_plan(&self, ws: &Path, supervision: &mut Supervision) -> mounts::GitPlan {
        use std::os::unix::ffi::OsStrExt;
        let real = ws.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&real) else {
            return mounts::GitPlan::Leave;
        };
        if meta.is_symlink() {
            return mounts::GitPlan::Leave;
        }
        if !meta.is_dir() {
            return mounts::GitPlan::ReadOnly;
        }
        // The view must lie outside everything commands may write (a TMPDIR inside the
        // workspace would put it there): else a command could edit a later command's view.
        let private = std::fs::canonicalize(self.private.path.parent().unwrap_or(Path::new("/")))
            .unwrap_or_default();
        let writable: Vec<PathBuf> = std::iter::once(ws.to_path_buf())
            .chain(
                self.writable_dirs()
                    .filter_map(|d| std::fs::canonicalize(d).ok()),
            )
            .collect();
        if writable.iter().any(|w| private.starts_with(w)) {
            tracing::warn!("sandbox: no private place for the .git view; .git is read-only");
            return mounts::GitPlan::ReadOnly;
        }
        let cstr = |b: &[u8]| std::ffi::CString::new(b).ok();
        let view = match self.private.take_view(&real) {
            Some(mut view) => view.refresh().map(|()| view).map_err(|e| e.to_string()),
            None => self
                .private
                .new_entry("git")
                .and_then(|dir| gitview::GitView::build(&real, dir).map_err(|e| e.to_string())),
        };
        match view {
            Ok(view) => {
                let dir = cstr(view.dir().as_os_str().as_bytes());
                let binds: Option<Vec<_>> = view
                    .binds()
                    .iter()
                    .map(|(n, w)| cstr(n.as_bytes()).map(|c| (c, *w)))
                    .collect();
                let plan = match (dir, binds) {
                    (Some(dir), Some(binds)) => mounts::GitPlan::View { dir, binds },
                    _ => mounts::GitPlan::ReadOnly,
                };
                supervision.view = Some((view, self.private.clone()));
                plan
            }
            Err(e) => {
                tracing::warn!("sandbox: cannot build the view of {}: {e}", real.display());
                mounts::GitPlan::ReadOnly
            }
        }
    }
}

/// The secret paths to cover: canonical and existing, except those that hold something the
/// command must see (the workspace, its working dir, the writable dirs).
fn hidden_paths(secrets: &Secrets, keep_visible: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = secrets
        .paths()
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| !keep_visible.iter().any(|k| k.starts_with(p)))
        .collect();
    out.sort();
    out.dedup();
    out
}
