//! End to end through the real `rein exec` binary against the scripted model server, for both
//! wire formats: multi-step work, bad calls, permissions, parallel calls, faults, exit codes.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use std::time::Duration;
use support::rein::{
    TEST_KEY, World, assert_ok, last_result, stderr, stdout, tool_results, user_texts,
};
use support::{Reply, ScriptedServer};

both!(
    multi_step_session_edits_files_and_tracks_todos,
    bad_calls_get_readable_errors_and_the_turn_goes_on,
    deny_is_final_even_with_yes,
    ask_is_refused_headless_and_approved_with_yes,
    parallel_calls_each_get_one_result_in_order,
    faults_are_recovered_and_each_tool_runs_once,
    non_retryable_error_fails_cleanly_with_exit_1,
    json_mode_prints_events,
    code_written_inside_a_markdown_fence_is_written_without_it,
    a_write_that_drops_definitions_names_them,
    output_last_message_gets_the_final_answer_alone,
);

fn server(kind: ProviderKind) -> ScriptedServer {
    ScriptedServer::start(kind)
}

/// `-o FILE` (Codex's `--output-last-message`) gets the final answer alone, in plain and JSON
/// mode; a run without an answer empties the file, so an old one does not pass for it; a
/// file that cannot be written fails the run with the reason.
fn output_last_message_gets_the_final_answer_alone(kind: ProviderKind) {
    let s = server(kind);
    let w = World::new(&s);
    let out = w.ws.join("answer.md");
    for json_mode in [false, true] {
        s.push(
            Reply::new()
                .say("Looking first.")
                .call("bash", json!({"command": "true"})),
        )
        .push(Reply::text("All done: \u{1b}[31mred\u{1b}[0m."));
        let mut args = vec!["--yes", "-o", "answer.md", "do it"];
        if json_mode {
            args.insert(0, "--json");
        }
        assert_ok(&w.exec(&args));
        let written = std::fs::read_to_string(&out).unwrap();
        assert!(
            written.starts_with("All done: ") && written.ends_with(".\n"),
            "{written:?}"
        );
        assert!(
            !written.contains("Looking first.") && !written.contains('\u{1b}'),
            "the final answer alone, without terminal escapes: {written:?}"
        );
    }
    s.push(Reply::status(400, "bad request"));
    let o = w.exec(&["--output-last-message", "answer.md", "fail"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    s.push(Reply::text("Done."));
    let o = w.exec(&["-o", "no/such/dir/answer.md", "go"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot write the answer to no/such/dir/answer.md"),
        "{}",
        stderr(&o)
    );
}

/// A model that wraps a file's content (or an edit's new text) in a markdown fence gets the
/// code inside it written, and a note that says so; the script then runs.
fn code_written_inside_a_markdown_fence_is_written_without_it(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "hi.py", "content": "```python\nprint('hi')\n```"}),
    ))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "hi.py", "old_str": "'hi'", "new_str": "```\n'hello'\n```"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "python3 hi.py"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    assert_ok(&w.exec(&["--yes", "write hi.py"]));
    for i in [1, 2] {
        let r = last_result(&s.request(i)).content;
        assert!(r.contains("inside a ``` fence"), "{r}");
    }
    assert_eq!(w.read("hi.py").unwrap(), "print('hello')\n");
    let ran = last_result(&s.request(3)).content;
    assert!(
        ran.contains("hello") && !ran.contains("SyntaxError"),
        "{ran}"
    );
}

/// Writing a Python file anew without functions it had names them in the result.
fn a_write_that_drops_definitions_names_them(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "ops.py"})))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "ops.py", "content": "def mul(a, b):\n    return a * b\n"}),
        ))
        .push(Reply::text("done"));
    let w = World::new(&s);
    w.write(
        "ops.py",
        "def add(a, b):\n    return a + b\n\n\ndef main():\n    pass\n",
    );
    assert_ok(&w.exec(&["--yes", "add mul to ops.py"]));
    let r = last_result(&s.request(2)).content;
    assert!(
        r.contains("ops.py no longer defines `add`, `main`, which it did before this write"),
        "{r}"
    );
}

