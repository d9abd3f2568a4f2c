//! How a tool call is shown: a typed description the tool builds once, from which the TUI,
//! `rein exec`, the approval dialog and the session file all render. No front end looks at a
//! tool's name or its raw arguments.

use super::Todo;
use crate::text::headline;
use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};
use std::time::Duration;

/// Characters of a call's subject shown on its one-line header.
pub const SUBJECT_CHARS: usize = 80;
/// Lines of context around each change of an [`EditDiff`].
pub const DIFF_CONTEXT: usize = 3;
/// A diff that takes longer than this is approximated (huge, very different files).
const DIFF_TIMEOUT: Duration = Duration::from_millis(300);

/// What a tool call does, for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolDisplay {
    /// A command line run by the shell.
    Exec {
        /// The whole command line.
        command: String,
    },
    /// Creating or changing a file.
    Edit {
        /// The file (workspace-relative when inside).
        path: String,
        /// The change; `None` when it is not known (refused arguments, a binary file, an old
        /// session file).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<EditDiff>,
    },
    /// Reading a file.
    Read {
        /// The file (workspace-relative when inside).
        path: String,
        /// The lines asked for; `None` for the default window from the start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<LineRange>,
    },
    /// Replacing the todo list.
    Todos {
        /// The proposed list.
        todos: Vec<Todo>,
    },
    /// Handing a question to a subagent.
    Task {
        /// What it is asked.
        description: String,
    },
    /// Loading a skill.
    Skill {
        /// The skill's name.
        name: String,
    },
    /// A command asks to reach a host not on the network allow-list (`[sandbox.network]`):
    /// "yes" allows it for the session, "always" saves it to the person's config.
    Network {
        /// The host exactly as the command wrote it.
        host: String,
        /// The port.
        port: u16,
    },
    /// A tool of an MCP server: which server gets which arguments, carried from where the
    /// tool is known (never parsed back out of its name).
    Mcp {
        /// The tool's name as the model calls it (`mcp__<server>__<tool>`).
        name: String,
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments as sent.
        args: serde_json::Value,
    },
    /// Any other tool: its name and arguments as sent.
    Other {
        /// The tool's name.
        name: String,
        /// The arguments (`null` when they were not valid JSON).
        args: serde_json::Value,
    },
}

/// A range of 1-based line numbers, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    /// First line.
    pub first: u64,
    /// Last line.
    pub last: u64,
}

/// A change to one file as unified-diff hunks with [`DIFF_CONTEXT`] lines of context.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditDiff {
    /// The file did not exist before.
    #[serde(default)]
    pub created: bool,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The changed regions, in file order.
    pub hunks: Vec<DiffHunk>,
}

/// One changed region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffHunk {
    /// 1-based number of the hunk's first line in the old file.
    pub old_start: usize,
    /// 1-based number of the hunk's first line in the new file.
    pub new_start: usize,
    /// The lines, each starting with ` ` (unchanged), `-` (removed) or `+` (added), without
    /// their line ending.
    pub lines: Vec<String>,
}

impl EditDiff {
    /// The diff from `old` (`None`: the file is new) to `new`.
    pub fn between(old: Option<&str>, new: &str) -> EditDiff {
        let diff = TextDiff::configure()
            .timeout(DIFF_TIMEOUT)
            .diff_lines(old.unwrap_or(""), new);
        let mut out = EditDiff {
            created: old.is_none(),
            ..EditDiff::default()
        };
        for group in diff.grouped_ops(DIFF_CONTEXT) {
            let Some(first) = group.first() else {
                continue;
            };
            let mut hunk = DiffHunk {
                old_start: first.old_range().start + 1,
                new_start: first.new_range().start + 1,
                lines: Vec::new(),
            };
            for op in &group {
                for change in diff.iter_changes(op) {
                    let sign = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Insert => {
                            out.added += 1;
                            '+'
                        }
                        ChangeTag::Delete => {
                            out.removed += 1;
                            '-'
                        }
                    };
                    let text = change.value();
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    let text = text.strip_suffix('\r').unwrap_or(text);
                    hunk.lines.push(format!("{sign}{text}"));
                }
            }
            out.hunks.push(hunk);
        }
        out
    }

    /// `+N −M`, the way headers and dialogs show the size of a change.
    pub fn counts(&self) -> String {
        format!("+{} \u{2212}{}", self.added, self.removed)
    }
}

impl ToolDisplay {
    /// The word a header starts with (`bash`, `edit`, `read` …; an other tool's own name).
    pub fn label(&self) -> &str {
        match self {
            ToolDisplay::Exec { .. } => "bash",
            ToolDisplay::Edit {
                diff: Some(EditDiff { created: true, .. }),
                ..
            } => "write",
            ToolDisplay::Edit { .. } => "edit",
            ToolDisplay::Read { .. } => "read",
            ToolDisplay::Todos { .. } => "todos",
            ToolDisplay::Task { .. } => "task",
            ToolDisplay::Skill { .. } => "skill",
            ToolDisplay::Network { .. } => "network",
            ToolDisplay::Mcp { name, .. } | ToolDisplay::Other { name, .. } => name,
        }
    }

