//! Defensive dispatch of one tool call: parse, allowlist, permission, approval, run.
//! Every failure becomes a short result the model can act on; nothing here panics.

use crate::llm::ToolCall;
use crate::policy::{Action, Policy, Verdict};
use crate::protocol::{ApprovalKind, ApprovalRequest, Decision, Event, ToolStatus};
use crate::tools::{Access, Registry, ToolCtx};
use futures::FutureExt;
use serde_json::Value;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;
use tokio::sync::oneshot;

/// The text a refused call gets when the user says no.
pub const DENIED: &str = "The user denied this tool call.";
/// The text an interrupted call gets.
pub const INTERRUPTED: &str = "Interrupted by the user.";

/// How questions are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approver {
    /// Ask the person through `Event::ApprovalRequested`.
    Interactive,
    /// Headless without `--yes`: refuse every ask.
    RefuseAll,
    /// Headless with `--yes`: approve every ask (denies stay denied).
    ApproveAll,
}

/// Pending approvals: request id -> the waiting call.
pub type PendingApprovals =
    Arc<Mutex<HashMap<String, oneshot::Sender<(Decision, Option<String>)>>>>;

/// What dispatch needs besides the call.
pub struct Dispatcher {
    /// All tools.
    pub registry: Registry,
    /// Names this loop may call (`None` = all).
    pub allow: Option<Vec<&'static str>>,
    /// Shared permission rules (session rules are added here).
    pub policy: Arc<RwLock<Policy>>,
    /// How asks are answered.
    pub approver: Approver,
    /// Where approvals wait.
    pub pending: PendingApprovals,
    /// When false, the sandbox cannot confine bash and every command must be asked.
    pub sandbox_enforced: bool,
    /// Where approval decisions are recorded (the session file).
    pub journal: Option<super::journal::Journal>,
}

/// The outcome of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult {
    /// How it ended.
    pub status: ToolStatus,
    /// What the model sees.
    pub output: String,
}

impl CallResult {
    fn new(status: ToolStatus, output: impl Into<String>) -> CallResult {
        CallResult {
            status,
            output: output.into(),
        }
    }

    fn error(output: impl AsRef<str>) -> CallResult {
        CallResult::new(ToolStatus::Error, format!("Error: {}", output.as_ref()))
    }
}

