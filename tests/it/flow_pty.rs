//! The pair-programming flow end to end, in a pseudo-terminal: the real `rein` binary against
//! the scripted model server. Questions in the bottom pane with the conversation above,
//! "always" rules that say what they allow, the modes, `!cmd`, the `/model` picker, the
//! composer in `$EDITOR`, and a resumed session that looks like the live one.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::pty::{ENTER_ALT_SCREEN, Pty, idle, keys, wait_until};
use support::rein::{World, last_result, user_texts};
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

/// The row of the first line containing `needle`.
fn row_of(screen: &str, needle: &str) -> Option<usize> {
    screen.lines().position(|l| l.contains(needle))
}

/// The question sits in the bottom pane: the model's reason for the call and the call's tool
/// line stay visible above it, `a` says exactly which rule it adds, a notice names the rule
/// after `a`, the rule then answers the next question, and `/permissions` lists it (with its
/// source) and drops it.
#[test]
fn a_question_in_the_bottom_pane_keeps_the_reason_in_view_and_always_names_its_rule() {
    let s = ScriptedServer::openai();
    // Edits need a read first.
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})));
    s.push(
        Reply::new()
            .say("I'll make subtract return a - b instead of a + b.")
            .call(
                "str_replace",
                json!({"path": "calc.py", "old_str": "return a + b", "new_str": "return a - b"}),
            ),
    )
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "calc.py", "old_str": "# math", "new_str": "# arithmetic"}),
    ))
    .push(Reply::text("Both edits are in."));
    let w = World::new(&s);
    w.write("calc.py", "# math\ndef subtract(a, b):\n    return a + b\n");
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("fix subtract");
    let screen = t.expect(
        "the question with the assistant text above it",
        |s| s.contains("Allow edit calc.py") && s.contains("I'll make subtract") && question(s),
        WAIT,
    );
    let reason = row_of(&screen, "I'll make subtract").unwrap();
    let tool = row_of(&screen, "edit  calc.py").expect("the pending call's tool line");
    let pane = row_of(&screen, "Allow edit calc.py").unwrap();
    assert!(
        reason < tool && tool < pane,
        "not reason, call, question:\n{screen}"
    );
    assert!(
        screen
            .lines()
            .nth(tool)
            .unwrap()
            .contains("waiting for you"),
        "{screen}"
    );
    // The pane is at the bottom (above the status and hint lines) and shows the diff.
    assert!(
        pane > 10,
        "the question is not in the bottom pane:\n{screen}"
    );
    assert!(screen.contains("return a - b"), "{screen}");
    let calc = w.ws.join("calc.py");
    let rule = format!("edit({})", calc.display());
    assert!(
        screen.contains("a don't ask again this session for: edits of calc.py"),
        "`a` does not name its rule:\n{screen}"
    );
    assert!(
        screen.contains("n/esc no, go on") && screen.contains("esc esc/ctrl+c no, stop"),
        "{screen}"
    );

    t.send_keys("a");
    let screen = t.expect(
        "the notice naming the rule, and the second edit run without a question",
        |s| s.contains("Both edits are in.") && idle(s),
        WAIT,
    );
    assert!(
        screen.contains(&format!("Added for this session: allow {rule}")),
        "{screen}"
    );
    assert!(!screen.contains("Allow edit"), "asked again:\n{screen}");
    assert_eq!(
        w.read("calc.py").as_deref(),
        Some("# arithmetic\ndef subtract(a, b):\n    return a - b\n")
    );

    t.type_line("/permissions");
    let screen = t.expect(
        "the rules with their sources",
        |s| s.contains("Permissions") && s.contains(&format!("1. allow {rule}")) && idle(s),
        WAIT,
    );
    assert!(screen.contains("defaults"), "{screen}");
    t.type_line("/permissions drop 1");
    t.expect(
        "the rule dropped",
        |s| s.contains("Dropped the session rule"),
        WAIT,
    );
    // The read, the two edits, the answer.
    assert_eq!(s.request_count(), 4);
}

