//! MCP costs (issue 14):
//! - start-up to the first full frame of the app with 3 configured MCP servers vs none (the
//!   servers start after the first frame, so the two should match); one server is slow to start;
//! - per-call overhead of an MCP echo through rein's client (rmcp, result conversion) vs a bare
//!   JSON-RPC line exchange with the same server process.
//!
//! `cargo build --release --example mcp_fault_server && cargo bench --bench mcp`. The real
//! `server-everything` is used as well when `.ci/setup-mcp.sh` installed it. Prints the figures.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::ScriptedServer;
use support::mcp::{bin, fault_server, npm_servers, q, server};
use support::pty::{Pty, keys};
use support::rein::World;
use tokio_util::sync::CancellationToken;

const RUNS: usize = 20;
const CALLS: usize = 500;
const WAIT: Duration = Duration::from_secs(20);

fn full_frame(s: &str) -> bool {
    s.contains("scripted-model · openai")
        && s.contains("Ask rein anything")
        && s.contains("enter send")
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[(v.len() - 1) * 9 / 10])
}

fn startup(server: &ScriptedServer, config: &str) -> (f64, f64, f64) {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let world = World::new(server);
        world.user_config(config);
        let start = Instant::now();
        let mut t = Pty::spawn(world.pty_command(&[]), 100, 30);
        if let Err(screen) = t.wait_for(full_frame, WAIT) {
            eprintln!("no full frame; screen:\n{screen}");
            std::process::exit(1);
        }
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        t.send_raw(keys::CTRL_D);
        let _ = t.wait_exit(WAIT);
    }
    median(times)
}

/// Bare JSON-RPC over the child's stdio: initialize once, then `CALLS` echo calls, one line
/// each way. Returns microseconds per call.
fn direct_calls(program: &str, args: &[&str], tool: &str) -> f64 {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut send = |msg: serde_json::Value, wait: bool| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        if wait {
            loop {
                line.clear();
                stdout.read_line(&mut line).unwrap();
                if line.contains("\"result\"") || line.contains("\"error\"") {
                    break;
                }
            }
        }
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}),
        true,
    );
    send(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    let start = Instant::now();
    for i in 1..=CALLS {
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": {"message": "hi"}}}),
            true,
        );
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
    let _ = child.kill();
    let _ = child.wait();
    per
}

/// The same calls through rein's MCP manager. Microseconds per call.
fn rein_calls(config: rein::mcp::ServerConfig, name: &str) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let (m, _) = support::mcp::manager(vec![config], tmp.path());
        m.start_all();
        let cancel = CancellationToken::new();
        m.wait_started(&cancel).await;
        let start = Instant::now();
        for i in 0..CALLS {
            m.call(
                name,
                serde_json::json!({"message": "hi"}),
                &cancel,
                tmp.path(),
                &format!("c{i}"),
            )
            .await
            .expect("echo works");
        }
        let per = start.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
        m.shutdown().await;
        per
    })
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !"mcp".contains(f.as_str())) {
        return;
    }
    let fault = fault_server().display().to_string();
    let npm = npm_servers();
    let scripted = ScriptedServer::openai();

    let base = "retry_backoff_ms = 20\n";
    let mut three = format!(
        "{base}[mcp_servers.a]\ncommand = {f}\n[mcp_servers.b]\ncommand = {f}\nenv = {{ FAULT_SLOW_START_MS = \"2000\" }}\n",
        f = q(&fault)
    );
    match &npm {
        Some(dir) => three.push_str(&format!(
            "[mcp_servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
            q(&bin(dir, "mcp-server-everything"))
        )),
        None => three.push_str(&format!("[mcp_servers.c]\ncommand = {}\n", q(&fault))),
    }
    let (m0, lo0, p0) = startup(&scripted, base);
    let (m3, lo3, p3) = startup(&scripted, &three);
    println!(
        "first full frame, no MCP servers ({RUNS} runs): median {m0:.1} ms, min {lo0:.1}, p90 {p0:.1}"
    );
    println!(
        "first full frame, 3 MCP servers ({RUNS} runs): median {m3:.1} ms, min {lo3:.1}, p90 {p3:.1}"
    );

    let direct = direct_calls(&fault, &[], "echo");
    let through = rein_calls(
        server("fault", &format!("command = {}", q(&fault))),
        "mcp__fault__echo",
    );
    println!(
        "echo, Rust fault server ({CALLS} calls): direct JSON-RPC {direct:.0} µs/call, through rein {through:.0} µs/call (+{:.0} µs)",
        through - direct
    );
    if let Some(dir) = &npm {
        let exe = bin(dir, "mcp-server-everything");
        let direct = direct_calls(&exe, &["stdio"], "echo");
        let cfg = server(
            "everything",
            &format!("command = {}\nargs = [\"stdio\"]", q(&exe)),
        );
        let through = rein_calls(cfg, "mcp__everything__echo");
        println!(
            "echo, server-everything ({CALLS} calls): direct JSON-RPC {direct:.0} µs/call, through rein {through:.0} µs/call (+{:.0} µs)",
            through - direct
        );
    }
}