    /// What the call is about, on one line of at most [`SUBJECT_CHARS`] characters.
    pub fn subject(&self) -> String {
        match self {
            ToolDisplay::Exec { command } => headline(command, SUBJECT_CHARS),
            ToolDisplay::Edit { path, .. } => headline(path, SUBJECT_CHARS),
            ToolDisplay::Read { path, lines } => match lines {
                Some(r) => headline(&format!("{path}:{}-{}", r.first, r.last), SUBJECT_CHARS),
                None => headline(path, SUBJECT_CHARS),
            },
            ToolDisplay::Todos { todos } => {
                let n = todos.len();
                format!("{n} item{}", if n == 1 { "" } else { "s" })
            }
            ToolDisplay::Task { description } => headline(description, SUBJECT_CHARS),
            ToolDisplay::Skill { name } => headline(name, SUBJECT_CHARS),
            ToolDisplay::Network { host, port } => {
                headline(&format!("{host}:{port}"), SUBJECT_CHARS)
            }
            ToolDisplay::Mcp { args, .. } | ToolDisplay::Other { args, .. } => match args {
                serde_json::Value::Null => String::new(),
                other => headline(&other.to_string(), SUBJECT_CHARS),
            },
        }
    }

    /// The file an edit or a read is about.
    pub fn path(&self) -> Option<&str> {
        match self {
            ToolDisplay::Edit { path, .. } | ToolDisplay::Read { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The change of an edit, when known.
    pub fn diff(&self) -> Option<&EditDiff> {
        match self {
            ToolDisplay::Edit { diff, .. } => diff.as_ref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_hunks_carry_numbers_signs_and_context() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\nline 10b\n");
        let d = EditDiff::between(Some(&old), &new);
        assert_eq!((d.added, d.removed, d.created), (2, 1, false));
        assert_eq!(d.hunks.len(), 1);
        let h = &d.hunks[0];
        assert_eq!((h.old_start, h.new_start), (7, 7));
        assert_eq!(
            h.lines,
            [
                " line 7",
                " line 8",
                " line 9",
                "-line 10",
                "+line ten",
                "+line 10b",
                " line 11",
                " line 12",
                " line 13"
            ]
        );
        assert_eq!(d.counts(), "+2 −1");
        let created = EditDiff::between(None, "a\r\nb\r\n");
        assert!(created.created);
        assert_eq!(created.hunks[0].lines, ["+a", "+b"]);
        assert!(EditDiff::between(Some("same\n"), "same\n").hunks.is_empty());
    }

    #[test]
    fn labels_and_subjects() {
        let created = EditDiff::between(None, "x\n");
        let cases = [
            (
                ToolDisplay::Exec {
                    command: "cargo test\n--all".into(),
                },
                "bash",
                "cargo test …",
            ),
            (
                ToolDisplay::Edit {
                    path: "src/a.rs".into(),
                    diff: None,
                },
                "edit",
                "src/a.rs",
            ),
            (
                ToolDisplay::Edit {
                    path: "new.rs".into(),
                    diff: Some(created),
                },
                "write",
                "new.rs",
            ),
            (
                ToolDisplay::Read {
                    path: "a.rs".into(),
                    lines: Some(LineRange { first: 3, last: 9 }),
                },
                "read",
                "a.rs:3-9",
            ),
            (ToolDisplay::Todos { todos: vec![] }, "todos", "0 items"),
            (
                ToolDisplay::Skill {
                    name: "release".into(),
                },
                "skill",
                "release",
            ),
            (
                ToolDisplay::Other {
                    name: "mcp__search".into(),
                    args: json!({"q": "x"}),
                },
                "mcp__search",
                "{\"q\":\"x\"}",
            ),
            (
                ToolDisplay::Mcp {
                    name: "mcp__docs__search".into(),
                    server: "docs".into(),
                    tool: "search".into(),
                    args: json!({"q": "y"}),
                },
                "mcp__docs__search",
                "{\"q\":\"y\"}",
            ),
        ];
        for (display, label, subject) in cases {
            assert_eq!(display.label(), label, "{display:?}");
            assert_eq!(display.subject(), subject, "{display:?}");
        }
    }

    #[test]
    fn serialises_with_a_kind_tag_and_reads_back() {
        let d = ToolDisplay::Read {
            path: "a".into(),
            lines: None,
        };
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(text, r#"{"kind":"read","path":"a"}"#);
        assert_eq!(serde_json::from_str::<ToolDisplay>(&text).unwrap(), d);
    }
}
