//! What must never leave rein, through the real `rein exec` binary: the key and the
//! conversation go only to the configured server (redirects are not followed), and rein's
//! own process files are not read by its file tools.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use support::rein::{TEST_KEY, World, assert_ok, stderr};
use support::{Reply, ScriptedServer};

all_formats!(a_redirect_is_not_followed);

/// The address of `server`'s model endpoint.
fn endpoint(server: &ScriptedServer) -> String {
    let path = match server.format() {
        ProviderKind::OpenAi => "/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::OpenAiResponses => "/responses",
    };
    format!("{}{path}", server.base_url())
}

/// The configured server answers with a redirect to another server: that one receives
/// nothing (neither the key, which reqwest would keep in `x-api-key`, nor the conversation a
/// 307 re-sends), and rein stops with an error that says what to change.
fn a_redirect_is_not_followed(kind: ProviderKind) {
    for code in [307, 302] {
        let s = ScriptedServer::start(kind);
        let elsewhere = ScriptedServer::start(kind);
        let to = endpoint(&elsewhere);
        for _ in 0..3 {
            s.push(Reply::redirect(code, &to));
        }
        let w = World::new(&s);
        let o = w.exec(&["--yes", "the plan is PLAN-b2-secret"]);
        let reached = elsewhere.requests().len() + elsewhere.other_requests().len();
        assert_eq!(reached, 0, "{code}: the redirect was followed");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{code}: {err}");
        assert!(
            err.contains(&format!("HTTP {code}: a redirect to {to}"))
                && err
                    .contains("rein does not follow redirects: set base_url to the final address"),
            "{code}: {err}"
        );
        assert!(!err.contains(TEST_KEY), "{err}");
        // Not retried as a passing fault: the server would redirect again.
        assert_eq!(s.request_count(), 1, "{code}");
    }
}

/// Every text that reached the model server and every file rein wrote under the data dir
/// (sessions, logs) but checkpoints, which keep workspace files for /undo.
fn everything_sent_and_stored(s: &ScriptedServer, w: &World) -> String {
    let mut all: Vec<String> = s.requests().into_iter().map(|r| r.body_text).collect();
    for f in w.all_files() {
        let checkpoint = f.to_string_lossy().contains(".checkpoints");
        if f.starts_with(&w.data_home) && !checkpoint {
            all.push(String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into());
        }
    }
    all.join("\n")
}

/// A secret in rein's own environment (rein's environment holds the key and the person's
/// tokens).
const ENV_SECRET: &str = "env-secret-b5-Zq81";

/// rein's own `/proc` files are refused by the file tools, however named: the environment
/// (its first variable long and multi-line, so the start does not look binary), the memory
/// map, a link in the workspace to them, `/proc/thread-self`. Nothing of them reaches the
/// model or the session.
#[test]
fn reins_own_process_files_are_not_read() {
    let s = ScriptedServer::openai();
    let calls = [
        (
            "read_file",
            json!({"path": "/proc/self/environ", "offset": 990}),
        ),
        ("read_file", json!({"path": "/proc/self/maps", "limit": 3})),
        ("read_file", json!({"path": "envlink", "offset": 990})),
        (
            "read_file",
            json!({"path": "/proc/thread-self/environ", "offset": 990}),
        ),
        (
            "str_replace",
            json!({"path": "/proc/self/maps", "old_str": "zz", "new_str": "y"}),
        ),
    ];
    for (tool, args) in &calls {
        s.push(Reply::tool_call(tool, args.clone()));
    }
    s.push(Reply::text("done"));
    let w = World::new(&s);
    std::os::unix::fs::symlink("/proc/self/environ", w.ws.join("envlink")).unwrap();
    let mut c = w.cmd();
    // Sorted first in the environment (Command orders it by name), and longer than the start
    // read_file sniffs for binary data.
    c.env("AAAA_PAD", "a line of padding\n".repeat(1000))
        .env("MY_CREDS", ENV_SECRET)
        .args(["exec", "--yes", "look around"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(60));
    assert_ok(&o);
    for i in 0..calls.len() {
        let r = support::rein::last_result(&s.request(i + 1)).content;
        assert!(
            !r.contains(ENV_SECRET),
            "call {i} read rein's environment: {r}"
        );
        assert!(
            r.starts_with("Error: ") && r.contains("is under /proc, which holds rein's own"),
            "call {i}: {r}"
        );
    }
    let all = everything_sent_and_stored(&s, &w);
    assert!(!all.contains(ENV_SECRET), "rein's environment leaked");
    assert!(
        !all.contains("a line of padding"),
        "rein's environment leaked"
    );
    let bin = support::rein::rein_bin();
    assert!(
        !all.contains(&*bin.to_string_lossy()),
        "rein's memory map leaked"
    );
}
