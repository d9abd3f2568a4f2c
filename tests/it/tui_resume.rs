//! Resuming in the TUI: the past conversation rendered like live cells and scrollable to its
//! first message, fork and clear, the session picker (`/resume`, `rein --resume`), `/skills`
//! and `/memory`. Frames are drawn into ratatui's `TestBackend`; time is injected.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use jiff::{SignedDuration, Timestamp};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::protocol::{
    Event, NoticeLevel, Op, SessionInfo, Todo, TodoStatus, ToolDisplay, ToolStatus,
};
use rein::session_store::{Entry, Header, SessionSummary, SessionWriter};
use rein::tui::app::{App, Effect};
use rein::tui::layers::session_picker::SessionPicker;
use rein::tui::theme::Theme;
use rein::tui::view;
use std::path::{Path, PathBuf};
use std::time::Instant;

const HOME: &str = "/home/dev";
const CWD: &str = "/home/dev/src/rein";

fn info(id: &str, history: Vec<Event>, keep_view: bool) -> Event {
    Event::SessionConfigured(SessionInfo {
        session_id: id.into(),
        model: "qwen3-coder-30b".into(),
        provider: "openai".into(),
        cwd: PathBuf::from(CWD),
        context_window: 128_000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "workspace-write".into(),
        history,
        keep_view,
    })
}

fn new_app(home: &str) -> App {
    App::new(
        Theme::dark(),
        Vec::new(),
        Some(PathBuf::from(home)),
        Instant::now(),
    )
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| view::draw(f, app)).expect("draw");
    term.backend().to_string()
}

fn press(app: &mut App, code: KeyCode, mods: KeyModifiers) {
    app.on_terminal_event(TermEvent::Key(KeyEvent::new(code, mods)));
}

fn key(app: &mut App, code: KeyCode) {
    press(app, code, KeyModifiers::NONE);
}

fn type_str(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// Pastes a line and presses Enter (with the completion popup open when the line is a bare
/// command name, as after typing it).
fn command(app: &mut App, line: &str) {
    app.on_terminal_event(TermEvent::Paste(line.into()));
    key(app, KeyCode::Enter);
}

fn ops(app: &mut App) -> Vec<Op> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Op(op) => Some(op),
            _ => None,
        })
        .collect()
}

fn user(text: &str) -> Vec<Event> {
    vec![Event::UserMessage { text: text.into() }]
}

fn answer(text: &str, reasoning: Option<&str>) -> Vec<Event> {
    let mut events: Vec<Event> = reasoning
        .map(|r| Event::ReasoningDelta { text: r.into() })
        .into_iter()
        .collect();
    events.push(Event::AssistantMessage { text: text.into() });
    events
}

/// A call as a resume replays it (`None`: no result was recorded, so it ends interrupted).
fn tool(id: &str, display: ToolDisplay, status: Option<ToolStatus>, output: &str) -> Vec<Event> {
    vec![
        Event::ToolCallStarted {
            call_id: id.into(),
            display,
        },
        Event::ToolCallFinished {
            call_id: id.into(),
            status: status.unwrap_or(ToolStatus::Interrupted),
            output: output.into(),
            elapsed_ms: 1200,
            exit_code: None,
        },
    ]
}

fn exec(command: &str) -> ToolDisplay {
    ToolDisplay::Exec {
        command: command.into(),
    }
}

