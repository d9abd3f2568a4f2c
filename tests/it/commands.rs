//! Custom slash commands and `/init`, end to end through the real binary: commands from every
//! place rein reads them (in a temp HOME and XDG dirs), what the model receives, the trust gate
//! of a project command's `model` / `allowed-tools`, the `/` popup in a pty, and `/init`'s
//! approval with the diff of AGENTS.md.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::pty::{idle, keys, wait_until};
use support::rein::{World, assert_ok, stderr, user_texts, without_reminder};
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(20);

fn put(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A world with one command in each place (and the same name in two, and a broken file).
fn world_with_commands(s: &ScriptedServer) -> World {
    let w = World::new(s);
    w.write(
        ".rein/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: [file]\n---\nREIN-PROJECT review $ARGUMENTS carefully.\n",
    );
    w.write(
        ".claude/commands/frontend/component.md",
        "---\ndescription: Make a component\n---\nCLAUDE-PROJECT component $1 in $2.\n",
    );
    w.write(
        ".claude/commands/broken.md",
        "---\ndescription: no end\nbody",
    );
    put(
        &w.config_home.join("rein/commands/review.md"),
        "USER review: must lose to the project's",
    );
    put(
        &w.config_home.join("rein/commands/standup.md"),
        "REIN-USER standup for $ARGUMENTS.",
    );
    put(
        &w.home.join(".claude/commands/explain.md"),
        "CLAUDE-USER explain",
    );
    put(
        &w.home.join(".codex/prompts/ticket.md"),
        "---\ndescription: Work a ticket\nargument-hint: TICKET=<id>\n---\nCODEX-USER ticket $TICKET costs $$5.\n",
    );
    w
}

fn last_user_text(s: &ScriptedServer) -> String {
    let n = s.request_count();
    // The late reminder rides at the end (OpenAI: in the text; Anthropic: a block of its own).
    let text = user_texts(&s.request(n - 1)).pop().unwrap_or_default();
    let text = without_reminder(&text);
    match text.find("<system-reminder>") {
        Some(at) => text[..at].trim_end().to_string(),
        None => text,
    }
}

all_formats!(exec_expands_commands_from_every_place_and_project_wins);

fn exec_expands_commands_from_every_place_and_project_wins(kind: rein::llm::ProviderKind) {
    let s = ScriptedServer::start(kind);
    let w = world_with_commands(&s);
    let cases = [
        (
            "/review src/a.rs",
            "REIN-PROJECT review src/a.rs carefully.",
        ),
        (
            "/frontend:component Button \"the nav bar\"",
            "CLAUDE-PROJECT component Button in the nav bar.",
        ),
        ("/standup monday", "REIN-USER standup for monday."),
        (
            "/explain the lexer",
            "CLAUDE-USER explain\n\nARGUMENTS: the lexer",
        ),
        ("/ticket TICKET=42", "CODEX-USER ticket 42 costs $5."),
    ];
    for (i, (prompt, expected)) in cases.iter().enumerate() {
        s.push(Reply::text("ok"));
        let out = w.exec(&[prompt]);
        assert_ok(&out);
        assert_eq!(s.request_count(), i + 1);
        assert_eq!(last_user_text(&s).trim_end(), *expected, "{prompt}");
        // The broken file is named, the others still work.
        let err = stderr(&out);
        assert!(
            err.contains("broken.md skipped") && err.contains("no closing `---`"),
            "{prompt}: {err} / {}",
            support::rein::stdout(&out)
        );
        // The person's own /review lost to the repository's: they are told.
        assert!(
            err.contains("review.md skipped: the project's /review")
                && err.contains("replaces yours"),
            "{prompt}: {err}"
        );
    }
    // The session file keeps what the person typed beside what the model read: resumed, the
    // view shows the command, the model context the prompt.
    let file = w
        .all_files()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .find(|p| {
            std::fs::read_to_string(p).is_ok_and(|t| t.contains(r#""command":"/review src/a.rs""#))
        })
        .expect("no session records the typed command");
    let resumed = rein::session_store::resume(&file).unwrap();
    assert!(resumed.view.iter().any(|i| matches!(
        i,
        rein::protocol::Event::UserMessage { text } if text == "/review src/a.rs"
    )));
    assert!(resumed.messages.iter().any(|m| matches!(
        m,
        rein::llm::Message::User { content } if content.contains("REIN-PROJECT review src/a.rs")
    )));
}

#[test]
fn exec_unknown_command_fails_without_a_request_and_double_slash_sends_text() {
    let s = ScriptedServer::openai();
    let w = world_with_commands(&s);
    let out = w.exec(&["/nope now"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no command /nope") && err.contains("/review"),
        "{err}"
    );
    assert_eq!(s.request_count(), 0);

    s.push(Reply::text("ok"));
    assert_ok(&w.exec(&["//review is a word"]));
    assert_eq!(last_user_text(&s), "/review is a word");
    // A path is a message, not a command.
    s.push(Reply::text("ok"));
    assert_ok(&w.exec(&["/etc/hosts: what is it?"]));
    assert_eq!(last_user_text(&s), "/etc/hosts: what is it?");
}

/// A project command that sets `model` and `allowed-tools` is a plain prompt until the project
/// is trusted; trusted, the turn uses that model and runs the allowed command unasked.
#[test]
fn a_project_commands_model_and_allowed_tools_wait_for_trust() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    w.write(
        ".claude/commands/mark.md",
        "---\nmodel: big-model\nallowed-tools: Bash(touch made.txt), Read\n---\nMake the mark.\n",
    );
    let turn = || {
        s.push(Reply::tool_call(
            "bash",
            json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("done"));
    };

    turn();
    let out = w.exec(&["/mark"]);
    let err = stderr(&out);
    assert!(err.contains("ran as a plain prompt"), "{err}");
    assert!(err.contains("not trusted"), "{err}");
    assert_eq!(s.request(0).body["model"], "scripted-model");
    assert_eq!(last_user_text(&s), "Make the mark.");
    assert!(
        w.read("made.txt").is_none(),
        "ran without trust and without --yes"
    );

    turn();
    let out = w.exec(&["--trust", "/mark"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("uses the model big-model"), "{err}");
    assert!(err.contains("Read do nothing in rein"), "{err}");
    assert_eq!(s.request(2).body["model"], "big-model");
    assert!(
        w.read("made.txt").is_some(),
        "the allowed command did not run: {err}"
    );

    // The allowance lasts for that turn only: a plain message asks again (refused headless).
    std::fs::remove_file(w.ws.join("made.txt")).unwrap();
    turn();
    let out = w.exec(&["--trust", "make the mark"]);
    assert_eq!(s.request(4).body["model"], "scripted-model");
    assert!(w.read("made.txt").is_none(), "{}", stderr(&out));
}

#[test]
fn the_popup_lists_custom_commands_and_the_transcript_shows_what_was_typed() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Reviewed."));
    let w = world_with_commands(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);

    t.send_keys("/ti");
    t.expect(
        "a user command in the popup with where it comes from",
        |s| s.contains("/ticket TICKET=<id>") && s.contains("Work a ticket (user ~/.codex)"),
        WAIT,
    );
    t.send_raw(keys::BACKSPACE);
    t.send_raw(keys::BACKSPACE);
    t.send_keys("rev");
    t.expect(
        "a project command in the popup",
        |s| s.contains("/review [file]") && s.contains("Review a file (project)"),
        WAIT,
    );
    t.send_raw(keys::BACKSPACE);
    t.send_raw(keys::BACKSPACE);
    t.send_raw(keys::BACKSPACE);
    t.send_keys("frontend");
    t.expect(
        "the namespaced command",
        |s| s.contains("/frontend:component") && s.contains("(project .claude)"),
        WAIT,
    );
    // Backspace the filter, then run `/review` with an argument.
    for _ in 0.."frontend".len() {
        t.send_raw(keys::BACKSPACE);
    }
    t.type_line("review src/lib.rs");
    let screen = t.expect("the answer", |s| s.contains("Reviewed.") && idle(s), WAIT);
    assert!(screen.contains("/review src/lib.rs"), "{screen}");
    assert!(
        !screen.contains("REIN-PROJECT"),
        "the expansion is shown:\n{screen}"
    );
    assert_eq!(
        last_user_text(&s).trim_end(),
        "REIN-PROJECT review src/lib.rs carefully."
    );
}

#[test]
fn init_surveys_then_asks_to_write_agents_md_with_its_diff() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "ls"})))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "AGENTS.md", "content": "# AGENTS\n\nBuild: make\nTest: make test\n"}),
        ))
        .push(Reply::text("Wrote AGENTS.md."));
    let w = World::new(&s);
    w.write("Makefile", "test:\n\ttrue\n");
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("/init");
    let modal = t.expect(
        "the write approval for AGENTS.md",
        |s| s.contains("Allow write AGENTS.md") && s.contains("Test: make test"),
        WAIT,
    );
    for line in ["# AGENTS", "Build: make", "Test: make test"] {
        assert!(
            modal.lines().any(|l| l.contains('+') && l.contains(line)),
            "`{line}` is not an added line:\n{modal}"
        );
    }
    assert!(w.read("AGENTS.md").is_none(), "written before the answer");
    let prompt = user_texts(&s.request(0)).pop().unwrap();
    assert!(prompt.contains("Write an AGENTS.md"), "{prompt}");
    assert!(prompt.contains("create it with write_file"), "{prompt}");
    t.send_keys("y");
    wait_until("AGENTS.md on disk", WAIT, || w.read("AGENTS.md").is_some());
    t.expect(
        "the end of the turn",
        |s| s.contains("Wrote AGENTS.md.") && idle(s),
        WAIT,
    );
}

