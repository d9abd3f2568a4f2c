//! What rein checks after every command in the workspace, for what mounts cannot protect.
//!
//! - Always: a `.rein` that did not exist before the command is removed before anything can
//!   read it (rein reads `.rein/config.toml` when it starts; no process of the command is left
//!   once this runs), a symlinked `.git` that was re-pointed is put back, and a `.git` the
//!   command created is reported (it is protected from the next command on).
//! - Without namespaces (the fallback), also a snapshot of everything in `.git` that is not
//!   on the allow-list (`config`, `hooks/`, `info/`, `commondir`, `modules/*/config`, …) and of
//!   `.rein/`: after the command, what changed is restored and what is new is removed, and the
//!   model and the person are told.

use super::git::{GitEntry, classify};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Files above this size are remembered by identity only (they cannot be restored).
const KEEP_LIMIT: u64 = 1 << 20;

/// State files above this size are not remembered (an index can be large; it is read anew
/// for every command).
const STATE_LIMIT: u64 = 64 << 10;

/// One remembered entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Dir {
        mode: u32,
        children: BTreeMap<OsString, Node>,
    },
    File {
        mode: u32,
        content: Content,
    },
    Link(PathBuf),
    /// A FIFO, socket or device: only its kind is remembered.
    Special,
    /// An allow-listed state file of git (`HEAD`, `index`, …): its content may change, it may
    /// go, but it must stay a regular file (never a link git would follow). Small ones are
    /// remembered, to be put back.
    State(Option<(u32, Vec<u8>)>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Content {
    Bytes(Vec<u8>),
    /// Too large to keep: size, inode and change time. The change time, unlike the
    /// modification time, cannot be set back by a command (`touch -d` updates it), so a
    /// same-size rewrite is seen.
    Large {
        len: u64,
        ino: u64,
        ctime: (i64, i64),
    },
}

/// What a subtree selection keeps: all of it, or (a git dir) only what is protected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Select {
    All,
    GitDir,
}

fn read_node(path: &Path, select: Select) -> Option<Node> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mode = meta.permissions().mode() & 0o7777;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return std::fs::read_link(path).ok().map(Node::Link);
    }
    if kind.is_file() {
        let content = if meta.len() > KEEP_LIMIT {
            Content::Large {
                len: meta.len(),
                ino: meta.ino(),
                ctime: (meta.ctime(), meta.ctime_nsec()),
            }
        } else {
            Content::Bytes(read_kept(path, &meta))
        };
        return Some(Node::File { mode, content });
    }
    if !kind.is_dir() {
        return Some(Node::Special);
    }
    let mut children = BTreeMap::new();
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        let name = entry.file_name();
        let is_dir = entry.file_type().is_ok_and(|k| k.is_dir());
        let child = path.join(&name);
        let node = match select {
            Select::All => read_node(&child, Select::All),
            Select::GitDir => match classify(&name, is_dir) {
                GitEntry::Protected if is_dir && (name == "modules" || name == "worktrees") => {
                    read_git_dirs(&child)
                }
                GitEntry::Protected => read_node(&child, Select::All),
                GitEntry::CopiedFile => read_state(&child),
                _ => continue,
            },
        };
        if let Some(node) = node {
            children.insert(name, node);
        }
    }
    Some(Node::Dir { mode, children })
}

/// An allow-listed state file: a regular file is remembered as such, anything else as itself.
fn read_state(path: &Path) -> Option<Node> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return read_node(path, Select::All);
    }
    let content = (meta.len() <= STATE_LIMIT).then(|| {
        let mode = meta.permissions().mode() & 0o7777;
        (mode, read_kept(path, &meta))
    });
    Some(Node::State(content))
}

/// Files read before, with the stamp they had then (see [`read_kept`]).
static READ_BEFORE: std::sync::Mutex<Vec<(PathBuf, super::stamp::Id, Vec<u8>)>> =
    std::sync::Mutex::new(Vec::new());

