//! A line change a small model says it made and did not make: told to change
//! `from mathops import add, sub` to `from mathops import add, sub, mul`, the 1.5B model
//! answered "I changed the line `…` to `…` in `test_mathops.py`" twice, the file unchanged.
//! The sentence names the file, the line as it is and the line as it should be: it becomes
//! that edit.

use super::{FileState, Proposal, Workspace, file_tokens, replacement};
use serde_json::json;

/// The `str_replace` calls for the "`A` to `B`" changes the answer's lines claim, each in the
/// one source file its line names, where that file holds `A` as a whole line once and `B`
/// nowhere.
pub(super) fn claimed_line_edits(answer: &str, ws: &dyn Workspace) -> Vec<Proposal> {
    let mut out: Vec<Proposal> = Vec::new();
    for line in answer.lines() {
        let Some((from, to)) = change_pair(line) else {
            continue;
        };
        let mut files = file_tokens(line);
        files.dedup();
        let [path] = files.as_slice() else {
            continue;
        };
        if let Some(p) = line_edit(path, from, to, ws)
            && !out
                .iter()
                .any(|o| o.arguments["path"] == p.arguments["path"])
        {
            out.push(p);
        }
    }
    out
}

/// The first "`A` to `B`" of a line: two backticked one-line spans with only " to " between.
fn change_pair(line: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = line.split('`').collect();
    (1..parts.len().saturating_sub(2))
        .step_by(2)
        .find(|&i| parts[i + 1].trim() == "to")
        .map(|i| (parts[i].trim(), parts[i + 2].trim()))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
}

/// The edit of `path` that makes its one line `from` into `to`, at the line's indentation.
fn line_edit(path: &str, from: &str, to: &str, ws: &dyn Workspace) -> Option<Proposal> {
    let FileState::Text(text) = ws.file(path) else {
        return None;
    };
    if text.contains(to) {
        return None;
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut hits = lines.iter().enumerate().filter(|(_, l)| l.trim() == from);
    let (at, old) = hits.next()?;
    if hits.next().is_some() {
        return None;
    }
    let indent = &old[..old.len() - old.trim_start().len()];
    let end = if old.ends_with('\n') { "\n" } else { "" };
    let mut merged: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    merged[at] = format!("{indent}{to}{end}");
    let (old_str, new_str) = replacement(&text, &merged.concat())?;
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model said it changed `{from}` to `{to}` in {path} and had not; made it a \
             str_replace call."
        ),
        arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::Mem;
    use super::*;

    const TESTS: &str = "import unittest\n\nfrom mathops import add, sub\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

    #[test]
    fn a_line_change_the_answer_claims_is_made() {
        let mut ws = Mem::new(&[("test_mathops.py", TESTS)]);
        // The 1.5B model's answer, word for word.
        let answer = "I changed the line `from mathops import add, sub` to `from mathops import add, sub, mul` in `test_mathops.py` and ran the command again.";
        let props = claimed_line_edits(answer, &ws);
        assert_eq!(props.len(), 1, "{props:#?}");
        ws.apply(&props);
        assert_eq!(
            ws.text("test_mathops.py"),
            TESTS.replace("import add, sub\n", "import add, sub, mul\n")
        );
    }

    #[test]
    fn claims_without_one_file_or_one_whole_line_change_nothing() {
        let ws = Mem::new(&[("test_mathops.py", TESTS), ("mathops.py", "")]);
        for answer in [
            // No file named, or two.
            "I changed `from mathops import add, sub` to `from mathops import add, sub, mul`.",
            "I changed `from mathops import add, sub` to `from mathops import mul` in test_mathops.py and mathops.py.",
            // Not a whole line of the file.
            "I changed `add, sub` to `add, sub, mul` in test_mathops.py.",
            // Already there.
            "I changed `import unittest` to `from mathops import add, sub` in test_mathops.py.",
            // Not a change of one thing into another.
            "I ran `python3 test_mathops.py` and `ls` in test_mathops.py.",
        ] {
            assert!(claimed_line_edits(answer, &ws).is_empty(), "{answer}");
        }
    }
}
