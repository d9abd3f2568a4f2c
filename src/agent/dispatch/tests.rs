//! Tests of the dispatcher: bad calls, permissions, approvals, and that what runs is what was
//! prepared and shown.

use super::*;
use crate::policy::{Rule, RuleSource};
use crate::protocol::EventSink;
use crate::tools::test_ctx::TestCtx;
use crate::tools::{RunFuture, Tool, ToolError, ToolSource, parse_args};
use serde::Deserialize;
use std::time::Duration;

#[test]
fn argument_parsing() {
    let ok = [
        ("", serde_json::json!({})),
        ("{\"a\":1}", serde_json::json!({"a": 1})),
        // Double-encoded: a JSON string holding the object.
        ("\"{\\\"a\\\":1}\"", serde_json::json!({"a": 1})),
    ];
    for (raw, want) in ok {
        assert_eq!(parse_arguments(raw).unwrap(), want, "{raw}");
    }
    let bad = [("[1]", "array"), ("{\"a\":", "EOF"), ("3", "a number")];
    for (raw, says) in bad {
        let err = parse_arguments(raw).unwrap_err();
        assert!(err.contains(says), "{raw}: {err}");
    }
}

/// Echoes `text` and `count`; panics when asked to (while preparing or running); asks to run
/// `command` as a bash access.
struct Fake;

#[derive(Deserialize)]
struct FakeArgs {
    text: String,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    write: Option<String>,
}

struct FakeCall {
    access: Access,
    text: String,
    count: u32,
}

impl Tool for Fake {
    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec {
            name: "fake".into(),
            description: "test".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let a: FakeArgs = parse_args("fake", args)?;
        if a.text == "panic in prepare" {
            panic!("tool bug");
        }
        Ok(Box::new(FakeCall {
            access: match (a.command, a.write) {
                (Some(command), _) => Access::Bash { command },
                (None, Some(path)) => Access::Write {
                    path: crate::sandbox::paths::resolve(&ctx.workspace, None, &path)
                        .map_err(ToolError)?,
                },
                (None, None) => Access::None,
            },
            text: a.text,
            count: a.count.unwrap_or(0),
        }))
    }
}

impl Prepared for FakeCall {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Other {
            name: "fake".into(),
            args: Value::String(self.text.clone()),
        }
    }

    fn run<'a>(self: Box<Self>, _ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move {
            if self.text == "panic" {
                panic!("tool bug");
            }
            Ok(ToolOutput::ok(format!("{}{}", self.text, self.count)))
        })
    }
}

/// A dispatcher over the fake tool and the real file and todo tools, in a temp workspace.
fn setup(approver: Approver) -> (Dispatcher, TestCtx) {
    let t = TestCtx::new();
    let rules = vec![
        Rule::new("bash", "danger*", Action::Deny, RuleSource::User).unwrap(),
        Rule::new("bash", "harmless*", Action::Allow, RuleSource::User).unwrap(),
    ];
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let d = Dispatcher {
        registry: Registry::from_tools(vec![
            Arc::new(Fake),
            Arc::new(crate::tools::bash::Bash),
            Arc::new(crate::tools::files::WriteFile),
            Arc::new(crate::tools::edit::StrReplace),
            Arc::new(crate::tools::todos::WriteTodos),
        ]),
        allow: Some(
            ["fake", "bash", "write_file", "str_replace"]
                .map(String::from)
                .to_vec(),
        ),
        policy: Arc::new(RwLock::new(Policy::new(rules, false))),
        approver,
        pending: Arc::default(),
        journal: Journal::ephemeral(EventSink::new(tx)),
        mode: crate::agent::mode::ModeSwitch::default(),
        checkpoints: None,
        extra: None,
        hooks: None,
    };
    (d, t)
}

fn call(name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: args.into(),
    }
}

