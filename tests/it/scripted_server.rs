//! The scripted model server, and `Client::stream` end to end against it for both wire
//! formats: streaming, tool calls, every fault kind recovered by retry, errors that must not
//! be retried, timeouts and cancellation.

use crate::support;

use rein::llm::{
    AssistantPart, Client, ClientOptions, LlmError, ProviderKind, Response, StreamNotice,
};
use serde_json::json;
use std::time::{Duration, Instant};
use support::client::{FORMATS, KEY, Run, client, options, run, run_once, server};
use support::{Gate, Reply, ScriptedServer};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn server_answers_400_when_the_script_is_exhausted_and_404_off_path() {
    let server = ScriptedServer::openai();
    assert!(server.base_url().ends_with("/v1"));
    assert!(!ScriptedServer::anthropic().base_url().ends_with("/v1"));
    // reqwest is built without a default TLS provider; rein installs one before its clients.
    rein::llm::client::ensure_tls_provider();
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/chat/completions", server.base_url()))
        .header("x-test", "1")
        .body(r#"{"model":"m"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("scripted server: no reply left")
    );
    server.push(Reply::text("kept"));
    let resp = http
        .post(format!("{}/completions", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(server.remaining(), 1, "a wrong path consumes no reply");
    let first = server.request(0);
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(first.header("X-Test"), Some("1"));
    assert_eq!(first.body["model"], "m");
    assert!(first.finished.is_some());
    // The wrong path is recorded apart from the model requests.
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.other_requests().len(), 1);
}

#[tokio::test]
async fn text_streams_as_deltas_and_assembles_for_both_formats() {
    for kind in FORMATS {
        let server = server(kind);
        server.push(
            Reply::text("Hello there, friend.")
                .fragments(4)
                .usage(120, 7),
        );
        let r = run_once(&client(&server)).await;
        let resp = r.response();
        assert_eq!(resp.text(), "Hello there, friend.", "{kind:?}");
        let deltas: Vec<String> = r
            .notices
            .iter()
            .map(|n| match n {
                StreamNotice::Text(t) => t.clone(),
                other => panic!("{kind:?}: unexpected {other:?}"),
            })
            .collect();
        assert_eq!(deltas.len(), 4, "{kind:?}: one notice per delta");
        assert_eq!(deltas.concat(), "Hello there, friend.");
        let usage = resp.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (120, 7));
        let want = if kind == ProviderKind::OpenAi {
            "stop"
        } else {
            "end_turn"
        };
        assert_eq!(resp.finish_reason.as_deref(), Some(want));
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn request_bodies_and_headers_follow_each_wire_format() {
    let openai = ScriptedServer::openai();
    openai.push(Reply::text("ok"));
    run_once(&client(&openai)).await.response();
    let req = openai.request(0);
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["stream_options"]["include_usage"], true);
    assert_eq!(req.body["model"], "scripted-model");
    assert_eq!(
        req.body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(req.body["tools"][0]["type"], "function");
    assert_eq!(req.body["tools"][0]["function"]["name"], "bash");

    let anthropic = ScriptedServer::anthropic();
    anthropic.push(Reply::text("ok"));
    run_once(&client(&anthropic)).await.response();
    let req = anthropic.request(0);
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["system"][0]["text"], "You are terse.");
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["max_tokens"], 1024);
    assert_eq!(
        req.body["tools"][0]["input_schema"]["required"][0],
        "command"
    );
    assert_eq!(
        req.messages(),
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}}]})
        ]
    );
}

