//! A `write_file` of a line or two of one kind of call (`parser.add_argument(...)`) over a
//! file that has calls of that kind: the 1.5B model, told to add the option `--upper` with
//! `parser.add_argument("--upper", action="store_true")` beside the other arguments, wrote
//! that line as the whole of greet.py. What it meant is the line beside its kind: after the
//! file's last call of the same method, at its indentation.

use super::{Proposal, replacement, units};
use serde_json::json;

/// Lines written this way at the most (more is a different kind of write).
const MAX_LINES: usize = 3;

/// The `str_replace` that a `write_file` of `content` over `path`, which holds `old`,
/// stands for when the content is a few one-line calls of one method the file calls too
/// (`obj.method(…)`), none of them in the file yet: the lines after the file's last one-line
/// call of it, indented like it. `None` for anything else.
pub fn beside_its_kind(path: &str, old: &str, content: &str) -> Option<Proposal> {
    units::Lang::of_path(path)?;
    let lines: Vec<&str> = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() || lines.len() > MAX_LINES {
        return None;
    }
    let head = method_head(lines[0])?;
    let file: Vec<&str> = old.split_inclusive('\n').collect();
    let known = |l: &str| file.iter().any(|f| f.trim() == l);
    if lines
        .iter()
        .any(|l| method_head(l) != Some(head) || !balanced(l) || known(l))
    {
        return None;
    }
    let at = file
        .iter()
        .rposition(|l| l.trim_start().starts_with(head) && balanced(l))?;
    let indent = &file[at][..file[at].len() - file[at].trim_start().len()];
    let mut merged: String = file[..=at].concat();
    if !merged.ends_with('\n') {
        merged.push('\n');
    }
    for line in &lines {
        merged.push_str(&format!("{indent}{line}\n"));
    }
    if at + 1 == file.len() && !old.ends_with('\n') {
        merged.pop();
    }
    merged.push_str(&file[at + 1..].concat());
    let (old_str, new_str) = replacement(old, &merged)?;
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model's write_file held only {} line{} calling `{}`; made it a str_replace \
             that adds {} after the last such call in {path}.",
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            head.trim_end_matches('('),
            if lines.len() == 1 { "it" } else { "them" },
        ),
        arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
    })
}

/// A line's method call head, `obj.method(` (dotted names only: a plain `print(` is every
/// other line of a script).
fn method_head(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let open = line.find('(')?;
    let name = &line[..open];
    let dotted = name.contains('.')
        && name.split('.').all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    dotted.then(|| &line[..=open])
}

/// Whether a line's parentheses close on it (a call that goes on is no place to insert
/// after).
fn balanced(line: &str) -> bool {
    line.matches('(').count() == line.matches(')').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREET: &str = "import argparse\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args(argv)\n    print(args.name)\n";

    fn applied(file: &str, p: &Proposal) -> String {
        let old = p.arguments["old_str"].as_str().unwrap();
        assert_eq!(file.matches(old).count(), 1, "old_str must be unique");
        file.replacen(old, p.arguments["new_str"].as_str().unwrap(), 1)
    }

    #[test]
    fn a_written_argument_line_goes_after_the_last_one() {
        let line = "parser.add_argument(\"--upper\", action=\"store_true\")\n";
        let p = beside_its_kind("greet.py", GREET, line).expect("an insertion");
        assert_eq!(p.tool, "str_replace");
        assert_eq!(
            applied(GREET, &p),
            GREET.replace(
                "    parser.add_argument(\"name\")\n",
                "    parser.add_argument(\"name\")\n    parser.add_argument(\"--upper\", action=\"store_true\")\n",
            )
        );
        assert!(p.what.contains("`parser.add_argument`"), "{}", p.what);
    }

    #[test]
    fn other_lines_calls_the_file_lacks_and_lines_it_has_stay_writes() {
        let has = "parser.add_argument(\"name\")\n";
        let plain = "print(\"x\")\n";
        let other = "parser.add_subparsers(dest=\"cmd\")\n";
        let mixed = "parser.add_argument(\"--a\")\nprint(1)\n";
        let open = "parser.add_argument(\n";
        for content in [has, plain, other, mixed, open] {
            assert_eq!(
                beside_its_kind("greet.py", GREET, content),
                None,
                "{content}"
            );
        }
        // The file's only call of the kind goes on over lines: no place to put one after.
        let multi = "def main():\n    parser.add_argument(\n        \"name\",\n    )\n";
        let line = "parser.add_argument(\"--upper\")\n";
        assert_eq!(beside_its_kind("greet.py", multi, line), None);
        assert_eq!(beside_its_kind("notes.txt", GREET, line), None);
    }
}
