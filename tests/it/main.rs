//! The integration tests: one binary, so the library links once and all suites share
//! the two cores (tests/tui_lazy.rs keeps a process of its own).

#[macro_use]
#[path = "../support/mod.rs"]
mod support;
#[cfg(target_os = "linux")]
#[macro_use]
#[path = "../sandbox_e2e/mod.rs"]
mod sandbox_e2e;

mod agent_ops;
mod checkpoint_scan;
mod cli_e2e;
mod commands;
mod context_e2e;
mod context_lib;
mod eval_runner;
mod exec_e2e;
mod flow_modes;
mod flow_pty;
mod hooks;
mod images;
mod leaks;
mod local;
mod loop_guard;
mod mcp_e2e;
mod mcp_faults;
mod mcp_launch;
mod mcp_servers;
mod mcp_trust;
mod model_aids;
mod net_proxy;
mod notify;
mod policy_args_paths;
mod policy_classes;
mod policy_cli;
mod policy_commands;
mod policy_e2e;
mod policy_git_dirs;
mod policy_oracle;
mod printers_pty;
mod project_links;
mod project_model;
mod read_before_write;
mod real_model;
mod responses;
mod resume_pty;
mod review_flow;
mod rewind_attack;
mod rewind_pty;
mod rewind_session;
mod sandbox;
mod sandbox_escape;
mod sandbox_fallback;
mod sandbox_forked;
mod sandbox_zygote;
mod scripted_server;
mod session_store;
mod sessions_e2e;
mod skills;
mod small_models;
mod sse_fixtures;
mod startup_cost;
mod subagent_e2e;
mod tool_guards;
mod trust_dialog_pty;
mod trust_e2e;
mod tui_proptest;
mod tui_pty;
mod tui_render;
mod tui_resume;
