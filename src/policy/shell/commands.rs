//! What a simple command runs: its own name, or for wrappers (`env`, `timeout`, `xargs`,
//! `sh -c`, `find -exec`, `git -C`, ...) the command they run in turn.

use super::words::{DynKind, Word};
use super::{Ctx, Part, Stdin, Walker};
use crate::policy::risk;

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
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish",
];

/// Splits a command name into the name rules see and, for a path outside the system
/// directories (`./rm`), its base name for deny rules.
fn normalise_name(raw: &str) -> (String, Option<String>) {
    for dir in SYSTEM_DIRS {
        if let Some(rest) = raw.strip_prefix(dir)
            && !rest.is_empty()
            && !rest.contains('/')
        {
            return (rest.to_string(), None);
        }
    }
    match raw.rsplit_once('/') {
        Some((_, base)) if !base.is_empty() => (raw.to_string(), Some(base.to_string())),
        _ => (raw.to_string(), None),
    }
}

/// Index of the first operand at or after `from`: skips options, and the value of those in
/// `with_value` (`-n 5`); stops after `--` or at anything only known at run time.
fn skip_options(words: &[Word], from: usize, with_value: &[&str]) -> usize {
    let mut i = from;
    while let Some(t) = words.get(i).and_then(Word::literal) {
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t == "-" {
            return i;
        }
        i += if with_value.contains(&t.as_str()) {
            2
        } else {
            1
        };
    }
    i
}

fn literals(words: &[Word]) -> Option<Vec<String>> {
    words.iter().map(Word::literal).collect()
}

