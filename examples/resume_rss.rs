//! Time and peak memory of resuming a generated 100,000-entry (~50 MB) session all the way to
//! the first frame of the TUI: `session_store::resume`, the `SessionConfigured` applied to the app,
//! one frame drawn at 200×60. The context (`messages`) stays alive, as the agent keeps it.
//! `cargo run --release --example resume_rss [compacted|never_compacted]`
//!
//! Peak RSS comes from `VmHWM` in /proc/self/status, reset after generating the file (Linux).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::protocol::{Event, SessionInfo};
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view;
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
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    let mut app = App::new(Theme::dark(), Vec::new(), None, Instant::now());
    // Forget the generator's peak: "5" resets VmHWM to the current RSS.
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("cannot reset the peak RSS ({e}); the figure includes generation");
    }
    let before = status_kb("VmRSS:");
    let start = Instant::now();
    // What the agent does with the default 128k window.
    let resumed = rein::session_store::resume_within(
        &path,
        Some(rein::session_store::context_bytes_for_window(128_000)),
    )
    .expect("resume");
    let loaded = start.elapsed();
    let messages = resumed.messages;
    let items = resumed.view.len();
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: resumed.header.id,
        model: resumed.model,
        provider: "openai".into(),
        cwd: resumed.header.cwd,
        context_window: 128_000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "workspace-write".into(),
        history: resumed.view,
        keep_view: false,
    }));
    let applied = start.elapsed();
    term.draw(|f| view::draw(f, &mut app)).expect("draw");
    let took = start.elapsed();
    let peak = status_kb("VmHWM:");
    let now = status_kb("VmRSS:");
    println!(
        "{mode}: file {:.1} MB, {items} view items, {} cells, {} context messages\n\
         first frame after {took:?} (resume {loaded:?}, apply {:?}, draw {:?})\n\
         RSS before {:.1} MB, peak {:.1} MB = {:.2}x file size (growth {:.2}x), after the \
         frame {:.1} MB",
        size as f64 / 1e6,
        app.cells().len(),
        messages.len(),
        applied - loaded,
        took - applied,
        before as f64 / 1e3,
        peak as f64 / 1e3,
        (peak * 1024) as f64 / size as f64,
        (peak.saturating_sub(before) * 1024) as f64 / size as f64,
        now as f64 / 1e3,
    );
}
