//! Path checks for the file tools: resolve against the workspace, follow symlinks, compare by
//! components.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

/// A path the model named, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute path with `..` and symlinks resolved (for a file that does not exist yet, its
    /// deepest existing ancestor is resolved and the rest appended).
    pub path: PathBuf,
    /// How to show it: relative to the workspace when inside, else absolute.
    pub display: String,
    /// Whether it lies inside the workspace (compared by components).
    pub inside_workspace: bool,
    /// Whether it is a protected path inside the workspace (`.git/` internals, `.rein/`, a
    /// hook directory or included file the person's git configuration names).
    pub protected: bool,
}

/// Same limit as Linux's `ELOOP` for path walks.
const MAX_SYMLINKS: usize = 40;

/// Directory names whose contents can run code or hold rein's own state: git's, Mercurial's and
/// Jujutsu's metadata (their configuration names programs), and rein's. They match at any depth
/// because a nested repository's hooks run just the same.
const PROTECTED_NAMES: [&str; 4] = [".git", ".rein", ".hg", ".jj"];

/// Resolves `raw` (as the model wrote it) against `workspace`: `~` expands to `home`, `..` and
/// symlinks are followed, and containment is decided on the physical path.
pub fn resolve(workspace: &Path, home: Option<&Path>, raw: &str) -> Result<ResolvedPath, String> {
    if raw.trim().is_empty() {
        return Err(
            "the path is empty. Give a file path relative to the workspace, or an absolute one."
                .into(),
        );
    }
    if raw.contains('\0') {
        return Err("the path contains a NUL byte. Give a plain file path.".into());
    }
    let workspace = physical(&absolute(workspace))?;
    let joined = if raw == "~" || raw.starts_with("~/") {
        let Some(home) = home else {
            return Err("`~` cannot be expanded because the home directory is unknown. Use an absolute path.".into());
        };
        match raw.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => home.to_path_buf(),
        }
    } else {
        workspace.join(raw)
    };
    let named = absolute(&joined);
    let path = physical(&named)?;
    let mut resolved = describe(&workspace, path);
    // A protected name in the path as written counts too: `sub/.git/config` may be a link
    // to an ordinary file, which git still reads as the repository's configuration.
    resolved.protected |= resolved.inside_workspace
        && named.strip_prefix(&workspace).is_ok_and(|rel| {
            rel.components().any(
                |c| matches!(c, Component::Normal(n) if PROTECTED_NAMES.iter().any(|p| n == *p)),
            )
        });
    Ok(resolved)
}

/// Builds the [`ResolvedPath`] for an already physical `path`.
fn describe(workspace: &Path, path: PathBuf) -> ResolvedPath {
    match path.strip_prefix(workspace) {
        Ok(rel) => {
            let protected = rel.components().any(
                |c| matches!(c, Component::Normal(n) if PROTECTED_NAMES.iter().any(|p| n == *p)),
            ) || in_persons_config_path(workspace, rel)
                || in_linked_git_dir(workspace, rel)
                || in_git_dir_shaped(workspace, rel);
            let display = if rel.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rel.to_string_lossy().into_owned()
            };
            ResolvedPath {
                display,
                inside_workspace: true,
                protected,
                path,
            }
        }
        Err(_) => ResolvedPath {
            display: path.to_string_lossy().into_owned(),
            inside_workspace: false,
            protected: false,
            path,
        },
    }
}

/// Whether `rel` lies in (or is) a hook directory or configuration file the person's git or
/// Mercurial configuration names, for the workspace's repository or a nested one.
fn in_persons_config_path(workspace: &Path, rel: &Path) -> bool {
    !rel.as_os_str().is_empty()
        && (super::hooks::persons_config_paths(workspace)
            .iter()
            .any(|dir| rel.starts_with(dir))
            || super::hooks::in_nested_config_path(workspace, rel))
}

/// Whether `rel` lies in the repository a `.git` file or link points to inside the workspace
/// (its hooks and configuration run like `.git`'s).
fn in_linked_git_dir(workspace: &Path, rel: &Path) -> bool {
    super::git::linked_git_dir(workspace).is_some_and(|dir| rel.starts_with(dir))
}

