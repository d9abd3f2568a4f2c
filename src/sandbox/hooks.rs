//! Hook directories and configuration files inside the workspace that the person's git obeys:
//! where their configuration points `core.hooksPath` (husky's `.husky/_`, a project's
//! `.githooks`), git runs what it finds at the person's next commit, outside the sandbox, and
//! (for an ignored directory) out of sight; a file their configuration includes
//! (`include.path = ../.gitconfig`, the usual way a team shares settings) can set
//! `core.fsmonitor` or an alias that runs at their next `git status`. Both are protected like
//! `.git/hooks`: read-only for commands, "always asks" for the file tools, and put back after a
//! command that re-pointed them (or removed when a command made one that was missing).
//!
//! Found by reading the configuration files git reads (system, global, the repository's, and
//! every file they include, conditional includes too), never by running git: every value any
//! of them gives counts, so a hooks path only some condition selects is protected as well.
//! Mercurial's `%include` (a repository's `.hg/hgrc` including a team's `../.hgrc`, whose
//! `[hooks]` run at the person's next `hg status`) is followed the same way.

use super::stamp::Stamp;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Longest configuration file read.
const CONFIG_LIMIT: u64 = 1 << 20;

/// Configuration files read at most (includes included).
const FILES_LIMIT: usize = 64;

/// Include depth git itself allows.
const DEPTH_LIMIT: usize = 10;

/// One `section.key = value` of a configuration file; section and key lower-cased, a
/// subsection kept as written (`includeif.gitdir:~/w/.path`).
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    key: String,
    value: String,
}

/// The hook directories and configuration files (read, included, or looked for and missing)
/// the person's git and Mercurial configuration names inside `ws` (canonical), as paths
/// relative to it: each as configured (normalized) and, where links lead elsewhere in the
/// workspace, as it resolves. Paths inside `.git`, `.rein`, `.hg` or `.jj`, protected anyway,
/// and the workspace itself (which cannot be made read-only) are left out.
pub(crate) fn persons_config_paths(ws: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let repo = super::git::repository(ws);
    let git = repo.as_ref().map(|(_, git)| git.as_path());
    let hg = ws.ancestors().map(|d| d.join(".hg")).find(|d| d.is_dir());
    let top = Top {
        git: config_files(home.as_deref(), git),
        hg: hg_config_files(home.as_deref(), hg.as_deref()),
    };
    let read = read_configuration(top, home.as_deref(), super::stamp::settled_now());
    let root = repo.map_or_else(|| ws.to_path_buf(), |(root, _)| root);
    let hook_dirs = read
        .hooks_paths
        .iter()
        .filter_map(|value| expand(value, home.as_deref(), &root));
    let mut paths = Vec::new();
    // Resolved anew each time: a command may re-point a link on the way.
    for path in hook_dirs.chain(read.files) {
        for rel in inside(ws, path) {
            if !paths.contains(&rel) {
                paths.push(rel);
            }
        }
    }
    paths
}

/// What the configuration gives: every `core.hooksPath` value, and every file read for it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    hooks_paths: Vec<String>,
    files: Vec<PathBuf>,
}

/// The configuration files read first: git's, and Mercurial's.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Top {
    git: Vec<PathBuf>,
    hg: Vec<PathBuf>,
}

/// The values last read, and every file read (or looked for) to get them, with its stamp.
struct LastRead {
    top: Top,
    files: Vec<(PathBuf, Stamp)>,
    read: Read,
}

/// The last reads, one per set of top files (the workspace's repository, and each nested
/// one): asked for before every command and file-tool write, and the files rarely change
/// (reading and parsing them anew cost ~50 µs a command).
static LAST_READS: std::sync::Mutex<Vec<LastRead>> = std::sync::Mutex::new(Vec::new());

/// The most reads kept (a workspace with more nested repositories reads some anew each time).
const READS_KEPT: usize = 256;

