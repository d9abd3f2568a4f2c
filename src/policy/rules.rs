//! Rules: a glob over a normalised command (bash) or a path (file tools), and the built-in
//! bash table.
//!
//! For commands the glob's first word names the program, and only that program: `ls *`
//! matches `ls` and `ls -la` but not `lsblk` or `lsb/../../bin/sh`; a path (`./x`, `a/b`) is
//! a different program from a bare name and only matches rules that name that path. A
//! trailing ` *` also matches the command without arguments (`git log *` matches `git log`).

use super::{Action, RuleSource};
use std::fmt;

/// The built-in bash rules, in order (later rules win). Read-only commands with their
/// argument checks (see `shell::args`), and the programs that are denied outright.
pub(super) const DEFAULT_BASH: &[(&str, Action)] = &[
    ("ls *", Action::Allow),
    ("cat *", Action::Allow),
    ("head *", Action::Allow),
    ("tail *", Action::Allow),
    ("wc *", Action::Allow),
    ("echo *", Action::Allow),
    ("true *", Action::Allow),
    ("false *", Action::Allow),
    ("pwd *", Action::Allow),
    ("cd *", Action::Allow),
    ("test *", Action::Allow),
    ("\\[ *", Action::Allow),
    ("sort *", Action::Allow),
    ("uniq *", Action::Allow),
    ("cut *", Action::Allow),
    ("file *", Action::Allow),
    ("which *", Action::Allow),
    ("grep *", Action::Allow),
    ("rg *", Action::Allow),
    ("find *", Action::Allow),
    ("tree *", Action::Allow),
    ("git status *", Action::Allow),
    ("git diff *", Action::Allow),
    ("git log *", Action::Allow),
    ("git show *", Action::Allow),
    ("git ls-files *", Action::Allow),
    ("pytest *", Action::Allow),
    ("cargo test *", Action::Allow),
    ("cargo build *", Action::Allow),
    ("cargo check *", Action::Allow),
    ("rm *", Action::Deny),
    ("sudo *", Action::Deny),
    ("sudoedit *", Action::Deny),
    ("chmod *", Action::Deny),
    ("chown *", Action::Deny),
    ("curl *", Action::Deny),
    ("wget *", Action::Deny),
    ("git push *", Action::Deny),
    ("git reset *", Action::Deny),
    ("git clean *", Action::Deny),
];

/// Built-in allow rules whose programs run the project's own code (build scripts and proc
/// macros, tests and `conftest.py`): `allow` only while the sandbox confines what they start.
/// (git is rated on the repository's configuration itself: see `shell::git_config`.)
pub(super) const RUNS_PROJECT_CODE: &[&str] =
    &["pytest *", "cargo test *", "cargo build *", "cargo check *"];

/// The program a rule's first word names.
#[derive(Clone, Debug)]
enum Program {
    /// One name (`ls`, `./build.sh`).
    Named(String),
    /// A pattern over names (`py*3 *`).
    Pattern(LazyGlob),
    /// Any program (`*`).
    Any,
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
    /// The pattern, parsed (checked) when the rule is made and compiled when first used:
    /// compiling every rule of the built-in table cost ~2 ms of every start.
    glob: LazyGlob,
    program: Program,
    /// Whether the pattern names a path (`./x *`): only such rules match path programs.
    names_path: bool,
}

/// A glob parsed now and compiled on first use.
#[derive(Clone, Debug)]
struct LazyGlob {
    glob: globset::Glob,
    matcher: std::sync::OnceLock<globset::GlobMatcher>,
}

impl LazyGlob {
    fn is_match(&self, subject: impl AsRef<std::path::Path>) -> bool {
        self.matcher
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(subject)
    }
}

fn glob(pattern: &str) -> Result<LazyGlob, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map(|glob| LazyGlob {
            glob,
            matcher: std::sync::OnceLock::new(),
        })
        .map_err(|e| e.to_string())
}

