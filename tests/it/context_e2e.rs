//! Context management end to end through the real `rein exec` binary against the scripted
//! model server, for both wire formats: micro-compaction, the late reminder, auto-compaction,
//! token accounting. Subagents are in `subagent_e2e.rs`; `/compact` and changes between turns
//! (which need several turns) go through the library in `context_lib.rs`.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::{Value, json};
use support::rein::{
    World, assert_ok, last_result, stderr, stdout, system_prompt, tool_names, tool_results,
    user_texts,
};
use support::{RecordedRequest, Reply, ScriptedServer};

both!(
    old_tool_results_become_placeholders,
    the_reminder_is_sent_once_at_the_end_of_every_request,
    small_window_compacts_and_continues_from_the_summary,
    a_failed_summary_keeps_the_history,
    auto_compact_off_never_compacts,
    usage_is_the_report_plus_an_estimate,
    a_resumed_session_continues_from_the_compacted_context,
);

const REMINDER: &str = "<system-reminder>";
const SUMMARY_MARKER: &str = "[Summary of the earlier conversation";
const PLACEHOLDER: &str = "[Previous: used bash]";

/// A bash call printing `n` copies of `ch` (one line).
fn print_chars(ch: char, n: usize) -> Value {
    json!({"command": format!("python3 -c 'print(\"{ch}\" * {n})'")})
}

/// Rough tokens of a whole request body, the way rein estimates: bytes / 4.
fn body_tokens(req: &RecordedRequest) -> usize {
    req.body_text.len() / 4
}

/// The text of every session file rein wrote (`$XDG_DATA_HOME/rein/sessions/*.jsonl`).
fn session_text(w: &World) -> String {
    let dir = w.data_home.join("rein/sessions");
    let mut text = String::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            text.push_str(&std::fs::read_to_string(e.path()).unwrap());
        }
    }
    assert!(!text.is_empty(), "no session file in {}", dir.display());
    text
}

/// Whether a request is the tool-less summary request.
fn is_summary_request(req: &RecordedRequest) -> bool {
    tool_names(req).is_empty()
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
}

/// Makes the workspace a git repository on branch `branch` with `tracked.txt` committed.
fn git_repo(w: &World, branch: &str) {
    git(&w.ws, &["init", "-q", "-b", branch]);
    w.write("tracked.txt", "one\n");
    git(&w.ws, &["add", "."]);
    git(&w.ws, &["commit", "-q", "-m", "init"]);
}

