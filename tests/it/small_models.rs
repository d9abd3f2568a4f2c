//! What small local models get wrong, handled end to end through the real `rein exec` against
//! the scripted server: the late reminder rides at the end of the last message and an echo of
//! it never becomes the answer, tool calls written as text are recovered (or the model is told
//! how to call tools), an empty answer is reported, an identical server error is retried once,
//! and the context window comes from the server.

use crate::support;

use rein::agent::repair::{REMINDER_NOTE, REMINDER_OPEN};
use rein::llm::ProviderKind;
use serde_json::{Value, json};
use support::rein::{World, assert_ok, stderr, stdout};
use support::{Reply, ScriptedServer};

both!(
    the_reminder_rides_at_the_end_of_the_last_message,
    an_echo_of_the_reminder_is_never_the_answer,
    an_empty_answer_is_reported,
);

/// Every entry of the session files rein wrote, subagent side chains unwrapped.
fn entries(w: &World) -> Vec<Value> {
    let mut out = Vec::new();
    let dir = w.data_home.join("rein/sessions");
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            out.extend(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok()),
            );
        }
    }
    out
}

fn quirks(w: &World) -> Vec<(String, String)> {
    entries(w)
        .iter()
        .filter(|e| e["type"] == "model_quirk")
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_owned();
            (s("kind"), s("detail"))
        })
        .collect()
}

/// The text of the last message of a request, and its role (either wire format).
fn last_message(req: &support::RecordedRequest) -> (String, String) {
    let messages = req.messages();
    let m = messages.last().expect("a message");
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match &b["content"] {
                Value::String(s) => s.clone(),
                _ => b["text"].as_str().unwrap_or("").to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    (m["role"].as_str().unwrap_or("").to_owned(), text)
}

fn the_reminder_rides_at_the_end_of_the_last_message(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo tool-output"}),
    ))
    .push(Reply::text("Done."));
    let w = World::new(&s);
    assert_ok(&w.exec(&["--yes", "run it"]));
    let first = s.request(0);
    let (role, text) = last_message(&first);
    assert_eq!(role, "user");
    assert!(text.starts_with("run it"), "{text}");
    assert!(
        text.contains(REMINDER_OPEN) && text.contains(REMINDER_NOTE),
        "{text}"
    );
    let second = s.request(1);
    let messages = second.messages();
    if kind == ProviderKind::OpenAi {
        // No user message of its own after the tool result: the result carries it, after the
        // output, so everything before it is what the next request sends too.
        let (role, text) = last_message(&second);
        assert_eq!(role, "tool");
        assert!(text.starts_with("tool-output"), "{text}");
        assert!(text.trim_end().ends_with("</system-reminder>"), "{text}");
        let user_turns = messages.iter().filter(|m| m["role"] == "user").count();
        assert_eq!(user_turns, 1, "{messages:?}");
    } else {
        // One user turn: the tool result block, then the reminder block.
        let blocks = messages.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(blocks[0]["type"], "tool_result");
        assert!(blocks[1]["text"].as_str().unwrap().contains(REMINDER_NOTE));
    }
    // Never stored: the session file has the plain tool output.
    let stored = entries(&w);
    let result = stored.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert!(!result["content"].as_str().unwrap().contains(REMINDER_OPEN));
}

fn an_echo_of_the_reminder_is_never_the_answer(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let echo = format!(
        "{REMINDER_OPEN}\n{REMINDER_NOTE}\nCurrent time: 2026-12-01 10:00 UTC.\n</system-reminder>"
    );
    s.push(Reply::tool_call("bash", json!({"command": "echo hi"})))
        .push(Reply::text(&echo))
        .push(Reply::text("The command printed hi."));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "run echo hi"]);
    assert_ok(&out);
    assert_eq!(stdout(&out).trim(), "The command printed hi.");
    assert!(
        stderr(&out).contains("repeated rein's reminder"),
        "{}",
        stderr(&out)
    );
    // Asked again without the reminder: nothing in that request to echo.
    assert_eq!(s.request_count(), 3);
    assert!(!s.request(2).body_text.contains(REMINDER_NOTE));
    assert_eq!(
        quirks(&w).first().map(|q| q.0.as_str()),
        Some("reminder_echo")
    );
    let texts: Vec<String> = entries(&w)
        .iter()
        .filter(|e| e["type"] == "assistant")
        .map(|e| e["parts"].to_string())
        .collect();
    assert!(
        !texts.iter().any(|t| t.contains("system-reminder")),
        "{texts:?}"
    );
}

