//! Session store speed: resuming a 100,000-entry (~50 MB) session (load + rebuild; target
//! ≤ 300 ms) and listing 2,000 sessions (target ≤ 100 ms).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

#[path = "support/session_gen.rs"]
mod session_gen;

fn resume(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let compacted = session_gen::generate(&dir.path().join("a"), 100_000, Some(1_500));
    let whole = session_gen::generate(&dir.path().join("b"), 100_000, None);
    for (name, path) in [("compacted", &compacted), ("never_compacted", &whole)] {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        eprintln!("{name}: {:.1} MB", size as f64 / 1e6);
    }
    let mut g = c.benchmark_group("resume_100k");
    g.sample_size(10);
    g.bench_function("load_compacted", |b| {
        b.iter(|| black_box(rein::session_store::load(&compacted).expect("load")))
    });
    g.bench_function("load_and_rebuild_compacted", |b| {
        b.iter(|| {
            let loaded = rein::session_store::load(&compacted).expect("load");
            black_box(rein::session_store::rebuild(loaded))
        })
    });
    g.bench_function("resume_compacted", |b| {
        b.iter(|| black_box(rein::session_store::resume(&compacted).expect("resume")))
    });
    g.bench_function("resume_never_compacted", |b| {
        b.iter(|| black_box(rein::session_store::resume(&whole).expect("resume")))
    });
    g.bench_function("load_and_rebuild_never_compacted", |b| {
        b.iter(|| {
            let loaded = rein::session_store::load(&whole).expect("load");
            black_box(rein::session_store::rebuild(loaded))
        })
    });
    g.finish();
}

fn listing(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    session_gen::generate_many(dir.path(), 2_000);
    let mut g = c.benchmark_group("list_2000");
    g.bench_function("all", |b| {
        b.iter(|| black_box(rein::session_store::list(dir.path(), None)))
    });
    g.bench_function("one_cwd", |b| {
        b.iter(|| {
            black_box(rein::session_store::list(
                dir.path(),
                Some(std::path::Path::new("/work/proj3")),
            ))
        })
    });
    g.bench_function("find_prefix", |b| {
        b.iter(|| black_box(rein::session_store::find(dir.path(), "0000000007c")))
    });
    g.finish();
}

criterion_group!(benches, resume, listing);
criterion_main!(benches);