fn multi_step_session_edits_files_and_tracks_todos(kind: ProviderKind) {
    let s = server(kind);
    let todos = |a: &str, b: &str| {
        json!({"todos": [
            {"content": "Write greet", "activeForm": "Writing greet", "status": a},
            {"content": "Check it", "activeForm": "Checking it", "status": b},
        ]})
    };
    s.push(
        Reply::new()
            .say("I'll plan first.")
            .call("write_todos", todos("in_progress", "pending")),
    )
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "src/app.py", "content": "def greet():\n    return 'hi'\n"}),
    ))
    .push(Reply::tool_call("read_file", json!({"path": "src/app.py"})))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "src/app.py", "old_str": "'hi'", "new_str": "'hello'"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "cd src && python3 -c 'import app; print(app.greet())'"}),
    ))
    .push(Reply::tool_call(
        "write_todos",
        todos("completed", "completed"),
    ))
    .push(Reply::text("Done: greet() now returns hello.").usage(900, 12));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "make greet say hello"]);
    assert_ok(&o);
    assert_eq!(
        w.read("src/app.py").as_deref(),
        Some("def greet():\n    return 'hello'\n")
    );
    // stdout is the final answer alone (as `codex exec` and `claude -p` print it); the text
    // the turn went on from is narration, on stderr before the call it led to.
    assert_eq!(stdout(&o), "Done: greet() now returns hello.\n");
    let err = stderr(&o);
    assert!(
        err.contains("I'll plan first.\n• "),
        "the plan's text is on stderr, before its call: {err}"
    );
    assert_eq!(s.request_count(), 7);
    assert_eq!(s.remaining(), 0);

    // The first request carries the prompt, the system prompt and the tools.
    let first = s.request(0);
    assert!(user_texts(&first)[0].contains("make greet say hello"));
    let names = support::rein::tool_names(&first);
    for t in [
        "bash",
        "read_file",
        "write_file",
        "str_replace",
        "write_todos",
        "task",
    ] {
        assert!(names.contains(&t.to_string()), "{t} missing from {names:?}");
    }
    assert!(support::rein::system_prompt(&first).contains(&w.ws.display().to_string()));

    // Each later request carries the previous call's result.
    assert!(
        last_result(&s.request(1))
            .content
            .contains("[~] Write greet")
    );
    assert!(last_result(&s.request(2)).content.contains("Created"));
    let read = last_result(&s.request(3)).content;
    assert!(
        read.contains("1\tdef greet():") && read.contains("2\t    return 'hi'"),
        "{read}"
    );
    assert!(last_result(&s.request(4)).content.contains("hello"));
    assert_eq!(last_result(&s.request(5)).content.trim(), "hello");
    // The todo list is re-sent near the end of every request once it exists.
    // (at the end of the last message: the tool result, or the user turn holding it)
    let last = s.request(2).messages().last().unwrap().to_string();
    assert!(last.contains("Write greet"), "{last}");

    // One line per tool call on stderr.
    let err = stderr(&o);
    for line in [
        "• todos  2 items  → ok",
        "• write  src/app.py  → ok",
        "• read  src/app.py  → ok",
        "• edit  src/app.py  → ok",
        "• bash  cd src && python3",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    // The key never reaches a file rein wrote.
    for f in w.all_files() {
        if let Ok(text) = std::fs::read_to_string(&f) {
            assert!(!text.contains(TEST_KEY), "key found in {}", f.display());
        }
    }
}

