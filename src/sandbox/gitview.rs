//! A command's private view of the workspace's `.git` (with namespaces).
//!
//! git writes its small top-level files (`index`, `HEAD`, `packed-refs`, …) by writing
//! `X.lock` and renaming it over `X`, so `.git` itself must be writable, and a bind mount cannot
//! protect a name that does not exist yet (`commondir`). So rein builds, per command, a
//! directory of its own outside every writable tree, which the command sees as `.git`:
//! - `objects/`, `refs/`, `logs/` (data git writes in place) are bound from the real repository,
//!   writable;
//! - the allow-listed state files and directories (`index`, `HEAD`, `MERGE_MSG`, rebase state,
//!   …) are copies;
//! - everything else that exists (`config`, `hooks/`, `info/`, `modules/`, …) is bound
//!   read-only;
//! - anything the command creates lands in the view.
//!
//! After the command (all its processes are gone), rein copies back the allow-listed names that
//! changed (regular files and directories only, never following links), drops the rest and
//! says what it dropped. A planted `commondir` never exists in the real `.git`, not even for a
//! moment.

use super::git::{GitEntry, classify};
use super::stamp::{self, Id};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One copied file: how the real one and the copy looked when the view was made.
struct Copied {
    name: OsString,
    real: Id,
    copy: Id,
}

/// The view of one command.
pub(crate) struct GitView {
    /// The real `.git`.
    real: PathBuf,
    real_id: (u64, u64),
    /// The view (mounted over `.git` in the command's namespace).
    dir: PathBuf,
    /// Real entries bound into the view: name and whether writable.
    binds: Vec<(OsString, bool)>,
    files: Vec<Copied>,
    /// Copied directories.
    dirs: Vec<OsString>,
    /// Symbolic links copied as they were (never copied back).
    links: Vec<(OsString, PathBuf)>,
    /// How the real `.git` and the view looked after the last refresh, kept only when they
    /// and every copy had settled then: while all of it looks the same, so does the view.
    settled: Option<Settled>,
}

/// The stamps of the real `.git` and of the view after a refresh that left both settled.
#[derive(Clone, Copy)]
struct Settled {
    real: Id,
    view: Id,
}

/// Copies a regular file's content and permission bits into a new file at `to`, without
/// following links at either end, and with `owner` when rein is root.
fn copy_file(from: &Path, to: &Path, owner: (u32, u32)) -> io::Result<()> {
    let mut src = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)?;
    let meta = src.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut dst = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(meta.permissions().mode() & 0o777)
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)?;
    io::copy(&mut src, &mut dst)?;
    dst.set_permissions(std::fs::Permissions::from_mode(
        meta.permissions().mode() & 0o777,
    ))?;
    chown_if_root(to, owner);
    Ok(())
}

/// Gives `path` the owner of the real repository, so a command running as that user may work
/// on the copy (only possible, and only needed, when rein runs as root).
fn chown_if_root(path: &Path, (uid, gid): (u32, u32)) {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let _ = std::os::unix::fs::lchown(path, Some(uid), Some(gid));
    }
}

/// Copies a tree of regular files and directories (links and special files are left out).
fn copy_tree(from: &Path, to: &Path, owner: (u32, u32)) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    std::fs::create_dir(to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o777))?;
    chown_if_root(to, owner);
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if kind.is_dir() {
            copy_tree(&src, &dst, owner)?;
        } else if kind.is_file() {
            copy_file(&src, &dst, owner)?;
        }
    }
    Ok(())
}

/// The regular files and directories of a tree with their contents, for comparison; `None`
/// if it is not a directory.
fn tree_listing(dir: &Path) -> Option<Vec<(PathBuf, Option<Vec<u8>>)>> {
    if !std::fs::symlink_metadata(dir).ok()?.is_dir() {
        return None;
    }
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let rel = rel.join(entry.file_name());
            match entry.file_type() {
                Ok(k) if k.is_dir() => {
                    out.push((rel.clone(), None));
                    stack.push(rel);
                }
                Ok(k) if k.is_file() => {
                    let content = std::fs::read(dir.join(&rel)).unwrap_or_default();
                    out.push((rel, Some(content)));
                }
                _ => out.push((rel, Some(b"\0special".to_vec()))),
            }
        }
    }
    out.sort();
    Some(out)
}

