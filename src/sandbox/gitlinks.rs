//! After each command: repositories a command made where the person's git goes by itself. A
//! gitlink (a submodule entry, mode 160000) in the workspace's index makes the person's
//! plain `git status` run git inside that path, which obeys the configuration and hooks
//! found there (`core.fsmonitor`, `post-index-change`, …) as the person, outside the
//! sandbox. Nested repositories found before the first command are protected already (known
//! by the path and inode of their `.git`: a command may rename the parent and make
//! another); one a command made (or a `.git` it put where the index, or a hostile clone's,
//! has a gitlink) is vetted here: its configuration may hold only the keys `git init` and
//! `git clone` write, its hooks only samples, and no `commondir`. An unsafe `.git` is moved
//! aside, and the model and the person are told. Git goes on into the submodules of a
//! submodule, and so does the check.
//!
//! Cost when nothing changed: a `stat` of the workspace's `.git` and of its index per command
//! (the index is parsed again only when its size, times or inode changed), plus a `lstat` per
//! gitlink the index holds (two for a repository found before the first command).

use super::git::FileId;
use crate::git::{allow, config as gitconfig, index as gitindex};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest index read; a larger one is checked the slow way (every nested `.git`).
const MAX_INDEX: u64 = 256 << 20;
/// The largest configuration file a new repository may have.
pub(super) const MAX_CONFIG: u64 = 256 << 10;
/// Submodules of submodules followed; deeper ones a command made are moved aside.
const MAX_DEPTH: usize = 8;
/// What an unsafe `.git` (or a git directory's `HEAD`) gets after its name when moved aside
/// (a number follows when taken).
const ASIDE: &str = ".rein-unsafe";

/// The gitlinks of the index files read so far, by path, kept while the files stay the same.
#[derive(Debug, Default)]
pub(crate) struct IndexCache(Mutex<HashMap<PathBuf, Cached>>);

/// What identifies one version of a file: device, inode, size, mtime and ctime. The ctime
/// cannot be set back by a command, unlike the mtime (`touch -d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp([i64; 7]);

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp([
            m.dev() as i64,
            m.ino() as i64,
            m.size() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ])
    }
}

/// One index's gitlinks (`Err`: it could not be read as git reads it) and the files they
/// came from (the index, a split index's shared file; `None`: missing, so that its appearance
/// is noticed).
#[derive(Debug)]
struct Cached {
    files: Vec<(PathBuf, Option<Stamp>)>,
    links: Result<Arc<Vec<Vec<u8>>>, ()>,
}

/// The check after one command in a writable workspace.
#[derive(Debug)]
pub(crate) struct GitlinkCheck {
    /// The workspace (canonical).
    pub(crate) ws: PathBuf,
    /// The nested `.git` entries found before the first command, relative to `ws`, sorted,
    /// with their device and inode then.
    pub(crate) found: Arc<Vec<(PathBuf, FileId)>>,
    /// The other directories commands may write (the first: the session's temp dir).
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) cache: Arc<IndexCache>,
    /// The look for repositories made anywhere in the workspace (see `madegit`).
    pub(crate) made: Option<Arc<Mutex<super::madegit::RepoWatch>>>,
}

/// What to do with one path a gitlink names.
enum Verdict {
    /// Nothing there git would enter.
    Nothing,
    /// A repository git enters, safe (or the person's own): look at its gitlinks too.
    Enter(PathBuf, PathBuf),
    /// A repository a command made that would run a program: move `.git` aside.
    Unsafe(PathBuf, String),
}

impl GitlinkCheck {
    /// Runs the check, then the look for repositories made anywhere; the notes for the model
    /// and the person.
    pub(crate) fn run(&self) -> Vec<String> {
        let mut notes = self.gitlinks();
        if let Some(made) = &self.made {
            notes.extend(crate::sync::lock(made).check(&self.found));
        }
        notes
    }