fn short(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > max || s.contains('\n') {
        let cut: String = first.chars().take(max).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

impl Dispatcher {
    fn allowed(&self, name: &str) -> bool {
        self.allow.as_ref().is_none_or(|a| a.contains(&name))
    }

    fn available(&self) -> String {
        self.registry
            .names()
            .into_iter()
            .filter(|n| self.allowed(n))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs one call end to end, emitting its events. `truncated` says the response was cut
    /// off by the output token limit (so broken arguments get a precise explanation).
    pub async fn dispatch(&self, call: &ToolCall, ctx: &ToolCtx, truncated: bool) -> CallResult {
        let started = Instant::now();
        let parsed = parse_arguments(&call.arguments);
        let summary = match (self.registry.get(&call.name), &parsed) {
            (Some(tool), Ok(args)) => {
                let tool = tool.clone();
                let args = args.clone();
                std::panic::catch_unwind(AssertUnwindSafe(move || tool.summary(&args)))
                    .unwrap_or_default()
            }
            _ => short(&call.arguments, 80),
        };
        ctx.events.send(Event::ToolCallStarted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            summary,
            args: parsed.clone().unwrap_or(Value::Null),
        });
        let result = self.check_and_run(call, parsed, ctx, truncated).await;
        ctx.events.send(Event::ToolCallFinished {
            call_id: call.id.clone(),
            status: result.status,
            output: result.output.clone(),
            elapsed_ms: started.elapsed().as_millis() as u64,
        });
        result
    }

    async fn check_and_run(
        &self,
        call: &ToolCall,
        parsed: Result<Value, String>,
        ctx: &ToolCtx,
        truncated: bool,
    ) -> CallResult {
        let name = call.name.as_str();
        let Some(tool) = self.registry.get(name).cloned() else {
            return CallResult::error(format!(
                "there is no tool named \"{name}\". Available tools: {}.",
                self.available()
            ));
        };
        if !self.allowed(name) {
            return CallResult::error(format!(
                "the tool {name} is not available here. Available tools: {}.",
                self.available()
            ));
        }
        let args = match parsed {
            Ok(v) => v,
            Err(_) if truncated => {
                return CallResult::error(format!(
                    "your reply was cut off by the output token limit while writing the \
                     arguments for {name}, so the call was not run. Make a smaller call (for \
                     example, write a large file in several parts)."
                ));
            }
            Err(e) => {
                return CallResult::error(format!(
                    "arguments for {name} were not valid JSON ({e}). Send the arguments as one \
                     JSON object matching the tool's schema."
                ));
            }
        };
        if ctx.cancel.is_cancelled() {
            return CallResult::new(ToolStatus::Interrupted, INTERRUPTED);
        }
        let access = {
            let tool = tool.clone();
            let args = args.clone();
            match std::panic::catch_unwind(AssertUnwindSafe(|| tool.access(&args, ctx))) {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => return CallResult::error(e.0),
                Err(_) => {
                    tracing::error!("tool {name} panicked while checking its arguments");
                    return CallResult::error(format!(
                        "the {name} tool failed unexpectedly while checking its arguments. Try \
                         a different approach."
                    ));
                }
            }
        };
        let verdict = self.verdict(name, &access);
        let mut note_for_model = None;
        match verdict.action {
            Action::Deny => {
                return CallResult::new(
                    ToolStatus::Blocked,
                    format!(
                        "Blocked by policy: {} ({}). Do not retry it; find another way or ask \
                         the user to run it themselves.",
                        verdict.part, verdict.reason
                    ),
                );
            }
            Action::Ask => match self.ask(call, &access, &verdict, ctx).await {
                AskOutcome::Approved(note) => note_for_model = note,
                AskOutcome::Refused(text) => return CallResult::new(ToolStatus::Denied, text),
                AskOutcome::Interrupted => {
                    return CallResult::new(ToolStatus::Interrupted, INTERRUPTED);
                }
            },
            Action::Allow => {}
        }

        let run = AssertUnwindSafe(tool.run(args, ctx)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            r = run => r,
            // Tools watch the token themselves (bash kills its process group); this arm only
            // ends tools that don't, a little later, so the kill can finish first.
            _ = async { ctx.cancel.cancelled().await; tokio::time::sleep(std::time::Duration::from_millis(150)).await } => {
                return CallResult::new(ToolStatus::Interrupted, INTERRUPTED);
            }
        };
        let mut result = match outcome {
            Ok(Ok(out)) => {
                if let Access::Write { path, old, new } = &access
                    && !out.is_error
                {
                    ctx.events.send(Event::FileChanged {
                        path: path.display.clone(),
                        old: old.clone(),
                        new: new.clone(),
                    });
                }
                let status = if out.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                CallResult::new(status, out.text)
            }
            Ok(Err(_)) if ctx.cancel.is_cancelled() => {
                CallResult::new(ToolStatus::Interrupted, INTERRUPTED)
            }
            Ok(Err(e)) => CallResult::error(e.0),
            Err(_) => {
                tracing::error!("tool {name} panicked");
                CallResult::error(format!(
                    "the {name} tool failed unexpectedly (internal error). Try a different \
                     approach."
                ))
            }
        };
        if let Some(note) = note_for_model {
            result.output = format!("{}\n\nNote from the user: {note}", result.output);
        }
        result
    }

    fn verdict(&self, tool: &str, access: &Access) -> Verdict {
        let policy = match self.policy.read() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        match access {
            Access::None => Verdict {
                action: Action::Allow,
                part: String::new(),
                reason: "no permission needed".into(),
            },
            Access::Bash { command } => {
                let mut v = policy.check_bash(command);
                if !self.sandbox_enforced && v.action == Action::Allow {
                    v.action = Action::Ask;
                    v.reason = "the sandbox is unavailable, so every command is asked".into();
                }
                v
            }
            Access::Read { path } => policy.check_path(tool, false, path),
            Access::Write { path, .. } => policy.check_path(tool, true, path),
        }
    }

    async fn ask(
        &self,
        call: &ToolCall,
        access: &Access,
        verdict: &Verdict,
        ctx: &ToolCtx,
    ) -> AskOutcome {
        match self.approver {
            Approver::ApproveAll => return AskOutcome::Approved(None),
            Approver::RefuseAll => {
                return AskOutcome::Refused(format!(
                    "{DENIED} It needs approval ({}: {}), but rein is running non-interactively \
                     (rein exec without --yes), so nobody can approve it. Use commands that are \
                     allowed without approval, or finish and tell the user what to run.",
                    verdict.part, verdict.reason
                ));
            }
            Approver::Interactive => {}
        }
        let kind = match access {
            Access::Bash { command } => ApprovalKind::Bash {
                command: command.clone(),
                cwd: ctx.workspace.clone(),
            },
            Access::Write { path, old, new } => ApprovalKind::Edit {
                path: path.display.clone(),
                old: old.clone(),
                new: new.clone(),
            },
            Access::Read { path } => ApprovalKind::Read {
                path: path.display.clone(),
            },
            Access::None => return AskOutcome::Approved(None),
        };
        let id = format!("approval-{}", call.id);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        ctx.events.send(Event::ApprovalRequested(ApprovalRequest {
            id: id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            kind,
            part: verdict.part.clone(),
            reason: verdict.reason.clone(),
            subagent: ctx.events.subagent().map(str::to_string),
        }));
        let answer = tokio::select! {
            a = rx => a.ok(),
            _ = ctx.cancel.cancelled() => None,
        };
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
        if let (Some(journal), Some((decision, note))) = (&self.journal, &answer) {
            let entry = crate::session::Entry::approval(call.id.clone(), *decision, note.clone());
            journal.record(match ctx.events.subagent() {
                Some(task) => crate::session::Entry::subagent(task, entry),
                None => entry,
            });
        }
        match answer {
            None => AskOutcome::Interrupted,
            Some((Decision::No, note)) => AskOutcome::Refused(match note {
                Some(n) if !n.trim().is_empty() => format!("{DENIED}\n\nNote from the user: {n}"),
                _ => DENIED.to_string(),
            }),
            Some((Decision::Yes, note)) => {
                AskOutcome::Approved(note.filter(|n| !n.trim().is_empty()))
            }
            Some((Decision::Always, note)) => {
                // Bash rules are keyed by "bash" whichever tool ran the command.
                let (tool, subject) = match access {
                    Access::Bash { command } => ("bash", command.clone()),
                    Access::Write { path, .. } | Access::Read { path } => {
                        (call.name.as_str(), path.path.display().to_string())
                    }
                    Access::None => (call.name.as_str(), String::new()),
                };
                if let Some(rule) = Policy::always_rule(tool, &subject)
                    && let Ok(mut policy) = self.policy.write()
                {
                    policy.add_session_rule(rule);
                }
                AskOutcome::Approved(note.filter(|n| !n.trim().is_empty()))
            }
        }
    }
}

enum AskOutcome {
    Approved(Option<String>),
    Refused(String),
    Interrupted,
}

/// Parses tool arguments: empty means `{}`; anything but an object is refused.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        // Some models double-encode: a JSON string holding the object.
        Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err("expected a JSON object, got a string".into()),
        },
        Ok(other) => Err(format!(
            "expected a JSON object, got {}",
            match other {
                Value::Array(_) => "an array",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        )),
        Err(e) => {
            let msg = e.to_string();
            Err(match msg.find(" at line ") {
                Some(i) => msg[..i].to_string(),
                None => msg,
            })
        }
    }
}

#[cfg(test)]
mod tests {
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
}

#[cfg(test)]
mod dispatch_tests {
    use super::*;
    use crate::config::SandboxMode;
    use crate::llm::ToolSpec;
    use crate::policy::{Rule, RuleSource};
    use crate::sandbox::Sandbox;
    use crate::tools::{EventSink, Tool, ToolError, ToolOutput, parse_args};
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
}