fn bad_calls_get_readable_errors_and_the_turn_goes_on(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::new().call_raw("bash", "{\"command\": \"ls"))
        .push(Reply::tool_call("launch_rockets", json!({})))
        .push(Reply::tool_call("read_file", json!({"path": 42})))
        .push(Reply::tool_call("bash", json!({})))
        .push(Reply::tool_call("read_file", json!({"path": "sum.sh"})))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "sum.sh", "old_str": "1", "new_str": "0"}),
        ))
        .push(Reply::text("ok"));
    let w = World::new(&s);
    let script = "echo \"$1\"\ntotal=1\n";
    w.write("sum.sh", script);
    let o = w.exec(&["--yes", "try things"]);
    assert_ok(&o);
    let r = last_result(&s.request(1));
    assert!(
        r.content
            .starts_with("Error: arguments for bash were not valid JSON"),
        "{}",
        r.content
    );
    let r = last_result(&s.request(2));
    assert!(
        r.content.contains("launch_rockets") && r.content.contains("read_file"),
        "{}",
        r.content
    );
    let r = last_result(&s.request(3));
    assert!(r.content.contains("`path`"), "{}", r.content);
    let r = last_result(&s.request(4));
    assert!(r.content.contains("command"), "{}", r.content);
    if kind == ProviderKind::Anthropic {
        assert!(r.is_error);
    }
    // `1` is also in `$1`: the way on is the whole line, not replacing every one.
    let r = last_result(&s.request(6));
    assert!(
        r.content.contains("some inside longer words"),
        "{}",
        r.content
    );
    assert!(!r.content.contains("replace_all"), "{}", r.content);
    assert_eq!(w.read("sum.sh").as_deref(), Some(script));
}

fn deny_is_final_even_with_yes(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "git status && rm -rf keep"}),
    ))
    .push(Reply::text("I won't."));
    let w = World::new(&s);
    w.write("keep/file.txt", "precious");
    let o = w.exec(&["--yes", "clean up"]);
    assert_ok(&o);
    assert_eq!(w.read("keep/file.txt").as_deref(), Some("precious"));
    let r = last_result(&s.request(1));
    assert!(
        r.content.starts_with("Blocked by policy: rm -rf keep"),
        "{}",
        r.content
    );
    assert!(stderr(&o).contains("blocked"), "{}", stderr(&o));
}

fn ask_is_refused_headless_and_approved_with_yes(kind: ProviderKind) {
    for yes in [false, true] {
        let s = server(kind);
        s.push(Reply::tool_call(
            "write_file",
            json!({"path": "new.txt", "content": "x"}),
        ))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "touch made-by-bash"}),
        ))
        .push(Reply::text("finished"));
        let w = World::new(&s);
        let args: &[&str] = if yes { &["--yes", "go"] } else { &["go"] };
        let o = w.exec(args);
        if yes {
            assert_ok(&o);
        } else {
            // Every call was refused: a distinct code, so CI can't take it for success.
            assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
            let err = stderr(&o);
            assert!(err.contains("nobody was asked"), "{err}");
            assert!(err.contains("2 actions were refused"), "{err}");
            assert!(err.contains("with --yes") && err.contains("rule"), "{err}");
        }
        assert_eq!(w.read("new.txt").is_some(), yes);
        assert_eq!(w.ws.join("made-by-bash").exists(), yes);
        let r = last_result(&s.request(1));
        if yes {
            assert!(r.content.contains("Created new.txt"), "{}", r.content);
        } else {
            assert!(
                r.content.starts_with("Refused without asking:"),
                "{}",
                r.content
            );
            assert!(r.content.contains("no one can approve it"), "{}", r.content);
            assert!(!r.content.contains("user denied"), "{}", r.content);
        }
    }
}

fn parallel_calls_each_get_one_result_in_order(kind: ProviderKind) {
    let s = server(kind);
    s.push(
        Reply::new()
            .say("Two at once.")
            .call_with_id("call_a", "bash", json!({"command": "echo first"}))
            .call_with_id("call_b", "read_file", json!({"path": "notes.txt"})),
    )
    .push(Reply::text("both done"));
    let w = World::new(&s);
    w.write("notes.txt", "some notes\n");
    let o = w.exec(&["do two things"]);
    assert_ok(&o);
    let results = tool_results(&s.request(1));
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].id, "call_a");
    assert_eq!(results[0].content.trim(), "first");
    assert_eq!(results[1].id, "call_b");
    assert!(results[1].content.contains("some notes"));
}

