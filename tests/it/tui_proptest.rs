//! Property: whatever keys, pastes, mouse events, resizes (down to 0×0) and agent events
//! arrive, in any order, the app never panics and every frame draws.

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use proptest::prelude::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use rein::protocol::{
    ApprovalRequest, EditDiff, Event, SessionInfo, Todo, TodoStatus, ToolDisplay, ToolStatus,
    TurnOutcome,
};
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view;
use std::path::PathBuf;
use std::time::{Duration, Instant};

// Generated test steps: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum Step {
    Term(TermEvent),
    Agent(Event),
    Resize(u16, u16),
    Wait(u64),
    Files(Vec<String>),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z /@`*#>|-]{0,30}",
        "[ -~\n\t]{0,80}",
        Just("```rust\nfn x() {}\n".to_string()),
        Just("| a | b |\n|---|---|\n| 1 | 2 |\n".to_string()),
        Just("\u{1b}[31mred\u{1b}[0m\r\n日本語のテキスト🙂\u{0}".to_string()),
        Just("- [ ] item\n  1. nested\n> quote\n\n---\n".to_string()),
        "\\PC{0,40}",
    ]
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("c".to_string())
    ]
}

fn status() -> impl Strategy<Value = ToolStatus> {
    prop_oneof![
        Just(ToolStatus::Ok),
        Just(ToolStatus::Error),
        Just(ToolStatus::Blocked),
        Just(ToolStatus::Denied),
        Just(ToolStatus::Interrupted),
    ]
}

fn todos() -> impl Strategy<Value = Vec<Todo>> {
    prop::collection::vec(
        (text(), text(), 0..3u8).prop_map(|(content, active_form, s)| Todo {
            content,
            active_form,
            status: match s {
                0 => TodoStatus::Pending,
                1 => TodoStatus::InProgress,
                _ => TodoStatus::Completed,
            },
        }),
        0..12,
    )
}

/// Every kind of display, built from arbitrary text.
fn display(kind: u8, a: String, b: String) -> ToolDisplay {
    match kind % 6 {
        0 => ToolDisplay::Exec { command: a },
        1 => ToolDisplay::Edit {
            path: "src/x.rs".into(),
            diff: Some(EditDiff::between(Some(&a), &b)),
        },
        2 => ToolDisplay::Read {
            path: a,
            lines: None,
        },
        3 => ToolDisplay::Task { description: a },
        4 => ToolDisplay::Edit {
            path: a,
            diff: None,
        },
        _ => ToolDisplay::Other {
            name: a,
            args: serde_json::json!({ "b": b }),
        },
    }
}

fn approval() -> impl Strategy<Value = ApprovalRequest> {
    (
        id(),
        text(),
        text(),
        prop::option::of(text()),
        0..6u8,
        text(),
    )
        .prop_map(|(id, a, b, sub, kind, part)| ApprovalRequest {
            id: id.clone(),
            call_id: id,
            display: display(kind, a, b),
            cwd: PathBuf::from("/w"),
            part,
            reason: "no rule matched (default ask)".into(),
            subagent: sub,
            always: None,
            no_always: None,
        })
}

fn agent_event() -> impl Strategy<Value = Event> {
    let leaf = prop_oneof![
        Just(Event::TurnStarted),
        text().prop_map(|text| Event::AssistantDelta { text }),
        text().prop_map(|text| Event::ReasoningDelta { text }),
        text().prop_map(|text| Event::AssistantMessage { text }),
        (id(), 0..6u8, text(), text()).prop_map(|(call_id, kind, a, b)| Event::ToolCallStarted {
            call_id,
            display: display(kind, a, b),
        }),
        (id(), text()).prop_map(|(call_id, chunk)| Event::ToolOutputDelta { call_id, chunk }),
        (
            id(),
            status(),
            text(),
            0..100_000u64,
            prop::option::of(-1..300i32)
        )
            .prop_map(|(call_id, status, output, elapsed_ms, exit_code)| {
                Event::ToolCallFinished {
                    call_id,
                    status,
                    output,
                    elapsed_ms,
                    exit_code,
                }
            }),
        approval().prop_map(Event::ApprovalRequested),
        (id(), prop::option::of(text()), prop::option::of(text())).prop_map(
            |(call_id, old, new)| {
                Event::FileChanged {
                    call_id,
                    path: "src/x.rs".into(),
                    old,
                    new,
                }
            }
        ),
        todos().prop_map(|todos| Event::TodosUpdated { todos }),
        (id(), text()).prop_map(|(task_id, description)| Event::SubagentStarted {
            task_id,
            description
        }),
        (id(), any::<bool>()).prop_map(|(task_id, ok)| Event::SubagentFinished { task_id, ok }),
        (any::<u64>(), any::<u64>()).prop_map(|(before_tokens, after_tokens)| Event::Compacted {
            before_tokens,
            after_tokens
        }),
        (any::<u64>(), any::<u64>()).prop_map(|(used_tokens, context_window)| Event::Usage {
            used_tokens,
            context_window
        }),
        (any::<u32>(), any::<u32>(), any::<u64>(), text()).prop_map(
            |(attempt, max_attempts, delay_ms, reason)| {
                Event::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms,
                    reason,
                }
            }
        ),
        text().prop_map(Event::notice),
        text().prop_map(Event::error),
        text().prop_map(|model| Event::ModelChanged { model }),
        prop_oneof![
            Just(TurnOutcome::Completed),
            Just(TurnOutcome::Interrupted),
            text().prop_map(|reason| TurnOutcome::Failed { reason }),
        ]
        .prop_map(|outcome| Event::TurnFinished { outcome }),
        (text(), text(), proptest::bool::ANY).prop_map(|(a, b, keep_view)| {
            Event::SessionConfigured(SessionInfo {
                session_id: a.clone(),
                model: b,
                provider: a,
                cwd: PathBuf::from("/w"),
                context_window: 1000,
                approval_mode: "ask".into(),
                mode: Default::default(),
                sandbox_mode: "off".into(),
                history: vec![
                    Event::UserMessage { text: "hi".into() },
                    Event::ReasoningDelta { text: "r".into() },
                    Event::AssistantMessage {
                        text: "**yo**".into(),
                    },
                    Event::ToolCallStarted {
                        call_id: "a".into(),
                        display: ToolDisplay::Exec {
                            command: "ls".into(),
                        },
                    },
                    Event::ToolOutputDelta {
                        call_id: "a".into(),
                        chunk: "x\ny".into(),
                    },
                ],
                keep_view,
            })
        }),
    ];
    leaf.prop_recursive(2, 8, 1, |inner| {
        (id(), inner).prop_map(|(task_id, event)| Event::Subagent {
            task_id,
            event: Box::new(event),
        })
    })
}

