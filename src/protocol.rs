//! The only types that cross the UI/agent boundary: `Op` (UI -> agent) and `Event` (agent -> UI).
//!
//! Both front ends (the TUI and `rein exec`) speak only these. They are serde-serialisable so
//! `rein exec --json` can print events as JSON lines and tests can assert on them.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

mod display;
mod listing;
mod mode;
pub use display::{DIFF_CONTEXT, DiffHunk, EditDiff, LineRange, SUBJECT_CHARS, ToolDisplay};
pub use listing::{SessionSummary, Skill, SkillCatalog, SkippedSkill, rfc3339};
pub use mode::{ApprovalMode, RuleInfo};

/// Status of one todo item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One entry of the plan kept with `write_todos`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// Imperative description ("Run the tests").
    pub content: String,
    /// Present continuous form shown while in progress ("Running the tests"); may be empty,
    /// then `content` is shown.
    #[serde(rename = "activeForm", default)]
    pub active_form: String,
    /// Where the item stands.
    pub status: TodoStatus,
}

/// The person's answer to an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it this once.
    Yes,
    /// Run it and don't ask again this session for the same command prefix / file.
    Always,
    /// Don't run it.
    No,
}

/// One instructions file (`AGENTS.md`) the agent gives the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instructions {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// A custom slash command as front ends list it (`src/commands.rs` finds them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    /// The name after the slash (`review`, `frontend:component`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// What arguments it takes (`[file]`), empty when none.
    pub argument_hint: String,
    /// Where it comes from (`project`, `user ~/.codex`, …).
    pub origin: String,
    /// A project command whose `model` / `allowed-tools` wait for trust (it runs as a plain
    /// prompt).
    pub untrusted: bool,
}

/// Operations the UI sends to the agent task.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A message typed by the person.
    UserInput {
        /// The text, sent whole.
        text: String,
    },
    /// `/name args`: a custom command or `/init`, expanded by the agent into the user message
    /// (the person sees `/name args`, the model the prompt). An unknown name fails the turn.
    RunCommand {
        /// The name after the slash.
        name: String,
        /// The rest of the line.
        args: String,
    },
    /// Stop the running turn: cancel the stream, kill the running tool.
    Interrupt,
    /// Answer to an `Event::ApprovalRequested` with the same id.
    Approval {
        /// The request id.
        id: String,
        /// Yes / always / no.
        decision: Decision,
        /// An optional note that goes to the model with the answer.
        note: Option<String>,
    },
    /// Compact the conversation now, optionally focused on something.
    Compact {
        /// What the summary should concentrate on.
        focus: Option<String>,
    },
    /// Switch the model for the following requests.
    SetModel {
        /// The new model name.
        model: String,
    },
    /// Start a new, empty conversation (`/clear`).
    Clear,
    /// Give the session a title (`/rename`).
    Rename {
        /// The title.
        title: String,
    },
    /// Continue in a new session that starts as a copy of this one (`/fork`).
    Fork,
    /// Switch to a saved session (`/resume`): its history replaces the current one.
    Resume {
        /// Session id or unique prefix.
        id: String,
    },
    /// Report the MCP servers' state (`/mcp`); answered with `Event::McpStatus`.
    McpStatus,
    /// List the hooks in force and where each comes from (`/hooks`); answered with a notice.
    ListHooks,
    /// Switch the approval mode (Shift+Tab); answered with `Event::ModeChanged`.
    SetMode {
        /// The new mode.
        mode: ApprovalMode,
    },
    /// List the permission rules in force (`/permissions`); answered with `Event::Permissions`.
    ListPermissions,
    /// Drop a rule added this session (`/permissions drop N`).
    DropSessionRule {
        /// The rule's tool.
        tool: String,
        /// The rule's pattern.
        pattern: String,
    },
    /// Ask the server which models it offers (`/model` without a name); answered with
    /// `Event::Models`.
    ListModels,
    /// Run a command the person typed (`!cmd`): same rules (deny holds) and sandbox; what it
    /// printed goes into the conversation as context for the next message.
    RunShell {
        /// The command line.
        command: String,
    },
    /// List the user messages one can rewind to (answered with `Event::RewindPoints`).
    ListRewindPoints,
    /// Go back to before user message `to` (`/rewind`). Restoring code is two steps: without
    /// `confirm` the agent answers with `Event::RewindPlan`; with the plan's id it applies
    /// exactly that plan (or sends a new one when the files moved since).
    Rewind {
        /// The point (`RewindPoint::index`).
        to: usize,
        /// Restore the files.
        code: bool,
        /// Truncate the conversation to before the message.
        conversation: bool,
        /// The id of the plan the person saw and accepted.
        confirm: Option<String>,
        /// Also overwrite the files that changed outside rein since (else they are skipped).
        overwrite_changed: bool,
    },
    /// Plan restoring the code of the last turn that changed files (`/undo`); answered with
    /// `Event::RewindPlan`, applied with `Op::Rewind`.
    Undo,
    /// Which saved sessions are there (`/resume`)? Answered with `Event::SessionsListed`.
    ListSessions,
    /// Which skills does this session offer (`/skills`)? Answered with `Event::SkillsListed`.
    ListSkills,
    /// Which `AGENTS.md` files does the model get (`/memory`)? Answered with
    /// `Event::MemoryListed`.
    ListMemory,
    /// The front end has drawn the session (its first full frame): what would compete with
    /// that frame for the CPU (MCP servers) may start now. Sent once, by the TUI.
    SessionShown,
    /// End the agent task.
    Shutdown,
}

