//! MCP server definitions: `[mcp_servers.NAME]` in config.toml and Claude Code's `.mcp.json`.
//!
//! Values keep their `${VAR}` references as written; [`expand`] resolves them only when a
//! server is started, so secrets taken from the environment never reach rein's own state,
//! session files or logs.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default time a server has to start and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 30;
/// Default time one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 120;

/// How rein talks to a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (values may hold `${VAR}`).
        env: BTreeMap<String, String>,
        /// Working directory (default: a fresh directory outside the workspace, or the workspace
        /// for an approved project decision: `crate::launch`).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers (values may hold `${VAR}`).
        headers: BTreeMap<String, String>,
    },
}

/// Where a server definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The person's own config file.
    User(PathBuf),
    /// A file in the project (`.mcp.json` or `.rein/config.toml`): needs trust to start.
    Project(PathBuf),
}

impl Origin {
    /// Whether the definition comes from the repository rather than the person.
    pub fn is_project(&self) -> bool {
        matches!(self, Origin::Project(_))
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        match self {
            Origin::User(p) | Origin::Project(p) => p,
        }
    }
}

/// One configured MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name tools are prefixed with (`mcp__<name>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `enabled = false` keeps the definition without starting it.
    pub enabled: bool,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time one call may take before it is cancelled.
    pub tool_timeout: Duration,
    /// Only these tools are offered (all when `None`).
    pub tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// Whether subagents get this server's tools too.
    pub subagents: bool,
    /// Where it was defined.
    pub origin: Origin,
}

impl ServerConfig {
    /// Whether the server's tool `tool` may be offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// The full command line or URL as written (unexpanded), for the person to read.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut parts: Vec<String> = env
                    .iter()
                    .map(|(k, v)| format!("{k}={}", shell_quote(v)))
                    .collect();
                parts.push(shell_quote(command));
                parts.extend(args.iter().map(|a| shell_quote(a)));
                let line = parts.join(" ");
                match cwd {
                    Some(dir) => format!("(cd {} && {line})", shell_quote(&dir.to_string_lossy())),
                    None => line,
                }
            }
            Transport::Http { url, headers } => {
                let mut line = url.clone();
                for (k, v) in headers {
                    line.push_str(&format!(" -H {}", shell_quote(&format!("{k}: {v}"))));
                }
                line
            }
        }
    }
}

/// Quotes a word for display when it holds anything a shell would split or expand.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,${}".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// One `[mcp_servers.NAME]` table as written in config.toml.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    enabled: Option<bool>,
    startup_timeout_secs: Option<u64>,
    tool_timeout_secs: Option<u64>,
    tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    #[serde(default)]
    subagents: bool,
    /// Claude Code's `type` ("stdio", "http", "sse"): accepted, the fields decide.
    #[serde(rename = "type")]
    kind: Option<String>,
}

impl ServerEntry {
    /// Checks the entry and turns it into a server definition.
    pub fn resolve(self, name: &str, origin: Origin) -> Result<ServerConfig, String> {
        check_name(name)?;
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "MCP server {name:?} has both `command` and `url`; give one of them"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "MCP server {name:?} needs `command` (a program to start) or `url` (a \
                     streamable HTTP endpoint)"
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(format!("MCP server {name:?} has an empty `command`"));
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                }
            }
            (None, Some(url)) => {
                if self.kind.as_deref() == Some("sse") {
                    return Err(format!(
                        "MCP server {name:?} uses the old SSE transport, which rein does not \
                         support; use its streamable HTTP endpoint"
                    ));
                }
                Transport::Http {
                    url,
                    headers: self.headers,
                }
            }
        };
        Ok(ServerConfig {
            name: name.to_string(),
            transport,
            enabled: self.enabled.unwrap_or(true),
            startup_timeout: Duration::from_secs(
                self.startup_timeout_secs
                    .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS)
                    .clamp(1, 600),
            ),
            tool_timeout: Duration::from_secs(
                self.tool_timeout_secs
                    .unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS)
                    .clamp(1, 3600),
            ),
            tools: self.tools,
            disabled_tools: self.disabled_tools,
            subagents: self.subagents,
            origin,
        })
    }
}

/// A server name must fit in a tool name: letters, digits, `-` and `_`, no `__`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "MCP server name {name:?} is not usable: use up to 32 letters, digits, `-` or `_` \
             (no `__`)"
        ))
    }
}

/// Turns config file tables into server definitions; a bad entry is an error naming it.
pub fn from_tables(
    tables: &BTreeMap<String, ServerEntry>,
    origin: &Origin,
) -> Result<Vec<ServerConfig>, String> {
    tables
        .iter()
        .map(|(name, entry)| {
            entry
                .clone()
                .resolve(name, origin.clone())
                .map_err(|e| format!("{}: {e}", origin.path().display()))
        })
        .collect()
}

