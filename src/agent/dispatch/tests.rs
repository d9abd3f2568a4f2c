//! Tests of the dispatcher: bad calls, permissions, approvals.

use super::*;

#[test]
fn argument_parsing() {
    assert_eq!(parse_arguments("").unwrap(), serde_json::json!({}));
    assert_eq!(
        parse_arguments("{\"a\":1}").unwrap(),
        serde_json::json!({"a": 1})
    );
    assert_eq!(
        parse_arguments("\"{\\\"a\\\":1}\"").unwrap(),
        serde_json::json!({"a": 1})
    );
    assert!(parse_arguments("[1]").unwrap_err().contains("array"));
    assert!(parse_arguments("{\"a\":").unwrap_err().contains("EOF"));
}

use crate::config::SandboxMode;
use crate::llm::ToolSpec;
use crate::policy::{Rule, RuleSource};
use crate::protocol::EventSink;
use crate::sandbox::Sandbox;
use crate::tools::{Tool, ToolError, ToolOutput, parse_args};
use futures::future::BoxFuture;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// Echoes `text`; panics when asked to; "runs" `command` as a bash access.
struct Fake;

#[derive(Deserialize)]
struct FakeArgs {
    text: String,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    command: Option<String>,
}

impl Tool for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "fake".into(),
            description: "test".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn access(&self, args: &Value, _ctx: &ToolCtx) -> Result<Access, ToolError> {
        let a: FakeArgs = parse_args("fake", args)?;
        Ok(match a.command {
            Some(command) => Access::Bash { command },
            None => Access::None,
        })
    }
    fn summary(&self, _args: &Value) -> String {
        "fake".into()
    }
    fn run<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: FakeArgs = parse_args("fake", &args)?;
            if a.text == "panic" {
                panic!("tool bug");
            }
            Ok(ToolOutput::ok(format!(
                "{}{}",
                a.text,
                a.count.unwrap_or(0)
            )))
        })
    }
}

fn setup(
    approver: Approver,
) -> (
    Dispatcher,
    ToolCtx,
    tokio::sync::mpsc::UnboundedReceiver<Event>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let dir = std::env::temp_dir();
    let rules = vec![
        Rule::new("bash", "danger*", Action::Deny, RuleSource::User).unwrap(),
        Rule::new("bash", "harmless*", Action::Allow, RuleSource::User).unwrap(),
    ];
    let d = Dispatcher {
        registry: Registry::from_tools(vec![
            Arc::new(Fake),
            Arc::new(crate::tools::todos::WriteTodos),
        ]),
        allow: Some(vec!["fake"]),
        policy: Arc::new(RwLock::new(Policy::new(rules, false))),
        approver,
        pending: Arc::default(),
        sandbox_enforced: true,
        journal: None,
        checkpoints: None,
    };
    let ctx = ToolCtx {
        workspace: dir.clone(),
        home: None,
        temp_dir: dir.clone(),
        call_id: "c1".into(),
        events: EventSink::new(tx),
        cancel: CancellationToken::new(),
        todos: Arc::default(),
        sandbox: Arc::new(Sandbox::new(SandboxMode::Off, true, dir.clone(), dir)),
        bash_timeout_secs: 5,
        env_remove: Vec::new(),
        subagents: None,
        skills: Default::default(),
    };
    (d, ctx, rx)
}