    /// The check of the repositories the index's gitlinks name.
    fn gitlinks(&self) -> Vec<String> {
        let Some((root, gitdir)) = top_repository(&self.ws) else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        let mut queue = vec![(root, gitdir, 0usize)];
        let mut seen = HashSet::new();
        while let Some((tree, gitdir, depth)) = queue.pop() {
            let key = super::paths::canonicalize(&gitdir).unwrap_or_else(|_| gitdir.clone());
            if !seen.insert(key) {
                continue;
            }
            let candidates = match self.cache.links(&gitdir) {
                Ok(links) => links
                    .iter()
                    .map(|l| tree.join(OsStr::from_bytes(l)))
                    .collect(),
                // Failing closed: any nested repository may be one git enters.
                Err(()) => self.every_nested_repository(),
            };
            for dir in candidates {
                match self.judge(&dir) {
                    Verdict::Nothing => {}
                    Verdict::Enter(tree, gitdir) if depth < MAX_DEPTH => {
                        queue.push((tree, gitdir, depth + 1));
                    }
                    Verdict::Enter(tree, _) if self.is_found(&tree) => {}
                    Verdict::Enter(tree, _) => notes.extend(self.move_aside(
                        &tree.join(".git"),
                        "it lies deeper in submodules of submodules than rein follows",
                    )),
                    Verdict::Unsafe(dot_git, why) => notes.extend(self.move_aside(&dot_git, &why)),
                }
            }
        }
        notes
    }

    /// Whether the repository at `tree` (canonical) was found before the first command: its
    /// path and its `.git`'s identity (a command may rename the parent, the read-only binds
    /// with it, and make another repository at the path).
    fn is_found(&self, tree: &Path) -> bool {
        let Ok(rel) = tree.strip_prefix(&self.ws) else {
            return false;
        };
        let rel = rel.join(".git");
        let Ok(i) = self.found.binary_search_by(|(p, _)| p.cmp(&rel)) else {
            return false;
        };
        let dot_git = tree.join(".git");
        std::fs::symlink_metadata(&dot_git)
            .is_ok_and(|m| super::git::file_id(&dot_git, &m) == self.found[i].1)
    }

    /// Judges the directory a gitlink names.
    fn judge(&self, dir: &Path) -> Verdict {
        let dot_git = dir.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_err() {
            return Verdict::Nothing;
        }
        let Ok(tree) = super::paths::canonicalize(dir) else {
            return Verdict::Nothing;
        };
        // The workspace's own repository is protected as a whole; what lies outside every
        // place commands may write, no command made.
        if tree == self.ws || !self.writable_by_commands(&tree) {
            return Verdict::Nothing;
        }
        let found = self.is_found(&tree);
        let gitdir = match git_dir_of(&tree.join(".git"), &tree) {
            GitDir::None => return Verdict::Nothing,
            // The person's own: git fails there, or uses what was there before.
            GitDir::Unreadable(_) if found => return Verdict::Nothing,
            GitDir::Unreadable(why) => return Verdict::Unsafe(tree.join(".git"), why.into()),
            GitDir::Dir(gitdir) => gitdir,
        };
        if found {
            return Verdict::Enter(tree, gitdir);
        }
        match vet(&gitdir) {
            Ok(()) => Verdict::Enter(tree, gitdir),
            Err(why) => Verdict::Unsafe(tree.join(".git"), why),
        }
    }

    /// Whether `path` (canonical) lies where commands may write.
    fn writable_by_commands(&self, path: &Path) -> bool {
        path.starts_with(&self.ws)
            || self.writable.iter().any(|d| {
                path.starts_with(d)
                    || super::paths::canonicalize(d).is_ok_and(|d| path.starts_with(d))
            })
    }

    /// Every nested `.git` below the workspace and the temp dir (symlinks too: git follows
    /// them), for an index that cannot be read: the directories holding them.
    fn every_nested_repository(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for top in std::iter::once(&self.ws).chain(self.writable.first()) {
            let mut walk = super::git::NestedWalk::with_links();
            walk.run(top, usize::MAX);
            out.extend(
                walk.finish()
                    .iter()
                    .filter_map(|rel| top.join(rel).parent().map(Path::to_path_buf)),
            );
        }
        out
    }

