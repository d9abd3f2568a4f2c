//! Layered settings: flags > `REIN_*` env > `BASE_URL`/`API_KEY`/`MODEL` env > `~/.agents/env`
//! > `config.toml` (project `.rein/config.toml` over user `<config dir>/rein/config.toml`)
//! > defaults. Every value remembers where it came from, for `rein config`.

use crate::llm::ProviderKind;
use crate::policy::{Action, Rule, RuleSource};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

mod file;
mod show;

pub use file::parse_env_file;
use file::{FileConfig, SandboxSetting, read_file_config};
use show::missing_message;

/// Where a setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Built-in default.
    Default,
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(String),
    /// A line of `~/.agents/env`.
    AgentsEnv(String),
    /// A config file.
    File(PathBuf),
    /// Derived from another setting (e.g. provider from the base URL).
    Derived(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::Flag(name) => write!(f, "flag {name}"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::AgentsEnv(var) => write!(f, "~/.agents/env {var}"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Derived(why) => write!(f, "{why}"),
        }
    }
}

/// How bash commands are confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only to the workspace and the session temp dir.
    WorkspaceWrite,
    /// No writes at all (but temp).
    ReadOnly,
    /// No confinement.
    Off,
}

impl SandboxMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}

/// The effective settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Wire format.
    pub provider: ProviderKind,
    /// Base URL of the model server.
    pub base_url: String,
    /// API key (optional for loopback servers). Never printed unmasked.
    pub api_key: Option<String>,
    /// Model name.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Max output tokens per request.
    pub max_output_tokens: u32,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Longest silence inside a stream before it counts as stalled.
    pub idle_timeout: Duration,
    /// Request attempts in all (1 + retries).
    pub max_attempts: u32,
    /// First retry delay (doubles each retry, with jitter).
    pub retry_backoff: Duration,
    /// Model requests per user message before the turn stops.
    pub max_requests: u32,
    /// Default bash timeout in seconds.
    pub bash_timeout_secs: u64,
    /// Theme name or file.
    pub theme: String,
    /// Sandbox mode for bash.
    pub sandbox: SandboxMode,
    /// Whether bash may use the network.
    pub sandbox_network: bool,
    /// Secret paths and variables (`[sandbox] hide`, `unhide`, `pass_env`).
    pub sandbox_secrets: crate::sandbox::SecretSettings,
    /// Whether edits inside the workspace are allowed without asking.
    pub auto_approve_edits: bool,
    /// Rules from config files (after the built-in ones).
    pub rules: Vec<Rule>,
    /// Whether to compact automatically.
    pub auto_compact: bool,
    /// Fraction of the window at which to compact.
    pub compact_threshold: f64,
    /// Tool results sent in full; older ones are micro-compacted.
    pub keep_tool_results: usize,
    /// Turn cap of a subagent.
    pub subagent_max_requests: u32,
    /// The workspace (where rein was started).
    pub cwd: PathBuf,
    /// Where sessions, history and logs live.
    pub data_dir: PathBuf,
    /// Where the user config and themes live.
    pub config_dir: PathBuf,
    /// The home directory (for `~` and `~/.agents`).
    pub home_dir: Option<PathBuf>,
    /// Where each named setting came from.
    pub sources: Vec<(&'static str, Source)>,
}

/// Command-line overrides.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
}

/// Everything loading reads from the outside world, so tests can supply it.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Command-line flags.
    pub flags: Flags,
    /// The process environment.
    pub env: HashMap<String, String>,
    /// Home directory.
    pub home_dir: Option<PathBuf>,
    /// User config dir (`<config dir>/rein`).
    pub config_dir: PathBuf,
    /// Data dir (`<data dir>/rein`).
    pub data_dir: PathBuf,
    /// Working directory.
    pub cwd: PathBuf,
}

