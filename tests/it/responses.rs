//! The OpenAI Responses API end to end: `rein exec` (and the library client) against the
//! scripted server speaking the Responses wire format: answers, tool calls with their ids,
//! reasoning summaries shown and encrypted reasoning carried statelessly, usage with cached
//! tokens, and the fault matrix of the other providers.

use crate::support;

use rein::llm::{ProviderKind, Usage};
use serde_json::{Value, json};
use std::time::Duration;
use support::client::{options, run_once, server};
use support::rein::{TEST_KEY, World, assert_ok, stderr, stdout, tool_results, user_texts};
use support::reply::encrypted;
use support::{Reply, ScriptedServer};

const RESPONSES: ProviderKind = ProviderKind::OpenAiResponses;

/// The usual fast test config, plus `extra`.
fn config(w: &World, extra: &str) {
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n{extra}"
    ));
}

fn json_events(o: &std::process::Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_text_answer_goes_through_post_responses() {
    let s = ScriptedServer::responses();
    s.push(Reply::text("Hello from Responses.").usage(300, 9));
    let w = World::new(&s);
    let o = w.exec(&["say hello"]);
    assert_ok(&o);
    assert!(
        stdout(&o).contains("Hello from Responses."),
        "{}",
        stdout(&o)
    );
    assert_eq!(s.request_count(), 1);
    let req = s.request(0);
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["store"], false);
    assert_eq!(req.body["model"], "scripted-model");
    assert!(req.body.get("messages").is_none(), "{}", req.body_text);
    let instructions = req.body["instructions"].as_str().unwrap_or("");
    assert!(instructions.contains(&w.ws.display().to_string()));
    assert!(
        user_texts(&req)[0].contains("say hello"),
        "{}",
        req.body_text
    );
    let tools = req.body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["type"] == "function" && t["name"] == "bash" && t["parameters"].is_object()),
        "{}",
        req.body_text
    );
    // scripted-model is no reasoning model and nothing is configured: no reasoning object.
    assert!(req.body.get("reasoning").is_none());
}

#[test]
fn a_tool_call_round_trip_carries_the_call_its_output_and_encrypted_reasoning() {
    let s = ScriptedServer::responses();
    let thought = "The user wants the greeting printed; run echo.";
    s.push(Reply::new().reasoning(thought).call_with_id(
        "call_abc123",
        "bash",
        json!({"command": "echo hi"}),
    ))
    .push(Reply::text("It printed hi."));
    let w = World::new(&s);
    config(
        &w,
        "reasoning = { effort = \"high\", summary = \"detailed\" }\n",
    );
    let o = w.exec(&["--yes", "print hi"]);
    assert_ok(&o);
    assert!(stdout(&o).contains("It printed hi."));
    assert_eq!(s.request_count(), 2);
    for i in 0..2 {
        let body = &s.request(i).body;
        assert_eq!(body["store"], false);
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "detailed"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    }
    let second = s.request(1);
    let input = second.input();
    let position = |kind: &str| {
        input
            .iter()
            .position(|i| i["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} item in {}", second.body_text))
    };
    let (reasoning, call, output) = (
        position("reasoning"),
        position("function_call"),
        position("function_call_output"),
    );
    assert!(reasoning < call && call < output, "{}", second.body_text);
    // The encrypted reasoning goes back exactly as the server sent it.
    assert_eq!(input[reasoning]["encrypted_content"], encrypted(thought));
    assert_eq!(input[reasoning]["summary"][0]["text"], thought);
    assert!(
        input[reasoning].get("id").is_none(),
        "nothing refers to stored items"
    );
    assert_eq!(input[call]["call_id"], "call_abc123");
    assert_eq!(input[call]["name"], "bash");
    let args: Value = serde_json::from_str(input[call]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": "echo hi"}));
    assert_eq!(input[output]["call_id"], "call_abc123");
    let results = tool_results(&second);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content.trim(), "hi");
}

