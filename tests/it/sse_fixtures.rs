//! Every recorded stream in `tests/fixtures/sse/` must assemble into exactly the message its
//! README entry expects, whether the body arrives whole, in random 1–7 byte pieces, or with
//! other line endings. The expectations are read from the README at test time.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rein::llm::sse::{SseEvent, SseParser};
use rein::llm::{AssistantPart, LlmError, Response, StreamNotice, anthropic, openai};
use serde_json::Value;
use std::path::PathBuf;

struct Fixture {
    number: usize,
    file: String,
    expected: Value,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse")
}

/// Reads each `## N. \`file\`` section and the first ```json block under it.
fn fixtures() -> Vec<Fixture> {
    let readme = std::fs::read_to_string(dir().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("## ") else {
            continue;
        };
        let Some((num, title)) = rest.split_once(". ") else {
            continue;
        };
        let Ok(number) = num.parse::<usize>() else {
            continue;
        };
        let file = title.trim().trim_matches('`').to_owned();
        for l in lines.by_ref() {
            if l.trim() == "```json" {
                break;
            }
        }
        let json: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let expected: Value = serde_json::from_str(&json.join("\n"))
            .unwrap_or_else(|e| panic!("README entry {number} has invalid JSON: {e}"));
        out.push(Fixture {
            number,
            file,
            expected,
        });
    }
    assert_eq!(out.len(), 30, "the README lists 30 fixtures");
    out
}

/// What a stream assembled into.
struct Outcome {
    response: Response,
    error: Option<LlmError>,
    /// `finish()` succeeded: the stream is complete by the wire format's rules.
    complete: bool,
    done: bool,
    comments: usize,
    data_events: usize,
    pings: usize,
    streamed_text: String,
    streamed_reasoning: String,
}

fn run(anthropic_format: bool, pieces: &[&[u8]]) -> Outcome {
    let mut parser = SseParser::new();
    let mut streamed_text = String::new();
    let mut streamed_reasoning = String::new();
    let mut on = |n: StreamNotice| match n {
        StreamNotice::Text(t) => streamed_text.push_str(&t),
        StreamNotice::Reasoning(t) => streamed_reasoning.push_str(&t),
        // Watched for repetition only; the arguments are checked in the assembled calls.
        StreamNotice::ToolArgs(_) => {}
        other => panic!("unexpected notice {other:?}"),
    };
    let mut oa = openai::Assembler::new();
    let mut an = anthropic::Assembler::new();
    let mut error = None;
    let mut data_events = 0;
    let mut saw_done = false;
    let mut feed = |ev: &SseEvent, error: &mut Option<LlmError>, data_events: &mut usize| {
        if ev.is_done() {
            saw_done = true;
        } else {
            *data_events += 1;
        }
        // Like the client, stop assembling at the first error.
        if error.is_some() {
            return;
        }
        let r = if anthropic_format {
            an.push(ev, &mut on)
        } else {
            oa.push(ev, &mut on)
        };
        if let Err(e) = r {
            *error = Some(e);
        }
    };
    for piece in pieces {
        parser.feed(piece).unwrap();
        while let Some(ev) = parser.next_event() {
            feed(ev, &mut error, &mut data_events);
        }
    }
    parser.end();
    while let Some(ev) = parser.next_event() {
        feed(ev, &mut error, &mut data_events);
    }
    let comments = parser.comment_lines();
    let (response, complete, done, pings) = if anthropic_format {
        let (pings, done) = (an.pings(), an.is_done());
        (an.clone().into_response(), an.finish().is_ok(), done, pings)
    } else {
        if error.is_none() {
            assert_eq!(oa.is_done(), saw_done, "the assembler notices [DONE]");
        }
        (oa.clone().into_response(), oa.finish().is_ok(), saw_done, 0)
    };
    Outcome {
        response,
        error,
        complete,
        done,
        comments,
        data_events,
        pings,
        streamed_text,
        streamed_reasoning,
    }
}

