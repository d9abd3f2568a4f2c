//! `task {description}`: hand a self-contained question to a subagent with a fresh context and
//! read-only tools; only its final answer comes back.

use super::{Access, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::llm::ToolSpec;
use crate::protocol::ToolDisplay;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

const NAME: &str = "task";

/// Runs subagents; implemented by the agent core (tools cannot see the turn loop).
pub trait SubagentRunner: Send + Sync {
    /// Runs one subagent on `description` and returns its final answer (or why it failed).
    fn run<'a>(
        &'a self,
        description: String,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<String, String>>;
}

/// The `task` tool.
pub struct Task;

/// A question for a subagent.
struct Question {
    description: String,
}

#[derive(Deserialize)]
struct Args {
    description: String,
}

impl Tool for Task {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Delegate a self-contained research question to a subagent that starts \
                with a fresh context and can only read (bash for read-only commands, read_file, \
                read_skill); it cannot edit files. Use it to explore a large codebase or answer a \
                side question without filling your own context. Only its final answer comes back, \
                so say exactly what you want reported (e.g. paths and line numbers). Several task \
                calls in one response run in parallel."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "The complete question or task for the subagent, with all context it needs."}
                },
                "required": ["description"]
            }),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        if args.description.trim().is_empty() {
            return Err(ToolError::new(
                "`description` is empty; say what the subagent should find out.",
            ));
        }
        if ctx.subagents.is_none() {
            return Err(ToolError::new("the task tool is not available here."));
        }
        Ok(Box::new(Question {
            description: args.description,
        }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Task {
            description: string_arg(args, "description"),
        }
    }
}

/// A string argument, or empty (for showing calls that were never prepared).
pub(crate) fn string_arg(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Prepared for Question {
    fn access(&self) -> &Access {
        &Access::None
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Task {
            description: self.description.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move {
            let Some(runner) = ctx.subagents.clone() else {
                return Err(ToolError::new("the task tool is not available here."));
            };
            match runner.run(self.description, ctx).await {
                Ok(answer) => Ok(ToolOutput::ok(answer)),
                Err(e) => Err(ToolError::new(format!("Subagent failed: {e}"))),
            }
        })
    }
}
