//! One gate for every process rein starts (bash, MCP servers, hooks, editors, the local model,
//! any helper): it decides the child's environment (an allow-list, `env`), its working directory
//! (never the workspace unless the person chose that for this project) and its confinement.
//! docs/sandbox.md lists every caller and the rule each follows.

pub mod env;
