//! Popups and history against a terminal emulator: what the person sees after each key must be
//! what a fresh full redraw would show (no stale cell left behind), popups never cover the todo
//! panel, and recalled history entries never open a popup that takes Up/Down away.

use super::*;
use crate::protocol::{Todo, TodoStatus};
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

const W: u16 = 60;
const H: u16 = 16;

/// Bytes a terminal would receive, shared so the test can read what each frame sent.
#[derive(Clone, Default)]
struct Wire(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for Wire {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Wire {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.borrow_mut())
    }
}

fn emulator(w: u16, h: u16) -> vt100::Parser {
    let n = |v: u16| std::num::NonZeroU16::new(v).expect("test sizes are not zero");
    vt100::Parser::new(n(h), n(w), 0)
}

fn terminal(w: u16, h: u16, wire: &Wire) -> Terminal<CrosstermBackend<Wire>> {
    let options = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, w, h)),
    };
    Terminal::with_options(CrosstermBackend::new(wire.clone()), options)
        .expect("a terminal over memory never fails")
}

/// The screen the person sees: frames drawn incrementally (ratatui sends only the changed
/// cells) through crossterm's escape sequences into a vt100 emulator.
struct Screen {
    term: Terminal<CrosstermBackend<Wire>>,
    wire: Wire,
    vt: vt100::Parser,
    width: u16,
}

impl Screen {
    fn new(w: u16, h: u16) -> Screen {
        let wire = Wire::default();
        Screen {
            term: terminal(w, h, &wire),
            wire,
            vt: emulator(w, h),
            width: w,
        }
    }

    /// Draws a frame the way the TUI does and feeds the bytes it sent to the emulator.
    fn draw(&mut self, app: &mut App) {
        self.term
            .draw(|f| crate::tui::view::draw(f, app))
            .expect("drawing into memory never fails");
        self.vt.process(&self.wire.take());
    }

    /// The visible text row by row; a written blank and an untouched cell look the same.
    fn rows(&self) -> Vec<String> {
        self.vt
            .screen()
            .rows(0, self.width)
            .map(|r| r.trim_end().to_string())
            .collect()
    }
}

/// What a full redraw of the app's current state shows, row by row.
fn fresh_rows(app: &mut App, w: u16, h: u16) -> Vec<String> {
    Screen::new(w, h).draw_once(app)
}

impl Screen {
    fn draw_once(mut self, app: &mut App) -> Vec<String> {
        self.draw(app);
        self.rows()
    }
}

/// A conversation whose bottom rows (where popups float) hold borders, wide characters and
/// code, so a cell the popup covered and the next frame forgets would show.
fn busy_screen_app() -> App {
    let mut app = app();
    // Rows of clusters a terminal lays out in other cells than ratatui counts, at the bottom
    // where the popups float.
    let clusters = "का 🇺🇸 x\u{301}ा ⚠\u{fe0f} ".repeat(12);
    app.on_agent_event(Event::AssistantMessage {
        text: "Résumé 表格 ✅ done.\n\n| a | b |\n|---|---|\n| 表 | ✅ |\n\n```rust\nfn main() {}\n```\n\
               Wide: 日本語のテキストがここに続きます 🎉🎉 end\n\n\
               Tricky: ⚠️ warn, e\u{301}, 👨\u{200d}👩\u{200d}👧, tab\there, \x1b[31mred\x1b[0m, \u{feff}bom, \u{202e}rtl\n\n\
               Clusters: का हिन्दी 🇺🇸 ｶﾞ \u{301}ा end"
            .to_string()
            + "\n\n"
            + &clusters
            + "\n\n"
            + &clusters,
    });
    app.on_agent_event(Event::TodosUpdated {
        todos: vec![
            Todo {
                content: "Read the code".into(),
                active_form: String::new(),
                status: TodoStatus::Completed,
            },
            Todo {
                content: "Fix the bug".into(),
                active_form: "Fixing the bug".into(),
                status: TodoStatus::InProgress,
            },
        ],
    });
    app.set_files(vec![
        "README.md".into(),
        "src/main.rs".into(),
        "src/表.rs".into(),
    ]);
    app
}

