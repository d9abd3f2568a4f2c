//! Snapshot tests of whole frames: the app is driven with agent events, as the real agent
//! would, and drawn into ratatui's `TestBackend`. Time is injected, so spinners and elapsed
//! times are reproducible.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::CellWidth;
use ratatui::style::Color;
use rein::protocol::{
    ApprovalRequest, EditDiff, Event, SessionInfo, Todo, TodoStatus, ToolDisplay, ToolStatus,
    TurnOutcome,
};
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn session() -> Event {
    Event::SessionConfigured(SessionInfo {
        session_id: "3f2a9c1e-77d0-4b8e-9a51-0c6d2e4f8b10".into(),
        model: "qwen3-coder-30b".into(),
        provider: "openai".into(),
        cwd: PathBuf::from("/home/dev/src/rein"),
        context_window: 128_000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "workspace-write".into(),
        history: Vec::new(),
        keep_view: false,
    })
}

fn new_app(t0: Instant) -> App {
    let mut app = App::new(
        Theme::dark(),
        Vec::new(),
        Some(PathBuf::from("/home/dev")),
        t0,
    );
    app.on_agent_event(session());
    app
}

fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| view::draw(f, app)).expect("draw");
    term
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    draw(app, w, h).backend().to_string()
}

fn user_turn(app: &mut App, text: &str) {
    app.on_terminal_event(paste(text));
    app.on_terminal_event(key(crossterm::event::KeyCode::Enter));
    app.on_agent_event(Event::TurnStarted);
}

/// A command call `(id, command)` that started and ended with `status` and `output`.
fn command_ran(app: &mut App, call: (&str, &str), status: ToolStatus, output: &str, ms: u64) {
    app.on_agent_event(Event::ToolCallStarted {
        call_id: call.0.into(),
        display: ToolDisplay::Exec {
            command: call.1.into(),
        },
    });
    app.on_agent_event(Event::ToolCallFinished {
        call_id: call.0.into(),
        status,
        output: output.into(),
        elapsed_ms: ms,
        exit_code: None,
    });
}

fn key(code: crossterm::event::KeyCode) -> crossterm::event::Event {
    crossterm::event::Event::Key(crossterm::event::KeyEvent::new(
        code,
        crossterm::event::KeyModifiers::NONE,
    ))
}

fn paste(text: &str) -> crossterm::event::Event {
    crossterm::event::Event::Paste(text.to_string())
}

const ANSWER: &str = "## Plan\n\nThe bug is in `parse_args`: it **drops** the last flag.\n\n- read the parser\n- fix the loop bound\n  1. add a test\n  2. run it\n\n> Note: see [the docs](https://docs.rs/clap).\n\n```rust\nfn parse_args(args: &[String]) -> Vec<Flag> {\n    args.iter().map(|a| Flag::from(a)).collect()\n}\n```\n\n| file | change |\n|------|--------|\n| src/cli.rs | loop bound |\n";

#[test]
fn empty_start() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    insta::assert_snapshot!(screen(&mut app, 80, 20));
}

#[test]
fn conversation_with_markdown_and_code() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "why does --verbose get ignored?");
    app.on_agent_event(Event::ReasoningDelta {
        text: "The user asks about flags.\nLet me look at the parser.".into(),
    });
    for chunk in ANSWER.split_inclusive(' ') {
        app.on_agent_event(Event::AssistantDelta { text: chunk.into() });
    }
    app.on_agent_event(Event::AssistantMessage {
        text: ANSWER.into(),
    });
    app.on_agent_event(Event::Usage {
        used_tokens: 12_345,
        context_window: 128_000,
    });
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Completed,
    });
    let term = draw(&mut app, 80, 40);
    insta::assert_snapshot!(term.backend().to_string());

    // The fenced code is highlighted: its first line has several colours.
    let buf = term.backend().buffer();
    let row = (0..buf.area.height)
        .find(|&y| {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            line.contains("fn parse_args")
        })
        .expect("code line on screen");
    let colours: std::collections::HashSet<Color> = (0..buf.area.width)
        .map(|x| buf[(x, row)].fg)
        .filter(|c| *c != Color::Reset)
        .collect();
    assert!(colours.len() >= 3, "code is highlighted: {colours:?}");
}

