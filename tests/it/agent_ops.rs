//! The agent driven through its channels, as the TUI drives it: interrupts, approvals with
//! notes, "always", model switch, request cap, /clear, /fork.

use crate::support;

use rein::agent::dispatch::Approver;
use rein::agent::journal::SessionStart;
use rein::agent::{AgentHandle, AgentOptions};
use rein::config::{Config, Flags, Inputs};
use rein::protocol::{
    Decision, EditDiff, Event, NoticeLevel, Op, ToolDisplay, ToolStatus, TurnOutcome,
};
use serde_json::json;
use std::time::Duration;
use support::rein::{last_result, tool_results, user_texts};
use support::{Reply, ScriptedServer};

struct Setup {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    handle: AgentHandle,
}

fn start(server: &ScriptedServer, extra_config: &str) -> Setup {
    start_with(server, extra_config, SessionStart::Ephemeral)
}

fn start_with(server: &ScriptedServer, extra_config: &str, session: SessionStart) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(
        root.join("config/config.toml"),
        format!("retry_backoff_ms = 10\n{extra_config}"),
    )
    .unwrap();
    let inputs = Inputs {
        flags: Flags::default(),
        env: [
            ("BASE_URL".to_string(), server.base_url()),
            ("MODEL".to_string(), "scripted-model".to_string()),
            (
                "REIN_PROVIDER".to_string(),
                server.format().as_str().to_string(),
            ),
            ("REIN_SMALL_MODEL".to_string(), "off".to_string()),
        ]
        .into_iter()
        .collect(),
        home_dir: Some(root.join("home")),
        config_dir: root.join("config"),
        data_dir: root.join("data"),
        cwd: ws.clone(),
    };
    let config = Config::from_inputs(&inputs).unwrap();
    let mut opts = AgentOptions::new(config, Approver::Interactive);
    opts.session = session;
    let handle = rein::agent::spawn(opts).unwrap();
    Setup {
        _dir: dir,
        ws,
        handle,
    }
}

/// Waits for the first event matching `f`, returning it.
async fn wait_for(h: &mut AgentHandle, f: impl Fn(&Event) -> bool) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let ev = tokio::time::timeout_at(deadline, h.events.recv())
            .await
            .expect("timed out waiting for an event")
            .expect("agent ended");
        if std::env::var("AGENT_OPS_DEBUG").is_ok() {
            eprintln!("event: {ev:?}");
        }
        if f(&ev) {
            return ev;
        }
    }
}

async fn finished(h: &mut AgentHandle) -> TurnOutcome {
    match wait_for(h, |e| matches!(e, Event::TurnFinished { .. })).await {
        Event::TurnFinished { outcome } => outcome,
        _ => unreachable!(),
    }
}

