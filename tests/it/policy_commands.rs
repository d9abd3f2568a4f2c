//! Every row of `tests/fixtures/commands.tsv` must get its expected verdict from the built-in
//! rules: `allow` rows allowed (over-blocking is a defect too), `deny` rows denied, `not-allow`
//! rows asked or denied.

use rein::policy::{Action, Policy, explain};

#[test]
fn built_in_rules_give_every_expected_verdict() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/commands.tsv");
    let table = std::fs::read_to_string(path).expect("commands table");
    let policy = Policy::new(Vec::new(), false);
    let mut failures = Vec::new();
    let mut rows = 0;
    for (n, line) in table.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert!(
            cols.len() >= 3,
            "line {}: expected command, expected, why: {line:?}",
            n + 1
        );
        let (command, expected, why) = (cols[0], cols[1], cols[2]);
        let verdict = policy.check_bash(command);
        let ok = match expected {
            "allow" => verdict.action == Action::Allow,
            "deny" => verdict.action == Action::Deny,
            "not-allow" => verdict.action != Action::Allow,
            other => panic!("line {}: unknown expectation {other:?}", n + 1),
        };
        rows += 1;
        if !ok {
            failures.push(format!(
                "line {}: {command}\n    expected {expected}, got {}\n    why: {why}",
                n + 1,
                explain(&verdict)
            ));
        }
    }
    assert!(rows >= 90, "the table has only {rows} rows");
    assert!(
        failures.is_empty(),
        "{} of {rows} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
