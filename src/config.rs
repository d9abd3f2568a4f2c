//! Layered settings: flags > `REIN_*` env > `BASE_URL`/`API_KEY`/`MODEL` env > `~/.agents/env`
//! > `config.toml` (project `.rein/config.toml` over user `<config dir>/rein/config.toml`)
//! > defaults. Every value remembers where it came from, for `rein config`.

use crate::llm::ProviderKind;
use crate::policy::Rule;
use crate::trust::{ProjectTrust, TrustItem};
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

mod aids;
mod derive;
mod endpoint;
mod file;
mod mcp;
mod project;
mod raw;
mod show;
pub use show::NAME_COLUMN;
mod window;

pub use crate::sandbox::SandboxMode;
pub use aids::{AID_NAMES, ModelAids};
pub use file::parse_env_file;
pub use window::{DEFAULT_CONTEXT_WINDOW, choose_context_window, family_context_window};

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
    /// Reported by the model server (e.g. the context window from llama.cpp's `/props`).
    Server(&'static str),
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
            Source::Server(what) => write!(f, "server: {what}"),
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
    /// Reasoning effort and summaries (`reasoning = { effort, summary }`; Responses API).
    pub reasoning: crate::llm::Reasoning,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for the first bytes of an answer (an uncached prompt on a CPU server).
    pub first_byte_timeout: Duration,
    /// Longest silence inside a stream before it counts as stalled.
    pub idle_timeout: Duration,
    /// Request attempts in all (1 + retries).
    pub max_attempts: u32,
    /// First retry delay (doubles each retry, with jitter).
    pub retry_backoff: Duration,
    /// Model requests per user message before the turn stops (`None`: no cap, loop
    /// detection ends a turn that goes round in circles; `rein exec` defaults to
    /// [`EXEC_MAX_REQUESTS`]).
    pub max_requests: Option<u32>,
    /// Default bash timeout in seconds.
    pub bash_timeout_secs: u64,
    /// Theme name or file.
    pub theme: String,
    /// How the TUI says it waits for the person: auto, bell, osc9, osc777, off.
    pub notify: String,
    /// The person's program run (with one JSON argument) when the TUI waits for them.
    pub notify_command: Vec<String>,
    /// Sandbox mode for bash.
    pub sandbox: SandboxMode,
    /// Whether bash may use the network.
    pub sandbox_network: bool,
    /// The network allow-list (`[sandbox.network]` of the person's own config), when the
    /// network is not allowed as a whole: commands reach only these hosts, through rein's proxy.
    pub sandbox_network_allow: Option<crate::netproxy::AllowList>,
    /// Secret paths and variables (`[sandbox] hide`, `unhide`, `pass_env`).
    pub sandbox_secrets: crate::sandbox::SecretSettings,
    /// Whether edits inside the workspace are allowed without asking (`edits = "allow"`).
    pub auto_approve_edits: bool,
    /// The approval mode a session starts in (`--mode`, `mode = …`; `edits = "allow"` means
    /// accept-edits).
    pub mode: crate::protocol::ApprovalMode,
    /// Rules from config files (after the built-in ones).
    pub rules: Vec<Rule>,
    /// Every MCP server: the user's, then the project's (`.rein/config.toml`, `.mcp.json`)
    /// that the user's do not shadow. A project server starts only if `trust` allows it.
    pub mcp_servers: Vec<crate::mcp::ServerConfig>,
    /// The hooks that run: the person's, then the project's that its trust allows.
    pub hooks: Vec<crate::hooks::HookSpec>,
    /// Aids for small local models (`small_model`; on for loopback servers by default).
    pub small_model: ModelAids,
    /// Whether to compact automatically.
    pub auto_compact: bool,
    /// Fraction of the window at which to compact.
    pub compact_threshold: f64,
    /// Tool results sent in full; older ones are micro-compacted.
    pub keep_tool_results: usize,
    /// Whether attached images are sent (`images = "auto" | true | false`).
    pub images: crate::images::ImagesSetting,
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
    /// Whether the workspace's project is trusted, and with what.
    pub trust: ProjectTrust,
    /// Project settings that do not apply, and why.
    pub ignored: Vec<IgnoredSetting>,
    /// Old key names the files use, as notices for the person.
    pub deprecated: Vec<String>,
}

/// A project setting that does not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredSetting {
    /// The setting as written (`base_url`, `sandbox.mode`, `rules`).
    pub key: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Why it does not apply.
    pub reason: String,
    /// Set when trusting the project would let it apply.
    pub trust: Option<TrustItem>,
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
    /// `--trust`: the project's settings apply in full, this run.
    pub trust: bool,
    /// Items the person approved in this run (they apply even if saving the approval failed).
    pub approved: Vec<TrustItem>,
    /// `--mode`.
    pub mode: Option<String>,
    /// `--max-requests` (`rein exec`).
    pub max_requests: Option<u32>,
}

/// `rein exec`'s cap on model requests for its one message when none is set: a script must
/// end, but long work must not be cut short (raise it with `--max-requests` or the key).
pub const EXEC_MAX_REQUESTS: u32 = 1_000;

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
    /// The model missing (and maybe the key): the message says what to set and where.
    #[error("{0}")]
    Missing(String),
    /// Only the API key missing: the message says what to set and where.
    #[error("{0}")]
    MissingKey(String),
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
        let layers = raw::Layers::read(inputs)?;
        Config::derive(raw::RawConfig::resolve(layers), inputs, strict)
    }
}

impl Config {
    /// The settings for `rein exec`: a cap on model requests even when none is set
    /// ([`EXEC_MAX_REQUESTS`]), so a script always ends.
    pub fn for_exec(mut self) -> Config {
        if self.max_requests.is_none() {
            self.max_requests = Some(EXEC_MAX_REQUESTS);
        }
        self
    }

    /// What commands cannot see: home outside the allow-list (the defaults and `[sandbox]
    /// home_allow`; the workspace stays visible), rein's own dirs and `hide`; and the
    /// variables they get besides the allow-list (`pass_env`).
    pub fn secrets(&self) -> crate::sandbox::Secrets {
        crate::sandbox::Secrets::resolve(
            self.home_dir.as_deref(),
            Some(&self.cwd),
            &self.config_dir,
            &self.data_dir,
            &self.sandbox_secrets,
        )
    }
}

#[cfg(test)]
mod tests;
