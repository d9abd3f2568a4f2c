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
//! `round_trips` puts rein beside the floor: 50 bash round trips (`bash -c true` each) through
//! `rein exec` with the sandbox on and off, and through the least client that does the same
//! work (streams each answer from the same server, runs `bash -c true`, asks again), interleaved
//! and printed as medians with rein's ratio to the floor (goal: ≤ 1.25×, sandbox included).
//! Two more rows run rein with no call at all (start, one answer, exit): what a run costs
//! once, so that the cost per step can be told from it.
//!
//! `cpu_per_step` runs sessions of 50, 500 and 2,000 steps the same way and reports rein's CPU
//! time per step: it should stay flat as the history grows (goal: 2,000 steps ≤ 1.2× of 50).
//! The 2,000-step session is measured once (printed) and under criterion only with
//! `REIN_BENCH_LONG=1` (ten samples of it take minutes).
//!
//! `wire_body` isolates the model client's share of a step: the request body for a history of
//! 50, 500 and 2,000 such steps (older results micro-compacted, the last three whole), built
//! after one new step, as `Client::body_text` builds it for every request (it should not grow
//! with the history either).
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
    let cost = exec(&world, "read every file");
    assert_eq!(server.remaining(), 0, "not every scripted reply was used");
    cost
}

/// Runs `rein exec --yes prompt` in `world` and measures it.
fn exec(world: &World, prompt: &str) -> Cost {
    exec_with(world, prompt, &[])
}

/// [`exec`] with more environment variables.
fn exec_with(world: &World, prompt: &str, env: &[(&str, &str)]) -> Cost {
    let started = Instant::now();
    let mut cmd = world.cmd();
    cmd.envs(env.iter().copied());
    cmd.args(["exec", "--yes", prompt])
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
    Cost {
        own: ticks_to_duration(own),
        children: ticks_to_duration(children),
        wall,
    }
}

fn harness(c: &mut Criterion) {
    let server = ScriptedServer::openai();
    server.forget_bodies();
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
    server.forget_bodies();
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

/// Round trips of the side-by-side comparison (issue "Performance, round 2").
const ROUND_TRIPS: usize = 50;

/// The model's reply for each round trip: one `bash -c 'true N'` (N differs, or loop
/// detection would stop the run).
fn queue_round_trips(server: &ScriptedServer) {
    queue_commands(server, ROUND_TRIPS, |i| format!("true {i}"));
}

/// `calls` bash calls running `command(i)`, then an answer.
fn queue_commands(server: &ScriptedServer, calls: usize, command: impl Fn(usize) -> String) {
    for i in 0..calls {
        server.push(Reply::tool_call("bash", json!({"command": command(i)})));
    }
    server.push(Reply::text("done"));
}

/// How the round trips' commands run.
#[derive(Clone, Copy, PartialEq)]
enum Sandboxing {
    Off,
    /// Sandboxed, each command forked from rein (`REIN_SANDBOX_ZYGOTE=0`, as before the zygote).
    Forked,
    /// Sandboxed, started by the zygote (the default).
    Zygote,
}

/// rein doing `ROUND_TRIPS` bash round trips, with the sandbox or without.
fn rein_round_trips(server: &ScriptedServer, sandboxing: Sandboxing) -> Cost {
    queue_round_trips(server);
    rein_in(World::new(server), server, sandboxing)
}

/// Runs the queued round trips in `world` (a git repository from here on).
fn rein_in(world: World, server: &ScriptedServer, sandboxing: Sandboxing) -> Cost {
    let mode = match sandboxing {
        Sandboxing::Off => "off",
        _ => "workspace-write",
    };
    world.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\nauto_compact = false\n\
         [sandbox]\nmode = \"{mode}\"\n"
    ));
    git(&world.ws, &["init", "-q"]);
    let env: &[(&str, &str)] = match sandboxing {
        Sandboxing::Forked => &[(rein::sandbox::zygote::SWITCH, "0")],
        _ => &[],
    };
    let cost = exec_with(&world, "run true", env);
    assert_eq!(server.remaining(), 0, "not every scripted reply was used");
    cost
}

/// A committed repository of `files` small files, ten to a directory, settled (their mtimes
/// in the past, as in a real checkout).
fn repository_of(server: &ScriptedServer, files: usize) -> World {
    let world = World::new(server);
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    for i in 0..files {
        let rel = format!("src/d{}/f{}.rs", i / 10, i % 10);
        world.write(&rel, &"fn f() {}\n".repeat(20));
        let f = std::fs::File::options()
            .write(true)
            .open(world.ws.join(&rel))
            .expect("open");
        f.set_modified(old).expect("set mtime");
    }
    if files > 0 {
        git(&world.ws, &["init", "-q"]);
        git(&world.ws, &["add", "."]);
        git(&world.ws, &["commit", "-q", "-m", "init"]);
    }
    world
}

