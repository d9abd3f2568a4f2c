//! MCP client: use the tool servers people already run (GitHub, databases, browsers, docs).
//!
//! - [`config`]: `[mcp_servers.NAME]` and `.mcp.json` definitions, `${VAR}` expansion.
//! - [`client`]: one connection on the official SDK (`rmcp`), stdio or streamable HTTP.
//! - [`manager`]: background start, state, restart after a crash, status, calls.
//! - [`schema`] / [`result`]: tool names and schemas for the providers; results for the model.
//! - [`tool`]: the adapter to rein's tool trait.
//! - [`cli`]: `rein mcp list|add|remove`.
//! - [`trust`]: project servers only start once the project's trust approves their command line.

pub mod cli;
pub mod client;
pub mod config;
pub mod manager;
pub mod result;
pub mod schema;
pub mod tool;
pub mod trust;

pub use config::ServerConfig;
pub use manager::{McpManager, McpSetup, OfferedTool, ProjectGate};
pub use tool::McpToolSource;