/// With an AGENTS.md already there, `/init` asks the model to read and improve it, and the
/// read-before-overwrite rule holds: a blind overwrite is refused.
#[test]
fn init_with_an_existing_file_asks_to_improve_it_and_never_overwrites_blind() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "AGENTS.md", "content": "# replaced\n"}),
    ))
    .push(Reply::text("ok"));
    let w = World::new(&s);
    let big: String = (0..400)
        .map(|i| format!("line {i} of the old notes\n"))
        .collect();
    w.write("AGENTS.md", &big);
    let out = w.exec(&["--yes", "/init"]);
    assert_ok(&out);
    let prompt = user_texts(&s.request(0)).pop().unwrap();
    assert!(prompt.contains("read it first"), "{prompt}");
    assert_eq!(w.read("AGENTS.md").as_deref(), Some(big.as_str()));
}

/// The one trust prompt at start lists a project command's model; trusting it lets the command
/// use that model, now and in later runs.
#[test]
fn the_trust_prompt_lists_a_project_commands_model_and_trusting_applies_it() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Marked."));
    let w = World::new(&s);
    w.write(
        ".rein/commands/mark.md",
        "---\nmodel: big-model\n---\nMake the mark.\n",
    );
    let mut t = w.spawn_tui(100, 30);
    let screen = t.expect(
        "the trust prompt",
        |s| s.contains("Trust this project?"),
        WAIT,
    );
    assert!(
        screen.contains("command /mark") && screen.contains("model = big-model"),
        "{screen}"
    );
    t.send_keys("y");
    t.ready(WAIT);
    t.type_line("/mark");
    t.expect("the answer", |s| s.contains("Marked.") && idle(s), WAIT);
    assert_eq!(s.request(0).body["model"], "big-model");
    assert_eq!(t.quit_app(WAIT), Some(0));

    // Remembered: a later headless run applies it without --trust.
    s.push(Reply::text("ok"));
    assert_ok(&w.exec(&["/mark"]));
    assert_eq!(s.request(1).body["model"], "big-model");
}
