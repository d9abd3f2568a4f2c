//! The repository's own git configuration, as the policy sees it. A hostile clone can set keys
//! that make `git status`, `git log` or `git diff` run a program (`core.fsmonitor`,
//! `core.pager`, `diff.external`, filters, `log.showSignature` with `gpg.program`, includes
//! naming more). Only keys on an allow-list leave a git command rated by its rules; any other
//! key, or a file that cannot be read plainly, makes it ask. Read as text, never by running git.

use std::path::{Path, PathBuf};

use discover::Repo;

mod discover;
mod index;

/// The largest configuration file read; a larger one makes git commands ask.
const MAX_CONFIG: u64 = 256 << 10;

/// Keys (`section.name`, lower case) that cannot make a command rein allows run a program.
const HARMLESS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.sharedrepository",
    "core.quotepath",
    "core.checkstat",
    "core.trustctime",
    "core.untrackedcache",
    "core.splitindex",
    "core.commitgraph",
    "core.multipackindex",
    "core.abbrev",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.longpaths",
    "core.hidedotfiles",
    "core.protectntfs",
    "core.protecthfs",
    "core.preloadindex",
    // Git writes it in every submodule's git directory; `worktree_doubt` asks unless it
    // names the work tree git found.
    "core.worktree",
    // Most hooks run on commits, merges and checkouts, which always ask; the directory is
    // searched for those that read-only commands run (`hooks_doubt`).
    "core.hookspath",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "fetch.prune",
    "push.default",
    "push.autosetupremote",
    "lfs.repositoryformatversion",
    "index.version",
    "feature.manyfiles",
    "rerere.enabled",
    "merge.conflictstyle",
];

/// Keys of subsections (`section.<sub>.name`) that cannot either.
const HARMLESS_IN_SUBSECTION: &[&str] = &[
    "remote.url",
    "remote.pushurl",
    "remote.fetch",
    "remote.push",
    "remote.tagopt",
    "remote.prune",
    "branch.remote",
    "branch.pushremote",
    "branch.merge",
    "branch.rebase",
    "branch.description",
    "submodule.url",
    "submodule.active",
    "submodule.branch",
    // Read by network commands only (which ask); `actions/checkout` writes `extraheader`.
    "http.extraheader",
];

/// Keys of a partial clone: git then fetches missing objects (network, writes) for `show`,
/// `log -p`, `diff A B`; harmless only with `--no-lazy-fetch`. Checked before the sections.
const LAZY_FETCH: &[&str] = &[
    "remote.promisor",
    "remote.partialclonefilter",
    "extensions.partialclone",
];