/// A past conversation with every kind of item, longer than a screen.
fn history() -> Vec<Event> {
    let mut h = Vec::new();
    h.extend(user("Why does the parser drop the last flag?"));
    h.extend(answer(
        "Let me look at **`src/parser.rs`** first.",
        Some("The loop bound looks off by one.\nCheck the tests to be sure."),
    ));
    h.extend(tool(
        "c1",
        exec("cargo test -q parser"),
        Some(ToolStatus::Ok),
        "running 3 tests\ntest parse_one ... ok\ntest parse_two ... ok\ntest parse_last ... FAILED\n",
    ));
    h.extend(tool(
        "c2",
        ToolDisplay::Edit {
            path: "src/parser.rs".into(),
            diff: None,
        },
        Some(ToolStatus::Error),
        "Error: old_str was not found in src/parser.rs; read the file again and retry.",
    ));
    h.push(Event::TodosUpdated {
        todos: vec![
            Todo {
                content: "Read the parser".into(),
                active_form: "Reading the parser".into(),
                status: TodoStatus::Completed,
            },
            Todo {
                content: "Fix the loop bound".into(),
                active_form: "Fixing the loop bound".into(),
                status: TodoStatus::InProgress,
            },
        ],
    });
    h.push(Event::Notice {
        level: NoticeLevel::Warn,
        text: "Interrupted.".into(),
    });
    for n in 1..=6 {
        h.extend(user(&format!("question {n}: and the next flag?")));
        h.extend(answer(&format!("Answer {n}: it is parsed as well."), None));
    }
    h.extend(user("Fix it now"));
    h.extend(answer(
        "Fixed: the loop now runs to the end.\n\n```rust\nfor i in 0..args.len() {\n    flags.push(parse(&args[i]));\n}\n```",
        None,
    ));
    h.extend(tool(
        "c9",
        exec("cargo test"),
        None,
        "(rein stopped before this tool finished; no result was recorded)",
    ));
    h.push(Event::Notice {
        level: NoticeLevel::Error,
        text: "Error: the model server closed the connection".into(),
    });
    h
}

fn resumed() -> App {
    let mut app = new_app(HOME);
    app.on_agent_event(info("s-resumed", history(), false));
    app
}

#[test]
fn resumed_conversation_shows_the_end_first() {
    let mut app = resumed();
    assert!(app.is_following());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Fixed: the loop now runs to the end."), "{s}");
    assert!(!s.contains("Why does the parser"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn resumed_conversation_scrolled_to_the_first_message() {
    let mut app = resumed();
    let _ = screen(&mut app, 80, 24);
    press(&mut app, KeyCode::Home, KeyModifiers::CONTROL);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Why does the parser drop the last flag?"), "{s}");
    assert!(!app.is_following());
    insta::assert_snapshot!(s);
}

#[test]
fn page_up_reaches_the_first_message_and_a_new_prompt_follows_again() {
    let mut app = resumed();
    let mut s = screen(&mut app, 80, 24);
    let mut presses = 0;
    while !s.contains("Why does the parser drop the last flag?") {
        key(&mut app, KeyCode::PageUp);
        s = screen(&mut app, 80, 24);
        presses += 1;
        assert!(presses < 20, "PgUp never reached the first message:\n{s}");
    }
    assert!(presses >= 2, "the history is longer than two screens");
    // Further PgUp stays at the top.
    key(&mut app, KeyCode::PageUp);
    assert!(screen(&mut app, 80, 24).contains("Why does the parser"));

    type_str(&mut app, "and now the docs");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "and now the docs"));
    assert!(app.is_following());
    app.on_agent_event(Event::TurnStarted);
    app.on_agent_event(Event::AssistantDelta {
        text: "Writing the docs.".into(),
    });
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("and now the docs"), "{s}");
    assert!(s.contains("Writing the docs."), "{s}");
}

