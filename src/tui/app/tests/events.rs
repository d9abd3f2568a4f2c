//! Agent events: streaming, tools, scrolling, resume.

use super::*;

#[test]
fn streaming_text_fills_one_cell_and_a_retry_discards_it() {
    let mut app = app();
    app.on_agent_event(Event::ReasoningDelta { text: "hmm".into() });
    app.on_agent_event(Event::AssistantDelta { text: "Hel".into() });
    app.on_agent_event(Event::AssistantDelta {
        text: "lo wrong".into(),
    });
    app.on_agent_event(Event::Retrying {
        attempt: 2,
        max_attempts: 3,
        delay_ms: 1500,
        reason: "HTTP 503".into(),
    });
    assert_eq!(
        cell_texts(&app),
        vec!["notice: retrying in 1.5 s (attempt 2 of 3): HTTP 503"]
    );
    app.on_agent_event(Event::AssistantDelta {
        text: "Hello".into(),
    });
    app.on_agent_event(Event::AssistantMessage {
        text: "Hello, world".into(),
    });
    app.on_agent_event(Event::AssistantDelta {
        text: "Next".into(),
    });
    // The retry worked: its transient line is gone.
    assert_eq!(
        cell_texts(&app),
        [
            "assistant: Hello, world".to_string(),
            "assistant: Next".to_string()
        ]
    );
}

#[test]
fn tool_calls_and_file_changes_end_up_in_their_cells() {
    let mut app = app();
    app.busy = true;
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "e".into(),
        display: crate::protocol::ToolDisplay::Edit {
            path: "src/lib.rs".into(),
            diff: None,
        },
    });
    app.on_agent_event(Event::FileChanged {
        call_id: "e".into(),
        path: "src/lib.rs".into(),
        old: Some("a\nb\n".into()),
        new: Some("a\nc\n".into()),
    });
    app.on_agent_event(Event::ToolCallFinished {
        call_id: "e".into(),
        status: ToolStatus::Ok,
        output: "ok".into(),
        elapsed_ms: 3,
        exit_code: None,
    });
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "s".into(),
        display: crate::protocol::ToolDisplay::Exec {
            command: "sleep 100".into(),
        },
    });
    let screen = frame(&mut app);
    assert!(screen.contains("edit  src/lib.rs (+1 −1)"), "{screen}");
    assert!(screen.contains("- b") && screen.contains("+ c"), "{screen}");
    assert!(app.is_animating(), "a running tool spins");
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Interrupted,
    });
    match app.cells()[1].kind() {
        CellKind::Tool(t) => assert_eq!(t.status, Some(ToolStatus::Interrupted)),
        other => panic!("{other:?}"),
    }
    assert!(!app.is_animating());
    assert!(app.next_wakeup().is_none());

    // /diff: every change of the session, first old → last new, per file.
    app.on_agent_event(Event::FileChanged {
        call_id: "later".into(),
        path: "src/lib.rs".into(),
        old: Some("a\nc\n".into()),
        new: Some("a\nd\n".into()),
    });
    app.on_agent_event(Event::FileChanged {
        call_id: "later2".into(),
        path: "new.txt".into(),
        old: None,
        new: Some("x\n".into()),
    });
    app.composer.set_text("/diff");
    app.popup = None;
    key(&mut app, KeyCode::Enter);
    match &app.cells().last().map(|c| c.kind()) {
        Some(CellKind::Diff(files)) => {
            assert_eq!(files.len(), 2);
            assert_eq!(
                (
                    files[0].path.as_str(),
                    files[0].diff.added,
                    files[0].diff.removed
                ),
                ("src/lib.rs", 1, 1)
            );
            assert!(files[1].diff.created);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn scrolling_up_stops_following_and_counts_new_cells() {
    let mut app = app();
    for i in 0..30 {
        app.on_agent_event(Event::notice(format!("line {i}")));
    }
    let screen = frame(&mut app);
    assert!(screen.contains("line 29"), "follows the bottom: {screen}");
    key(&mut app, KeyCode::PageUp);
    let screen = frame(&mut app);
    assert!(!screen.contains("line 29"), "{screen}");
    assert!(!app.is_following());
    app.on_agent_event(Event::notice("fresh 1"));
    app.on_agent_event(Event::notice("fresh 2"));
    let screen = frame(&mut app);
    assert!(
        !screen.contains("fresh"),
        "the view stays put while scrolled up"
    );
    assert!(screen.contains("↓ 2 new"), "{screen}");
    assert_eq!(app.new_below(), 2);

    press(&mut app, KeyCode::Home, KeyModifiers::CONTROL);
    assert!(frame(&mut app).contains("line 0"));
    press(&mut app, KeyCode::End, KeyModifiers::CONTROL);
    let screen = frame(&mut app);
    assert!(
        screen.contains("fresh 2") && !screen.contains("new "),
        "{screen}"
    );
    assert!(app.is_following());

    // Scrolling back down by wheel reaches the bottom and follows again.
    for _ in 0..3 {
        app.on_terminal_event(TermEvent::Mouse(crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::ScrollUp,
            column: 5,
            row: 5,
            modifiers: KeyModifiers::NONE,
        }));
    }
    frame(&mut app);
    assert!(!app.is_following());
    key(&mut app, KeyCode::PageDown);
    key(&mut app, KeyCode::PageDown);
    frame(&mut app);
    assert!(app.is_following());
}

#[test]
fn clicking_a_tool_call_expands_it() {
    let mut app = app();
    app.on_agent_event(Event::ToolCallStarted {
        call_id: "a".into(),
        display: crate::protocol::ToolDisplay::Exec {
            command: "seq 20".into(),
        },
    });
    let out: String = (1..=20).map(|i| format!("{i}\n")).collect();
    app.on_agent_event(Event::ToolCallFinished {
        call_id: "a".into(),
        status: ToolStatus::Ok,
        output: out,
        elapsed_ms: 1,
        exit_code: None,
    });
    // A command's output shows its tail.
    let f = frame(&mut app);
    assert!(f.contains("15 earlier lines") && f.contains("20"), "{f}");
    app.on_terminal_event(TermEvent::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: 4,
        row: 0,
        modifiers: KeyModifiers::NONE,
    }));
    let screen = frame(&mut app);
    assert!(
        !screen.contains("more lines") && screen.contains("│ 9"),
        "{screen}"
    );
    press(&mut app, KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert!(app.expand_all);
}