/// Whether `rel` lies in a folder git takes for a git directory, or would once `rel` is
/// written: a `HEAD` with `objects` or `commondir` beside it (what `git init --bare` makes).
/// The person's git uses such a folder whenever they work in it (a prompt runs it on `cd`), and
/// obeys its configuration and hooks; so it is protected like `.git`, however named.
fn in_git_dir_shaped(workspace: &Path, rel: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let mut dir = workspace.to_path_buf();
    for (i, next) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let has = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
        let head = has("HEAD") || (last && *next == "HEAD");
        let objects = has("objects")
            || has("commondir")
            || *next == "objects"
            || (last && *next == "commondir");
        if head && objects {
            return true;
        }
        dir.push(next);
    }
    false
}

/// `path` (absolute) with every symlink followed, as [`resolve`] does; `None` for a link loop.
/// A path with no link on the way is itself: one `openat2` says so, instead of a look at each
/// component (the person's configuration files are resolved before every command).
pub(crate) fn physical_path(path: &Path) -> Option<PathBuf> {
    match unlinked(path) {
        Some((itself, _)) => Some(itself),
        None => physical(path).ok(),
    }
}

/// An absolute `path` with no link on the way (see [`link_free`]): as the walk gives it
/// (without `.`, doubled or trailing slashes), and whether it exists.
fn unlinked(path: &Path) -> Option<(PathBuf, bool)> {
    let root = Path::new("/");
    let exists = link_free(root, path.strip_prefix(root).ok()?)?;
    Some((path.components().collect(), exists))
}

/// Makes `p` absolute against the process's current directory (the workspace normally is).
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::path::absolute(p).unwrap_or_else(|_| Path::new("/").join(p))
    }
}

/// Walks an absolute path component by component, following every symlink whose prefix exists
/// (even a dangling one: writing through it would land at its target). Components that do not
/// exist are appended as they are and `..` after them is applied lexically.
fn physical(path: &Path) -> Result<PathBuf, String> {
    physical_from(PathBuf::from("/"), path)
}

/// [`physical_path`] for a `path` below `base`, which is physical already (canonical, and
/// outside anything a command may change): only the components after it are looked at.
pub(crate) fn physical_path_below(base: &Path, path: &Path) -> Option<PathBuf> {
    match path.strip_prefix(base) {
        Ok(rest) if base.is_absolute() && rest.is_relative() => {
            if no_link_below(base, rest) {
                return Some(path.to_path_buf());
            }
            physical_from(base.to_path_buf(), rest).ok()
        }
        _ => physical_path(path),
    }
}

/// Whether `rest` (plain components only) leads from `base` through no symlink: one
/// `openat2` that refuses every link, instead of a look at each component. A component
/// missing before any link means the rest is taken as written, as [`physical`] takes it.
fn no_link_below(base: &Path, rest: &Path) -> bool {
    link_free(base, rest).is_some()
}

thread_local! {
    /// The canonical paths [`canonicalize`] found during the preparation under way on this
    /// thread (see [`OnePreparation`]); `None` outside one.
    static ANSWERED: std::cell::RefCell<Option<Vec<(PathBuf, PathBuf)>>> =
        const { std::cell::RefCell::new(None) };
}

/// While alive, [`canonicalize`] on this thread answers a path it resolved before from that
/// answer. A command's preparation asks for the workspace, the temp dir and others from
/// several modules; one look per path is as current as the last (the command starts only
/// after all of them), and every module then works from the same answer. A path that could
/// not be resolved is asked anew: the preparation creates some (the temp dir).
pub(crate) struct OnePreparation {
    outer: Option<Vec<(PathBuf, PathBuf)>>,
}

impl OnePreparation {
    /// Starts remembering answers until the value is dropped.
    pub(crate) fn start() -> OnePreparation {
        let outer = ANSWERED.with(|a| a.borrow_mut().replace(Vec::new()));
        OnePreparation { outer }
    }
}

impl Drop for OnePreparation {
    fn drop(&mut self) {
        let outer = self.outer.take();
        ANSWERED.with(|a| *a.borrow_mut() = outer);
    }
}

