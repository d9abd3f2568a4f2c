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

    /// `rein config` output: one `name = value  (source)` line per setting, then the places,
    /// rules, hooks and what the project's trust leaves out.
    pub fn describe(&self) -> String {
        let rows: Vec<String> = self
            .setting_rows()
            .into_iter()
            .map(|(name, value)| {
                format!(
                    "{name:<NAME_COLUMN$} {value:<40} ({})",
                    self.source_of(name)
                )
            })
            .collect();
        let mut out = rows.join("\n");
        out.push_str(&format!(
            "\n{:<NAME_COLUMN$} {}\n{:<NAME_COLUMN$} {}\n{:<NAME_COLUMN$} {}\n",
            "workspace",
            self.cwd.display(),
            "config_dir",
            self.config_dir.display(),
            "data_dir",
            self.data_dir.display()
        ));
        self.describe_rules_and_hooks(&mut out);
        self.describe_trust(&mut out);
        out
    }

    /// Each setting's name and value as `rein config` shows it, in its order.
    fn setting_rows(&self) -> Vec<(&'static str, String)> {
        let mut rows = self.model_rows();
        rows.extend(self.request_rows());
        rows.extend([
            ("theme", self.theme.clone()),
            ("notify", self.notify.clone()),
            ("notify_command", self.notify_command.join(" ")),
            ("small_model", self.small_model.describe()),
        ]);
        rows.extend(self.sandbox_rows());
        let edits = if self.auto_approve_edits {
            "allow"
        } else {
            "ask"
        };
        rows.extend([
            ("edits", edits.to_string()),
            ("mode", self.mode.as_str().into()),
            ("auto_compact", self.auto_compact.to_string()),
            ("compact_threshold", self.compact_threshold.to_string()),
            ("keep_tool_results", self.keep_tool_results.to_string()),
            ("images", self.images.as_str().into()),
            (
                "subagent_max_requests",
                self.subagent_max_requests.to_string(),
            ),
        ]);
        rows
    }

    /// Where requests go and what they ask for.
    fn model_rows(&self) -> Vec<(&'static str, String)> {
        let model = if self.model.is_empty() {
            "(not set)".into()
        } else {
            self.model.clone()
        };
        let mut rows = vec![
            ("provider", self.provider.as_str().into()),
            ("base_url", self.base_url.clone()),
            ("model", model),
            ("api_key", self.masked_key()),
            ("context_window", self.context_window.to_string()),
            ("max_output_tokens", self.max_output_tokens.to_string()),
        ];
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
            rows.push((
                "reasoning.effort",
                shown(&self.reasoning.effort, "the model's default"),
            ));
            rows.push((
                "reasoning.summary",
                shown(&self.reasoning.summary, summary_default),
            ));
        }
        rows
    }

    /// How long requests and commands may take, and how often they are tried.
    fn request_rows(&self) -> Vec<(&'static str, String)> {
        let max_requests = match self.max_requests {
            Some(n) => n.to_string(),
            None => format!(
                "none (loop detection stops a looping turn; rein exec: {})",
                super::EXEC_MAX_REQUESTS
            ),
        };
        vec![
            (
                "connect_timeout_secs",
                self.connect_timeout.as_secs().to_string(),
            ),
            (
                "first_byte_timeout_secs",
                self.first_byte_timeout.as_secs().to_string(),
            ),
            ("idle_timeout_secs", self.idle_timeout.as_secs().to_string()),
            ("max_retries", (self.max_attempts - 1).to_string()),
            (
                "retry_backoff_ms",
                self.retry_backoff.as_millis().to_string(),
            ),
            ("max_requests", max_requests),
            ("bash_timeout_secs", self.bash_timeout_secs.to_string()),
        ]
    }

    /// The sandbox's mode, network and secrets (the lists only when set).
    pub(super) fn sandbox_rows(&self) -> Vec<(&'static str, String)> {
        let mut rows = vec![
            ("sandbox", self.sandbox.as_str().into()),
            ("sandbox.network", self.sandbox_network.to_string()),
        ];
        if let Some(list) = &self.sandbox_network_allow {
            let hosts: Vec<String> = list.entries().iter().map(ToString::to_string).collect();
            rows.push(("sandbox.network.allow", format!("[{}]", hosts.join(", "))));
        }
        for (key, list) in [
            ("sandbox.hide", &self.sandbox_secrets.hide),
            ("sandbox.unhide", &self.sandbox_secrets.unhide),
            ("sandbox.pass_env", &self.sandbox_secrets.pass_env),
            ("sandbox.home_allow", &self.sandbox_secrets.home_allow),
            ("sandbox.read_allow", &self.sandbox_secrets.read_allow),
        ] {
            if !list.is_empty() {
                rows.push((key, list.join(", ")));
            }
        }
        rows
    }

    /// The `rule` and `hook` lines.
    fn describe_rules_and_hooks(&self, out: &mut String) {
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
    }

    /// The project's trust, what it leaves out, and old key names.
    fn describe_trust(&self, out: &mut String) {
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