fn send(app: &mut App, k: &str) {
    match k {
        "<esc>" => key(app, KeyCode::Esc),
        "<bs>" => key(app, KeyCode::Backspace),
        "<tab>" => key(app, KeyCode::Tab),
        "<up>" => key(app, KeyCode::Up),
        "<down>" => key(app, KeyCode::Down),
        "<enter>" => key(app, KeyCode::Enter),
        "<C-u>" => press(app, KeyCode::Char('u'), KeyModifiers::CONTROL),
        typed => type_str(app, typed),
    }
}

#[test]
fn every_frame_after_a_popup_opens_or_closes_matches_a_full_redraw() {
    let sequences: &[&[&str]] = &[
        &["/", "<bs>"],
        &["/", "<esc>"],
        &["/", "m", "o", "<bs>", "<bs>", "<bs>"],
        &["/co", "<down>", "<tab>", "<C-u>"],
        &["/", "x", "y"],
        &["look at @", "s", "r", "<esc>"],
        &["@", "<tab>", "<C-u>"],
        &["@", "<down>", "<enter>", "/", "<bs>"],
        &["/", "<esc>", "@", "<bs>", "/", "<bs>"],
    ];
    for (w, h) in [(W, H), (40, 10), (100, 30)] {
        for keys in sequences {
            let mut app = busy_screen_app();
            let mut screen = Screen::new(w, h);
            screen.draw(&mut app);
            for k in *keys {
                send(&mut app, k);
                screen.draw(&mut app);
                assert_eq!(
                    screen.rows(),
                    fresh_rows(&mut app, w, h),
                    "{w}x{h}: after {keys:?} up to {k:?} the screen differs from a full redraw"
                );
            }
        }
    }
}

/// The rows the todo panel takes: those showing its items.
fn todo_rows(rows: &[String]) -> Vec<usize> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.contains("Read the code") || r.contains("Fixing the bug"))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn popups_float_over_the_conversation_never_over_the_todo_panel() {
    for (w, h) in [(W, H), (40, 10), (60, 12), (100, 30)] {
        let mut app = busy_screen_app();
        let mut screen = Screen::new(w, h);
        screen.draw(&mut app);
        let before = screen.rows();
        let panel = todo_rows(&before);
        assert_eq!(panel.len(), 2, "{w}x{h}: the todo panel shows: {before:#?}");
        // The panel's border is the row above its first item.
        let border = panel[0] - 1;
        for keys in [["@", ""], ["/", ""], ["@s", "<down>"]] {
            let mut app = busy_screen_app();
            for k in keys {
                send(&mut app, k);
            }
            assert!(app.popup.is_some(), "{keys:?} opens a popup");
            let mut screen = Screen::new(w, h);
            screen.draw(&mut app);
            let rows = screen.rows();
            for y in border..=panel[1] {
                assert_eq!(
                    rows[y], before[y],
                    "{w}x{h}: {keys:?}: the popup drew over the todo panel's row {y}: {rows:#?}"
                );
            }
        }
    }
}

#[test]
fn recalled_commands_and_at_paths_walk_the_history_without_a_popup() {
    let mut app = App::new(
        Theme::dark(),
        vec![
            "first".into(),
            "/model".into(),
            "look at @src/main.rs".into(),
            "/".into(),
            "last @".into(),
        ],
        None,
        Instant::now(),
    );
    app.set_files(vec!["src/main.rs".into()]);
    let walk_up = ["last @", "/", "look at @src/main.rs", "/model", "first"];
    for want in walk_up {
        key(&mut app, KeyCode::Up);
        assert_eq!(app.composer_text(), want);
        assert!(app.popup.is_none(), "recalling {want:?} opened a popup");
    }
    for want in walk_up.iter().rev().skip(1) {
        key(&mut app, KeyCode::Down);
        assert_eq!(app.composer_text(), *want);
        assert!(app.popup.is_none(), "recalling {want:?} opened a popup");
    }
    key(&mut app, KeyCode::Down);
    assert_eq!(
        app.composer_text(),
        "",
        "Down past the newest entry empties the composer"
    );
    // Editing a recalled entry makes it the person's text again: completion comes back.
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.composer_text(), "/");
    type_str(&mut app, "mo");
    assert!(
        app.popup.is_some(),
        "an edited entry completes like typed text"
    );
    // A recalled entry is sent as it is, not completed by Enter.
    app.composer.clear();
    app.popup = None;
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.composer_text(), "look at @src/main.rs");
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "look at @src/main.rs"),
        "Enter sends the recalled entry"
    );
}

