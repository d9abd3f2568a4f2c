//! `/rewind`, Esc Esc and `/undo` in the real full-screen app in a pseudo-terminal, against the
//! scripted model server: files changed by `write_file` and by bash go back, live and after a
//! resume; the conversation goes back too (and stays so when resumed); files changed outside
//! rein are listed and asked about; a link planted since is never followed.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::pty::{Pty, idle, keys, wait_until};
use support::rein::{World, stderr, stdout, user_texts};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy; assertions are about behaviour, not speed.
const WAIT: Duration = Duration::from_secs(30);

fn exec_ok(w: &World, args: &[&str]) {
    let o = w.exec(args);
    assert!(
        o.status.success(),
        "rein exec {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
}

/// The turn that changes four files: one by write_file, three by one bash command (one
/// edited, one moved: deleted and created).
fn script_three_changes(s: &ScriptedServer) {
    // Edits need a read first.
    s.push(Reply::tool_call("read_file", json!({"path": "a.txt"})));
    s.push(Reply::new().say("Editing a.txt.").call(
        "write_file",
        json!({"path": "a.txt", "content": "alpha v2\n"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "printf 'bravo v2\\n' > b.txt && mv gone.txt moved.txt"}),
    ))
    .push(Reply::text("Both files changed."));
}

fn three_files(w: &World) {
    w.write("a.txt", "alpha v1\n");
    w.write("b.txt", "bravo v1\n");
    w.write("gone.txt", "gone soon\n");
}

fn assert_three_restored(w: &World) {
    assert_eq!(w.read("a.txt").as_deref(), Some("alpha v1\n"));
    assert_eq!(w.read("b.txt").as_deref(), Some("bravo v1\n"));
    assert_eq!(w.read("gone.txt").as_deref(), Some("gone soon\n"));
    assert_eq!(w.read("moved.txt"), None);
}

fn session_file(w: &World) -> String {
    let dir = w.data_home.join("rein/sessions");
    let f = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a session file");
    std::fs::read_to_string(f).unwrap()
}

/// Picks the message, then the option `downs` rows below the first, and waits for the plan.
fn rewind_to_plan(t: &mut Pty, message: &str, downs: usize) -> String {
    t.expect(
        "the list of messages",
        |s| s.contains("rewind to before which message") && s.contains(message),
        WAIT,
    );
    t.send_raw(keys::ENTER);
    t.expect(
        "the options",
        |s| s.contains("Restore code and conversation") && s.contains("Restore code only"),
        WAIT,
    );
    for _ in 0..downs {
        t.send_raw(keys::DOWN);
    }
    t.send_raw(keys::ENTER);
    t.expect("the restore plan", |s| s.contains("╭ Restore "), WAIT)
}

#[test]
fn rewind_restores_write_file_and_bash_changes_and_the_conversation_which_stays_rewound() {
    let s = ScriptedServer::openai();
    script_three_changes(&s);
    let w = World::new(&s);
    three_files(&w);
    let mut t = w.spawn_tui(100, 40);
    t.expect("the app", idle, WAIT);

    t.type_line("change both files");
    t.expect(
        "the write approval",
        |s| s.contains("Allow ") && s.contains("a.txt?"),
        WAIT,
    );
    t.send_keys("y");
    t.expect(
        "the bash approval",
        |s| s.contains("Allow ") && s.contains("mv gone.txt"),
        WAIT,
    );
    t.send_keys("y");
    t.expect(
        "the answer",
        |s| s.contains("Both files changed.") && idle(s),
        WAIT,
    );
    assert_eq!(w.read("b.txt").as_deref(), Some("bravo v2\n"));
    assert_eq!(w.read("gone.txt"), None);

    t.type_line("/rewind");
    let list = t.expect("the message", |s| s.contains("4 files changed"), WAIT);
    assert!(list.contains("change both files"), "{list}");
    let plan = rewind_to_plan(&mut t, "change both files", 0);
    assert!(plan.contains("Restore 4 files"), "{plan}");
    for shown in [
        "restore a.txt",
        "restore b.txt",
        "recreate gone.txt",
        "delete moved.txt",
        "alpha v1",
        "bravo v2",
    ] {
        assert!(plan.contains(shown), "`{shown}` missing:\n{plan}");
    }
    assert_eq!(
        w.read("a.txt").as_deref(),
        Some("alpha v2\n"),
        "nothing before the answer"
    );
    t.send_keys("y");
    wait_until("the files restored", WAIT, || w.read("gone.txt").is_some());
    assert_three_restored(&w);
    let screen = t.expect(
        "the conversation before the message, the message back in the composer",
        |s| s.contains("Restored 4 files") && s.contains("Rewound the conversation"),
        WAIT,
    );
    assert!(!screen.contains("Both files changed."), "{screen}");
    assert!(
        screen.contains("change both files"),
        "in the composer:\n{screen}"
    );

    // The model no longer sees the rewound message.
    t.send_raw(keys::CTRL_C);
    s.push(Reply::text("Fresh start."));
    t.type_line("what now?");
    t.expect(
        "the answer",
        |s| s.contains("Fresh start.") && idle(s),
        WAIT,
    );
    let texts = user_texts(&s.request(s.request_count() - 1));
    assert!(
        !texts.iter().any(|x| x.contains("change both files")),
        "{texts:?}"
    );
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
    assert!(session_file(&w).contains(r#"{"type":"rewind""#));

    // Resumed, the conversation is the rewound one, on screen and for the model.
    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    let screen = t.expect(
        "the resumed session",
        |s| s.contains("Fresh start.") && idle(s),
        WAIT,
    );
    assert!(!screen.contains("Both files changed."), "{screen}");
    s.push(Reply::text("Still fresh."));
    t.type_line("and again");
    t.expect("the answer", |s| s.contains("Still fresh."), WAIT);
    let texts = user_texts(&s.request(s.request_count() - 1));
    assert!(
        !texts.iter().any(|x| x.contains("change both files")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|x| x.contains("what now?")), "{texts:?}");
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

#[test]
fn after_a_resume_esc_esc_restores_the_code_only() {
    let s = ScriptedServer::openai();
    script_three_changes(&s);
    let w = World::new(&s);
    three_files(&w);
    exec_ok(&w, &["--yes", "change both files"]);
    assert_eq!(w.read("a.txt").as_deref(), Some("alpha v2\n"));

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    t.expect(
        "the resumed session",
        |s| s.contains("Both files changed.") && idle(s),
        WAIT,
    );
    t.send_raw(keys::ESC);
    std::thread::sleep(Duration::from_millis(150));
    t.send_raw(keys::ESC);
    let plan = rewind_to_plan(&mut t, "change both files", 2);
    assert!(
        plan.contains("restore b.txt") && plan.contains("bravo v1"),
        "{plan}"
    );
    t.send_keys("y");
    wait_until("the files restored", WAIT, || w.read("gone.txt").is_some());
    assert_three_restored(&w);
    let screen = t.expect(
        "the notice",
        |s| s.contains("Restored 4 files") && idle(s),
        WAIT,
    );
    assert!(
        screen.contains("Both files changed."),
        "the conversation stays:\n{screen}"
    );
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

#[test]
fn undo_walks_back_turn_by_turn_and_asks_about_files_changed_outside_rein() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "alpha v2\n"}),
        ))
        .push(Reply::text("one"))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "printf 'alpha v3\\n' > a.txt && printf 'new\\n' > c.txt"}),
        ))
        .push(Reply::text("two"));
    let w = World::new(&s);
    w.write("a.txt", "alpha v1\n");
    exec_ok(&w, &["--yes", "first turn"]);
    exec_ok(&w, &["--continue", "--yes", "second turn"]);
    assert_eq!(w.read("c.txt").as_deref(), Some("new\n"));
    // Edited by hand after rein created it.
    w.write("c.txt", "hand edit\n");

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    t.expect(
        "the resumed session",
        |s| s.contains("two") && idle(s),
        WAIT,
    );
    t.type_line("/undo");
    let plan = t.expect("the plan", |s| s.contains(" Restore 2 files"), WAIT);
    for shown in [
        "restore a.txt",
        "delete c.txt",
        "changed outside rein since",
        "Changed outside rein since rein last touched it: c.txt",
        "s restore the others",
    ] {
        assert!(plan.contains(shown), "`{shown}` missing:\n{plan}");
    }
    t.send_keys("s");
    wait_until("a.txt back", WAIT, || {
        w.read("a.txt").as_deref() == Some("alpha v2\n")
    });
    t.expect(
        "what was left alone",
        |s| s.contains("Not restored: c.txt: changed outside rein"),
        WAIT,
    );
    assert_eq!(w.read("c.txt").as_deref(), Some("hand edit\n"));

    // Asked again about c.txt alone; this time it is overwritten.
    t.type_line("/undo");
    t.expect(
        "the plan for c.txt",
        |s| s.contains(" Restore 1 file to before “second turn”"),
        WAIT,
    );
    t.send_keys("y");
    wait_until("c.txt deleted", WAIT, || w.read("c.txt").is_none());

    // Then the turn before.
    t.type_line("/undo");
    let plan = t.expect(
        "the plan for the first turn",
        |s| s.contains("to before “first turn”"),
        WAIT,
    );
    assert!(plan.contains("alpha v1"), "{plan}");
    t.send_keys("y");
    wait_until("a.txt at v1", WAIT, || {
        w.read("a.txt").as_deref() == Some("alpha v1\n")
    });
    t.type_line("/undo");
    t.expect("nothing left", |s| s.contains("Nothing to undo"), WAIT);
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