/// Esc refuses and the turn goes on (the model hears "denied" and answers); a second Esc
/// right after refuses and stops the turn. The dialog keeps the command's shell quoting, and
/// offers no "always" when no rule can be made (a redirect to a file).
#[test]
fn esc_refuses_and_goes_on_a_second_esc_stops_the_turn() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 -c 'print(42)' > answer.txt"}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "make deploy"})))
    .push(Reply::tool_call("bash", json!({"command": "make release"})))
    // Slow, so that a machine too busy to read the second Esc within the window still shows
    // the stop (the unit test `esc_refuses_after_a_pause…` pins the window itself).
    .push(Reply::text("never sent").delay(Duration::from_secs(30)));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("print 42");
    let screen = t.expect(
        "the python question",
        |s| s.contains("Allow bash") && s.contains("print(42)") && question(s),
        WAIT,
    );
    assert!(
        screen.contains("asks    for `python3 -c 'print(42)'`"),
        "the quoting is lost:\n{screen}"
    );
    assert!(
        !screen.contains("ask again this session"),
        "`a` offered where no rule can be made:\n{screen}"
    );
    assert!(
        screen.contains("(no \"always\": "),
        "no word on why there is no `a`:\n{screen}"
    );
    // `a` is not an answer here.
    t.send_keys("a");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.request_count(), 1);

    t.send_raw(keys::ESC);
    let screen = t.expect(
        "the next question: the turn went on",
        |s| s.contains("make deploy") && s.contains("Allow bash"),
        WAIT,
    );
    assert!(screen.contains("denied"), "{screen}");
    assert!(
        last_result(&s.request(1))
            .content
            .starts_with("The user denied this tool call."),
        "{}",
        last_result(&s.request(1)).content
    );
    // A while later, Esc refuses this one too; then Esc Esc at once: stop.
    std::thread::sleep(Duration::from_millis(600));
    t.send_raw(keys::ESC);
    wait_until("the refusal", WAIT, || s.request_count() >= 3);
    t.expect(
        "the third question",
        |s| s.contains("make release") && s.contains("Allow bash"),
        WAIT,
    );
    std::thread::sleep(Duration::from_millis(600));
    t.send_raw(keys::ESC);
    // Two Escs read at once are one key to the terminal parser: wait for the first to show.
    t.expect(
        "the pane waiting for a second Esc",
        |s| s.contains("esc again stops the turn"),
        WAIT,
    );
    t.send_raw(keys::ESC);
    let screen = t.expect(
        "the turn stopped",
        |s| s.contains("interrupted") && idle(s),
        WAIT,
    );
    assert!(!screen.contains("never sent"), "{screen}");
    // Refused and stopped at once: the call reads as one or the other, never as run.
    assert!(
        screen.contains("make release  denied") || screen.contains("make release  interrupted"),
        "the stopped call ran:\n{screen}"
    );
    assert!(w.read("answer.txt").is_none());
}

