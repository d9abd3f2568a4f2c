//! The review flow's defects (issue 20), each end to end through the real binary: Shift+Tab on
//! a question, an interrupted command's output, `/diff` over every change, and the wording of
//! refusals and interruptions.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::pty::{idle, keys};
use support::rein::{World, last_result};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy; assertions are about behaviour, not speed.
const WAIT: Duration = Duration::from_secs(20);
/// Shift+Tab as a terminal sends it.
const SHIFT_TAB: &[u8] = b"\x1b[Z";

/// A question is fully drawn: its key line and the hint line below it.
fn question(s: &str) -> bool {
    s.contains("no, stop")
        && s.lines()
            .last()
            .is_some_and(|l| l.contains("waiting for you"))
}

/// The hint line (the last row).
fn hints(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// Shift+Tab on an edit question approves it and accepts edits from now on (the footer says
/// so): the next edit runs without a question.
#[test]
fn shift_tab_on_an_edit_question_approves_it_and_accepts_edits_from_now_on() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "one.txt", "content": "one\n"}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "two.txt", "content": "two\n"}),
    ))
    .push(Reply::text("Both written."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.type_line("write the files");
    let screen = t.expect(
        "the edit question",
        |s| s.contains("one.txt") && question(s),
        WAIT,
    );
    assert!(
        hints(&screen).contains("shift+tab yes, accept edits from now on"),
        "the footer does not say what shift+tab does:\n{screen}"
    );
    t.send_raw(SHIFT_TAB);
    let screen = t.expect(
        "both edits run",
        |s| s.contains("Both written.") && idle(s),
        WAIT,
    );
    assert!(screen.contains("accept edits"), "{screen}");
    assert_eq!(w.read("one.txt").as_deref(), Some("one\n"));
    assert_eq!(w.read("two.txt").as_deref(), Some("two\n"));
    assert!(!screen.contains("denied"), "{screen}");
}

/// Shift+Tab on a command question cycles the mode and the waiting call is rated again: in
/// accept edits a command still asks; in plan mode it is refused (the question goes, the
/// model hears "plan mode").
#[test]
fn shift_tab_on_a_command_question_cycles_the_mode_and_rates_the_call_again() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "make deploy"})))
        .push(Reply::text("Planning instead."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.type_line("deploy");
    let screen = t.expect(
        "the command question",
        |s| s.contains("Allow bash") && question(s),
        WAIT,
    );
    assert!(hints(&screen).contains("shift+tab mode"), "{screen}");
    t.send_raw(SHIFT_TAB);
    let screen = t.expect(
        "accept edits, still asking",
        |s| s.contains("accept edits") && question(s),
        WAIT,
    );
    assert!(screen.contains("Allow bash"), "{screen}");
    assert_eq!(s.request_count(), 1, "the call was decided in accept edits");
    t.send_raw(SHIFT_TAB);
    let screen = t.expect(
        "plan mode refuses the waiting call",
        |s| s.contains("Planning instead.") && idle(s),
        WAIT,
    );
    assert!(screen.contains("plan mode"), "{screen}");
    assert!(!screen.contains("Allow bash"), "{screen}");
    let refusal = last_result(&s.request(1)).content;
    assert!(refusal.contains("plan mode"), "{refusal}");
}

/// Waits for `done` on screen, approving a question on the way if one comes.
fn approve_until(t: &mut support::pty::Pty, what: &str, done: impl Fn(&str) -> bool) -> String {
    let screen = t.expect(what, |s| done(s) || question(s), WAIT);
    if done(&screen) {
        return screen;
    }
    t.send_keys("y");
    t.expect(what, done, WAIT)
}

/// Interrupting a running command keeps what it printed: on screen (cut like any result,
/// marked interrupted, Ctrl+O shows all of it), for the model (with a note), and in the
/// session file (a resumed session shows it).
#[test]
fn an_interrupted_command_keeps_its_output_for_the_screen_the_model_and_the_session() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "seq -f 'row-%02g' 1 12; sleep 30"}),
    ))
    .push(Reply::text("I saw twelve rows."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 40);
    t.ready(WAIT);
    t.type_line("count");
    approve_until(&mut t, "the rows streaming", |s| s.contains("row-12"));
    t.send_raw(keys::ESC);
    let screen = t.expect(
        "the stopped command",
        |s| s.contains("interrupted") && idle(s),
        WAIT,
    );
    assert!(screen.contains("row-12"), "the output is gone:\n{screen}");
    assert!(
        !screen.contains("row-01"),
        "the result is not cut as results are:\n{screen}"
    );
    t.send_raw(b"\x0f");
    let screen = t.expect("all of it expanded", |s| s.contains("row-01"), WAIT);
    assert!(screen.contains("row-12"), "{screen}");

    t.type_line("what did you see?");
    t.expect(
        "the answer",
        |s| s.contains("I saw twelve rows.") && idle(s),
        WAIT,
    );
    let sent = last_result(&s.request(1)).content;
    assert!(
        sent.contains("row-01") && sent.contains("row-12"),
        "the model did not get the output: {sent}"
    );
    assert!(sent.contains("interrupted by the user"), "{sent}");
    t.quit_app(WAIT);

    let mut t = support::pty::Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    let screen = t.expect(
        "the resumed session",
        |s| s.contains("I saw twelve rows.") && idle(s),
        WAIT,
    );
    assert!(
        screen.contains("row-12") && screen.contains("interrupted"),
        "the resumed call lost its output:\n{screen}"
    );
    t.quit_app(WAIT);
}

