//! Fault injection with a misbehaving MCP server (`examples/mcp_fault_server.rs`): a crash
//! mid-call, a hang (timeout and interrupt both send `notifications/cancelled`), a malformed
//! message, a huge result, a slow start, a failing start, and a tool list that changes.

use crate::support;

use rein::agent::dispatch::INTERRUPTED;
use rein::protocol::McpState;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::mcp::{fault_server, manager, q, server, started};
use tokio_util::sync::CancellationToken;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn fault(dir: &Path, extra: &str) -> rein::mcp::ServerConfig {
    let exe = fault_server().display().to_string();
    server(
        "fault",
        &format!(
            "command = {}\nenv = {{ FAULT_DIR = {} }}\n{extra}",
            q(&exe),
            q(&dir.display().to_string())
        ),
    )
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Waits up to 10 s for `cond`.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_crash_mid_call_is_an_error_and_the_next_call_restarts_the_server() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = started(vec![fault(dir.path(), "")], dir.path()).await;
        let c = CancellationToken::new();
        let err = m
            .call("mcp__fault__crash", json!({}), &c, dir.path(), "c1")
            .await
            .unwrap_err();
        assert!(
            err.contains("stopped during the call") && err.contains("restarted"),
            "{err}"
        );
        assert!(
            matches!(m.status()[0].state, McpState::Failed { .. }),
            "{:?}",
            m.status()[0].state
        );
        assert_eq!(lines(&dir.path().join("starts")), 1);
        let echo = m
            .call(
                "mcp__fault__echo",
                json!({"message": "back"}),
                &c,
                dir.path(),
                "c2",
            )
            .await
            .unwrap();
        assert_eq!(echo.text, "echo: back");
        assert_eq!(lines(&dir.path().join("starts")), 2);
        assert_eq!(m.status()[0].state, McpState::Ready);
        m.shutdown().await;
    });
}

#[test]
fn a_hang_is_cancelled_on_timeout_and_on_interrupt_and_the_server_is_told() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = started(vec![fault(dir.path(), "tool_timeout_secs = 1")], dir.path()).await;
        let marker = dir.path().join("hang");
        let c = CancellationToken::new();
        let err = m
            .call("mcp__fault__hang", json!({}), &c, dir.path(), "c1")
            .await
            .unwrap_err();
        assert!(err.contains("did not answer within 1s"), "{err}");
        // The server saw notifications/cancelled: its handler's token fired.
        eventually("the cancellation to reach the server", || {
            lines(&marker) == 1
        })
        .await;

        let esc = CancellationToken::new();
        let trigger = esc.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let err = m
            .call("mcp__fault__hang", json!({}), &esc, dir.path(), "c2")
            .await
            .unwrap_err();
        assert_eq!(err, INTERRUPTED);
        eventually("the second cancellation", || lines(&marker) == 2).await;
        let echo = m
            .call(
                "mcp__fault__echo",
                json!({"message": "ok"}),
                &c,
                dir.path(),
                "c3",
            )
            .await
            .unwrap();
        assert_eq!(echo.text, "echo: ok");
        assert_eq!(
            lines(&dir.path().join("starts")),
            1,
            "the server was not restarted"
        );
        m.shutdown().await;
    });
}

#[test]
fn a_malformed_message_does_not_break_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = started(vec![fault(dir.path(), "")], dir.path()).await;
        let c = CancellationToken::new();
        let r = m
            .call("mcp__fault__malformed", json!({}), &c, dir.path(), "c1")
            .await;
        // Either outcome is a clean result for the model; what matters is the next call.
        match r {
            Ok(out) => assert_eq!(out.text, "answered after garbage"),
            Err(e) => assert!(e.contains("fault"), "{e}"),
        }
        let echo = m
            .call(
                "mcp__fault__echo",
                json!({"message": "after"}),
                &c,
                dir.path(),
                "c2",
            )
            .await
            .unwrap();
        assert_eq!(echo.text, "echo: after");
        m.shutdown().await;
    });
}

#[test]
fn a_huge_result_is_cut_and_saved_whole() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = manager(vec![fault(dir.path(), "")], dir.path());
        m.start_all();
        let c = CancellationToken::new();
        // No wait_started: a call during the start waits for it.
        let out = m
            .call(
                "mcp__fault__huge",
                json!({"chars": 500_000}),
                &c,
                dir.path(),
                "big",
            )
            .await
            .unwrap();
        assert!(out.text.chars().count() < 31_000, "{}", out.text.len());
        let saved = out
            .text
            .split("saved in ")
            .nth(1)
            .and_then(|r| r.split(". Read").next())
            .expect("a saved path");
        let whole = std::fs::read_to_string(saved.trim()).unwrap();
        assert_eq!(whole.len(), 500_000);
        m.shutdown().await;
    });
}

#[test]
fn a_slow_start_past_its_timeout_fails_once_with_a_notice_and_a_quick_one_works() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let exe = fault_server().display().to_string();
        let slow = server(
            "fault",
            &format!("command = {}\nstartup_timeout_secs = 1\nenv = {{ FAULT_SLOW_START_MS = \"3000\" }}", q(&exe)),
        );
        let quick = {
            let mut s = fault(dir.path(), "");
            s.name = "quick".into();
            s
        };
        let (m, notices) = manager(vec![slow, quick], dir.path());
        let started = Instant::now();
        m.start_all();
        assert!(started.elapsed() < Duration::from_millis(200), "start_all blocked");
        m.wait_started(&CancellationToken::new()).await;
        let status = m.status();
        match &status[0].state {
            McpState::Failed { error } => assert!(error.contains("did not start within 1s"), "{error}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(status[1].state, McpState::Ready);
        let n = notices.lock().unwrap().clone();
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].contains("fault failed to start"), "{n:?}");
        let names: Vec<String> = m.offered(false).into_iter().map(|t| t.name).collect();
        assert!(names.iter().all(|t| t.starts_with("mcp__quick__")), "{names:?}");
        m.shutdown().await;
    });
}

#[test]
fn a_server_that_cannot_start_says_why() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let broken = server("broken", "command = \"/nonexistent/mcp-server\"");
        let (m, notices) = started(vec![broken], dir.path()).await;
        let n = notices.lock().unwrap().clone();
        assert!(n.len() == 1 && n[0].contains("cannot start"), "{n:?}");
        let err = m
            .call(
                "mcp__broken__x",
                json!({}),
                &CancellationToken::new(),
                dir.path(),
                "c",
            )
            .await
            .unwrap_err();
        assert!(err.contains("not running"), "{err}");
        assert_eq!(
            notices.lock().unwrap().len(),
            1,
            "the failure is announced once"
        );
    });
}

#[test]
fn tools_list_changed_refreshes_the_offered_tools() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = started(vec![fault(dir.path(), "")], dir.path()).await;
        let has_extra = |m: &rein::mcp::McpManager| {
            m.offered(false)
                .iter()
                .any(|t| t.name == "mcp__fault__extra")
        };
        assert!(!has_extra(&m));
        let c = CancellationToken::new();
        m.call("mcp__fault__add_tool", json!({}), &c, dir.path(), "c1")
            .await
            .unwrap();
        eventually("the new tool to be offered", || has_extra(&m)).await;
        let out = m
            .call("mcp__fault__extra", json!({}), &c, dir.path(), "c2")
            .await
            .unwrap();
        assert_eq!(out.text, "extra works");
        m.shutdown().await;
    });
}
