//! After each command: git repositories a command made, or changed, anywhere in the workspace.
//! The person's git uses one whenever they work in its folder (a shell prompt that shows the
//! branch runs `git status` on `cd`; editors look for repositories in subfolders), and it obeys
//! the configuration and hooks found there (`core.fsmonitor`, `post-index-change`, …) as the
//! person, outside the sandbox. A repository is a folder holding `.git`, or a folder git takes
//! for a git directory itself (`HEAD` with `objects` or `commondir`, what `git init --bare`
//! makes, which git uses when run inside it).
//!
//! Which folders to look at comes from inotify: the walk that finds the nested repositories
//! before the first command watches every folder it passes ([`NestedWalk::watching`]); after
//! each command the folders with events, and every folder below one made, are looked at. What
//! the watch cannot tell (a folder renamed, the event queue overflowed, the watch limit) makes
//! the next look a walk of the whole workspace, which watches anew. A repository found before
//! the first command is the person's and protected by the mounts (or restored by the
//! tripwire); every other one found is vetted like a submodule a command made
//! (`gitlinks::vet`), again after every later command; an unsafe one loses its `.git` (or its
//! `HEAD`) to a name git ignores, and the model and the person are told.
//!
//! [`NestedWalk::watching`]: super::git::NestedWalk::watching

use super::git::FileId;
use super::gitlinks::{GitDir, git_dir_of, move_aside, shown_in, vet, was_moved_aside};
use crate::checkpoint::watch::{Dirty, Watch};
use std::collections::{BTreeSet, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A repository the look found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// A folder holding `.git`.
    DotGit(PathBuf),
    /// A folder git takes for a git directory.
    GitDir(PathBuf),
}

/// The look for repositories made after the first command's walk, kept for the session.
#[derive(Debug)]
pub(crate) struct RepoWatch {
    /// The workspace (canonical).
    ws: PathBuf,
    /// Every folder of the workspace outside `.git` directories (`None`: not known, so the
    /// next look walks everything).
    watch: Option<Watch>,
    /// Repositories vetted and found safe: looked at again after every command.
    known: BTreeSet<Place>,
}

impl RepoWatch {
    /// The look for `ws`, from the watch its first walk built (`None`: incomplete).
    pub(crate) fn new(ws: &Path, watch: Option<Watch>) -> RepoWatch {
        if watch.is_none() {
            tracing::debug!("sandbox: no complete watch of the workspace; each look walks it");
        }
        RepoWatch {
            ws: ws.to_path_buf(),
            watch,
            known: BTreeSet::new(),
        }
    }

    /// Looks at what changed since the last look; the notes for the model and the person.
    /// `found`: the nested `.git` entries found before the first command, with identities.
    pub(crate) fn check(&mut self, found: &[(PathBuf, FileId)]) -> Vec<String> {
        let mut places = BTreeSet::new();
        let mut looked_up = HashSet::new();
        for dir in self.touched() {
            self.places_at(&dir, &mut places, &mut looked_up);
        }
        places.extend(self.known.iter().cloned());
        let mut notes = Vec::new();
        for place in places {
            match self.judge(&place, found) {
                Ok(false) => {
                    self.known.remove(&place);
                }
                Ok(true) => {
                    self.known.insert(place);
                }
                Err(why) => {
                    self.known.remove(&place);
                    notes.extend(self.move_aside(&place, &why));
                }
            }
        }
        notes
    }

    /// The folders to look at: those with events since the last look and every folder below
    /// one made; every folder when the watch cannot tell.
    fn touched(&mut self) -> Vec<PathBuf> {
        let dirty = match &mut self.watch {
            Some(watch) => watch.take(),
            None => Dirty::All,
        };
        let dirs = match dirty {
            Dirty::Dirs(dirs) => dirs,
            Dirty::All => {
                let mut watch = Watch::keeping_created(&self.ws);
                let mut out = Vec::new();
                let complete = walk(&self.ws, Path::new(""), watch.as_mut(), &mut out);
                self.watch = watch.filter(|_| complete);
                return out;
            }
        };
        let created = self
            .watch
            .as_mut()
            .map(Watch::take_created)
            .unwrap_or_default();
        let mut out: Vec<PathBuf> = dirs.iter().map(|d| self.ws.join(d)).collect();
        for rel in created {
            let complete = walk(&self.ws, Path::new(&rel), self.watch.as_mut(), &mut out);
            if !complete {
                self.watch = None;
            }
        }
        out
    }

