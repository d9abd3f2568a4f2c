//! Parser cases: where commands hide, how they are normalised, and what is opaque.

use super::{Part, parse};
use proptest::prelude::*;

fn commands(line: &str) -> Vec<String> {
    parse(line).into_iter().map(|p| p.command).collect()
}

/// The parts that are not opaque, and whether any part is.
fn clear(line: &str) -> (Vec<String>, bool) {
    let parts = parse(line);
    let any_opaque = parts.iter().any(|p| p.opaque.is_some());
    (
        parts
            .into_iter()
            .filter(|p| p.opaque.is_none())
            .map(|p| p.command)
            .collect(),
        any_opaque,
    )
}

fn part<'a>(parts: &'a [Part], command: &str) -> &'a Part {
    parts
        .iter()
        .find(|p| p.command == command)
        .unwrap_or_else(|| panic!("no part {command:?} in {parts:#?}"))
}

fn assert_opaque(line: &str) {
    assert!(
        parse(line).iter().any(|p| p.opaque.is_some()),
        "{line:?} should have an opaque part: {:#?}",
        parse(line)
    );
}

fn assert_clear(line: &str) {
    let parts = parse(line);
    assert!(
        parts.iter().all(|p| p.opaque.is_none()),
        "{line:?} should not be opaque: {parts:#?}"
    );
}

#[test]
fn lists_pipelines_and_separators_are_split() {
    assert_eq!(
        commands("a 1 | b; c && d || e & f\ng |& h"),
        ["a 1", "b", "c", "d", "e", "f", "g", "h"]
    );
}

#[test]
fn subshells_groups_and_substitutions_are_entered() {
    assert_eq!(commands("(a; b) && { c; }"), ["a", "b", "c"]);
    let cmds = commands("echo $(a) `b` \"$(c 1)\" <(d) >(e)");
    for inner in ["a", "b", "c 1", "d", "e"] {
        assert!(
            cmds.contains(&inner.to_string()),
            "{inner} missing from {cmds:?}"
        );
    }
    assert_eq!(
        commands("x=$(a) && export Y=$(b)")
            .iter()
            .filter(|c| ["a", "b"].contains(&c.as_str()))
            .count(),
        2
    );
    assert!(commands("cat <<< \"$(a)\"").contains(&"a".to_string()));
    assert!(commands("cat <<EOF\n$(a)\nEOF").contains(&"a".to_string()));
    assert!(commands("echo ${x:-$(a)}").contains(&"a".to_string()));
}

