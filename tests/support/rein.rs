//! Running the real `rein` binary against a scripted server, in a private temp world (own
//! HOME, XDG dirs and workspace), and reading what it sent.

use super::{RecordedRequest, ScriptedServer};
use rein::llm::ProviderKind;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The key tests give rein (it must never show up anywhere).
pub const TEST_KEY: &str = "sk-test-SECRET-0123456789";

/// A temp world for one rein run: workspace, home, config and data dirs.
pub struct World {
    /// Keeps everything alive.
    pub dir: tempfile::TempDir,
    /// The workspace rein runs in.
    pub ws: PathBuf,
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` (rein's user config is `config/rein/config.toml`).
    pub config_home: PathBuf,
    /// `$XDG_DATA_HOME` (sessions and logs under `data/rein`).
    pub data_home: PathBuf,
    base_url: String,
    kind: ProviderKind,
}

/// Where worlds are made: `REIN_TEST_TMPDIR`, else `~/.cache/rtw` (short: tests check how
/// paths wrap on a narrow terminal). Not `/tmp`:
/// a sandboxed command sees there only its workspace and temp dir, and the tests put attack
/// scripts, payloads and directories "beside home" next to the workspace. Not the target dir
/// either: inside rein's own repository, a world's workspace would be part of it. As root,
/// `/var/lib/rtw`: root's commands run as `nobody`, who cannot pass `/root`.
pub fn world_base() -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let base = std::env::var_os("REIN_TEST_TMPDIR")
        .map(PathBuf::from)
        .or_else(|| root.then(|| PathBuf::from("/var/lib/rtw")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rtw")))
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).unwrap();
    base
}

/// A new directory for a world (or beside one), which `nobody` may pass (see `world_base`):
/// the tests keep attack scripts and payloads there, outside the workspace.
pub fn world_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("w")
        .tempdir_in(world_base())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

impl World {
    /// A world pointed at `server`, with fast retries.
    pub fn new(server: &ScriptedServer) -> World {
        let dir = world_dir();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let home = root.join("home");
        let config_home = root.join("config");
        let data_home = root.join("data");
        for d in [&ws, &home, &config_home.join("rein"), &data_home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let w = World {
            dir,
            ws,
            home,
            config_home,
            data_home,
            base_url: server.base_url(),
            kind: server.format(),
        };
        w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\n");
        w
    }

    /// A directory outside the workspace that sandboxed commands may read: one of the
    /// toolchain places of the world's home (`~/.local/bin`) the sandbox shows. Beside the
    /// workspace is hidden from them like every directory at `/` outside the system's.
    pub fn readable_dir(&self, name: &str) -> PathBuf {
        let dir = self.home.join(".local/bin").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Replaces the user config file.
    pub fn user_config(&self, toml: &str) {
        std::fs::write(self.config_home.join("rein/config.toml"), toml).unwrap();
    }

    /// Writes a workspace file.
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Reads a workspace file (`None` if missing).
    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.ws.join(rel)).ok()
    }

    /// The whole environment rein runs with: a clean one pointing at the server.
    pub fn env_vars(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let provider = self.kind.as_str();
        vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_default()),
            ("HOME", self.home.clone().into()),
            ("XDG_CONFIG_HOME", self.config_home.clone().into()),
            ("XDG_DATA_HOME", self.data_home.clone().into()),
            ("TMPDIR", self.dir.path().into()),
            ("BASE_URL", self.base_url.clone().into()),
            ("MODEL", "scripted-model".into()),
            ("API_KEY", TEST_KEY.into()),
            ("REIN_PROVIDER", provider.into()),
            // The scripted server stands in for a hosted API, though it listens on loopback.
            ("REIN_SMALL_MODEL", "off".into()),
        ]
    }

    /// `rein` with a clean environment pointing at the server.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(rein_bin());
        c.env_clear()
            .current_dir(&self.ws)
            .envs(self.env_vars())
            .stdin(Stdio::null());
        c
    }

    /// Runs `rein exec <args>` to completion.
    pub fn exec(&self, args: &[&str]) -> Output {
        let mut c = self.cmd();
        c.arg("exec").args(args);
        run_with_timeout(c, std::time::Duration::from_secs(60))
    }

    /// Every file under the world (for "the key never reaches a file" checks).
    pub fn all_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        walk(&p, out);
                    } else {
                        out.push(p);
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out
    }
}

/// The rein binary (`REIN_TEST_BIN` overrides it, for the run as an unprivileged user, where
/// the build directory may not be reachable).
pub fn rein_bin() -> std::path::PathBuf {
    std::env::var_os("REIN_TEST_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_rein")))
}

/// `rein policy check ARGS` run in `cwd` with `home` as HOME (its `config` as
/// XDG_CONFIG_HOME, so a test may put settings there): the exit status (0 allow, 1 ask,
/// 2 deny) and stdout.
pub fn policy_check(cwd: &std::path::Path, home: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["policy", "check"])
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(cwd)
        .output()
        .expect("rein runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs a command, killing it if it takes longer than `limit`.
pub fn run_with_timeout(mut c: Command, limit: std::time::Duration) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("rein did not finish within {limit:?}");
        }
    }
}

/// Fails with both streams shown unless the process exited 0.
pub fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One tool result as the model received it.
#[derive(Clone, Debug, PartialEq)]
pub struct SentResult {
    /// The call id.
    pub id: String,
    /// Its text.
    pub content: String,
    /// The error flag (Anthropic `is_error`; OpenAI results carry none: false).
    pub is_error: bool,
}

fn block_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A tool result's text without the late reminder that rides at its end when it is the last
/// message of an OpenAI-format request.
pub fn without_reminder(content: &str) -> String {
    match content.rfind("\n\n<system-reminder>") {
        Some(at) if content.trim_end().ends_with("</system-reminder>") => content[..at].to_owned(),
        _ => content.to_owned(),
    }
}

/// The tool results in a request, in order, for either wire format (without the reminder).
pub fn tool_results(req: &RecordedRequest) -> Vec<SentResult> {
    let mut out = Vec::new();
    // Responses: `function_call_output` input items.
    for item in req.input() {
        if item["type"] == "function_call_output" {
            out.push(SentResult {
                id: item["call_id"].as_str().unwrap_or("").into(),
                content: without_reminder(&block_text(&item["output"])),
                is_error: false,
            });
        }
    }
    for m in req.messages() {
        if m["role"] == "tool" {
            out.push(SentResult {
                id: m["tool_call_id"].as_str().unwrap_or("").into(),
                content: without_reminder(&block_text(&m["content"])),
                is_error: false,
            });
        } else if m["role"] == "user"
            && let Some(blocks) = m["content"].as_array()
        {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                out.push(SentResult {
                    id: b["tool_use_id"].as_str().unwrap_or("").into(),
                    content: block_text(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                });
            }
        }
    }
    out
}

/// The last tool result of a request.
pub fn last_result(req: &RecordedRequest) -> SentResult {
    tool_results(req)
        .pop()
        .unwrap_or_else(|| panic!("no tool result in {}", req.body_text))
}

/// All text of user messages (string content or text blocks), in order.
pub fn user_texts(req: &RecordedRequest) -> Vec<String> {
    let input = req.input();
    let items = if input.is_empty() {
        req.messages()
    } else {
        input
    };
    items
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text" || b["type"] == "input_text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .collect()
}

/// Tool names offered in a request.
pub fn tool_names(req: &RecordedRequest) -> Vec<String> {
    req.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or_else(|| t["name"].as_str())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The system prompt of a request, for either format.
pub fn system_prompt(req: &RecordedRequest) -> String {
    if let Some(s) = req.body["instructions"].as_str() {
        return s.to_string();
    }
    if let Some(s) = req.body["system"].as_str() {
        return s.to_string();
    }
    if let Some(blocks) = req.body["system"].as_array() {
        return block_text(&Value::Array(blocks.clone()));
    }
    req.messages()
        .iter()
        .find(|m| m["role"] == "system")
        .map(|m| block_text(&m["content"]))
        .unwrap_or_default()
}
