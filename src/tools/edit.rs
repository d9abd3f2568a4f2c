//! Placeholder; the real tool lands with the tools work.

use super::{Access, Tool, ToolCtx, ToolError, ToolOutput};
use crate::llm::ToolSpec;
use futures::future::BoxFuture;
use serde_json::Value;

/// Placeholder.
pub struct StrReplace;

impl Tool for StrReplace {
    fn name(&self) -> &'static str {
        "str_replace"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec { name: "str_replace".into(), description: String::new(), parameters: serde_json::json!({"type": "object"}) }
    }
    fn access(&self, _args: &Value, _ctx: &ToolCtx) -> Result<Access, ToolError> {
        Ok(Access::None)
    }
    fn summary(&self, _args: &Value) -> String {
        String::new()
    }
    fn run<'a>(&'a self, _args: Value, _ctx: &'a ToolCtx) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Err(ToolError::new("not implemented")) })
    }
}
