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
    /// Records what calls change in the workspace (`None`: nothing is kept).
    pub checkpoints: Option<crate::checkpoint::Checkpoints>,
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

        let watch =
            super::rewind::before_tool(self.checkpoints.as_ref(), &access, self.journal.as_ref())
                .await;
        let run = AssertUnwindSafe(tool.run(args, ctx)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            r = run => Some(r),
            // Tools watch the token themselves (bash kills its process group); this arm only
            // ends tools that don't, a little later, so the kill can finish first.
            _ = async { ctx.cancel.cancelled().await; tokio::time::sleep(std::time::Duration::from_millis(150)).await } => None,
        };
        if let Some(w) = watch {
            w.finish(self.journal.as_ref(), &ctx.events, &call.id).await;
        }
        let Some(outcome) = outcome else {
            return CallResult::new(ToolStatus::Interrupted, INTERRUPTED);
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
            let entry =
                crate::session_store::Entry::approval(call.id.clone(), *decision, note.clone());
            journal.record(match ctx.events.subagent() {
                Some(task) => crate::session_store::Entry::subagent(task, entry),
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
mod tests;
