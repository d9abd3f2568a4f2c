//! What rein knows about a workspace's git repository without running git: which entries of
//! `.git` a command may change, and the current branch (read from `HEAD`, never following a
//! link).
//!
//! rein never runs git itself: a repository's configuration can start programs
//! (`core.fsmonitor`, filters, pagers, hooks, aliases, …), and a command may have planted one.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How the sandbox treats one top-level entry of `.git` (the allow-list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GitEntry {
    /// Data git writes in place (objects, refs, logs): shared with the real repository.
    SharedDir,
    /// Small state git replaces by lock file and rename (`index`, `HEAD`, `MERGE_MSG`, …):
    /// the command works on a copy; changes are copied back after it.
    CopiedFile,
    /// State directories git creates and removes whole (rebase, sequencer): copied both ways.
    CopiedDir,
    /// A lock file left behind: never copied back, not worth a report.
    Lock,
    /// Everything else (`config`, `hooks/`, `info/`, `commondir`, `modules/`, `worktrees/`,
    /// names nobody knows yet): read-only; new ones are dropped.
    Protected,
}

const SHARED_DIRS: [&str; 5] = ["objects", "refs", "logs", "reftable", "rr-cache"];
const COPIED_DIRS: [&str; 3] = ["rebase-merge", "rebase-apply", "sequencer"];
const COPIED_FILES: [&str; 5] = ["index", "packed-refs", "shallow", "gc.pid", "gc.log"];

/// Pseudo-refs and git's state files are all-caps (`HEAD`, `ORIG_HEAD`, `MERGE_MSG`,
/// `COMMIT_EDITMSG`, `BISECT_LOG`, …); no configuration file is.
fn is_all_caps(name: &[u8]) -> bool {
    name.first().is_some_and(u8::is_ascii_uppercase)
        && name
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// Classifies a top-level entry of `.git` by name and kind.
pub(crate) fn classify(name: &OsStr, is_dir: bool) -> GitEntry {
    let bytes = name.as_bytes();
    let Some(name) = name.to_str() else {
        return GitEntry::Protected;
    };
    if is_dir {
        if SHARED_DIRS.contains(&name) {
            return GitEntry::SharedDir;
        }
        if COPIED_DIRS.contains(&name) {
            return GitEntry::CopiedDir;
        }
        return GitEntry::Protected;
    }
    if name.ends_with(".lock") {
        return GitEntry::Lock;
    }
    let shared_index = name
        .strip_prefix("sharedindex.")
        .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if COPIED_FILES.contains(&name) || shared_index || is_all_caps(bytes) {
        GitEntry::CopiedFile
    } else {
        GitEntry::Protected
    }
}

/// Longest `HEAD`, `commondir` or `gitdir` file read.
const SMALL_FILE: u64 = 4096;

/// Reads a small regular file without following a final symlink and without blocking on a
/// FIFO; `None` for anything else.
pub(crate) fn read_small(path: &Path) -> Option<String> {
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > SMALL_FILE {
        return None;
    }
    let mut text = String::new();
    f.take(SMALL_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The repository holding `dir`: its work tree's root (where `.git` is) and its git directory:
/// the nearest `.git` directory above it, or where a `.git` file (`gitdir: …`, worktrees and
/// submodules) points. A symlinked `.git` is not followed.
pub(crate) fn repository(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Some((d.to_path_buf(), dot_git));
        }
        if !meta.is_file() {
            return None;
        }
        let target = gitdir_file_target(d, &dot_git)?;
        return std::fs::metadata(&target)
            .ok()
            .filter(|m| m.is_dir())
            .map(|_| (d.to_path_buf(), target));
    }
    None
}

/// Where the `.git` file `dot_git` in `dir` points (`gitdir: …`, relative to `dir`), read
/// without following a link or blocking on a FIFO, exactly as git reads it (see
/// [`read_gitfile`]).
pub(crate) fn gitdir_file_target(dir: &Path, dot_git: &Path) -> Option<PathBuf> {
    read_gitfile(dir, dot_git, false).ok()
}

/// The largest `.git` file git reads (`read_gitfile_gently`); it refuses a larger one.
const MAX_GITFILE: u64 = 1 << 20;

/// Where the `.git` file `dot_git` in `dir` points, read byte for byte as git's
/// `read_gitfile_gently` does: a regular file of at most 1 MiB (through a final link when
/// `follow`, as git goes; never blocking on a FIFO), the exact prefix `gitdir: `, then the path
/// with only trailing `\n`/`\r` taken off (`gitdir:  g ` names ` g `), relative to `dir`.
/// `Err`: git would refuse it, or read a path rein cannot (a NUL ends git's early).
pub(crate) fn read_gitfile(dir: &Path, dot_git: &Path, follow: bool) -> Result<PathBuf, ()> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(nofollow | libc::O_NONBLOCK)
        .open(dot_git)
        .map_err(|_| ())?;
    let meta = f.metadata().map_err(|_| ())?;
    if !meta.is_file() || meta.len() > MAX_GITFILE {
        return Err(());
    }
    let mut data = Vec::new();
    f.take(MAX_GITFILE + 1)
        .read_to_end(&mut data)
        .map_err(|_| ())?;
    if data.len() as u64 > MAX_GITFILE {
        return Err(());
    }
    let mut path = data.strip_prefix(b"gitdir: ").ok_or(())?;
    while let [rest @ .., b'\n' | b'\r'] = path {
        path = rest;
    }
    if path.is_empty() || path.contains(&0) {
        return Err(());
    }
    Ok(dir.join(OsStr::from_bytes(path)))
}

