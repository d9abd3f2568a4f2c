//! Behaviour of the app: keys and agent events in, effects and view state out.

mod custom_commands;
mod events;
mod popups;
mod scenarios;

use super::*;
use crate::protocol::{Decision, Event, SessionInfo, ToolDisplay, ToolStatus, TurnOutcome};
use crate::tui::model::tool::ToolCall;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub(super) fn app() -> App {
    let mut app = App::new(
        Theme::dark(),
        vec!["older".into(), "newer".into()],
        None,
        Instant::now(),
    );
    app.on_agent_event(Event::SessionConfigured(SessionInfo {
        session_id: "s1".into(),
        model: "m".into(),
        provider: "openai".into(),
        cwd: PathBuf::from("/w"),
        context_window: 1000,
        approval_mode: "ask".into(),
        mode: Default::default(),
        sandbox_mode: "workspace-write".into(),
        history: Vec::new(),
        keep_view: false,
    }));
    app
}

pub(super) fn press(app: &mut App, code: KeyCode, mods: KeyModifiers) {
    app.on_terminal_event(TermEvent::Key(KeyEvent::new(code, mods)));
}

pub(super) fn key(app: &mut App, code: KeyCode) {
    press(app, code, KeyModifiers::NONE);
}

pub(super) fn type_str(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

pub(super) fn ops(app: &mut App) -> Vec<Op> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Op(op) => Some(op),
            _ => None,
        })
        .collect()
}

pub(super) fn frame(app: &mut App) -> String {
    let area = Rect::new(0, 0, 60, 16);
    let mut buf = Buffer::empty(area);
    crate::tui::view::draw_buffer(area, &mut buf, app);
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

pub(super) fn cell_texts(app: &App) -> Vec<String> {
    app.cells()
        .iter()
        .map(|c| match c.kind() {
            CellKind::User(t) => format!("user: {t}"),
            CellKind::Assistant(s) => format!("assistant: {}", s.text()),
            CellKind::Notice { text, .. } => format!("notice: {text}"),
            CellKind::Tool(t) => format!("tool: {}", ToolCall::summary(&t.display)),
            CellKind::Reasoning { text, .. } => format!("reasoning: {text}"),
            CellKind::Diff(d) => format!("diff: {}", d.len()),
            CellKind::Todos(t) => format!("todos: {}", t.len()),
            CellKind::Compacted { .. } => "compacted".into(),
            CellKind::Info(_) => "info".into(),
        })
        .collect()
}

#[test]
fn enter_sends_and_messages_typed_while_busy_are_queued_until_the_turn_ends() {
    let mut app = app();
    type_str(&mut app, "first");
    key(&mut app, KeyCode::Enter);
    let sent = ops(&mut app);
    assert!(matches!(&sent[..], [Op::UserInput { text }] if text == "first"));
    assert!(app.is_busy());
    app.on_agent_event(Event::TurnStarted);

    type_str(&mut app, "second");
    key(&mut app, KeyCode::Enter);
    type_str(&mut app, "third");
    key(&mut app, KeyCode::Enter);
    assert!(ops(&mut app).is_empty(), "nothing is sent while busy");
    assert_eq!(app.queued().collect::<Vec<_>>(), vec!["second", "third"]);
    assert!(frame(&mut app).contains("queued"));

    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Completed,
    });
    assert!(matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "second"));
    assert_eq!(app.queued().collect::<Vec<_>>(), vec!["third"]);
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Completed,
    });
    assert!(matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "third"));
    assert_eq!(
        cell_texts(&app),
        vec!["user: first", "user: second", "user: third"]
    );
}

#[test]
fn newline_keys_insert_a_line_break_instead_of_sending() {
    let mut app = app();
    type_str(&mut app, "a");
    press(&mut app, KeyCode::Enter, KeyModifiers::SHIFT);
    type_str(&mut app, "b");
    press(&mut app, KeyCode::Enter, KeyModifiers::ALT);
    type_str(&mut app, "c");
    press(&mut app, KeyCode::Char('j'), KeyModifiers::CONTROL);
    type_str(&mut app, "d");
    assert!(ops(&mut app).is_empty());
    assert_eq!(app.composer_text(), "a\nb\nc\nd");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "a\nb\nc\nd"));
}

