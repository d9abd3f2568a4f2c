//! Layered settings: flags > `REIN_*` env > `BASE_URL`/`API_KEY`/`MODEL` env > `~/.agents/env`
//! > `config.toml` (project `.rein/config.toml` over user `<config dir>/rein/config.toml`)
//! > defaults. Every value remembers where it came from, for `rein config`.

use crate::llm::ProviderKind;
use crate::policy::{Action, Rule, RuleSource};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Model requests per user message before the turn stops.
    pub max_turns: u32,
    /// Default bash timeout in seconds.
    pub bash_timeout_secs: u64,
    /// Theme name or file.
    pub theme: String,
    /// Sandbox mode for bash.
    pub sandbox: SandboxMode,
    /// Whether bash may use the network.
    pub sandbox_network: bool,
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
    pub subagent_max_turns: u32,
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

/// A config file's contents (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    max_output_tokens: Option<u32>,
    connect_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    max_retries: Option<u32>,
    max_turns: Option<u32>,
    bash_timeout_secs: Option<u64>,
    theme: Option<String>,
    sandbox: Option<SandboxSetting>,
    edits: Option<String>,
    auto_compact: Option<bool>,
    compact_threshold: Option<f64>,
    keep_tool_results: Option<usize>,
    subagent_max_turns: Option<u32>,
    #[serde(default)]
    rules: Vec<FileRule>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SandboxSetting {
    Mode(SandboxMode),
    Table {
        mode: Option<SandboxMode>,
        network: Option<bool>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    #[serde(default = "default_rule_tool")]
    tool: String,
    pattern: String,
    action: Action,
}

fn default_rule_tool() -> String {
    "bash".into()
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
    fn string(&self, flag: Option<(&Option<String>, &'static str)>, var: &str) -> Option<(String, Source)> {
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

fn read_file_config(path: &Path) -> Result<Option<FileConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str::<FileConfig>(&text).map(Some).map_err(|e| {
            ConfigError::Invalid(format!("{} is not valid: {e}", path.display()))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::Invalid(format!(
            "cannot read {}: {e}",
            path.display()
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

impl Config {
    /// Loads the settings from the real process environment.
    pub fn load(flags: Flags) -> Result<Config, ConfigError> {
        let inputs = Inputs::from_process(flags).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        Config::from_inputs(&inputs)
    }

    /// Loads settings but does not insist on a model or key (for `rein config`).
    pub fn load_lenient(flags: Flags) -> Result<Config, ConfigError> {
        let inputs = Inputs::from_process(flags).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        Config::build(&inputs, false)
    }

    /// Builds the settings from explicit inputs; fails when model or key are missing.
    pub fn from_inputs(inputs: &Inputs) -> Result<Config, ConfigError> {
        Config::build(inputs, true)
    }

    fn build(inputs: &Inputs, strict: bool) -> Result<Config, ConfigError> {
        let agents_env_path = inputs.home_dir.as_ref().map(|h| h.join(".agents").join("env"));
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
                return Err(ConfigError::Missing(missing_message(&missing, &base_url, fallback_key)));
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
        let max_turns = file_or!("max_turns", max_turns, 100);
        let bash_timeout_secs = file_or!("bash_timeout_secs", bash_timeout_secs, 60);
        let theme = file_or!("theme", theme, "dark".to_string());
        let auto_compact = file_or!("auto_compact", auto_compact, true);
        let compact_threshold = file_or!("compact_threshold", compact_threshold, 0.85);
        let keep_tool_results = file_or!("keep_tool_results", keep_tool_results, 3);
        let subagent_max_turns = file_or!("subagent_max_turns", subagent_max_turns, 12);
        let edits = file_or!("edits", edits, "ask".to_string());
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

        let (sandbox, sandbox_network) = {
            let setting = look.file(|f| {
                f.sandbox.as_ref().map(|s| match s {
                    SandboxSetting::Mode(m) => (Some(*m), None),
                    SandboxSetting::Table { mode, network } => (*mode, *network),
                })
            });
            let env_mode = look.env("REIN_SANDBOX");
            let (mode, network, src) = match setting {
                Some(((m, n), src)) => (m, n, src),
                None => (None, None, Source::Default),
            };
            let mode = match env_mode {
                Some((v, s)) => {
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
                    sources.push(("sandbox", s));
                    m
                }
                None => {
                    sources.push((
                        "sandbox",
                        if mode.is_some() { src.clone() } else { Source::Default },
                    ));
                    mode.unwrap_or(SandboxMode::WorkspaceWrite)
                }
            };
            sources.push((
                "sandbox.network",
                if network.is_some() { src } else { Source::Default },
            ));
            (mode, network.unwrap_or(false))
        };

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
                rules.push(Rule::new(&r.tool, &r.pattern, r.action, source.clone()).map_err(
                    |e| ConfigError::Invalid(format!("{}: rule {:?}: {e}", path.display(), r.pattern)),
                )?);
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
            max_turns: max_turns.max(1),
            bash_timeout_secs: bash_timeout_secs.clamp(1, 600),
            theme,
            sandbox,
            sandbox_network,
            auto_approve_edits,
            rules,
            auto_compact,
            compact_threshold,
            keep_tool_results,
            subagent_max_turns: subagent_max_turns.max(1),
            cwd: inputs.cwd.clone(),
            data_dir: inputs.data_dir.clone(),
            config_dir: inputs.config_dir.clone(),
            home_dir: inputs.home_dir.clone(),
            sources,
        })
    }

    /// The key with all but its last four characters hidden.
    pub fn masked_key(&self) -> String {
        match &self.api_key {
            None => "(none)".into(),
            Some(k) if k.chars().count() <= 8 => "****".into(),
            Some(k) => {
                let tail: String = k.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
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
        line("model", if self.model.is_empty() { "(not set)".into() } else { self.model.clone() });
        line("api_key", self.masked_key());
        line("context_window", self.context_window.to_string());
        line("max_output_tokens", self.max_output_tokens.to_string());
        line("connect_timeout_secs", self.connect_timeout.as_secs().to_string());
        line("idle_timeout_secs", self.idle_timeout.as_secs().to_string());
        line("max_retries", (self.max_attempts - 1).to_string());
        line("max_turns", self.max_turns.to_string());
        line("bash_timeout_secs", self.bash_timeout_secs.to_string());
        line("theme", self.theme.clone());
        line("sandbox", self.sandbox.as_str().into());
        line("sandbox.network", self.sandbox_network.to_string());
        line("edits", if self.auto_approve_edits { "allow" } else { "ask" }.into());
        line("auto_compact", self.auto_compact.to_string());
        line("compact_threshold", self.compact_threshold.to_string());
        line("keep_tool_results", self.keep_tool_results.to_string());
        line("subagent_max_turns", self.subagent_max_turns.to_string());
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

fn missing_message(missing: &[&str], base_url: &str, fallback_key: &str) -> String {
    let what = missing.join(" and ");
    let mut msg = format!(
        "rein needs {what} to talk to the model server at {base_url}. Set "
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(dir: &Path, env: &[(&str, &str)]) -> Inputs {
        Inputs {
            flags: Flags::default(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            home_dir: Some(dir.join("home")),
            config_dir: dir.join("config"),
            data_dir: dir.join("data"),
            cwd: dir.join("proj"),
        }
    }

    #[test]
    fn env_file_parsing_handles_comments_quotes_and_export() {
        let parsed = parse_env_file(
            "# comment\nexport BASE_URL=\"http://x/v1\"\nAPI_KEY='k 1'\nMODEL=m # trailing\n\nbad line\n",
        );
        assert_eq!(
            parsed,
            vec![
                ("BASE_URL".into(), "http://x/v1".into()),
                ("API_KEY".into(), "k 1".into()),
                ("MODEL".into(), "m".into()),
            ]
        );
    }

    #[test]
    fn precedence_flag_rein_env_plain_env_file_toml() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.agents")).unwrap();
        std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(dir.path().join("home/.agents/env"), "MODEL=from-file\nAPI_KEY=filekey\n").unwrap();
        std::fs::write(dir.path().join("config/config.toml"), "model = \"user-toml\"\n").unwrap();
        std::fs::write(dir.path().join("proj/.rein/config.toml"), "model = \"proj-toml\"\n").unwrap();

        let mut i = inputs(dir.path(), &[]);
        assert_eq!(Config::from_inputs(&i).unwrap().model, "from-file");
        i.env.insert("MODEL".into(), "plain-env".into());
        assert_eq!(Config::from_inputs(&i).unwrap().model, "plain-env");
        i.env.insert("REIN_MODEL".into(), "rein-env".into());
        let c = Config::from_inputs(&i).unwrap();
        assert_eq!(c.model, "rein-env");
        assert_eq!(c.source_of("model"), Source::Env("REIN_MODEL".into()));
        i.flags.model = Some("flag".into());
        assert_eq!(Config::from_inputs(&i).unwrap().model, "flag");

        std::fs::remove_file(dir.path().join("home/.agents/env")).unwrap();
        let mut i = inputs(dir.path(), &[("API_KEY", "k")]);
        assert_eq!(Config::from_inputs(&i).unwrap().model, "proj-toml");
        std::fs::remove_file(dir.path().join("proj/.rein/config.toml")).unwrap();
        assert_eq!(Config::from_inputs(&i).unwrap().model, "user-toml");
        i.env.clear();
        assert!(matches!(Config::from_inputs(&i), Err(ConfigError::Missing(_))));
    }

    #[test]
    fn provider_inferred_and_key_optional_on_loopback() {
        let dir = tempfile::tempdir().unwrap();
        let i = inputs(dir.path(), &[("BASE_URL", "http://127.0.0.1:8080/v1"), ("MODEL", "q")]);
        let c = Config::from_inputs(&i).unwrap();
        assert_eq!(c.provider, ProviderKind::OpenAi);
        assert_eq!(c.api_key, None);

        let i = inputs(dir.path(), &[("MODEL", "claude"), ("REIN_PROVIDER", "anthropic"), ("ANTHROPIC_API_KEY", "sk-ant-123456789")]);
        let c = Config::from_inputs(&i).unwrap();
        assert_eq!(c.base_url, "https://api.anthropic.com");
        assert_eq!(c.masked_key(), "****6789");

        let i = inputs(dir.path(), &[("MODEL", "m"), ("BASE_URL", "https://api.anthropic.com")]);
        match Config::from_inputs(&i) {
            Err(ConfigError::Missing(msg)) => {
                assert!(msg.contains("API_KEY"), "{msg}");
                assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
            }
            other => panic!("expected a missing-key error, got {other:?}"),
        }
    }

    #[test]
    fn context_window_is_honoured_even_when_small() {
        let dir = tempfile::tempdir().unwrap();
        let i = inputs(dir.path(), &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m"), ("REIN_CONTEXT_WINDOW", "6000")]);
        assert_eq!(Config::from_inputs(&i).unwrap().context_window, 6000);
    }

    #[test]
    fn project_file_cannot_pre_approve_commands() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
        std::fs::write(
            dir.path().join("proj/.rein/config.toml"),
            "[[rules]]\npattern = \"rm *\"\naction = \"allow\"\n\n[[rules]]\npattern = \"make*\"\naction = \"deny\"\n",
        )
        .unwrap();
        let i = inputs(dir.path(), &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")]);
        let c = Config::from_inputs(&i).unwrap();
        assert_eq!(c.rules.len(), 1);
        assert_eq!(c.rules[0].action, Action::Deny);
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
        assert!(is_loopback_url("http://localhost/v1"));
        assert!(is_loopback_url("http://[::1]:11434/v1"));
        assert!(!is_loopback_url("https://api.openai.com/v1"));
        assert!(!is_loopback_url("https://localhost.evil.com/v1"));
    }
}
