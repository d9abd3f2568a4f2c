//! `git`: global options read exactly as git reads them (which take a value, which take it
//! only after `=`; git accepts no abbreviations there), so the subcommand rules see is the
//! one git runs; and the subcommand options that write files or run programs.

use super::words::Word;
use super::{Ctx, Walker};

/// Global options that take the next word as their value.
const WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--attr-source",
    "--shallow-file",
];

/// Global options that take a value only after `=`.
const WITH_ATTACHED: &[&str] = &[
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--attr-source",
    "--exec-path",
    "--list-cmds",
];

/// Global options without a value that change nothing about what git runs or reads as
/// configuration (`-p`, `--paginate` are the others: they run the pager).
const HARMLESS: &[&str] = &[
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--literal-pathspecs",
    "--no-literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--version",
    "-v",
    "--help",
    "-h",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
];

/// Configuration keys (or their last part) whose value is a command git runs.
const RUNS_COMMAND: &[&str] = &[
    "core.pager",
    "core.editor",
    "core.fsmonitor",
    "core.sshcommand",
    "core.askpass",
    "diff.external",
    ".textconv",
    ".command",
    ".driver",
    ".clean",
    ".smudge",
    ".process",
    "credential.helper",
    "sequence.editor",
    "gpg.program",
    "uploadpack.packobjectshook",
    "pager.log",
    "pager.diff",
    "pager.show",
    "pager.status",
];

/// Subcommands deny rules commonly name, for a subcommand only known at run time.
const RISKY_SUBCOMMANDS: &[&str] = &[
    "push",
    "reset",
    "clean",
    "rm",
    "checkout",
    "restore",
    "switch",
    "commit",
    "rebase",
    "merge",
    "branch",
    "tag",
    "stash",
    "gc",
    "prune",
    "filter-branch",
    "config",
    "remote",
    "submodule",
    "worktree",
    "update-ref",
    "reflog",
    "am",
    "apply",
    "cherry-pick",
    "revert",
];

/// What git's global options say about a command.
struct GitGlobals {
    /// The word the subcommand starts at.
    next: usize,
    /// The first reason to ask they raise.
    reason: Option<String>,
    /// Where git works, relative to the workspace (`-C` options, each from the last).
    dir: std::path::PathBuf,
    /// Off with `--no-lazy-fetch`.
    lazy_fetch: bool,
}

/// `git -C DIR`: a directory inside the workspace is another place in the same project,
/// added to `dir` (git applies each `-C` from the one before); one elsewhere is another
/// repository, with its own configuration (the reason to ask).
fn git_dir_change(word: &Word, dir: &mut std::path::PathBuf) -> Option<String> {
    let Some(t) = word.literal() else {
        return Some(format!(
            "git -C {} works in a directory only known when it runs",
            word.text()
        ));
    };
    let outside = t.starts_with(['/', '~']) || t.split('/').any(|c| c == "..");
    if outside {
        return Some(format!(
            "git -C {t} works in another repository, with its own configuration"
        ));
    }
    // `-C ""` leaves git where it is.
    dir.push(&t);
    None
}

impl Walker {
    /// `git`: global options are dropped so rules see `git <subcommand> ...`; those that can
    /// change what runs make the part doubtful.
    pub(super) fn git(&mut self, words: &[Word], ctx: &Ctx) {
        let g = self.git_global_options(words, ctx);
        // The repository git would use there (its configuration, hooks, submodules) may make
        // any git command run a program.
        let reason = g.reason.clone().or_else(|| self.repository_doubt(&g));
        self.git_subcommand(words, g.next, &ctx.with_doubt(reason));
    }

