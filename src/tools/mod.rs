//! Tools the model can call, and the registry that offers them.
//!
//! Adding a tool is one file implementing [`Tool`] plus one line in [`Registry::builtin`].
//! Dispatch (argument parsing, allowlist, permission, approval, panics) lives in
//! `agent::dispatch`, so a bad call always becomes a readable `Error: ...` for the model.

pub mod bash;
pub mod edit;
pub mod files;
pub mod skills;
pub mod task;
#[cfg(test)]
pub(crate) mod test_ctx;
pub mod todos;

use crate::llm::ToolSpec;
use crate::protocol::{EventSink, Todo};
use crate::sandbox::Sandbox;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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
    /// The current todo list (write_todos replaces it).
    pub todos: Arc<Mutex<Vec<Todo>>>,
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
}

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
        path: crate::sandbox::paths::ResolvedPath,
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
    /// Writing a file: the preview shown in the approval modal.
    Write {
        /// The resolved path.
        path: crate::sandbox::paths::ResolvedPath,
        /// Current content (`None` for a new file).
        old: Option<String>,
        /// Content after the call.
        new: String,
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

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model sees.
    pub text: String,
    /// Set when the tool ran but the outcome is a failure the model should treat as an error
    /// (e.g. a command that timed out).
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    /// A result flagged as an error.
    pub fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model uses.
    fn name(&self) -> &'static str;

    /// Description and JSON schema shown to the model.
    fn spec(&self) -> ToolSpec;

    /// Validates the arguments and says what the call would touch. Errors here mean the call
    /// is refused before anyone is asked.
    fn access(&self, args: &Value, ctx: &ToolCtx) -> Result<Access, ToolError>;

    /// A one-line summary for the UI (`cargo test -q`, `src/main.rs:1-200`).
    fn summary(&self, args: &Value) -> String;

    /// Runs the call.
    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// Tools that appear and change while rein runs (MCP servers), offered next to the registry's.
pub trait ToolSource: Send + Sync {
    /// The tools offered now (asked again before every model request).
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// A tool by name, including one whose server has not listed it yet.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>>;
}

/// Deserialises tool arguments, naming the offending field on error.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    let result: Result<T, _> = serde_path_to_error::deserialize(args);
    result.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde appends " at line 1 column N", which means nothing to the model.
        let inner = match inner.find(" at line ") {
            Some(i) => inner[..i].to_string(),
            None => inner,
        };
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
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// All built-in tools.
    pub fn builtin() -> Registry {
        Registry {
            tools: vec![
                Arc::new(bash::Bash),
                Arc::new(files::ReadFile),
                Arc::new(files::WriteFile),
                Arc::new(edit::StrReplace),
                Arc::new(todos::WriteTodos),
                Arc::new(task::Task),
                Arc::new(skills::ReadSkill),
            ],
        }
    }

    /// A registry holding exactly these tools (tests, custom loops).
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Registry {
        Registry { tools }
    }

    /// Replaces (or adds) a tool by name.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Registry {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
        self
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Names of all tools, in registry order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// Specs of the tools in `allow` (all when `None`), in registry order.
    pub fn specs(&self, allow: Option<&[&str]>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| allow.is_none_or(|a| a.contains(&t.name())))
            .map(|t| t.spec())
            .collect()
    }
}
