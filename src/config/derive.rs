//! The high level of the settings: a `Config` derived from the raw values (defaults,
//! inference between provider and base URL, validation, the rules a project may not loosen).

use super::endpoint::derive_endpoint;
use super::raw::{RawConfig, Sourced, UserAndProject};
use super::window::choose_context_window;
use super::{Config, ConfigError, IgnoredSetting, Inputs, SandboxMode, Source, is_loopback_url};
use crate::policy::{Action, Rule, RuleSource};
use crate::protocol::ApprovalMode;
use std::path::PathBuf;
use std::time::Duration;

/// Records where each derived setting came from, in `rein config` order.
#[derive(Default)]
pub(super) struct Sources(Vec<(&'static str, Source)>);

impl Sources {
    pub(super) fn push(&mut self, name: &'static str, source: Source) {
        self.0.push((name, source));
    }

    /// The given value, else the default; either way its source is recorded.
    pub(super) fn or_default<T>(
        &mut self,
        name: &'static str,
        raw: Option<Sourced<T>>,
        default: T,
    ) -> T {
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

impl Config {
    /// Derives the effective settings; `strict` insists on a model and (off loopback) a key.
    pub(super) fn derive(
        mut raw: RawConfig,
        inputs: &Inputs,
        strict: bool,
    ) -> Result<Config, ConfigError> {
        let mut sources = Sources::default();
        let mut ignored = std::mem::take(&mut raw.ignored);
        let mut endpoint = derive_endpoint(&raw, strict, &inputs.config_dir, &mut sources)?;
        ignored.extend(endpoint.held.take());
        let context_window = derive_context_window(&raw, &endpoint.model, &mut sources)?;
        let s = &mut sources;
        let max_output_tokens =
            s.or_default("max_output_tokens", raw.max_output_tokens.take(), 8192);
        let reasoning =
            derive_reasoning(raw.reasoning_effort.take(), raw.reasoning_summary.take(), s)?;
        let limits = Limits::derive(&mut raw, &endpoint.base_url, s);
        let look = Look::derive(&mut raw, &endpoint.base_url, s)?;
        let context = ContextSettings::derive(&mut raw, s);
        let (auto_approve_edits, mode) = derive_approval(&mut raw, s, &mut ignored)?;
        if !(0.1..=1.0).contains(&context.compact_threshold) {
            return Err(ConfigError::Invalid(
                "compact_threshold must be between 0.1 and 1.0.".into(),
            ));
        }
        let (sandbox, sandbox_network, sandbox_network_allow) =
            derive_sandbox_settings(&mut raw, inputs, s, &mut ignored)?;
        let rules = derive_rules(std::mem::take(&mut raw.rules), &mut ignored)?;
        let mcp_servers = super::mcp::derive_mcp_servers(
            std::mem::take(&mut raw.mcp_servers),
            &inputs.cwd,
            &raw.trust,
            &mut ignored,
        )?;
        let hooks = derive_hooks(&raw.hooks, &inputs.cwd, &raw.trust, &mut ignored)?;
        ignored.extend(commands_waiting_for_trust(inputs, &raw.trust));
        Ok(Config {
            provider: endpoint.provider,
            base_url: endpoint.base_url,
            api_key: endpoint.api_key,
            model: endpoint.model,
            context_window,
            max_output_tokens,
            reasoning,
            connect_timeout: limits.connect_timeout,
            first_byte_timeout: limits.first_byte_timeout,
            idle_timeout: limits.idle_timeout,
            max_attempts: limits.max_attempts,
            retry_backoff: limits.retry_backoff,
            max_requests: limits.max_requests,
            bash_timeout_secs: limits.bash_timeout_secs,
            theme: look.theme,
            notify: look.notify,
            notify_command: look.notify_command,
            small_model: look.small_model,
            sandbox,
            sandbox_network,
            sandbox_network_allow,
            sandbox_secrets: raw.sandbox_secrets,
            auto_approve_edits,
            mode,
            rules,
            mcp_servers,
            hooks,
            auto_compact: context.auto_compact,
            compact_threshold: context.compact_threshold,
            keep_tool_results: context.keep_tool_results,
            images: context.images,
            subagent_max_requests: context.subagent_max_requests,
            cwd: inputs.cwd.clone(),
            data_dir: inputs.data_dir.clone(),
            config_dir: inputs.config_dir.clone(),
            home_dir: inputs.home_dir.clone(),
            sources: sources.0,
            trust: raw.trust,
            ignored,
            deprecated: raw.deprecated,
        })
    }
}

/// Timeouts, retries and caps, as [`Config`] holds them.
struct Limits {
    connect_timeout: Duration,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
    max_attempts: u32,
    retry_backoff: Duration,
    max_requests: Option<u32>,
    bash_timeout_secs: u64,
}

impl Limits {
    /// From `connect_timeout_secs` to `bash_timeout_secs`, defaults filled in and clamped.
    fn derive(raw: &mut RawConfig, base_url: &str, s: &mut Sources) -> Limits {
        let connect_timeout =
            s.or_default("connect_timeout_secs", raw.connect_timeout_secs.take(), 10);
        // A local server may spend minutes on an uncached prompt before its first byte; a
        // remote API that silent is more likely stuck.
        let first_byte_default = if is_loopback_url(base_url) { 600 } else { 120 };
        let first_byte_timeout = s.or_default(
            "first_byte_timeout_secs",
            raw.first_byte_timeout_secs.take(),
            first_byte_default,
        );
        let idle_timeout = s.or_default("idle_timeout_secs", raw.idle_timeout_secs.take(), 120);
        let max_retries = s.or_default("max_retries", raw.max_retries.take(), 4);
        let retry_backoff_ms = s.or_default("retry_backoff_ms", raw.retry_backoff_ms.take(), 1000);
        // No cap unless one is set: loop detection protects the person instead.
        let max_requests = s.or_default(
            "max_requests",
            raw.max_requests
                .take()
                .map(|m| Sourced::new(Some(m.value), m.source)),
            None,
        );
        let bash_timeout_secs = s.or_default("bash_timeout_secs", raw.bash_timeout_secs.take(), 60);
        Limits {
            connect_timeout: Duration::from_secs(connect_timeout),
            first_byte_timeout: Duration::from_secs(first_byte_timeout),
            idle_timeout: Duration::from_secs(idle_timeout),
            max_attempts: max_retries.saturating_add(1),
            retry_backoff: Duration::from_millis(retry_backoff_ms),
            max_requests: max_requests.map(|n| n.max(1)),
            bash_timeout_secs: bash_timeout_secs.clamp(1, 600),
        }
    }
}

/// How the TUI looks and says it waits for the person, and the small-model aids.
struct Look {
    theme: String,
    notify: String,
    notify_command: Vec<String>,
    small_model: super::ModelAids,
}

impl Look {
    /// `theme`, `notify` (checked), `notify_command` and `small_model` (parsed).
    fn derive(raw: &mut RawConfig, base_url: &str, s: &mut Sources) -> Result<Look, ConfigError> {
        let theme = s.or_default("theme", raw.theme.take(), "dark".to_string());
        let notify = s.or_default("notify", raw.notify.take(), "auto".to_string());
        if !NOTIFY_METHODS.contains(&notify.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "notify must be one of {}; it is \"{notify}\".",
                NOTIFY_METHODS.join(", ")
            )));
        }
        let notify_command = s.or_default("notify_command", raw.notify_command.take(), Vec::new());
        let small_model = s.or_default("small_model", raw.small_model.take(), "auto".to_string());
        let small_model = super::ModelAids::parse(&small_model, is_loopback_url(base_url))?;
        Ok(Look {
            theme,
            notify,
            notify_command,
            small_model,
        })
    }
}

/// What the history keeps and sends: compaction, old results, images, subagents' requests.
struct ContextSettings {
    auto_compact: bool,
    /// Checked by the caller, after the approval mode (the order errors are reported in).
    compact_threshold: f64,
    keep_tool_results: usize,
    images: crate::images::ImagesSetting,
    subagent_max_requests: u32,
}

impl ContextSettings {
    /// From `auto_compact` to `subagent_max_requests`, defaults filled in.
    fn derive(raw: &mut RawConfig, s: &mut Sources) -> ContextSettings {
        let auto_compact = s.or_default("auto_compact", raw.auto_compact.take(), true);
        let compact_threshold =
            s.or_default("compact_threshold", raw.compact_threshold.take(), 0.85);
        let keep_tool_results = s.or_default("keep_tool_results", raw.keep_tool_results.take(), 3);
        let images = s.or_default(
            "images",
            raw.images.take(),
            crate::images::ImagesSetting::Auto,
        );
        let subagent_max_requests = s.or_default(
            "subagent_max_requests",
            raw.subagent_max_requests.take(),
            12,
        );
        ContextSettings {
            auto_compact,
            compact_threshold,
            keep_tool_results,
            images,
            subagent_max_requests: subagent_max_requests.max(1),
        }
    }
}

/// `edits` and the approval mode a session starts in (`--mode`, `mode`).
fn derive_approval(
    raw: &mut RawConfig,
    s: &mut Sources,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<(bool, ApprovalMode), ConfigError> {
    let auto_approve_edits = derive_edits(std::mem::take(&mut raw.edits), s, ignored)?;
    let mode = derive_mode(
        raw.mode_flag.take(),
        std::mem::take(&mut raw.mode),
        auto_approve_edits,
        s,
        ignored,
    )?;
    Ok((auto_approve_edits, mode))
}

/// The sandbox's mode, whether the network is on, and the network allow-list.
fn derive_sandbox_settings(
    raw: &mut RawConfig,
    inputs: &Inputs,
    s: &mut Sources,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<(SandboxMode, bool, Option<crate::netproxy::AllowList>), ConfigError> {
    let project_network_off = raw
        .sandbox_network
        .project
        .as_ref()
        .is_some_and(|p| !p.value);
    let (sandbox, sandbox_network) = derive_sandbox(
        (
            std::mem::take(&mut raw.sandbox_mode),
            std::mem::take(&mut raw.sandbox_network),
        ),
        raw.sandbox_env.take(),
        s,
        ignored,
    )?;
    let allow = derive_network_allow(
        raw.sandbox_network_hosts.take(),
        raw.project_network_hosts.take(),
        sandbox_network || project_network_off,
        ignored,
    )?;
    if allow.is_some() {
        s.push(
            "sandbox.network.allow",
            Source::File(inputs.config_dir.join("config.toml")),
        );
    }
    Ok((sandbox, sandbox_network, allow))
}

/// Project commands that set a model or allowed-tools: they wait in the same trust prompt.
fn commands_waiting_for_trust(
    inputs: &Inputs,
    trust: &crate::trust::ProjectTrust,
) -> Vec<IgnoredSetting> {
    crate::commands::waiting_for_trust(inputs.home_dir.as_deref(), &inputs.cwd, trust)
        .into_iter()
        .map(|(file, item)| IgnoredSetting {
            key: item.id.clone(),
            file,
            reason: "this project is not trusted".into(),
            trust: Some(item),
        })
        .collect()
}

/// `reasoning.effort` and `reasoning.summary`, checked against the values the API knows.
fn derive_reasoning(
    effort: Option<Sourced<String>>,
    summary: Option<Sourced<String>>,
    s: &mut Sources,
) -> Result<crate::llm::Reasoning, ConfigError> {
    const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];
    const SUMMARIES: &[&str] = &["auto", "concise", "detailed", "none"];
    let mut check = |name: &'static str, v: Option<Sourced<String>>, known: &[&str]| {
        let Some(v) = v else {
            s.push(name, Source::Default);
            return Ok(None);
        };
        let value = v.value.trim().to_ascii_lowercase();
        if !known.contains(&value.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "{name} = \"{value}\" (from {}) is not known. Use one of: {}.",
                v.source,
                known.join(", ")
            )));
        }
        s.push(name, v.source);
        Ok(Some(value))
    };
    Ok(crate::llm::Reasoning {
        effort: check("reasoning.effort", effort, EFFORTS)?,
        summary: check("reasoning.summary", summary, SUMMARIES)?,
    })
}