impl Walker {
    /// Rates the command `words` would run.
    pub(super) fn run(&mut self, words: Vec<Word>, ctx: &Ctx, stdin: Option<&Stdin>) {
        let Some(first) = words.first() else { return };
        let Some(raw) = first.literal() else {
            let (prefix, _) = normalise_name(&first.literal_prefix());
            let alias = (!prefix.is_empty()).then_some(prefix);
            let ctx = ctx.with_opaque(Some("the command name is only known when it runs".into()));
            self.emit(first.text(), &words, &ctx, alias);
            // `$SHELL -c '...'`: whatever the shell is, look at the script.
            if let Some(i) = words
                .iter()
                .position(|w| w.literal().as_deref() == Some("-c"))
                && let Some(script) = words.get(i + 1).and_then(Word::literal)
            {
                self.script(&script, &ctx.with_via("-c"));
            }
            return;
        };
        let (name, alias) = normalise_name(&raw);
        if name.is_empty() || name.contains(char::is_whitespace) {
            let ctx = ctx.with_opaque(Some("an unusual command name".into()));
            self.emit(name, &words, &ctx, None);
            return;
        }
        match name.as_str() {
            "env" => self.env(name, &words, ctx, stdin),
            "timeout" => {
                let i = skip_options(&words, 1, &["-s", "--signal", "-k", "--kill-after"]);
                self.inner(name, &words, i + 1, ctx, stdin);
            }
            "nice" => {
                let i = skip_options(&words, 1, &["-n", "--adjustment"]);
                self.inner(name, &words, i, ctx, stdin);
            }
            "nohup" | "builtin" | "setsid" | "coproc" | "busybox" => {
                let i = skip_options(&words, 1, &[]);
                self.inner(name, &words, i, ctx, stdin);
            }
            "exec" => {
                let i = skip_options(&words, 1, &["-a"]);
                if i < words.len() {
                    self.run(words[i..].to_vec(), ctx, stdin);
                } else if ctx.opaque.is_some() {
                    // `exec > log` redirects everything that follows.
                    self.emit(name, &words, ctx, alias);
                }
                // `exec 3>&1` alone runs nothing.
            }
            "stdbuf" => {
                let opts = ["-i", "-o", "-e", "--input", "--output", "--error"];
                let i = skip_options(&words, 1, &opts);
                self.inner(name, &words, i, ctx, stdin);
            }
            "ionice" => {
                let opts = [
                    "-c",
                    "-n",
                    "-p",
                    "-P",
                    "-u",
                    "--class",
                    "--classdata",
                    "--pid",
                    "--pgid",
                    "--uid",
                ];
                let i = skip_options(&words, 1, &opts);
                self.inner(name, &words, i, ctx, stdin);
            }
            "time" => {
                let i = skip_options(&words, 1, &["-f", "--format", "-o", "--output"]);
                let writes = words[1..i.min(words.len())]
                    .iter()
                    .filter_map(Word::literal)
                    .any(|t| t == "-o" || t.starts_with("--output") || t == "-a");
                let ctx = ctx.with_opaque(writes.then(|| "time -o writes a file".to_string()));
                self.inner(name, &words, i, &ctx, stdin);
            }
            "command" => {
                let i = skip_options(&words, 1, &[]);
                let lookup = words[1..i.min(words.len())]
                    .iter()
                    .filter_map(Word::literal)
                    .any(|t| t.starts_with('-') && (t.contains('v') || t.contains('V')));
                if lookup {
                    self.emit(name, &words, ctx, alias);
                } else {
                    self.inner(name, &words, i, ctx, stdin);
                }
            }
            "sudo" | "doas" | "pkexec" | "run0" => {
                self.emit(name, &words, ctx, alias);
                let opts = [
                    "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
                ];
                let i = skip_options(&words, 1, &opts);
                if i < words.len() {
                    self.run(words[i..].to_vec(), &ctx.with_via(&words[0].text()), stdin);
                }
            }
            "su" | "runuser" => {
                self.emit(name, &words, ctx, alias);
                self.dash_c_script(&words, ctx);
            }
            "xargs" => {
                let opts = [
                    "-a",
                    "-d",
                    "-E",
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "--arg-file",
                    "--delimiter",
                    "--eof",
                    "--replace",
                    "--max-lines",
                    "--max-args",
                    "--max-procs",
                    "--max-chars",
                    "--process-slot-var",
                ];
                let i = skip_options(&words, 1, &opts);
                let inner = if i < words.len() {
                    words[i..].to_vec()
                } else {
                    vec![Word::lit("echo")]
                };
                let ctx = ctx
                    .with_opaque(Some("its arguments come from the xargs input".into()))
                    .with_via("xargs");
                self.run(inner, &ctx, None);
            }
            "watch" => self.watch(&words, ctx),
            "find" => self.find(name, &words, ctx, alias),
            "git" => self.git(&words, ctx, alias),
            "eval" => {
                let ctx = ctx.with_opaque(Some("eval runs its arguments as a command".into()));
                self.emit(name, &words, &ctx, alias);
                if let Some(args) = literals(&words[1..]) {
                    self.script(&args.join(" "), &ctx.with_via("eval"));
                }
            }
            "source" | "." => {
                let ctx = ctx.with_opaque(Some("runs the commands in a file".into()));
                self.emit(name, &words, &ctx, alias);
            }
            "trap" => {
                self.emit(name, &words, ctx, alias);
                let i = skip_options(&words, 1, &[]);
                match words.get(i).map(Word::literal) {
                    Some(Some(action)) => self.script(&action, &ctx.with_via("trap")),
                    Some(None) => {
                        let reason = "trap runs a command only known when it runs";
                        self.push_opaque(&words[i].text(), reason, ctx);
                    }
                    None => {}
                }
            }
            "alias" => {
                self.emit(name, &words, ctx, alias);
                for value in words[1..].iter().filter_map(Word::literal) {
                    if let Some((_, body)) = value.split_once('=') {
                        self.script(body, &ctx.with_via("alias"));
                    }
                }
            }
            n if SHELLS.contains(&n) => self.shell(name, &words, ctx, stdin, alias),
            _ => self.emit(name, &words, ctx, alias),
        }
    }

    /// A transparent wrapper: rate the command at `i`, or the wrapper itself when it has none.
    fn inner(&mut self, name: String, words: &[Word], i: usize, ctx: &Ctx, stdin: Option<&Stdin>) {
        if i < words.len() {
            self.run(words[i..].to_vec(), ctx, stdin);
        } else {
            self.emit(name, words, ctx, None);
        }
    }