#[tokio::test]
async fn reasoning_text_and_tool_calls_are_assembled_in_order() {
    for kind in FORMATS {
        let server = server(kind);
        server.push(
            Reply::new()
                .reasoning("The user wants files.")
                .say("Let me look.")
                .call("bash", json!({"command": "ls -la"}))
                .call_raw("bash", "{\"command\": \"echo unterminated")
                .fragments(5),
        );
        let r = run_once(&client(&server)).await;
        let resp = r.response();
        let calls: Vec<_> = resp.tool_calls().collect();
        assert_eq!(calls.len(), 2, "{kind:?}");
        assert_eq!(calls[0].name, "bash");
        let args: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args, json!({"command": "ls -la"}));
        assert_eq!(
            calls[1].arguments, "{\"command\": \"echo unterminated",
            "raw arguments are kept"
        );
        assert_ne!(calls[0].id, calls[1].id);
        assert!(
            matches!(&resp.parts[0], AssistantPart::Thinking { text, .. } if text == "The user wants files.")
        );
        assert_eq!(resp.text(), "Let me look.");
        let reasoning: String = r
            .notices
            .iter()
            .filter_map(|n| match n {
                StreamNotice::Reasoning(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "The user wants files.");
        if kind == ProviderKind::Anthropic {
            assert!(
                matches!(&resp.parts[0], AssistantPart::Thinking { signature: Some(s), .. } if !s.is_empty()),
                "thinking keeps its signature"
            );
        }
    }
}

/// A faulty reply followed by a good one: the fault is retried once and the good answer wins.
async fn assert_recovers(kind: ProviderKind, faulty: Reply, what: &str, idle: Duration) -> Run {
    let (what, reason) = what.split_once('|').unwrap();
    let server = server(kind);
    server.push(faulty).push(Reply::text("Recovered."));
    let client = Client::new(ClientOptions {
        idle_timeout: idle,
        ..options(&server)
    })
    .unwrap();
    let r = run_once(&client).await;
    let ctx = format!("{kind:?} {what}");
    assert_eq!(
        r.result.as_ref().map(Response::text),
        Ok("Recovered.".into()),
        "{ctx}"
    );
    assert_eq!(server.request_count(), 2, "{ctx}: one retry");
    let retries = r.retries();
    assert_eq!(retries.len(), 1, "{ctx}: one Retrying notice");
    assert_eq!(retries[0].0, 2, "{ctx}: the retry is attempt 2");
    assert!(
        retries[0].2.contains(reason),
        "{ctx}: reason {:?}",
        retries[0].2
    );
    assert!(
        !retries[0].2.contains(KEY),
        "{ctx}: the reason must not show the key"
    );
    r
}

/// Whether some text was streamed before the first Retrying notice (a mid-stream fault).
fn text_before_retry(r: &Run) -> bool {
    r.notices
        .iter()
        .take_while(|n| !matches!(n, StreamNotice::Retrying { .. }))
        .any(|n| matches!(n, StreamNotice::Text(_)))
}

#[tokio::test]
async fn every_fault_kind_is_recovered_by_a_retry() {
    let idle = Duration::from_secs(3);
    for kind in FORMATS {
        assert_recovers(
            kind,
            Reply::status(500, "internal error"),
            "HTTP 500|HTTP 500: internal error",
            idle,
        )
        .await;
        assert_recovers(
            kind,
            Reply::status(503, "unavailable"),
            "HTTP 503|HTTP 503: unavailable",
            idle,
        )
        .await;
        assert_recovers(
            kind,
            Reply::status(408, "request timeout"),
            "HTTP 408|HTTP 408: request timeout",
            idle,
        )
        .await;
        let partial = Reply::text("This will be cut off somewhere.").fragments(6);
        let mid_stream = [
            (
                partial.clone().drop_after(4),
                "dropped connection|broke off",
                idle,
            ),
            (
                partial.clone().malformed_after(4),
                "malformed line|not valid JSON",
                idle,
            ),
            (
                partial.clone().overloaded_after(4),
                "overloaded event|Overloaded",
                idle,
            ),
            (
                partial.clone().stall_after(4, Duration::from_secs(10)),
                "stall|stalled",
                Duration::from_millis(300),
            ),
        ];
        for (reply, what, idle) in mid_stream {
            let r = assert_recovers(kind, reply, what, idle).await;
            assert!(
                text_before_retry(&r),
                "{kind:?} {what}: the fault came mid-stream"
            );
        }
    }
}

#[tokio::test]
async fn retry_after_is_honoured_and_capped() {
    for kind in FORMATS {
        let server = server(kind);
        server.push(Reply::rate_limited(1)).push(Reply::text("ok"));
        let r = run_once(&client(&server)).await;
        assert_eq!(r.response().text(), "ok");
        assert_eq!(
            r.retries()[0].1,
            Duration::from_secs(1),
            "{kind:?}: Retry-After sets the delay"
        );
        let (first, second) = (server.request(0), server.request(1));
        let gap = second.received - first.finished.unwrap();
        assert!(
            gap >= Duration::from_millis(950),
            "{kind:?}: waited only {gap:?}"
        );

        let server = self::server(kind);
        server.push(Reply::rate_limited(60)).push(Reply::text("ok"));
        let client = Client::new(ClientOptions {
            max_backoff: Duration::from_millis(200),
            ..options(&server)
        })
        .unwrap();
        let r = run_once(&client).await;
        assert_eq!(r.response().text(), "ok");
        assert_eq!(
            r.retries()[0].1,
            Duration::from_millis(200),
            "{kind:?}: capped by max_backoff"
        );
        assert!(r.elapsed < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn non_retryable_errors_fail_at_once_with_the_server_message() {
    for kind in FORMATS {
        let server = server(kind);
        server
            .push(Reply::status(400, "model 'nope' does not exist"))
            .push(Reply::text("unused"));
        let r = run_once(&client(&server)).await;
        assert_eq!(
            r.result,
            Err(LlmError::Http {
                status: 400,
                message: "model 'nope' does not exist".into()
            }),
            "{kind:?}"
        );
        assert_eq!(server.request_count(), 1, "{kind:?}: no retry");
        assert!(r.retries().is_empty());

        // An invalid-request error inside the stream is not retried either.
        let server = self::server(kind);
        server.push(Reply::text("partial answer").stream_error_after(2, "prompt is too long"));
        let r = run_once(&client(&server)).await;
        match &r.result {
            Err(LlmError::Provider {
                message,
                retryable: false,
            }) => {
                assert!(
                    message.contains("prompt is too long"),
                    "{kind:?}: {message}"
                )
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn retries_stop_after_max_attempts() {
    for kind in FORMATS {
        let server = server(kind);
        server.push_all((0..3).map(|_| Reply::status(503, "still down")));
        let client = Client::new(ClientOptions {
            max_attempts: 3,
            ..options(&server)
        })
        .unwrap();
        let r = run_once(&client).await;
        assert_eq!(
            r.result,
            Err(LlmError::Http {
                status: 503,
                message: "still down".into()
            })
        );
        assert_eq!(server.request_count(), 3);
        let attempts: Vec<u32> = r.retries().iter().map(|r| r.0).collect();
        assert_eq!(attempts, vec![2, 3]);
    }
}

#[tokio::test]
async fn a_stall_hits_the_idle_timeout() {
    for kind in FORMATS {
        let server = server(kind);
        server.push(Reply::text("slow").stall_after(2, Duration::from_secs(30)));
        let client = Client::new(ClientOptions {
            idle_timeout: Duration::from_millis(300),
            max_attempts: 1,
            ..options(&server)
        })
        .unwrap();
        let r = run_once(&client).await;
        match &r.result {
            Err(LlmError::Network(m)) => assert!(m.contains("stalled"), "{kind:?}: {m}"),
            other => panic!("{kind:?}: {other:?}"),
        }
        assert!(
            r.elapsed < Duration::from_secs(3),
            "{kind:?}: took {:?}",
            r.elapsed
        );

        // A slow start within the idle timeout is fine.
        let server = self::server(kind);
        server.push(Reply::text("late but fine").delay(Duration::from_millis(300)));
        let r = run_once(&self::client(&server)).await;
        assert_eq!(r.response().text(), "late but fine");
        assert!(r.retries().is_empty());
    }
}

#[tokio::test]
async fn cancellation_ends_a_stream_and_a_backoff_promptly() {
    for kind in FORMATS {
        let server = server(kind);
        let gate = Gate::new();
        server.push(
            Reply::text("never finished")
                .fragments(5)
                .pause_after(3, &gate),
        );
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let client = client(&server);
            let cancel = cancel.clone();
            async move { run(&client, cancel).await }
        });
        tokio::time::timeout(Duration::from_secs(5), gate.reached())
            .await
            .unwrap();
        let cancelled_at = Instant::now();
        cancel.cancel();
        let r = task.await.unwrap();
        assert_eq!(r.result, Err(LlmError::Cancelled), "{kind:?}");
        assert!(cancelled_at.elapsed() < Duration::from_secs(1), "{kind:?}");
        gate.release();

        // Cancelling during the wait before a retry.
        let server = self::server(kind);
        server
            .push(Reply::status(503, "down"))
            .push(Reply::text("unused"));
        let client = Client::new(ClientOptions {
            initial_backoff: Duration::from_secs(20),
            max_backoff: Duration::from_secs(20),
            ..options(&server)
        })
        .unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move { run(&client, cancel).await }
        });
        // Wait until the 503 was answered, so the client is in its backoff.
        while server.requests().first().and_then(|r| r.finished).is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
        let r = task.await.unwrap();
        assert_eq!(r.result, Err(LlmError::Cancelled), "{kind:?}");
        assert!(
            r.elapsed < Duration::from_secs(5),
            "{kind:?}: waited out the backoff"
        );
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn no_tool_call_from_a_broken_stream_is_returned() {
    for kind in FORMATS {
        // The connection drops in the middle of a dangerous call's arguments.
        let server = server(kind);
        let broken = Reply::new()
            .say("Cleaning up.")
            .call("bash", json!({"command": "rm -rf /tmp/important"}))
            .fragments(4);
        let cut = broken
            .events(kind)
            .iter()
            .position(|e| e.contains("rm -rf"))
            .unwrap();
        server
            .push(broken.drop_after(cut))
            .push(Reply::tool_call("bash", json!({"command": "ls"})));
        let r = run_once(&client(&server)).await;
        let calls: Vec<_> = r.response().tool_calls().cloned().collect();
        assert_eq!(calls.len(), 1, "{kind:?}");
        assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(r.retries().len(), 1);
        assert!(
            r.retries()[0].2.contains("broke off"),
            "{kind:?}: {:?}",
            r.retries()
        );
    }

    // A clean end of the body before the stream completed counts as broken too.
    let openai = ScriptedServer::openai();
    let header = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"rm"}}]}}]}"#;
    openai
        .push(Reply::raw_sse(&format!("{header}\n\n")))
        .push(Reply::text("fine"));
    let r = run_once(&client(&openai)).await;
    assert_eq!(r.response().tool_calls().count(), 0);
    assert!(
        r.retries()[0].2.contains("middle of a tool call"),
        "{:?}",
        r.retries()
    );

    let anthropic = ScriptedServer::anthropic();
    let complete =
        Reply::tool_call("bash", json!({"command": "rm -rf x"})).events(ProviderKind::Anthropic);
    let without_stop: String = complete[..complete.len() - 1].concat();
    anthropic
        .push(Reply::raw_sse(&without_stop))
        .push(Reply::text("fine"));
    let r = run_once(&client(&anthropic)).await;
    assert_eq!(r.response().tool_calls().count(), 0);
    assert!(
        r.retries()[0].2.contains("message_stop"),
        "{:?}",
        r.retries()
    );
}