    /// Where git runs unless told otherwise: the workspace (the current directory by default).
    fn git_root(&self) -> std::path::PathBuf {
        self.workspace
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("."))
    }

    /// Reads git's global options: where the subcommand starts, the first doubt they raise,
    /// and where git works.
    fn git_global_options(&mut self, words: &[Word], ctx: &Ctx) -> GitGlobals {
        let mut g = GitGlobals {
            next: 1,
            reason: None,
            dir: std::path::PathBuf::new(),
            lazy_fetch: true,
        };
        while let Some(w) = words.get(g.next) {
            let Some(t) = w.literal() else {
                if w.may_be_option() {
                    g.reason.get_or_insert(format!(
                        "`{}` may become a git option when it runs",
                        w.text()
                    ));
                    // Any later word could be the subcommand too.
                    for j in g.next + 1..words.len() {
                        let mut rest = vec![Word::lit("git")];
                        rest.extend(words[j..].iter().cloned());
                        let ctx = ctx.with_doubt(g.reason.clone());
                        self.emit("git".into(), &rest, &ctx);
                    }
                }
                // It may be the subcommand itself.
                break;
            };
            if !t.starts_with('-') {
                break;
            }
            g.next += self.git_global_option(&t, words.get(g.next + 1), ctx, &mut g);
        }
        g
    }

    /// One global option `t` (its value may be `next`), noted in `g`: how many words it takes.
    fn git_global_option(
        &mut self,
        t: &str,
        next: Option<&Word>,
        ctx: &Ctx,
        g: &mut GitGlobals,
    ) -> usize {
        let (opt, attached) = match t.split_once('=') {
            Some((o, _)) if WITH_ATTACHED.contains(&o) => (o.to_string(), true),
            _ => (t.to_string(), false),
        };
        let known = attached
            || HARMLESS.contains(&opt.as_str())
            // `--bare` makes the current directory the git directory, as `--git-dir=.` does.
            || matches!(opt.as_str(), "-p" | "--paginate" | "--bare")
            || WITH_VALUE.contains(&opt.as_str());
        let takes_next = !attached && WITH_VALUE.contains(&opt.as_str());
        let value = next.filter(|_| takes_next);
        let doubt = if !known {
            Some(format!("`{t}` is not a git option rein knows"))
        } else if opt == "-C" {
            value.and_then(|v| git_dir_change(v, &mut g.dir))
        } else if HARMLESS.contains(&opt.as_str()) && !attached {
            None
        } else {
            Some(format!(
                "git {opt} can change what git runs or reads as configuration"
            ))
        };
        if opt == "--no-lazy-fetch" {
            g.lazy_fetch = false;
        }
        if let Some(r) = doubt {
            g.reason.get_or_insert(r);
        }
        if opt == "-c"
            && let Some(setting) = value.and_then(Word::literal)
        {
            self.git_setting(&setting, ctx);
        }
        if takes_next { 2 } else { 1 }
    }

    /// `git <subcommand> ...` from word `i` on; a subcommand only known when it runs may be
    /// any of the risky ones.
    fn git_subcommand(&mut self, words: &[Word], i: usize, ctx: &Ctx) {
        let mut rest = vec![Word::lit("git")];
        rest.extend(words.iter().skip(i).cloned());
        let Some(sub) = words.get(i) else {
            self.emit("git".into(), &rest, ctx);
            return;
        };
        if sub.literal().is_none() {
            let ctx = ctx.with_doubt(Some(format!(
                "the git subcommand `{}` is only known when it runs",
                sub.text()
            )));
            let aliases = RISKY_SUBCOMMANDS
                .iter()
                .filter(|s| sub.could_be(s))
                .map(|s| format!("git {s}"))
                .collect();
            self.emit_with(
                "git".into(),
                &rest,
                &ctx,
                super::Role::Command,
                aliases,
                None,
            );
            return;
        }
        self.emit("git".into(), &rest, ctx);
    }

    /// `git -c KEY=VALUE` where the value is a command git runs (`core.pager`, an alias with
    /// `!`, ...): its script is searched for deny rules; an alias to a subcommand is rated as
    /// that subcommand.
    fn git_setting(&mut self, setting: &str, ctx: &Ctx) {
        let Some((key, value)) = setting.split_once('=') else {
            return;
        };
        let key = key.to_ascii_lowercase();
        let ctx = ctx
            .with_doubt(Some(format!("git -c {key} sets a command git may run")))
            .with_via("git -c");
        if key.starts_with("alias.") {
            match value.strip_prefix('!') {
                Some(script) => self.script(script, &ctx),
                None => self.script(&format!("git {value}"), &ctx),
            }
        } else if RUNS_COMMAND.iter().any(|k| key == *k || key.ends_with(k)) {
            self.script(value, &ctx);
        }
    }

    /// Why the repository git would use in the directory `g.dir` (relative to the
    /// workspace) makes its commands ask, if it does: one reached through a `.git` file or
    /// link, a directory shaped like a git directory, or what `config_doubt` finds.
    fn repository_doubt(&self, g: &GitGlobals) -> Option<String> {
        let root = self.git_root();
        let shown = g.dir.display();
        if !g.dir.as_os_str().is_empty()
            && let Some(why) = self.linked_repository(&g.dir)
        {
            return Some(format!(
                "git -C {shown} may work in another repository: {why}"
            ));
        }
        super::git_config::config_doubt(&root.join(&g.dir), &root, g.lazy_fetch)
    }

    /// Why the workspace's directory `rel` may belong to a repository outside the
    /// workspace, if it may: it leads out through a link, or a `.git` between it and the
    /// workspace is a file (`gitdir: elsewhere`) or a link rather than a directory.
    fn linked_repository(&self, rel: &std::path::Path) -> Option<String> {
        let root = self.git_root().canonicalize().ok()?;
        // A directory that does not exist stops git before it reads anything.
        let dir = root.join(rel).canonicalize().ok()?;
        if !dir.starts_with(&root) {
            return Some("the directory is a link out of the workspace".into());
        }
        dir.ancestors()
            .take_while(|a| *a != root)
            .map(|a| a.join(".git"))
            .find(|g| g.symlink_metadata().is_ok_and(|m| !m.is_dir()))
            .map(|g| format!("{} is not a plain directory", g.display()))
    }

    /// Marks the git commands of a line that changes directory (`cd`, `pushd`, `popd`, in
    /// any order: a loop runs them again) and those `find -execdir` runs: like `git -C DIR`,
    /// git may then read another repository's configuration.
    pub(super) fn git_after_cd(&mut self) {
        let moves = self
            .parts
            .iter()
            .any(|p| matches!(p.program.as_deref(), Some("cd" | "pushd" | "popd")));
        for p in &mut self.parts {
            // `find -execdir` runs it in every directory found.
            let elsewhere =
                moves || matches!(p.via.as_deref(), Some("find -execdir" | "find -okdir"));
            if elsewhere && p.program.as_deref() == Some("git") && p.doubt.is_none() {
                p.doubt = Some(
                    "git run after `cd` (or by `find -execdir`) may work in another repository, \
                     with its own configuration"
                        .into(),
                );
            }
        }
    }
}

