//! The low level of the settings: every layer read as it is (flags, environment,
//! `~/.agents/env`, the user and project files) and, per setting, the value that wins by
//! precedence with the layer it came from. Nothing here infers, defaults or validates ranges;
//! `derive.rs` turns this into a `Config`.

use super::file::{FileConfig, FileRule, SandboxSetting, deprecations, file_config, read_table};
use super::project::{ProjectModel, screen, take_model};
use super::{ConfigError, IgnoredSetting, Inputs, SandboxMode, Source, parse_env_file};
use crate::policy::RuleSource;
use crate::trust::{ProjectTrust, TrustStore, TrustedBy, canonical};
use std::collections::HashMap;
use std::path::PathBuf;

/// `[mcp_servers.NAME]` tables by name.
pub(super) type McpTables = std::collections::BTreeMap<String, crate::mcp::config::ServerEntry>;

/// A value and the layer it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    /// The value as given.
    pub value: T,
    /// Where it was given.
    pub source: Source,
}

impl<T> Sourced<T> {
    pub(super) fn new(value: T, source: Source) -> Sourced<T> {
        Sourced { value, source }
    }

    /// A built-in default.
    pub(super) fn default_value(value: T) -> Sourced<T> {
        Sourced::new(value, Source::Default)
    }
}

/// A setting the project file may only make stricter: the user's and the project's value.
#[derive(Debug)]
pub(super) struct UserAndProject<T> {
    pub(super) user: Option<Sourced<T>>,
    pub(super) project: Option<Sourced<T>>,
}

// Not derived: that would ask `T: Default`, and neither side needs a value.
impl<T> Default for UserAndProject<T> {
    fn default() -> Self {
        UserAndProject {
            user: None,
            project: None,
        }
    }
}

/// A config file that was found, with its path.
pub(super) type FoundFile = Option<(PathBuf, FileConfig)>;

/// Every layer, read once.
pub(super) struct Layers<'a> {
    inputs: &'a Inputs,
    agents_env: HashMap<String, String>,
    pub(super) user: FoundFile,
    pub(super) project: FoundFile,
    /// The trust decision the project file was screened with.
    pub(super) trust: ProjectTrust,
    /// Project settings that do not apply, and why.
    pub(super) ignored: Vec<IgnoredSetting>,
    /// An untrusted project's `model`, kept out of the file layers (see `take_model`).
    project_model: Option<ProjectModel>,
    /// Old key names in use, as notices.
    pub(super) deprecated: Vec<String>,
}

