//! TUI speed targets (issue 3):
//! - one frame of a 10,000-cell conversation at 200×60, scrolled to the middle: ≤ 2 ms median;
//! - 100,000 small streamed deltas with a frame every 16 ms: ≤ 20 µs per delta amortized;
//! - `settle_cells` over one 200×60 frame, plain (ASCII) and mixed (CJK, emoji, marks) text
//!   (issue 19: plain cells take a fast path).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::protocol::{Event, SessionInfo, ToolDisplay, ToolStatus, TurnOutcome};
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ANSWER: &str = "Here is what I found in **`src/parser.rs`**:\n\n- the loop stops one flag early\n- `--verbose` is the last flag in the test\n\n```rust\nfor i in 0..args.len() {\n    flags.push(parse(&args[i]));\n}\n```\n\n> Run `cargo test` after the change.\n";

fn configured_app() -> App {
    let mut app = App::new(Theme::dark(), Vec::new(), None, Instant::now());
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: "bench".into(),
        model: "model".into(),
        provider: "openai".into(),
        cwd: PathBuf::from("/work/project"),
        context_window: 128_000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "workspace-write".into(),
        history: Vec::new(),
        keep_view: false,
    }));
    app
}

/// 10,000 cells: user messages, markdown answers with code, and tool calls with output.
fn big_conversation() -> App {
    let mut app = configured_app();
    let mut cells = 0;
    let mut n = 0;
    while cells < 10_000 {
        n += 1;
        // A typed message, sent with Enter, as a person would.
        app.on_terminal_event(crossterm::event::Event::Paste(format!(
            "message {n}: please look at the parser again"
        )));
        app.on_terminal_event(crossterm::event::Event::Key(
            crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Enter,
                crossterm::event::KeyModifiers::NONE,
            ),
        ));
        app.on_agent_event(Event::TurnStarted);
        app.on_agent_event(Event::AssistantMessage {
            text: format!("{ANSWER}\nStep {n}."),
        });
        let id = format!("call_{n}");
        app.on_agent_event(Event::ToolCallStarted {
            call_id: id.clone(),
            display: ToolDisplay::Exec {
                command: format!("cargo test -q --test t{n}"),
            },
        });
        app.on_agent_event(Event::ToolCallFinished {
            call_id: id,
            status: ToolStatus::Ok,
            output: (0..12).map(|i| format!("test case_{i} ... ok\n")).collect(),
            elapsed_ms: 1_200,
            exit_code: Some(0),
        });
        app.on_agent_event(Event::TurnFinished {
            outcome: TurnOutcome::Completed,
        });
        app.take_effects();
        cells += 3;
    }
    app
}

fn frame_10k(c: &mut Criterion) {
    let mut app = big_conversation();
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    app.scroll_to_cell(app.cells().len() / 2);
    let mut group = c.benchmark_group("frame_10k_cells_200x60_middle");
    group.bench_function("warm", |b| {
        b.iter(|| {
            term.draw(|f| view::draw(f, &mut app)).expect("draw");
            black_box(term.backend().buffer().area);
        })
    });
    // Every frame at a new width: all visible cells are laid out from scratch.
    let mut wide = true;
    group.bench_function("after_resize", |b| {
        b.iter(|| {
            wide = !wide;
            let w = if wide { 200 } else { 199 };
            term.backend_mut().resize(w, 60);
            term.draw(|f| view::draw(f, &mut app)).expect("draw");
            black_box(term.backend().buffer().area);
        })
    });
    group.finish();
}

fn streaming(c: &mut Criterion) {
    const DELTAS: u64 = 100_000;
    // Small pieces of a realistic answer (prose, lists, code), 4–8 bytes each.
    let source: String = (0..40).map(|i| format!("{ANSWER}\nParagraph {i} goes on for a little while so that lines wrap at the edge of the screen.\n\n")).collect();
    let chars: Vec<char> = source.chars().collect();
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let n = 4 + (i % 5);
        pieces.push(
            chars[i..(i + n).min(chars.len())]
                .iter()
                .collect::<String>(),
        );
        i += n;
    }
    let mut group = c.benchmark_group("stream_100k_deltas");
    group.sample_size(10);
    group.throughput(Throughput::Elements(DELTAS));
    group.bench_function("frame_every_16ms", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut app = configured_app();
                let mut term = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
                app.on_agent_event(Event::TurnStarted);
                let start = Instant::now();
                let mut last_frame = start;
                for k in 0..DELTAS as usize {
                    let text = pieces[k % pieces.len()].clone();
                    app.on_agent_event(Event::AssistantDelta { text });
                    let now = Instant::now();
                    if now.duration_since(last_frame) >= Duration::from_millis(16) {
                        app.set_now(now);
                        term.draw(|f| view::draw(f, &mut app)).expect("draw");
                        last_frame = now;
                    }
                }
                term.draw(|f| view::draw(f, &mut app)).expect("draw");
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

/// One 200×60 buffer of `line` repeated, as a drawn frame would hold it.
fn filled(line: &str) -> ratatui::buffer::Buffer {
    let area = ratatui::layout::Rect::new(0, 0, 200, 60);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    let text = line.repeat(40);
    for y in 0..60 {
        buf.set_stringn(0, y, &text, 200, ratatui::style::Style::default());
    }
    buf
}

fn settle(c: &mut Criterion) {
    let mut group = c.benchmark_group("settle_cells_200x60");
    let plain = filled("fn main() { println!(\"hello\"); } // plain ASCII code ");
    group.bench_function("plain", |b| {
        b.iter_batched_ref(
            || plain.clone(),
            |buf| rein::tui::sanitize::settle_cells(black_box(buf)),
            criterion::BatchSize::SmallInput,
        )
    });
    let mixed = filled("Résumé 表格 ✅ done, का 🇺🇸 e\u{301} plain words here ");
    group.bench_function("mixed", |b| {
        b.iter_batched_ref(
            || mixed.clone(),
            |buf| rein::tui::sanitize::settle_cells(black_box(buf)),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, frame_10k, streaming, settle);
criterion_main!(benches);