fn faults_are_recovered_and_each_tool_runs_once(kind: ProviderKind) {
    let s = server(kind);
    let append = |n: u32| {
        Reply::tool_call(
            "bash",
            json!({"command": format!("echo run{n} >> runs.txt")}),
        )
    };
    // Each faulty attempt carries the same tool call: it must never run from a broken stream.
    s.push(Reply::rate_limited(1))
        .push(append(1))
        .push(Reply::status(500, "internal error"))
        .push(Reply::status(503, "unavailable"))
        .push(append(2))
        .push(append(3).drop_after(4))
        .push(append(3))
        .push(append(4).malformed_after(3))
        .push(append(4))
        .push(append(5).overloaded_after(2))
        .push(append(5))
        .push(append(6).stall_after(2, Duration::from_secs(8)))
        .push(append(6))
        .push(Reply::text("all done"));
    let w = World::new(&s);
    let started = std::time::Instant::now();
    let o = w.exec(&["--yes", "append some runs"]);
    assert_ok(&o);
    assert_eq!(
        w.read("runs.txt").as_deref(),
        Some("run1\nrun2\nrun3\nrun4\nrun5\nrun6\n"),
        "stderr: {}",
        stderr(&o)
    );
    assert_eq!(s.remaining(), 0);
    // Retry-After: 1 was honoured.
    let reqs = s.requests();
    assert!(reqs[1].received - reqs[0].received >= Duration::from_millis(950));
    // Each retry was shown.
    let err = stderr(&o);
    assert!(err.matches("retrying in").count() >= 7, "{err}");
    assert!(started.elapsed() < Duration::from_secs(40));
}

fn non_retryable_error_fails_cleanly_with_exit_1(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::status(
        400,
        "model 'scripted-model' does not support tools",
    ));
    let w = World::new(&s);
    let o = w.exec(&["hi"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not support tools"),
        "{}",
        stderr(&o)
    );
    assert_eq!(s.request_count(), 1);
}

fn json_mode_prints_events(kind: ProviderKind) {
    let s = server(kind);
    s.push(Reply::tool_call("bash", json!({"command": "echo hi"})))
        .push(Reply::text("bye"));
    let w = World::new(&s);
    let o = w.exec(&["--json", "go"]);
    assert_ok(&o);
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"session_configured"));
    assert!(types.contains(&"tool_call_started") && types.contains(&"tool_call_finished"));
    assert_eq!(types.last(), Some(&"turn_finished"));
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["status"], "ok");
    assert_eq!(finished["output"].as_str().map(str::trim), Some("hi"));
}

