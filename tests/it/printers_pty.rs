//! Every byte rein prints is safe for the person's terminal (issue 18 §4): the real binary,
//! every subcommand, hostile strings planted wherever they can come from (the model's text,
//! reasoning, tool arguments and todos; file contents the model cats; file and directory names;
//! a project's `.mcp.json`; session files; config values; `policy check` input; the command
//! line). Each output must hold no escape, C1 or other control character that rein did not
//! write itself (it writes none outside the TUI and clap's coloured help), and must still show
//! the hostile text, made visible, so the check cannot pass on an empty output.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::pty::Pty;
use support::rein::{World, run_with_timeout};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy.
const WAIT: Duration = Duration::from_secs(60);

/// OSC 52 (clipboard), OSC 0 (title), clear screen, 8-bit CSI and OSC with ST, BS, DEL, a
/// bidi override, a lone CR; `evil` marks that the text itself got through.
const H: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}1m\u{9d}0;t\u{9c}\u{8}\u{7f}\u{202e}evil\r";

/// Whether an output shows the hostile text: its end, or an ESC made visible (`␛`; where the
/// text is cut short, as in a table column).
fn shows_hostile_text(text: &str) -> bool {
    text.contains("evil") || text.contains('\u{241b}')
}

/// Control characters in `out` that are not `\n`, `\r`, `\t`, with some context: C0, DEL,
/// C1 (as characters, or as stray bytes 0x80–0x9F of invalid UTF-8), bidi controls.
fn foreign_controls(out: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut offset = 0;
    for chunk in out.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            let bad = match c {
                '\n' | '\r' | '\t' => false,
                '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
                '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
                _ => false,
            };
            if bad {
                found.push(context(out, offset + i));
            }
        }
        offset += chunk.valid().len();
        for (i, b) in chunk.invalid().iter().enumerate() {
            if (0x80..=0x9f).contains(b) {
                found.push(context(out, offset + i));
            }
        }
        offset += chunk.invalid().len();
    }
    found
}

fn context(out: &[u8], at: usize) -> String {
    let start = at.saturating_sub(24);
    let end = (at + 24).min(out.len());
    format!("{:?}", String::from_utf8_lossy(&out[start..end]))
}

/// Fails unless `out` shows the hostile text and holds nothing a terminal would obey.
fn assert_safe(what: &str, out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    assert!(
        shows_hostile_text(&text),
        "{what}: the hostile text should be shown (made visible); output:\n{text}"
    );
    let found = foreign_controls(out);
    assert!(
        found.is_empty(),
        "{what}: {} control character(s) reached the terminal, e.g. {:?}",
        found.len(),
        &found[..found.len().min(5)]
    );
}

