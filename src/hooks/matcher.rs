//! Which tool calls a hook is for: its `matcher`, a regular expression over the tool name as in
//! Claude Code (`bash`, `write_file|str_replace`, `mcp__server__.*`), anchored at both ends so
//! `bash` is not also `bash_output`. Empty or `*` matches every tool.
//!
//! The `regex` crate is already compiled into rein (tree-sitter depends on it, with the same
//! features), so a real regex costs nothing and accepts every matcher Claude Code accepts.

use regex::Regex;

/// A compiled matcher and the text it was written as.
#[derive(Clone, Debug)]
pub struct Matcher {
    source: String,
    regex: Option<Regex>,
}

impl Matcher {
    /// Compiles `source`; the error is one sentence for the person.
    pub fn new(source: &str) -> Result<Matcher, String> {
        let source = source.trim();
        if source.is_empty() || source == "*" {
            return Ok(Matcher {
                source: source.to_string(),
                regex: None,
            });
        }
        let regex = Regex::new(&format!("^(?:{source})$")).map_err(|e| {
            format!("the matcher {source:?} is not a valid regular expression: {e}")
        })?;
        Ok(Matcher {
            source: source.to_string(),
            regex: Some(regex),
        })
    }

    /// A matcher for every tool.
    pub fn any() -> Matcher {
        Matcher {
            source: String::new(),
            regex: None,
        }
    }

    /// Whether `name` is matched.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.as_ref().is_none_or(|r| r.is_match(name))
    }

    /// The matcher as written (empty: every tool).
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// Claude Code's name for a rein tool, for hooks written for Claude Code (`.claude/settings.json`
/// matches `Bash`, `Write`, `Edit`, `Read`).
pub fn claude_name(rein: &str) -> Option<&'static str> {
    Some(match rein {
        "bash" => "Bash",
        "read_file" => "Read",
        "write_file" => "Write",
        "str_replace" => "Edit",
        "task" => "Task",
        "write_todos" => "TodoWrite",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_alternation_and_wildcards() {
        let m = Matcher::new("write_file|str_replace").unwrap();
        assert!(m.matches("write_file") && m.matches("str_replace"));
        assert!(!m.matches("bash") && !m.matches("xwrite_file"));
        let bash = Matcher::new("bash").unwrap();
        assert!(bash.matches("bash") && !bash.matches("bash_output"));
        let mcp = Matcher::new("mcp__server__.*").unwrap();
        assert!(mcp.matches("mcp__server__search") && !mcp.matches("mcp__other__x"));
        for any in ["", "*", "  "] {
            assert!(Matcher::new(any).unwrap().matches("anything"));
        }
        assert!(Matcher::new("(").is_err());
    }
}