#[test]
fn running_tool_with_live_output() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "run the tests");
    app.on_agent_event(Event::AssistantMessage {
        text: "Running the test suite.".into(),
    });
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "call_1".into(),
        display: ToolDisplay::Exec {
            command: "cargo test -q".into(),
        },
    });
    for i in 1..=12 {
        app.on_agent_event(Event::ToolOutputDelta {
            call_id: "call_1".into(),
            chunk: format!("test tests::case_{i:02} ... ok\n"),
        });
    }
    app.set_now(t0 + Duration::from_millis(4_250));
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn finished_tools_error_blocked_and_notices() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "clean up");
    let listing: String = (1..=9).map(|i| format!("file_{i}.rs\n")).collect();
    command_ran(&mut app, ("a", "ls -la"), ToolStatus::Ok, &listing, 35);
    let blocked = "Blocked by deny rule `bash(rm -rf *)`. Do not retry it.";
    command_ran(&mut app, ("b", "rm -rf /"), ToolStatus::Blocked, blocked, 0);
    app.on_agent_event(Event::Retrying {
        attempt: 2,
        max_attempts: 5,
        delay_ms: 2_000,
        reason: "HTTP 429 Too Many Requests".into(),
    });
    app.on_agent_event(Event::Compacted {
        before_tokens: 104_000,
        after_tokens: 31_000,
    });
    app.on_agent_event(Event::error("connection reset by peer"));
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Interrupted,
    });
    insta::assert_snapshot!(screen(&mut app, 80, 30));
}

fn bash_approval(id: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: id.into(),
        call_id: format!("call_{id}"),
        display: ToolDisplay::Exec {
            command: "cargo build --release && git push origin main".into(),
        },
        cwd: PathBuf::from("/home/dev/src/rein"),
        part: "git push origin main".into(),
        reason: "rule ask bash(git push *) in .rein/config.toml".into(),
        subagent: None,
        always: Some("git push origin …".into()),
        no_always: None,
    }
}

#[test]
fn bash_approval_modal() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "ship it");
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "call_1".into(),
        display: ToolDisplay::Exec {
            command: "cargo build --release && git push origin main".into(),
        },
    });
    app.on_agent_event(Event::ApprovalRequested(bash_approval("1")));
    app.on_agent_event(Event::ApprovalRequested(bash_approval("2")));
    app.on_agent_event(Event::ApprovalRequested(bash_approval("3")));
    insta::assert_snapshot!(screen(&mut app, 90, 24));
}

#[test]
fn edit_approval_with_diff() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "fix the loop bound");
    let old = "use std::env;\n\nfn main() {\n    let args: Vec<String> = env::args().collect();\n    for i in 0..args.len() - 1 {\n        println!(\"{}\", args[i]);\n    }\n}\n";
    let new = old.replace("0..args.len() - 1", "0..args.len()");
    app.on_agent_event(Event::ApprovalRequested(ApprovalRequest {
        id: "e1".into(),
        call_id: "call_e1".into(),
        display: ToolDisplay::Edit {
            path: "src/main.rs".into(),
            diff: Some(EditDiff::between(Some(old), &new)),
        },
        cwd: PathBuf::from("/home/dev/src/rein"),
        part: "src/main.rs".into(),
        reason: "no rule matched (default ask)".into(),
        subagent: Some("find the flag parser".into()),
        always: None,
        no_always: None,
    }));
    insta::assert_snapshot!(screen(&mut app, 90, 26));
}

fn todos() -> Vec<Todo> {
    let todo = |content: &str, active: &str, status| Todo {
        content: content.into(),
        active_form: active.into(),
        status,
    };
    vec![
        todo(
            "Read the parser",
            "Reading the parser",
            TodoStatus::Completed,
        ),
        todo(
            "Fix the loop bound",
            "Fixing the loop bound",
            TodoStatus::InProgress,
        ),
        todo(
            "Add a regression test",
            "Adding a regression test",
            TodoStatus::Pending,
        ),
        todo(
            "Run the test suite",
            "Running the test suite",
            TodoStatus::Pending,
        ),
    ]
}

#[test]
fn todo_panel() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "fix the flag bug");
    app.on_agent_event(Event::TodosUpdated { todos: todos() });
    app.set_now(t0 + Duration::from_millis(300));
    insta::assert_snapshot!(screen(&mut app, 80, 20));
}

#[test]
fn narrow_forty_columns() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(
        &mut app,
        "explain the layout of this project in a few words",
    );
    app.on_agent_event(Event::AssistantMessage {
        text: ANSWER.into(),
    });
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "w".into(),
        display: ToolDisplay::Edit {
            path: "src/cli.rs".into(),
            diff: None,
        },
    });
    app.on_agent_event(Event::FileChanged {
        call_id: "w".into(),
        path: "src/cli.rs".into(),
        old: Some("fn a() {}\nfn b() {}\n".into()),
        new: Some("fn a() {}\nfn b() { run(); }\n".into()),
    });
    app.on_agent_event(Event::ToolCallFinished {
        call_id: "w".into(),
        status: ToolStatus::Ok,
        output: "Wrote src/cli.rs".into(),
        elapsed_ms: 4,
        exit_code: None,
    });
    app.on_agent_event(Event::TodosUpdated { todos: todos() });
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Completed,
    });
    insta::assert_snapshot!(screen(&mut app, 40, 30));
}

#[test]
fn too_small_terminal() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    insta::assert_snapshot!(screen(&mut app, 30, 8));
}