/// The git directories a linked worktree at `root` uses, when its main repository registered
/// it: `root/.git` is a `gitdir:` file naming `G` (`<main>/.git/worktrees/<name>`) and
/// `G/gitdir` names `root/.git` back; then `G` and its common dir (`G/commondir`: the main
/// repository's `.git`, which holds `G`). The `.git` file alone proves nothing: a hostile
/// checkout could name any directory of the person's.
pub(crate) fn worktree_git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let real = |p: PathBuf| super::paths::canonicalize(p).ok();
    let Some(dir) = gitdir_file_target(root, &dot_git).and_then(real) else {
        return Vec::new();
    };
    let back = read_small(&dir.join("gitdir")).and_then(|t| real(PathBuf::from(t.trim_end())));
    if back.is_none() || back != real(dot_git) {
        return Vec::new();
    }
    let common = read_small(&dir.join("commondir")).and_then(|t| real(dir.join(t.trim_end())));
    match common {
        Some(c) if dir.starts_with(&c) && c != dir => vec![dir, c],
        _ => vec![dir],
    }
}

/// Where the workspace's repository really is when `ws/.git` is a `gitdir:` file or a
/// symlink and that directory lies inside `ws` (`git init --separate-git-dir`, a linked
/// `.git`): relative to `ws` (canonical). Its configuration and hooks need the same
/// protection as a `.git` directory's.
pub(crate) fn linked_git_dir(ws: &Path) -> Option<PathBuf> {
    let dot_git = ws.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let target = if meta.is_symlink() {
        dot_git
    } else if meta.is_file() {
        gitdir_file_target(ws, &dot_git)?
    } else {
        return None;
    };
    let real = super::paths::canonicalize(target).ok()?;
    let rel = real.strip_prefix(ws).ok()?;
    (real.is_dir() && !rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

/// Whether `name` is a valid branch name by git's rules (`git check-ref-format`), and
/// printable: it goes into the model's context.
fn valid_branch(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "@"
        && !name.contains("..")
        && !name.contains("@{")
        && !name.contains("//")
        && !name.ends_with('/')
        && !name.ends_with('.')
        && !name
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
        && name
            .split('/')
            .all(|part| !part.starts_with('.') && !part.ends_with(".lock"))
}

/// The current branch of the repository holding `dir`, read from `HEAD` (no git process);
/// `None` when detached, not a repository, or anything looks off, and when a `.git` file
/// names a git directory that does not belong to this work tree (see [`belongs_to`]).
pub fn current_branch(dir: &Path) -> Option<String> {
    let (root, git) = repository(dir)?;
    if !std::fs::symlink_metadata(root.join(".git")).is_ok_and(|m| m.is_dir())
        && !belongs_to(&root, &git)
    {
        return None;
    }
    let head = read_small(&git.join("HEAD"))?;
    let name = head.strip_suffix('\n').unwrap_or(&head);
    let name = name.strip_prefix("ref: refs/heads/")?;
    valid_branch(name).then(|| name.to_string())
}

/// Whether the git directory `git` that the `.git` file in `root` names is this work tree's
/// own: inside it, a submodule's in its superproject's `.git/modules`, or a linked worktree's
/// whose `gitdir` file points back at that `.git` file. A repository's `.git` file could
/// otherwise name any repository of the person's (`gitdir: /home/me/secret/.git`), and rein
/// would read its branch into the model's context, past the sandbox that hides it.
fn belongs_to(root: &Path, git: &Path) -> bool {
    let (Ok(root), Ok(git)) = (
        super::paths::canonicalize(root),
        super::paths::canonicalize(git),
    ) else {
        return false;
    };
    if git.starts_with(&root) {
        return true;
    }
    let submodule = git.ancestors().any(|modules| {
        modules.file_name().is_some_and(|n| n == "modules")
            && modules
                .parent()
                .filter(|dot_git| dot_git.file_name().is_some_and(|n| n == ".git"))
                .and_then(Path::parent)
                .is_some_and(|superproject| root.starts_with(superproject))
    });
    let back = read_small(&git.join("gitdir"))
        .map(|text| PathBuf::from(text.trim_end_matches(['\n', '\r'])))
        .and_then(|path| super::paths::canonicalize(path).ok());
    submodule || back == Some(root.join(".git"))
}

/// Entries a walk for nested repositories visits at most: beyond, the rest of a huge tree
/// goes unsearched (logged) rather than slowing every command.
/// The `.git` entries (directories and files, never links) below the workspace root, as
/// paths relative to it: nested repositories and submodule checkouts, whose configuration and
/// hooks a git the person runs there would obey. The root's own `.git` and `.rein` are not
/// searched; links are not followed. (The whole walk; see `NestedWalk` for one in steps.)
#[cfg(test)]
pub(crate) fn nested_git_entries(ws: &Path) -> Vec<PathBuf> {
    let mut walk = NestedWalk::default();
    walk.run(ws, usize::MAX);
    walk.finish()
}

/// What identifies a file: its device and inode, and what tells a reused inode number from
/// the file that had it (once that is deleted, the next file made often gets it): the inode's
/// generation, or for a link, which cannot be opened, its change time.
pub(crate) type FileId = (u64, u64, i64);

/// The identity of the file at `path`, whose (unfollowed) metadata is `meta`.
pub(crate) fn file_id(path: &Path, meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    let tell = match meta.is_symlink() {
        true => meta
            .ctime()
            .wrapping_mul(1_000_000_000)
            .wrapping_add(meta.ctime_nsec()),
        false => generation(path).map_or(-1, i64::from),
    };
    (meta.dev(), meta.ino(), tell)
}

/// Makes folders in `parent` one by one (each kept) until one gets the inode number `ino`,
/// which a file system like ext4 hands out again once its file is deleted; `None` where it
/// does not (tmpfs counts up).
#[cfg(test)]
pub(crate) fn folder_with_inode(parent: &Path, ino: u64) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    (0..500).find_map(|i| {
        let dir = parent.join(format!("d{i}"));
        std::fs::create_dir(&dir).ok()?;
        let same = std::fs::symlink_metadata(&dir).ok()?.ino() == ino;
        same.then_some(dir)
    })
}

/// The inode generation of `path` (`FS_IOC_GETVERSION`), opened without following a link
/// or blocking on a FIFO; `None` where the file system gives none.
fn generation(path: &Path) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let mut generation: libc::c_long = 0;
    // SAFETY: FS_IOC_GETVERSION writes one long to the pointer given, on our own descriptor.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETVERSION, &mut generation) };
    (rc == 0).then_some(generation as u32)
}