/// Every `core.hooksPath` value the configuration files give, and the files, read anew when
/// any file read for the last answer (or looked for and missing) changed. The answer is kept
/// for next time only if no file changed after `settled`.
fn read_configuration(top: Top, home: Option<&Path>, settled: std::time::SystemTime) -> Read {
    let mut kept = crate::sync::lock(&LAST_READS);
    let at = kept.iter().position(|last| last.top == top);
    if let Some(last) = at.map(|i| &kept[i])
        && last
            .files
            .iter()
            .all(|(f, s)| super::stamp::of_path(f) == *s)
    {
        return last.read.clone();
    }
    if let Some(i) = at {
        kept.swap_remove(i);
    }
    let (mut files, mut values) = (Vec::new(), Vec::new());
    for file in &top.git {
        read_config(file, home, 0, &mut files, &mut values);
    }
    for file in &top.hg {
        read_hgrc(file, home, 0, &mut files);
    }
    let keep = !files
        .iter()
        .any(|(_, s)| super::stamp::unsettled(s, settled));
    let read = Read {
        hooks_paths: values,
        files: files.iter().map(|(f, _)| f.clone()).collect(),
    };
    if keep && kept.len() < READS_KEPT {
        kept.push(LastRead {
            top,
            files,
            read: read.clone(),
        });
    }
    read
}

/// The hook directories and configuration files nested repositories use inside `ws`,
/// relative to it: for each of `nested` (a repository's `.git` entry, or its `.hg`, relative
/// to `ws`), every `core.hooksPath` its own configuration or the person's gives, relative to
/// that repository's root (a relative global `core.hooksPath = .githooks` names one in every
/// repository), and every file its own configuration includes (`lib/.git/config` including
/// `../team.gitconfig`, `lib/.hg/hgrc` a `%include`d file).
pub(crate) fn nested_config_paths(ws: &Path, nested: &[PathBuf]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // A `.git` (or `.hg`) entry's folder is a work tree's root (a linked git directory is
    // not one).
    let roots: Vec<PathBuf> = nested
        .iter()
        .filter(|entry| entry.file_name().is_some_and(|n| n == ".git" || n == ".hg"))
        .filter_map(|entry| ws.join(entry).parent().map(Path::to_path_buf))
        .collect();
    remember_nested_roots(ws, &roots);
    // Without nested repositories only the person's own files would be named, which
    // `persons_config_paths` (asked with this, before every command) names already.
    if roots.is_empty() {
        return Vec::new();
    }
    config_paths_of(ws, &roots, home.as_deref(), super::stamp::settled_now())
}

/// The hook directories and included configuration files inside `ws` that git and Mercurial
/// use for the repositories whose work trees' roots are `roots`, relative to `ws`. What lies
/// in a repository's own `.git`, `.hg` or `.jj` is left out: protected with the repository.
/// Each path is resolved once, however many repositories name it (every one reads the
/// person's global files).
fn config_paths_of(
    ws: &Path,
    roots: &[PathBuf],
    home: Option<&Path>,
    settled: std::time::SystemTime,
) -> Vec<PathBuf> {
    // The person's own files (system, global, `HGRCPATH`'s) are the same for every
    // repository: read once, their relative hooks paths expanded against each root.
    let hg_roots: Vec<&PathBuf> = roots.iter().filter(|root| is_hg_root(root)).collect();
    let any_hg = !hg_roots.is_empty();
    let global = read_configuration(
        Top {
            git: config_files(home, None),
            hg: if any_hg {
                hg_config_files(home, None)
            } else {
                Vec::new()
            },
        },
        home,
        settled,
    );
    let mut named = std::collections::HashSet::new();
    let mut candidates = Vec::new();
    let mut add = |path: PathBuf| {
        if named.insert(path.clone()) {
            candidates.push(path);
        }
    };
    global.files.iter().cloned().for_each(&mut add);
    for root in roots {
        let git = super::git::repository(root)
            .filter(|(found, _)| found == root)
            .map(|(_, git)| git);
        let own = Top {
            git: git
                .as_deref()
                .map(repository_config_files)
                .unwrap_or_default(),
            hg: match hg_roots.contains(&root) {
                true => hg_repository_files(&root.join(".hg")),
                false => Vec::new(),
            },
        };
        let read = read_configuration(own, home, settled);
        let hook_dirs = read
            .hooks_paths
            .iter()
            .chain(&global.hooks_paths)
            .filter_map(|value| expand(value, home, root));
        hook_dirs.chain(read.files).for_each(&mut add);
    }
    let metadata: Vec<PathBuf> = roots
        .iter()
        .filter_map(|root| root.strip_prefix(ws).ok())
        .flat_map(|rel| [".git", ".hg", ".jj"].map(|m| rel.join(m)))
        .collect();
    let mut paths = Vec::new();
    for rel in candidates.into_iter().flat_map(|path| inside(ws, path)) {
        if !metadata.iter().any(|m| rel.starts_with(m)) && !paths.contains(&rel) {
            paths.push(rel);
        }
    }
    paths
}

