//! Project MCP servers and project trust end to end, through the real binary: a server the
//! repository defines (`.mcp.json`, `.rein/config.toml`) is a program rein would run, so it
//! starts only after the person trusted the project with that exact command line, in the one
//! trust prompt of the app; `rein exec` never asks and never starts it untrusted; a changed
//! command line is a new question. The fault server counts its starts in `$FAULT_DIR/starts`,
//! which is the oracle: it only grows when rein really ran the project's program.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::mcp::{fault_server, q};
use support::pty::{Pty, keys};
use support::rein::{World, assert_ok, last_result, stderr, tool_names};
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(30);

/// How often the project's server was started.
fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Waits until the server was started `n` times in all.
fn wait_starts(dir: &Path, n: usize) {
    let until = Instant::now() + WAIT;
    while starts(dir) < n {
        assert!(
            Instant::now() < until,
            "the project server was started {} times, expected {n}",
            starts(dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `.mcp.json` defining `proj`: the fault server with `args`.
fn mcp_json(w: &World, fault_dir: &Path, args: &[&str]) {
    let exe = fault_server().display().to_string();
    w.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {
            "command": exe, "args": args, "env": {"FAULT_DIR": fault_dir}
        }}})
        .to_string(),
    );
}

/// Asks the app for `/mcp` until `line` is in it (a server may still be starting: each view
/// is a snapshot), and quits.
fn mcp_view_then_quit(t: &mut Pty, line: &str) {
    let until = Instant::now() + WAIT;
    loop {
        t.send_keys("/mcp");
        t.send_raw(keys::ENTER);
        match t.wait_for_text(line, Duration::from_secs(1)) {
            Ok(_) => break,
            Err(screen) => assert!(Instant::now() < until, "no {line:?} in /mcp: {screen}"),
        }
    }
    assert_eq!(t.quit_app(WAIT), Some(0), "{}", t.screen_text());
}

fn world(s: &ScriptedServer) -> World {
    let w = World::new(s);
    w.user_config("retry_backoff_ms = 20\n");
    w
}

fn echo_call(s: &ScriptedServer) {
    s.push(Reply::tool_call(
        "mcp__proj__echo",
        json!({"message": "hi"}),
    ))
    .push(Reply::text("done"));
}

#[test]
fn exec_starts_a_project_server_only_with_trust() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let w = world(&s);
    let fault = tempfile::tempdir().unwrap();
    mcp_json(&w, fault.path(), &[]);
    w.write(
        ".rein/config.toml",
        &format!(
            "[mcp_servers.proj2]\ncommand = {}\nenv = {{ FAULT_DIR = {} }}\n",
            q(&fault_server().display().to_string()),
            q(&fault.path().display().to_string())
        ),
    );

    // Untrusted: never started, the model is told why, the warning names both servers.
    echo_call(&s);
    let out = w.exec(&["--yes", "go"]);
    assert_ok(&out);
    assert_eq!(starts(fault.path()), 0, "an untrusted project server ran");
    let err = stderr(&out);
    assert!(
        err.contains("not trusted") && err.contains("MCP server proj ") && err.contains("proj2"),
        "{err}"
    );
    // Said once: the trust warning names the servers, no second notice repeats the refusal.
    assert!(!err.contains("was not started"), "announced twice: {err}");
    let r = last_result(&s.request(1));
    assert!(
        r.content.starts_with("Error:") && r.content.contains("not approved"),
        "{}",
        r.content
    );

    // The oracle: the same project with --trust does run both servers, and the call works.
    echo_call(&s);
    let out = w.exec(&["--yes", "--trust", "go"]);
    assert_ok(&out);
    assert_eq!(starts(fault.path()), 2);
    let tools = tool_names(&s.request(2));
    assert!(
        tools.contains(&"mcp__proj__echo".to_string())
            && tools.contains(&"mcp__proj2__echo".to_string()),
        "{tools:?}"
    );
    assert_eq!(last_result(&s.request(3)).content, "echo: hi");
}

#[test]
fn the_trust_prompt_shows_the_command_line_and_a_changed_one_asks_again() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let w = world(&s);
    let fault = tempfile::tempdir().unwrap();
    mcp_json(&w, fault.path(), &["--first"]);
    let tui = |w: &World| Pty::spawn(w.pty_command(&[]), 200, 40);
    let ready = |t: &Pty| {
        t.expect(
            "the app, ready",
            |s| s.contains("scripted-model") && s.contains("enter send"),
            WAIT,
        )
    };
    let prompt = |t: &Pty| {
        t.expect(
            "the trust prompt",
            |s| s.contains("Trust this project?"),
            WAIT,
        )
    };

    // Declined: nothing runs, and /mcp says why.
    let mut t = tui(&w);
    let screen = prompt(&t);
    assert!(
        screen.contains("MCP server proj (from .mcp.json) runs:") && screen.contains("--first"),
        "{screen}"
    );
    t.send_keys("n");
    ready(&t);
    mcp_view_then_quit(&mut t, "proj  not approved");
    assert_eq!(starts(fault.path()), 0, "a declined project server ran");

    // Approved: it starts, and the approval is remembered (no prompt; headless runs it too).
    let mut t = tui(&w);
    prompt(&t);
    t.send_keys("y");
    ready(&t);
    wait_starts(fault.path(), 1);
    mcp_view_then_quit(&mut t, "proj  ready");
    echo_call(&s);
    assert_ok(&w.exec(&["--yes", "go"]));
    assert_eq!(starts(fault.path()), 2);
    assert_eq!(last_result(&s.request(1)).content, "echo: hi");

    // The repository changes the command line: a new question; headless, it stays stopped.
    mcp_json(&w, fault.path(), &["--first", "--changed"]);
    echo_call(&s);
    assert_ok(&w.exec(&["--yes", "go"]));
    assert_eq!(
        starts(fault.path()),
        2,
        "a changed command line ran without asking"
    );
    let mut t = tui(&w);
    let screen = prompt(&t);
    assert!(screen.contains("--changed"), "{screen}");
    t.send_keys("n");
    ready(&t);
    mcp_view_then_quit(&mut t, "proj  not approved");
    assert_eq!(starts(fault.path()), 2);
}