/// The servers of a project's `.mcp.json` (Claude Code's format: `{"mcpServers": {..}}`).
/// A missing file is no servers; a broken one is an error naming it.
pub fn read_mcp_json(workspace: &Path) -> Result<Vec<ServerConfig>, String> {
    let path = workspace.join(".mcp.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    #[derive(Deserialize)]
    struct McpJson {
        #[serde(rename = "mcpServers", default)]
        servers: BTreeMap<String, ServerEntry>,
    }
    let parsed: McpJson =
        serde_json::from_str(&text).map_err(|e| format!("{} is not valid: {e}", path.display()))?;
    from_tables(&parsed.servers, &Origin::Project(path))
}

/// Combines user and project servers; a user definition wins over a project one of the
/// same name (the person's own choice, already trusted).
pub fn merge(user: Vec<ServerConfig>, project: Vec<ServerConfig>) -> Vec<ServerConfig> {
    let mut out = user;
    for server in project {
        if !out.iter().any(|s| s.name == server.name) {
            out.push(server);
        }
    }
    out
}

/// The `[mcp_servers]` tables of a config.toml (missing file: none).
pub fn read_toml_servers(path: &Path, origin: Origin) -> Result<Vec<ServerConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    #[derive(Deserialize)]
    struct OnlyServers {
        #[serde(default)]
        mcp_servers: BTreeMap<String, ServerEntry>,
    }
    let parsed: OnlyServers =
        toml::from_str(&text).map_err(|e| format!("{} is not valid: {e}", path.display()))?;
    from_tables(&parsed.mcp_servers, &origin)
}

/// Resolves `${VAR}` and `${VAR:-default}` in `text` from `lookup`; an unset variable without
/// a default is an error naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{` in {text:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "the environment variable {var} is not set (it is used as ${{{var}}})"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Reads a variable from the process environment (empty counts as unset).
pub fn env_lookup(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("s3cret".into()),
            _ => None,
        }
    }

    #[test]
    fn expansion_resolves_sets_defaults_and_names_missing_variables() {
        let cases = [
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            ("${TOKEN}${TOKEN}", "s3crets3cret"),
            ("${MISSING:-fallback}", "fallback"),
            ("no vars", "no vars"),
            ("$TOKEN", "$TOKEN"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &lookup).as_deref(), Ok(want), "{input}");
        }
        let err = expand("x ${MISSING}", &lookup).unwrap_err();
        assert!(err.contains("MISSING"), "{err}");
        assert!(expand("${TOKEN", &lookup).is_err());
    }

    #[test]
    fn entries_need_exactly_one_transport() {
        let origin = Origin::User("/c.toml".into());
        let both: ServerEntry = toml::from_str("command = \"x\"\nurl = \"http://h\"").unwrap();
        assert!(both.resolve("s", origin.clone()).is_err());
        let none = ServerEntry::default();
        assert!(
            none.resolve("s", origin.clone())
                .unwrap_err()
                .contains("command")
        );
        let http: ServerEntry =
            toml::from_str("url = \"http://h/mcp\"\ntool_timeout_secs = 5").unwrap();
        let s = http.resolve("web", origin.clone()).unwrap();
        assert_eq!(s.tool_timeout, Duration::from_secs(5));
        assert!(matches!(s.transport, Transport::Http { .. }));
        assert!(toml::from_str::<ServerEntry>("comand = \"x\"").is_err());
    }

    #[test]
    fn names_must_fit_in_a_tool_name() {
        for good in ["github", "my-server", "a_b", "x1"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a__b", "has space", "dots.no", &"x".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allow_list_and_disabled_tools_filter_offers() {
        let entry: ServerEntry =
            toml::from_str("command = \"x\"\ntools = [\"a\", \"b\"]\ndisabled_tools = [\"b\"]")
                .unwrap();
        let s = entry.resolve("s", Origin::User("/c".into())).unwrap();
        assert!(s.offers("a"));
        assert!(!s.offers("b"));
        assert!(!s.offers("c"));
    }

    #[test]
    fn mcp_json_in_claude_code_format_is_read_as_project_servers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server fs", "."], "env": {"K": "${HOME}"}},
                "web": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
            }}"#,
        )
        .unwrap();
        let servers = read_mcp_json(dir.path()).unwrap();
        assert_eq!(servers.len(), 2);
        assert!(servers.iter().all(|s| s.origin.is_project()));
        let fs = servers.iter().find(|s| s.name == "fs").unwrap();
        assert_eq!(fs.describe(), "K=${HOME} npx -y 'server fs' .");
        let web = servers.iter().find(|s| s.name == "web").unwrap();
        assert_eq!(
            web.describe(),
            "https://example.test/mcp -H 'Authorization: Bearer ${TOKEN}'"
        );
        std::fs::write(dir.path().join(".mcp.json"), "{not json").unwrap();
        assert!(read_mcp_json(dir.path()).unwrap_err().contains(".mcp.json"));
        assert!(
            read_mcp_json(&dir.path().join("nowhere"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn user_servers_win_over_project_servers_of_the_same_name() {
        let mk = |name: &str, origin: Origin| {
            ServerEntry {
                command: Some("x".into()),
                ..Default::default()
            }
            .resolve(name, origin)
            .unwrap()
        };
        let user = vec![mk("a", Origin::User("/u".into()))];
        let project = vec![
            mk("a", Origin::Project("/p".into())),
            mk("b", Origin::Project("/p".into())),
        ];
        let merged = merge(user, project);
        assert_eq!(merged.len(), 2);
        assert!(!merged[0].origin.is_project());
        assert!(merged[1].origin.is_project());
    }
}