/// Answers `y` to the questions about each of `calls`, in order.
fn approve_each(t: &mut support::pty::Pty, calls: &[&str]) {
    for call in calls {
        t.expect(
            &format!("the question about {call}"),
            |s| {
                question(s)
                    && s.lines().any(|l| {
                        l.contains('$') && l.contains(call)
                            || l.contains(&format!("Allow write {call}"))
                    })
            },
            WAIT,
        );
        t.send_keys("y");
    }
}

/// `/diff` shows every change the checkpoints know, whichever tool made it (a file tool, `sed
/// -i`, a redirect), each file with the calls that changed it; a resumed session too.
#[test]
fn diff_shows_what_commands_changed_with_their_origin() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "a.txt", "content": "alpha\n"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "sed -i s/alpha/beta/ a.txt"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "echo gamma > b.txt"}),
    ))
    .push(Reply::text("All three done."));
    let w = World::new(&s);
    w.write("c.txt", "old line\n");
    let mut t = w.spawn_tui(100, 40);
    t.ready(WAIT);
    t.type_line("change the files");
    approve_each(&mut t, &["a.txt", "sed -i", "echo gamma"]);
    t.expect(
        "the turn done",
        |s| s.contains("All three done.") && idle(s),
        WAIT,
    );
    assert_eq!(w.read("a.txt").as_deref(), Some("beta\n"));
    assert_eq!(w.read("b.txt").as_deref(), Some("gamma\n"));

    let check = |screen: &str| {
        for needle in [
            "a.txt +1",
            "by write  a.txt",
            "by bash  sed -i s/alpha/beta/ a.txt",
            "+ beta",
            "b.txt +1",
            "by bash  echo gamma > b.txt",
            "+ gamma",
        ] {
            assert!(screen.contains(needle), "/diff lacks {needle:?}:\n{screen}");
        }
    };
    t.type_line("/diff");
    let screen = t.expect(
        "the session's changes",
        |s| s.contains("+ gamma") && idle(s),
        WAIT,
    );
    check(&screen);
    t.quit_app(WAIT);

    let mut t = support::pty::Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    t.expect(
        "the resumed session",
        |s| s.contains("All three done.") && idle(s),
        WAIT,
    );
    t.type_line("/diff");
    let screen = t.expect(
        "the resumed changes",
        |s| s.contains("+ gamma") && idle(s),
        WAIT,
    );
    check(&screen);
    t.quit_app(WAIT);
}

/// `rein exec` stopped by SIGINT keeps what the model had written, says "interrupted" and how
/// to continue, and exits 130.
#[test]
fn exec_interrupted_by_sigint_prints_the_partial_answer_and_how_to_continue() {
    let s = ScriptedServer::openai();
    let gate = support::Gate::new();
    s.push(
        // Four fragments of nine characters: the first is "Half-way ".
        Reply::text("Half-way and then the rest of it ...")
            .fragments(4)
            .pause_after(2, &gate),
    );
    let w = World::new(&s);
    let mut t = support::pty::Pty::spawn(w.pty_command(&["exec", "explain"]), 100, 20);
    t.expect("the streamed start", |s| s.contains("Half-way"), WAIT);
    unsafe { libc::kill(t.pid() as i32, libc::SIGINT) };
    assert_eq!(t.wait_exit(WAIT), Some(130));
    let screen = t.screen_text();
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(screen.contains("To continue: rein exec -r "), "{screen}");
    assert!(screen.contains("rein exec --continue"), "{screen}");
    gate.release();
}