/// `std::fs::canonicalize`, cheaper where it is asked before every command: a path without
/// links, `.` or `..` is its own canonical form (or missing), which one `openat2` tells.
/// Within a [`OnePreparation`], each path is looked at once.
pub(crate) fn canonicalize(path: impl AsRef<Path>) -> std::io::Result<PathBuf> {
    let path = path.as_ref();
    let known = ANSWERED.with(|a| {
        a.borrow()
            .as_ref()
            .and_then(|kept| kept.iter().find(|(p, _)| p == path).map(|(_, c)| c.clone()))
    });
    if let Some(canonical) = known {
        return Ok(canonical);
    }
    let found = canonical(path)?;
    ANSWERED.with(|a| {
        if let Some(kept) = a.borrow_mut().as_mut() {
            kept.push((path.to_path_buf(), found.clone()));
        }
    });
    Ok(found)
}

/// [`canonicalize`]'s look.
fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    // A trailing slash asks for a directory: the kernel's answer decides.
    let dir_asked = path.as_os_str().as_encoded_bytes().ends_with(b"/");
    match (!dir_asked).then(|| unlinked(path)).flatten() {
        Some((itself, true)) => Ok(itself),
        Some((_, false)) => Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
        None => std::fs::canonicalize(path),
    }
}

/// Whether `base` joined with `rest` (plain components only) exists, when the way there
/// has no symlink (the last component included); `None` when it has one, or cannot be told.
/// A component missing before any link makes it `Some(false)`: the kernel resolves in order,
/// so a link before it would have been refused first.
fn link_free(base: &Path, rest: &Path) -> Option<bool> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    if !rest.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let path = base.join(rest);
    // Without `O_NOFOLLOW`, a link as the last component is refused (`ELOOP`) like one on
    // the way: no `fstat` is needed to tell (this runs a few dozen times before a command).
    match rustix::fs::openat2(
        rustix::fs::CWD,
        &path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    ) {
        Ok(_) => Some(true),
        Err(rustix::io::Errno::NOENT) => Some(false),
        Err(_) => None,
    }
}

/// Walks `path` (absolute, or relative to `out`, which is physical) as [`physical`] does.
fn physical_from(mut out: PathBuf, path: &Path) -> Result<PathBuf, String> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, path);
    let mut links = 0usize;
    while let Some(part) = pending.pop_front() {
        match part.to_str() {
            Some("/") => out = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                // `out` never contains a symlink, so dropping its last component is the real parent.
                out.pop();
            }
            _ => {
                let candidate = out.join(&part);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_SYMLINKS {
                            return Err(format!(
                                "too many levels of symbolic links in {}. Give a path without a symlink loop.",
                                path.display()
                            ));
                        }
                        let target = std::fs::read_link(&candidate).map_err(|e| {
                            format!("cannot read the symlink {}: {e}", candidate.display())
                        })?;
                        // A relative target is relative to the link's directory, which is `out`.
                        push_front(&mut pending, &target);
                    }
                    Ok(_) => out = candidate,
                    Err(e)
                        if e.kind() == ErrorKind::NotFound
                            || e.kind() == ErrorKind::NotADirectory =>
                    {
                        out = candidate
                    }
                    // Unreadable (e.g. permission denied): nothing to follow that we can see.
                    Err(_) => out = candidate,
                }
            }
        }
    }
    Ok(out)
}

