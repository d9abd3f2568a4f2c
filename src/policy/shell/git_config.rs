//! The repository's own git configuration, as the policy sees it. A hostile clone can set keys
//! that make `git status`, `git log` or `git diff` run a program (`core.fsmonitor`,
//! `core.pager`, `diff.external`, filters, `log.showSignature` with `gpg.program`, includes
//! naming more). Only keys on an allow-list (`crate::git::allow`) leave a git command rated
//! by its rules; any other key, or a file git would not read (`crate::git::config`), makes it
//! ask. Read by hand, never by running git.

use std::path::{Path, PathBuf};

use crate::git::allow::{lazy_fetch as lazy_key, read_only_harmless};
use crate::git::config::{self as gitconfig, Var};
use crate::git::index as gitindex;
use discover::Repo;

mod discover;

/// The largest configuration file read; a larger one makes git commands ask.
const MAX_CONFIG: u64 = 256 << 10;

/// The largest index read; a larger one makes git commands ask.
const MAX_INDEX: u64 = 512 << 20;

/// Why git commands run in `dir` should ask because of the repository git would use there
/// (its configuration, hooks that read-only commands run, its submodules'), if they should.
/// `lazy_fetch` is false when the command carries `--no-lazy-fetch`; `root` (the workspace)
/// only shortens paths in reasons.
pub(super) fn config_doubt(dir: &Path, root: &Path, lazy_fetch: bool) -> Option<String> {
    let repo = match discover::discover(dir, root) {
        Ok(Some(repo)) => repo,
        Ok(None) => return None,
        Err(why) => return Some(why),
    };
    let mut seen = Vec::new();
    repo_doubt(&repo, root, lazy_fetch, &mut seen).err()
}

/// Repositories (a superproject and its submodules, nested) checked for one command at most.
const MAX_REPOS: usize = 64;

/// Checks one repository, then each populated submodule its index lists (`git status` and
/// `git diff` run git in each, which obeys that submodule's configuration and hooks).
fn repo_doubt(
    repo: &Repo,
    root: &Path,
    lazy_fetch: bool,
    seen: &mut Vec<PathBuf>,
) -> Result<(), String> {
    if seen.len() >= MAX_REPOS {
        return Err("the repository has more submodules than rein checks".into());
    }
    seen.push(repo.git_dir.clone());
    let mut vars = Vec::new();
    for file in config_files(&repo.git_dir)? {
        if let Some(text) = read_config(&file)? {
            let read = gitconfig::parse(&text).map_err(|()| {
                format!(
                    "the repository's git configuration ({}) cannot be read plainly",
                    file.display()
                )
            })?;
            key_doubt(&read, lazy_fetch)?;
            vars.extend(read);
        }
    }
    worktree_doubt(repo, &vars)?;
    hooks_doubt(repo, &vars)?;
    let hash = match single_value(&vars, "extensions.objectformat")?.as_deref() {
        None | Some("sha1") => 20,
        Some("sha256") => 32,
        Some(other) => {
            return Err(format!(
                "git's object format `{other}` is not one rein reads"
            ));
        }
    };
    let index = repo.git_dir.join("index");
    for link in index_links(&index, &repo.git_dir, hash)? {
        use std::os::unix::ffi::OsStrExt;
        let path = repo.work_tree.join(std::ffi::OsStr::from_bytes(&link));
        // git only looks into a submodule that has a `.git`.
        if path.join(".git").symlink_metadata().is_err() {
            continue;
        }
        if let Some(sub) = discover::discover(&path, root)?
            && !seen.contains(&sub.git_dir)
        {
            repo_doubt(&sub, root, lazy_fetch, seen).map_err(|why| {
                let link = String::from_utf8_lossy(&link);
                format!("in the submodule `{link}`, {why}")
            })?;
        }
    }
    Ok(())
}

