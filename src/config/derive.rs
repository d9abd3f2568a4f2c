//! The high level of the settings: a `Config` derived from the raw values (defaults,
//! inference between provider and base URL, validation, the rules a project may not loosen).

use super::raw::{RawConfig, Sourced, UserAndProject};
use super::show::missing_message;
use super::{Config, ConfigError, Inputs, SandboxMode, Source, is_loopback_url};
use crate::llm::ProviderKind;
use crate::policy::{Action, Rule, RuleSource};
use crate::protocol::ApprovalMode;
use std::time::Duration;

/// Records where each derived setting came from, in `rein config` order.
#[derive(Default)]
struct Sources(Vec<(&'static str, Source)>);

impl Sources {
    fn push(&mut self, name: &'static str, source: Source) {
        self.0.push((name, source));
    }

    /// The given value, else the default; either way its source is recorded.
    fn or_default<T>(&mut self, name: &'static str, raw: Option<Sourced<T>>, default: T) -> T {
        match raw {
            Some(s) => {
                self.push(name, s.source);
                s.value
            }
            None => {
                self.push(name, Source::Default);
                default
            }
        }
    }
}

/// Where requests go and with which key and model.
struct Endpoint {
    provider: ProviderKind,
    base_url: String,
    model: String,
    api_key: Option<String>,
}

impl Config {
    /// Derives the effective settings; `strict` insists on a model and (off loopback) a key.
    pub(super) fn derive(
        raw: RawConfig,
        inputs: &Inputs,
        strict: bool,
    ) -> Result<Config, ConfigError> {
        let mut sources = Sources::default();
        let endpoint = derive_endpoint(&raw, strict, &mut sources)?;
        let context_window = derive_context_window(&raw, &mut sources)?;
        let s = &mut sources;
        let max_output_tokens = s.or_default("max_output_tokens", raw.max_output_tokens, 8192);
        let connect_timeout = s.or_default("connect_timeout_secs", raw.connect_timeout_secs, 10);
        let idle_timeout = s.or_default("idle_timeout_secs", raw.idle_timeout_secs, 120);
        let max_retries = s.or_default("max_retries", raw.max_retries, 4);
        let retry_backoff_ms = s.or_default("retry_backoff_ms", raw.retry_backoff_ms, 1000);
        let max_requests = s.or_default("max_requests", raw.max_requests, 100);
        let bash_timeout_secs = s.or_default("bash_timeout_secs", raw.bash_timeout_secs, 60);
        let theme = s.or_default("theme", raw.theme, "dark".to_string());
        let auto_compact = s.or_default("auto_compact", raw.auto_compact, true);
        let compact_threshold = s.or_default("compact_threshold", raw.compact_threshold, 0.85);
        let keep_tool_results = s.or_default("keep_tool_results", raw.keep_tool_results, 3);
        let subagent_max_requests =
            s.or_default("subagent_max_requests", raw.subagent_max_requests, 12);
        let auto_approve_edits = derive_edits(raw.edits, s)?;
        let mode = derive_mode(raw.mode_flag, raw.mode, auto_approve_edits, s)?;
        if !(0.1..=1.0).contains(&compact_threshold) {
            return Err(ConfigError::Invalid(
                "compact_threshold must be between 0.1 and 1.0.".into(),
            ));
        }
        let (sandbox, sandbox_network) =
            derive_sandbox(raw.sandbox_mode, raw.sandbox_network, raw.sandbox_env, s)?;
        let rules = derive_rules(raw.rules)?;
        Ok(Config {
            provider: endpoint.provider,
            base_url: endpoint.base_url,
            api_key: endpoint.api_key,
            model: endpoint.model,
            context_window,
            max_output_tokens,
            connect_timeout: Duration::from_secs(connect_timeout),
            idle_timeout: Duration::from_secs(idle_timeout),
            max_attempts: max_retries.saturating_add(1),
            retry_backoff: Duration::from_millis(retry_backoff_ms),
            max_requests: max_requests.max(1),
            bash_timeout_secs: bash_timeout_secs.clamp(1, 600),
            theme,
            sandbox,
            sandbox_network,
            auto_approve_edits,
            mode,
            rules,
            auto_compact,
            compact_threshold,
            keep_tool_results,
            subagent_max_requests: subagent_max_requests.max(1),
            cwd: inputs.cwd.clone(),
            data_dir: inputs.data_dir.clone(),
            config_dir: inputs.config_dir.clone(),
            home_dir: inputs.home_dir.clone(),
            sources: sources.0,
        })
    }
}

fn infer_provider(base_url: &str) -> ProviderKind {
    let rest = base_url.split("://").nth(1).unwrap_or(base_url);
    let host = rest.split('/').next().unwrap_or("").to_ascii_lowercase();
    if host.contains("anthropic") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    }
}

fn parse_provider(value: &str, origin: &Source) -> Result<ProviderKind, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "openai" | "openai-compatible" | "chat" => Ok(ProviderKind::OpenAi),
        "anthropic" | "claude" => Ok(ProviderKind::Anthropic),
        other => Err(ConfigError::Invalid(format!(
            "Unknown provider \"{other}\" (from {origin}). Use \"openai\" (any OpenAI-compatible \
             Chat Completions server) or \"anthropic\"."
        ))),
    }
}

