//! A check of a shell script as it is written: what the shell would print literally where the
//! author (a small model, most often) meant a value — `echo 'Hello, $1!'` prints `$1` as is.
//! The note rides on the tool's result, so the model can fix the script before it runs it.
//! Only findings that are certain are reported (parse errors are not: tree-sitter's bash
//! grammar and bash disagree on rare forms, and a wrong note costs more than none).

use crate::policy::shell::parse_tree;
use tree_sitter::Node;

/// Scripts larger than this are not checked (a generated file, not a script being written).
const MAX_CHECKED: usize = 256 * 1024;

/// The most notes one result carries.
const MAX_NOTES: usize = 3;

/// Commands that print their arguments: a `$` in a single-quoted argument of theirs reaches
/// the output as is, which is what a script almost never means.
const PRINTERS: &[&str] = &["echo", "printf"];

/// A note for the model about `content` written to `path`, when it is a shell script with a
/// finding; `None` otherwise.
pub(crate) fn notes(path: &str, content: &str) -> Option<String> {
    if content.len() > MAX_CHECKED || !is_shell_script(path, content) {
        return None;
    }
    let tree = parse_tree(content)?;
    let mut found = Vec::new();
    literal_expansions(tree.root_node(), content, &mut found);
    if found.is_empty() {
        return None;
    }
    let lines: Vec<String> = found
        .iter()
        .take(MAX_NOTES)
        .map(|f| {
            format!(
                "line {}: `{}` is inside single quotes, so {} prints it as is, not its value; \
                 use double quotes (\"...\") where the shell should expand it.",
                f.line, f.expansion, f.command
            )
        })
        .collect();
    Some(format!("Note (shell check): {}", lines.join(" ")))
}

/// A `.sh`/`.bash` file, or one whose `#!` line names a POSIX shell or bash.
fn is_shell_script(path: &str, content: &str) -> bool {
    if path.ends_with(".sh") || path.ends_with(".bash") {
        return true;
    }
    let Some(first) = content.lines().next().filter(|l| l.starts_with("#!")) else {
        return false;
    };
    first[2..]
        .split_whitespace()
        .flat_map(|w| w.rsplit('/').next())
        .take(2)
        .any(|name| matches!(name, "sh" | "bash" | "dash" | "ksh"))
}

/// One expansion the shell will not make.
struct Finding {
    line: usize,
    expansion: String,
    command: String,
}

/// Collects single-quoted arguments of [`PRINTERS`] that hold something that looks like an
/// expansion (`$1`, `$name`, `${...}`, `$(...)`).
fn literal_expansions(node: Node<'_>, text: &str, found: &mut Vec<Finding>) {
    if node.kind() == "raw_string"
        && let Some(command) = printing_command(node, text)
        && let Some(expansion) = node
            .utf8_text(text.as_bytes())
            .ok()
            .and_then(first_expansion)
    {
        found.push(Finding {
            line: node.start_position().row + 1,
            expansion,
            command,
        });
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        literal_expansions(child, text, found);
    }
}

/// The name of the printing command `node` is an argument of (directly or as part of a
/// concatenated word), if it is one.
fn printing_command(node: Node<'_>, text: &str) -> Option<String> {
    let mut word = node;
    if let Some(parent) = word.parent().filter(|p| p.kind() == "concatenation") {
        word = parent;
    }
    let command = word.parent().filter(|p| p.kind() == "command")?;
    let name = command.child_by_field_name("name")?;
    if name.id() == word.id() {
        return None;
    }
    let name = name.utf8_text(text.as_bytes()).ok()?;
    let base = name.rsplit('/').next().unwrap_or(name);
    PRINTERS.contains(&base).then(|| base.to_string())
}

/// The first `$` form in a single-quoted string that the shell would have expanded in double
/// quotes, as written.
fn first_expansion(quoted: &str) -> Option<String> {
    let bytes = quoted.as_bytes();
    let start = bytes.iter().enumerate().find_map(|(i, b)| {
        let next = *bytes.get(i + 1)?;
        let expands = next.is_ascii_alphanumeric() || matches!(next, b'_' | b'{' | b'(' | b'@');
        (*b == b'$' && expands).then_some(i)
    })?;
    let rest = &quoted[start + 1..];
    let len = match rest.as_bytes().first()? {
        b'{' => rest.find('}').map_or(rest.len(), |i| i + 1),
        b'(' => rest.find(')').map_or(rest.len(), |i| i + 1),
        b'0'..=b'9' | b'@' => 1,
        _ => rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len()),
    };
    // An unclosed `${` runs to the end of the string: only its start is quoted back.
    let shown: String = rest[..len].chars().take(MAX_SHOWN).collect();
    Some(format!("${shown}"))
}

/// The longest expansion quoted back in a note, in characters.
const MAX_SHOWN: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_quoted_argument_that_echo_prints_as_is_is_noted() {
        let note = notes("hello.sh", "#!/bin/bash\necho 'Hello, $1!'\n").unwrap();
        assert!(
            note.contains("line 2: `$1` is inside single quotes, so echo"),
            "{note}"
        );
        let note = notes("x.sh", "printf 'at %s\\n' 'home: ${HOME}' \n").unwrap();
        assert!(
            note.contains("`${HOME}`") && note.contains("printf"),
            "{note}"
        );
        let note = notes("x.sh", "echo 'today: '$(date)' and $(whoami)'\n").unwrap();
        assert!(note.contains("`$(whoami)`"), "{note}");
        let unclosed = format!("echo '${{{}'\n", "x".repeat(500));
        let note = notes("x.sh", &unclosed).unwrap();
        assert!(
            note.contains(&format!("`${{{}`", "x".repeat(MAX_SHOWN - 1))),
            "{note}"
        );
    }

    #[test]
    fn a_script_is_known_by_its_name_or_its_first_line() {
        let body = "echo 'cost: $total'\n";
        assert!(notes("greet", &format!("#!/usr/bin/env bash\n{body}")).is_some());
        assert!(notes("greet", &format!("#!/bin/sh -e\n{body}")).is_some());
        assert!(notes("run.bash", body).is_some());
        assert!(notes("greet.py", &format!("#!/usr/bin/env python3\n{body}")).is_none());
        assert!(notes("notes.md", body).is_none());
    }

    #[test]
    fn what_the_shell_expands_or_a_command_means_literally_is_not_noted() {
        for script in [
            "echo \"Hello, $1!\"\n",
            "echo 'a plain string'\n",
            "awk '{print $1}' file\n",
            "sed -e 's/$HOME/x/' f\n",
            "grep '$name' f\n",
            "msg='$1'\n",
            "cat <<'EOF'\n$1\nEOF\n",
            "echo \"it's $USER's\"\n",
            "# echo '$1'\n",
        ] {
            assert_eq!(notes("x.sh", script), None, "{script}");
        }
    }

    #[test]
    fn notes_are_capped_and_a_huge_file_is_not_checked() {
        let many = "echo '$a'\n".repeat(10);
        let note = notes("x.sh", &many).unwrap();
        assert_eq!(note.matches("inside single quotes").count(), MAX_NOTES);
        let huge = format!("echo '$a'\n{}", "# filler\n".repeat(MAX_CHECKED / 9 + 1));
        assert_eq!(notes("x.sh", &huge), None);
    }
}
