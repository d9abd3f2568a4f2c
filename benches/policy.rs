//! Policy decision time per command over the commands table (target: ≤ 20 µs median).
//!
//! `policy/median_command` times every row separately and reports the row in the middle, so
//! its figure is the median time per command (`median_class_command`: the same over the class
//! table). `policy/table` rates the whole table per
//! iteration (its throughput line is the mean rate in commands per second).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rein::policy::Policy;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn table(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).expect("commands table");
    text.lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|c| !c.is_empty())
        .map(|c| c.replace("\\n", "\n"))
        .collect()
}

/// The median over `commands` of the time one decision takes.
fn median(c: &mut Criterion, name: &str, commands: &[String]) {
    let policy = Policy::new(Vec::new(), false);
    let mut group = c.benchmark_group("policy");
    // Each reported iteration costs a whole table pass, so keep criterion's time budget small.
    group.warm_up_time(Duration::from_millis(50));
    group.measurement_time(Duration::from_millis(100));
    group.sample_size(30);
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut per_command: Vec<Duration> = commands
                .iter()
                .map(|cmd| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(policy.check_bash(black_box(cmd)));
                    }
                    start.elapsed()
                })
                .collect();
            per_command.sort();
            per_command[per_command.len() / 2]
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let commands = table("commands.tsv");
    median(c, "median_command", &commands);
    // The attack classes are longer and nest more: their median, for comparison.
    median(c, "median_class_command", &table("commands-classes.tsv"));
    let policy = Policy::new(Vec::new(), false);

    let mut group = c.benchmark_group("policy");
    group.sample_size(50);
    group.throughput(Throughput::Elements(commands.len() as u64));
    group.bench_function("table", |b| {
        b.iter(|| {
            for cmd in &commands {
                black_box(policy.check_bash(black_box(cmd)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
