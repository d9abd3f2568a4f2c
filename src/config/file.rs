//! The config file format (`config.toml`) and `~/.agents/env` parsing.

use super::{ConfigError, SandboxMode};
use crate::policy::Action;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A config file's contents (all optional). A new key a repository may set on its own must
/// also be listed in `project::SAFE_KEYS`; otherwise a project's value waits for trust.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) provider: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<String>,
    pub(super) model: Option<String>,
    pub(super) context_window: Option<u64>,
    pub(super) max_output_tokens: Option<u32>,
    /// `reasoning = { effort = "...", summary = "..." }` (the Responses API).
    pub(super) reasoning: Option<FileReasoning>,
    pub(super) connect_timeout_secs: Option<u64>,
    pub(super) first_byte_timeout_secs: Option<u64>,
    pub(super) idle_timeout_secs: Option<u64>,
    pub(super) max_retries: Option<u32>,
    pub(super) retry_backoff_ms: Option<u64>,
    #[serde(alias = "max_turns")]
    pub(super) max_requests: Option<u32>,
    pub(super) bash_timeout_secs: Option<u64>,
    pub(super) theme: Option<String>,
    /// `notify = "auto" | "bell" | "osc9" | "osc777" | "off"`.
    pub(super) notify: Option<String>,
    /// `notify_command = ["notify-send", "rein"]`: run with one JSON argument.
    pub(super) notify_command: Option<Vec<String>>,
    pub(super) sandbox: Option<SandboxSetting>,
    pub(super) edits: Option<String>,
    pub(super) mode: Option<String>,
    /// `small_model = "auto" | "on" | "off" | "first_call,tools,files,nudges"`.
    pub(super) small_model: Option<String>,
    pub(super) auto_compact: Option<bool>,
    pub(super) compact_threshold: Option<f64>,
    pub(super) keep_tool_results: Option<usize>,
    /// `images = "auto" | true | false`: whether attached images are sent to the model.
    pub(super) images: Option<crate::images::ImagesSetting>,
    #[serde(alias = "subagent_max_turns")]
    pub(super) subagent_max_requests: Option<u32>,
    #[serde(default)]
    pub(super) rules: Vec<FileRule>,
    /// Projects whose whole `.rein/config.toml` applies (user file only).
    pub(super) trusted_projects: Option<Vec<String>>,
    /// `[mcp_servers.NAME]`. A project's servers are not screened with the other keys: each
    /// one is its own trust item (`mcp::trust`), so a changed command line asks again.
    pub(super) mcp_servers: Option<BTreeMap<String, crate::mcp::config::ServerEntry>>,
    /// `[[hooks.EVENT]]`. A project's hooks are not screened with the other keys: each one is
    /// its own trust item (`hooks::config`), so a changed hook asks again.
    pub(super) hooks: Option<crate::hooks::config::HookTables>,
}

/// The `reasoning` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileReasoning {
    pub(super) effort: Option<String>,
    pub(super) summary: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum SandboxSetting {
    Mode(SandboxMode),
    Table {
        mode: Option<SandboxMode>,
        /// `true`/`false`, or the `[sandbox.network]` table (the allow-list; user file only).
        network: Option<NetworkSetting>,
        /// More secret paths to hide from commands.
        hide: Option<Vec<String>>,
        /// Older spelling of `home_allow` (user file only).
        unhide: Option<Vec<String>>,
        /// Variables commands get besides the allow-list (user file only).
        pass_env: Option<Vec<String>>,
        /// More places under home commands may read (user file only).
        home_allow: Option<Vec<String>>,
        /// More places anywhere commands may read (user file only).
        read_allow: Option<Vec<String>>,
    },
}

/// `sandbox.network`: the whole network or none, or only the hosts of an allow-list.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum NetworkSetting {
    /// `network = true` / `false`.
    All(bool),
    /// `[sandbox.network] allow = [...]`, `presets = [...]`.
    Hosts(NetworkHosts),
}

impl NetworkSetting {
    /// The whole network (`true`), none (`false`); `None` for an allow-list.
    pub(super) fn all(&self) -> Option<bool> {
        match self {
            NetworkSetting::All(b) => Some(*b),
            NetworkSetting::Hosts(_) => None,
        }
    }
}

/// The `[sandbox.network]` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NetworkHosts {
    /// `host`, `*.suffix`, `host:port`, `host:*`.
    #[serde(default)]
    pub(super) allow: Vec<String>,
    /// `python`, `rust`, `npm` (see `netproxy::allow::PRESETS`).
    #[serde(default)]
    pub(super) presets: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRule {
    #[serde(default = "default_rule_tool")]
    pub(super) tool: String,
    /// Optional for MCP tools, where it matches the arguments (`*`: any).
    #[serde(default = "any_pattern")]
    pub(super) pattern: String,
    pub(super) action: Action,
}

fn any_pattern() -> String {
    "*".into()
}

fn default_rule_tool() -> String {
    "bash".into()
}

/// Parses `~/.agents/env`: `KEY=VALUE` lines, `#` comments, optional `export ` and quotes.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim();
        let value = if value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')))
        {
            value[1..value.len() - 1].to_string()
        } else {
            // An unquoted value may carry a trailing ` # comment`.
            match value.find(" #") {
                Some(i) => value[..i].trim_end().to_string(),
                None => value.to_string(),
            }
        };
        out.push((key.to_string(), value));
    }
    out
}

/// Reads a config file as a TOML table; `None` when there is none.
pub(super) fn read_table(path: &Path) -> Result<Option<toml::Table>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .parse::<toml::Table>()
            .map(Some)
            .map_err(|e| ConfigError::Invalid(format!("{} is not valid: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::Invalid(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// The settings of a config file's table.
pub(super) fn file_config(path: &Path, table: toml::Table) -> Result<FileConfig, ConfigError> {
    table
        .try_into::<FileConfig>()
        .map_err(|e| ConfigError::Invalid(format!("{} is not valid: {e}", path.display())))
}

/// Old key names a file still uses, as notices that say the new name.
pub(super) fn deprecations(path: &Path, table: &toml::Table) -> Vec<String> {
    [
        ("max_turns", "max_requests"),
        ("subagent_max_turns", "subagent_max_requests"),
    ]
    .into_iter()
    .filter(|(old, _)| table.contains_key(*old))
    .map(|(old, new)| {
        format!(
            "{}: `{old}` is now called `{new}` (it counts model requests, not your messages); \
             rename it: the old name still works but will go away.",
            path.display()
        )
    })
    .collect()
}
