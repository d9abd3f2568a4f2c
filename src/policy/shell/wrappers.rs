//! Commands that run another command: their options are read with their real option tables
//! (abbreviations, clusters, values), and the command they run is rated as a part of its own.
//! An option a table does not know fails closed: the wrapper is doubtful, and every command
//! its words could start is searched for deny rules.

use super::getopt::{Arity, Parsed, Spec};
use super::words::{DynKind, Word};
use super::wrapper_options::*;
use super::{Ctx, Role, Stdin, Walker};
use crate::policy::risk;

use Arity::{No, Optional, Required};

/// Wrappers that only pass their command through; the command they run is rated, they pass.
const TRANSPARENT: &[&str] = &[
    "env", "timeout", "nice", "stdbuf", "setsid", "ionice", "taskset", "nohup", "xargs", "command",
    "builtin", "exec",
];

/// Wrappers that run a command but are never harmless themselves: they need a rule, and the
/// command they run is searched for deny rules.
const RUNNERS: &[&str] = &[
    "time",
    "sudo",
    "doas",
    "pkexec",
    "run0",
    "su",
    "runuser",
    "flock",
    "script",
    "chroot",
    "setpriv",
    "watch",
    "busybox",
    "toybox",
    "coproc",
    "unshare",
    "nsenter",
    "strace",
    "ltrace",
    "chrt",
    "firejail",
    "bwrap",
    "systemd-run",
    "sg",
    "parallel",
    "caffeinate",
    "torsocks",
    "proxychains",
    "proxychains4",
    "unbuffer",
    "catchsegv",
    "valgrind",
    "dbus-run-session",
];

/// Whether `name` runs another command.
pub(super) fn is_wrapper(name: &str) -> bool {
    TRANSPARENT.contains(&name) || RUNNERS.contains(&name)
}

impl Walker {
    /// Handles `words` if `name` is a wrapper; false otherwise.
    pub(super) fn wrapper(
        &mut self,
        name: &str,
        words: &[Word],
        ctx: &Ctx,
        stdin: Option<&Stdin>,
    ) -> bool {
        match name {
            "env" => self.env(words, ctx, stdin),
            "command" | "builtin" | "exec" => self.builtin_wrapper(name, words, ctx, stdin),
            "xargs" => self.xargs(words, ctx),
            "flock" => self.flock(words, ctx),
            "watch" => self.watch(words, ctx),
            // The named wrappers first: a name on both lists is handled as named.
            _ => {
                return self.option_wrapper(name, words, ctx, stdin)
                    || self.elevating_wrapper(name, words, ctx, stdin)
                    || self.runner(name, words, ctx, stdin);
            }
        }
        true
    }

    /// The wrappers that only change how a command runs (its time, priority, buffers,
    /// session): their options are read and the command after them is rated.
    fn option_wrapper(
        &mut self,
        name: &str,
        words: &[Word],
        ctx: &Ctx,
        stdin: Option<&Stdin>,
    ) -> bool {
        match name {
            "timeout" => {
                let p = TIMEOUT.parse(words, 1);
                // The first operand is the duration.
                self.pass_through(name, words, &p, p.rest + 1, ctx, stdin, None);
            }
            "nice" => {
                let old_style = words.get(1).and_then(Word::literal).is_some_and(|t| {
                    t.len() > 1 && t.trim_start_matches('-').parse::<i32>().is_ok()
                });
                let p = NICE.parse(words, if old_style { 2 } else { 1 });
                self.pass_through(name, words, &p, p.rest, ctx, stdin, None);
            }
            "stdbuf" => {
                let p = STDBUF.parse(words, 1);
                self.pass_through(name, words, &p, p.rest, ctx, stdin, None);
            }
            "setsid" => {
                let p = SETSID.parse(words, 1);
                self.pass_through(name, words, &p, p.rest, ctx, stdin, None);
            }
            "nohup" => {
                let p = NOHUP.parse(words, 1);
                self.pass_through(name, words, &p, p.rest, ctx, stdin, None);
            }
            "ionice" => {
                let p = IONICE.parse(words, 1);
                let others = p.has(&["p", "P", "u", "pid", "pgid", "uid"]);
                let reason = others.then(|| "ionice -p changes other processes".to_string());
                self.pass_through(name, words, &p, p.rest, ctx, stdin, reason);
            }
            "taskset" => {
                let p = TASKSET.parse(words, 1);
                if p.has(&["p", "pid"]) {
                    let ctx = ctx.with_doubt(Some("taskset -p changes other processes".into()));
                    self.emit(name.into(), words, &ctx);
                } else {
                    // The first operand is the CPU mask.
                    self.pass_through(name, words, &p, p.rest + 1, ctx, stdin, None);
                }
            }
            _ => return false,
        }
        true
    }