fn an_empty_answer_is_reported(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::text(""));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "say something"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("The model answered nothing."),
        "{}",
        stderr(&out)
    );
    s.push(Reply::text(""));
    let out = w.exec(&["--yes", "--json", "say something"]);
    assert_ok(&out);
    let said = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| e["type"] == "model_quirk" && e["kind"] == "empty_answer");
    assert!(said, "{}", stdout(&out));
}

/// A call written as text, as each spelling puts it.
fn text_call(format: &str, name: &str, args: Value) -> String {
    let call = json!({"name": name, "arguments": args});
    match format {
        "hermes" => format!("<tool_call>\n{call}\n</tool_call>"),
        "fenced" => format!("I'll write the file.\n```json\n{call}\n```"),
        "bare" => call.to_string(),
        "harmony" => format!(
            "<|channel|>analysis<|message|>Write it.<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
        ),
        _ => unreachable!(),
    }
}

#[test]
fn tool_calls_written_as_text_are_recovered_and_run() {
    for format in ["hermes", "fenced", "bare", "harmony"] {
        let s = ScriptedServer::openai();
        let args = json!({"path": "note.txt", "content": format});
        s.push(Reply::text(&text_call(format, "write_file", args)))
            .push(Reply::text("Wrote note.txt."));
        let w = World::new(&s);
        let out = w.exec(&["--yes", "write note.txt"]);
        assert_ok(&out);
        assert_eq!(w.read("note.txt").as_deref(), Some(format), "{format}");
        // The call is not shown as the answer; prose around it stays.
        let shown = stdout(&out);
        assert!(
            shown.trim().ends_with("Wrote note.txt."),
            "{format}: {shown}"
        );
        assert!(
            !shown.contains("arguments") && !shown.contains("<|"),
            "{format}: {shown}"
        );
        // The next request carries it as a structured call with its result.
        let second = s.request(1);
        let messages = second.messages();
        let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
        assert_eq!(
            assistant["tool_calls"][0]["function"]["name"], "write_file",
            "{format}"
        );
        let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(result["tool_call_id"], assistant["tool_calls"][0]["id"]);
        let q = quirks(&w);
        assert_eq!(
            q,
            vec![(
                "recovered_tool_call".into(),
                format!("{format}: write_file")
            )],
            "{format}"
        );
    }
}

#[test]
fn a_text_call_to_a_missing_tool_gets_told_how_to_call_tools() {
    let s = ScriptedServer::openai();
    s.push(Reply::text(&text_call(
        "hermes",
        "mul",
        json!({"a": 2, "b": 3}),
    )))
    .push(Reply::text("I cannot multiply with a tool; 2 * 3 = 6."));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "add a function mul"]);
    assert_ok(&out);
    let (role, nudge) = last_message(&s.request(1));
    assert_eq!(role, "user");
    assert!(
        nudge.contains("`mul`") && nudge.contains("no tool of that name"),
        "{nudge}"
    );
    assert!(
        nudge.contains("bash") && nudge.contains("write_file"),
        "{nudge}"
    );
    assert_eq!(
        quirks(&w),
        vec![("unknown_text_call".into(), "hermes: mul".into())]
    );
    assert!(stderr(&out).contains("`mul`"), "{}", stderr(&out));
}

#[test]
fn prose_with_json_and_the_recorded_harmony_stream_stay_answers() {
    let harmony =
        std::fs::read_to_string("tests/fixtures/sse/llamacpp-gptoss-harmony-tokens-in-content.sse")
            .unwrap();
    let s = ScriptedServer::openai();
    s.push(Reply::raw_sse(&harmony)).push(Reply::text(
        "Use ```json\n{\"name\": \"demo\", \"version\": \"1\"}\n``` in package.json.",
    ));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "test"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Got it!"), "{}", stdout(&out));
    let out = w.exec(&["--yes", "what goes in package.json?"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("\"demo\""));
    assert_eq!(s.request_count(), 2, "no tool ran, nothing was asked again");
    assert!(quirks(&w).is_empty(), "{:?}", quirks(&w));
}

#[test]
fn an_identical_server_error_mid_stream_is_tried_twice_and_quoted() {
    let s = ScriptedServer::openai();
    let start = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"co"}}]}}]});
    let error = json!({"error": {"code": 500, "message": "Invalid diff: now finding less tool calls!", "type": "server_error"}});
    for _ in 0..5 {
        s.push(Reply::raw_sse(&format!(
            "data: {start}\n\ndata: {error}\n\n"
        )));
    }
    let w = World::new(&s);
    let out = w.exec(&["--yes", "go"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Invalid diff: now finding less tool calls!"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.request_count(), 2);
}

#[test]
fn the_context_window_comes_from_the_server_and_says_so() {
    let s = ScriptedServer::openai();
    s.route(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}),
    );
    s.push(Reply::text("ok"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.arg("config");
    let out = support::rein::run_with_timeout(c, std::time::Duration::from_secs(30));
    assert_ok(&out);
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("context_window"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.contains("32768") && line.contains("server: llama.cpp /props n_ctx"),
        "{line}"
    );
    let out = w.exec(&["--json", "hi"]);
    assert_ok(&out);
    let window = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session_configured")
        .map(|e| e["context_window"].clone());
    assert_eq!(window, Some(json!(32768)));
    // A configured window wins over the server's.
    w.user_config("context_window = 9000\n");
    let mut c = w.cmd();
    c.arg("config");
    let out = support::rein::run_with_timeout(c, std::time::Duration::from_secs(30));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("context_window") && l.contains("9000")),
        "{text}"
    );
}

