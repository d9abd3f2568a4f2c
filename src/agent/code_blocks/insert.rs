//! A `str_replace` whose `old_str` is the model's own idea of the file: the 1.5B model, sent
//! to add a test to test_mathops.py, quoted a class that is not there and repeated it in
//! `new_str` with one new method, or "replaced" a method of its own making with the one it
//! meant. What it meant is the addition: new lines after the last line of its quote that the
//! file holds (once), where they fit the file's structure; a replaced invented definition
//! where new ones go (a method at the end of the file's one class).

use super::{Proposal, partial::only_definitions, replacement, units};
use serde_json::json;

/// Larger files are left to the tool's own error (parsing them costs more than the aid is
/// worth).
const MAX_COMPARED: usize = 256 << 10;

/// The `str_replace` that a call quoting `old_str` (not in `file`) stands for when it only
/// adds definitions: those added to the quote go after the quote's line before them, where
/// the file holds that line once; those replacing definitions neither the file nor the
/// quote's other side has go where new ones go (see [`instead_of_invented`]). `None` when the
/// call changes what the file has, or the place is not clear.
pub fn anchored_insert(path: &str, file: &str, old_str: &str, new_str: &str) -> Option<Proposal> {
    let lang = units::Lang::of_path(path)?;
    if file.len() > MAX_COMPARED || file.contains('\r') || old_str.trim().is_empty() {
        return None;
    }
    if file.contains(old_str) {
        return None;
    }
    let (merged, keys) = match pure_insertion(old_str, new_str) {
        Some(insertion) => after_anchor(lang, file, &insertion)?,
        None => instead_of_invented(lang, file, old_str, new_str)?,
    };
    let (old_str, new_str) = replacement(file, &merged)?;
    let names: Vec<String> = keys.iter().map(|k| units::shown_key(k)).take(4).collect();
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model's str_replace quoted text that is not in {path} to add {}; made it the \
             str_replace that adds it.",
            names.join(", "),
        ),
        arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
    })
}

/// The file with an insertion's lines after its anchor, and the keys of what they define;
/// `None` unless they are definitions and the place is clear.
fn after_anchor(
    lang: units::Lang,
    file: &str,
    insertion: &Insertion,
) -> Option<(String, Vec<String>)> {
    let (indent, dedented) = dedent(&insertion.added)?;
    let keys = definition_keys(lang, &dedented)?;
    let lines: Vec<&str> = file.split_inclusive('\n').collect();
    let at = place(&lines, insertion.anchor, indent, &insertion.added)?;
    Some((inserted(&lines, at, insertion.gap, &insertion.added), keys))
}

/// A quote of definitions the file does not have, replaced by other definitions it does not
/// have either: the 1.5B model "replaced" a method `mul` of its own making with the one it
/// meant to add. Python only: methods (indented) go at the end of the file's one class,
/// top-level definitions where new ones go.
fn instead_of_invented(
    lang: units::Lang,
    file: &str,
    old_str: &str,
    new_str: &str,
) -> Option<(String, Vec<String>)> {
    if lang != units::Lang::Python {
        return None;
    }
    let (old_lines, new_lines) = (without_blank_ends(old_str), without_blank_ends(new_str));
    let (old_indent, old_dedented) = dedent(&old_lines)?;
    let (indent, dedented) = dedent(&new_lines)?;
    definition_keys(lang, &old_dedented)?;
    let keys = definition_keys(lang, &dedented)?;
    // Any name either side defines that the file has (a method of a class of its own
    // making too) makes it an edit of what is there, for the tool to judge.
    let file_names = python_names(file);
    let mut quoted = python_names(old_str);
    quoted.extend(python_names(new_str));
    if old_indent != indent || quoted.iter().any(|n| file_names.contains(n)) {
        return None;
    }
    if indent == 0 {
        return Some((units::merge(lang, file, &dedented.join("\n"))?, keys));
    }
    let lines: Vec<&str> = file.lines().collect();
    let mut classes = units::units(lang, &lines)
        .into_iter()
        .filter(|u| u.key.starts_with("class "));
    let class = classes.next().filter(|_| classes.next().is_none())?;
    let body = lines[class.head + 1..class.end]
        .iter()
        .find_map(|l| indent_of(l))?;
    if body != indent {
        return None;
    }
    let mut out: Vec<&str> = lines[..class.end].to_vec();
    out.push("");
    out.extend(&new_lines);
    out.extend(&lines[class.end..]);
    let mut text = out.join("\n");
    if file.ends_with('\n') {
        text.push('\n');
    }
    Some((text, keys))
}

/// The lines of `text` without trailing blanks, and without the blank lines at its ends.
fn without_blank_ends(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let from = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let to = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(from, |i| i + 1);
    lines[from..to].to_vec()
}

