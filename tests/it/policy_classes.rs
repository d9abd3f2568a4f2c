//! The attack classes of issue #10, one row each in `tests/fixtures/commands-classes.tsv`
//! (same columns as the shared table; `\n` in a command is a newline, and in the class table
//! `\t`, `\v`, `\f`, `\r` are TAB, VT, FF, CR), rated in the oracle's decoy workspace; the
//! figures of the shared table, and exact "always" rules through the public API.

use rein::policy::{Action, Policy, explain};

/// A table row: the command line, what it must get, and why.
struct Row {
    line: usize,
    command: String,
    expected: String,
    why: String,
    /// The class column, where the table has one.
    class: String,
}

fn rows(path: &str) -> Vec<Row> {
    let table = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    table
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert!(cols.len() >= 3, "{path}:{}: {l:?}", n + 1);
            Row {
                line: n + 1,
                command: unescape(path, cols[0]),
                expected: cols[1].to_string(),
                why: cols[2].to_string(),
                class: cols.get(3).unwrap_or(&"").to_string(),
            }
        })
        .collect()
}

/// A command as the table writes it: `\n` is a newline; in the class table also `\t`, `\v`,
/// `\f`, `\r` (the shared table writes `\rm` for a backslash and `rm`).
pub(crate) fn unescape(path: &str, command: &str) -> String {
    let mut s = command.replace("\\n", "\n");
    if path.ends_with("commands-classes.tsv") {
        for (from, to) in [
            ("\\t", "\t"),
            ("\\v", "\x0b"),
            ("\\f", "\x0c"),
            ("\\r", "\r"),
        ] {
            s = s.replace(from, to);
        }
    }
    s
}

fn meets(expected: &str, action: Action) -> bool {
    match expected {
        "allow" => action == Action::Allow,
        "deny" => action == Action::Deny,
        "not-allow" => action != Action::Allow,
        other => panic!("unknown expectation {other:?}"),
    }
}

/// The class table: one row per class of command line, with its expected verdict.
const CLASS_TABLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commands-classes.tsv"
);

