//! `rein mcp list | add | remove`: the servers, their state and tools; adding and removing a
//! user server by editing the user config file in place (comments and layout kept).

use super::config::{ServerEntry, check_name};
use super::manager::{McpManager, McpSetup};
use std::path::Path;
use std::sync::Arc;

/// `rein mcp ...`.
#[derive(clap::Subcommand, Debug)]
pub enum McpCommand {
    /// The configured servers: state, tools and the approximate tokens their schemas cost.
    List,
    /// Add a server to your user config: `rein mcp add NAME -- CMD ARGS…` or
    /// `rein mcp add NAME --url URL`.
    Add {
        /// The server's name (tools are offered as `mcp__NAME__TOOL`).
        name: String,
        /// A streamable HTTP endpoint instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// `KEY=VALUE` for the server's environment (`${VAR}` is read from yours at start).
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// `Name: value` request header for an HTTP server (`${VAR}` allowed).
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// The command and its arguments (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Remove a server from your user config.
    Remove {
        /// The server's name.
        name: String,
    },
}

/// Runs one `rein mcp` command with the settings of this directory; `Ok` is the text to print.
pub async fn run(command: McpCommand, config: &crate::config::Config) -> Result<String, String> {
    let config_file = &config.config_dir.join("config.toml");
    match command {
        McpCommand::List => list(config).await,
        McpCommand::Add {
            name,
            url,
            env,
            headers,
            command,
        } => {
            let entry = new_entry(&name, url, &env, &headers, &command)?;
            edit_config(config_file, |doc| add_server(doc, &name, entry))?;
            Ok(format!(
                "Added MCP server {name} to {}.",
                config_file.display()
            ))
        }
        McpCommand::Remove { name } => {
            edit_config(config_file, |doc| remove_server(doc, &name))?;
            Ok(format!(
                "Removed MCP server {name} from {}.",
                config_file.display()
            ))
        }
    }
}

async fn list(config: &crate::config::Config) -> Result<String, String> {
    let servers = config.mcp_servers.clone();
    if servers.is_empty() {
        return Ok(format!(
            "No MCP servers configured. Add one with `rein mcp add NAME -- CMD ARGS…` (it goes \
             into {}).",
            config.config_dir.join("config.toml").display()
        ));
    }
    let manager = McpManager::new(McpSetup {
        servers,
        gate: super::trust::gate(config.trust.clone()),
        workspace: config.cwd.clone(),
        // The list shows every failure itself.
        notify: Arc::new(|_| {}),
        announced: Vec::new(),
    });
    manager.start_all();
    manager.wait_started(&Default::default()).await;
    let text = crate::protocol::describe_mcp_servers(&manager.status());
    manager.shutdown().await;
    Ok(text)
}

fn new_entry(
    name: &str,
    url: Option<String>,
    env: &[String],
    headers: &[String],
    command: &[String],
) -> Result<toml_edit::Table, String> {
    check_name(name)?;
    let mut t = toml_edit::Table::new();
    match (url, command.split_first()) {
        (Some(url), None) => {
            t["url"] = toml_edit::value(url);
            let mut h = toml_edit::InlineTable::new();
            for header in headers {
                let (k, v) = header
                    .split_once(':')
                    .ok_or_else(|| format!("--header {header:?} is not `Name: value`"))?;
                h.insert(k.trim(), v.trim().into());
            }
            if !h.is_empty() {
                t["headers"] = toml_edit::value(h);
            }
        }
        (None, Some((program, args))) => {
            t["command"] = toml_edit::value(program.as_str());
            if !args.is_empty() {
                t["args"] = toml_edit::value(
                    args.iter()
                        .map(String::as_str)
                        .collect::<toml_edit::Array>(),
                );
            }
            if !headers.is_empty() {
                return Err("--header is for HTTP servers (--url)".into());
            }
        }
        (Some(_), Some(_)) => {
            return Err("give either --url or a command after --, not both".into());
        }
        (None, None) => {
            return Err(
                "give the command after `--` (rein mcp add NAME -- CMD ARGS…) or --url URL".into(),
            );
        }
    }
    let mut e = toml_edit::InlineTable::new();
    for pair in env {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("--env {pair:?} is not KEY=VALUE"))?;
        e.insert(k, v.into());
    }
    if !e.is_empty() {
        t["env"] = toml_edit::value(e);
    }
    // What rein will read back must be a valid definition.
    let check: ServerEntry = toml::from_str(&t.to_string()).map_err(|e| e.to_string())?;
    check.resolve(name, super::config::Origin::User(Default::default()))?;
    Ok(t)
}

fn add_server(
    doc: &mut toml_edit::DocumentMut,
    name: &str,
    entry: toml_edit::Table,
) -> Result<(), String> {
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or("`mcp_servers` in the config is not a table")?;
    if servers.contains_key(name) {
        return Err(format!(
            "an MCP server named {name} exists already; remove it first (rein mcp remove {name})"
        ));
    }
    servers.insert(name, toml_edit::Item::Table(entry));
    Ok(())
}

fn remove_server(doc: &mut toml_edit::DocumentMut, name: &str) -> Result<(), String> {
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(|s| s.as_table_like_mut())
        .and_then(|s| s.remove(name));
    match removed {
        Some(_) => Ok(()),
        None => Err(format!(
            "there is no MCP server named {name} in the user config"
        )),
    }
}

/// Applies `change` to the config file and writes it back atomically (a new file if missing).
pub(crate) fn edit_config(
    path: &Path,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), String>,
) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        format!(
            "{} is not valid TOML, so it was left alone: {e}",
            path.display()
        )
    })?;
    change(&mut doc)?;
    let dir = path.parent().ok_or("the config file has no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn add_and_remove_keep_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let original = "# my settings\nmodel = \"m\"  # keep me\n\n[[rules]]\npattern = \"ls*\"\naction = \"allow\"\n";
        std::fs::write(&path, original).unwrap();
        let entry = new_entry(
            "fs",
            None,
            &strs(&["K=${HOME}"]),
            &[],
            &strs(&["npx", "-y", "srv", "."]),
        )
        .unwrap();
        edit_config(&path, |d| add_server(d, "fs", entry)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(original), "{text}");
        let servers = super::super::config::read_toml_servers(
            &path,
            super::super::config::Origin::User(path.clone()),
        )
        .unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].describe(), "K=${HOME} npx -y srv .");

        let dup = new_entry("fs", Some("http://h/mcp".into()), &[], &[], &[]).unwrap();
        assert!(
            edit_config(&path, |d| add_server(d, "fs", dup))
                .unwrap_err()
                .contains("exists")
        );
        edit_config(&path, |d| remove_server(d, "fs")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(original) && !text.contains("npx"),
            "{text}"
        );
        assert!(edit_config(&path, |d| remove_server(d, "fs")).is_err());
    }

    #[test]
    fn bad_input_is_refused_and_a_broken_file_is_left_alone() {
        assert!(new_entry("a b", None, &[], &[], &strs(&["x"])).is_err());
        assert!(new_entry("a", None, &[], &[], &[]).is_err());
        assert!(new_entry("a", None, &strs(&["NOEQUALS"]), &[], &strs(&["x"])).is_err());
        let h = new_entry(
            "a",
            Some("http://h".into()),
            &[],
            &strs(&["Authorization: Bearer ${T}"]),
            &[],
        )
        .unwrap();
        assert!(h.to_string().contains("Authorization"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = [broken").unwrap();
        let entry = new_entry("x", None, &[], &[], &strs(&["x"])).unwrap();
        assert!(edit_config(&path, |d| add_server(d, "x", entry)).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "model = [broken");
    }
}
