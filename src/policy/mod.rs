//! Permissions: allow / ask / deny rules of glob patterns, last match wins, default ask;
//! a compound command is rated part by part and the strictest verdict wins.

mod risk;
pub mod shell;

use crate::sandbox::paths::ResolvedPath;
use serde::Deserialize;
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

/// One rule: for `tool`, a glob `pattern` over the command (bash) or path (file tools).
#[derive(Clone, Debug)]
pub struct Rule {
    /// Tool name (`bash`, `read_file`, `write_file`, `str_replace`) or `edit` for both edit tools.
    pub tool: String,
    /// The glob as written.
    pub pattern: String,
    /// What it decides.
    pub action: Action,
    /// Where it came from.
    pub source: RuleSource,
    matcher: globset::GlobMatcher,
}

impl Rule {
    /// Compiles a rule; fails on an invalid glob.
    pub fn new(
        tool: &str,
        pattern: &str,
        action: Action,
        source: RuleSource,
    ) -> Result<Rule, String> {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Rule {
            tool: tool.to_string(),
            pattern: pattern.to_string(),
            action,
            source,
            matcher: glob.compile_matcher(),
        })
    }

    /// Whether the rule matches `subject` (a normalised simple command or a path).
    pub fn matches(&self, subject: &str) -> bool {
        self.matcher.is_match(subject)
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.tool == other.tool
            && self.pattern == other.pattern
            && self.action == other.action
            && self.source == other.source
    }
}

impl Eq for Rule {}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} \"{}\" ({})",
            self.action.as_str(),
            self.tool,
            self.pattern,
            self.source
        )
    }
}

/// The built-in bash rules, in order (later rules win). Bare `cat`, `head`, ... are allowed
/// too, as pipeline tails (`... | head`). The `ask` lines refine allows whose glob also matches
/// a riskier command (`git diff*` matches `git difftool`). Bare `rm`, `curl`, ... are denied
/// like their forms with arguments.
const DEFAULT_BASH: &[(&str, Action)] = &[
    ("ls*", Action::Allow),
    ("cat", Action::Allow),
    ("head", Action::Allow),
    ("tail", Action::Allow),
    ("wc", Action::Allow),
    ("echo", Action::Allow),
    ("true", Action::Allow),
    ("false", Action::Allow),
    ("pwd", Action::Allow),
    ("cd *", Action::Allow),
    ("echo *", Action::Allow),
    ("cat *", Action::Allow),
    ("head *", Action::Allow),
    ("tail *", Action::Allow),
    ("wc *", Action::Allow),
    ("sort*", Action::Allow),
    ("uniq*", Action::Allow),
    ("cut *", Action::Allow),
    ("file *", Action::Allow),
    ("which *", Action::Allow),
    ("grep *", Action::Allow),
    ("rg *", Action::Allow),
    ("find *", Action::Allow),
    ("tree*", Action::Allow),
    ("git status*", Action::Allow),
    ("git diff*", Action::Allow),
    ("git log*", Action::Allow),
    ("git show*", Action::Allow),
    ("git ls-files*", Action::Allow),
    ("pytest*", Action::Allow),
    ("cargo test*", Action::Allow),
    ("cargo build*", Action::Allow),
    ("cargo check*", Action::Allow),
    ("git difftool*", Action::Ask),
    ("treefmt*", Action::Ask),
    ("rm", Action::Deny),
    ("rm *", Action::Deny),
    ("sudo", Action::Deny),
    ("sudo *", Action::Deny),
    ("sudoedit", Action::Deny),
    ("sudoedit *", Action::Deny),
    ("chmod", Action::Deny),
    ("chmod *", Action::Deny),
    ("chown", Action::Deny),
    ("chown *", Action::Deny),
    ("curl", Action::Deny),
    ("curl *", Action::Deny),
    ("wget", Action::Deny),
    ("wget *", Action::Deny),
    ("git push*", Action::Deny),
    ("git reset*", Action::Deny),
    ("git clean*", Action::Deny),
];

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
}

