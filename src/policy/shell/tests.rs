//! Parser cases: where commands hide, how they are normalised, and what is doubtful.

use super::{Part, Role, parse};
use proptest::prelude::*;

/// Whether a line's parse has a doubtful part (it can never be allowed unasked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Every part understood.
    Clear,
    /// Some part only known at run time, or not understood.
    Doubtful,
}

use Shape::{Clear, Doubtful};

fn commands(line: &str) -> Vec<String> {
    parse(line).into_iter().map(|p| p.command).collect()
}

/// The commands rules rate (wrappers left out).
fn rated(line: &str) -> Vec<String> {
    parse(line)
        .into_iter()
        .filter(|p| p.role == Role::Command)
        .map(|p| p.command)
        .collect()
}

fn shape(line: &str) -> Shape {
    if parse(line).iter().any(|p| p.doubt.is_some()) {
        Doubtful
    } else {
        Clear
    }
}

fn part<'a>(parts: &'a [Part], command: &str) -> &'a Part {
    parts
        .iter()
        .find(|p| p.command == command)
        .unwrap_or_else(|| panic!("no part {command:?} in {parts:#?}"))
}

fn check_shapes(cases: &[(&str, Shape)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(line, expected)| shape(line) != *expected)
        .map(|(line, expected)| format!("{line:?}: expected {expected:?}, got {:#?}", parse(line)))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// (line, a command it must run)
fn check_runs(cases: &[(&str, &str)]) {
    for (line, inner) in cases {
        let cmds = commands(line);
        assert!(
            cmds.iter().any(|c| c == inner),
            "{line:?} should run {inner:?}, got {cmds:?}"
        );
    }
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
    check_runs(&[
        ("echo $(a) `b` \"$(c 1)\" <(d) >(e)", "a"),
        ("echo $(a) `b` \"$(c 1)\" <(d) >(e)", "b"),
        ("echo $(a) `b` \"$(c 1)\" <(d) >(e)", "c 1"),
        ("echo $(a) `b` \"$(c 1)\" <(d) >(e)", "d"),
        ("echo $(a) `b` \"$(c 1)\" <(d) >(e)", "e"),
        ("x=$(a) && export Y=$(b)", "a"),
        ("x=$(a) && export Y=$(b)", "b"),
        ("cat <<< \"$(a)\"", "a"),
        ("cat <<EOF\n$(a)\nEOF", "a"),
        ("echo ${x:-$(a)}", "a"),
    ]);
}

#[test]
fn commands_hidden_where_tree_sitter_keeps_text_are_found() {
    check_runs(&[
        ("x=${y:-`rm -rf ~`}", "rm -rf ~"),
        ("echo \"${x:=`rm a`}\"", "rm a"),
        ("echo ${x:+`rm b`} ${x?`rm c`}", "rm c"),
        ("cat <<EOF\nhi `rm d`\nEOF", "rm d"),
        ("cat <<< ${y:-`rm e`}", "rm e"),
        ("ls > ${y:-`rm f`}", "rm f"),
        ("echo `echo \\`rm g\\``", "rm g"),
        ("[[ ${x:-`rm h`} == y ]]", "rm h"),
    ]);
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
    let cases = [
        (
            "grep -E 'foo|bar' src/app.py",
            "grep -E 'foo|bar' src/app.py",
        ),
        ("grep -rn '$(whoami)' .", "grep -rn '$(whoami)' ."),
        (
            "grep -rn \"\\$(curl\" scripts/",
            "grep -rn '$(curl' scripts/",
        ),
        ("grep -n '`date`; rm x' f", "grep -n '`date`; rm x' f"),
        ("echo ok # ; rm -rf /", "echo ok"),
    ];
    for (line, normalised) in cases {
        assert_eq!(
            (commands(line), shape(line)),
            (vec![normalised.to_string()], Clear),
            "{line}"
        );
    }
    // ...but a substitution inside double quotes runs.
    check_runs(&[("echo \"$(curl x)\"", "curl x")]);
}

#[test]
fn command_names_are_normalised() {
    let cases = [
        ("FOO=1 /usr/bin/git   \"status\"   -s", "git status -s"),
        ("\\rm -rf x", "rm -rf x"),
        ("'r''m' x", "rm x"),
        ("\"rm\" x", "rm x"),
        ("$'\\x72m' x", "rm x"),
        ("$'rm\\0 ignored' -rf x", "rm -rf x"),
        // A backslash-newline joins words, as in bash.
        ("r\\\nm -rf x", "rm -rf x"),
        ("cargo test \\\n  --all", "cargo test --all"),
        ("python3 -c 'print(1)'", "python3 -c 'print(1)'"),
    ];
    for (line, normalised) in cases {
        assert_eq!(commands(line)[0], normalised, "{line}");
    }
    assert_eq!(commands("su\\do id")[0], "sudo id");
    assert_eq!(rated("/bin/bash -c 'ls'"), ["ls"]);
    // Another shell's script is still read (for deny rules), but not trusted.
    assert_eq!(rated("/bin/sh -c 'ls'")[0], "ls");
    assert_eq!(shape("/bin/sh -c 'ls'"), Doubtful);
}

#[test]
fn a_program_by_path_is_not_the_bare_name() {
    let parts = parse("./rm -rf x");
    assert_eq!(parts[0].command, "./rm -rf x");
    assert_eq!(parts[0].program.as_deref(), Some("./rm"));
    assert_eq!(parts[0].deny_alias, ["rm -rf x"]);
    // The base name is still searched for what it runs.
    let parts = parse("lsb/../../../bin/sh -c 'rm -rf ~'");
    assert!(parts.iter().any(|p| p.command == "rm -rf ~"), "{parts:#?}");
    assert!(parts[1..].iter().all(|p| p.doubt.is_some()), "{parts:#?}");
}

#[test]
fn brace_expansion_builds_words() {
    check_runs(&[
        ("{rm,-rf,/tmp/x}", "rm -rf /tmp/x"),
        ("git diff --{output=x,stat}", "git diff --output=x --stat"),
        ("ls src/{a,b}.rs", "ls src/a.rs src/b.rs"),
    ]);
}

#[test]
fn wrappers_are_seen_through() {
    check_runs(&[
        ("env -- A=1 rm x", "rm x"),
        ("env -i -u HOME rm x", "rm x"),
        ("env --unse echo rm -rf x", "rm -rf x"),
        ("timeout 5 rm x", "rm x"),
        ("timeout -k 1 -s KILL 5s rm x", "rm x"),
        ("timeout --sig KILL 5 rm x", "rm x"),
        ("nice rm x", "rm x"),
        ("nice -n 10 rm x", "rm x"),
        ("nice --adj 5 rm x", "rm x"),
        ("nice -10 rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("time rm x", "rm x"),
        ("time -p rm x", "rm x"),
        ("command rm x", "rm x"),
        ("builtin echo x", "echo x"),
        ("exec rm x", "rm x"),
        ("stdbuf -oL -e0 rm x", "rm x"),
        ("stdbuf --out L rm x", "rm x"),
        ("setsid -f rm x", "rm x"),
        ("taskset 1 rm x", "rm x"),
        ("taskset -c 0,1 rm x", "rm x"),
        ("flock /tmp/l rm x", "rm x"),
        ("flock /tmp/l -c 'rm x'", "rm x"),
        ("script -qc 'rm x' /dev/null", "rm x"),
        ("toybox rm x", "rm x"),
        ("busybox rm x", "rm x"),
        ("chroot / rm x", "rm x"),
        ("setpriv --nnp rm x", "rm x"),
        ("coproc rm x", "rm x"),
        ("ionice -c3 rm x", "rm x"),
        ("/usr/bin/time -ao cat ls", "ls"),
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
        ("env '-Srm x'", "rm x"),
        // Unknown options: every word that could start the command is searched.
        ("timeout --bogus 5 rm x", "rm x"),
        ("strace -f rm x", "rm x"),
    ]);
    // Transparent wrappers pass; what they run is rated.
    assert_eq!(rated("timeout 5 cargo test"), ["cargo test"]);
    assert_eq!(rated("env RUST_BACKTRACE=1 cargo test"), ["cargo test"]);
    assert_eq!(rated("env"), ["env"]);
}

#[test]
fn xargs_and_find_run_commands() {
    let parts = parse("find . -name '*.tmp' | xargs -0 -n 1 rm -f");
    let rm = part(&parts, "rm -f <input>");
    assert_eq!(rm.via.as_deref(), Some("xargs"));
    assert_eq!(rated("xargs"), ["echo <input>"]);
    assert_eq!(rated("xargs -I{} grep x {}"), ["grep x <input>"]);
    check_runs(&[
        ("find . -exec rm -f {} \\;", "rm -f {}"),
        ("find . -execdir rm {} +", "rm {}"),
        ("find . -ok rm {} ';'", "rm {}"),
        ("find . -okdir rm {} \\;", "rm {}"),
        ("find . -delete", "rm {}"),
    ]);
    // Words after the terminator are find's again.
    assert_eq!(
        commands("find . -exec wc -l {} \\; -print"),
        ["find . -exec wc -l '{}' ';' -print", "wc -l {}"]
    );
}

#[test]
fn git_global_options_are_read_as_git_reads_them() {
    assert_eq!(commands("git -C sub --no-pager log -n 3"), ["git log -n 3"]);
    // The pager is a command git runs: searched too.
    assert_eq!(commands("git -c core.pager=x push"), ["x", "git push"]);
    assert_eq!(
        commands("git --shallow-file status push origin main"),
        ["git push origin main"]
    );
    assert_eq!(commands("git --git-dir .git status"), ["git status"]);
    check_shapes(&[
        ("git -C sub --no-pager log -n 3", Clear),
        ("git -c core.fsmonitor=x status", Doubtful),
        ("git --config-env=core.pager=X log", Doubtful),
        ("git --config-env core.pager=X log", Doubtful),
        ("git --exec-path=/tmp status", Doubtful),
        ("git -p status", Doubtful),
        ("git --paginate status", Doubtful),
        ("git --git-dir=/tmp/evil status", Doubtful),
        ("git --shallow-file x log", Doubtful),
        ("git --no-pag status", Doubtful),
        ("git -C /elsewhere status", Doubtful),
        ("git $sub origin", Doubtful),
    ]);
    let parts = parse("git \"$x\" origin main");
    assert!(
        parts
            .iter()
            .flat_map(|p| &p.deny_alias)
            .any(|a| a.starts_with("git push")),
        "{parts:#?}"
    );
}

#[test]
fn unknowable_or_unsupported_commands_are_doubtful() {
    check_shapes(&[
        ("$CMD args", Doubtful),
        ("$(echo rm) x", Doubtful),
        ("`echo rm` x", Doubtful),
        ("rm${IFS}-rf${IFS}x", Doubtful),
        ("eval \"$x\"", Doubtful),
        ("eval 'ls'", Doubtful),
        ("source env.sh", Doubtful),
        (". ./env.sh", Doubtful),
        ("sh -c \"$script\"", Doubtful),
        ("bash <<< \"$payload\"", Doubtful),
        ("sh <<EOF\n$x\nEOF", Doubtful),
        ("echo hi | sh", Doubtful),
        ("git status &&& ls", Doubtful),
        ("ls ;; ls", Doubtful),
        ("ls $(whoami)", Doubtful),
        ("ls \"$(whoami)\"", Doubtful),
        ("ls `whoami`", Doubtful),
        ("echo $((x))", Doubtful),
        ("echo $((a[$(id)]))", Doubtful),
        ("echo ${x@P}", Doubtful),
        ("echo ${!x}", Doubtful),
        ("echo ${a[x]}", Doubtful),
        ("echo ${y:x}", Doubtful),
        ("echo ${x:-y}", Doubtful),
        ("git diff *", Doubtful),
        ("LD_PRELOAD=x.so ls", Doubtful),
        ("PATH=.:$PATH ls", Doubtful),
        ("export GIT_DIR=x", Doubtful),
        ("[[ $x -eq 1 ]]", Doubtful),
        ("[[ 'a[$(id)]' -eq 0 ]]", Doubtful),
        ("[[ -v 'a[$(id)]' ]]", Doubtful),
        ("[ -v 'a[$(id)]' ]", Doubtful),
        ("test -v 'a[$(id)]'", Doubtful),
        ("(( x++ ))", Doubtful),
        ("for ((i=0; i<3; i++)); do ls; done", Doubtful),
        ("exec > log.txt", Doubtful),
        ("declare -i x=1", Doubtful),
        ("unset 'a[$(id)]'", Doubtful),
        ("a[$(id)]=1", Doubtful),
        ("echo \"$GITHUB_TOKEN\"", Doubtful),
        // What the results mask (the sandbox's one list) is never printed unasked either.
        ("echo \"$SENTRY_DSN\"", Doubtful),
        ("echo $DEPLOY_KEY", Doubtful),
        ("echo $DATABASE_URL", Doubtful),
        ("echo $NPM_PAT", Doubtful),
        ("cat ~/.agents/env", Doubtful),
        ("cat /proc/self/envir?n", Doubtful),
        ("cd ~/.ssh && cat id_rsa", Doubtful),
        ("x=~/.aws; cat \"$x/credentials\"", Doubtful),
        ("bash --rcfile evil -ic true", Doubtful),
        ("bash -i -c true", Doubtful),
        ("find . -delet?", Doubtful),
        ("find . -name *", Doubtful),
        ("sort --co=sh x", Doubtful),
        ("sort * ", Doubtful),
        ("tree -ao out.txt", Doubtful),
        ("uniq *.txt", Doubtful),
    ]);
    // The name from an expansion still shows its literal start for deny rules.
    assert_eq!(parse("rm${IFS}-rf${IFS}x")[0].deny_alias, ["rm"]);
}

#[test]
fn plain_data_is_clear() {
    check_shapes(&[
        ("ls *.rs", Clear),
        ("cat *.md", Clear),
        ("grep -n TODO *.py", Clear),
        ("ls -d */", Clear),
        ("echo \"$HOME\"", Clear),
        ("echo $HOME", Clear),
        ("for f in src/*.rs; do wc -l \"$f\"; done", Clear),
        ("echo $((1+2))", Clear),
        ("find . -name '*.rs' | xargs grep -l foo", Clear),
        ("test -d src", Clear),
        ("[ -f x ]", Clear),
        ("[[ -f x && $x == y ]]", Clear),
        ("(( 1 + 2 ))", Clear),
        ("x=1; echo \"$x\"", Clear),
        ("export RUST_BACKTRACE=1", Clear),
        ("case $x in a) ls;; esac", Clear),
        ("f() { ls; }; f", Clear),
        ("diff <(ls a) <(ls b)", Clear),
        ("cat <<'EOF'\n`rm x` $(rm y)\nEOF", Clear),
        ("cat <<EOF\nhello $USER\nEOF", Clear),
        ("find src -name '*.rs' -exec grep -l foo {} +", Clear),
        ("git log --oneline -5 | head", Clear),
        ("timeout 5 cargo test", Clear),
        ("env RUST_LOG=debug cargo test", Clear),
        ("bash -c 'ls'", Clear),
        ("sort -k2 -t, data.csv", Clear),
        ("tree -L 2", Clear),
        ("cd src && ls", Clear),
    ]);
}

#[test]
fn redirections_are_doubtful_only_when_they_write_a_file() {
    check_shapes(&[
        ("ls > out", Doubtful),
        ("ls >> out", Doubtful),
        ("ls &> out", Doubtful),
        ("ls &>> out", Doubtful),
        ("ls >| out", Doubtful),
        ("ls 2> err.txt", Doubtful),
        ("ls >&out", Doubtful),
        ("> out", Doubtful),
        ("{ ls; } > out", Doubtful),
        ("cat <<EOF > out\nx\nEOF", Doubtful),
        ("ls > \"$f\"", Doubtful),
        ("cat < /dev/tcp/example.com/80", Doubtful),
        ("cat < ~/.ssh/id_rsa", Doubtful),
        ("cat src.txt 1<> tgt.txt", Doubtful),
        ("ls 2>&1", Clear),
        ("ls 2>/dev/null", Clear),
        ("ls >/dev/null 2>&1", Clear),
        ("echo hi >&2", Clear),
        ("ls 2>&-", Clear),
        ("cat < in.txt", Clear),
        ("cat <&3", Clear),
        ("(ls) 2>/dev/null", Clear),
        ("exec 3>&1", Clear),
        ("ls > /dev/stderr", Clear),
    ]);
    // A word after the target is still an argument (`ls >/dev/null -R` is `ls -R`).
    assert_eq!(commands("git diff >/dev/null --stat"), ["git diff --stat"]);
}

#[test]
fn names_only_known_at_run_time_are_doubtful_but_their_scripts_are_checked() {
    let parts = parse("$SHELL -c 'rm -rf /'");
    assert!(parts[0].doubt.is_some());
    assert!(parts.iter().any(|p| p.command == "rm -rf /"));
    let parts = parse("/bin/r? -rf x");
    assert_eq!(parts[0].name_glob.as_deref(), Some("/bin/r?"));
}

#[test]
fn limits_are_doubtful_and_do_not_overflow() {
    let mut line = "ls".to_string();
    for _ in 0..12 {
        line = format!("sh -c {}", shell_quote(&line));
    }
    assert_eq!(shape(&line), Doubtful);
    let deep = format!("{}rm -rf x{}", "(".repeat(3000), ")".repeat(3000));
    let parts = parse(&deep);
    assert!(parts.iter().any(|p| p.doubt.is_some()));
    assert!(
        parts
            .iter()
            .any(|p| p.words.first().is_some_and(|w| w == "rm")),
        "{:?}",
        parts.iter().map(|p| &p.command).collect::<Vec<_>>()
    );
    let long = "ls ".repeat(30_000);
    assert_eq!(shape(&long), Doubtful);
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn nothing_to_run_gives_no_parts() {
    for line in ["", "  # just a comment", "x=1", "[ -f x ]"] {
        assert!(parse(line).is_empty(), "{line:?}: {:#?}", parse(line));
    }
}

proptest! {
    /// Whatever the model sends, parsing returns (a panic would end the turn).
    #[test]
    fn parsing_never_panics(line in r#"[a-z0-9 $(){}'"`\\|;&<>\n=*?#~!.,:@/\[\]-]{0,48}|\PC{0,32}"#) {
        for p in parse(&line) {
            prop_assert!(!p.words.is_empty() && !p.command.is_empty(), "{:?}", p);
        }
    }
}

/// tree-sitter-bash's scanner indexed `isdigit`'s table with any character after `{`: one
/// above U+00FF crashed rein (SIGSEGV) on a model's command. Every plane, both spots.
#[test]
fn no_character_after_a_brace_crashes_the_parser() {
    let chars = (0x80u32..=0x10FFFF)
        .step_by(997)
        .chain([0xE01D7, 0x31860, 0x10FFFF])
        .filter_map(char::from_u32);
    for c in chars {
        for line in [
            format!("{{{c}"),
            format!("echo {{1..{c}"),
            format!("{{{c}..2}}"),
        ] {
            let _ = parse(&line);
        }
    }
    // Non-ASCII text still parses into the words bash sees, as written.
    let parts = parse("echo héllo 'wörld' | grep -c ü日本");
    let words: Vec<Vec<&str>> = parts
        .iter()
        .map(|p| p.words.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        words,
        [vec!["echo", "héllo", "wörld"], vec!["grep", "-c", "ü日本"]]
    );
}
