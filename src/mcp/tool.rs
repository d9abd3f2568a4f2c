//! The thin adapter from MCP tools to rein's tool trait. Everything MCP-specific lives in the
//! manager; this file only maps the trait's methods onto it.

use super::manager::McpManager;
use super::schema::split_name;
use crate::llm::ToolSpec;
use crate::tools::{Access, Tool, ToolCtx, ToolError, ToolOutput, ToolSource};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The trait wants `&'static str` names; MCP names come and go, so each distinct name is
/// stored once for the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut guard = match NAMES.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(known) = set.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    set.insert(leaked);
    leaked
}

/// One MCP tool as a rein tool.
pub struct McpTool {
    name: &'static str,
    spec: ToolSpec,
    manager: McpManager,
}

impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn access(&self, args: &Value, _ctx: &ToolCtx) -> Result<Access, ToolError> {
        if let Some(why) = self.manager.unavailable(self.name) {
            return Err(ToolError(why));
        }
        let (server, tool) = split_name(self.name).unwrap_or(("", self.name));
        Ok(Access::Mcp {
            server: server.to_string(),
            tool: tool.to_string(),
            args: args.clone(),
        })
    }

    fn summary(&self, args: &Value) -> String {
        let text = serde_json::to_string(args).unwrap_or_default();
        if text.chars().count() > 80 {
            format!("{}…", text.chars().take(80).collect::<String>())
        } else {
            text
        }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let out = self
                .manager
                .call(self.name, args, &ctx.cancel, &ctx.temp_dir, &ctx.call_id)
                .await
                .map_err(ToolError)?;
            Ok(ToolOutput {
                text: out.text,
                is_error: out.is_error,
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
}

impl ToolSource for McpToolSource {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.manager
            .offered(self.subagent)
            .into_iter()
            .map(|t| {
                Arc::new(McpTool {
                    name: intern(&t.name),
                    spec: t.spec,
                    manager: self.manager.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(t) = self.tools().into_iter().find(|t| t.name() == name) {
            return Some(t);
        }
        // A server still starting (or restarting) has not listed its tools: the call waits.
        let (server, _) = split_name(name)?;
        let allowed = !self.subagent || self.manager.server_for_subagents(server);
        (allowed && self.manager.knows(name)).then(|| {
            Arc::new(McpTool {
                name: intern(name),
                spec: ToolSpec {
                    name: name.to_string(),
                    description: String::new(),
                    parameters: Value::Null,
                },
                manager: self.manager.clone(),
            }) as Arc<dyn Tool>
        })
    }
}