#[tokio::test]
async fn connect_errors_are_retried_then_reported() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let client = Client::new(ClientOptions {
        max_attempts: 2,
        initial_backoff: Duration::from_millis(10),
        ..ClientOptions::new(
            ProviderKind::OpenAi,
            format!("http://127.0.0.1:{port}/v1"),
            Some(KEY.into()),
        )
    })
    .unwrap();
    let r = run_once(&client).await;
    match &r.result {
        Err(LlmError::Network(m)) => {
            assert!(m.contains("could not connect"), "{m}");
            assert!(!m.contains(KEY));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.retries().len(), 1);
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    for kind in FORMATS {
        let server = server(kind);
        server.push(Reply::status(
            401,
            &format!("Incorrect API key provided: {KEY}"),
        ));
        let r = run_once(&client(&server)).await;
        let err = r.result.unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains(KEY), "{kind:?}: {text}");
        assert!(
            text.contains("Incorrect API key provided"),
            "{kind:?}: {text}"
        );
    }
}

#[tokio::test]
async fn chunk_delay_paces_the_stream() {
    let server = ScriptedServer::openai();
    server.push(
        Reply::text("abc")
            .fragments(3)
            .chunk_delay(Duration::from_millis(40)),
    );
    let r = run_once(&client(&server)).await;
    assert_eq!(r.response().text(), "abc");
    let req = server.request(0);
    // role chunk, 3 deltas, finish chunk, [DONE]: 5 pauses between 6 events.
    let took = req.finished.unwrap() - req.received;
    assert!(took >= Duration::from_millis(200), "{took:?}");
}

