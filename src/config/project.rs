//! What a project's `.rein/config.toml` may set by itself, and what waits until the person
//! trusts the project: anything that decides where requests, code or the key go.

use super::IgnoredSetting;
use crate::trust::{ProjectTrust, TrustItem};
use std::path::Path;

/// Keys a project file may set without trust: they change how rein works here, not where data
/// goes. `sandbox`, `edits` and `rules` are here because a project may only make them stricter
/// (derive.rs enforces that). Any key not listed waits for trust (fail closed): when you add a
/// key to `FileConfig`, list it here only if a hostile repository setting it is harmless.
const SAFE_KEYS: &[&str] = &[
    "model",
    "context_window",
    "max_output_tokens",
    "connect_timeout_secs",
    "idle_timeout_secs",
    "max_retries",
    "retry_backoff_ms",
    "max_requests",
    "max_turns",
    "bash_timeout_secs",
    "auto_compact",
    "compact_threshold",
    "keep_tool_results",
    "subagent_max_requests",
    "subagent_max_turns",
    "sandbox",
    "edits",
    "rules",
];

/// What a key that needs trust would do, in words.
fn why_trust(key: &str) -> &'static str {
    match key {
        "base_url" => "sends your requests (code, conversation) and your API key to this server",
        "provider" => "chooses which API key is sent, and to which server by default",
        "api_key" => "sends your code and conversation to the account that owns this key",
        "theme" => "reads a theme file outside your themes directory",
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
fn shown(key: &str, value: &toml::Value) -> String {
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
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let Some(value) = table.get(&key) else {
            continue;
        };
        if key == "trusted_projects" {
            ignored.push(IgnoredSetting {
                key: key.clone(),
                file: file.to_path_buf(),
                reason: "only your own config can trust projects".into(),
                trust: None,
            });
            table.remove(&key);
            continue;
        }
        if is_safe(&key, value) {
            continue;
        }
        let item = TrustItem::new(
            format!("config.{key}"),
            format!("{key} = {}: {}", shown(&key, value), why_trust(&key)),
            &value.to_string(),
        );
        if trust.allows(&item) {
            continue;
        }
        if !overridden(&key) {
            ignored.push(IgnoredSetting {
                key: key.clone(),
                file: file.to_path_buf(),
                reason: "this project is not trusted".into(),
                trust: Some(item),
            });
        }
        table.remove(&key);
    }
    ignored
}