/// `_IOR('v', 1, long)`: read, the size of a `long`, type `'v'`, number 1.
const FS_IOC_GETVERSION: libc::Ioctl =
    ((2 << 30) | (std::mem::size_of::<libc::c_long>() << 16) | ((b'v' as usize) << 8) | 1)
        as libc::Ioctl;

/// A walk for nested `.git` entries that can stop after some entries and go on later.
#[derive(Debug)]
pub(crate) struct NestedWalk {
    dirs: Vec<PathBuf>,
    found: Vec<(PathBuf, FileId)>,
    /// Whether a `.git` that is a symlink counts too (git follows it).
    links: bool,
    /// Entries looked at so far.
    pub(crate) visited: usize,
    /// A watch of every directory walked (`None`: not wanted, or it cannot be complete).
    watch: Option<crate::checkpoint::watch::Watch>,
    /// Other version control systems' metadata directories found (`.hg`, `.jj`), walked like
    /// any folder (see `madegit`).
    pub(crate) other_vcs: Vec<PathBuf>,
}

impl Default for NestedWalk {
    fn default() -> NestedWalk {
        NestedWalk {
            dirs: vec![PathBuf::new()],
            found: Vec::new(),
            links: false,
            visited: 0,
            watch: None,
            other_vcs: Vec::new(),
        }
    }
}

