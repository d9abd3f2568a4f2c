//! Permissions: allow / ask / deny rules of glob patterns, last match wins, default ask.
//!
//! A command line is `allow` only by construction: every part of its parse is a shape the
//! parser understands, every command is a bare name a rule allows, and every argument passes
//! that command's checks. Anything else is at best `ask`; deny rules match everything the
//! parser can find, hidden or not. See `docs/permissions.md`.

mod always;
mod risk;
mod rules;
mod secrets;
pub mod shell;

pub use always::AlwaysRule;
pub use rules::Rule;

use crate::sandbox::paths::ResolvedPath;
use serde::Deserialize;
use shell::{Part, Role};
use std::fmt;

/// What to do with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask the person first.
    Ask,
    /// Never run.
    Deny,
}

impl Action {
    /// Lower-case name (`allow`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}

/// Where a rule was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleSource {
    /// rein's built-in table.
    Default,
    /// The user's config file.
    User,
    /// The project's `.rein/config.toml` (ask/deny only).
    Project,
    /// "Always allow" answered in this session.
    Session,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleSource::Default => "defaults",
            RuleSource::User => "user config",
            RuleSource::Project => "project config",
            RuleSource::Session => "this session",
        })
    }
}

/// Reason given when no rule matched a command.
const DEFAULT_ASK: &str = "no rule matched (default ask)";

/// The decision for one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What to do.
    pub action: Action,
    /// The deciding simple command (normalised), or the path for file tools.
    pub part: String,
    /// Why: the rule that matched, or the fail-closed reason.
    pub reason: String,
}

/// Permission rules for bash and the file tools.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Built-in rules, then config rules; the last match wins.
    rules: Vec<Rule>,
    /// "Always allow" answers of this session; they never soften a deny.
    session: Vec<Rule>,
    auto_approve_edits: bool,
    /// Where commands run, when not the current directory (tests, the oracle).
    workspace: Option<std::path::PathBuf>,
    /// How commands are confined, which decides what `allow` may mean.
    confinement: Confinement,
}

/// How bash commands are confined, as far as the verdicts are concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Confinement {
    /// The sandbox confines them: the built-in table applies as it is.
    #[default]
    Sandboxed,
    /// The person turned the sandbox off (`sandbox = "off"`): what runs the project's code
    /// is never allowed by the built-in table (see [`rules::RUNS_PROJECT_CODE`]).
    Off,
    /// The kernel cannot confine them: every command asks.
    Unavailable,
}

impl Policy {
    /// The built-in table followed by `config_rules`; `auto_approve_edits` allows edits inside
    /// the workspace without asking.
    pub fn new(config_rules: Vec<Rule>, auto_approve_edits: bool) -> Policy {
        let mut rules: Vec<Rule> = rules::DEFAULT_BASH
            .iter()
            .filter_map(|(pattern, action)| {
                Rule::new("bash", pattern, *action, RuleSource::Default).ok()
            })
            .collect();
        rules.extend(config_rules);
        Policy {
            rules,
            session: Vec::new(),
            auto_approve_edits,
            workspace: None,
            confinement: Confinement::Sandboxed,
        }
    }

    /// The same policy for commands confined as `confinement` says: with the sandbox off the
    /// built-in rules no longer allow what runs the project's code (the person's own rules and
    /// "always" answers still do); with it unavailable nothing is allowed unasked.
    pub fn with_confinement(mut self, confinement: Confinement) -> Policy {
        self.confinement = confinement;
        self
    }

    /// The same policy for commands run in `dir` rather than the current directory: what is
    /// on disk there (a `.git` file pointing elsewhere) is read from `dir`.
    pub fn with_workspace(mut self, dir: impl Into<std::path::PathBuf>) -> Policy {
        self.workspace = Some(dir.into());
        self
    }

    /// Adds a rule for the rest of the session (after all others).
    pub fn add_session_rule(&mut self, rule: Rule) {
        if !self.session.contains(&rule) {
            self.session.push(rule);
        }
    }

