//! Behaviour as scenarios, helix style: an initial state (agent events), the keys a person
//! types, and the cells, ops and screen that must follow.

use super::*;
use crate::protocol::{ApprovalRequest, EditDiff, ToolDisplay};

/// An app after `events`, then `keys` typed as a terminal sends them: `<enter>`, `<esc>`,
/// `<tab>`, `<up>`, `<down>`, `<C-x>` for Ctrl+x, anything else as typed characters.
fn scenario(events: Vec<Event>, keys: &str) -> App {
    let mut app = app();
    for ev in events {
        app.on_agent_event(ev);
    }
    let mut rest = keys;
    while !rest.is_empty() {
        let named = rest
            .strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .filter(|(name, _)| !name.is_empty() && !name.contains(' '));
        match named {
            Some((name, after)) => {
                named_key(&mut app, name);
                rest = after;
            }
            None => {
                let c = rest.chars().next().unwrap_or(' ');
                key(&mut app, KeyCode::Char(c));
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    app
}

fn named_key(app: &mut App, name: &str) {
    match name {
        "enter" => key(app, KeyCode::Enter),
        "esc" => key(app, KeyCode::Esc),
        "tab" => key(app, KeyCode::Tab),
        "up" => key(app, KeyCode::Up),
        "down" => key(app, KeyCode::Down),
        ctrl if ctrl.starts_with("C-") => {
            let c = ctrl[2..].chars().next().unwrap_or(' ');
            press(app, KeyCode::Char(c), KeyModifiers::CONTROL);
        }
        other => panic!("unknown key <{other}>"),
    }
}

fn approval(id: &str, display: ToolDisplay) -> Event {
    approval_with_rule(id, display, None)
}

/// A question whose `a` would add `always` (`None`: no rule can be made, `a` is not offered).
fn approval_with_rule(id: &str, display: ToolDisplay, always: Option<&str>) -> Event {
    Event::ApprovalRequested(ApprovalRequest {
        id: id.into(),
        call_id: format!("c{id}"),
        display,
        cwd: PathBuf::from("/w"),
        part: String::new(),
        reason: "no rule matched (default ask)".into(),
        subagent: None,
        always: always.map(str::to_string),
        no_always: None,
    })
}

fn edit(path: &str, old: &str, new: &str) -> ToolDisplay {
    ToolDisplay::Edit {
        path: path.into(),
        diff: Some(EditDiff::between(Some(old), new)),
    }
}

#[test]
fn a_typed_message_is_sent_and_shown() {
    let mut app = scenario(vec![], "fix the bug<enter>");
    assert_eq!(cell_texts(&app), ["user: fix the bug"]);
    assert!(matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "fix the bug"));
    assert_eq!(app.composer_text(), "");
}

#[test]
fn an_edit_dialog_shows_the_change_and_y_answers_it() {
    let events = vec![
        Event::TurnStarted,
        approval_with_rule(
            "1",
            edit("src/a.rs", "one\ntwo\n", "one\n2\n"),
            Some("edits of src/a.rs"),
        ),
    ];
    let mut app = scenario(events.clone(), "");
    let screen = frame(&mut app);
    assert!(screen.contains("Allow edit src/a.rs? +1 −1"), "{screen}");
    assert!(
        screen.contains("- two") && screen.contains("+ 2"),
        "{screen}"
    );
    assert!(
        screen.contains("a don't ask again this session for: edits of")
            && screen.contains("src/a.rs"),
        "{screen}"
    );
    let mut app = scenario(events, "y");
    assert!(matches!(
        &ops(&mut app)[..],
        [Op::Approval { id, decision: Decision::Yes, note: None }] if id == "1"
    ));
    assert_eq!(app.pending_approvals(), 0);
}

#[test]
fn an_other_tools_dialog_shows_its_arguments() {
    let display = ToolDisplay::Mcp {
        name: "mcp__tickets__close".into(),
        server: "tickets".into(),
        tool: "close".into(),
        args: serde_json::json!({"ticket": 42, "reason": "fixed"}),
    };
    let mut app = scenario(vec![Event::TurnStarted, approval("1", display)], "");
    let screen = frame(&mut app);
    // An MCP call names the server that gets the arguments, apart from the tool.
    assert!(
        screen.contains("Allow MCP tool close of tickets?"),
        "{screen}"
    );
    assert!(screen.contains("server tickets  tool close"), "{screen}");
    assert!(screen.contains("\"ticket\": 42"), "{screen}");
    assert!(
        !screen.contains("ask again"),
        "`a` offered without a rule: {screen}"
    );
    // A name shaped like an MCP tool's is not parsed: only a display that says so names a
    // server.
    let other = ToolDisplay::Other {
        name: "mcp__custom__x".into(),
        args: serde_json::json!({"x": 1}),
    };
    let mut app = scenario(vec![Event::TurnStarted, approval("1", other)], "");
    let screen = frame(&mut app);
    assert!(screen.contains("Allow mcp__custom__x?"), "{screen}");
    assert!(!screen.contains("server "), "{screen}");
}

#[test]
fn a_note_goes_with_a_no() {
    let events = vec![
        Event::TurnStarted,
        approval(
            "1",
            ToolDisplay::Exec {
                command: "make deploy".into(),
            },
        ),
    ];
    let mut app = scenario(events, "<tab>use make test<enter>n");
    assert!(matches!(
        &ops(&mut app)[..],
        [Op::Approval { decision: Decision::No, note: Some(n), .. }] if n == "use make test"
    ));
}

#[test]
fn diff_with_nothing_written_says_so_even_after_a_refused_edit() {
    let events = vec![
        Event::TurnStarted,
        Event::ToolCallStarted {
            call_id: "e".into(),
            display: edit("a.txt", "x\n", "y\n"),
        },
        Event::ToolCallFinished {
            call_id: "e".into(),
            status: ToolStatus::Error,
            output: "Error: the file changed since you proposed this edit; read it again.".into(),
            elapsed_ms: 1,
            exit_code: None,
        },
        Event::TurnFinished {
            outcome: TurnOutcome::Completed,
        },
    ];
    let mut app = scenario(events, "/diff<enter>");
    let screen = frame(&mut app);
    assert!(
        screen.contains("no file changes in this session yet"),
        "{screen}"
    );
    assert!(
        !screen.contains("a.txt (+1 −1)"),
        "a failed edit's line counts a change it did not make: {screen}"
    );
    assert!(
        screen.contains("proposed change (+1 −1), not written"),
        "{screen}"
    );
}

#[test]
fn a_resumed_edit_shows_the_diff_it_wrote_and_a_command_its_exit_code() {
    // The session file kept no contents for the edit: its own diff shows what it wrote.
    let history = vec![
        Event::ToolCallStarted {
            call_id: "e".into(),
            display: edit("src/a.rs", "one\ntwo\n", "one\n2\n"),
        },
        Event::FileChanged {
            call_id: "e".into(),
            path: "src/a.rs".into(),
            old: None,
            new: None,
        },
        Event::ToolCallFinished {
            call_id: "e".into(),
            status: ToolStatus::Ok,
            output: "Edited src/a.rs".into(),
            elapsed_ms: 4,
            exit_code: None,
        },
        Event::ToolCallStarted {
            call_id: "b".into(),
            display: ToolDisplay::Exec {
                command: "cargo test".into(),
            },
        },
        Event::ToolCallFinished {
            call_id: "b".into(),
            status: ToolStatus::Ok,
            output: "test result: FAILED".into(),
            elapsed_ms: 900,
            exit_code: Some(101),
        },
    ];
    let resumed = Event::SessionConfigured(SessionInfo {
        session_id: "s2".into(),
        model: "m".into(),
        provider: "openai".into(),
        cwd: PathBuf::from("/w"),
        context_window: 1000,
        approval_mode: "ask".into(),
        sandbox_mode: "off".into(),
        mode: crate::protocol::ApprovalMode::Ask,
        history,
        keep_view: false,
    });
    let mut app = scenario(vec![resumed], "");
    let screen = frame(&mut app);
    assert!(screen.contains("edit  src/a.rs (+1 −1)"), "{screen}");
    assert!(
        screen.contains("- two") && screen.contains("+ 2"),
        "{screen}"
    );
    assert!(screen.contains("bash  cargo test  exit 101"), "{screen}");
}

#[test]
fn esc_refuses_after_a_pause_and_a_second_esc_refuses_and_stops() {
    let command = |c: &str| ToolDisplay::Exec { command: c.into() };
    let events = vec![Event::TurnStarted, approval("1", command("make deploy"))];
    // One Esc: nothing goes out at once (a second may follow), then the refusal alone.
    let mut app = scenario(events.clone(), "<esc>");
    assert!(ops(&mut app).is_empty());
    assert!(frame(&mut app).contains("esc again stops the turn"));
    let later = app.now + crate::tui::app::DOUBLE_ESC;
    app.set_now(later);
    app.on_tick();
    assert!(matches!(
        &ops(&mut app)[..],
        [Op::Approval { id, decision: Decision::No, .. }] if id == "1"
    ));
    assert_eq!(app.pending_approvals(), 0);
    // Esc Esc: refused and stopped, nothing left to answer.
    let mut events = events;
    events.push(approval("2", command("make release")));
    let mut app = scenario(events, "<esc><esc>");
    let sent = ops(&mut app);
    assert!(
        matches!(
            &sent[..],
            [
                Op::Approval {
                    decision: Decision::No,
                    ..
                },
                Op::Approval {
                    decision: Decision::No,
                    ..
                },
                Op::Interrupt
            ]
        ),
        "{sent:?}"
    );
    assert_eq!(app.pending_approvals(), 0);
}