/// Shift+Tab walks ask → accept edits → plan, shown in the status line. Plan mode refuses an
/// edit with "plan mode" (the model is told, and told it is planning); the plan is approved
/// with one key, which switches to accept edits, and the edit then runs without a question.
#[test]
fn shift_tab_cycles_the_modes_plan_mode_refuses_an_edit_and_approving_the_plan_switches() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": "alpha\n"}),
    ))
    .push(Reply::text("Plan:\n1. Create notes.txt with alpha."))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": "alpha\n"}),
    ))
    .push(Reply::text("Done."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    let screen = t.ready(WAIT);
    assert!(screen.contains("mode ask"), "{screen}");
    t.send_raw(SHIFT_TAB);
    t.expect("accept edits", |s| s.contains("accept edits"), WAIT);
    t.send_raw(SHIFT_TAB);
    t.expect("plan mode", |s| s.contains("plan mode"), WAIT);

    t.type_line("create notes.txt");
    let screen = t.expect(
        "the plan and the offer",
        |s| s.contains("Create notes.txt with alpha") && s.contains("plan ready"),
        WAIT,
    );
    assert!(screen.contains("denied"), "{screen}");
    assert!(
        !screen.contains("Allow write"),
        "plan mode asked:\n{screen}"
    );
    assert!(w.read("notes.txt").is_none(), "written in plan mode");
    let refusal = last_result(&s.request(1)).content;
    assert!(refusal.contains("plan mode"), "{refusal}");
    let told = s.request(0).body_text;
    assert!(told.contains("You are in plan mode"), "no plan reminder");

    t.send_keys("e");
    let screen = t.expect(
        "the plan carried out",
        |s| s.contains("Done.") && idle(s),
        WAIT,
    );
    assert!(screen.contains("accept edits"), "{screen}");
    assert!(
        !screen.contains("Allow write"),
        "accept edits asked:\n{screen}"
    );
    assert_eq!(w.read("notes.txt").as_deref(), Some("alpha\n"));
    assert!(
        user_texts(&s.request(2))
            .iter()
            .any(|t| t.contains("The plan is approved")),
        "the approval did not reach the model"
    );
    assert!(
        !s.request(2).body_text.contains("You are in plan mode"),
        "still told it plans"
    );
}

/// A session from `rein exec --mode accept-edits`: the edit ran without `--yes` (the mode
/// allows it), the command was refused (nobody to ask). Resumed in the TUI it looks as it did
/// live: the edit's diff, "denied" for the refusal (not "failed"), the context usage of the
/// conversation (not 0%), and `/diff` covers what was written before the resume.
#[test]
fn a_resumed_session_shows_the_diff_denied_and_its_context_usage() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": "alpha\nbravo\n"}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "make deploy"})))
    .push(Reply::text("Wrote the notes; deploying was refused."));
    let w = World::new(&s);
    let o = w.exec(&["--mode", "accept-edits", "write the notes and deploy"]);
    assert_eq!(w.read("notes.txt").as_deref(), Some("alpha\nbravo\n"));
    assert!(
        support::rein::stdout(&o).contains("deploying was refused"),
        "{}",
        support::rein::stderr(&o)
    );

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 30);
    let screen = t.expect(
        "the resumed conversation",
        |s| s.contains("deploying was refused") && idle(s),
        WAIT,
    );
    let edit = row_of(&screen, "write  notes.txt (+2")
        .unwrap_or_else(|| panic!("no edit line with its count:\n{screen}"));
    assert!(
        screen.contains("+ alpha") && screen.contains("+ bravo"),
        "no diff for the resumed edit:\n{screen}"
    );
    assert!(edit < row_of(&screen, "+ alpha").unwrap_or(0), "{screen}");
    assert!(
        screen.contains("make deploy  denied"),
        "the refusal does not read as denied:\n{screen}"
    );
    assert!(!screen.contains("failed"), "{screen}");
    let status = screen.lines().rev().nth(1).unwrap_or("");
    assert!(
        !status.contains(" 0%") && status.contains("/128k"),
        "the meter starts at 0%: {status}"
    );

    t.type_line("/diff");
    let screen = t.expect(
        "the session's changes",
        |s| s.matches("+ bravo").count() >= 2,
        WAIT,
    );
    assert!(!screen.contains("no file changes"), "{screen}");
    t.quit_app(WAIT);
}

/// Shift+Tab to accept edits in the TUI, then the session is continued headless with the
/// config's mode (ask): the resumed session is not more permissive than the config, so the edit
/// is refused without `--yes`.
#[test]
fn a_resumed_session_never_starts_more_permissive_than_the_config() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Ready."))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "late.txt", "content": "late\n"}),
        ))
        .push(Reply::text("Tried."));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);
    t.send_raw(SHIFT_TAB);
    t.expect("accept edits", |s| s.contains("accept edits"), WAIT);
    t.type_line("hello");
    t.expect("the answer", |s| s.contains("Ready.") && idle(s), WAIT);
    t.quit_app(WAIT);

    let o = w.exec(&["-c", "write late.txt"]);
    assert!(
        w.read("late.txt").is_none(),
        "the session's accept-edits mode came back"
    );
    let refused = last_result(&s.request(2)).content;
    assert!(
        refused.contains("denied") || refused.to_lowercase().contains("refused"),
        "{refused}\n{}",
        support::rein::stderr(&o)
    );
}

