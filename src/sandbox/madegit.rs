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
//! Mercurial's `.hg` and Jujutsu's `.jj` run programs their configuration names too (hg's
//! `[hooks]` on every command, `[extensions]`; jj's signing and diff programs): their
//! configuration files (`.hg/hgrc`, `hgrc-not-shared`, `sharedpath`, `.jj/repo/config.toml`)
//! are looked at whenever something in them changed. One found before the first command keeps
//! them as they were (a change is put back, the command's version kept beside it); a new one
//! may hold only what `hg clone` writes (its `[paths]`), else it is moved aside.
//!
//! A link a command makes is followed: the repository git would find where it leads is judged
//! too, as the person may `cd` through it into a place no walk enters.
//!
//! [`NestedWalk::watching`]: super::git::NestedWalk::watching

use super::git::FileId;
use super::gitlinks::{
    GitDir, MAX_CONFIG, git_dir_of, move_aside, rename_aside, shown_in, vet, was_moved_aside,
};
use crate::checkpoint::watch::{Dirty, Watch};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A repository the look found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// A folder holding `.git`.
    DotGit(PathBuf),
    /// A folder git takes for a git directory.
    GitDir(PathBuf),
    /// Another version control system's metadata directory (`.hg`, `.jj`).
    OtherVcs(PathBuf),
}

/// The configuration files of a metadata directory found before the first command, as they
/// were then (`None`: missing), by their path inside it.
type Kept = BTreeMap<PathBuf, Option<Vec<u8>>>;

/// The look for repositories made after the first command's walk, kept for the session.
#[derive(Debug)]
pub(crate) struct RepoWatch {
    /// The workspace (canonical).
    ws: PathBuf,
    /// Every folder of the workspace but the git directories of the person's submodules and
    /// worktrees (`None`: not known, so the next look walks everything).
    watch: Option<Watch>,
    /// Repositories vetted and found safe: looked at again after every command.
    known: BTreeSet<Place>,
    /// The other version control systems' directories found before the first command, with
    /// their configuration then.
    other_found: BTreeMap<PathBuf, Kept>,
    /// Links commands made to a folder (or to nothing yet): where they lead is looked at again
    /// after every command (a repository may be built there later, where no watch sees it).
    links: BTreeSet<PathBuf>,
}

/// The most links kept for looking at again (a command making more only slows itself: each
/// new one is still looked at once, when it is made).
const MAX_LINKS: usize = 4096;

/// What a look found to judge: folders with events (or below one made) and new links.
#[derive(Default)]
struct Touched {
    dirs: Vec<PathBuf>,
    links: Vec<PathBuf>,
}

impl RepoWatch {
    /// The look for `ws`, from the watch its first walk built (`None`: incomplete) and the
    /// other version control systems' directories it found (relative to `ws`).
    pub(crate) fn new(ws: &Path, watch: Option<Watch>, other_vcs: &[PathBuf]) -> RepoWatch {
        if watch.is_none() {
            tracing::debug!("sandbox: no complete watch of the workspace; each look walks it");
        }
        let other_found = other_vcs
            .iter()
            .map(|rel| {
                let dir = ws.join(rel);
                let kept = vcs_config(&dir);
                (dir, kept)
            })
            .collect();
        RepoWatch {
            ws: ws.to_path_buf(),
            watch,
            known: BTreeSet::new(),
            other_found,
            links: BTreeSet::new(),
        }
    }