/// The reason to ask when `vars` (one configuration file's) set a key off the list.
fn key_doubt(vars: &[Var], lazy_fetch: bool) -> Result<(), String> {
    match first_unlisted_key(vars, lazy_fetch) {
        None => Ok(()),
        Some((key, true)) => Err(format!(
            "the repository is a partial clone (`{key}`): git may fetch missing objects over \
             the network; add --no-lazy-fetch (`git --no-lazy-fetch ...`)"
        )),
        Some((key, false)) => Err(format!(
            "the repository's git configuration sets `{key}`, which may make git run a program"
        )),
    }
}

/// The reason to ask when `core.worktree` moves the work tree away from where `repo` found
/// it (a submodule's git directory names its checkout; anything else is another tree).
fn worktree_doubt(repo: &Repo, vars: &[Var]) -> Result<(), String> {
    let here = repo.work_tree.canonicalize().ok();
    for value in values(vars, "core.worktree")? {
        // Relative to the git directory, as git reads it.
        let named = repo.git_dir.join(&value).canonicalize().ok();
        if named.is_none() || named != here {
            return Err(format!(
                "the repository's git configuration sets `core.worktree = {value}`, another \
                 work tree"
            ));
        }
    }
    Ok(())
}

/// Hooks git runs on commands rein may allow: `git status` refreshes the index, which runs
/// `post-index-change`. (Checked with git 2.47: `diff`, `log -p`, `show`, `ls-files` run no
/// hook; the others run on commits, merges, checkouts, pushes, which ask.)
const READ_ONLY_HOOKS: &[&str] = &["post-index-change"];

/// The reason to ask when a hooks directory git would use for `repo` (`hooks` in its common
/// directory, or any `core.hooksPath` its configuration `vars` set) holds a hook that
/// read-only commands run.
fn hooks_doubt(repo: &Repo, vars: &[Var]) -> Result<(), String> {
    let mut dirs = vec![common_dir(&repo.git_dir)?.join("hooks")];
    for value in values(vars, "core.hookspath")? {
        dirs.push(hooks_dir(&value, &repo.work_tree)?);
    }
    for dir in dirs {
        for hook in READ_ONLY_HOOKS {
            let path = dir.join(hook);
            if runnable(&path) {
                return Err(format!(
                    "the repository has a `{hook}` hook ({}), which git runs on read-only \
                     commands like `git status`",
                    path.display()
                ));
            }
        }
    }
    Ok(())
}

/// Where `core.hooksPath = value` points: relative to the work tree's top, where git runs
/// hooks; `~/` is the home directory.
fn hooks_dir(value: &str, work_tree: &Path) -> Result<PathBuf, String> {
    if let Some(rest) = value.strip_prefix("~/") {
        let home =
            std::env::var_os("HOME").ok_or("core.hooksPath names a home rein cannot find")?;
        return Ok(PathBuf::from(home).join(rest));
    }
    // `~user/…` and git's `%(prefix)/…` (its install prefix, so any absolute place).
    if value.starts_with('~') || value.starts_with("%(") {
        return Err(format!("core.hooksPath `{value}` is not a path rein reads"));
    }
    Ok(work_tree.join(value))
}

/// Whether git may run `path` as a hook: anything there but a file without execute bits
/// (which git skips with a hint).
fn runnable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    match path.symlink_metadata() {
        Err(_) => false,
        Ok(m) if m.is_file() => m.permissions().mode() & 0o111 != 0,
        Ok(_) => true,
    }
}

/// The common directory of `git_dir` (its `commondir`, or itself).
/// A `commondir` that is there but that rein cannot read as plainly as git does (a link, a
/// large file, bytes that are not UTF-8) is a reason to ask: git follows it to a
/// configuration and hooks rein would not have read.
pub(super) fn common_dir(git_dir: &Path) -> Result<PathBuf, String> {
    let path = git_dir.join("commondir");
    if path.symlink_metadata().is_err() {
        return Ok(git_dir.to_path_buf());
    }
    // Never blocking on a FIFO a clone put there.
    crate::sandbox::git::read_small(&path)
        .map(|c| git_dir.join(c.trim_end_matches(['\n', '\r'])))
        .ok_or_else(|| {
            format!(
                "{} is not a small plain file rein can read; git would follow it to another \
                 repository's configuration",
                path.display()
            )
        })
}