    /// The wrappers that run a command as someone else, elsewhere or recorded: they need a
    /// rule themselves.
    fn elevating_wrapper(
        &mut self,
        name: &str,
        words: &[Word],
        ctx: &Ctx,
        stdin: Option<&Stdin>,
    ) -> bool {
        match name {
            "time" => {
                // Reached by path or through another wrapper: GNU time, not the keyword.
                let p = GNU_TIME.parse(words, 1);
                let writes = p.has(&["o", "output"]);
                let reason = writes.then(|| "time -o writes a file".to_string());
                self.run_inside(name, words, &p, p.rest, ctx, stdin, reason);
            }
            "sudo" | "doas" | "pkexec" | "run0" => {
                let p = SUDO.parse(words, 1);
                self.run_inside(name, words, &p, p.rest, ctx, stdin, None);
            }
            "script" => {
                let p = SCRIPT.parse(words, 1);
                let ctx = ctx.with_doubt(Some("script records to a file".into()));
                self.emit(name.into(), words, &ctx);
                for s in p.values(&["c", "command"]).filter_map(Word::literal) {
                    self.script(&s, &ctx.with_via("script -c"));
                }
            }
            "chroot" => {
                let p = CHROOT.parse(words, 1);
                // The first operand is the new root.
                self.run_inside(name, words, &p, p.rest + 1, ctx, stdin, None);
            }
            "setpriv" => {
                let p = SETPRIV.parse(words, 1);
                self.run_inside(name, words, &p, p.rest, ctx, stdin, None);
            }
            "su" | "runuser" => {
                let ctx = ctx.with_doubt(Some(format!("{name} runs commands as another user")));
                self.emit(name.into(), words, &ctx);
                self.dash_c_script(words, &ctx);
            }
            _ => return false,
        }
        true
    }

    /// Multi-call binaries and the other programs that run a command given as arguments
    /// ([`RUNNERS`]): every later word may be the command.
    fn runner(&mut self, name: &str, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) -> bool {
        match name {
            "busybox" | "toybox" | "coproc" => {
                let reason = format!("{name} runs its own version of a command");
                let ctx = ctx.with_doubt(Some(reason));
                self.emit(name.into(), words, &ctx);
                let start = usize::from(words.get(1).and_then(Word::literal).is_some_and(|t| {
                    t.starts_with("--") || (name == "coproc" && t.chars().all(char::is_uppercase))
                }));
                if words.len() > 1 + start {
                    self.run(words[1 + start..].to_vec(), &ctx.with_via(name), stdin);
                }
            }
            _ if RUNNERS.contains(&name) => {
                let ctx = ctx.with_doubt(Some(format!("{name} runs another command")));
                self.emit(name.into(), words, &ctx);
                self.candidates(words, 1, &ctx.with_via(name));
            }
            _ => return false,
        }
        true
    }

    /// A transparent wrapper: the wrapper part passes (unless its options are unknown or
    /// `reason` says otherwise) and the command at `at` is rated; without one, the wrapper
    /// alone is a command.
    #[allow(clippy::too_many_arguments)]
    fn pass_through(
        &mut self,
        name: &str,
        words: &[Word],
        p: &Parsed,
        at: usize,
        ctx: &Ctx,
        stdin: Option<&Stdin>,
        reason: Option<String>,
    ) {
        self.wrapped(Role::Wrapper, name, words, p, at, ctx, stdin, reason);
    }

    /// A wrapper that needs a rule itself; the command at `at` is rated with it.
    #[allow(clippy::too_many_arguments)]
    fn run_inside(
        &mut self,
        name: &str,
        words: &[Word],
        p: &Parsed,
        at: usize,
        ctx: &Ctx,
        stdin: Option<&Stdin>,
        reason: Option<String>,
    ) {
        self.wrapped(Role::Command, name, words, p, at, ctx, stdin, reason);
    }