/// 50 and 150 round trips in repositories of 0, 1,000 and 10,000 files, each command `true`
/// or a write of one file: what a call costs as the workspace grows (it walked every file
/// three times per call before the checkpoints' and the changed-files look's watches, and
/// went through every known file twice per call before their directory indexes). The cost
/// per call is the difference of the two lengths over 100 calls, so that what a run costs
/// once (start, the first scan beside the first requests, exit) is not in it.
fn round_trips_by_size(_c: &mut Criterion) {
    let server = ScriptedServer::openai();
    server.forget_bodies();
    for files in [0, 1_000, 10_000] {
        for (what, write) in [("true", false), ("a write", true)] {
            for (mode, sandboxing) in [("off", Sandboxing::Off), ("on", Sandboxing::Zygote)] {
                let wall = |calls: usize| {
                    let mut walls: Vec<Duration> = (0..3)
                        .map(|_| {
                            queue_commands(&server, calls, |i| match write {
                                true => format!("echo {i} > out.rs"),
                                false => format!("true {i}"),
                            });
                            rein_in(repository_of(&server, files), &server, sandboxing).wall
                        })
                        .collect();
                    walls.sort();
                    walls[1]
                };
                let (short, long) = (wall(50), wall(150));
                eprintln!(
                    "round trips, {files} files, {what}, sandbox {mode}: 50 in {:.3} s, 150 in \
                     {:.3} s wall (medians of 3): {:.2} ms per call",
                    short.as_secs_f64(),
                    long.as_secs_f64(),
                    long.saturating_sub(short).as_secs_f64() * 1000.0 / 100.0
                );
            }
        }
    }
}

/// The floor: the least a client can do for the same round trips (stream each answer from
/// the same server over one connection, run `bash -c true`, send the next request), with no
/// sandbox, no session file and no checkpoints.
fn floor_round_trips(rt: &tokio::runtime::Runtime, server: &ScriptedServer) -> Cost {
    queue_round_trips(server);
    let url = format!("{}/chat/completions", server.base_url());
    // reqwest is built without a default TLS provider (rein installs ring, as here).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let before = own_cpu();
    let started = Instant::now();
    rt.block_on(async {
        let mut messages = vec![json!({"role": "user", "content": "run true"})];
        for i in 0..=ROUND_TRIPS {
            let body = json!({"model": "m", "stream": true, "messages": messages});
            let mut resp = client.post(&url).json(&body).send().await.expect("post");
            let mut text = Vec::new();
            while let Some(chunk) = resp.chunk().await.expect("stream") {
                text.extend_from_slice(&chunk);
            }
            let text = String::from_utf8_lossy(&text);
            if !text.contains("tool_calls") {
                break;
            }
            let status = tokio::process::Command::new("bash")
                .args(["-c", &format!("true {i}")])
                .current_dir(dir.path())
                .status()
                .await
                .expect("bash");
            assert!(status.success());
            messages.push(json!({"role": "assistant", "content": text.len().to_string()}));
        }
    });
    assert_eq!(server.remaining(), 0, "not every scripted reply was used");
    Cost {
        wall: started.elapsed(),
        own: own_cpu().saturating_sub(before),
        children: Duration::ZERO,
    }
}