#[test]
fn every_class_row_gets_its_verdict() {
    // The decoys some rows need (`sub2/.git` pointing out of the workspace) are on disk there.
    let world = crate::policy_oracle::harness::World::new();
    let policy = Policy::new(Vec::new(), false).with_workspace(world.workspace());
    let rows = rows(CLASS_TABLE);
    assert!(
        rows.len() >= 120,
        "the class table has only {} rows",
        rows.len()
    );
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let v = policy.check_bash(&r.command);
            (!meets(&r.expected, v.action)).then(|| {
                format!(
                    "line {}: {:?}\n    expected {}, got {}\n    why: {}",
                    r.line,
                    r.command,
                    r.expected,
                    explain(&v),
                    r.why
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// The class table's `outside:` rows, rated for `sandbox = "off"`: each reads outside the
/// workspace (through the link the decoy workspace plants, `..`, a `cd`) and must ask, though
/// the sandbox makes it harmless when on. (The oracle runs them too, where strace is.)
#[test]
fn outside_rows_ask_with_the_sandbox_off() {
    let world = crate::policy_oracle::harness::World::new();
    let off = Policy::new(Vec::new(), false)
        .with_workspace(world.workspace())
        .with_confinement(rein::policy::Confinement::Off);
    let rows: Vec<Row> = rows(CLASS_TABLE)
        .into_iter()
        .filter(|r| r.class.starts_with("outside:"))
        .collect();
    assert!(rows.len() >= 6, "only {} outside rows", rows.len());
    for r in rows {
        let v = off.check_bash(&r.command);
        assert_eq!(v.action, Action::Ask, "line {}: {}", r.line, explain(&v));
        assert!(
            v.reason.contains("sandbox is off"),
            "line {}: {}",
            r.line,
            v.reason
        );
    }
}

/// The figures the issue asks for, over the shared table: no allow among the rows that
/// must not be allowed, deny kept deny for at least 95%, allow rows allowed for at least 90%.
#[test]
fn shared_table_figures() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/commands.tsv");
    let policy = Policy::new(Vec::new(), false);
    let (mut allowed_bad, mut bad, mut denied, mut deny_rows, mut allowed, mut allow_rows) =
        (0, 0, 0, 0, 0, 0);
    for r in rows(path) {
        let action = policy.check_bash(&r.command).action;
        match r.expected.as_str() {
            "allow" => {
                allow_rows += 1;
                allowed += usize::from(action == Action::Allow);
            }
            expected => {
                bad += 1;
                allowed_bad += usize::from(action == Action::Allow);
                if expected == "deny" {
                    deny_rows += 1;
                    denied += usize::from(action == Action::Deny);
                }
            }
        }
    }
    eprintln!(
        "shared table: {allowed_bad} allowed of {bad} deny/not-allow rows; \
         {denied}/{deny_rows} deny rows denied; {allowed}/{allow_rows} allow rows allowed"
    );
    assert_eq!(allowed_bad, 0);
    assert!(
        denied * 100 >= deny_rows * 95,
        "{denied}/{deny_rows} denied"
    );
    assert!(
        allowed * 100 >= allow_rows * 90,
        "{allowed}/{allow_rows} allowed"
    );
}

/// "Always" on one command, then another: allowed only if the rule covers no more than
/// what was shown (name + subcommand for multi-level tools, the exact command for task
/// runners and everything else).
#[test]
fn always_rules_are_never_broader_than_what_was_shown() {
    let cases = [
        ("sed -n '1,2p' f", "sed -i 's/a/b/' f", false),
        ("sed -n '1,2p' f", "sed '1e touch PWNED' f", false),
        ("sed -n '1,2p' f", "sed -n '1,2p' f", true),
        ("awk '{print $1}' f", "awk 'BEGIN{system(\"id\")}'", false),
        (
            "python3 -c 'print(1)'",
            "python3 -c 'import os; os.system(\"id\")'",
            false,
        ),
        (
            "node -e 'console.log(1)'",
            "node -e 'require(\"fs\")'",
            false,
        ),
        ("perl -e 'print 1'", "perl -e 'unlink \"x\"'", false),
        ("bash -c 'make'", "bash -c 'make install'", false),
        ("vim -u NONE -c q f", "vim f", false),
        ("git commit -m x", "git commit --amend", true),
        ("git commit -m x", "git push", false),
        ("cargo run -q", "cargo run --release", true),
        ("cargo run -q", "cargo publish", false),
        // Task runners: further words are targets, files or variables (issue 18).
        ("npm run build", "npm run build -- --watch", false),
        ("npm run build", "npm run build", true),
        ("npm run build", "npm run postinstall", false),
        ("npm test", "npm install evil", false),
        ("make check", "make install", false),
        ("make test", "make test", true),
        ("make test", "make test deploy", false),
        ("make test", "make test -f /tmp/evil.mk", false),
        ("make test", "make test --eval=x", false),
        ("make test", "make test SHELL=/tmp/sh", false),
        ("just test", "just test deploy", false),
        ("ninja test", "ninja test install", false),
        ("rake test", "rake test deploy", false),
        ("cargo make ci", "cargo make ci deploy", false),
        ("./scripts/lint.sh", "./scripts/lint.sh --fix", false),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(approved, later, allowed)| {
            let mut policy = Policy::new(Vec::new(), false);
            let always = policy.always("bash", approved).ok()?;
            policy.add_session_rule(always.rule.clone());
            let v = policy.check_bash(later);
            ((v.action == Action::Allow) != *allowed).then(|| {
                format!(
                    "`a` on {approved:?} (shown {:?}), then {later:?}: {}",
                    always.shown,
                    explain(&v)
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every approved command above does get a rule.
    for (approved, ..) in cases {
        assert!(
            Policy::new(Vec::new(), false)
                .always("bash", approved)
                .is_ok(),
            "{approved}"
        );
    }
}