    /// The wrapper's own part with `role`, then the command at `at` (every candidate when
    /// the options were not understood).
    #[allow(clippy::too_many_arguments)]
    fn wrapped(
        &mut self,
        role: Role,
        name: &str,
        words: &[Word],
        p: &Parsed,
        at: usize,
        ctx: &Ctx,
        stdin: Option<&Stdin>,
        reason: Option<String>,
    ) {
        let uncertain = p.uncertain(words).map(|u| format!("{name}: {u}"));
        let own = ctx.with_doubt(reason.or(uncertain.clone()));
        if at >= words.len() || role == Role::Command {
            self.emit(name.into(), words, &own);
        } else {
            self.emit_role(name.into(), words, &own, Role::Wrapper, Some(at));
        }
        // A wrapper that needs a rule passes its doubt on; a transparent one does not.
        let inner = if role == Role::Wrapper { ctx } else { &own };
        let via = inner.with_via(name);
        if uncertain.is_some() {
            self.candidates(words, 1, &via.with_doubt(uncertain));
        } else if at < words.len() {
            self.run(words[at..].to_vec(), &via, stdin);
        }
    }

    /// When a wrapper's options are not understood, every literal word could start its
    /// command: each such suffix is rated (doubtful), so deny rules still see `rm`.
    fn candidates(&mut self, words: &[Word], from: usize, ctx: &Ctx) {
        let ctx = ctx.with_doubt(Some("the command a wrapper runs is not certain".into()));
        let mut tried = 0;
        for j in from..words.len() {
            let starts = words[j]
                .literal()
                .is_some_and(|t| !t.starts_with('-') && !t.is_empty());
            if starts && tried < 16 {
                tried += 1;
                self.run(words[j..].to_vec(), &ctx, None);
            }
        }
    }

    fn env(&mut self, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        let p = ENV.parse(words, 1);
        let mut reason = None;
        if p.has(&["S", "split-string"]) {
            reason = Some("env -S splits a string into a command".to_string());
            let via = ctx.with_via("env -S").with_doubt(reason.clone());
            for v in p.values(&["S", "split-string"]) {
                let text = v.text();
                let body = text
                    .strip_prefix("--split-string=")
                    .or_else(|| text.strip_prefix("-S"))
                    .unwrap_or(&text)
                    .to_string();
                self.script(&body, &via);
            }
        }
        if p.has(&["C", "chdir"]) {
            reason.get_or_insert("env -C runs the command in another directory".into());
        }
        let mut i = p.rest;
        if words.get(i).and_then(Word::literal).as_deref() == Some("-") {
            i += 1;
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
            if let Some(r) = self.word_doubt(w) {
                reason.get_or_insert(r);
            }
            i += 1;
        }
        if i >= words.len() && p.rest >= words.len() {
            let ctx = ctx.with_doubt(reason.or(Some("env alone prints the environment".into())));
            self.emit("env".into(), words, &ctx);
            return;
        }
        self.pass_through("env", words, &p, i, ctx, stdin, reason);
    }

