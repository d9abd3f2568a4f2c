//! MCP end to end through the real `rein exec` binary and the scripted model: the model calls
//! `mcp__<server>__<tool>`, the result reaches its next request, the session records it and
//! resumes without the server; permissions; project servers never start untrusted; secrets
//! stay out of servers, session files and logs; servers start only once the TUI shows the
//! session.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use std::path::Path;
use support::mcp::{bin, fault_server, npm_servers, q};
use support::rein::{World, assert_ok, last_result, run_with_timeout, stderr, tool_names};
use support::{Reply, ScriptedServer};

both!(everything_echo_reaches_the_next_request_and_resumes_without_the_server);

fn everything_echo_reaches_the_next_request_and_resumes_without_the_server(kind: ProviderKind) {
    let Some(dir) = npm_servers() else { return };
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "mcp__everything__echo",
        json!({"message": "from the model"}),
    ))
    .push(Reply::text("The server echoed it."));
    let w = World::new(&s);
    let config = format!(
        "retry_backoff_ms = 20\n[mcp_servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
        q(&bin(&dir, "mcp-server-everything"))
    );
    w.user_config(&config);
    let out = w.exec(&["--yes", "echo something"]);
    assert_ok(&out);
    let first = s.request(0);
    assert!(
        tool_names(&first).contains(&"mcp__everything__echo".to_string()),
        "{:?}",
        tool_names(&first)
    );
    let result = last_result(&s.request(1));
    assert_eq!(result.content, "Echo: from the model");
    assert!(!result.is_error);

    // Resume with the server gone from the config: the history still holds the call.
    w.user_config("retry_backoff_ms = 20\n");
    s.push(Reply::text("Still remember."));
    let out = w.exec(&["--continue", "what did it say?"]);
    assert_ok(&out);
    let resumed = s.request(2);
    assert!(
        resumed.body_text.contains("Echo: from the model"),
        "{}",
        resumed.body_text
    );
    assert!(!tool_names(&resumed).iter().any(|n| n.starts_with("mcp__")));
}

fn fault_config(dir: &Path, rules: &str) -> String {
    format!(
        "retry_backoff_ms = 20\n{rules}\n[mcp_servers.fault]\ncommand = {}\nenv = {{ FAULT_DIR = {}, HANDED = \"${{MY_TOKEN:-none}}\" }}\n",
        q(&fault_server().display().to_string()),
        q(&dir.display().to_string())
    )
}

fn calls(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("calls")).unwrap_or_default()
}

#[test]
fn mcp_tools_ask_by_default_so_headless_refuses_and_the_server_is_never_called() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    s.push(Reply::tool_call(
        "mcp__fault__echo",
        json!({"message": "x"}),
    ))
    .push(Reply::text("ok"));
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    w.user_config(&fault_config(dir.path(), ""));
    // Exit status 3: every call the model made needed approval and was refused.
    let out = w.exec(&["go"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = last_result(&s.request(1));
    assert!(
        r.content.contains("needs approval") && r.content.contains("mcp__fault__echo"),
        "{}",
        r.content
    );
    assert!(!calls(dir.path()).contains("echo"), "{}", calls(dir.path()));
}

#[test]
fn a_deny_rule_for_one_mcp_tool_holds_even_with_yes_and_others_run() {
    let s = ScriptedServer::start(ProviderKind::Anthropic);
    s.push(Reply::tool_call(
        "mcp__fault__echo",
        json!({"message": "x"}),
    ))
    .push(Reply::tool_call(
        "mcp__fault__getenv",
        json!({"name": "HOME"}),
    ))
    .push(Reply::text("ok"));
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rules]]\ntool = \"mcp__fault__echo\"\naction = \"deny\"\n";
    w.user_config(&fault_config(dir.path(), rules));
    assert_ok(&w.exec(&["--yes", "go"]));
    let denied = last_result(&s.request(1));
    assert!(
        denied.content.contains("Blocked by policy"),
        "{}",
        denied.content
    );
    let ran = last_result(&s.request(2));
    assert!(ran.content.contains("HOME is set"), "{}", ran.content);
    let log = calls(dir.path());
    assert!(!log.contains("echo") && log.contains("getenv"), "{log}");
}

#[test]
fn an_allow_rule_runs_mcp_tools_without_asking() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    s.push(Reply::tool_call(
        "mcp__fault__echo",
        json!({"message": "allowed"}),
    ))
    .push(Reply::text("ok"));
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rules]]\ntool = \"mcp__fault__*\"\naction = \"allow\"\n";
    w.user_config(&fault_config(dir.path(), rules));
    assert_ok(&w.exec(&["go"]));
    assert_eq!(last_result(&s.request(1)).content, "echo: allowed");
}

