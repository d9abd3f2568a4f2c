//! Which git directory git would use when run in a directory, found the way git finds it
//! (`setup_git_directory`): from the directory up, each level's `.git` (a directory that is a
//! git directory, or a `gitdir:` file) and then the level itself as a bare repository (a
//! `HEAD` with `objects/` and `refs/`, which `safe.bareRepository=all` lets git use). Where
//! rein cannot tell what git would decide, the answer is a reason to ask.

use std::path::{Path, PathBuf};

/// A repository git would use: its git directory and the directory its hooks and relative
/// paths are taken from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Repo {
    /// The git directory (`.git`, a linked worktree's or a submodule's).
    pub(crate) git_dir: PathBuf,
    /// The top of the work tree (where `.git` is).
    pub(crate) work_tree: PathBuf,
}

/// What a directory holding `HEAD` is to git.
#[derive(Debug, PartialEq)]
enum Shape {
    /// No entry named `HEAD`: git passes it by.
    NoHead,
    /// A plain git directory: `HEAD` names a ref or an object, `objects/` and `refs/` exist.
    GitDir,
    /// Anything else with a `HEAD`: git may or may not take it.
    Unclear,
}

/// The repository git run in `dir` uses; `Ok(None)` when git finds none (or cannot enter
/// `dir`); `Err` with the reason to ask when it may use one whose configuration rein has not
/// read. `root` (the workspace) only shortens the paths in reasons.
pub(crate) fn discover(dir: &Path, root: &Path) -> Result<Option<Repo>, String> {
    // git works in the directory it entered, with links resolved, and walks up from there.
    // One that does not exist yet may be made earlier in the same command line: its nearest
    // existing ancestor is where the walk would reach first.
    let Ok(dir) = std::path::absolute(dir) else {
        return Err(format!("rein cannot tell where {} is", dir.display()));
    };
    let Some(start) = dir.ancestors().find_map(|a| a.canonicalize().ok()) else {
        return Ok(None);
    };
    for level in start.ancestors() {
        if let Some(found) = dot_git(level)? {
            return Ok(Some(found));
        }
        match shape(level) {
            Shape::NoHead => {}
            // Run inside a `.git` directory, git uses it: the repository rein reads anyway.
            Shape::GitDir if level.file_name().is_some_and(|n| n == ".git") => {
                let work_tree = level.parent().unwrap_or(level).to_path_buf();
                let git_dir = level.to_path_buf();
                return Ok(Some(Repo { git_dir, work_tree }));
            }
            Shape::GitDir | Shape::Unclear => {
                return Err(format!(
                    "`{}` looks like a git directory (it has HEAD); git would read its config",
                    shown(level, root)
                ));
            }
        }
    }
    Ok(None)
}

/// The repository `level/.git` makes git use, if any; `Err` where rein cannot tell.
fn dot_git(level: &Path) -> Result<Option<Repo>, String> {
    let dot = level.join(".git");
    let Ok(meta) = dot.symlink_metadata() else {
        return Ok(None);
    };
    // git reads `.git` through a link as what the link names.
    let meta = if meta.file_type().is_symlink() {
        match dot.metadata() {
            Ok(m) => m,
            Err(_) => return Err(format!("{} is a link rein cannot follow", dot.display())),
        }
    } else {
        meta
    };
    let work_tree = level.to_path_buf();
    if meta.is_file() {
        // A `gitdir:` file git cannot read, or naming no git directory, stops git.
        return match crate::sandbox::git::gitdir_file_target(level, &dot) {
            // Resolved, so a submodule that leads back to a repository is seen as the same.
            Some(git_dir) => Ok(Some(Repo {
                git_dir: git_dir.canonicalize().unwrap_or(git_dir),
                work_tree,
            })),
            None => Err(format!(
                "{} is a `.git` file rein cannot read",
                dot.display()
            )),
        };
    }
    if !meta.is_dir() {
        // A FIFO or socket: git finds no repository there and goes on.
        return Ok(None);
    }
    match shape(&dot) {
        Shape::GitDir => Ok(Some(Repo {
            git_dir: dot,
            work_tree,
        })),
        // git passes by a `.git` directory that is not a repository.
        Shape::NoHead => Ok(None),
        Shape::Unclear => Err(format!(
            "{} is not plainly a git directory; git may use another",
            dot.display()
        )),
    }
}

/// What `dir` is to git's `is_git_directory`.
fn shape(dir: &Path) -> Shape {
    let head = dir.join("HEAD");
    if head.symlink_metadata().is_err() {
        return Shape::NoHead;
    }
    let Some(text) = crate::sandbox::git::read_small(&head) else {
        return Shape::Unclear;
    };
    let text = text.trim_end();
    let hex = |t: &str| matches!(t.len(), 40 | 64) && t.bytes().all(|b| b.is_ascii_hexdigit());
    let head_ok = text
        .strip_prefix("ref:")
        .is_some_and(|r| r.trim_start().starts_with("refs/"))
        || hex(text);
    // `objects/` and `refs/` are looked for in the common directory when there is one.
    let Ok(common) = super::common_dir(dir) else {
        return Shape::Unclear;
    };
    let dirs_ok = common.join("objects").is_dir() && common.join("refs").is_dir();
    if head_ok && dirs_ok {
        Shape::GitDir
    } else {
        Shape::Unclear
    }
}

/// `path` as the person knows it: relative to the workspace when inside it.
fn shown(path: &Path, root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match path.strip_prefix(&root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_dir(at: &Path) {
        std::fs::create_dir_all(at.join("objects")).unwrap();
        std::fs::create_dir_all(at.join("refs")).unwrap();
        std::fs::write(at.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn the_nearest_dot_git_wins_and_a_bare_looking_directory_asks() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        git_dir(&ws.join(".git"));
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        let found = discover(&ws.join("a/b"), &ws).unwrap().unwrap();
        assert_eq!(found.git_dir, ws.join(".git"));
        // Any entry named HEAD counts, whatever it holds.
        std::fs::write(ws.join("a/HEAD"), "x").unwrap();
        let why = discover(&ws.join("a/b"), &ws).unwrap_err();
        assert!(why.starts_with("`a` looks like a git directory"), "{why}");
        // A directory the command line may make first is judged from where it would be.
        assert!(discover(&ws.join("a/b/not/yet"), &ws).is_err());
        // Inside `.git` itself git uses it.
        let found = discover(&ws.join(".git/refs"), &ws).unwrap().unwrap();
        assert_eq!(found.git_dir, ws.join(".git"));
    }

    #[test]
    fn a_dot_git_that_is_no_repository_is_passed_by_as_git_does() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        git_dir(&ws.join(".git"));
        // Empty: git goes on up to the workspace's.
        std::fs::create_dir_all(ws.join("s/.git")).unwrap();
        let found = discover(&ws.join("s"), &ws).unwrap().unwrap();
        assert_eq!(found.git_dir, ws.join(".git"));
        // A HEAD without objects: rein cannot be sure, so it asks.
        std::fs::write(ws.join("s/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(discover(&ws.join("s"), &ws).is_err());
    }
}