    /// Every rule in force, in the order they are consulted: the built-in table, the user's
    /// config, the project's config, then this session's "always" answers (a later match
    /// wins; a session rule never softens a deny). Each rule says where it came from.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().chain(&self.session)
    }

    /// Drops a session rule (one equal to `rule`); returns whether there was one. Rules from
    /// the built-in table and the config files stay.
    pub fn remove_session_rule(&mut self, rule: &Rule) -> bool {
        let before = self.session.len();
        self.session.retain(|r| r != rule);
        self.session.len() != before
    }

    /// Rates a bash command line: every simple command it would run is rated, the strictest
    /// verdict wins (the first such part decides among equals).
    pub fn check_bash(&self, command: &str) -> Verdict {
        let unconfined = self.confinement == Confinement::Off;
        let parts = shell::parse_for(command, self.workspace.as_deref(), unconfined);
        let mut best: Option<Verdict> = None;
        for part in &parts {
            let v = self.rate_part(part);
            if best.as_ref().is_none_or(|b| v.action > b.action) {
                best = Some(v);
            }
        }
        let mut v = match best {
            Some(mut v) => {
                if v.action == Action::Allow && parts.len() > 1 {
                    v.reason
                        .push_str(&format!("; all {} commands allowed", parts.len()));
                }
                v
            }
            None => Verdict {
                action: Action::Allow,
                part: String::new(),
                reason: "runs no command".into(),
            },
        };
        if self.confinement == Confinement::Unavailable && v.action == Action::Allow {
            v.action = Action::Ask;
            v.reason = "the sandbox is unavailable, so every command is asked".into();
        }
        v
    }

    /// The verdict for one part: the last matching rule (deny also through what the part
    /// could be), then session rules, then its doubt caps it at ask.
    fn rate_part(&self, part: &Part) -> Verdict {
        let name = part.words.first().map(String::as_str).unwrap_or_default();
        let applies = |r: &Rule| r.tool == "bash" && r.matches_command(name, &part.command);
        let (mut action, mut reason) = match last_match(&self.rules, applies) {
            Some(r) if self.confinement == Confinement::Off && runs_project_code(r) => (
                Action::Ask,
                format!(
                    "the sandbox is off, and `{}` runs the project's code (build scripts, \
                     tests) with your rights",
                    part.command
                ),
            ),
            Some(r) => (r.action, rule_reason(r)),
            None if part.role == Role::Wrapper => (
                Action::Allow,
                "a wrapper; what it runs is rated on its own".into(),
            ),
            None => (Action::Ask, DEFAULT_ASK.to_string()),
        };
        if action != Action::Deny
            && let Some((r, alias)) = self.denied_alias(part)
        {
            action = Action::Deny;
            reason = format!("{}, as `{alias}`", rule_reason(r));
        }
        if action != Action::Deny
            && let Some(r) = last_match(&self.session, applies)
        {
            action = r.action;
            reason = rule_reason(r);
        }
        if action != Action::Deny
            && let Some(why) = &part.doubt
        {
            action = Action::Ask;
            reason = why.clone();
        }
        if let Some(via) = &part.via {
            reason.push_str(&format!("; via {via}"));
        }
        Verdict {
            action,
            part: part.command.clone(),
            reason,
        }
    }

    /// A deny rule that applies to another form the part could run as: its base name, the
    /// literal start of a name only known at run time, a program its name pattern matches.
    fn denied_alias(&self, part: &Part) -> Option<(&Rule, String)> {
        let bash = |r: &&Rule| r.tool == "bash";
        for alias in &part.deny_alias {
            let name = alias
                .split(' ')
                .next()
                .unwrap_or_default()
                .trim_matches('\'');
            if let Some(r) = last_match(&self.rules, |r| bash(&r) && r.matches_command(name, alias))
                && r.action == Action::Deny
            {
                return Some((r, alias.clone()));
            }
        }
        let pattern = part.name_glob.as_ref()?;
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .ok()?
            .compile_matcher();
        let args = part.command.split_once(' ').map_or("", |(_, a)| a);
        self.rules.iter().rev().filter(bash).find_map(|r| {
            let program = r.program()?;
            let could = glob.is_match(program)
                || [
                    "/bin/",
                    "/usr/bin/",
                    "/usr/local/bin/",
                    "/sbin/",
                    "/usr/sbin/",
                ]
                .iter()
                .any(|d| glob.is_match(format!("{d}{program}")));
            let command = format!("{program} {args}");
            (could && r.action == Action::Deny && r.matches_command(program, command.trim_end()))
                .then(|| (r, command.trim_end().to_string()))
        })
    }

    /// Rates a file tool call on a resolved path. Writes outside the workspace are always
    /// denied; otherwise path rules (tool name, or `edit` for both edit tools; glob over the
    /// workspace-relative or absolute path) override the defaults.
    pub fn check_path(&self, tool: &str, write: bool, path: &ResolvedPath) -> Verdict {
        self.check_path_with(tool, write, path, self.auto_approve_edits)
    }

    /// [`Policy::check_path`] with edits inside the workspace allowed or not by the caller
    /// (the accept-edits mode) instead of the config.
    pub fn check_path_with(
        &self,
        tool: &str,
        write: bool,
        path: &ResolvedPath,
        accept_edits: bool,
    ) -> Verdict {
        let verdict = |action, reason: &str| Verdict {
            action,
            part: path.display.clone(),
            reason: reason.to_string(),
        };
        let v = match (write, path.inside_workspace) {
            (true, false) => {
                return verdict(
                    Action::Deny,
                    "writes outside the workspace are never allowed",
                );
            }
            (true, true) if path.protected => verdict(
                Action::Ask,
                "protected path (.git, .hg or .jj internals, a git directory, .rein, git hook directories) always asks",
            ),
            (true, true) if accept_edits => verdict(
                Action::Allow,
                "edits inside the workspace are accepted (accept-edits mode)",
            ),
            (true, true) => verdict(Action::Ask, "edits inside the workspace ask by default"),
            (false, true) => verdict(Action::Allow, "reads inside the workspace are allowed"),
            (false, false) => verdict(Action::Ask, "reads outside the workspace ask by default"),
        };
        let absolute = path.path.to_string_lossy();
        let applies = |r: &Rule| {
            (r.tool == tool || (write && r.tool == "edit"))
                && (r.matches(&path.display) || r.matches(&absolute))
        };
        self.apply_rules(v, applies)
    }

    /// Lets the last matching config rule, then the last matching session rule (which never
    /// softens a deny), override the default verdict `v`.
    fn apply_rules(&self, mut v: Verdict, applies: impl Fn(&Rule) -> bool) -> Verdict {
        if let Some(r) = last_match(&self.rules, &applies) {
            v.action = r.action;
            v.reason = rule_reason(r);
        }
        if v.action != Action::Deny
            && let Some(r) = last_match(&self.session, &applies)
        {
            v.action = r.action;
            v.reason = rule_reason(r);
        }
        v
    }

    /// Rates a call of an MCP tool (`mcp__<server>__<tool>`): rules whose `tool` is a glob
    /// matching the name (`mcp__github__*`) and whose `pattern` matches the arguments as
    /// compact JSON (`*` for any) decide, the last one winning; without one it asks.
    pub fn check_tool(&self, tool: &str, args: &serde_json::Value) -> Verdict {
        let subject = serde_json::to_string(args).unwrap_or_default();
        let applies = |r: &Rule| tool_glob_matches(&r.tool, tool) && r.matches(&subject);
        let v = Verdict {
            action: Action::Ask,
            part: tool.to_string(),
            reason: "MCP tools ask by default".into(),
        };
        self.apply_rules(v, applies)
    }

    /// The session rule that "yes, don't ask again" adds for `subject` (a command line for
    /// `bash`, a path for the file tools), judged by the built-in rules; `None` when no rule
    /// can be made (see [`Policy::always`] for why, and for what to show).
    pub fn always_rule(tool: &str, subject: &str) -> Option<Rule> {
        Policy::new(Vec::new(), false)
            .always(tool, subject)
            .ok()
            .map(|a| a.rule)
    }
}

