//! The launch gate for MCP stdio servers, through the real binary: a server from the person's
//! own config never resolves code or configuration from the workspace. The repository plants
//! what the server's program would pick up from its working directory (a Python package
//! `python3 -m` would import, a `node_modules/.bin` an `npx`-like runner prefers, a relative
//! `PATH` entry), and the oracle is a marker file outside the workspace that only the planted
//! code writes. A server's environment is the allow-list plus its own `env`; a working
//! directory in the workspace or a relative command is a project decision that waits for trust.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::mcp::q;
use support::pty::{Pty, keys};
use support::rein::{World, assert_ok, run_with_timeout, stderr, stdout};
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(30);

/// A world whose user config holds `servers` (TOML tables), and a directory outside the
/// workspace for evidence.
fn world(s: &ScriptedServer, servers: &str) -> (World, PathBuf) {
    let w = World::new(s);
    w.user_config(&format!("retry_backoff_ms = 20\n{servers}"));
    let evidence = w.dir.path().join("evidence");
    std::fs::create_dir_all(&evidence).unwrap();
    (w, evidence.canonicalize().unwrap())
}

/// Plants `mcp_server_time/` in the workspace: run as `python3 -m`, it writes `marker`.
fn plant_python_module(w: &World, marker: &Path) {
    let payload = format!("open({:?}, 'a').write('planted module ran\\n')\n", marker);
    w.write("mcp_server_time/__init__.py", &payload);
    w.write("mcp_server_time/__main__.py", &payload);
}

/// The user's `time` server exactly as its README says.
const TIME_SERVER: &str =
    "[mcp_servers.time]\ncommand = \"python3\"\nargs = [\"-m\", \"mcp_server_time\"]\n";

/// Runs `rein <args>` in the world, with `path` as its `PATH` when given.
fn run(w: &World, args: &[&str], path: Option<&OsString>) -> std::process::Output {
    let mut c = w.cmd();
    c.args(args);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    run_with_timeout(c, Duration::from_secs(60))
}

fn assert_absent(marker: &Path, what: &str) {
    assert!(
        !marker.exists(),
        "{what}: the workspace's code ran: {}",
        std::fs::read_to_string(marker).unwrap_or_default()
    );
}

#[test]
fn python_m_never_imports_the_workspace_package_in_mcp_list_or_exec() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let (w, evidence) = world(&s, TIME_SERVER);
    let marker = evidence.join("marker");
    plant_python_module(&w, &marker);

    let list = run(&w, &["mcp", "list"], None);
    assert_ok(&list);
    let text = stdout(&list);
    // Python did run (the oracle that the server was started at all), just not the repo's.
    assert!(
        text.contains("time  failed") && text.contains("mcp_server_time"),
        "{text}"
    );
    assert_absent(&marker, "rein mcp list");

    s.push(Reply::text("done"));
    let out = run(&w, &["exec", "--yes", "go"], None);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("MCP server time failed to start"),
        "{}",
        stderr(&out)
    );
    assert_absent(&marker, "rein exec");
}

#[test]
fn python_m_never_imports_the_workspace_package_in_the_app() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let (w, evidence) = world(&s, TIME_SERVER);
    let marker = evidence.join("marker");
    plant_python_module(&w, &marker);
    let mut t = w.spawn_tui(200, 40);
    t.expect(
        "the app, ready",
        |s| s.contains("scripted-model") && s.contains("enter send"),
        WAIT,
    );
    mcp_view_then_quit(&mut t, "time  failed");
    assert_absent(&marker, "the app");
}

/// Asks the app for `/mcp` until `line` is in it, and quits.
fn mcp_view_then_quit(t: &mut Pty, line: &str) {
    let until = Instant::now() + WAIT;
    loop {
        t.send_keys("/mcp");
        t.send_raw(keys::ENTER);
        match t.wait_for_text(line, Duration::from_secs(1)) {
            Ok(_) => break,
            Err(screen) => assert!(Instant::now() < until, "no {line:?} in /mcp: {screen}"),
        }
    }
    assert_eq!(t.quit_app(WAIT), Some(0), "{}", t.screen_text());
}

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Python lines that record where and with what the script runs into `report` (JSON).
fn record(report: &Path) -> String {
    format!(
        "import json, os, sys\n\
         json.dump({{'cwd': os.getcwd(), 'env': dict(os.environ), 'argv': sys.argv}}, \
         open({:?}, 'w'))\n",
        report
    )
}