fn parse_num<T: std::str::FromStr>(value: &str, origin: &Source) -> Result<T, ConfigError> {
    value.trim().replace('_', "").parse::<T>().map_err(|_| {
        ConfigError::Invalid(format!(
            "\"{value}\" (from {origin}) is not a valid number."
        ))
    })
}

/// Provider, base URL, model and key; base URL and provider decide each other's defaults.
fn derive_endpoint(
    raw: &RawConfig,
    strict: bool,
    sources: &mut Sources,
) -> Result<Endpoint, ConfigError> {
    let provider = match (&raw.provider, &raw.base_url) {
        (Some(p), _) => {
            sources.push("provider", p.source.clone());
            parse_provider(&p.value, &p.source)?
        }
        (None, Some(url)) => {
            sources.push("provider", Source::Derived("inferred from base_url"));
            infer_provider(&url.value)
        }
        (None, None) => {
            sources.push("provider", Source::Default);
            ProviderKind::OpenAi
        }
    };
    let base_url = match &raw.base_url {
        Some(url) => {
            sources.push("base_url", url.source.clone());
            url.value.trim().trim_end_matches('/').to_string()
        }
        None => {
            sources.push("base_url", Source::Default);
            default_base_url(provider).to_string()
        }
    };
    let (fallback_name, fallback) = match provider {
        ProviderKind::OpenAi => ("OPENAI_API_KEY", &raw.openai_key),
        ProviderKind::Anthropic => ("ANTHROPIC_API_KEY", &raw.anthropic_key),
    };
    let api_key = raw.api_key.as_ref().or(fallback.as_ref());
    if strict {
        let mut missing = Vec::new();
        if raw.model.is_none() {
            missing.push("a model");
        }
        if api_key.is_none() && !is_loopback_url(&base_url) {
            missing.push("an API key");
        }
        if !missing.is_empty() {
            return Err(ConfigError::Missing(missing_message(
                &missing,
                &base_url,
                fallback_name,
            )));
        }
    }
    let model = sources.or_default(
        "model",
        raw.model.as_ref().map(|m| Sourced {
            value: m.value.trim().to_string(),
            source: m.source.clone(),
        }),
        String::new(),
    );
    let api_key = sources.or_default(
        "api_key",
        api_key.map(|k| Sourced {
            value: Some(k.value.trim().to_string()),
            source: k.source.clone(),
        }),
        None,
    );
    Ok(Endpoint {
        provider,
        base_url,
        model,
        api_key,
    })
}

fn default_base_url(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::OpenAi => "https://api.openai.com/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com",
    }
}

/// `REIN_CONTEXT_WINDOW` over the file over the default; zero is refused.
fn derive_context_window(raw: &RawConfig, sources: &mut Sources) -> Result<u64, ConfigError> {
    let given = match &raw.context_window_env {
        Some(v) => Some(Sourced {
            value: parse_num(&v.value, &v.source)?,
            source: v.source.clone(),
        }),
        None => raw.context_window.clone(),
    };
    let window = sources.or_default("context_window", given, 128_000);
    if window == 0 {
        return Err(ConfigError::Invalid(
            "context_window must be a positive number of tokens.".into(),
        ));
    }
    Ok(window)
}

/// Whether edits run without asking. A project may say "ask" over the user's "allow", never
/// the other way round: a repository must not pre-approve edits for whoever clones it.
fn derive_edits(edits: UserAndProject<String>, sources: &mut Sources) -> Result<bool, ConfigError> {
    let chosen = match (edits.project, edits.user) {
        (Some(p), _) if p.value == "ask" => Some(p),
        (_, user) => user,
    };
    let value = sources.or_default("edits", chosen, "ask".to_string());
    match value.as_str() {
        "ask" => Ok(false),
        "allow" => Ok(true),
        other => Err(ConfigError::Invalid(format!(
            "edits = \"{other}\" is not valid; use \"ask\" or \"allow\"."
        ))),
    }
}

