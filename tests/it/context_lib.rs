//! Context management through the library, for what `rein exec` (one prompt, no slash
//! commands) cannot drive: `/compact` (`Op::Compact`) and files changed between turns.

use crate::support;

use rein::agent::dispatch::Approver;
use rein::agent::{AgentHandle, AgentOptions};
use rein::config::{Config, Flags, Inputs};
use rein::llm::ProviderKind;
use rein::protocol::{Event, Op, TurnOutcome};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::rein::{system_prompt, tool_names, tool_results, user_texts};
use support::{RecordedRequest, Reply, ScriptedServer};

/// A temp world for an in-process agent.
struct Lib {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    handle: AgentHandle,
}

fn config(server: &ScriptedServer, root: &Path, ws: &Path, env: &[(&str, &str)]) -> Config {
    let config_dir = root.join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n",
    )
    .unwrap();
    let mut vars: HashMap<String, String> = [
        ("BASE_URL", server.base_url()),
        ("MODEL", "scripted-model".into()),
        ("API_KEY", "sk-test".into()),
        ("REIN_PROVIDER", server.format().as_str().into()),
        ("REIN_SMALL_MODEL", "off".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in env {
        vars.insert(k.to_string(), v.to_string());
    }
    let inputs = Inputs {
        flags: Flags::default(),
        env: vars,
        home_dir: Some(root.join("home")),
        config_dir,
        data_dir: root.join("data"),
        cwd: ws.to_path_buf(),
    };
    Config::from_inputs(&inputs).unwrap()
}

impl Lib {
    /// Starts an agent on a fresh workspace; `prepare` runs on the workspace first.
    fn start(server: &ScriptedServer, env: &[(&str, &str)], prepare: impl FnOnce(&Path)) -> Lib {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        prepare(&ws);
        let config = config(server, &root, &ws, env);
        let handle = rein::agent::spawn(AgentOptions::new(config, Approver::ApproveAll)).unwrap();
        Lib {
            _dir: dir,
            ws,
            handle,
        }
    }

    /// Sends `op` and collects events until one matches `done` (which is included).
    async fn until(&mut self, op: Op, done: impl Fn(&Event) -> bool) -> Vec<Event> {
        self.handle.ops.send(op).unwrap();
        let mut seen = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(30), self.handle.events.recv())
                .await
                .expect("an event within 30 s")
                .expect("the agent is running");
            let end = done(&ev);
            seen.push(ev);
            if end {
                return seen;
            }
        }
    }

    /// Runs one user turn to its end; it must complete.
    async fn turn(&mut self, text: &str) -> Vec<Event> {
        let events = self
            .until(Op::UserInput { text: text.into() }, |e| {
                matches!(e, Event::TurnFinished { .. })
            })
            .await;
        match events.last() {
            Some(Event::TurnFinished {
                outcome: TurnOutcome::Completed,
            }) => events,
            other => panic!("turn ended with {other:?}; events: {events:?}"),
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}");
}

/// The reminder block at the end of a request.
fn reminder(req: &RecordedRequest) -> String {
    let last = user_texts(req).pop().unwrap_or_default();
    let at = last
        .find("<system-reminder>")
        .unwrap_or_else(|| panic!("no reminder in {last}"));
    last[at..].to_string()
}

