//! The `rein` command line through the real binary: exit codes, output into a closed pipe,
//! startup errors, which flags each command offers, and what the TUI prints on exit.

use crate::support;

use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use support::pty::{Pty, keys};
use support::rein::{World, run_with_timeout, stderr};
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(20);

fn no_panic(o: &std::process::Output) {
    let err = stderr(o);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

#[test]
fn exec_exits_3_only_when_every_call_was_refused() {
    // One call runs (reading is allowed), one is refused: the run did something, exit 0,
    // and stderr still says what was refused.
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .push(Reply::tool_call("bash", json!({"command": "touch x"})))
        .push(Reply::text("done"));
    let w = World::new(&s);
    w.write("a.txt", "hello\n");
    let o = w.exec(&["go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("1 action was refused"), "{err}");
    assert!(err.contains("nobody was asked (no --yes)"), "{err}");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.args(args);
        run_with_timeout(c, Duration::from_secs(30))
    };
    for args in [
        &["exec", "--no-such-flag", "hi"][..],
        // A settings flag before the subcommand would be dropped silently: refuse it.
        &["--model", "m", "exec", "hi"],
        &["sessions", "list", "--base-url", "http://x"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        no_panic(&o);
    }
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(s.request_count(), 0);
}

#[test]
fn exec_resume_with_an_empty_id_is_an_error_not_a_new_session() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let o = w.exec(&["-r", "", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--resume needs a session id"),
        "{}",
        stderr(&o)
    );
    assert_eq!(s.request_count(), 0, "no session may start");
}

#[test]
fn settings_flags_show_only_where_they_do_something() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let help = |args: &[&str]| {
        let mut c = w.cmd();
        c.args(args).arg("--help");
        String::from_utf8_lossy(&run_with_timeout(c, Duration::from_secs(30)).stdout).into_owned()
    };
    let flags = ["--provider", "--base-url", "--model", "--trust"];
    for args in [&[][..], &["exec"], &["config"]] {
        let text = help(args);
        for f in flags {
            assert!(
                text.contains(f),
                "`rein {args:?} --help` lacks {f}:\n{text}"
            );
        }
    }
    for args in [
        &["sessions"][..],
        &["sessions", "list"],
        &["sessions", "show"],
        &["sandbox"],
        &["policy", "check"],
    ] {
        let text = help(args);
        for f in flags {
            assert!(
                !text.contains(f),
                "`rein {args:?} --help` offers {f}:\n{text}"
            );
        }
    }
}

#[test]
fn printing_into_a_closed_pipe_does_not_panic() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("an answer that goes nowhere"));
    let w = World::new(&s);
    // Make a session so `sessions list` and `show` have something to print.
    let o = w.exec(&["hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = newest_session_id(&w);
    s.push(Reply::text("another answer"));
    for args in [
        &["config"][..],
        &["sessions", "list"],
        &["sessions", "list", "--json"],
        &["sessions", "show", &id],
        &["sessions", "export", &id, "--format", "json"],
        &["exec", "hi again"],
        &["--help"],
        &["--version"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut c = w.cmd();
        c.args(args).stdout(writer).stderr(Stdio::piped());
        let o = run_with_timeout(c, Duration::from_secs(60));
        no_panic(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}

fn newest_session_id(w: &World) -> String {
    let mut c = w.cmd();
    c.args(["sessions", "list", "--json"]);
    let o = run_with_timeout(c, Duration::from_secs(30));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_startup_error_is_wrapped_to_the_terminal() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut plain = w.cmd();
    plain.env_remove("MODEL").args(["exec", "hi"]);
    let unwrapped = stderr(&run_with_timeout(plain, Duration::from_secs(30)));
    let mut c = w.pty_command(&["exec", "hi"]);
    c.env_remove("MODEL");
    let mut t = Pty::spawn(c, 60, 20);
    assert_eq!(t.wait_exit(WAIT), Some(2), "{}", t.screen_text());
    let screen = t.screen_text();
    assert!(screen.contains("rein: No model is set"), "{screen}");
    assert!(!screen.contains("rein: rein"), "{screen}");
    let used: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        used.len() > 1,
        "a long message takes several lines: {screen}"
    );
    // Words stay whole: the same words as the unwrapped message, in order.
    let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(&screen), words(&unwrapped));
    for line in &used {
        assert!(line.trim_end().chars().count() <= 60, "{line:?}");
    }
}

#[test]
fn leaving_the_tui_says_how_to_resume_and_what_the_session_used() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("Hi there.").usage(1234, 56));
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.expect("the app", |s| s.contains("enter send"), WAIT);
    t.send_keys("hello");
    t.send_raw(keys::ENTER);
    t.expect("the answer", |s| s.contains("Hi there."), WAIT);
    t.expect(
        "idle",
        |s| s.lines().last().is_some_and(|l| l.contains("enter send")),
        WAIT,
    );
    assert_eq!(t.quit_app(WAIT), Some(0));
    let id = newest_session_id(&w);
    let screen = t.screen_text();
    assert!(screen.contains(&format!("rein -r {id}")), "{screen}");
    assert!(
        screen.contains("Tokens: 1.2k in, 56 out over 1 model request."),
        "{screen}"
    );
}

#[test]
fn leaving_the_tui_before_anything_was_sent_prints_no_resume_hint() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let mut t = w.spawn_tui(100, 30);
    t.expect("the app", |s| s.contains("enter send"), WAIT);
    assert_eq!(t.quit_app(WAIT), Some(0));
    assert!(!t.screen_text().contains("rein -r"), "{}", t.screen_text());
}
