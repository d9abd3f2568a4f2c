//! Where requests go: provider, base URL, model and key, which decide each other's defaults,
//! and the message that says what to set when something is missing.

use super::derive::Sources;
use super::project::ProjectModel;
use super::raw::{RawConfig, Sourced};
use super::{ConfigError, IgnoredSetting, Source, is_loopback_url};
use crate::llm::ProviderKind;
use std::path::Path;

/// Where requests go and with which key and model.
pub(super) struct Endpoint {
    pub(super) provider: ProviderKind,
    pub(super) base_url: String,
    pub(super) model: String,
    pub(super) api_key: Option<String>,
    /// An untrusted project's model that does not fit the provider: it waits for trust.
    pub(super) held: Option<IgnoredSetting>,
}

fn infer_from_url(base_url: &str) -> ProviderKind {
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
        "openai-responses" | "responses" => Ok(ProviderKind::OpenAiResponses),
        other => Err(ConfigError::Invalid(format!(
            "Unknown provider \"{other}\" (from {origin}). Use \"openai\" (any OpenAI-compatible \
             Chat Completions server), \"openai-responses\" (OpenAI's Responses API) or \
             \"anthropic\"."
        ))),
    }
}

/// The provider: given > inferred from the base URL > a `claude-*` model > only an Anthropic
/// key present (someone coming from Claude Code) > OpenAI. Only the person's own settings
/// count: `raw.model` never holds an untrusted project's model, so a repository cannot send
/// the person's key and conversation to another vendor by naming its model.
fn choose_provider(raw: &RawConfig) -> Result<(ProviderKind, Source), ConfigError> {
    if let Some(p) = &raw.provider {
        return Ok((parse_provider(&p.value, &p.source)?, p.source.clone()));
    }
    if let Some(url) = &raw.base_url {
        let kind = infer_from_url(&url.value);
        return Ok((kind, Source::Derived("inferred from base_url")));
    }
    let claude = raw
        .model
        .as_ref()
        .is_some_and(|m| m.value.trim().to_ascii_lowercase().starts_with("claude"));
    if claude {
        return Ok((
            ProviderKind::Anthropic,
            Source::Derived("inferred from the model name"),
        ));
    }
    if raw.anthropic_key.is_some() && raw.openai_key.is_none() && raw.api_key.is_none() {
        return Ok((
            ProviderKind::Anthropic,
            Source::Derived("inferred from ANTHROPIC_API_KEY"),
        ));
    }
    Ok((ProviderKind::OpenAi, Source::Default))
}

/// The provider a model's name belongs to, when the name says so (`None`: any provider may
/// serve it, e.g. a local `qwen2.5-coder` or OpenRouter's `anthropic/claude-…`).
fn model_family(model: &str) -> Option<ProviderKind> {
    let m = model.trim().to_ascii_lowercase();
    let o_series = m
        .strip_prefix('o')
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit());
    if m.starts_with("claude") {
        Some(ProviderKind::Anthropic)
    } else if o_series || ["gpt", "chatgpt", "codex"].iter().any(|p| m.starts_with(p)) {
        Some(ProviderKind::OpenAi)
    } else {
        None
    }
}

/// Whether `model` may be sent to `provider`: it names no other provider's family.
fn fits(model: &str, provider: ProviderKind) -> bool {
    match model_family(model) {
        None => true,
        Some(ProviderKind::Anthropic) => provider == ProviderKind::Anthropic,
        Some(_) => provider != ProviderKind::Anthropic,
    }
}

/// The model: an untrusted project's when it fits the provider the person's settings chose,
/// else the person's, with the project's held for trust.
fn pick_model(
    raw: &RawConfig,
    provider: ProviderKind,
) -> (Option<Sourced<String>>, Option<IgnoredSetting>) {
    match &raw.project_model {
        Some(p) if fits(&p.value.value, provider) => (Some(p.value.clone()), None),
        Some(p) => (raw.model.clone(), Some(held(p, provider))),
        None => (raw.model.clone(), None),
    }
}

/// A project model held because it names another provider's family than `provider`.
fn held(p: &ProjectModel, provider: ProviderKind) -> IgnoredSetting {
    let file = match &p.value.source {
        Source::File(path) => path.clone(),
        _ => std::path::PathBuf::new(),
    };
    IgnoredSetting {
        key: "model".into(),
        file,
        reason: format!(
            "it is not a model for {}, the provider your settings chose, and this project is \
             not trusted",
            provider.as_str()
        ),
        trust: Some(p.item.clone()),
    }
}

