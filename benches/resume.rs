//! Resuming a 100,000-entry (~50 MB) session to the first frame (issue 4: ≤ 300 ms):
//! `session_store::resume`, the `SessionConfigured` applied to the TUI app, one frame drawn into a
//! 200×60 `TestBackend`. Peak memory is measured by `examples/resume_rss.rs`.

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::llm::Message;
use rein::protocol::{Event, SessionInfo};
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view;
use std::path::Path;
use std::time::Instant;

#[path = "support/session_gen.rs"]
#[allow(dead_code)] // the listing generator is for the sessions bench
mod session_gen;

/// Everything between "open this session" and its first frame. Returns what stays alive: the
/// app (view) and the context the agent keeps.
fn resume_to_first_frame(path: &Path, term: &mut Terminal<TestBackend>) -> (App, Vec<Message>) {
    // What the agent does with the default 128k window.
    let resumed = rein::session_store::resume_within(
        path,
        Some(rein::session_store::context_bytes_for_window(128_000)),
    )
    .expect("resume");
    let mut app = App::new(Theme::dark(), Vec::new(), None, Instant::now());
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
    term.draw(|f| view::draw(f, &mut app)).expect("draw");
    (app, resumed.messages)
}

fn resume(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let compacted = session_gen::generate(&dir.path().join("a"), 100_000, Some(1_500));
    let whole = session_gen::generate(&dir.path().join("b"), 100_000, None);
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    let mut g = c.benchmark_group("resume_100k_to_first_frame_200x60");
    g.sample_size(10);
    for (name, path) in [("compacted", &compacted), ("never_compacted", &whole)] {
        g.bench_function(name, |b| {
            b.iter_with_large_drop(|| resume_to_first_frame(path, &mut term))
        });
    }
    // Scrolling the resumed view to its first message (Ctrl+Home) and back.
    let (mut app, _context) = resume_to_first_frame(&compacted, &mut term);
    g.bench_function("jump_to_first_message_and_back", |b| {
        b.iter(|| {
            app.scroll_to_cell(0);
            term.draw(|f| view::draw(f, &mut app)).expect("draw");
            app.scroll_to_cell(app.cells().len() - 1);
            term.draw(|f| view::draw(f, &mut app)).expect("draw");
        })
    });
    g.finish();
}

criterion_group!(benches, resume);
criterion_main!(benches);