impl Policy {
    /// The built-in table followed by `config_rules`; `auto_approve_edits` allows edits inside
    /// the workspace without asking.
    pub fn new(config_rules: Vec<Rule>, auto_approve_edits: bool) -> Policy {
        let mut rules: Vec<Rule> = DEFAULT_BASH
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
        }
    }

    /// Adds a rule for the rest of the session (after all others).
    pub fn add_session_rule(&mut self, rule: Rule) {
        self.session.push(rule);
    }

    /// Every rule in force, in the order they are checked: built-in and config rules, then
    /// this session's.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().chain(&self.session)
    }

    /// Drops the session rule for `tool` with `pattern`; false when there is none.
    pub fn drop_session_rule(&mut self, tool: &str, pattern: &str) -> bool {
        let before = self.session.len();
        self.session
            .retain(|r| !(r.tool == tool && r.pattern == pattern));
        self.session.len() < before
    }

    /// Rates a bash command line: every simple command it would run is rated, the strictest
    /// verdict wins (the first such part decides among equals).
    pub fn check_bash(&self, command: &str) -> Verdict {
        let parts = shell::parse(command);
        let mut best: Option<Verdict> = None;
        for part in &parts {
            let v = self.rate_part(part);
            if best.as_ref().is_none_or(|b| v.action > b.action) {
                best = Some(v);
            }
        }
        match best {
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
        }
    }

    fn rate_part(&self, part: &shell::Part) -> Verdict {
        let matched = last_match(&self.rules, |r| {
            r.tool == "bash" && r.matches(&part.command)
        });
        let (mut action, mut reason) = match matched {
            Some(r) => (r.action, rule_reason(r)),
            None => (Action::Ask, DEFAULT_ASK.to_string()),
        };
        if action != Action::Deny
            && let Some(alias) = &part.deny_alias
            && let Some(r) = last_match(&self.rules, |r| r.tool == "bash" && r.matches(alias))
            && r.action == Action::Deny
        {
            action = Action::Deny;
            reason = format!("{}, as `{alias}`", rule_reason(r));
        }
        if action != Action::Deny
            && let Some(r) = last_match(&self.session, |r| {
                r.tool == "bash" && r.matches(&part.command)
            })
        {
            action = r.action;
            reason = rule_reason(r);
        }
        if action != Action::Deny
            && let Some(why) = &part.opaque
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
        let mut v = match (write, path.inside_workspace) {
            (true, false) => {
                return verdict(
                    Action::Deny,
                    "writes outside the workspace are never allowed",
                );
            }
            (true, true) if path.protected => verdict(
                Action::Ask,
                "protected path (.git internals, .rein) always asks",
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
        if let Some(r) = last_match(&self.rules, applies) {
            v.action = r.action;
            v.reason = rule_reason(r);
        }
        if v.action != Action::Deny
            && let Some(r) = last_match(&self.session, applies)
        {
            v.action = r.action;
            v.reason = rule_reason(r);
        }
        v
    }

    /// The session rule that "yes, don't ask again" adds for `subject` (a command line for
    /// `bash`, a path for the file tools), or `None` when no rule could stop the question
    /// (the asking part is opaque) or the subject is denied.
    ///
    /// For bash it is the command-name prefix of the first part the built-in rules ask about
    /// (else of the first part): the name and up to two following words before the first flag
    /// (`cargo test -q` → `cargo test*`). A session rule never softens a deny, so it cannot
    /// allow a denied command.
    pub fn always_rule(tool: &str, subject: &str) -> Option<Rule> {
        match tool {
            "bash" => {
                let defaults = Policy::new(Vec::new(), false);
                let parts = shell::parse(subject);
                if parts
                    .iter()
                    .any(|p| defaults.rate_part(p).action == Action::Deny)
                {
                    return None;
                }
                // Config rules are unknown here: when the built-in rules ask about no part, a
                // config rule asked, most likely about the first.
                let clear = || parts.iter().filter(|p| p.opaque.is_none());
                let part = clear()
                    .find(|p| defaults.rate_part(p).action == Action::Ask)
                    .or_else(|| clear().next())?;
                let name = part.words.first().filter(|n| !n.is_empty())?;
                let mut prefix = vec![name.as_str()];
                for w in part.words.iter().skip(1).take(2) {
                    if w.is_empty() || w.starts_with('-') || w.contains(char::is_whitespace) {
                        break;
                    }
                    prefix.push(w);
                }
                let pattern = format!("{}*", escape_glob(&prefix.join(" ")));
                Rule::new("bash", &pattern, Action::Allow, RuleSource::Session).ok()
            }
            "write_file" | "str_replace" | "edit" => Rule::new(
                "edit",
                &escape_glob(subject),
                Action::Allow,
                RuleSource::Session,
            )
            .ok(),
            "read_file" => Rule::new(
                "read_file",
                &escape_glob(subject),
                Action::Allow,
                RuleSource::Session,
            )
            .ok(),
            _ => None,
        }
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

fn last_match(rules: &[Rule], pred: impl Fn(&Rule) -> bool) -> Option<&Rule> {
    rules.iter().rev().find(|r| pred(r))
}

fn rule_reason(rule: &Rule) -> String {
    format!("rule \"{}\", {}", rule.pattern, rule.source)
}

/// Makes `s` match only itself as a glob.
fn escape_glob(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '?' | '*' | '[' | ']' | '{' | '}' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
