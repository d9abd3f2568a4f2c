//! The MCP servers of a session and the tools they add to each loop: the user's servers, and
//! those the project's trust lets start (`mcp::trust::gate`): the project's own, and the
//! user's that would run in or from the workspace.

use crate::config::Config;
use crate::mcp::{McpManager, McpSetup, McpToolSource};
use crate::protocol::{Event, EventSink};
use crate::tools::ToolSource;
use std::sync::Arc;

/// The session's MCP servers, not started yet.
pub(super) fn manager(config: &Config, events: EventSink) -> McpManager {
    McpManager::new(McpSetup {
        servers: config.mcp_servers.clone(),
        gate: crate::mcp::trust::gate(config.trust.clone()),
        workspace: config.cwd.clone(),
        notify: Arc::new(move |text| events.send(Event::notice(text))),
        announced: announced_refusals(config),
    })
}

/// The servers the startup notice about an untrusted project already names.
fn announced_refusals(config: &Config) -> Vec<String> {
    let waiting = config.untrusted_items();
    config
        .mcp_servers
        .iter()
        .filter(|s| waiting.contains(&crate::mcp::trust::trust_item(s)))
        .map(|s| s.name.clone())
        .collect()
}

/// The MCP tools of a loop (`None` when no server is configured).
pub(super) fn source(mcp: &McpManager, subagent: bool) -> Option<Arc<dyn ToolSource>> {
    (!mcp.is_empty())
        .then(|| Arc::new(McpToolSource::new(mcp.clone(), subagent)) as Arc<dyn ToolSource>)
}
