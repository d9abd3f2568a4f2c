//! The MCP client against real servers nobody here wrote: `server-everything` (stdio and
//! streamable HTTP) and `server-filesystem` from npm (installed by `.ci/setup-mcp.sh`).

use crate::support;

use rein::agent::dispatch::INTERRUPTED;
use std::time::{Duration, Instant};
use support::mcp::{bin, npm_servers, q, server, started};
use tokio_util::sync::CancellationToken;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn everything_stdio(dir: &std::path::Path, extra: &str) -> rein::mcp::ServerConfig {
    let cmd = bin(dir, "mcp-server-everything");
    server(
        "everything",
        &format!("command = {}\nargs = [\"stdio\"]\n{extra}", q(&cmd)),
    )
}

#[test]
fn everything_over_stdio_lists_tools_and_calls_them() {
    let Some(dir) = npm_servers() else { return };
    let tmp = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, notices) = started(vec![everything_stdio(&dir, "")], tmp.path()).await;
        assert!(
            notices.lock().unwrap().is_empty(),
            "{:?}",
            notices.lock().unwrap()
        );
        let names: Vec<String> = m.offered(false).into_iter().map(|t| t.name).collect();
        for want in [
            "mcp__everything__echo",
            "mcp__everything__get-sum",
            "mcp__everything__get-tiny-image",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        // Subagents get no MCP tools unless the server says so.
        assert!(m.offered(true).is_empty());
        let status = m.status();
        assert_eq!(status[0].state, rein::protocol::McpState::Ready);
        assert!(
            status[0].schema_tokens > 100,
            "{:?}",
            status[0].schema_tokens
        );

        let cancel = CancellationToken::new();
        let call = |name: &'static str, args: serde_json::Value| {
            let (m, cancel, tmp) = (m.clone(), cancel.clone(), tmp.path().to_path_buf());
            async move { m.call(name, args, &cancel, &tmp, "c1").await }
        };
        let echo = call(
            "mcp__everything__echo",
            serde_json::json!({"message": "hi there"}),
        )
        .await
        .unwrap();
        assert_eq!(echo.text, "Echo: hi there");
        assert!(!echo.is_error);
        let sum = call(
            "mcp__everything__get-sum",
            serde_json::json!({"a": 2, "b": 40}),
        )
        .await
        .unwrap();
        assert!(sum.text.contains("42"), "{}", sum.text);

        let image = call("mcp__everything__get-tiny-image", serde_json::json!({}))
            .await
            .unwrap();
        assert!(
            image.text.contains("image/png") && image.text.contains("cannot see it"),
            "{}",
            image.text
        );
        let saved = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "png"))
            .expect("image saved");
        assert!(std::fs::read(saved).unwrap().starts_with(b"\x89PNG"));

        let resource = call(
            "mcp__everything__get-resource-reference",
            serde_json::json!({"resourceType": "Text", "resourceId": 2}),
        )
        .await
        .unwrap();
        assert!(resource.text.contains("[resource "), "{}", resource.text);
        let structured = call(
            "mcp__everything__get-structured-content",
            serde_json::json!({"location": "New York"}),
        )
        .await
        .unwrap();
        assert!(
            structured.text.contains("temperature"),
            "{}",
            structured.text
        );

        let bad = call("mcp__everything__no-such-tool", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(
            bad.contains("has no tool") && bad.contains("mcp__everything__echo"),
            "{bad}"
        );
        m.shutdown().await;
    });
}