fn check_openai(f: &Fixture, o: &Outcome, how: &str) {
    let e = &f.expected;
    let ctx = format!("fixture {} ({}) fed {how}", f.number, f.file);
    assert_eq!(
        o.response.text(),
        e["text"].as_str().unwrap(),
        "{ctx}: text"
    );
    assert_eq!(o.streamed_text, o.response.text(), "{ctx}: streamed text");
    let reasoning: Option<String> = o.response.parts.iter().find_map(|p| match p {
        AssistantPart::Thinking { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(
        reasoning.as_deref(),
        e["reasoning"].as_str(),
        "{ctx}: reasoning"
    );
    assert_eq!(
        o.streamed_reasoning,
        reasoning.unwrap_or_default(),
        "{ctx}: streamed reasoning"
    );
    assert_eq!(
        o.response.refusal.as_deref(),
        e["refusal"].as_str(),
        "{ctx}: refusal"
    );
    let calls: Vec<Value> = o
        .response
        .tool_calls()
        .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
        .collect();
    assert_eq!(&Value::Array(calls), &e["tool_calls"], "{ctx}: tool calls");
    assert_eq!(
        o.response.finish_reason.as_deref(),
        e["finish_reason"].as_str(),
        "{ctx}: finish_reason"
    );
    match (&o.response.usage, &e["usage"]) {
        (None, Value::Null) => {}
        (Some(u), exp) => {
            assert_eq!(
                u.input_tokens,
                exp["prompt_tokens"].as_u64().unwrap(),
                "{ctx}: prompt tokens"
            );
            assert_eq!(
                u.output_tokens,
                exp["completion_tokens"].as_u64().unwrap(),
                "{ctx}: completion tokens"
            );
        }
        (None, exp) => panic!("{ctx}: usage missing, expected {exp}"),
    }
    check_error(&ctx, &o.error, &e["stream_error"]);
    assert_eq!(
        o.done,
        e["ends_with_DONE"].as_bool().unwrap(),
        "{ctx}: [DONE]"
    );
    assert_eq!(
        o.comments as u64,
        e["comment_lines"].as_u64().unwrap(),
        "{ctx}: comments"
    );
    assert_eq!(
        o.data_events as u64,
        e["data_events"].as_u64().unwrap(),
        "{ctx}: data events"
    );
    if o.error.is_none() {
        assert!(o.complete, "{ctx}: a finished stream must be accepted");
    }
}

fn check_error(ctx: &str, got: &Option<LlmError>, expected: &Value) {
    match (got, expected) {
        (None, Value::Null) => {}
        (Some(LlmError::Provider { message, .. }), exp) if !exp.is_null() => {
            let want = exp["message"].as_str().unwrap();
            assert!(
                message.contains(want),
                "{ctx}: error {message:?} lacks {want:?}"
            );
        }
        (got, exp) => panic!("{ctx}: stream error {got:?}, expected {exp}"),
    }
}

fn check_anthropic(f: &Fixture, o: &Outcome, how: &str) {
    let e = &f.expected;
    let ctx = format!("fixture {} ({}) fed {how}", f.number, f.file);
    let content = e["content"].as_array().unwrap();
    assert_eq!(
        o.response.parts.len(),
        content.len(),
        "{ctx}: parts {:?}",
        o.response.parts
    );
    let mut text = String::new();
    let mut reasoning = String::new();
    for (part, exp) in o.response.parts.iter().zip(content) {
        match (part, exp["type"].as_str().unwrap()) {
            (AssistantPart::Text { text: t }, "text") => {
                assert_eq!(t, exp["text"].as_str().unwrap(), "{ctx}: text");
                text.push_str(t);
            }
            (AssistantPart::Thinking { text: t, signature }, "thinking") => {
                assert_eq!(t, exp["thinking"].as_str().unwrap(), "{ctx}: thinking");
                let sig = signature.as_deref().unwrap_or("");
                assert_eq!(
                    sig.len() as u64,
                    exp["signature_chars"].as_u64().unwrap(),
                    "{ctx}: signature"
                );
                reasoning.push_str(t);
            }
            (AssistantPart::RedactedThinking { data }, "redacted_thinking") => {
                assert_eq!(
                    data.len() as u64,
                    exp["data_chars"].as_u64().unwrap(),
                    "{ctx}: redacted data"
                );
            }
            (AssistantPart::ToolCall(c), "tool_use") => {
                assert_eq!(c.id, exp["id"].as_str().unwrap(), "{ctx}: tool id");
                assert_eq!(c.name, exp["name"].as_str().unwrap(), "{ctx}: tool name");
                if exp["input"] == "<INCOMPLETE JSON>" {
                    assert_eq!(
                        c.arguments,
                        exp["raw_partial_json"].as_str().unwrap(),
                        "{ctx}: raw input"
                    );
                    assert!(
                        serde_json::from_str::<Value>(&c.arguments).is_err(),
                        "{ctx}: input should be invalid"
                    );
                } else {
                    let got: Value = serde_json::from_str(&c.arguments).unwrap();
                    assert_eq!(got, exp["input"], "{ctx}: tool input");
                }
            }
            (got, want) => panic!("{ctx}: part {got:?} where {want} was expected"),
        }
    }
    assert_eq!(o.streamed_text, text, "{ctx}: streamed text");
    assert_eq!(o.streamed_reasoning, reasoning, "{ctx}: streamed reasoning");
    assert_eq!(
        o.response.finish_reason.as_deref(),
        e["stop_reason"].as_str(),
        "{ctx}: stop_reason"
    );
    match (&o.response.usage, &e["usage"]) {
        (None, Value::Null) => {}
        (Some(u), exp) => {
            let n = |k: &str| exp[k].as_u64().unwrap_or(0);
            let input =
                n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens");
            assert_eq!(u.input_tokens, input, "{ctx}: input tokens");
            assert_eq!(u.output_tokens, n("output_tokens"), "{ctx}: output tokens");
        }
        (None, exp) => panic!("{ctx}: usage missing, expected {exp}"),
    }
    check_error(&ctx, &o.error, &e["stream_error"]);
    if let Some(LlmError::Provider { retryable, .. }) = &o.error {
        let overloaded = e["stream_error"]["type"] == "overloaded_error";
        assert_eq!(
            *retryable, overloaded,
            "{ctx}: overloaded errors are retryable"
        );
    }
    let stopped = e["message_stop_received"].as_bool().unwrap();
    assert_eq!(o.complete, stopped, "{ctx}: completeness");
    assert_eq!(o.pings as u64, e["pings"].as_u64().unwrap(), "{ctx}: pings");
}

fn check(f: &Fixture, how: &str, pieces: &[&[u8]]) {
    let anthropic_format = f.file.starts_with("anthropic");
    let o = run(anthropic_format, pieces);
    if anthropic_format {
        check_anthropic(f, &o, how);
    } else {
        check_openai(f, &o, how);
    }
}

fn random_pieces(body: &[u8], seed: u64) -> Vec<&[u8]> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let n = rng.random_range(1..=7).min(rest.len());
        let (a, b) = rest.split_at(n);
        out.push(a);
        rest = b;
    }
    out
}

#[test]
fn every_fixture_assembles_whole_and_in_random_pieces() {
    for f in fixtures() {
        let body = std::fs::read(dir().join(&f.file)).unwrap();
        check(&f, "whole", &[&body]);
        for seed in [1, 7, 42] {
            let pieces = random_pieces(&body, seed + f.number as u64);
            check(&f, &format!("in pieces (seed {seed})"), &pieces);
        }
    }
}

#[test]
fn every_fixture_assembles_with_crlf_cr_and_no_space_after_colon() {
    for f in fixtures() {
        let text = std::fs::read_to_string(dir().join(&f.file)).unwrap();
        let variants = [
            ("with CRLF", text.replace('\n', "\r\n")),
            ("with CR", text.replace('\n', "\r")),
            ("without space after data:", text.replace("data: ", "data:")),
        ];
        for (how, body) in variants {
            let bytes = body.as_bytes();
            check(&f, how, &[bytes]);
            let pieces = random_pieces(bytes, f.number as u64);
            check(&f, &format!("{how}, in pieces"), &pieces);
        }
    }
}

/// The events of a fixture as separate SSE texts (each ends with a blank line).
fn events_of(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| format!("{e}\n\n"))
        .collect()
}