/// Plain blocking HTTP, as a synchronous test (one that spawns `rein`) would rely on.
fn post_blocking(addr: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn server_works_from_a_synchronous_test_and_gates_hold_streams() {
    let server = ScriptedServer::anthropic();
    let gate = Gate::new();
    server.push(Reply::text("held back").fragments(2).pause_after(3, &gate));
    let addr = server.base_url().trim_start_matches("http://").to_owned();
    let reader =
        std::thread::spawn(move || post_blocking(&addr, "/v1/messages", r#"{"model":"m"}"#));
    assert!(gate.wait_reached(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!reader.is_finished(), "the stream waits for the gate");
    assert!(server.request(0).finished.is_none());
    gate.release();
    let raw = reader.join().unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains("text/event-stream"));
    assert!(
        raw.contains(r#""text":"held "#) && raw.contains(r#""text":"back"#),
        "{raw}"
    );
    assert!(raw.contains("message_stop"));
    assert!(server.wait_for_requests(1, Duration::from_secs(1)));
    assert!(server.request(0).finished.is_some());
    assert_eq!(server.request(0).body["model"], "m");
}

/// llama.cpp's mid-stream failure as its server writes it (`format_oai_sse({"error": ..})`),
/// after the start of a tool call.
fn llamacpp_invalid_diff(old_style: bool) -> Reply {
    let start = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"comm"}}]}}]});
    let error = json!({"code": 500, "message": "Invalid diff: now finding less tool calls!", "type": "server_error"});
    let error_line = if old_style {
        // Older servers: an `error:` line, a field SSE does not define.
        format!("error: {error}\n\n")
    } else {
        format!("data: {}\n\n", json!({ "error": error }))
    };
    Reply::raw_sse(&format!("data: {start}\n\n{error_line}"))
}