/// A user message one can rewind to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindPoint {
    /// Its index (for `Op::Rewind`).
    pub index: usize,
    /// What the person wrote.
    pub text: String,
    /// How many files its turn changed.
    pub files_changed: usize,
}

/// A file's content as a restore plan shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileText {
    /// No file.
    Absent,
    /// Text, shown as a diff.
    Text {
        /// The content.
        text: String,
    },
    /// Binary or too large to show.
    Opaque {
        /// Its size in bytes, when known.
        size: Option<u64>,
    },
}

/// One file of a restore plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRestore {
    /// Workspace-relative path.
    pub path: String,
    /// What is on disk now.
    pub current: FileText,
    /// What it goes back to.
    pub target: FileText,
    /// It changed outside rein since rein last touched it: overwritten only if the person says.
    pub changed_outside: bool,
    /// Why it cannot be restored, when it cannot (it was too large to keep, ...).
    pub problem: Option<String>,
}

/// What restoring the code would do, for the person to accept once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindPlan {
    /// Identifies exactly this plan (send it back in `Op::Rewind::confirm`).
    pub id: String,
    /// The point it goes back to.
    pub to: usize,
    /// That point's message.
    pub message: String,
    /// The conversation is rewound too.
    pub conversation: bool,
    /// The files, by path.
    pub files: Vec<FileRestore>,
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Ran and succeeded.
    Ok,
    /// Ran (or tried to) and failed; the output says why.
    Error,
    /// Refused by a deny rule before it could run.
    Blocked,
    /// The person (or headless mode) refused it.
    Denied,
    /// Stopped by an interrupt.
    Interrupted,
}

impl ToolStatus {
    /// Whether the model should see this result as an error.
    pub fn is_error(self) -> bool {
        !matches!(self, ToolStatus::Ok)
    }
}