/// Most bytes kept in [`READ_BEFORE`] (past it, it starts anew).
const READ_BEFORE_LIMIT: usize = 8 << 20;

/// The content of the regular file at `path` (`meta`: its metadata, read first). Without
/// namespaces every protected file of `.git` (a fresh repository's sample hooks included) is
/// read before and after each command; one whose stamp is what it was when it was last read,
/// and older than the last moment a change could hide within one timestamp tick, is not read
/// again. Its change time moves with every write and cannot be set back by a command, so an
/// equal stamp is the same content. Bytes that changed while being read are never matched
/// again: the file's stamp moved on.
fn read_kept(path: &Path, meta: &std::fs::Metadata) -> Vec<u8> {
    use super::stamp;
    let Some(id) = stamp::of(meta) else {
        return std::fs::read(path).unwrap_or_default();
    };
    let settled = !stamp::unsettled(&Some(id), stamp::settled_now());
    let mut kept = crate::sync::lock(&READ_BEFORE);
    if settled && let Some((_, _, bytes)) = kept.iter().find(|(p, i, _)| *i == id && p == path) {
        return bytes.clone();
    }
    let bytes = std::fs::read(path).unwrap_or_default();
    if settled {
        kept.retain(|(p, _, _)| p != path);
        let held: usize = kept.iter().map(|(_, _, b)| b.len()).sum();
        if held + bytes.len() > READ_BEFORE_LIMIT {
            kept.clear();
        }
        kept.push((path.to_path_buf(), id, bytes.clone()));
    }
    bytes
}

/// `modules/` and `worktrees/`: each entry is a git directory of its own (nested modules too).
fn read_git_dirs(path: &Path) -> Option<Node> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return read_node(path, Select::All);
    }
    let mut children = BTreeMap::new();
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        let child = path.join(entry.file_name());
        // A module name may contain slashes: a directory without HEAD holds more modules.
        let select = if child.join("HEAD").exists() || !entry.file_type().is_ok_and(|k| k.is_dir())
        {
            read_node(&child, Select::GitDir)
        } else {
            read_git_dirs(&child)
        };
        if let Some(node) = select {
            children.insert(entry.file_name(), node);
        }
    }
    Some(Node::Dir {
        mode: meta.permissions().mode() & 0o7777,
        children,
    })
}

/// Removes whatever is at `path` without following links.
fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Writes `node` at `path` (which must not exist).
fn create(path: &Path, node: &Node) -> bool {
    match node {
        Node::Dir { mode, children } => {
            if std::fs::create_dir(path).is_err() {
                return false;
            }
            let mut ok = true;
            for (name, child) in children {
                ok &= create(&path.join(name), child);
            }
            ok && std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).is_ok()
        }
        Node::File {
            mode,
            content: Content::Bytes(bytes),
        } => {
            std::fs::write(path, bytes).is_ok()
                && std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).is_ok()
        }
        Node::Link(target) => std::os::unix::fs::symlink(target, path).is_ok(),
        Node::State(Some((mode, bytes))) => create(
            path,
            &Node::File {
                mode: *mode,
                content: Content::Bytes(bytes.clone()),
            },
        ),
        Node::File {
            content: Content::Large { .. },
            ..
        }
        | Node::State(None)
        | Node::Special => false,
    }
}

/// Makes `path` look like `want` again (`None`: absent), where `now` is what is there.
/// Records the paths it changed and those it could not restore.
fn restore(path: &Path, want: Option<&Node>, now: Option<&Node>, out: &mut Restored) {
    match (want, now) {
        (None, None) => {}
        (Some(w), Some(n)) if w == n => {}
        // Allowed changes to git's state files: new content, a new file, a removed one.
        (Some(Node::State(_)) | None, Some(Node::State(_))) | (Some(Node::State(_)), None) => {}
        (
            Some(Node::Dir {
                mode,
                children: want,
            }),
            Some(Node::Dir { children: now, .. }),
        ) => {
            for name in want
                .keys()
                .chain(now.keys().filter(|k| !want.contains_key(*k)))
            {
                restore(&path.join(name), want.get(name), now.get(name), out);
            }
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode));
        }
        (want, Some(_)) => {
            remove(path);
            out.changed.push(path.to_path_buf());
            if let Some(w) = want
                && !create(path, w)
            {
                out.failed.push(path.to_path_buf());
            }
        }
        (Some(w), None) => {
            out.changed.push(path.to_path_buf());
            if !create(path, w) {
                out.failed.push(path.to_path_buf());
            }
        }
    }
}