#[test]
fn control_flow_and_function_bodies_are_entered() {
    let cmds = commands(
        "if a; then b; elif c; then d; else e; fi; while f; do g; done; until h; do i; done",
    );
    assert_eq!(cmds, ["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
    assert_eq!(
        commands("for x in 1 2; do j; done; case y in a) k;; *) l;; esac"),
        ["j", "k", "l"]
    );
    assert_eq!(commands("f() { m; }; function g { n; }"), ["m", "n"]);
    assert_eq!(commands("! o"), ["o"]);
}

#[test]
fn quoted_text_is_data() {
    assert_eq!(
        clear("grep -E 'foo|bar' src/app.py"),
        (vec!["grep -E foo|bar src/app.py".to_string()], false)
    );
    assert_eq!(
        clear("grep -rn '$(whoami)' ."),
        (vec!["grep -rn $(whoami) .".to_string()], false)
    );
    assert_eq!(
        clear("grep -rn \"\\$(curl\" scripts/"),
        (vec!["grep -rn $(curl scripts/".to_string()], false)
    );
    assert_eq!(
        clear("grep -n '`date`; rm x' f"),
        (vec!["grep -n `date`; rm x f".to_string()], false)
    );
    assert_eq!(commands("echo ok # ; rm -rf /"), ["echo ok"]);
    // ...but a substitution inside double quotes runs.
    assert!(commands("echo \"$(curl x)\"").contains(&"curl x".to_string()));
}

#[test]
fn command_names_are_normalised() {
    assert_eq!(
        commands("FOO=1 /usr/bin/git   \"status\"   -s"),
        ["git status -s"]
    );
    assert_eq!(commands("\\rm -rf x"), ["rm -rf x"]);
    assert_eq!(commands("'r''m' x"), ["rm x"]);
    assert_eq!(commands("\"rm\" x"), ["rm x"]);
    assert_eq!(commands("su\\do id")[0], "sudo id");
    assert_eq!(commands("$'\\x72m' x"), ["rm x"]);
    assert_eq!(commands("/bin/sh -c 'ls'"), ["ls"]);
    // A backslash-newline joins words, as in bash.
    assert_eq!(commands("r\\\nm -rf x"), ["rm -rf x"]);
    assert_eq!(commands("cargo test \\\n  --all"), ["cargo test --all"]);
    // A program outside the system directories keeps its path; deny rules also see its name.
    let parts = parse("./rm -rf x");
    assert_eq!(parts[0].command, "./rm -rf x");
    assert_eq!(parts[0].deny_alias.as_deref(), Some("rm -rf x"));
}

#[test]
fn brace_expansion_builds_words() {
    assert!(commands("{rm,-rf,/tmp/x}").contains(&"rm -rf /tmp/x".to_string()));
    assert_eq!(
        commands("git diff --{output=x,stat}"),
        ["git diff --output=x --stat"]
    );
    assert_eq!(commands("ls src/{a,b}.rs"), ["ls src/a.rs src/b.rs"]);
}

#[test]
fn wrappers_are_seen_through() {
    for (line, inner) in [
        ("env -- A=1 rm x", "rm x"),
        ("env -i -u HOME rm x", "rm x"),
        ("timeout 5 rm x", "rm x"),
        ("timeout -k 1 -s KILL 5s rm x", "rm x"),
        ("nice rm x", "rm x"),
        ("nice -n 10 rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("time rm x", "rm x"),
        ("command rm x", "rm x"),
        ("builtin echo x", "echo x"),
        ("exec rm x", "rm x"),
        ("stdbuf -oL -e0 rm x", "rm x"),
        ("setsid -f rm x", "rm x"),
        ("bash -c 'rm x'", "rm x"),
        ("zsh -c 'rm x'", "rm x"),
        ("sh -ec 'rm x'", "rm x"),
        ("bash -o pipefail -c 'rm x'", "rm x"),
        ("sh -c \"sh -c 'rm x'\"", "rm x"),
        ("bash <<< 'rm x'", "rm x"),
        ("sh <<'EOF'\nrm x\nEOF", "rm x"),
        ("watch -n 1 rm x", "rm x"),
        ("watch 'ls | rm x'", "rm x"),
        ("trap 'rm x' EXIT", "rm x"),
        ("eval 'rm x'", "rm x"),
        ("su -c 'rm x' bob", "rm x"),
        ("doas rm x", "rm x"),
        ("env -S 'rm x'", "rm x"),
    ] {
        let cmds = commands(line);
        assert!(
            cmds.contains(&inner.to_string()),
            "{line:?} should run {inner:?}, got {cmds:?}"
        );
    }
    // Transparent wrappers vanish; on their own they are the command.
    assert_eq!(commands("timeout 5 cargo test"), ["cargo test"]);
    assert_eq!(commands("env"), ["env"]);
}

#[test]
fn xargs_and_find_run_commands() {
    let parts = parse("find . -name '*.tmp' | xargs -0 -n 1 rm -f");
    let rm = part(&parts, "rm -f");
    assert!(rm.opaque.is_some(), "xargs supplies the arguments");
    assert_eq!(rm.via.as_deref(), Some("xargs"));
    assert_eq!(commands("xargs"), ["echo"]);

    for (line, inner) in [
        ("find . -exec rm -f {} \\;", "rm -f {}"),
        ("find . -execdir rm {} +", "rm {}"),
        ("find . -ok rm {} ';'", "rm {}"),
        ("find . -okdir rm {} \\;", "rm {}"),
        ("find . -delete", "rm {}"),
    ] {
        let parts = parse(line);
        assert_eq!(parts[0].command.split(' ').next(), Some("find"));
        assert!(
            parts.iter().any(|p| p.command == inner),
            "{line:?}: {parts:#?}"
        );
    }
    // Words after the terminator are find's again.
    assert_eq!(
        commands("find . -exec wc -l {} \\; -print"),
        ["find . -exec wc -l {} ; -print", "wc -l {}"]
    );
}

#[test]
fn git_global_options_are_dropped_and_dangerous_ones_are_opaque() {
    assert_eq!(
        clear("git -C sub --no-pager log -n 3"),
        (vec!["git log -n 3".to_string()], false)
    );
    assert_eq!(commands("git -c core.pager=x push"), ["git push"]);
    for line in [
        "git -c core.fsmonitor=x status",
        "git --config-env=core.pager=X log",
        "git --exec-path=/tmp status",
        "git -p status",
        "git --paginate status",
        "git --git-dir=/tmp/evil status",
    ] {
        assert_opaque(line);
    }
}

#[test]
fn unknowable_commands_are_opaque() {
    for line in [
        "$CMD args",
        "$(echo rm) x",
        "`echo rm` x",
        "rm${IFS}-rf${IFS}x",
        "eval \"$x\"",
        "eval 'ls'",
        "source env.sh",
        ". ./env.sh",
        "sh -c \"$script\"",
        "bash <<< \"$payload\"",
        "sh <<EOF\n$x\nEOF",
        "git status &&& ls",
        "ls ;; ls",
        "ls $(whoami)",
        "ls \"$(whoami)\"",
        "ls `whoami`",
        "echo $((x))",
        "echo ${x@P}",
        "echo $HOME",
        "cat \"$f\"",
        "cat *.rs",
        "git diff *",
        "LD_PRELOAD=x.so ls",
        "PATH=.:$PATH ls",
        "export GIT_DIR=x",
        "[[ $x -eq 1 ]]",
        "(( x++ ))",
        "for ((i=0; i<3; i++)); do ls; done",
        "exec > log.txt",
    ] {
        assert_opaque(line);
    }
    // The name from an expansion still shows its literal start for deny rules.
    assert_eq!(
        parse("rm${IFS}-rf${IFS}x")[0].deny_alias.as_deref(),
        Some("rm")
    );
}

#[test]
fn redirections_are_opaque_only_when_they_write_a_file() {
    for line in [
        "ls > out",
        "ls >> out",
        "ls &> out",
        "ls &>> out",
        "ls >| out",
        "ls 2> err.txt",
        "ls >&out",
        "> out",
        "{ ls; } > out",
        "cat <<EOF > out\nx\nEOF",
        "ls > \"$f\"",
        "cat < /dev/tcp/example.com/80",
    ] {
        assert_opaque(line);
    }
    for line in [
        "ls 2>&1",
        "ls 2>/dev/null",
        "ls >/dev/null 2>&1",
        "echo hi >&2",
        "ls 2>&-",
        "cat < in.txt",
        "cat <&3",
        "(ls) 2>/dev/null",
        "exec 3>&1",
        "ls > /dev/stderr",
    ] {
        assert_clear(line);
    }
    // A word after the target is still an argument (`ls >/dev/null -R` is `ls -R`).
    assert_eq!(commands("git diff >/dev/null --stat"), ["git diff --stat"]);
}

#[test]
fn names_only_known_at_run_time_are_opaque_but_their_scripts_are_checked() {
    let parts = parse("$SHELL -c 'rm -rf /'");
    assert!(parts[0].opaque.is_some());
    assert!(parts.iter().any(|p| p.command == "rm -rf /"));
}

#[test]
fn deep_nesting_is_opaque() {
    let mut line = "ls".to_string();
    for _ in 0..12 {
        line = format!("sh -c {}", shell_quote(&line));
    }
    assert_opaque(&line);
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn nothing_to_run_gives_no_parts() {
    assert!(parse("").is_empty());
    assert!(parse("  # just a comment").is_empty());
    assert!(parse("x=1").is_empty());
    assert!(parse("[ -f x ]").is_empty());
}

proptest! {
    /// Whatever the model sends, parsing returns (a panic would end the turn).
    #[test]
    fn parsing_never_panics(line in r#"[a-z0-9 $(){}'"`\\|;&<>\n=*?#~!.,:@/-]{0,48}|\PC{0,32}"#) {
        for p in parse(&line) {
            prop_assert_eq!(p.command.is_empty(), p.words.iter().all(String::is_empty));
        }
    }
}
