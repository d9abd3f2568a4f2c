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
            description: "Ask a subagent to search the code and report back. It starts fresh, \
                can only read (bash, read_file, read_skill) and cannot edit files; only its final \
                answer comes back, so say what to report. Use it to find things in a large \
                project; several task calls in one response run in parallel. \
                Example: {\"description\": \"Find where parse_header is defined; report the \
                file and line.\"}"
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

    fn parallel(&self) -> bool {
        true
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
