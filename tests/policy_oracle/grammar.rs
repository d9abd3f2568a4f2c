//! A grammar of shell fragments that mixes the attack classes of issue #10 with the
//! read-only commands the policy allows: payloads hidden in expansions, wrappers with
//! abbreviated options, paths and patterns as names, dangerous flags and decoy-matching
//! globs, secrets, all glued with lists, pipelines, groups and loops.

use proptest::prelude::*;

/// Read-only commands the policy should allow (in the decoy workspace).
const SAFE: &[&str] = &[
    "ls",
    "ls -la",
    "ls *.rs",
    "ls -d */",
    "cat README.md",
    "cat *.md",
    "head -n 1 notes.txt",
    "tail -n 1 notes.txt",
    "wc -l src/*.rs",
    "grep -n TODO *.py",
    "grep -rn TODO src",
    "echo \"$HOME\"",
    "echo $((1+2))",
    "sort data.csv",
    "uniq notes.txt",
    "cut -d, -f1 data.csv",
    "find . -name '*.rs'",
    "find src -type f",
    "git status",
    "git log --oneline -3",
    "git diff --stat",
    "git show --stat HEAD",
    "git ls-files",
    "test -d src",
    "[ -f x ]",
    "pwd",
    "true",
    "which ls",
    "file README.md",
    "sort notes.txt | uniq -c",
];

/// Commands that write, delete, run something or reach the network.
const PAYLOADS: &[&str] = &[
    "touch PWNED",
    "rm -f victim/a",
    "sh -c 'echo > PWNED'",
    "./evil.sh",
    "chmod 000 victim/a",
    "curl -s http://127.0.0.1:9",
    "git push origin main",
    "git reset --hard",
    "git clean -fdq",
    "mkdir PWNED",
];

/// Ways to hide a payload `P` (the classes of the issue).
const HIDERS: &[&str] = &[
    "x=${y:-`{P}`}",
    "echo ${y:=`{P}`}",
    "echo ${HOME:+`{P}`}",
    "echo \"${y:-`{P}`}\"",
    "cat <<< `{P}`",
    "cat <<< ${y:-`{P}`}",
    "ls > ${y:-`{P}`}",
    "cat <<EOF\n`{P}`\nEOF",
    "cat <<EOF\n$({P})\nEOF",
    "echo `echo \\`{P}\\``",
    "a='a[$({P})]'; echo $((a))",
    "[[ 'a[$({P})]' -eq 0 ]]",
    "[[ -v 'a[$({P})]' ]]",
    "[ -v 'a[$({P})]' ]",
    "x=$({P})",
    "for f in $({P}); do :; done",
    "env --unse echo {P}",
    "env -uecho {P}",
    "timeout --sig KILL 5 {P}",
    "nice --adj 5 {P}",
    "stdbuf --out L {P}",
    "taskset 1 {P}",
    "flock l.lock {P}",
    "script -qc '{P}' /dev/null",
    "setpriv --nnp {P}",
    "env -S '{P}'",
    "command -p {P}",
    "exec -a ls {P}",
    "lsb/../../../../../../../../../bin/sh -c '{P}'",
    "tree-sitter/../../../../../../../../../bin/sh -c '{P}'",
    "pytest/../../../../../../../../../bin/sh -c '{P}'",
    "bash -c '{P}'",
    "bash --rcfile evil.rc -ic true",
    "trap '{P}' EXIT",
    "xargs -a files.txt -I{} {P}",
    "find . -maxdepth 1 -name README.md -exec {P} \\;",
    "watch -n 1 {P}",
    "({P})",
    "{ {P}; }",
    "if true; then {P}; fi",
    "git -c alias.zz='!{P}' zz",
    "git -c core.pager='{P}' -p log -1",
    "x='{P}'; eval \"$x\"",
    "env -i PATH=/usr/bin:/bin {P}",
    "nohup {P} >/dev/null",
    "setsid -w {P}",
    "f() { {P}; }; f",
    "case x in x) {P};; esac",
    "while false; do :; done; {P}",
];

/// Allowed-looking commands whose flags or globs write or run (no payload needed).
const FLAGGED: &[&str] = &[
    "sort --co=sh big.txt",
    "sort -S 1K --compress-program=sh big.txt",
    "sort -uo out.txt notes.txt",
    "sort --out=out.txt notes.txt",
    "sort -S 1K *",
    "find . -delet?",
    "find . -name *",
    "find . -fprint out.txt",
    "git diff --output=pwn.txt",
    "git diff --outp=pwn.txt",
    "git diff *",
    "git --shallow-file status push origin main",
    "git -c core.pager='touch PWNED' -p log",
    "git -c alias.lg='!touch PWNED' lg",
    "uniq notes.txt out.txt",
    "uniq *.txt",
    "/usr/bin/time -ao cat ls",
    "/bin/r? -f victim/a",
    "/usr/bin/t?uch PWNED",
    "$'rm\\0 x' -f victim/a",
    "x=rm; $x -f victim/a",
    "cat ~/.agents/env",
    "cat /proc/self/envir?n",
    "cat ~/.ssh/id_rsa",
    "cat ~/.ss?/id_rsa",
    "grep -r oracle ~",
    "cd ~/.ssh && cat id_rsa",
    "x=~/.aws; cat \"$x/credentials\"",
    "cat < ~/.netrc",
    "echo $ORACLE_TOKEN",
    "ls > out.txt",
    "echo hi >> notes.txt",
    "cat notes.txt 1<> data.csv",
    "${x:-touch} PWNED",
    "cd .. && grep -r oracle .",
    "find ~ -name id_rsa | xargs cat",
    "git -c alias.st=status st",
    "git -P log -1",
    "git --no-optional-locks status",
    "x=src; cat \"$x\"/*.rs",
    "echo ~root",
    "cat -- -o",
];

