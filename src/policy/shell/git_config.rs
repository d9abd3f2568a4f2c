//! The repository's own git configuration, as the policy sees it. A hostile clone can set keys
//! that make `git status`, `git log` or `git diff` run a program (`core.fsmonitor`,
//! `core.pager`, `diff.external`, filters, `log.showSignature` with `gpg.program`, includes
//! naming more). Only keys on an allow-list leave a git command rated by its rules; any other
//! key, or a file that cannot be read plainly, makes it ask. Read as text, never by running git.

use std::path::{Path, PathBuf};

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
    // Hooks run on commits, merges and checkouts, which always ask.
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
    "remote.promisor",
    "remote.partialclonefilter",
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

/// Sections whose every key is harmless: version switches and colours.
const HARMLESS_SECTIONS: &[&str] = &["extensions", "color", "gc", "advice"];

/// Why git commands run in `dir` should ask because of the repository's own configuration,
/// if they should.
pub(super) fn config_doubt(dir: &Path) -> Option<String> {
    for file in config_files(dir) {
        let text = match read_config(&file) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(why) => return Some(why),
        };
        match first_unlisted_key(&text) {
            Ok(None) => {}
            Ok(Some(key)) => {
                return Some(format!(
                    "the repository's git configuration sets `{key}`, which may make git run a \
                     program"
                ));
            }
            Err(()) => {
                return Some(format!(
                    "the repository's git configuration ({}) cannot be read plainly",
                    file.display()
                ));
            }
        }
    }
    None
}

/// The configuration files git reads for the repository holding `dir`: its (common) `config`
/// and the worktree's `config.worktree`.
fn config_files(dir: &Path) -> Vec<PathBuf> {
    let Some(git_dir) = git_dir_of(dir) else {
        return Vec::new();
    };
    // Never blocking on a FIFO a clone put there.
    let common = crate::sandbox::git::read_small(&git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim_end_matches(['\n', '\r'])))
        .unwrap_or_else(|| git_dir.clone());
    let mut files = vec![common.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        files.push(git_dir.join("config"));
    }
    files
}

/// The git directory of the repository holding `dir` (a `.git` directory, link, or the
/// directory a `.git` file names).
fn git_dir_of(dir: &Path) -> Option<PathBuf> {
    let dir = std::path::absolute(dir).ok()?;
    for a in dir.ancestors() {
        let dot_git = a.join(".git");
        let Ok(meta) = dot_git.symlink_metadata() else {
            continue;
        };
        return match meta.is_file() {
            true => crate::sandbox::git::gitdir_file_target(a, &dot_git),
            false => Some(dot_git),
        };
    }
    None
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

/// The first key of `text` (git's configuration syntax) that is not on the allow-list, as
/// `section[.sub].name`; `Err` where the syntax is not plainly one rein reads.
fn first_unlisted_key(text: &str) -> Result<Option<String>, ()> {
    let mut section: Option<(String, Option<String>)> = None;
    let mut continued = false;
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
        let name = name.to_ascii_lowercase();
        if !harmless(sec, sub.as_deref(), &name) {
            return Ok(Some(match sub {
                Some(s) => format!("{sec}.{s}.{name}"),
                None => format!("{sec}.{name}"),
            }));
        }
    }
    Ok(None)
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

    #[test]
    fn what_git_init_and_clone_write_is_harmless() {
        let config = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                      \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                      \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                      \tremote = origin\n\tmerge = refs/heads/main\n[lfs]\n\trepositoryformatversion = 0\n\
                      [http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic x\n";
        assert_eq!(first_unlisted_key(config), Ok(None));
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
            assert_eq!(
                first_unlisted_key(config),
                Ok(Some(key.to_string())),
                "{config}"
            );
        }
    }

    #[test]
    fn what_cannot_be_read_plainly_is_an_error() {
        for config in [
            "[core\n\tbare = x\n",
            "\tbare = false\n",
            "[core]\n\t!x = y\n",
        ] {
            assert_eq!(first_unlisted_key(config), Err(()), "{config}");
        }
    }

    #[test]
    fn a_fifo_a_clone_planted_is_never_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        let fifo = std::ffi::CString::new(git.join("commondir").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(config_doubt(d.path()), None);
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
        assert_eq!(config_doubt(&ws), None);
        std::fs::write(
            common.join("worktrees/w/config.worktree"),
            "[core]\n\tpager = x\n",
        )
        .unwrap();
        assert!(config_doubt(&ws).is_some_and(|r| r.contains("core.pager")));
    }
}
