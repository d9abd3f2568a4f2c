//! `evals/run.py --repeat`: every task runs N times and the table counts solved runs per task
//! (a stand-in rein answers; the tasks' own checkers judge).

use std::path::Path;
use std::process::Command;

/// A rein that answers the `n`th call with the port when `n` is not 3.
const FAKE_REIN: &str = r#"#!/bin/sh
n=$(cat "$FAKE_COUNTER" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$FAKE_COUNTER"
if [ "$n" -eq 3 ]; then port=5000; else port=8080; fi
printf '{"type":"assistant_message","text":"It listens on %s."}\n' "$port"
"#;

#[test]
fn a_repeated_eval_counts_solved_runs_per_task_per_round_and_by_majority() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("rein");
    std::fs::write(&fake, FAKE_REIN).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = dir.path().join("run.json");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let done = Command::new("python3")
        .arg(repo.join("evals/run.py"))
        .args(["--only", "answer_question,shell_fix_sum", "--repeat", "3"])
        .arg("--rein")
        .arg(&fake)
        .arg("--out")
        .arg(&out)
        .env("FAKE_COUNTER", dir.path().join("count"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    // Calls 1, 3, 5 are answer_question's (round by round); call 3 answers wrongly.
    // shell_fix_sum is never solved (nothing is changed).
    assert!(stdout.contains("answer_question        2/3"), "{stdout}");
    assert!(stdout.contains("shell_fix_sum          0/3"), "{stdout}");
    assert!(
        stdout.contains("solved per round 1, 0, 1; by majority 1/2; mean 0.67"),
        "{stdout}"
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(run["rounds"], 3);
    assert_eq!(run["tasks"].as_array().unwrap().len(), 6);
    assert_eq!(run["repeat_totals"]["majority"], 1);
    // A saved run prints the same counts again.
    let shown = Command::new("python3")
        .arg(repo.join("evals/run.py"))
        .arg("--show")
        .arg(&out)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("by majority 1/2"));
}