#[derive(Default)]
struct Restored {
    changed: Vec<PathBuf>,
    failed: Vec<PathBuf>,
}

/// The workspace's protected state before a command.
pub(crate) struct Tripwire {
    ws: PathBuf,
    /// `.git` as it was (only its protected parts when `full`); `None`: absent.
    git: Option<Node>,
    /// The `.git` directory's device and inode, to find it if the command renamed it.
    git_id: Option<super::git::FileId>,
    /// `.rein` as it was (all of it when `full`, else only whether it existed).
    rein: Option<Node>,
    /// Nested `.git` entries (relative) and their protected parts, when `full` (with
    /// namespaces they are read-only mounts instead).
    nested: Vec<(PathBuf, Node)>,
    /// Hook directories the person's git configuration names in the workspace.
    hooks: Vec<HookDir>,
    full: bool,
}

/// A hook directory before the command: how its path resolved, and (when `full`) its content.
struct HookDir {
    /// Relative to the workspace, as configured.
    rel: PathBuf,
    /// What each leading part of `rel` was (the first component first).
    steps: Vec<Option<Step>>,
    content: Option<Node>,
}

/// What one part of a hook directory's path was: a link and its target, or an entry by identity.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Link(PathBuf),
    Entry { dev: u64, ino: u64, dir: bool },
}

impl Step {
    /// The parts of `rel` below `ws`, each as it is now.
    fn walk(ws: &Path, rel: &Path) -> Vec<Option<Step>> {
        let mut path = ws.to_path_buf();
        rel.components()
            .map(|c| {
                path.push(c);
                let meta = std::fs::symlink_metadata(&path).ok()?;
                Some(match meta.is_symlink() {
                    true => Step::Link(std::fs::read_link(&path).ok()?),
                    false => Step::Entry {
                        dev: meta.dev(),
                        ino: meta.ino(),
                        dir: meta.is_dir(),
                    },
                })
            })
            .collect()
    }
}

impl Tripwire {
    /// Remembers the state of `ws`: everything protected when `full` (no mount namespace),
    /// otherwise only what the mounts cannot cover.
    pub(crate) fn arm(
        ws: &Path,
        full: bool,
        nested_git: &[PathBuf],
        hooks: &[PathBuf],
    ) -> Tripwire {
        let top = |name: &str, select| {
            let path = ws.join(name);
            if full {
                read_node(&path, select)
            } else {
                // Existence, and a link's target: enough to notice a new or re-pointed entry.
                std::fs::symlink_metadata(&path)
                    .ok()
                    .map(|m| match m.is_symlink() {
                        true => std::fs::read_link(&path).map_or(Node::Special, Node::Link),
                        false => Node::Special,
                    })
            }
        };
        let nested = match full {
            true => nested_git
                .iter()
                .filter_map(|rel| Some((rel.clone(), read_node(&ws.join(rel), Select::GitDir)?)))
                .filter(|(_, node)| !matches!(node, Node::Link(_)))
                .collect(),
            false => Vec::new(),
        };
        let hooks = hooks
            .iter()
            .map(|rel| HookDir {
                rel: rel.clone(),
                steps: Step::walk(ws, rel),
                content: full
                    .then(|| read_node(&ws.join(rel), Select::All))
                    .flatten(),
            })
            .collect();
        Tripwire {
            ws: ws.to_path_buf(),
            git: top(".git", Select::GitDir),
            git_id: dir_id(&ws.join(".git")),
            rein: top(".rein", Select::All),
            nested,
            hooks,
            full,
        }
    }

