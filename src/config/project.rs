//! What a project's `.rein/config.toml` may set by itself, and what waits until the person
//! trusts the project: anything that decides where requests, code or the key go.

use super::raw::Sourced;
use super::{IgnoredSetting, Source};
use crate::trust::{ProjectTrust, TrustItem};
use std::path::Path;

/// Keys a project file may set without trust: they change how rein works here, not where data
/// goes. `sandbox`, `edits`, `mode` and `rules` are here because a project may only make them stricter
/// (derive.rs enforces that). Any key not listed waits for trust (fail closed): when you add a
/// key to `FileConfig`, list it here only if a hostile repository setting it is harmless.
/// `model` is not here: a model name can pick the provider, so an untrusted project's model is
/// taken aside ([`take_model`]) and applies only if it fits the provider the person chose.
const SAFE_KEYS: &[&str] = &[
    "context_window",
    "max_output_tokens",
    "reasoning",
    "connect_timeout_secs",
    "first_byte_timeout_secs",
    "idle_timeout_secs",
    "max_retries",
    "retry_backoff_ms",
    "max_requests",
    "max_turns",
    "bash_timeout_secs",
    "auto_compact",
    "small_model",
    "compact_threshold",
    "keep_tool_results",
    "images",
    "subagent_max_requests",
    "subagent_max_turns",
    "sandbox",
    "edits",
    "mode",
    "rules",
];

/// Keys inside a table a project may set alone; other keys inside it wait for trust like any
/// unknown key (a future `[sandbox]` key must be judged before a repository may set it).
/// `sandbox.network` passes here only to be judged in `derive`: `false` applies (stricter),
/// `true` and a `[sandbox.network]` allow-list never do, trusted or not.
const SAFE_SUBKEYS: &[(&str, &[&str])] = &[("sandbox", &["mode", "network", "hide"])];

/// What a key that needs trust would do, in words.
fn why_trust(key: &str) -> &'static str {
    match key {
        "base_url" => "sends your requests (code, conversation) and your API key to this server",
        "provider" => "chooses which API key is sent, and to which server by default",
        "api_key" => "sends your code and conversation to the account that owns this key",
        "theme" => "reads a theme file outside your themes directory",
        "model" => "may choose which provider gets your requests and API key",
        _ => "rein does not know this setting to be safe for a repository to set",
    }
}

/// Whether a project value of `key` is harmless as given.
fn is_safe(key: &str, value: &toml::Value) -> bool {
    if key == "theme" {
        // A bare name picks a built-in theme or one in the person's own themes directory.
        return value.as_str().is_some_and(|name| {
            !name.contains(['/', '\\']) && !name.contains("..") && !name.starts_with('~')
        });
    }
    SAFE_KEYS.contains(&key)
}

/// The value as shown to the person: keys masked, control characters escaped, long values cut.
pub(super) fn shown(key: &str, value: &toml::Value) -> String {
    if key == "api_key" {
        return "\"****\"".into();
    }
    let text = value.to_string();
    let mut out: String = text
        .chars()
        .take(120)
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}

/// The trust item that lets a project's `name = value` apply.
fn trust_item(name: &str, value: &toml::Value) -> TrustItem {
    TrustItem::new(
        format!("config.{name}"),
        format!("{name} = {}: {}", shown(name, value), why_trust(name)),
        &value.to_string(),
    )
}

/// An untrusted project's `model`: it applies only if it fits the provider the person's own
/// settings chose (`endpoint.rs` judges), else it waits for trust like `provider`.
#[derive(Debug)]
pub(super) struct ProjectModel {
    /// The model name, from the project file.
    pub(super) value: Sourced<String>,
    /// What trusting the project would let apply.
    pub(super) item: TrustItem,
}