#[test]
fn interleaved_parallel_tool_call_fragments_merge_by_index() {
    let f = fixtures().into_iter().find(|f| f.number == 1).unwrap();
    let events = events_of(&f.file);
    let is_call = |e: &str, i: u32| e.contains(&format!("\"tool_calls\":[{{\"index\":{i}"));
    let first: Vec<&String> = events.iter().filter(|e| is_call(e, 0)).collect();
    let second: Vec<&String> = events.iter().filter(|e| is_call(e, 1)).collect();
    assert!(
        first.len() > 3 && second.len() > 3,
        "fixture 1 has two fragmented calls"
    );
    let start = events.iter().position(|e| is_call(e, 0)).unwrap();
    let end = events.iter().rposition(|e| is_call(e, 1)).unwrap();
    // Alternate 0, 1, 0, 1, ... while keeping each call's own fragments in order.
    let mut mixed = Vec::new();
    for i in 0..first.len().max(second.len()) {
        mixed.extend(first.get(i).copied());
        mixed.extend(second.get(i).copied());
    }
    let mut body = String::new();
    events[..start].iter().for_each(|e| body.push_str(e));
    mixed.iter().for_each(|e| body.push_str(e));
    events[end + 1..].iter().for_each(|e| body.push_str(e));
    assert_ne!(body, std::fs::read_to_string(dir().join(&f.file)).unwrap());
    check(&f, "interleaved", &[body.as_bytes()]);
    let pieces = random_pieces(body.as_bytes(), 99);
    check(&f, "interleaved, in pieces", &pieces);
}