fn call(name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[tokio::test]
async fn bad_calls_become_readable_errors() {
    let (d, ctx, _rx) = setup(Approver::RefuseAll);
    let r = d
        .dispatch(&call("fake", "{\"text\": \"a\", "), &ctx, false)
        .await;
    assert_eq!(r.status, ToolStatus::Error);
    assert!(
        r.output
            .starts_with("Error: arguments for fake were not valid JSON"),
        "{}",
        r.output
    );

    let r = d.dispatch(&call("nope", "{}"), &ctx, false).await;
    assert!(
        r.output.contains("no tool named \"nope\"") && r.output.contains("fake"),
        "{}",
        r.output
    );

    let r = d
        .dispatch(&call("write_todos", "{\"todos\": []}"), &ctx, false)
        .await;
    assert!(r.output.contains("not available here"), "{}", r.output);

    let r = d
        .dispatch(&call("fake", "{\"text\": 5}"), &ctx, false)
        .await;
    assert!(r.output.contains("`text`"), "{}", r.output);
    let r = d.dispatch(&call("fake", "{}"), &ctx, false).await;
    assert!(r.output.contains("text"), "{}", r.output);

    let r = d
        .dispatch(&call("fake", "{\"text\": \"panic\"}"), &ctx, false)
        .await;
    assert_eq!(r.status, ToolStatus::Error);
    assert!(r.output.contains("failed unexpectedly"), "{}", r.output);

    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"ok\", \"count\": 2}"),
            &ctx,
            false,
        )
        .await;
    assert_eq!((r.status, r.output.as_str()), (ToolStatus::Ok, "ok2"));

    let r = d
        .dispatch(&call("fake", "{\"text\": \"a"), &ctx, true)
        .await;
    assert!(
        r.output.contains("cut off by the output token limit"),
        "{}",
        r.output
    );
}

#[tokio::test]
async fn deny_ask_and_allow() {
    let (d, ctx, _rx) = setup(Approver::ApproveAll);
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"x\", \"command\": \"danger now\"}"),
            &ctx,
            false,
        )
        .await;
    assert_eq!(r.status, ToolStatus::Blocked);
    assert!(r.output.starts_with("Blocked by policy: "), "{}", r.output);
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"x\", \"command\": \"other\"}"),
            &ctx,
            false,
        )
        .await;
    assert_eq!(r.status, ToolStatus::Ok);

    let (d, ctx, _rx) = setup(Approver::RefuseAll);
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"x\", \"command\": \"other\"}"),
            &ctx,
            false,
        )
        .await;
    assert_eq!(r.status, ToolStatus::Denied);
    assert!(
        r.output.starts_with(DENIED) && r.output.contains("non-interactively"),
        "{}",
        r.output
    );
    let r = d
        .dispatch(
            &call("fake", "{\"text\": \"x\", \"command\": \"harmless\"}"),
            &ctx,
            false,
        )
        .await;
    assert_eq!(r.status, ToolStatus::Ok);
}

#[tokio::test]
async fn interactive_answers_and_always() {
    let (d, ctx, mut rx) = setup(Approver::Interactive);
    let pending = d.pending.clone();
    let answer = |decision: Decision, note: Option<&str>| {
        let pending = pending.clone();
        let note = note.map(str::to_string);
        async move {
            // Wait for the request to be registered, then answer it.
            loop {
                let tx = pending.lock().unwrap().drain().next();
                if let Some((_, tx)) = tx {
                    tx.send((decision, note)).unwrap();
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
    };
    let make = call("fake", "{\"text\": \"x\", \"command\": \"make build\"}");
    let (r, _) = tokio::join!(
        d.dispatch(&make, &ctx, false),
        answer(Decision::No, Some("use cargo"))
    );
    assert_eq!(r.status, ToolStatus::Denied);
    assert_eq!(
        r.output,
        format!("{DENIED}\n\nNote from the user: use cargo")
    );
    let mut saw_request = false;
    while let Ok(ev) = rx.try_recv() {
        if let Event::ApprovalRequested(req) = ev {
            saw_request = true;
            assert!(
                matches!(req.kind, ApprovalKind::Bash { ref command, .. } if command == "make build")
            );
        }
    }
    assert!(saw_request);

    let (r, _) = tokio::join!(
        d.dispatch(&make, &ctx, false),
        answer(Decision::Always, None)
    );
    assert_eq!(r.status, ToolStatus::Ok);
    // Now allowed without asking.
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        d.dispatch(&make, &ctx, false),
    )
    .await
    .expect("no second question");
    assert_eq!(r.status, ToolStatus::Ok);

    // An interrupt while waiting ends the call as interrupted.
    let other = call("fake", "{\"text\": \"x\", \"command\": \"make other\"}");
    let cancel = ctx.cancel.clone();
    let (r, _) = tokio::join!(d.dispatch(&other, &ctx, false), async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cancel.cancel();
    });
    assert_eq!(
        (r.status, r.output.as_str()),
        (ToolStatus::Interrupted, INTERRUPTED)
    );
}
