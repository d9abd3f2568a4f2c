//! Resuming in a pseudo-terminal (issue 4): sessions made with `rein exec` against the scripted
//! model server, then opened in the real full-screen app with `--continue`, the `--resume`
//! picker and `/resume`. Assertions read the screen a terminal would show and the requests the
//! model received.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::pty::{Pty, idle, keys};
use support::rein::{World, stderr, stdout, tool_results, user_texts};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy; assertions are about behaviour, not speed.
const WAIT: Duration = Duration::from_secs(20);

fn exec_ok(w: &World, args: &[&str]) {
    let o = w.exec(args);
    assert!(
        o.status.success(),
        "rein exec {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
}

#[test]
fn continue_shows_the_past_conversation_scrolls_to_its_start_and_carries_its_context() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo first-turn-output"}),
    ))
    .push(Reply::text("First answer: I will remember PELICAN."));
    for n in 2..=8 {
        s.push(Reply::text(&format!(
            "Answer {n}: noted.\n\n- point one of {n}\n- point two of {n}\n- point three of {n}"
        )));
    }
    let w = World::new(&s);
    exec_ok(&w, &["--yes", "remember the word PELICAN"]);
    for n in 2..=8 {
        exec_ok(&w, &["--continue", &format!("follow-up question {n}")]);
    }
    let before = s.request_count();

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 30);
    let screen = t.expect(
        "the end of the past conversation",
        |s| s.contains("Answer 8: noted.") && idle(s),
        WAIT,
    );
    assert!(
        !screen.contains("remember the word PELICAN"),
        "the conversation is longer than the screen; it opens at its end:\n{screen}"
    );

    // PgUp, again and again, reaches the very first message.
    let mut presses = 0;
    let top = loop {
        t.send_raw(keys::PG_UP);
        presses += 1;
        if let Ok(screen) = t.wait_for(
            |s| s.contains("remember the word PELICAN"),
            Duration::from_millis(1500),
        ) {
            break screen;
        }
        assert!(presses < 15, "PgUp never reached the first message");
    };
    assert!(presses >= 2, "more than a screen of history");
    assert!(
        top.contains("echo first-turn-output"),
        "the tool call:\n{top}"
    );
    assert!(
        top.contains("First answer: I will remember PELICAN."),
        "{top}"
    );

    // A new prompt: the view follows again, and the model gets the old context.
    s.push(Reply::text("The word was PELICAN."));
    t.type_line("what was the word?");
    let screen = t.expect(
        "the new answer at the bottom",
        |s| s.contains("The word was PELICAN.") && idle(s),
        WAIT,
    );
    assert!(screen.contains("what was the word?"), "{screen}");
    assert_eq!(s.request_count(), before + 1);
    let req = s.request(before);
    let texts = user_texts(&req);
    assert!(texts[0].contains("remember the word PELICAN"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("follow-up question 8")));
    assert!(
        texts
            .last()
            .is_some_and(|t| t.contains("what was the word?"))
    );
    assert!(
        tool_results(&req)
            .iter()
            .any(|r| r.content.contains("first-turn-output"))
    );

    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

#[test]
fn the_resume_picker_opens_a_session_and_resume_switches_to_another() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Otters hold hands while they sleep."))
        .push(Reply::text("Herons stand very still."));
    let w = World::new(&s);
    exec_ok(&w, &["tell me about OTTERS"]);
    exec_ok(&w, &["tell me about HERONS"]);

    // Esc leaves without starting anything.
    let mut t = Pty::spawn(w.pty_command(&["--resume"]), 100, 30);
    t.expect(
        "the picker",
        |s| s.contains("Resume a session") && s.contains("tell me about OTTERS"),
        WAIT,
    );
    t.send_raw(keys::ESC);
    assert_eq!(t.wait_exit(WAIT), Some(0));
    assert!(t.is_cooked(), "the terminal is restored");
    assert_eq!(s.request_count(), 2, "no agent ran");

    // Newest first; typing filters; Enter opens the match.
    // Wide enough for the title beside a long workspace path (worlds lie in ~/.cache).
    let mut t = Pty::spawn(w.pty_command(&["-r"]), 120, 30);
    let picker = t.expect(
        "the picker with both sessions",
        |s| s.contains("tell me about OTTERS") && s.contains("tell me about HERONS"),
        WAIT,
    );
    let at = |text: &str| picker.find(text).expect("listed");
    assert!(at("HERONS") < at("OTTERS"), "newest first:\n{picker}");
    t.send_keys("otters");
    t.expect(
        "only the otters session",
        |s| s.contains("tell me about OTTERS") && !s.contains("tell me about HERONS"),
        WAIT,
    );
    t.send_raw(keys::ENTER);
    t.expect(
        "the otters conversation",
        |s| s.contains("Otters hold hands while they sleep.") && idle(s),
        WAIT,
    );

    // /resume inside the app: the same picker, the open session marked current; Enter
    // switches the conversation.
    t.type_line("/resume");
    let picker = t.expect(
        "the picker over the conversation",
        |s| s.contains("Resume a session") && s.contains("tell me about HERONS"),
        WAIT,
    );
    assert!(
        picker.contains("tell me about OTTERS · current"),
        "{picker}"
    );
    t.send_keys("herons");
    t.expect(
        "the herons session alone",
        |s| s.contains("tell me about HERONS") && !s.contains("tell me about OTTERS"),
        WAIT,
    );
    t.send_raw(keys::ENTER);
    let screen = t.expect(
        "the herons conversation",
        |s| s.contains("Herons stand very still.") && idle(s),
        WAIT,
    );
    assert!(!screen.contains("Otters hold hands"), "{screen}");

    s.push(Reply::text("Yes, herons."));
    t.type_line("which bird was it?");
    t.expect("the answer", |s| s.contains("Yes, herons."), WAIT);
    let texts = user_texts(&s.request(2));
    assert!(texts[0].contains("HERONS"), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("OTTERS")), "{texts:?}");

    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}