/// Options of the diff family (`diff`, `log`, `show`, ...) that write a file or run
/// programs from the configuration. git accepts unique abbreviations, so prefixes count.
const DIFF_DANGEROUS: &[&str] = &["--output", "--ext-diff", "--textconv"];

/// Options of the diff family whose exact names are prefixes of a dangerous one (or start
/// like one): git takes an exact name before trying abbreviations, so these are themselves.
const DIFF_SAFE: &[&str] = &[
    "--text",
    "--output-indicator-new",
    "--output-indicator-old",
    "--output-indicator-context",
    "--no-ext-diff",
    "--no-textconv",
];

const DIFF_FAMILY: &[&str] = &[
    "diff",
    "log",
    "show",
    "whatchanged",
    "diff-tree",
    "diff-files",
    "diff-index",
    "format-patch",
    "range-diff",
    "stash",
    "reflog",
    "shortlog",
    "cherry",
];

/// Why the subcommand and options `args` (`log`, `--oneline`, ...) write or run, if so.
pub(super) fn check(args: &[Word]) -> Option<String> {
    let (sub, rest) = args.split_first()?;
    let sub = sub.literal()?;
    match sub.as_str() {
        "difftool" | "mergetool" | "filter-branch" => {
            return Some(format!("git {sub} runs external programs"));
        }
        "submodule"
            if rest
                .iter()
                .any(|w| w.literal().as_deref() == Some("foreach")) =>
        {
            return Some("git submodule foreach runs a command".into());
        }
        "bisect" if rest.first().and_then(Word::literal).as_deref() == Some("run") => {
            return Some("git bisect run runs a command".into());
        }
        "verify-commit" | "verify-tag" => {
            return Some(format!("git {sub} runs gpg to verify signatures"));
        }
        _ => {}
    }
    let mut options = rest
        .iter()
        .take_while(|w| w.literal().as_deref() != Some("--"));
    if let Some(why) = options.find_map(|w| verifies_signature(&sub, w)) {
        return Some(why);
    }
    for w in rest {
        if w.literal().as_deref() == Some("--") {
            break;
        }
        let prefix = w.literal_prefix();
        let name = prefix.split('=').next().unwrap_or_default();
        if DIFF_FAMILY.contains(&sub.as_str()) {
            if w.literal().is_none() && w.may_be_option() && !name.contains('=') {
                return Some(format!(
                    "`{}` may become an option of git {sub} when it runs (a file named like an option)",
                    w.text()
                ));
            }
            if let Some(d) = super::args::abbreviates(name, DIFF_DANGEROUS, DIFF_SAFE) {
                return Some(format!(
                    "git {sub} {d} writes a file or runs configured programs"
                ));
            }
        }
        match sub.as_str() {
            "grep" if name.starts_with("--op") && "--open-files-in-pager".starts_with(name) => {
                return Some("git grep --open-files-in-pager runs a program".into());
            }
            "grep"
                if name.starts_with("-O")
                    || (name.starts_with('-') && !name.starts_with("--") && name.contains('O')) =>
            {
                return Some("git grep -O runs a program".into());
            }
            "rebase"
                if name == "-x" || (name.starts_with("--ex") && "--exec".starts_with(name)) =>
            {
                return Some("git rebase --exec runs a command".into());
            }
            _ => {}
        }
    }
    None
}