fn key_event() -> impl Strategy<Value = TermEvent> {
    let code = prop_oneof![
        any::<char>().prop_map(KeyCode::Char),
        prop::sample::select(vec![
            '/', '@', 'y', 'a', 'n', 'c', 'd', 'j', 't', 'o', ' ', 'h'
        ])
        .prop_map(KeyCode::Char),
        prop::sample::select(vec![
            KeyCode::Enter,
            KeyCode::Esc,
            KeyCode::Tab,
            KeyCode::BackTab,
            KeyCode::Backspace,
            KeyCode::Delete,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::PageUp,
            KeyCode::PageDown,
            KeyCode::F(5),
        ]),
    ];
    let mods = prop::sample::select(vec![
        KeyModifiers::NONE,
        KeyModifiers::NONE,
        KeyModifiers::NONE,
        KeyModifiers::SHIFT,
        KeyModifiers::CONTROL,
        KeyModifiers::ALT,
        KeyModifiers::CONTROL | KeyModifiers::SHIFT,
    ]);
    (code, mods).prop_map(|(c, m)| TermEvent::Key(KeyEvent::new(c, m)))
}

fn term_event() -> impl Strategy<Value = TermEvent> {
    prop_oneof![
        6 => key_event(),
        1 => text().prop_map(TermEvent::Paste),
        1 => (0..6u8, 0..230u16, 0..80u16).prop_map(|(k, column, row)| TermEvent::Mouse(MouseEvent {
            kind: match k {
                0 | 1 => MouseEventKind::ScrollUp,
                2 | 3 => MouseEventKind::ScrollDown,
                4 => MouseEventKind::Down(MouseButton::Left),
                _ => MouseEventKind::Moved,
            },
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => term_event().prop_map(Step::Term),
        8 => agent_event().prop_map(Step::Agent),
        2 => prop_oneof![
            Just((0u16, 0u16)),
            Just((1, 1)),
            Just((39, 9)),
            Just((40, 10)),
            (0..230u16, 0..80u16),
        ]
        .prop_map(|(w, h)| Step::Resize(w, h)),
        1 => (0..3_000u64).prop_map(Step::Wait),
        1 => prop::collection::vec("[a-z/]{1,20}", 0..20).prop_map(Step::Files),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(steps in prop::collection::vec(step(), 1_000..3_000)) {
        let t0 = Instant::now();
        let mut now = t0;
        let mut app = App::new(Theme::dark(), vec!["h1".into(), "h2".into()], None, t0);
        let mut area = Rect::new(0, 0, 80, 24);
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Step::Term(ev) => app.on_terminal_event(ev),
                Step::Agent(ev) => app.on_agent_event(ev),
                Step::Resize(w, h) => {
                    area = Rect::new(0, 0, w, h);
                    app.on_terminal_event(TermEvent::Resize(w, h));
                }
                Step::Wait(ms) => {
                    now += Duration::from_millis(ms);
                    app.set_now(now);
                    app.on_tick();
                }
                Step::Files(files) => app.set_files(files),
            }
            app.take_effects();
            // Draw most steps, as the loop would (several events can share a frame).
            if i % 3 != 1 || app.is_dirty() {
                let mut buf = Buffer::empty(area);
                view::draw_buffer(area, &mut buf, &mut app);
                app.mark_drawn();
            }
        }
    }
}