    /// Moves `dot_git` aside (next to it, nothing lost); the note saying so and why.
    fn move_aside(&self, dot_git: &Path, why: &str) -> Option<String> {
        let parent = dot_git.parent()?;
        let what = format!(
            "the git repository at `{}` was made by a command, and the workspace's git would go \
             into it (a submodule entry names it) on the user's next `git status`, outside the \
             sandbox; {why}, which git would run",
            shown_in(&self.ws, parent)
        );
        Some(move_aside(&self.ws, dot_git, &what))
    }
}

/// What rein moved aside in this process, by identity and change time: the look for
/// repositories made does not take them for new ones (see `madegit`). The identity tells an
/// entry from a new one given the same inode number once it was deleted (a command could make
/// folders until one gets it); an entry changed since is looked at again, which is safe.
static MOVED_ASIDE: Mutex<std::collections::BTreeSet<AsideId>> =
    Mutex::new(std::collections::BTreeSet::new());

/// The entry's identity (see [`FileId`]) and its change time in seconds and nanoseconds.
type AsideId = (FileId, i64, i64);

fn aside_id(path: &Path, meta: &std::fs::Metadata) -> AsideId {
    (
        super::git::file_id(path, meta),
        meta.ctime(),
        meta.ctime_nsec(),
    )
}

/// Whether the entry at `path` (`meta` its metadata) is one rein moved aside, unchanged since.
pub(super) fn was_moved_aside(path: &Path, meta: &std::fs::Metadata) -> bool {
    crate::sync::lock(&MOVED_ASIDE).contains(&aside_id(path, meta))
}

/// `p` as the notes show it: relative to the workspace `ws` when inside it.
pub(super) fn shown_in(ws: &Path, p: &Path) -> String {
    p.strip_prefix(ws).unwrap_or(p).display().to_string()
}

/// Moves `dot_git` (or a git directory's `HEAD`) aside, next to it with [`ASIDE`] after its
/// name (nothing lost); the note saying so, after `what`. There is always a note: a name a
/// command took first gets a random one instead, and a move that fails says so. A directory
/// moved aside loses its own `HEAD` too, so that git does not take it for a git directory
/// when the person looks into it.
pub(super) fn move_aside(ws: &Path, dot_git: &Path, what: &str) -> String {
    match rename_aside(dot_git) {
        Ok(aside) => {
            if let Ok(m) = std::fs::symlink_metadata(&aside) {
                if m.is_dir() && std::fs::symlink_metadata(aside.join("HEAD")).is_ok() {
                    let _ = rename_aside(&aside.join("HEAD"));
                }
                // Known as it is now, after its `HEAD` went (which changed it).
                if let Ok(m) = std::fs::symlink_metadata(&aside) {
                    crate::sync::lock(&MOVED_ASIDE).insert(aside_id(&aside, &m));
                }
            }
            format!(
                "[{what}. rein moved `{}` aside to `{}` (not a repository there: do not run git \
                 inside it): look at it before moving it back.]",
                shown_in(ws, dot_git),
                shown_in(ws, &aside)
            )
        }
        Err(e) => format!(
            "[{what}. rein could not move `{}` aside ({e}): remove it before anyone runs git \
             in the workspace.]",
            shown_in(ws, dot_git)
        ),
    }
}