/// Something a model did wrong that the harness noticed and handled (shown to the person,
/// recorded in the session file, counted by the eval).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuirkKind {
    /// A tool call written as text was recovered and run as a real call.
    RecoveredToolCall,
    /// A tool call written as text named a tool that is not offered; the model was told how
    /// to call tools.
    UnknownTextCall,
    /// The answer echoed the late reminder; the echo was dropped.
    ReminderEcho,
    /// The final answer was empty.
    EmptyAnswer,
    /// The answer wrote a tool's result itself (`<tool_response>`); it and what followed
    /// were dropped.
    InventedToolResult,
    /// A tool call's arguments came doubly encoded (a JSON string holding the object, or the
    /// object with its quotes escaped, as a chat template that renders arguments as strings
    /// teaches); they were decoded.
    DoublyEncodedArguments,
    /// Code the answer showed in a fenced block instead of writing it became a tool call
    /// (an edit of the file it names, a new file, or a command to run).
    AppliedCodeBlock,
    /// A `write_file` that held only some of an existing file's definitions became the
    /// `str_replace` that merges them in and keeps the rest of the file.
    PartialWrite,
    /// A `str_replace` quoting text the file does not hold, whose `new_str` only added
    /// definitions to that quote, became the edit that adds them after the quote's last line
    /// the file does hold.
    AnchoredInsert,
    /// The answer kept repeating the same text; it was stopped there and cut to one piece.
    RepeatingAnswer,
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model stopped asking for tools.
    Completed,
    /// The person interrupted it.
    Interrupted,
    /// It could not go on.
    Failed {
        /// A readable reason.
        reason: String,
    },
}

/// A question for the person; answered with `Op::Approval` carrying the same id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Request id (unique within the session).
    pub id: String,
    /// The tool call it belongs to.
    pub call_id: String,
    /// What it would do (the command, the diff of an edit, the file to read …).
    pub display: ToolDisplay,
    /// Where a command would run (the workspace).
    pub cwd: PathBuf,
    /// Which part triggered the question (e.g. one command of a pipeline).
    pub part: String,
    /// Why: the rule that matched, or "no rule matched (default ask)".
    pub reason: String,
    /// The subagent asking, if it is not the main agent.
    pub subagent: Option<String>,
    /// What "always" (`a`) would allow for the rest of the session, from the permission
    /// layer's exact rule (`git log …`, `edits of src/a.rs`); `None` when no rule can be made
    /// (the asking part is opaque, a redirect, an interpreter): then `a` is not offered.
    #[serde(default)]
    pub always: Option<String>,
    /// Why `a` is not offered, when it is not (`ls` needs approval each time: …).
    #[serde(default)]
    pub no_always: Option<String>,
}

/// Facts about the session, sent once at start (and after `/clear` or a resume).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Session id.
    pub session_id: String,
    /// Model name.
    pub model: String,
    /// `openai` or `anthropic`.
    pub provider: String,
    /// Workspace directory.
    pub cwd: PathBuf,
    /// Context window in tokens.
    pub context_window: u64,
    /// Who answers questions, for the status line (`ask`, `yes (headless)` …).
    pub approval_mode: String,
    /// The approval mode the session starts in.
    #[serde(default)]
    pub mode: ApprovalMode,
    /// Sandbox mode, for the status line.
    pub sandbox_mode: String,
    /// The past conversation when resumed, replayed as the events that showed it (empty for a
    /// new one): front ends build it exactly as they build a live one.
    pub history: Vec<Event>,
    /// The conversation on screen goes on (a `/fork`): front ends keep their view instead of
    /// starting an empty one.
    #[serde(default)]
    pub keep_view: bool,
}