/// The roots of the nested repositories the last command's preparation found, per workspace:
/// for the file tools, whose path alone cannot tell which repository includes a file outside
/// its own tree.
static NESTED_ROOTS: std::sync::Mutex<Vec<(PathBuf, Vec<PathBuf>)>> =
    std::sync::Mutex::new(Vec::new());

/// Keeps `roots` as `ws`'s nested repositories (see [`NESTED_ROOTS`]).
fn remember_nested_roots(ws: &Path, roots: &[PathBuf]) {
    let mut kept = crate::sync::lock(&NESTED_ROOTS);
    kept.retain(|(w, _)| w != ws);
    kept.push((ws.to_path_buf(), roots.to_vec()));
}

/// Whether `rel` (relative to `ws`) lies in a hook directory or an included configuration
/// file of a repository nested in the workspace: one that holds it (each between it and the
/// workspace's own), or one a command's preparation found (whose configuration may include a
/// file anywhere in the workspace).
pub(crate) fn in_nested_config_path(ws: &Path, rel: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let settled = super::stamp::settled_now();
    let path = ws.join(rel);
    let holding = path
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(ws) && *d != ws)
        .filter(|d| {
            std::fs::symlink_metadata(d.join(".git")).is_ok()
                || std::fs::symlink_metadata(d.join(".hg")).is_ok()
        })
        .map(Path::to_path_buf);
    let found: Vec<PathBuf> = crate::sync::lock(&NESTED_ROOTS)
        .iter()
        .filter(|(w, _)| w == ws)
        .flat_map(|(_, roots)| roots.clone())
        .collect();
    let mut roots: Vec<PathBuf> = holding.collect();
    for root in found {
        if root.as_path() != ws && !roots.contains(&root) {
            roots.push(root);
        }
    }
    config_paths_of(ws, &roots, home.as_deref(), settled)
        .iter()
        .any(|p| rel.starts_with(p))
}

/// The configuration files git reads for a repository whose git directory is `git`: more
/// rather than fewer (both global places, and the environment's choices as well as the
/// defaults), since a missing one only costs a lookup.
fn config_files(home: Option<&Path>, git: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    for var in ["GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"] {
        files.extend(std::env::var_os(var).map(PathBuf::from));
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".config")));
    files.extend(xdg.map(|x| x.join("git/config")));
    files.extend(home.map(|h| h.join(".gitconfig")));
    files.extend(git.map(repository_config_files).unwrap_or_default());
    files
}

/// The configuration files of the repository whose git directory is `git`: its common
/// directory's `config` and its own `config.worktree`.
fn repository_config_files(git: &Path) -> Vec<PathBuf> {
    let common = std::fs::read_to_string(git.join("commondir"))
        .ok()
        .map(|c| git.join(c.trim_end_matches('\n')))
        .unwrap_or_else(|| git.to_path_buf());
    vec![common.join("config"), git.join("config.worktree")]
}

/// Whether `root` holds a Mercurial repository (a real `.hg` directory).
fn is_hg_root(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(".hg")).is_ok_and(|m| m.is_dir())
}

