use super::*;

fn one(text: &str) -> (TextCallFormat, String, Value, String) {
    let found = find_text_calls(text).expect("a call");
    assert_eq!(found.calls.len(), 1, "{found:?}");
    let c = &found.calls[0];
    let args: Value = serde_json::from_str(&c.arguments).unwrap();
    (found.format, c.name.clone(), args, found.rest)
}

#[test]
fn hermes_tags_with_and_without_the_closing_tag() {
    let (f, name, args, rest) = one(
        "I'll list the files.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
    );
    assert_eq!((f, name.as_str()), (TextCallFormat::Hermes, "bash"));
    assert_eq!(args, serde_json::json!({"command": "ls"}));
    assert_eq!(rest, "I'll list the files.");
    let (_, name, _, rest) =
        one("<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}");
    assert_eq!((name.as_str(), rest.as_str()), ("read_file", ""));
}

#[test]
fn several_hermes_calls_in_order() {
    let text = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>";
    let found = find_text_calls(text).unwrap();
    let names: Vec<&str> = found.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(found.unmistakable());
}

#[test]
fn fenced_json_blocks_with_arguments_or_parameters() {
    let (f, name, args, rest) = one(
        "Let me run the tests:\n```json\n{\"name\": \"bash\", \"parameters\": {\"command\": \"python3 -m unittest\"}}\n```\n",
    );
    assert_eq!((f, name.as_str()), (TextCallFormat::Fenced, "bash"));
    assert_eq!(args["command"], "python3 -m unittest");
    assert_eq!(rest, "Let me run the tests:");
    // Arguments encoded as a JSON string, and the OpenAI `function` wrapper.
    let (_, _, args, _) = one(
        "```\n{\"type\": \"function\", \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}\n```",
    );
    assert_eq!(args["command"], "ls");
}

#[test]
fn a_bare_object_is_a_call_only_when_it_is_the_whole_answer() {
    let (f, name, ..) = one("  {\"name\": \"write_todos\", \"arguments\": {\"todos\": []}}\n");
    assert_eq!((f, name.as_str()), (TextCallFormat::Bare, "write_todos"));
    assert!(
        find_text_calls("The call looks like {\"name\": \"bash\", \"arguments\": {}} in JSON.")
            .is_none()
    );
}

#[test]
fn harmony_tokens_name_the_function_before_the_message() {
    let text = "<|channel|>analysis<|message|>Need to list files.<|end|><|start|>assistant<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{\"command\":\"ls -la\"}<|call|>";
    let (f, name, args, _) = one(text);
    assert_eq!((f, name.as_str()), (TextCallFormat::Harmony, "bash"));
    assert_eq!(args["command"], "ls -la");
}

#[test]
fn prose_code_and_other_json_are_not_calls() {
    for text in [
        "",
        "Done. The tests pass.",
        "```python\nprint({\"name\": \"x\", \"arguments\": {}})\n```",
        "```json\n{\"name\": \"my-package\", \"version\": \"1.0.0\"}\n```",
        "{\"name\": \"x\", \"arguments\": [1, 2]}",
        "[]",
        "<tool_call>not json</tool_call>",
        // The recorded llama.cpp stream with Harmony tokens but no call in it.
        "<|channel|>analysis<|message|>User says \"test\".<|start|>assistant<|channel|>final<|message|>Got it!",
    ] {
        assert_eq!(find_text_calls(text), None, "{text:?}");
    }
}

#[test]
fn a_fenced_call_inside_prose_is_not_unmistakable() {
    let found =
        find_text_calls("Use this:\n```json\n{\"name\": \"mul\", \"arguments\": {\"a\": 2}}\n```")
            .unwrap();
    assert!(!found.unmistakable());
    let found =
        find_text_calls("```json\n{\"name\": \"mul\", \"arguments\": {\"a\": 2}}\n```").unwrap();
    assert!(found.unmistakable());
}

#[test]
fn reminder_echoes_are_stripped_and_the_rest_kept() {
    let reminder = format!(
        "{REMINDER_OPEN}\n{REMINDER_NOTE}\nCurrent time: 2026-12-01 10:00 UTC. Git branch: main.\n{REMINDER_CLOSE}"
    );
    assert_eq!(strip_reminder_echo(&reminder).as_deref(), Some(""));
    assert_eq!(
        strip_reminder_echo(&format!("{reminder}\n\nThe tests pass now.")).as_deref(),
        Some("The tests pass now.")
    );
    // Untagged echoes of its lines, and a cut-off block.
    assert_eq!(
        strip_reminder_echo("Current time: 2026-12-01 10:00 UTC. Git branch: main.\nFixed.")
            .as_deref(),
        Some("Fixed.")
    );
    assert_eq!(
        strip_reminder_echo(&format!("Fixed.\n{REMINDER_OPEN}\nCurrent")).as_deref(),
        Some("Fixed.")
    );
    assert_eq!(strip_reminder_echo("Current time: noon\nFixed.  "), None);
    assert_eq!(strip_reminder_echo("The tests pass."), None);
}