#[test]
fn the_first_request_stays_small() {
    // A CPU server reads about 50 prompt tokens a second: every kilobyte of system prompt and
    // tool descriptions is seconds before the first answer. (6.9 KB before issue #12.)
    let s = ScriptedServer::openai();
    s.push(Reply::text("ok"));
    let w = World::new(&s);
    assert_ok(&w.exec(&["hi"]));
    let body = &s.request(0).body;
    let sent = body["messages"].to_string().len() + body["tools"].to_string().len();
    assert!(
        sent < 6_900,
        "the first request sends {sent} bytes of prompt and tools"
    );
    eprintln!("first request: {sent} bytes of prompt and tools");
}

#[test]
fn an_empty_answer_after_tools_is_asked_to_continue_once() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo step one"}),
    ))
    .push(Reply::text(""))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "done.txt", "content": "ok"}),
    ))
    .push(Reply::text(""));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "do both steps"]);
    assert_ok(&out);
    // The empty answer was followed by a request saying so; the model went on with the task.
    let (role, text) = last_message(&s.request(2));
    assert_eq!(role, "user");
    assert!(
        text.starts_with("[rein] Your last answer was empty."),
        "{text}"
    );
    assert_eq!(w.read("done.txt").as_deref(), Some("ok"));
    // The second empty answer ends the turn, reported; nobody asks twice.
    assert_eq!(s.request_count(), 4);
    assert!(
        stderr(&out).contains("The model answered nothing."),
        "{}",
        stderr(&out)
    );
    let kinds: Vec<String> = quirks(&w).into_iter().map(|q| q.0).collect();
    assert_eq!(kinds, ["empty_answer", "empty_answer"]);
}

#[test]
fn recorded_local_model_streams_with_calls_in_the_text_are_recovered() {
    // Recorded from Qwen2.5-Coder-1.5B on llama.cpp (xllamacpp 0.2.12) when the tools were
    // described in the prompt rather than parsed by the server: the call arrives as a fenced
    // JSON block in `content`.
    let fixture =
        |name: &str| std::fs::read_to_string(format!("tests/fixtures/sse/{name}")).unwrap();
    let s = ScriptedServer::openai();
    s.push(Reply::raw_sse(&fixture(
        "llamacpp-qwen25coder-fenced-tool-call-in-content.sse",
    )))
    .push(Reply::text("Created hello.txt."))
    .push(Reply::raw_sse(&fixture(
        "llamacpp-qwen25coder-fenced-bash-call-in-content.sse",
    )))
    .push(Reply::text("Listed."));
    let w = World::new(&s);
    assert_ok(&w.exec(&["--yes", "Create the file hello.txt containing exactly: hi"]));
    assert_eq!(w.read("hello.txt").as_deref(), Some("hi"));
    assert_ok(&w.exec(&["--yes", "Run the command: ls -la"]));
    let listing = support::rein::last_result(&s.request(3)).content;
    assert!(listing.contains("hello.txt"), "{listing}");
    // Two sessions (one per exec), read in any order.
    let mut q = quirks(&w);
    q.sort();
    assert_eq!(
        q,
        vec![
            ("recovered_tool_call".into(), "fenced: bash".into()),
            ("recovered_tool_call".into(), "fenced: write_file".into())
        ]
    );
}

