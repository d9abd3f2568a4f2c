//! Hooks end to end: real shell hooks configured in the person's `config.toml` and in a project's
//! `.claude/settings.json`, run by the real `rein` binary against the scripted model server.
//! What the model saw is read from the requests the server received; what ran, from the disk.

use crate::support;

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::pty::{idle, wait_until};
use support::rein::{World, assert_ok, last_result, stderr, user_texts};
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(20);

/// The person's config with fast retries, plus `extra` (hooks, rules).
fn config(w: &World, extra: &str) {
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n{extra}"
    ));
}

/// A `[[hooks.EVENT]]` entry running `script` (a TOML literal string: no escaping).
fn hook(event: &str, matcher: &str, script: &str, more: &str) -> String {
    format!("[[hooks.{event}]]\nmatcher = \"{matcher}\"\ncommand = '''{script}'''\n{more}\n")
}

#[test]
fn a_pre_tool_use_hook_blocks_a_bash_call_with_its_reason() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "touch made-by-bash"}),
    ))
    .push(Reply::text("I will not touch it."));
    let w = World::new(&s);
    // Keeps its input, then refuses anything that touches files.
    let script = r#"input=$(cat); printf '%s' "$input" > "$REIN_PROJECT_DIR/pre-input.json"
case "$input" in *touch*) echo "touching files is not allowed in this repository" >&2; exit 2;; esac"#;
    config(&w, &hook("PreToolUse", "bash", script, ""));
    // --yes: without the hook the command would run.
    assert_ok(&w.exec(&["--yes", "make a file"]));
    assert!(w.read("made-by-bash").is_none(), "the blocked command ran");
    let result = last_result(&s.request(1));
    assert!(
        result.content.contains("Blocked by a PreToolUse hook")
            && result
                .content
                .contains("touching files is not allowed in this repository"),
        "{}",
        result.content
    );
    let input: Value = serde_json::from_str(&w.read("pre-input.json").unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"]["command"], "touch made-by-bash");
    assert_eq!(input["cwd"], w.ws.display().to_string());
    assert!(
        input["session_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
}

#[test]
fn hooks_add_context_the_model_sees_in_the_next_request() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo from-bash"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let post = r#"input=$(cat); case "$input" in *from-bash*) ;; *) exit 1;; esac
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"the linter found nothing"}}'"#;
    let prompt = r#"cat > /dev/null; echo "this project indents with tabs""#;
    let start = r#"echo "session-start-context from the hook""#;
    config(
        &w,
        &format!(
            "{}{}{}",
            hook("PostToolUse", "bash", post, ""),
            hook("UserPromptSubmit", "", prompt, ""),
            hook("SessionStart", "", start, "")
        ),
    );
    assert_ok(&w.exec(&["run echo"]));
    let first = user_texts(&s.request(0)).join("\n");
    assert!(
        first.contains("run echo")
            && first.contains("this project indents with tabs")
            && first.contains("session-start-context from the hook"),
        "{first}"
    );
    let result = last_result(&s.request(1)).content;
    assert!(
        result.contains("from-bash") && result.contains("the linter found nothing"),
        "{result}"
    );
}

#[test]
fn a_user_prompt_submit_hook_blocks_the_message_and_says_why() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("should never be asked"));
    let w = World::new(&s);
    let script = r#"input=$(cat); case "$input" in *password*) echo "no passwords in prompts" >&2; exit 2;; esac"#;
    config(&w, &hook("UserPromptSubmit", "", script, ""));
    let o = w.exec(&["my password is hunter2"]);
    assert_eq!(
        s.request_count(),
        0,
        "the blocked message reached the model"
    );
    assert!(
        stderr(&o).contains("no passwords in prompts"),
        "{}",
        stderr(&o)
    );
    assert_ne!(o.status.code(), Some(0));
}

/// Processes whose command line contains `needle` (as `ps` would show it, spaces for NULs).
fn processes_running(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(raw) = std::fs::read(e.path().join("cmdline")) {
            let line = String::from_utf8_lossy(&raw).replace('\0', " ");
            if line.contains(needle) {
                found.push(line);
            }
        }
    }
    found
}

#[test]
fn a_hook_that_times_out_is_killed_and_the_turn_goes_on() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo still-ran"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    // One in the sandbox, one the person runs outside it (its own process group, killed
    // whole: the background sleep too).
    let hooks = format!(
        "{}{}",
        hook(
            "PreToolUse",
            "bash",
            "sleep 297; echo late",
            "timeout_secs = 1"
        ),
        hook(
            "PreToolUse",
            "bash",
            "sleep 296 & sleep 295; echo late",
            "timeout_secs = 1\nsandbox = false"
        )
    );
    config(&w, &hooks);
    let started = Instant::now();
    let o = w.exec(&["run echo"]);
    assert_ok(&o);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited for the hooks"
    );
    let result = last_result(&s.request(1)).content;
    assert!(result.contains("still-ran"), "{result}");
    let err = stderr(&o);
    assert_eq!(err.matches("timed out after 1 s").count(), 2, "{err}");
    for sleeper in ["sleep 297", "sleep 296", "sleep 295"] {
        wait_until(&format!("no `{sleeper}` left"), WAIT, || {
            processes_running(sleeper).is_empty()
        });
    }
}