/// Sections whose every key is harmless: version switches and colours.
const HARMLESS_SECTIONS: &[&str] = &["extensions", "color", "gc", "advice"];

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
    let mut texts = Vec::new();
    for file in config_files(&repo.git_dir) {
        if let Some(text) = read_config(&file)? {
            key_doubt(&file, &text, lazy_fetch)?;
            texts.push(text);
        }
    }
    worktree_doubt(repo, &texts)?;
    hooks_doubt(repo, &texts)?;
    let hash = match single_value(&texts, "extensions", "objectformat")?.as_deref() {
        None | Some("sha1") => 20,
        Some("sha256") => 32,
        Some(other) => {
            return Err(format!(
                "git's object format `{other}` is not one rein reads"
            ));
        }
    };
    let index = repo.git_dir.join("index");
    for link in index::gitlinks(&index, &repo.git_dir, hash)? {
        use std::os::unix::ffi::OsStrExt;
        // A split index strips the name of an entry it replaces: where it is, rein cannot say.
        if link.is_empty() {
            return Err("the git index lists a submodule without its path".into());
        }
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

/// The reason to ask when `text` (the configuration file `file`) sets a key off the list.
fn key_doubt(file: &Path, text: &str, lazy_fetch: bool) -> Result<(), String> {
    match first_unlisted_key(text, lazy_fetch) {
        Ok(None) => Ok(()),
        Ok(Some((key, true))) => Err(format!(
            "the repository is a partial clone (`{key}`): git may fetch missing objects over \
             the network; add --no-lazy-fetch (`git --no-lazy-fetch ...`)"
        )),
        Ok(Some((key, false))) => Err(format!(
            "the repository's git configuration sets `{key}`, which may make git run a program"
        )),
        Err(()) => Err(format!(
            "the repository's git configuration ({}) cannot be read plainly",
            file.display()
        )),
    }
}

/// The reason to ask when `core.worktree` moves the work tree away from where `repo` found
/// it (a submodule's git directory names its checkout; anything else is another tree).
fn worktree_doubt(repo: &Repo, texts: &[String]) -> Result<(), String> {
    let here = repo.work_tree.canonicalize().ok();
    for text in texts {
        for value in values(text, "core", "worktree")? {
            // Relative to the git directory, as git reads it.
            let named = repo.git_dir.join(&value).canonicalize().ok();
            if named.is_none() || named != here {
                return Err(format!(
                    "the repository's git configuration sets `core.worktree = {value}`, another \
                     work tree"
                ));
            }
        }
    }
    Ok(())
}

/// Hooks git runs on commands rein may allow: `git status` refreshes the index, which runs
/// `post-index-change`. (Checked with git 2.47: `diff`, `log -p`, `show`, `ls-files` run no
/// hook; the others run on commits, merges, checkouts, pushes, which ask.)
const READ_ONLY_HOOKS: &[&str] = &["post-index-change"];

/// The reason to ask when a hooks directory git would use for `repo` (`hooks` in its common
/// directory, or any `core.hooksPath` its configuration `texts` set) holds a hook that
/// read-only commands run.
fn hooks_doubt(repo: &Repo, texts: &[String]) -> Result<(), String> {
    let mut dirs = vec![common_dir(&repo.git_dir).join("hooks")];
    for text in texts {
        for value in values(text, "core", "hookspath")? {
            dirs.push(hooks_dir(&value, &repo.work_tree)?);
        }
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
    if value.starts_with('~') {
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
fn common_dir(git_dir: &Path) -> PathBuf {
    // Never blocking on a FIFO a clone put there.
    crate::sandbox::git::read_small(&git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim_end_matches(['\n', '\r'])))
        .unwrap_or_else(|| git_dir.to_path_buf())
}

/// The configuration files git reads for the git directory `git_dir`: its (common) `config`
/// and the worktree's `config.worktree`.
fn config_files(git_dir: &Path) -> Vec<PathBuf> {
    let common = common_dir(git_dir);
    let mut files = vec![common.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        files.push(git_dir.join("config"));
    }
    files
}

/// A configuration file's text; `None` when there is none; an error (the reason to ask) when
/// it is there but cannot be read whole.
fn read_config(path: &Path) -> Result<Option<String>, String> {
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
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|_| format!("{} cannot be read as text", path.display()))
}

/// One `name = value` line of a configuration file.
struct Entry<'a> {
    /// The section, lower case.
    section: String,
    /// The subsection, as written.
    sub: Option<String>,
    /// The key's last part, lower case.
    name: String,
    /// What follows the name (`= value`, a comment, or nothing), untrimmed of comments.
    rest: &'a str,
    /// Whether the value goes on to the next line.
    continued: bool,
}

/// The entries of `text` (git's configuration syntax); `Err` where the syntax is not plainly
/// one rein reads.
fn entries(text: &str) -> Result<Vec<Entry<'_>>, ()> {
    let mut section: Option<(String, Option<String>)> = None;
    let mut continued = false;
    let mut found = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if continued {
            continued = ends_continued(line);
            continue;
        }
        let mut rest = line;
        if rest.starts_with('[') {
            let (header, after) = parse_header(rest)?;
            section = Some(header);
            rest = after.trim();
        }
        if rest.is_empty() || rest.starts_with(['#', ';']) {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let after_name = rest[name.len()..].trim_start();
        let plain_end = after_name.is_empty() || after_name.starts_with(['=', '#', ';']);
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) || !plain_end {
            return Err(());
        }
        continued = ends_continued(after_name);
        let (sec, sub) = section.as_ref().ok_or(())?;
        found.push(Entry {
            section: sec.clone(),
            sub: sub.clone(),
            name: name.to_ascii_lowercase(),
            rest: after_name,
            continued,
        });
    }
    Ok(found)
}

/// The first key of `text` that is not on the allow-list, as `section[.sub].name`, and
/// whether it is one that makes git fetch lazily (allowed when `lazy_fetch` is off); `Err`
/// where the syntax is not plainly one rein reads.
fn first_unlisted_key(text: &str, lazy_fetch: bool) -> Result<Option<(String, bool)>, ()> {
    for e in entries(text)? {
        let lazy = LAZY_FETCH.contains(&format!("{}.{}", e.section, e.name).as_str());
        if lazy && !lazy_fetch {
            continue;
        }
        if lazy || !harmless(&e.section, e.sub.as_deref(), &e.name) {
            let key = match &e.sub {
                Some(s) => format!("{}.{s}.{}", e.section, e.name),
                None => format!("{}.{}", e.section, e.name),
            };
            return Ok(Some((key, lazy)));
        }
    }
    Ok(None)
}