/// Options that make git verify signatures, running `gpg.program` (gpg, gpgsm, ssh-keygen).
const VERIFIES: &[&str] = &["--show-signature", "--verify-signatures"];

/// Subcommands with a format or signature option beyond the diff family's.
const FORMATTED: &[&str] = &["rev-list", "for-each-ref", "branch", "tag", "merge", "pull"];

/// Why the word `w` of `git sub` makes git run gpg, if it does: an option that verifies
/// signatures, `git tag -v`, a format with a signature placeholder (`%G?`, `%GK`, ...,
/// `%(signature)`), or a word only known when it runs that may be one of those.
fn verifies_signature(sub: &str, w: &Word) -> Option<String> {
    let shown = w.text();
    let Some(t) = w.literal() else {
        let formatted = DIFF_FAMILY.contains(&sub) || FORMATTED.contains(&sub);
        return (formatted && (w.may_be_option() || shown.contains('%')))
            .then(|| format!("`{shown}` may make git {sub} verify signatures when it runs"));
    };
    let name = t.split('=').next().unwrap_or_default();
    let option = super::args::abbreviates(name, VERIFIES, &[]).is_some();
    let tag_verify = sub == "tag"
        && (super::args::abbreviates(name, &["--verify"], &[]).is_some()
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('v')));
    let placeholder = t.contains("%G") || t.contains("%(signature");
    (option || tag_verify || placeholder)
        .then(|| format!("git {sub} {t} verifies signatures, which runs gpg"))
}
