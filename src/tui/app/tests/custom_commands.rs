//! Custom slash commands in the composer: the popup lists them after the builtins with where
//! they come from; Enter runs one as `Op::RunCommand` and the transcript shows what was typed.

use super::*;
use crate::protocol::CommandInfo;

fn with_commands() -> App {
    let mut app = app();
    let info = |name: &str, hint: &str, origin: &str, untrusted: bool| CommandInfo {
        name: name.into(),
        description: format!("about {name}"),
        argument_hint: hint.into(),
        origin: origin.into(),
        untrusted,
    };
    app.on_agent_event(Event::CommandsListed {
        commands: vec![
            info("commit", "", "project .claude", true),
            info("review", "[file]", "project", false),
            info("frontend:component", "", "user", false),
        ],
    });
    app
}

fn popup(app: &App) -> Vec<(String, String)> {
    app.popup
        .as_ref()
        .map(|p| {
            p.picker
                .items
                .iter()
                .map(|i| (i.label.clone(), i.detail.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_popup_lists_custom_commands_after_the_builtins_with_their_origin() {
    let mut app = with_commands();
    type_str(&mut app, "/co");
    assert_eq!(
        popup(&app),
        vec![
            (
                "/compact [focus]".into(),
                "summarise the conversation to free context".into()
            ),
            (
                "/copy".into(),
                "copy the last answer to the clipboard".into()
            ),
            (
                "/commit".into(),
                "about commit (project .claude, untrusted)".into()
            ),
            (
                "/frontend:component".into(),
                "about frontend:component (user)".into()
            ),
        ]
    );
}

#[test]
fn enter_runs_a_custom_command_and_a_hint_waits_for_arguments() {
    let mut app = with_commands();
    type_str(&mut app, "/comm");
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&ops(&mut app)[..], [Op::RunCommand { name, args }] if name == "commit" && args.is_empty())
    );
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("user: /commit")
    );
    app.on_agent_event(Event::TurnFinished {
        outcome: TurnOutcome::Completed,
    });

    // A command with an argument hint waits for its arguments.
    type_str(&mut app, "/revi");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.composer_text(), "/review ");
    assert!(ops(&mut app).is_empty());
    type_str(&mut app, "src/a.rs");
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&ops(&mut app)[..], [Op::RunCommand { name, args }] if name == "review" && args == "src/a.rs")
    );
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("user: /review src/a.rs")
    );
    // While the turn runs, a command waits (it is not queued as text).
    type_str(&mut app, "/commit");
    key(&mut app, KeyCode::Enter);
    assert!(ops(&mut app).is_empty());
    assert!(cell_texts(&app).last().unwrap().contains("has to wait"));
}

#[test]
fn init_is_a_builtin_sent_to_the_agent() {
    let mut app = app();
    type_str(&mut app, "/init");
    key(&mut app, KeyCode::Enter);
    assert!(matches!(&ops(&mut app)[..], [Op::RunCommand { name, .. }] if name == "init"));
    assert_eq!(
        cell_texts(&app).last().map(String::as_str),
        Some("user: /init")
    );
}

#[test]
fn help_lists_custom_commands_and_their_text_is_sanitized() {
    let mut app = with_commands();
    app.on_agent_event(Event::CommandsListed {
        commands: vec![CommandInfo {
            name: "evil".into(),
            description: "red\u{1b}[31m text\nsecond line".into(),
            argument_hint: "[a]\u{1b}]0;title\u{7}".into(),
            origin: "project".into(),
            untrusted: false,
        }],
    });
    let items = app.command_items("ev");
    let evil = items.iter().find(|i| i.label.starts_with("/evil")).unwrap();
    assert!(!evil.label.contains('\u{1b}') && !evil.detail.contains('\u{1b}'));
    assert!(!evil.detail.contains('\n'), "{}", evil.detail);
    app.run_command("/help");
    let CellKind::Info(lines) = app.cells().last().unwrap().kind() else {
        panic!("no help cell")
    };
    let text: Vec<String> = lines.iter().map(|l| l.text()).collect();
    assert!(
        text.iter().any(|l| l.contains("Custom commands")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|l| l.contains("/evil [a]") && l.contains("red text second line (project)")),
        "{text:?}"
    );
}