#[test]
fn a_project_claude_hook_runs_only_after_the_project_is_trusted() {
    let s = ScriptedServer::openai();
    for _ in 0..2 {
        s.push(Reply::tool_call(
            "bash",
            json!({"command": "echo bash-ran"}),
        ))
        .push(Reply::text("done"));
    }
    let w = World::new(&s);
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
        "type": "command",
        "command": "cat > \"$CLAUDE_PROJECT_DIR/claude-hook-input.json\"; echo 'the project hook says no' >&2; exit 2",
        "timeout": 20
    }]}]}});
    w.write(".claude/settings.json", &settings.to_string());

    let o = w.exec(&["--yes", "run echo"]);
    assert_ok(&o);
    assert!(
        w.read("claude-hook-input.json").is_none(),
        "a project hook ran before the project was trusted"
    );
    assert!(last_result(&s.request(1)).content.contains("bash-ran"));
    assert!(
        stderr(&o).contains("not trusted") && stderr(&o).contains("the project hook says no"),
        "the person is not told what waits for trust: {}",
        stderr(&o)
    );

    assert_ok(&w.exec(&["--yes", "--trust", "run echo"]));
    let result = last_result(&s.request(3)).content;
    assert!(
        result.contains("the project hook says no") && !result.contains("bash-ran"),
        "{result}"
    );
    // Claude Code's tool names for Claude Code's files.
    let input: Value = serde_json::from_str(&w.read("claude-hook-input.json").unwrap()).unwrap();
    assert_eq!(input["tool_name"], "Bash");
}

#[test]
fn a_hook_allow_skips_a_question_but_never_a_deny_rule() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "touch denied-file"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "mkdir asked-dir"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let allow = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"the hook trusts everything"}}'"#;
    config(
        &w,
        &format!(
            "[[rules]]\ntool = \"bash\"\npattern = \"touch *\"\naction = \"deny\"\n{}",
            hook("PreToolUse", "bash", allow, "")
        ),
    );
    // No --yes: without the hook, `mkdir` would be refused (nobody to ask).
    assert_ok(&w.exec(&["make things"]));
    assert!(
        w.read("denied-file").is_none(),
        "a hook allow overrode a deny rule"
    );
    let denied = last_result(&s.request(1)).content;
    assert!(denied.contains("Blocked by policy"), "{denied}");
    assert!(
        w.ws.join("asked-dir").is_dir(),
        "the hook's allow did not skip the question"
    );
}

#[test]
fn a_stop_hook_sends_the_model_back_to_work_once() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("All done."))
        .push(Reply::text("Tests pass now."));
    let w = World::new(&s);
    let script = r#"input=$(cat); case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
echo '{"decision":"block","reason":"run the test suite before you stop"}'"#;
    config(&w, &hook("Stop", "", script, ""));
    let o = w.exec(&["fix it"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 2, "{}", stderr(&o));
    let second = user_texts(&s.request(1)).join("\n");
    assert!(
        second.contains("run the test suite before you stop"),
        "{second}"
    );
}

#[test]
fn tui_notification_hook_runs_when_an_approval_waits_and_hooks_lists_them() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "mkdir asked-dir"}),
    ))
    .push(Reply::text("ok, not doing it"));
    let w = World::new(&s);
    let notify = r#"cat > "$REIN_PROJECT_DIR/notified.json""#;
    config(&w, &hook("Notification", "", notify, "timeout_secs = 7"));
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("make a dir");
    t.expect("the approval", |s| s.contains("mkdir asked-dir"), WAIT);
    wait_until("the notification hook's input", WAIT, || {
        w.read("notified.json")
            .is_some_and(|t| serde_json::from_str::<Value>(&t).is_ok())
    });
    let input: Value = serde_json::from_str(&w.read("notified.json").unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert!(
        input["message"]
            .as_str()
            .is_some_and(|m| m.contains("permission")),
        "{input}"
    );
    t.send_keys("n");
    t.expect("the turn ends", idle, WAIT);
    t.type_line("/hooks");
    let screen = t.expect("the hooks listing", |s| s.contains("Notification ["), WAIT);
    assert!(
        screen.contains("timeout 7 s")
            && screen.contains("sandboxed")
            && screen.contains("from your"),
        "{screen}"
    );
    t.quit_app(WAIT);
}

