//! Hooks: the person's commands that run at points of the loop, in Claude Code's model
//! (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`, `Notification`).
//!
//! A hook gets one JSON object on stdin and answers by exit code (0 ok, 2 block with stderr as
//! the reason) or a JSON object on stdout (`answer`). It has a timeout, and its failure never
//! breaks the turn: it is reported as a notice and ignored. Hooks from the person's config run
//! as configured; a project's (`.claude/settings.json`, `.rein/config.toml`) run only once the
//! person trusted the project, always in the sandbox (`config`). docs/hooks.md says what and why.

pub mod answer;
pub mod config;
pub mod matcher;
mod run;

pub use answer::{Answer, Permission};
pub use matcher::Matcher;

use crate::protocol::{Event, EventSink};
use crate::sandbox::Sandbox;
use crate::tools::Access;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A point of the loop where hooks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    /// Before a tool call runs (after the policy rated it): may allow, ask or deny.
    PreToolUse,
    /// After a tool call ran: may add context or block with a reason for the model.
    PostToolUse,
    /// Before the person's message goes to the model: may add context or block it.
    UserPromptSubmit,
    /// When the model is done: may send it back to work with a reason.
    Stop,
    /// When a session starts or is resumed: may add context.
    SessionStart,
    /// When rein waits for the person (an approval).
    Notification,
}

impl HookEvent {
    /// Every event, in the order `/hooks` lists them.
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::Notification,
    ];

    /// The name as configured (Claude Code's).
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Notification => "Notification",
        }
    }

    /// The event called `name`.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether the matcher is about a tool name.
    fn is_tool(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// Where a hook was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookOrigin {
    /// The person's own config file.
    User(PathBuf),
    /// The project's `.rein/config.toml`.
    Project(PathBuf),
    /// The project's `.claude/settings.json` (Claude Code's format and tool names).
    Claude(PathBuf),
}

impl HookOrigin {
    /// The file it is in.
    pub fn path(&self) -> &Path {
        match self {
            HookOrigin::User(p) | HookOrigin::Project(p) | HookOrigin::Claude(p) => p,
        }
    }

    /// Whether the repository ships it.
    pub fn is_project(&self) -> bool {
        !matches!(self, HookOrigin::User(_))
    }
}

/// One configured hook.
#[derive(Clone, Debug)]
pub struct HookSpec {
    /// When it runs.
    pub event: HookEvent,
    /// Which tools it is for (tool events), or which source (`SessionStart`).
    pub matcher: Matcher,
    /// The command line, run by `bash -c`.
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// Whether it runs inside the bash sandbox (always for a project's hooks).
    pub sandboxed: bool,
    /// Where it was configured.
    pub origin: HookOrigin,
}

/// How long a hook may run unless its entry says otherwise (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times Stop hooks may send the model back to work in one turn.
pub const MAX_STOP_CONTINUES: u32 = 5;

impl HookSpec {
    /// Whether it runs for `subject` (a tool name; the source for `SessionStart`).
    fn applies(&self, subject: &str) -> bool {
        if !self.event.is_tool() && self.event != HookEvent::SessionStart {
            return true;
        }
        if self.matcher.matches(subject) {
            return true;
        }
        matches!(self.origin, HookOrigin::Claude(_))
            && matcher::claude_name(subject).is_some_and(|n| self.matcher.matches(n))
    }

    /// The tool name as this hook knows it (Claude Code's for its own files).
    fn tool_name<'a>(&self, rein: &'a str) -> &'a str {
        match self.origin {
            HookOrigin::Claude(_) => matcher::claude_name(rein).unwrap_or(rein),
            _ => rein,
        }
    }

    /// How notices name it.
    fn label(&self) -> String {
        let m = self.matcher.source();
        let matcher = if m.is_empty() {
            String::new()
        } else {
            format!(" ({m})")
        };
        format!(
            "{}{matcher} `{}`",
            self.event.name(),
            crate::text::headline(&self.command, 60)
        )
    }
}

/// The hooks in force and how to run them; shared by the agent and the dispatchers.
pub struct Hooks {
    hooks: Vec<HookSpec>,
    sandbox: Arc<Sandbox>,
    session_id: Mutex<String>,
    /// Project hooks that wait for trust, for `/hooks`.
    waiting: usize,
}

/// The prepared input of a tool call, as hooks see it: the arguments with what the prepared
/// call fixed (the command that will run; a file tool's resolved path as `file_path`).
pub fn tool_input(mut args: Value, access: &Access) -> Value {
    if let Value::Object(o) = &mut args {
        match access {
            Access::Bash { command } => {
                o.insert("command".into(), Value::String(command.clone()));
            }
            Access::Read { path } | Access::Write { path } => {
                o.insert(
                    "file_path".into(),
                    Value::String(path.path.display().to_string()),
                );
            }
            Access::Mcp { .. } | Access::None => {}
        }
    }
    args
}

impl Hooks {
    /// The hooks `specs`, run in `sandbox` (its workspace is the project); `waiting` project
    /// hooks wait for trust.
    pub fn new(specs: Vec<HookSpec>, sandbox: Arc<Sandbox>, waiting: usize) -> Hooks {
        Hooks {
            hooks: specs,
            sandbox,
            session_id: Mutex::new(String::new()),
            waiting,
        }
    }

    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The session the hooks' input names.
    pub fn set_session(&self, id: &str) {
        *crate::sync::lock(&self.session_id) = id.to_string();
    }