async fn manual_compaction_uses_the_focus(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    // One long turn: long explanations and big outputs.
    let explain = "e".repeat(1600);
    for ch in ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] {
        s.push(Reply::new().say(&explain).call(
            "bash",
            json!({"command": format!("python3 -c 'print(\"{ch}\" * 3000)'")}),
        ));
    }
    s.push(Reply::text("turn one is done"))
        .push(Reply::text(
            "SUMMARY-TEXT: the parser bug is in src/parse.rs.",
        ))
        .push(Reply::text("continuing from the note"));
    let mut lib = Lib::start(&s, &[("REIN_CONTEXT_WINDOW", "16000")], |_| {});
    let first_prompt = format!("FIRST-PROMPT {}", "p".repeat(4000));
    lib.turn(&first_prompt).await;
    assert_eq!(s.request_count(), 9, "no auto-compaction in turn one");

    let events = lib
        .until(
            Op::Compact {
                focus: Some("the parser bug".into()),
            },
            |e| matches!(e, Event::Usage { .. }),
        )
        .await;
    let (before, after) = events
        .iter()
        .find_map(|e| match e {
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => Some((*before_tokens, *after_tokens)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Compacted event in {events:?}"));
    assert!(after < before, "{before} -> {after}");
    match events.last() {
        Some(Event::Usage {
            used_tokens,
            context_window,
        }) => {
            assert_eq!(*used_tokens, after);
            assert_eq!(*context_window, 16_000);
        }
        other => panic!("{other:?}"),
    }
    // The summary request: no tools, the compaction prompt, the transcript and the focus.
    let summary = s.request(9);
    assert!(tool_names(&summary).is_empty());
    assert!(system_prompt(&summary).contains("handoff note"));
    let ask = user_texts(&summary).join("\n");
    assert!(ask.contains("FIRST-PROMPT"), "{ask}");
    assert!(ask.contains("Concentrate on: the parser bug"), "{ask}");

    // The next turn starts from the note, not from the first prompt.
    lib.turn("what next?").await;
    let next = s.request(10);
    let users = user_texts(&next);
    assert!(
        users[0].starts_with("[Summary of the earlier conversation"),
        "{}",
        users[0]
    );
    assert!(users[0].contains("SUMMARY-TEXT: the parser bug"));
    assert!(!next.body_text.contains("FIRST-PROMPT"));
    assert!(users.last().unwrap().starts_with("what next?"));
    // The latest results are still there; the oldest are gone.
    let kept: Vec<String> = tool_results(&next)
        .iter()
        .map(|r| r.content.trim().to_string())
        .collect();
    assert!(kept.contains(&"h".repeat(3000)), "{kept:?}");
    assert!(!next.body_text.contains(&"a".repeat(3000)));
    assert_eq!(s.remaining(), 0);
}

#[tokio::test]
async fn manual_compaction_uses_the_focus_openai() {
    manual_compaction_uses_the_focus(ProviderKind::OpenAi).await;
}

#[tokio::test]
async fn manual_compaction_uses_the_focus_anthropic() {
    manual_compaction_uses_the_focus(ProviderKind::Anthropic).await;
}

#[tokio::test]
async fn compacting_an_empty_conversation_says_so() {
    let s = ScriptedServer::openai();
    let mut lib = Lib::start(&s, &[], |_| {});
    let events = lib
        .until(Op::Compact { focus: None }, |e| {
            matches!(e, Event::Notice { .. })
        })
        .await;
    assert!(
        matches!(events.last(), Some(Event::Notice { text, .. }) if text.contains("Nothing to compact"))
    );
    assert_eq!(s.request_count(), 0);
}

#[tokio::test]
async fn files_changed_between_turns_are_reported_once() {
    let s = ScriptedServer::anthropic();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "by-tool.txt", "content": "written by rein\n"}),
    ))
    .push(Reply::text("wrote it"))
    .push(Reply::text("I see the change"))
    .push(Reply::text("nothing new"));
    let mut lib = Lib::start(&s, &[], |ws| {
        git(ws, &["init", "-q", "-b", "main"]);
        std::fs::write(ws.join("tracked.txt"), "one\n").unwrap();
        git(ws, &["add", "."]);
        git(ws, &["commit", "-q", "-m", "init"]);
    });
    lib.turn("write a file").await;
    // rein's own write is not someone else's change.
    for i in 0..2 {
        let r = reminder(&s.request(i));
        assert!(!r.contains("changed on disk"), "{r}");
        assert!(r.contains("Git branch: main."), "{r}");
    }

    // The person edits a file and adds one while the agent waits.
    std::fs::write(lib.ws.join("tracked.txt"), "one\ntwo\n").unwrap();
    std::fs::write(lib.ws.join("notes.md"), "new notes\n").unwrap();
    lib.turn("I changed something").await;
    let r = reminder(&s.request(2));
    assert!(r.contains("changed on disk"), "{r}");
    assert!(
        r.contains("- notes.md\n") && r.contains("- tracked.txt\n"),
        "{r}"
    );
    assert!(!r.contains("by-tool.txt"), "{r}");

    // Reported once only.
    lib.turn("anything else?").await;
    let r = reminder(&s.request(3));
    assert!(!r.contains("changed on disk"), "{r}");
}

#[tokio::test]
async fn an_interrupt_stops_running_subagents() {
    let s = ScriptedServer::openai();
    let gate = support::Gate::new();
    s.push(
        Reply::new()
            .call_with_id("task_1", "task", json!({"description": "Dig deep"}))
            .call_with_id("task_2", "task", json!({"description": "Dig deeper"})),
    )
    // Both subagents hang mid-answer.
    .push(Reply::text("still thinking").pause_after(1, &gate))
    .push(Reply::text("still thinking").pause_after(1, &gate))
    .push(Reply::text("fine, stopped"));
    let mut lib = Lib::start(&s, &[], |_| {});
    lib.handle
        .ops
        .send(Op::UserInput {
            text: "research".into(),
        })
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), gate.reached())
        .await
        .expect("a subagent request is in flight");
    // Both subagents are waiting for their answer.
    for _ in 0..500 {
        if s.request_count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s.request_count(), 3);
    let started = std::time::Instant::now();
    let events = lib
        .until(Op::Interrupt, |e| matches!(e, Event::TurnFinished { .. }))
        .await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            outcome: TurnOutcome::Interrupted
        })
    ));
    let stopped = events
        .iter()
        .filter(|e| matches!(e, Event::SubagentFinished { ok: false, .. }))
        .count();
    assert_eq!(stopped, 2, "{events:?}");
    gate.release();

    // The history stays valid: each task call got a result, and the next turn goes on.
    lib.turn("go on").await;
    let next = s.request(3);
    let results = tool_results(&next);
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["task_1", "task_2"]);
    assert!(
        results
            .iter()
            .all(|r| r.content == "Interrupted by the user.")
    );
}
