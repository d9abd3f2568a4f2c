use super::*;
use crate::llm::{ToolSpec, sse::SseParser};

fn call(id: &str, name: &str, args: &str) -> AssistantPart {
    AssistantPart::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    })
}

fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "m".into(),
        system: "sys".into(),
        messages,
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run".into(),
            parameters: json!({"type": "object"}),
        }],
        max_tokens: 100,
        reminder: None,
        force_tool: false,
        mark: None,
    }
}

#[test]
fn body_has_streaming_tools_and_system_first() {
    let body = build_body(&request(vec![user("hi")]));
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "bash", "description": "Run", "parameters": {"type": "object"}}}])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
    );
    let mut body = body;
    use_max_completion_tokens(&mut body);
    assert_eq!(body["max_completion_tokens"], 100);
    assert!(body.get("max_tokens").is_none());
}

#[test]
fn a_forced_first_step_asks_for_a_tool_call_in_each_wire_format() {
    let mut req = request(vec![user("fix it")]);
    assert!(build_body(&req).get("tool_choice").is_none());
    req.force_tool = true;
    assert_eq!(build_body(&req)["tool_choice"], "required");
    assert_eq!(
        crate::llm::anthropic::build_body(&req)["tool_choice"],
        json!({"type": "any"})
    );
    let reasoning = crate::llm::Reasoning::default();
    assert_eq!(
        crate::llm::responses::build_body(&req, &reasoning)["tool_choice"],
        "required"
    );
    // Nothing to call: nothing forced.
    req.tools.clear();
    assert!(build_body(&req).get("tool_choice").is_none());
}

#[test]
fn history_maps_calls_results_and_merges_consecutive_messages() {
    let body = build_body(&request(vec![
        user("a"),
        user("b"),
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "plan".into(),
                    signature: None,
                },
                AssistantPart::Text {
                    text: "Running.".into(),
                },
                call("c1", "bash", r#"{"command":"ls"}"#),
            ],
        },
        Message::Assistant {
            parts: vec![call("c2", "bash", r#"{"command": "cut off"#)],
        },
        Message::ToolResult {
            call_id: "c1".into(),
            name: "bash".into(),
            content: "file".into(),
            is_error: false,
        },
        Message::ToolResult {
            call_id: "c2".into(),
            name: "bash".into(),
            content: "Error: bad JSON".into(),
            is_error: true,
        },
        Message::Assistant { parts: vec![] },
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "done".into(),
                    signature: None,
                },
                AssistantPart::Text {
                    text: "Done.".into(),
                },
            ],
        },
    ]));
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 6, "{m:#?}");
    assert_eq!(m[1], json!({"role": "user", "content": "a\n\nb"}));
    assert_eq!(
        m[2],
        json!({
            "role": "assistant", "content": "Running.", "reasoning_content": "plan",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            ]
        })
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "file"})
    );
    assert_eq!(m[4]["tool_call_id"], "c2");
    // A plain answer carries no reasoning back.
    assert_eq!(m[5], json!({"role": "assistant", "content": "Done."}));
}

#[test]
fn call_only_assistant_message_has_null_content() {
    let body = build_body(&request(vec![
        user("x"),
        Message::Assistant {
            parts: vec![call("c", "bash", "{}")],
        },
    ]));
    assert_eq!(body["messages"][2]["content"], Value::Null);
}

fn assemble(body: &str) -> (Assembler, Option<LlmError>, String) {
    let mut parser = SseParser::new();
    let mut asm = Assembler::new();
    let mut text = String::new();
    let mut err = None;
    parser.feed(body.as_bytes()).unwrap();
    parser.end();
    while let Some(ev) = parser.next_event() {
        let mut on = |n: StreamNotice| {
            if let StreamNotice::Text(t) = n {
                text.push_str(&t)
            }
        };
        if let Err(e) = asm.push(ev, &mut on) {
            err = Some(e);
            break;
        }
    }
    (asm, err, text)
}

fn calls(r: &Response) -> Vec<(String, String, String)> {
    r.tool_calls()
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
        .collect()
}

fn tc(frag: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]})
    )
}