/// An agent that cannot start (here: no temp directory) says why as an error: `error: …` on
/// stderr, or the `{"type":"error"}` line with `--json`, and exit 1.
#[test]
fn an_agent_that_cannot_start_says_why_and_exits_1() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    for json in [false, true] {
        let mut c = w.cmd();
        c.env("TMPDIR", w.ws.join("no-such-dir")).arg("exec");
        if json {
            c.arg("--json");
        }
        // `-o`: an answer left from an earlier run must not pass for this one's.
        std::fs::write(w.ws.join("answer.md"), "an old answer\n").unwrap();
        c.args(["-o", "answer.md", "hi"]);
        let o = support::rein::run_with_timeout(c, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(w.read("answer.md").as_deref(), Some(""));
        if json {
            let line: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            assert_eq!(line["type"], "error", "{line}");
            assert!(
                line["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("cannot start: ")
            );
        } else {
            // Said once: the reason, not also "stopped unexpectedly".
            assert!(
                stderr(&o).contains("error: cannot start: "),
                "{}",
                stderr(&o)
            );
            assert!(
                !stderr(&o).contains("stopped unexpectedly"),
                "{}",
                stderr(&o)
            );
        }
        assert_eq!(s.request_count(), 0);
    }
}

#[test]
fn missing_model_exits_2_with_a_clear_paragraph() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("c"))
        .env("XDG_DATA_HOME", dir.path().join("d"))
        .current_dir(dir.path())
        .args(["exec", "hi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("MODEL") && err.contains("API_KEY") && err.contains("~/.agents/env"),
        "{err}"
    );
    // Said once, with one `rein:`, and not wrapped when stderr is no terminal.
    assert!(err.starts_with("rein: No model and no API key"), "{err}");
    assert_eq!(err.matches("rein:").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn config_shows_sources_and_masks_the_key() {
    let s = server(ProviderKind::OpenAi);
    let w = World::new(&s);
    std::fs::create_dir_all(w.home.join(".agents")).unwrap();
    std::fs::write(
        w.home.join(".agents/env"),
        "export MODEL=\"from-agents-env\"\n",
    )
    .unwrap();
    let mut c = w.cmd();
    c.env_remove("MODEL")
        .env("REIN_CONTEXT_WINDOW", "6000")
        .arg("config");
    let o = c.output().unwrap();
    assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.contains("from-agents-env") && out.contains("~/.agents/env MODEL"),
        "{out}"
    );
    assert!(
        out.contains("6000") && out.contains("env REIN_CONTEXT_WINDOW"),
        "{out}"
    );
    assert!(!out.contains(TEST_KEY) && out.contains("****6789"), "{out}");
}

#[test]
fn the_api_key_is_not_in_the_tool_environment() {
    let s = server(ProviderKind::OpenAi);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo key=${API_KEY-unset} ${OPENAI_API_KEY-unset}"}),
    ))
    .push(Reply::text("checked"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.env("OPENAI_API_KEY", "sk-other")
        .args(["exec", "--yes", "check"]);
    let o = support::rein::run_with_timeout(c, Duration::from_secs(30));
    assert_ok(&o);
    assert_eq!(last_result(&s.request(1)).content.trim(), "key=unset unset");
    // Authorization went to the server, though.
    assert_eq!(
        s.request(0).header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
}

#[test]
fn sigint_interrupts_the_turn_and_exits_130() {
    let s = server(ProviderKind::OpenAi);
    // A duration no other test sleeps: `pgrep` below looks at every process on the machine,
    // and other suites run `sleep 30` at the same time.
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "sleep 30.4711"}),
    ));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.args(["exec", "--yes", "wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    assert!(s.wait_for_requests(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(500));
    let started = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(3));
    // The sleep is gone with the process group.
    assert_sleep_gone("30.4711");
}

/// Asserts that no `sleep SECONDS` runs anywhere on the machine (each test sleeps a duration
/// no other test does: `pgrep` sees every process).
fn assert_sleep_gone(seconds: &str) {
    assert!(!sleep_running(seconds), "sleep {seconds} still running");
}

/// `SIGTERM` (`timeout`) and `SIGHUP` (a closed terminal) stop a headless run as Ctrl+C does:
/// the running command is stopped and the checks after it still run, here the one that moves
/// aside a repository the command made with a program in it; rein exits 130.
#[test]
fn sigterm_and_sighup_stop_the_command_and_still_run_its_checks() {
    for (signal, tag) in [(libc::SIGTERM, "30.4712"), (libc::SIGHUP, "30.4713")] {
        let s = server(ProviderKind::OpenAi);
        let command = format!(
            "git init -q x && git -C x config core.fsmonitor 'touch \"$HOME/PWN\"; false #' && \
             touch started && sleep {tag}"
        );
        s.push(Reply::tool_call("bash", json!({ "command": command })));
        let w = World::new(&s);
        let child = exec_until_started(&w);
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(130),
            "signal {signal}: {}",
            stderr(&o)
        );
        assert_sleep_gone(tag);
        assert!(
            w.ws.join("x/.git.rein-unsafe").exists() && !w.ws.join("x/.git").exists(),
            "signal {signal}: the check after the command did not run: {}",
            stderr(&o)
        );
    }
}

