//! What must never leave rein, through the real `rein exec` binary: the key and the
//! conversation go only to the configured server (redirects are not followed), rein's own
//! process files are not read by its file tools, and a file the model has not read does not
//! come back in a write's refusal (a read deny rule holds).

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

/// A repository whose `.git` file names another repository of the person's, outside the
/// workspace (`gitdir: /home/me/private/.git`): rein reads no branch from there, so the
/// private repository's branch name reaches neither the model (the reminder names the branch)
/// nor the session. A `.git` file whose git directory points back (a real worktree) still
/// gives its branch.
#[test]
fn a_git_file_naming_another_repository_leaks_not_its_branch() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("done"));
    let w = World::new(&s);
    let private = w.home.join("private");
    std::fs::create_dir_all(private.join(".git")).unwrap();
    std::fs::write(
        private.join(".git/HEAD"),
        "ref: refs/heads/acquire-b6-Kq29\n",
    )
    .unwrap();
    let pointer = format!("gitdir: {}\n", private.join(".git").display());
    std::fs::write(w.ws.join(".git"), &pointer).unwrap();
    assert_ok(&w.exec(&["--yes", "hello"]));
    let all = everything_sent_and_stored(&s, &w);
    assert!(!all.contains("acquire-b6-Kq29"), "the branch leaked");
    // The oracle: pointing back, it is this work tree's, and its branch is given.
    let back = format!("{}\n", w.ws.join(".git").display());
    std::fs::write(private.join(".git/gitdir"), back).unwrap();
    s.push(Reply::text("done"));
    assert_ok(&w.exec(&["--yes", "hello"]));
    assert!(
        s.request(1)
            .body_text
            .contains("Git branch: acquire-b6-Kq29.")
    );
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

/// What `.env` holds; a rule denies the model reading it.
const DOTENV: &str = "DB_USER=app\nDB_PASSWORD=hunter2-b6-Xy7\nDB_HOST=db.internal\n";

/// A world whose person denies `read_file` of `.env`, which exists.
fn dotenv_world(s: &ScriptedServer) -> World {
    let w = World::new(s);
    w.user_config(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n\
         [[rules]]\ntool = \"read_file\"\npattern = \".env\"\naction = \"deny\"\n",
    );
    w.write(".env", DOTENV);
    w
}

/// Writing over or editing a file the model has not read is refused without its content:
/// the refusal comes before the permission check, so a `read_file` deny rule holds.
#[test]
fn a_write_over_an_unread_file_does_not_show_it() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call("read_file", json!({"path": ".env"})))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": ".env", "content": "x"}),
        ))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": ".env", "old_str": "DB_", "new_str": "X_"}),
        ))
        .push(Reply::text("done"));
    let w = dotenv_world(&s);
    assert_ok(&w.exec(&["--yes", "set the password"]));
    let denied = support::rein::last_result(&s.request(1)).content;
    assert!(denied.contains("Blocked by policy"), "{denied}");
    for (i, next) in [(2, "write_file"), (3, "str_replace")] {
        let r = support::rein::last_result(&s.request(i)).content;
        assert!(
            r.starts_with("Error: .env exists and you had not read it")
                && r.contains(&format!("Now call {next} again"))
                && !r.contains("DB_"),
            "{r}"
        );
    }
    let all = everything_sent_and_stored(&s, &w);
    for line in DOTENV.lines() {
        assert!(!all.contains(line), "{line} leaked");
    }
    assert_eq!(w.read(".env").as_deref(), Some(DOTENV));
}

/// An edit of an unread file, quoting text it holds once, goes ahead (the person allowed
/// it), but its result shows nothing of the file, and a second edit is not shown it either.
#[test]
fn an_edit_of_an_unread_file_does_not_show_it() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "str_replace",
        json!({"path": ".env", "old_str": "DB_PASSWORD=", "new_str": "DB_PASS="}),
    ))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": ".env", "old_str": "DB_", "new_str": "X_"}),
    ))
    .push(Reply::text("done"));
    let w = dotenv_world(&s);
    assert_ok(&w.exec(&["--yes", "rename the password variable"]));
    let edited = support::rein::last_result(&s.request(1)).content;
    assert!(
        edited.starts_with("Edited .env (1 replacement). You had not read it"),
        "{edited}"
    );
    let again = support::rein::last_result(&s.request(2)).content;
    assert!(again.contains("you had not read it"), "{again}");
    let sent: String = s.requests().into_iter().map(|r| r.body_text).collect();
    for secret in ["hunter2-b6-Xy7", "db.internal", "DB_USER"] {
        assert!(!sent.contains(secret), "{secret} reached the model");
    }
    assert_eq!(
        w.read(".env").as_deref(),
        Some(DOTENV.replace("DB_PASSWORD=", "DB_PASS=").as_str())
    );
}

/// An edit of a file the model never read but may read unasked (no rule against it) shows its
/// result as before, so a small model sees what it changed; with a deny rule it does not.
#[test]
fn an_edit_of_an_unread_but_readable_file_shows_the_result() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "str_replace",
        json!({"path": "calc.py", "old_str": "return a - b", "new_str": "return a + b"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    w.write("calc.py", "def add(a, b):\n    return a - b\n");
    assert_ok(&w.exec(&["--yes", "fix add"]));
    let edited = support::rein::last_result(&s.request(1)).content;
    assert!(
        edited.starts_with("Edited calc.py (1 replacement). The edited region now reads"),
        "{edited}"
    );
    assert!(edited.contains("return a + b"), "{edited}");
}

/// A write over a file the model never read but may read unasked is refused with the file's
/// content, so a small model can retry at once; the same refusal for a `.env` under a read deny
/// rule carries none (see `a_write_over_an_unread_file_does_not_show_it`).
#[test]
fn a_write_over_an_unread_readable_file_shows_it_to_retry() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "calc.py", "content": "def mul(a, b):\n    return a * b\n"}),
    ))
    .push(Reply::text("done"));
    let w = World::new(&s);
    w.write("calc.py", "def add(a, b):\n    return a + b\n");
    assert_ok(&w.exec(&["--yes", "add mul"]));
    let refused = support::rein::last_result(&s.request(1)).content;
    assert!(refused.contains("return a + b"), "{refused}");
    assert_eq!(
        w.read("calc.py").as_deref(),
        Some("def add(a, b):\n    return a + b\n")
    );
}
