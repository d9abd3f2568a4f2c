//! Tools the model can call, and the registry that offers them.
//!
//! A tool turns the model's arguments into a [`Prepared`] call once: the prepared call says
//! what it will touch ([`Access`], what the policy rates), how it is shown ([`ToolDisplay`],
//! what the dialog and the front ends render) and runs exactly that. Adding a tool is one file
//! implementing [`Tool`] plus one line in [`Registry::builtin`]. Dispatch (allowlist,
//! permission, approval, panics) lives in `agent::dispatch`, so a bad call always becomes a
//! readable `Error: ...` for the model.

pub mod bash;
pub mod edit;
pub mod files;
pub mod read_ledger;
pub mod secrets;
pub mod skills;
pub mod task;
#[cfg(test)]
pub(crate) mod test_ctx;
pub mod todos;

use crate::llm::ToolSpec;
use crate::protocol::{EventSink, Todo, ToolDisplay};
use crate::sandbox::Sandbox;
use crate::sandbox::paths::ResolvedPath;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a tool call needs from the harness while it runs.
#[derive(Clone)]
pub struct ToolCtx {
    /// The workspace root (relative paths resolve here; bash runs here).
    pub workspace: PathBuf,
    /// The home directory, for `~`.
    pub home: Option<PathBuf>,
    /// The session's private temp dir (bash `TMPDIR`, saved long outputs).
    pub temp_dir: PathBuf,
    /// The id of the call being run.
    pub call_id: String,
    /// Where live output goes.
    pub events: EventSink,
    /// Cancelled on interrupt: a running tool must stop promptly.
    pub cancel: CancellationToken,
    /// How bash is confined.
    pub sandbox: Arc<Sandbox>,
    /// Default bash timeout in seconds.
    pub bash_timeout_secs: u64,
    /// Environment variables removed from child processes (API keys).
    pub env_remove: Vec<String>,
    /// Runs subagents for the `task` tool (`None` inside a subagent: no nesting).
    pub subagents: Option<Arc<dyn task::SubagentRunner>>,
    /// The skills `read_skill` can load.
    pub skills: Arc<crate::skills::SkillCatalog>,
    /// Secret places the file tools refuse, secret values masked in results.
    pub secrets: Arc<secrets::Secrets>,
    /// What the model has read (or written) in this conversation: edits need it.
    pub reads: Arc<read_ledger::ReadLedger>,
    /// Whether the person's rules let the model read a path without asking: an edit of a
    /// file it never read shows its result only then (`None`: never assumed).
    pub may_read: Option<ReadCheck>,
    /// A `write_file` of a few loose lines over a source file with definitions is refused
    /// (a small model's, `small_model` aid `code_blocks`): it meant to add them.
    pub refuse_fragments: bool,
}

impl ToolCtx {
    /// Whether a file tool may show `path`'s content to the model before the permission check
    /// (see [`ToolCtx::may_read`]).
    pub(crate) fn may_show(&self, path: &crate::sandbox::paths::ResolvedPath) -> bool {
        self.may_read.as_ref().is_some_and(|may| may(path))
    }
}

/// See [`ToolCtx::may_read`].
pub type ReadCheck = Arc<dyn Fn(&crate::sandbox::paths::ResolvedPath) -> bool + Send + Sync>;

/// What a call would touch, for the permission check before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Nothing outside rein's own state (todos, skills, subagents).
    None,
    /// A shell command.
    Bash {
        /// The command line.
        command: String,
    },
    /// Reading a file.
    Read {
        /// The resolved path.
        path: ResolvedPath,
    },
    /// A tool of an MCP server: rated by its name (`mcp__<server>__<tool>`) and arguments.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments as the model sent them.
        args: Value,
    },
    /// Writing a file (the change itself is in the call's [`ToolDisplay`]).
    Write {
        /// The resolved path.
        path: ResolvedPath,
    },
}

/// A tool failure; the text goes to the model as `Error: <text>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    /// Builds an error from anything printable.
    pub fn new(msg: impl Into<String>) -> ToolError {
        ToolError(msg.into())
    }
}

/// A file as a tool wrote it: what `/diff` and checkpoints are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// The file, as displayed (workspace-relative when inside).
    pub path: String,
    /// The text it had before (`None`: it did not exist, or was not text).
    pub old: Option<String>,
    /// The text written.
    pub new: String,
}

/// What a call did besides its text, typed so nobody has to parse the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Effect {
    /// Nothing else.
    #[default]
    None,
    /// A file was written, exactly so.
    FileWritten(FileWrite),
    /// The todo list is now this (the agent owns the list and applies it).
    TodosReplaced(Vec<Todo>),
    /// A command ran and exited with this code (128 + N when killed by signal N).
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The person stopped it; the text is what it produced until then, with a note.
    Interrupted,
}

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model sees.
    pub text: String,
    /// Set when the tool ran but the outcome is a failure the model should treat as an error
    /// (e.g. a command that timed out).
    pub is_error: bool,
    /// What the call did besides its text.
    pub effect: Effect,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
            effect: Effect::None,
        }
    }

    /// A result flagged as an error.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            is_error: true,
            ..ToolOutput::ok(text)
        }
    }

    /// The same result with an effect.
    pub fn with(self, effect: Effect) -> ToolOutput {
        ToolOutput { effect, ..self }
    }
}

