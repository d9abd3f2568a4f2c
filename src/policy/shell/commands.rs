//! What a simple command runs: its own name, or for wrappers (`env`, `timeout`, `xargs`,
//! `sh -c`, `find -exec`, `git -C`, ...) the command they run in turn; and the part each
//! command becomes, with its arguments checked.

use super::words::{DynKind, Word};
use super::{Ctx, MAX_PARTS, Part, Role, Stdin, Walker};

/// Directories whose programs are the ones rules name (`/bin/rm` is `rm`).
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
    "/usr/local/sbin/",
    "/opt/homebrew/bin/",
];

/// Shells whose `-c` string and standard input are scripts.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash",
];

/// The name rules see for a literal command name: system directories removed (`/bin/rm` is
/// `rm`); any other path stays a path, a different program from the bare name.
pub(super) fn normalise_name(raw: &str) -> String {
    for dir in SYSTEM_DIRS {
        if let Some(rest) = raw.strip_prefix(dir)
            && !rest.is_empty()
            && !rest.contains('/')
        {
            return rest.to_string();
        }
    }
    raw.to_string()
}

/// The last path component of a name (`rm` for `./rm`).
pub(super) fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

impl Walker {
    /// Rates the command `words` would run.
    pub(super) fn run(&mut self, words: Vec<Word>, ctx: &Ctx, stdin: Option<&Stdin>) {
        let Some(first) = words.first() else { return };
        let Some(raw) = first.literal() else {
            self.unknown_name(&words, ctx);
            return;
        };
        let name = normalise_name(&raw);
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c.is_control()) {
            let ctx = ctx.with_doubt(Some("an unusual command name".into()));
            self.emit(name, &words, &ctx);
            return;
        }
        if name.contains('/') {
            // `./x`, `lsb/../../bin/sh`: a program by path is not the bare name rules allow.
            // Its base name is still searched, for deny rules.
            let base = base_name(&name).to_string();
            self.emit_with(
                name.clone(),
                &words,
                ctx,
                Role::Command,
                vec![base.clone()],
                None,
            );
            if is_special(&base) {
                let mut as_base = words.clone();
                as_base[0] = Word::lit(&base);
                let reason = format!("`{name}` is run by its path, not as `{base}`");
                let ctx = ctx.with_doubt(Some(reason)).with_via(&name);
                self.dispatch(&base, &as_base, &ctx, stdin);
            }
            return;
        }
        self.dispatch(&name, &words, ctx, stdin);
    }

    /// A command whose name is a pattern or only known at run time: doubtful; deny rules see
    /// what it could be (the literal start, the values assigned to the variable, the programs
    /// a glob could match).
    fn unknown_name(&mut self, words: &[Word], ctx: &Ctx) {
        let first = &words[0];
        let mut aliases = Vec::new();
        let prefix = normalise_name(&first.literal_prefix());
        if !prefix.is_empty() {
            aliases.push(prefix.clone());
            aliases.push(base_name(&prefix).to_string());
        }
        // `${x:-rm}`: the default is what runs when `x` is unset.
        for (src, _) in first.dyns() {
            let inner = src.trim_start_matches("${").trim_end_matches('}');
            if let Some((_, default)) = inner.split_once([':', '-', '='])
                && let Some(word) = default
                    .trim_start_matches([':', '-', '='])
                    .split(' ')
                    .next()
                && !word.is_empty()
                && !word.contains(['$', '`'])
            {
                aliases.push(base_name(&normalise_name(word)).to_string());
            }
        }
        for alt in first.substitute(&|n| self.vars.get(n).cloned()) {
            if let Some(lit) = alt.literal() {
                let lit = normalise_name(&lit);
                aliases.push(base_name(&lit).to_string());
                aliases.push(lit);
            }
        }
        // A pattern names the programs it could match; an expansion could be anything, which
        // is a reason to ask, not to deny.
        let glob = (first.has_glob() && first.dyns().next().is_none()).then(|| first.to_glob());
        let reason = if first.has_glob() && first.dyns().next().is_none() {
            "the command name is a pattern that matches files when it runs"
        } else {
            "the command name is only known when it runs"
        };
        let ctx = ctx.with_doubt(Some(reason.into()));
        self.emit_with(first.text(), words, &ctx, Role::Command, aliases, glob);
        // `$SHELL -c '...'`: whatever the shell is, look at the script.
        if let Some(i) = words
            .iter()
            .position(|w| w.literal().as_deref() == Some("-c"))
            && let Some(script) = words.get(i + 1).and_then(Word::literal)
        {
            self.script(&script, &ctx.with_via("-c"));
        }
    }

    /// Runs the handler for the command `name` (a bare name).
    fn dispatch(&mut self, name: &str, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        if self.wrapper(name, words, ctx, stdin) {
            return;
        }
        match name {
            "find" => self.find(words, ctx),
            "git" => self.git(words, ctx),
            "eval" => {
                let ctx = ctx.with_doubt(Some("eval runs its arguments as a command".into()));
                self.emit(name.into(), words, &ctx);
                if let Some(args) = literals(&words[1..]) {
                    self.script(&args.join(" "), &ctx.with_via("eval"));
                } else {
                    self.may_run_unseen("eval runs a command only known when it runs");
                    self.hidden_args(words, &ctx);
                }
            }
            "source" | "." => {
                self.may_run_unseen("source runs the commands in a file");
                let ctx = ctx.with_doubt(Some("runs the commands in a file".into()));
                self.emit(name.into(), words, &ctx);
            }
            "trap" => {
                let ctx = ctx.with_doubt(Some("trap runs a command later".into()));
                self.emit(name.into(), words, &ctx);
                for action in &words[1..] {
                    match action.literal() {
                        Some(a) => self.script(&a, &ctx.with_via("trap")),
                        None => self.may_run_unseen("trap runs a command only known when it runs"),
                    }
                }
            }
            "alias" => {
                let ctx = ctx.with_doubt(Some("an alias changes what a name runs".into()));
                self.emit(name.into(), words, &ctx);
                for value in words[1..].iter().filter_map(Word::literal) {
                    if let Some((_, body)) = value.split_once('=') {
                        self.script(body, &ctx.with_via("alias"));
                    }
                }
            }
            "cd" => self.cd(words, ctx),
            "set" => {
                let ctx = ctx.with_doubt(keyword_mode(&words[1..]));
                self.emit(name.into(), words, &ctx);
            }
            n if SHELLS.contains(&n) => self.shell(name, words, ctx, stdin),
            _ => self.emit(name.into(), words, ctx),
        }
    }

    /// Scripts hidden in arguments that are only partly known (`eval "$(curl ..)"`).
    fn hidden_args(&mut self, words: &[Word], ctx: &Ctx) {
        for w in &words[1..] {
            for (src, kind) in w.dyns() {
                if kind == DynKind::Complex {
                    let src = src.to_string();
                    self.hidden(&src, ctx);
                }
            }
        }
    }

    /// `cd DIR`: relative paths later in the line are also checked from `DIR`.
    fn cd(&mut self, words: &[Word], ctx: &Ctx) {
        let target = words[1..].iter().find(|w| {
            !w.literal()
                .is_some_and(|t| t.starts_with('-') && t.len() > 1)
        });
        let reason = match target {
            None => {
                self.dirs.push(Word::lit("~"));
                None
            }
            Some(t) if t.literal().as_deref() == Some("-") => {
                Some("`cd -` goes to a directory only known when it runs".to_string())
            }
            Some(t) if t.literal().is_some() || t.text().starts_with("$HOME") => {
                let mut t = t.clone();
                if t.text().starts_with('~') {
                    t.toks[0] = super::words::Tok::Char {
                        c: '~',
                        quoted: false,
                    };
                }
                self.dirs.push(t);
                None
            }
            Some(t) => Some(format!(
                "`cd {}` goes to a directory only known when it runs",
                t.text()
            )),
        };
        self.emit("cd".into(), words, &ctx.with_doubt(reason));
    }

    /// `sh -c 'script'`, `bash script.sh`, `sh <<EOF`, `... | sh`. The shell is a transparent
    /// wrapper only when it runs a script rein reads and no startup file it does not.
    fn shell(&mut self, name: &str, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        let opts = shell_options(name, words);
        let i = opts.operand;
        let mut risky = opts.risky.or_else(|| foreign_grammar(name));
        if words.get(i).is_some_and(|w| w.literal().is_none()) && !opts.dash_c && risky.is_none() {
            risky = Some(format!("{name} runs a script only known when it runs"));
        }
        if let Some(r) = &risky {
            // Startup files and unknown options run what no part shows.
            self.may_run_unseen(r);
        }
        if opts.dash_c {
            self.shell_dash_c(name, words, words.get(i), ctx, risky);
            return;
        }
        if i < words.len() && !opts.dash_s {
            // A script file: rated by its own rules (`bash build.sh`).
            self.may_run_unseen(&format!("{name} runs the commands of a file"));
            self.emit(name.into(), words, &ctx.with_doubt(risky));
            return;
        }
        self.shell_stdin(name, words, ctx, stdin, risky);
    }

    /// `sh -c SCRIPT`: the script (`script`, the word after the options) is rated as commands
    /// of their own when rein can read it.
    fn shell_dash_c(
        &mut self,
        name: &str,
        words: &[Word],
        script: Option<&Word>,
        ctx: &Ctx,
        risky: Option<String>,
    ) {
        match script.map(Word::literal) {
            Some(Some(script)) => {
                self.shell_script(name, words, ctx, risky, &script, &format!("{name} -c"));
            }
            Some(None) => {
                self.may_run_unseen(&format!("{name} runs a script only known when it runs"));
                let ctx = ctx.with_doubt(Some(format!(
                    "{name} runs a script only known when it runs"
                )));
                self.emit(name.into(), words, &ctx);
                self.hidden_args(words, &ctx);
            }
            None => self.emit(name.into(), words, &ctx.with_doubt(risky)),
        }
    }

    /// The shell as a wrapper, then the script it runs, rated as run `via` it.
    fn shell_script(
        &mut self,
        name: &str,
        words: &[Word],
        ctx: &Ctx,
        risky: Option<String>,
        script: &str,
        via: &str,
    ) {
        let inner = ctx.with_doubt(risky.clone()).with_via(via);
        self.emit_role(
            name.into(),
            words,
            &ctx.with_doubt(risky),
            Role::Wrapper,
            None,
        );
        self.script(script, &inner);
        if foreign_grammar(name).is_some() {
            // Read as bash it may hide commands; a rough split shows more to deny rules.
            self.crude(script, &inner);
        }
    }

    /// A shell that reads its script from its input: a here-document rein reads is rated, any
    /// other input is not seen.
    fn shell_stdin(
        &mut self,
        name: &str,
        words: &[Word],
        ctx: &Ctx,
        stdin: Option<&Stdin>,
        risky: Option<String>,
    ) {
        match stdin {
            Some(Stdin::Script(s)) => {
                let s = s.clone();
                self.shell_script(name, words, ctx, risky, &s, &format!("{name} stdin"));
            }
            Some(Stdin::Unknown) => {
                self.may_run_unseen(&format!("{name} reads a script only known when it runs"));
                let ctx = ctx.with_doubt(Some(format!(
                    "{name} reads a script only known when it runs"
                )));
                self.emit(name.into(), words, &ctx);
            }
            None => {
                self.may_run_unseen(&format!("{name} reads a script from its input"));
                let ctx = ctx.with_doubt(Some(format!(
                    "{name} reads a script from its input, which rein cannot see"
                )));
                self.emit(name.into(), words, &ctx);
            }
        }
    }

    /// `find` itself, plus what `-exec`/`-execdir`/`-ok`/`-okdir` run and `-delete` removes.
    fn find(&mut self, words: &[Word], ctx: &Ctx) {
        self.emit("find".into(), words, ctx);
        let mut i = 1;
        while i < words.len() {
            let t = words[i].literal().unwrap_or_default();
            match t.as_str() {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let mut j = i + 1;
                    while j < words.len() {
                        let end = words[j].literal().unwrap_or_default();
                        if end == ";"
                            || (end == "+" && words[j - 1].literal().as_deref() == Some("{}"))
                        {
                            break;
                        }
                        j += 1;
                    }
                    let inner: Vec<Word> = words[i + 1..j]
                        .iter()
                        .map(|w| {
                            if w.literal().is_some_and(|t| t.contains("{}")) {
                                Word::unknown("{}", DynKind::Input)
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    self.run(inner, &ctx.with_via(&format!("find {t}")), None);
                    i = j + 1;
                }
                "-delete" => {
                    // Deletes like `rm`, so rules for `rm` decide.
                    let rm = [Word::lit("rm"), Word::unknown("{}", DynKind::Input)];
                    self.emit("rm".into(), &rm, &ctx.with_via("find -delete"));
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }

    /// `time` the shell keyword: `-p` and `--` are its own; the rest is the command.
    pub(super) fn time_keyword(&mut self, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        let mut i = 1;
        while let Some(t) = words.get(i).and_then(Word::literal) {
            if t == "-p" || t == "--" {
                i += 1;
            } else {
                break;
            }
        }
        self.emit_role("time".into(), &words[..i], ctx, Role::Wrapper, None);
        if i < words.len() {
            self.run(words[i..].to_vec(), ctx, stdin);
        }
    }

    /// Adds the part for `words` run under the normalised `name`.
    pub(super) fn emit(&mut self, name: String, words: &[Word], ctx: &Ctx) {
        self.emit_with(name, words, ctx, Role::Command, Vec::new(), None);
    }

    /// Adds a part with the given role; `inner` is the index of the wrapped command, whose
    /// words are left out of the wrapper's own argument checks.
    pub(super) fn emit_role(
        &mut self,
        name: String,
        words: &[Word],
        ctx: &Ctx,
        role: Role,
        inner: Option<usize>,
    ) {
        let own = &words[..inner.unwrap_or(words.len()).min(words.len())];
        self.emit_with(name, own, ctx, role, Vec::new(), None);
    }

    /// Adds a part: the words' own doubts, the command's argument checks, secrets.
    pub(super) fn emit_with(
        &mut self,
        name: String,
        words: &[Word],
        ctx: &Ctx,
        role: Role,
        aliases: Vec<String>,
        name_glob: Option<String>,
    ) {
        if self.parts.len() >= MAX_PARTS {
            if self.parts.len() == MAX_PARTS {
                self.push_doubt("…", "too many commands to check", ctx);
            }
            return;
        }
        let mut texts = Vec::with_capacity(words.len());
        let mut shown = Vec::with_capacity(words.len());
        texts.push(name.clone());
        shown.push(match words.first() {
            // A name only known at run time reads as written.
            Some(w) if w.literal().is_none() => w.shown(),
            _ => super::words::quote(&name),
        });
        for w in words.iter().skip(1) {
            texts.push(w.text());
            shown.push(w.shown());
        }
        let args = words.get(1..).unwrap_or_default();
        let doubt = ctx
            .doubt
            .clone()
            .or_else(|| args.iter().find_map(|w| self.word_doubt(w)))
            .or_else(|| super::args::check(&name, args, self.left_workspace()))
            .or_else(|| args.iter().find_map(|w| self.secret_doubt(w)))
            .or_else(|| args.iter().find_map(|w| self.device_doubt(w)))
            .or_else(|| args.iter().find_map(|w| self.outside_doubt(&name, w)))
            .or_else(|| self.indirect_doubt(&name, args));
        let mut deny_alias: Vec<String> = Vec::new();
        let aliases = aliases
            .into_iter()
            .filter(|a| !a.is_empty() && *a != name)
            .map(|a| {
                // A form with a space is a name and its subcommand (`git push`).
                let mut s = if a.contains(' ') {
                    a
                } else {
                    super::words::quote(&a)
                };
                for t in &shown[1..] {
                    s.push(' ');
                    s.push_str(t);
                }
                s
            });
        for a in aliases {
            if !deny_alias.contains(&a) {
                deny_alias.push(a);
            }
        }
        let program = (name_glob.is_none() && words.first().is_some_and(|w| w.literal().is_some()))
            .then(|| name.clone());
        self.parts.push(Part {
            command: shown.join(" "),
            words: texts,
            doubt,
            deny_alias,
            name_glob,
            via: ctx.via.clone(),
            role,
            program,
        });
    }
}

impl Walker {
    /// Whether a `cd` earlier in the line may have left the workspace.
    fn left_workspace(&self) -> bool {
        self.dirs.iter().any(|d| {
            let t = d.text();
            t.starts_with(['/', '~', '$']) || t.split('/').any(|c| c == "..")
        })
    }
}

/// Why `set ARGS` may turn on keyword mode (`-k`, `-o keyword`), after which `NAME=value`
/// arguments become the environment of their command, if it may.
fn keyword_mode(args: &[Word]) -> Option<String> {
    let mut takes_name = false;
    for w in args {
        let Some(t) = w.literal() else {
            return w
                .may_be_option()
                .then(|| format!("`set {}` may turn on keyword mode", w.text()));
        };
        let option = !takes_name && t.starts_with(['-', '+']) && t != "--";
        let keyword = if takes_name {
            t == "keyword"
        } else {
            option && t[1..].contains('k')
        };
        if keyword {
            return Some("keyword mode makes `NAME=value` arguments environment".into());
        }
        if !takes_name && !option {
            break;
        }
        // `-o NAME` (also in a cluster, `-eo`): the next word is an option name.
        takes_name = option && t[1..].contains('o');
    }
    None
}

/// Why a shell's script cannot be checked, if the shell is not bash: dash, zsh, fish, ...
/// read `$'..'`, `((`, `[[` differently, so bash's grammar says nothing sure about it.
fn foreign_grammar(name: &str) -> Option<String> {
    (!matches!(name, "bash" | "rbash"))
        .then(|| format!("{name} is not bash: its script is read with another grammar"))
}

/// Whether a base name has a handler that finds commands inside it.
fn is_special(base: &str) -> bool {
    SHELLS.contains(&base)
        || super::wrappers::is_wrapper(base)
        || matches!(base, "find" | "git" | "eval" | "trap" | "alias")
}

pub(super) fn literals(words: &[Word]) -> Option<Vec<String>> {
    words.iter().map(Word::literal).collect()
}

/// What a shell's options say: where its operands start, whether it runs `-c SCRIPT` or reads
/// its script from its input (`-s`), and the first option that reads startup files or
/// changes how scripts run.
struct ShellOptions {
    operand: usize,
    dash_c: bool,
    dash_s: bool,
    risky: Option<String>,
}

/// Reads the options of the shell `name` (`words[0]`).
fn shell_options(name: &str, words: &[Word]) -> ShellOptions {
    let mut o = ShellOptions {
        operand: 1,
        dash_c: false,
        dash_s: false,
        risky: None,
    };
    while let Some(t) = words.get(o.operand).and_then(Word::literal) {
        if t == "--" || t == "-" {
            o.operand += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            match long {
                "norc" | "noprofile" | "posix" | "noediting" | "restricted" | "verbose" => {}
                _ => {
                    o.risky
                        .get_or_insert(format!("{name} {t} reads or changes startup files"));
                    if matches!(long, "rcfile" | "init-file") {
                        o.operand += 1;
                    }
                }
            }
            o.operand += 1;
            continue;
        }
        if !(t.starts_with('-') || t.starts_with('+')) || t.len() < 2 {
            break;
        }
        o.operand += 1;
        for c in t.chars().skip(1) {
            o.short_flag(name, c, words);
        }
    }
    o
}

impl ShellOptions {
    /// One letter of a short-option word; `-O` and `-o` take the next word.
    fn short_flag(&mut self, name: &str, c: char, words: &[Word]) {
        match c {
            'c' => self.dash_c = true,
            's' => self.dash_s = true,
            'i' | 'l' | 'O' | 'D' => {
                self.risky.get_or_insert(format!(
                    "{name} -{c} reads startup files or changes how scripts run"
                ));
                if c == 'O' {
                    self.operand += 1;
                }
            }
            'o' => {
                let opt = words
                    .get(self.operand)
                    .and_then(Word::literal)
                    .unwrap_or_default();
                if !matches!(
                    opt.as_str(),
                    "pipefail" | "errexit" | "nounset" | "xtrace" | "noglob" | "noclobber"
                ) {
                    self.risky
                        .get_or_insert(format!("{name} -o {opt} changes how scripts run"));
                }
                self.operand += 1;
            }
            'k' => {
                self.risky.get_or_insert(format!(
                    "{name} -k makes `NAME=value` arguments the environment of their command"
                ));
            }
            c if "euxvfnrahmpBCEHPT".contains(c) => {}
            _ => {
                self.risky
                    .get_or_insert(format!("{name} -{c} is an option rein does not know"));
            }
        }
    }
}