/// The configuration files git reads for the git directory `git_dir`: its (common) `config`
/// and the worktree's `config.worktree`.
fn config_files(git_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let common = common_dir(git_dir)?;
    let mut files = vec![common.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        files.push(git_dir.join("config"));
    }
    Ok(files)
}

/// A configuration file's bytes; `None` when there is none; an error (the reason to ask) when
/// it is there but cannot be read whole.
fn read_config(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(format!("{} cannot be read", path.display())),
    };
    if !meta.is_file() || meta.len() > MAX_CONFIG {
        return Err(format!(
            "the repository's git configuration ({}) is not a small plain file",
            path.display()
        ));
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|_| format!("{} cannot be read", path.display()))
}

/// The first key of `vars` that is not on the allow-list, and whether it is one that makes git
/// fetch lazily (allowed when `lazy_fetch` is off).
fn first_unlisted_key(vars: &[Var], lazy_fetch: bool) -> Option<(String, bool)> {
    vars.iter().find_map(|(key, _)| {
        let lazy = lazy_key(key);
        if lazy && !lazy_fetch || !lazy && read_only_harmless(key) {
            return None;
        }
        Some((String::from_utf8_lossy(key).into_owned(), lazy))
    })
}

/// The values `vars` give `key` (as git reads them); one git would refuse (no value: a
/// bare boolean), an empty one or one that is not UTF-8 is a reason to ask.
fn values(vars: &[Var], key: &str) -> Result<Vec<String>, String> {
    let unplain = || format!("the git configuration's `{key}` is not plainly written");
    let mut found = Vec::new();
    for (k, value) in vars {
        if k != key.as_bytes() {
            continue;
        }
        let value = value
            .as_deref()
            .filter(|v| !v.is_empty())
            .ok_or_else(unplain)?;
        found.push(String::from_utf8(value.to_vec()).map_err(|_| unplain())?);
    }
    Ok(found)
}

/// The one value `vars` give `key`, lower case, if any; two different ones are a reason to
/// ask.
fn single_value(vars: &[Var], key: &str) -> Result<Option<String>, String> {
    let mut all = values(vars, key)?;
    all.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    match all.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.to_ascii_lowercase())),
        _ => Err(format!("the git configuration sets `{key}` twice")),
    }
}

/// The paths of the gitlinks in the index file at `path` (and in the shared indexes a split
/// index names, in `git_dir`); none when there is no index. `hash` is the object id length.
/// Anything git would not read is a reason to ask.
fn index_links(path: &Path, git_dir: &Path, hash: usize) -> Result<Vec<Vec<u8>>, String> {
    let Some(bytes) = read_index(path)? else {
        return Ok(Vec::new());
    };
    let unreadable = || format!("the git index {} cannot be read plainly", path.display());
    let main = gitindex::parse(&bytes, hash, false).map_err(|()| unreadable())?;
    // A split index strips the name of an entry it replaces: where it is, rein cannot say.
    if main.unnamed_link {
        return Err("the git index lists a submodule without its path".into());
    }
    let mut links = main.links;
    for oid in &main.shared {
        // A split index keeps most entries in `sharedindex.<oid>`.
        let base = git_dir.join(format!("sharedindex.{oid}"));
        let bytes = read_index(&base)?.ok_or_else(unreadable)?;
        links.extend(
            gitindex::parse(&bytes, hash, false)
                .map_err(|()| unreadable())?
                .links,
        );
    }
    Ok(links)
}