    /// Puts a hook directory's path back where it led (a part made, re-pointed or swapped by
    /// the command is removed, or moved aside when it is a directory: nothing is lost), and,
    /// when `full`, its content as it was.
    fn restore_hooks(&self, hook: &HookDir) -> Option<String> {
        let now = Step::walk(&self.ws, &hook.rel);
        let mut r = Restored::default();
        // A part that is gone is no harm (git finds no hooks there); one that is new or other is.
        let changed = hook
            .steps
            .iter()
            .zip(&now)
            .position(|(b, n)| n.is_some() && b != n);
        if let Some(i) = changed {
            let part: PathBuf = self
                .ws
                .join(hook.rel.components().take(i + 1).collect::<PathBuf>());
            r.changed.push(part.clone());
            if matches!(now[i], Some(Step::Entry { dir: true, .. })) {
                let name = part
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let aside =
                    part.with_file_name(format!("{name}.rein-moved-{}", rand::random::<u32>()));
                if std::fs::rename(&part, &aside).is_err() {
                    r.failed.push(part.clone());
                }
            } else {
                remove(&part);
            }
            if let Some(Step::Link(target)) = &hook.steps[i]
                && std::os::unix::fs::symlink(target, &part).is_err()
            {
                r.failed.push(part.clone());
            }
        }
        let path = self.ws.join(&hook.rel);
        let now = self.full.then(|| read_node(&path, Select::All)).flatten();
        match (&hook.content, changed) {
            (want, None) if self.full => restore(&path, want.as_ref(), now.as_ref(), &mut r),
            // The directory itself was deleted and made anew: its old content comes back.
            (Some(want), Some(_))
                if now.is_none()
                    && path.parent().is_some_and(Path::is_dir)
                    && !create(&path, want) =>
            {
                r.failed.push(path.clone());
            }
            _ => {}
        }
        self.note(&r)
    }

    /// After the command: undoes what must not have changed and says what it did.
    pub(crate) fn check(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let rein = self.ws.join(".rein");
        match &self.rein {
            None if std::fs::symlink_metadata(&rein).is_ok() => {
                remove(&rein);
                notes.push(
                    "[sandbox] The command created .rein/, rein's project settings; rein removed it. \
                     Ask the user to make such changes themselves."
                        .to_string(),
                );
            }
            Some(before) if self.full => {
                let mut r = Restored::default();
                restore(
                    &rein,
                    Some(before),
                    read_node(&rein, Select::All).as_ref(),
                    &mut r,
                );
                notes.extend(self.note(&r));
            }
            _ => {}
        }
        let git = self.ws.join(".git");
        match &self.git {
            None if std::fs::symlink_metadata(&git).is_ok() => notes.push(
                super::gitlinks::vet_made_repository(&self.ws).unwrap_or_else(|| {
                    "[sandbox] The command created a git repository (.git); its configuration and \
                     hooks are protected from the next command on."
                        .to_string()
                }),
            ),
            Some(Node::Link(target)) if std::fs::read_link(&git).ok().as_ref() != Some(target) => {
                let mut r = Restored::default();
                restore(
                    &git,
                    self.git.as_ref(),
                    read_node(&git, Select::All).as_ref(),
                    &mut r,
                );
                notes.extend(self.note(&r));
            }
            Some(Node::Link(_)) => {}
            Some(before) if self.full => {
                notes.extend(self.bring_back_moved_git(&git));
                notes.extend(self.restore_git(&git, before));
            }
            _ => {}
        }
        for (rel, before) in &self.nested {
            notes.extend(self.restore_git(&self.ws.join(rel), before));
        }
        for hook in &self.hooks {
            notes.extend(self.restore_hooks(hook));
        }
        notes
    }