#[test]
fn a_long_running_call_is_cancelled_by_interrupt_and_by_its_timeout() {
    let Some(dir) = npm_servers() else { return };
    let tmp = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (m, _) = started(
            vec![everything_stdio(&dir, "tool_timeout_secs = 2")],
            tmp.path(),
        )
        .await;
        let long = serde_json::json!({"duration": 30, "steps": 30});

        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let err = m
            .call(
                "mcp__everything__trigger-long-running-operation",
                long.clone(),
                &cancel,
                tmp.path(),
                "c1",
            )
            .await
            .unwrap_err();
        assert_eq!(err, INTERRUPTED);
        assert!(started.elapsed() < Duration::from_secs(10));

        let fresh = CancellationToken::new();
        let started = Instant::now();
        let err = m
            .call(
                "mcp__everything__trigger-long-running-operation",
                long,
                &fresh,
                tmp.path(),
                "c2",
            )
            .await
            .unwrap_err();
        assert!(err.contains("did not answer within 2s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(15));

        // The connection survives both: the next call works.
        let echo = m
            .call(
                "mcp__everything__echo",
                serde_json::json!({"message": "still here"}),
                &fresh,
                tmp.path(),
                "c3",
            )
            .await
            .unwrap();
        assert_eq!(echo.text, "Echo: still here");
        m.shutdown().await;
    });
}

/// Kills the child when the test ends, however it ends.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn everything_over_streamable_http() {
    let Some(dir) = npm_servers() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _child = Child(
        std::process::Command::new(bin(&dir, "mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let tmp = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let url = format!("http://127.0.0.1:{port}/mcp");
        let (m, notices) = started(
            vec![server("web", &format!("url = {}", q(&url)))],
            tmp.path(),
        )
        .await;
        assert!(
            notices.lock().unwrap().is_empty(),
            "{:?}",
            notices.lock().unwrap()
        );
        let cancel = CancellationToken::new();
        let echo = m
            .call(
                "mcp__web__echo",
                serde_json::json!({"message": "over http"}),
                &cancel,
                tmp.path(),
                "c1",
            )
            .await
            .unwrap();
        assert_eq!(echo.text, "Echo: over http");
        let sum = m
            .call(
                "mcp__web__get-sum",
                serde_json::json!({"a": 1, "b": 2}),
                &cancel,
                tmp.path(),
                "c2",
            )
            .await
            .unwrap();
        assert!(sum.text.contains('3'), "{}", sum.text);
        m.shutdown().await;
    });
}

#[test]
fn filesystem_server_reads_what_is_in_its_directory() {
    let Some(dir) = npm_servers() else { return };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("notes.txt"), "line one\nline two\n").unwrap();
    rt().block_on(async {
        let cmd = bin(&dir, "mcp-server-filesystem");
        let s = server(
            "fs",
            &format!(
                "command = {}\nargs = [{}]\ndisabled_tools = [\"write_file\"]",
                q(&cmd),
                q(&root_path.display().to_string())
            ),
        );
        let (m, notices) = started(vec![s], &root_path).await;
        assert!(
            notices.lock().unwrap().is_empty(),
            "{:?}",
            notices.lock().unwrap()
        );
        let names: Vec<String> = m.offered(false).into_iter().map(|t| t.name).collect();
        assert!(
            names.contains(&"mcp__fs__read_text_file".to_string()),
            "{names:?}"
        );
        assert!(
            !names.contains(&"mcp__fs__write_file".to_string()),
            "disabled_tools ignored: {names:?}"
        );
        let cancel = CancellationToken::new();
        let path = root_path.join("notes.txt").display().to_string();
        let read = m
            .call(
                "mcp__fs__read_text_file",
                serde_json::json!({"path": path}),
                &cancel,
                root.path(),
                "c1",
            )
            .await
            .unwrap();
        assert!(read.text.contains("line one\nline two"), "{}", read.text);
        let outside = m
            .call(
                "mcp__fs__read_text_file",
                serde_json::json!({"path": "/etc/hostname"}),
                &cancel,
                root.path(),
                "c2",
            )
            .await
            .unwrap();
        assert!(outside.is_error, "{}", outside.text);
        let disabled = m
            .call(
                "mcp__fs__write_file",
                serde_json::json!({"path": path, "content": "x"}),
                &cancel,
                root.path(),
                "c3",
            )
            .await
            .unwrap_err();
        assert!(disabled.contains("has no tool"), "{disabled}");
        assert_eq!(
            std::fs::read_to_string(root_path.join("notes.txt")).unwrap(),
            "line one\nline two\n"
        );
        m.shutdown().await;
    });
}