#[test]
fn a_result_the_model_wrote_itself_is_dropped_with_everything_after_it() {
    let text = "Let me look.\n<tool_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}</tool_call>\n\
                <tool_response>\nmain.rs\n</tool_response>\n\
                <tool_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"rm main.rs\"}}</tool_call>\n\
                Done: I removed main.rs.";
    let parts = vec![AssistantPart::Text { text: text.into() }];
    let r = repair(parts, &["bash"], true);
    // Only the call before the invented result runs; the rest rested on fiction.
    let commands: Vec<&str> = r.calls.iter().map(|c| c.arguments.as_str()).collect();
    assert_eq!(commands, ["{\"command\":\"ls\"}"]);
    assert_eq!(r.text(), "Let me look.");
    let kinds: Vec<QuirkKind> = r.quirks.iter().map(|q| q.kind).collect();
    assert_eq!(
        kinds,
        [QuirkKind::InventedToolResult, QuirkKind::RecoveredToolCall]
    );
    // Each template's tag; text without one is left alone.
    for tag in ["<tool_response>", "<tool_result>", "<|im_start|>tool"] {
        let parts = vec![AssistantPart::Text {
            text: format!("Answer.{tag} invented"),
        }];
        assert_eq!(repair(parts, &["bash"], true).text(), "Answer.", "{tag}");
    }
    let plain = vec![AssistantPart::Text {
        text: "The tool_response field holds it.".into(),
    }];
    let r = repair(plain, &["bash"], true);
    assert!(r.quirks.is_empty());
    assert_eq!(r.text(), "The tool_response field holds it.");
}

#[test]
fn doubly_encoded_arguments_are_decoded() {
    let obj = serde_json::json!({"command": "ls -l", "timeout_secs": 60});
    // A JSON string holding the object, once and twice.
    let once = serde_json::to_string(&obj.to_string()).unwrap();
    let twice = serde_json::to_string(&once).unwrap();
    for args in [&once, &twice] {
        let got: Value = serde_json::from_str(&decode_double_encoding(args).unwrap()).unwrap();
        assert_eq!(got, obj, "{args}");
    }
    // The object with every quote escaped, and the decayed form of the eval runs.
    let escaped = r#"{\"command\": \"ls -l\", \"timeout_secs\": 60}"#;
    let decayed = r#"{"command": "ls -l\",\"timeout_secs\":60}"#;
    for args in [escaped, decayed] {
        let got: Value = serde_json::from_str(&decode_double_encoding(args).unwrap()).unwrap();
        assert_eq!(got, obj, "{args}");
    }
}

#[test]
fn arguments_that_are_fine_or_beyond_repair_are_left_alone() {
    for args in [
        r#"{"command": "echo \"hi\""}"#,
        "{}",
        r#""just a string""#,
        "[1, 2]",
        r#"{"command": "ls"#,
        r#"{\"command\": "#,
        "",
    ] {
        assert_eq!(decode_double_encoding(args), None, "{args}");
    }
}

#[test]
fn a_structured_call_with_doubly_encoded_arguments_runs_decoded_and_is_noted() {
    let call = ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: serde_json::to_string(r#"{"command": "ls"}"#).unwrap(),
    };
    let out = repair(vec![AssistantPart::ToolCall(call)], &["bash"], true);
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0].arguments, r#"{"command":"ls"}"#);
    assert!(
        matches!(&out.parts[..], [AssistantPart::ToolCall(c)] if c.arguments == out.calls[0].arguments)
    );
    assert_eq!(out.quirks.len(), 1);
    assert_eq!(out.quirks[0].kind, QuirkKind::DoublyEncodedArguments);
    assert_eq!(out.quirks[0].call_id.as_deref(), Some("c1"));
    // A Hermes text call whose arguments are a string holding an escaped object.
    let text =
        r#"<tool_call>{"name": "bash", "arguments": "{\\\"command\\\": \\\"ls\\\"}"}</tool_call>"#;
    let (_, name, args, _) = one(text);
    assert_eq!(
        (name.as_str(), args),
        ("bash", serde_json::json!({"command": "ls"}))
    );
}
