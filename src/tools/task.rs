//! `task {description}`: hand a self-contained question to a subagent with a fresh context and
//! read-only tools; only its final answer comes back.

use super::{Access, Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::llm::ToolSpec;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

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

#[derive(Deserialize)]
struct Args {
    description: String,
}

impl Tool for Task {
    fn name(&self) -> &'static str {
        "task"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "task".into(),
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

    fn access(&self, args: &Value, ctx: &ToolCtx) -> Result<Access, ToolError> {
        let args: Args = parse_args("task", args)?;
        if args.description.trim().is_empty() {
            return Err(ToolError::new(
                "`description` is empty; say what the subagent should find out.",
            ));
        }
        if ctx.subagents.is_none() {
            return Err(ToolError::new("the task tool is not available here."));
        }
        Ok(Access::None)
    }

    fn summary(&self, args: &Value) -> String {
        args.get("description")
            .and_then(Value::as_str)
            .map(|d| d.lines().next().unwrap_or("").chars().take(80).collect())
            .unwrap_or_default()
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args("task", &args)?;
            let Some(runner) = ctx.subagents.clone() else {
                return Err(ToolError::new("the task tool is not available here."));
            };
            match runner.run(args.description, ctx).await {
                Ok(answer) => Ok(ToolOutput::ok(answer)),
                Err(e) => Err(ToolError::new(format!("Subagent failed: {e}"))),
            }
        })
    }
}