/// A `!` line shows in the composer as a shell command; a deny rule refusing it tells the
/// person which rule and how to change it (not the model's "do not retry").
#[test]
fn a_bang_command_is_shown_as_one_and_its_refusal_speaks_to_the_person() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.send_keys("!sudo rm -rf /");
    t.expect(
        "the composer marked as a shell command",
        |s| s.contains("! shell command"),
        WAIT,
    );
    t.send_raw(keys::ENTER);
    t.send_raw(b"\x0f");
    let screen = t.expect(
        "the refusal",
        |s| s.contains("blocked") && s.contains("Not run") && idle(s),
        WAIT,
    );
    assert!(
        screen.contains("a deny rule refuses `sudo rm -rf /`"),
        "{screen}"
    );
    assert!(
        screen.contains("sudo *"),
        "the rule is not named:\n{screen}"
    );
    assert!(screen.contains("/permissions"), "{screen}");
    assert!(!screen.contains("Do not retry"), "{screen}");
    assert!(!screen.contains("! shell command"), "{screen}");
}

/// With a model but no key, the setup screen says the key is missing, not the model.
#[test]
fn a_missing_key_alone_is_called_a_missing_key() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut c = w.pty_command(&[]);
    c.env_remove("API_KEY");
    c.env_remove("BASE_URL");
    let t = support::pty::Pty::spawn(c, 100, 24);
    let screen = t.expect("the setup screen", |s| s.contains("other keys quit"), WAIT);
    assert!(screen.contains("rein needs an API key"), "{screen}");
    assert!(!screen.contains("needs a model"), "{screen}");
    assert!(screen.contains("No API key is set"), "{screen}");
}

/// `/resume` lists the open session, marked current, in this directory's list (as `rein -r`
/// starts); before its first message it says why it is not listed.
#[test]
fn resume_lists_the_open_session_marked_current() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Hi there."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(180, 30);
    t.ready(WAIT);
    t.type_line("/resume");
    let screen = t.expect(
        "the empty picker",
        |s| s.contains("Resume a session") && s.contains("No saved sessions"),
        WAIT,
    );
    assert!(screen.contains("saved from its first message"), "{screen}");
    t.send_raw(keys::ESC);
    t.expect(
        "the picker closed",
        |s| idle(s) && !s.contains("Resume a session"),
        WAIT,
    );

    t.type_line("say hello to the otters");
    let screen = t.expect("the answer", |s| s.contains("Hi there.") && idle(s), WAIT);
    // The status line labels the session id.
    let status = screen.lines().rev().nth(1).unwrap_or("");
    assert!(status.contains(" · session "), "{status}");
    t.type_line("/resume");
    let screen = t.expect(
        "the open session listed",
        |s| s.contains("Resume a session") && s.contains("say hello to the otters"),
        WAIT,
    );
    assert!(
        screen.contains("· current"),
        "not marked current:\n{screen}"
    );
    assert!(screen.contains("this directory · 1 session"), "{screen}");
    t.send_raw(keys::ENTER);
    t.expect(
        "the open session kept",
        |s| s.contains("that is the open session") && idle(s),
        WAIT,
    );
}