impl Inputs {
    /// Reads the real environment and platform directories.
    pub fn from_process(flags: Flags) -> anyhow::Result<Inputs> {
        let env: HashMap<String, String> = std::env::vars().collect();
        let cwd = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))?;
        let base = directories::BaseDirs::new();
        let home_dir = base.as_ref().map(|b| b.home_dir().to_path_buf());
        let (config_dir, data_dir) = match &base {
            Some(b) => (b.config_dir().join("rein"), b.data_dir().join("rein")),
            None => (cwd.join(".rein"), cwd.join(".rein").join("data")),
        };
        Ok(Inputs {
            flags,
            env,
            home_dir,
            config_dir,
            data_dir,
            cwd,
        })
    }
}

/// A setting that cannot be used as given.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Model or key missing: the message says what to set and where.
    #[error("{0}")]
    Missing(String),
    /// A file or value is invalid.
    #[error("{0}")]
    Invalid(String),
}

/// Whether a base URL points at this machine (then a key is optional).
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(stripped) = authority.strip_prefix('[') {
        stripped.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    matches!(host, "localhost" | "::1" | "0.0.0.0") || host.starts_with("127.")
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

/// The sources of one string setting, highest first, as found.
struct Lookup<'a> {
    inputs: &'a Inputs,
    agents_env: HashMap<String, String>,
    project: Option<(PathBuf, FileConfig)>,
    user: Option<(PathBuf, FileConfig)>,
}

impl Lookup<'_> {
    fn env(&self, var: &str) -> Option<(String, Source)> {
        self.inputs
            .env
            .get(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v.clone(), Source::Env(var.into())))
    }

    fn agents_env(&self, var: &str) -> Option<(String, Source)> {
        self.agents_env
            .get(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v.clone(), Source::AgentsEnv(var.into())))
    }

    /// Flag, `REIN_<X>` env, `<X>` env, `~/.agents/env` (REIN_X then X).
    fn string(
        &self,
        flag: Option<(&Option<String>, &'static str)>,
        var: &str,
    ) -> Option<(String, Source)> {
        if let Some((Some(v), name)) = flag {
            return Some((v.clone(), Source::Flag(name)));
        }
        let rein = format!("REIN_{var}");
        self.env(&rein)
            .or_else(|| self.env(var))
            .or_else(|| self.agents_env(&rein))
            .or_else(|| self.agents_env(var))
    }

    fn file<T>(&self, get: impl Fn(&FileConfig) -> Option<T>) -> Option<(T, Source)> {
        for (path, file) in [&self.project, &self.user].into_iter().flatten() {
            if let Some(v) = get(file) {
                return Some((v, Source::File(path.clone())));
            }
        }
        None
    }
}

fn parse_num<T: std::str::FromStr>(value: &str, origin: &Source) -> Result<T, ConfigError> {
    value.trim().replace('_', "").parse::<T>().map_err(|_| {
        ConfigError::Invalid(format!(
            "\"{value}\" (from {origin}) is not a valid number."
        ))
    })
}

impl Config {
    /// Loads the settings from the real process environment.
    pub fn load(flags: Flags) -> Result<Config, ConfigError> {
        let inputs =
            Inputs::from_process(flags).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        Config::from_inputs(&inputs)
    }

    /// Loads settings but does not insist on a model or key (for `rein config`).
    pub fn load_lenient(flags: Flags) -> Result<Config, ConfigError> {
        let inputs =
            Inputs::from_process(flags).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        Config::build(&inputs, false)
    }

    /// Builds the settings from explicit inputs; fails when model or key are missing.
    pub fn from_inputs(inputs: &Inputs) -> Result<Config, ConfigError> {
        Config::build(inputs, true)
    }