impl Layers<'_> {
    /// Reads `~/.agents/env` and both config files; the project file loses what it may not set.
    pub(super) fn read(inputs: &Inputs) -> Result<Layers<'_>, ConfigError> {
        let agents_env = inputs
            .home_dir
            .as_ref()
            .map(|h| h.join(".agents").join("env"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| parse_env_file(&t).into_iter().collect())
            .unwrap_or_default();
        let mut layers = Layers {
            inputs,
            agents_env,
            user: None,
            project: None,
            trust: ProjectTrust::load(
                &TrustStore::in_data_dir(&inputs.data_dir),
                &inputs.cwd,
                None,
            ),
            ignored: Vec::new(),
            project_model: None,
            deprecated: Vec::new(),
        };
        let user_path = inputs.config_dir.join("config.toml");
        if let Some(table) = read_table(&user_path)? {
            layers.deprecated.extend(deprecations(&user_path, &table));
            layers.user = Some((user_path.clone(), file_config(&user_path, table)?));
        }
        layers.trust.everything = layers.trusted_by();
        layers.trust.approve_now(&inputs.flags.approved);
        let project_path = inputs.cwd.join(".rein").join("config.toml");
        if let Some(mut table) = read_table(&project_path)? {
            let overridden = |key: &str| layers.overrides_project(key);
            let model = take_model(&mut table, &project_path, &layers.trust, &overridden);
            let ignored = screen(&mut table, &project_path, &layers.trust, &overridden);
            layers.ignored.extend(ignored);
            layers.project_model = model;
            layers
                .deprecated
                .extend(deprecations(&project_path, &table));
            layers.project = Some((project_path.clone(), file_config(&project_path, table)?));
        }
        Ok(layers)
    }

    /// `--trust`, or the project listed in the user's `trusted_projects`.
    fn trusted_by(&self) -> Option<TrustedBy> {
        if self.inputs.flags.trust {
            return Some(TrustedBy::Flag);
        }
        let home = self.inputs.home_dir.as_deref();
        let (_, user) = self.user.as_ref()?;
        user.trusted_projects
            .iter()
            .flatten()
            .map(|p| match (p.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(p),
            })
            .find(|p| p.is_absolute() && canonical(p) == self.trust.project)
            .map(TrustedBy::UserList)
    }

    /// Whether a layer above the config files sets `key` (then the project's value would not
    /// apply anyway, and asking to trust it would be noise).
    fn overrides_project(&self, key: &str) -> bool {
        let flags = &self.inputs.flags;
        match key {
            "base_url" => self
                .string(Some((&flags.base_url, "--base-url")), "BASE_URL")
                .is_some(),
            "provider" => self
                .string(Some((&flags.provider, "--provider")), "PROVIDER")
                .is_some(),
            "api_key" => self.string(None, "API_KEY").is_some(),
            "model" => self
                .string(Some((&flags.model, "--model")), "MODEL")
                .is_some(),
            _ => false,
        }
    }

    /// A non-blank environment variable.
    pub(super) fn env(&self, var: &str) -> Option<Sourced<String>> {
        self.inputs
            .env
            .get(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| Sourced::new(v.clone(), Source::Env(var.into())))
    }

    fn agents_env(&self, var: &str) -> Option<Sourced<String>> {
        self.agents_env
            .get(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| Sourced::new(v.clone(), Source::AgentsEnv(var.into())))
    }

    /// A variable from the environment, else from `~/.agents/env`.
    fn var(&self, var: &str) -> Option<Sourced<String>> {
        self.env(var).or_else(|| self.agents_env(var))
    }

    /// Flag, `REIN_<X>` env, `<X>` env, `~/.agents/env` (REIN_X then X).
    fn string(
        &self,
        flag: Option<(&Option<String>, &'static str)>,
        var: &str,
    ) -> Option<Sourced<String>> {
        if let Some((Some(v), name)) = flag {
            return Some(Sourced::new(v.clone(), Source::Flag(name)));
        }
        let rein = format!("REIN_{var}");
        self.env(&rein)
            .or_else(|| self.env(var))
            .or_else(|| self.agents_env(&rein))
            .or_else(|| self.agents_env(var))
    }

    /// A file setting: the project's over the user's.
    fn file<T>(&self, get: impl Fn(&FileConfig) -> Option<T>) -> Option<Sourced<T>> {
        [&self.project, &self.user]
            .into_iter()
            .flatten()
            .find_map(|(path, file)| get(file).map(|v| Sourced::new(v, Source::File(path.clone()))))
    }

    /// A file setting, the user's and the project's apart.
    fn both<T>(&self, get: impl Fn(&FileConfig) -> Option<T>) -> UserAndProject<T> {
        let one = |found: &FoundFile| {
            found
                .as_ref()
                .and_then(|(path, f)| get(f).map(|v| Sourced::new(v, Source::File(path.clone()))))
        };
        UserAndProject {
            user: one(&self.user),
            project: one(&self.project),
        }
    }
}