    /// The repositories a change in `dir` may have made or changed: `dir/.git`, `dir` or a
    /// folder above it taken for a git directory. `looked_up`: folders above already seen.
    fn places_at(
        &self,
        dir: &Path,
        places: &mut BTreeSet<Place>,
        looked_up: &mut HashSet<PathBuf>,
    ) {
        // The workspace's own `.git` is guarded as a whole (the mounts, the tripwire).
        if dir != self.ws && std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            places.insert(Place::DotGit(dir.to_path_buf()));
        }
        for up in dir.ancestors().take_while(|a| a.starts_with(&self.ws)) {
            if up != dir && !looked_up.insert(up.to_path_buf()) {
                break;
            }
            if is_moved_aside(up) {
                continue;
            }
            if is_git_dir_shaped(up) {
                places.insert(Place::GitDir(up.to_path_buf()));
            }
        }
    }

    /// Whether `place` is a repository (`Ok(true)`: a safe one, or the person's own), or why
    /// it could run a program when git is used there.
    fn judge(&self, place: &Place, found: &[(PathBuf, FileId)]) -> Result<bool, String> {
        match place {
            Place::DotGit(dir) => {
                if self.is_found(dir, found) {
                    return Ok(true);
                }
                match git_dir_of(&dir.join(".git"), dir) {
                    GitDir::None => Ok(false),
                    GitDir::Unreadable(why) => Err(why.to_string()),
                    GitDir::Dir(gitdir) => vet(&gitdir).map(|()| true),
                }
            }
            Place::GitDir(dir) if is_git_dir_shaped(dir) => vet(dir).map(|()| true),
            Place::GitDir(_) => Ok(false),
        }
    }

    /// Whether `dir/.git` is one found before the first command: same path, same identity.
    fn is_found(&self, dir: &Path, found: &[(PathBuf, FileId)]) -> bool {
        let Ok(rel) = dir
            .join(".git")
            .strip_prefix(&self.ws)
            .map(Path::to_path_buf)
        else {
            return false;
        };
        let Ok(i) = found.binary_search_by(|(p, _)| p.cmp(&rel)) else {
            return false;
        };
        std::fs::symlink_metadata(dir.join(".git")).is_ok_and(|m| (m.dev(), m.ino()) == found[i].1)
    }

    /// Moves the `.git` (or the `HEAD`) of an unsafe repository aside; the note.
    fn move_aside(&self, place: &Place, why: &str) -> Option<String> {
        let (dir, entry, kind) = match place {
            Place::DotGit(dir) => (dir, dir.join(".git"), "git repository"),
            Place::GitDir(dir) => (dir, dir.join("HEAD"), "git directory (`HEAD`, `objects`)"),
        };
        let what = format!(
            "a command made or changed the {kind} at `{}`, which the user's git uses whenever \
             they work in that folder (a shell prompt showing the branch runs it on `cd`), \
             outside the sandbox; {why}, which git would run",
            shown_in(&self.ws, dir)
        );
        move_aside(&self.ws, &entry, &what)
    }
}

/// Whether git could take `dir` for a git directory: a `HEAD` with `objects` or `commondir`
/// beside it (git also wants `refs` and a well-formed `HEAD`; asking less only vets more).
fn is_git_dir_shaped(dir: &Path) -> bool {
    let has = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    has("HEAD") && (has("objects") || has("commondir"))
}

/// Whether the entry at `path` is a `.git` rein moved aside (for the person to look at; what a
/// command names so is looked at like any other folder).
fn is_moved_aside(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().contains(".rein-unsafe"))
        && std::fs::symlink_metadata(path).is_ok_and(|m| was_moved_aside(&m))
}

