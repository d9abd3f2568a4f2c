use super::*;
use crate::llm::sse::SseParser;

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "claude".into(),
        system: "sys".into(),
        messages,
        tools: vec![crate::llm::ToolSpec {
            name: "bash".into(),
            description: "Run".into(),
            parameters: json!({"type": "object"}),
        }],
        max_tokens: 0,
        reminder: None,
        force_tool: false,
        mark: None,
    }
}

fn result(id: &str, content: &str, is_error: bool) -> Message {
    Message::ToolResult {
        call_id: id.into(),
        name: "bash".into(),
        content: content.into(),
        is_error,
    }
}

#[test]
fn body_has_top_level_system_tools_and_a_default_budget() {
    let body = build_body(&request(vec![Message::User {
        content: "hi".into(),
    }]));
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(
        body["tools"],
        json!([{"name": "bash", "description": "Run", "input_schema": {"type": "object"}}])
    );
    // Without a reminder the final block ends the cached prefix.
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
}

#[test]
fn history_keeps_block_order_signatures_and_alternation() {
    let body = build_body(&request(vec![
        Message::User {
            content: "go".into(),
        },
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                },
                AssistantPart::RedactedThinking {
                    data: "opaque".into(),
                },
                AssistantPart::Thinking {
                    text: "unsigned".into(),
                    signature: None,
                },
                AssistantPart::Text {
                    text: "Running.".into(),
                },
                AssistantPart::ToolCall(ToolCall {
                    id: "t1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }),
            ],
        },
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: "t2".into(),
                name: "bash".into(),
                arguments: r#"{"command": "cut"#.into(),
            })],
        },
        result("t1", "a.txt", false),
        result("t2", "Error: arguments were not valid JSON", true),
        Message::User {
            content: "also this".into(),
        },
    ]));
    let mut body = body;
    strip_cache_control(&mut body);
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3, "{m:#?}");
    assert_eq!(
        m[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Running."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "t2", "name": "bash", "input": {}},
        ]})
    );
    assert_eq!(
        m[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt", "is_error": false},
            {"type": "tool_result", "tool_use_id": "t2", "content": "Error: arguments were not valid JSON", "is_error": true},
            {"type": "text", "text": "also this"},
        ]})
    );
}

#[test]
fn text_before_tool_results_in_one_turn_is_moved_after_them() {
    let body = build_body(&request(vec![
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: "t".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            })],
        },
        Message::User {
            content: "reminder".into(),
        },
        result("t", "ok", false),
    ]));
    let blocks = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[1]["type"], "text");
}

fn assemble(body: &str) -> (Assembler, Option<LlmError>) {
    let mut parser = SseParser::new();
    let mut asm = Assembler::new();
    parser.feed(body.as_bytes()).unwrap();
    parser.end();
    while let Some(ev) = parser.next_event() {
        if let Err(e) = asm.push(ev, &mut |_| {}) {
            return (asm, Some(e));
        }
    }
    (asm, None)
}

fn ev(v: Value) -> String {
    format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap())
}

#[test]
fn usage_adds_cache_tokens_and_later_fields_win() {
    let body = [
        ev(json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 1}}})),
        ev(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42}})),
        ev(json!({"type": "message_stop"})),
    ]
    .concat();
    let r = assemble(&body).0.finish().unwrap();
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 115,
            output_tokens: 42,
            cached_input_tokens: 100,
        })
    );
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
}

#[test]
fn a_delta_for_an_unknown_tool_block_is_malformed_and_errors_classify() {
    let body = ev(
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
    );
    assert!(matches!(assemble(&body).1, Some(LlmError::Malformed(_))));
    let body = ev(
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}),
    );
    assert_eq!(
        assemble(&body).1,
        Some(LlmError::Provider {
            message: "prompt is too long (invalid_request_error)".into(),
            retryable: false
        })
    );
}

#[test]
fn unknown_block_types_are_dropped_and_text_without_start_is_kept() {
    let body = [
        ev(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}})),
        ev(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"q\":1}"}})),
        ev(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "hello"}})),
        ev(json!({"type": "message_stop"})),
    ]
    .concat();
    let r = assemble(&body).0.finish().unwrap();
    assert_eq!(
        r.parts,
        vec![AssistantPart::Text {
            text: "hello".into()
        }]
    );
}

fn strip_cache_control(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[test]
fn cache_breakpoints_leave_the_reminder_outside_the_cached_prefix() {
    let history = vec![
        Message::User {
            content: "do it".into(),
        },
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: "t1".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            })],
        },
        result("t1", "output", false),
    ];
    let mut req = request(history);
    req.reminder = Some("<system-reminder>now</system-reminder>".into());
    let body = build_body(&req);
    let m = body["messages"].as_array().unwrap();
    let marked =
        |turn: usize, block: usize| m[turn]["content"][block].get("cache_control").is_some();
    // The tool result is cached, the reminder after it (same turn) is not; the assistant turn is.
    assert_eq!(
        m[2]["content"][1]["text"],
        "<system-reminder>now</system-reminder>"
    );
    assert!(marked(2, 0) && !marked(2, 1));
    assert!(marked(1, 0));
    assert!(!marked(0, 0));
    // Without a reminder the last block itself ends the cached prefix.
    req.reminder = None;
    let body = build_body(&req);
    assert!(
        body["messages"][2]["content"][0]
            .get("cache_control")
            .is_some()
    );
}
