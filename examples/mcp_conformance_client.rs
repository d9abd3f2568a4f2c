//! rein's MCP client as a command for `@modelcontextprotocol/conformance client`: the harness
//! starts a scenario server and runs this with its URL as the last argument. It connects the
//! way rein does (the same manager, streamable HTTP), lists the tools and calls each one once
//! (`add_numbers` with numbers), then disconnects. Exit status 1 when it could not connect.

use rein::mcp::config::{Origin, ServerEntry};
use rein::mcp::{McpManager, McpSetup};
use serde_json::json;
use std::sync::Arc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Some(url) = std::env::args()
        .next_back()
        .filter(|u| u.starts_with("http"))
    else {
        eprintln!("usage: mcp_conformance_client URL");
        return std::process::ExitCode::from(2);
    };
    let entry: ServerEntry = match toml::from_str(&format!("url = {}", toml::Value::String(url))) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("bad URL: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match entry.resolve("conf", Origin::User("conformance".into())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let temp = std::env::temp_dir();
    let manager = McpManager::new(McpSetup {
        servers: vec![server],
        gate: Arc::new(|_| Ok(())),
        workspace: temp.clone(),
        notify: Arc::new(|n| eprintln!("{n}")),
        announced: Vec::new(),
    });
    manager.start_all();
    let cancel = Default::default();
    manager.wait_started(&cancel).await;
    let tools = manager.offered(false);
    if tools.is_empty() {
        eprintln!(
            "{}",
            rein::protocol::describe_mcp_servers(&manager.status())
        );
    }
    for tool in tools {
        let args = match tool.tool.as_str() {
            "add_numbers" => json!({"a": 2, "b": 3}),
            _ => json!({}),
        };
        match manager
            .call(&tool.name, args, &cancel, &temp, "conformance")
            .await
        {
            Ok(out) => println!("{}: {}", tool.tool, out.text),
            Err(e) => println!("{}: error: {e}", tool.tool),
        }
    }
    let failed = manager
        .status()
        .iter()
        .any(|s| matches!(s.state, rein::protocol::McpState::Failed { .. }));
    manager.shutdown().await;
    if failed {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
