//! A project's `model` may never choose the provider, the server or the key: only the
//! person's own settings (and a trusted project) do. One that names another provider's family
//! waits for trust; one that fits the person's provider applies alone.
use super::*;

/// A world with `project` as `.rein/config.toml`, `user` as the person's config file and
/// `env` as the environment.
struct World {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, &'static str)>,
}

impl World {
    fn new(project: &str, user: &str, env: &[(&'static str, &'static str)]) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(dir.path().join("proj/.rein/config.toml"), project).unwrap();
        std::fs::write(dir.path().join("config/config.toml"), user).unwrap();
        World {
            dir,
            env: env.to_vec(),
        }
    }

    fn inputs(&self) -> Inputs {
        inputs(self.dir.path(), &self.env)
    }

    fn lenient(&self) -> Config {
        Config::build(&self.inputs(), false).unwrap()
    }

    fn project_file(&self) -> std::path::PathBuf {
        self.dir.path().join("proj/.rein/config.toml")
    }
}

const CLAUDE: &str = "model = \"claude-opus-4\"\n";

/// The project's model is held for trust, with the reason naming `provider`.
fn assert_held(c: &Config, provider: &str) {
    let held: Vec<_> = c.ignored.iter().filter(|i| i.key == "model").collect();
    assert_eq!(held.len(), 1, "{:?}", c.ignored);
    assert!(held[0].trust.is_some(), "{:?}", held[0]);
    assert!(
        held[0]
            .reason
            .contains(&format!("not a model for {provider}")),
        "{}",
        held[0].reason
    );
    assert!(
        c.describe().contains("ignored  model = \""),
        "{}",
        c.describe()
    );
}

#[test]
fn a_claude_model_in_a_project_does_not_send_the_openai_key_to_anthropic() {
    // The report's setup: the person's model and key in their file, no provider or base URL.
    let w = World::new(
        CLAUDE,
        "model = \"gpt-4o\"\napi_key = \"sk-openai-USERKEY\"\n",
        &[],
    );
    let c = Config::from_inputs(&w.inputs()).unwrap();
    assert_eq!(c.provider, ProviderKind::OpenAi);
    assert_eq!(c.base_url, "https://api.openai.com/v1");
    assert_eq!(c.model, "gpt-4o");
    assert_eq!(c.api_key.as_deref(), Some("sk-openai-USERKEY"));
    assert_eq!(c.source_of("provider"), Source::Default);
    assert_held(&c, "openai");
    assert!(c.describe().contains("not trusted"));

    // The generic API_KEY and OPENAI_API_KEY alike.
    for env in [[("API_KEY", "k")], [("OPENAI_API_KEY", "k")]] {
        let w = World::new(CLAUDE, "model = \"gpt-4o\"\n", &env);
        let c = Config::from_inputs(&w.inputs()).unwrap();
        assert_eq!(
            (c.provider, c.model.as_str()),
            (ProviderKind::OpenAi, "gpt-4o")
        );
        assert_held(&c, "openai");
    }
}

#[test]
fn without_a_model_of_their_own_the_person_is_told_the_project_model_waits() {
    let w = World::new(CLAUDE, "", &[("OPENAI_API_KEY", "sk-o")]);
    let c = w.lenient();
    assert_eq!(c.provider, ProviderKind::OpenAi);
    assert_eq!(c.base_url, "https://api.openai.com/v1");
    assert_eq!(c.model, "");
    assert_held(&c, "openai");
    match Config::from_inputs(&w.inputs()) {
        Err(ConfigError::Missing(m)) => {
            assert!(m.starts_with("No model is set"), "{m}");
            assert!(
                m.contains("model = \"claude-opus-4\"") && m.contains("--trust"),
                "{m}"
            );
        }
        other => panic!("expected a missing model, got {other:?}"),
    }
}

