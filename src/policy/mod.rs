//! Permissions: allow / ask / deny rules of glob patterns, last match wins, default ask;
//! a compound command is rated part by part and the strictest verdict wins.

pub mod shell;

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
    pub fn new(tool: &str, pattern: &str, action: Action, source: RuleSource) -> Result<Rule, String> {
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
        self.tool == other.tool && self.pattern == other.pattern && self.action == other.action && self.source == other.source
    }
}

impl Eq for Rule {}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} \"{}\" ({})", self.action.as_str(), self.tool, self.pattern, self.source)
    }
}