/// The first word of a pattern (up to an unescaped space) and whether it is glob-free.
fn first_word(pattern: &str) -> (String, bool, bool) {
    let mut word = String::new();
    let mut raw = String::new();
    let mut plain = true;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                raw.push(c);
                if let Some(n) = chars.next() {
                    word.push(n);
                    raw.push(n);
                }
            }
            ' ' => break,
            '*' | '?' | '[' | ']' | '{' | '}' => {
                plain = false;
                raw.push(c);
            }
            c => {
                word.push(c);
                raw.push(c);
            }
        }
    }
    // `ls*`: a literal name followed by a star names `ls` (the star spans arguments).
    let star_after_name = raw.ends_with('*')
        && !raw[..raw.len() - 1].contains(['*', '?', '[', ']', '{', '}'])
        && !word.is_empty();
    (
        if plain || star_after_name { word } else { raw },
        plain,
        star_after_name,
    )
}

impl Rule {
    /// Compiles a rule; fails on an invalid glob.
    pub fn new(
        tool: &str,
        pattern: &str,
        action: Action,
        source: RuleSource,
    ) -> Result<Rule, String> {
        let matcher = glob(pattern)?;
        let (name, plain, star_after_name) = first_word(pattern);
        let program = if plain || star_after_name {
            Program::Named(name.clone())
        } else if name.chars().all(|c| c == '*') {
            Program::Any
        } else {
            Program::Pattern(glob(&name)?)
        };
        Ok(Rule {
            tool: tool.to_string(),
            pattern: pattern.to_string(),
            action,
            source,
            glob: matcher,
            names_path: name.contains('/'),
            program,
        })
    }

    /// Whether the glob matches `subject` as text (a path for the file tools).
    pub fn matches(&self, subject: &str) -> bool {
        self.glob.is_match(subject)
    }

    /// Whether the rule matches a command run as `program` (its normalised name), written
    /// `command` (normalised: the name, then its arguments).
    pub fn matches_command(&self, program: &str, command: &str) -> bool {
        if program.contains('/') && !self.names_path && !matches!(self.program, Program::Any) {
            return false;
        }
        let named = match &self.program {
            Program::Named(n) => n == program,
            Program::Pattern(p) => p.is_match(program),
            Program::Any => true,
        };
        named && (self.glob.is_match(command) || self.glob.is_match(format!("{command} ")))
    }

    /// The program name this rule names, when it names exactly one.
    pub fn program(&self) -> Option<&str> {
        match &self.program {
            Program::Named(n) => Some(n),
            _ => None,
        }
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

/// Makes `s` match only itself as a glob.
pub(super) fn escape_glob(s: &str) -> String {
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
mod tests {
    use super::*;

    fn rule(pattern: &str) -> Rule {
        Rule::new("bash", pattern, Action::Allow, RuleSource::User).expect("valid glob")
    }

    /// (pattern, program, command, matches)
    const CASES: &[(&str, &str, &str, bool)] = &[
        ("ls *", "ls", "ls", true),
        ("ls *", "ls", "ls -la", true),
        ("ls *", "lsblk", "lsblk", false),
        ("ls*", "ls", "ls -la", true),
        ("ls*", "lsblk", "lsblk", false),
        (
            "ls*",
            "lsb/../../../bin/sh",
            "lsb/../../../bin/sh -c x",
            false,
        ),
        ("pytest*", "pytest/../x", "pytest/../x", false),
        ("git log *", "git", "git log", true),
        ("git log *", "git", "git log -5", true),
        ("git log *", "git", "git logx", false),
        ("git diff*", "git", "git difftool", true),
        ("./build.sh *", "./build.sh", "./build.sh --fast", true),
        ("build.sh *", "./build.sh", "./build.sh", false),
        ("*", "./x", "./x", true),
        ("py*3 *", "python3", "python3 -V", true),
        ("rm -rf build*", "rm", "rm -rf build/out", true),
        ("make", "make", "make", true),
        ("make", "make", "make install", false),
        ("\\[ *", "[", "[ -f x ]", true),
    ];

    #[test]
    fn rules_match_the_program_they_name() {
        for (pattern, program, command, expected) in CASES {
            assert_eq!(
                rule(pattern).matches_command(program, command),
                *expected,
                "{pattern:?} on {command:?} (program {program:?})"
            );
        }
    }

    #[test]
    fn escaped_globs_match_only_themselves() {
        let exact = rule(&escape_glob("python3 -c 'print(1)' [x]*"));
        assert!(exact.matches_command("python3", "python3 -c 'print(1)' [x]*"));
        assert!(!exact.matches_command("python3", "python3 -c 'print(1)' x*"));
        assert!(!exact.matches_command("python3", "python3 -c 'print(1)' [x]* more"));
    }
}