#[test]
fn esc_interrupts_once_and_closes_a_popup_first() {
    let mut app = app();
    type_str(&mut app, "go");
    key(&mut app, KeyCode::Enter);
    ops(&mut app);
    type_str(&mut app, "/");
    assert!(app.popup.is_some());
    key(&mut app, KeyCode::Esc);
    assert!(app.popup.is_none(), "the popup closes first");
    assert!(ops(&mut app).is_empty());
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Esc);
    let sent = ops(&mut app);
    assert_eq!(sent.len(), 1, "one interrupt: {sent:?}");
    assert!(matches!(sent[0], Op::Interrupt));
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Interrupted,
    });
    assert!(!app.is_busy());
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("notice: interrupted")
    );
    // Idle: Esc does nothing.
    key(&mut app, KeyCode::Esc);
    assert!(ops(&mut app).is_empty());
}

#[test]
fn ctrl_c_clears_then_interrupts_and_twice_within_a_second_quits() {
    let mut app = app();
    let t0 = app.now;
    type_str(&mut app, "draft");
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.composer_text(), "", "first press clears the composer");
    assert!(!app.should_quit());

    // Pressed again after more than a second: not a double press.
    app.set_now(t0 + Duration::from_millis(1_500));
    assert!(
        app.next_wakeup().is_none(),
        "the hint expired; idle means no wake-ups"
    );
    app.on_tick();
    type_str(&mut app, "work");
    key(&mut app, KeyCode::Enter);
    ops(&mut app);
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(&ops(&mut app)[..], [Op::Interrupt]));
    assert!(!app.should_quit());
    assert!(frame(&mut app).contains("again to quit"));

    app.set_now(t0 + Duration::from_millis(2_200));
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(app.should_quit());
    assert!(app.take_effects().iter().any(|e| matches!(e, Effect::Quit)));
}

#[test]
fn ctrl_d_quits_only_on_an_empty_composer() {
    let mut app = app();
    type_str(&mut app, "x");
    press(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(!app.should_quit());
    app.composer.clear();
    press(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(app.should_quit());
}

/// A `task` call `id` whose subagent has started on `description`.
fn start_subagent(app: &mut App, id: &str, description: &str) {
    app.on_agent_event(Event::ToolCallStarted {
        call_id: id.into(),
        display: ToolDisplay::Task {
            description: description.into(),
        },
    });
    app.on_agent_event(Event::SubagentStarted {
        task_id: id.into(),
        description: description.into(),
    });
}

fn bash_request(id: &str) -> crate::protocol::ApprovalRequest {
    crate::protocol::ApprovalRequest {
        id: id.into(),
        call_id: format!("c{id}"),
        display: ToolDisplay::Exec {
            command: "make deploy".into(),
        },
        cwd: PathBuf::from("/w"),
        part: "make deploy".into(),
        reason: "no rule matched (default ask)".into(),
        subagent: None,
        always: Some("bash(cargo test*)".into()),
        no_always: None,
    }
}

#[test]
fn approval_keys_answer_in_order_with_notes() {
    let mut app = app();
    app.busy = true;
    for id in ["1", "2", "3", "4"] {
        app.on_agent_event(Event::ApprovalRequested(bash_request(id)));
    }
    assert!(frame(&mut app).contains("1 of 4"));
    // Typing goes to the modal, never to the composer.
    key(&mut app, KeyCode::Char('y'));
    assert!(frame(&mut app).contains("2 of 4"));
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Tab);
    type_str(&mut app, "use make test");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('n'));
    key(&mut app, KeyCode::Esc);
    // Esc's refusal goes out once no second Esc came.
    let later = app.now + super::DOUBLE_ESC;
    app.set_now(later);
    app.on_tick();
    let answers: Vec<(String, Decision, Option<String>)> = ops(&mut app)
        .into_iter()
        .filter_map(|op| match op {
            Op::Approval { id, decision, note } => Some((id, decision, note)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        vec![
            ("1".into(), Decision::Yes, None),
            ("2".into(), Decision::Always, None),
            ("3".into(), Decision::No, Some("use make test".into())),
            ("4".into(), Decision::No, None),
        ]
    );
    assert_eq!(app.pending_approvals(), 0);
    assert_eq!(app.composer_text(), "");
    assert!(
        app.is_busy(),
        "esc on a modal answers no; it does not interrupt"
    );
}

#[test]
fn subagent_approvals_are_labelled_and_ctrl_c_refuses_everything() {
    let mut app = app();
    app.busy = true;
    start_subagent(&mut app, "t1", "find the parser");
    app.on_agent_event(Event::Subagent {
        task_id: "t1".into(),
        event: Box::new(Event::ApprovalRequested(bash_request("s1"))),
    });
    app.on_agent_event(Event::ApprovalRequested(bash_request("m1")));
    assert_eq!(
        app.approvals.front().and_then(|r| r.subagent.as_deref()),
        Some("find the parser")
    );
    assert!(frame(&mut app).contains("subagent: find the parser"));
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    let sent = ops(&mut app);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(matches!(
        sent[0],
        Op::Approval {
            decision: Decision::No,
            ..
        }
    ));
    assert!(matches!(
        sent[1],
        Op::Approval {
            decision: Decision::No,
            ..
        }
    ));
    assert!(matches!(sent[2], Op::Interrupt));
}

#[test]
fn up_and_down_walk_the_history_and_sent_messages_are_saved() {
    let mut app = app();
    key(&mut app, KeyCode::Up);
    assert_eq!(app.composer_text(), "newer");
    key(&mut app, KeyCode::Up);
    assert_eq!(app.composer_text(), "older");
    key(&mut app, KeyCode::Down);
    assert_eq!(app.composer_text(), "newer");
    key(&mut app, KeyCode::Enter);
    let effects = app.take_effects();
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::SaveHistory(t) if t == "newer"))
    );
    // The sent message is the newest entry now.
    key(&mut app, KeyCode::Up);
    assert_eq!(app.composer_text(), "newer");
    key(&mut app, KeyCode::Down);
    assert_eq!(app.composer_text(), "");
}

