//! Preparing one command on Linux: the confinement, the private view of `.git`, the secret
//! paths to hide, and the checks to run after it.

use super::SandboxMode;
use super::home::{DirView, Node};
use super::{Mechanism, Sandbox, Secrets, Supervision, gitview, identity, linux, mounts, tripwire};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The home view as commands get it, built once per session: the session's view plus rein's
/// private dir and the generated git identity, the views of the shared temporary and runtime
/// directories, and (with namespaces) their mounts.
#[derive(Debug)]
pub(crate) struct CommandHome {
    view: DirView,
    /// The generated global git config (only `user.name`/`user.email`).
    pub(crate) gitconfig: Option<PathBuf>,
    /// The mounts of every covered directory's view, outer ones first (namespaces).
    covers: Vec<Arc<mounts::ViewMounts>>,
    /// Each covered directory with the places that stay readable there (canonical), for the
    /// Landlock rules.
    covered: Vec<(PathBuf, Vec<PathBuf>)>,
}

impl Sandbox {
    /// The home view for commands (built on first use).
    pub(crate) fn command_home(&self) -> Arc<CommandHome> {
        self.home
            .get_or_init(|| Arc::new(self.build_home()))
            .clone()
    }

    fn build_home(&self) -> CommandHome {
        let mut view = self.secrets.view().clone();
        let gitconfig = self
            .private
            .new_entry("gitconfig")
            .and_then(|p| {
                identity::write(&p, view.root())
                    .map(|()| p)
                    .map_err(|e| e.to_string())
            })
            .inspect_err(|e| tracing::warn!("sandbox: no git identity for commands: {e}"))
            .ok();
        // The dirs bash may write are made now if missing: a place that does not exist when
        // a view is made is not shown, and the view hides where they lie (`/tmp`, home).
        for dir in self.writable_dirs() {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::warn!("sandbox: cannot make {}: {e}", dir.display());
            }
        }
        let places: Vec<PathBuf> = std::iter::once(self.private.path.clone())
            .chain(gitconfig.clone())
            .chain(std::iter::once(self.workspace.clone()))
            .chain(self.writable_dirs().cloned())
            .chain(self.secrets.repository_places(&self.workspace))
            .collect();
        view.also(&places);
        let mut shared = self.secrets.shared_views().to_vec();
        for v in &mut shared {
            v.also(&places);
        }
        if self.mechanism == Mechanism::Namespaces {
            let mut roots: Vec<PathBuf> = shared
                .iter()
                .filter_map(|v| v.root())
                .map(Path::to_path_buf)
                .collect();
            roots.extend(view.root().map(Path::to_path_buf));
            let homes: Vec<PathBuf> = view.root().map(Path::to_path_buf).into_iter().collect();
            shared.extend(closed_ancestor_views(&places, &roots, &homes));
        }
        // Home inside the workspace cannot be covered (its dot entries are, one by one).
        let mut all: Vec<&DirView> = shared.iter().collect();
        if !view.in_workspace() && view.root().is_some() {
            all.push(&view);
        }
        // Outer ones first: a home inside `/tmp` is shown by `/tmp`'s view, then
        // covered by its own.
        all.sort_by_key(|v| v.root().map_or(0, |h| h.components().count()));
        let covers = match self.mechanism {
            Mechanism::Namespaces => all
                .iter()
                .filter_map(|v| view_mounts(v))
                .map(|mut m| {
                    m.skeleton = self.view_skeleton(&m);
                    Arc::new(m)
                })
                .collect(),
            _ => Vec::new(),
        };
        // The hidden top-level directories are left out by Landlock alone (in every mode):
        // their rules are built once, where mounts would cost each command.
        let mut system = self.secrets.system_views().to_vec();
        for v in &mut system {
            v.also(&places);
        }
        let covered = all
            .iter()
            .copied()
            .chain(&system)
            .filter_map(|v| {
                Some((
                    v.root()?.to_path_buf(),
                    v.shown().map(Path::to_path_buf).collect(),
                ))
            })
            .collect();
        CommandHome {
            view,
            gitconfig,
            covers,
            covered,
        }
    }

    /// A view's directories, links and placeholder files made once in rein's private dir,
    /// for each command to bind over the covered directory (`None`: made in a tmpfs per
    /// command instead).
    fn view_skeleton(&self, home: &mounts::ViewMounts) -> Option<CString> {
        let dir = self.private.new_entry("home").ok()?;
        match mounts::make_skeleton(&dir, home) {
            Ok(()) => CString::new(dir.as_os_str().as_bytes()).ok(),
            Err(e) => {
                tracing::warn!("sandbox: no home skeleton ({e}); a tmpfs per command instead");
                let _ = std::fs::remove_dir_all(&dir);
                None
            }
        }
    }
}

/// When rein is root its commands run as `nobody` (see `idmap`), who may not pass through a
/// directory only its owner may enter (`/home/alice`, mode 0700, holding the workspace). Each
/// such directory on the way to one of `places`, outside the covered `roots`, gets a view of
/// its own: an empty directory anyone may pass, showing only `places` (and `homes`, whose own
/// view then applies). What else it holds, `nobody` could not have read anyway.
fn closed_ancestor_views(places: &[PathBuf], roots: &[PathBuf], homes: &[PathBuf]) -> Vec<DirView> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Vec::new();
    }
    let closed = places
        .iter()
        .filter_map(|p| outermost_closed_ancestor(p, roots))
        .collect();
    super::secrets::outermost_only(closed)
        .iter()
        .map(|root| {
            let mut view = DirView::new(Some(root), None, &[]);
            view.also(places);
            view.also(homes);
            view
        })
        .filter(|v| v.root().is_some())
        .collect()
}