/// A project value that would loosen what the person set.
fn only_stricter<T>(p: &Sourced<T>, setting: String, what: &str) -> IgnoredSetting {
    let file = match &p.source {
        Source::File(path) => path.clone(),
        _ => PathBuf::new(),
    };
    IgnoredSetting {
        key: setting,
        file,
        reason: format!("a project may only make {what} stricter"),
        trust: None,
    }
}

/// The values `notify` takes (the TUI reads them).
const NOTIFY_METHODS: &[&str] = &["auto", "bell", "osc9", "osc777", "off"];

fn parse_num<T: std::str::FromStr>(value: &str, origin: &Source) -> Result<T, ConfigError> {
    value.trim().replace('_', "").parse::<T>().map_err(|_| {
        ConfigError::Invalid(format!(
            "\"{value}\" (from {origin}) is not a valid number."
        ))
    })
}

/// `REIN_CONTEXT_WINDOW` over the file over what the model family has; zero is refused.
fn derive_context_window(
    raw: &RawConfig,
    model: &str,
    sources: &mut Sources,
) -> Result<u64, ConfigError> {
    let explicit = match &raw.context_window_env {
        Some(v) => Some((parse_num(&v.value, &v.source)?, v.source.clone())),
        None => raw.context_window.clone().map(|s| (s.value, s.source)),
    };
    // The server's report comes later (Config::apply_server_context_window).
    let (window, source) = choose_context_window(explicit, None, model);
    sources.push("context_window", source);
    if window == 0 {
        return Err(ConfigError::Invalid(
            "context_window must be a positive number of tokens.".into(),
        ));
    }
    Ok(window)
}