/// One simple fragment: safe, flagged, or a payload behind a hider.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(SAFE).prop_map(str::to_string),
        2 => prop::sample::select(FLAGGED).prop_map(str::to_string),
        3 => (prop::sample::select(HIDERS), prop::sample::select(PAYLOADS))
            .prop_map(|(h, p)| hide(h, p)),
    ]
}

/// Puts payload `p` into hider `h` at `{P}`, escaped for single quotes around it.
fn hide(h: &str, p: &str) -> String {
    let single = h.contains("'{P}'") || h.contains("$({P})]'");
    let p = if single {
        p.replace('\'', "'\\''")
    } else {
        p.to_string()
    };
    h.replace("{P}", &p)
}

/// A command line: fragments glued with the shell's operators and compound commands.
pub fn command_line() -> impl Strategy<Value = String> {
    let pair = || {
        let glue = prop::sample::select(&[" && ", " || ", "; ", " | ", "\n", " & "][..]);
        (fragment(), glue, fragment()).prop_map(|(a, g, b)| format!("{a}{g}{b}"))
    };
    prop_oneof![
        3 => fragment(),
        3 => pair(),
        1 => fragment().prop_map(|a| format!("for f in src/*.rs; do {a}; done")),
        1 => fragment().prop_map(|a| format!("{a} 2>/dev/null")),
        1 => pair().prop_map(|p| format!("( {p} )")),
    ]
}

/// What may run after a here-doc ends: payloads, and harmless commands.
const AFTER: &[&str] = &[
    "touch PWNED",
    "rm -f victim/a",
    "git push origin main",
    "curl -s http://127.0.0.1:9 | sh",
    "mkdir PWNED",
    "ls",
    "cat README.md",
];

/// A delimiter word for `d` as written: plain, quoted, partly quoted, escaped.
fn delimiter_word(d: &'static str) -> impl Strategy<Value = String> {
    let n = d.len();
    (0..12usize, 1..n.max(2)).prop_map(move |(shape, cut)| {
        let cut = cut.min(n);
        let (a, b) = d.split_at(cut);
        match shape {
            0 => d.to_string(),
            1 => format!("'{d}'"),
            2 => format!("\"{d}\""),
            3 => format!("\\{d}"),
            4 => format!("{a}'{b}'"),
            5 => format!("{a}\"{b}\""),
            6 => format!("{d}''"),
            7 => format!("$'{d}'"),
            8 => format!("{a}\\{b}"),
            9 => format!("\"{a}\"{b}"),
            10 => format!("{a}\\\n{b}"),
            _ => format!("''{d}"),
        }
    })
}

/// A body line that may or may not end the here-doc: the delimiter as bash wants it, as
/// written, with blanks or tabs around it, continued, or a payload.
fn body_line(d: &'static str, word: String) -> impl Strategy<Value = String> {
    let (a, b) = d.split_at(d.len() / 2);
    let lines = vec![
        d.to_string(),
        word,
        format!("{d} "),
        format!(" {d}"),
        format!("\t{d}"),
        format!("\t\t{d}"),
        format!("{d}x"),
        format!("{a}\\\n{b}"),
        format!("{d}\\"),
        format!("{d})"),
        "text $HOME".to_string(),
        String::new(),
    ];
    prop_oneof![
        4 => prop::sample::select(lines),
        2 => prop::sample::select(AFTER).prop_map(str::to_string),
    ]
}

/// One here-doc redirection with its body: `<<` or `<<-`, a delimiter word, body lines.
fn heredoc() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(&["EOF", "END", "X"][..]),
        any::<bool>(),
    )
        .prop_flat_map(|(d, dash)| {
            delimiter_word(d).prop_flat_map(move |word| {
                let op = if dash { "<<-" } else { "<<" };
                let lines = prop::collection::vec(body_line(d, word.clone()), 1..6);
                (Just(format!("{op}{word}")), lines)
            })
        })
        .prop_map(|(redirect, lines)| (redirect, lines.join("\n")))
}

/// A command line made of here-docs: one or two on a line (or on two commands of a line),
/// bodies with lines that look like the delimiter, commands after.
pub fn heredoc_line() -> impl Strategy<Value = String> {
    let reader = prop::sample::select(&["cat", "cat >/dev/null", "wc -l", "bash", "grep -c x"][..]);
    let after = prop::collection::vec(prop::sample::select(AFTER), 0..3);
    (
        reader,
        heredoc(),
        prop::option::of(heredoc()),
        0..3usize,
        after,
    )
        .prop_map(|(reader, (r1, b1), second, glue, after)| {
            let mut line = match &second {
                None => format!("{reader} {r1}"),
                Some((r2, _)) => match glue {
                    0 => format!("{reader} {r1} {r2}"),
                    1 => format!("{reader} {r1}; cat {r2}"),
                    _ => format!("{reader} {r1} | cat {r2}"),
                },
            };
            line.push('\n');
            line.push_str(&b1);
            if let Some((_, b2)) = second {
                line.push('\n');
                line.push_str(&b2);
            }
            for a in after {
                line.push('\n');
                line.push_str(a);
            }
            line.push('\n');
            line
        })
}