/// Answers the first approval that is asked with `decision`, after running `meanwhile`.
async fn answer(pending: PendingApprovals, decision: Decision, meanwhile: impl FnOnce()) {
    let tx = loop {
        let tx = pending.lock().unwrap().drain().next();
        if let Some((_, tx)) = tx {
            break tx;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    meanwhile();
    tx.send((decision, None)).unwrap();
}

fn drain(t: &mut TestCtx) -> Vec<Event> {
    std::iter::from_fn(|| t.events.try_recv().ok()).collect()
}

/// The questions asked since the last drain.
fn questions(t: &mut TestCtx) -> Vec<ApprovalRequest> {
    drain(t)
        .into_iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested(req) => Some(req),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn bad_calls_become_readable_errors() {
    let (d, t) = setup(Approver::RefuseAll);
    // (tool, arguments, cut off by the token limit, what the model is told)
    let cases = [
        (
            "fake",
            "{\"text\": \"a\", ",
            false,
            "Error: arguments for fake were not valid JSON",
        ),
        ("nope", "{}", false, "no tool named \"nope\""),
        (
            "nope",
            "{}",
            false,
            "Available tools: fake, bash, write_file, str_replace.",
        ),
        (
            "write_todos",
            "{\"todos\": []}",
            false,
            "not available here",
        ),
        ("fake", "{\"text\": 5}", false, "`text`"),
        ("fake", "{}", false, "missing field `text`"),
        (
            "fake",
            "{\"text\": \"panic in prepare\"}",
            false,
            "failed unexpectedly while checking",
        ),
        (
            "fake",
            "{\"text\": \"panic\"}",
            false,
            "failed unexpectedly (internal error)",
        ),
        (
            "fake",
            "{\"text\": \"a",
            true,
            "cut off by the output token limit",
        ),
    ];
    for (tool, args, truncated, says) in cases {
        let r = d.dispatch(&call(tool, args), &t.ctx, truncated).await;
        assert_eq!(r.status, ToolStatus::Error, "{tool} {args}");
        assert!(r.output.contains(says), "{tool} {args}: {}", r.output);
    }
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"ok\", \"count\": 2}"),
            &t.ctx,
            false,
        )
        .await;
    assert_eq!((r.status, r.output.as_str()), (ToolStatus::Ok, "ok2"));
}

#[tokio::test]
async fn a_refused_call_is_still_shown_from_its_arguments() {
    let (d, mut t) = setup(Approver::RefuseAll);
    d.dispatch(
        &call(
            "str_replace",
            "{\"path\": \"gone.rs\", \"old_str\": \"a\", \"new_str\": \"b\"}",
        ),
        &t.ctx,
        false,
    )
    .await;
    d.dispatch(&call("nope", "{\"x\": 1}"), &t.ctx, false).await;
    let started: Vec<ToolDisplay> = drain(&mut t)
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { display, .. } => Some(display),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ToolDisplay::Edit {
                path: "gone.rs".into(),
                diff: None
            },
            ToolDisplay::Other {
                name: "nope".into(),
                args: serde_json::json!({"x": 1})
            }
        ]
    );
}

#[tokio::test]
async fn policy_decides_before_anything_runs() {
    // (approver, command, status, output starts with)
    let cases = [
        (
            Approver::ApproveAll,
            "danger now",
            ToolStatus::Blocked,
            "Blocked by policy: ",
        ),
        (Approver::ApproveAll, "other", ToolStatus::Ok, "x0"),
        (
            Approver::RefuseAll,
            "other",
            ToolStatus::Denied,
            NOBODY_TO_ASK,
        ),
        (Approver::RefuseAll, "harmless", ToolStatus::Ok, "x0"),
    ];
    for (approver, command, status, starts) in cases {
        let (d, t) = setup(approver);
        let args = format!("{{\"text\": \"x\", \"command\": \"{command}\"}}");
        let r = d.dispatch(&call("fake", &args), &t.ctx, false).await;
        assert_eq!(r.status, status, "{approver:?} {command}");
        assert!(
            r.output.starts_with(starts),
            "{approver:?} {command}: {}",
            r.output
        );
    }
    let (d, t) = setup(Approver::RefuseAll);
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"x\", \"command\": \"other\"}"),
            &t.ctx,
            false,
        )
        .await;
    assert!(r.output.contains("no one can approve it"), "{}", r.output);
}