/// Adds the `core.hooksPath` values of `file` and of the files it includes to `values`, and
/// each file looked at, with its stamp as it was before it was read, to `seen`.
fn read_config(
    file: &Path,
    home: Option<&Path>,
    depth: usize,
    seen: &mut Vec<(PathBuf, Stamp)>,
    values: &mut Vec<String>,
) {
    if depth > DEPTH_LIMIT || seen.len() >= FILES_LIMIT || seen.iter().any(|(f, _)| f == file) {
        return;
    }
    let (stamp, text) = read_text(file);
    seen.push((file.to_path_buf(), stamp));
    let Some(text) = text else {
        return;
    };
    for entry in parse(&text) {
        let include = entry.key == "include.path"
            || (entry.key.starts_with("includeif.") && entry.key.ends_with(".path"));
        if entry.key == "core.hookspath" {
            values.push(entry.value);
        } else if include && !entry.value.is_empty() {
            let base = file.parent().unwrap_or(Path::new("/"));
            if let Some(path) = expand(&entry.value, home, base) {
                read_config(&path, home, depth + 1, seen, values);
            }
        }
    }
}

/// The configuration files Mercurial reads for a repository whose metadata is `hg` (its
/// `.hg`): the system's, the person's, `HGRCPATH`'s files, and the repository's own.
fn hg_config_files(home: Option<&Path>, hg: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/mercurial/hgrc")];
    if let Some(paths) = std::env::var_os("HGRCPATH") {
        for path in std::env::split_paths(&paths) {
            match std::fs::read_dir(&path) {
                // A directory stands for its `*.rc` files.
                Ok(dir) => files.extend(
                    dir.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "rc")),
                ),
                Err(_) => files.push(path),
            }
        }
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".config")));
    files.extend(xdg.map(|x| x.join("hg/hgrc")));
    files.extend(home.map(|h| h.join(".hgrc")));
    files.extend(hg.map(hg_repository_files).unwrap_or_default());
    files
}

/// The configuration files of the Mercurial repository whose metadata is `hg`.
fn hg_repository_files(hg: &Path) -> Vec<PathBuf> {
    vec![hg.join("hgrc"), hg.join("hgrc-not-shared")]
}

/// Adds `file` (with its stamp) and every file it `%include`s, as Mercurial reads them, to
/// `seen`.
fn read_hgrc(file: &Path, home: Option<&Path>, depth: usize, seen: &mut Vec<(PathBuf, Stamp)>) {
    if depth > DEPTH_LIMIT || seen.len() >= FILES_LIMIT || seen.iter().any(|(f, _)| f == file) {
        return;
    }
    let (stamp, text) = read_text(file);
    seen.push((file.to_path_buf(), stamp));
    let Some(text) = text else {
        return;
    };
    // Mercurial ends a line at a lone `\r` too; `%include` counts only at a line's start.
    for line in text.split(['\n', '\r']) {
        let Some(rest) = line.strip_prefix("%include") else {
            continue;
        };
        let name = rest.trim();
        if !rest.starts_with([' ', '\t']) || name.is_empty() {
            continue;
        }
        let base = file.parent().unwrap_or(Path::new("/"));
        let name = expand_vars(name, |var| std::env::var(var).ok());
        if let Some(path) = expand(&name, home, base) {
            read_hgrc(&path, home, depth + 1, seen);
        }
    }
}