    /// A `.git` directory the command renamed within the workspace's top level is moved
    /// back (what took its place goes aside), so that its planted parts are undone below and
    /// the person never moves the planted copy back themselves.
    fn bring_back_moved_git(&self, git: &Path) -> Option<String> {
        let id = self.git_id?;
        if dir_id(git) == Some(id) {
            return None;
        }
        let moved = std::fs::read_dir(&self.ws)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| dir_id(p) == Some(id))?;
        if std::fs::symlink_metadata(git).is_ok() {
            let aside = git.with_file_name(format!(".git.rein-moved-{}", rand::random::<u32>()));
            std::fs::rename(git, aside).ok()?;
        }
        std::fs::rename(&moved, git).ok()?;
        let name = moved.file_name().unwrap_or_default().to_string_lossy();
        Some(format!(
            "[sandbox] The command moved the repository's .git to {name}; rein moved it back."
        ))
    }

    /// Puts the protected parts of the git directory (or `.git` file) at `git` back as they
    /// were; a directory swapped for a file or link is moved aside, not deleted.
    fn restore_git(&self, git: &Path, before: &Node) -> Option<String> {
        let now = read_node(git, Select::GitDir);
        let mut r = Restored::default();
        if let (Node::Dir { .. }, Some(n)) = (before, &now)
            && !matches!(n, Node::Dir { .. })
        {
            let aside = git.with_file_name(format!(".git.rein-moved-{}", rand::random::<u32>()));
            let _ = std::fs::rename(git, &aside);
            r.changed.push(git.to_path_buf());
            r.failed.push(git.to_path_buf());
        } else {
            restore(git, Some(before), now.as_ref(), &mut r);
        }
        self.note(&r)
    }

    fn note(&self, r: &Restored) -> Option<String> {
        if r.changed.is_empty() {
            return None;
        }
        let rel = |p: &PathBuf| p.strip_prefix(&self.ws).unwrap_or(p).display().to_string();
        let list: Vec<String> = r.changed.iter().map(rel).collect();
        let mut note = format!(
            "[sandbox] The command changed {}, which the sandbox protects (git and rein read them \
             as configuration); rein put them back as they were. Ask the user to make such \
             changes themselves.",
            list.join(", ")
        );
        if !r.failed.is_empty() {
            let failed: Vec<String> = r.failed.iter().map(rel).collect();
            note.push_str(&format!(
                " Could not restore {}: the user should check them.",
                failed.join(", ")
            ));
        }
        Some(note)
    }
}