#[test]
fn hooks_run_in_the_sandbox_unless_the_persons_config_says_otherwise() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("hello"));
    let w = World::new(&s);
    let confined =
        r#"env > "$REIN_PROJECT_DIR/env-confined.txt"; touch "$HOME/escaped-confined"; true"#;
    let free = r#"env > "$REIN_PROJECT_DIR/env-free.txt"; touch "$HOME/escaped-free"; pwd > "$REIN_PROJECT_DIR/pwd-free.txt""#;
    config(
        &w,
        &format!(
            "{}{}",
            hook("UserPromptSubmit", "", confined, ""),
            hook("UserPromptSubmit", "", free, "sandbox = false")
        ),
    );
    assert_ok(&w.exec(&["hi"]));
    assert!(
        !w.home.join("escaped-confined").exists(),
        "a sandboxed hook wrote outside the workspace"
    );
    assert!(
        w.home.join("escaped-free").exists(),
        "the unsandboxed hook did not run"
    );
    for f in ["env-confined.txt", "env-free.txt"] {
        let env = w.read(f).unwrap();
        assert!(
            !env.contains(support::rein::TEST_KEY),
            "the key reached a hook: {f}"
        );
        assert!(env.contains("REIN_PROJECT_DIR="), "{env}");
    }
    // Outside the sandbox a hook starts outside the workspace (the launch gate's rule).
    let pwd = w.read("pwd-free.txt").unwrap();
    assert!(
        !pwd.trim().starts_with(&w.ws.display().to_string()),
        "{pwd}"
    );
}

#[test]
fn tui_trust_prompt_lists_a_project_hook_and_a_changed_hook_asks_again() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let project_hook = |word: &str| {
        w.write(
            ".rein/config.toml",
            &format!(
                "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"cat > /dev/null; echo 'project hook {word}' >&2; exit 2\"\n"
            ),
        )
    };
    project_hook("one");
    let mut t = w.spawn_tui(110, 32);
    let screen = t.expect(
        "the trust prompt",
        |s| s.contains("Trust this project?"),
        WAIT,
    );
    assert!(
        screen.contains("hook PreToolUse") && screen.contains("project hook one"),
        "the prompt does not show the hook: {screen}"
    );
    t.send_keys("y");
    t.ready(WAIT);
    t.quit_app(WAIT);

    // Remembered: the hook runs headless too.
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo bash-ran"}),
    ))
    .push(Reply::text("done"));
    assert_ok(&w.exec(&["--yes", "go"]));
    let result = last_result(&s.request(1)).content;
    assert!(result.contains("project hook one"), "{result}");

    // A changed hook is a new question: it does not run until trusted again.
    project_hook("two");
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo bash-ran"}),
    ))
    .push(Reply::text("done"));
    let o = w.exec(&["--yes", "go"]);
    assert_ok(&o);
    let result = last_result(&s.request(3)).content;
    assert!(
        result.contains("bash-ran") && !result.contains("project hook"),
        "{result}"
    );
    assert!(stderr(&o).contains("not trusted"), "{}", stderr(&o));
}

#[test]
fn rein_config_lists_the_hooks_and_where_they_come_from() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    config(
        &w,
        &hook(
            "PostToolUse",
            "write_file|str_replace",
            "cargo fmt",
            "sandbox = false",
        ),
    );
    let mut c = w.cmd();
    c.arg("config");
    let o = support::rein::run_with_timeout(c, WAIT);
    assert_ok(&o);
    let out = support::rein::stdout(&o);
    assert!(
        out.contains("hook  PostToolUse [write_file|str_replace] cargo fmt")
            && out.contains("config.toml, not sandboxed"),
        "{out}"
    );
}

#[test]
fn a_failing_hook_is_reported_and_ignored() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo still-ran"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let hooks = format!(
        "{}{}{}",
        hook(
            "PreToolUse",
            "bash",
            "echo 'the hook broke' >&2; exit 1",
            ""
        ),
        hook("PreToolUse", "bash", "echo '{not json'", ""),
        hook("PostToolUse", "bash", "kill -SEGV $$", "")
    );
    config(&w, &hooks);
    let o = w.exec(&["run echo"]);
    assert_ok(&o);
    let result = last_result(&s.request(1)).content;
    assert!(result.contains("still-ran"), "{result}");
    let err = stderr(&o);
    for said in [
        "exit code 1",
        "the hook broke",
        "not a JSON object",
        "killed by a signal",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn a_hook_ask_makes_an_allowed_call_ask() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo allowed-by-rules"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let ask = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"echo needs a second look"}}'"#;
    config(&w, &hook("PreToolUse", "bash", ask, ""));
    // Headless without --yes: nobody can answer, so the call is refused (exit 3 says so).
    let o = w.exec(&["run echo"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let result = last_result(&s.request(1)).content;
    assert!(
        result.contains("echo needs a second look") && !result.contains("allowed-by-rules\n"),
        "{result}"
    );
}

#[test]
fn a_stop_hook_that_never_lets_go_is_capped() {
    let s = ScriptedServer::openai();
    for i in 0..8 {
        s.push(Reply::text(&format!("answer {i}")));
    }
    let w = World::new(&s);
    config(
        &w,
        &hook(
            "Stop",
            "",
            "cat > /dev/null; echo 'keep going' >&2; exit 2",
            "",
        ),
    );
    let o = w.exec(&["go"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 6, "{}", stderr(&o));
    assert!(stderr(&o).contains("the turn ends here"), "{}", stderr(&o));
}