/// Events the agent task sends to the UI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session is ready.
    SessionConfigured(SessionInfo),
    /// A turn began (a user message was accepted).
    TurnStarted,
    /// A message of the person's, as the conversation shows it (`/name args` for a command).
    /// Sent in a resumed conversation's replay; live, a front end shows what it sent itself.
    UserMessage {
        /// The text.
        text: String,
    },
    /// Streamed assistant text.
    AssistantDelta {
        /// The new text.
        text: String,
    },
    /// Streamed reasoning text.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// A model response is complete; `text` is authoritative (a retried stream's partial
    /// deltas are superseded by it).
    AssistantMessage {
        /// Full text of this response.
        text: String,
    },
    /// A tool call was prepared and is about to be checked and run.
    ToolCallStarted {
        /// Call id.
        call_id: String,
        /// What it will do.
        display: ToolDisplay,
    },
    /// Live output of a running tool.
    ToolOutputDelta {
        /// Call id.
        call_id: String,
        /// New output.
        chunk: String,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// Call id.
        call_id: String,
        /// How it ended.
        status: ToolStatus,
        /// The result the model sees.
        output: String,
        /// Wall time in milliseconds.
        elapsed_ms: u64,
        /// A command's exit code (also when it is not 0: the call still counts as run).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// The agent waits for an `Op::Approval`.
    ApprovalRequested(ApprovalRequest),
    /// The question with this id needs no answer any more (the mode changed and decided it).
    ApprovalWithdrawn {
        /// The request id.
        id: String,
    },
    /// A file tool wrote a file (for `/diff`): exactly what was written, nothing proposed.
    FileChanged {
        /// The call that wrote it (in a replay, a subagent's change names its `task` call).
        call_id: String,
        /// The file, as displayed (workspace-relative when inside).
        path: String,
        /// Content before (`None` when the file was created, or, replayed, when the session
        /// file did not keep it).
        old: Option<String>,
        /// Content after (`None` only replayed: too large, or holding a secret, to keep).
        new: Option<String>,
    },
    /// The todo list changed.
    TodosUpdated {
        /// The whole new list.
        todos: Vec<Todo>,
    },
    /// A subagent (`task` tool) began.
    SubagentStarted {
        /// The task call id.
        task_id: String,
        /// What it was asked.
        description: String,
    },
    /// Something a subagent did (its own events, wrapped).
    Subagent {
        /// The task call id.
        task_id: String,
        /// The wrapped event.
        event: Box<Event>,
    },
    /// A subagent ended.
    SubagentFinished {
        /// The task call id.
        task_id: String,
        /// Whether it produced an answer.
        ok: bool,
    },
    /// The history was compacted.
    Compacted {
        /// Estimated tokens before.
        before_tokens: u64,
        /// Estimated tokens after.
        after_tokens: u64,
    },
    /// Token accounting after a request.
    Usage {
        /// Tokens the context holds now (reported + estimated).
        used_tokens: u64,
        /// The model's window.
        context_window: u64,
    },
    /// A request failed and will be tried again.
    Retrying {
        /// Which attempt comes next (2 = first retry).
        attempt: u32,
        /// How many attempts in all.
        max_attempts: u32,
        /// Wait before it, in milliseconds.
        delay_ms: u64,
        /// What went wrong.
        reason: String,
    },
    /// The harness handled something the model got wrong (see [`QuirkKind`]).
    ModelQuirk {
        /// What it was.
        kind: QuirkKind,
        /// What to tell the person, one sentence.
        text: String,
    },
    /// Something worth telling the person, an error among them: a failure that did not
    /// (necessarily) end the turn is a notice of level `Error`, so there is one way to say it.
    Notice {
        /// How much it matters (front ends mark warnings and errors).
        #[serde(default)]
        level: NoticeLevel,
        /// The text.
        text: String,
    },
    /// The model was switched.
    ModelChanged {
        /// The new model.
        model: String,
    },
    /// The MCP servers' state (answer to `Op::McpStatus`).
    McpStatus {
        /// One entry per configured server.
        servers: Vec<McpServerStatus>,
    },
    /// The approval mode changed (or was confirmed).
    ModeChanged {
        /// The mode now in force.
        mode: ApprovalMode,
    },
    /// The permission rules in force, for `/permissions`, in the order they are checked.
    Permissions {
        /// The rules.
        rules: Vec<RuleInfo>,
    },
    /// The models the server offers, for the `/model` picker.
    Models {
        /// Model ids (empty when the server could not say).
        models: Vec<String>,
        /// Why the list is missing, if it is.
        error: Option<String>,
    },
    /// The user messages one can rewind to, oldest first.
    RewindPoints {
        /// The points.
        points: Vec<RewindPoint>,
    },
    /// What a code restore would do; accept it with `Op::Rewind { confirm: Some(id), .. }`.
    RewindPlan(RewindPlan),
    /// A rewind was carried out.
    Rewound {
        /// The point.
        to: usize,
        /// Its message (front ends put it back in the composer after a conversation rewind).
        message: String,
        /// The conversation was rewound (a `SessionConfigured` with the new view came first).
        conversation: bool,
        /// Files restored.
        restored: Vec<String>,
        /// Files left as they are, each with the reason (`a.txt: changed outside rein`).
        skipped: Vec<String>,
    },
    /// Images were attached to the message just sent (`@shot.png`): front ends show each label
    /// (`[image shot.png 1280×720]`, the name already one visible line) in the person's cell.
    ImagesAttached {
        /// The labels, in order.
        labels: Vec<String>,
    },
    /// The message just sent was not sent (an image the model cannot take, a file that cannot
    /// be attached); the TUI puts it back in the composer. A `TurnFinished` with the reason
    /// follows.
    PromptReturned {
        /// The message as the person typed it.
        text: String,
    },
    /// The turn is over.
    TurnFinished {
        /// How.
        outcome: TurnOutcome,
    },
    /// The saved sessions (answers `Op::ListSessions`).
    SessionsListed {
        /// Every session, newest first.
        sessions: Vec<SessionSummary>,
        /// The spellings of the workspace a session of "this directory" may have recorded.
        here: Vec<PathBuf>,
        /// When the list was read ("2 h ago" counts from here).
        #[serde(with = "rfc3339")]
        now: jiff::Timestamp,
    },
    /// The skills the running agent offers, and the files it skipped (answers `Op::ListSkills`).
    SkillsListed {
        /// The catalog.
        catalog: SkillCatalog,
    },
    /// The custom slash commands of this session (sent once, after `session_configured`).
    CommandsListed {
        /// Sorted by name.
        commands: Vec<CommandInfo>,
    },
    /// The instruction files the model gets, in order (answers `Op::ListMemory`).
    MemoryListed {
        /// The files.
        files: Vec<Instructions>,
    },
    /// The checkpoints' first scan of the workspace started (`true`) or ended (`false`).
    Indexing {
        /// Whether it is running.
        active: bool,
    },
}