    /// Looks at what changed since the last look; the notes for the model and the person.
    /// `found`: the nested `.git` entries found before the first command, with identities.
    pub(crate) fn check(&mut self, found: &[(PathBuf, FileId)]) -> Vec<String> {
        let mut places = BTreeSet::new();
        let mut looked_up = HashSet::new();
        let touched = self.touched();
        for dir in &touched.dirs {
            self.places_at(dir, &mut places, &mut looked_up);
        }
        self.follow_links(touched.links, found, &mut places);
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
                    notes.push(self.move_aside(&place, &why));
                    // Not moved (the note says so): looked at, and said, again next time.
                    if self.still_there(&place) {
                        self.known.insert(place);
                    } else {
                        self.known.remove(&place);
                    }
                }
            }
        }
        notes
    }

    /// The folders to look at: those with events since the last look and every folder below
    /// one made; every folder when the watch cannot tell; and the links among what was made.
    fn touched(&mut self) -> Touched {
        let dirty = match &mut self.watch {
            Some(watch) => watch.take(),
            None => Dirty::All,
        };
        let mut out = Touched::default();
        let dirs = match dirty {
            Dirty::Dirs(dirs) => dirs,
            Dirty::All => {
                let mut watch = Watch::keeping_created(&self.ws);
                let complete = walk(&self.ws, Path::new(""), watch.as_mut(), &mut out);
                self.watch = watch.filter(|_| complete);
                return out;
            }
        };
        let (created, entries) = self
            .watch
            .as_mut()
            .map(Watch::take_created)
            .unwrap_or_default();
        out.dirs = dirs.iter().map(|d| self.ws.join(d)).collect();
        out.links = entries
            .iter()
            .map(|rel| self.ws.join(rel))
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
            .collect();
        for rel in created {
            let rel = Path::new(&rel);
            if is_persons_git_dir(rel) {
                continue;
            }
            let complete = walk(&self.ws, rel, self.watch.as_mut(), &mut out);
            if !complete {
                self.watch = None;
            }
        }
        out
    }

    /// Where each new link (and each kept one) leads: the repository git would use there, as
    /// git finds it, goes to `places`. A link to a folder, or to nothing yet, is kept.
    fn follow_links(
        &mut self,
        new: Vec<PathBuf>,
        found: &[(PathBuf, FileId)],
        places: &mut BTreeSet<Place>,
    ) {
        let kept = std::mem::take(&mut self.links);
        for link in kept.into_iter().chain(new) {
            let Ok(meta) = std::fs::symlink_metadata(&link) else {
                continue;
            };
            let target = super::paths::canonicalize(&link).ok();
            if !meta.is_symlink() || target.as_ref().is_some_and(|t| !t.is_dir()) {
                continue;
            }
            if let Some(place) = target.and_then(|t| self.discover(&t, found)) {
                places.insert(place);
            }
            if self.links.len() < MAX_LINKS {
                self.links.insert(link);
            }
        }
    }

    /// The repository git would use in the folder `dir` (canonical), as git finds it: each
    /// level's `.git`, then the level as a git directory, up to the workspace (whose own is
    /// guarded as a whole); a git directory's inside, or the person's submodules' and
    /// worktrees' own, is nothing to judge.
    fn discover(&self, dir: &Path, found: &[(PathBuf, FileId)]) -> Option<Place> {
        for level in dir.ancestors() {
            if !level.starts_with(&self.ws) || level == self.ws {
                return None;
            }
            if level.file_name().is_some_and(|n| n == ".git") {
                return None;
            }
            if std::fs::symlink_metadata(level.join(".git")).is_ok() {
                return Some(Place::DotGit(level.to_path_buf()));
            }
            if is_git_dir_shaped(level) {
                return (!self.is_persons_module(level, found))
                    .then(|| Place::GitDir(level.to_path_buf()));
            }
        }
        None
    }

    /// Whether `dir` is the git directory of a submodule or worktree of the workspace's or a
    /// found repository (in its `.git`'s `modules` or `worktrees`).
    fn is_persons_module(&self, dir: &Path, found: &[(PathBuf, FileId)]) -> bool {
        let in_list = dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "modules" || n == "worktrees");
        let dot_git = dir
            .ancestors()
            .skip(1)
            .find(|a| a.file_name().is_some_and(|n| n == ".git"));
        in_list
            && dot_git.is_some_and(|g| {
                g == self.ws.join(".git") || g.parent().is_some_and(|p| self.is_found(p, found))
            })
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
        for name in OTHER_VCS {
            if std::fs::symlink_metadata(dir.join(name)).is_ok() {
                places.insert(Place::OtherVcs(dir.join(name)));
            }
        }
        for up in dir.ancestors().take_while(|a| a.starts_with(&self.ws)) {
            if up != dir && !looked_up.insert(up.to_path_buf()) {
                break;
            }
            if is_moved_aside(up) {
                continue;
            }
            if up.file_name().is_some_and(is_other_vcs) {
                places.insert(Place::OtherVcs(up.to_path_buf()));
            }
            // A `.git` directory is its parent's repository (`DotGit`), never judged alone.
            if up.file_name().is_none_or(|n| n != ".git") && is_git_dir_shaped(up) {
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
                    // A link to nothing yet is looked at again after every command: what it
                    // names may be made later, where no watch sees it.
                    GitDir::None => Ok(std::fs::symlink_metadata(dir.join(".git")).is_ok()),
                    GitDir::Unreadable(why) => Err(why.to_string()),
                    GitDir::Dir(gitdir) => vet(&gitdir).map(|()| true),
                }
            }
            Place::GitDir(dir) if is_git_dir_shaped(dir) => vet(dir).map(|()| true),
            Place::GitDir(_) => Ok(false),
            Place::OtherVcs(dir) => match self.other_found.get(dir) {
                Some(kept) if vcs_config(dir) == *kept => Ok(true),
                Some(_) => Err("its configuration changed".into()),
                None if std::fs::symlink_metadata(dir).is_err() => Ok(false),
                None => vet_other_vcs(dir).map(|()| true),
            },
        }
    }

    /// Whether `dir/.git` is one found before the first command: the same identity, wherever
    /// it is now (a command may rename the folder holding it; it is still the person's).
    fn is_found(&self, dir: &Path, found: &[(PathBuf, FileId)]) -> bool {
        let dot_git = dir.join(".git");
        std::fs::symlink_metadata(&dot_git).is_ok_and(|m| {
            let id = super::git::file_id(&dot_git, &m);
            found.iter().any(|(_, found)| *found == id)
        })
    }

    /// Whether what `move_aside` would move for `place` is still where it was.
    fn still_there(&self, place: &Place) -> bool {
        let entry = match place {
            Place::DotGit(dir) => dir.join(".git"),
            Place::GitDir(dir) => dir.join("HEAD"),
            Place::OtherVcs(meta) => meta.clone(),
        };
        std::fs::symlink_metadata(entry).is_ok()
    }

    /// Moves the `.git` (or the `HEAD`, or the `.hg`) of an unsafe repository aside, or puts
    /// back the configuration of one found before the first command; the note.
    fn move_aside(&self, place: &Place, why: &str) -> String {
        let (dir, entry, kind) = match place {
            Place::DotGit(dir) => (dir, dir.join(".git"), "git repository"),
            Place::GitDir(dir) => (dir, dir.join("HEAD"), "git directory (`HEAD`, `objects`)"),
            Place::OtherVcs(meta) => {
                if let Some(kept) = self.other_found.get(meta) {
                    return self.put_back(meta, kept);
                }
                let what = format!(
                    "a command made the repository `{}`, whose program (a hook, an extension) the \
                     user's own tools would run outside the sandbox when they work in that folder; \
                     {why}",
                    shown_in(&self.ws, meta)
                );
                return move_aside(&self.ws, meta, &what);
            }
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

impl RepoWatch {
    /// Puts the configuration of `meta` (found before the first command) back as it was,
    /// keeping what the command made beside it; the note.
    fn put_back(&self, meta: &Path, kept: &Kept) -> String {
        let mut failed = Vec::new();
        // Never through a link a command put there: rein would write where it leads.
        let plain_dir = std::fs::symlink_metadata(meta).is_ok_and(|m| m.is_dir());
        let now = vcs_config(meta);
        // Each file kept, and each that appeared (none was kept for it).
        let names: BTreeSet<&PathBuf> = kept.keys().chain(now.keys()).collect();
        for rel in names {
            let before = kept.get(rel).cloned().flatten();
            let path = meta.join(rel);
            if read_small(&path) == before {
                continue;
            }
            let not_moved = !plain_dir
                || (std::fs::symlink_metadata(&path).is_ok() && rename_aside(&path).is_err());
            let written =
                before.is_none_or(|bytes| plain_dir && std::fs::write(&path, bytes).is_ok());
            if not_moved || !written {
                failed.push(shown_in(&self.ws, &path));
            }
        }
        let shown = shown_in(&self.ws, meta);
        match failed.is_empty() {
            true => format!(
                "[a command changed the configuration of the repository `{shown}`, which the \
                 user's own tools obey outside the sandbox; rein put it back as it was and kept \
                 the command's version beside it (`*.rein-unsafe`): look at it before using it.]"
            ),
            false => format!(
                "[a command changed the configuration of the repository `{shown}`, which the \
                 user's own tools obey outside the sandbox; rein could not put back {}: check \
                 them before anyone runs a version control command there.]",
                failed.join(", ")
            ),
        }
    }
}

/// The other version control systems whose metadata directories are looked at.
const OTHER_VCS: [&str; 2] = [".hg", ".jj"];

/// Whether `name` is another version control system's metadata directory.
pub(super) fn is_other_vcs(name: &std::ffi::OsStr) -> bool {
    OTHER_VCS.iter().any(|v| name == *v)
}

/// The files in `.hg` that Mercurial reads configuration from (`sharedpath`: another
/// repository's).
const HG_CONFIG: [&str; 3] = ["hgrc", "hgrc-not-shared", "sharedpath"];

/// The configuration files of the metadata directory `meta` now: `.hg`'s [`HG_CONFIG`],
/// `.jj`'s `repo/config.toml` and a `repo` that is not a directory (one unreadable or too
/// large counts as its name).
fn vcs_config(meta: &Path) -> Kept {
    let mut kept = Kept::new();
    if meta.file_name().is_some_and(|n| n == ".jj") {
        // A `repo` that is not a directory names another repository, whose configuration jj
        // then reads: counted as a configuration of its own.
        if std::fs::symlink_metadata(meta.join("repo")).is_ok_and(|m| !m.is_dir()) {
            kept.insert("repo".into(), read_small(&meta.join("repo")));
        }
        let rel = PathBuf::from("repo/config.toml");
        if let Some(bytes) = read_small(&meta.join(&rel)) {
            kept.insert(rel, Some(bytes));
        }
        return kept;
    }
    for name in HG_CONFIG {
        kept.insert(name.into(), read_small(&meta.join(name)));
    }
    kept.retain(|_, v| v.is_some());
    kept
}

/// A small file's bytes; `None` when missing; something else (a directory, a link, a large
/// file) as a marker no file can equal.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_CONFIG {
        return Some(
            format!("\0not a small file: {:?} {}", meta.file_type(), meta.ino()).into_bytes(),
        );
    }
    std::fs::read(path).ok()
}