/// The names a Python file defines anywhere (functions, methods, classes).
fn python_names(file: &str) -> Vec<&str> {
    file.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let t = t.strip_prefix("async ").unwrap_or(t);
            let rest = t
                .strip_prefix("def ")
                .or_else(|| t.strip_prefix("class "))?;
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            Some(&rest[..end])
        })
        .collect()
}

/// Lines without their common indentation, and that indentation; `None` when all are blank.
pub(super) fn dedent<'a>(lines: &[&'a str]) -> Option<(usize, Vec<&'a str>)> {
    let indent = lines.iter().filter_map(|l| indent_of(l)).min()?;
    let dedented = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect();
    Some((indent, dedented))
}

/// The keys of the definitions `lines` hold, when they hold nothing else (comments, imports
/// and blank lines aside).
fn definition_keys(lang: units::Lang, lines: &[&str]) -> Option<Vec<String>> {
    let keys: Vec<String> = units::units(lang, lines)
        .into_iter()
        .map(|u| u.key)
        .collect();
    (!keys.is_empty() && only_definitions(lang, &lines.join("\n"))).then_some(keys)
}

/// New lines added to a quote and nothing else changed: the lines, the last non-blank
/// line of the quote before them, and the blank lines between the two.
struct Insertion<'a> {
    anchor: &'a str,
    gap: usize,
    added: Vec<&'a str>,
}

