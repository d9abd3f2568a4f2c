//! Tests of the settings layers.
use super::*;
use crate::llm::ProviderKind;
use crate::policy::Action;
use std::path::Path;

fn inputs(dir: &Path, env: &[(&str, &str)]) -> Inputs {
    Inputs {
        flags: Flags::default(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
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
    std::fs::write(
        dir.path().join("home/.agents/env"),
        "MODEL=from-file\nAPI_KEY=filekey\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        "model = \"user-toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("proj/.rein/config.toml"),
        "model = \"proj-toml\"\n",
    )
    .unwrap();

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
    assert!(matches!(
        Config::from_inputs(&i),
        Err(ConfigError::Missing(_) | ConfigError::MissingKey(_))
    ));
}

#[test]
fn provider_inferred_and_key_optional_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://127.0.0.1:8080/v1"), ("MODEL", "q")],
    );
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.provider, ProviderKind::OpenAi);
    assert_eq!(c.api_key, None);

    let i = inputs(
        dir.path(),
        &[
            ("MODEL", "claude"),
            ("REIN_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "sk-ant-123456789"),
        ],
    );
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.base_url, "https://api.anthropic.com");
    assert_eq!(c.masked_key(), "****6789");

    let i = inputs(
        dir.path(),
        &[("MODEL", "m"), ("BASE_URL", "https://api.anthropic.com")],
    );
    match Config::from_inputs(&i) {
        Err(ConfigError::Missing(msg) | ConfigError::MissingKey(msg)) => {
            assert!(msg.contains("API_KEY"), "{msg}");
            assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
        }
        other => panic!("expected a missing-key error, got {other:?}"),
    }
}

#[test]
fn context_window_is_honoured_even_when_small() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs(
        dir.path(),
        &[
            ("BASE_URL", "http://localhost:1/v1"),
            ("MODEL", "m"),
            ("REIN_CONTEXT_WINDOW", "6000"),
        ],
    );
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
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.rules.len(), 1);
    assert_eq!(c.rules[0].action, Action::Deny);
}

#[test]
fn project_file_can_only_tighten_sandbox_and_edits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let project = dir.path().join("proj/.rein/config.toml");
    let user = dir.path().join("config/config.toml");
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );

    std::fs::write(
        &project,
        "edits = \"allow\"\n[sandbox]\nmode = \"off\"\nnetwork = true\n",
    )
    .unwrap();
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(
        (c.sandbox, c.sandbox_network, c.auto_approve_edits),
        (SandboxMode::WorkspaceWrite, false, false)
    );

    std::fs::write(
        &user,
        "edits = \"allow\"\n[sandbox]\nmode = \"off\"\nnetwork = true\n",
    )
    .unwrap();
    std::fs::write(&project, "sandbox = \"read-only\"\n").unwrap();
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(
        (c.sandbox, c.sandbox_network, c.auto_approve_edits),
        (SandboxMode::ReadOnly, true, true)
    );
    std::fs::write(&project, "edits = \"ask\"\n[sandbox]\nnetwork = false\n").unwrap();
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(
        (c.sandbox, c.sandbox_network, c.auto_approve_edits),
        (SandboxMode::Off, false, false)
    );
}

#[test]
fn loopback_detection() {
    assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
    assert!(is_loopback_url("http://localhost/v1"));
    assert!(is_loopback_url("http://[::1]:11434/v1"));
    assert!(!is_loopback_url("https://api.openai.com/v1"));
    assert!(!is_loopback_url("https://localhost.evil.com/v1"));
}

mod endpoint;
mod mode;
mod project_model;
mod trust;

#[test]
fn only_the_persons_own_config_can_allow_network_hosts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
    let user = dir.path().join("config/config.toml");
    let project = dir.path().join("proj/.rein/config.toml");
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );
    let hosts = |c: &Config| {
        c.sandbox_network_allow.as_ref().map(|l| {
            l.entries()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        })
    };
    // Off by default; the presets are opt-in.
    assert_eq!(hosts(&Config::from_inputs(&i).unwrap()), None);
    std::fs::write(
        &user,
        "[sandbox.network]\nallow = [\"example.org\", \"*.example.com:8443\"]\npresets = [\"npm\"]\n",
    )
    .unwrap();
    // A project's list is ignored (and says so), trusted or not: it never adds a host.
    std::fs::write(
        &project,
        "[sandbox.network]\nallow = [\"evil.example\", \"*.evil.example:*\"]\npresets = [\"python\"]\n",
    )
    .unwrap();
    for trust in [false, true] {
        let mut i = i.clone();
        i.flags.trust = trust;
        let c = Config::from_inputs(&i).unwrap();
        let got = hosts(&c).unwrap();
        assert_eq!(
            got,
            vec![
                "registry.npmjs.org:443",
                "registry.yarnpkg.com:443",
                "example.org",
                "*.example.com:8443"
            ]
        );
        assert!(!c.sandbox_network, "the table is not the whole network");
        assert!(
            c.ignored.iter().any(|s| s.key == "sandbox.network"),
            "{:?}",
            c.ignored
        );
    }
    // A project may still turn the network off.
    std::fs::write(&project, "[sandbox]\nnetwork = false\n").unwrap();
    assert_eq!(hosts(&Config::from_inputs(&i).unwrap()), None);
    // A project cannot turn the list into the whole network either.
    std::fs::write(&project, "[sandbox]\nnetwork = true\n").unwrap();
    let c = Config::from_inputs(&i).unwrap();
    assert!(!c.sandbox_network && hosts(&c).is_some());
    // A bad entry is an error that names it.
    std::fs::remove_file(&project).unwrap();
    std::fs::write(&user, "[sandbox.network]\nallow = [\"user@host\"]\n").unwrap();
    let err = Config::from_inputs(&i).unwrap_err().to_string();
    assert!(err.contains("user@host"), "{err}");
    std::fs::write(&user, "[sandbox.network]\npresets = [\"ruby\"]\n").unwrap();
    let err = Config::from_inputs(&i).unwrap_err().to_string();
    assert!(err.contains("ruby"), "{err}");
}

/// `read_allow` shows places to commands from the person's own config only; a project's is
/// ignored, like its `home_allow`.
#[test]
fn only_the_persons_own_config_can_show_places_to_commands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );
    std::fs::write(
        dir.path().join("proj/.rein/config.toml"),
        "[sandbox]\nread_allow = [\"/\"]\nhome_allow = [\"~/.ssh\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        "[sandbox]\nread_allow = [\"/srv/datasets\"]\n",
    )
    .unwrap();
    let c = Config::from_inputs(&i).unwrap();
    assert_eq!(c.sandbox_secrets.read_allow, ["/srv/datasets"]);
    assert!(c.sandbox_secrets.home_allow.is_empty());
    assert!(
        c.sandbox_rows()
            .iter()
            .any(|(k, v)| *k == "sandbox.read_allow" && v == "/srv/datasets"),
        "rein config shows it"
    );
}