#[test]
fn resumed_cells_match_the_history_and_the_last_answer_is_copyable() {
    let mut app = resumed();
    // One cell per message, call, todo list and notice, and a reasoning cell before its
    // answer.
    assert_eq!(app.cells().len(), 23);
    assert_eq!(app.status().session_id, "s-resumed");
    // The todo panel shows the latest list.
    let s = screen(&mut app, 80, 30);
    assert!(s.contains("Fixing the loop bound"), "{s}");
    command(&mut app, "/copy");
    let copied: Vec<String> = app
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Copy(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(copied.len(), 1);
    assert!(copied[0].starts_with("Fixed: the loop"));
}

#[test]
fn fork_keeps_the_view_clear_and_resume_replace_it() {
    let mut app = resumed();
    let before = app.cells().len();
    command(&mut app, "/fork");
    assert!(matches!(&ops(&mut app)[..], [Op::Fork]));
    app.on_agent_event(info("s-fork", Vec::new(), true));
    app.on_agent_event(Event::notice(
        "Forked session s-resumed into s-fork; you are now in the copy.",
    ));
    assert_eq!(
        app.cells().len(),
        before + 1,
        "the view stays, plus the notice"
    );
    assert_eq!(app.status().session_id, "s-fork");

    // Switching to another session replaces the view with its history.
    command(&mut app, "/resume abc123");
    assert!(matches!(&ops(&mut app)[..], [Op::Resume { id }] if id == "abc123"));
    app.on_agent_event(info(
        "abc123",
        [user("other"), answer("other answer", None)].concat(),
        false,
    ));
    assert_eq!(app.cells().len(), 2);
    // …and to an empty one empties it.
    app.on_agent_event(info("empty", Vec::new(), false));
    assert!(app.cells().is_empty());

    app.on_agent_event(info("x", history(), false));
    command(&mut app, "/clear");
    assert!(matches!(&ops(&mut app)[..], [Op::Clear]));
    assert!(app.cells().is_empty());
    app.on_agent_event(info("new", Vec::new(), false));
    assert!(app.cells().is_empty());
    assert!(
        !screen(&mut app, 80, 30).contains("Fixing the loop bound"),
        "the todo panel is empty too"
    );
}

#[test]
fn session_commands_wait_for_the_turn_and_rename_needs_a_title() {
    let mut app = resumed();
    command(&mut app, "/rename Parser fixes");
    assert!(matches!(&ops(&mut app)[..], [Op::Rename { title }] if title == "Parser fixes"));
    // (The trailing space closes the popup, which would otherwise wait for the title.)
    command(&mut app, "/rename ");
    assert!(ops(&mut app).is_empty());
    assert!(screen(&mut app, 80, 24).contains("/rename TITLE"));

    type_str(&mut app, "go");
    key(&mut app, KeyCode::Enter);
    ops(&mut app);
    for line in ["/fork", "/resume", "/resume abc"] {
        command(&mut app, line);
        assert!(ops(&mut app).is_empty(), "{line} while busy");
        assert!(app.session_picker().is_none());
    }
    assert!(screen(&mut app, 80, 24).contains("has to wait until the turn ends"));
}

#[test]
fn help_and_the_popup_list_the_new_commands() {
    let mut app = resumed();
    command(&mut app, "/help");
    let s = screen(&mut app, 100, 60);
    for c in [
        "/resume [ID]",
        "/rename TITLE",
        "/fork",
        "/skills",
        "/memory",
    ] {
        assert!(s.contains(c), "{c} missing from /help:\n{s}");
    }
    type_str(&mut app, "/ren");
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("/rename"), "{s}");
    // Enter on a command that needs its argument waits for it.
    key(&mut app, KeyCode::Enter);
    assert!(ops(&mut app).is_empty());
    assert_eq!(app.composer_text(), "/rename ");
}

fn at(minutes_ago: i64) -> Timestamp {
    now() - SignedDuration::from_mins(minutes_ago)
}

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("timestamp")
}

fn summary(id: &str, title: &str, cwd: &str, minutes_ago: i64, count: u64) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        title: title.into(),
        cwd: PathBuf::from(cwd),
        model: if count > 10 {
            "claude-sonnet-4".into()
        } else {
            "qwen3-coder-30b".into()
        },
        created_at: at(minutes_ago + 30),
        updated_at: at(minutes_ago),
        message_count: count,
        path: PathBuf::from(format!("/data/sessions/{id}.jsonl")),
        parent: None,
    }
}

fn sessions() -> Vec<SessionSummary> {
    vec![
        summary(
            "s-resumed",
            "Why does the parser drop the last flag?",
            CWD,
            0,
            24,
        ),
        summary(
            "a1b2c3",
            "Write the release notes",
            "/home/dev/src/site",
            7,
            6,
        ),
        summary("d4e5f6", "Benchmark the session store", CWD, 180, 42),
        summary("0a0b0c", "Parser fixes", CWD, 60 * 30, 8),
        summary(
            "9f8e7d",
            "Explore the sandbox on macOS",
            "/tmp/scratch",
            60 * 24 * 9,
            3,
        ),
    ]
}

/// Opens `/resume` and answers its lookup with [`sessions`].
fn picker_app() -> App {
    let mut app = resumed();
    command(&mut app, "/resume");
    assert!(matches!(&ops(&mut app)[..], [Op::ListSessions]));
    assert!(app.session_picker().is_some_and(SessionPicker::is_loading));
    app.on_agent_event(Event::SessionsListed {
        sessions: sessions(),
        here: vec![PathBuf::from(CWD)],
        now: now(),
    });
    app
}