    fn env(&mut self, name: String, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        let mut i = 1;
        let mut reason = None;
        while let Some(t) = words.get(i).and_then(Word::literal) {
            match t.as_str() {
                "--" => {
                    i += 1;
                    break;
                }
                "-u" | "--unset" | "-C" | "--chdir" => i += 2,
                "-S" | "--split-string" => {
                    reason = Some("env -S splits a string into a command".to_string());
                    if let Some(s) = words.get(i + 1).and_then(Word::literal) {
                        self.script(&s, &ctx.with_via("env -S"));
                    }
                    i += 2;
                }
                s if s.starts_with("-S") || s.starts_with("--split-string=") => {
                    reason = Some("env -S splits a string into a command".to_string());
                    let body = s
                        .trim_start_matches("--split-string=")
                        .trim_start_matches("-S");
                    self.script(body, &ctx.with_via("env -S"));
                    i += 1;
                }
                s if s.starts_with('-') => i += 1,
                _ => break,
            }
        }
        while let Some(w) = words.get(i) {
            let prefix = w.literal_prefix();
            if !super::is_assignment(&prefix) {
                break;
            }
            let var = prefix.split('=').next().unwrap_or_default();
            if let Some(r) = risk::assignment(var) {
                reason.get_or_insert(r);
            }
            i += 1;
        }
        let ctx = ctx.with_opaque(reason);
        self.inner(name, words, i, &ctx, stdin);
    }