fn default_base_url(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com",
    }
}

/// The provider's own key variable.
fn key_variable(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// Provider, base URL, model and key; `strict` fails when the model or (off loopback) the
/// key is missing.
pub(super) fn derive_endpoint(
    raw: &RawConfig,
    strict: bool,
    config_dir: &Path,
    sources: &mut Sources,
) -> Result<Endpoint, ConfigError> {
    let (provider, provider_source) = choose_provider(raw)?;
    sources.push("provider", provider_source.clone());
    let (model, held) = pick_model(raw, provider);
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
    let fallback = match provider {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => &raw.openai_key,
        ProviderKind::Anthropic => &raw.anthropic_key,
    };
    let api_key = raw.api_key.as_ref().or(fallback.as_ref());
    if strict {
        let missing = Missing {
            model: model.is_none(),
            held: raw.project_model.as_ref().filter(|_| held.is_some()),
            key: api_key.is_none() && !is_loopback_url(&base_url),
            provider,
            provider_chosen: provider_source != Source::Default,
            base_url: &base_url,
            base_url_given: raw.base_url.is_some(),
        };
        if missing.model {
            return Err(ConfigError::Missing(missing.message(config_dir)));
        }
        if missing.key {
            return Err(ConfigError::MissingKey(missing.message(config_dir)));
        }
    }
    let trimmed = |s: &Sourced<String>| Sourced {
        value: s.value.trim().to_string(),
        source: s.source.clone(),
    };
    let model = sources.or_default("model", model.as_ref().map(trimmed), String::new());
    let api_key = api_key.map(trimmed).map(|k| Sourced {
        value: Some(k.value),
        source: k.source,
    });
    let api_key = sources.or_default("api_key", api_key, None);
    Ok(Endpoint {
        provider,
        base_url,
        model,
        api_key,
        held,
    })
}

/// What is missing, and what the person already chose (so the advice fits).
struct Missing<'a> {
    model: bool,
    /// The project's model, when it waits for trust (the person may have meant to use it).
    held: Option<&'a ProjectModel>,
    key: bool,
    provider: ProviderKind,
    provider_chosen: bool,
    base_url: &'a str,
    base_url_given: bool,
}

impl Missing<'_> {
    /// Says what is missing and only the ways to set it that apply.
    fn message(&self, config_dir: &Path) -> String {
        let what = match (self.model, self.key) {
            (true, true) => "No model and no API key are",
            (true, false) => "No model is",
            _ => "No API key is",
        };
        let mut out = format!("{what} set for the model server at {}.", self.base_url);
        if self.model {
            out.push_str(&format!(
                " Set MODEL (or REIN_MODEL, or --model) in your environment or ~/.agents/env, \
                 or `model = \"...\"` in {}.",
                config_dir.join("config.toml").display()
            ));
        }
        if let (true, Some(held)) = (self.model, self.held) {
            let name = toml::Value::String(held.value.value.clone());
            out.push_str(&format!(
                " The project's model = {} (from {}) is not used: it is not a model for {} and \
                 the project is not trusted; pass --trust to use it.",
                super::project::shown("model", &name),
                held.value.source,
                self.provider.as_str()
            ));
        }
        if self.key {
            let var = key_variable(self.provider);
            out.push_str(&format!(
                " Set {var} (or API_KEY) in your environment or ~/.agents/env."
            ));
        }
        if self.key && !self.base_url_given {
            out.push_str(&self.provider_advice());
            out.push_str(
                " A local server (llama.cpp, Ollama, vLLM) needs no key: set BASE_URL to it, \
                 e.g. BASE_URL=http://127.0.0.1:11434/v1.",
            );
        }
        out
    }

    /// How to pick the other provider, unless the person already picked this one.
    fn provider_advice(&self) -> String {
        if self.provider_chosen {
            return String::new();
        }
        match self.provider {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                " For Anthropic, set ANTHROPIC_API_KEY instead (rein picks \
                                     Anthropic when that is the only key, or with --provider \
                                     anthropic or a claude-* model)."
                    .into()
            }
            ProviderKind::Anthropic => {
                " For OpenAI, set OPENAI_API_KEY and --provider openai.".into()
            }
        }
    }
}
