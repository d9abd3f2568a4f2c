//! Hooks from the config layers: `[[hooks.EVENT]]` in the person's `config.toml` (run as
//! configured), and the project's `.rein/config.toml` and `.claude/settings.json` (Claude Code's
//! format), which are code the repository ships: each project hook is a trust item of its own
//! (its exact event, matcher, command and timeout fingerprinted), so it runs only once the
//! person trusted the project, and a changed hook asks again. A project hook always runs in the
//! sandbox; only the person's own config may say `sandbox = false`.

use super::{DEFAULT_TIMEOUT, HookEvent, HookOrigin, HookSpec, Matcher};
use crate::trust::{ProjectTrust, TrustItem};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest timeout a hook may have, in seconds.
const MAX_TIMEOUT_SECS: u64 = 600;

/// One `[[hooks.EVENT]]` entry of a `config.toml`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// Tool names it is for (a regular expression; empty or `*`: all).
    #[serde(default)]
    pub matcher: Option<String>,
    /// The command line (`bash -c`).
    pub command: String,
    /// Seconds it may run (default 60).
    #[serde(default, alias = "timeout")]
    pub timeout_secs: Option<u64>,
    /// `false` runs it outside the sandbox (the person's own config only).
    #[serde(default)]
    pub sandbox: Option<bool>,
}

/// `[hooks]`: entries by event name.
pub type HookTables = BTreeMap<String, Vec<HookEntry>>;

/// A hook a project file asks for that does not run, and why (for the config's ignored list).
#[derive(Clone, Debug)]
pub struct Refused {
    /// The setting as written (`hooks.PreToolUse[0]`).
    pub key: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Why it does not run.
    pub reason: String,
    /// Set when trusting the project would let it run.
    pub trust: Option<TrustItem>,
}

/// The hooks that run, and the project hooks that do not.
#[derive(Debug, Default)]
pub struct Derived {
    /// Active hooks: the person's, then the trusted project's.
    pub hooks: Vec<HookSpec>,
    /// Project hooks that wait for trust or are broken.
    pub refused: Vec<Refused>,
}

fn timeout(secs: Option<u64>) -> Duration {
    secs.map_or(DEFAULT_TIMEOUT, |s| {
        Duration::from_secs(s.clamp(1, MAX_TIMEOUT_SECS))
    })
}

/// The person's hooks; an unknown event or a bad matcher is an error for them to fix.
pub fn user_hooks(tables: &HookTables, file: &Path) -> Result<Vec<HookSpec>, String> {
    let mut out = Vec::new();
    for (event, entries) in tables {
        let Some(ev) = HookEvent::parse(event) else {
            return Err(unknown_event(file, event));
        };
        for e in entries {
            let matcher = Matcher::new(e.matcher.as_deref().unwrap_or(""))
                .map_err(|why| format!("{}: hooks.{event}: {why}", file.display()))?;
            out.push(HookSpec {
                event: ev,
                matcher,
                command: e.command.clone(),
                timeout: timeout(e.timeout_secs),
                sandboxed: e.sandbox != Some(false),
                origin: HookOrigin::User(file.to_path_buf()),
            });
        }
    }
    Ok(out)
}

fn unknown_event(file: &Path, event: &str) -> String {
    let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
    format!(
        "{}: hooks.{event} is not a hook event; the events are {}",
        file.display(),
        known.join(", ")
    )
}

/// A project hook as read, before trust is judged.
struct Asked {
    key: String,
    spec: Result<HookSpec, String>,
    /// The project asked for `sandbox = false`, which it may not.
    wanted_unsandboxed: bool,
}

/// The hooks of the project's `.rein/config.toml` `[hooks]` table.
fn project_toml_hooks(tables: &HookTables, file: &Path) -> Vec<Asked> {
    let mut out = Vec::new();
    for (event, entries) in tables {
        for (i, e) in entries.iter().enumerate() {
            let key = format!("hooks.{event}[{i}]");
            let spec = match HookEvent::parse(event) {
                None => Err(unknown_event(file, event)),
                Some(ev) => {
                    Matcher::new(e.matcher.as_deref().unwrap_or("")).map(|matcher| HookSpec {
                        event: ev,
                        matcher,
                        command: e.command.clone(),
                        timeout: timeout(e.timeout_secs),
                        sandboxed: true,
                        origin: HookOrigin::Project(file.to_path_buf()),
                    })
                }
            };
            out.push(Asked {
                key,
                spec,
                wanted_unsandboxed: e.sandbox == Some(false),
            });
        }
    }
    out
}