#[tokio::test]
async fn an_identical_server_error_is_retried_once_and_quoted() {
    for old_style in [false, true] {
        let server = server(ProviderKind::OpenAi);
        for _ in 0..4 {
            server.push(llamacpp_invalid_diff(old_style));
        }
        server.push(Reply::text("never reached"));
        let r = run_once(&client(&server)).await;
        match &r.result {
            Err(LlmError::Provider { message, .. }) => {
                assert!(
                    message.contains("Invalid diff: now finding less tool calls!"),
                    "the server's words: {message}"
                );
                assert!(message.contains("twice"), "{message}");
            }
            other => panic!("old_style={old_style}: {other:?}"),
        }
        assert_eq!(
            server.request_count(),
            2,
            "one retry, not {}",
            server.request_count() - 1
        );
        assert_eq!(r.retries().len(), 1);
    }
}

#[tokio::test]
async fn different_or_passing_errors_are_still_retried() {
    let server = server(ProviderKind::OpenAi);
    server
        .push(Reply::status(500, "first failure"))
        .push(Reply::status(500, "second, different failure"))
        .push(Reply::text("third time lucky"));
    let r = run_once(&client(&server)).await;
    assert_eq!(r.response().text(), "third time lucky");
    // The same overload three times is load, not an answer: retried every time.
    let server = self::server(ProviderKind::OpenAi);
    for _ in 0..3 {
        server.push(Reply::status(503, "overloaded"));
    }
    server.push(Reply::text("served"));
    let r = run_once(&client(&server)).await;
    assert_eq!(r.response().text(), "served");
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn the_first_byte_may_take_longer_than_the_idle_gap() {
    for kind in FORMATS {
        let options = ClientOptions {
            first_byte_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_millis(300),
            max_attempts: 1,
            ..options(&server(kind))
        };
        // Slow headers, and headers followed by a long silence before the first event: both are
        // the prompt being processed, not a stall.
        for reply in [
            Reply::text("slow start").delay(Duration::from_millis(900)),
            Reply::text("slow start").stall_after(0, Duration::from_millis(900)),
        ] {
            let server = self::server(kind);
            server.push(reply);
            let client = Client::new(ClientOptions {
                base_url: server.base_url(),
                ..options.clone()
            })
            .unwrap();
            let r = run_once(&client).await;
            assert_eq!(
                r.result.map(|r| r.text()),
                Ok("slow start".into()),
                "{kind:?}"
            );
        }
        // Once the stream has started, the idle gap applies.
        let server = self::server(kind);
        server.push(
            Reply::text("then stuck")
                .fragments(4)
                .stall_after(2, Duration::from_secs(5)),
        );
        let client = Client::new(ClientOptions {
            base_url: server.base_url(),
            ..options.clone()
        })
        .unwrap();
        match run_once(&client).await.result {
            Err(LlmError::Network(m)) => assert!(m.contains("idle_timeout_secs"), "{m}"),
            other => panic!("{kind:?}: {other:?}"),
        }
        // And the first byte has its own limit.
        let server = self::server(kind);
        server.push(Reply::text("too late").delay(Duration::from_secs(3)));
        let client = Client::new(ClientOptions {
            base_url: server.base_url(),
            first_byte_timeout: Duration::from_millis(600),
            ..options.clone()
        })
        .unwrap();
        match run_once(&client).await.result {
            Err(LlmError::Network(m)) => assert!(m.contains("first_byte_timeout_secs"), "{m}"),
            other => panic!("{kind:?}: {other:?}"),
        }
    }
}