/// The outermost directory above `place` that others may not search (mode without `o+x`),
/// unless it lies in one of `roots` (or is one), whose view is passable already.
fn outermost_closed_ancestor(place: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut ancestors: Vec<&Path> = place.ancestors().skip(1).collect();
    ancestors.reverse();
    for dir in ancestors {
        if dir.parent().is_none() {
            continue;
        }
        if roots.iter().any(|r| dir.starts_with(r)) {
            return None;
        }
        let mode = std::fs::metadata(dir).ok()?.permissions().mode();
        if mode & 0o001 == 0 {
            return Some(dir.to_path_buf());
        }
    }
    None
}

/// The mounts that present `view` (`None` when there is no home, or a path holds a NUL).
fn view_mounts(view: &DirView) -> Option<mounts::ViewMounts> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).ok();
    let dir = c(view.root()?)?;
    let nodes = view
        .nodes()
        .iter()
        .map(|(path, node)| {
            let kind = match node {
                Node::Dir => mounts::HomeNode::Dir,
                Node::Link(target) => mounts::HomeNode::Link(c(target)?),
                Node::Show(dir) => mounts::HomeNode::Show(*dir),
            };
            Some((c(path)?, kind))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(mounts::ViewMounts {
        dir,
        nodes,
        skeleton: None,
    })
}

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
        let ws =
            super::paths::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        let git = if namespaces && write_ws {
            self.git_plan(&ws, supervision)
        } else {
            mounts::GitPlan::Leave
        };
        // Nested repositories' `.git` (all found before a command runs) are read-only: a hook
        // or config planted there would run when the person uses git there. (Renaming the
        // parent moves the binds; the gitlink check knows each found `.git` by its inode.)
        let mut found = match write_ws {
            true => {
                let (found, note) = self.nested_git.entries(&ws)?;
                supervision.notes.extend(note);
                found
            }
            false => Arc::default(),
        };
        // A `.git` file or link naming a directory in the workspace: that directory is the
        // repository git uses here, protected like a nested one (read anew for every command).
        if write_ws && let Some(linked) = super::git::linked_git_dir(&ws) {
            Arc::make_mut(&mut found).push(linked);
        }
        // Hook directories and included configuration files the person's git (and Mercurial)
        // names in the workspace, for its repository and the nested ones: the same, for the
        // same reason (read anew for every command: the person may change it).
        let mut hooks = Vec::new();
        if write_ws {
            hooks = super::hooks::persons_config_paths(&ws);
            let nested: Vec<PathBuf> = found
                .iter()
                .chain(self.nested_git.other_vcs().iter())
                .cloned()
                .collect();
            for dir in super::hooks::nested_config_paths(&ws, &nested) {
                if !hooks.contains(&dir) {
                    hooks.push(dir);
                }
            }
            supervision.tripwire = Some(tripwire::Tripwire::arm(&ws, !namespaces, &found, &hooks));
        }
        let read_only: Vec<PathBuf> = match namespaces {
            true => found.iter().chain(&hooks).cloned().collect(),
            false => Vec::new(),
        };
        let keep_visible: Vec<PathBuf> = std::iter::once(ws.clone())
            .chain(std::iter::once(cwd.clone()))
            .chain(self.writable_dirs().cloned())
            .collect();
        let home = self.command_home();
        let mut secrets = hidden_paths(&self.secrets, &keep_visible);
        // Home inside the workspace cannot be emptied: its dot entries outside the view are
        // covered one by one (looked up now: what was made since is covered too). Without
        // namespaces they cannot be, inside the workspace's grant: no command runs then (see
        // `linux::refuse_unhideable`).
        if home.view.in_workspace() {
            secrets.extend(home.view.hidden_in_workspace_now());
        }
        let proxy = supervision.net.as_ref().map(|n| n.child_end());
        linux::Confinement::prepare(linux::Request {
            mode: self.mode,
            network: self.network,
            proxy,
            workspace: &self.workspace,
            temp_dir: &self.temp_dir,
            extra_writable: &self.extra_writable,
            cwd: &cwd,
            use_landlock: !self.simulate_no_landlock,
            use_namespaces: namespaces,
            secrets: &secrets,
            covers: home.covers.clone(),
            covered: &home.covered,
            git,
            read_only: &read_only,
            report,
            spare: &self.spare,
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
        let private =
            super::paths::canonicalize(self.private.path.parent().unwrap_or(Path::new("/")))
                .unwrap_or_default();
        let writable: Vec<PathBuf> = std::iter::once(ws.to_path_buf())
            .chain(
                self.writable_dirs()
                    .filter_map(|d| super::paths::canonicalize(d).ok()),
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
        .filter_map(|p| super::paths::canonicalize(p).ok())
        .filter(|p| !keep_visible.iter().any(|k| k.starts_with(p)))
        .collect();
    out.sort();
    out.dedup();
    out
}
