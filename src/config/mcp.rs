//! MCP servers from the config layers: the user's `[mcp_servers]`, then the project's
//! (`.rein/config.toml` and `.mcp.json`), each project server a trust item of its own.

use super::raw::{McpTables, Sourced, UserAndProject};
use super::{ConfigError, IgnoredSetting, Source};
use crate::mcp::ServerConfig;
use crate::mcp::config::{Origin, from_tables, merge, read_mcp_json};
use crate::trust::ProjectTrust;
use std::path::{Path, PathBuf};

/// Every configured server. A broken user entry is an error; a broken project file only
/// loses its servers (with a notice). Servers that need the project's trust (the project's, and
/// the user's that would use the workspace: `mcp::trust::needs_trust`) and that it does not
/// allow are listed as ignored with their trust item, so the one trust prompt shows each.
pub(super) fn derive_mcp_servers(
    tables: UserAndProject<McpTables>,
    cwd: &Path,
    trust: &ProjectTrust,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let user = match &tables.user {
        Some(t) => {
            from_tables(&t.value, &Origin::User(file_of(t))).map_err(ConfigError::Invalid)?
        }
        None => Vec::new(),
    };
    let mut broken = |file: PathBuf, reason: String| {
        ignored.push(IgnoredSetting {
            key: "mcp_servers".into(),
            file,
            reason,
            trust: None,
        })
    };
    let mut project = Vec::new();
    if let Some(t) = &tables.project {
        match from_tables(&t.value, &Origin::Project(file_of(t))) {
            Ok(servers) => project = servers,
            Err(e) => broken(file_of(t), e),
        }
    }
    match read_mcp_json(cwd) {
        Ok(servers) => project = merge(project, servers),
        Err(e) => broken(cwd.join(".mcp.json"), e),
    }
    let servers = merge(user, project);
    for s in servers
        .iter()
        .filter(|s| s.enabled && crate::mcp::trust::needs_trust(s, cwd).is_some())
    {
        let item = crate::mcp::trust::trust_item(s);
        if !trust.allows(&item) {
            ignored.push(IgnoredSetting {
                key: format!("mcp_servers.{}", s.name),
                file: s.origin.path().to_path_buf(),
                reason: "this project is not trusted".into(),
                trust: Some(item),
            });
        }
    }
    Ok(servers)
}

fn file_of<T>(s: &Sourced<T>) -> PathBuf {
    match &s.source {
        Source::File(path) => path.clone(),
        _ => PathBuf::new(),
    }
}