    /// Runs the hooks of `event` that apply to `subject`, concurrently, with `fields` added to
    /// the common input; their merged answer. Notices go to `events`.
    async fn fire(
        &self,
        event: HookEvent,
        subject: &str,
        fields: Value,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let chosen: Vec<&HookSpec> = self
            .hooks
            .iter()
            .filter(|h| h.event == event && h.applies(subject))
            .collect();
        if chosen.is_empty() {
            return Answer::default();
        }
        let session_id = crate::sync::lock(&self.session_id).clone();
        let runs = chosen.into_iter().map(|h| {
            let mut input = json!({
                "session_id": session_id,
                "cwd": self.sandbox.workspace.display().to_string(),
                "hook_event_name": event.name(),
            });
            if let (Value::Object(o), Value::Object(extra)) = (&mut input, &fields) {
                o.extend(extra.clone());
                if event.is_tool() {
                    o.insert("tool_name".into(), Value::String(h.tool_name(subject).into()));
                }
            }
            let input = input.to_string();
            async move {
                let ran = run::run(h, &input, &self.sandbox, cancel).await;
                tracing::info!(hook = %h.label(), code = ?ran.code, failed = ?ran.failed, "hook ran");
                Answer::read(event, &h.label(), &ran)
            }
        });
        let merged = Answer::merge(futures::future::join_all(runs).await);
        for text in &merged.notices {
            events.send(Event::notice(text.clone()));
        }
        merged
    }

    /// `PreToolUse` for `tool` with its prepared `input`.
    pub async fn pre_tool_use(
        &self,
        tool: &str,
        input: Value,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let fields = json!({ "tool_input": input });
        self.fire(HookEvent::PreToolUse, tool, fields, events, cancel)
            .await
    }

    /// `PostToolUse` for `tool`, with what it returned.
    pub async fn post_tool_use(
        &self,
        tool: &str,
        input: Value,
        response: Value,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let fields = json!({ "tool_input": input, "tool_response": response });
        self.fire(HookEvent::PostToolUse, tool, fields, events, cancel)
            .await
    }

    /// `UserPromptSubmit` for the person's `prompt`.
    pub async fn user_prompt_submit(
        &self,
        prompt: &str,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let fields = json!({ "prompt": prompt });
        self.fire(HookEvent::UserPromptSubmit, "", fields, events, cancel)
            .await
    }

    /// `Stop`; `active` says a Stop hook already sent the model back in this turn (Claude
    /// Code's `stop_hook_active`: a hook checks it so it does not loop forever).
    pub async fn stop(
        &self,
        active: bool,
        transcript: Option<&Path>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let mut fields = json!({ "stop_hook_active": active });
        if let (Some(p), Value::Object(o)) = (transcript, &mut fields) {
            o.insert(
                "transcript_path".into(),
                Value::String(p.display().to_string()),
            );
        }
        self.fire(HookEvent::Stop, "", fields, events, cancel).await
    }

    /// `SessionStart` (`source`: `startup` or `resume`).
    pub async fn session_start(
        &self,
        source: &str,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Answer {
        let fields = json!({ "source": source });
        self.fire(HookEvent::SessionStart, source, fields, events, cancel)
            .await
    }

    /// `Notification` with `message`, in the background: rein does not wait for it.
    pub fn notify(self: &Arc<Self>, message: String, events: &EventSink) {
        if !self.has(HookEvent::Notification) {
            return;
        }
        let hooks = self.clone();
        let events = events.clone();
        tokio::spawn(async move {
            let fields = json!({ "message": message });
            let cancel = CancellationToken::new();
            hooks
                .fire(HookEvent::Notification, "", fields, &events, &cancel)
                .await;
        });
    }

    /// What `/hooks` shows: each hook, where it comes from and how it runs.
    pub fn describe(&self) -> String {
        describe(&self.hooks, self.waiting)
    }
}

/// The listing of `hooks` (and how many wait for trust), for `/hooks` and `rein hooks`.
pub fn describe(hooks: &[HookSpec], waiting: usize) -> String {
    let mut lines = Vec::new();
    if hooks.is_empty() {
        lines.push("No hooks are active.".to_string());
    } else {
        lines.push(format!("Hooks ({}):", hooks.len()));
    }
    for event in HookEvent::ALL {
        for h in hooks.iter().filter(|h| h.event == event) {
            let m = h.matcher.source();
            let matcher = if m.is_empty() { "*" } else { m };
            let how = if h.sandboxed {
                "sandboxed"
            } else {
                "not sandboxed"
            };
            let from = match &h.origin {
                HookOrigin::User(p) => format!("your config {}", p.display()),
                HookOrigin::Project(p) | HookOrigin::Claude(p) => {
                    format!("project {} (trusted)", p.display())
                }
            };
            lines.push(format!(
                "  {} [{matcher}] {}  · {how}, timeout {} s · from {from}",
                event.name(),
                crate::text::headline(&h.command, 80),
                h.timeout.as_secs()
            ));
        }
    }
    if waiting > 0 {
        lines.push(format!(
            "{waiting} project hook(s) wait for trust and do not run (rein asks when it starts; \
             `rein exec --trust` for one run)."
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests;
