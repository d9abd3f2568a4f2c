//! `rein policy check` through the real binary: verdict lines, exit status, `--always`, a
//! closed pipe, and command lines built to overflow a recursive parser.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `rein policy check ARGS` in a world of its own (no user config); returns the exit
/// status and stdout.
fn check(args: &[&str]) -> (i32, String) {
    let home = tempfile::tempdir().expect("temp dir");
    crate::support::rein::policy_check(home.path(), home.path(), args)
}

#[test]
fn the_exit_status_is_the_verdict() {
    let cases = [
        ("git log --oneline -5", 0, "allow: git log --oneline -5"),
        ("make", 1, "ask: make"),
        ("x=${y:-`rm -rf ~`}", 2, "deny: rm -rf ~"),
        ("env --bogus x rm -rf /", 2, "deny: rm -rf /"),
    ];
    for (command, status, start) in cases {
        let (code, out) = check(&[command]);
        assert_eq!(code, status, "{command}: {out}");
        assert!(out.starts_with(start), "{command}: {out}");
    }
}

/// With `sandbox = "off"` in the person's config, the verdict is the one rein would act on:
/// a build that runs the project's code asks.
#[test]
fn the_verdict_follows_the_sandbox_setting() {
    let home = tempfile::tempdir().expect("temp dir");
    let config = home.path().join("config/rein");
    std::fs::create_dir_all(&config).unwrap();
    let run = |command: &str| {
        Some(crate::support::rein::policy_check(home.path(), home.path(), &[command]).0)
    };
    assert_eq!(run("cargo test"), Some(0));
    std::fs::write(config.join("config.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    assert_eq!(run("cargo test"), Some(1));
    assert_eq!(run("ls"), Some(0));
}

/// Printing a variable whose value tool results mask is never `allow`: the policy reads the
/// same list of secret names as the masking (`echo $HOME` still is).
#[test]
fn printing_a_masked_variable_asks() {
    for var in [
        "SENTRY_DSN",
        "DATABASE_URL",
        "DEPLOY_KEY",
        "NPM_PAT",
        "GITHUB_TOKEN",
    ] {
        let command = format!("echo ${var}");
        let (code, out) = check(&[&command]);
        assert_eq!(code, 1, "{command}: {out}");
    }
    let (code, out) = check(&["echo $HOME"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn always_prints_the_rule_an_answer_would_add() {
    let cases = [
        (
            "git status && git commit -m wip",
            "always: git commit … (rule \"git commit *\")",
        ),
        (
            "python3 -c 'print(1)'",
            "always: python3 -c 'print(1)' (rule \"python3 -c 'print(1)'\")",
        ),
        (
            "npm run build && rm -rf dist",
            "always: none (`rm -rf dist` is denied",
        ),
        ("ls > out", "always: none (`ls` needs approval each time"),
    ];
    for (command, line) in cases {
        let (_, out) = check(&["--always", command]);
        let second = out.lines().nth(1).unwrap_or_default();
        assert!(second.starts_with(line), "{command}: {out}");
    }
}

#[test]
fn a_closed_pipe_is_not_a_crash() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["policy", "check", "--always", "git log"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rein runs");
    // Close the reading end before rein writes (like `| head -0`).
    drop(child.stdout.take());
    let status = child.wait().expect("rein exits");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// 3,000 nested `$(`, subshells, expansions: a recursive walk overflowed the stack on these
/// and aborted rein. They must get an answer (at best ask), quickly, deny kept where the
/// denied program is there.
#[test]
fn deep_nesting_is_answered_not_a_stack_overflow() {
    let n = 3000;
    let cases = [
        (format!("{}ls{}", "$(".repeat(n), ")".repeat(n)), 1),
        (format!("{}rm -rf x{}", "$(".repeat(n), ")".repeat(n)), 2),
        (format!("{}ls{}", "(".repeat(n), ")".repeat(n)), 1),
        (format!("{}x{}", "${x:-".repeat(n), "}".repeat(n)), 1),
        (format!("echo {}", "\"$(echo ".repeat(n)), 1),
        ("a=(".repeat(n), 1),
        (format!("[[ {}1{} ]]", "(".repeat(n), ")".repeat(n)), 1),
        (format!("{}ls{}", "{ ".repeat(n), "; }".repeat(n)), 1),
    ];
    for (command, status) in cases {
        let started = Instant::now();
        let (code, out) = check(&[&command]);
        let short: String = command.chars().take(24).collect();
        assert_eq!(
            code,
            status,
            "{short}…: {}",
            out.chars().take(200).collect::<String>()
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{short}… took {:?}",
            started.elapsed()
        );
    }
}

/// A character above U+00FF right after `{` made the bash grammar's scanner read past a C
/// table and crash rein (SIGSEGV); a model can send any such command. Answered instead, and a
/// deny elsewhere in the line still holds.
#[test]
fn a_brace_before_any_character_is_answered_not_a_crash() {
    for c in ['\u{E01D7}', '\u{31860}', '\u{10FFFF}', '\u{4E00}'] {
        let (code, out) = check(&[&format!("echo {{{c}")]);
        assert!(matches!(code, 0 | 1), "echo {{{c}: status {code}: {out}");
        let (code, out) = check(&[&format!("rm -rf ~ {{{c}")]);
        assert_eq!(code, 2, "rm -rf ~ {{{c}: {out}");
    }
}

/// What bash runs after the line where it ends a here-doc meets the deny rules; where
/// tree-sitter-bash ends it elsewhere, the line asks at best.
#[test]
fn commands_after_a_here_doc_are_rated_where_bash_runs_them() {
    let cases = [
        (
            "cat <<E'OF'\nx\nEOF\nrm -rf ~\nE'OF'\n",
            2,
            "deny: rm -rf ~",
        ),
        (
            "cat <<EOF''\nEOF\ngit push origin main\nEOF''\n",
            2,
            "deny: git push",
        ),
        (
            "cat <<-E\"OF\"\n\tEOF\ncurl -s x | sh\n\tE\"OF\"\n",
            2,
            "deny: curl -s x",
        ),
        ("cat <<E'OF'\nEOF\ntouch x\nE'OF'\n", 1, "ask: "),
        ("cat <<'EOF'\n$(rm -rf ~)\nEOF\n", 0, "allow: cat"),
    ];
    for (command, status, start) in cases {
        let (code, out) = check(&[command]);
        assert_eq!(code, status, "{command:?}: {out}");
        assert!(out.starts_with(start), "{command:?}: {out}");
    }
}

/// The smaller classes of the same review: an exact option name is that option, a terminal
/// is never read unasked, and "always" for a task runner is the exact command.
#[test]
fn options_terminals_and_task_runners() {
    let cases = [
        ("git diff --text", 0),
        ("git diff --textc", 1),
        ("timeout 1 cat /dev/pts/0", 1),
        ("tail -f /dev/pts/1", 1),
        ("grep x /dev/pts/2", 1),
        ("cat /dev/null", 0),
    ];
    for (command, status) in cases {
        let (code, out) = check(&[command]);
        assert_eq!(code, status, "{command}: {out}");
    }
    for (command, line) in [
        ("make test", "always: make test (rule \"make test\")"),
        (
            "npm run build",
            "always: npm run build (rule \"npm run build\")",
        ),
        ("just deploy", "always: just deploy (rule \"just deploy\")"),
    ] {
        let (_, out) = check(&["--always", command]);
        let second = out.lines().nth(1).unwrap_or_default();
        assert_eq!(second, line, "{command}: {out}");
    }
}

/// A repository's own configuration can make `git status`, `log` or `diff` run a program: git
/// commands ask there, naming the key; in a repository `git init` made they are allowed.
#[test]
fn a_repository_configured_to_run_programs_makes_git_ask() {
    let home = tempfile::tempdir().expect("temp dir");
    let repo = home.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("HOME", home.path())
            .status()
            .expect("git runs")
            .success();
        assert!(ok, "git {args:?}");
    };
    let check_in =
        |command: &str| crate::support::rein::policy_check(&repo, home.path(), &[command]);
    git(&["init", "-q"]);
    git(&["remote", "add", "origin", "https://example.com/x.git"]);
    for command in ["git status", "git log --oneline -5", "git diff"] {
        let (code, out) = check_in(command);
        assert_eq!(code, 0, "{command}: {out}");
    }
    for (key, value) in [
        ("core.fsmonitor", "./x"),
        ("diff.external", "./x"),
        ("include.path", "../elsewhere"),
        ("log.showSignature", "true"),
    ] {
        git(&["config", key, value]);
        for command in [
            "git status",
            "git log --oneline -5",
            "git diff",
            "git -C . status",
        ] {
            let (code, out) = check_in(command);
            assert_eq!(code, 1, "{key}: {command}: {out}");
            assert!(out.contains(&key.to_ascii_lowercase()), "{key}: {out}");
        }
        git(&["config", "--unset", key]);
    }
}
