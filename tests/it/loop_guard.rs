//! Loop detection instead of a hard request cap, through the real binary: a model that repeats
//! a call (as a real call or written as text) is stopped with the reason after a few repeats,
//! and the person can continue; varied work past 100 requests is not stopped; `rein exec` stops
//! at its default cap (1,000) or the one given.

use crate::support;

use serde_json::json;
use support::rein::{World, assert_ok, last_result, stderr, without_reminder};
use support::{Reply, ScriptedServer};

/// The session files' text, all of them.
fn sessions_text(w: &World) -> String {
    let dir = w.data_home.join("rein/sessions");
    let mut out = String::new();
    for e in std::fs::read_dir(&dir).expect("sessions dir").flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

fn repeats_are_stopped_with_the_reason(reply: impl Fn() -> Reply) {
    let s = ScriptedServer::openai();
    // Exactly the four the guard lets through: a fifth request would find no reply.
    for _ in 0..4 {
        s.push(reply());
    }
    let w = World::new(&s);
    w.write("notes.txt", "one line\n");
    let o = w.exec(&["--yes", "read the notes"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "a stopped turn is no success: {err}");
    // Stopped at the 4th identical step, not at a cap.
    assert_eq!(s.request_count(), 4, "{err}");
    assert!(
        err.contains("stopped a loop") && err.contains("4 times in a row"),
        "{err}"
    );
    assert!(
        err.contains("Send another message to let it continue"),
        "{err}"
    );
    // The model was told at the 3rd repeat, in the result itself.
    let third = without_reminder(&last_result(&s.request(3)).content);
    assert!(third.contains("3rd time in a row"), "{third}");
    assert!(third.contains("one line"), "{third}");
    // The reason is in the session file.
    let session = sessions_text(&w);
    assert!(
        session.contains("\"type\":\"error\"") && session.contains("stopped a loop"),
        "{session}"
    );

    // The person continues: the next message runs normally.
    s.push(Reply::text("Continuing as asked."));
    let o = w.exec(&["--yes", "--continue", "go on"]);
    assert_ok(&o);
    assert_eq!(s.remaining(), 0, "{}", stderr(&o));
    assert!(support::rein::stdout(&o).contains("Continuing as asked."));
}

#[test]
fn a_repeated_call_is_stopped_after_four_identical_steps() {
    repeats_are_stopped_with_the_reason(|| {
        Reply::tool_call("read_file", json!({"path": "notes.txt"}))
    });
}

#[test]
fn a_repeated_call_written_as_text_is_stopped_the_same_way() {
    // A small model writing the call in its text (recovered by repair) every time.
    repeats_are_stopped_with_the_reason(|| {
        Reply::text(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>",
        )
    });
}

#[test]
fn varied_work_past_a_hundred_requests_is_not_stopped() {
    let s = ScriptedServer::openai();
    let steps = 130;
    for i in 1..=steps {
        s.push(Reply::tool_call(
            "read_file",
            json!({"path": "big.txt", "offset": i, "limit": 1}),
        ));
    }
    s.push(Reply::text("Read every line."));
    let w = World::new(&s);
    let lines: String = (1..=steps).map(|i| format!("line {i}\n")).collect();
    w.write("big.txt", &lines);
    let o = w.exec(&["--yes", "read it line by line"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), steps + 1);
    assert_eq!(s.remaining(), 0);
}

#[test]
fn exec_stops_at_the_cap_given_by_flag_or_config() {
    let s = ScriptedServer::openai();
    for i in 1..=20 {
        s.push(Reply::tool_call(
            "read_file",
            json!({"path": "big.txt", "offset": i, "limit": 1}),
        ));
    }
    let w = World::new(&s);
    w.write("big.txt", &"x\n".repeat(40));
    let o = w.exec(&["--yes", "--max-requests", "5", "go"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(s.request_count(), 5, "{err}");
    assert!(
        err.contains("cap of 5 model requests") && err.contains("max_requests"),
        "{err}"
    );

    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nmax_requests = 3\n");
    let o = w.exec(&["--yes", "go"]);
    assert_eq!(s.request_count(), 5 + 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("cap of 3 model requests"));
    // The flag wins over the file.
    let o = w.exec(&["--yes", "--max-requests", "2", "go"]);
    assert_eq!(s.request_count(), 5 + 3 + 2, "{}", stderr(&o));
}

#[test]
fn exec_has_a_default_cap_of_one_thousand() {
    let s = ScriptedServer::openai();
    let cap = 1_000;
    for i in 1..=cap + 5 {
        s.push(Reply::tool_call(
            "read_file",
            json!({"path": "big.txt", "offset": i, "limit": 1}),
        ));
    }
    let w = World::new(&s);
    w.write("big.txt", &"y\n".repeat(cap + 10));
    let mut c = w.cmd();
    c.args(["exec", "--yes", "go"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(300));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(s.request_count(), cap, "{err}");
    assert!(err.contains("cap of 1000 model requests"), "{err}");
}