fn send(h: &AgentHandle, op: Op) {
    h.ops.send(op).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_kills_the_tool_and_the_next_turn_works() {
    let s = ScriptedServer::openai();
    s.push(
        Reply::new()
            .call_with_id("c1", "bash", json!({"command": "sleep 30"}))
            .call_with_id("c2", "bash", json!({"command": "echo never"})),
    )
    .push(Reply::text("fine"));
    let mut st = start(
        &s,
        "[[rules]]\npattern = \"sleep *\"\naction = \"allow\"\n[[rules]]\npattern = \"echo *\"\naction = \"allow\"\n",
    );
    send(
        &st.handle,
        Op::UserInput {
            text: "wait".into(),
        },
    );
    wait_for(
        &mut st.handle,
        |e| matches!(e, Event::ToolCallStarted { call_id, .. } if call_id == "c1"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = std::time::Instant::now();
    send(&st.handle, Op::Interrupt);
    let ev = wait_for(
        &mut st.handle,
        |e| matches!(e, Event::ToolCallFinished { call_id, .. } if call_id == "c1"),
    )
    .await;
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(matches!(
        ev,
        Event::ToolCallFinished {
            status: ToolStatus::Interrupted,
            ..
        }
    ));
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Interrupted);

    send(
        &st.handle,
        Op::UserInput {
            text: "again".into(),
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);
    // Every call got exactly one result, so the history stays valid.
    let results = tool_results(&s.request(1));
    assert_eq!(
        results.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    assert!(
        results
            .iter()
            .all(|r| r.content.to_lowercase().contains("interrupted by the user"))
    );
    assert!(!st.ws.join("never").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_with_notes_always_and_edit_previews() {
    let s = ScriptedServer::anthropic();
    // Read first: an existing file is only overwritten after a read.
    s.push(Reply::tool_call("read_file", json!({"path": "a.txt"})))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "a.txt", "content": "new\n"}),
        ))
        .push(Reply::tool_call("bash", json!({"command": "touch made"})))
        .push(Reply::tool_call("bash", json!({"command": "touch made"})))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "touch made-again"}),
        ))
        .push(Reply::text("done"));
    let mut st = start(&s, "");
    std::fs::write(st.ws.join("a.txt"), "old\n").unwrap();
    send(
        &st.handle,
        Op::UserInput {
            text: "edit".into(),
        },
    );

    let req = match wait_for(&mut st.handle, |e| matches!(e, Event::ApprovalRequested(_))).await {
        Event::ApprovalRequested(r) => r,
        _ => unreachable!(),
    };
    assert_eq!(
        req.display,
        ToolDisplay::Edit {
            path: "a.txt".into(),
            diff: Some(EditDiff::between(Some("old\n"), "new\n")),
        }
    );
    send(
        &st.handle,
        Op::Approval {
            id: req.id,
            decision: Decision::No,
            note: Some("keep the old text".into()),
        },
    );

    let req = match wait_for(&mut st.handle, |e| matches!(e, Event::ApprovalRequested(_))).await {
        Event::ApprovalRequested(r) => r,
        _ => unreachable!(),
    };
    assert!(matches!(&req.display, ToolDisplay::Exec { command } if command == "touch made"));
    send(
        &st.handle,
        Op::Approval {
            id: req.id,
            decision: Decision::Always,
            note: None,
        },
    );
    // "Always" for `touch` is that exact command: it runs again unasked, another `touch` asks.
    let req = match wait_for(&mut st.handle, |e| matches!(e, Event::ApprovalRequested(_))).await {
        Event::ApprovalRequested(r) => r,
        _ => unreachable!(),
    };
    assert!(matches!(&req.display, ToolDisplay::Exec { command } if command == "touch made-again"));
    send(
        &st.handle,
        Op::Approval {
            id: req.id,
            decision: Decision::Yes,
            note: None,
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);
    assert_eq!(
        std::fs::read_to_string(st.ws.join("a.txt")).unwrap(),
        "old\n"
    );
    assert!(st.ws.join("made").exists() && st.ws.join("made-again").exists());
    let refusal = last_result(&s.request(2));
    assert!(
        refusal
            .content
            .starts_with("The user denied this tool call.")
            && refusal.content.contains("keep the old text"),
        "{}",
        refusal.content
    );
    assert!(refusal.is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_cap_model_switch_and_clear() {
    let s = ScriptedServer::openai();
    for _ in 0..2 {
        s.push(Reply::tool_call("write_todos", json!({"todos": []})));
    }
    s.push(Reply::text("after the switch"));
    let mut st = start(&s, "max_requests = 2\n");
    send(
        &st.handle,
        Op::UserInput {
            text: "loop".into(),
        },
    );
    let notice = wait_for(
        &mut st.handle,
        |e| matches!(e, Event::Notice { text, .. } if text.contains("max_requests")),
    )
    .await;
    assert!(matches!(notice, Event::Notice { .. }));
    assert!(matches!(
        finished(&mut st.handle).await,
        TurnOutcome::Failed { .. }
    ));
    assert_eq!(s.request_count(), 2);

    send(
        &st.handle,
        Op::SetModel {
            model: "other-model".into(),
        },
    );
    wait_for(
        &mut st.handle,
        |e| matches!(e, Event::ModelChanged { model } if model == "other-model"),
    )
    .await;
    send(&st.handle, Op::Clear);
    wait_for(&mut st.handle, |e| matches!(e, Event::SessionConfigured(_))).await;
    send(
        &st.handle,
        Op::UserInput {
            text: "fresh start".into(),
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);
    let req = s.request(2);
    assert_eq!(req.body["model"], "other-model");
    assert_eq!(user_texts(&req).len(), 1, "history was cleared");
    assert!(user_texts(&req)[0].contains("fresh start"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_keeps_the_view_and_clear_does_not() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("first answer"))
        .push(Reply::text("answer in the fork"));
    let mut st = start_with(&s, "", SessionStart::New);
    let Event::SessionConfigured(first) =
        wait_for(&mut st.handle, |e| matches!(e, Event::SessionConfigured(_))).await
    else {
        unreachable!()
    };
    assert!(!first.keep_view);
    send(
        &st.handle,
        Op::UserInput {
            text: "remember OSPREY".into(),
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);

    send(&st.handle, Op::Fork);
    let Event::SessionConfigured(fork) =
        wait_for(&mut st.handle, |e| matches!(e, Event::SessionConfigured(_))).await
    else {
        unreachable!()
    };
    assert!(
        fork.keep_view,
        "the front end keeps the conversation on screen"
    );
    assert!(fork.history.is_empty(), "nothing to replay: the view stays");
    assert_ne!(fork.session_id, first.session_id);
    wait_for(
        &mut st.handle,
        |e| matches!(e, Event::Notice { text, .. } if text.contains("Forked session")),
    )
    .await;
    // The fork goes on with the whole conversation.
    send(
        &st.handle,
        Op::UserInput {
            text: "and now?".into(),
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);
    assert!(user_texts(&s.request(1))[0].contains("OSPREY"));

    send(&st.handle, Op::Clear);
    let Event::SessionConfigured(cleared) =
        wait_for(&mut st.handle, |e| matches!(e, Event::SessionConfigured(_))).await
    else {
        unreachable!()
    };
    assert!(!cleared.keep_view);
}

/// A failure the agent reports is a notice of level `Error`, the one way to say it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_resume_arrives_as_an_error_notice() {
    let s = ScriptedServer::openai();
    let mut st = start(&s, "");
    send(&st.handle, Op::Resume { id: "nope".into() });
    let ev = wait_for(&mut st.handle, |e| {
        matches!(
            e,
            Event::Notice {
                level: NoticeLevel::Error,
                ..
            }
        )
    })
    .await;
    let Event::Notice { text, .. } = ev else {
        unreachable!()
    };
    assert!(text.contains("nope"), "{text}");
}

/// `/skills`, `/memory` and `/resume` ask the agent, which answers with what it offers, at
/// once, even while a turn waits for an approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_are_answered_by_the_agent_while_a_turn_runs() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("bash", json!({"command": "touch asked"})))
        .push(Reply::text("done"));
    let mut st = start(&s, "");
    wait_for(&mut st.handle, |e| matches!(e, Event::SessionConfigured(_))).await;
    let skill_dir = st.ws.join(".agents/skills/release");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(st.ws.join("AGENTS.md"), "Be brief.\n").unwrap();
    // Written after the agent started: the listing says what the agent offers, not the disk.
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: release\ndescription: Cut a release\n---\nbody\n",
    )
    .unwrap();
    send(&st.handle, Op::UserInput { text: "go".into() });
    let req = match wait_for(&mut st.handle, |e| matches!(e, Event::ApprovalRequested(_))).await {
        Event::ApprovalRequested(r) => r,
        _ => unreachable!(),
    };
    for op in [Op::ListSkills, Op::ListMemory, Op::ListSessions] {
        send(&st.handle, op);
    }
    let skills = wait_for(&mut st.handle, |e| matches!(e, Event::SkillsListed { .. })).await;
    assert!(
        matches!(&skills, Event::SkillsListed { catalog } if catalog.skills.is_empty()),
        "{skills:?}"
    );
    let memory = wait_for(&mut st.handle, |e| matches!(e, Event::MemoryListed { .. })).await;
    let Event::MemoryListed { files } = memory else {
        unreachable!()
    };
    // AGENTS.md was written after the start too: the model does not have it, so neither does
    // the listing.
    assert!(files.is_empty(), "{files:?}");
    let listed = wait_for(&mut st.handle, |e| {
        matches!(e, Event::SessionsListed { .. })
    })
    .await;
    assert!(
        matches!(&listed, Event::SessionsListed { here, .. } if here.contains(&st.ws)),
        "{listed:?}"
    );
    send(
        &st.handle,
        Op::Approval {
            id: req.id,
            decision: Decision::No,
            note: None,
        },
    );
    assert_eq!(finished(&mut st.handle).await, TurnOutcome::Completed);
}