/// `SIGKILL` gives rein no chance to stop anything, so the command must die with it: the
/// command and what it left running in the background are gone soon after, sandboxed or not
/// (with the sandboxes off, the command itself: nothing is left to find its background).
#[test]
fn a_command_dies_with_rein_even_when_rein_is_killed_outright() {
    for (sandbox, tags) in [
        ("workspace-write", &["30.4716", "30.4717"][..]),
        ("off", &["30.4718"][..]),
    ] {
        let s = server(ProviderKind::OpenAi);
        let command = match tags {
            [background, foreground] => {
                format!("(sleep {background} &); touch started; sleep {foreground}")
            }
            _ => format!("touch started; sleep {}", tags[0]),
        };
        s.push(Reply::tool_call("bash", json!({ "command": command })));
        let w = World::new(&s);
        w.user_config(&format!(
            "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nmode = \"{sandbox}\"\n"
        ));
        let mut child = exec_until_started(&w);
        for tag in tags {
            assert!(sleep_running(tag), "{sandbox}: sleep {tag} never ran");
        }
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        for tag in tags {
            let what = format!("{sandbox}: sleep {tag} to die with rein");
            support::pty::wait_until(&what, Duration::from_secs(10), || !sleep_running(tag));
        }
    }
}

/// `rein exec --yes wait` in `w`, its output piped, once the scripted command has touched
/// `started` in the workspace.
fn exec_until_started(w: &World) -> std::process::Child {
    let mut c = w.cmd();
    c.args(["exec", "--yes", "wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let started = w.ws.join("started");
    support::pty::wait_until("the command to start", Duration::from_secs(20), || {
        started.exists()
    });
    child
}

fn sleep_running(seconds: &str) -> bool {
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &format!("^sleep {seconds}$")])
        .output()
        .unwrap();
    !stdout(&ps).trim().is_empty()
}

#[test]
fn sandbox_blocks_writes_outside_and_says_how_to_allow_them() {
    let s = server(ProviderKind::OpenAi);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo hi > ../outside.txt"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "echo ok > inside.txt"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "write two files"]);
    assert_ok(&o);
    assert!(!w.ws.parent().unwrap().join("outside.txt").exists());
    assert_eq!(w.read("inside.txt").as_deref(), Some("ok\n"));
    let blocked = last_result(&s.request(1)).content;
    assert!(
        blocked.to_lowercase().contains("sandbox") && blocked.contains("config"),
        "{blocked}"
    );
}

