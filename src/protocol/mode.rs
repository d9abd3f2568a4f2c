//! Approval modes and the permission rules as the front ends see them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How much the model may do without asking. The agent enforces it (in the dispatcher); the
/// front ends only show it and ask for a change. Deny rules and the sandbox hold in every mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Read-only: edits and every command that is not `allow` are refused; the model plans.
    Plan,
    /// The rules decide; what they don't allow is asked.
    #[default]
    Ask,
    /// File edits inside the workspace run without asking; commands still follow the rules.
    AcceptEdits,
}

impl ApprovalMode {
    /// Every mode, least permissive first.
    pub const ALL: [ApprovalMode; 3] = [
        ApprovalMode::Plan,
        ApprovalMode::Ask,
        ApprovalMode::AcceptEdits,
    ];

    /// The spelling of `--mode` and `mode = …` (`ask`, `accept-edits`, `plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Ask => "ask",
            ApprovalMode::AcceptEdits => "accept-edits",
        }
    }

    /// How the status line names it.
    pub fn label(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan mode",
            ApprovalMode::Ask => "ask",
            ApprovalMode::AcceptEdits => "accept edits",
        }
    }

    /// Parses `ask`, `accept-edits` (or `accept_edits`, `acceptEdits`) and `plan`.
    pub fn parse(s: &str) -> Option<ApprovalMode> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "ask" | "default" => Some(ApprovalMode::Ask),
            "accept-edits" | "acceptedits" => Some(ApprovalMode::AcceptEdits),
            "plan" => Some(ApprovalMode::Plan),
            _ => None,
        }
    }

    /// The mode Shift+Tab goes to: ask → accept edits → plan → ask.
    pub fn next(self) -> ApprovalMode {
        match self {
            ApprovalMode::Ask => ApprovalMode::AcceptEdits,
            ApprovalMode::AcceptEdits => ApprovalMode::Plan,
            ApprovalMode::Plan => ApprovalMode::Ask,
        }
    }

    /// Rank by what it lets run without asking (plan 0 < ask 1 < accept edits 2).
    pub fn permissiveness(self) -> u8 {
        match self {
            ApprovalMode::Plan => 0,
            ApprovalMode::Ask => 1,
            ApprovalMode::AcceptEdits => 2,
        }
    }

    /// The less permissive of the two.
    pub fn at_most(self, limit: ApprovalMode) -> ApprovalMode {
        if self.permissiveness() <= limit.permissiveness() {
            self
        } else {
            limit
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One permission rule in force, for `/permissions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleInfo {
    /// The tool it is about (`bash`, `edit`, `read_file`, …).
    pub tool: String,
    /// The glob, as written.
    pub pattern: String,
    /// `allow`, `ask` or `deny`.
    pub action: String,
    /// Where it came from (`defaults`, `user config`, `project config`, `this session`).
    pub source: String,
    /// Whether it was added this session (only those can be dropped).
    pub session: bool,
}

impl RuleInfo {
    /// `bash(git log*)`: how notices and lists name a rule.
    pub fn spec(&self) -> String {
        format!("{}({})", self.tool, self.pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_cycle_and_rank() {
        for m in ApprovalMode::ALL {
            assert_eq!(ApprovalMode::parse(m.as_str()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
        assert_eq!(
            ApprovalMode::parse("acceptEdits"),
            Some(ApprovalMode::AcceptEdits)
        );
        assert_eq!(ApprovalMode::parse("yolo"), None);
        let mut m = ApprovalMode::Ask;
        let mut seen = Vec::new();
        for _ in 0..3 {
            m = m.next();
            seen.push(m);
        }
        assert_eq!(
            seen,
            [
                ApprovalMode::AcceptEdits,
                ApprovalMode::Plan,
                ApprovalMode::Ask
            ]
        );
        assert_eq!(
            ApprovalMode::AcceptEdits.at_most(ApprovalMode::Ask),
            ApprovalMode::Ask
        );
        assert_eq!(
            ApprovalMode::Plan.at_most(ApprovalMode::AcceptEdits),
            ApprovalMode::Plan
        );
    }
}