/// How much a notice matters: front ends mark it by this, never by its wording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    /// For information.
    #[default]
    Info,
    /// Something went differently than asked (an interruption, a skipped file).
    Warn,
    /// Something failed.
    Error,
}

impl Event {
    /// An informational notice.
    pub fn notice(text: impl Into<String>) -> Event {
        Event::Notice {
            level: NoticeLevel::Info,
            text: text.into(),
        }
    }

    /// A warning: something went differently than asked (the work goes on without it).
    pub fn warn(text: impl Into<String>) -> Event {
        Event::Notice {
            level: NoticeLevel::Warn,
            text: text.into(),
        }
    }

    /// An error notice: something failed (the turn may go on).
    pub fn error(text: impl Into<String>) -> Event {
        Event::Notice {
            level: NoticeLevel::Error,
            text: text.into(),
        }
    }
}

/// How a nudge of rein's (a `[rein]` message it sent the model, e.g. "No file was changed
/// yet") begins when a front end shows it, live and in a resumed conversation alike.
pub const NUDGE_NOTICE: &str = "rein told the model: ";

/// The notice text for a nudge: [`NUDGE_NOTICE`] and the nudge's first sentence.
pub fn nudge_notice(nudge: &str) -> String {
    let text = nudge.trim_start_matches("[rein]").trim_start();
    let gist = match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    };
    format!("{NUDGE_NOTICE}{gist}")
}

/// How both front ends announce `Event::Retrying`: `retrying in 1.5 s (attempt 2 of 5): why`
/// (the first line of the reason).
pub fn retry_notice(attempt: u32, max_attempts: u32, delay_ms: u64, reason: &str) -> String {
    format!(
        "retrying in {:.1} s (attempt {attempt} of {max_attempts}): {}",
        delay_ms as f64 / 1000.0,
        reason.lines().next().unwrap_or("")
    )
}

/// Sends events to the UI from inside a tool (live output, todo updates).
#[derive(Clone)]
pub struct EventSink {
    tx: tokio::sync::mpsc::UnboundedSender<Event>,
    /// When set, events are wrapped as `Event::Subagent { task_id, .. }`.
    subagent: Option<String>,
}

