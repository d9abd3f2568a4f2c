//! The thin adapter from MCP tools to rein's prepared-call tool trait. Everything
//! MCP-specific lives in the manager; this file only maps the trait's methods onto it.

use super::manager::McpManager;
use super::schema::split_name;
use crate::llm::ToolSpec;
use crate::protocol::ToolDisplay;
use crate::tools::{Access, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, ToolSource};
use serde_json::Value;
use std::sync::Arc;

/// One MCP tool as a rein tool.
pub struct McpTool {
    spec: ToolSpec,
    /// The server it belongs to.
    server: String,
    /// Its name on the server.
    tool: String,
    manager: McpManager,
}

impl McpTool {
    fn display(&self, args: Value) -> ToolDisplay {
        ToolDisplay::Mcp {
            name: self.spec.name.clone(),
            server: self.server.clone(),
            tool: self.tool.clone(),
            args,
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn prepare(&self, args: Value, _ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let name = self.spec.name.clone();
        if let Some(why) = self.manager.unavailable(&name) {
            return Err(ToolError(why));
        }
        let display = self.display(args.clone());
        let access = Access::Mcp {
            server: self.server.clone(),
            tool: self.tool.clone(),
            args,
        };
        Ok(Box::new(McpCall {
            name,
            access,
            display,
            manager: self.manager.clone(),
        }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        self.display(args.clone())
    }
}

/// One call of an MCP tool: rated, shown and sent exactly as the model made it.
struct McpCall {
    name: String,
    access: Access,
    display: ToolDisplay,
    manager: McpManager,
}

impl Prepared for McpCall {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        self.display.clone()
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move {
            let McpCall {
                name,
                access,
                manager,
                ..
            } = *self;
            let args = match access {
                Access::Mcp { args, .. } => args,
                _ => Value::Null,
            };
            let out = manager
                .call(&name, args, &ctx.cancel, &ctx.temp_dir, &ctx.call_id)
                .await
                .map_err(ToolError)?;
            Ok(if out.is_error {
                ToolOutput::error(out.text)
            } else {
                ToolOutput::ok(out.text)
            })
        })
    }
}

/// The MCP tools of one loop: all of them for the main agent, only servers configured with
/// `subagents = true` for subagents.
pub struct McpToolSource {
    manager: McpManager,
    subagent: bool,
}

impl McpToolSource {
    /// The tools `manager` offers to the main agent (`subagent = false`) or to subagents.
    pub fn new(manager: McpManager, subagent: bool) -> McpToolSource {
        McpToolSource { manager, subagent }
    }

    fn tool(&self, spec: ToolSpec, server: String, tool: String) -> Arc<dyn Tool> {
        Arc::new(McpTool {
            spec,
            server,
            tool,
            manager: self.manager.clone(),
        })
    }
}

impl ToolSource for McpToolSource {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.manager
            .offered(self.subagent)
            .into_iter()
            .map(|t| self.tool(t.spec, t.server, t.tool))
            .collect()
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(t) = self
            .manager
            .offered(self.subagent)
            .into_iter()
            .find(|t| t.name == name)
        {
            return Some(self.tool(t.spec, t.server, t.tool));
        }
        // A server still starting (or restarting) has not listed its tools: the call waits.
        let (server, tool) = split_name(name)?;
        let allowed = !self.subagent || self.manager.server_for_subagents(server);
        (allowed && self.manager.knows(name)).then(|| {
            let spec = ToolSpec {
                name: name.to_string(),
                description: String::new(),
                parameters: Value::Null,
            };
            self.tool(spec, server.to_string(), tool.to_string())
        })
    }
}