fn old_tool_results_become_placeholders(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({"command": "echo short"})))
        // Broken arguments: an error result well over 100 chars.
        .push(Reply::new().call_raw("bash", "{\"command\": \"ls"));
    for ch in ['b', 'c', 'd', 'e', 'f'] {
        s.push(Reply::tool_call("bash", print_chars(ch, 500)));
    }
    s.push(Reply::text("done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "make some output"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 8);

    // Six large results and a short one: only the last three large ones are sent in full.
    let results = tool_results(&s.request(7));
    assert_eq!(results.len(), 7, "{results:?}");
    assert_eq!(results[0].content.trim(), "short");
    for r in &results[1..4] {
        assert!(r.content.starts_with(PLACEHOLDER), "{}", r.content);
        assert!(r.content.contains("run the tool again"), "{}", r.content);
    }
    for (r, ch) in results[4..].iter().zip(['d', 'e', 'f']) {
        assert_eq!(r.content.trim(), ch.to_string().repeat(500));
    }
    // The error flag survives the placeholder (only Anthropic sends one).
    if kind == ProviderKind::Anthropic {
        assert!(results[1].is_error);
        assert!(!results[2].is_error);
    }
    // The session file keeps the originals.
    let session = session_text(&w);
    for ch in ['b', 'c', 'd'] {
        assert!(session.contains(&ch.to_string().repeat(500)), "{ch}");
    }
    assert!(!session.contains(PLACEHOLDER));
    // Each result was sent in full while it was among the last three.
    let third = tool_results(&s.request(4));
    assert!(third[1].content.starts_with("Error: arguments for bash"));
    assert_eq!(third[2].content.trim(), "b".repeat(500));
    let fourth = tool_results(&s.request(5));
    assert!(fourth[1].content.starts_with(PLACEHOLDER));
    assert_eq!(fourth[2].content.trim(), "b".repeat(500));
}

/// The text of the last message of a request (the reminder's place).
fn last_message_text(req: &RecordedRequest) -> String {
    let msgs = req.messages();
    let last = msgs.last().expect("messages");
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn the_reminder_is_sent_once_at_the_end_of_every_request(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "write_todos",
        json!({"todos": [
            {"content": "Edit the file", "activeForm": "Editing the file", "status": "in_progress"}
        ]}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "echo two >> tracked.txt && echo new > made.txt"}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "written.txt", "content": "by a tool\n"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    git_repo(&w, "feature-x");
    let o = w.exec(&["--yes", "edit some files"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 4);
    for (i, req) in s.requests().iter().enumerate() {
        // Exactly one reminder, at the very end of the request.
        assert_eq!(req.body_text.matches(REMINDER).count(), 1, "request {i}");
        let last = last_message_text(req);
        let at = last.find(REMINDER).expect("reminder in the last message");
        assert!(
            last[at..].trim_end().ends_with("</system-reminder>"),
            "{last}"
        );
        let reminder = &last[at..];
        assert!(reminder.contains("Current time: "), "{reminder}");
        assert!(reminder.contains("Git branch: feature-x."), "{reminder}");
        // The todo list only once there is one.
        assert_eq!(reminder.contains("[~] Edit the file"), i > 0, "{reminder}");
        // rein's own tools changed these files: nobody else did.
        assert!(!reminder.contains("changed on disk"), "{reminder}");
    }
    // Later requests carry the prompt without the reminder the first one had.
    for i in 1..4 {
        assert_eq!(user_texts(&s.request(i))[0], "edit some files");
    }
    assert_eq!(w.read("tracked.txt").as_deref(), Some("one\ntwo\n"));
    // Never stored: the session has the conversation but not the reminder.
    let session = session_text(&w);
    assert!(session.contains("edit some files") && session.contains("Edit the file"));
    assert!(!session.contains(REMINDER) && !session.contains("Git branch"));

    // A continued session's requests carry it once, at the end, too.
    s.push(Reply::text("again"));
    let o = w.exec(&["--continue", "--yes", "once more"]);
    assert_ok(&o);
    let again = s.request(4);
    assert_eq!(again.body_text.matches(REMINDER).count(), 1);
    assert!(last_message_text(&again).contains(REMINDER));
    assert_eq!(user_texts(&again)[0], "edit some files");
    assert!(!session_text(&w).contains(REMINDER));
}

/// Replies that work both as a tool call for the main loop and as a handoff note for the
/// summariser (which keeps only the text), so the FIFO order doesn't matter.
fn note_and_call(i: usize, chars: usize) -> Reply {
    Reply::new()
        .say(&format!("note<{i}> "))
        // A different call each step: the same call with the same result is a loop.
        .call("bash", print_chars('x', chars + i))
}

fn small_window_compacts_and_continues_from_the_summary(kind: ProviderKind) {
    const WINDOW: usize = 6000;
    const OUTPUT: usize = 3800;
    let s = ScriptedServer::start(kind);
    let steps = 30;
    for i in 0..steps {
        s.push(note_and_call(i, OUTPUT));
    }
    s.push(Reply::text("finished"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.env("REIN_CONTEXT_WINDOW", WINDOW.to_string()).args([
        "exec",
        "--yes",
        "ORIGINAL-PROMPT: fill the window",
    ]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(120));
    assert_ok(&o);
    assert!(stdout(&o).contains("finished"), "{}", stdout(&o));
    let reqs = s.requests();
    assert_eq!(reqs.len(), steps + 1);

    let summaries: Vec<usize> = (0..reqs.len())
        .filter(|&i| is_summary_request(&reqs[i]))
        .collect();
    assert!(!summaries.is_empty(), "no summary request");
    assert!(stderr(&o).contains("context compacted: "), "{}", stderr(&o));
    let k = summaries[0];
    let summary = &reqs[k];
    assert!(
        system_prompt(summary).contains("handoff note"),
        "{}",
        system_prompt(summary)
    );
    let ask = user_texts(summary).join("\n");
    assert!(ask.contains("<transcript>") && ask.contains("ORIGINAL-PROMPT"));
    // The request after it starts from the summary (the text reply k carried)...
    let next = &reqs[k + 1];
    assert!(!is_summary_request(next));
    let first_user = user_texts(next).remove(0);
    assert!(first_user.starts_with(SUMMARY_MARKER), "{first_user}");
    assert!(first_user.contains(&format!("note<{k}>")), "{first_user}");
    // ...and no longer carries the oldest turns.
    assert!(
        !next.body_text.contains("ORIGINAL-PROMPT"),
        "prompt still sent"
    );
    let first_call_id = &tool_results(&reqs[1])[0].id;
    assert!(!next.body_text.contains(&format!("\"{first_call_id}\"")));
    // The tail keeps the latest work: the call the model made last and its result in full.
    assert!(next.body_text.contains(&format!("note<{}>", k - 1)));
    assert_eq!(last_result(next).content.trim(), "x".repeat(OUTPUT + k - 1));

    // No request exceeds the window by more than one tool result.
    let one_result = OUTPUT / 4;
    for (i, r) in reqs.iter().enumerate() {
        assert!(
            body_tokens(r) <= WINDOW + one_result,
            "request {i} has ~{} tokens",
            body_tokens(r)
        );
    }
    // Compaction does not repeat without new growth: summaries are spread out.
    for pair in summaries.windows(2) {
        assert!(pair[1] - pair[0] > 2, "summaries at {summaries:?}");
    }
}

fn a_failed_summary_keeps_the_history(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    // The provider reports the window as nearly full after the first request.
    s.push(
        Reply::new()
            .say("looking")
            .call("bash", print_chars('o', 3000))
            .usage(5500, 10),
    )
    .push(Reply::status(400, "summary refused"))
    .push(Reply::text("carried on"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.env("REIN_CONTEXT_WINDOW", "6000")
        .args(["exec", "--yes", "ORIGINAL-PROMPT"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(60));
    assert_ok(&o);
    assert_eq!(s.request_count(), 3);
    assert!(is_summary_request(&s.request(1)));
    let err = stderr(&o);
    assert!(
        // A warning: the run goes on without the compaction.
        err.contains("warning: Compaction failed") && err.contains("kept as it was"),
        "{err}"
    );
    // The next normal request still carries the old turns.
    let next = s.request(2);
    assert!(!is_summary_request(&next));
    assert!(user_texts(&next)[0].starts_with("ORIGINAL-PROMPT"));
    assert_eq!(last_result(&next).content.trim(), "o".repeat(3000));
    assert!(!next.body_text.contains(SUMMARY_MARKER));
}

fn auto_compact_off_never_compacts(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    for i in 0..4 {
        s.push(Reply::tool_call("bash", print_chars('z', 3500 + i)).usage(7000, 10));
    }
    s.push(Reply::text("done").usage(9000, 3));
    let w = World::new(&s);
    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nauto_compact = false\n");
    let mut c = w.cmd();
    c.env("REIN_CONTEXT_WINDOW", "6000")
        .args(["exec", "--yes", "ORIGINAL-PROMPT"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(60));
    assert_ok(&o);
    assert_eq!(s.request_count(), 5);
    for r in s.requests() {
        assert!(!is_summary_request(&r));
        assert!(user_texts(&r)[0].starts_with("ORIGINAL-PROMPT"));
        assert!(!r.body_text.contains(SUMMARY_MARKER));
    }
    let err = stderr(&o);
    assert_eq!(err.matches("auto_compact is off").count(), 1, "{err}");
    assert!(!err.contains("compacted"), "{err}");
}

fn usage_is_the_report_plus_an_estimate(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", print_chars('u', 400)).usage(1000, 20))
        .push(Reply::text("done").usage(3000, 7));
    let w = World::new(&s);
    let o = w.exec(&["--json", "--yes", "count"]);
    assert_ok(&o);
    let used: Vec<u64> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "usage")
        .map(|e| {
            assert_eq!(e["context_window"], 128_000);
            e["used_tokens"].as_u64().unwrap()
        })
        .collect();
    // Before request 1 (an estimate of the system prompt, tools and prompt), before request 2
    // (report + the result appended since), after the turn (the last report).
    assert_eq!(used.len(), 3, "{used:?}");
    let overhead = body_tokens(&s.request(0)) as u64;
    assert!(
        used[0] > overhead / 2 && used[0] < overhead * 2,
        "{used:?} vs {overhead}"
    );
    let result = last_result(&s.request(1)).content;
    let appended = (result.len() as u64).div_ceil(4);
    assert!(
        used[1] >= 1020 + appended && used[1] <= 1020 + appended + 16,
        "{used:?}, result of {} bytes",
        result.len()
    );
    assert_eq!(used[2], 3007);
}

fn a_resumed_session_continues_from_the_compacted_context(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let long_prompt = format!("ORIGINAL-PROMPT {}", "p".repeat(6000));
    s.push(
        Reply::new()
            .say("looking")
            .call("bash", print_chars('o', 3000))
            .usage(5500, 10),
    )
    .push(Reply::text("NOTE-TEXT: the handoff"))
    .push(Reply::text("first run done"));
    let w = World::new(&s);
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.env("REIN_CONTEXT_WINDOW", "6000").arg("exec").args(args);
        support::rein::run_with_timeout(c, std::time::Duration::from_secs(60))
    };
    let o = run(&["--yes", &long_prompt]);
    assert_ok(&o);
    assert!(is_summary_request(&s.request(1)));
    let before = s.request(2);
    let summary = user_texts(&before).remove(0);
    assert!(summary.starts_with(SUMMARY_MARKER) && summary.contains("NOTE-TEXT"));
    // The prompt was too long to keep next to the note: it is cut in the kept tail.
    assert!(!before.body_text.contains(&long_prompt));
    // The session records the compaction.
    let session = session_text(&w);
    assert!(session.contains("NOTE-TEXT: the handoff"));

    // Resuming rebuilds the same context: the note, then the kept turns, then the new message.
    s.push(Reply::text("second run done"));
    let o = run(&["--continue", "--yes", "and now?"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 4);
    let after = s.request(3);
    let users = user_texts(&after);
    assert_eq!(users[0], summary);
    assert_eq!(after.body_text.matches("NOTE-TEXT").count(), 1);
    assert_eq!(tool_results(&after), tool_results(&before));
    assert!(users.last().unwrap().starts_with("and now?"));
    assert!(!after.body_text.contains(&long_prompt));
}