#[tokio::test]
async fn interactive_answers_and_always() {
    let (d, mut t) = setup(Approver::Interactive);
    let make = call("fake", "{\"text\": \"x\", \"command\": \"make build\"}");
    let pending = d.pending.clone();
    let (r, _) = tokio::join!(d.dispatch(&make, &t.ctx, false), async {
        let tx = loop {
            if let Some((_, tx)) = pending.lock().unwrap().drain().next() {
                break tx;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        tx.send((Decision::No, Some("use cargo".into()))).unwrap();
    });
    assert_eq!(r.status, ToolStatus::Denied);
    assert_eq!(
        r.output,
        format!("{DENIED}\n\nNote from the user: use cargo")
    );
    let asked = questions(&mut t);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].part, "make build");
    assert_eq!(asked[0].cwd, t.ws);

    let (r, _) = tokio::join!(
        d.dispatch(&make, &t.ctx, false),
        answer(d.pending.clone(), Decision::Always, || {})
    );
    assert_eq!(r.status, ToolStatus::Ok);
    // Now allowed without asking.
    let r = tokio::time::timeout(Duration::from_secs(2), d.dispatch(&make, &t.ctx, false))
        .await
        .expect("no second question");
    assert_eq!(r.status, ToolStatus::Ok);

    // An interrupt while waiting ends the call as interrupted.
    let other = call("fake", "{\"text\": \"x\", \"command\": \"make other\"}");
    let cancel = t.ctx.cancel.clone();
    let (r, _) = tokio::join!(d.dispatch(&other, &t.ctx, false), async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    assert_eq!(
        (r.status, r.output.as_str()),
        (ToolStatus::Interrupted, INTERRUPTED)
    );
}

/// "Always" is chosen by what a call does, not by its tool's name: a write by a tool the
/// policy has never heard of offers (and adds) the edit rule for that file.
#[tokio::test]
async fn always_follows_the_access_not_the_tool_name() {
    let (d, mut t) = setup(Approver::Interactive);
    let write = call("fake", "{\"text\": \"x\", \"write\": \"notes.txt\"}");
    let (r, _) = tokio::join!(
        d.dispatch(&write, &t.ctx, false),
        answer(d.pending.clone(), Decision::Always, || {})
    );
    assert_eq!(r.status, ToolStatus::Ok);
    let asked = questions(&mut t);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].always.as_deref(), Some("edits of notes.txt"));
    let again = tokio::time::timeout(Duration::from_secs(2), d.dispatch(&write, &t.ctx, false))
        .await
        .expect("no second question");
    assert_eq!(again.status, ToolStatus::Ok);
}

/// The invariant through the dispatcher: the person is shown a diff; the file changes while
/// they decide; their yes writes nothing, the other change stays, the model is told why and
/// no `FileChanged` claims a write.
#[tokio::test]
async fn an_edit_approved_after_its_file_changed_writes_nothing() {
    let cases = [
        (
            "str_replace",
            "{\"path\": \"a.txt\", \"old_str\": \"two\", \"new_str\": \"2\"}",
        ),
        (
            "write_file",
            "{\"path\": \"a.txt\", \"content\": \"mine\\n\"}",
        ),
    ];
    for (tool, args) in cases {
        let (d, mut t) = setup(Approver::Interactive);
        t.write_seen("a.txt", "one\ntwo\n");
        let path = t.ws.join("a.txt");
        let edit = call(tool, args);
        let (r, _) = tokio::join!(
            d.dispatch(&edit, &t.ctx, false),
            answer(d.pending.clone(), Decision::Yes, || {
                std::fs::write(&path, "one\ntwo\nthree\n").unwrap()
            })
        );
        assert_eq!(r.status, ToolStatus::Error, "{tool}");
        assert!(
            r.output.starts_with(
                "Error: the file changed since you proposed this edit; read it again."
            ),
            "{tool}: {}",
            r.output
        );
        assert_eq!(t.read("a.txt"), "one\ntwo\nthree\n", "{tool}");
        let events = drain(&mut t);
        let shown = events.iter().find_map(|e| match e {
            Event::ApprovalRequested(req) => req.display.diff().cloned(),
            _ => None,
        });
        assert!(
            shown.is_some_and(|d| d.added == 1),
            "{tool}: the dialog showed the diff"
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::FileChanged { .. })),
            "{tool}: nothing was written, so /diff must show nothing"
        );
    }
}

