//! Defensive dispatch of one tool call: parse once, prepare, rate, ask, run what was prepared.
//! Every failure becomes a short result the model can act on; nothing here panics.

use super::journal::Journal;
use super::mode::{ModeSwitch, plan_refusal};
use crate::llm::ToolCall;
use crate::policy::{Action, AlwaysRule, Policy, Verdict};
use crate::protocol::{
    ApprovalMode, ApprovalRequest, Decision, Event, Todo, ToolDisplay, ToolStatus,
};
use crate::session_store::Entry;
use crate::tools::{
    Access, Effect, Prepared, Registry, Tool, ToolCtx, ToolOutput, ToolSource, parse_arguments,
};
use futures::FutureExt;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;
use tokio::sync::oneshot;

/// The text a refused call gets when the user says no.
pub const DENIED: &str = "The user denied this tool call.";
/// How a call refused headless (no `--yes`: nobody to ask) begins.
pub const NOBODY_TO_ASK: &str = "Refused without asking:";
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
    pub allow: Option<Vec<String>>,
    /// Shared permission rules (session rules are added here).
    pub policy: Arc<RwLock<Policy>>,
    /// How asks are answered.
    pub approver: Approver,
    /// Where approvals wait.
    pub pending: PendingApprovals,
    /// Where approval decisions are recorded (the session file).
    pub journal: Journal,
    /// The approval mode in force (plan refuses, accept-edits allows edits).
    pub mode: ModeSwitch,
    /// Records what calls change in the workspace (`None`: nothing is kept).
    pub checkpoints: Option<crate::checkpoint::Checkpoints>,
    /// Tools that come and go (MCP servers), offered besides the allowed registry tools.
    pub extra: Option<Arc<dyn ToolSource>>,
    /// The person's and the trusted project's hooks (`PreToolUse`, `PostToolUse`, and
    /// `Notification` when a question waits).
    pub hooks: Option<Arc<crate::hooks::Hooks>>,
}

/// A call checked and fixed by its tool, or the result that refuses it (unknown tool, bad
/// arguments).
pub struct Preparation {
    call: Result<Box<dyn Prepared>, Ended>,
    /// The parsed arguments, kept for the hooks (`Null` when there are none).
    args: Value,
}

impl Preparation {
    /// Whether the call may run together with neighbouring calls that may too.
    pub fn parallel(&self) -> bool {
        self.call.as_ref().is_ok_and(|p| p.parallel())
    }
}

/// Who asked for a call: the model, or the person typing `!cmd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Model,
    Person,
}

/// File contents above this size (old and new together) are not kept in the session file for
/// `/diff`; the change is recorded without them.
pub const FILE_CHANGE_KEEP_BYTES: usize = 1 << 20;

/// The outcome of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult {
    /// How it ended.
    pub status: ToolStatus,
    /// What the model sees.
    pub output: String,
    /// How the call was shown.
    pub display: ToolDisplay,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
    /// A command's exit code, when one ran.
    pub exit_code: Option<i32>,
    /// The new todo list, when the call replaced it (the agent applies it).
    pub todos: Option<Vec<Todo>>,
    /// Whether the call changed a file in the workspace, as the checkpoints saw it (a file
    /// tool's write, a command's redirect or `sed -i`; not the caches running code leaves).
    pub changed_files: bool,
}

/// How a call ended, before it is stamped with its display and duration.
struct Ended {
    status: ToolStatus,
    output: String,
    effect: Effect,
    /// The checkpoints saw it change a file.
    changed_files: bool,
    /// Time spent waiting for the person's answer: not part of the call's duration.
    waited: std::time::Duration,
}

impl Ended {
    fn new(status: ToolStatus, output: impl Into<String>) -> Ended {
        Ended {
            status,
            output: output.into(),
            effect: Effect::None,
            changed_files: false,
            waited: std::time::Duration::ZERO,
        }
    }

    fn after_wait(mut self, waited: std::time::Duration) -> Ended {
        self.waited = waited;
        self
    }

    fn error(output: impl AsRef<str>) -> Ended {
        Ended::new(ToolStatus::Error, format!("Error: {}", output.as_ref()))
    }

    fn interrupted() -> Ended {
        Ended::new(ToolStatus::Interrupted, INTERRUPTED)
    }