/// A small model that writes the tool's result itself after its call: only the call before the
/// invented result runs, and neither the person nor the next request sees the fiction.
#[test]
fn a_tool_result_the_model_invents_is_dropped() {
    let s = ScriptedServer::openai();
    let answer = format!(
        "Writing it.\n{}\n<tool_response>\n{{\"ok\": true}}\n</tool_response>\n{}\nAll done, both written.",
        text_call(
            "hermes",
            "write_file",
            json!({"path": "note.txt", "content": "real"})
        ),
        text_call(
            "hermes",
            "write_file",
            json!({"path": "other.txt", "content": "imagined"})
        ),
    );
    s.push(Reply::text(&answer))
        .push(Reply::text("Wrote note.txt."));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "write note.txt"]);
    assert_ok(&out);
    assert_eq!(w.read("note.txt").as_deref(), Some("real"));
    assert_eq!(
        w.read("other.txt"),
        None,
        "a call after the invented result ran"
    );
    let shown = stdout(&out);
    assert!(
        !shown.contains("All done") && !shown.contains("tool_response"),
        "{shown}"
    );
    let second = s.request(1);
    assert!(
        !second.body_text.contains("tool_response") && !second.body_text.contains("All done"),
        "the invented result went back to the model: {}",
        second.body_text
    );
    let kinds: Vec<String> = quirks(&w).into_iter().map(|q| q.0).collect();
    assert!(
        kinds.contains(&"invented_tool_result".to_string()),
        "{kinds:?}"
    );
}

/// A server whose chat template renders earlier calls' arguments as strings teaches the model
/// to send them that way (issue 21): a JSON string holding the object, or the object with its
/// quotes escaped. rein decodes them, runs the call and sends it back as an object.
#[test]
fn doubly_encoded_arguments_are_decoded_and_run() {
    let s = ScriptedServer::openai();
    let as_string = serde_json::to_string(r#"{"path": "a.txt"}"#).unwrap();
    s.push(Reply::new().call_raw("read_file", &as_string))
        .push(Reply::new().call_raw("read_file", r#"{\"path\": \"b.txt\"}"#))
        .push(Reply::text("done"));
    let w = World::new(&s);
    w.write("a.txt", "alpha content\n");
    w.write("b.txt", "beta content\n");
    let out = w.exec(&["read the two files"]);
    assert_ok(&out);
    for (n, want) in [(1, "alpha content"), (2, "beta content")] {
        let req = s.request(n);
        let messages = req.messages();
        let last_call = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .unwrap();
        let args = last_call["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert!(
            serde_json::from_str::<Value>(args).unwrap().is_object(),
            "{args}"
        );
        let result = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
        assert!(result.to_string().contains(want), "{result}");
    }
    let q = quirks(&w);
    assert_eq!(q.len(), 2, "{q:?}");
    assert!(
        q.iter()
            .all(|(kind, detail)| kind == "doubly_encoded_arguments"
                && detail.starts_with("read_file: ")),
        "{q:?}"
    );
    assert!(stderr(&out).contains("doubly encoded"), "{}", stderr(&out));
}

/// A model caught in a loop (one line again and again until the output limit: minutes on a
/// local server) is stopped as soon as the repetition shows: here the stream would never end
/// on its own (it pauses for good half-way), yet rein keeps what came before the loop, asks
/// the model once to go on, and the task completes. A second loop ends the turn, reported.
#[test]
fn an_answer_that_keeps_repeating_itself_is_stopped_and_the_model_asked_to_go_on() {
    let s = ScriptedServer::openai();
    let never = support::Gate::new();
    let looping = |line: &str| {
        Reply::text(&format!("Let me fix it.\n{}", line.repeat(4000)))
            .fragments(4000)
            .pause_after(2000, &never)
    };
    s.push(looping("I will now edit greet.py.\n"))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "done.txt", "content": "ok"}),
        ))
        .push(looping("Done. Done. Done. "));
    let w = World::new(&s);
    let out = w.exec(&["--yes", "fix greet.py"]);
    never.release();
    // The first loop was stopped and cut to what came before it and one line.
    let kept = s.request(1).messages()[2]["content"].to_string();
    assert!(
        kept.contains("Let me fix it.") && kept.len() < 120,
        "{kept}"
    );
    assert_eq!(kept.matches("edit greet.py").count(), 1, "{kept}");
    let (role, text) = last_message(&s.request(1));
    assert_eq!(role, "user");
    assert!(text.contains("kept repeating the same text"), "{text}");
    assert_eq!(w.read("done.txt").as_deref(), Some("ok"));
    // The second ends the turn: not asked about twice.
    assert_eq!(s.request_count(), 3);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("kept repeating itself"),
        "{}",
        stderr(&out)
    );
    let kinds: Vec<String> = quirks(&w).into_iter().map(|q| q.0).collect();
    assert_eq!(kinds, ["repeating_answer", "repeating_answer"]);
}