#[test]
fn setup_error_screen() {
    let mut term = Terminal::new(TestBackend::new(70, 14)).expect("terminal");
    term.draw(|f| {
        let area = f.area();
        view::draw_setup_error(
            area,
            f.buffer_mut(),
            "No model is configured and no local server answered on ports 11434, 8080 or 8000.\n\nSet BASE_URL, API_KEY and MODEL (or REIN_MODEL), or add them to ~/.config/rein/config.toml.",
            &Theme::dark(),
        );
    })
    .expect("draw");
    insta::assert_snapshot!(term.backend().to_string());
}

#[test]
fn slash_popup_and_queued_message() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "refactor the parser");
    user_turn(&mut app, "then update the docs");
    for c in "/co".chars() {
        app.on_terminal_event(key(crossterm::event::KeyCode::Char(c)));
    }
    insta::assert_snapshot!(screen(&mut app, 80, 20));
}

#[test]
fn scrolled_up_with_new_output_below() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    for i in 1..=20 {
        app.on_agent_event(Event::notice(format!("event {i}")));
    }
    let _ = screen(&mut app, 60, 16);
    app.on_terminal_event(key(crossterm::event::KeyCode::PageUp));
    let _ = screen(&mut app, 60, 16);
    for i in 21..=23 {
        app.on_agent_event(Event::notice(format!("event {i}")));
    }
    insta::assert_snapshot!(screen(&mut app, 60, 16));
}

/// Text whose clusters are wider than their characters (emoji with VS16, ZWJ families, flags,
/// CJK, combining marks) wraps so that no line runs past the edge: every token is on screen,
/// whole, in the answer, the user's message and a tool's output alike.
#[test]
fn wide_clusters_wrap_inside_the_terminal() {
    let tokens: Vec<String> = (0..24)
        .map(|i| {
            let cluster = ["❤️", "👨‍👩‍👧‍👦", "🇫🇷", "日本", "e\u{301}", "👍🏽"][i % 6];
            format!("t{i}{cluster}{cluster}")
        })
        // A run of clusters whose characters alone measure narrower than they draw.
        .chain((0..12).map(|i| format!("h{i}❤️❤️❤️")))
        .collect();
    let text = tokens.join(" ");
    for width in [40u16, 53, 67] {
        let t0 = Instant::now();
        let mut app = new_app(t0);
        user_turn(&mut app, &text);
        app.on_agent_event(Event::AssistantMessage { text: text.clone() });
        command_ran(&mut app, ("c", "echo"), ToolStatus::Error, &text, 1);
        // Expanded, so the tool output wraps instead of being cut at the edge on purpose.
        app.on_terminal_event(crossterm::event::Event::Key(
            crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('o'),
                crossterm::event::KeyModifiers::CONTROL,
            ),
        ));
        let term = draw(&mut app, width, 80);
        let buf = term.backend().buffer();
        // The screen as text, one string per row, wide cells counted once.
        let rows: Vec<String> = (0..buf.area.height)
            .map(|y| {
                let mut row = String::new();
                let mut x = 0;
                while x < buf.area.width {
                    let symbol = buf[(x, y)].symbol();
                    row.push_str(symbol);
                    // The cells a wide cluster covers hold nothing of their own.
                    x += symbol.cell_width().max(1);
                }
                row
            })
            .collect();
        let screen = rows.join("\n");
        // Wrapping may split a token (char-wrapped output); gutters and breaks are not text.
        let squashed: String = screen
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect();
        for token in &tokens {
            // Drawn as the terminal draws it: without the selectors and joiners terminals
            // disagree on.
            let token = rein::tui::sanitize::sanitize(token);
            let shown = squashed.matches(token.as_ref()).count();
            assert!(
                shown >= 3,
                "at {width} columns `{token}` is shown {shown} times instead of 3 (cut at the \
                 edge?):\n{screen}"
            );
        }
    }
}

/// What the person reviews shows every character the command holds: a vertical tab that
/// bash and a parser read differently, a bidi override, an 8-bit CSI appear as pictures or
/// escapes in the approval, not dropped (and never reach the terminal as themselves).
#[test]
fn approvals_show_hidden_characters_instead_of_dropping_them() {
    let t0 = Instant::now();
    let mut app = new_app(t0);
    user_turn(&mut app, "check");
    let command = "echo x\u{b}#; touch pwn \u{202e}txt.sh \u{9b}31m";
    let mut req = bash_approval("1");
    req.display = ToolDisplay::Exec {
        command: command.into(),
    };
    req.part = command.into();
    app.on_agent_event(Event::ApprovalRequested(req));
    let text = screen(&mut app, 100, 24);
    assert!(text.contains("echo x\u{240b}#; touch pwn"), "{text}");
    assert!(text.contains("\\u{202e}txt.sh"), "{text}");
    assert!(text.contains("\\u{9b}31m"), "{text}");
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{9b}'),
        "{text}"
    );
}