    fn build(inputs: &Inputs, strict: bool) -> Result<Config, ConfigError> {
        let agents_env_path = inputs
            .home_dir
            .as_ref()
            .map(|h| h.join(".agents").join("env"));
        let agents_env = agents_env_path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| parse_env_file(&t).into_iter().collect())
            .unwrap_or_default();
        let project_path = inputs.cwd.join(".rein").join("config.toml");
        let user_path = inputs.config_dir.join("config.toml");
        let project = read_file_config(&project_path)?.map(|f| (project_path.clone(), f));
        let user = read_file_config(&user_path)?.map(|f| (user_path.clone(), f));
        let look = Lookup {
            inputs,
            agents_env,
            project,
            user,
        };
        let mut sources: Vec<(&'static str, Source)> = Vec::new();

        // Base URL and provider decide each other's defaults.
        let base_url = look
            .string(Some((&inputs.flags.base_url, "--base-url")), "BASE_URL")
            .or_else(|| look.file(|f| f.base_url.clone()));
        let provider_given = look
            .string(Some((&inputs.flags.provider, "--provider")), "PROVIDER")
            .or_else(|| look.file(|f| f.provider.clone()));
        let provider = match (&provider_given, &base_url) {
            (Some((p, src)), _) => {
                let kind = parse_provider(p, src)?;
                sources.push(("provider", src.clone()));
                kind
            }
            (None, Some((url, _))) => {
                sources.push(("provider", Source::Derived("inferred from base_url")));
                infer_provider(url)
            }
            (None, None) => {
                sources.push(("provider", Source::Default));
                ProviderKind::OpenAi
            }
        };
        let base_url = match base_url {
            Some((url, src)) => {
                sources.push(("base_url", src));
                url.trim().trim_end_matches('/').to_string()
            }
            None => {
                sources.push(("base_url", Source::Default));
                match provider {
                    ProviderKind::OpenAi => "https://api.openai.com/v1".to_string(),
                    ProviderKind::Anthropic => "https://api.anthropic.com".to_string(),
                }
            }
        };

        let model = look
            .string(Some((&inputs.flags.model, "--model")), "MODEL")
            .or_else(|| look.file(|f| f.model.clone()));

        let fallback_key = match provider {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        let api_key = look
            .string(None, "API_KEY")
            .or_else(|| look.file(|f| f.api_key.clone()))
            .or_else(|| look.env(fallback_key))
            .or_else(|| look.agents_env(fallback_key));

        let loopback = is_loopback_url(&base_url);
        if strict {
            let mut missing = Vec::new();
            if model.is_none() {
                missing.push("a model");
            }
            if api_key.is_none() && !loopback {
                missing.push("an API key");
            }
            if !missing.is_empty() {
                return Err(ConfigError::Missing(missing_message(
                    &missing,
                    &base_url,
                    fallback_key,
                )));
            }
        }
        let model = match model {
            Some((m, src)) => {
                sources.push(("model", src));
                m.trim().to_string()
            }
            None => {
                sources.push(("model", Source::Default));
                String::new()
            }
        };
        let api_key = match api_key {
            Some((k, src)) => {
                sources.push(("api_key", src));
                Some(k.trim().to_string())
            }
            None => {
                sources.push(("api_key", Source::Default));
                None
            }
        };

        let context_window = match look.string(None, "CONTEXT_WINDOW").filter(|(_, s)| {
            // Only REIN_CONTEXT_WINDOW is ours; a bare CONTEXT_WINDOW env is too generic.
            matches!(s, Source::Env(v) | Source::AgentsEnv(v) if v == "REIN_CONTEXT_WINDOW")
        }) {
            Some((v, src)) => {
                let n: u64 = parse_num(&v, &src)?;
                sources.push(("context_window", src));
                n
            }
            None => match look.file(|f| f.context_window) {
                Some((n, src)) => {
                    sources.push(("context_window", src));
                    n
                }
                None => {
                    sources.push(("context_window", Source::Default));
                    128_000
                }
            },
        };
        if context_window == 0 {
            return Err(ConfigError::Invalid(
                "context_window must be a positive number of tokens.".into(),
            ));
        }

        macro_rules! file_or {
            ($name:literal, $field:ident, $default:expr) => {
                match look.file(|f| f.$field.clone()) {
                    Some((v, src)) => {
                        sources.push(($name, src));
                        v
                    }
                    None => {
                        sources.push(($name, Source::Default));
                        $default
                    }
                }
            };
        }
        let max_output_tokens = file_or!("max_output_tokens", max_output_tokens, 8192);
        let connect_timeout = file_or!("connect_timeout_secs", connect_timeout_secs, 10);
        let idle_timeout = file_or!("idle_timeout_secs", idle_timeout_secs, 120);
        let max_retries = file_or!("max_retries", max_retries, 4);
        let retry_backoff_ms = file_or!("retry_backoff_ms", retry_backoff_ms, 1000);
        let max_requests = file_or!("max_requests", max_requests, 100);
        let bash_timeout_secs = file_or!("bash_timeout_secs", bash_timeout_secs, 60);
        let theme = file_or!("theme", theme, "dark".to_string());
        let auto_compact = file_or!("auto_compact", auto_compact, true);
        let compact_threshold = file_or!("compact_threshold", compact_threshold, 0.85);
        let keep_tool_results = file_or!("keep_tool_results", keep_tool_results, 3);
        let subagent_max_requests = file_or!("subagent_max_requests", subagent_max_requests, 12);
        let edits = match (&look.user, &look.project) {
            (_, Some((path, f))) if f.edits.as_deref() == Some("ask") => {
                sources.push(("edits", Source::File(path.clone())));
                "ask".to_string()
            }
            (Some((path, f)), _) if f.edits.is_some() => {
                sources.push(("edits", Source::File(path.clone())));
                f.edits.clone().unwrap_or_default()
            }
            _ => {
                sources.push(("edits", Source::Default));
                "ask".to_string()
            }
        };
        let auto_approve_edits = match edits.as_str() {
            "ask" => false,
            "allow" => true,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "edits = \"{other}\" is not valid; use \"ask\" or \"allow\"."
                )));
            }
        };
        if !(0.1..=1.0).contains(&compact_threshold) {
            return Err(ConfigError::Invalid(
                "compact_threshold must be between 0.1 and 1.0.".into(),
            ));
        }

        // A repository must not loosen the sandbox or pre-approve edits for whoever clones
        // it: the project file may only make these stricter.
        let sandbox_of = |f: &FileConfig| match &f.sandbox {
            Some(SandboxSetting::Mode(m)) => (Some(*m), None),
            Some(SandboxSetting::Table { mode, network, .. }) => (*mode, *network),
            None => (None, None),
        };
        let sandbox_secrets = secret_settings(
            look.user.as_ref().map(|(_, f)| f),
            look.project.as_ref().map(|(p, f)| (p.as_path(), f)),
        );
        let strictness = |m: SandboxMode| match m {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        };
        let mut sandbox = (SandboxMode::WorkspaceWrite, Source::Default);
        let mut sandbox_network = (false, Source::Default);
        if let Some((path, f)) = &look.user {
            let (m, n) = sandbox_of(f);
            if let Some(m) = m {
                sandbox = (m, Source::File(path.clone()));
            }
            if let Some(n) = n {
                sandbox_network = (n, Source::File(path.clone()));
            }
        }
        if let Some((path, f)) = &look.project {
            let (m, n) = sandbox_of(f);
            match m {
                Some(m) if strictness(m) > strictness(sandbox.0) => {
                    sandbox = (m, Source::File(path.clone()))
                }
                Some(m) if m != sandbox.0 => tracing::warn!(
                    "ignoring sandbox mode {:?} from project file {}: a project may only make it stricter",
                    m.as_str(),
                    path.display()
                ),
                _ => {}
            }
            match n {
                Some(false) if sandbox_network.0 => {
                    sandbox_network = (false, Source::File(path.clone()))
                }
                Some(true) if !sandbox_network.0 => tracing::warn!(
                    "ignoring sandbox.network = true from project file {}",
                    path.display()
                ),
                _ => {}
            }
        }
        if let Some((v, src)) = look.env("REIN_SANDBOX") {
            let m = match v.as_str() {
                "workspace-write" => SandboxMode::WorkspaceWrite,
                "read-only" => SandboxMode::ReadOnly,
                "off" => SandboxMode::Off,
                other => {
                    return Err(ConfigError::Invalid(format!(
                        "REIN_SANDBOX=\"{other}\" is not valid; use workspace-write, read-only or off."
                    )));
                }
            };
            sandbox = (m, src);
        }
        sources.push(("sandbox", sandbox.1));
        sources.push(("sandbox.network", sandbox_network.1));
        let (sandbox, sandbox_network) = (sandbox.0, sandbox_network.0);

        let mut rules = Vec::new();
        for (path, file, source) in [
            (&look.user, RuleSource::User),
            (&look.project, RuleSource::Project),
        ]
        .into_iter()
        .filter_map(|(f, s)| f.as_ref().map(|(p, f)| (p, f, s)))
        {
            for r in &file.rules {
                if source == RuleSource::Project && r.action == Action::Allow {
                    // A repository must not pre-approve commands for whoever clones it.
                    tracing::warn!(
                        "ignoring allow rule {:?} from project file {}",
                        r.pattern,
                        path.display()
                    );
                    continue;
                }
                rules.push(
                    Rule::new(&r.tool, &r.pattern, r.action, source.clone()).map_err(|e| {
                        ConfigError::Invalid(format!(
                            "{}: rule {:?}: {e}",
                            path.display(),
                            r.pattern
                        ))
                    })?,
                );
            }
        }

        Ok(Config {
            provider,
            base_url,
            api_key,
            model,
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
            sandbox_secrets,
            auto_approve_edits,
            rules,
            auto_compact,
            compact_threshold,
            keep_tool_results,
            subagent_max_requests: subagent_max_requests.max(1),
            cwd: inputs.cwd.clone(),
            data_dir: inputs.data_dir.clone(),
            config_dir: inputs.config_dir.clone(),
            home_dir: inputs.home_dir.clone(),
            sources,
        })
    }
}