/// `rein ARGS` in a pseudo-terminal (stdout and stderr both a terminal) from `cwd`, with
/// `env` on top of the world's; every byte it wrote.
fn in_pty(w: &World, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Vec<u8> {
    let mut c = w.pty_command(args);
    c.cwd(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    let mut t = Pty::spawn(c, 120, 40);
    assert!(t.wait_exit(WAIT).is_some(), "rein {args:?} did not exit");
    t.raw_output()
}

/// `rein ARGS` with stdout and stderr as pipes; both, concatenated.
fn piped(w: &World, args: &[&str], cwd: &Path) -> Vec<u8> {
    let mut c = w.cmd();
    c.args(args).current_dir(cwd);
    let o = run_with_timeout(c, WAIT);
    let mut all = o.stdout;
    all.extend(o.stderr);
    all
}

/// A TOML basic string holding `s` exactly (everything but printable ASCII escaped).
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            ' '..='~' if c != '"' && c != '\\' => out.push(c),
            c => out.push_str(&format!("\\U{:08X}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// The model's side of a run: hostile reasoning, text, todos, a command line that cats a
/// hostile file, a read of a path through a hostile directory name, a failing read that
/// quotes a hostile name, and a hostile final answer.
fn hostile_script(s: &ScriptedServer) {
    let todos = json!({"todos": [
        {"content": format!("todo {H}"), "activeForm": format!("doing {H}"), "status": "in_progress"},
    ]});
    s.push(
        Reply::new()
            .reasoning(&format!("thinking {H}"))
            .say(&format!("text {H}"))
            .call("write_todos", todos),
    )
    .push(Reply::tool_call(
        "bash",
        json!({"command": format!("cat notes.txt; echo '{H}'")}),
    ))
    .push(Reply::tool_call(
        "read_file",
        json!({"path": format!("{H}dir/inner.txt")}),
    ))
    .push(Reply::tool_call(
        "read_file",
        json!({"path": format!("missing-{H}.txt")}),
    ))
    .push(Reply::text(&format!("final answer {H}")));
}

fn hostile_world(s: &ScriptedServer) -> World {
    let w = World::new(s);
    w.write("notes.txt", &format!("README {H}\n"));
    w.write(&format!("{H}dir/inner.txt"), &format!("inner {H}\n"));
    w
}

fn session_id(w: &World) -> String {
    let out = piped(w, &["sessions", "list", "--json"], &w.ws);
    let sessions: Vec<Value> = serde_json::from_slice(&out).unwrap_or_default();
    sessions
        .first()
        .and_then(|s| s["id"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no session listed: {}", String::from_utf8_lossy(&out)))
}

#[test]
fn exec_and_sessions_print_hostile_model_output_visibly_in_a_terminal() {
    let s = ScriptedServer::openai();
    hostile_script(&s);
    let w = hostile_world(&s);
    let prompt = "look at notes.txt";
    // The model's name (a session header field) is hostile too.
    let out = in_pty(&w, &["exec", "--yes", prompt], &w.ws, &[("MODEL", H)]);
    assert_safe("rein exec (terminal)", &out);
    let text = String::from_utf8_lossy(&out);
    for part in ["text ", "final answer ", "cat notes.txt", "missing-"] {
        assert!(text.contains(part), "exec should print {part:?}:\n{text}");
    }

    let id = session_id(&w);
    for args in [
        vec!["sessions", "show", &id],
        vec!["sessions", "export", &id],
        vec!["sessions", "list"],
        vec!["sessions", "list", "--all"],
    ] {
        let out = in_pty(&w, &args, &w.ws, &[]);
        assert_safe(&format!("rein {args:?} (terminal)"), &out);
    }
    // What the model merely cat'ed is in the transcript, made visible.
    let shown =
        String::from_utf8_lossy(&in_pty(&w, &["sessions", "show", &id], &w.ws, &[])).into_owned();
    assert!(shown.contains("README \u{241b}]52;c;"), "{shown}");
    for args in [
        vec!["sessions", "export", &id, "--format", "json"],
        vec!["sessions", "export", &id],
        vec!["sessions", "list", "--json"],
    ] {
        assert_safe(&format!("rein {args:?} (pipe)"), &piped(&w, &args, &w.ws));
    }
    // JSON keeps the text exactly: it reads back with the hostile bytes in it.
    let json = piped(&w, &["sessions", "export", &id, "--format", "json"], &w.ws);
    let parsed: Value = serde_json::from_slice(&json).unwrap_or_default();
    assert!(parsed.to_string().contains("README \\u001b]52"), "{parsed}");
}

#[test]
fn exec_json_mode_escapes_what_json_does_not() {
    let s = ScriptedServer::openai();
    hostile_script(&s);
    let w = hostile_world(&s);
    let out = piped(&w, &["exec", "--json", "--yes", "look"], &w.ws);
    assert_safe("rein exec --json", &out);
    for line in String::from_utf8_lossy(&out).lines() {
        if line.starts_with('{') {
            assert!(
                serde_json::from_str::<Value>(line).is_ok(),
                "each event stays valid JSON: {line}"
            );
        }
    }
}

#[test]
fn subcommands_and_errors_quote_hostile_names_visibly() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let hostile_dir = w.ws.join(format!("{H}project"));
    std::fs::create_dir_all(&hostile_dir).unwrap_or_default();
    let server = json!({"mcpServers": {
        "proj": {"command": H, "args": [H, "--flag"], "env": {H: "v"}},
    }});
    w.write(".mcp.json", &server.to_string());
    w.user_config(&format!(
        "retry_backoff_ms = 20\ntheme = {}\n\n[mcp_servers.mine]\ncommand = {}\nargs = [{}]\n",
        toml_str(&format!("theme-{H}")),
        toml_str(&format!("/nonexistent/{H}")),
        toml_str(H),
    ));
    let hostile_dir = hostile_dir.as_path();
    let ws = w.ws.as_path();
    let (echo, make, missing) = (
        format!("rm -rf \"{H}\""),
        format!("make \"{H}\""),
        format!("/nonexistent/{H}"),
    );
    let cases: Vec<(Vec<&str>, &Path)> = vec![
        (vec!["mcp", "list"], ws),
        (vec!["mcp", "add", H, "--", "true"], ws),
        (
            vec!["mcp", "add", "web", "--url", "http://x", "--header", H],
            ws,
        ),
        (vec!["mcp", "remove", H], ws),
        (vec!["config"], ws),
        (vec!["policy", "check", &echo], ws),
        (vec!["policy", "check", "--always", &make], ws),
        (vec!["sandbox", "--", &missing], ws),
        (vec!["exec", "--continue", "hi"], hostile_dir),
        (vec!["exec", "--resume", H, "hi"], ws),
        (vec!["sessions", "show", H], ws),
        (vec!["sessions", "rm", "--yes", H], ws),
        (vec![H], ws),
        (vec!["sessions", H], ws),
    ];
    for (args, cwd) in &cases {
        let out = in_pty(&w, args, cwd, &[]);
        assert_safe(&format!("rein {args:?} (terminal)"), &out);
    }
    let listed = String::from_utf8_lossy(&in_pty(&w, &["mcp", "list"], ws, &[])).into_owned();
    assert!(
        listed.contains("proj") && listed.contains("mine"),
        "{listed}"
    );
    // A project server's name is hostile: the notice that ignores it quotes it.
    let named = json!({"mcpServers": {H: {"command": "true"}}});
    w.write(".mcp.json", &named.to_string());
    for args in [vec!["config"], vec!["mcp", "list"]] {
        assert_safe(
            &format!("rein {args:?} (terminal)"),
            &in_pty(&w, &args, ws, &[]),
        );
    }
    // Help and version: rein's own text, checked through a pipe (no colours).
    for args in [vec!["--help"], vec!["--version"], vec!["mcp", "--help"]] {
        let out = piped(&w, &args, ws);
        assert!(foreign_controls(&out).is_empty(), "rein {args:?}");
        assert!(!out.is_empty(), "rein {args:?} printed nothing");
    }
}

/// `/copy` in the app puts on the clipboard what the screen showed of the answer: the OSC 52
/// request rein writes carries the text, with none of the answer's escapes, controls or bidi
/// overrides (pasted into a shell they would act again).
#[test]
fn copy_puts_only_what_was_shown_on_the_clipboard() {
    use base64::Engine;
    let s = ScriptedServer::openai();
    s.push(Reply::text(&format!("answer {H} tail\tend")));
    let w = World::new(&s);
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.type_line("hi");
    t.expect("the answer", |s| s.contains("tail"), WAIT);
    let before = t.raw_output().len();
    t.type_line("/copy");
    t.expect("the notice", |s| s.contains("copied the last answer"), WAIT);
    let out = t.raw_output()[before..].to_vec();
    let start = support::pty::rfind(&out, b"\x1b]52;c;").expect("an OSC 52 request") + 7;
    let end = start
        + out[start..]
            .iter()
            .position(|b| *b == 0x07 || *b == 0x1b)
            .expect("the request's end");
    let copied = base64::engine::general_purpose::STANDARD
        .decode(&out[start..end])
        .expect("base64");
    let copied = String::from_utf8(copied).expect("UTF-8");
    assert!(
        copied.starts_with("answer ") && copied.contains("evil"),
        "{copied:?}"
    );
    assert!(copied.contains("tail\tend"), "tabs are kept: {copied:?}");
    assert_eq!(
        foreign_controls(copied.as_bytes()),
        Vec::<String>::new(),
        "{copied:?}"
    );
    assert_eq!(t.quit_app(WAIT), Some(0));
}