/// Whether edits run without asking. A project may say "ask" over the user's "allow", never
/// the other way round: a repository must not pre-approve edits for whoever clones it.
fn derive_edits(
    edits: UserAndProject<String>,
    sources: &mut Sources,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<bool, ConfigError> {
    let chosen = match (edits.project, edits.user) {
        (Some(p), _) if p.value == "ask" => Some(p),
        (Some(p), user) => {
            ignored.push(only_stricter(
                &p,
                format!("edits = {:?}", p.value),
                "file edits",
            ));
            user
        }
        (None, user) => user,
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
    ignored: &mut Vec<IgnoredSetting>,
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
        } else if tighter.permissiveness() > mode.permissiveness() {
            ignored.push(only_stricter(
                p,
                format!("mode = {:?}", p.value),
                "the mode",
            ));
        }
    }
    sources.push("mode", source.unwrap_or(Source::Default));
    Ok(mode)
}

/// Sandbox mode and network: the user's file, then the project's only where it is stricter,
/// then `REIN_SANDBOX` (the person at the keyboard) over both.
fn derive_sandbox(
    (mode, network): (UserAndProject<SandboxMode>, UserAndProject<bool>),
    env: Option<Sourced<String>>,
    sources: &mut Sources,
    ignored: &mut Vec<IgnoredSetting>,
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
            ignored.push(only_stricter(
                &p,
                format!("sandbox.mode = {:?}", p.value.as_str()),
                "the sandbox",
            ));
        }
    }
    if let Some(p) = network.project {
        if !p.value && sandbox_network.value {
            sandbox_network = p;
        } else if p.value && !sandbox_network.value {
            ignored.push(only_stricter(
                &p,
                "sandbox.network = true".into(),
                "the sandbox",
            ));
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

/// The network allow-list: from the person's own file only. A project's `[sandbox.network]`
/// never applies, trusted or not (a repository must not open the network for whoever clones
/// it); a project may only turn the network off (`network = false`). `None` when there is no
/// list, or `decided` (the whole network is on, or a project turned it off).
fn derive_network_allow(
    user: Option<super::file::NetworkHosts>,
    project: Option<PathBuf>,
    decided: bool,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<Option<crate::netproxy::AllowList>, ConfigError> {
    if let Some(file) = project {
        ignored.push(IgnoredSetting {
            key: "sandbox.network".into(),
            file,
            reason: "only your own config can allow network hosts; a project may only set \
                     network = false"
                .into(),
            trust: None,
        });
    }
    let Some(hosts) = user.filter(|_| !decided) else {
        return Ok(None);
    };
    crate::netproxy::AllowList::parse(&hosts.allow, &hosts.presets)
        .map(Some)
        .map_err(ConfigError::Invalid)
}

/// The file rules as policy rules; a project's allow rules are dropped (a repository must not
/// pre-approve commands for whoever clones it).
fn derive_rules(
    raw: Vec<(RuleSource, PathBuf, super::file::FileRule)>,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<Vec<Rule>, ConfigError> {
    let mut rules = Vec::new();
    for (source, path, r) in raw {
        if source == RuleSource::Project && r.action == Action::Allow {
            ignored.push(IgnoredSetting {
                key: format!("rules: allow {:?}", r.pattern),
                file: path,
                reason: "a project may add ask and deny rules, not allow rules".into(),
                trust: None,
            });
            continue;
        }
        let rule = Rule::new(&r.tool, &r.pattern, r.action, source).map_err(|e| {
            ConfigError::Invalid(format!("{}: rule {:?}: {e}", path.display(), r.pattern))
        })?;
        rules.push(rule);
    }
    Ok(rules)
}

/// The hooks that run (`hooks::config`); the project's that wait for trust or are broken are
/// listed as ignored, with their trust item.
fn derive_hooks(
    tables: &UserAndProject<crate::hooks::config::HookTables>,
    cwd: &std::path::Path,
    trust: &crate::trust::ProjectTrust,
    ignored: &mut Vec<IgnoredSetting>,
) -> Result<Vec<crate::hooks::HookSpec>, ConfigError> {
    let with_file = |s: &Option<Sourced<crate::hooks::config::HookTables>>| {
        s.as_ref().and_then(|s| match &s.source {
            Source::File(p) => Some((s.value.clone(), p.clone())),
            _ => None,
        })
    };
    let user = with_file(&tables.user);
    let project = with_file(&tables.project);
    let derived = crate::hooks::config::derive(
        user.as_ref().map(|(t, p)| (t, p.as_path())),
        project.as_ref().map(|(t, p)| (t, p.as_path())),
        cwd,
        trust,
    )
    .map_err(ConfigError::Invalid)?;
    ignored.extend(derived.refused.into_iter().map(|r| IgnoredSetting {
        key: r.key,
        file: r.file,
        reason: r.reason,
        trust: r.trust,
    }));
    Ok(derived.hooks)
}
