//! Sessions end to end through the real binary: saved as they happen, continued after a
//! `kill -9`, resumed by id prefix, listed, shown, exported and removed.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::rein::{World, assert_ok, last_result, stderr, stdout, tool_results, user_texts};
use support::{Reply, ScriptedServer};

fn list_json(w: &World) -> Vec<Value> {
    let mut c = w.cmd();
    c.args(["sessions", "list", "--json"]);
    let o = c.output().unwrap();
    assert_ok(&o);
    serde_json::from_str::<Vec<Value>>(&stdout(&o)).unwrap()
}

fn session_files(w: &World) -> Vec<std::path::PathBuf> {
    let dir = w.data_home.join("rein/sessions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn exec_sessions_are_saved_listed_and_continued() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo first-turn"}),
    ))
    .push(Reply::text("First answer."))
    .push(Reply::text("Second answer."));
    let w = World::new(&s);
    assert_ok(&w.exec(&["--yes", "remember the word PELICAN"]));

    let list = list_json(&w);
    assert_eq!(list.len(), 1, "{list:?}");
    let entry = &list[0];
    for key in [
        "id",
        "title",
        "cwd",
        "model",
        "created_at",
        "updated_at",
        "message_count",
    ] {
        assert!(entry.get(key).is_some(), "{key} missing in {entry}");
    }
    assert_eq!(entry["title"], "remember the word PELICAN");
    assert_eq!(entry["model"], "scripted-model");
    assert_eq!(entry["cwd"], w.ws.display().to_string());
    assert!(entry["message_count"].as_u64().unwrap() >= 3, "{entry}");

    // --continue carries the whole earlier conversation, and appends to the same file.
    assert_ok(&w.exec(&["--continue", "what was the word?"]));
    let req = s.request(2);
    let texts = user_texts(&req);
    assert!(texts[0].contains("PELICAN"), "{texts:?}");
    assert!(texts.last().unwrap().contains("what was the word?"));
    assert!(tool_results(&req)[0].content.contains("first-turn"));
    assert_eq!(session_files(&w).len(), 1);

    // Another directory has no session to continue.
    let mut c = w.cmd();
    c.current_dir(&w.home).args(["exec", "--continue", "hi"]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no saved session"), "{}", stderr(&o));
}