#[tokio::test]
async fn file_changed_is_what_was_written_by_that_call() {
    let (d, mut t) = setup(Approver::ApproveAll);
    t.write_seen("a.txt", "one\ntwo\n");
    let edit = ToolCall {
        id: "e7".into(),
        name: "str_replace".into(),
        arguments: "{\"path\": \"a.txt\", \"old_str\": \"two\", \"new_str\": \"2\"}".into(),
    };
    let r = d.dispatch(&edit, &t.ctx, false).await;
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.output);
    let changed: Vec<Event> = drain(&mut t)
        .into_iter()
        .filter(|e| matches!(e, Event::FileChanged { .. }))
        .collect();
    assert_eq!(
        changed,
        [Event::FileChanged {
            call_id: "e7".into(),
            path: "a.txt".into(),
            old: Some("one\ntwo\n".into()),
            new: Some(t.read("a.txt")),
        }]
    );
    assert_eq!(t.read("a.txt"), "one\n2\n");
}

#[tokio::test]
async fn results_carry_exit_codes_and_todo_lists() {
    let (d, mut t) = setup(Approver::ApproveAll);
    let r = d
        .dispatch(&call("bash", "{\"command\": \"exit 3\"}"), &t.ctx, false)
        .await;
    assert_eq!((r.status, r.exit_code), (ToolStatus::Ok, Some(3)));
    let finished = drain(&mut t).into_iter().find_map(|e| match e {
        Event::ToolCallFinished { exit_code, .. } => Some(exit_code),
        _ => None,
    });
    assert_eq!(finished, Some(Some(3)));

    let mut d = d;
    d.allow = None;
    let list = "{\"todos\": [{\"content\": \"Run\", \"activeForm\": \"Running\", \"status\": \"pending\"}]}";
    let r = d.dispatch(&call("write_todos", list), &t.ctx, false).await;
    assert_eq!(r.todos.map(|l| l.len()), Some(1));
    assert!(
        !drain(&mut t)
            .iter()
            .any(|e| matches!(e, Event::TodosUpdated { .. })),
        "the tool does not touch the list; the agent applies it"
    );
}

/// Tools that come and go: offers `mcp__x__echo` while `on` is set.
struct Toggling {
    on: std::sync::atomic::AtomicBool,
}

/// An external tool that asks like an MCP tool and echoes its `text`.
struct External;

struct ExternalCall {
    access: Access,
    text: String,
}

impl Tool for External {
    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec {
            name: "mcp__x__echo".into(),
            description: "external".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn prepare(&self, args: Value, _ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        Ok(Box::new(ExternalCall {
            text: args["text"].as_str().unwrap_or("").to_string(),
            access: Access::Mcp {
                server: "x".into(),
                tool: "echo".into(),
                args,
            },
        }))
    }
}

impl Prepared for ExternalCall {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        let Access::Mcp { args, .. } = &self.access else {
            unreachable!("built with an MCP access")
        };
        ToolDisplay::Mcp {
            name: "mcp__x__echo".into(),
            server: "x".into(),
            tool: "echo".into(),
            args: args.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, _ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move { Ok(ToolOutput::ok(self.text)) })
    }
}

impl ToolSource for Toggling {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        if self.on.load(std::sync::atomic::Ordering::SeqCst) {
            vec![Arc::new(External)]
        } else {
            Vec::new()
        }
    }
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools().into_iter().find(|t| t.spec().name == name)
    }
}