#[test]
fn usage_and_compaction_show_up() {
    let mut app = app();
    app.on_agent_event(Event::Usage {
        used_tokens: 850,
        context_window: 1000,
    });
    app.on_agent_event(Event::Compacted {
        before_tokens: 104_000,
        after_tokens: 31_000,
    });
    let screen = frame(&mut app);
    assert!(screen.contains("850/1.0k 85%"), "{screen}");
    assert!(
        screen.contains("context compacted: 104k → 31k tokens"),
        "{screen}"
    );
}

#[test]
fn a_resumed_session_rebuilds_the_view_and_early_warnings_stay() {
    let mut app = App::new(Theme::dark(), Vec::new(), None, Instant::now());
    app.warn("unknown theme \"neon\"");
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: "s2".into(),
        model: "m".into(),
        provider: "anthropic".into(),
        cwd: PathBuf::from("/w"),
        context_window: 1000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "off".into(),
        history: vec![
            Event::UserMessage { text: "hi".into() },
            Event::ReasoningDelta {
                text: "think".into(),
            },
            Event::AssistantMessage {
                text: "hello".into(),
            },
            // A call that never ended: the replay ends it, interrupted.
            Event::ToolCallStarted {
                call_id: "t".into(),
                display: crate::protocol::ToolDisplay::Exec {
                    command: "ls".into(),
                },
            },
            Event::TodosUpdated {
                todos: vec![crate::protocol::Todo {
                    content: "a".into(),
                    active_form: "doing a".into(),
                    status: crate::protocol::TodoStatus::InProgress,
                }],
            },
        ],
        keep_view: false,
    }));
    assert_eq!(
        cell_texts(&app),
        vec![
            "user: hi",
            "reasoning: think",
            "assistant: hello",
            "tool: bash  ls",
            "todos: 1",
            "notice: unknown theme \"neon\""
        ]
    );
    assert_eq!(app.todos.len(), 1);
    match app.cells()[3].kind() {
        CellKind::Tool(t) => {
            assert_eq!(t.status, Some(ToolStatus::Interrupted));
            assert_eq!(t.elapsed_ms, None, "a replayed call shows no duration");
        }
        other => panic!("{other:?}"),
    }
    // A later configuration (/clear) starts from an empty view.
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: "s3".into(),
        model: "m".into(),
        provider: "anthropic".into(),
        cwd: PathBuf::from("/w"),
        context_window: 1000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "off".into(),
        history: Vec::new(),
        keep_view: false,
    }));
    assert!(app.cells().is_empty());
    assert!(app.todos.is_empty());
}

#[test]
fn the_status_line_says_while_the_first_scan_runs() {
    let mut app = app();
    assert!(!frame(&mut app).contains("indexing workspace…"));
    app.on_agent_event(Event::Indexing { active: true });
    let shown = frame(&mut app);
    assert!(shown.contains("m · indexing workspace…"), "{shown}");
    app.on_agent_event(Event::Indexing { active: false });
    assert!(!frame(&mut app).contains("indexing workspace…"));
}

/// A notice is marked by the level it comes with, never by its wording.
#[test]
fn a_notices_level_comes_from_the_event_not_its_words() {
    use crate::protocol::NoticeLevel;
    use crate::tui::model::cell::Level;
    let mut app = app();
    app.on_agent_event(Event::Notice {
        level: NoticeLevel::Error,
        text: "the server went away".into(),
    });
    app.on_agent_event(Event::notice("Error: only a word here"));
    app.on_agent_event(Event::Notice {
        level: NoticeLevel::Warn,
        text: "skipped a file".into(),
    });
    let levels: Vec<Level> = app
        .cells()
        .iter()
        .filter_map(|c| match c.kind() {
            CellKind::Notice { level, .. } => Some(*level),
            _ => None,
        })
        .collect();
    assert_eq!(levels, [Level::Error, Level::Info, Level::Warn]);
}

/// A failure the agent reports (`Event::error`) is an error notice, a subagent's labelled with
/// its task, and drawn with the error mark.
#[test]
fn an_agent_error_is_shown_as_an_error_notice() {
    use crate::tui::model::cell::Level;
    let mut app = app();
    super::start_subagent(&mut app, "t1", "find the parser");
    app.on_agent_event(Event::Subagent {
        task_id: "t1".into(),
        event: Box::new(Event::error("the subagent lost its way")),
    });
    app.on_agent_event(Event::error("Cannot resume nope: no such session"));
    let notices: Vec<(String, Level)> = app
        .cells()
        .iter()
        .filter_map(|c| match c.kind() {
            CellKind::Notice { text, level } => Some((text.clone(), *level)),
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        [
            (
                "find the parser: the subagent lost its way".to_string(),
                Level::Error
            ),
            (
                "Cannot resume nope: no such session".to_string(),
                Level::Error
            ),
        ]
    );
    let shown = frame(&mut app);
    assert!(
        shown.contains("✗ Cannot resume nope: no such session"),
        "{shown}"
    );
}
