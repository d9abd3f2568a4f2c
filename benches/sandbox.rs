//! Sandbox setup cost per bash call: spawning `bash -c true` with and without the sandbox
//! (target, issue #19: at most 1 ms more with it; with namespaces that includes the private
//! `.git` view, the PID namespace and its reaper), the preparation done in rein before the fork,
//! and the cost per model request of the changed-files watch (a walk of the repository, instead
//! of the unconfined `git status` rein used to run).

use criterion::{Criterion, criterion_group, criterion_main};
use rein::config::SandboxMode;
use rein::sandbox::{ChildIo, Sandbox, Stderr, zygote};
use std::process::Stdio;

fn spawn_true(rt: &tokio::runtime::Runtime, sandbox: Option<&Sandbox>, dir: &std::path::Path) {
    rt.block_on(async {
        let status = match sandbox {
            Some(sb) => {
                let mut cmd = std::process::Command::new(sb.program("bash"));
                cmd.args(["-c", "true"]).current_dir(dir);
                let io = ChildIo {
                    stdin: false,
                    stderr: Stderr::Null,
                };
                let mut child = sb.spawn(&mut cmd, io).expect("spawn");
                child.wait().await.expect("wait").status
            }
            None => tokio::process::Command::new("bash")
                .args(["-c", "true"])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .await
                .expect("spawn"),
        };
        assert!(status.success());
    });
}

/// Touched memory that makes this process as large as rein in a session (about 21 MB resident
/// in `rein exec`): forking a process copies its page tables, so a fork of this small bench
/// would cost less than a fork of rein.
const REIN_SIZED: usize = 20 << 20;

fn bench(c: &mut Criterion) {
    let ballast: Vec<u8> = (0..REIN_SIZED).map(|i| i as u8).collect();
    std::hint::black_box(&ballast);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    // A repository, so the protected-path mounts are part of the measurement.
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .expect("git");
    assert!(ok.success());
    let sb = Sandbox::new(
        SandboxMode::WorkspaceWrite,
        false,
        ws.clone(),
        dir.path().join("tmp"),
    );
    eprintln!("sandbox status: {:?}", sb.status());

    let fallback = Sandbox::without_namespaces(
        SandboxMode::WorkspaceWrite,
        false,
        ws.clone(),
        dir.path().join("tmp"),
    );

    // `sandbox = "off"` still starts commands through rein's path (zygote, supervisor,
    // process group): what that path costs over a plain spawn, without confinement.
    let off = Sandbox::new(SandboxMode::Off, false, ws.clone(), dir.path().join("tmp"));

    let mut group = c.benchmark_group("bash -c true");
    group.bench_function("unsandboxed", |b| b.iter(|| spawn_true(&rt, None, &ws)));
    zygote::enable(env!("CARGO_BIN_EXE_rein").into());
    group.bench_function("sandbox off (zygote and supervisor)", |b| {
        b.iter(|| spawn_true(&rt, Some(&off), &ws))
    });
    // Forked from this process (as before the zygote), then through the zygote (the binary's
    // own, as rein runs it).
    for zygote in [false, true] {
        let how = if zygote { "zygote" } else { "forked" };
        match zygote {
            true => zygote::enable(env!("CARGO_BIN_EXE_rein").into()),
            false => zygote::disable(),
        }
        group.bench_function(format!("sandboxed, {how}"), |b| {
            b.iter(|| spawn_true(&rt, Some(&sb), &ws))
        });
        group.bench_function(
            format!("sandboxed, fallback without namespaces, {how}"),
            |b| b.iter(|| spawn_true(&rt, Some(&fallback), &ws)),
        );
    }
    zygote::disable();
    group.finish();

    // What rein does before the fork and after the exit, without the process: the rules, the
    // `.git` view (reused from the last command, as in a session) and the checks after it;
    // in the fallback, the tripwire's snapshot and check instead of the view.
    for (name, sandbox) in [
        ("prepare and finish (in rein)", &sb),
        ("prepare and finish (in rein), fallback", &fallback),
    ] {
        c.bench_function(name, |b| {
            use std::os::unix::process::ExitStatusExt;
            b.iter(|| {
                let mut cmd = std::process::Command::new("bash");
                let supervision = sandbox.prepare(&mut cmd).expect("prepare");
                supervision.finish(std::process::ExitStatus::from_raw(0))
            })
        });
    }
}

/// What rein does before and after each command in a workspace holding 50 repositories of
/// its own (a monorepo's packages): each one's hooks paths and included configuration files
/// are looked up for every command.
fn nested_repositories(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    let init = |d: &std::path::Path| {
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(d)
            .status()
            .expect("git");
        assert!(ok.success());
    };
    init(&ws);
    for i in 0..50 {
        let package = ws.join(format!("pkg{i}"));
        std::fs::create_dir(&package).expect("mkdir");
        init(&package);
    }
    let sb = Sandbox::new(
        SandboxMode::WorkspaceWrite,
        false,
        ws.clone(),
        dir.path().join("tmp"),
    );
    c.bench_function(
        "prepare and finish (in rein), 50 nested repositories",
        |b| {
            use std::os::unix::process::ExitStatusExt;
            b.iter(|| {
                let mut cmd = std::process::Command::new("bash");
                let supervision = sb.prepare(&mut cmd).expect("prepare");
                supervision.finish(std::process::ExitStatus::from_raw(0))
            })
        },
    );
}

/// A repository of `n` files in 20 directories, committed.
fn repository(root: &std::path::Path, n: usize) {
    for i in 0..n {
        let d = root.join(format!("dir{}", i % 20));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(format!("file{i}.rs")), format!("// {i}\n")).expect("write");
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@e",
            "commit",
            "-qm",
            "x",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .status()
            .expect("git");
        assert!(ok.success());
    }
}

fn file_watch(c: &mut Criterion) {
    let mut group = c.benchmark_group("changed-files watch per request");
    for n in [200, 2_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        repository(dir.path(), n);
        let mut watch = rein::agent::context::FileWatch::default();
        watch.rebase(dir.path());
        group.bench_function(format!("walk, {n} files"), |b| {
            b.iter(|| watch.changed(dir.path()))
        });
        // What it replaced (for comparison only: rein no longer runs git).
        group.bench_function(format!("git status (before), {n} files"), |b| {
            b.iter(|| {
                std::process::Command::new("git")
                    .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
                    .current_dir(dir.path())
                    .output()
                    .expect("git")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, nested_repositories, file_watch);
criterion_main!(benches);
