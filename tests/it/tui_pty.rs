//! End to end in a pseudo-terminal: the real `rein` binary, 100×30, against the scripted model
//! server. Keys go in as a terminal sends them; assertions read the screen a terminal emulator
//! would show, the files on disk and the requests the model received.

use crate::support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::pty::{self, Pty, idle, keys, wait_until};
use support::rein::{World, last_result, user_texts};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy; assertions are about behaviour, not speed.
const WAIT: Duration = Duration::from_secs(20);

/// The app is up: the session is configured and the composer waits for input.
#[test]
fn write_is_approved_edit_is_refused_and_the_model_is_told() {
    let s = ScriptedServer::openai();
    s.push(Reply::new().say("Creating the file.").call(
        "write_file",
        json!({"path": "notes.txt", "content": "alpha\nbeta\ngamma\n"}),
    ))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "notes.txt", "old_str": "beta", "new_str": "BETA"}),
    ))
    .push(Reply::text("Understood: notes.txt stays as it is."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("create notes.txt");
    let modal = t.expect(
        "the write approval with the new content",
        |s| s.contains("Allow write notes.txt") && s.contains("gamma"),
        WAIT,
    );
    for line in ["alpha", "beta", "gamma"] {
        assert!(
            modal.lines().any(|l| l.contains('+') && l.contains(line)),
            "`{line}` is not shown as an added line:\n{modal}"
        );
    }
    assert!(w.read("notes.txt").is_none(), "written before the answer");

    t.send_keys("y");
    wait_until("notes.txt on disk", WAIT, || w.read("notes.txt").is_some());
    assert_eq!(w.read("notes.txt").as_deref(), Some("alpha\nbeta\ngamma\n"));
    t.expect(
        "the write in the conversation",
        |s| s.contains("write  notes.txt (+3 −0)"),
        WAIT,
    );

    let modal = t.expect(
        "the edit approval with its diff",
        |s| s.contains("Allow edit notes.txt"),
        WAIT,
    );
    let removed = modal
        .lines()
        .any(|l| l.contains('-') && l.contains("beta") && !l.contains("BETA"));
    let added = modal.lines().any(|l| l.contains('+') && l.contains("BETA"));
    assert!(removed && added, "the diff is not on screen:\n{modal}");

    t.send_keys("n");
    let screen = t.expect(
        "the final answer",
        |s| s.contains("Understood: notes.txt stays as it is.") && idle(s),
        WAIT,
    );
    assert!(!screen.contains("Allow edit"), "{screen}");
    assert_eq!(w.read("notes.txt").as_deref(), Some("alpha\nbeta\ngamma\n"));
    assert_eq!(s.request_count(), 3);
    let refusal = last_result(&s.request(2));
    assert!(
        refusal
            .content
            .starts_with("The user denied this tool call."),
        "{}",
        refusal.content
    );
    assert!(
        last_result(&s.request(1)).content.contains("notes.txt"),
        "the write's result: {}",
        last_result(&s.request(1)).content
    );
}

/// What you approve is what runs: the file changes on disk while the dialog is open; `y`
/// writes nothing, the other change stays, the person sees why, the model's next request says
/// why, and `/diff` shows nothing (nothing was written).
#[test]
fn an_edit_whose_file_changed_while_asking_is_refused_and_the_model_is_told() {
    let s = ScriptedServer::openai();
    // Edits need a read first.
    s.push(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "notes.txt", "old_str": "beta", "new_str": "BETA"}),
        ))
        .push(Reply::text("I will read it again."));
    let w = World::new(&s);
    w.write("notes.txt", "alpha\nbeta\n");
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("shout beta");
    t.expect(
        "the edit approval with its diff",
        |s| s.contains("Allow edit notes.txt") && s.contains("BETA"),
        WAIT,
    );
    // Someone else edits the file while the person reads the diff.
    w.write("notes.txt", "alpha\nbeta\nadded meanwhile\n");
    t.send_keys("y");
    let screen = t.expect(
        "the refusal in the conversation and the model's answer",
        |s| s.contains("file changed since you proposed") && s.contains("I will read it again."),
        WAIT,
    );
    assert!(!screen.contains("Allow edit"), "{screen}");
    assert_eq!(
        w.read("notes.txt").as_deref(),
        Some("alpha\nbeta\nadded meanwhile\n"),
        "the other change stays and nothing of the approved edit was written"
    );
    let told = last_result(&s.request(2));
    assert!(
        told.content
            .starts_with("Error: the file changed since you proposed this edit; read it again."),
        "{}",
        told.content
    );
    t.expect("idle again", idle, WAIT);
    t.type_line("/diff");
    t.expect(
        "/diff with nothing written",
        |s| s.contains("no file changes in this session yet"),
        WAIT,
    );
}