/// Per setting, the winning raw value and its source (`None`: no layer set it).
#[derive(Debug)]
pub(super) struct RawConfig {
    pub(super) provider: Option<Sourced<String>>,
    pub(super) base_url: Option<Sourced<String>>,
    /// The person's model: flags, environment, their file, a trusted project's file.
    pub(super) model: Option<Sourced<String>>,
    /// An untrusted project's model, which may not choose the provider (`endpoint.rs`).
    pub(super) project_model: Option<ProjectModel>,
    /// `API_KEY` (any layer) or `api_key` in a file.
    pub(super) api_key: Option<Sourced<String>>,
    /// The provider's own variable (`OPENAI_API_KEY`), by provider.
    pub(super) openai_key: Option<Sourced<String>>,
    pub(super) anthropic_key: Option<Sourced<String>>,
    /// `REIN_CONTEXT_WINDOW` (a bare `CONTEXT_WINDOW` is too generic to be ours).
    pub(super) context_window_env: Option<Sourced<String>>,
    pub(super) context_window: Option<Sourced<u64>>,
    pub(super) max_output_tokens: Option<Sourced<u32>>,
    /// `reasoning.effort` and `reasoning.summary`.
    pub(super) reasoning_effort: Option<Sourced<String>>,
    pub(super) reasoning_summary: Option<Sourced<String>>,
    pub(super) connect_timeout_secs: Option<Sourced<u64>>,
    pub(super) first_byte_timeout_secs: Option<Sourced<u64>>,
    pub(super) idle_timeout_secs: Option<Sourced<u64>>,
    pub(super) max_retries: Option<Sourced<u32>>,
    pub(super) retry_backoff_ms: Option<Sourced<u64>>,
    pub(super) max_requests: Option<Sourced<u32>>,
    pub(super) bash_timeout_secs: Option<Sourced<u64>>,
    pub(super) theme: Option<Sourced<String>>,
    pub(super) notify: Option<Sourced<String>>,
    pub(super) small_model: Option<Sourced<String>>,
    pub(super) notify_command: Option<Sourced<Vec<String>>>,
    pub(super) auto_compact: Option<Sourced<bool>>,
    pub(super) compact_threshold: Option<Sourced<f64>>,
    pub(super) keep_tool_results: Option<Sourced<usize>>,
    pub(super) images: Option<Sourced<crate::images::ImagesSetting>>,
    pub(super) subagent_max_requests: Option<Sourced<u32>>,
    pub(super) edits: UserAndProject<String>,
    /// `--mode`.
    pub(super) mode_flag: Option<Sourced<String>>,
    pub(super) mode: UserAndProject<String>,
    pub(super) sandbox_mode: UserAndProject<SandboxMode>,
    pub(super) sandbox_network: UserAndProject<bool>,
    /// `[sandbox.network]` of the user file (a project's never applies).
    pub(super) sandbox_network_hosts: Option<super::file::NetworkHosts>,
    /// The project file, when it has a `[sandbox.network]` table (ignored, with a note).
    pub(super) project_network_hosts: Option<PathBuf>,
    /// `REIN_SANDBOX`.
    pub(super) sandbox_env: Option<Sourced<String>>,
    /// `[sandbox] hide`, `unhide`, `pass_env`.
    pub(super) sandbox_secrets: crate::sandbox::SecretSettings,
    /// Rules of the user file, then the project file.
    pub(super) rules: Vec<(RuleSource, PathBuf, FileRule)>,
    /// `[mcp_servers]` of the user file and of the project file.
    pub(super) mcp_servers: UserAndProject<McpTables>,
    /// `[hooks]` of the user file and of the project file.
    pub(super) hooks: UserAndProject<crate::hooks::config::HookTables>,
    /// The project's trust decision.
    pub(super) trust: ProjectTrust,
    /// Project settings ignored so far (deriving may add more).
    pub(super) ignored: Vec<IgnoredSetting>,
    /// Old key names in use.
    pub(super) deprecated: Vec<String>,
}

impl RawConfig {
    /// Picks each setting's value from the layers by precedence.
    pub(super) fn resolve(layers: Layers<'_>) -> RawConfig {
        let flags = &layers.inputs.flags;
        let rules = file_rules(&layers);
        RawConfig {
            provider: layers
                .string(Some((&flags.provider, "--provider")), "PROVIDER")
                .or_else(|| layers.file(|f| f.provider.clone())),
            base_url: layers
                .string(Some((&flags.base_url, "--base-url")), "BASE_URL")
                .or_else(|| layers.file(|f| f.base_url.clone())),
            model: layers
                .string(Some((&flags.model, "--model")), "MODEL")
                .or_else(|| layers.file(|f| f.model.clone())),
            api_key: layers
                .string(None, "API_KEY")
                .or_else(|| layers.file(|f| f.api_key.clone())),
            openai_key: layers.var("OPENAI_API_KEY"),
            anthropic_key: layers.var("ANTHROPIC_API_KEY"),
            context_window_env: layers.var("REIN_CONTEXT_WINDOW"),
            context_window: layers.file(|f| f.context_window),
            max_output_tokens: layers.file(|f| f.max_output_tokens),
            reasoning_effort: layers.file(|f| f.reasoning.as_ref()?.effort.clone()),
            reasoning_summary: layers.file(|f| f.reasoning.as_ref()?.summary.clone()),
            connect_timeout_secs: layers.file(|f| f.connect_timeout_secs),
            first_byte_timeout_secs: layers.file(|f| f.first_byte_timeout_secs),
            idle_timeout_secs: layers.file(|f| f.idle_timeout_secs),
            max_retries: layers.file(|f| f.max_retries),
            retry_backoff_ms: layers.file(|f| f.retry_backoff_ms),
            max_requests: flags
                .max_requests
                .map(|n| Sourced::new(n, Source::Flag("--max-requests")))
                .or_else(|| layers.file(|f| f.max_requests)),
            bash_timeout_secs: layers.file(|f| f.bash_timeout_secs),
            theme: layers.file(|f| f.theme.clone()),
            notify: layers.file(|f| f.notify.clone()),
            // The environment wins: an eval or a test pins it without touching config files.
            small_model: layers
                .env("REIN_SMALL_MODEL")
                .or_else(|| layers.file(|f| f.small_model.clone())),
            notify_command: layers.file(|f| f.notify_command.clone()),
            auto_compact: layers.file(|f| f.auto_compact),
            compact_threshold: layers.file(|f| f.compact_threshold),
            keep_tool_results: layers.file(|f| f.keep_tool_results),
            images: layers.file(|f| f.images),
            subagent_max_requests: layers.file(|f| f.subagent_max_requests),
            edits: layers.both(|f| f.edits.clone()),
            mode_flag: flags
                .mode
                .clone()
                .map(|m| Sourced::new(m, Source::Flag("--mode"))),
            mode: layers.both(|f| f.mode.clone()),
            sandbox_mode: layers.both(sandbox_mode),
            sandbox_network: layers.both(sandbox_network),
            sandbox_network_hosts: layers.user.as_ref().and_then(|(_, f)| network_hosts(f)),
            project_network_hosts: layers
                .project
                .as_ref()
                .and_then(|(p, f)| network_hosts(f).map(|_| p.clone())),
            sandbox_env: layers.env("REIN_SANDBOX"),
            sandbox_secrets: secret_settings(
                layers.user.as_ref().map(|(_, f)| f),
                layers.project.as_ref().map(|(p, f)| (p.as_path(), f)),
            ),
            rules,
            mcp_servers: layers.both(|f| f.mcp_servers.clone()),
            hooks: layers.both(|f| f.hooks.clone()),
            // Moved last: the fields above still read `layers` whole.
            project_model: layers.project_model,
            trust: layers.trust,
            ignored: layers.ignored,
            deprecated: layers.deprecated,
        }
    }
}

