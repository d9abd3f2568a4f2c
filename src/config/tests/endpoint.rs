//! Choosing the provider, the context window, and saying what is missing.
use super::*;

fn config(env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    Config::from_inputs(&inputs(dir.path(), env))
}

#[test]
fn the_provider_follows_the_key_and_the_model_when_nothing_names_it() {
    type Case<'a> = (&'a [(&'a str, &'a str)], ProviderKind, &'a str);
    let cases: &[Case] = &[
        (
            &[("MODEL", "m"), ("ANTHROPIC_API_KEY", "sk-ant-1")],
            ProviderKind::Anthropic,
            "https://api.anthropic.com",
        ),
        (
            &[
                ("MODEL", "m"),
                ("ANTHROPIC_API_KEY", "a"),
                ("OPENAI_API_KEY", "o"),
            ],
            ProviderKind::OpenAi,
            "https://api.openai.com/v1",
        ),
        (
            &[("MODEL", "m"), ("ANTHROPIC_API_KEY", "a"), ("API_KEY", "k")],
            ProviderKind::OpenAi,
            "https://api.openai.com/v1",
        ),
        (
            &[("MODEL", "claude-sonnet-4-5"), ("API_KEY", "k")],
            ProviderKind::Anthropic,
            "https://api.anthropic.com",
        ),
        (
            &[
                ("MODEL", "Claude-3-5-haiku"),
                ("ANTHROPIC_API_KEY", "a"),
                ("OPENAI_API_KEY", "o"),
            ],
            ProviderKind::Anthropic,
            "https://api.anthropic.com",
        ),
        // A router serving Claude over Chat Completions: the base URL decides.
        (
            &[
                ("MODEL", "claude-sonnet-4-5"),
                ("API_KEY", "k"),
                ("BASE_URL", "https://openrouter.ai/api/v1"),
            ],
            ProviderKind::OpenAi,
            "https://openrouter.ai/api/v1",
        ),
        (
            &[
                ("MODEL", "claude-x"),
                ("API_KEY", "k"),
                ("REIN_PROVIDER", "openai"),
            ],
            ProviderKind::OpenAi,
            "https://api.openai.com/v1",
        ),
    ];
    for (env, provider, base_url) in cases {
        let c = config(env).unwrap_or_else(|e| panic!("{env:?}: {e}"));
        assert_eq!(
            (c.provider, c.base_url.as_str()),
            (*provider, *base_url),
            "{env:?}"
        );
    }
    let c = config(&[("MODEL", "m"), ("ANTHROPIC_API_KEY", "sk-ant-1")]).unwrap();
    assert_eq!(c.api_key.as_deref(), Some("sk-ant-1"));
    assert_eq!(
        c.source_of("provider"),
        Source::Derived("inferred from ANTHROPIC_API_KEY")
    );
}

#[test]
fn known_model_families_get_their_window() {
    let cases = [
        ("claude-sonnet-4-5", Some(200_000)),
        ("anthropic/claude-3.5-sonnet", Some(200_000)),
        ("claude-2.0", Some(100_000)),
        ("gpt-4.1-mini", Some(1_047_576)),
        ("gpt-4o", Some(128_000)),
        ("gpt-5", Some(272_000)),
        ("o3-mini", Some(200_000)),
        ("gemini-2.5-pro", Some(1_048_576)),
        ("qwen2.5-coder:14b", None),
        ("", None),
    ];
    for (model, window) in cases {
        assert_eq!(family_context_window(model), window, "{model}");
    }
}

#[test]
fn context_window_precedence_explicit_server_family_default() {
    let explicit = Some((6000, Source::Env("REIN_CONTEXT_WINDOW".into())));
    assert_eq!(
        choose_context_window(explicit.clone(), Some((9000, "test")), "claude-x").0,
        6000
    );
    assert_eq!(
        choose_context_window(None, Some((9000, "test")), "claude-x"),
        (9000, Source::Server("test"))
    );
    assert_eq!(choose_context_window(None, None, "claude-x").0, 200_000);
    assert_eq!(
        choose_context_window(None, None, "local"),
        (DEFAULT_CONTEXT_WINDOW, Source::Default)
    );

    let mut c = config(&[("MODEL", "claude-opus-4"), ("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!(c.context_window, 200_000);
    c.apply_server_context_window(50_000, "test");
    assert_eq!(
        (c.context_window, c.source_of("context_window")),
        (50_000, Source::Server("test"))
    );
    let mut c = config(&[
        ("MODEL", "claude-opus-4"),
        ("ANTHROPIC_API_KEY", "a"),
        ("REIN_CONTEXT_WINDOW", "7000"),
    ])
    .unwrap();
    c.apply_server_context_window(50_000, "test");
    assert_eq!(c.context_window, 7000);
}

fn missing(env: &[(&str, &str)]) -> String {
    match config(env) {
        Err(ConfigError::Missing(m) | ConfigError::MissingKey(m)) => m,
        other => panic!("expected a missing-setting error for {env:?}, got {other:?}"),
    }
}

#[test]
fn the_missing_message_gives_only_the_advice_that_applies() {
    let m = missing(&[("API_KEY", "k")]);
    assert!(m.starts_with("No model is set"), "{m}");
    assert!(!m.contains("API key") && !m.contains("local server"), "{m}");

    let m = missing(&[("MODEL", "m")]);
    assert!(m.starts_with("No API key is set"), "{m}");
    assert!(
        m.contains("OPENAI_API_KEY") && m.contains("ANTHROPIC_API_KEY"),
        "{m}"
    );
    assert!(
        m.contains("--provider anthropic") && m.contains("BASE_URL="),
        "{m}"
    );
    assert!(
        !m.to_lowercase().starts_with("rein"),
        "the caller adds `rein:`: {m}"
    );

    // The person chose the server: no talk of other providers or local servers.
    let m = missing(&[("MODEL", "m"), ("BASE_URL", "https://openrouter.ai/api/v1")]);
    assert!(
        !m.contains("Anthropic") && !m.contains("local server"),
        "{m}"
    );
    let m = missing(&[("MODEL", "claude-x")]);
    assert!(
        m.contains("ANTHROPIC_API_KEY") && !m.contains("For Anthropic"),
        "{m}"
    );

    let m = missing(&[]);
    assert!(m.starts_with("No model and no API key are set"), "{m}");
}

#[test]
fn old_key_names_still_work_and_say_their_new_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        "max_turns = 7\nsubagent_max_turns = 3\n",
    )
    .unwrap();
    let c = Config::from_inputs(&inputs(dir.path(), &[("MODEL", "m"), ("API_KEY", "k")])).unwrap();
    assert_eq!((c.max_requests, c.subagent_max_requests), (Some(7), 3));
    let notices = c.startup_notices().join("\n");
    assert!(
        notices.contains("`max_turns` is now called `max_requests`"),
        "{notices}"
    );
    assert!(
        notices.contains("`subagent_max_turns` is now called `subagent_max_requests`"),
        "{notices}"
    );
    assert!(c.describe().contains("deprecated"));
}