#[test]
fn overloaded_error_after_content_started_is_retryable_and_incomplete() {
    let events = events_of("anthropic-sonnet4-text-then-tool-use.sse");
    let cut = events
        .iter()
        .position(|e| e.contains("input_json_delta") && e.contains("locati"))
        .unwrap();
    let mut body: String = events[..=cut].concat();
    body.push_str(
        &std::fs::read_to_string(dir().join("anthropic-overloaded-error-http200.sse")).unwrap(),
    );
    let o = run(true, &[body.as_bytes()]);
    assert_eq!(
        o.streamed_text,
        "I'll check the current weather in Paris for you."
    );
    match o.error {
        Some(LlmError::Provider {
            retryable: true,
            message,
        }) => assert!(message.contains("Overloaded")),
        other => panic!("expected a retryable overloaded error, got {other:?}"),
    }
    assert!(!o.complete, "a stream cut by an error is not complete");
}

#[test]
fn anthropic_error_without_event_line_is_classified_by_type() {
    let body = "data: {\"type\": \"ping\"}\n\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Concurrency limit exceeded\"}}\n\n";
    let o = run(true, &[body.as_bytes()]);
    assert_eq!(o.pings, 1);
    assert!(
        matches!(
            o.error,
            Some(LlmError::Provider {
                retryable: true,
                ..
            })
        ),
        "{:?}",
        o.error
    );
}

#[test]
fn openrouter_documented_error_shape_and_vllm_error_object() {
    let doc = r#"data: {"id":"cmpl-abc123","object":"chat.completion.chunk","created":1234567890,"model":"gpt-3.5-turbo","provider":"openai","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#;
    let o = run(false, &[format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"Hi\"}}}}]}}\n\n{doc}\n\ndata: [DONE]\n\n").as_bytes()]);
    assert_eq!(o.response.text(), "Hi");
    match o.error {
        Some(LlmError::Provider {
            retryable: true,
            message,
        }) => assert_eq!(message, "Provider disconnected unexpectedly"),
        other => panic!("{other:?}"),
    }
    let vllm = "data: {\"object\":\"error\",\"message\":\"The model ran out of KV cache\",\"type\":\"BadRequestError\",\"code\":400}\n\n";
    let o = run(false, &[vllm.as_bytes()]);
    match o.error {
        Some(LlmError::Provider {
            retryable: false,
            message,
        }) => assert_eq!(message, "The model ran out of KV cache"),
        other => panic!("{other:?}"),
    }
}