/// The rules of the user file, then the project file, each with where it came from.
fn file_rules(layers: &Layers<'_>) -> Vec<(RuleSource, PathBuf, FileRule)> {
    let mut rules = Vec::new();
    for (found, source) in [
        (&layers.user, RuleSource::User),
        (&layers.project, RuleSource::Project),
    ] {
        if let Some((path, file)) = found {
            rules.extend(
                file.rules
                    .iter()
                    .map(|r| (source.clone(), path.clone(), r.clone())),
            );
        }
    }
    rules
}

/// `sandbox = "mode"` or `[sandbox] mode`.
fn sandbox_mode(f: &FileConfig) -> Option<SandboxMode> {
    match &f.sandbox {
        Some(SandboxSetting::Mode(m)) => Some(*m),
        Some(SandboxSetting::Table { mode, .. }) => *mode,
        None => None,
    }
}

/// `[sandbox] network = true|false` (a table of hosts is not a yes or no).
fn sandbox_network(f: &FileConfig) -> Option<bool> {
    match &f.sandbox {
        Some(SandboxSetting::Table { network, .. }) => network.as_ref()?.all(),
        _ => None,
    }
}

/// `[sandbox.network]`: the hosts commands may reach.
fn network_hosts(f: &FileConfig) -> Option<super::file::NetworkHosts> {
    match &f.sandbox {
        Some(SandboxSetting::Table {
            network: Some(super::file::NetworkSetting::Hosts(h)),
            ..
        }) => Some(h.clone()),
        _ => None,
    }
}

/// `[sandbox] hide`, `home_allow` (`unhide`) and `pass_env`: a project may hide more, never
/// show more.
pub(super) fn secret_settings(
    user: Option<&FileConfig>,
    project: Option<(&std::path::Path, &FileConfig)>,
) -> crate::sandbox::SecretSettings {
    let mut s = crate::sandbox::SecretSettings::default();
    if let Some(Some(SandboxSetting::Table {
        hide,
        unhide,
        pass_env,
        home_allow,
        read_allow,
        ..
    })) = user.map(|f| &f.sandbox)
    {
        s.hide.extend(hide.iter().flatten().cloned());
        s.unhide.extend(unhide.iter().flatten().cloned());
        s.pass_env.extend(pass_env.iter().flatten().cloned());
        s.home_allow.extend(home_allow.iter().flatten().cloned());
        s.read_allow.extend(read_allow.iter().flatten().cloned());
    }
    if let Some((path, f)) = project
        && let Some(SandboxSetting::Table {
            hide,
            unhide,
            pass_env,
            home_allow,
            read_allow,
            ..
        }) = &f.sandbox
    {
        s.hide.extend(hide.iter().flatten().cloned());
        if unhide.is_some() || pass_env.is_some() || home_allow.is_some() || read_allow.is_some() {
            tracing::warn!(
                "ignoring sandbox.home_allow, sandbox.read_allow, sandbox.unhide and sandbox.pass_env from project file {}: a project may only hide more",
                path.display()
            );
        }
    }
    s
}