    /// `sh -c 'script'`, `bash script.sh`, `sh <<EOF`, `... | sh`.
    fn shell(
        &mut self,
        name: String,
        words: &[Word],
        ctx: &Ctx,
        stdin: Option<&Stdin>,
        alias: Option<String>,
    ) {
        let mut i = 1;
        let mut dash_c = false;
        let mut dash_s = false;
        while let Some(t) = words.get(i).and_then(Word::literal) {
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if t.starts_with("--") {
                i += if matches!(t.as_str(), "--rcfile" | "--init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            if !(t.starts_with('-') || t.starts_with('+')) || t.len() < 2 {
                break;
            }
            i += 1;
            for c in t.chars().skip(1) {
                match c {
                    'c' => dash_c = true,
                    's' => dash_s = true,
                    'o' | 'O' => i += 1,
                    _ => {}
                }
            }
        }
        let via = format!("{name} -c");
        if dash_c {
            match words.get(i).map(Word::literal) {
                Some(Some(script)) => self.script(&script, &ctx.with_via(&via)),
                Some(None) => {
                    let ctx = ctx.with_opaque(Some(
                        "the shell runs a script only known when it runs".into(),
                    ));
                    self.emit(name, words, &ctx, alias);
                }
                None => {}
            }
            return;
        }
        if i < words.len() && !dash_s {
            // A script file: rated by its own rules (`bash build.sh`).
            self.emit(name, words, ctx, alias);
            return;
        }
        match stdin {
            Some(Stdin::Script(s)) => {
                let s = s.clone();
                self.script(&s, &ctx.with_via(&format!("{name} stdin")));
            }
            Some(Stdin::Unknown) => {
                let ctx = ctx.with_opaque(Some(
                    "the shell reads a script only known when it runs".into(),
                ));
                self.emit(name, words, &ctx, alias);
            }
            None => self.emit(name, words, ctx, alias),
        }
    }

    /// The script of `-c` / `--command=` (`su -c`).
    fn dash_c_script(&mut self, words: &[Word], ctx: &Ctx) {
        for (i, w) in words.iter().enumerate() {
            let Some(t) = w.literal() else { continue };
            let script = if t == "-c" || t == "--command" {
                words.get(i + 1).map(Word::literal)
            } else if let Some(s) = t.strip_prefix("--command=") {
                Some(Some(s.to_string()))
            } else {
                continue;
            };
            match script {
                Some(Some(s)) => self.script(&s, &ctx.with_via("-c")),
                Some(None) => {
                    self.push_opaque(&w.text(), "runs a command only known when it runs", ctx)
                }
                None => {}
            }
        }
    }

    /// `watch` runs its arguments through `sh -c` (or directly with `-x`).
    fn watch(&mut self, words: &[Word], ctx: &Ctx) {
        let i = skip_options(words, 1, &["-n", "--interval", "-q", "--equexit"]);
        let direct = words[1..i.min(words.len())]
            .iter()
            .filter_map(Word::literal)
            .any(|t| {
                t == "--exec" || (t.starts_with('-') && !t.starts_with("--") && t.contains('x'))
            });
        if i >= words.len() {
            self.emit("watch".into(), words, ctx, None);
        } else if direct {
            self.run(words[i..].to_vec(), &ctx.with_via("watch"), None);
        } else if let Some(args) = literals(&words[i..]) {
            self.script(&args.join(" "), &ctx.with_via("watch"));
        } else {
            let ctx = ctx.with_opaque(Some("watch runs a command only known when it runs".into()));
            self.run(words[i..].to_vec(), &ctx.with_via("watch"), None);
        }
    }

    /// `find` itself, plus what `-exec`/`-execdir`/`-ok`/`-okdir` run and `-delete` removes.
    fn find(&mut self, name: String, words: &[Word], ctx: &Ctx, alias: Option<String>) {
        self.emit(name, words, ctx, alias);
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
                    self.run(
                        words[i + 1..j].to_vec(),
                        &ctx.with_via(&format!("find {t}")),
                        None,
                    );
                    i = j + 1;
                }
                "-delete" => {
                    // Deletes like `rm`, so rules for `rm` decide.
                    let rm = [Word::lit("rm"), Word::lit("{}")];
                    self.emit("rm".into(), &rm, &ctx.with_via("find -delete"), None);
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }

    /// `git`: global options are dropped so rules see `git <subcommand> ...`; those that can run
    /// code make the part opaque.
    fn git(&mut self, words: &[Word], ctx: &Ctx, alias: Option<String>) {
        let mut i = 1;
        let mut reason = None;
        while let Some(t) = words.get(i).and_then(Word::literal) {
            if !t.starts_with('-') {
                break;
            }
            let (opt, has_value) = match t.split_once('=') {
                Some((o, _)) => (o.to_string(), true),
                None => (t.clone(), false),
            };
            let dangerous = match opt.as_str() {
                "-c" | "--config-env" => {
                    Some("git -c/--config-env can set options that run programs")
                }
                "--exec-path" => Some("git --exec-path can make git run other programs"),
                "-p" | "--paginate" => Some("git -p runs the configured pager"),
                "--git-dir" => {
                    Some("git --git-dir can point at a repository whose config runs programs")
                }
                _ => None,
            };
            if let Some(d) = dangerous {
                reason.get_or_insert(d.to_string());
            }
            let takes_value = matches!(
                opt.as_str(),
                "-C" | "-c"
                    | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--config-env"
                    | "--attr-source"
            );
            i += if takes_value && !has_value { 2 } else { 1 };
        }
        let mut rest = vec![Word::lit("git")];
        rest.extend(words.iter().skip(i).cloned());
        let ctx = ctx.with_opaque(reason);
        self.emit("git".into(), &rest, &ctx, alias);
    }

    /// Adds the part for `words` run under the normalised `name`; `alias` is another name it
    /// may run as, for deny rules.
    pub(super) fn emit(&mut self, name: String, words: &[Word], ctx: &Ctx, alias: Option<String>) {
        let mut texts = Vec::with_capacity(words.len());
        texts.push(name);
        texts.extend(words.iter().skip(1).map(Word::text));
        let mut reason = None;
        for w in words.iter().skip(1) {
            reason = if w.has(DynKind::Subst) {
                Some("a command substitution becomes part of its arguments".to_string())
            } else if w.has(DynKind::Arith) {
                Some("arithmetic expansion in its arguments can run code".to_string())
            } else if w.has(DynKind::Complex) {
                Some(format!(
                    "the expansion in `{}` is only known when it runs",
                    w.text()
                ))
            } else if w.starts_unknown() || w.may_split() {
                Some(format!(
                    "argument `{}` is only known when it runs",
                    w.text()
                ))
            } else {
                None
            };
            if reason.is_some() {
                break;
            }
        }
        let opaque = reason
            .or_else(|| risk::arguments(&texts))
            .or_else(|| ctx.opaque.clone());
        let deny_alias = alias.map(|a| {
            let mut s = a;
            for t in &texts[1..] {
                s.push(' ');
                s.push_str(t);
            }
            s
        });
        self.parts.push(Part {
            command: texts.join(" "),
            words: texts,
            opaque,
            deny_alias,
            via: ctx.via.clone(),
        });
    }
}
