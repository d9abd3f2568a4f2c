//! Subagents (the `task` tool) end to end through the real `rein exec` binary against the
//! scripted model server, for both wire formats. The server is one FIFO shared by the parent
//! and its subagents, so tests with parallel subagents give them interchangeable replies.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use std::time::Duration;
use support::rein::{
    World, assert_ok, last_result, stderr, stdout, system_prompt, tool_names, tool_results,
    user_texts,
};
use support::{Reply, ScriptedServer};

both!(
    a_subagent_starts_fresh_with_read_only_tools,
    parallel_tasks_overlap_in_time,
    the_turn_cap_returns_partial_findings,
    a_failing_subagent_becomes_an_error_result,
);

fn task(description: &str) -> Reply {
    Reply::tool_call("task", json!({"description": description}))
}

const MARKER: &str = "SUBAGENT-TOOL-OUTPUT-7f3a";

fn a_subagent_starts_fresh_with_read_only_tools(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let description = "Find where greet is defined; cite the line.";
    s.push(
        Reply::new()
            .say("Asking a subagent.")
            .call("task", json!({"description": description})),
    )
    .push(Reply::tool_call(
        "bash",
        json!({"command": format!("echo {}; cat app.py", MARKER.to_lowercase())}),
    ))
    // Not offered to it, but models hallucinate.
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "evil.txt", "content": "x"}),
    ))
    .push(Reply::text("ANSWER: greet is defined at app.py:1."))
    .push(Reply::text("The subagent found it."));
    let w = World::new(&s);
    w.write("app.py", "def greet():\n    return 'hi'\n");
    let o = w.exec(&["--yes", "where is greet?"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 5);

    // The subagent's first request: its own system prompt, the description alone, read-only
    // tools only.
    let first = s.request(1);
    assert_eq!(
        system_prompt(&first),
        rein::agent::prompt::subagent_prompt(&w.ws)
    );
    assert_eq!(user_texts(&first), [description]);
    let non_system = first
        .messages()
        .iter()
        .filter(|m| m["role"] != "system")
        .count();
    assert_eq!(non_system, 1);
    assert_eq!(tool_names(&first), ["bash", "read_file"]);
    assert!(!first.body_text.contains("<system-reminder>"));

    // Its bash ran; its write_file was refused by the dispatcher.
    assert!(
        last_result(&s.request(2))
            .content
            .contains(&MARKER.to_lowercase())
    );
    let refused = last_result(&s.request(3));
    assert!(
        refused.content.contains("not available here"),
        "{}",
        refused.content
    );
    assert!(w.read("evil.txt").is_none());

    // The parent gets the answer and nothing of what the subagent saw.
    let parent = s.request(4);
    assert!(tool_names(&parent).contains(&"task".to_string()));
    let results = tool_results(&parent);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "ANSWER: greet is defined at app.py:1.");
    assert!(!parent.body_text.contains(&MARKER.to_lowercase()));
    assert!(!parent.body_text.contains("not available here"));
    assert!(!parent.body_text.contains("return 'hi'"));
    // The session file keeps the subagent's transcript as a side chain.
    let sessions = w.data_home.join("rein/sessions");
    let session: String = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(session.contains(&MARKER.to_lowercase()));
    assert!(session.contains("ANSWER: greet is defined at app.py:1."));
    // The subagent shows up in the log, its calls nested under it.
    let err = stderr(&o);
    assert!(err.contains("• subagent: Find where greet"), "{err}");
    assert!(err.contains("    • bash"), "{err}");
}

#[test]
fn read_skill_is_offered_to_subagents_only_when_skills_exist() {
    let s = ScriptedServer::openai();
    s.push(task("Check the skill."))
        .push(Reply::text("checked"))
        .push(Reply::text("done"));
    let w = World::new(&s);
    w.write(
        ".agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: How to deploy.\n---\nRun make deploy.\n",
    );
    let o = w.exec(&["--yes", "go"]);
    assert_ok(&o);
    assert_eq!(
        tool_names(&s.request(1)),
        ["bash", "read_file", "read_skill"]
    );
    let parent_tools = tool_names(&s.request(0));
    for t in ["write_file", "str_replace", "task", "read_skill"] {
        assert!(parent_tools.contains(&t.to_string()), "{parent_tools:?}");
    }
}

fn parallel_tasks_overlap_in_time(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(
        Reply::new()
            .call_with_id("task_a", "task", json!({"description": "Question A"}))
            .call_with_id("task_b", "task", json!({"description": "Question B"})),
    )
    // Either subagent may take either reply: they are the same.
    .push(Reply::text("same finding").delay(Duration::from_millis(700)))
    .push(Reply::text("same finding").delay(Duration::from_millis(700)))
    .push(Reply::text("both answered"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "ask two things"]);
    assert_ok(&o);
    let reqs = s.requests();
    assert_eq!(reqs.len(), 4);
    let mut asked: Vec<String> = reqs[1..3].iter().map(|r| user_texts(r).join("")).collect();
    asked.sort();
    assert_eq!(asked, ["Question A", "Question B"]);
    // The second subagent request arrived before the first one was answered.
    let first_done = reqs[1].finished.expect("finished");
    assert!(
        reqs[2].received < first_done,
        "the subagents ran one after the other"
    );
    let results = tool_results(&reqs[3]);
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["task_a", "task_b"]);
    assert!(results.iter().all(|r| r.content == "same finding"));
}

fn the_turn_cap_returns_partial_findings(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(task("Survey the tree."))
        .push(
            Reply::new()
                .say("Found A so far.")
                .call("bash", json!({"command": "echo a"})),
        )
        .push(
            Reply::new()
                .say("Found B so far.")
                .call("bash", json!({"command": "echo b"})),
        )
        .push(Reply::text("ok"));
    let w = World::new(&s);
    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nsubagent_max_turns = 2\n");
    let o = w.exec(&["--yes", "survey"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 4);
    let r = last_result(&s.request(3));
    assert!(
        r.content.contains("stopped after 2 model requests"),
        "{}",
        r.content
    );
    assert!(r.content.contains("Found B so far."), "{}", r.content);
    assert!(!r.is_error);
}

fn a_failing_subagent_becomes_an_error_result(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(task("Look at something."))
        .push(Reply::status(400, "subagent request rejected"))
        .push(Reply::text("I'll do it myself."));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "look"]);
    assert_ok(&o);
    let r = last_result(&s.request(2));
    assert!(
        r.content.starts_with("Error: Subagent failed: ") && r.content.contains("rejected"),
        "{}",
        r.content
    );
    if kind == ProviderKind::Anthropic {
        assert!(r.is_error);
    }
    assert!(stdout(&o).contains("I'll do it myself."));
}

#[test]
fn an_empty_subagent_answer_is_explained() {
    let s = ScriptedServer::openai();
    s.push(task("Say nothing."))
        .push(Reply::new())
        .push(Reply::text("ok"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "go"]);
    assert_ok(&o);
    let r = last_result(&s.request(2));
    assert!(
        r.content.contains("finished without writing an answer"),
        "{}",
        r.content
    );
}