/// An index file's bytes; `None` when there is none.
fn read_index(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(format!("{} cannot be read", path.display())),
    };
    if !meta.is_file() || meta.len() > MAX_INDEX {
        return Err(format!(
            "the git index {} is not a plain file rein reads",
            path.display()
        ));
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|_| format!("{} cannot be read", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first unlisted key of `config`, lazy fetching on.
    fn unlisted(config: &str) -> Result<Option<String>, ()> {
        let vars = gitconfig::parse(config.as_bytes())?;
        Ok(first_unlisted_key(&vars, true).map(|(key, _)| key))
    }

    /// A minimal git directory at `at`.
    fn git_dir(at: &Path) {
        std::fs::create_dir_all(at.join("objects")).unwrap();
        std::fs::create_dir_all(at.join("refs")).unwrap();
        std::fs::write(at.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn what_git_init_and_clone_write_is_harmless() {
        let config = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                      \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                      \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                      \tremote = origin\n\tmerge = refs/heads/main\n[lfs]\n\trepositoryformatversion = 0\n\
                      [http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic x\n";
        assert_eq!(unlisted(config), Ok(None));
    }

    #[test]
    fn keys_that_run_programs_are_named() {
        for (config, key) in [
            ("[core]\n\tfsmonitor = ./x\n", "core.fsmonitor"),
            ("[Core]\n\tPager = less\n", "core.pager"),
            ("[core] bare = false\n\tsshCommand = x\n", "core.sshcommand"),
            ("[diff]\n\texternal = x\n", "diff.external"),
            ("[filter \"lfs\"]\n\tclean = x\n", "filter.lfs.clean"),
            (
                "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ./x\n",
                "log.showsignature",
            ),
            ("[include]\n\tpath = ../evil\n", "include.path"),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = x\n",
                "includeif.gitdir:/.path",
            ),
            ("[alias]\n\tst = !sh x\n", "alias.st"),
            // A continuation does not hide the key on the next line.
            (
                "[user]\n\tname = a \\\n b\n[core]\n\tpager = x\n",
                "core.pager",
            ),
            // Nor does a remote subsection with an unknown key.
            (
                "[remote \"o\"]\n\tuploadpack = ./x\n",
                "remote.o.uploadpack",
            ),
            // git reads a key before any section: on no list.
            ("\tbare = false\n", "bare"),
            // A backslash at the end of a comment continues nothing (git reads the next line).
            (
                "[core]\n\tbare = false # \\\n\tfsmonitor = touch PWNED; false #\n",
                "core.fsmonitor",
            ),
            (
                "[user]\n\tname = a ; \\\n[core]\n\tpager = x\n",
                "core.pager",
            ),
            // Nor does one after a comment in a header's line.
            ("[core] # \\\n\tpager = x\n", "core.pager"),
            // `[section.sub]` is a subsection, its name folded to lower case.
            ("[Remote.O]\n\tuploadPack = x\n", "remote.o.uploadpack"),
        ] {
            assert_eq!(unlisted(config), Ok(Some(key.to_string())), "{config}");
        }
    }

    #[test]
    fn what_cannot_be_read_plainly_is_an_error() {
        for config in [
            "[core\n\tbare = x\n",
            "[core]\n\t!x = y\n",
            // What git refuses: an unknown escape, an open quote, a name with a comment.
            "[core]\n\tbare = \\q\n",
            "[core]\n\tbare = \"false\n",
            "[core]\n\tbare # x\n",
            // A NUL in a header: git's key would end there (`core.fsmonitor`).
            "[core \"fsmonitor\0\"]\n\tx = y\n",
            // The old reader took this for a harmless `extensions` key; git reads
            // `extensions.partialclone = origin`, a partial clone.
            "[extensions \"partialclone\0\"]\n\tx = origin\n",
        ] {
            assert_eq!(unlisted(config), Err(()), "{config}");
        }
    }

    #[test]
    fn a_fifo_a_clone_planted_is_never_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        git_dir(&git);
        std::fs::write(git.join("config"), "[core]\n\tpager = x\n").unwrap();
        let fifo = std::ffi::CString::new(git.join("commondir").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // Asked, without waiting: a `commondir` rein cannot read plainly is a reason itself.
        let why = config_doubt(d.path(), d.path(), true);
        assert!(why.is_some());
    }

    #[test]
    fn a_linked_repository_and_its_common_dir_are_read() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let common = d.path().join("main.git");
        std::fs::create_dir_all(common.join("worktrees/w")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", common.join("worktrees/w").display()),
        )
        .unwrap();
        std::fs::write(common.join("worktrees/w/commondir"), "../..\n").unwrap();
        std::fs::write(common.join("config"), "[core]\n\tbare = false\n").unwrap();
        assert_eq!(config_doubt(&ws, &ws, true), None);
        std::fs::write(
            common.join("worktrees/w/config.worktree"),
            "[core]\n\tpager = x\n",
        )
        .unwrap();
        assert!(config_doubt(&ws, &ws, true).is_some_and(|r| r.contains("core.pager")));
    }

    #[test]
    fn partial_clone_keys_ask_unless_lazy_fetch_is_off() {
        let config = "[extensions]\n\tpartialClone = origin\n[remote \"origin\"]\n\
                      \tpromisor = true\n\tpartialclonefilter = blob:none\n";
        let vars = gitconfig::parse(config.as_bytes()).unwrap();
        assert_eq!(
            first_unlisted_key(&vars, true),
            Some(("extensions.partialclone".into(), true))
        );
        assert_eq!(first_unlisted_key(&vars, false), None);
        assert_eq!(
            unlisted("[extensions]\n\tobjectFormat = sha256\n"),
            Ok(None)
        );
    }

    #[test]
    fn a_hook_read_only_commands_run_asks_wherever_git_looks_for_it() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        git_dir(&ws.join(".git"));
        let hook = |dir: &str, name: &str, mode: u32| {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
            let path = ws.join(dir).join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        // Ordinary hooks, and one git skips for want of execute bits.
        hook(".git/hooks", "pre-commit", 0o755);
        hook(".git/hooks", "post-index-change", 0o644);
        assert_eq!(config_doubt(ws, ws, true), None);
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = .githooks\n").unwrap();
        hook(".githooks", "post-index-change", 0o755);
        let why = config_doubt(ws, ws, true).unwrap_or_default();
        assert!(why.contains("`post-index-change` hook"), "{why}");
        // The value as git reads it: quotes and escapes name the same directory.
        std::fs::write(
            ws.join(".git/config"),
            "[core]\n\thooksPath = \".git\"\"hooks\" # \\\n",
        )
        .unwrap();
        let why = config_doubt(ws, ws, true).unwrap_or_default();
        assert!(why.contains("`post-index-change` hook"), "{why}");
        // A bare `hooksPath` (git refuses it) asks.
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath\n").unwrap();
        assert!(config_doubt(ws, ws, true).is_some());
    }

    /// An index git itself wrote, in each version, with a submodule among files.
    #[test]
    fn gitlinks_are_found_in_every_index_version() {
        use std::process::Command;
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(r)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", r)
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(r.join("dir")).unwrap();
        std::fs::write(r.join("dir/a.txt"), "a").unwrap();
        std::fs::write(r.join("b.txt"), "b").unwrap();
        git(&["add", "."]);
        let oid = "0123456789012345678901234567890123456789";
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{oid},dir/sm"),
        ]);
        let (index, git_dir) = (r.join(".git/index"), r.join(".git"));
        for v in ["2", "3", "4"] {
            git(&["update-index", "--index-version", v]);
            let links = index_links(&index, &git_dir, 20).unwrap();
            assert_eq!(links, vec![b"dir/sm".to_vec()], "version {v}");
        }
        // A split index keeps the entries in `sharedindex.<id>`, which is read too.
        git(&["update-index", "--index-version", "2"]);
        git(&["update-index", "--split-index"]);
        let links = index_links(&index, &git_dir, 20).unwrap();
        assert_eq!(links, vec![b"dir/sm".to_vec()], "split index");
        let shared = std::fs::read_dir(&git_dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."));
        assert!(shared, "git wrote no shared index");
        // Not an index at all: a reason to ask.
        std::fs::write(&index, "DIRC junk").unwrap();
        assert!(index_links(&index, &git_dir, 20).is_err());
    }
}