#[test]
fn without_a_sandbox_every_command_asks() {
    let s = server(ProviderKind::OpenAi);
    s.push(Reply::tool_call("bash", json!({"command": "ls"})))
        .push(Reply::text("done"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.env("REIN_SANDBOX_UNAVAILABLE", "1")
        .args(["exec", "list files"]);
    let o = support::rein::run_with_timeout(c, Duration::from_secs(30));
    // `ls` is allowed by the built-in rules, but with no sandbox it must be asked (and
    // headless without --yes refuses: every call refused, exit 3).
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = last_result(&s.request(1)).content;
    assert!(r.starts_with("Refused without asking:"), "{r}");
    assert!(r.contains("sandbox is unavailable"), "{r}");
    assert!(
        stderr(&o).contains("sandbox is unavailable"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn rein_sandbox_runs_a_command_under_the_same_rules() {
    let s = server(ProviderKind::OpenAi);
    let w = World::new(&s);
    let mut c = w.cmd();
    c.args([
        "sandbox",
        "--",
        "sh",
        "-c",
        "touch inside && touch \"$HOME/outside\"",
    ]);
    let o = support::rein::run_with_timeout(c, Duration::from_secs(30));
    assert_ne!(o.status.code(), Some(0));
    assert!(w.ws.join("inside").exists());
    assert!(!w.home.join("outside").exists());
    let mut c = w.cmd();
    c.args(["sandbox", "--", "true"]);
    assert_eq!(
        support::rein::run_with_timeout(c, Duration::from_secs(30))
            .status
            .code(),
        Some(0)
    );
}

/// The machine's root runs its commands as `nobody` (they read only what anyone may); root
/// of a user namespace (a rootless container, `unshare -r`) holds no host secret and cannot
/// map `nobody`, so its commands stay its uid 0. Both write the workspace.
#[test]
fn roots_commands_run_as_nobody_only_for_the_machines_root() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: rein's commands keep the person's uid; nothing to check");
        return;
    }
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    for (in_userns, uid) in [(false, "65534"), (true, "0")] {
        let rein = w.cmd();
        let mut c = match in_userns {
            false => rein,
            true => {
                let mut u = std::process::Command::new("unshare");
                u.arg("-r").arg(rein.get_program());
                u.env_clear()
                    .envs(rein.get_envs().filter_map(|(k, v)| Some((k, v?))))
                    .current_dir(&w.ws)
                    .stdin(std::process::Stdio::null());
                u
            }
        };
        let file = format!("made-{uid}");
        c.args(["sandbox", "--", "sh", "-c"])
            .arg(format!("id -u; echo ok > {file} && cat {file}"));
        let o = support::rein::run_with_timeout(c, Duration::from_secs(30));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out} {}", stderr(&o));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, [uid, "ok"], "in a user namespace: {in_userns}");
        assert!(w.ws.join(&file).is_file());
    }
}

/// `rein exec` says how a command exited: `ok` only for 0, `exit N` otherwise (issue 12).
#[test]
fn exec_shows_the_exit_code_of_commands_that_failed() {
    let s = ScriptedServer::openai();
    s.push(
        Reply::new()
            .call_with_id("c1", "bash", json!({"command": "true"}))
            .call_with_id("c2", "bash", json!({"command": "exit 3"}))
            .call_with_id("c3", "bash", json!({"command": "no-such-command-rein"})),
    )
    .push(Reply::text("done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "run them"]);
    assert_ok(&o);
    let err = stderr(&o);
    let line = |cmd: &str| {
        err.lines()
            .find(|l| l.contains(&format!("bash  {cmd}  →")))
            .unwrap_or_else(|| panic!("no line for {cmd}:\n{err}"))
            .to_string()
    };
    assert!(line("true").ends_with("→ ok"), "{err}");
    assert!(line("exit 3").ends_with("→ exit 3"), "{err}");
    assert!(
        line("no-such-command-rein").ends_with("→ exit 127"),
        "{err}"
    );
    // The JSON events carry it typed.
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "exit 4"})))
        .push(Reply::text("done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "--json", "run it"]);
    assert_ok(&o);
    let finished = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "tool_call_finished")
        .expect("a finished event");
    assert_eq!(finished["exit_code"], 4, "{finished}");
}

/// The session temp dirs (`rein-` and twelve hex digits) in `tmp`.
fn session_temp_dirs(tmp: &std::path::Path) -> Vec<std::path::PathBuf> {
    let named = |n: &str| {
        n.strip_prefix("rein-")
            .is_some_and(|id| id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(named))
        .map(|e| e.path())
        .collect()
}

/// A rein killed outright cannot clean up; the next rein removes what it left, but never the
/// dir of a rein that still runs, however old.
#[test]
fn a_killed_reins_temp_dir_is_removed_by_the_next_but_a_live_ones_is_kept() {
    let s = server(ProviderKind::OpenAi);
    s.push(Reply::text("never sent in time").delay(Duration::from_secs(60)))
        .push(Reply::text("second"))
        .push(Reply::text("third"));
    let w = World::new(&s);
    let tmp = w.dir.path();
    let mut first = w.cmd();
    first
        .args(["exec", "hang"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut first = first.spawn().unwrap();
    assert!(s.wait_for_requests(1, Duration::from_secs(10)));
    let dirs = session_temp_dirs(tmp);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let left = dirs[0].clone();
    std::fs::write(left.join("saved.txt"), "an output").unwrap();
    // As if it had run for an hour.
    let age = || {
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(&left)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    };
    age();
    assert_ok(&w.exec(&["second"]));
    assert!(
        left.join("saved.txt").exists(),
        "a live rein's dir was removed"
    );

    first.kill().unwrap();
    first.wait().unwrap();
    age();
    assert_ok(&w.exec(&["third"]));
    assert!(!left.exists(), "the killed rein's dir is still there");
    assert_eq!(session_temp_dirs(tmp), Vec::<std::path::PathBuf>::new());
}