/// Puts the components of `p` in front of `pending`, in order.
fn push_front(pending: &mut VecDeque<OsString>, p: &Path) {
    for c in p.components().rev() {
        let part: OsString = match c {
            Component::RootDir | Component::Prefix(_) => "/".into(),
            Component::CurDir => ".".into(),
            Component::ParentDir => "..".into(),
            Component::Normal(n) => n.to_os_string(),
        };
        pending.push_front(part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A workspace `proj` inside a temp dir, plus the dir itself (for siblings).
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let ws = base.join("proj");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/lib.rs"), "x").unwrap();
        (root, base, ws)
    }

    #[test]
    fn relative_path_inside() {
        let (_t, _base, ws) = setup();
        let r = resolve(&ws, None, "src/lib.rs").unwrap();
        assert_eq!(r.path, ws.join("src/lib.rs"));
        assert_eq!(r.display, "src/lib.rs");
        assert!(r.inside_workspace);
        assert!(!r.protected);
        let dot = resolve(&ws, None, "./src/../src/./lib.rs").unwrap();
        assert_eq!(dot.path, ws.join("src/lib.rs"));
        assert_eq!(resolve(&ws, None, ".").unwrap().display, ".");
    }

    #[test]
    fn parent_escape_is_outside() {
        let (_t, base, ws) = setup();
        let r = resolve(&ws, None, "../x").unwrap();
        assert_eq!(r.path, base.join("x"));
        assert!(!r.inside_workspace);
        assert_eq!(r.display, base.join("x").to_string_lossy());
        let deep = resolve(&ws, None, "src/../../proj/../x").unwrap();
        assert!(!deep.inside_workspace);
    }

    #[test]
    fn absolute_outside_and_inside() {
        let (_t, _base, ws) = setup();
        let r = resolve(&ws, None, "/etc/passwd").unwrap();
        assert!(!r.inside_workspace);
        assert_eq!(r.display, "/etc/passwd");
        let abs = ws.join("src/lib.rs");
        let inside = resolve(&ws, None, abs.to_str().unwrap()).unwrap();
        assert!(inside.inside_workspace);
        assert_eq!(inside.display, "src/lib.rs");
    }

    #[test]
    fn a_path_below_a_physical_base_resolves_as_from_the_root() {
        let (_root, base, ws) = setup();
        symlink("src", ws.join("lnk")).unwrap();
        symlink("../../outside.cfg", ws.join("src/cfg")).unwrap();
        for path in [
            ws.join("lnk/lib.rs"),
            ws.join("lnk/cfg"),
            ws.join("src/../lnk/new/file"),
            ws.join("lnk"),
            ws.join("src/lib.rs"),
            ws.join("src/new/deeper"),
            ws.join("src/lib.rs/not-a-dir"),
            base.join("elsewhere"),
        ] {
            assert_eq!(
                physical_path_below(&ws, &path),
                physical_path(&path),
                "{}",
                path.display()
            );
        }
        assert_eq!(
            physical_path_below(&ws, &ws.join("lnk/cfg")),
            Some(base.join("outside.cfg"))
        );
    }

    #[test]
    fn a_path_without_links_is_itself_and_any_other_is_walked() {
        let (_root, base, ws) = setup();
        symlink("src", ws.join("lnk")).unwrap();
        symlink("../../outside.cfg", ws.join("src/cfg")).unwrap();
        symlink("nowhere", ws.join("dangling")).unwrap();
        for path in [
            ws.join("src/lib.rs"),
            ws.join("src/new/deeper"),
            ws.join("lnk/lib.rs"),
            ws.join("lnk/cfg"),
            ws.join("src/cfg"),
            ws.join("dangling"),
            ws.join("dangling/below"),
            ws.join("src/lib.rs/not-a-dir"),
            ws.join("src/../lnk/cfg"),
            ws.join("src/./lib.rs"),
            PathBuf::from(format!("{}//src/lib.rs/", ws.display())),
            base.join("elsewhere"),
        ] {
            assert_eq!(
                physical_path(&path),
                physical(&path).ok(),
                "{}",
                path.display()
            );
        }
        assert_eq!(
            physical_path(&ws.join("lnk/cfg")),
            Some(base.join("outside.cfg"))
        );
    }

    #[test]
    fn one_preparation_resolves_each_path_once_and_a_missing_one_anew() {
        let (_root, base, ws) = setup();
        let link = base.join("alias");
        symlink("proj/src", &link).unwrap();
        let later = base.join("made-later");
        {
            let _one = OnePreparation::start();
            assert_eq!(canonicalize(&link).unwrap(), ws.join("src"));
            assert!(canonicalize(&later).is_err());
            // Re-pointed within the preparation: its first answer stands.
            std::fs::remove_file(&link).unwrap();
            symlink("proj", &link).unwrap();
            assert_eq!(canonicalize(&link).unwrap(), ws.join("src"));
            // A path that was missing is looked at again (the preparation makes some).
            std::fs::create_dir(&later).unwrap();
            assert_eq!(canonicalize(&later).unwrap(), later);
            {
                let _inner = OnePreparation::start();
                assert_eq!(canonicalize(&link).unwrap(), ws);
            }
            assert_eq!(canonicalize(&link).unwrap(), ws.join("src"));
        }
        // After it, every call looks anew.
        assert_eq!(canonicalize(&link).unwrap(), ws);
    }

    #[test]
    fn a_canonical_path_is_what_canonicalize_gives() {
        let (_root, base, ws) = setup();
        symlink("src", ws.join("lnk")).unwrap();
        symlink("nowhere", ws.join("dangling")).unwrap();
        for path in [
            ws.join("src/lib.rs"),
            ws.join("src/missing"),
            ws.join("missing/deeper"),
            ws.join("lnk"),
            ws.join("lnk/lib.rs"),
            ws.join("lnk/missing"),
            ws.join("dangling"),
            ws.join("src/../lnk/lib.rs"),
            ws.join("src/lib.rs/not-a-dir"),
            ws.join("src/./lib.rs"),
            PathBuf::from(format!("{}//src/", ws.display())),
            PathBuf::from(format!("{}/src/lib.rs/", ws.display())),
            base.join("elsewhere"),
        ] {
            assert_eq!(
                canonicalize(&path).ok(),
                std::fs::canonicalize(&path).ok(),
                "{}",
                path.display()
            );
        }
    }

    #[test]
    fn symlink_inside_pointing_out() {
        let (_t, base, ws) = setup();
        std::fs::create_dir(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), "s").unwrap();
        symlink(base.join("outside"), ws.join("link")).unwrap();
        let r = resolve(&ws, None, "link/secret").unwrap();
        assert_eq!(r.path, base.join("outside/secret"));
        assert!(!r.inside_workspace);
        // `..` after a symlink is the parent of its target, as the kernel sees it.
        let up = resolve(&ws, None, "link/../proj/src").unwrap();
        assert_eq!(up.path, ws.join("src"));
        assert!(up.inside_workspace);
    }

    #[test]
    fn symlinked_parent_of_new_file() {
        let (_t, base, ws) = setup();
        std::fs::create_dir(base.join("elsewhere")).unwrap();
        symlink("../elsewhere", ws.join("out")).unwrap();
        let r = resolve(&ws, None, "out/new/dir/file.txt").unwrap();
        assert_eq!(r.path, base.join("elsewhere/new/dir/file.txt"));
        assert!(!r.inside_workspace);
    }

    #[test]
    fn dangling_symlink_resolves_to_its_target() {
        let (_t, base, ws) = setup();
        symlink(base.join("nowhere/file"), ws.join("dangling")).unwrap();
        let r = resolve(&ws, None, "dangling").unwrap();
        assert_eq!(r.path, base.join("nowhere/file"));
        assert!(!r.inside_workspace);
    }

    #[test]
    fn symlink_loop_is_an_error() {
        let (_t, _base, ws) = setup();
        symlink("b", ws.join("a")).unwrap();
        symlink("a", ws.join("b")).unwrap();
        let err = resolve(&ws, None, "a/x").unwrap_err();
        assert!(err.contains("too many levels of symbolic links"), "{err}");
    }

    #[test]
    fn look_alike_sibling_is_outside() {
        let (_t, base, ws) = setup();
        std::fs::create_dir(base.join("proj-evil")).unwrap();
        let r = resolve(&ws, None, "../proj-evil/x").unwrap();
        assert!(!r.inside_workspace);
        let abs = base.join("proj-evil/x");
        assert!(
            !resolve(&ws, None, abs.to_str().unwrap())
                .unwrap()
                .inside_workspace
        );
        let abs2 = base.join("projx");
        assert!(
            !resolve(&ws, None, abs2.to_str().unwrap())
                .unwrap()
                .inside_workspace
        );
    }

    #[test]
    fn tilde_expands_to_home() {
        let (_t, base, ws) = setup();
        let home = base.join("home");
        std::fs::create_dir(&home).unwrap();
        let r = resolve(&ws, Some(&home), "~/notes.txt").unwrap();
        assert_eq!(r.path, home.join("notes.txt"));
        assert!(!r.inside_workspace);
        assert_eq!(resolve(&ws, Some(&home), "~").unwrap().path, home);
        let err = resolve(&ws, None, "~/x").unwrap_err();
        assert!(err.contains("home directory is unknown"), "{err}");
        // Only a leading `~` is special.
        let lit = resolve(&ws, Some(&home), "a~/b").unwrap();
        assert_eq!(lit.path, ws.join("a~/b"));
    }

    #[test]
    fn nonexistent_nested_path_inside() {
        let (_t, _base, ws) = setup();
        let r = resolve(&ws, None, "new/deep/../dir/file.rs").unwrap();
        assert_eq!(r.path, ws.join("new/dir/file.rs"));
        assert!(r.inside_workspace);
        assert_eq!(r.display, "new/dir/file.rs");
        let escape = resolve(&ws, None, "new/../../x").unwrap();
        assert!(!escape.inside_workspace);
    }

    #[test]
    fn workspace_behind_a_symlink() {
        let (_t, base, ws) = setup();
        symlink(&ws, base.join("alias")).unwrap();
        let r = resolve(&base.join("alias"), None, "src/lib.rs").unwrap();
        assert_eq!(r.path, ws.join("src/lib.rs"));
        assert!(r.inside_workspace);
        assert_eq!(r.display, "src/lib.rs");
        let abs = ws.join("src/lib.rs");
        assert!(
            resolve(&base.join("alias"), None, abs.to_str().unwrap())
                .unwrap()
                .inside_workspace
        );
    }

    #[test]
    fn protected_paths() {
        let (_t, _base, ws) = setup();
        for p in [
            ".git/hooks/pre-commit",
            ".git/config",
            ".git",
            ".rein/settings.toml",
            "vendor/x/.git/hooks/a",
            ".hg/hgrc",
            "sub/.jj/repo/config.toml",
        ] {
            let r = resolve(&ws, None, p).unwrap();
            assert!(r.protected, "{p} should be protected");
            assert!(r.inside_workspace);
        }
        for p in [
            ".github/workflows/ci.yml",
            "src/.gitignore",
            ".gitignore",
            "src/rein.rs",
        ] {
            assert!(
                !resolve(&ws, None, p).unwrap().protected,
                "{p} should not be protected"
            );
        }
        assert!(!resolve(&ws, None, "/tmp/.git/config").unwrap().protected);
        // Named through `.git`, though the link leads to an ordinary file.
        std::fs::create_dir_all(ws.join("sub/.git")).unwrap();
        std::fs::write(ws.join("notes.cfg"), "").unwrap();
        std::os::unix::fs::symlink("../../notes.cfg", ws.join("sub/.git/config")).unwrap();
        let r = resolve(&ws, None, "sub/.git/config").unwrap();
        assert!(r.protected && r.display == "notes.cfg", "{r:?}");
        assert!(!resolve(&ws, None, "notes.cfg").unwrap().protected);
    }

    #[test]
    fn a_folder_git_takes_for_a_git_directory_is_protected_before_and_after_it_is_one() {
        let (_t, _base, ws) = setup();
        std::fs::create_dir_all(ws.join("bare/objects")).unwrap();
        std::fs::create_dir_all(ws.join("half/objects")).unwrap();
        std::fs::write(ws.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(ws.join("head-only")).unwrap();
        std::fs::write(ws.join("head-only/HEAD"), "x").unwrap();
        for p in [
            "bare/config",
            "bare/hooks/post-index-change",
            "half/HEAD",
            "head-only/objects/x",
            "head-only/commondir",
        ] {
            assert!(resolve(&ws, None, p).unwrap().protected, "{p}");
        }
        for p in ["half/config", "head-only/config", "src/HEAD", "objects/x"] {
            assert!(!resolve(&ws, None, p).unwrap().protected, "{p}");
        }
    }

    #[test]
    fn empty_and_nul_paths_are_errors() {
        let (_t, _base, ws) = setup();
        assert!(
            resolve(&ws, None, "")
                .unwrap_err()
                .contains("the path is empty")
        );
        assert!(
            resolve(&ws, None, "   ")
                .unwrap_err()
                .contains("the path is empty")
        );
        assert!(resolve(&ws, None, "a\0b").unwrap_err().contains("NUL"));
    }
}