/// A `python3` script that records itself into `report`.
fn recorder(report: &Path) -> String {
    format!("#!/usr/bin/env python3\n{}", record(report))
}

fn read_report(report: &Path) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(report)
            && let Ok(v) = serde_json::from_str::<Value>(&text)
        {
            return v;
        }
        assert!(
            Instant::now() < until,
            "{} was never written",
            report.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_npx_like_runner_and_relative_path_entries_never_reach_the_workspace_node_modules() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let servers =
        "[mcp_servers.runner]\ncommand = \"rein-fake-npx\"\nargs = [\"-y\", \"fake-srv\"]\n";
    let (w, evidence) = world(&s, servers);
    let marker = evidence.join("marker");
    let report = evidence.join("report.json");
    // The genuine runner, installed outside the workspace: like npx, it prefers the package
    // in `./node_modules/.bin` of its working directory, else runs its own (records itself).
    let tools = w.dir.path().join("tools");
    script(
        &tools.join("rein-fake-npx"),
        &format!(
            "#!/usr/bin/env python3\nimport os, sys\n\
             local = os.path.join('node_modules', '.bin', sys.argv[-1])\n\
             if os.path.exists(local):\n    os.execv(local, [local])\n{}",
            record(&report)
        ),
    );
    // The repository's shims, for both the package and the runner itself.
    let shim = format!(
        "#!/bin/sh\necho \"shim $0 ran in $(pwd)\" >> {}\n",
        marker.display()
    );
    for name in ["fake-srv", "rein-fake-npx"] {
        script(&w.ws.join("node_modules/.bin").join(name), &shim);
    }
    // The person's PATH has the usual project entries in front (relative and absolute).
    let mut entries = vec![
        PathBuf::from("node_modules/.bin"),
        w.ws.join("node_modules/.bin"),
        tools.clone(),
    ];
    entries.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    let path = std::env::join_paths(entries).unwrap();

    let list = run(&w, &["mcp", "list"], Some(&path));
    assert_ok(&list);
    assert_absent(&marker, "rein mcp list");
    let seen = read_report(&report);
    let cwd = seen["cwd"].as_str().unwrap();
    assert!(!Path::new(cwd).starts_with(&w.ws), "ran in {cwd}");
    let child_path = seen["env"]["PATH"].as_str().unwrap();
    for entry in std::env::split_paths(child_path) {
        assert!(
            entry.is_absolute() && !entry.starts_with(&w.ws),
            "the server's PATH has {}: {child_path}",
            entry.display()
        );
    }
    assert!(
        child_path.contains(&*tools.to_string_lossy()),
        "{child_path}"
    );
}

/// A value no list of secret names could know.
fn random_word(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mixed = nanos ^ ((std::process::id() as u128) << 64) ^ (prefix.len() as u128 * 0x9e37);
    format!("{prefix}{:x}", mixed.wrapping_mul(0x2545_f491_4f6c_dd1d))
}

#[test]
fn a_server_gets_a_neutral_cwd_and_the_allow_list_plus_its_own_env() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let report = outside.join("report.json");
    let server = outside.join("server.py");
    script(&server, &recorder(&report));
    let servers = format!(
        "[mcp_servers.rec]\ncommand = \"python3\"\nargs = [{}]\nenv = {{ ENTRY_VAR = \"from-entry\", HANDED = \"${{HANDED_SRC}}\" }}\n",
        q(&server.display().to_string())
    );
    let (w, _) = world(&s, &servers);
    let (name, value) = (random_word("ZQ_"), random_word("val-"));
    let mut c = w.cmd();
    c.env(&name, &value)
        .env("HANDED_SRC", "handed-on-purpose")
        .args(["mcp", "list"]);
    assert_ok(&run_with_timeout(c, Duration::from_secs(60)));
    let seen = read_report(&report);
    let cwd = Path::new(seen["cwd"].as_str().unwrap());
    assert!(
        !cwd.starts_with(&w.ws) && !w.ws.starts_with(cwd),
        "the server ran in {}",
        cwd.display()
    );
    let env = seen["env"].as_object().unwrap();
    let dump = serde_json::to_string(env).unwrap();
    assert!(
        !dump.contains(&name) && !dump.contains(&value),
        "the secret reached the server: {dump}"
    );
    assert!(
        !dump.contains(support::rein::TEST_KEY),
        "the API key reached it"
    );
    for unset in ["API_KEY", "BASE_URL", "HANDED_SRC"] {
        assert!(!env.contains_key(unset), "{unset} reached it: {dump}");
    }
    assert!(
        env.contains_key("PATH") && env.contains_key("HOME"),
        "{dump}"
    );
    assert_eq!(env["ENTRY_VAR"], "from-entry");
    assert_eq!(env["HANDED"], "handed-on-purpose");
}

