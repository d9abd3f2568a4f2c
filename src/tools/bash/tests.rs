use super::*;
use crate::tools::test_ctx::TestCtx;

/// Prepares and runs one call, as the dispatcher does.
async fn run_on(args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
    Bash.prepare(args, ctx)?.run(ctx).await
}

/// Runs a command with a safety net so a broken tool fails the test instead of hanging it.
async fn run_args(t: &TestCtx, args: Value) -> Result<ToolOutput, ToolError> {
    tokio::time::timeout(Duration::from_secs(20), run_on(args, &t.ctx))
        .await
        .expect("the bash tool hung")
}

async fn run(t: &TestCtx, command: &str) -> String {
    let out = run_args(t, json!({ "command": command })).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    out.text
}

/// Whether `pid` is a live process (a zombie waiting for its reaper counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

async fn gone(pid: i32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn read_pid(t: &TestCtx, name: &str) -> i32 {
    for _ in 0..200 {
        if let Ok(s) = std::fs::read_to_string(t.ws.join(name))
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{name} was never written");
}

#[tokio::test]
async fn output_and_exit_code() {
    let t = TestCtx::new();
    assert_eq!(run(&t, "echo hi").await, "hi");
    assert_eq!(run(&t, "echo hi; exit 3").await, "hi\n[exit code: 3]");
    assert_eq!(
        run(&t, "printf 'no newline'; exit 1").await,
        "no newline\n[exit code: 1]"
    );
}

#[tokio::test]
async fn no_output() {
    let t = TestCtx::new();
    assert_eq!(run(&t, "true").await, "(no output)");
    assert_eq!(run(&t, "exit 2").await, "(no output)\n[exit code: 2]");
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_order() {
    let t = TestCtx::new();
    let out = run(
        &t,
        "echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf x",
    )
    .await;
    assert_eq!(out, "out1\nerr1\nout2\nerr2\nx");
}

#[tokio::test]
async fn killed_by_a_signal_is_named() {
    let t = TestCtx::new();
    assert_eq!(
        run(&t, "echo before; kill -SEGV $$").await,
        "before\n[exit code: 139 (killed by SIGSEGV)]"
    );
    assert_eq!(
        run(&t, "sh -c 'kill -TERM $$'; exit $?").await,
        "Terminated\n[exit code: 143 (SIGTERM)]"
    );
}

#[tokio::test]
async fn runs_in_the_workspace_with_closed_stdin_and_private_tmpdir() {
    let t = TestCtx::new();
    assert!(!t.ctx.temp_dir.exists());
    let out = run(&t, "pwd; cat; echo \"tmp=$TMPDIR\"").await;
    assert_eq!(
        out,
        format!("{}\ntmp={}", t.ws.display(), t.ctx.temp_dir.display())
    );
    assert!(
        t.ctx.temp_dir.is_dir(),
        "the temp dir is created for the command"
    );
}

#[tokio::test]
async fn invalid_utf8_is_replaced() {
    let t = TestCtx::new();
    assert_eq!(run(&t, r"printf 'a\377b\n'").await, "a\u{FFFD}b");
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let t = TestCtx::new();
    let command = "echo started; sleep 100 & echo $! > bg.pid; sleep 100";
    let out = run_args(&t, json!({"command": command, "timeout_secs": 1}))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.text.starts_with(
            "started\n[timed out after 1s; the command and all its child processes were killed."
        ),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("raise timeout_secs (max 600)"),
        "{}",
        out.text
    );
    let pid = read_pid(&t, "bg.pid").await;
    assert!(
        gone(pid).await,
        "background sleep {pid} survived the timeout"
    );
}

#[test]
fn timeout_is_clamped() {
    assert_eq!(timeout_secs(None, 60), 60);
    assert_eq!(timeout_secs(None, 0), 1);
    assert_eq!(timeout_secs(None, 5000), 600);
    assert_eq!(timeout_secs(Some(0.0), 60), 1);
    assert_eq!(timeout_secs(Some(-3.0), 60), 1);
    assert_eq!(timeout_secs(Some(2.5), 60), 3);
    assert_eq!(timeout_secs(Some(10_000.0), 60), 600);
}

#[tokio::test]
async fn cancel_kills_the_group_promptly() {
    let t = TestCtx::new();
    let ctx = t.ctx.clone();
    let task = tokio::spawn(async move {
        run_on(
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
            &ctx,
        )
        .await
    });
    let pid = read_pid(&t, "bg.pid").await;
    t.ctx.cancel.cancel();
    // The contract is 200 ms; in practice it takes well under a millisecond.
    let result = tokio::time::timeout(Duration::from_millis(200), task)
        .await
        .expect("the command was not stopped after the interrupt")
        .unwrap();
    // What ran stays, marked interrupted.
    let out = result.expect("an interrupted command is a result");
    assert_eq!(out.effect, Effect::Interrupted);
    assert!(out.text.ends_with(INTERRUPTED_NOTE), "{}", out.text);
    assert!(
        gone(pid).await,
        "background sleep {pid} survived the interrupt"
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let t = TestCtx::new();
    let ctx = t.ctx.clone();
    let task = tokio::spawn(async move {
        run_on(
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
            &ctx,
        )
        .await
    });
    let pid = read_pid(&t, "bg.pid").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(
        gone(pid).await,
        "background sleep {pid} survived the dropped call"
    );
}

#[tokio::test]
async fn already_cancelled_runs_nothing() {
    let t = TestCtx::new();
    t.ctx.cancel.cancel();
    let err = run_args(&t, json!({"command": "touch ran"}))
        .await
        .unwrap_err();
    assert_eq!(err.0, "Interrupted by the user.");
    assert!(!t.ws.join("ran").exists());
}

#[tokio::test]
async fn output_streams_while_the_command_runs() {
    let mut t = TestCtx::new();
    let ctx = t.ctx.clone();
    let task = tokio::spawn(async move {
        run_on(
            json!({"command": "echo first; sleep 0.5; echo second"}),
            &ctx,
        )
        .await
    });
    let first = tokio::time::timeout(Duration::from_secs(5), t.events.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !task.is_finished(),
        "the first delta must arrive before the command ends"
    );
    assert_eq!(
        first,
        Event::ToolOutputDelta {
            call_id: "call_1".into(),
            chunk: "first\n".into()
        }
    );
    let out = task.await.unwrap().unwrap();
    assert_eq!(out.text, "first\nsecond");
    let Some(Event::ToolOutputDelta { chunk, .. }) = t.events.recv().await else {
        panic!("expected a second delta");
    };
    assert_eq!(chunk, "second\n");
}

#[tokio::test]
async fn background_process_holding_the_pipe_does_not_hang() {
    let t = TestCtx::new();
    let out = run(&t, "sleep 30 & echo $! > bg.pid; echo started").await;
    assert!(
        out.starts_with("started\n[the command left 1 process running"),
        "{out}"
    );
    let pid = read_pid(&t, "bg.pid").await;
    assert!(
        gone(pid).await,
        "background sleep {pid} still holds the pipe"
    );
}

/// Nothing a command starts outlives it, however it detaches: plain `&` with its own output,
/// `nohup`, `setsid`, a double fork, and a process that ignores SIGTERM. Runs with the
/// sandbox off (the supervisor alone); the sandbox tests cover it confined.
#[tokio::test]
async fn detached_background_processes_are_killed_and_reported() {
    let t = TestCtx::new();
    let script = "sleep 31 > /dev/null 2>&1 & echo $! > a.pid
        nohup sleep 32 > /dev/null 2>&1 & echo $! > b.pid
        setsid sleep 33 > /dev/null 2>&1 & echo $! > c.pid
        ( (sleep 34 > /dev/null 2>&1 & echo $! > d.pid) & )
        (trap '' TERM; exec sleep 35) > /dev/null 2>&1 & echo $! > e.pid
        sleep 0.2; echo ok";
    let out = run(&t, script).await;
    assert!(
        out.starts_with("ok\n[the command left 5 processes running"),
        "{out}"
    );
    for name in ["a.pid", "b.pid", "c.pid", "d.pid", "e.pid"] {
        let pid = read_pid(&t, name).await;
        assert!(!alive(pid), "{name} ({pid}) outlived the call");
    }
    // A command that leaves nothing behind says nothing about it.
    assert_eq!(run(&t, "sleep 0.1 & wait; echo done").await, "done");
}

#[tokio::test]
async fn long_output_is_cut_and_saved() {
    let t = TestCtx::new();
    let out = run(&t, "seq 1 100000").await;
    assert!(out.starts_with("1\n2\n3\n"));
    assert!(
        out.ends_with("\n99999\n100000"),
        "{}",
        &out[out.len() - 50..]
    );
    assert!(out.chars().count() < 30_500);
    let marker = out
        .lines()
        .find(|l| l.starts_with("[... "))
        .expect("a marker line");
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    let start = marker.find("is saved in ").unwrap() + "is saved in ".len();
    let end = marker.find(". Read it").unwrap();
    let saved = std::path::Path::new(&marker[start..end]);
    assert!(saved.starts_with(&t.ctx.temp_dir), "{marker}");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), expected);
    assert!(
        marker.contains(&format!("({} bytes)", expected.len())),
        "{marker}"
    );
}

/// Variables named in `env_remove` (the API keys, in real use) never reach the child, and the
/// rest of the environment does. Uses variables cargo sets for every test process, so this
/// process's environment needn't be changed (which would race with other tests).
#[tokio::test]
async fn the_child_gets_the_allow_list_and_nothing_else() {
    // Cargo sets these for the test process; neither is on the allow-list.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok() && std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let t = TestCtx::new();
    let out = run(
        &t,
        "echo \"pkg=${CARGO_PKG_NAME-unset} dir=${CARGO_MANIFEST_DIR-unset} path=${PATH:+yes}\"",
    )
    .await;
    assert_eq!(out, "pkg=unset dir=unset path=yes");
}

#[test]
fn prepare_fixes_access_and_display() {
    let t = TestCtx::new();
    let call = Bash.prepare(json!({"command": "ls -la"}), &t.ctx).unwrap();
    assert_eq!(
        call.access(),
        &Access::Bash {
            command: "ls -la".into()
        }
    );
    assert_eq!(
        call.display(),
        ToolDisplay::Exec {
            command: "ls -la".into()
        }
    );
    let err = Bash
        .prepare(json!({"command": "  "}), &t.ctx)
        .err()
        .unwrap();
    assert_eq!(err.0, "`command` is empty. Give the shell command to run.");
    let err = Bash
        .prepare(json!({"command": "ls", "timeout_secs": "ten"}), &t.ctx)
        .err()
        .unwrap();
    assert!(err.0.contains("`timeout_secs`"), "{}", err.0);
    assert_eq!(
        Bash.describe(&json!({"command": "cd x\nmake"})),
        ToolDisplay::Exec {
            command: "cd x\nmake".into()
        }
    );
}

#[tokio::test]
async fn the_exit_code_is_typed() {
    let t = TestCtx::new();
    let cases = [
        ("true", 0),
        ("exit 3", 3),
        ("nosuchcommand-rein", 127),
        ("kill -9 $$", 137),
    ];
    for (command, code) in cases {
        let out = run_args(&t, json!({ "command": command })).await.unwrap();
        assert_eq!(out.effect, Effect::Exited { code }, "{command}");
        assert!(
            !out.is_error,
            "{command}: a non-zero exit is a result, not a tool error"
        );
    }
}

#[test]
fn status_lines() {
    assert_eq!(status_line(ExitStatus::from_raw(0)), None);
    assert_eq!(
        status_line(ExitStatus::from_raw(1 << 8)).as_deref(),
        Some("[exit code: 1]")
    );
    assert_eq!(
        status_line(ExitStatus::from_raw(libc::SIGKILL)).as_deref(),
        Some("[exit code: 137 (killed by SIGKILL)]")
    );
    assert_eq!(
        status_line(ExitStatus::from_raw(200 << 8)).as_deref(),
        Some("[exit code: 200]")
    );
}

#[tokio::test]
async fn a_script_without_its_execute_bit_gets_told_how_to_run_it() {
    let t = TestCtx::new();
    t.write("hello.sh", "echo hi\n");
    let out = run_args(&t, json!({ "command": "./hello.sh" }))
        .await
        .unwrap();
    assert!(
        out.text
            .contains("hello.sh is not executable, and chmod is not allowed here")
            && out.text.contains("`bash hello.sh`"),
        "{}",
        out.text
    );
    // An executable one that fails otherwise gets no such note.
    let script = t.write("fail.sh", "#!/bin/sh\nexit 126\n");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = run_args(&t, json!({ "command": "./fail.sh" }))
        .await
        .unwrap();
    assert!(!out.text.contains("not executable"), "{}", out.text);
}