impl NestedWalk {
    /// A walk that also records `.git` symlinks (for a check, not for binding them).
    pub(crate) fn with_links() -> NestedWalk {
        NestedWalk {
            links: true,
            ..NestedWalk::default()
        }
    }

    /// A walk that also watches every directory it walks (see `madegit`), each before it is
    /// read, so that nothing made after the walk passed goes unnoticed.
    pub(crate) fn watching(ws: &Path) -> NestedWalk {
        NestedWalk {
            watch: crate::checkpoint::watch::Watch::keeping_created(ws),
            ..NestedWalk::default()
        }
    }

    /// The watch of every directory walked, when it is complete.
    pub(crate) fn take_watch(&mut self) -> Option<crate::checkpoint::watch::Watch> {
        self.watch.take()
    }

    /// Walks on until the walk is complete (`true`) or `budget` more entries were looked at.
    pub(crate) fn run(&mut self, ws: &Path, budget: usize) -> bool {
        let stop = self.visited.saturating_add(budget);
        while let Some(rel) = self.dirs.pop() {
            if let Some(watch) = &mut self.watch
                && !rel.to_str().is_some_and(|r| watch.add(r))
            {
                self.watch = None;
            }
            let Ok(entries) = std::fs::read_dir(ws.join(&rel)) else {
                continue;
            };
            for entry in entries.flatten() {
                self.visited += 1;
                let name = entry.file_name();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let top = rel.as_os_str().is_empty();
                if name == ".git" {
                    let wanted =
                        kind.is_dir() || kind.is_file() || (self.links && kind.is_symlink());
                    // Its identity (an lstat), so a later `.git` at the same path is told apart.
                    if !top
                        && wanted
                        && let Ok(m) = entry.metadata()
                    {
                        let id = file_id(&ws.join(&rel).join(&name), &m);
                        self.found.push((rel.join(&name), id));
                    }
                    // Watched inside too (see `madegit`): a command may build a repository
                    // there, where a link leads the person.
                    if self.watch.is_some() && kind.is_dir() {
                        self.dirs.push(rel.join(&name));
                    }
                } else if kind.is_dir() && super::madegit::is_persons_git_dir(&rel.join(&name)) {
                    // The person's submodules' and worktrees' own git directories.
                } else if kind.is_dir() && super::madegit::is_other_vcs(&name) {
                    // Recorded (see `madegit`), and walked like any folder.
                    self.other_vcs.push(rel.join(&name));
                    self.dirs.push(rel.join(&name));
                } else if kind.is_dir() && !(top && name == ".rein") {
                    self.dirs.push(rel.join(&name));
                }
            }
            // Checked between directories, so a directory is never half read.
            if self.visited >= stop && !self.dirs.is_empty() {
                return false;
            }
        }
        true
    }

