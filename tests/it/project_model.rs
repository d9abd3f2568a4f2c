//! A hostile repository's `.rein/config.toml` with only `model = "claude-…"` (a key a project
//! may set without trust) must not choose the provider: the person's OpenAI key and their
//! conversation must never go to api.anthropic.com, a server they did not choose. Through the
//! real binary: `rein exec` against the person's scripted server, and, with no endpoint set
//! at all, through a recording HTTPS proxy that refuses every tunnel (nothing leaves the
//! machine; the proxy only learns which host rein wanted).

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::rein::{TEST_KEY, World, run_with_timeout, stderr, stdout};
use support::{Reply, ScriptedServer};

const CLAUDE: &str = "model = \"claude-opus-4\"\n";

/// The person's settings in their user file, fast to fail, plus `extra`.
fn person_config(world: &World, extra: &str) {
    world.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\nmax_retries = 0\n{extra}"
    ));
}

/// The world's environment without the variables named in `drop`, plus `add`.
fn env(
    world: &World,
    drop: &[&str],
    add: &[(&'static str, &str)],
) -> Vec<(&'static str, std::ffi::OsString)> {
    let mut env: Vec<_> = world
        .env_vars()
        .into_iter()
        .filter(|(k, _)| !drop.contains(k))
        .collect();
    env.extend(add.iter().map(|(k, v)| (*k, (*v).into())));
    env
}

fn run(
    world: &World,
    env: &[(&'static str, std::ffi::OsString)],
    args: &[&str],
) -> std::process::Output {
    let mut c = world.cmd();
    c.env_clear().envs(env.iter().cloned()).args(args);
    run_with_timeout(c, Duration::from_secs(60))
}

/// `rein config`'s line for `name`, value and source.
fn config_line(out: &str, name: &str) -> String {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
        .to_string()
}

#[test]
fn exec_with_a_project_claude_model_still_goes_to_the_persons_openai_server() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    // The person: provider openai and the scripted server from the environment, their model
    // in their file. No MODEL variable, so the project's model is not simply overridden.
    person_config(&world, "model = \"gpt-4o\"\n");
    world.write(".rein/config.toml", CLAUDE);
    let env = env(&world, &["MODEL"], &[]);
    server.push(Reply::text("Hello from your server."));

    let o = run(&world, &env, &["exec", "say hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.request_count(), 1, "{}", stderr(&o));
    let req = server.request(0);
    let auth = format!("Bearer {TEST_KEY}");
    assert_eq!(req.header("authorization"), Some(auth.as_str()));
    assert_eq!(req.body["model"], "gpt-4o", "the project's model was sent");
    assert!(stdout(&o).contains("Hello from your server."));
    let err = stderr(&o);
    assert!(
        err.contains("not trusted") && err.contains("claude-opus-4") && err.contains("--trust"),
        "a warning names the held model: {err}"
    );

    let o = run(&world, &env, &["config"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(config_line(&out, "provider").contains("openai"), "{out}");
    assert!(config_line(&out, "model").contains("gpt-4o"), "{out}");
    assert!(
        out.contains("ignored  model = \"claude-opus-4\"")
            && out.contains("not a model for openai"),
        "rein config says the project's model waits for trust:\n{out}"
    );
    assert!(out.contains("To let them apply"), "{out}");
}

/// A proxy on 127.0.0.1 that records each request line (`CONNECT host:443 …`) and refuses it.
fn refusing_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let text = String::from_utf8_lossy(&buf[..n]);
            let first = text.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push(first);
            let _ = s.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (url, seen)
}

/// The person has only `OPENAI_API_KEY` and a model of their own; no provider, no base URL.
fn only_an_openai_key(world: &World) -> Vec<(&'static str, std::ffi::OsString)> {
    env(
        world,
        &["MODEL", "BASE_URL", "API_KEY", "REIN_PROVIDER"],
        &[("OPENAI_API_KEY", TEST_KEY)],
    )
}

/// The report's setup: `model = "gpt-4o"` and `api_key` in the person's file, no provider,
/// no base URL, no key variable; requests go through `proxy`.
fn report_case(world: &World, proxy: String) -> Vec<(&'static str, std::ffi::OsString)> {
    person_config(
        world,
        &format!("model = \"gpt-4o\"\napi_key = \"{TEST_KEY}\"\n"),
    );
    env(
        world,
        &["MODEL", "BASE_URL", "API_KEY", "REIN_PROVIDER"],
        &[("HTTPS_PROXY", &proxy)],
    )
}

#[test]
fn with_only_an_openai_key_a_project_claude_model_does_not_pick_anthropic() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    world.write(".rein/config.toml", CLAUDE);

    // No model of the person's own: rein config shows OpenAI, never Anthropic with the key.
    person_config(&world, "");
    let env = only_an_openai_key(&world);
    let o = run(&world, &env, &["config"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(config_line(&out, "provider").contains("openai"), "{out}");
    let base_url = config_line(&out, "base_url");
    assert!(base_url.contains("https://api.openai.com/v1"), "{out}");
    assert!(!config_line(&out, "model").contains("claude"), "{out}");
    assert!(out.contains("ignored  model = \"claude-opus-4\""), "{out}");
    // rein exec says why it has no model, and that the project's waits for trust.
    let o = run(&world, &env, &["exec", "say hi"]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains("No model is set") && err.contains("claude-opus-4"),
        "{err}"
    );

    // The report's case: the person's model and key are in their file. Every tunnel rein
    // opens goes to OpenAI's host (and is refused), none to Anthropic's.
    let (proxy, seen) = refusing_proxy();
    let env = report_case(&world, proxy);
    let o = run(&world, &env, &["exec", "say hi"]);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|l| l.starts_with("CONNECT api.openai.com:443")),
        "rein did not try the person's provider: {seen:?}\n{}",
        stderr(&o)
    );
    assert!(
        !seen.iter().any(|l| l.contains("anthropic")),
        "the OpenAI key was headed to Anthropic: {seen:?}"
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn trusted_the_project_model_may_choose_the_provider() {
    // The oracle for the test above: with --trust the same repository does pick Anthropic,
    // so the proxy would have seen it had the guard been missing.
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    world.write(".rein/config.toml", CLAUDE);
    let (proxy, seen) = refusing_proxy();
    let env = report_case(&world, proxy);
    let o = run(&world, &env, &["exec", "--trust", "say hi"]);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|l| l.starts_with("CONNECT api.anthropic.com:443")),
        "{seen:?}\n{}",
        stderr(&o)
    );
}

#[test]
fn a_project_gpt_model_does_not_move_an_anthropic_person_to_openai() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    world.write(".rein/config.toml", "model = \"gpt-4o\"\n");
    person_config(&world, "model = \"claude-sonnet-4-5\"\n");
    let env = env(
        &world,
        &["MODEL", "BASE_URL", "API_KEY", "REIN_PROVIDER"],
        &[
            ("ANTHROPIC_API_KEY", TEST_KEY),
            ("OPENAI_API_KEY", "sk-other-0123456789"),
        ],
    );
    let o = run(&world, &env, &["config"]);
    let out = stdout(&o);
    assert!(config_line(&out, "provider").contains("anthropic"), "{out}");
    assert!(
        config_line(&out, "base_url").contains("https://api.anthropic.com"),
        "{out}"
    );
    assert!(
        config_line(&out, "model").contains("claude-sonnet-4-5"),
        "{out}"
    );
    assert!(
        out.contains("ignored  model = \"gpt-4o\"") && out.contains("not a model for anthropic"),
        "{out}"
    );
}

#[test]
fn a_project_model_that_fits_the_persons_provider_applies_without_trust() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    person_config(&world, "model = \"gpt-4o\"\n");
    world.write(".rein/config.toml", "model = \"gpt-4.1\"\n");
    let env = env(&world, &["MODEL"], &[]);
    server.push(Reply::text("ok"));
    let o = run(&world, &env, &["exec", "say hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.request(0).body["model"], "gpt-4.1");
    assert!(!stderr(&o).contains("not trusted"), "{}", stderr(&o));
    let out = stdout(&run(&world, &env, &["config"]));
    let model = config_line(&out, "model");
    assert!(
        model.contains("gpt-4.1") && model.contains(".rein/config.toml"),
        "{out}"
    );
    assert!(out.contains("nothing asks for trust"), "{out}");
}