/// The values `text` gives `section.name` (no subsection), each a plain word: quotes,
/// escapes, continued lines and empty values are errors, reasons to ask.
fn values(text: &str, section: &str, name: &str) -> Result<Vec<String>, String> {
    let unplain = || format!("the git configuration's `{section}.{name}` is not plainly written");
    let mut found = Vec::new();
    for e in entries(text).map_err(|()| unplain())? {
        if e.section != section || e.sub.is_some() || e.name != name {
            continue;
        }
        let value = e.rest.strip_prefix('=').ok_or_else(unplain)?;
        let value = value.split(['#', ';']).next().unwrap_or_default().trim();
        if e.continued || value.is_empty() || value.contains(['"', '\\']) {
            return Err(unplain());
        }
        found.push(value.to_string());
    }
    Ok(found)
}

/// The one value `texts` give `section.name`, lower case, if any; two different ones are a
/// reason to ask.
fn single_value(texts: &[String], section: &str, name: &str) -> Result<Option<String>, String> {
    let mut all = Vec::new();
    for text in texts {
        all.extend(values(text, section, name)?);
    }
    all.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    match all.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.to_ascii_lowercase())),
        _ => Err(format!(
            "the git configuration sets `{section}.{name}` twice"
        )),
    }
}

/// Whether a value line goes on to the next (an unescaped `\` at its end).
fn ends_continued(line: &str) -> bool {
    let backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
    backslashes % 2 == 1
}

/// `[section]`, `[section "sub"]` or `[section.sub]` at the start of `line`: the section (lower
/// case) and subsection, and what follows the `]`.
fn parse_header(line: &str) -> Result<((String, Option<String>), &str), ()> {
    let inner = line.strip_prefix('[').ok_or(())?;
    let (name, sub, after) = match inner.split_once('"') {
        Some((name, quoted)) => {
            let (sub, after) = quoted.split_once("\"]").ok_or(())?;
            // Escapes in a subsection: read as they are written, which only ever makes a
            // listed subsection key look unlisted (a reason to ask).
            (name.trim(), Some(sub.to_string()), after)
        }
        None => {
            let (head, after) = inner.split_once(']').ok_or(())?;
            match head.split_once('.') {
                Some((name, sub)) => (name, Some(sub.to_ascii_lowercase()), after),
                None => (head, None, after),
            }
        }
    };
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !plain {
        return Err(());
    }
    Ok(((name.to_ascii_lowercase(), sub), after))
}

/// Whether `section[.sub].name` is on the allow-list.
fn harmless(section: &str, sub: Option<&str>, name: &str) -> bool {
    if HARMLESS_SECTIONS.contains(&section) {
        return true;
    }
    let key = format!("{section}.{name}");
    match sub {
        None => HARMLESS.contains(&key.as_str()),
        Some(_) => HARMLESS_IN_SUBSECTION.contains(&key.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first unlisted key of `config`, lazy fetching on.
    fn unlisted(config: &str) -> Result<Option<String>, ()> {
        first_unlisted_key(config, true).map(|k| k.map(|(key, _)| key))
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
        ] {
            assert_eq!(unlisted(config), Ok(Some(key.to_string())), "{config}");
        }
    }

    #[test]
    fn what_cannot_be_read_plainly_is_an_error() {
        for config in [
            "[core\n\tbare = x\n",
            "\tbare = false\n",
            "[core]\n\t!x = y\n",
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
        let why = config_doubt(d.path(), d.path(), true);
        assert!(why.is_some_and(|r| r.contains("core.pager")));
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
        assert_eq!(
            first_unlisted_key(config, true),
            Ok(Some(("extensions.partialclone".into(), true)))
        );
        assert_eq!(first_unlisted_key(config, false), Ok(None));
        let other = "[extensions]\n\tobjectFormat = sha256\n";
        assert_eq!(first_unlisted_key(other, true), Ok(None));
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
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = \"x\"\n").unwrap();
        assert!(config_doubt(ws, ws, true).is_some());
    }
}