#[test]
fn a_restore_never_writes_through_a_link_planted_since() {
    let s = ScriptedServer::openai();
    s.push(
        Reply::new()
            .call("read_file", json!({"path": "dir/f.txt"}))
            .call("read_file", json!({"path": "ok.txt"}))
            .call(
                "write_file",
                json!({"path": "dir/f.txt", "content": "changed\n"}),
            )
            .call(
                "write_file",
                json!({"path": "ok.txt", "content": "ok v2\n"}),
            ),
    )
    .push(Reply::text("done"));
    let w = World::new(&s);
    w.write("dir/f.txt", "original\n");
    w.write("ok.txt", "ok v1\n");
    exec_ok(&w, &["--yes", "edit two files"]);
    // A hostile change: dir becomes a link to a directory outside the workspace.
    let outside = w.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "outside, keep me\n").unwrap();
    std::fs::remove_dir_all(w.ws.join("dir")).unwrap();
    std::os::unix::fs::symlink(&outside, w.ws.join("dir")).unwrap();

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 40);
    t.expect(
        "the resumed session",
        |s| s.contains("done") && idle(s),
        WAIT,
    );
    t.type_line("/undo");
    let plan = t.expect("the plan", |s| s.contains("cannot restore"), WAIT);
    assert!(
        plan.contains("dir/f.txt") && plan.contains("symbolic link"),
        "{plan}"
    );
    t.send_keys("y");
    wait_until("ok.txt back", WAIT, || {
        w.read("ok.txt").as_deref() == Some("ok v1\n")
    });
    t.expect(
        "the notice",
        |s| s.contains("Not restored: dir/f.txt"),
        WAIT,
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).unwrap(),
        "outside, keep me\n"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        1,
        "nothing new outside"
    );
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}