/// The `rein policy check` line: the verdict first, then the deciding part and why, e.g.
/// `deny: rm -rf / (rule "rm *", defaults)`.
pub fn explain(verdict: &Verdict) -> String {
    if verdict.part.is_empty() {
        format!("{}: ({})", verdict.action.as_str(), verdict.reason)
    } else {
        format!(
            "{}: {} ({})",
            verdict.action.as_str(),
            verdict.part,
            verdict.reason
        )
    }
}

/// Whether a rule's `tool` (a glob for MCP tools, e.g. `mcp__github__*`) names `tool`.
fn tool_glob_matches(rule_tool: &str, tool: &str) -> bool {
    if rule_tool == tool {
        return true;
    }
    rule_tool.starts_with("mcp__")
        && globset::Glob::new(rule_tool).is_ok_and(|g| g.compile_matcher().is_match(tool))
}

fn last_match(rules: &[Rule], pred: impl Fn(&Rule) -> bool) -> Option<&Rule> {
    rules.iter().rev().find(|r| pred(r))
}

/// Whether `rule` is a built-in allow for a program that runs the project's code.
fn runs_project_code(rule: &Rule) -> bool {
    rule.source == RuleSource::Default
        && rule.action == Action::Allow
        && rules::RUNS_PROJECT_CODE.contains(&rule.pattern.as_str())
}

fn rule_reason(rule: &Rule) -> String {
    format!("rule \"{}\", {}", rule.pattern, rule.source)
}

#[cfg(test)]
mod tests;