#[test]
fn a_reasoning_summary_is_shown_as_thinking() {
    let s = ScriptedServer::responses();
    s.push(
        Reply::new()
            .reasoning("Weighing two options.")
            .say("Option B."),
    );
    let w = World::new(&s);
    config(&w, "reasoning = { summary = \"auto\" }\n");
    let o = w.exec(&["--json", "choose"]);
    assert_ok(&o);
    let events = json_events(&o);
    let thinking: String = events
        .iter()
        .filter(|e| e["type"] == "reasoning_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(thinking, "Weighing two options.");
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "assistant_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(answer, "Option B.");
    assert_eq!(s.request(0).body["reasoning"], json!({"summary": "auto"}));
}

#[test]
fn usage_is_recorded_from_the_completed_event() {
    let s = ScriptedServer::responses();
    s.push(Reply::text("ok").usage(4321, 12).cached(4096));
    let w = World::new(&s);
    let o = w.exec(&["--json", "hi"]);
    assert_ok(&o);
    let used: Vec<u64> = json_events(&o)
        .iter()
        .filter(|e| e["type"] == "usage")
        .filter_map(|e| e["used_tokens"].as_u64())
        .collect();
    // After the turn the context holds what the server reported.
    assert_eq!(used.last(), Some(&(4321 + 12)), "{used:?}");
}

#[tokio::test]
async fn cached_tokens_are_read_from_input_tokens_details() {
    let s = server(RESPONSES);
    s.push(Reply::text("ok").usage(2000, 40).cached(1536));
    let client = rein::llm::Client::new(options(&s)).unwrap();
    let r = run_once(&client).await;
    assert_eq!(
        r.response().usage,
        Some(Usage {
            input_tokens: 2000,
            output_tokens: 40,
            cached_input_tokens: 1536,
        })
    );
}

/// Each fault, then a good answer: one retry, one Retrying notice, the good answer wins.
#[tokio::test]
async fn every_fault_is_retried_once_and_the_good_answer_wins() {
    let faults = [
        ("429", Reply::rate_limited(1)),
        ("500", Reply::status(500, "internal error")),
        ("drop", Reply::text("partial answer").drop_after(3)),
        (
            "malformed",
            Reply::text("partial answer").malformed_after(2),
        ),
        ("overloaded", Reply::text("partial").overloaded_after(2)),
        (
            "stall",
            Reply::text("partial").stall_after(2, Duration::from_secs(3)),
        ),
        (
            "failed",
            Reply::raw_sse(concat!(
                "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":",
                "{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n"
            )),
        ),
    ];
    for (what, faulty) in faults {
        let s = server(RESPONSES);
        s.push(faulty).push(Reply::text("Recovered."));
        let client = rein::llm::Client::new(rein::llm::ClientOptions {
            idle_timeout: Duration::from_millis(800),
            ..options(&s)
        })
        .unwrap();
        let r = run_once(&client).await;
        assert_eq!(
            r.result.as_ref().map(|r| r.text()),
            Ok("Recovered.".into()),
            "{what}"
        );
        assert_eq!(s.request_count(), 2, "{what}: one retry");
        assert_eq!(r.retries().len(), 1, "{what}: one Retrying notice");
    }
}

#[tokio::test]
async fn a_tool_call_from_a_broken_stream_is_never_returned() {
    let s = server(RESPONSES);
    // Cut after the arguments are complete but before response.completed.
    let faulty = Reply::tool_call("bash", json!({"command": "rm -rf x"})).fragments(1);
    let n = faulty.events(RESPONSES).len() - 1;
    s.push(faulty.drop_after(n));
    let client = rein::llm::Client::new(rein::llm::ClientOptions {
        max_attempts: 1,
        ..options(&s)
    })
    .unwrap();
    let r = run_once(&client).await;
    assert!(
        matches!(&r.result, Err(rein::llm::LlmError::Network(_))),
        "{:?}",
        r.result
    );
    // A clean end of the body before response.completed is a cut-off stream too.
    let whole = Reply::tool_call("bash", json!({"command": "rm -rf x"})).events(RESPONSES);
    let cut = whole[..whole.len() - 1].concat();
    s.push(Reply::raw_sse(&cut));
    let r = run_once(&client).await;
    assert!(
        matches!(&r.result, Err(rein::llm::LlmError::Network(m)) if m.contains("response.completed")),
        "{:?}",
        r.result
    );
}

#[test]
fn faults_are_recovered_and_each_tool_runs_once() {
    let s = ScriptedServer::responses();
    let append = |n: u32| {
        Reply::tool_call(
            "bash",
            json!({"command": format!("echo run{n} >> runs.txt")}),
        )
    };
    // Each faulty attempt carries the same tool call: it must never run from a broken stream.
    s.push(Reply::rate_limited(1))
        .push(append(1))
        .push(Reply::status(500, "internal error"))
        .push(Reply::status(503, "unavailable"))
        .push(append(2))
        .push(append(3).drop_after(4))
        .push(append(3))
        .push(append(4).malformed_after(3))
        .push(append(4))
        .push(append(5).overloaded_after(2))
        .push(append(5))
        .push(append(6).stall_after(2, Duration::from_secs(8)))
        .push(append(6))
        .push(Reply::text("all done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "append some runs"]);
    assert_ok(&o);
    assert_eq!(
        w.read("runs.txt").as_deref(),
        Some("run1\nrun2\nrun3\nrun4\nrun5\nrun6\n"),
        "stderr: {}",
        stderr(&o)
    );
    assert_eq!(s.remaining(), 0);
    let reqs = s.requests();
    assert!(reqs[1].received - reqs[0].received >= Duration::from_millis(950));
    assert!(
        stderr(&o).matches("retrying in").count() >= 7,
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_error_event_fails_cleanly_with_exit_1() {
    let s = ScriptedServer::responses();
    s.push(Reply::text("never shown").stream_error_after(2, "Invalid prompt: flagged content"));
    let w = World::new(&s);
    let o = w.exec(&["hi"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Invalid prompt: flagged content"),
        "{}",
        stderr(&o)
    );
    assert_eq!(s.request_count(), 1, "an invalid prompt is not retried");
}

#[test]
fn rein_config_shows_the_provider_and_reasoning() {
    let s = ScriptedServer::responses();
    let w = World::new(&s);
    config(&w, "reasoning = { effort = \"low\" }\n");
    let mut c = w.cmd();
    c.env("MODEL", "gpt-5.1-codex").arg("config");
    let o = c.output().unwrap();
    assert_ok(&o);
    let out = stdout(&o);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in {out}"))
            .to_owned()
    };
    assert!(line("provider").contains("openai-responses"), "{out}");
    assert!(line("reasoning.effort").contains("low"), "{out}");
    assert!(line("reasoning.summary").contains("auto"), "{out}");
    assert!(line("context_window").contains("272000"), "{out}");

    // A value the API does not know is refused with the ones it does.
    config(&w, "reasoning = { effort = \"extreme\" }\n");
    let o = w.cmd().arg("config").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("minimal, low, medium, high"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_provider_flag_picks_the_responses_api() {
    let s = ScriptedServer::responses();
    s.push(Reply::text("via flag"));
    let w = World::new(&s);
    let mut c = w.cmd();
    c.env_remove("REIN_PROVIDER")
        .args(["exec", "--provider", "openai-responses", "hi"]);
    let o = support::rein::run_with_timeout(c, Duration::from_secs(60));
    assert_ok(&o);
    assert!(stdout(&o).contains("via flag"));
    assert_eq!(s.request(0).path, "/v1/responses");
}