#[test]
fn a_relative_command_or_a_workspace_cwd_waits_for_trust() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let servers = "[mcp_servers.rel]\ncommand = \"./bin/srv\"\n\
                   [mcp_servers.here]\ncommand = \"python3\"\nargs = [\"-m\", \"mcp_server_time\"]\ncwd = \".\"\n";
    let (w, evidence) = world(&s, servers);
    let marker = evidence.join("marker");
    plant_python_module(&w, &marker);
    script(
        &w.ws.join("bin/srv"),
        &format!("#!/bin/sh\necho relative ran >> {}\n", marker.display()),
    );

    let list = run(&w, &["mcp", "list"], None);
    assert_ok(&list);
    let text = stdout(&list);
    assert!(
        text.contains("rel  not approved") && text.contains("here  not approved"),
        "{text}"
    );
    assert_absent(&marker, "rein mcp list");

    s.push(Reply::text("done"));
    let out = run(&w, &["exec", "--yes", "go"], None);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains("not trusted") && err.contains("MCP server rel ") && err.contains("here"),
        "{err}"
    );
    assert_absent(&marker, "rein exec");

    // The app asks, showing both; declined, neither runs.
    let mut t = w.spawn_tui(200, 40);
    // Wait for the whole prompt: a frame may reach the pty in more than one read.
    t.expect(
        "the trust prompt naming the relative server",
        |s| {
            s.contains("Trust this project?")
                && s.contains("MCP server rel (from config.toml) runs in this project:")
                && s.contains("./bin/srv")
        },
        WAIT,
    );
    t.send_keys("n");
    t.expect("the app, ready", |s| s.contains("enter send"), WAIT);
    mcp_view_then_quit(&mut t, "rel  not approved");
    assert_absent(&marker, "the app, declined");

    // The oracle: trusted for one run, both do run the project's code, as the person said.
    s.push(Reply::text("done"));
    assert_ok(&run(&w, &["exec", "--yes", "--trust", "go"], None));
    let until = Instant::now() + WAIT;
    loop {
        let ran = std::fs::read_to_string(&marker).unwrap_or_default();
        if ran.contains("relative ran") && ran.contains("planted module ran") {
            break;
        }
        assert!(Instant::now() < until, "trusted, they did not run: {ran}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server the app starts while it runs in the person's terminal gets a session of its own:
/// it has no controlling terminal, so `/dev/tty` does not open and nothing it writes there
/// reaches the screen (the launch gate does this for every child but the editor).
#[test]
fn a_server_started_by_the_app_cannot_open_the_terminal() {
    let s = ScriptedServer::start(ProviderKind::OpenAi);
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let report = outside.join("report.json");
    let server = outside.join("server.py");
    script(
        &server,
        &format!(
            "#!/usr/bin/env python3\nimport json, os\n\
             try:\n    open('/dev/tty', 'w').write('\\x1b]0;PWNED\\x07')\n    tty = 'opened'\n\
             except OSError as e:\n    tty = str(e)\n\
             json.dump({{'tty': tty, 'sid': os.getsid(0), 'pid': os.getpid()}}, open({:?}, 'w'))\n",
            report
        ),
    );
    let servers = format!(
        "[mcp_servers.rec]\ncommand = \"python3\"\nargs = [{}]\n",
        q(&server.display().to_string())
    );
    let (w, _) = world(&s, &servers);
    let mut t = w.spawn_tui(200, 40);
    t.expect(
        "the app, ready",
        |s| s.contains("scripted-model") && s.contains("enter send"),
        WAIT,
    );
    let seen = read_report(&report);
    assert_ne!(seen["tty"], "opened", "the server reached the terminal");
    assert_eq!(
        seen["sid"], seen["pid"],
        "the server has no session of its own"
    );
    assert!(!t.screen_text().contains("PWNED"));
    assert_eq!(t.quit_app(WAIT), Some(0), "{}", t.screen_text());
}