#[test]
fn secrets_stay_out_of_servers_session_files_and_logs() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    s.push(Reply::tool_call(
        "mcp__fault__getenv",
        json!({"name": "API_KEY"}),
    ))
    .push(Reply::tool_call(
        "mcp__fault__getenv",
        json!({"name": "HANDED"}),
    ))
    .push(Reply::text("ok"));
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rules]]\ntool = \"mcp__fault__*\"\naction = \"allow\"\n";
    w.user_config(&fault_config(dir.path(), rules));
    let token = "tok-VERY-SECRET-42";
    let mut c = w.cmd();
    c.env("MY_TOKEN", token).arg("exec").arg("go");
    assert_ok(&run_with_timeout(c, std::time::Duration::from_secs(60)));
    assert_eq!(last_result(&s.request(1)).content, "API_KEY is unset");
    assert_eq!(
        last_result(&s.request(2)).content,
        format!("HANDED is set ({} chars)", token.len())
    );
    for f in w.all_files() {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into_owned();
        assert!(
            !text.contains(token),
            "{} holds the expanded secret",
            f.display()
        );
        assert!(
            !text.contains(support::rein::TEST_KEY),
            "{} holds the API key",
            f.display()
        );
    }
}

#[test]
fn project_servers_never_start_untrusted() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    s.push(Reply::tool_call("mcp__proj__echo", json!({"message": "x"})))
        .push(Reply::text("ok"));
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    let exe = fault_server().display().to_string();
    w.write(
        ".mcp.json",
        &json!({"mcpServers": {"proj": {"command": exe, "env": {"FAULT_DIR": dir.path()}}}})
            .to_string(),
    );
    w.write(
        ".rein/config.toml",
        &format!(
            "[mcp_servers.proj2]\ncommand = {}\nenv = {{ FAULT_DIR = {} }}\n",
            q(&exe),
            q(&dir.path().display().to_string())
        ),
    );
    let out = w.exec(&["--yes", "go"]);
    assert_ok(&out);
    let err = stderr(&out);
    // The trust warning names both servers, once; no second notice repeats the refusal.
    assert!(
        err.contains("not trusted") && err.contains("MCP server proj ") && err.contains("proj2"),
        "{err}"
    );
    assert!(!err.contains("was not started"), "announced twice: {err}");
    assert!(
        !tool_names(&s.request(0))
            .iter()
            .any(|n| n.starts_with("mcp__"))
    );
    let r = last_result(&s.request(1));
    assert!(r.content.contains("not approved"), "{}", r.content);
    assert!(
        !dir.path().join("starts").exists(),
        "a project server was started"
    );
}

#[test]
fn rein_mcp_add_list_and_remove() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    let exe = fault_server().display().to_string();
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.arg("mcp").args(args);
        run_with_timeout(c, std::time::Duration::from_secs(60))
    };
    let fault_dir = format!("FAULT_DIR={}", dir.path().display());
    assert_ok(&run(&["add", "fault", "--env", &fault_dir, "--", &exe]));
    assert_ok(&run(&["add", "web", "--url", "http://127.0.0.1:9/mcp"]));
    let config = std::fs::read_to_string(w.config_home.join("rein/config.toml")).unwrap();
    assert!(config.starts_with("retry_backoff_ms = 20\n"), "{config}");
    let list = run(&["list"]);
    assert_ok(&list);
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(
        text.contains("fault  ready")
            && text.contains("mcp__fault__echo")
            && text.contains("tokens of schema"),
        "{text}"
    );
    assert!(text.contains("web  failed"), "{text}");
    assert_ok(&run(&["remove", "web"]));
    let again = run(&["remove", "web"]);
    assert!(!again.status.success());
    let config = std::fs::read_to_string(w.config_home.join("rein/config.toml")).unwrap();
    assert!(
        config.contains("[mcp_servers.fault]") && !config.contains("web"),
        "{config}"
    );
}

/// What rein logged (`<data dir>/rein/logs/`).
fn log_text(w: &World) -> String {
    let dir = w.data_home.join("rein/logs");
    let mut text = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    text
}

/// The first frame never shares the CPU with servers starting (node alone takes ~150 ms of it
/// here): the TUI draws the session, and only then does rein start them.
#[test]
fn mcp_servers_start_only_after_the_tui_has_shown_the_session() {
    use std::time::{Duration, Instant};
    use support::pty::{Pty, keys};
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let w = World::new(&s);
    let dir = tempfile::tempdir().unwrap();
    w.user_config(&fault_config(dir.path(), ""));
    let mut t = Pty::spawn(w.pty_command(&[]), 100, 30);
    t.wait_for_text("Ask rein anything", Duration::from_secs(20))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !log_text(&w).contains("mcp: starting the server") && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    t.send_raw(keys::CTRL_D);
    t.wait_exit(Duration::from_secs(20));
    let log = log_text(&w);
    let shown = log.find("tui: the session is on screen");
    let started = log.find("mcp: starting the server");
    assert!(
        matches!((shown, started), (Some(a), Some(b)) if a < b),
        "the server must start after the session is on screen:\n{log}"
    );
}