#[test]
fn esc_stops_a_long_command_within_a_second_and_the_next_prompt_works() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "sleep 30"})))
        .push(Reply::text("Second answer arrived."));
    let w = World::new(&s);
    w.user_config(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n\n\
         [[rules]]\npattern = \"sleep *\"\naction = \"allow\"\n",
    );
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("wait a while");
    let sleeping = || {
        pty::processes_in(&w.ws)
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("sleep 30"))
            .collect::<Vec<_>>()
    };
    wait_until("`sleep 30` to run", WAIT, || !sleeping().is_empty());
    t.expect(
        "the running command",
        |s| s.contains("bash  sleep 30") && s.contains("esc interrupt"),
        WAIT,
    );

    let sent = Instant::now();
    t.send_raw(keys::ESC);
    let screen = t.expect(
        "the turn to end",
        |s| s.contains("interrupted") && idle(s),
        WAIT,
    );
    let took = sent.elapsed();
    assert!(
        took <= Duration::from_secs(1),
        "Esc took {took:?} to end the turn:\n{screen}"
    );
    // The kill is done when the turn ends; allow the kernel a moment to reap.
    let end = Instant::now() + Duration::from_millis(500);
    while !sleeping().is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(sleeping(), Vec::new(), "the command outlived the turn");

    t.type_line("try again");
    t.expect(
        "the second answer",
        |s| s.contains("Second answer arrived.") && idle(s),
        WAIT,
    );
    assert_eq!(s.request_count(), 2);
    let sent = user_texts(&s.request(1));
    assert!(
        sent.last().is_some_and(|m| m.starts_with("try again")),
        "{sent:?}"
    );
}

/// The terminal is back as it was: main screen, cursor visible, no mouse or paste modes,
/// keyboard protocol popped, and the raw bytes end by leaving the alternate screen and
/// showing the cursor.
fn assert_restored(t: &mut Pty) {
    assert_eq!(t.wait_exit(WAIT), Some(0), "exit code");
    let raw = t.raw_output();
    let leave = pty::rfind(&raw, pty::LEAVE_ALT_SCREEN).expect("never left the alternate screen");
    let show = pty::rfind(&raw, pty::SHOW_CURSOR).expect("never showed the cursor");
    let last_frame = pty::rfind(&raw, b"\x1b[?2026l").unwrap_or(0);
    assert!(leave > last_frame && show > leave, "restore is not last");
    let tail = &raw[leave..];
    assert!(
        !pty::contains(tail, pty::ENTER_ALT_SCREEN) && !pty::contains(tail, b"\x1b[?25l"),
        "something drew after the restore: {:?}",
        String::from_utf8_lossy(tail)
    );
    assert!(
        raw.ends_with(pty::SHOW_CURSOR),
        "the output does not end by showing the cursor: {:?}",
        String::from_utf8_lossy(tail)
    );
    assert!(
        pty::contains(&raw[last_frame..], b"\x1b[<1u"),
        "keyboard protocol not popped"
    );
    let modes = t.modes();
    assert!(!modes.alternate_screen, "still on the alternate screen");
    assert!(!modes.cursor_hidden, "cursor still hidden");
    assert!(!modes.bracketed_paste, "bracketed paste still on");
    assert!(!modes.mouse, "mouse capture still on");
    assert!(t.is_cooked(), "raw mode is still on");
}