/// This process's CPU time so far (the floor client runs in the bench itself; the scripted
/// server's thread is counted too, as it is not part of rein's figure: kept small by design).
fn own_cpu() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn round_trips(c: &mut Criterion) {
    let server = ScriptedServer::openai();
    server.forget_bodies();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Side by side, interleaved, so that load on the machine hits all three alike.
    let mut rows: [(&str, Vec<Cost>); 6] = [
        ("floor", vec![]),
        ("rein, sandbox off", vec![]),
        ("rein, sandbox on, forked from rein", vec![]),
        ("rein, sandbox on (zygote)", vec![]),
        (
            "rein, no call (start, one answer, exit), sandbox off",
            vec![],
        ),
        (
            "rein, no call (start, one answer, exit), sandbox on",
            vec![],
        ),
    ];
    for _ in 0..5 {
        rows[0].1.push(floor_round_trips(&rt, &server));
        rows[1].1.push(rein_round_trips(&server, Sandboxing::Off));
        rows[2]
            .1
            .push(rein_round_trips(&server, Sandboxing::Forked));
        rows[3]
            .1
            .push(rein_round_trips(&server, Sandboxing::Zygote));
        // What rein costs once per run, so that the per-step cost can be told from it.
        for (row, sandboxing) in [(4, Sandboxing::Off), (5, Sandboxing::Zygote)] {
            server.push(Reply::text("done"));
            rows[row]
                .1
                .push(rein_in(World::new(&server), &server, sandboxing));
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let floor_wall = median(&mut rows[0].1.iter().map(|c| c.wall).collect());
    for (name, costs) in &rows {
        let wall = median(&mut costs.iter().map(|c| c.wall).collect());
        let own = median(&mut costs.iter().map(|c| c.own).collect());
        eprintln!(
            "{ROUND_TRIPS} round trips, {name}: {:.3} s wall ({:.2}x the floor), {:.3} s own CPU (median of 5)",
            wall.as_secs_f64(),
            wall.as_secs_f64() / floor_wall.as_secs_f64(),
            own.as_secs_f64()
        );
    }
    let mut g = c.benchmark_group("round_trips");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    g.bench_function("floor_50", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| floor_round_trips(&rt, &server).wall)
                .sum()
        })
    });
    for (name, sandbox) in [
        ("rein_50_sandbox_off", Sandboxing::Off),
        ("rein_50_sandbox_on", Sandboxing::Zygote),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| rein_round_trips(&server, sandbox).wall)
                    .sum()
            })
        });
    }
    g.finish();
}

/// A history like `session`'s after `steps` read_file steps: each a call and its result, the
/// results before the last three micro-compacted.
fn wire_history(steps: usize) -> Vec<rein::llm::Message> {
    use rein::llm::{AssistantPart, Message, ToolCall};
    let whole = "     1\tfn f() -> u32 { 1 }\n".repeat(120);
    let mut messages = vec![Message::User {
        content: "read every file".into(),
    }];
    for i in 0..steps {
        messages.push(Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: format!("call_{i}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"src/file{}.rs\"}}", i % 10),
            })],
        });
        messages.push(Message::ToolResult {
            call_id: format!("call_{i}"),
            name: "read_file".into(),
            content: if i + 3 >= steps {
                whole.clone()
            } else {
                "[Previous: used read_file]".into()
            },
            is_error: false,
        });
    }
    messages
}

/// The client's CPU time for one request body after `steps` steps: the body of the history
/// plus one new step, the earlier requests' bodies already built (as in a session).
fn wire_body_time(client: &rein::llm::Client, steps: usize, rounds: u32) -> Duration {
    let mut req = rein::llm::Request {
        model: "m".into(),
        system: "be brief".into(),
        messages: wire_history(steps),
        tools: Vec::new(),
        reminder: Some("<reminder>".into()),
        max_tokens: 1000,
        force_tool: false,
        mark: None,
    };
    // Requests of one conversation, as the loop marks them: each shares the history with the
    // one before (the new step differs).
    static CONVERSATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let conversation = CONVERSATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mark = |seq: u64| rein::llm::HistoryMark {
        conversation,
        seq,
        unchanged: steps,
    };
    req.mark = Some(mark(1));
    std::hint::black_box(client.body_text(&req));
    let mut spent = Duration::ZERO;
    for round in 0..rounds {
        req.messages.push(rein::llm::Message::User {
            content: format!("step {round}"),
        });
        req.mark = Some(mark(u64::from(round) + 2));
        let started = Instant::now();
        std::hint::black_box(client.body_text(&req));
        spent += started.elapsed();
        req.messages.pop();
    }
    spent / rounds
}

fn wire_body(c: &mut Criterion) {
    let client = rein::llm::Client::new(rein::llm::ClientOptions::new(
        rein::llm::ProviderKind::OpenAi,
        "http://127.0.0.1:9/v1",
        None,
    ))
    .expect("client");
    for steps in [50, 500, 2_000] {
        let t = wire_body_time(&client, steps, 200);
        eprintln!(
            "wire body after {steps} steps: {:.1} µs per request",
            t.as_secs_f64() * 1e6
        );
    }
    let mut g = c.benchmark_group("wire_body");
    for steps in [50, 500, 2_000] {
        g.bench_function(format!("steps_{steps}"), |b| {
            b.iter_custom(|iters| wire_body_time(&client, steps, iters as u32) * iters as u32)
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    harness,
    cpu_per_step,
    wire_body,
    round_trips,
    round_trips_by_size
);
criterion_main!(benches);
