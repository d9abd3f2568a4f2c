//! What bash sees of the home directory: nothing but an allow-list of the toolchains, version
//! managers and caches that builds need, the workspace and rein's own dirs for the command
//! when they lie there, and a git identity. A secret under a name no list knows is absent by
//! construction, not because a list named it.
//!
//! One [`DirView`] decides it everywhere: the mounts with namespaces (an empty read-only
//! tmpfs over `$HOME` with the allowed places bound back in), the Landlock read rules without
//! them, the file tools' refusals, and (through [`DEFAULT_HOME_ALLOW`]) the policy's idea of
//! a secret place.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Places under the home directory bash may read by default: toolchains, version managers and
/// build caches (docs/sandbox.md names each). None holds a credential: `~/.cargo` is allowed
/// by its `bin`, `registry` and `git`, never its `credentials.toml`; uv by its Pythons and
/// tools, never its credentials.
pub const DEFAULT_HOME_ALLOW: &[&str] = &[
    // Rust.
    ".cargo/bin",
    ".cargo/env",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    // Python.
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".local/share/uv/python",
    ".local/share/uv/tools",
    ".cache/pip",
    ".cache/uv",
    ".cache/pypoetry",
    // JavaScript.
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".npm/_cacache",
    ".npm/_npx",
    ".cache/yarn",
    ".yarn/berry/cache",
    ".cache/pnpm",
    ".local/share/pnpm",
    ".cache/node-gyp",
    ".cache/deno",
    // Go.
    "go/bin",
    "go/pkg/mod",
    ".cache/go-build",
    // Other version managers and build caches.
    ".rbenv",
    ".asdf",
    ".tool-versions",
    ".local/share/mise",
    ".sdkman/candidates",
    ".cache/ccache",
    ".ccache",
    ".cache/sccache",
    ".cache/zig",
    // The terminal's description (for `TERM`).
    ".terminfo",
    // The person's skills: a skill's instructions may tell the model to run its scripts.
    ".agents/skills",
    ".claude/skills",
];

/// At most this many places are shown (the child keeps one descriptor per place on its stack).
pub(crate) const MAX_SHOWN: usize = 96;

/// How a path under home appears in the view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// A directory on the way to an allowed place: empty in the view but for what leads on.
    Dir,
    /// A symbolic link on the way, recreated with the same target.
    Link(PathBuf),
    /// An allowed place, shown as it is: a directory tree (`true`) or a file.
    Show(bool),
}

/// A directory as bash sees it: home, the shared temporary and runtime directories, the
/// top-level directories outside the system's, a closed directory on the way to the workspace;
/// each empty but for the places it shows. Built once per session.
#[derive(Clone, Debug, Default)]
pub struct DirView {
    /// The covered directory (canonical); `None`: nothing to hide.
    root: Option<PathBuf>,
    /// The allow-list, relative to home (for display and the policy).
    allowed: Vec<PathBuf>,
    /// The workspace contains home (rein started in `~` or above): home cannot be emptied
    /// without hiding the workspace, so only its dot entries outside the allow-list are.
    in_workspace: bool,
    /// Every path of the view, parents before children.
    nodes: BTreeMap<PathBuf, Node>,
}

/// `p` with `.` and `..` removed by name (no file system access).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// An allow-list entry as a path relative to home: `~/x`, `x` or `$HOME/x` spelled absolute.
/// `None` for entries that would show home itself or leave it.
fn relative_entry(raw: &str, home: &Path, spelled: &Path) -> Option<PathBuf> {
    let raw = raw.trim();
    if raw == "~" || raw == "$HOME" {
        return None;
    }
    let rel = match raw.strip_prefix("~/") {
        Some(rest) => PathBuf::from(rest),
        None if Path::new(raw).is_absolute() => {
            let p = normalize(Path::new(raw));
            p.strip_prefix(spelled)
                .or_else(|_| p.strip_prefix(home))
                .ok()?
                .to_path_buf()
        }
        None => PathBuf::from(raw),
    };
    let ok = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (ok && rel.components().next().is_some()).then_some(rel)
}

impl DirView {
    /// The view of `home` showing the `allowed` entries (relative to home, `~/x`, or absolute
    /// under home) and the places in `also` (absolute: the workspace, the session's temp dir,
    /// the generated git identity; those outside home need nothing). `workspace` decides
    /// whether home lies inside it.
    pub fn new(home: Option<&Path>, workspace: Option<&Path>, allowed: &[String]) -> DirView {
        let Some(spelled) = home.filter(|h| h.is_absolute()).map(normalize) else {
            return DirView::default();
        };
        let real = super::paths::canonicalize(&spelled).unwrap_or_else(|_| spelled.clone());
        // Emptying `/` would hide the system: no view at all. A home that does not exist
        // holds nothing to hide (and nothing to mount over); commands cannot create it.
        if real.parent().is_none() || !real.is_dir() {
            return DirView::default();
        }
        let mut rel: Vec<PathBuf> = allowed
            .iter()
            .filter_map(|raw| relative_entry(raw, &real, &spelled))
            .collect();
        rel.sort();
        rel.dedup();
        let in_workspace = workspace
            .map(|w| super::paths::canonicalize(w).unwrap_or_else(|_| normalize(w)))
            .is_some_and(|w| real.starts_with(&w));
        let mut view = DirView {
            root: Some(real),
            allowed: rel.clone(),
            in_workspace,
            nodes: BTreeMap::new(),
        };
        for r in &rel {
            view.expose(r, 0);
        }
        if let Some(ws) = workspace {
            view.also(&[ws.to_path_buf()]);
        }
        view
    }

