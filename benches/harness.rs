//! Harness overhead: a 100-tool-call scripted session through the real `rein exec` binary,
//! measured as rein's own CPU time (user + system, all its threads), excluding child processes
//! (target ≤ 150 ms per session).
//!
//! How: rein is spawned from here and, once it has exited, waited for with `waitid(WNOWAIT)`,
//! which leaves it a zombie whose `/proc/<pid>/stat` still holds its final `utime` and `stime`
//! (fields 14 and 15). Those count rein's threads only; what its children (git, tools) used is
//! kept apart in `cutime`/`cstime`. `wait4`'s rusage or `RUSAGE_CHILDREN` would not do: they
//! include the grandchildren rein waited for. Then it is reaped normally. Resolution is one
//! clock tick (10 ms), small against the total.
//!
//! `cpu_per_step` runs sessions of 50, 500 and 2,000 steps the same way and reports rein's CPU
//! time per step: it should stay flat as the history grows (goal: 2,000 steps ≤ 1.2× of 50).
//! The 2,000-step session is measured once (printed) and under criterion only with
//! `REIN_BENCH_LONG=1` (ten samples of it take minutes).
//!
//! The tool is `read_file` (runs inside rein, no child process); the workspace is a git
//! repository, so the per-request `git status` of the changed-files reminder happens as it would
//! in real use (its own CPU time is a child's and not counted; spawning it is).

#[path = "../tests/support/mod.rs"]
mod support;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::rein::World;
use support::{Reply, ScriptedServer};

const CALLS: usize = 100;

/// What one run cost.
struct Cost {
    /// rein's own CPU time.
    own: Duration,
    /// CPU time of the children rein waited for.
    children: Duration,
    /// Wall time.
    wall: Duration,
}

/// Reads utime + stime and cutime + cstime of a (zombie) process, in clock ticks.
fn cpu_ticks(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read stat");
    // The command name (field 2) may contain spaces: count fields after its closing paren.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // rest[0] is field 3 (state): utime = 14, stime = 15, cutime = 16, cstime = 17.
    (f[11] + f[12], f[13] + f[14])
}

fn ticks_to_duration(ticks: u64) -> Duration {
    let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Duration::from_secs_f64(ticks as f64 / per_sec)
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git")
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// One whole session: `steps` read_file calls, each its own model response, then an answer.
fn session(server: &ScriptedServer, steps: usize) -> Cost {
    for i in 0..steps {
        let path = format!("src/file{}.rs", i % 10);
        // Usage grows slowly: no compaction, whatever the length.
        server
            .push(Reply::tool_call("read_file", json!({"path": path})).usage(2_000 + i as u64, 30));
    }
    server.push(Reply::text("All files read.").usage(4_000, 10));
    let world = World::new(server);
    // More requests for one message than `rein exec`'s default cap allows.
    world.user_config(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\nmax_requests = 5000\nauto_compact = false\n",
    );
    for i in 0..10 {
        world.write(
            &format!("src/file{i}.rs"),
            &format!("fn f{i}() -> u32 {{ {i} }}\n").repeat(120),
        );
    }
    git(&world.ws, &["init", "-q"]);
    git(&world.ws, &["add", "."]);
    git(&world.ws, &["commit", "-q", "-m", "init"]);

    let started = Instant::now();
    let mut cmd = world.cmd();
    cmd.args(["exec", "--yes", "read every file"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rein");
    let pid = child.id();
    // Drain stderr meanwhile: a full pipe would stop rein before it exits.
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    // A hung rein must not hang the bench.
    let (exited, watch) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        // Only while rein is unreaped: its pid cannot have been reused yet.
        if watch.recv_timeout(Duration::from_secs(900)).is_err() {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    // Wait for the exit but leave the zombie in place, so its times can still be read.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
    assert_eq!(rc, 0, "waitid failed");
    let wall = started.elapsed();
    let (own, children) = cpu_ticks(pid);
    let _ = exited.send(());
    let _ = watchdog.join();
    let status = child.wait().expect("reap rein");
    let stderr = reader.join().unwrap_or_default();
    assert!(status.success(), "rein failed: {stderr}");
    assert_eq!(server.remaining(), 0, "not every scripted reply was used");
    Cost {
        own: ticks_to_duration(own),
        children: ticks_to_duration(children),
        wall,
    }
}

fn harness(c: &mut Criterion) {
    let server = ScriptedServer::openai();
    let probe = session(&server, CALLS);
    assert_eq!(server.request_count(), CALLS + 1);
    eprintln!(
        "one session: rein {:?} CPU, its children {:?} CPU, {:?} wall",
        probe.own, probe.children, probe.wall
    );
    let mut g = c.benchmark_group("harness");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    // The figure reported is rein's own CPU time per 100-call session, not wall time.
    g.bench_function("exec_100_tool_calls_cpu", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| session(&server, CALLS).own).sum())
    });
    g.finish();
}

/// rein's CPU time per step of a session of `steps` steps.
fn per_step(server: &ScriptedServer, steps: usize) -> Duration {
    session(server, steps).own / steps as u32
}

fn cpu_per_step(c: &mut Criterion) {
    let server = ScriptedServer::openai();
    let mut probes = Vec::new();
    for steps in [50, 500, 2_000] {
        let cost = session(&server, steps);
        eprintln!(
            "{steps} steps: rein {:?} CPU in all, {:.2} ms per step; {:?} wall",
            cost.own,
            cost.own.as_secs_f64() * 1e3 / steps as f64,
            cost.wall
        );
        probes.push((steps, cost.own));
    }
    let (first, last) = (probes[0], probes[2]);
    eprintln!(
        "per step at {} vs {} steps: {:.2}x",
        last.0,
        first.0,
        (last.1.as_secs_f64() / last.0 as f64) / (first.1.as_secs_f64() / first.0 as f64)
    );
    let long = std::env::var_os("REIN_BENCH_LONG").is_some();
    let mut g = c.benchmark_group("cpu_per_step");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    for steps in [50, 500, 2_000] {
        if steps == 2_000 && !long {
            continue;
        }
        // The figure is rein's own CPU time per step, not wall time.
        g.bench_function(format!("steps_{steps}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| per_step(&server, steps)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, harness, cpu_per_step);
criterion_main!(benches);