impl EventSink {
    /// A sink writing to `tx`.
    pub fn new(tx: tokio::sync::mpsc::UnboundedSender<Event>) -> EventSink {
        EventSink { tx, subagent: None }
    }

    /// A sink whose events are labelled as coming from subagent `task_id`.
    pub fn for_subagent(&self, task_id: &str) -> EventSink {
        EventSink {
            tx: self.tx.clone(),
            subagent: Some(task_id.to_string()),
        }
    }

    /// The subagent this sink belongs to, if any.
    pub fn subagent(&self) -> Option<&str> {
        self.subagent.as_deref()
    }

    /// Sends one event (dropped silently when the UI is gone).
    pub fn send(&self, event: Event) {
        let event = match &self.subagent {
            Some(id) => Event::Subagent {
                task_id: id.clone(),
                event: Box::new(event),
            },
            None => event,
        };
        let _ = self.tx.send(event);
    }
}

/// The state of one MCP server, for `/mcp` and `rein mcp list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// The server's name.
    pub name: String,
    /// Where it is defined (`user` or the project file).
    pub origin: String,
    /// Its command line or URL as configured (variables unexpanded).
    pub target: String,
    /// How it is doing.
    pub state: McpState,
    /// The tools offered to the model (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Approximate tokens the tools' descriptions and schemas add to every request.
    pub schema_tokens: u64,
}

/// How an MCP server is doing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpState {
    /// `enabled = false` in its config.
    Disabled,
    /// A project server that may not start (the reason says what would allow it).
    NotApproved {
        /// Why.
        reason: String,
    },
    /// Starting (or restarting).
    Starting,
    /// Connected.
    Ready,
    /// Could not start, or stopped.
    Failed {
        /// Why.
        error: String,
    },
}

impl McpState {
    /// A short word for lists.
    pub fn label(&self) -> &'static str {
        match self {
            McpState::Disabled => "disabled",
            McpState::NotApproved { .. } => "not approved",
            McpState::Starting => "starting",
            McpState::Ready => "ready",
            McpState::Failed { .. } => "failed",
        }
    }
}

/// The `rein mcp list` / `/mcp` text for these servers.
pub fn describe_mcp_servers(servers: &[McpServerStatus]) -> String {
    if servers.is_empty() {
        return "No MCP servers configured.".into();
    }
    let mut out = String::new();
    for s in servers {
        out.push_str(&format!(
            "{}  {}  ({})\n",
            s.name,
            s.state.label(),
            s.origin
        ));
        out.push_str(&format!("  {}\n", s.target));
        match &s.state {
            McpState::Failed { error } => out.push_str(&format!("  error: {error}\n")),
            McpState::NotApproved { reason } => out.push_str(&format!("  {reason}\n")),
            _ => {}
        }
        if !s.tools.is_empty() {
            out.push_str(&format!(
                "  {} tools, ~{} tokens of schema per request: {}\n",
                s.tools.len(),
                s.schema_tokens,
                s.tools.join(", ")
            ));
        } else if s.state == McpState::Ready {
            out.push_str("  no tools offered\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// The protocol is a leaf: it names nothing of rein but the leaf text utilities, so both
    /// front ends and the agent can depend on it without depending on each other.
    #[test]
    fn protocol_imports_nothing_of_rein_but_leaf_utilities() {
        let sources = [
            ("protocol.rs", include_str!("protocol.rs")),
            ("display.rs", include_str!("protocol/display.rs")),
            ("listing.rs", include_str!("protocol/listing.rs")),
            ("mode.rs", include_str!("protocol/mode.rs")),
        ];
        let leaf = ["crate::text::"];
        for (file, text) in sources {
            // The tests below may name anything.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at..];
                assert!(
                    leaf.iter().any(|l| rest.starts_with(l)),
                    "{file} imports {}",
                    rest.lines().next().unwrap_or_default()
                );
            }
        }
    }
}
