//! Project servers (`.mcp.json`, `.rein/config.toml`) are code from the repository: none starts
//! until the person has trusted the project and approved that server's exact command line.
//!
//! The trust store and its prompt live elsewhere; this module gives them the items to list
//! ([`project_trust_items`]) and takes their answer back as a [`ProjectGate`]. Until the store
//! is wired in, [`refuse_all`] keeps every project server stopped and says why.

use super::config::{ServerConfig, project_servers};
use super::manager::ProjectGate;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// One thing the trust prompt lists for a project server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustItem {
    /// The server's name.
    pub name: String,
    /// Its full command line (or URL and headers), as the file says, for the person to read.
    pub command_line: String,
    /// Changes whenever anything that decides what runs changes (a new item to approve).
    pub fingerprint: String,
}

/// The fingerprint of a server definition: SHA-256 over its name, what it runs and where.
pub fn fingerprint(server: &ServerConfig) -> String {
    let mut h = Sha256::new();
    h.update(b"rein-mcp-server-v1\0");
    h.update(server.name.as_bytes());
    h.update(b"\0");
    h.update(server.describe().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The trust items of the project in `workspace` (a broken project file is an error naming it).
pub fn project_trust_items(workspace: &Path) -> Result<Vec<TrustItem>, String> {
    Ok(project_servers(workspace)?
        .iter()
        .map(|s| TrustItem {
            name: s.name.clone(),
            command_line: s.describe(),
            fingerprint: fingerprint(s),
        })
        .collect())
}

/// The gate used until the trust store is wired in: no project server starts.
pub fn refuse_all() -> ProjectGate {
    Arc::new(|server: &ServerConfig| {
        Err(format!(
            "it is defined by the project ({}), and rein cannot ask you to trust project servers \
             yet; to use it, add it to your own config with `rein mcp add {} …`",
            server.origin.path().display(),
            server.name
        ))
    })
}

/// A gate that lets through exactly the servers whose fingerprints were approved.
pub fn approved(fingerprints: HashSet<String>) -> ProjectGate {
    Arc::new(move |server: &ServerConfig| {
        if fingerprints.contains(&fingerprint(server)) {
            Ok(())
        } else {
            Err(format!(
                "its command line ({}) has not been approved for this project",
                server.describe()
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_project(dir: &Path, args: &str) {
        std::fs::write(
            dir.join(".mcp.json"),
            format!(r#"{{"mcpServers": {{"tool": {{"command": "node", "args": {args}}}}}}}"#),
        )
        .unwrap();
    }

    #[test]
    fn a_changed_command_line_is_a_new_item_and_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_project(dir.path(), r#"["server.js"]"#);
        let items = project_trust_items(dir.path()).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].command_line, "node server.js");
        let gate = approved(items.iter().map(|i| i.fingerprint.clone()).collect());
        let servers = project_servers(dir.path()).unwrap();
        assert!(gate(&servers[0]).is_ok());

        write_project(dir.path(), r#"["server.js", "--evil"]"#);
        let changed = project_trust_items(dir.path()).unwrap();
        assert_ne!(changed[0].fingerprint, items[0].fingerprint);
        let servers = project_servers(dir.path()).unwrap();
        let refusal = gate(&servers[0]).unwrap_err();
        assert!(refusal.contains("node server.js --evil"), "{refusal}");
        assert!(refuse_all()(&servers[0]).unwrap_err().contains(".mcp.json"));
    }
}