    /// Also shows these places (absolute; those outside home or missing are ignored).
    pub fn also(&mut self, places: &[PathBuf]) {
        let Some(home) = self.root.clone() else {
            return;
        };
        for p in places {
            let p = super::paths::canonicalize(p).unwrap_or_else(|_| normalize(p));
            if let Ok(rel) = p.strip_prefix(&home)
                && rel.components().next().is_some()
            {
                let rel = rel.to_path_buf();
                self.expose(&rel, 0);
            }
        }
        self.prune();
    }

    /// Adds the nodes that show `rel` (relative to the canonical home), recreating links on
    /// the way: a link that leads out of home needs nothing more (outside is visible as it
    /// is), one that leads back in is followed there.
    fn expose(&mut self, rel: &Path, depth: usize) {
        let Some(home) = self.root.clone() else {
            return;
        };
        if depth > 40 {
            return;
        }
        let comps: Vec<&std::ffi::OsStr> = rel.iter().collect();
        let mut cur = home.clone();
        for (i, c) in comps.iter().enumerate() {
            let next = cur.join(c);
            let Ok(meta) = std::fs::symlink_metadata(&next) else {
                return;
            };
            let last = i + 1 == comps.len();
            if meta.file_type().is_symlink() {
                let Ok(target) = std::fs::read_link(&next) else {
                    return;
                };
                self.nodes.entry(next.clone()).or_insert(Node::Link(target));
                let Ok(real) = super::paths::canonicalize(&next) else {
                    return;
                };
                if let Ok(inside) = real.strip_prefix(&home) {
                    let rest: PathBuf = inside
                        .iter()
                        .chain(comps[i + 1..].iter().copied())
                        .collect();
                    if rest.components().next().is_some() {
                        self.expose(&rest, depth + 1);
                    }
                }
                return;
            }
            if last {
                self.nodes.insert(next, Node::Show(meta.is_dir()));
            } else if meta.is_dir() {
                self.nodes.entry(next.clone()).or_insert(Node::Dir);
                cur = next;
            } else {
                return;
            }
        }
        self.prune();
    }

    /// Drops what lies beneath a shown place (the place is shown whole) and keeps the number
    /// of shown places within [`MAX_SHOWN`].
    fn prune(&mut self) {
        let shown: Vec<PathBuf> = self.shown().map(Path::to_path_buf).collect();
        self.nodes
            .retain(|p, _| !shown.iter().any(|s| p != s && p.starts_with(s)));
        let mut count = 0;
        self.nodes.retain(|p, n| {
            if matches!(n, Node::Show(_)) {
                count += 1;
                if count > MAX_SHOWN {
                    tracing::warn!(
                        "sandbox: too many places to show in home; {} is not",
                        p.display()
                    );
                    return false;
                }
            }
            true
        });
    }

    /// The covered directory (canonical: home, `/tmp`, `/var`, ...), if there is one to hide.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The allow-list, relative to home.
    pub fn allowed(&self) -> &[PathBuf] {
        &self.allowed
    }

    /// Whether home lies inside the workspace (only its dot entries can be hidden then).
    pub fn in_workspace(&self) -> bool {
        self.in_workspace
    }

    /// The places shown as they are (canonical paths).
    pub(crate) fn shown(&self) -> impl Iterator<Item = &Path> {
        self.nodes
            .iter()
            .filter(|(_, n)| matches!(n, Node::Show(_)))
            .map(|(p, _)| p.as_path())
    }

    /// Every path of the view, parents before children.
    pub(crate) fn nodes(&self) -> &BTreeMap<PathBuf, Node> {
        &self.nodes
    }

    /// Whether bash cannot see `path` (physical: links resolved) because it lies in home
    /// outside the view. Directories on the way to a shown place count as visible (they show
    /// nothing else).
    pub fn hides(&self, path: &Path) -> bool {
        let Some(home) = &self.root else {
            return false;
        };
        let path = normalize(path);
        let Ok(rel) = path.strip_prefix(home) else {
            return false;
        };
        if self.in_workspace && !rel.iter().next().is_some_and(hidden_in_workspace) {
            return false;
        }
        !self
            .nodes
            .iter()
            .any(|(p, n)| path.starts_with(p) && matches!(n, Node::Show(_)) || p.starts_with(&path))
    }