/// The future a prepared call runs as.
pub type RunFuture<'a> = BoxFuture<'a, Result<ToolOutput, ToolError>>;

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema shown to the model. The name lives only here.
    fn spec(&self) -> ToolSpec;

    /// Checks the arguments against the world as it is now and fixes what the call will do.
    /// An error means the call is refused before anyone is asked.
    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError>;

    /// How a call that was never prepared is shown (refused arguments, a session file written
    /// before displays were recorded): from the arguments alone, touching nothing.
    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Other {
            name: self.spec().name,
            args: args.clone(),
        }
    }
}

/// One call, checked and fixed: what runs is what was rated and shown.
pub trait Prepared: Send {
    /// What the policy rates (and the dialog asks about).
    fn access(&self) -> &Access;

    /// How the call is shown.
    fn display(&self) -> ToolDisplay;

    /// Runs the call. A call that can no longer do exactly what it showed (the file changed
    /// meanwhile) refuses and changes nothing.
    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a>;

    /// Whether `run` watches the cancel token and returns soon after it fires (with what it
    /// did until then); other calls are cut off by the dispatcher.
    fn stops_itself(&self) -> bool {
        false
    }

    /// Whether the call may run at the same time as its neighbours of a response that say so
    /// too (a subagent's question changes nothing of the others').
    fn parallel(&self) -> bool {
        false
    }
}

/// Tools that appear and change while rein runs (MCP servers), offered next to the registry's.
pub trait ToolSource: Send + Sync {
    /// The tools offered now (asked again before every model request).
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// A tool by name, including one whose server has not listed it yet.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>>;
}

/// Deserialises tool arguments, naming the offending field on error.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    let result: Result<T, _> = serde_path_to_error::deserialize(args);
    result.map_err(|e| {
        let path = e.path().to_string();
        let inner = without_position(e.into_inner().to_string());
        if path == "." || path.is_empty() {
            ToolError(format!("invalid arguments for {tool}: {inner}. Check the tool's schema and call it again."))
        } else {
            ToolError(format!(
                "invalid argument `{path}` for {tool}: {inner}. Check the tool's schema and call it again."
            ))
        }
    })
}

/// The tools known to rein.
#[derive(Clone)]
pub struct Registry {
    /// Each tool with its name (read from its spec once).
    tools: Vec<(String, Arc<dyn Tool>)>,
}

impl Registry {
    /// All built-in tools.
    pub fn builtin() -> Registry {
        Registry::from_tools(vec![
            Arc::new(bash::Bash),
            Arc::new(files::ReadFile),
            Arc::new(files::WriteFile),
            Arc::new(edit::StrReplace),
            Arc::new(todos::WriteTodos),
            Arc::new(task::Task),
            Arc::new(skills::ReadSkill),
        ])
    }

    /// A registry holding exactly these tools (tests, custom loops).
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Registry {
        Registry {
            tools: tools.into_iter().map(|t| (t.spec().name, t)).collect(),
        }
    }

    /// Replaces (or adds) a tool by name.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Registry {
        let name = tool.spec().name;
        self.tools.retain(|(n, _)| *n != name);
        self.tools.push((name, tool));
        self
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// Names of all tools, in registry order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Specs of the tools in `allow` (all when `None`), in registry order.
    pub fn specs(&self, allow: Option<&[String]>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(n, _)| allow.is_none_or(|a| a.contains(n)))
            .map(|(_, t)| t.spec())
            .collect()
    }

    /// How a call of `name` with these raw arguments is shown without preparing it.
    pub fn describe(&self, name: &str, raw_args: &str) -> ToolDisplay {
        let args = parse_arguments(raw_args).ok();
        match (self.get(name), &args) {
            (Some(tool), Some(args)) => {
                let (tool, args) = (tool.clone(), args.clone());
                // A display must never take a turn (or a resume) down with it.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || tool.describe(&args)))
                    .unwrap_or_else(|_| other(name, None))
            }
            _ => other(name, args),
        }
    }
}

fn other(name: &str, args: Option<Value>) -> ToolDisplay {
    ToolDisplay::Other {
        name: name.to_string(),
        args: args.unwrap_or(Value::Null),
    }
}

/// The one parser of a call's raw arguments (the dispatcher's before `prepare`, and
/// `describe`'s): empty means `{}`; a JSON string holding the object (some models
/// double-encode) is decoded; anything but an object is refused, in words for the model.
pub fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
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
        Err(e) => Err(without_position(e.to_string())),
    }
}

/// serde's message without the " at line 1 column N" it appends, which means nothing to the
/// model.
fn without_position(msg: String) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}