#[test]
fn a_gpt_model_in_a_project_does_not_send_the_anthropic_key_to_openai() {
    let w = World::new(
        "model = \"gpt-4o\"\n",
        "model = \"claude-sonnet-4-5\"\n",
        &[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-o")],
    );
    let c = Config::from_inputs(&w.inputs()).unwrap();
    assert_eq!(c.provider, ProviderKind::Anthropic);
    assert_eq!(c.base_url, "https://api.anthropic.com");
    assert_eq!(c.model, "claude-sonnet-4-5");
    assert_eq!(c.api_key.as_deref(), Some("sk-ant"));
    assert_held(&c, "anthropic");
    for o in ["o3", "o4-mini", "chatgpt-4o-latest", "codex-mini-latest"] {
        let w = World::new(
            &format!("model = \"{o}\"\n"),
            "",
            &[("ANTHROPIC_API_KEY", "sk-ant")],
        );
        let c = w.lenient();
        assert_eq!(c.provider, ProviderKind::Anthropic, "{o}");
        assert_eq!(c.model, "", "{o}");
        assert_eq!(c.untrusted_items().len(), 1, "{o}");
    }
}

#[test]
fn with_both_keys_the_repository_does_not_pick_the_vendor() {
    let w = World::new(
        CLAUDE,
        "",
        &[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-o")],
    );
    let c = w.lenient();
    assert_eq!(c.provider, ProviderKind::OpenAi);
    assert_eq!(c.api_key.as_deref(), Some("sk-o"));
    assert_held(&c, "openai");
}

#[test]
fn a_project_model_that_fits_the_persons_provider_applies_without_trust() {
    for (project, user, key) in [
        ("gpt-4.1", "gpt-4o", "OPENAI_API_KEY"),
        ("o3", "gpt-4o", "OPENAI_API_KEY"),
        ("qwen2.5-coder:14b", "gpt-4o", "OPENAI_API_KEY"),
        ("claude-haiku-4-5", "claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ] {
        let w = World::new(
            &format!("model = \"{project}\"\n"),
            &format!("model = \"{user}\"\n"),
            &[(key, "sk-1")],
        );
        let c = Config::from_inputs(&w.inputs()).unwrap();
        assert_eq!(c.model, project);
        assert_eq!(c.source_of("model"), Source::File(w.project_file()));
        assert!(c.ignored.is_empty(), "{project}: {:?}", c.ignored);
    }
}

#[test]
fn trusting_the_project_lets_its_model_apply_and_choose() {
    let w = World::new(CLAUDE, "", &[("API_KEY", "k")]);
    let items = w.lenient().untrusted_items();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, "config.model");
    let mut i = w.inputs();
    i.flags.approved = items;
    let c = Config::from_inputs(&i).unwrap();
    // Trusted, the project's file is the person's choice: it may pick the provider.
    assert_eq!(
        (c.provider, c.model.as_str()),
        (ProviderKind::Anthropic, "claude-opus-4")
    );
    assert!(c.ignored.is_empty());

    let mut i = w.inputs();
    i.flags.trust = true;
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.model, "claude-opus-4");
}

#[test]
fn a_model_from_a_flag_or_the_environment_leaves_nothing_to_ask() {
    let w = World::new(CLAUDE, "", &[("API_KEY", "k"), ("MODEL", "gpt-4o")]);
    let c = Config::from_inputs(&w.inputs()).unwrap();
    assert_eq!(
        (c.provider, c.model.as_str()),
        (ProviderKind::OpenAi, "gpt-4o")
    );
    assert!(c.ignored.is_empty(), "{:?}", c.ignored);
    let mut i = w.inputs();
    i.env.remove("MODEL");
    i.flags.model = Some("m".into());
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.model, "m");
    assert!(c.ignored.is_empty(), "{:?}", c.ignored);
    // What `--local` sets: its server and model, untouched by the project.
    i.flags.provider = Some("openai".into());
    i.flags.base_url = Some("http://127.0.0.1:8091/v1".into());
    i.flags.model = Some("qwen2.5-coder-1.5b".into());
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(
        (c.provider, c.base_url.as_str(), c.model.as_str()),
        (
            ProviderKind::OpenAi,
            "http://127.0.0.1:8091/v1",
            "qwen2.5-coder-1.5b"
        )
    );
    assert!(c.ignored.is_empty(), "{:?}", c.ignored);
}

#[test]
fn a_model_that_is_not_a_string_waits_for_trust() {
    let w = World::new("model = 5\n", "model = \"m\"\n", &[("API_KEY", "k")]);
    let c = Config::from_inputs(&w.inputs()).unwrap();
    assert_eq!(c.model, "m");
    assert_eq!(c.untrusted_items().len(), 1);
}
