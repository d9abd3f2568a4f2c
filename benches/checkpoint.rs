//! Checkpoint scan cost on a 10,000-file workspace (100 directories of 100 files, 2 KB each,
//! plus 1,000 ignored build files): the scan pair around every shell command when nothing
//! changed (stat only) and when 10 files changed (stat, then read and hash those). And the
//! first scan of a session, which reads, hashes and keeps every file once, on 10,000 and
//! 100,000 files (`checkpoint_first_scan`; the 100k workspace is built only when that bench
//! runs: `cargo bench --bench checkpoint -- first_scan`).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use rein::checkpoint::{Caps, Checkpoints, Scope};
use std::hint::black_box;
use std::path::Path;

const DIRS: usize = 100;
const FILES: usize = 100;

fn workspace(root: &Path) {
    workspace_of(root, DIRS);
}

/// `dirs` directories of 100 files of 2 KB, a .gitignore and 1,000 ignored files.
fn workspace_of(root: &Path, dirs: usize) {
    let line = "let value = compute(input, 42); // a line of source code\n";
    let body = line.repeat(2048 / line.len());
    for d in 0..dirs {
        let dir = root.join(format!("src/mod{d:04}"));
        std::fs::create_dir_all(&dir).expect("dir");
        for f in 0..FILES {
            std::fs::write(
                dir.join(format!("file{f:03}.rs")),
                format!("// {d} {f}\n{body}"),
            )
            .expect("file");
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("gitignore");
    let target = root.join("target/debug");
    std::fs::create_dir_all(&target).expect("target");
    for i in 0..1000 {
        std::fs::write(target.join(format!("obj{i}.o")), "ignored").expect("obj");
    }
}

fn engine(ws: &Path, data: &Path) -> Checkpoints {
    let ck = Checkpoints::new(ws, vec![], Caps::default());
    ck.switch(Some(data.to_path_buf()), Default::default());
    ck.user_message("bench");
    ck
}

fn scans(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    workspace(&ws);
    let ck = engine(&ws, &dir.path().join("data"));
    // The first scan (the session's baseline) happens before the first command.
    ck.before(Scope::Workspace);
    ck.after(Scope::Workspace);

    let mut g = c.benchmark_group("checkpoint_10k_files");
    g.sample_size(20);
    g.bench_function("scan_pair_nothing_changed", |b| {
        b.iter(|| {
            ck.before(Scope::Workspace);
            black_box(ck.after(Scope::Workspace))
        })
    });
    let mut round = 0u64;
    g.bench_function("scan_pair_10_files_changed", |b| {
        b.iter_batched(
            || {
                round += 1;
                for i in 0..10 {
                    let p = ws.join(format!("src/mod{i:04}/file000.rs"));
                    std::fs::write(p, format!("changed {round}\n")).expect("write");
                }
            },
            |()| {
                ck.before(Scope::Workspace);
                black_box(ck.after(Scope::Workspace))
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("scan_one_path", |b| {
        b.iter(|| {
            ck.before(Scope::Path("src/mod0050/file050.rs"));
            black_box(ck.after(Scope::Path("src/mod0050/file050.rs")))
        })
    });
    g.finish();
}

/// The first scan of a session on `dirs` × 100 files, from an empty store each time.
fn first_scan(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    dirs: usize,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    let fresh = dir.path().join("fresh");
    let mut built = false;
    c.bench_function(format!("{}k_files", dirs / 10), |b| {
        if !std::mem::replace(&mut built, true) {
            workspace_of(&ws, dirs);
        }
        b.iter_batched(
            || {
                // Each run starts with an empty store (and does not fill the disk).
                let _ = std::fs::remove_dir_all(&fresh);
                engine(&ws, &fresh)
            },
            |ck| black_box(ck.before(Scope::Workspace)),
            BatchSize::PerIteration,
        )
    });
}

fn first_scans(c: &mut Criterion) {
    let mut g = c.benchmark_group("checkpoint_first_scan");
    g.sample_size(10);
    first_scan(&mut g, 100);
    first_scan(&mut g, 1000);
    g.finish();
}

criterion_group!(benches, scans, first_scans);
criterion_main!(benches);