    /// With home inside the workspace: the entries to cover (found now: the dot entries of
    /// home outside the view, and within those on the way to a shown place, their siblings).
    pub(crate) fn hidden_in_workspace_now(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Some(home) = self.root.as_deref().filter(|_| self.in_workspace) else {
            return out;
        };
        let Ok(entries) = std::fs::read_dir(home) else {
            return out;
        };
        let shown: Vec<&Path> = self.shown().collect();
        for e in entries.flatten() {
            if hidden_in_workspace(&e.file_name()) {
                complement(&e.path(), &shown, &mut out);
            }
        }
        out
    }
}

/// Whether an entry of home is one the view hides when home lies in the workspace: a dot
/// entry (configuration, credentials, histories), but not the workspace's own `.git`/`.rein`.
fn hidden_in_workspace(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_none_or(|n| n.starts_with('.') && n != ".git" && n != ".rein")
}

/// `path` itself when nothing shown lies in it; else its entries that lead to nothing shown.
fn complement(path: &Path, shown: &[&Path], out: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    // A link shows what it points to, which is hidden (or not) where it lives; covering it
    // would cover its target, perhaps outside home.
    if meta.file_type().is_symlink() || shown.iter().any(|s| path.starts_with(s)) {
        return;
    }
    let is_dir = meta.is_dir();
    if !(is_dir && shown.iter().any(|s| s.starts_with(path))) {
        out.push(path.to_path_buf());
        return;
    }
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            complement(&e.path(), shown, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        for d in [
            ".cargo/bin",
            ".cargo/registry",
            ".config/git",
            "proj/src",
            "dot/rustup",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".cargo/credentials.toml"), "t").unwrap();
        std::fs::write(home.join(".config/git/credentials"), "t").unwrap();
        std::os::unix::fs::symlink(home.join("dot/rustup"), home.join(".rustup")).unwrap();
        (dir, home)
    }

    fn allow(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_allowed_places_and_the_workspace_are_visible() {
        let (_d, home) = home();
        let ws = home.join("proj");
        let v = DirView::new(Some(&home), Some(&ws), &allow(DEFAULT_HOME_ALLOW));
        for p in [
            ".cargo/bin/cargo",
            ".cargo/registry/x",
            "proj/src/main.rs",
            "dot/rustup/settings.toml",
            ".cargo",
            "",
        ] {
            assert!(!v.hides(&home.join(p)), "{p} hidden");
        }
        for p in [
            ".cargo/credentials.toml",
            ".config/git/credentials",
            ".config",
            "dot/other",
            ".ssh/id_rsa",
            ".env",
        ] {
            assert!(v.hides(&home.join(p)), "{p} visible");
        }
        assert!(!v.hides(Path::new("/usr/bin/ls")));
        // The link on the way is recreated, its target inside home shown.
        assert_eq!(
            v.nodes()[&home.join(".rustup")],
            Node::Link(home.join("dot/rustup"))
        );
        assert_eq!(v.nodes()[&home.join("dot/rustup")], Node::Show(true));
        assert_eq!(v.nodes()[&home.join(".cargo")], Node::Dir);
    }

    #[test]
    fn entries_that_leave_home_or_show_it_whole_are_ignored() {
        let (_d, home) = home();
        let v = DirView::new(
            Some(&home),
            None,
            &allow(&["~", "..", "~/../x", "/etc", "~/.cargo/../.config"]),
        );
        assert!(v.allowed().is_empty());
        assert!(v.hides(&home.join(".config/git/credentials")));
        let abs = home.join(".config/git").to_string_lossy().into_owned();
        let v = DirView::new(Some(&home), None, &[abs]);
        assert!(!v.hides(&home.join(".config/git/credentials")));
        assert!(
            DirView::new(Some(Path::new("/")), None, &[])
                .root()
                .is_none()
        );
        assert!(!DirView::new(None, None, &[]).hides(&home.join(".ssh")));
    }

    #[test]
    fn home_inside_the_workspace_hides_its_dot_entries_outside_the_list() {
        let (_d, home) = home();
        let v = DirView::new(Some(&home), Some(&home), &allow(&[".cargo/bin"]));
        assert!(v.in_workspace());
        assert!(!v.hides(&home.join("proj/src/main.rs")));
        assert!(!v.hides(&home.join(".cargo/bin/cargo")));
        assert!(v.hides(&home.join(".cargo/credentials.toml")));
        assert!(v.hides(&home.join(".config/git/credentials")));
        let mut hidden = v.hidden_in_workspace_now();
        hidden.sort();
        assert_eq!(
            hidden,
            [
                home.join(".cargo/credentials.toml"),
                home.join(".cargo/registry"),
                home.join(".config")
            ]
        );
    }
}
