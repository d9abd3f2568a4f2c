//! Start-up and idle cost of the full-screen app (issue 3), measured on the real binary in a
//! pseudo-terminal (100×30) pointed at the scripted model server (no request is made before
//! the first prompt):
//! - start-up to the first full frame (status line with the model, composer, key hints):
//!   target ≤ 40 ms;
//! - resident memory once idle: target ≤ 30 MB;
//! - CPU while idle: target 0 (clock ticks over a 3 s window).
//!
//! `cargo bench --bench startup` (cargo builds `rein` in release for benches). Prints the
//! figures; exits non-zero when a target is missed.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};
use support::ScriptedServer;
use support::pty::{self, Pty, keys};
use support::rein::World;

const RUNS: usize = 30;
const WAIT: Duration = Duration::from_secs(20);
const TARGET_STARTUP_MS: f64 = 40.0;
const TARGET_RSS_MB: f64 = 30.0;

/// The first full frame: the session is configured (model in the status line) and the
/// composer and key hints are drawn.
fn full_frame(s: &str) -> bool {
    s.contains("scripted-model · openai")
        && s.contains("Ask rein anything")
        && s.contains("enter send")
}

fn quit(mut t: Pty) {
    t.send_raw(keys::CTRL_D);
    if t.wait_exit(WAIT) != Some(0) {
        eprintln!("rein did not quit cleanly on Ctrl+D");
        std::process::exit(1);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that does not name us skips the run.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !"startup".contains(f.as_str())) {
        return;
    }
    let server = ScriptedServer::openai();
    println!("rein: {}", env!("CARGO_BIN_EXE_rein"));

    // Warm the page cache once so the figures describe rein, not the disk.
    let world = World::new(&server);
    let t = world.spawn_tui(100, 30);
    if let Err(screen) = t.wait_for(full_frame, WAIT) {
        eprintln!("no full frame; screen:\n{screen}");
        std::process::exit(1);
    }
    quit(t);

    // What the harness itself costs: a shell that prints one word in the same pty.
    let mut baseline = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let mut cmd = portable_pty::CommandBuilder::new("sh");
        cmd.args(["-c", "printf ready; sleep 1"]);
        let start = Instant::now();
        let t = Pty::spawn(cmd, 100, 30);
        if t.wait_for(|s| s.contains("ready"), WAIT).is_err() {
            eprintln!("the baseline shell printed nothing");
            std::process::exit(1);
        }
        baseline.push(start.elapsed().as_secs_f64() * 1000.0);
    }

    let mut firsts = Vec::with_capacity(RUNS);
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let world = World::new(&server);
        let cmd = world.pty_command(&[]);
        let start = Instant::now();
        let t = Pty::spawn(cmd, 100, 30);
        // Anything drawn at all (the status line may still say "starting…").
        let _ = t.wait_for(|s| !s.trim().is_empty(), WAIT);
        firsts.push(start.elapsed().as_secs_f64() * 1000.0);
        if let Err(screen) = t.wait_for(full_frame, WAIT) {
            eprintln!("no full frame; screen:\n{screen}");
            std::process::exit(1);
        }
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        quit(t);
    }
    // The same with three MCP servers that never answer: the first full frame must not wait
    // for any of them (it would never come if it did).
    let mut with_mcp = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let world = World::new(&server);
        world.user_config(
            &(1..=3)
                .map(|i| format!("[mcp_servers.silent{i}]\ncommand = \"sleep\"\nargs = [\"30\"]\n"))
                .collect::<String>(),
        );
        let cmd = world.pty_command(&[]);
        let start = Instant::now();
        let t = Pty::spawn(cmd, 100, 30);
        if let Err(screen) = t.wait_for(full_frame, WAIT) {
            eprintln!("no full frame with three silent MCP servers; screen:\n{screen}");
            std::process::exit(1);
        }
        with_mcp.push(start.elapsed().as_secs_f64() * 1000.0);
        quit(t);
    }
    let report = |what: &str, v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        println!(
            "{what} ({RUNS} runs): median {:.1} ms, min {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            percentile(v, 0.5),
            v[0],
            percentile(v, 0.9),
            v[v.len() - 1]
        );
        percentile(v, 0.5)
    };
    report(
        "baseline: `sh -c 'printf ready'` in the same pty",
        &mut baseline,
    );
    report("startup to first drawn frame", &mut firsts);
    let median = report("startup to first full frame", &mut times);
    let median_mcp = report(
        "startup to first full frame, 3 MCP servers that never answer",
        &mut with_mcp,
    );
    println!("(target for the full frame: median ≤ {TARGET_STARTUP_MS} ms)");

    // Idle: after the first frame rein warms its syntax sets in the background; let that
    // finish, then measure.
    let world = World::new(&server);
    let t = world.spawn_tui(100, 30);
    if let Err(screen) = t.wait_for(full_frame, WAIT) {
        eprintln!("no full frame; screen:\n{screen}");
        std::process::exit(1);
    }
    std::thread::sleep(Duration::from_secs(2));
    let pid = t.pid();
    let rss_kib = pty::rss_kib(pid).unwrap_or(0);
    let rss_mb = rss_kib as f64 / 1024.0;
    let before = pty::cpu_ticks(pid).unwrap_or(0);
    std::thread::sleep(Duration::from_secs(3));
    let after = pty::cpu_ticks(pid).unwrap_or(0);
    let rss_after_mb = pty::rss_kib(pid).unwrap_or(0) as f64 / 1024.0;
    let idle_ticks = after.saturating_sub(before);
    quit(t);
    println!(
        "idle RSS: {rss_mb:.1} MB after 2 s, {rss_after_mb:.1} MB after 5 s \
         (target ≤ {TARGET_RSS_MB} MB)"
    );
    println!("idle CPU: {idle_ticks} clock ticks over 3 s (target 0)");

    let mut missed = Vec::new();
    if median_mcp > TARGET_STARTUP_MS {
        missed.push("startup with MCP servers");
    }
    if median > TARGET_STARTUP_MS {
        missed.push("startup");
    }
    if rss_mb.max(rss_after_mb) > TARGET_RSS_MB {
        missed.push("idle RSS");
    }
    if idle_ticks > 0 {
        missed.push("idle CPU");
    }
    if !missed.is_empty() {
        eprintln!("missed targets: {}", missed.join(", "));
        std::process::exit(1);
    }
}