/// The buffer's text row by row as ratatui meant it: each cell's symbol, a wide one covering
/// the cells after it.
fn buffer_rows(app: &mut App, w: u16, h: u16) -> Vec<String> {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    crate::tui::view::draw_buffer(area, &mut buf, app);
    (0..h)
        .map(|y| {
            let (mut row, mut x) = (String::new(), 0);
            while x < w {
                let symbol = buf[(x, y)].symbol();
                row.push_str(&as_the_emulator_keeps(symbol));
                x += ratatui::text::Span::raw(symbol).width().max(1) as u16;
            }
            row.trim_end().to_string()
        })
        .collect()
}

/// `symbol` as the emulator stores a cell: vt100 appends a code point only while the cell
/// holds fewer than 18 bytes, so a stack of combining marks loses its last ones there (real
/// terminals differ too, xterm keeps two marks by default; the cell's width is unchanged).
fn as_the_emulator_keeps(symbol: &str) -> String {
    let mut kept = String::new();
    for c in symbol.chars() {
        if kept.len() >= 18 {
            break;
        }
        kept.push(c);
    }
    kept
}

/// Pieces a model or a tool's output may hold whose widths are easy to get wrong (not U+FFFD:
/// the emulator drops it where terminals draw it).
const TRICKY: &[&str] = &[
    "a",
    " ",
    "表",
    "✅",
    "🎉",
    "⚠",
    "\u{fe0f}",
    "\u{fe0e}",
    "\u{200d}",
    "👨",
    "👍",
    "\u{1f3fd}",
    "🇺",
    "🇸",
    "e",
    "\u{301}",
    "1",
    "\u{20e3}",
    "ᄀ",
    "ᅡ",
    "क",
    "\u{94d}",
    "ษ",
    "\u{e34}",
    "±",
    "→",
    "①",
    "─",
    "\u{ad}",
    "\u{200b}",
    "\u{202e}",
    "\u{e0041}",
    "\t",
    "\r",
    "\u{7}",
    "\u{1b}[2J",
    "\u{9b}1m",
    "\u{85}",
    "\n",
    "|",
    "`",
    "*",
    "#",
    "ｶ",
    "ﾞ",
    "\u{3099}",
    "〃",
    "ा",
    "ि",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Whatever text arrives, ratatui and the terminal agree on where every cell goes, and a
    /// popup opened and closed over it leaves nothing behind.
    #[test]
    fn drawn_text_takes_the_width_the_terminal_gives_it(
        pieces in proptest::collection::vec(proptest::sample::select(TRICKY), 1..60),
        w in 40u16..90,
    ) {
        let text: String = pieces.concat();
        let mut app = busy_screen_app();
        app.on_agent_event(Event::AssistantMessage { text: text.clone() });
        let h = 14;
        let fresh = fresh_rows(&mut app, w, h);
        proptest::prop_assert_eq!(&fresh, &buffer_rows(&mut app, w, h), "text {:?}", text);
        let mut screen = Screen::new(w, h);
        screen.draw(&mut app);
        for k in ["/", "<bs>", "@", "<esc>"] {
            send(&mut app, k);
            screen.draw(&mut app);
            proptest::prop_assert_eq!(
                screen.rows(),
                fresh_rows(&mut app, w, h),
                "text {:?}, after {:?}", text, k
            );
        }
    }
}