    /// The entries found, sorted.
    pub(crate) fn finish(self) -> Vec<PathBuf> {
        self.finish_identified()
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    /// The entries found with their identities when found, sorted by path.
    pub(crate) fn finish_identified(mut self) -> Vec<(PathBuf, FileId)> {
        self.found.sort();
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_repositories_are_found_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for d in [
            ".git/modules/m",
            "sub/.git/hooks",
            "a/b",
            ".rein/x/.git",
            "real/.git",
        ] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("a/b/.git"), "gitdir: ../../.git/modules/m\n").unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("linked")).unwrap();
        std::os::unix::fs::symlink(ws.join("real/.git"), ws.join("a/.git")).unwrap();
        let found = nested_git_entries(ws);
        let want: Vec<PathBuf> = ["a/b/.git", "real/.git", "sub/.git"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn a_git_file_is_read_byte_for_byte_as_git_reads_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let dot_git = dir.join(".git");
        let read = |content: &[u8]| {
            std::fs::write(&dot_git, content).unwrap();
            read_gitfile(dir, &dot_git, false)
        };
        let mut padded = b"gitdir: g".to_vec();
        padded.extend(std::iter::repeat_n(b'\n', 5000));
        assert_eq!(read(&padded), Ok(dir.join("g")));
        assert_eq!(read(b"gitdir: g \r\n"), Ok(dir.join("g ")));
        assert_eq!(read(b"gitdir:  g"), Ok(dir.join(" g")));
        assert_eq!(
            read(b"gitdir: h\xff\n"),
            Ok(dir.join(OsStr::from_bytes(b"h\xff")))
        );
        assert_eq!(read(b"gitdir: /abs\n"), Ok(PathBuf::from("/abs")));
        for bad in [
            &b"gitdir:g"[..],
            b"gitdir: \n",
            b"GITDIR: g",
            b"gitdir: a\0b",
            b"",
        ] {
            assert_eq!(read(bad), Err(()), "{bad:?}");
        }
        let mut huge = b"gitdir: g".to_vec();
        huge.resize((1 << 20) + 1, b'\n');
        assert_eq!(read(&huge), Err(()));
        // A link is followed only when asked (git follows it; the policy's reader does not).
        std::fs::write(dir.join("real"), "gitdir: g\n").unwrap();
        std::fs::remove_file(&dot_git).unwrap();
        std::os::unix::fs::symlink("real", &dot_git).unwrap();
        assert_eq!(read_gitfile(dir, &dot_git, false), Err(()));
        assert_eq!(read_gitfile(dir, &dot_git, true), Ok(dir.join("g")));
    }

