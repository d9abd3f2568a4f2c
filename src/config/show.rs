//! `rein config` output and the "what to set" message.

use super::{Config, Source};

impl Config {
    /// The key with all but its last four characters hidden.
    pub fn masked_key(&self) -> String {
        match &self.api_key {
            None => "(none)".into(),
            Some(k) if k.chars().count() <= 8 => "****".into(),
            Some(k) => {
                let tail: String = k
                    .chars()
                    .rev()
                    .take(4)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("****{tail}")
            }
        }
    }

    /// Where a setting came from.
    pub fn source_of(&self, name: &str) -> Source {
        self.sources
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s.clone())
            .unwrap_or(Source::Default)
    }

    /// `rein config` output: one `name = value  (source)` line per setting.
    pub fn describe(&self) -> String {
        let mut lines = Vec::new();
        let mut line = |name: &'static str, value: String| {
            lines.push(format!("{name:<22} {value:<40} ({})", self.source_of(name)));
        };
        line("provider", self.provider.as_str().into());
        line("base_url", self.base_url.clone());
        line(
            "model",
            if self.model.is_empty() {
                "(not set)".into()
            } else {
                self.model.clone()
            },
        );
        line("api_key", self.masked_key());
        line("context_window", self.context_window.to_string());
        line("max_output_tokens", self.max_output_tokens.to_string());
        line(
            "connect_timeout_secs",
            self.connect_timeout.as_secs().to_string(),
        );
        line("idle_timeout_secs", self.idle_timeout.as_secs().to_string());
        line("max_retries", (self.max_attempts - 1).to_string());
        line(
            "retry_backoff_ms",
            self.retry_backoff.as_millis().to_string(),
        );
        line("max_requests", self.max_requests.to_string());
        line("bash_timeout_secs", self.bash_timeout_secs.to_string());
        line("theme", self.theme.clone());
        line("sandbox", self.sandbox.as_str().into());
        line("sandbox.network", self.sandbox_network.to_string());
        line(
            "edits",
            if self.auto_approve_edits {
                "allow"
            } else {
                "ask"
            }
            .into(),
        );
        line("mode", self.mode.as_str().into());
        line("auto_compact", self.auto_compact.to_string());
        line("compact_threshold", self.compact_threshold.to_string());
        line("keep_tool_results", self.keep_tool_results.to_string());
        line(
            "subagent_max_requests",
            self.subagent_max_requests.to_string(),
        );
        let mut out = lines.join("\n");
        out.push_str(&format!(
            "\n{:<22} {}\n{:<22} {}\n{:<22} {}\n",
            "workspace",
            self.cwd.display(),
            "config_dir",
            self.config_dir.display(),
            "data_dir",
            self.data_dir.display()
        ));
        for r in &self.rules {
            out.push_str(&format!("rule  {r}\n"));
        }
        out
    }
}

pub(super) fn missing_message(missing: &[&str], base_url: &str, fallback_key: &str) -> String {
    let what = missing.join(" and ");
    let mut msg = format!("rein needs {what} to talk to the model server at {base_url}. Set ");
    let mut parts = Vec::new();
    if missing.contains(&"a model") {
        parts.push("MODEL (or REIN_MODEL, or --model)".to_string());
    }
    if missing.contains(&"an API key") {
        parts.push(format!("API_KEY (or REIN_API_KEY, or {fallback_key})"));
    }
    msg.push_str(&parts.join(" and "));
    msg.push_str(
        " in your environment, or as KEY=VALUE lines in ~/.agents/env; the model can also go in \
         config.toml (`model = \"...\"` in ~/.config/rein/config.toml or .rein/config.toml). \
         To use a local server instead (llama.cpp, Ollama, vLLM), set BASE_URL to it, e.g. \
         BASE_URL=http://127.0.0.1:11434/v1: local servers need no key.",
    );
    msg
}