/// Every folder at and below `rel` in `ws`, not entering `.git` directories (nor those rein
/// moved aside) nor following links, into `out` (absolute); each is watched before it is read. Whether every folder could
/// be watched.
fn walk(ws: &Path, rel: &Path, mut watch: Option<&mut Watch>, out: &mut Vec<PathBuf>) -> bool {
    let mut complete = true;
    let mut stack = vec![rel.to_path_buf()];
    while let Some(rel) = stack.pop() {
        if let Some(w) = watch.as_deref_mut()
            && !rel.to_str().is_some_and(|r| w.add(r))
        {
            complete = false;
        }
        let dir = ws.join(&rel);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        out.push(dir);
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name != ".git"
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && !is_moved_aside(&entry.path())
            {
                stack.push(rel.join(entry.file_name()));
            }
        }
    }
    complete
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// The temp dir, the workspace in it, its look and the nested repositories found.
    type Armed = (
        tempfile::TempDir,
        PathBuf,
        RepoWatch,
        Vec<(PathBuf, FileId)>,
    );

    /// A workspace with one nested repository, looked at as the first command's walk does.
    fn armed() -> Option<Armed> {
        let dir = tempfile::tempdir().ok()?;
        let ws = dir.path().canonicalize().ok()?;
        std::fs::create_dir_all(ws.join("old/src")).ok()?;
        if !git(&ws.join("old"), &["init", "-q", "."]) {
            return None;
        }
        let mut walk = super::super::git::NestedWalk::watching(&ws);
        assert!(walk.run(&ws, usize::MAX));
        let repos = RepoWatch::new(&ws, walk.take_watch());
        assert!(repos.watch.is_some(), "no inotify here");
        Some((dir, ws, repos, walk.finish_identified()))
    }

    #[test]
    fn a_repository_made_deep_in_a_new_folder_is_vetted_and_an_unsafe_one_moved_aside() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let deep = ws.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(git(&deep, &["init", "-q", "."]));
        assert!(git(&deep, &["config", "core.fsmonitor", "touch x"]));
        let notes = repos.check(&found);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("`a/b/c`") && notes[0].contains("core.fsmonitor"));
        assert!(deep.join(".git.rein-unsafe").is_dir() && !deep.join(".git").exists());
        // Nothing new: nothing said; the person's own repository is never touched.
        assert!(git(
            &ws.join("old"),
            &["config", "core.fsmonitor", "touch y"]
        ));
        assert_eq!(repos.check(&found), Vec::<String>::new());
    }

    #[test]
    fn a_safe_repository_is_looked_at_again_after_every_command() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let lib = ws.join("lib");
        std::fs::create_dir(&lib).unwrap();
        assert!(git(&lib, &["init", "-q", "."]));
        assert_eq!(repos.check(&found), Vec::<String>::new());
        std::fs::create_dir_all(lib.join(".git/hooks")).unwrap();
        std::fs::write(lib.join(".git/hooks/post-index-change"), "#!/bin/sh\n").unwrap();
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("post-index-change"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_folder_made_into_a_git_directory_loses_its_head() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let bare = ws.join("old/src/x");
        std::fs::create_dir_all(bare.join("objects")).unwrap();
        std::fs::create_dir_all(bare.join("refs")).unwrap();
        std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(bare.join("config"), "[core]\n\tbare = true\n").unwrap();
        assert_eq!(repos.check(&found), Vec::<String>::new());
        std::fs::write(bare.join("config"), "[core]\n\tworktree = ..\n").unwrap();
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("core.worktree"),
            "{notes:?}"
        );
        assert!(bare.join("HEAD.rein-unsafe").is_file() && !bare.join("HEAD").exists());
    }

    #[test]
    fn a_renamed_folder_makes_the_next_look_a_whole_walk_that_finds_it() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        std::fs::create_dir_all(ws.join("p/q")).unwrap();
        assert_eq!(repos.check(&found), Vec::<String>::new());
        assert!(git(&ws.join("p/q"), &["init", "-q", "."]));
        assert!(git(&ws.join("p/q"), &["config", "core.pager", "sh"]));
        std::fs::rename(ws.join("p"), ws.join("r")).unwrap();
        let notes = repos.check(&found);
        assert!(notes.len() == 1 && notes[0].contains("`r/q`"), "{notes:?}");
        assert!(repos.watch.is_some(), "watched anew");
    }

    #[test]
    fn a_folder_named_like_one_moved_aside_is_looked_at_all_the_same() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let dir = ws.join("n/.git.rein-unsafe");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(git(&dir, &["init", "-q", "--bare", "."]));
        assert!(git(&dir, &["config", "core.worktree", ".."]));
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("core.worktree"),
            "{notes:?}"
        );
        assert!(dir.join("HEAD.rein-unsafe").is_file());
    }
}