/// `!cmd` runs the command at once (no question: typing it was the answer) and its output
/// reaches the model with the next message; a deny rule still holds for it. `/model` without a
/// name lists the server's models and Enter switches to the chosen one.
#[test]
fn bang_runs_a_command_for_the_next_message_and_model_opens_a_picker() {
    let s = ScriptedServer::openai();
    s.route(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "scripted-model"}, {"id": "scripted-large"}]}),
    )
    .push(Reply::text("It printed the marker."));
    let w = World::new(&s);
    w.write("marker.txt", "marker-7f3a\n");
    let mut t = w.spawn_tui(100, 30);
    t.ready(WAIT);

    t.type_line("!cat marker.txt");
    let screen = t.expect(
        "the command's output",
        |s| s.contains("marker-7f3a") && idle(s),
        WAIT,
    );
    assert!(!screen.contains("Allow bash"), "{screen}");
    assert_eq!(s.request_count(), 0, "the model was asked for a !cmd");
    t.type_line("!sudo rm -rf /");
    t.expect("the deny", |s| s.contains("blocked") && idle(s), WAIT);

    t.type_line("/model");
    let screen = t.expect("the picker", |s| s.contains("scripted-large"), WAIT);
    assert!(screen.contains("current"), "{screen}");
    t.send_raw(keys::DOWN);
    t.send_raw(keys::ENTER);
    t.expect("the switch", |s| s.contains("model: scripted-large"), WAIT);

    t.type_line("what did it print?");
    t.expect(
        "the answer",
        |s| s.contains("It printed the marker.") && idle(s),
        WAIT,
    );
    let req = s.request(0);
    assert_eq!(req.body["model"], "scripted-large");
    let told = user_texts(&req).join("\n");
    assert!(
        told.contains("$ cat marker.txt") && told.contains("marker-7f3a"),
        "{told}"
    );
    assert!(
        told.contains("$ sudo rm -rf /") && told.contains("blocked"),
        "{told}"
    );
}

/// Ctrl+G hands the composer to `$EDITOR` and takes back what it saved; the terminal is the
/// TUI's again afterwards (the next frame is whole). Ctrl+Z comes back the same way (here the
/// process group has no job control, so the stop is immediately over).
#[test]
fn ctrl_g_edits_the_message_in_the_editor_and_ctrl_z_comes_back() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Got the final words."));
    let (_w, mut t) = draft_with_editor(&s, "sed -i s/draft/final/");
    t.send_raw(b"\x07");
    t.expect(
        "the edited message back in the composer",
        |s| s.contains("a final message") && s.contains("enter send"),
        WAIT,
    );
    // Without job control the stop returns at once; rein leaves the alternate screen and
    // comes back. Enter is typed the moment it is back (raw mode is on before it enters the
    // alternate screen), before its first frame: a key typed while rein comes back is not lost.
    let entered = |t: &Pty| count(&t.raw_output(), ENTER_ALT_SCREEN);
    let before = entered(&t);
    t.send_raw(b"\x1a");
    wait_until("rein back on the alternate screen", WAIT, || {
        entered(&t) > before
    });
    t.send_raw(keys::ENTER);
    t.expect(
        "the answer",
        |s| s.contains("Got the final words.") && idle(s),
        WAIT,
    );
    assert!(
        user_texts(&s.request(0))
            .iter()
            .any(|m| m.contains("a final message")),
        "the edited text was not sent"
    );
}

/// Keys typed while rein is away (here while the editor runs; the terminal holds them) are
/// read once rein is back: they become readable the moment it switches the terminal to raw
/// mode again, which is when a lost wake-up of the key reader used to swallow them.
#[test]
fn keys_typed_while_the_editor_runs_reach_the_composer_afterwards() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Got it."));
    let (_w, mut t) = draft_with_editor(&s, "sleep 1; sed -i s/draft/final/");
    let left = |t: &Pty| count(&t.raw_output(), b"\x1b[?1049l");
    let before = left(&t);
    t.send_raw(b"\x07");
    wait_until("rein off the alternate screen", WAIT, || left(&t) > before);
    t.send_keys(" typed meanwhile");
    t.expect(
        "the edit and the keys typed meanwhile in the composer",
        |s| s.contains("a final message typed meanwhile") && idle(s),
        WAIT,
    );
    t.send_raw(keys::ENTER);
    t.expect("the answer", |s| s.contains("Got it.") && idle(s), WAIT);
    assert!(
        user_texts(&s.request(0))
            .iter()
            .any(|m| m.contains("a final message typed meanwhile")),
        "the typed keys were not sent"
    );
}

/// rein in a terminal with `editor` as `$EDITOR` and "a draft message" typed in the composer.
fn draft_with_editor(s: &ScriptedServer, editor: &str) -> (World, Pty) {
    let w = World::new(s);
    let mut c = w.pty_command(&[]);
    c.env("EDITOR", editor);
    let mut t = Pty::spawn(c, 100, 30);
    t.ready(WAIT);
    t.send_keys("a draft message");
    t.expect("the draft", |s| s.contains("a draft message"), WAIT);
    (w, t)
}

/// How often `needle` occurs in `haystack`.
fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}