#[test]
fn picker_lists_this_directory_newest_first() {
    let mut app = picker_app();
    let s = screen(&mut app, 110, 12);
    insta::assert_snapshot!(s);
    key(&mut app, KeyCode::Tab);
    let s = screen(&mut app, 110, 12);
    assert!(s.contains("Write the release notes"), "{s}");
    // The current session is listed too, marked (opening it changes nothing).
    assert!(s.contains("all directories · 5 sessions"), "{s}");
    assert!(s.contains("· current"), "{s}");
}

#[test]
fn picker_filters_as_you_type_and_enter_resumes() {
    let mut app = picker_app();
    type_str(&mut app, "parser");
    let s = screen(&mut app, 110, 12);
    insta::assert_snapshot!(s);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    assert!(matches!(&ops(&mut app)[..], [Op::Resume { id }] if id == "0a0b0c"));
    assert!(app.session_picker().is_none());
    // Back in the conversation.
    assert!(screen(&mut app, 110, 24).contains("Fixed: the loop"));
}

#[test]
fn picker_empty_states_and_esc() {
    let mut app = resumed();
    command(&mut app, "/resume");
    assert!(matches!(&ops(&mut app)[..], [Op::ListSessions]));
    app.on_agent_event(Event::SessionsListed {
        sessions: Vec::new(),
        here: vec![PathBuf::from(CWD)],
        now: now(),
    });
    let s = screen(&mut app, 90, 10);
    insta::assert_snapshot!(s);
    key(&mut app, KeyCode::Esc);
    assert!(app.session_picker().is_none());
    assert!(ops(&mut app).is_empty());

    let mut app = picker_app();
    type_str(&mut app, "zzqx");
    let s = screen(&mut app, 110, 12);
    assert!(
        s.contains("No session of this directory matches \"zzqx\"; tab searches every directory."),
        "{s}"
    );
    key(&mut app, KeyCode::Esc);
    assert!(app.session_picker().is_none());
}

/// A real home and workspace (inside it) with skills and AGENTS.md files.
struct Disk {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn disk() -> Disk {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().canonicalize().expect("canonical").join("home");
    let repo = home.join("proj");
    let ws = repo.join("crates/core");
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
    std::fs::create_dir_all(&ws).expect("mkdir");
    write(
        &home.join(".agents/skills/review/SKILL.md"),
        "---\nname: review\ndescription: the user's own review skill\n---\nbody\n",
    );
    write(
        &home.join(".agents/skills/release/SKILL.md"),
        "---\ndescription: \"Cut a release: bump versions, tag, write the changelog\"\n---\nbody\n",
    );
    write(
        &repo.join(".agents/skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review a diff for bugs, style and missing tests\n---\n",
    );
    write(
        &repo.join(".agents/skills/broken/SKILL.md"),
        "no front matter here\n",
    );
    write(
        &home.join(".agents/AGENTS.md"),
        "Answer briefly.\nPrefer small commits.\n",
    );
    write(
        &repo.join("AGENTS.md"),
        "# Project\nRun `cargo test` before committing.\n",
    );
    write(&ws.join("AGENTS.md"), "This crate has no I/O.\n");
    Disk {
        _dir: dir,
        home,
        ws,
    }
}

/// An app configured in the disk's workspace; runs the command and answers its listing op as
/// the agent does (what the agent finds at start in that workspace).
fn run_lookup_command(d: &Disk, line: &str) -> App {
    let mut app = App::new(
        Theme::dark(),
        Vec::new(),
        Some(d.home.clone()),
        Instant::now(),
    );
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: "s".into(),
        model: "m".into(),
        provider: "openai".into(),
        cwd: d.ws.clone(),
        context_window: 1000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "off".into(),
        history: Vec::new(),
        keep_view: false,
    }));
    command(&mut app, line);
    let asked = ops(&mut app);
    assert_eq!(asked.len(), 1, "{line} asks the agent once: {asked:?}");
    let answer = match asked[0] {
        Op::ListSkills => Event::SkillsListed {
            catalog: rein::skills::discover(Some(&d.home), &d.ws),
        },
        Op::ListMemory => Event::MemoryListed {
            files: rein::agent::prompt::load_agents_md(&d.ws, Some(&d.home)),
        },
        Op::ListSessions => rein::agent::listing::sessions(&d.home.join("data"), &d.ws),
        ref other => panic!("{line} sent {other:?}"),
    };
    app.on_agent_event(answer);
    app
}