/// `[sandbox] hide`, `unhide` and `pass_env`: a project may hide more, never show more.
fn secret_settings(
    user: Option<&FileConfig>,
    project: Option<(&std::path::Path, &FileConfig)>,
) -> crate::sandbox::SecretSettings {
    let mut s = crate::sandbox::SecretSettings::default();
    if let Some(Some(SandboxSetting::Table {
        hide,
        unhide,
        pass_env,
        ..
    })) = user.map(|f| &f.sandbox)
    {
        s.hide.extend(hide.iter().flatten().cloned());
        s.unhide.extend(unhide.iter().flatten().cloned());
        s.pass_env.extend(pass_env.iter().flatten().cloned());
    }
    if let Some((path, f)) = project
        && let Some(SandboxSetting::Table {
            hide,
            unhide,
            pass_env,
            ..
        }) = &f.sandbox
    {
        s.hide.extend(hide.iter().flatten().cloned());
        if unhide.is_some() || pass_env.is_some() {
            tracing::warn!(
                "ignoring sandbox.unhide and sandbox.pass_env from project file {}: a project may only hide more",
                path.display()
            );
        }
    }
    s
}

impl Config {
    /// The secrets to keep from commands: the defaults for this user's home and rein's own
    /// dirs, with `[sandbox] hide`, `unhide` and `pass_env` applied.
    pub fn secrets(&self) -> crate::sandbox::Secrets {
        crate::sandbox::Secrets::resolve(
            self.home_dir.as_deref(),
            &self.config_dir,
            &self.data_dir,
            &self.sandbox_secrets,
        )
    }
}

#[cfg(test)]
mod tests;