#[test]
fn ctrl_c_twice_quits_and_restores_the_terminal() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.send_raw(keys::CTRL_C);
    t.expect(
        "the quit hint",
        |s| s.contains("ctrl+c again to quit"),
        WAIT,
    );
    assert_eq!(t.try_exit(), None, "one Ctrl+C must not quit");
    t.send_raw(keys::CTRL_C);
    assert_restored(&mut t);
    assert_eq!(s.request_count(), 0);
}

#[test]
fn quit_command_restores_the_terminal() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    // The popup completes `/quit`; Enter runs it.
    t.type_line("/quit");
    assert_restored(&mut t);
    assert_eq!(s.request_count(), 0);
}

#[test]
fn too_small_then_back_redraws_the_conversation() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("The answer is forty-two."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("what is the answer?");
    t.expect(
        "the answer",
        |s| s.contains("The answer is forty-two.") && idle(s),
        WAIT,
    );

    t.resize(30, 8);
    let small = t.expect("the too-small notice", |s| s.contains("too small"), WAIT);
    assert!(!small.contains("forty-two"), "{small}");

    t.resize(100, 30);
    let screen = t.expect(
        "the conversation again",
        |s| {
            s.contains("what is the answer?")
                && s.contains("The answer is forty-two.")
                && s.contains("scripted-model")
                && !s.contains("too small")
        },
        WAIT,
    );
    assert!(idle(&screen), "{screen}");
    assert_eq!(t.try_exit(), None, "rein exited on resize");
    assert!(!pty::contains(&t.raw_output(), b"panicked"));

    // Still responsive after the resizes.
    t.type_line("/quit");
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

#[test]
fn streamed_text_shows_before_the_stream_ends() {
    let s = ScriptedServer::openai();
    s.push(
        Reply::text("Streaming starts here, then more words follow, and finally the end.")
            .fragments(8)
            .chunk_delay(Duration::from_millis(300)),
    );
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("stream please");
    let partial = t.expect(
        "part of the answer",
        |s| s.contains("Streaming") && !s.contains("finally the end."),
        WAIT,
    );
    assert!(
        s.request(0).finished.is_none(),
        "the stream had already ended:\n{partial}"
    );
    t.expect(
        "the whole answer",
        |s| {
            s.contains("Streaming starts here, then more words follow, and finally the end.")
                && idle(s)
        },
        WAIT,
    );
}

#[test]
fn idle_uses_no_cpu() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    // Start-up work (syntax sets load in the background after the first frame) settles first.
    let mut last = pty::cpu_ticks(t.pid()).expect("cpu ticks");
    let end = Instant::now() + WAIT;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = pty::cpu_ticks(t.pid()).expect("cpu ticks");
        if now == last || Instant::now() >= end {
            break;
        }
        last = now;
    }
    // A 10 Hz redraw alone costs a debug build 2–3 ticks here; one tick is noise.
    let before = pty::cpu_ticks(t.pid()).expect("cpu ticks");
    std::thread::sleep(Duration::from_secs(3));
    let after = pty::cpu_ticks(t.pid()).expect("cpu ticks");
    assert!(
        after - before <= 1,
        "idle rein used {} CPU ticks in 3 s",
        after - before
    );
}