    #[test]
    fn the_checking_walk_also_finds_linked_git_entries_with_their_identity() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("real/.git")).unwrap();
        std::fs::create_dir_all(ws.join("a")).unwrap();
        std::os::unix::fs::symlink("../real/.git", ws.join("a/.git")).unwrap();
        let mut walk = NestedWalk::with_links();
        walk.run(ws, usize::MAX);
        let found = walk.finish_identified();
        let paths: Vec<&Path> = found.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(paths, [Path::new("a/.git"), Path::new("real/.git")]);
        let m = std::fs::symlink_metadata(ws.join("a/.git")).unwrap();
        assert_eq!(
            found[0].1,
            file_id(&ws.join("a/.git"), &m),
            "the link's own identity"
        );
    }

    #[test]
    fn the_allow_list() {
        let c = |n: &str, d| classify(OsStr::new(n), d);
        for n in SHARED_DIRS {
            assert_eq!(c(n, true), GitEntry::SharedDir, "{n}");
        }
        for n in ["rebase-merge", "sequencer"] {
            assert_eq!(c(n, true), GitEntry::CopiedDir, "{n}");
        }
        for n in [
            "HEAD",
            "ORIG_HEAD",
            "FETCH_HEAD",
            "MERGE_HEAD",
            "MERGE_MSG",
            "COMMIT_EDITMSG",
            "CHERRY_PICK_HEAD",
            "BISECT_LOG",
            "AUTO_MERGE",
            "index",
            "packed-refs",
            "sharedindex.0123abcd",
        ] {
            assert_eq!(c(n, false), GitEntry::CopiedFile, "{n}");
        }
        for (n, d) in [
            ("config", false),
            ("config.worktree", false),
            ("commondir", false),
            ("gitdir", false),
            ("description", false),
            ("hooks", true),
            ("info", true),
            ("modules", true),
            ("worktrees", true),
            ("remotes", true),
            ("branches", true),
            ("HEAD", true),
            ("objects", false),
            ("index", true),
            ("sharedindex.", false),
            ("sharedindex.x", false),
            ("Head", false),
            ("_X", false),
            ("new-thing", false),
        ] {
            assert_eq!(c(n, d), GitEntry::Protected, "{n} dir={d}");
        }
        assert_eq!(c("index.lock", false), GitEntry::Lock);
        assert_eq!(c("config.lock", false), GitEntry::Lock);
        assert_eq!(
            classify(OsStr::from_bytes(b"\xffHEAD"), false),
            GitEntry::Protected
        );
    }

    #[test]
    fn a_linked_git_dir_inside_the_workspace_is_found() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("meta/gitdata")).unwrap();
        assert_eq!(linked_git_dir(&ws), None);
        std::fs::write(ws.join(".git"), "gitdir: meta/gitdata\n").unwrap();
        assert_eq!(linked_git_dir(&ws), Some(PathBuf::from("meta/gitdata")));
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", ws.join("meta/gitdata").display()),
        )
        .unwrap();
        assert_eq!(linked_git_dir(&ws), Some(PathBuf::from("meta/gitdata")));
        // Outside the workspace: read-only to commands anyway.
        std::fs::write(ws.join(".git"), "gitdir: /tmp\n").unwrap();
        assert_eq!(linked_git_dir(&ws), None);
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink("meta/gitdata", ws.join(".git")).unwrap();
        assert_eq!(linked_git_dir(&ws), Some(PathBuf::from("meta/gitdata")));
    }

    #[test]
    fn branch_names_are_checked() {
        for ok in ["main", "feature/x", "v1.2-fix", "ü"] {
            assert!(valid_branch(ok), "{ok}");
        }
        for bad in [
            "",
            "a..b",
            "a b",
            "a\nb",
            "x.lock",
            "a/.hidden",
            "end/",
            "end.",
            "a@{1}",
            "@",
            "a//b",
            "x:y",
            "ignore\u{7}",
        ] {
            assert!(!valid_branch(bad), "{bad:?}");
        }
    }

    #[test]
    fn branch_from_head_files_worktrees_and_not_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            current_branch(&repo.join("sub")).as_deref(),
            Some("feature/x")
        );
        std::fs::write(repo.join(".git/HEAD"), "0123456789abcdef\n").unwrap();
        assert_eq!(current_branch(&repo), None);
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/a b\n").unwrap();
        assert_eq!(current_branch(&repo), None);

        // A worktree's `.git` file points elsewhere, where a `gitdir` file points back.
        let wt = root.join("wt");
        std::fs::create_dir_all(root.join("gitdirs/wt")).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../gitdirs/wt\n").unwrap();
        std::fs::write(root.join("gitdirs/wt/HEAD"), "ref: refs/heads/memory\n").unwrap();
        assert_eq!(
            current_branch(&wt),
            None,
            "no way back: not this work tree's"
        );
        let back = format!("{}\n", wt.join(".git").display());
        std::fs::write(root.join("gitdirs/wt/gitdir"), back).unwrap();
        assert_eq!(current_branch(&wt).as_deref(), Some("memory"));
        // A submodule's, in its superproject's `.git/modules`.
        std::fs::create_dir_all(repo.join(".git/modules/lib")).unwrap();
        std::fs::create_dir_all(repo.join("lib")).unwrap();
        std::fs::write(repo.join("lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
        std::fs::write(repo.join(".git/modules/lib/HEAD"), "ref: refs/heads/sub\n").unwrap();
        assert_eq!(current_branch(&repo.join("lib")).as_deref(), Some("sub"));
        // Another repository of the person's, named by a repository's `.git` file.
        let hostile = root.join("hostile");
        std::fs::create_dir_all(&hostile).unwrap();
        let secret_repo = format!("gitdir: {}\n", root.join("gitdirs/wt").display());
        std::fs::write(hostile.join(".git"), secret_repo).unwrap();
        assert_eq!(current_branch(&hostile), None);

        // A HEAD that is a link (to a secret, say) is not read; a symlinked .git is not
        // followed.
        let secret = root.join("secret");
        std::fs::write(&secret, "ref: refs/heads/leaked\n").unwrap();
        std::fs::remove_file(repo.join(".git/HEAD")).unwrap();
        std::os::unix::fs::symlink(&secret, repo.join(".git/HEAD")).unwrap();
        assert_eq!(current_branch(&repo), None);
        let linked = root.join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(root.join("gitdirs/wt"), linked.join(".git")).unwrap();
        assert_eq!(current_branch(&linked), None);

        // A FIFO as HEAD does not hang.
        let fifo_repo = root.join("fifo");
        std::fs::create_dir_all(fifo_repo.join(".git")).unwrap();
        let path =
            std::ffi::CString::new(fifo_repo.join(".git/HEAD").as_os_str().as_bytes().to_vec())
                .unwrap();
        // SAFETY: valid path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert_eq!(current_branch(&fifo_repo), None);
    }
}