/// Why the new metadata directory `meta` could run a program, if it could: Mercurial's may
/// hold only `[paths]` (what `hg clone` writes) and share no other repository; Jujutsu's no
/// repository configuration at all (`jj git init` and `clone` write none).
fn vet_other_vcs(meta: &Path) -> Result<(), String> {
    // Neither makes its metadata a link, nor jj its `repo` a file (a file there names another
    // repository, which jj then uses).
    if std::fs::symlink_metadata(meta).is_ok_and(|m| m.is_symlink()) {
        return Err("it is a symbolic link".into());
    }
    if std::fs::symlink_metadata(meta.join("repo")).is_ok_and(|m| !m.is_dir()) {
        return Err("its `repo` is not a plain directory (it names another repository)".into());
    }
    let config = vcs_config(meta);
    if meta.file_name().is_some_and(|n| n == ".jj") {
        return match config.is_empty() {
            true => Ok(()),
            false => Err("it has a repository configuration (`repo/config.toml`)".into()),
        };
    }
    for (rel, bytes) in &config {
        let name = rel.display();
        let Some(bytes) = bytes else { continue };
        if rel == Path::new("sharedpath") {
            return Err("it shares another repository's configuration (`sharedpath`)".into());
        }
        let text = std::str::from_utf8(bytes).map_err(|_| format!("its `{name}` is not text"))?;
        hgrc_only_paths(text).map_err(|line| format!("its `{name}` has `{line}`"))?;
    }
    Ok(())
}