/// First run with nothing configured: rein looks for a local server (the test can't control
/// whether one listens on this machine's usual ports, so it declines the offer if it appears),
/// then shows what to set and quits cleanly on any key, restoring the terminal.
#[test]
fn first_run_without_a_model_says_what_to_set_and_quits_on_any_key() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut c = w.pty_command(&[]);
    c.env_remove("BASE_URL");
    c.env_remove("MODEL");
    c.env_remove("API_KEY");
    c.env_remove("REIN_PROVIDER");
    let mut t = Pty::spawn(c, 100, 30);
    let screen = t.expect(
        "the setup screen or the local-server offer",
        |s| s.contains("MODEL") || s.contains("Local model found"),
        WAIT,
    );
    if screen.contains("Local model found") {
        t.send_keys("n");
        t.expect("the setup screen", |s| s.contains("MODEL"), WAIT);
    }
    let screen = t.screen_text();
    assert!(
        screen.contains("API_KEY") && screen.contains(".agents/env"),
        "{screen}"
    );
    t.send_keys("x");
    assert_eq!(t.wait_exit(WAIT), Some(2), "{}", t.screen_text());
    let m = t.modes();
    assert!(!m.alternate_screen && !m.cursor_hidden && !m.mouse, "{m:?}");
}

/// A nudge of rein's shows in the conversation as it is sent: a small model's early "Fixed."
/// is followed by what rein told it, then by the model's next answer, not by unexplained work.
#[test]
fn a_nudge_shows_in_the_conversation_as_it_is_sent() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(Reply::text("Fixed."))
        .push(Reply::text("Now it is fixed."));
    let w = World::new(&s);
    w.user_config("retry_backoff_ms = 20\nsmall_model = \"nudges\"\n");
    w.write("calc.py", "def ident(n):\n    return 0\n");
    let mut c = w.pty_command(&[]);
    c.env_remove("REIN_SMALL_MODEL");
    let mut t = Pty::spawn(c, 100, 30);
    t.ready(WAIT);
    t.type_line("fix ident in calc.py");
    let screen = t.expect(
        "the nudge between the two answers",
        |s| s.contains("Now it is fixed.") && idle(s),
        WAIT,
    );
    let at = |needle: &str| {
        screen
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} on screen:\n{screen}"))
    };
    let nudge = at("rein told the model: No file was changed yet");
    assert!(
        at("Fixed.") < nudge && nudge < at("Now it is fixed."),
        "{screen}"
    );
    assert_eq!(s.request_count(), 3);
}

/// What the person approves is what runs: text hidden inside an escape sequence (an OSC that
/// never ends, a lone C1 introducer) is on screen in the approval, the diff and the "always"
/// rules, not cut away with the sequence (the third review's attack on the approval dialog).
#[test]
fn text_hidden_in_an_escape_sequence_is_on_screen_where_it_is_approved() {
    let s = ScriptedServer::openai();
    let hidden = "print(\"\u{1b}]0;\"); __import__(\"os\").system(\"echo HIDDEN-PAYLOAD\"); print(\"\u{7}\")\n";
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "run.py", "content": hidden}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "python3 -c '#\u{9d}' ; python3 second.py"}),
    ))
    .push(Reply::text("Stopped."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);

    t.type_line("make run.py");
    let modal = t.expect(
        "the write approval",
        |s| s.contains("Allow write run.py"),
        WAIT,
    );
    assert!(
        modal.contains("HIDDEN-PAYLOAD") && modal.contains("␛]0;"),
        "the payload is not on screen:\n{modal}"
    );
    t.send_keys("n");

    let modal = t.expect(
        "the bash approval",
        |s| s.contains("Allow bash") && s.contains("don't ask again"),
        WAIT,
    );
    let always = modal
        .lines()
        .find(|l| l.contains("don't ask again"))
        .unwrap_or_default();
    assert!(
        always.contains("python3 second.py") && always.contains("\\u{9d}"),
        "the \"always\" line hides a rule:\n{modal}"
    );
    t.send_keys("n");
    t.expect(
        "the final answer",
        |s| s.contains("Stopped.") && idle(s),
        WAIT,
    );
    assert!(w.read("run.py").is_none());
}