#[test]
fn skills_lists_found_and_skipped_skills() {
    let d = disk();
    let mut app = run_lookup_command(&d, "/skills");
    let s = screen(&mut app, 100, 20);
    insta::assert_snapshot!(s);
}

#[test]
fn skills_without_any_says_where_to_put_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Disk {
        home: dir.path().join("home"),
        ws: dir.path().join("ws"),
        _dir: dir,
    };
    std::fs::create_dir_all(&d.ws).expect("mkdir");
    let mut app = run_lookup_command(&d, "/skills");
    let s = screen(&mut app, 100, 16);
    assert!(s.contains("No skills found."), "{s}");
    let mut app = run_lookup_command(&d, "/memory");
    let s = screen(&mut app, 100, 16);
    assert!(s.contains("No AGENTS.md in effect."), "{s}");
}

#[test]
fn memory_shows_the_agents_files_in_order() {
    let d = disk();
    let mut app = run_lookup_command(&d, "/memory");
    let s = screen(&mut app, 100, 20);
    insta::assert_snapshot!(s);
}

#[test]
fn picker_over_two_thousand_sessions_filters_and_opens_the_match() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let (here, there) = (Path::new("/work/here"), Path::new("/work/there"));
    let words = ["parser", "docs", "sandbox", "release", "bench"];
    // Eight writers at once: the fsyncs overlap instead of queueing.
    std::thread::scope(|s| {
        for t in 0..8usize {
            s.spawn(move || {
                for i in (t..2000).step_by(8) {
                    let cwd = if i % 3 == 0 { here } else { there };
                    let header = Header::new(format!("{i:012x}"), cwd, "m", "openai");
                    let mut w = SessionWriter::create(data, header).expect("create");
                    let prompt = if i == 1234 {
                        "Fix the quokka flag in the parser".to_string()
                    } else {
                        format!("Session {i}: look at the {}", words[i % words.len()])
                    };
                    w.append(&Entry::user(prompt)).expect("append");
                    w.sync().expect("sync");
                }
            });
        }
    });
    let target = rein::session_store::find(data, &format!("{:012x}", 1234)).expect("find");
    let listed = rein::session_store::list(data, None);
    assert_eq!(listed.len(), 2000);
    let mut picker =
        SessionPicker::new(listed, &[here.to_path_buf()], Timestamp::now(), None, None);
    assert!(!picker.all_dirs(), "this directory's sessions first");
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    // Session 1234 ran elsewhere: tab widens the search, then the unique word finds it.
    let mut keys = vec![KeyCode::Tab];
    keys.extend("quokka".chars().map(KeyCode::Char));
    keys.push(KeyCode::Enter);
    let mut keys = keys.into_iter();
    let opened = rein::tui::run_picker(&mut term, &mut picker, &Theme::dark(), || {
        let code = keys
            .next()
            .expect("the picker asked for more keys than scripted");
        Ok(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    })
    .expect("picker");
    assert_eq!(opened, Some(target));
    let s = term.backend().to_string();
    assert!(s.contains("Fix the quokka flag in the parser"), "{s}");
    assert_eq!(picker.shown().count(), 1);

    // Esc leaves without a choice.
    let mut picker = SessionPicker::new(
        rein::session_store::list(data, None),
        &[here.to_path_buf()],
        Timestamp::now(),
        None,
        None,
    );
    let opened = rein::tui::run_picker(&mut term, &mut picker, &Theme::dark(), || {
        Ok(TermEvent::Key(KeyEvent::new(
            KeyCode::Esc,
            KeyModifiers::NONE,
        )))
    })
    .expect("picker");
    assert_eq!(opened, None);
}

