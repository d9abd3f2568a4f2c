//! The config file format (`config.toml`) and `~/.agents/env` parsing.

use super::{ConfigError, SandboxMode};
use crate::policy::Action;
use serde::Deserialize;
use std::path::Path;

/// A config file's contents (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) provider: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<String>,
    pub(super) model: Option<String>,
    pub(super) context_window: Option<u64>,
    pub(super) max_output_tokens: Option<u32>,
    pub(super) connect_timeout_secs: Option<u64>,
    pub(super) idle_timeout_secs: Option<u64>,
    pub(super) max_retries: Option<u32>,
    pub(super) retry_backoff_ms: Option<u64>,
    #[serde(alias = "max_turns")]
    pub(super) max_requests: Option<u32>,
    pub(super) bash_timeout_secs: Option<u64>,
    pub(super) theme: Option<String>,
    pub(super) sandbox: Option<SandboxSetting>,
    pub(super) edits: Option<String>,
    pub(super) mode: Option<String>,
    pub(super) auto_compact: Option<bool>,
    pub(super) compact_threshold: Option<f64>,
    pub(super) keep_tool_results: Option<usize>,
    #[serde(alias = "subagent_max_turns")]
    pub(super) subagent_max_requests: Option<u32>,
    #[serde(default)]
    pub(super) rules: Vec<FileRule>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum SandboxSetting {
    Mode(SandboxMode),
    Table {
        mode: Option<SandboxMode>,
        network: Option<bool>,
    },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRule {
    #[serde(default = "default_rule_tool")]
    pub(super) tool: String,
    pub(super) pattern: String,
    pub(super) action: Action,
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

pub(super) fn read_file_config(path: &Path) -> Result<Option<FileConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str::<FileConfig>(&text)
            .map(Some)
            .map_err(|e| ConfigError::Invalid(format!("{} is not valid: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::Invalid(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}