/// A temporary name next to the real entries, for copy-and-rename.
fn temp_name(real: &Path, name: &OsStr) -> PathBuf {
    let mut tmp = OsString::from(".rein-sync-");
    tmp.push(format!("{:08x}-", rand::random::<u32>()));
    tmp.push(name);
    real.join(tmp)
}

/// Removes whatever is at `path`, without following links.
fn remove_any(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl GitView {
    /// A view of the repository at `real` (a directory) in `dir` (which must not exist).
    pub(crate) fn build(real: &Path, dir: PathBuf) -> io::Result<GitView> {
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let mut view = GitView {
            real: real.to_path_buf(),
            real_id: (0, 0),
            dir,
            binds: Vec::new(),
            files: Vec::new(),
            dirs: Vec::new(),
            links: Vec::new(),
            settled: None,
        };
        view.refresh()?;
        Ok(view)
    }

    /// Whether this view shows the repository at `real`.
    pub(crate) fn shows(&self, real: &Path) -> bool {
        self.real == real
    }

    /// Makes the view match the real repository again, for the next command: what a command
    /// left in it goes, what changed in the real repository is copied anew, the rest (mount
    /// points, unchanged copies) is kept, so a reused view costs little more than a listing,
    /// and nothing but a few `lstat`s while neither side changed since a settled refresh.
    pub(crate) fn refresh(&mut self) -> io::Result<()> {
        if self.unchanged() {
            return Ok(());
        }
        self.settled = None;
        let meta = std::fs::symlink_metadata(&self.real)?;
        if !meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        self.real_id = (meta.dev(), meta.ino());
        let owner = (meta.uid(), meta.gid());
        // Only when it differs: a chown moves the view's change time even to the same owner.
        if std::fs::symlink_metadata(&self.dir).is_ok_and(|m| (m.uid(), m.gid()) != owner) {
            chown_if_root(&self.dir, owner);
        }
        let mut real = Vec::new();
        for entry in std::fs::read_dir(&self.real)? {
            let entry = entry?;
            real.push((entry.file_name(), entry.file_type()?));
        }
        for entry in std::fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            if !real.iter().any(|(n, _)| *n == name) {
                remove_any(&self.dir.join(&name))?;
            }
        }
        let old_files = std::mem::take(&mut self.files);
        self.binds.clear();
        self.dirs.clear();
        self.links.clear();
        for (name, kind) in real {
            self.add(&name, kind, owner, &old_files)?;
        }
        self.settled = self.settled_after(stamp::of(&meta));
        Ok(())
    }

    /// The stamps to keep after a refresh (`real`: the real `.git`'s, taken before its
    /// listing), when the repository, the view and every copy had settled: a later change
    /// then shows in a stamp even within one timestamp tick. Copied directories are copied
    /// anew by every refresh, so a view with one is never kept.
    fn settled_after(&self, real: stamp::Stamp) -> Option<Settled> {
        let view = stamp::of_entry(&self.dir);
        let now = stamp::settled_now();
        let copies = self.files.iter().flat_map(|c| [Some(c.real), Some(c.copy)]);
        let all_settled = [real, view]
            .into_iter()
            .chain(copies)
            .all(|s| s.is_some() && !stamp::unsettled(&s, now));
        match (real, view) {
            (Some(real), Some(view)) if all_settled && self.dirs.is_empty() => {
                Some(Settled { real, view })
            }
            _ => None,
        }
    }

    /// Whether the real `.git`, the view and every copy still look as after the last settled
    /// refresh. Adding, removing or renaming an entry moves its directory's times; a copy
    /// written in place moves its own; the entries bound from the real repository are bound
    /// anew by path for each command, and their mount points are covered while it runs.
    fn unchanged(&self) -> bool {
        let Some(settled) = self.settled else {
            return false;
        };
        stamp::of_entry(&self.real) == Some(settled.real)
            && stamp::of_entry(&self.dir) == Some(settled.view)
            && self.copies_unchanged(true)
    }

    /// Whether every copy (and, with `real`, every copied file of the real `.git`) still has
    /// the stamp it had after the refresh.
    fn copies_unchanged(&self, real: bool) -> bool {
        self.files.iter().all(|c| {
            stamp::of_entry(&self.dir.join(&c.name)) == Some(c.copy)
                && (!real || stamp::of_entry(&self.real.join(&c.name)) == Some(c.real))
        })
    }

    /// Puts one real entry into the view, reusing what is already right there.
    fn add(
        &mut self,
        name: &OsStr,
        kind: std::fs::FileType,
        owner: (u32, u32),
        old: &[Copied],
    ) -> io::Result<()> {
        let (src, dst) = (self.real.join(name), self.dir.join(name));
        let now = std::fs::symlink_metadata(&dst).ok();
        if kind.is_symlink() {
            let target = std::fs::read_link(&src)?;
            if std::fs::read_link(&dst).ok().as_ref() != Some(&target) {
                remove_any(&dst)?;
                std::os::unix::fs::symlink(&target, &dst)?;
            }
            self.links.push((name.to_owned(), target));
            return Ok(());
        }
        match classify(name, kind.is_dir()) {
            GitEntry::CopiedDir => {
                remove_any(&dst)?;
                copy_tree(&src, &dst, owner)?;
                self.dirs.push(name.to_owned());
            }
            GitEntry::CopiedFile if kind.is_file() => {
                let real = stamp::of_entry(&src).ok_or_else(io::Error::last_os_error)?;
                let kept = old
                    .iter()
                    .find(|c| c.name == name)
                    .filter(|c| c.real == real && now.as_ref().and_then(stamp::of) == Some(c.copy));
                let copy = match kept {
                    Some(c) => c.copy,
                    None => {
                        remove_any(&dst)?;
                        copy_file(&src, &dst, owner)?;
                        stamp::of_entry(&dst).ok_or_else(io::Error::last_os_error)?
                    }
                };
                self.files.push(Copied {
                    name: name.to_owned(),
                    real,
                    copy,
                });
            }
            // A stale lock stays out of the view, and so out of the real repository later.
            GitEntry::Lock => remove_any(&dst)?,
            class => {
                // A mount point of the same kind for the bind (writable for the data git
                // writes in place, read-only for everything else).
                let right = now.is_some_and(|m| {
                    if kind.is_dir() {
                        m.is_dir()
                    } else {
                        m.is_file()
                    }
                });
                if !right {
                    remove_any(&dst)?;
                    if kind.is_dir() {
                        std::fs::create_dir(&dst)?;
                    } else {
                        std::fs::File::create_new(&dst)?;
                    }
                }
                let writable = class == GitEntry::SharedDir;
                self.binds.push((name.to_owned(), writable));
            }
        }
        Ok(())
    }

    /// The view directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The real entries to bind into the view: name and whether writable.
    pub(crate) fn binds(&self) -> &[(OsString, bool)] {
        &self.binds
    }

    /// After the command: copies the allow-listed changes back into the real `.git` and
    /// returns what could not be kept, as notes for the model and the person.
    pub(crate) fn sync(&self) -> Vec<String> {
        let same_repo = std::fs::symlink_metadata(&self.real)
            .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.real_id);
        if !same_repo {
            return vec![format!(
                "[sandbox] {} changed while the command ran; its changes to the index, HEAD and git's \
                 other state files were not copied back.",
                self.real.display()
            )];
        }
        // Untouched since a settled refresh: nothing to copy back, nothing dropped.
        if self
            .settled
            .is_some_and(|s| stamp::of_entry(&self.dir) == Some(s.view))
            && self.copies_unchanged(false)
        {
            return Vec::new();
        }
        let mut dropped = Vec::new();
        let mut conflicts = Vec::new();
        let mut seen = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                seen.push(name.clone());
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                match self.sync_entry(&name, kind) {
                    Kept::Yes => {}
                    Kept::Dropped => dropped.push(name),
                    Kept::Conflict => conflicts.push(name),
                }
            }
        }
        self.sync_removed(&seen, &mut conflicts);
        notes(&dropped, &conflicts)
    }

    fn sync_entry(&self, name: &OsStr, kind: std::fs::FileType) -> Kept {
        if self.binds.iter().any(|(n, _)| n == name) {
            return Kept::Yes;
        }
        let (copy, real) = (self.dir.join(name), self.real.join(name));
        if kind.is_symlink() {
            let unchanged = self
                .links
                .iter()
                .any(|(n, t)| n == name && std::fs::read_link(&copy).is_ok_and(|now| &now == t));
            return if unchanged { Kept::Yes } else { Kept::Dropped };
        }
        match classify(name, kind.is_dir()) {
            GitEntry::CopiedFile if kind.is_file() => self.sync_file(name, &copy, &real),
            GitEntry::CopiedDir | GitEntry::SharedDir if kind.is_dir() => {
                if tree_listing(&copy) == tree_listing(&real) {
                    return Kept::Yes;
                }
                match replace_tree(&copy, &real, &self.real) {
                    Ok(()) => Kept::Yes,
                    Err(_) => Kept::Conflict,
                }
            }
            GitEntry::Lock => Kept::Yes,
            _ => Kept::Dropped,
        }
    }

    fn sync_file(&self, name: &OsStr, copy: &Path, real: &Path) -> Kept {
        let before = self.files.iter().find(|c| c.name == name);
        let now = stamp::of_entry(copy);
        if let Some(b) = before
            && now == Some(b.copy)
        {
            return Kept::Yes;
        }
        // Changed outside while the command ran (the person's own git, say): theirs wins.
        let real_now = stamp::of_entry(real);
        if real_now != before.map(|b| b.real) {
            return Kept::Conflict;
        }
        let tmp = temp_name(&self.real, name);
        let owner = std::fs::symlink_metadata(&self.real).map_or((0, 0), |m| (m.uid(), m.gid()));
        match copy_file(copy, &tmp, owner).and_then(|()| std::fs::rename(&tmp, real)) {
            Ok(()) => Kept::Yes,
            Err(_) => {
                let _ = std::fs::remove_file(&tmp);
                Kept::Conflict
            }
        }
    }

    /// Copied entries the command removed are removed from the real `.git` too.
    fn sync_removed(&self, seen: &[OsString], conflicts: &mut Vec<OsString>) {
        for c in self.files.iter().filter(|c| !seen.contains(&c.name)) {
            let real = self.real.join(&c.name);
            if stamp::of_entry(&real) == Some(c.real) {
                let _ = std::fs::remove_file(&real);
            } else {
                conflicts.push(c.name.clone());
            }
        }
        for d in self.dirs.iter().filter(|d| !seen.contains(d)) {
            let real = self.real.join(d);
            if std::fs::symlink_metadata(&real).is_ok_and(|m| m.is_dir()) {
                let _ = std::fs::remove_dir_all(&real);
            }
        }
    }
}

