//! Exact "always": the session rule a "don't ask again" answer adds is derived from the parsed
//! command and is never broader than what was shown. Multi-level tools get their name and
//! subcommand (`git log *`, `cargo test *`, `npm run build *`); interpreters, editors, shells,
//! `sed`, `awk`, paths and everything else get the exact command; a command that asks because
//! of something only known when it runs gets no rule at all.

use super::rules::escape_glob;
use super::shell::{self, Part};
use super::{Action, Policy, Rule, RuleSource};

/// The rule an "always" answer adds, with the text the approval dialog shows for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlwaysRule {
    /// The session rule.
    pub rule: Rule,
    /// What it allows, for people: `git log …` (any arguments) or the exact command.
    pub shown: String,
}

/// Tools whose first operand is a subcommand with its own meaning.
const MULTI_LEVEL: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "rustup",
    "gh",
    "make",
    "just",
    "terraform",
    "dotnet",
    "mvn",
    "gradle",
    "deno",
    "brew",
    "apt",
    "systemctl",
    "composer",
    "mix",
    "dune",
    "stack",
    "cabal",
    "swift",
    "zig",
];

/// Subcommands that run arbitrary code given as their argument: exact only.
const CODE_SUBCOMMANDS: &[&str] = &["exec", "x", "dlx", "eval", "-c", "-e", "repl"];

/// Package managers whose `run` is followed by the name of a script (`npm run build`):
/// three levels.
const SCRIPT_RUNNERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

impl Policy {
    /// What "don't ask again this session" would add for `subject` (a command line for
    /// `bash`, a path for the file tools), or why no rule can be made: the command is denied,
    /// nothing asks, what asks is only known when it runs, or several different commands ask.
    pub fn always(&self, tool: &str, subject: &str) -> Result<AlwaysRule, String> {
        let exact = |tool: &str| {
            Rule::new(
                tool,
                &escape_glob(subject),
                Action::Allow,
                RuleSource::Session,
            )
            .map(|rule| AlwaysRule {
                rule,
                shown: subject.to_string(),
            })
        };
        match tool {
            "bash" => self.always_bash(subject),
            "write_file" | "str_replace" | "edit" => exact("edit"),
            "read_file" => exact("read_file"),
            _ => Err(format!("`{tool}` calls are approved one at a time")),
        }
    }

    fn always_bash(&self, command: &str) -> Result<AlwaysRule, String> {
        let parts = shell::parse(command);
        let mut asking: Vec<&Part> = Vec::new();
        for part in &parts {
            let v = self.rate_part(part);
            match v.action {
                Action::Deny => {
                    return Err(format!("`{}` is denied ({})", v.part, v.reason));
                }
                Action::Ask => asking.push(part),
                Action::Allow => {}
            }
        }
        let Some(first) = asking.first() else {
            return Err("nothing in it needs approval".into());
        };
        if let Some(p) = asking.iter().find(|p| p.doubt.is_some()) {
            return Err(format!(
                "`{}` needs approval each time: {}",
                p.command,
                p.doubt.clone().unwrap_or_default()
            ));
        }
        let (pattern, shown) = derive(first);
        if let Some(other) = asking.iter().map(|p| derive(p)).find(|d| d.0 != pattern) {
            return Err(format!(
                "more than one command needs approval (`{shown}`, `{}`); approve each on its own",
                other.1
            ));
        }
        let rule = Rule::new("bash", &pattern, Action::Allow, RuleSource::Session)?;
        Ok(AlwaysRule { rule, shown })
    }
}

/// The pattern and its description for one asking part.
fn derive(part: &Part) -> (String, String) {
    let exact = || (escape_glob(&part.command), part.command.clone());
    let words = &part.words;
    let Some(name) = words.first() else {
        return exact();
    };
    if !MULTI_LEVEL.contains(&name.as_str()) || part.program.as_deref() != Some(name.as_str()) {
        return exact();
    }
    // The subcommand must come right after the name: options before it may take values.
    let Some(sub) = words.get(1).filter(|s| is_plain_word(s)) else {
        return exact();
    };
    if CODE_SUBCOMMANDS.contains(&sub.as_str()) {
        return exact();
    }
    let mut levels = vec![name.as_str(), sub.as_str()];
    if SCRIPT_RUNNERS.contains(&name.as_str()) && matches!(sub.as_str(), "run" | "run-script") {
        match words.get(2).filter(|s| is_plain_word(s)) {
            Some(script) => levels.push(script),
            None => return exact(),
        }
    }
    let prefix = levels.join(" ");
    (format!("{} *", escape_glob(&prefix)), format!("{prefix} …"))
}

/// A subcommand-like word: letters, digits and `-_.:`, not an option.
fn is_plain_word(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with('-')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}