/// Whether an `hgrc` holds nothing but the `[paths]` section (comments and blank lines aside);
/// the first other line when not.
fn hgrc_only_paths(text: &str) -> Result<(), String> {
    let mut in_paths = false;
    // Mercurial ends a line at a lone `\r` too.
    for line in text.split(['\n', '\r']) {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(section) = trimmed.strip_prefix('[') {
            in_paths = section.trim_end().strip_suffix(']').map(str::trim) == Some("paths");
            if in_paths {
                continue;
            }
        }
        // `%include`, `%unset`, any other section or a key outside `[paths]`.
        if !in_paths || trimmed.starts_with('%') {
            return Err(trimmed.chars().take(60).collect());
        }
    }
    Ok(())
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
        && std::fs::symlink_metadata(path).is_ok_and(|m| was_moved_aside(path, &m))
}

/// Every folder at and below `rel` in `ws`, into `out` (absolute); each is watched before it is
/// read. `.git` directories are entered too (a command may build a repository inside one,
/// where a link leads the person), but not their `modules` and `worktrees` (the person's
/// submodules' and worktrees' own git directories); so are `.hg` and `.jj`; no link is
/// followed (links go to `out.links`), nor what rein moved aside entered. Whether every
/// folder could be watched.
fn walk(ws: &Path, rel: &Path, mut watch: Option<&mut Watch>, out: &mut Touched) -> bool {
    let mut complete = true;
    let mut stack = vec![rel.to_path_buf()];
    while let Some(rel) = stack.pop() {
        let dir = ws.join(&rel);
        // Opened first (made readable if a command took that away: watching needs it too),
        // watched, then read: what is made after the watch is an event, before it an entry.
        let entries = read_dir_owned(&dir);
        if let Some(w) = watch.as_deref_mut()
            && !rel.to_str().is_some_and(|r| w.add(r))
        {
            complete = false;
        }
        let Some(entries) = entries else {
            continue;
        };
        out.dirs.push(dir.clone());
        for entry in entries.flatten() {
            let name = entry.file_name();
            let kind = entry.file_type();
            if kind.as_ref().is_ok_and(|t| t.is_symlink()) {
                out.links.push(dir.join(&name));
            }
            if !kind.is_ok_and(|t| t.is_dir()) || is_persons_git_dir(&rel.join(&name)) {
                continue;
            }
            if !is_moved_aside(&entry.path()) {
                stack.push(rel.join(name));
            }
        }
    }
    complete
}