#[tokio::test]
async fn extra_tools_are_offered_per_request_and_asked_about_without_touching_the_allowlist() {
    let (mut d, mut t) = setup(Approver::ApproveAll);
    let source = Arc::new(Toggling {
        on: std::sync::atomic::AtomicBool::new(false),
    });
    d.extra = Some(source.clone());
    let names = |d: &Dispatcher| d.specs().into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(names(&d), ["fake", "bash", "write_file", "str_replace"]);
    let echo = || call("mcp__x__echo", r#"{"text":"hi"}"#);
    let gone = d.dispatch(&echo(), &t.ctx, false).await;
    assert!(gone.output.contains("no tool named"), "{}", gone.output);

    source.on.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        names(&d),
        ["fake", "bash", "write_file", "str_replace", "mcp__x__echo"]
    );
    let ran = d.dispatch(&echo(), &t.ctx, false).await;
    assert_eq!((ran.status, ran.output.as_str()), (ToolStatus::Ok, "hi"));
    // The registry's allowlist still holds: write_todos is registered but not allowed here.
    let refused = d
        .dispatch(&call("write_todos", r#"{"todos":[]}"#), &t.ctx, false)
        .await;
    assert!(
        refused.output.contains("not available here") && refused.output.contains("mcp__x__echo"),
        "{}",
        refused.output
    );

    // Headless without --yes: an MCP tool asks, so it is refused, and nothing ran.
    d.approver = Approver::RefuseAll;
    let asked = d.dispatch(&echo(), &t.ctx, false).await;
    assert_eq!(asked.status, ToolStatus::Denied);
    // Interactive: the approval shows the server's tool and the arguments as sent.
    d.approver = Approver::Interactive;
    drain(&mut t);
    let asking = echo();
    let (refused, _) = tokio::join!(
        d.dispatch(&asking, &t.ctx, false),
        answer(d.pending.clone(), Decision::No, || {})
    );
    assert_eq!(refused.status, ToolStatus::Denied);
    let shown: Vec<ToolDisplay> = questions(&mut t).into_iter().map(|q| q.display).collect();
    assert_eq!(shown.len(), 1);
    assert_eq!(
        shown[0],
        ToolDisplay::Mcp {
            name: "mcp__x__echo".into(),
            server: "x".into(),
            tool: "echo".into(),
            args: serde_json::json!({"text": "hi"})
        }
    );
}

/// An MCP result goes through the same masking as every other tool: a secret value the server
/// sends back (or the model sends it) never reaches the model, the screen or the session file.
#[tokio::test]
async fn secret_values_in_mcp_arguments_and_results_are_masked() {
    let (mut d, mut t) = setup(Approver::ApproveAll);
    d.extra = Some(Arc::new(Toggling {
        on: std::sync::atomic::AtomicBool::new(true),
    }));
    t.ctx.secrets = Arc::new(crate::tools::secrets::Secrets::new(
        &Default::default(),
        Some("sk-live-0123456789"),
        [("GITHUB_TOKEN".to_string(), "ghp_abcdefghijkl".to_string())],
    ));
    let r = d
        .dispatch(
            &call(
                "mcp__x__echo",
                r#"{"text":"key sk-live-0123456789 token ghp_abcdefghijkl"}"#,
            ),
            &t.ctx,
            false,
        )
        .await;
    assert_eq!(r.status, ToolStatus::Ok);
    assert!(
        !r.output.contains("sk-live") && !r.output.contains("ghp_"),
        "{}",
        r.output
    );
    assert!(r.output.contains("[redacted: the API key]"), "{}", r.output);
    let shown = serde_json::to_string(&r.display).unwrap();
    assert!(
        !shown.contains("sk-live") && !shown.contains("ghp_"),
        "{shown}"
    );
    for e in drain(&mut t) {
        let text = format!("{e:?}");
        assert!(
            !text.contains("sk-live") && !text.contains("ghp_"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn the_wait_for_an_answer_is_not_the_calls_duration() {
    let (d, mut t) = setup(Approver::Interactive);
    let make = call("fake", "{\"text\": \"x\", \"command\": \"make build\"}");
    let wait = Duration::from_millis(400);
    for decision in [Decision::Yes, Decision::No] {
        let (r, _) = tokio::join!(
            d.dispatch(&make, &t.ctx, false),
            answer(d.pending.clone(), decision, || std::thread::sleep(wait))
        );
        assert!(
            r.elapsed_ms < 300,
            "{decision:?}: {} ms counts the wait",
            r.elapsed_ms
        );
        let reported = drain(&mut t).into_iter().find_map(|e| match e {
            Event::ToolCallFinished { elapsed_ms, .. } => Some(elapsed_ms),
            _ => None,
        });
        assert_eq!(reported, Some(r.elapsed_ms));
    }
}