/// What a cell shows, for comparing two views without their layout or timing.
fn cell_summary(cell: &rein::tui::model::cell::Cell) -> String {
    use rein::tui::model::cell::CellKind;
    match cell.kind() {
        CellKind::User(t) => format!("user: {t}"),
        CellKind::Assistant(s) => format!("assistant: {}", s.text()),
        CellKind::Reasoning { text, streaming } => format!("reasoning: {text} {streaming}"),
        CellKind::Tool(t) => format!(
            "tool: {} {:?} {:?} {} diff={}",
            rein::tui::model::tool::ToolCall::summary(&t.display),
            t.status,
            t.exit_code,
            t.output,
            t.diff.is_some()
        ),
        CellKind::Notice { text, level } => format!("notice: {text} {level:?}"),
        other => format!("{other:?}"),
    }
}

/// One builder of cells: a conversation resumed from its session file shows the same cells
/// as it did live.
#[test]
fn a_resumed_conversation_has_the_cells_it_had_live() {
    use rein::llm::{AssistantPart, ToolCall};
    use rein::session_store::{LoadedSession, rebuild};
    let ls = exec("ls");
    let edit = ToolDisplay::Edit {
        path: "a.txt".into(),
        diff: Some(rein::protocol::EditDiff::between(Some("x\n"), "y\n")),
    };
    let call = |id: &str, name: &str, args: &str| {
        AssistantPart::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        })
    };
    let entries = vec![
        Entry::user("list and fix"),
        Entry::assistant(vec![
            AssistantPart::Thinking {
                text: "look first".into(),
                signature: None,
            },
            AssistantPart::Text {
                text: "Let me look.".into(),
            },
            call("c1", "bash", r#"{"command":"ls"}"#),
            call("c2", "write_file", r#"{"path":"a.txt","content":"y\n"}"#),
        ]),
        Entry::tool_result("c1", "bash", "a.txt", ToolStatus::Ok, Some(5))
            .shown_as(ls.clone(), Some(0)),
        Entry::file_change("a.txt", Some("x\n".into()), Some("y\n".into())),
        Entry::tool_result("c2", "write_file", "Wrote a.txt", ToolStatus::Ok, Some(3))
            .shown_as(edit.clone(), None),
        Entry::assistant(vec![AssistantPart::Text {
            text: "Fixed a.txt.".into(),
        }]),
    ];
    let resumed = rebuild(LoadedSession {
        path: "/d/s.jsonl".into(),
        header: Header::new("s", std::path::Path::new(CWD), "m", "openai"),
        entries,
        notices: Vec::new(),
    });
    let mut replayed = new_app(HOME);
    replayed.on_agent_event(info("s", resumed.view, false));

    let mut live = new_app(HOME);
    live.on_agent_event(info("s", Vec::new(), false));
    type_str(&mut live, "list and fix");
    key(&mut live, KeyCode::Enter);
    let finished = |id: &str, output: &str, exit_code| Event::ToolCallFinished {
        call_id: id.into(),
        status: ToolStatus::Ok,
        output: output.into(),
        elapsed_ms: 5,
        exit_code,
    };
    for event in [
        Event::TurnStarted,
        Event::ReasoningDelta {
            text: "look first".into(),
        },
        Event::AssistantDelta {
            text: "Let me look.".into(),
        },
        Event::AssistantMessage {
            text: "Let me look.".into(),
        },
        Event::ToolCallStarted {
            call_id: "c1".into(),
            display: ls,
        },
        Event::ToolOutputDelta {
            call_id: "c1".into(),
            chunk: "a.txt".into(),
        },
        finished("c1", "a.txt", Some(0)),
        Event::ToolCallStarted {
            call_id: "c2".into(),
            display: edit,
        },
        Event::FileChanged {
            call_id: "c2".into(),
            path: "a.txt".into(),
            old: Some("x\n".into()),
            new: Some("y\n".into()),
        },
        finished("c2", "Wrote a.txt", None),
        Event::AssistantMessage {
            text: "Fixed a.txt.".into(),
        },
        Event::TurnFinished {
            outcome: rein::protocol::TurnOutcome::Completed,
        },
    ] {
        live.on_agent_event(event);
    }
    let cells = |app: &App| app.cells().iter().map(cell_summary).collect::<Vec<_>>();
    assert_eq!(cells(&replayed), cells(&live));
    assert_eq!(cells(&replayed).len(), 6, "{:#?}", cells(&replayed));
}
