use super::*;
use crate::llm::ToolSpec;

fn ev(v: Value) -> SseEvent {
    SseEvent {
        event: v["type"].as_str().unwrap_or("").to_owned(),
        data: v.to_string(),
    }
}

fn assemble(events: &[Value]) -> (Result<Response, LlmError>, Vec<StreamNotice>) {
    let mut a = Assembler::new();
    let mut notices = Vec::new();
    for e in events {
        if let Err(err) = a.push(&ev(e.clone()), &mut |n| notices.push(n)) {
            return (Err(err), notices);
        }
    }
    (a.finish(), notices)
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"status": "completed", "usage": usage}})
}

#[test]
fn text_reasoning_and_call_assemble_in_output_order() {
    let events = [
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Look "}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "first."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look first."}], "encrypted_content": "ENC"}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Listing"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "content": [{"type": "output_text", "text": "Listing"}]}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "bash", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"command\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "\"ls\"}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "{\"command\":\"ls\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "bash", "arguments": "{\"command\":\"ls\"}"}}),
        completed(
            json!({"input_tokens": 900, "input_tokens_details": {"cached_tokens": 640}, "output_tokens": 33}),
        ),
    ];
    let (r, notices) = assemble(&events);
    let r = r.unwrap();
    assert_eq!(
        r.parts,
        vec![
            AssistantPart::Thinking {
                text: "Look first.".into(),
                signature: Some("ENC".into())
            },
            AssistantPart::Text {
                text: "Listing".into()
            },
            AssistantPart::ToolCall(ToolCall {
                id: "call_9".into(),
                name: "bash".into(),
                arguments: "{\"command\":\"ls\"}".into()
            }),
        ]
    );
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 900,
            output_tokens: 33,
            cached_input_tokens: 640
        })
    );
    assert_eq!(
        notices,
        vec![
            StreamNotice::Reasoning("Look ".into()),
            StreamNotice::Reasoning("first.".into()),
            StreamNotice::Text("Listing".into()),
            StreamNotice::ToolArgs("{\"command\":".into()),
            StreamNotice::ToolArgs("\"ls\"}".into()),
        ]
    );
    assert!(!r.truncated());
}

#[test]
fn a_stream_without_completed_is_a_broken_stream() {
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c", "name": "bash", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"}),
    ];
    let (r, _) = assemble(&events);
    assert!(matches!(r, Err(LlmError::Network(m)) if m.contains("response.completed")));
}

#[test]
fn error_event_and_failed_response_are_provider_errors() {
    let (r, _) = assemble(&[
        json!({"type": "error", "code": "invalid_prompt", "message": "Bad prompt", "param": null}),
    ]);
    assert_eq!(
        r,
        Err(LlmError::Provider {
            message: "Bad prompt".into(),
            retryable: false
        })
    );
    let (r, _) = assemble(&[
        json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
    ]);
    assert_eq!(
        r,
        Err(LlmError::Provider {
            message: "boom".into(),
            retryable: true
        })
    );
    let (r, _) = assemble(&[
        json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}),
    ]);
    assert!(matches!(
        r,
        Err(LlmError::Provider {
            retryable: true,
            ..
        })
    ));
}

#[test]
fn malformed_event_is_malformed() {
    let mut a = Assembler::new();
    let bad = SseEvent {
        event: String::new(),
        data: "{\"type\":\"response.output_text.delta\",\"delta\":\"oo".into(),
    };
    assert!(matches!(
        a.push(&bad, &mut |_| {}),
        Err(LlmError::Malformed(_))
    ));
}

#[test]
fn incomplete_for_max_output_tokens_is_truncated() {
    let (r, _) = assemble(&[
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Half"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
    ]);
    let r = r.unwrap();
    assert_eq!(r.text(), "Half");
    assert!(r.truncated());
}

#[test]
fn items_that_arrive_whole_are_shown() {
    let (r, notices) = assemble(&[
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "content": [{"type": "output_text", "text": "Whole"}]}}),
        completed(Value::Null),
    ]);
    assert_eq!(r.unwrap().text(), "Whole");
    assert_eq!(notices, vec![StreamNotice::Text("Whole".into())]);
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "gpt-5".into(),
        system: "Be terse.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run.".into(),
            parameters: json!({"type": "object"}),
        }],
        reminder: Some("REMINDER".into()),
        max_tokens: 1000,
        force_tool: false,
        mark: None,
    }
}

#[test]
fn body_carries_calls_outputs_and_encrypted_reasoning_statelessly() {
    let req = request(vec![
        Message::User {
            content: "list".into(),
        },
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "Look first.".into(),
                    signature: Some("ENC".into()),
                },
                // Unsigned reasoning (another provider's) cannot go back.
                AssistantPart::Thinking {
                    text: "plain".into(),
                    signature: None,
                },
                AssistantPart::ToolCall(ToolCall {
                    id: "call_9".into(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"".into(),
                }),
            ],
        },
        Message::ToolResult {
            call_id: "call_9".into(),
            name: "bash".into(),
            content: "a.txt".into(),
            is_error: false,
        },
    ]);
    let body = build_body(&req, &Reasoning::default());
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["instructions"], "Be terse.");
    assert_eq!(body["max_output_tokens"], 1000);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["reasoning"], json!({"summary": "auto"}));
    assert_eq!(body["tools"][0]["name"], "bash");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look first."}], "encrypted_content": "ENC"},
            {"type": "function_call", "call_id": "call_9", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_9", "output": "a.txt\n\nREMINDER"},
        ])
    );
}

#[test]
fn reasoning_settings_and_non_reasoning_models() {
    let mut req = request(vec![Message::User {
        content: "hi".into(),
    }]);
    let set = Reasoning {
        effort: Some("high".into()),
        summary: Some("detailed".into()),
    };
    let body = build_body(&req, &set);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "detailed"})
    );
    assert_eq!(body["input"][0]["content"][0]["text"], "hi\n\nREMINDER");
    req.model = "gpt-4.1".into();
    let body = build_body(&req, &Reasoning::default());
    assert!(body.get("reasoning").is_none());
    assert!(body.get("include").is_none());
    assert!(is_reasoning_model("openai/gpt-5.1-codex"));
    assert!(is_reasoning_model("codex-mini-latest"));
    assert!(!is_reasoning_model("gpt-5-chat-latest"));
}
