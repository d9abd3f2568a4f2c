//! What a hook said: its exit code (0 ok, 2 block with stderr as the reason, anything else a
//! failure that is reported and ignored) or Claude Code's JSON object on stdout.

use super::HookEvent;
use serde_json::Value;

/// How one hook process ended.
#[derive(Clone, Debug, Default)]
pub struct Ran {
    /// The exit code (`None`: killed by a signal, or it never started).
    pub code: Option<i32>,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// Set when it could not run or ran out of time: why, for the person.
    pub failed: Option<String>,
}

/// A permission decision of a `PreToolUse` hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Skip the person's question (only where the policy asks).
    Allow,
    /// Ask the person even where the policy allows.
    Ask,
    /// Refuse the call.
    Deny,
}

/// One hook's answer, or several merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Block (the call, the prompt) or, for `Stop`, go on working: the reason.
    pub block: Option<String>,
    /// `PreToolUse`: allow, ask or deny, with the reason.
    pub permission: Option<(Permission, String)>,
    /// Text added to what the model sees.
    pub context: Option<String>,
    /// Lines for the person (a hook's `systemMessage`, a failure).
    pub notices: Vec<String>,
}

/// Longest reason or context kept from one hook.
const MAX_TEXT: usize = 8 * 1024;

fn cut(text: &str) -> String {
    let text = text.trim();
    match crate::text::cut(text, MAX_TEXT, crate::text::Unit::Chars) {
        Some(head) => format!("{head}…"),
        None => text.to_string(),
    }
}

impl Answer {
    /// Reads what `ran` printed and how it exited, for `event`. `label` names the hook in
    /// notices.
    pub fn read(event: HookEvent, label: &str, ran: &Ran) -> Answer {
        let mut a = Answer::default();
        if let Some(why) = &ran.failed {
            a.notices.push(format!("Hook {label} {why}; ignored."));
            return a;
        }
        match ran.code {
            Some(0) => a.read_stdout(event, label, &ran.stdout),
            Some(2) => {
                let reason = cut(&ran.stderr);
                a.block = Some(if reason.is_empty() {
                    format!("a {} hook blocked it (no reason given)", event.name())
                } else {
                    reason
                });
            }
            Some(code) => a.notices.push(format!(
                "Hook {label} failed (exit code {code}){}; ignored.",
                first_line(&ran.stderr)
            )),
            None => a
                .notices
                .push(format!("Hook {label} was killed by a signal; ignored.")),
        }
        a
    }

    fn read_stdout(&mut self, event: HookEvent, label: &str, stdout: &str) {
        let text = stdout.trim();
        if !text.starts_with('{') {
            // Claude Code adds plain output of these two events to the model's context.
            if !text.is_empty()
                && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            {
                self.context = Some(cut(text));
            }
            return;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => self.read_json(event, &o),
            _ => self.notices.push(format!(
                "Hook {label} printed something that starts like JSON but is not a JSON object; \
                 ignored."
            )),
        }
    }

    fn read_json(&mut self, event: HookEvent, o: &serde_json::Map<String, Value>) {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(cut).filter(|t| !t.is_empty());
        let reason = s(o.get("reason"));
        match o.get("decision").and_then(Value::as_str) {
            Some("block") => {
                self.block = Some(reason.clone().unwrap_or_else(|| {
                    format!("a {} hook blocked it (no reason given)", event.name())
                }))
            }
            // Claude Code's older spelling of a PreToolUse allow.
            Some("approve") if event == HookEvent::PreToolUse => {
                self.permission = Some((Permission::Allow, reason.clone().unwrap_or_default()))
            }
            _ => {}
        }
        if o.get("continue").and_then(Value::as_bool) == Some(false) && event != HookEvent::Stop {
            let why = s(o.get("stopReason")).unwrap_or_else(|| "a hook stopped it".into());
            self.block.get_or_insert(why);
        }
        if let Some(msg) = s(o.get("systemMessage")) {
            self.notices.push(msg);
        }
        let Some(specific) = o.get("hookSpecificOutput").and_then(Value::as_object) else {
            return;
        };
        if let Some(ctx) = s(specific.get("additionalContext")) {
            self.context = Some(ctx);
        }
        if event == HookEvent::PreToolUse {
            let why = s(specific.get("permissionDecisionReason")).unwrap_or_default();
            let decision = match specific.get("permissionDecision").and_then(Value::as_str) {
                Some("allow") => Some(Permission::Allow),
                Some("ask") => Some(Permission::Ask),
                Some("deny") => Some(Permission::Deny),
                _ => None,
            };
            if let Some(d) = decision {
                self.permission = Some((d, why));
            }
        }
    }

    /// Merges the answers of the hooks of one event: a block from any blocks, the strictest
    /// permission wins (deny > ask > allow), contexts and notices add up.
    pub fn merge(answers: Vec<Answer>) -> Answer {
        let mut out = Answer::default();
        let mut blocks = Vec::new();
        let mut contexts = Vec::new();
        for a in answers {
            blocks.extend(a.block);
            contexts.extend(a.context);
            out.notices.extend(a.notices);
            if let Some((p, why)) = a.permission
                && out.permission.as_ref().is_none_or(|(q, _)| p > *q)
            {
                out.permission = Some((p, why));
            }
        }
        out.block = (!blocks.is_empty()).then(|| blocks.join("\n"));
        out.context = (!contexts.is_empty()).then(|| contexts.join("\n"));
        out
    }

    /// The permission, with a hook's block (exit code 2) counted as a deny.
    pub fn pre_tool_permission(&self) -> Option<(Permission, String)> {
        match &self.block {
            Some(why) => Some((Permission::Deny, why.clone())),
            None => self.permission.clone(),
        }
    }
}

fn first_line(text: &str) -> String {
    match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!(": {}", crate::text::headline(line, 200)),
        None => String::new(),
    }
}