/// The hooks of a Claude Code settings file:
/// `{"hooks":{"EVENT":[{"matcher":"Bash","hooks":[{"type":"command","command":"…","timeout":30}]}]}}`.
/// Events rein does not have and hook types other than `command` are listed as refused.
fn claude_hooks(text: &str, file: &Path) -> Result<Vec<Asked>, String> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| format!("{} is not valid JSON: {e}", file.display()))?;
    let Some(events) = root.get("hooks") else {
        return Ok(Vec::new());
    };
    let events = events
        .as_object()
        .ok_or_else(|| format!("{}: `hooks` is not an object", file.display()))?;
    let mut out = Vec::new();
    for (event, groups) in events {
        let ev = HookEvent::parse(event);
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            let hooks = group.get("hooks").and_then(Value::as_array);
            for (i, h) in hooks.into_iter().flatten().enumerate() {
                let key = format!("hooks.{event}[{g}].hooks[{i}]");
                let command = h.get("command").and_then(Value::as_str);
                let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
                let spec = match (ev, command) {
                    (None, _) => Err(format!("rein has no {event} hook event")),
                    (_, _) if kind != "command" => Err(format!(
                        "rein runs only hooks of type \"command\", not {kind:?}"
                    )),
                    (_, None) => Err("the hook has no command".into()),
                    (Some(ev), Some(cmd)) => Matcher::new(matcher).map(|m| HookSpec {
                        event: ev,
                        matcher: m,
                        command: cmd.to_string(),
                        timeout: timeout(h.get("timeout").and_then(Value::as_u64)),
                        sandboxed: true,
                        origin: HookOrigin::Claude(file.to_path_buf()),
                    }),
                };
                out.push(Asked {
                    key,
                    spec,
                    wanted_unsandboxed: false,
                });
            }
        }
    }
    Ok(out)
}

/// A project hook's trust item: everything that decides what runs and when, fingerprinted.
pub fn trust_item(spec: &HookSpec, key: &str) -> TrustItem {
    let file = spec
        .origin
        .path()
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = spec
        .origin
        .path()
        .parent()
        .and_then(Path::file_name)
        .map(|d| format!("{}/", d.to_string_lossy()))
        .unwrap_or_default();
    let matcher = spec.matcher.source();
    TrustItem::new(
        format!("hook.{dir}{file}.{key}"),
        format!(
            "hook {}{} (from {dir}{file}) runs in the sandbox: {}",
            spec.event.name(),
            if matcher.is_empty() {
                String::new()
            } else {
                format!(" [{}]", crate::sanitize::visible_line(matcher))
            },
            crate::sanitize::visible_line(&spec.command)
        ),
        &format!(
            "hook-v1\0{}\0{matcher}\0{}\0{}",
            spec.event.name(),
            spec.command,
            spec.timeout.as_secs()
        ),
    )
}

/// Every hook: the person's (`user`, with its file), then the project's (`project`: the
/// `[hooks]` of `.rein/config.toml`, and `.claude/settings.json` and `settings.local.json` in
/// `cwd`) that `trust` allows.
pub fn derive(
    user: Option<(&HookTables, &Path)>,
    project: Option<(&HookTables, &Path)>,
    cwd: &Path,
    trust: &ProjectTrust,
) -> Result<Derived, String> {
    let mut d = Derived::default();
    if let Some((tables, file)) = user {
        d.hooks = user_hooks(tables, file)?;
    }
    let mut asked = Vec::new();
    if let Some((tables, file)) = project {
        asked.push((file.to_path_buf(), Ok(project_toml_hooks(tables, file))));
    }
    // `settings.local.json` is the person's, but it lies in the repository like the other.
    for name in ["settings.json", "settings.local.json"] {
        let claude = cwd.join(".claude").join(name);
        match std::fs::read_to_string(&claude) {
            Ok(text) => asked.push((claude.clone(), claude_hooks(&text, &claude))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => asked.push((claude.clone(), Err(format!("cannot read it: {e}")))),
        }
    }
    for (file, found) in asked {
        match found {
            Ok(list) => judge(list, &file, trust, &mut d),
            Err(why) => d.refused.push(Refused {
                key: "hooks".into(),
                file,
                reason: why,
                trust: None,
            }),
        }
    }
    Ok(d)
}

/// Keeps the project hooks `trust` allows; lists the others with why.
fn judge(list: Vec<Asked>, file: &Path, trust: &ProjectTrust, d: &mut Derived) {
    for a in list {
        let refuse = |reason: String, trust: Option<TrustItem>| Refused {
            key: a.key.clone(),
            file: file.to_path_buf(),
            reason,
            trust,
        };
        let spec = match a.spec {
            Ok(s) => s,
            Err(why) => {
                d.refused.push(refuse(why, None));
                continue;
            }
        };
        if a.wanted_unsandboxed {
            d.refused.push(refuse(
                "sandbox = false: a project's hooks always run in the sandbox".into(),
                None,
            ));
        }
        let item = trust_item(&spec, &a.key);
        if trust.allows(&item) {
            d.hooks.push(spec);
        } else {
            d.refused
                .push(refuse("this project is not trusted".into(), Some(item)));
        }
    }
}