/// Takes an untrusted project's `model` out of `table`, so that it can never choose the
/// provider (and with it the server and the key). A trusted one stays (it is the person's
/// choice then), and so does one that is not a string (`screen` holds it for trust). `None`
/// also when a flag or the environment sets the model anyway.
pub(super) fn take_model(
    table: &mut toml::Table,
    file: &Path,
    trust: &ProjectTrust,
    overridden: &dyn Fn(&str) -> bool,
) -> Option<ProjectModel> {
    let name = table.get("model")?.as_str()?.to_string();
    let value = table.remove("model")?;
    let item = trust_item("model", &value);
    if trust.allows(&item) {
        table.insert("model".into(), value);
        return None;
    }
    if overridden("model") {
        return None;
    }
    Some(ProjectModel {
        value: Sourced::new(name, Source::File(file.to_path_buf())),
        item,
    })
}

/// Removes from a project file's table what may not apply: keys that need trust the project
/// does not have, and `trusted_projects` (only the person's own config can trust). Keys a
/// higher layer overrides anyway (`overridden`) are dropped without asking. Returns what was
/// ignored and why.
pub(super) fn screen(
    table: &mut toml::Table,
    file: &Path,
    trust: &ProjectTrust,
    overridden: &dyn Fn(&str) -> bool,
) -> Vec<IgnoredSetting> {
    let mut ignored = Vec::new();
    if table.remove("trusted_projects").is_some() {
        ignored.push(IgnoredSetting {
            key: "trusted_projects".into(),
            file: file.to_path_buf(),
            reason: "only your own config can trust projects".into(),
            trust: None,
        });
    }
    let judge = Judge {
        file,
        trust,
        overridden,
    };
    judge.table(table, "", &mut ignored);
    ignored
}

/// Decides, key by key, what stays in a project table.
struct Judge<'a> {
    file: &'a Path,
    trust: &'a ProjectTrust,
    overridden: &'a dyn Fn(&str) -> bool,
}

impl Judge<'_> {
    /// Screens the keys of `table` (named `prefix` inside the file, "" at the top).
    fn table(&self, table: &mut toml::Table, prefix: &str, ignored: &mut Vec<IgnoredSetting>) {
        let keys: Vec<String> = table.keys().cloned().collect();
        for key in keys {
            // Each project MCP server is its own trust item, judged where its full command
            // line is known (`mcp::trust`; `config/mcp.rs` lists the ones that wait).
            // Each project hook too (`hooks::config`).
            if prefix.is_empty() && (key == "mcp_servers" || key == "hooks") {
                continue;
            }
            let name = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            let safe_inside = SAFE_SUBKEYS
                .iter()
                .find(|(k, _)| prefix.is_empty() && *k == key);
            if let (Some((_, subkeys)), Some(toml::Value::Table(inner))) =
                (safe_inside, table.get_mut(&key))
            {
                self.table_with(inner, &name, subkeys, ignored);
                continue;
            }
            let keep = match table.get(&key) {
                Some(value) => {
                    prefix.is_empty() && is_safe(&key, value) || self.allowed(&name, value, ignored)
                }
                None => true,
            };
            if !keep {
                table.remove(&key);
            }
        }
    }

    /// Screens a table whose keys `subkeys` are safe.
    fn table_with(
        &self,
        table: &mut toml::Table,
        name: &str,
        subkeys: &[&str],
        ignored: &mut Vec<IgnoredSetting>,
    ) {
        let keys: Vec<String> = table.keys().cloned().collect();
        for key in keys {
            let Some(value) = table.get(&key) else {
                continue;
            };
            if !subkeys.contains(&key.as_str())
                && !self.allowed(&format!("{name}.{key}"), value, ignored)
            {
                table.remove(&key);
            }
        }
    }

    /// Whether a setting that needs trust may apply; when not, records why (unless a higher
    /// layer overrides it anyway).
    fn allowed(&self, name: &str, value: &toml::Value, ignored: &mut Vec<IgnoredSetting>) -> bool {
        let item = trust_item(name, value);
        if self.trust.allows(&item) {
            return true;
        }
        if !(self.overridden)(name) {
            ignored.push(IgnoredSetting {
                key: name.to_string(),
                file: self.file.to_path_buf(),
                reason: "this project is not trusted".into(),
                trust: Some(item),
            });
        }
        false
    }
}
