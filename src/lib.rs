//! rein: a terminal coding agent. A full-screen TUI (and a headless `exec` mode) around a
//! small agent core: the loop, tools, permissions, sandbox, context and memory.

// Every byte printed outside the TUI goes through `cli` and the one sanitizer (clippy.toml).
#![deny(clippy::disallowed_macros, clippy::disallowed_methods)]

pub mod agent;
pub mod checkpoint;
pub mod cli;
pub mod commands;
pub mod config;
pub mod discover;
pub mod exec;
pub(crate) mod git;
pub mod hooks;
pub mod images;
pub mod launch;
pub mod llm;
pub mod local;
pub mod mcp;
pub mod netproxy;
pub mod policy;
pub mod protocol;
pub mod repo;
pub mod sandbox;
pub mod sanitize;
pub mod session_cli;
pub mod session_store;
pub mod skills;
pub mod sync;
pub mod text;
pub mod tools;
pub mod trust;
pub mod tui;