/// Whether `rel` lies in a `.git`'s `modules` or `worktrees`: the git directories of the
/// person's submodules and worktrees (with `core.worktree` or `commondir`, which a new one may
/// not have), made by their own `git submodule update` or `git worktree add` too.
pub(super) fn is_persons_git_dir(rel: &Path) -> bool {
    let parts: Vec<_> = rel.iter().collect();
    parts
        .windows(2)
        .any(|w| w[0] == ".git" && (w[1] == "modules" || w[1] == "worktrees"))
}

/// The entries of `dir`; one the person owns that a command made unreadable (`chmod 111`: git
/// still works below it) is made readable for the person first.
fn read_dir_owned(dir: &Path) -> Option<std::fs::ReadDir> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            give_owner_access(dir);
            std::fs::read_dir(dir)
                .map_err(|e| tracing::warn!("sandbox: cannot read {}: {e}", dir.display()))
                .ok()
        }
        Err(_) => None,
    }
}

/// Gives the person (rein's user) read, write and search access to `dir` when they own it.
pub(super) fn give_owner_access(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.is_dir() && meta.uid() == me {
        let mode = meta.permissions().mode() | 0o700;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
    }
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
        let repos = RepoWatch::new(&ws, walk.take_watch(), &walk.other_vcs);
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

    /// In the fallback (no read-only binds), a command deletes the person's nested `.git` and
    /// makes another `.git` elsewhere, which gets its inode number (ext4 gives the freed one
    /// to the next folder made): it is not taken for the person's, and is judged.
    #[test]
    fn a_git_folder_given_the_inode_of_the_persons_is_judged_all_the_same() {
        use std::os::unix::fs::MetadataExt;
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let ino = std::fs::symlink_metadata(ws.join("old/.git"))
            .unwrap()
            .ino();
        let dir = ws.join("n");
        std::fs::create_dir(&dir).unwrap();
        std::fs::remove_dir_all(ws.join("old/.git")).unwrap();
        let Some(reused) = super::super::git::folder_with_inode(&dir, ino) else {
            return;
        };
        std::fs::rename(reused, dir.join(".git")).unwrap();
        assert!(git(&dir, &["init", "-q", "."]));
        assert!(git(&dir, &["config", "core.fsmonitor", "touch x"]));
        let notes = repos.check(&found);
        assert!(
            notes.iter().any(|n| n.contains("core.fsmonitor")),
            "{notes:?}"
        );
        assert!(dir.join(".git.rein-unsafe").is_dir());
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

    /// A folder made where rein moved one aside, after that one was deleted, may get its inode
    /// number: it is looked at all the same (the multi-threaded test run saw it happen between
    /// two tests; a command could make folders until one does).
    #[test]
    fn a_folder_given_the_inode_of_one_moved_aside_is_looked_at_all_the_same() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join(".git");
        std::fs::create_dir(&made).unwrap();
        std::fs::write(made.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        move_aside(dir.path(), &made, "test");
        let aside = dir.path().join(".git.rein-unsafe");
        let id = std::fs::symlink_metadata(&aside).unwrap().ino();
        assert!(is_moved_aside(&aside), "rein's own is known");
        let made = dir.path().join("made");
        std::fs::create_dir(&made).unwrap();
        std::fs::remove_dir_all(&aside).unwrap();
        if let Some(reused) = super::super::git::folder_with_inode(&made, id) {
            let candidate = dir.path().join("n.rein-unsafe");
            std::fs::rename(reused, &candidate).unwrap();
            assert!(!is_moved_aside(&candidate), "a new folder taken for rein's");
        }
        // Changed since it was moved aside: looked at again.
        let again = dir.path().join("again");
        std::fs::create_dir(&again).unwrap();
        move_aside(dir.path(), &again, "test");
        let aside = dir.path().join("again.rein-unsafe");
        assert!(is_moved_aside(&aside));
        std::fs::write(aside.join("x"), "").unwrap();
        assert!(!is_moved_aside(&aside));
    }

    #[test]
    fn a_new_mercurial_or_jujutsu_repository_may_hold_only_what_a_clone_writes() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        for (dir, file, text) in [
            (
                "hg-ok/.hg",
                "hgrc",
                "# clone\n[paths]\ndefault = https://example.com/r\n",
            ),
            (
                "hg-bad/.hg",
                "hgrc",
                "[paths]\ndefault = x\n[hooks]\npre-status = sh\n",
            ),
            ("hg-inc/.hg", "hgrc", "[paths]\n%include /tmp/x\n"),
            (
                "jj-bad/.jj/repo",
                "config.toml",
                "[signing]\nbehavior = 'own'\n",
            ),
        ] {
            std::fs::create_dir_all(ws.join(dir).join("store")).unwrap();
            std::fs::write(ws.join(dir).join(file), text).unwrap();
        }
        std::fs::create_dir_all(ws.join("jj-ok/.jj/repo/store")).unwrap();
        let notes = repos.check(&found).join("\n");
        for bad in ["hg-bad", "hg-inc", "jj-bad"] {
            assert!(notes.contains(&format!("`{bad}/.")), "{bad}: {notes}");
        }
        assert!(ws.join("hg-bad/.hg.rein-unsafe/hgrc").is_file());
        assert!(ws.join("jj-bad/.jj.rein-unsafe").is_dir());
        assert!(ws.join("hg-ok/.hg/hgrc").is_file() && ws.join("jj-ok/.jj").is_dir());
        assert!(
            !notes.contains("hg-ok") && !notes.contains("jj-ok"),
            "{notes}"
        );
        // Given a hook later, a safe one is moved aside then.
        std::fs::write(ws.join("hg-ok/.hg/hgrc"), "[extensions]\nx = /tmp/x.py\n").unwrap();
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("[extensions]"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_mercurial_repository_found_first_gets_its_configuration_back() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".hg/store")).unwrap();
        let own = "[hooks]\nprecommit = ./check.sh\n";
        std::fs::write(ws.join(".hg/hgrc"), own).unwrap();
        let mut walk = super::super::git::NestedWalk::watching(&ws);
        assert!(walk.run(&ws, usize::MAX));
        let mut repos = RepoWatch::new(&ws, walk.take_watch(), &walk.other_vcs);
        // The person's own hooks stay; hg's own writes are nothing to say.
        std::fs::write(ws.join(".hg/dirstate"), "x").unwrap();
        assert_eq!(repos.check(&[]), Vec::<String>::new());
        let planted = format!("{own}pre-status = touch /tmp/pwn\n");
        std::fs::write(ws.join(".hg/hgrc"), &planted).unwrap();
        std::fs::write(ws.join(".hg/hgrc-not-shared"), "[hooks]\n").unwrap();
        let notes = repos.check(&[]);
        assert!(
            notes.len() == 1 && notes[0].contains("put it back"),
            "{notes:?}"
        );
        assert_eq!(std::fs::read_to_string(ws.join(".hg/hgrc")).unwrap(), own);
        assert_eq!(
            std::fs::read_to_string(ws.join(".hg/hgrc.rein-unsafe")).unwrap(),
            planted
        );
        assert!(!ws.join(".hg/hgrc-not-shared").exists());
        assert_eq!(repos.check(&[]), Vec::<String>::new());
    }

    #[test]
    fn the_persons_own_submodule_and_worktree_git_directories_are_left_alone() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        // What the person's `git submodule update` and `git worktree add` make meanwhile.
        for (dir, key) in [
            ("old/.git/modules/m", "core.worktree"),
            ("old/.git/worktrees/w", "core.bare"),
        ] {
            let d = ws.join(dir);
            std::fs::create_dir_all(&d).unwrap();
            assert!(git(&d, &["init", "-q", "--bare", "."]));
            assert!(git(&d, &["config", key, "../../../m"]) || key == "core.bare");
            std::fs::write(d.join("commondir"), "../..\n").unwrap();
        }
        assert_eq!(repos.check(&found), Vec::<String>::new());
        // Elsewhere in a `.git`, the same is a command's: vetted.
        let d = ws.join("old/.git/objects/zz");
        std::fs::create_dir_all(&d).unwrap();
        assert!(git(&d, &["init", "-q", "--bare", "."]));
        assert!(git(&d, &["config", "core.worktree", "../../.."]));
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("core.worktree"),
            "{notes:?}"
        );
    }

    #[test]
    fn mercurial_line_ends_links_and_a_jj_repo_file_are_caught() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let cr = ws.join("cr/.hg");
        std::fs::create_dir_all(&cr).unwrap();
        std::fs::write(
            cr.join("hgrc"),
            "[paths]\ndefault = x\r[hooks]\rpre-status = touch /tmp/x\n",
        )
        .unwrap();
        std::fs::create_dir_all(ws.join("hgdata")).unwrap();
        std::fs::create_dir(ws.join("ln")).unwrap();
        std::os::unix::fs::symlink("../hgdata", ws.join("ln/.hg")).unwrap();
        std::fs::create_dir_all(ws.join("dangle")).unwrap();
        std::os::unix::fs::symlink("../nowhere", ws.join("dangle/.hg")).unwrap();
        std::fs::create_dir_all(ws.join("jf/.jj")).unwrap();
        std::fs::write(ws.join("jf/.jj/repo"), "/elsewhere/.jj/repo").unwrap();
        let notes = repos.check(&found).join("\n");
        for (dir, why) in [
            ("cr/.hg", "[hooks]"),
            ("ln/.hg", "symbolic link"),
            ("dangle/.hg", "symbolic link"),
            ("jf/.jj", "`repo`"),
        ] {
            assert!(
                notes.contains(&format!("`{dir}`")) && notes.contains(why),
                "{dir}: {notes}"
            );
        }
    }

    #[test]
    fn a_repository_inside_one_moved_aside_is_judged_through_a_link() {
        let Some((_d, ws, mut repos, found)) = armed() else {
            return;
        };
        let bad = ws.join("bad");
        std::fs::create_dir(&bad).unwrap();
        assert!(git(&bad, &["init", "-q", "."]));
        assert!(git(&bad, &["config", "core.pager", "sh"]));
        assert_eq!(repos.check(&found).len(), 1);
        let r = bad.join(".git.rein-unsafe/r");
        std::fs::create_dir(&r).unwrap();
        assert!(git(&r, &["init", "-q", "."]));
        assert!(git(&r, &["config", "core.pager", "sh"]));
        std::os::unix::fs::symlink("bad/.git.rein-unsafe/r", ws.join("tools")).unwrap();
        let notes = repos.check(&found);
        assert!(
            notes.len() == 1 && notes[0].contains("`bad/.git.rein-unsafe/r`"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_found_jj_whose_repo_becomes_a_pointer_gets_it_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".jj/repo/store")).unwrap();
        let mut walk = super::super::git::NestedWalk::watching(&ws);
        assert!(walk.run(&ws, usize::MAX));
        let mut repos = RepoWatch::new(&ws, walk.take_watch(), &walk.other_vcs);
        std::fs::rename(ws.join(".jj/repo"), ws.join("old-repo")).unwrap();
        std::fs::write(ws.join(".jj/repo"), "/tmp/elsewhere/.jj/repo").unwrap();
        let notes = repos.check(&[]);
        assert!(
            notes.len() == 1 && notes[0].contains("put it back"),
            "{notes:?}"
        );
        assert!(ws.join(".jj/repo.rein-unsafe").is_file() && !ws.join(".jj/repo").exists());
    }
}
