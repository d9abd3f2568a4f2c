//! The context window: an explicit setting, else what the server reports, else what the model
//! family is known to have, else a default.

use super::{Config, Source};

/// The window when nothing else is known.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// What a model family is known to accept, in tokens (input, where input and output have
/// separate limits). `None` for models rein knows nothing about. A router prefix
/// (`anthropic/claude-…` on OpenRouter) is ignored.
pub fn family_context_window(model: &str) -> Option<u64> {
    let name = model.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name);
    const FAMILIES: &[(&str, u64)] = &[
        ("claude-2.0", 100_000),
        ("claude-instant", 100_000),
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        // gpt-5-chat-latest has a 128k window; every other GPT-5 model (gpt-5.1, gpt-5.2,
        // gpt-5-codex, -mini, -nano, -pro) takes 272k input tokens of its 400k.
        ("gpt-5-chat", 128_000),
        ("gpt-5", 272_000),
        ("codex-mini", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("gemini-1.5", 1_048_576),
        ("gemini-2", 1_048_576),
    ];
    // First match wins: more specific prefixes come before their family.
    FAMILIES
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, window)| window)
}

/// The window and its source, by precedence: explicit > server-reported > family > default.
pub fn choose_context_window(
    explicit: Option<(u64, Source)>,
    server: Option<(u64, &'static str)>,
    model: &str,
) -> (u64, Source) {
    if let Some(given) = explicit {
        return given;
    }
    if let Some((n, what)) = server.filter(|&(n, _)| n > 0) {
        return (n, Source::Server(what));
    }
    match family_context_window(model) {
        Some(n) => (n, Source::Derived("known for the model family")),
        None => (DEFAULT_CONTEXT_WINDOW, Source::Default),
    }
}

impl Config {
    /// Takes the window the model server reports for the model, unless the person set one.
    /// `what` says which endpoint reported it (shown by `rein config`).
    pub fn apply_server_context_window(&mut self, reported: u64, what: &'static str) {
        let source = self.source_of("context_window");
        let explicit = !matches!(
            source,
            Source::Default | Source::Derived(_) | Source::Server(_)
        );
        if explicit || reported == 0 {
            return;
        }
        self.context_window = reported;
        self.set_source("context_window", Source::Server(what));
    }
}