#[test]
fn large_pastes_show_collapsed_and_are_sent_whole() {
    let mut app = app();
    let big: String = (0..40).map(|i| format!("row {i}\n")).collect();
    type_str(&mut app, "see: ");
    app.on_terminal_event(TermEvent::Paste(big.clone()));
    assert_eq!(app.composer_text(), "see: [pasted 40 lines]");
    assert!(frame(&mut app).contains("[pasted 40 lines]"));
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&ops(&mut app)[..], [Op::UserInput { text }] if *text == format!("see: {big}"))
    );
}

#[test]
fn slash_commands_run_locally() {
    let mut app = app();
    let run = |app: &mut App, line: &str| {
        app.composer.set_text(line);
        app.popup = None;
        key(app, KeyCode::Enter);
        ops(app)
    };
    assert!(
        matches!(&run(&mut app, "/compact the parser")[..], [Op::Compact { focus: Some(f) }] if f == "the parser")
    );
    assert!(matches!(
        &run(&mut app, "/compact")[..],
        [Op::Compact { focus: None }]
    ));
    assert!(
        matches!(&run(&mut app, "/model gpt-5")[..], [Op::SetModel { model }] if model == "gpt-5")
    );
    // Without a name: the picker asks the agent for the server's list.
    assert!(matches!(&run(&mut app, "/model")[..], [Op::ListModels]));
    assert!(app.model_picker.is_some());
    app.on_agent_event(Event::Models {
        models: vec![],
        error: Some("HTTP 404".into()),
    });
    assert!(app.model_picker.is_none());
    assert!(
        cell_texts(&app)
            .last()
            .is_some_and(|t| t.contains("model: m") && t.contains("HTTP 404"))
    );
    assert!(
        run(&mut app, "/frobnicate").is_empty(),
        "unknown commands never reach the model"
    );
    assert!(
        cell_texts(&app)
            .last()
            .is_some_and(|t| t.contains("unknown command /frobnicate"))
    );
    assert!(run(&mut app, "/help").is_empty());
    assert_eq!(cell_texts(&app).last().map(String::as_str), Some("info"));

    app.on_agent_event(Event::AssistantMessage {
        text: "the answer".into(),
    });
    assert!(run(&mut app, "/copy").is_empty());
    app.composer.set_text("/copy");
    app.popup = None;
    key(&mut app, KeyCode::Enter);
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Copy(t) if t == "the answer"))
    );

    app.on_agent_event(Event::TodosUpdated { todos: Vec::new() });
    assert!(run(&mut app, "/todos").is_empty());
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("todos: 0")
    );

    assert!(matches!(&run(&mut app, "/clear")[..], [Op::Clear]));
    assert!(app.cells().is_empty());
    assert!(run(&mut app, "/quit").is_empty());
    assert!(app.should_quit());
}

#[test]
fn agent_commands_wait_for_the_turn() {
    let mut app = app();
    app.busy = true;
    app.composer.set_text("/clear");
    app.popup = None;
    key(&mut app, KeyCode::Enter);
    assert!(ops(&mut app).is_empty());
    assert!(!app.cells().is_empty(), "the view was not cleared");
}

