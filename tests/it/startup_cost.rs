//! What a start costs that nobody needs: against a plain-HTTP (local) server rein loads no TLS
//! certificate roots (reading the system's, ~280 files, was the largest part of startup).
//! Traced with `strace -f`: skips without it, fails without it under
//! `REIN_SANDBOX_TESTS_REQUIRED=1` (CI installs it).

use crate::support;

use support::rein::{World, assert_ok};
use support::{Reply, ScriptedServer};

/// The files a traced `rein exec` opened, or `None` when strace is missing.
fn opened_files(w: &World, prompt: &str) -> Option<Vec<String>> {
    let have = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("REIN_SANDBOX_TESTS_REQUIRED").is_err(),
            "strace is required here"
        );
        support::skips::skip("startup_cost", "strace is not installed");
        return None;
    }
    let trace = w.ws.parent().unwrap().join("trace.txt");
    let rein = w.cmd();
    let mut cmd = std::process::Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&trace)
        .arg(rein.get_program())
        .args(rein.get_args())
        .args(["exec", "--yes", prompt])
        .current_dir(rein.get_current_dir().unwrap_or(&w.ws))
        .env_clear()
        .envs(rein.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let out = support::rein::run_with_timeout(cmd, std::time::Duration::from_secs(60));
    assert_ok(&out);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    Some(text.lines().map(str::to_string).collect())
}

#[test]
fn a_plain_http_server_costs_no_certificate_roots() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("hello"));
    let w = World::new(&s);
    let Some(opened) = opened_files(&w, "say hello") else {
        return;
    };
    assert!(
        opened.iter().any(|l| l.contains("config.toml")),
        "the trace saw rein start: {opened:?}"
    );
    let certs: Vec<&String> = opened
        .iter()
        .filter(|l| l.contains("/etc/ssl/") || l.contains("/certs/"))
        .collect();
    assert!(certs.is_empty(), "TLS roots read for http://: {certs:?}");
    assert_eq!(s.request_count(), 1);
}