/// The approval mode: `--mode`, else the user's file (or accept-edits when `edits = "allow"`),
/// which the project's file may only make stricter: a repository must not loosen it.
fn derive_mode(
    flag: Option<Sourced<String>>,
    files: UserAndProject<String>,
    edits_allowed: bool,
    sources: &mut Sources,
) -> Result<ApprovalMode, ConfigError> {
    let parse = |s: &Sourced<String>| {
        ApprovalMode::parse(&s.value).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "mode \"{}\" is not valid; use \"ask\", \"accept-edits\" or \"plan\".",
                s.value
            ))
        })
    };
    if let Some(f) = flag {
        let mode = parse(&f)?;
        sources.push("mode", f.source);
        return Ok(mode);
    }
    let fallback = if edits_allowed {
        ApprovalMode::AcceptEdits
    } else {
        ApprovalMode::Ask
    };
    let mut mode = match &files.user {
        Some(u) => parse(u)?,
        None => fallback,
    };
    let mut source = files.user.map(|u| u.source);
    if let Some(p) = &files.project {
        let tighter = parse(p)?;
        if tighter.permissiveness() < mode.permissiveness() {
            mode = tighter;
            source = Some(p.source.clone());
        }
    }
    sources.push("mode", source.unwrap_or(Source::Default));
    Ok(mode)
}

/// Sandbox mode and network: the user's file, then the project's only where it is stricter,
/// then `REIN_SANDBOX` (the person at the keyboard) over both.
fn derive_sandbox(
    mode: UserAndProject<SandboxMode>,
    network: UserAndProject<bool>,
    env: Option<Sourced<String>>,
    sources: &mut Sources,
) -> Result<(SandboxMode, bool), ConfigError> {
    let strictness = |m: SandboxMode| match m {
        SandboxMode::Off => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::ReadOnly => 2,
    };
    let mut sandbox = mode
        .user
        .unwrap_or_else(|| Sourced::default_value(SandboxMode::WorkspaceWrite));
    let mut sandbox_network = network
        .user
        .unwrap_or_else(|| Sourced::default_value(false));
    if let Some(p) = mode.project {
        if strictness(p.value) > strictness(sandbox.value) {
            sandbox = p;
        } else if p.value != sandbox.value {
            tracing::warn!(
                "ignoring sandbox mode {:?} from project file {}: a project may only make it stricter",
                p.value.as_str(),
                p.source
            );
        }
    }
    if let Some(p) = network.project {
        if !p.value && sandbox_network.value {
            sandbox_network = p;
        } else if p.value && !sandbox_network.value {
            tracing::warn!(
                "ignoring sandbox.network = true from project file {}",
                p.source
            );
        }
    }
    if let Some(v) = env {
        let m = match v.value.as_str() {
            "workspace-write" => SandboxMode::WorkspaceWrite,
            "read-only" => SandboxMode::ReadOnly,
            "off" => SandboxMode::Off,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "REIN_SANDBOX=\"{other}\" is not valid; use workspace-write, read-only or off."
                )));
            }
        };
        sandbox = Sourced {
            value: m,
            source: v.source,
        };
    }
    sources.push("sandbox", sandbox.source);
    sources.push("sandbox.network", sandbox_network.source);
    Ok((sandbox.value, sandbox_network.value))
}

/// The file rules as policy rules; a project's allow rules are dropped (a repository must not
/// pre-approve commands for whoever clones it).
fn derive_rules(
    raw: Vec<(RuleSource, std::path::PathBuf, super::file::FileRule)>,
) -> Result<Vec<Rule>, ConfigError> {
    let mut rules = Vec::new();
    for (source, path, r) in raw {
        if source == RuleSource::Project && r.action == Action::Allow {
            tracing::warn!(
                "ignoring allow rule {:?} from project file {}",
                r.pattern,
                path.display()
            );
            continue;
        }
        let rule = Rule::new(&r.tool, &r.pattern, r.action, source).map_err(|e| {
            ConfigError::Invalid(format!("{}: rule {:?}: {e}", path.display(), r.pattern))
        })?;
        rules.push(rule);
    }
    Ok(rules)
}