/// `new` as `old` with one run of lines added; `None` for any other change.
fn pure_insertion<'a>(old: &'a str, new: &'a str) -> Option<Insertion<'a>> {
    let a: Vec<&str> = old.lines().map(str::trim_end).collect();
    let b: Vec<&str> = new.lines().map(str::trim_end).collect();
    if b.len() <= a.len() {
        return None;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    if prefix + suffix != a.len() {
        return None;
    }
    let anchor_at = a[..prefix].iter().rposition(|l| !l.trim().is_empty())?;
    let mut added = &b[prefix..b.len() - suffix];
    // Blank lines at either end of the run are spacing: those before it join the gap after
    // the anchor, those after it are the file's own.
    let leading = added.iter().take_while(|l| l.trim().is_empty()).count();
    added = &added[leading..];
    let trailing = added
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count();
    added = &added[..added.len() - trailing];
    (!added.is_empty()).then(|| Insertion {
        anchor: a[anchor_at],
        gap: prefix - anchor_at - 1 + leading,
        added: added.to_vec(),
    })
}

/// The indentation of a non-blank line, in bytes.
fn indent_of(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    (!trimmed.trim_end().is_empty()).then(|| line.len() - trimmed.len())
}

/// The index of the file's line after which the added lines go: the anchor, when it is one
/// whole line of the file, the next line is not nested deeper than the insertion (it would
/// split a block), and the file does not hold the first added line already.
fn place(lines: &[&str], anchor: &str, indent: usize, added: &[&str]) -> Option<usize> {
    let same = |l: &str, want: &str| l.trim_end() == want.trim_end();
    let mut hits = lines.iter().enumerate().filter(|(_, l)| same(l, anchor));
    let (at, _) = hits.next()?;
    if hits.next().is_some() || lines.iter().any(|l| same(l, added[0])) {
        return None;
    }
    let next = lines[at + 1..].iter().find_map(|l| indent_of(l));
    next.is_none_or(|n| n <= indent).then_some(at)
}

/// The file's text with `added` after line `at`, `gap` blank lines between.
fn inserted(lines: &[&str], at: usize, gap: usize, added: &[&str]) -> String {
    let mut out: String = lines[..=at].concat();
    let ended = out.ends_with('\n');
    if !ended {
        out.push('\n');
    }
    out.push_str(&"\n".repeat(gap));
    for line in added {
        out.push_str(line);
        out.push('\n');
    }
    if !ended && at + 1 == lines.len() {
        out.pop();
    }
    out.push_str(&lines[at + 1..].concat());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESTS: &str = "import unittest\n\nfrom mathops import add, sub\n\n\nclass MathopsTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

    fn applied(file: &str, p: &Proposal) -> String {
        let old = p.arguments["old_str"].as_str().unwrap();
        let new = p.arguments["new_str"].as_str().unwrap();
        assert_eq!(file.matches(old).count(), 1, "old_str must be unique");
        file.replacen(old, new, 1)
    }

    /// The 1.5B model's own call, from the add_function eval task.
    #[test]
    fn a_method_added_to_an_imagined_class_goes_after_the_line_it_follows() {
        let old_str = "    def mul(a, b):\n        return a * b\n\n\ndef test_mathops(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n\nif __name__ == '__main__':\n    unittest.main()";
        let new_str = "    def mul(a, b):\n        return a * b\n\n\ndef test_mathops(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\nif __name__ == '__main__':\n    unittest.main()";
        let p = anchored_insert("test_mathops.py", TESTS, old_str, new_str).expect("an insert");
        assert_eq!(p.tool, "str_replace");
        assert!(p.what.contains("`test_mul`"), "{}", p.what);
        let after = applied(TESTS, &p);
        assert_eq!(
            after,
            TESTS.replace(
                "        self.assertEqual(sub(5, 3), 2)\n",
                "        self.assertEqual(sub(5, 3), 2)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
            )
        );
    }

    /// The 1.5B model's call in another run: a method of its own making "replaced" by the
    /// one it meant to add.
    #[test]
    fn a_method_that_replaces_an_invented_one_is_added_to_the_class() {
        let old_str = "    def mul(self):\n        self.assertEqual(mul(2, 3), 5)\n";
        let new_str = "    def mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
        let p = anchored_insert("test_mathops.py", TESTS, old_str, new_str).expect("an add");
        assert_eq!(
            applied(TESTS, &p),
            TESTS.replace(
                "        self.assertEqual(sub(5, 3), 2)\n",
                "        self.assertEqual(sub(5, 3), 2)\n\n    def mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
            )
        );
        // A function the file has is a real replacement: left to the tool.
        let old_str = "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 9)\n";
        let new_str = "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";
        assert_eq!(
            anchored_insert("test_mathops.py", TESTS, old_str, new_str),
            None
        );
        // Top-level functions go where new definitions go.
        let file = "def add(a, b):\n    return a + b\n\n\nif __name__ == \"__main__\":\n    print(add(1, 2))\n";
        let p = anchored_insert(
            "m.py",
            file,
            "def mul(a, b):\n    pass\n",
            "def mul(a, b):\n    return a * b\n",
        )
        .expect("an add");
        assert_eq!(
            applied(file, &p),
            "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\nif __name__ == \"__main__\":\n    print(add(1, 2))\n"
        );
        // Two classes: no place is clear.
        let two = format!("{TESTS}\n\nclass Other:\n    def f(self):\n        pass\n");
        let (old_str, new_str) = (
            "    def mul(self):\n        pass\n",
            "    def mul(self):\n        return 1\n",
        );
        assert_eq!(anchored_insert("t.py", &two, old_str, new_str), None);
    }

    #[test]
    fn a_quote_the_file_holds_is_left_to_the_tool() {
        let old_str = "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";
        let new_str = "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
        assert_eq!(
            anchored_insert("test_mathops.py", TESTS, old_str, new_str),
            None
        );
    }

    #[test]
    fn a_call_that_changes_a_line_as_well_is_not_an_insertion() {
        let old_str = "class T:\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";
        let new_str = "class T:\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 3)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
        assert_eq!(
            anchored_insert("test_mathops.py", TESTS, old_str, new_str),
            None
        );
    }

    #[test]
    fn statements_are_not_definitions() {
        let old_str = "class T:\n        self.assertEqual(sub(5, 3), 2)\n";
        let new_str = "class T:\n        self.assertEqual(sub(5, 3), 2)\n        self.assertEqual(sub(1, 1), 0)\n";
        assert_eq!(
            anchored_insert("test_mathops.py", TESTS, old_str, new_str),
            None
        );
    }

    #[test]
    fn a_line_the_file_holds_twice_or_not_at_all_is_no_place() {
        let file = "def a():\n    return 1\n\n\ndef b():\n    return 1\n";
        let add = "\n\ndef c():\n    return 3\n";
        let twice = "def z():\n    return 1\n";
        assert_eq!(
            anchored_insert("m.py", file, twice, &format!("{twice}{add}")),
            None
        );
        let absent = "def z():\n    return 9\n";
        assert_eq!(
            anchored_insert("m.py", file, absent, &format!("{absent}{add}")),
            None
        );
    }

    #[test]
    fn a_definition_is_not_put_inside_a_block_that_goes_on() {
        let file = "class T:\n    def a(self):\n        x = 1\n        return x\n";
        // The model's quote ends at `x = 1`; the file's next line is still `a`'s body.
        let old_str = "class U:\n        x = 1\n";
        let new_str = "class U:\n        x = 1\n\n    def b(self):\n        return 2\n";
        assert_eq!(anchored_insert("t.py", file, old_str, new_str), None);
    }

    #[test]
    fn a_definition_the_file_has_already_is_not_added_again() {
        let old_str = "class T:\n        self.assertEqual(sub(5, 3), 2)\n";
        let new_str = "class T:\n        self.assertEqual(sub(5, 3), 2)\n\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
        assert_eq!(
            anchored_insert("test_mathops.py", TESTS, old_str, new_str),
            None
        );
    }

    #[test]
    fn a_function_goes_after_the_last_line_of_a_file_without_a_final_newline() {
        let file = "fn a() -> u32 {\n    1\n}";
        let old_str = "fn a() -> u64 {\n    1\n}\n";
        let new_str = "fn a() -> u64 {\n    1\n}\n\nfn b() -> u32 {\n    2\n}\n";
        let p = anchored_insert("lib.rs", file, old_str, new_str).expect("an insert");
        assert_eq!(
            applied(file, &p),
            "fn a() -> u32 {\n    1\n}\n\nfn b() -> u32 {\n    2\n}"
        );
    }
}