/// Renames `path` to a free name beside it: `NAME.rein-unsafe`, else with a random number
/// (never over an existing entry). A directory the person owns that a command made read-only
/// is made writable for the person first.
pub(super) fn rename_aside(path: &Path) -> std::io::Result<PathBuf> {
    let parent = path.parent().ok_or(std::io::ErrorKind::InvalidInput)?;
    let name = path
        .file_name()
        .ok_or(std::io::ErrorKind::InvalidInput)?
        .to_string_lossy()
        .into_owned();
    let candidates = std::iter::once(format!("{name}{ASIDE}"))
        .chain((0..16).map(|_| format!("{name}{ASIDE}-{}", rand::random::<u32>())));
    let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
    for candidate in candidates {
        let aside = parent.join(candidate);
        match rename_no_replace(path, &aside) {
            Ok(()) => return Ok(aside),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                super::madegit::give_owner_access(parent);
                match rename_no_replace(path, &aside) {
                    Ok(()) => return Ok(aside),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// `rename` that fails rather than replace `to` (`renameat2` with `RENAME_NOREPLACE`; where the
/// file system does not support that, a look first: the command that could race it is over).
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    let flags = rustix::fs::RenameFlags::NOREPLACE;
    match rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, flags) {
        Err(rustix::io::Errno::INVAL) if std::fs::symlink_metadata(to).is_err() => {
            std::fs::rename(from, to)
        }
        Err(rustix::io::Errno::INVAL) => Err(std::io::ErrorKind::AlreadyExists.into()),
        other => other.map_err(std::io::Error::from),
    }
}

/// After a command made the workspace's own repository (`ws/.git`, none before it): the person
/// runs git there next, so its configuration and hooks are vetted like a submodule's; an unsafe
/// one is moved aside, and the note says so (`None`: nothing to say beyond the usual).
pub(crate) fn vet_made_repository(ws: &Path) -> Option<String> {
    let dot_git = ws.join(".git");
    let why = match git_dir_of(&dot_git, ws) {
        GitDir::None => return None,
        GitDir::Unreadable(why) => why.to_string(),
        GitDir::Dir(gitdir) => vet(&gitdir).err()?,
    };
    let what = format!(
        "the command made the workspace's git repository (.git), which the user's git uses on \
         their next `git status`, outside the sandbox; {why}, which git would run"
    );
    Some(move_aside(ws, &dot_git, &what))
}

impl IndexCache {
    /// The gitlinks of `gitdir`'s index (none when it has none); read again only when the
    /// index (or its shared file) changed.
    fn links(&self, gitdir: &Path) -> Result<Arc<Vec<Vec<u8>>>, ()> {
        let index = gitdir.join("index");
        let mut cache = crate::sync::lock(&self.0);
        if let Some(c) = cache.get(&index)
            && c.files.iter().all(|(path, stamp)| stamp_of(path) == *stamp)
        {
            return c.links.clone();
        }
        let read = read_links(gitdir, &index);
        let Some(cached) = read else {
            cache.remove(&index);
            return Ok(Arc::default());
        };
        let links = cached.links.clone();
        cache.insert(index, cached);
        links
    }
}

/// Reads the gitlinks of `index` (`None`: there is no index).
fn read_links(gitdir: &Path, index: &Path) -> Option<Cached> {
    let (data, stamp) = match read_file(index, MAX_INDEX) {
        Ok(Some(read)) => read,
        Ok(None) => return None,
        Err(()) => {
            let stamp = stamp_of(index)?;
            return Some(Cached {
                files: vec![(index.to_path_buf(), Some(stamp))],
                links: Err(()),
            });
        }
    };
    let hash = hash_len(gitdir);
    let mut files = vec![(index.to_path_buf(), Some(stamp))];
    let links = gitindex::parse(&data, hash, false).and_then(|main| {
        let mut links = main.links;
        for hex in &main.shared {
            let path = gitdir.join(format!("sharedindex.{hex}"));
            // Missing or unreadable: failing closed (a later command may put it back, so its
            // appearance must be noticed too).
            let Ok(Some((data, stamp))) = read_file(&path, MAX_INDEX) else {
                files.push((path.clone(), stamp_of(&path)));
                return Err(());
            };
            files.push((path, Some(stamp)));
            let shared = gitindex::parse(&data, hash, true)?;
            links.extend(shared.links);
            // An entry without a name replaces one of the shared file's: any of them.
            if main.unnamed_link {
                links.extend(shared.names);
            }
        }
        links.sort();
        links.dedup();
        Ok(Arc::new(links))
    });
    Some(Cached { files, links })
}

/// The stamp of the file at `path` (following links), `None` when there is none.
fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
}

/// The length of object names in `gitdir`'s repository: 32 with SHA-256, else 20.
fn hash_len(gitdir: &Path) -> usize {
    let common = super::git::read_small(&gitdir.join("commondir"))
        .map(|c| gitdir.join(c.trim_end_matches(['\n', '\r'])))
        .unwrap_or_else(|| gitdir.to_path_buf());
    let sha256 = read_file(&common.join("config"), MAX_CONFIG)
        .ok()
        .flatten()
        .and_then(|(text, _)| gitconfig::parse(&text).ok())
        .is_some_and(|vars| {
            vars.iter().any(|(k, v)| {
                k == b"extensions.objectformat"
                    && v.as_deref()
                        .is_some_and(|v| v.eq_ignore_ascii_case(b"sha256"))
            })
        });
    if sha256 { 32 } else { 20 }
}

/// A regular file's bytes (following links, as git does, never blocking on a FIFO) and its
/// stamp; `None` when missing; `Err` when it is something else or larger than `max`.
fn read_file(path: &Path, max: u64) -> Result<Option<(Vec<u8>, Stamp)>, ()> {
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    let meta = file.metadata().map_err(|_| ())?;
    if !meta.is_file() || meta.len() > max {
        return Err(());
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut data).map_err(|_| ())?;
    Ok(Some((data, Stamp::of(&meta))))
}

/// The repository holding `ws` (its work tree's root and git directory), as git finds it
/// (a `.git` file git cannot read stops git there, and the search).
fn top_repository(ws: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in ws.ancestors() {
        let dot_git = d.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_err() {
            continue;
        }
        return match git_dir_of(&dot_git, d) {
            GitDir::Dir(g) => Some((d.to_path_buf(), g)),
            GitDir::Unreadable(_) => None,
            GitDir::None => continue,
        };
    }
    None
}

/// What a `.git` entry stands for.
pub(super) enum GitDir {
    /// Nothing git would use (missing, a dangling link, a FIFO, …).
    None,
    /// A git directory: the entry itself (or a link to one), or where its `gitdir:` names.
    Dir(PathBuf),
    /// A `.git` file that git would not read as rein does, or naming no directory: why.
    Unreadable(&'static str),
}

/// The git directory `dot_git` (in `dir`) stands for, as git follows it: a directory (or a
/// link to one), or a `gitdir: …` file naming one (relative to `dir`), read byte for byte as
/// git reads it.
pub(super) fn git_dir_of(dot_git: &Path, dir: &Path) -> GitDir {
    let Ok(meta) = std::fs::metadata(dot_git) else {
        return GitDir::None;
    };
    if meta.is_dir() {
        return GitDir::Dir(dot_git.to_path_buf());
    }
    if !meta.is_file() {
        return GitDir::None;
    }
    let Ok(target) = super::git::read_gitfile(dir, dot_git, true) else {
        return GitDir::Unreadable(
            "its `.git` file is not one rein reads as git does (`gitdir: ` and a path, at most 1 \
             MiB), so the repository git would use there is unchecked and may hold a program",
        );
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => GitDir::Dir(target),
        _ => GitDir::Unreadable(
            "its `.git` file names no directory (yet), so git would fail there or use a \
             repository rein has not checked, which may hold a program",
        ),
    }
}

/// Why the repository at `gitdir` could run a program when git is used in it, if it could.
pub(super) fn vet(gitdir: &Path) -> Result<(), String> {
    // `git init` and `git clone` never make a link there; a link lets a write elsewhere (a file
    // tool's, outside any command) change what git reads after the check.
    for name in ["config", "config.worktree", "hooks", "commondir", "info"] {
        if std::fs::symlink_metadata(gitdir.join(name)).is_ok_and(|m| m.is_symlink()) {
            return Err(format!("its `{name}` is a symbolic link"));
        }
    }
    if std::fs::symlink_metadata(gitdir.join("commondir")).is_ok() {
        return Err(
            "it has a `commondir` file (git would read another repository's \
                    configuration and hooks)"
                .into(),
        );
    }
    for name in ["config", "config.worktree"] {
        let text = match read_file(&gitdir.join(name), MAX_CONFIG) {
            Ok(Some((text, _))) => text,
            Ok(None) => continue,
            Err(()) => return Err(format!("its `{name}` is not a small plain file")),
        };
        let vars = gitconfig::parse(&text)
            .map_err(|()| format!("its `{name}` is not plain git configuration"))?;
        if let Some((key, _)) = vars.iter().find(|(k, _)| !allow::session_allowed(k)) {
            return Err(format!(
                "its `{name}` sets `{}`",
                String::from_utf8_lossy(key)
            ));
        }
    }
    let hooks = gitdir.join("hooks");
    match std::fs::metadata(&hooks) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(m) if m.is_dir() => {
            let entries =
                std::fs::read_dir(&hooks).map_err(|_| "its `hooks` cannot be read".to_string())?;
            for entry in entries {
                let name = entry
                    .map_err(|_| "its `hooks` cannot be read".to_string())?
                    .file_name();
                if !name.as_bytes().ends_with(b".sample") {
                    return Err(format!(
                        "it has the hook `hooks/{}`",
                        name.to_string_lossy()
                    ));
                }
            }
            Ok(())
        }
        _ => Err("its `hooks` is not a plain directory".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        std::process::Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@b"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// A workspace repository with a committed nested repository at `vendor/lib`, staged as
    /// a gitlink; `None` without git.
    fn workspace() -> Option<(tempfile::TempDir, PathBuf)> {
        let dir = tempfile::tempdir().ok()?;
        let ws = dir.path().canonicalize().ok()?.join("ws");
        let lib = ws.join("vendor/lib");
        std::fs::create_dir_all(&lib).ok()?;
        if !git(&ws, &["init", "-q", "."]) {
            return None;
        }
        assert!(git(&lib, &["init", "-q", "."]));
        std::fs::write(lib.join("f"), "x").unwrap();
        assert!(git(&lib, &["add", "f"]));
        assert!(git(&lib, &["commit", "-qm", "s"]));
        assert!(git(&ws, &["add", "vendor/lib"]));
        Some((dir, ws))
    }

    /// `rel` as found before the first command, with its identity now.
    fn found_at(ws: &Path, rel: &str) -> Arc<Vec<(PathBuf, FileId)>> {
        let m = std::fs::symlink_metadata(ws.join(rel)).unwrap();
        Arc::new(vec![(
            PathBuf::from(rel),
            super::super::git::file_id(&ws.join(rel), &m),
        )])
    }

    fn check(ws: &Path) -> GitlinkCheck {
        GitlinkCheck {
            ws: ws.to_path_buf(),
            found: Arc::default(),
            writable: Vec::new(),
            cache: Arc::default(),
            made: None,
        }
    }

    #[test]
    fn a_plain_clone_is_left_alone_and_the_index_read_once() {
        let Some((_d, ws)) = workspace() else {
            return;
        };
        let c = check(&ws);
        assert_eq!(c.run(), Vec::<String>::new());
        assert!(ws.join("vendor/lib/.git/config").exists());
        let cached = crate::sync::lock(&c.cache.0).len();
        assert_eq!(cached, 2, "the workspace's index and the nested one");
    }

    /// Plants a way to run a program in a git directory.
    type Plant = dyn Fn(&Path);

    #[test]
    fn every_way_to_run_a_program_is_moved_aside() {
        let plants: [(&str, &Plant); 6] = [
            ("core.fsmonitor", &|g| {
                let mut c = std::fs::read_to_string(g.join("config")).unwrap();
                c.push_str("[core]\n\tfsmonitor = touch /tmp/x; false #\n");
                std::fs::write(g.join("config"), c).unwrap();
            }),
            ("hooks/post-index-change", &|g| {
                std::fs::create_dir_all(g.join("hooks")).unwrap();
                std::fs::write(g.join("hooks/post-index-change"), "#!/bin/sh\n").unwrap();
            }),
            ("core.hookspath", &|g| {
                let mut c = std::fs::read_to_string(g.join("config")).unwrap();
                c.push_str("[core]\n\thooksPath = /tmp\n");
                std::fs::write(g.join("config"), c).unwrap();
            }),
            ("commondir", &|g| {
                std::fs::write(g.join("commondir"), "../..\n").unwrap()
            }),
            ("config.worktree", &|g| {
                std::fs::write(g.join("config.worktree"), "[core]\n\tpager = x\n").unwrap();
            }),
            ("include.path", &|g| {
                let mut c = std::fs::read_to_string(g.join("config")).unwrap();
                c.push_str("[include]\n\tpath = ../evil\n");
                std::fs::write(g.join("config"), c).unwrap();
            }),
        ];
        for (what, plant) in plants {
            let Some((_d, ws)) = workspace() else {
                return;
            };
            plant(&ws.join("vendor/lib/.git"));
            let notes = check(&ws).run();
            assert_eq!(notes.len(), 1, "{what}: {notes:?}");
            assert!(
                notes[0].contains(what) && notes[0].contains("vendor/lib"),
                "{notes:?}"
            );
            assert!(!ws.join("vendor/lib/.git").exists(), "{what}");
            assert!(
                ws.join("vendor/lib").join(".git.rein-unsafe").is_dir(),
                "{what}"
            );
        }
    }

    #[test]
    fn a_gitdir_file_naming_a_directory_and_a_found_repository() {
        let Some((_d, ws)) = workspace() else {
            return;
        };
        // The `.git` a gitlink path holds is a file naming a directory of the workspace.
        let lib = ws.join("vendor/lib");
        std::fs::rename(lib.join(".git"), ws.join("hidden-gitdir")).unwrap();
        std::fs::write(lib.join(".git"), "gitdir: ../../hidden-gitdir\n").unwrap();
        std::fs::create_dir_all(ws.join("hidden-gitdir/hooks")).unwrap();
        std::fs::write(ws.join("hidden-gitdir/hooks/pre-commit"), "x").unwrap();
        // Found before the first command: the person's own, left alone.
        let mut c = check(&ws);
        c.found = found_at(&ws, "vendor/lib/.git");
        assert_eq!(c.run(), Vec::<String>::new());
        let notes = check(&ws).run();
        assert!(
            notes.len() == 1 && notes[0].contains("hooks/pre-commit"),
            "{notes:?}"
        );
        assert!(lib.join(".git.rein-unsafe").is_file());
        assert!(
            ws.join("hidden-gitdir").is_dir(),
            "the directory itself stays"
        );
    }

    /// A found repository's path with another `.git` there (its parent renamed, a new
    /// repository made): vetted like a new one.
    #[test]
    fn a_found_path_with_another_git_is_vetted() {
        let Some((_d, ws)) = workspace() else {
            return;
        };
        let lib = ws.join("vendor/lib");
        let mut c = check(&ws);
        c.found = found_at(&ws, "vendor/lib/.git");
        std::fs::rename(&lib, ws.join("vendor/old")).unwrap();
        std::fs::create_dir_all(lib.join(".git/hooks")).unwrap();
        std::fs::write(lib.join(".git/hooks/post-index-change"), "x").unwrap();
        let notes = c.run();
        assert!(
            notes.len() == 1 && notes[0].contains("post-index-change"),
            "{notes:?}"
        );
        assert!(lib.join(".git.rein-unsafe").is_dir());
    }

    /// git goes on into the submodules of a submodule, the person's own included.
    #[test]
    fn submodules_of_submodules_are_checked_too() {
        let Some((_d, ws)) = workspace() else {
            return;
        };
        let lib = ws.join("vendor/lib");
        let deep = lib.join("deep");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(git(&deep, &["init", "-q", "."]));
        std::fs::write(deep.join("f"), "x").unwrap();
        assert!(git(&deep, &["add", "f"]));
        assert!(git(&deep, &["commit", "-qm", "s"]));
        assert!(git(&lib, &["add", "deep"]));
        std::fs::write(deep.join(".git/hooks/post-index-change"), "x").unwrap();
        // `vendor/lib` is the person's (found before the first command); `deep` is not.
        let mut c = check(&ws);
        c.found = found_at(&ws, "vendor/lib/.git");
        let notes = c.run();
        assert!(
            notes.len() == 1 && notes[0].contains("`vendor/lib/deep`"),
            "{notes:?}"
        );
        assert!(lib.join(".git").is_dir() && deep.join(".git.rein-unsafe").is_dir());
    }

    #[test]
    fn an_index_that_cannot_be_read_means_every_nested_repository_is_checked() {
        let Some((_d, ws)) = workspace() else {
            return;
        };
        std::fs::write(
            ws.join(".git/index"),
            b"DIRC\0\0\0\x09garbage-and-more-garbage",
        )
        .unwrap();
        std::fs::create_dir_all(ws.join("other/.git/hooks")).unwrap();
        std::fs::write(ws.join("other/.git/hooks/pre-push"), "x").unwrap();
        let notes = check(&ws).run();
        assert!(notes.len() == 1 && notes[0].contains("other"), "{notes:?}");
    }
}