impl Drop for GitView {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How one entry of the view fared.
enum Kept {
    Yes,
    Dropped,
    Conflict,
}

/// Replaces the real directory `real` by a copy of `copy` (regular files and dirs only).
fn replace_tree(copy: &Path, real: &Path, git: &Path) -> io::Result<()> {
    let owner = std::fs::symlink_metadata(git).map_or((0, 0), |m| (m.uid(), m.gid()));
    let name = real.file_name().unwrap_or_default();
    let tmp = temp_name(git, name);
    if let Err(e) = copy_tree(copy, &tmp, owner) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    match std::fs::symlink_metadata(real) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(real)?,
        Ok(_) => std::fs::remove_file(real)?,
        Err(_) => {}
    }
    std::fs::rename(&tmp, real)
}

fn list(names: &[OsString]) -> String {
    names
        .iter()
        .map(|n| format!(".git/{}", n.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The notes for what was dropped and what conflicted.
fn notes(dropped: &[OsString], conflicts: &[OsString]) -> Vec<String> {
    let mut out = Vec::new();
    if !dropped.is_empty() {
        out.push(format!(
            "[sandbox] The command's changes to {} were dropped: in .git only objects, refs, logs, \
             the index, HEAD and git's other state files may change; configuration and hooks \
             are read-only. Ask the user to make such changes themselves.",
            list(dropped)
        ));
    }
    if !conflicts.is_empty() {
        out.push(format!(
            "[sandbox] {} changed outside the sandbox while the command ran, so the command's \
             version was not kept. Check the repository state (git status) before going on.",
            list(conflicts)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().canonicalize().unwrap().join(".git");
        for d in ["objects/ab", "refs/heads", "hooks", "info", "rebase-merge"] {
            std::fs::create_dir_all(git.join(d)).unwrap();
        }
        for (f, text) in [
            ("HEAD", "ref: refs/heads/main\n"),
            ("config", "[core]\n"),
            ("index", "index-v1"),
            ("hooks/pre-commit.sample", "#!/bin/sh\n"),
            ("rebase-merge/git-rebase-todo", "pick 1\n"),
            ("index.lock", ""),
        ] {
            std::fs::write(git.join(f), text).unwrap();
        }
        std::os::unix::fs::symlink("/elsewhere", git.join("linked")).unwrap();
        (dir, git)
    }

    #[test]
    fn the_view_binds_copies_and_guards() {
        let (dir, git) = repo();
        let v = GitView::build(&git, dir.path().join("view")).unwrap();
        let mut binds = v.binds().to_vec();
        binds.sort();
        let b = |n: &str, w| (OsString::from(n), w);
        assert_eq!(
            binds,
            [
                b("config", false),
                b("hooks", false),
                b("info", false),
                b("objects", true),
                b("refs", true)
            ]
        );
        let view = v.dir();
        assert_eq!(
            std::fs::read_to_string(view.join("index")).unwrap(),
            "index-v1"
        );
        assert_eq!(std::fs::read(view.join("config")).unwrap(), b"");
        assert!(!view.join("index.lock").exists());
        assert_eq!(
            std::fs::read_to_string(view.join("rebase-merge/git-rebase-todo")).unwrap(),
            "pick 1\n"
        );
        assert_eq!(
            std::fs::read_link(view.join("linked")).unwrap(),
            Path::new("/elsewhere")
        );
        let mode = std::fs::metadata(view).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn allowed_changes_come_back_and_the_rest_is_dropped() {
        let (dir, git) = repo();
        let v = GitView::build(&git, dir.path().join("view")).unwrap();
        let view = v.dir().to_path_buf();
        // What a command might do through the view.
        std::fs::write(view.join("index.lock"), "index-v2").unwrap();
        std::fs::rename(view.join("index.lock"), view.join("index")).unwrap();
        std::fs::write(view.join("ORIG_HEAD"), "abc\n").unwrap();
        std::fs::write(view.join("commondir"), "/tmp/evil\n").unwrap();
        std::fs::create_dir(view.join("worktrees")).unwrap();
        std::fs::remove_dir_all(view.join("rebase-merge")).unwrap();
        std::fs::remove_file(view.join("HEAD")).unwrap();
        std::os::unix::fs::symlink("/home/u/.ssh/id_rsa", view.join("HEAD")).unwrap();
        std::fs::write(view.join("sequencer"), "not a dir").unwrap();
        let notes = v.sync();
        assert_eq!(
            std::fs::read_to_string(git.join("index")).unwrap(),
            "index-v2"
        );
        assert_eq!(
            std::fs::read_to_string(git.join("ORIG_HEAD")).unwrap(),
            "abc\n"
        );
        assert!(!git.join("commondir").exists() && !git.join("worktrees").exists());
        assert!(!git.join("rebase-merge").exists());
        assert!(!git.join("sequencer").exists());
        // HEAD became a link: not followed, not kept; the real HEAD stays.
        assert!(
            std::fs::symlink_metadata(git.join("HEAD"))
                .unwrap()
                .is_file()
        );
        assert_eq!(
            std::fs::read_to_string(git.join("HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        for n in ["commondir", "worktrees", "HEAD", "sequencer"] {
            assert!(notes[0].contains(&format!(".git/{n}")), "{notes:?}");
        }
        assert!(!notes[0].contains(".git/index"), "{notes:?}");
        // No temp files are left next to the real entries.
        let names: Vec<_> = std::fs::read_dir(&git)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with(".rein-sync")),
            "{names:?}"
        );
        drop(v);
        assert!(!view.exists());
    }

    #[test]
    fn a_reused_view_forgets_the_last_command_and_follows_the_repository() {
        let (dir, git) = repo();
        let mut v = GitView::build(&git, dir.path().join("view")).unwrap();
        let view = v.dir().to_path_buf();
        let config_inode = std::fs::metadata(view.join("config")).unwrap().ino();
        std::fs::write(view.join("commondir"), "/tmp/evil").unwrap();
        std::fs::write(view.join("index"), "index-v2").unwrap();
        let _ = v.sync();
        // The person changes the repository between two commands.
        std::fs::write(git.join("MERGE_MSG"), "merging").unwrap();
        std::fs::remove_dir_all(git.join("info")).unwrap();
        v.refresh().unwrap();
        assert!(!view.join("commondir").exists() && !view.join("info").exists());
        assert_eq!(
            std::fs::read_to_string(view.join("index")).unwrap(),
            "index-v2"
        );
        assert_eq!(
            std::fs::read_to_string(view.join("MERGE_MSG")).unwrap(),
            "merging"
        );
        // Mount points are kept, not made anew.
        assert_eq!(
            std::fs::metadata(view.join("config")).unwrap().ino(),
            config_inode
        );
        assert!(!v.binds().iter().any(|(n, _)| n == "info"));
        assert!(v.sync().is_empty());
    }

    #[test]
    fn a_file_changed_outside_meanwhile_is_not_overwritten() {
        let (dir, git) = repo();
        let v = GitView::build(&git, dir.path().join("view")).unwrap();
        std::fs::write(v.dir().join("index"), "from the command").unwrap();
        std::fs::write(git.join("index.new"), "from the person").unwrap();
        std::fs::rename(git.join("index.new"), git.join("index")).unwrap();
        let notes = v.sync();
        assert_eq!(
            std::fs::read_to_string(git.join("index")).unwrap(),
            "from the person"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains(".git/index") && n.contains("outside")),
            "{notes:?}"
        );
    }

    #[test]
    fn new_state_dirs_are_copied_back_without_links() {
        let (dir, git) = repo();
        std::fs::remove_dir_all(git.join("rebase-merge")).unwrap();
        let v = GitView::build(&git, dir.path().join("view")).unwrap();
        let seq = v.dir().join("sequencer");
        std::fs::create_dir(&seq).unwrap();
        std::fs::write(seq.join("todo"), "pick 2\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", seq.join("leak")).unwrap();
        assert!(v.sync().is_empty());
        assert_eq!(
            std::fs::read_to_string(git.join("sequencer/todo")).unwrap(),
            "pick 2\n"
        );
        assert!(std::fs::symlink_metadata(git.join("sequencer/leak")).is_err());
    }

    /// Repositories without copied directories (those are copied anew by every refresh),
    /// their views, and time for every stamp to settle.
    fn settled_views(n: usize) -> Vec<(tempfile::TempDir, PathBuf, GitView)> {
        let views: Vec<_> = (0..n)
            .map(|_| {
                let (dir, git) = repo();
                std::fs::remove_dir_all(git.join("rebase-merge")).unwrap();
                let v = GitView::build(&git, dir.path().join("view")).unwrap();
                (dir, git, v)
            })
            .collect();
        // Past the 100 ms within which a change may not show in a stamp.
        std::thread::sleep(std::time::Duration::from_millis(150));
        views
            .into_iter()
            .map(|(dir, git, mut v)| {
                v.refresh().unwrap();
                assert!(v.unchanged(), "a settled view is kept as it is");
                (dir, git, v)
            })
            .collect()
    }

    #[test]
    fn a_settled_view_is_kept_until_a_command_or_the_person_changes_either_side() {
        let mut views = settled_views(6).into_iter();
        let mut next = || views.next().unwrap();
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();

        // A command plants a name in the view: it goes.
        let (_d, _git, mut v) = next();
        std::fs::write(v.dir().join("commondir"), "/tmp/evil").unwrap();
        assert!(!v.unchanged());
        v.refresh().unwrap();
        assert!(!v.dir().join("commondir").exists());

        // A command rewrites a copy in place, same size: the real one comes back.
        let (_d, _git, mut v) = next();
        std::fs::write(v.dir().join("HEAD"), "ref: refs/heads/evil\n").unwrap();
        assert!(!v.unchanged());
        v.refresh().unwrap();
        assert_eq!(read(v.dir().join("HEAD")), "ref: refs/heads/main\n");

        // The person rewrites a copied file in place, same size: copied anew.
        let (_d, git, mut v) = next();
        std::fs::write(git.join("index"), "index-v9").unwrap();
        assert!(!v.unchanged());
        v.refresh().unwrap();
        assert_eq!(read(v.dir().join("index")), "index-v9");

        // The person adds a state file: it shows.
        let (_d, git, mut v) = next();
        std::fs::write(git.join("MERGE_MSG"), "merging").unwrap();
        assert!(!v.unchanged());
        v.refresh().unwrap();
        assert_eq!(read(v.dir().join("MERGE_MSG")), "merging");

        // A command that left the view alone has nothing to copy back; one that wrote the
        // index (git's way: a lock renamed over it) has it copied back.
        let (_d, git, v) = next();
        assert!(v.sync().is_empty());
        assert_eq!(read(git.join("index")), "index-v1");
        std::fs::write(v.dir().join("index.lock"), "index-v2").unwrap();
        std::fs::rename(v.dir().join("index.lock"), v.dir().join("index")).unwrap();
        assert!(v.sync().is_empty());
        assert_eq!(read(git.join("index")), "index-v2");

        // A copy written in place, same size, is copied back too.
        let (_d, git, v) = next();
        std::fs::write(v.dir().join("HEAD"), "ref: refs/heads/next\n").unwrap();
        assert!(v.sync().is_empty());
        assert_eq!(read(git.join("HEAD")), "ref: refs/heads/next\n");
    }
}