#[test]
fn the_slash_popup_filters_completes_and_runs() {
    let mut app = app();
    type_str(&mut app, "/co");
    let labels: Vec<String> = app
        .popup
        .as_ref()
        .map(|p| p.picker.items.iter().map(|i| i.label.clone()).collect())
        .unwrap_or_default();
    assert_eq!(labels, vec!["/compact [focus]", "/copy"]);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.composer_text(), "/copy ");
    assert!(app.popup.is_none());
    app.composer.clear();
    type_str(&mut app, "/cle");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(&ops(&mut app)[..], [Op::Clear]));
}

#[test]
fn at_completion_lists_files_and_inserts_the_choice() {
    let mut app = app();
    type_str(&mut app, "look at @mai");
    let effects = app.take_effects();
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::IndexFiles(p) if p == std::path::Path::new("/w")))
    );
    assert!(frame(&mut app).contains("listing files"));
    app.set_files(vec![
        "README.md".into(),
        "src/main.rs".into(),
        "src/lib.rs".into(),
    ]);
    let first = app
        .popup
        .as_ref()
        .and_then(|p| p.picker.selected_item())
        .map(|i| i.label.clone());
    assert_eq!(first.as_deref(), Some("src/main.rs"));
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.composer_text(), "look at @src/main.rs ");
    assert!(ops(&mut app).is_empty(), "choosing a file does not send");
}

#[test]
fn a_double_slash_sends_a_message_starting_with_a_slash() {
    let mut app = app();
    app.composer.set_text("//usr/bin is missing");
    app.popup = None;
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&ops(&mut app)[..], [Op::UserInput { text }] if text == "/usr/bin is missing")
    );
}

#[test]
fn a_modal_that_interrupts_typing_ignores_letters_until_a_pause() {
    let mut app = app();
    app.busy = true;
    let t0 = app.now;
    type_str(&mut app, "now also ");
    app.on_agent_event(Event::ApprovalRequested(bash_request("1")));
    // The person keeps typing "make sure..." for a while: none of it answers.
    for (i, c) in "yes and a note".chars().enumerate() {
        app.set_now(t0 + Duration::from_millis(100 * i as u64));
        key(&mut app, KeyCode::Char(c));
    }
    assert!(ops(&mut app).is_empty());
    assert_eq!(app.pending_approvals(), 1);
    assert_eq!(app.composer_text(), "now also ", "the draft is kept");
    // After a pause, a deliberate answer counts.
    app.set_now(t0 + Duration::from_millis(1_400) + APPROVAL_GUARD);
    key(&mut app, KeyCode::Char('y'));
    assert!(matches!(
        &ops(&mut app)[..],
        [Op::Approval {
            decision: Decision::Yes,
            ..
        }]
    ));
}

#[test]
fn a_pasted_image_path_becomes_a_mention_and_its_label_joins_the_cell() {
    let mut app = app();
    app.on_terminal_event(TermEvent::Paste("'/tmp/My Shot.png'".into()));
    assert_eq!(app.composer_text(), "@\"/tmp/My Shot.png\" ");
    type_str(&mut app, "what is it?");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(
        &ops(&mut app)[..],
        [Op::UserInput { text }] if text == "@\"/tmp/My Shot.png\" what is it?"
    ));
    app.on_agent_event(Event::TurnStarted);
    app.on_agent_event(Event::ImagesAttached {
        labels: vec!["[image My Shot.png 1280×720]".into()],
    });
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("user: @\"/tmp/My Shot.png\" what is it?\n[image My Shot.png 1280×720]")
    );
    assert!(frame(&mut app).contains("[image My Shot.png 1280×720]"));
}

#[test]
fn a_returned_prompt_is_back_in_the_composer() {
    let mut app = app();
    type_str(&mut app, "look at @x.png please");
    key(&mut app, KeyCode::Enter);
    assert_eq!(ops(&mut app).len(), 1);
    app.on_agent_event(Event::TurnStarted);
    type_str(&mut app, "typed meanwhile");
    app.on_agent_event(Event::PromptReturned {
        text: "look at @x.png please".into(),
    });
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Failed {
            reason: "the model m does not accept images".into(),
        },
    });
    assert_eq!(
        app.composer_text(),
        "look at @x.png please\n\ntyped meanwhile"
    );
    // Not sent, so not shown as sent: the reason is.
    let cells = cell_texts(&app);
    assert!(!cells.iter().any(|c| c.starts_with("user:")), "{cells:?}");
    assert!(
        cells.iter().any(|c| c.contains("does not accept images")),
        "{cells:?}"
    );
}
