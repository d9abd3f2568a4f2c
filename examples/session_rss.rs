//! Measures time and peak memory of resuming a generated 100,000-entry (~50 MB) session:
//! `cargo run --release --example session_rss [compacted|never_compacted] [resume|load]`
//! (`resume` streams; `load` is `rebuild(load(path))`).
//!
//! Peak RSS comes from `VmHWM` in /proc/self/status, reset after generating the file (Linux).

use std::time::Instant;

#[path = "../benches/support/session_gen.rs"]
#[allow(dead_code)] // the listing generator is for the bench
mod session_gen;

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "compacted".into());
    let streaming = std::env::args().nth(2).as_deref() != Some("load");
    let every = match mode.as_str() {
        "compacted" => Some(1_500),
        "never_compacted" => None,
        other => {
            eprintln!("unknown mode {other}: use compacted or never_compacted");
            std::process::exit(2);
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = session_gen::generate(dir.path(), 100_000, every);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // Forget the generator's peak: "5" resets VmHWM to the current RSS.
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("cannot reset the peak RSS ({e}); the figure includes generation");
    }
    let before = status_kb("VmRSS:");
    let start = Instant::now();
    let resumed = if streaming {
        rein::session::resume(&path).expect("resume")
    } else {
        rein::session::rebuild(rein::session::load(&path).expect("load"))
    };
    let took = start.elapsed();
    let peak = status_kb("VmHWM:");
    println!(
        "{mode}, {}: file {:.1} MB; {took:?}; messages {}, view items {}; RSS before {:.1} MB, \
         peak {:.1} MB = {:.2}x file size (growth {:.2}x)",
        if streaming { "resume" } else { "load+rebuild" },
        size as f64 / 1e6,
        resumed.messages.len(),
        resumed.view.len(),
        before as f64 / 1e3,
        peak as f64 / 1e3,
        (peak * 1024) as f64 / size as f64,
        (peak.saturating_sub(before) * 1024) as f64 / size as f64,
    );
}
