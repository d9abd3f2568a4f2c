//! `rein config` output and the "what to set" message.

use super::{Config, Source};
use crate::trust::{TrustItem, TrustedBy};

/// The width of `rein config`'s name column: the longest name (`first_byte_timeout_secs`)
/// and a space, so every value starts in the same column.
pub const NAME_COLUMN: usize = 24;

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

    /// Records that `names` were set by `flag` (one flag that sets several, like `--local`).
    pub fn attribute_to_flag(&mut self, flag: &'static str, names: &[&'static str]) {
        for &name in names {
            self.set_source(name, Source::Flag(flag));
        }
    }

    /// Records where a setting came from, replacing what was recorded.
    pub(super) fn set_source(&mut self, name: &'static str, source: Source) {
        self.sources.retain(|(n, _)| *n != name);
        self.sources.push((name, source));
    }

    /// `rein config` output: one `name = value  (source)` line per setting.
    pub fn describe(&self) -> String {
        let mut lines = Vec::new();
        let mut line = |name: &'static str, value: String| {
            lines.push(format!(
                "{name:<NAME_COLUMN$} {value:<40} ({})",
                self.source_of(name)
            ));
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
        if self.provider == crate::llm::ProviderKind::OpenAiResponses {
            let shown = |v: &Option<String>, default: &str| match v {
                Some(v) => v.clone(),
                None => format!("(not set: {default})"),
            };
            let summary_default = if crate::llm::responses::is_reasoning_model(&self.model) {
                "auto for this model"
            } else {
                "none for this model"
            };
            line(
                "reasoning.effort",
                shown(&self.reasoning.effort, "the model's default"),
            );
            line(
                "reasoning.summary",
                shown(&self.reasoning.summary, summary_default),
            );
        }
        line(
            "connect_timeout_secs",
            self.connect_timeout.as_secs().to_string(),
        );
        line(
            "first_byte_timeout_secs",
            self.first_byte_timeout.as_secs().to_string(),
        );
        line("idle_timeout_secs", self.idle_timeout.as_secs().to_string());
        line("max_retries", (self.max_attempts - 1).to_string());
        line(
            "retry_backoff_ms",
            self.retry_backoff.as_millis().to_string(),
        );
        line(
            "max_requests",
            match self.max_requests {
                Some(n) => n.to_string(),
                None => format!(
                    "none (loop detection stops a looping turn; rein exec: {})",
                    super::EXEC_MAX_REQUESTS
                ),
            },
        );
        line("bash_timeout_secs", self.bash_timeout_secs.to_string());
        line("theme", self.theme.clone());
        line("notify", self.notify.clone());
        line("notify_command", self.notify_command.join(" "));
        line("sandbox", self.sandbox.as_str().into());
        line("sandbox.network", self.sandbox_network.to_string());
        for (key, list) in [
            ("sandbox.hide", &self.sandbox_secrets.hide),
            ("sandbox.unhide", &self.sandbox_secrets.unhide),
            ("sandbox.pass_env", &self.sandbox_secrets.pass_env),
            ("sandbox.home_allow", &self.sandbox_secrets.home_allow),
        ] {
            if !list.is_empty() {
                line(key, list.join(", "));
            }
        }
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
            "\n{:<NAME_COLUMN$} {}\n{:<NAME_COLUMN$} {}\n{:<NAME_COLUMN$} {}\n",
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
        for h in &self.hooks {
            out.push_str(&format!(
                "hook  {} [{}] {}  ({}{})\n",
                h.event.name(),
                if h.matcher.source().is_empty() {
                    "*"
                } else {
                    h.matcher.source()
                },
                crate::text::headline(&h.command, 60),
                h.origin.path().display(),
                if h.sandboxed { "" } else { ", not sandboxed" }
            ));
        }
        out.push_str(&format!(
            "{:<NAME_COLUMN$} {}\n",
            "project trust",
            self.trust_status()
        ));
        for i in &self.ignored {
            out.push_str(&format!(
                "ignored  {}  ({}): {}\n",
                i.trust
                    .as_ref()
                    .map_or(i.key.as_str(), |t| t.summary.as_str()),
                i.file.display(),
                i.reason
            ));
        }
        if self.ignored.iter().any(|i| i.trust.is_some()) {
            out.push_str(&format!("{}\n", self.how_to_trust()));
        }
        for d in &self.deprecated {
            out.push_str(&format!("deprecated  {d}\n"));
        }
        out
    }

    /// Whether the project is trusted, and by what.
    fn trust_status(&self) -> String {
        match &self.trust.everything {
            Some(TrustedBy::Flag) => "trusted (--trust, this run)".into(),
            Some(TrustedBy::UserList(p)) => {
                format!("trusted (listed in trusted_projects as {})", p.display())
            }
            None if self.untrusted_items().is_empty() => "nothing asks for trust".into(),
            None => "not trusted: the settings below are ignored".into(),
        }
    }

    /// The ways to trust this project.
    fn how_to_trust(&self) -> String {
        format!(
            "To let them apply: start `rein` in {} and answer the trust prompt, pass --trust, or \
             add \"{}\" to trusted_projects in {}.",
            self.trust.project.display(),
            self.trust.project.display(),
            self.config_dir.join("config.toml").display()
        )
    }

    /// What the project asks for that waits for the person's trust.
    pub fn untrusted_items(&self) -> Vec<TrustItem> {
        self.ignored
            .iter()
            .filter_map(|i| i.trust.clone())
            .collect()
    }

    /// What to tell the person when rein starts: project settings that do not apply and why,
    /// and old key names.
    pub fn startup_notices(&self) -> Vec<String> {
        let mut notices = Vec::new();
        let waiting = self.untrusted_items();
        if let Some(first) = self.ignored.iter().find(|i| i.trust.is_some()) {
            let items: Vec<String> = waiting.iter().map(|t| t.summary.clone()).collect();
            notices.push(format!(
                "Ignored from {} because this project is not trusted: {}. {}",
                first.file.display(),
                items.join("; "),
                self.how_to_trust()
            ));
        }
        for i in self.ignored.iter().filter(|i| i.trust.is_none()) {
            notices.push(format!(
                "Ignored from {}: {} ({}).",
                i.file.display(),
                i.key,
                i.reason
            ));
        }
        notices.extend(self.deprecated.iter().cloned());
        notices
    }
}