#[test]
fn kill_9_during_a_tool_then_continue_repairs_the_dangling_call() {
    let s = ScriptedServer::anthropic();
    s.push(Reply::new().say("Starting a long job.").call_with_id(
        "toolu_long",
        "bash",
        json!({"command": "sleep 60"}),
    ));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.args(["exec", "--yes", "run the long job"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    assert!(s.wait_for_requests(1, Duration::from_secs(10)));
    // Give the tool time to start, then kill rein outright.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ps = std::process::Command::new("pgrep")
            .args(["-f", "^sleep 60$"])
            .output()
            .unwrap();
        if !stdout(&ps).trim().is_empty() || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::process::Command::new("pkill")
        .args(["-f", "^sleep 60$"])
        .status();

    s.push(Reply::text("Recovered."));
    let o = w.exec(&["--continue", "did it finish?"]);
    assert_ok(&o);
    let req = s.request(1);
    let texts = user_texts(&req);
    assert!(texts[0].contains("run the long job"), "{texts:?}");
    let r = last_result(&req);
    assert_eq!(r.id, "toolu_long");
    assert!(
        r.content.contains("rein stopped before this tool finished"),
        "{}",
        r.content
    );
    assert!(r.is_error);
    assert!(texts.last().unwrap().contains("did it finish?"));
}

#[test]
fn resume_by_prefix_show_export_and_rm() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("one")).push(Reply::text("two"));
    let w = World::new(&s);
    assert_ok(&w.exec(&["first session prompt"]));
    assert_ok(&w.exec(&["second session prompt"]));
    let list = list_json(&w);
    assert_eq!(list.len(), 2);
    // Newest first.
    assert_eq!(list[0]["title"], "second session prompt");
    let old_id = list[1]["id"].as_str().unwrap().to_string();

    s.push(Reply::text("three"));
    assert_ok(&w.exec(&["--resume", &old_id[..6], "back to the first"]));
    let texts = user_texts(&s.request(2));
    assert!(
        texts[0].contains("first session prompt")
            && !texts.iter().any(|t| t.contains("second session")),
        "{texts:?}"
    );

    let mut c = w.cmd();
    c.args(["sessions", "show", &old_id]);
    let o = c.output().unwrap();
    assert_ok(&o);
    let md = stdout(&o);
    assert!(
        md.contains("first session prompt")
            && md.contains("back to the first")
            && md.contains("three"),
        "{md}"
    );

    let mut c = w.cmd();
    c.args(["sessions", "export", &old_id, "--format", "json"]);
    let o = c.output().unwrap();
    assert_ok(&o);
    let exported = rein::session_store::parse_export_json(&stdout(&o)).unwrap();
    assert_eq!(exported.header.id, old_id);
    let loaded =
        rein::session_store::load(std::path::Path::new(list[1]["path"].as_str().unwrap())).unwrap();
    assert_eq!(exported.entries, loaded.entries);

    let mut c = w.cmd();
    c.args(["sessions", "rm", &old_id, "--yes"]);
    assert_ok(&c.output().unwrap());
    assert_eq!(list_json(&w).len(), 1);

    let mut c = w.cmd();
    c.args(["exec", "--resume", "zzzz", "hi"]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no session with id zzzz"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn torn_empty_and_future_session_files() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("saved"))
        .push(Reply::text("resumed fine"));
    let w = World::new(&s);
    assert_ok(&w.exec(&["a prompt that will be torn"]));
    let file = session_files(&w).pop().unwrap();
    // A torn last line (rein killed mid-write) is skipped with a notice.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\":\"user\",\"ts\":\"2026-");
    std::fs::write(&file, &text).unwrap();
    let o = w.exec(&["--continue", "still there?"]);
    assert_ok(&o);
    assert!(
        stderr(&o).to_lowercase().contains("skipped"),
        "{}",
        stderr(&o)
    );
    assert!(user_texts(&s.request(1))[0].contains("a prompt that will be torn"));

    // An empty file and a file from a future schema give clear errors, no panic.
    let dir = w.data_home.join("rein/sessions");
    std::fs::write(dir.join("2020-01-01T00-00-00_emptyempty01.jsonl"), "").unwrap();
    let o = w.exec(&["--resume", "emptyempty01", "x"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("empty"), "{}", stderr(&o));
    std::fs::write(
        dir.join("2020-01-01T00-00-00_future000001.jsonl"),
        "{\"type\":\"header\",\"schema\":99,\"id\":\"future000001\",\"cwd\":\"/\",\"model\":\"m\",\"provider\":\"openai\",\"created_at\":\"2020-01-01T00:00:00Z\"}\n",
    )
    .unwrap();
    let o = w.exec(&["--resume", "future000001", "x"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("newer rein") && stderr(&o).contains("99"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("panicked"));
}

/// Messages rein writes in the person's place (a nudge after an empty answer) are context for
/// the model, not the person's words: a resume shows them as rein's notice, and only the
/// person's messages are points to rewind to, so a rewind cuts where the person chose.
#[test]
fn rein_s_nudges_are_not_the_person_s_messages_on_resume_or_rewind() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "echo hi"})))
        .push(Reply::text(""))
        .push(Reply::text("First done."))
        .push(Reply::text("Second done."));
    let w = World::new(&s);
    assert_ok(&w.exec(&["--yes", "first task"]));
    assert!(
        user_texts(&s.request(2))
            .iter()
            .any(|t| t.contains("[rein]")),
        "the empty answer was nudged"
    );
    assert_ok(&w.exec(&["--continue", "second task"]));
    let path = session_files(&w).pop().expect("a session file");

    let r = rein::session_store::resume(&path).expect("the session resumes");
    let points: Vec<&str> = r.rewind.points().iter().map(|p| p.text.as_str()).collect();
    assert_eq!(points, ["first task", "second task"]);
    let users: Vec<&str> = r
        .view
        .iter()
        .filter_map(|i| match i {
            rein::protocol::Event::UserMessage { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["first task", "second task"]);
    assert!(
        r.view.iter().any(|i| matches!(i,
            rein::protocol::Event::Notice { text, .. } if text.contains("rein told the model"))),
        "{:#?}",
        r.view
    );
    assert!(
        r.messages.iter().any(
            |m| matches!(m, rein::llm::Message::User { content } if content.starts_with("[rein]"))
        ),
        "the nudge stays in the model's context"
    );

    // `sessions show` does not put the nudge in the person's mouth.
    let id = path
        .file_stem()
        .and_then(|f| f.to_str())
        .and_then(|f| f.rsplit('_').next())
        .expect("the session id in the file name");
    let mut c = w.cmd();
    c.args(["sessions", "show", id]);
    let o = c.output().unwrap();
    assert_ok(&o);
    let shown = stdout(&o);
    assert_eq!(shown.matches("## User · ").count(), 2, "{shown}");
    assert!(
        shown.contains("## rein, to the model · ") && shown.contains("[rein] Your last answer"),
        "{shown}"
    );

    // Rewinding to before the second task keeps the whole first turn, nudge and answer.
    let before = rein::session_store::resume_before(&path, 1, None).expect("rewind");
    let last = before.messages.last().expect("messages");
    assert!(
        matches!(last, rein::llm::Message::Assistant { parts }
            if format!("{parts:?}").contains("First done.")),
        "{:#?}",
        before.messages
    );
}
