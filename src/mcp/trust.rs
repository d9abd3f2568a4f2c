//! Project servers (`.mcp.json`, `.rein/config.toml`) are code from the repository: none starts
//! until the person has trusted the project and approved that server's exact command line.
//! The same holds for a server of the person's own config that would use the repository: a
//! working directory inside it or a relative command (`launch::project_decision`).
//!
//! Each such server is one [`TrustItem`] (id `mcp.<name>`) whose fingerprint covers
//! everything that decides what runs: the program, its arguments, the working directory and
//! the environment as written (names and values, `${VAR}` unexpanded), or the URL and headers.
//! The config layer lists the items that wait in the one trust prompt; [`gate`] turns the
//! project's trust decision into the manager's start check, so a changed command line is a
//! new fingerprint and stays stopped until approved again.

use super::config::{ServerConfig, Transport, env_lookup, expand};
use super::manager::ProjectGate;
use crate::trust::{ProjectTrust, TrustItem};
use std::path::Path;
use std::sync::Arc;

/// Why `server` needs this project's trust to start, if it does: it comes from the project,
/// or it would run in or from the workspace. `None`: it starts outside the workspace, unasked.
pub fn needs_trust(server: &ServerConfig, workspace: &Path) -> Option<String> {
    if server.origin.is_project() {
        return Some(format!(
            "it is defined by the project ({})",
            server.origin.path().display()
        ));
    }
    let Transport::Stdio { command, cwd, .. } = &server.transport else {
        return None;
    };
    // Expanded only to judge it; an unset variable fails at start with its own message.
    let lookup = |v: &str| env_lookup(v);
    let program = expand(command, &lookup).unwrap_or_else(|_| command.clone());
    crate::launch::project_decision(&program, cwd.as_deref(), workspace)
}

/// The trust item of a server that needs trust: its full command line shown, fingerprinted
/// whole.
pub fn trust_item(server: &ServerConfig) -> TrustItem {
    let line = server.describe();
    let file = server
        .origin
        .path()
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    TrustItem::new(
        format!("mcp.{}", server.name),
        format!(
            "MCP server {} (from {file}) runs{}: {}",
            server.name,
            if server.origin.is_project() {
                ""
            } else {
                " in this project"
            },
            crate::sanitize::visible_line(&line)
        ),
        &format!("mcp-server-v1\0{}\0{line}", server.name),
    )
}

/// The start check for this project: a server that needs trust ([`needs_trust`]) starts only
/// when `trust` allows its item (the whole project trusted, or this exact command line
/// approved).
pub fn gate(trust: ProjectTrust) -> ProjectGate {
    Arc::new(move |server: &ServerConfig| {
        let Some(why) = needs_trust(server, &trust.project) else {
            return Ok(());
        };
        if trust.allows(&trust_item(server)) {
            return Ok(());
        }
        Err(format!(
            "{why} and its command line ({}) is not approved for this project; start `rein` \
             here and trust it when asked, or run with --trust",
            crate::sanitize::visible_line(&server.describe())
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::read_mcp_json;
    use crate::trust::TrustStore;
    use std::path::Path;

    fn write_project(dir: &Path, args: &str) {
        std::fs::write(
            dir.join(".mcp.json"),
            format!(r#"{{"mcpServers": {{"tool": {{"command": "node", "args": {args}}}}}}}"#),
        )
        .unwrap();
    }

    #[test]
    fn an_approved_command_line_starts_and_a_changed_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_dir(&dir.path().join("data"));
        write_project(dir.path(), r#"["server.js"]"#);
        let servers = read_mcp_json(dir.path()).unwrap();
        let item = trust_item(&servers[0]);
        assert!(item.summary.contains("node server.js"), "{}", item.summary);
        let untrusted = ProjectTrust::load(&store, dir.path(), None);
        let refusal = gate(untrusted)(&servers[0]).unwrap_err();
        assert!(refusal.contains(".mcp.json"), "{refusal}");

        store.approve(dir.path(), &[item]).unwrap();
        let trusted = ProjectTrust::load(&store, dir.path(), None);
        assert!(gate(trusted.clone())(&servers[0]).is_ok());

        write_project(dir.path(), r#"["server.js", "--evil"]"#);
        let changed = read_mcp_json(dir.path()).unwrap();
        let refusal = gate(trusted)(&changed[0]).unwrap_err();
        assert!(refusal.contains("node server.js --evil"), "{refusal}");
    }

    #[test]
    fn the_fingerprint_covers_arguments_cwd_and_environment_and_control_characters_show() {
        let dir = tempfile::tempdir().unwrap();
        let variants = [
            r#"{"command": "node", "args": ["s.js"]}"#,
            r#"{"command": "node", "args": ["s.js", "x"]}"#,
            r#"{"command": "node", "args": ["s.js"], "cwd": "/tmp"}"#,
            r#"{"command": "node", "args": ["s.js"], "env": {"NODE_OPTIONS": "--require=evil"}}"#,
            r#"{"command": "nodejs", "args": ["s.js"]}"#,
            r#"{"url": "https://a.example/mcp"}"#,
            r#"{"url": "https://a.example/mcp", "headers": {"X": "y"}}"#,
        ];
        let mut seen = std::collections::HashSet::new();
        for v in variants {
            std::fs::write(
                dir.path().join(".mcp.json"),
                format!(r#"{{"mcpServers": {{"s": {v}}}}}"#),
            )
            .unwrap();
            let item = trust_item(&read_mcp_json(dir.path()).unwrap()[0]);
            assert_eq!(item.id, "mcp.s");
            assert!(seen.insert(item.fingerprint), "{v} must be a new item");
        }
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"s": {"command": "node", "args": ["ok\r\u001b[2Kevil"]}}}"#,
        )
        .unwrap();
        let item = trust_item(&read_mcp_json(dir.path()).unwrap()[0]);
        assert!(
            !item.summary.chars().any(char::is_control),
            "{}",
            item.summary
        );
        assert!(item.summary.contains("evil"), "{}", item.summary);
    }
}