    fn ran(out: ToolOutput) -> Ended {
        let status = if matches!(out.effect, Effect::Interrupted) {
            ToolStatus::Interrupted
        } else if out.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        Ended {
            status,
            output: out.text,
            effect: out.effect,
            changed_files: false,
            waited: std::time::Duration::ZERO,
        }
    }
}

impl CallResult {
    /// A call that never ran because the turn was interrupted first.
    pub fn interrupted(display: ToolDisplay) -> CallResult {
        CallResult {
            status: ToolStatus::Interrupted,
            output: INTERRUPTED.into(),
            display,
            elapsed_ms: 0,
            exit_code: None,
            todos: None,
            changed_files: false,
        }
    }
}

impl Dispatcher {
    fn allowed(&self, name: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == name))
    }

    fn available(&self) -> String {
        let mut names: Vec<String> = self
            .registry
            .names()
            .into_iter()
            .filter(|n| self.allowed(n))
            .map(String::from)
            .collect();
        if let Some(extra) = &self.extra {
            names.extend(extra.tools().iter().map(|t| t.spec().name));
        }
        names.join(", ")
    }

    /// The specs offered to the model now: the allowed registry tools, then the extra ones
    /// (asked again before every request, so servers that start or change are seen).
    pub fn specs(&self) -> Vec<crate::llm::ToolSpec> {
        let mut specs = self.registry.specs(self.allow.as_deref());
        if let Some(extra) = &self.extra {
            specs.extend(extra.tools().iter().map(|t| t.spec()));
        }
        specs
    }

    /// The tool called `name`: a registry tool (allowed here or not), else an extra one.
    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.registry
            .get(name)
            .cloned()
            .or_else(|| self.extra.as_ref()?.get(name))
    }

    /// Runs one call end to end, emitting its events. `truncated` says the response was cut
    /// off by the output token limit (so broken arguments get a precise explanation).
    pub async fn dispatch(&self, call: &ToolCall, ctx: &ToolCtx, truncated: bool) -> CallResult {
        self.dispatch_from(call, ctx, truncated, Origin::Model)
            .await
    }

    /// Runs a call the person asked for themselves (`!cmd`): deny rules and the sandbox hold,
    /// what would be asked runs (typing it was the answer), the mode does not apply.
    pub async fn dispatch_for_person(&self, call: &ToolCall, ctx: &ToolCtx) -> CallResult {
        self.dispatch_from(call, ctx, false, Origin::Person).await
    }

    async fn dispatch_from(
        &self,
        call: &ToolCall,
        ctx: &ToolCtx,
        truncated: bool,
        origin: Origin,
    ) -> CallResult {
        let started = Instant::now();
        let prepared = self.prepare_call(call, ctx, truncated);
        self.run_from(call, prepared, ctx, origin, started).await
    }

    /// Prepares a call without running it (`run_prepared` runs it): the turn asks the
    /// preparation whether it may run alongside its neighbours.
    pub fn prepare_call(&self, call: &ToolCall, ctx: &ToolCtx, truncated: bool) -> Preparation {
        let mut args = Value::Null;
        let call = self.prepare(call, ctx, truncated, &mut args);
        Preparation { call, args }
    }

    /// Runs a call the model made, prepared by [`Dispatcher::prepare_call`], emitting its
    /// events.
    pub async fn run_prepared(
        &self,
        call: &ToolCall,
        prepared: Preparation,
        ctx: &ToolCtx,
    ) -> CallResult {
        self.run_from(call, prepared, ctx, Origin::Model, Instant::now())
            .await
    }

    async fn run_from(
        &self,
        call: &ToolCall,
        prepared: Preparation,
        ctx: &ToolCtx,
        origin: Origin,
        started: Instant,
    ) -> CallResult {
        let Preparation {
            call: prepared,
            args,
        } = prepared;
        let display = ctx.secrets.mask_display(match &prepared {
            Ok(p) => p.display(),
            Err(_) => self.registry.describe(&call.name, &call.arguments),
        });
        ctx.events.send(Event::ToolCallStarted {
            call_id: call.id.clone(),
            display: display.clone(),
        });
        let mut ended = match prepared {
            Ok(p) => {
                self.check_and_run(call, p, args, &display, ctx, origin)
                    .await
            }
            Err(ended) => ended,
        };
        // A secret that reached the result goes no further: not to the model, the session
        // file or the screen.
        if let Cow::Owned(masked) = ctx.secrets.mask(&ended.output) {
            ended.output = masked;
        }
        let exit_code = match ended.effect {
            Effect::Exited { code } => Some(code),
            _ => None,
        };
        // Only the run is timed; the wait for an answer shows as "waiting for you".
        let elapsed_ms = started.elapsed().saturating_sub(ended.waited).as_millis() as u64;
        ctx.events.send(Event::ToolCallFinished {
            call_id: call.id.clone(),
            status: ended.status,
            output: ended.output.clone(),
            elapsed_ms,
            exit_code,
        });
        CallResult {
            status: ended.status,
            output: ended.output,
            display,
            elapsed_ms,
            exit_code,
            todos: match ended.effect {
                Effect::TodosReplaced(list) => Some(list),
                _ => None,
            },
            changed_files: ended.changed_files,
        }
    }

    /// Parses the arguments once and lets the tool prepare the call (and type them); the
    /// hooks, when there are any, get a copy in `kept`.
    fn prepare(
        &self,
        call: &ToolCall,
        ctx: &ToolCtx,
        truncated: bool,
        kept: &mut Value,
    ) -> Result<Box<dyn Prepared>, Ended> {
        let name = call.name.as_str();
        let Some(tool) = self.tool(name) else {
            return Err(Ended::error(format!(
                "there is no tool named \"{name}\". Available tools: {}.",
                self.available()
            )));
        };
        // The allowlist is about registry tools; extra tools are already per loop.
        if self.registry.get(name).is_some() && !self.allowed(name) {
            return Err(Ended::error(format!(
                "the tool {name} is not available here. Available tools: {}.",
                self.available()
            )));
        }
        let args = match parse_arguments(&call.arguments) {
            Ok(v) => v,
            Err(_) if truncated => {
                return Err(Ended::error(format!(
                    "your reply was cut off by the output token limit while writing the \
                     arguments for {name}, so the call was not run. Make a smaller call (for \
                     example, write a large file in several parts)."
                )));
            }
            Err(e) => {
                return Err(Ended::error(format!(
                    "arguments for {name} were not valid JSON ({e}). Send the arguments as one \
                     JSON object matching the tool's schema."
                )));
            }
        };
        if self.hooks.is_some() {
            *kept = args.clone();
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| tool.prepare(args, ctx))) {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(e)) => Err(Ended::error(e.0)),
            Err(_) => {
                tracing::error!("tool {name} panicked while preparing a call");
                Err(Ended::error(format!(
                    "the {name} tool failed unexpectedly while checking its arguments. Try a \
                     different approach."
                )))
            }
        }
    }

    /// Rates the prepared call, asks when the policy says so, and runs it.
    async fn check_and_run(
        &self,
        call: &ToolCall,
        prepared: Box<dyn Prepared>,
        args: Value,
        display: &ToolDisplay,
        ctx: &ToolCtx,
        origin: Origin,
    ) -> Ended {
        let name = call.name.as_str();
        if ctx.cancel.is_cancelled() {
            return Ended::interrupted();
        }
        let mut verdict = self.verdict(name, prepared.access());
        match origin {
            Origin::Model => {
                if let Some(refusal) = self.refused_by_mode(prepared.access(), &verdict) {
                    return Ended::new(ToolStatus::Denied, refusal);
                }
            }
            Origin::Person if verdict.action == Action::Ask => verdict.action = Action::Allow,
            Origin::Person => {}
        }
        let input = self
            .hooks
            .as_ref()
            .map(|_| crate::hooks::tool_input(args, prepared.access()));
        let mut hook_context = None;
        if origin == Origin::Model
            && verdict.action != Action::Deny
            && let (Some(hooks), Some(input)) = (&self.hooks, &input)
        {
            match hook_points::pre_tool_use(hooks, name, input.clone(), &mut verdict, ctx).await {
                Ok(context) => hook_context = context,
                Err(blocked) => return blocked,
            }
        }
        let question = Question {
            call,
            access: prepared.access(),
            display,
            verdict: &verdict,
        };
        let (note_for_model, waited) = match self.settle(question, ctx, origin).await {
            Ok(answer) => answer,
            Err(refused) => return refused,
        };
        let mut ended = self.run_watched(call, prepared, ctx).await;
        ended.waited = waited;
        if let Some(note) = note_for_model {
            ended.output = format!("{}\n\nNote from the user: {note}", ended.output);
        }
        if let Some(context) = hook_context {
            ended.output = format!("{}\n\n{context}", ended.output);
        }
        if origin == Origin::Model
            && ended.status != ToolStatus::Interrupted
            && let (Some(hooks), Some(input)) = (&self.hooks, input)
        {
            hook_points::post_tool_use(hooks, name, input, &mut ended, ctx).await;
        }
        ended
    }

    /// What the verdict leaves to do: refuse (`Err`), or run, after asking when it asks (with
    /// the person's note for the model and the time the question waited).
    async fn settle(
        &self,
        q: Question<'_>,
        ctx: &ToolCtx,
        origin: Origin,
    ) -> Result<(Option<String>, std::time::Duration), Ended> {
        let verdict = q.verdict;
        match verdict.action {
            Action::Deny if origin == Origin::Person => {
                Err(Ended::new(ToolStatus::Blocked, person_blocked(verdict)))
            }
            Action::Deny => Err(Ended::new(
                ToolStatus::Blocked,
                format!(
                    "Blocked by policy: {} ({}). Do not retry it; find another way or ask the \
                     user to run it themselves.",
                    verdict.part, verdict.reason
                ),
            )),
            Action::Ask => {
                let asked = Instant::now();
                let outcome = self.ask(q, ctx).await;
                let waited = asked.elapsed();
                match outcome {
                    AskOutcome::Approved(note) => Ok((note, waited)),
                    AskOutcome::Refused(text) => {
                        Err(Ended::new(ToolStatus::Denied, text).after_wait(waited))
                    }
                    AskOutcome::Interrupted => Err(Ended::interrupted().after_wait(waited)),
                }
            }
            Action::Allow => Ok((None, std::time::Duration::ZERO)),
        }
    }

    /// Runs a prepared call under the checkpoints' watch: what it changed in the workspace is
    /// recorded (a file tool's write also for `/diff`).
    async fn run_watched(
        &self,
        call: &ToolCall,
        prepared: Box<dyn Prepared>,
        ctx: &ToolCtx,
    ) -> Ended {
        let watch =
            super::rewind::before_tool(self.checkpoints.as_ref(), prepared.access(), &self.journal)
                .await;
        let mut ended = self.run(&call.name, prepared, ctx).await;
        // Whatever the outcome: an interrupted command may have written.
        if let Some(w) = watch {
            ended.changed_files = w.finish(&self.journal, ctx, &call.id).await;
        }
        if let Effect::FileWritten(w) = &ended.effect {
            ended.changed_files = true;
            self.record_file_change(&w.path, w.old.as_deref(), &w.new, ctx);
            ctx.events.send(Event::FileChanged {
                call_id: call.id.clone(),
                path: w.path.clone(),
                old: w.old.clone(),
                new: Some(w.new.clone()),
            });
        }
        ended
    }

    /// Runs a prepared call, turning panics and interrupts into results.
    async fn run(&self, name: &str, prepared: Box<dyn Prepared>, ctx: &ToolCtx) -> Ended {
        let stops_itself = prepared.stops_itself();
        let run = AssertUnwindSafe(prepared.run(ctx)).catch_unwind();
        let outcome = tokio::select! {
            biased;
            r = run => r,
            // Tools watch the token themselves (bash kills its process group); this arm only
            // ends tools that don't, a little later, so the kill can finish first. A tool that
            // stops itself (bounded) is awaited: what it ran until then is its result.
            _ = async { ctx.cancel.cancelled().await; tokio::time::sleep(std::time::Duration::from_millis(150)).await }, if !stops_itself => {
                return Ended::interrupted();
            }
        };
        match outcome {
            Ok(Ok(out)) => Ended::ran(out),
            Ok(Err(_)) if ctx.cancel.is_cancelled() => Ended::interrupted(),
            Ok(Err(e)) => Ended::error(e.0),
            Err(_) => {
                tracing::error!("tool {name} panicked");
                Ended::error(format!(
                    "the {name} tool failed unexpectedly (internal error). Try a different \
                     approach."
                ))
            }
        }
    }

    /// Keeps a written file's contents in the session file, so a resumed `/diff` covers it.
    fn record_file_change(&self, path: &str, old: Option<&str>, new: &str, ctx: &ToolCtx) {
        let size = old.map_or(0, str::len) + new.len();
        // A file holding a secret value is recorded without its contents (no key in a session).
        let secret = [old.unwrap_or(""), new]
            .iter()
            .any(|t| ctx.secrets.found_in(t.as_bytes()));
        let entry = if size <= FILE_CHANGE_KEEP_BYTES && !secret {
            Entry::file_change(path, old.map(str::to_string), Some(new.to_string()))
        } else {
            Entry::file_change(path, None, None)
        };
        self.journal.record(match ctx.events.subagent() {
            Some(task) => Entry::subagent(task, entry),
            None => entry,
        });
    }

    /// Plan mode's refusal, when it applies: edits, and commands the rules don't allow. A deny
    /// stays a deny (it says so itself).
    fn refused_by_mode(&self, access: &Access, verdict: &Verdict) -> Option<String> {
        if self.mode.get() != ApprovalMode::Plan || verdict.action == Action::Deny {
            return None;
        }
        match access {
            Access::Write { path } => Some(plan_refusal(&format!("editing {}", path.display))),
            Access::Bash { .. } if verdict.action != Action::Allow => {
                Some(plan_refusal(&format!("`{}`", verdict.part)))
            }
            // An MCP tool may write anywhere its server can: only a rule that allows it runs.
            Access::Mcp { server, tool, .. } if verdict.action != Action::Allow => Some(
                plan_refusal(&format!("the MCP tool `{tool}` of `{server}`")),
            ),
            _ => None,
        }
    }

    fn verdict(&self, tool: &str, access: &Access) -> Verdict {
        let policy = crate::sync::read(&self.policy);
        match access {
            Access::None => Verdict {
                action: Action::Allow,
                part: String::new(),
                reason: "no permission needed".into(),
            },
            Access::Bash { command } => policy.check_bash(command),
            Access::Read { path } => policy.check_path(tool, false, path),
            Access::Write { path } => {
                let accept = self.mode.get() == ApprovalMode::AcceptEdits;
                policy.check_path_with(tool, true, path, accept)
            }
            Access::Mcp { args, .. } => policy.check_tool(tool, args),
        }
    }

    async fn ask(&self, q: Question<'_>, ctx: &ToolCtx) -> AskOutcome {
        match self.approver {
            Approver::ApproveAll => return AskOutcome::Approved(None),
            Approver::RefuseAll => {
                // Nobody was asked, so it says so (not "the user denied").
                return AskOutcome::Refused(format!(
                    "{NOBODY_TO_ASK} it needs approval ({}: {}), but no one can approve it here \
                     (rein exec runs without --yes), so it was not run. Use commands that are \
                     allowed without approval, or finish and tell the user what to run.",
                    q.verdict.part, q.verdict.reason
                ));
            }
            Approver::Interactive => {}
        }
        if matches!(q.access, Access::None) {
            return AskOutcome::Approved(None);
        }
        let id = format!("approval-{}", q.call.id);
        let always = self
            .always(&q.call.name, q.access)
            .map(|a| always_shown(q.access, a.shown));
        if let Some(hooks) = &self.hooks {
            hooks.notify(
                format!("rein needs your permission to use {}", q.call.name),
                &ctx.events,
            );
        }
        let (tx, mut rx) = oneshot::channel();
        crate::sync::lock(&self.pending).insert(id.clone(), tx);
        // Made before the question is shown, so a mode switched at once is not missed.
        let mut changed = Box::pin(self.mode.changed());
        ctx.events.send(Event::ApprovalRequested(ApprovalRequest {
            id: id.clone(),
            call_id: q.call.id.clone(),
            display: q.display.clone(),
            cwd: ctx.workspace.clone(),
            part: q.verdict.part.clone(),
            reason: q.verdict.reason.clone(),
            subagent: ctx.events.subagent().map(str::to_string),
            always: always.as_ref().ok().cloned(),
            no_always: always.err(),
        }));
        let answer = loop {
            tokio::select! {
                a = &mut rx => break a.ok(),
                _ = ctx.cancel.cancelled() => break None,
                _ = &mut changed => {
                    changed.set(self.mode.changed());
                    if let Some(outcome) = self.rated_again(&q) {
                        crate::sync::lock(&self.pending).remove(&id);
                        ctx.events.send(Event::ApprovalWithdrawn { id });
                        return outcome;
                    }
                }
            }
        };
        crate::sync::lock(&self.pending).remove(&id);
        if let Some((decision, note)) = &answer {
            let entry = Entry::approval(q.call.id.clone(), *decision, note.clone());
            self.journal.record(match ctx.events.subagent() {
                Some(task) => Entry::subagent(task, entry),
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
                self.remember(&q.call.name, q.access, ctx);
                AskOutcome::Approved(note.filter(|n| !n.trim().is_empty()))
            }
        }
    }

    /// A waiting question rated again after the mode changed: the outcome when it no longer
    /// needs the person (plan mode refuses it, accept edits allows an edit), else `None`.
    fn rated_again(&self, q: &Question<'_>) -> Option<AskOutcome> {
        let verdict = self.verdict(&q.call.name, q.access);
        if let Some(refusal) = self.refused_by_mode(q.access, &verdict) {
            return Some(AskOutcome::Refused(refusal));
        }
        (verdict.action == Action::Allow).then_some(AskOutcome::Approved(None))
    }

    /// Adds the session rule behind "yes, and don't ask again" and says which it is.
    fn remember(&self, tool: &str, access: &Access, ctx: &ToolCtx) {
        let Ok(always) = self.always(tool, access) else {
            return;
        };
        let text = always
            .rules()
            .map(|r| format!("{}({})", r.tool, r.pattern))
            .collect::<Vec<_>>()
            .join(", ");
        let mut policy = crate::sync::write(&self.policy);
        for rule in always.rules() {
            policy.add_session_rule(rule.clone());
        }
        drop(policy);
        ctx.events.send(Event::notice(format!(
            "Added for this session: allow {text}, i.e. {} (/permissions lists the rules \
                 and can drop it).",
            always_shown(access, always.shown)
        )));
    }

    /// What "always" would add for a call, judged by the rules in force, or why no rule can
    /// be made. The rule is chosen by what the call does (its access), whichever tool does it:
    /// commands are keyed `bash`, writes `edit`, reads `read_file`; only an MCP tool's rule
    /// bears the tool's own name (`mcp__<server>__<tool>`), as MCP rules do.
    fn always(&self, name: &str, access: &Access) -> Result<AlwaysRule, String> {
        let (key, subject) = match access {
            Access::Bash { command } => ("bash", command.clone()),
            Access::Write { path } => ("edit", path.path.display().to_string()),
            Access::Read { path } => ("read_file", path.path.display().to_string()),
            Access::Mcp { .. } => (name, String::new()),
            Access::None => return Err(format!("`{name}` calls are approved one at a time")),
        };
        crate::sync::read(&self.policy).always(key, &subject)
    }
}

/// What `a` allows, for the question: the command (`git log …`), or which file's edits or
/// reads.
fn always_shown(access: &Access, shown: String) -> String {
    match access {
        Access::Write { path } => format!("edits of {}", path.display),
        Access::Read { path } => format!("reads of {}", path.display),
        Access::Bash { .. } | Access::None | Access::Mcp { .. } => shown,
    }
}

/// A deny rule refused the person's own `!command`: which rule, and how to change it.
fn person_blocked(verdict: &Verdict) -> String {
    format!(
        "Not run: a deny rule refuses `{}` ({}). Deny rules hold for your own commands too; to \
         run it, change the rules ([[rules]] in config.toml; /permissions lists those in force \
         and where each comes from), or run it outside rein.",
        verdict.part, verdict.reason
    )
}

/// What an approval question is about.
struct Question<'q> {
    call: &'q ToolCall,
    access: &'q Access,
    display: &'q ToolDisplay,
    verdict: &'q Verdict,
}

enum AskOutcome {
    Approved(Option<String>),
    Refused(String),
    Interrupted,
}

mod hook_points;
#[cfg(test)]
mod tests;