#[test]
fn arguments_sent_as_an_object_are_serialized() {
    let body =
        tc(json!({"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": [1, "y"]}}}))
            + "data: [DONE]\n\n";
    let (asm, err, _) = assemble(&body);
    assert!(err.is_none());
    let r = asm.finish().unwrap();
    assert_eq!(
        calls(&r),
        vec![("a".into(), "f".into(), r#"{"x":[1,"y"]}"#.into())]
    );
}

#[test]
fn parallel_calls_that_all_use_index_zero_stay_separate() {
    let body = [
        tc(json!({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"n\":"}})),
        tc(json!({"index": 0, "id": "", "function": {"name": "", "arguments": "1}"}})),
        tc(json!({"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}})),
    ]
    .concat()
        + "data: [DONE]\n\n";
    let r = assemble(&body).0.finish().unwrap();
    assert_eq!(
        calls(&r),
        vec![
            ("a".into(), "f".into(), "{\"n\":1}".into()),
            ("b".into(), "g".into(), "{}".into())
        ]
    );
}

#[test]
fn fragments_without_index_continue_only_when_they_name_nothing() {
    let body = [
        tc(json!({"id": "a", "function": {"name": "f", "arguments": "{\"p\":"}})),
        tc(json!({"function": {"arguments": "2}"}})),
        tc(json!({"id": "b", "function": {"name": "g", "arguments": "{}"}})),
    ]
    .concat()
        + "data: [DONE]\n\n";
    let r = assemble(&body).0.finish().unwrap();
    assert_eq!(
        calls(&r),
        vec![
            ("a".into(), "f".into(), "{\"p\":2}".into()),
            ("b".into(), "g".into(), "{}".into())
        ]
    );
}

#[test]
fn tool_calls_count_whatever_the_finish_reason_and_empty_ids_get_one() {
    // Gemini streams tool calls with finish_reason "stop" and an empty id.
    let body = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "stop"}]})
    );
    let r = assemble(&body).0.finish().unwrap();
    let c = calls(&r);
    assert_eq!(c.len(), 1);
    assert!(
        c[0].0.starts_with("call_") && c[0].0.len() > 10,
        "{:?}",
        c[0].0
    );
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn an_end_without_any_completion_sign_breaks_tool_calls_but_not_text() {
    let mid_call =
        tc(json!({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\""}}));
    let (asm, err, _) = assemble(&mid_call);
    assert!(err.is_none());
    assert!(matches!(asm.finish(), Err(LlmError::Network(m)) if m.contains("tool call")));

    let text = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let r = assemble(text).0.finish().unwrap();
    assert_eq!(r.text(), "hi");

    assert!(matches!(assemble("").0.finish(), Err(LlmError::Network(_))));
    assert_eq!(
        assemble("data: [DONE]\n\n").0.finish().unwrap(),
        Response::default()
    );
}

#[test]
fn only_the_first_choice_counts_and_choice_usage_is_read() {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "A"}}, {"index": 1, "delta": {"content": "B"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": {"prompt_tokens": 5, "completion_tokens": 2}}]})
    );
    let (asm, _, streamed) = assemble(&body);
    assert_eq!(streamed, "A");
    let r = asm.finish().unwrap();
    assert_eq!(r.text(), "A");
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 5,
            output_tokens: 2,
            cached_input_tokens: 0,
        })
    );
}

#[test]
fn odd_field_types_do_not_fail_the_chunk() {
    let body = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "ok", "reasoning": {"effort": "low"}, "refusal": 3, "tool_calls": null}, "finish_reason": null}], "usage": null})
    );
    let (asm, err, _) = assemble(&body);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(asm.finish().unwrap().text(), "ok");
}

#[test]
fn errors_inside_the_stream_are_provider_errors() {
    let (_, err, _) = assemble("event: error\ndata: upstream went away\n\n");
    assert_eq!(
        err,
        Some(LlmError::Provider {
            message: "upstream went away".into(),
            retryable: false
        })
    );
    let (_, err, _) = assemble("data: {\"error\":{\"message\":\"Rate limit\",\"code\":429}}\n\n");
    assert!(matches!(
        err,
        Some(LlmError::Provider {
            retryable: true,
            ..
        })
    ));
    let (_, err, _) = assemble("data: {\"choices\":[{\"delta\":{\"content\":\"x\"\n\n");
    assert!(matches!(err, Some(LlmError::Malformed(_))));
}

#[test]
fn a_non_streaming_completion_body_is_understood() {
    let doc = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
    let r = assemble(&format!("data: {doc}\n\ndata: [DONE]\n\n"))
        .0
        .finish()
        .unwrap();
    assert_eq!(r.text(), "hi");
    assert_eq!(calls(&r), vec![("c".into(), "f".into(), "{}".into())]);
}

#[test]
fn the_reminder_is_folded_into_the_end_of_the_last_message() {
    let tool_result = Message::ToolResult {
        call_id: "c1".into(),
        name: "bash".into(),
        content: "output".into(),
        is_error: false,
    };
    let history = vec![
        user("do it"),
        Message::Assistant {
            parts: vec![call("c1", "bash", "{}")],
        },
        tool_result,
    ];
    let mut req = request(history.clone());
    req.reminder = Some("<system-reminder>r</system-reminder>".into());
    let with = build_body(&req);
    let without = build_body(&request(history));
    let (a, b) = (
        with["messages"].as_array().unwrap(),
        without["messages"].as_array().unwrap(),
    );
    // No message of its own: the tool result carries it, and everything before is unchanged
    // (the server's prompt cache covers it).
    assert_eq!(a.len(), b.len());
    assert_eq!(a[..a.len() - 1], b[..b.len() - 1]);
    assert_eq!(a.last().unwrap()["role"], "tool");
    assert_eq!(
        a.last().unwrap()["content"],
        "output\n\n<system-reminder>r</system-reminder>"
    );
    // The first request: the user's message carries it.
    let mut first = request(vec![user("hi")]);
    first.reminder = Some("R".into());
    let body = build_body(&first);
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi\n\nR"})
    );
    // After an assistant message (nothing to fold into) it becomes a user message.
    let mut after = request(vec![
        user("hi"),
        Message::Assistant {
            parts: vec![AssistantPart::Text { text: "yes".into() }],
        },
    ]);
    after.reminder = Some("R".into());
    let body = build_body(&after);
    assert_eq!(body["messages"][3], json!({"role": "user", "content": "R"}));
}