/// `$NAME` and `${NAME}` replaced by their values (the environment's, as Mercurial expands an
/// included path); an unknown name stays as written.
fn expand_vars(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => ("", after),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        match lookup(name).filter(|_| !name.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[at..rest.len() - tail.len()]),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// A configuration file's stamp (taken before reading: a later change shows in the next one)
/// and its text: a regular file (links followed, dotfiles are often links), never a FIFO that
/// would block, at most [`CONFIG_LIMIT`] bytes.
fn read_text(path: &Path) -> (Stamp, Option<String>) {
    use std::io::Read;
    let Ok(f) = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return (super::stamp::of_path(path), None);
    };
    let Ok(meta) = f.metadata() else {
        return (None, None);
    };
    let stamp = super::stamp::of(&meta);
    if !meta.is_file() {
        return (stamp, None);
    }
    let mut bytes = Vec::new();
    if f.take(CONFIG_LIMIT).read_to_end(&mut bytes).is_err() {
        return (stamp, None);
    }
    (stamp, Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// A path as git expands it: `~/` is the home directory, a relative one is relative to `base`.
fn expand(value: &str, home: Option<&Path>, base: &Path) -> Option<PathBuf> {
    let path = match value.strip_prefix("~/") {
        Some(rest) => home?.join(rest),
        None if value == "~" => home?.to_path_buf(),
        None => base.join(value),
    };
    // `.` and `..` applied lexically, as git does before it looks a hook up.
    Some(super::explain::normalize(&path))
}

/// Where `lexical` (absolute) lies inside `ws`, relative to it: as written (`.` and `..`
/// applied lexically: a repository's git directory may be named `sub/../.git/objects/zz`) and
/// as it resolves through links.
fn inside(ws: &Path, lexical: PathBuf) -> Vec<PathBuf> {
    let lexical = super::explain::normalize(&lexical);
    // `ws` is canonical: only what lies below it can lead elsewhere.
    let physical = super::paths::physical_path_below(ws, &lexical);
    let mut out = Vec::new();
    for path in std::iter::once(lexical).chain(physical) {
        let Ok(rel) = path.strip_prefix(ws) else {
            continue;
        };
        let first = rel.components().next();
        // `.hg`'s and `.jj`'s configuration is put back after each command (see `madegit`).
        let protected_anyway = matches!(first, Some(Component::Normal(n))
            if [".git", ".rein", ".hg", ".jj"].iter().any(|p| n == *p));
        if first.is_none() {
            tracing::warn!(
                "git's configuration names the workspace itself; it cannot be protected"
            );
        } else if !protected_anyway && !out.iter().any(|r: &PathBuf| r == rel) {
            out.push(rel.to_path_buf());
        }
    }
    out
}

/// The entries of a git configuration file, in order (git's syntax: sections with optional
/// subsections, `key = value` with quotes, escapes, comments and continued lines; a key alone
/// is `true`). Malformed lines are skipped.
fn parse(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' || c == ';' {
            skip_line(&mut chars);
        } else if c == '[' {
            chars.next();
            section = header(&mut chars);
        } else if c.is_ascii_alphabetic() {
            let mut key = String::new();
            while let Some(&k) = chars
                .peek()
                .filter(|k| k.is_ascii_alphanumeric() || **k == '-')
            {
                key.push(k.to_ascii_lowercase());
                chars.next();
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            let value = match chars.peek() {
                Some('=') => {
                    chars.next();
                    value(&mut chars)
                }
                _ => {
                    skip_line(&mut chars);
                    "true".to_string()
                }
            };
            if !section.is_empty() {
                out.push(Entry {
                    key: format!("{section}.{key}"),
                    value,
                });
            }
        } else {
            skip_line(&mut chars);
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_line(chars: &mut Chars) {
    for c in chars.by_ref() {
        if c == '\n' {
            break;
        }
    }
}

/// A section header after its `[`: `core`, `includeIf "gitdir:x"` → `includeif.gitdir:x`,
/// the old `[section.sub]` → `section.sub` (all lower-case).
fn header(chars: &mut Chars) -> String {
    let mut name = String::new();
    let mut sub: Option<String> = None;
    while let Some(c) = chars.next() {
        match (c, sub.as_mut()) {
            (']', None) => break,
            ('"', None) => sub = Some(String::new()),
            ('"', Some(_)) => {
                // The closing quote; the `]` follows.
                for c in chars.by_ref() {
                    if c == ']' || c == '\n' {
                        break;
                    }
                }
                break;
            }
            ('\\', Some(s)) => s.extend(chars.next()),
            ('\n', _) => break,
            (c, Some(s)) => s.push(c),
            (c, None) if !c.is_whitespace() => name.push(c.to_ascii_lowercase()),
            _ => {}
        }
    }
    match sub {
        Some(sub) => format!("{name}.{sub}"),
        None => name,
    }
}

/// A value after its `=`, to the end of its (possibly continued) line.
fn value(chars: &mut Chars) -> String {
    let mut out = String::new();
    let mut kept = 0;
    let mut quoted = false;
    while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
        chars.next();
    }
    while let Some(c) = chars.next() {
        match c {
            '\n' => break,
            '\\' => match chars.next() {
                Some('\n') => continue,
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(other) => out.push(other),
                None => break,
            },
            '"' => {
                quoted = !quoted;
                kept = out.len();
                continue;
            }
            '#' | ';' if !quoted => {
                skip_line(chars);
                break;
            }
            c if (c == ' ' || c == '\t') && !quoted => {
                out.push(c);
                continue;
            }
            c => out.push(c),
        }
        kept = out.len();
    }
    out.truncate(kept);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, String)> {
        parse(text).into_iter().map(|e| (e.key, e.value)).collect()
    }

    #[test]
    fn config_syntax_is_read_as_git_reads_it() {
        let text = "# comment\n[core]\n\tbare = false\n\thooksPath = .githooks ; why\n\
                    [Core] HooksPath = \"with space \\\"q\\\"\" # c\n\
                    [include]\n  path = ~/other\n[includeIf \"gitdir:~/w/\"]\npath=x.inc\n\
                    [core.sub] k = a\\\n b\n[alias]\nflag\n";
        assert_eq!(
            entries(text),
            [
                ("core.bare", "false"),
                ("core.hookspath", ".githooks"),
                ("core.hookspath", "with space \"q\""),
                ("include.path", "~/other"),
                ("includeif.gitdir:~/w/.path", "x.inc"),
                ("core.sub.k", "a b"),
                ("alias.flag", "true"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    /// A repository with its own configuration, a home with a global one that includes another.
    fn world() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("tools/hooks")).unwrap();
        let home = base.join("home");
        std::fs::create_dir_all(home.join("conf")).unwrap();
        (dir, ws, home)
    }

    #[test]
    fn every_hooks_path_inside_the_workspace_is_found_through_includes_and_links() {
        let (_d, ws, home) = world();
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = .husky/_\n").unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[includeIf \"gitdir:~/elsewhere/\"]\n\tpath = conf/more\n",
        )
        .unwrap();
        let more = format!("[core]\nhooksPath = {}/linked\n", ws.display());
        std::fs::write(home.join("conf/more"), more).unwrap();
        std::os::unix::fs::symlink("tools/hooks", ws.join("linked")).unwrap();
        let mut seen = Vec::new();
        let mut values = Vec::new();
        for f in config_files(Some(&home), Some(&ws.join(".git"))) {
            read_config(&f, Some(&home), 0, &mut seen, &mut values);
        }
        let mut dirs = Vec::new();
        for v in &values {
            dirs.extend(inside(&ws, expand(v, Some(&home), &ws).unwrap()));
        }
        dirs.sort();
        let want: Vec<PathBuf> = [".husky/_", "linked", "tools/hooks"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(dirs, want);
    }

    #[test]
    fn hooks_paths_outside_or_already_protected_are_left_out() {
        let (_d, ws, home) = world();
        for v in [
            "/usr/share/hooks",
            "../ws-other",
            ".git/hooks",
            ".rein/h",
            ".",
            "~/hooks",
        ] {
            let path = expand(v, Some(&home), &ws).unwrap();
            assert!(inside(&ws, path).is_empty(), "{v}");
        }
        // Relative to the work tree's root, which may lie above the workspace.
        let sub = ws.join("tools");
        let path = expand("tools/hooks", Some(&home), &ws).unwrap();
        assert_eq!(inside(&sub, path), [PathBuf::from("hooks")]);
    }

    #[test]
    fn files_the_configuration_includes_inside_the_workspace_are_found_missing_or_not() {
        let (_d, ws, home) = world();
        // The usual way to share a team's settings: the repository's own configuration
        // includes a tracked file; the person's global one includes another that is missing.
        std::fs::write(
            ws.join(".git/config"),
            "[include]\n\tpath = ../.gitconfig\n",
        )
        .unwrap();
        std::fs::write(ws.join(".gitconfig"), "[alias]\n\tst = status\n").unwrap();
        let global = format!(
            "[includeIf \"onbranch:x\"]\npath = {}/team/conf\n",
            ws.display()
        );
        std::fs::write(home.join(".gitconfig"), global).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let top = Top {
            git: config_files(Some(&home), Some(&ws.join(".git"))),
            hg: Vec::new(),
        };
        let read = read_configuration(top, Some(&home), later);
        let mut found: Vec<PathBuf> = read
            .files
            .into_iter()
            .flat_map(|f| inside(&ws, f))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [PathBuf::from(".gitconfig"), PathBuf::from("team/conf")]
        );
    }

    #[test]
    fn files_mercurial_includes_inside_the_workspace_are_found_as_mercurial_reads_them() {
        let (_d, ws, home) = world();
        std::fs::create_dir(ws.join(".hg")).unwrap();
        // Relative to the including file; a lone `\r` ends a line; `%include` only at a line's
        // start.
        std::fs::write(
            ws.join(".hg/hgrc"),
            "[ui]\rx = 1\r%include ../team.hgrc\n  %include ../indented\n%includes ../no\n",
        )
        .unwrap();
        std::fs::write(ws.join("team.hgrc"), "%include sub/$REIN_TEST_HG_VAR.rc\n").unwrap();
        std::fs::write(
            home.join(".hgrc"),
            format!("%include {}/x.rc\n", ws.display()),
        )
        .unwrap();
        // SAFETY: this test's process only (nextest runs each test in its own).
        unsafe { std::env::set_var("REIN_TEST_HG_VAR", "more") };
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let top = Top {
            git: Vec::new(),
            hg: hg_config_files(Some(&home), Some(&ws.join(".hg"))),
        };
        let read = read_configuration(top, Some(&home), later);
        let mut found: Vec<PathBuf> = read
            .files
            .into_iter()
            .flat_map(|f| inside(&ws, f))
            .collect();
        found.sort();
        let want: Vec<PathBuf> = ["sub/more.rc", "team.hgrc", "x.rc"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn variables_in_an_included_path_are_expanded_as_mercurial_does() {
        let env = |name: &str| (name == "TEAM").then(|| "t".to_string());
        assert_eq!(expand_vars("a/$TEAM/${TEAM}.rc", env), "a/t/t.rc");
        assert_eq!(expand_vars("$NOPE/${NOPE}/$/${", env), "$NOPE/${NOPE}/$/${");
    }

    #[test]
    fn include_loops_end() {
        let (_d, ws, home) = world();
        std::fs::write(home.join("a"), "[include]\npath = b\n[core]\nhooksPath=x\n").unwrap();
        std::fs::write(home.join("b"), "[include]\npath = a\n").unwrap();
        let (mut seen, mut values) = (Vec::new(), Vec::new());
        read_config(&home.join("a"), Some(&home), 0, &mut seen, &mut values);
        assert_eq!(values, ["x"]);
        let _ = ws;
    }

    #[test]
    fn a_kept_answer_is_read_anew_when_a_file_changes_or_appears() {
        let (_d, ws, home) = world();
        let git = ws.join(".git");
        std::fs::write(git.join("config"), "[core]\nhooksPath = a\n").unwrap();
        std::fs::write(home.join(".gitconfig"), "[include]\npath = conf/more\n").unwrap();
        // Everything counts as settled: the answer is kept at once.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let top = Top {
            git: config_files(Some(&home), Some(&git)),
            hg: Vec::new(),
        };
        let values = || read_configuration(top.clone(), Some(&home), later).hooks_paths;
        assert_eq!(values(), ["a"]);
        assert_eq!(values(), ["a"]);
        // An included file that was missing appears.
        std::fs::write(home.join("conf/more"), "[core]\nhooksPath = b\n").unwrap();
        assert_eq!(values(), ["b", "a"]);
        // Same size, same modification time: the change time still tells.
        let config = std::fs::File::options()
            .write(true)
            .open(git.join("config"))
            .unwrap();
        let mtime = config.metadata().unwrap().modified().unwrap();
        std::fs::write(git.join("config"), "[core]\nhooksPath = c\n").unwrap();
        config.set_modified(mtime).unwrap();
        assert_eq!(values(), ["b", "c"]);
        // The global file is replaced by a link to another one.
        std::fs::write(home.join("other"), "[core]\nhooksPath = d\n").unwrap();
        std::fs::remove_file(home.join(".gitconfig")).unwrap();
        std::os::unix::fs::symlink("other", home.join(".gitconfig")).unwrap();
        assert_eq!(values(), ["d", "c"]);
    }
}