/// A directory's identity (not following a link): a folder given the number of a deleted
/// `.git` is not taken for it (see [`super::git::FileId`]).
fn dir_id(path: &Path) -> Option<super::git::FileId> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_dir().then(|| super::git::file_id(path, &meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for d in [
            ".git/hooks",
            ".git/objects",
            ".git/modules/sub/hooks",
            ".rein",
        ] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        for (f, t) in [
            (".git/config", "[core]\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
            (".git/hooks/pre-commit.sample", "#!/bin/sh\n"),
            (".git/modules/sub/HEAD", "ref: refs/heads/main\n"),
            (".git/modules/sub/config", "[core]\n"),
            (".rein/config.toml", "sandbox = \"read-only\"\n"),
        ] {
            std::fs::write(ws.join(f), t).unwrap();
        }
        (dir, ws)
    }

    #[test]
    fn protected_changes_are_undone_and_allowed_ones_kept() {
        let (_d, ws) = workspace();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        std::fs::write(ws.join(".git/config"), "[core]\n\tfsmonitor = evil\n").unwrap();
        std::fs::write(ws.join(".git/commondir"), "/tmp/evil").unwrap();
        std::fs::write(ws.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::remove_file(ws.join(".git/hooks/pre-commit.sample")).unwrap();
        std::fs::write(ws.join(".git/modules/sub/config"), "[core]\nhooksPath=/x\n").unwrap();
        std::fs::write(ws.join(".git/modules/sub/commondir"), "/tmp/evil").unwrap();
        std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
        std::fs::write(ws.join(".git/objects/new"), "obj").unwrap();
        std::fs::write(ws.join(".rein/config.toml"), "sandbox = \"off\"\n").unwrap();
        let notes = t.check();
        let read = |p: &str| std::fs::read_to_string(ws.join(p)).ok();
        assert_eq!(read(".git/config").as_deref(), Some("[core]\n"));
        assert_eq!(read(".git/modules/sub/config").as_deref(), Some("[core]\n"));
        assert_eq!(
            read(".git/hooks/pre-commit.sample").as_deref(),
            Some("#!/bin/sh\n")
        );
        assert_eq!(
            read(".rein/config.toml").as_deref(),
            Some("sandbox = \"read-only\"\n")
        );
        for gone in [
            ".git/commondir",
            ".git/hooks/pre-commit",
            ".git/modules/sub/commondir",
        ] {
            assert!(!ws.join(gone).exists(), "{gone}");
        }
        assert_eq!(
            read(".git/HEAD").as_deref(),
            Some("ref: refs/heads/other\n")
        );
        assert_eq!(read(".git/objects/new").as_deref(), Some("obj"));
        let all = notes.join("\n");
        for p in [".git/config", ".git/commondir", ".rein/config.toml"] {
            assert!(all.contains(p), "{all}");
        }
        assert!(!all.contains("HEAD") && !all.contains("objects"), "{all}");
        // Nothing changed: nothing to say.
        assert!(Tripwire::arm(&ws, true, &[], &[]).check().is_empty());
    }

    #[test]
    fn a_large_hook_rewritten_with_its_old_time_is_still_seen() {
        let (_d, ws) = workspace();
        let hook = ws.join(".git/hooks/pre-commit");
        let benign = format!("#!/bin/sh\n#{}\n", "x".repeat(KEEP_LIMIT as usize));
        std::fs::write(&hook, &benign).unwrap();
        let old = std::fs::metadata(&hook).unwrap().modified().unwrap();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        // Same size, same modification time: only the change time tells.
        let planted = benign.replacen("#!/bin/sh\n#x", "#!/bin/sh\nid", 1);
        assert_eq!(planted.len(), benign.len());
        std::fs::write(&hook, &planted).unwrap();
        let f = std::fs::File::options().write(true).open(&hook).unwrap();
        f.set_modified(old).unwrap();
        drop(f);
        let notes = t.check().join("\n");
        assert!(
            std::fs::read_to_string(&hook).map_or(true, |now| now != planted),
            "the planted hook is still there"
        );
        assert!(notes.contains("pre-commit"), "{notes}");
    }

    #[test]
    fn a_hook_read_before_and_rewritten_with_its_old_time_is_still_seen() {
        let (_d, ws) = workspace();
        let sample = ws.join(".git/hooks/pre-commit.sample");
        let old = std::fs::metadata(&sample).unwrap().modified().unwrap();
        // Settled (older than a timestamp tick and then some), so its content is kept and
        // the next arm does not read it again.
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert!(Tripwire::arm(&ws, true, &[], &[]).check().is_empty());
        let t = Tripwire::arm(&ws, true, &[], &[]);
        // Same size, same modification time: only the change time tells.
        std::fs::write(&sample, "#!/bin/id\n").unwrap();
        let f = std::fs::File::options().write(true).open(&sample).unwrap();
        f.set_modified(old).unwrap();
        drop(f);
        // A command that ran on after the write: the change has settled by the check.
        std::thread::sleep(std::time::Duration::from_millis(150));
        let notes = t.check().join("\n");
        assert_eq!(
            std::fs::read_to_string(&sample).unwrap(),
            "#!/bin/sh\n",
            "the rewritten sample was not put back"
        );
        assert!(notes.contains("pre-commit.sample"), "{notes}");
    }

    #[test]
    fn state_files_may_change_but_not_become_links() {
        let (_d, ws) = workspace();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        std::fs::remove_file(ws.join(".git/HEAD")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ws.join(".git/HEAD")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ws.join(".git/ORIG_HEAD")).unwrap();
        std::fs::write(ws.join(".git/MERGE_MSG"), "allowed").unwrap();
        let all = t.check().join("\n");
        let head = ws.join(".git/HEAD");
        assert!(std::fs::symlink_metadata(&head).unwrap().is_file());
        assert_eq!(
            std::fs::read_to_string(&head).unwrap(),
            "ref: refs/heads/main\n"
        );
        assert!(std::fs::symlink_metadata(ws.join(".git/ORIG_HEAD")).is_err());
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/MERGE_MSG")).unwrap(),
            "allowed"
        );
        assert!(
            all.contains(".git/HEAD") && all.contains(".git/ORIG_HEAD"),
            "{all}"
        );
        assert!(!all.contains("MERGE_MSG"), "{all}");
    }

    #[test]
    fn a_new_rein_dir_is_removed_and_a_new_repository_reported() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().to_path_buf();
        for full in [false, true] {
            let t = Tripwire::arm(&ws, full, &[], &[]);
            std::fs::create_dir_all(ws.join(".rein")).unwrap();
            std::fs::write(ws.join(".rein/config.toml"), "x").unwrap();
            std::fs::create_dir_all(ws.join(".git")).unwrap();
            let notes = t.check().join("\n");
            assert!(!ws.join(".rein").exists());
            assert!(
                notes.contains(".rein") && notes.contains("git repository"),
                "{notes}"
            );
            std::fs::remove_dir_all(ws.join(".git")).unwrap();
        }
    }

    #[test]
    fn a_repointed_git_link_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().to_path_buf();
        std::os::unix::fs::symlink("/real/repo", ws.join(".git")).unwrap();
        let t = Tripwire::arm(&ws, false, &[], &[]);
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink("/tmp/planted", ws.join(".git")).unwrap();
        let notes = t.check();
        assert_eq!(
            std::fs::read_link(ws.join(".git")).unwrap(),
            Path::new("/real/repo")
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_renamed_repository_is_moved_back_and_its_plants_undone() {
        let (_d, ws) = workspace();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        std::fs::write(ws.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::rename(ws.join(".git"), ws.join(".git-away")).unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let notes = t.check().join("\n");
        assert!(!ws.join(".git-away").exists(), "{notes}");
        assert!(!ws.join(".git/hooks/pre-commit").exists(), "{notes}");
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        assert!(
            notes.contains("moved the repository's .git to .git-away"),
            "{notes}"
        );
    }

    /// A folder that gets the inode number of the deleted `.git` is not taken for the
    /// repository moved away, and not moved into its place.
    #[test]
    fn a_folder_given_the_number_of_a_deleted_git_is_not_moved_back() {
        let (_d, ws) = workspace();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        let ino = std::fs::symlink_metadata(ws.join(".git")).unwrap().ino();
        let made = ws.join("made");
        std::fs::create_dir(&made).unwrap();
        std::fs::remove_dir_all(ws.join(".git")).unwrap();
        let Some(dir) = super::super::git::folder_with_inode(&made, ino) else {
            return;
        };
        // At the top, where a renamed `.git` would be looked for.
        let top = ws.join("lookalike");
        std::fs::rename(&dir, &top).unwrap();
        let notes = t.check().join("\n");
        assert!(top.is_dir(), "{notes}");
        assert!(!notes.contains("moved the repository's .git"), "{notes}");
    }

    #[test]
    fn a_swapped_repository_is_moved_aside() {
        let (_d, ws) = workspace();
        let t = Tripwire::arm(&ws, true, &[], &[]);
        std::fs::rename(ws.join(".git"), ws.join("old")).unwrap();
        std::fs::write(ws.join(".git"), "gitdir: /tmp/evil\n").unwrap();
        let notes = t.check().join("\n");
        // The real repository is back, the `.git` file that replaced it aside.
        assert!(
            ws.join(".git/HEAD").is_file() && !ws.join("old").exists(),
            "{notes}"
        );
        assert!(
            names(&ws).iter().any(|n| n.starts_with(".git.rein-moved-")),
            "{notes}"
        );
        // Moved beyond the top level: not found, and the swap is still undone.
        let t = Tripwire::arm(&ws, true, &[], &[]);
        std::fs::create_dir(ws.join("deep")).unwrap();
        std::fs::rename(ws.join(".git"), ws.join("deep/old")).unwrap();
        std::fs::write(ws.join(".git"), "gitdir: /tmp/evil\n").unwrap();
        let notes = t.check().join("\n");
        assert!(!ws.join(".git").exists());
        assert!(notes.contains("Could not restore .git"), "{notes}");
    }

    /// Names in `dir` (sorted), to see what was moved aside.
    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn a_hook_directory_that_appears_is_moved_aside_in_both_modes() {
        for full in [false, true] {
            let (_d, ws) = workspace();
            let t = Tripwire::arm(&ws, full, &[], &[PathBuf::from(".githooks")]);
            std::fs::create_dir(ws.join(".githooks")).unwrap();
            std::fs::write(ws.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
            let notes = t.check().join("\n");
            assert!(!ws.join(".githooks").exists(), "full: {full}");
            assert!(
                names(&ws)
                    .iter()
                    .any(|n| n.starts_with(".githooks.rein-moved-"))
            );
            assert!(notes.contains(".githooks"), "{notes}");
        }
    }

    #[test]
    fn a_swapped_or_repointed_hook_path_leads_where_it_led() {
        for full in [false, true] {
            let (_d, ws) = workspace();
            std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
            std::fs::create_dir_all(ws.join("tools/hooks")).unwrap();
            std::os::unix::fs::symlink("tools/hooks", ws.join("linked")).unwrap();
            let hooks = [PathBuf::from(".husky/_"), PathBuf::from("linked")];
            let t = Tripwire::arm(&ws, full, &[], &hooks);
            // The person's directory moved away, another in its place; the link re-pointed.
            std::fs::rename(ws.join(".husky"), ws.join("old")).unwrap();
            std::fs::create_dir_all(ws.join(".husky/_")).unwrap();
            std::fs::write(ws.join(".husky/_/h"), "evil").unwrap();
            std::fs::create_dir(ws.join("evil")).unwrap();
            std::fs::remove_file(ws.join("linked")).unwrap();
            std::os::unix::fs::symlink("evil", ws.join("linked")).unwrap();
            let notes = t.check().join("\n");
            assert!(!ws.join(".husky").exists(), "full: {full}");
            assert!(ws.join("old/_").is_dir(), "nothing is lost");
            assert_eq!(
                std::fs::read_link(ws.join("linked")).unwrap(),
                Path::new("tools/hooks")
            );
            assert!(
                notes.contains(".husky") && notes.contains("linked"),
                "{notes}"
            );
        }
    }

    #[test]
    fn without_namespaces_a_hook_directory_content_is_put_back() {
        let (_d, ws) = workspace();
        std::fs::create_dir(ws.join(".githooks")).unwrap();
        std::fs::write(ws.join(".githooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let t = Tripwire::arm(&ws, true, &[], &[PathBuf::from(".githooks")]);
        std::fs::write(ws.join(".githooks/pre-commit"), "#!/bin/sh\necho pwned\n").unwrap();
        std::fs::write(ws.join(".githooks/post-commit"), "#!/bin/sh\n").unwrap();
        let notes = t.check().join("\n");
        assert_eq!(names(&ws.join(".githooks")), ["pre-commit"]);
        assert_eq!(
            std::fs::read_to_string(ws.join(".githooks/pre-commit")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
        assert!(notes.contains(".githooks/pre-commit"), "{notes}");
        // Deleted and made anew: the old content comes back.
        let t = Tripwire::arm(&ws, true, &[], &[PathBuf::from(".githooks")]);
        std::fs::remove_dir_all(ws.join(".githooks")).unwrap();
        std::fs::create_dir(ws.join(".githooks")).unwrap();
        std::fs::write(ws.join(".githooks/pre-commit"), "evil").unwrap();
        t.check();
        assert_eq!(
            std::fs::read_to_string(ws.join(".githooks/pre-commit")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
    }
}