/// An answer cut off by an interrupt comes back on resume as it was on screen, marked
/// interrupted.
#[test]
fn resume_shows_an_interrupted_partial_answer_marked_interrupted() {
    let s = ScriptedServer::openai();
    let gate = support::Gate::new();
    s.push(
        // Four fragments of nine characters: the first is "Half-way ".
        Reply::text("Half-way and then the rest of it ...")
            .fragments(4)
            .pause_after(2, &gate),
    );
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("explain");
    t.expect("the partial answer", |s| s.contains("Half-way"), WAIT);
    t.send_raw(keys::ESC);
    t.expect("the stop", |s| s.contains("interrupted") && idle(s), WAIT);
    gate.release();
    t.quit_app(WAIT);

    let mut t = support::pty::Pty::spawn(w.pty_command(&["--continue"]), 100, 30);
    let screen = t.expect(
        "the resumed session",
        |s| s.contains("explain") && idle(s),
        WAIT,
    );
    let partial = screen
        .find("Half-way")
        .unwrap_or_else(|| panic!("the partial answer is gone:\n{screen}"));
    let mark = screen
        .rfind("Interrupted")
        .unwrap_or_else(|| panic!("not marked:\n{screen}"));
    assert!(partial < mark, "{screen}");
    t.quit_app(WAIT);
}

/// A compound command whose parts ask offers `a` with the exact rule of each part; after it,
/// those parts run without a question.
#[test]
fn a_compound_command_offers_the_exact_rule_of_each_part() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "make build && npm test"}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "npm test"})))
    .push(Reply::text("Built and tested."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.type_line("build and test");
    let screen = t.expect(
        "the question",
        |s| s.contains("Allow bash") && question(s),
        WAIT,
    );
    assert!(
        screen.contains("a don't ask again this session for: each of `make build`, `npm test`"),
        "no rule per part:\n{screen}"
    );
    t.send_keys("a");
    let screen = t.expect(
        "the turn done",
        |s| s.contains("Built and tested.") && idle(s),
        WAIT,
    );
    assert!(
        screen.contains("bash(make build), bash(npm test)"),
        "the notice does not name both rules:\n{screen}"
    );
    assert_eq!(s.request_count(), 3);
}

/// A queued message: Up takes it back to edit (Enter queues it again), and Esc stops the turn
/// without sending it (it waits in the composer).
#[test]
fn a_queued_message_can_be_edited_and_esc_does_not_send_it() {
    let s = ScriptedServer::openai();
    let gate = support::Gate::new();
    s.push(
        Reply::text("Thinking about it for a long while ...")
            .fragments(4)
            .pause_after(2, &gate),
    )
    .push(Reply::text("Got the edited one."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("first");
    t.expect(
        "the turn running",
        |s| s.contains("Thinking") && s.contains("esc interrupt"),
        WAIT,
    );
    t.type_line("second message");
    t.expect(
        "it is queued",
        |s| s.contains("↳ queued  second message  ↑ edit"),
        WAIT,
    );
    t.send_raw(keys::UP);
    t.expect(
        "back in the composer",
        |s| !s.contains("↳ queued") && s.contains("› second message"),
        WAIT,
    );
    t.type_line(" edited");
    t.expect(
        "queued again",
        |s| s.contains("↳ queued  second message edited"),
        WAIT,
    );
    t.send_raw(keys::ESC);
    let screen = t.expect(
        "stopped, the message kept",
        |s| {
            s.contains("interrupted")
                && s.contains("› second message edited")
                && !s.contains("↳ queued")
        },
        WAIT,
    );
    assert_eq!(
        s.request_count(),
        1,
        "Esc sent the queued message:\n{screen}"
    );
    gate.release();
    t.send_raw(keys::ENTER);
    t.expect(
        "the answer",
        |s| s.contains("Got the edited one.") && idle(s),
        WAIT,
    );
    let told = support::rein::user_texts(&s.request(1)).join("\n");
    assert!(told.contains("second message edited"), "{told}");
}

/// `rein config` starts every value in one column, the longest name's row included.
#[test]
fn rein_config_aligns_every_row() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut c = w.cmd();
    c.arg("config");
    let o = support::rein::run_with_timeout(c, WAIT);
    let out = support::rein::stdout(&o);
    let column = |name: &str| {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{out}"));
        line[name.len()..]
            .find(|c: char| c != ' ')
            .map(|i| i + name.len())
    };
    let names = [
        "provider",
        "first_byte_timeout_secs",
        "idle_timeout_secs",
        "subagent_max_requests",
        "workspace",
        "project trust",
        "sandbox in force",
    ];
    let columns: Vec<_> = names.iter().map(|n| column(n)).collect();
    assert!(
        columns.windows(2).all(|w| w[0] == w[1] && w[0].is_some()),
        "{columns:?}\n{out}"
    );
}