    /// `command`, `builtin`, `exec`: their few options, then the command.
    fn builtin_wrapper(&mut self, name: &str, words: &[Word], ctx: &Ctx, stdin: Option<&Stdin>) {
        let mut i = 1;
        let mut lookup = false;
        let mut unknown = None;
        while let Some(t) = words.get(i).and_then(Word::literal) {
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') || t == "-" || name == "builtin" {
                break;
            }
            for c in t.chars().skip(1) {
                match (name, c) {
                    ("command", 'v' | 'V') => lookup = true,
                    ("command", 'p') | ("exec", 'c' | 'l') => {}
                    ("exec", 'a') => i += 1,
                    _ => {
                        unknown.get_or_insert(format!("{name}: unknown option -{c}"));
                    }
                }
            }
            i += 1;
        }
        if lookup {
            // `command -v x` only says what `x` is.
            self.emit_role(
                name.into(),
                words,
                &ctx.with_doubt(unknown),
                Role::Wrapper,
                None,
            );
            return;
        }
        if i >= words.len() {
            if name != "exec" || ctx.doubt.is_some() {
                self.emit(name.into(), words, &ctx.with_doubt(unknown));
            }
            // `exec 3>&1` alone runs nothing.
            return;
        }
        let own = ctx.with_doubt(unknown.clone());
        self.emit_role(name.into(), words, &own, Role::Wrapper, Some(i));
        match unknown {
            Some(_) => self.candidates(words, 1, &own.with_via(name)),
            None => self.run(words[i..].to_vec(), &ctx.with_via(name), stdin),
        }
    }

    /// `xargs CMD ARGS`: CMD runs with more arguments read from the input, which may be
    /// anything (an option too); `echo` when no command is given.
    fn xargs(&mut self, words: &[Word], ctx: &Ctx) {
        let p = XARGS.parse(words, 1);
        let uncertain = p.uncertain(words).map(|u| format!("xargs: {u}"));
        let own = ctx.with_doubt(uncertain.clone().or_else(|| slot_var_doubt(&p)));
        self.emit_role("xargs".into(), words, &own, Role::Wrapper, Some(p.rest));
        let via = own.with_via("xargs");
        if uncertain.is_some() {
            self.candidates(words, 1, &via);
            return;
        }
        let replace: Vec<String> = p
            .opts
            .iter()
            .filter(|(n, _)| matches!(n.as_str(), "I" | "i" | "replace"))
            .map(|(_, v)| match v.as_ref().map(Word::text).as_deref() {
                None | Some("") => "{}".to_string(),
                Some(r) => r.to_string(),
            })
            .collect();
        let mut inner: Vec<Word> = if p.rest < words.len() {
            words[p.rest..].to_vec()
        } else {
            vec![Word::lit("echo")]
        };
        let input = Word::unknown("<input>", DynKind::Input);
        if replace.is_empty() {
            inner.push(input);
        } else {
            for w in inner.iter_mut().skip(1) {
                if w.literal()
                    .is_some_and(|t| replace.iter().any(|r| t.contains(r.as_str())))
                {
                    *w = input.clone();
                }
            }
        }
        self.run(inner, &via, None);
    }

    fn flock(&mut self, words: &[Word], ctx: &Ctx) {
        let p = FLOCK.parse(words, 1);
        let ctx = ctx.with_doubt(Some("flock creates its lock file".into()));
        self.emit("flock".into(), words, &ctx);
        let via = ctx.with_via("flock");
        for s in p.values(&["c", "command"]).filter_map(Word::literal) {
            self.script(&s, &via);
        }
        // `flock FILE -c CMD` or `flock FILE CMD ARGS`.
        let at = p.rest + 1;
        match words.get(at).and_then(Word::literal).as_deref() {
            Some("-c" | "--command") => {
                if let Some(s) = words.get(at + 1).and_then(Word::literal) {
                    self.script(&s, &via);
                }
            }
            Some(_) => self.run(words[at..].to_vec(), &via, None),
            None => {}
        }
        if p.uncertain(words).is_some() {
            self.candidates(words, 1, &via);
        }
    }

    /// `watch` runs its arguments through `sh -c` (or directly with `-x`), over and over.
    fn watch(&mut self, words: &[Word], ctx: &Ctx) {
        const WATCH: Spec = Spec {
            short: "+bcd::eghn:pq:tvwx",
            long: &[
                ("beep", No),
                ("color", No),
                ("no-color", No),
                ("differences", Optional),
                ("errexit", No),
                ("chgexit", No),
                ("equexit", Required),
                ("interval", Required),
                ("precise", No),
                ("no-title", No),
                ("no-wrap", No),
                ("no-linewrap", No),
                ("exec", No),
                ("help", No),
                ("version", No),
            ],
            abbrev: true,
        };
        let p = WATCH.parse(words, 1);
        let ctx = ctx.with_doubt(Some("watch runs its command over and over".into()));
        self.emit("watch".into(), words, &ctx);
        let via = ctx.with_via("watch");
        if p.uncertain(words).is_some() {
            self.candidates(words, 1, &via);
        } else if p.rest < words.len() {
            if p.has(&["x", "exec"]) {
                self.run(words[p.rest..].to_vec(), &via, None);
            } else if let Some(args) = super::commands::literals(&words[p.rest..]) {
                self.script(&args.join(" "), &via);
            } else {
                self.run(words[p.rest..].to_vec(), &via, None);
            }
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
            if let Some(Some(s)) = script {
                self.script(&s, &ctx.with_via("-c"));
            }
        }
    }
}

/// `xargs --process-slot-var=NAME` sets NAME in the command's environment, like
/// `env NAME=..`: the same variable check applies.
fn slot_var_doubt(p: &Parsed) -> Option<String> {
    let values = p.opts.iter().filter(|(n, _)| n == "process-slot-var");
    values
        .map(|(_, v)| match v.as_ref().map(|v| (v, v.literal())) {
            Some((_, Some(name))) => risk::assignment(&name),
            Some((v, None)) => Some(format!("xargs sets the variable `{}`", v.text())),
            None => Some("xargs --process-slot-var sets a variable".into()),
        })
        .find(Option::is_some)
        .flatten()
}
