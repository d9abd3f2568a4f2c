//! Sandbox setup cost per bash call: spawning `bash -c true` with and without the sandbox
//! (target: at most 2 ms more with it), and the preparation done in rein before the fork.

use criterion::{Criterion, criterion_group, criterion_main};
use rein::config::SandboxMode;
use rein::sandbox::Sandbox;
use std::process::Stdio;

fn spawn_true(rt: &tokio::runtime::Runtime, sandbox: Option<&Sandbox>, dir: &std::path::Path) {
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.args(["-c", "true"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let status = match sandbox {
            Some(sb) => {
                let mut child = sb.spawn(&mut cmd).expect("spawn");
                child.wait().await.expect("wait").status
            }
            None => cmd.status().await.expect("spawn"),
        };
        assert!(status.success());
    });
}

fn bench(c: &mut Criterion) {
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

    let mut group = c.benchmark_group("bash -c true");
    group.bench_function("unsandboxed", |b| b.iter(|| spawn_true(&rt, None, &ws)));
    group.bench_function("sandboxed", |b| b.iter(|| spawn_true(&rt, Some(&sb), &ws)));
    group.finish();

    c.bench_function("prepare (in rein)", |b| {
        b.iter(|| {
            let mut cmd = std::process::Command::new("bash");
            let supervision = sb.prepare(&mut cmd).expect("prepare");
            (cmd, supervision)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
