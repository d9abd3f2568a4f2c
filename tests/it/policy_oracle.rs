//! The differential oracle: the permission layer tested against bash itself.
//!
//! Each command line runs under real bash inside `rein sandbox` (writes confined to a
//! throwaway workspace, HOME in the scratch, no network), with every `execve` and file
//! access traced by `strace -f`, in a workspace full of decoys (files named `-delete`,
//! `--output=pwn.txt`, directories `lsb/`, `tree-sitter/`, `pytest/`, secrets in HOME). It
//! asserts that every program bash (or a wrapper) ran is one the policy rated, and that an
//! `allow` never coincides with a denied program, a write, a secret read or a shell started
//! by a non-shell, and that an `allow` for the sandbox off never opened a file outside the
//! workspace (through a planted link). Inputs: the shared table, the class table, and a grammar of fragments
//! mixing the classes (`REIN_ORACLE_CASES`, default 240).
//!
//! Needs strace and an enforced sandbox: without them it skips with a message, or fails when
//! `REIN_SANDBOX_TESTS_REQUIRED=1` (CI).

#[path = "../policy_oracle/grammar.rs"]
mod grammar;
#[path = "../policy_oracle/harness.rs"]
pub(crate) mod harness;
#[path = "../policy_oracle/trace.rs"]
mod trace;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use std::sync::Mutex;

/// Whether the oracle can run; skips loudly, or fails where it is required.
fn available(world: &harness::World) -> bool {
    match harness::unavailable(world) {
        None => true,
        Some(why) => {
            let required = std::env::var("REIN_SANDBOX_TESTS_REQUIRED").is_ok_and(|v| v == "1");
            assert!(!required, "the policy oracle must run here, but {why}");
            eprintln!("SKIPPED: the policy oracle cannot run: {why}");
            false
        }
    }
}

fn table(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|c| !c.trim().is_empty())
        .map(|c| crate::policy_classes::unescape(&path, c))
        .collect()
}

/// Runs the oracle over `commands` on a few threads; returns the disagreements.
fn run_all(world: &harness::World, commands: &[String]) -> Vec<String> {
    let next = Mutex::new(0usize);
    let found = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                        *n += 1;
                        *n - 1
                    };
                    let Some(cmd) = commands.get(i) else { break };
                    let o = harness::check(world, cmd);
                    if !o.findings.is_empty() {
                        let report = format!(
                            "{cmd:?}\n    policy: {}\n    {}",
                            o.verdict,
                            o.findings.join("\n    ")
                        );
                        found.lock().unwrap_or_else(|e| e.into_inner()).push(report);
                    }
                }
            });
        }
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn assert_agrees(name: &str, commands: &[String]) {
    let world = harness::World::new();
    if !available(&world) {
        return;
    }
    let found = run_all(&world, commands);
    eprintln!(
        "oracle, {name}: {} command lines run, {} disagreements",
        commands.len(),
        found.len()
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_shared_table_agrees_with_bash() {
    assert_agrees("shared table", &table("commands.tsv"));
}

#[test]
fn the_class_table_agrees_with_bash() {
    assert_agrees("class table", &table("commands-classes.tsv"));
}

#[test]
fn generated_command_lines_agree_with_bash() {
    generated(
        "generated",
        grammar::command_line(),
        "REIN_ORACLE_CASES",
        240,
    );
}

#[test]
fn generated_heredocs_agree_with_bash() {
    generated(
        "here-docs",
        grammar::heredoc_line(),
        "REIN_ORACLE_HEREDOC_CASES",
        240,
    );
}

/// Runs `cases` lines of `strategy` (`env` overrides the count); a failure is shrunk.
fn generated<S: Strategy<Value = String>>(name: &str, strategy: S, env: &str, cases: u32) {
    let world = harness::World::new();
    if !available(&world) {
        return;
    }
    let cases = std::env::var(env)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    // Generate first and run in parallel; a failure is then shrunk on its own.
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let mut trees: Vec<_> = (0..cases)
        .filter_map(|_| strategy.new_tree(&mut runner).ok())
        .collect();
    let lines: Vec<String> = trees.iter().map(|t| t.current()).collect();
    let found = run_all(&world, &lines);
    eprintln!(
        "oracle, {name}: {} command lines run, {} disagreements",
        lines.len(),
        found.len()
    );
    if found.is_empty() {
        return;
    }
    let fails = |l: &str| !harness::check(&world, l).findings.is_empty();
    let minimal = trees.iter_mut().find(|t| fails(&t.current())).map(|tree| {
        let mut last = tree.current();
        for _ in 0..60 {
            let more = if fails(&tree.current()) {
                last = tree.current();
                tree.simplify()
            } else {
                tree.complicate()
            };
            if !more {
                break;
            }
        }
        last
    });
    panic!(
        "{} {name} command lines disagree with bash:\n{}\nminimal reproduction: {:?}",
        found.len(),
        found.join("\n"),
        minimal.unwrap_or_default()
    );
}
