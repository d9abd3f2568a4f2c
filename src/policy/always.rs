//! Exact "always": the session rule a "don't ask again" answer adds is derived from the parsed
//! command and is never broader than what was shown. Multi-level tools get their name and
//! subcommand (`git log *`, `cargo test *`); task runners (`make`, `just`, `npm run`, ...),
//! whose further words are targets, files or variables, interpreters, editors, shells,
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
    /// The rules for the other parts that ask, one each (a compound command: `make && npm
    /// test`), each as exact as the first.
    pub more: Vec<Rule>,
    /// What it allows, for people: `git log …` (any arguments) or the exact command; for
    /// several parts, each of them.
    pub shown: String,
}

impl AlwaysRule {
    fn one(rule: Rule, shown: String) -> AlwaysRule {
        AlwaysRule {
            rule,
            more: Vec::new(),
            shown,
        }
    }

    /// Every rule it adds.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        std::iter::once(&self.rule).chain(&self.more)
    }
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

/// Programs whose further words are targets, files or variables (`make test deploy`,
/// `make test -f evil.mk`, `make test SHELL=…`), not the options of one subcommand: an
/// approval covers exactly the command shown.
const TARGET_RUNNERS: &[&str] = &[
    "make",
    "gmake",
    "bmake",
    "ninja",
    "just",
    "rake",
    "task",
    "go-task",
    "invoke",
    "inv",
    "mage",
    "cargo-make",
    "makers",
    "scons",
    "ant",
    "mvn",
    "gradle",
    "bazel",
    "bazelisk",
    "buck2",
    "pants",
    "earthly",
    "nox",
    "tox",
    "doit",
    "grunt",
    "gulp",
];

/// Subcommands that run a target or script of the project (`cargo make test`, `npm run
/// build`, `npm test`): from there on the command is exact.
const TARGET_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("cargo", &["make"]),
    (
        "npm",
        &[
            "run",
            "run-script",
            "rum",
            "urn",
            "test",
            "t",
            "tst",
            "start",
            "stop",
            "restart",
        ],
    ),
    ("pnpm", &["run", "run-script", "test", "t", "start"]),
    ("yarn", &["run", "test", "start"]),
    ("bun", &["run", "test"]),
    ("deno", &["task", "run"]),
    ("poetry", &["run"]),
    ("uv", &["run"]),
    ("composer", &["run", "run-script"]),
    ("dotnet", &["run"]),
];

/// Subcommands that run arbitrary code given as their argument: exact only.
const CODE_SUBCOMMANDS: &[&str] = &["exec", "x", "dlx", "eval", "-c", "-e", "repl"];

/// Package managers where a subcommand they do not know is the name of a script
/// (`yarn build`, `pnpm lint`): only their own subcommands get `name sub *`.
const SCRIPT_MANAGERS: &[(&str, &[&str])] = &[
    (
        "yarn",
        &[
            "add", "remove", "install", "info", "list", "outdated", "why", "audit", "upgrade",
        ],
    ),
    (
        "pnpm",
        &[
            "add", "remove", "install", "list", "ls", "outdated", "why", "audit", "update",
        ],
    ),
    (
        "bun",
        &["add", "remove", "install", "pm", "outdated", "update"],
    ),
];

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
            .map(|rule| AlwaysRule::one(rule, subject.to_string()))
        };
        match tool {
            "bash" => self.always_bash(subject),
            "write_file" | "str_replace" | "edit" => exact("edit"),
            "read_file" => exact("read_file"),
            // An MCP tool: the dialog offers "always for this tool", whatever its arguments.
            mcp if mcp.starts_with("mcp__") => {
                Rule::new(&escape_glob(mcp), "*", Action::Allow, RuleSource::Session)
                    .map(|rule| AlwaysRule::one(rule, format!("{mcp} (any arguments)")))
            }
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
        // One exact rule per distinct part that asks, in order.
        let mut derived: Vec<(String, String)> = vec![derive(first)];
        for d in asking.iter().map(|p| derive(p)) {
            if !derived.iter().any(|(pattern, _)| *pattern == d.0) {
                derived.push(d);
            }
        }
        let mut rules = derived
            .iter()
            .map(|(pattern, _)| Rule::new("bash", pattern, Action::Allow, RuleSource::Session))
            .collect::<Result<Vec<Rule>, String>>()?;
        let rule = rules.remove(0);
        let shown: Vec<&str> = derived.iter().map(|(_, shown)| shown.as_str()).collect();
        Ok(AlwaysRule {
            rule,
            more: rules,
            shown: match shown.as_slice() {
                [one] => one.to_string(),
                many => format!("each of `{}`", many.join("`, `")),
            },
        })
    }
}

/// The pattern and its description for one asking part.
fn derive(part: &Part) -> (String, String) {
    let exact = || (escape_glob(&part.command), part.command.clone());
    let words = &part.words;
    let Some(name) = words.first() else {
        return exact();
    };
    if TARGET_RUNNERS.contains(&name.as_str()) {
        return exact();
    }
    if !MULTI_LEVEL.contains(&name.as_str()) || part.program.as_deref() != Some(name.as_str()) {
        return exact();
    }
    // The subcommand must come right after the name: options before it may take values.
    let Some(sub) = words.get(1).filter(|s| is_plain_word(s)) else {
        return exact();
    };
    if CODE_SUBCOMMANDS.contains(&sub.as_str()) || runs_target(name, sub) {
        return exact();
    }
    let prefix = format!("{name} {sub}");
    (format!("{} *", escape_glob(&prefix)), format!("{prefix} …"))
}

/// Whether `name sub` runs a target or script of the project, whose further words are
/// not options of a subcommand.
fn runs_target(name: &str, sub: &str) -> bool {
    let listed = |table: &[(&str, &[&str])]| {
        table
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, subs)| subs.contains(&sub))
    };
    listed(TARGET_SUBCOMMANDS) == Some(true) || listed(SCRIPT_MANAGERS) == Some(false)
}

/// A subcommand-like word: letters, digits and `-_.:`, not an option.
fn is_plain_word(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with('-')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}
