//! A `write_file` that holds only part of an existing source file: the 1.5B model, asked to
//! add an option to `greeting`, wrote greet.py anew with `greeting` alone (`main` and the main
//! guard gone), and the issue's `calc.py` lost every function but the new one. Such a write
//! becomes the `str_replace` that merges its definitions into the file and keeps the rest.

use super::{Proposal, insert::dedent, replacement, units};
use crate::tools::files::unfence::unfence;
use serde_json::json;

/// Larger contents are written as they are (parsing them costs more than the aid is worth).
const MAX_COMPARED: usize = 256 << 10;

/// The call that `write_file` of `content` over `path`, which holds `old`, stands for when
/// the content is a few of the file's definitions (or new ones) and nothing else: a
/// `str_replace` merging them in. `None` for a whole new version, or content that is more
/// than definitions.
pub fn partial_write(path: &str, old: &str, content: &str) -> Option<Proposal> {
    let lang = units::Lang::of_path(path)?;
    if content.len() > MAX_COMPARED {
        return None;
    }
    let content = unfence(path, content).unwrap_or_else(|| content.to_string());
    let lines: Vec<&str> = content.lines().collect();
    if lang == units::Lang::Python && dedent(&lines).is_some_and(|(indent, _)| indent > 0) {
        return methods_write(path, old, &content);
    }
    let old_keys = keys(lang, old);
    let new_keys = keys(lang, &content);
    let kept = old_keys.iter().filter(|k| new_keys.contains(k)).count();
    let lost: Vec<&String> = old_keys.iter().filter(|k| !new_keys.contains(k)).collect();
    // Starting where the file starts and keeping half its definitions or more reads as a
    // new version that deletes some on purpose ("remove `foo`"); so does anything but
    // definitions and imports.
    let new_version = kept * 2 >= old_keys.len() && first_line(old) == first_line(&content);
    let imports = lost_imports(lang, old, &content);
    if (lost.is_empty() && imports.is_empty()) || new_keys.is_empty() || new_version {
        return None;
    }
    if !only_definitions(lang, &content) {
        return None;
    }
    let merged = units::merge(lang, old, &content)?;
    // The same part again (a model repeating its write): the edit that changes nothing, so
    // the tool says so, instead of a write that drops the rest.
    let (old_str, new_str) = replacement(old, &merged).or_else(|| {
        let same = unit_text(lang, old, &new_keys)?;
        Some((same.clone(), same))
    })?;
    let kept_names: Vec<String> = imports
        .iter()
        .map(|l| format!("`{l}`"))
        .chain(lost.iter().map(|k| units::shown_key(k)))
        .take(4)
        .collect();
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model's write_file held only part of {path}; made it a str_replace that \
             keeps the rest ({}).",
            kept_names.join(", ")
        ),
        arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
    })
}

/// A Python write holding only indented methods (`    def test_upper(self): …`): the 1.5B
/// model, told to add a test, wrote test_greet.py as the one new method and the file lost its
/// class, imports and main guard. The methods go into the file's one class (over the ones of
/// the same name, after the others), the rest of the file stays.
fn methods_write(path: &str, old: &str, content: &str) -> Option<Proposal> {
    let lines: Vec<&str> = content.lines().collect();
    let (_, dedented) = dedent(&lines)?;
    let dedented = dedented.join("\n");
    let methods = keys(units::Lang::Python, &dedented);
    if methods.is_empty()
        || methods.iter().any(|k| !k.starts_with("def "))
        || !only_definitions(units::Lang::Python, &dedented)
    {
        return None;
    }
    let lines: Vec<&str> = old.lines().collect();
    let mut classes = units::units(units::Lang::Python, &lines)
        .into_iter()
        .filter(|u| u.key.starts_with("class "));
    let class = classes.next().filter(|_| classes.next().is_none())?;
    let head = lines[class.head];
    // The class again with only these methods: merging it puts them in method by method.
    let merged = units::merge(units::Lang::Python, old, &format!("{head}\n{content}"))?;
    let (old_str, new_str) = replacement(old, &merged).or_else(|| {
        // The same methods again: the edit that changes nothing, so the tool says so.
        (old.matches(head).count() == 1).then(|| (head.to_string(), head.to_string()))
    })?;
    let names: Vec<String> = methods
        .iter()
        .map(|k| units::shown_key(k))
        .take(4)
        .collect();
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model's write_file held only methods ({}) of {}; made it a str_replace that \
             puts them into the class in {path} and keeps the rest of the file.",
            names.join(", "),
            units::shown_key(&class.key),
        ),
        arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
    })
}

/// The old file's top-level Python imports that the new content leaves out but still uses
/// a name of (`import argparse` gone, `argparse.ArgumentParser()` kept): the 1.5B model wrote
/// greet.py again from its first `def`.
fn lost_imports<'a>(lang: units::Lang, old: &'a str, new: &str) -> Vec<&'a str> {
    if lang != units::Lang::Python {
        return Vec::new();
    }
    let words: std::collections::HashSet<&str> = new
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    old.lines()
        .map(str::trim_end)
        .filter(|l| is_import(lang, l) && !new.lines().any(|n| n.trim_end() == *l))
        .filter(|l| imported_names(l).iter().any(|n| words.contains(n)))
        .collect()
}

/// The names an import line binds: `import a.b as c` → `c`, `import a.b` → `a`,
/// `from m import x, y as z` → `x`, `z`.
fn imported_names(line: &str) -> Vec<&str> {
    if let Some(rest) = line.strip_prefix("from ") {
        let Some((_, names)) = rest.split_once(" import ") else {
            return Vec::new();
        };
        return names.split(',').filter_map(bound_name).collect();
    }
    line.strip_prefix("import ")
        .map(|rest| rest.split(',').filter_map(bound_name).collect())
        .unwrap_or_default()
}

/// The name one part of an import binds (`a.b as c` → `c`, `a.b` → `a`).
fn bound_name(part: &str) -> Option<&str> {
    let part = part.trim().trim_matches(['(', ')']);
    let name = match part.split_once(" as ") {
        Some((_, alias)) => alias.trim(),
        None => part.split('.').next()?.trim(),
    };
    (!name.is_empty() && name != "*").then_some(name)
}

/// The first line of `text` that is not blank.
fn first_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty())
}

/// The keys of a text's top-level definitions.
fn keys(lang: units::Lang, text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    units::units(lang, &lines)
        .into_iter()
        .map(|u| u.key)
        .collect()
}

/// The text of `file`'s first definition among `keys`, when it occurs once in the file.
fn unit_text(lang: units::Lang, file: &str, keys: &[String]) -> Option<String> {
    let lines: Vec<&str> = file.lines().collect();
    let unit = units::units(lang, &lines)
        .into_iter()
        .find(|u| keys.contains(&u.key))?;
    let text = lines[unit.start..unit.end].join("\n");
    (file.matches(&text).count() == 1).then_some(text)
}

/// Whether every line of `text` outside its definitions is blank, a comment or an import.
pub(super) fn only_definitions(lang: units::Lang, text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let mut inside = vec![false; lines.len()];
    for u in units::units(lang, &lines) {
        inside[u.start..u.end].iter_mut().for_each(|b| *b = true);
    }
    lines.iter().zip(&inside).all(|(line, inside)| {
        let t = line.trim();
        *inside || t.is_empty() || is_comment(lang, t) || is_import(lang, t)
    })
}

fn is_comment(lang: units::Lang, t: &str) -> bool {
    match lang {
        units::Lang::Python | units::Lang::Shell => t.starts_with('#'),
        units::Lang::Rust | units::Lang::Js => t.starts_with("//"),
    }
}

fn is_import(lang: units::Lang, t: &str) -> bool {
    match lang {
        units::Lang::Python => t.starts_with("import ") || t.starts_with("from "),
        units::Lang::Rust => t.starts_with("use "),
        units::Lang::Js => t.starts_with("import "),
        units::Lang::Shell => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::code_blocks::tests::Mem;

    const GREET: &str = "import argparse\n\n\ndef greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    return text\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args(argv)\n    print(greeting(args.name))\n\n\nif __name__ == \"__main__\":\n    main()\n";

    fn applied(file: &str, old: &str, new: &str) -> String {
        assert_eq!(file.matches(old).count(), 1, "old_str must be unique");
        file.replacen(old, new, 1)
    }

    /// [`partial_write`] over the file `ws` holds at `path` (none: a new file).
    fn partial_write(path: &str, content: &str, ws: &Mem) -> Option<Proposal> {
        use crate::agent::code_blocks::{FileState, Workspace};
        match ws.file(path) {
            FileState::Text(old) => super::partial_write(path, &old, content),
            _ => None,
        }
    }

    fn ws() -> Mem {
        Mem::new(&[
            ("greet.py", GREET),
            (
                "mathops.py",
                "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            ),
        ])
    }

    #[test]
    fn a_write_of_one_changed_function_keeps_the_rest_of_the_file() {
        let content = "```python\ndef greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    if upper:\n        text = text.upper()\n    return text\n```";
        let p = partial_write("greet.py", content, &ws()).expect("a merge");
        assert_eq!(p.tool, "str_replace");
        let (old, new) = (
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        let after = applied(GREET, old, new);
        assert!(after.contains("        text = text.upper()\n"), "{after}");
        assert!(after.contains("def main(argv=None):"), "{after}");
        assert!(after.contains("if __name__ == \"__main__\":"), "{after}");
        assert!(p.what.contains("`main`"), "{}", p.what);
    }

    #[test]
    fn a_write_of_one_new_function_adds_it() {
        let content = "def mul(a, b):\n    return a * b\n";
        let p = partial_write("mathops.py", content, &ws()).expect("a merge");
        let file = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
        let after = applied(
            file,
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        assert_eq!(
            after,
            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
        );
    }

    #[test]
    fn a_write_of_a_test_class_with_a_new_method_adds_the_method() {
        let file = "import unittest\n\nfrom mathops import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
        let w = Mem::new(&[("test_m.py", file)]);
        let content = "from mathops import add, mul\n\n\nclass T(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
        let p = partial_write("test_m.py", content, &w).expect("a merge");
        let after = applied(
            file,
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        assert!(after.contains("    def test_add(self):"), "{after}");
        assert!(after.contains("    def test_mul(self):"), "{after}");
        assert!(after.contains("from mathops import add, mul"), "{after}");
        assert!(after.ends_with("    unittest.main()\n"), "{after}");
    }

    #[test]
    fn a_write_of_every_definition_without_the_imports_they_use_keeps_the_imports() {
        let content = GREET.replace("import argparse\n\n\n", "").replace(
            "    return text\n",
            "    return text.upper() if upper else text\n",
        );
        let p = partial_write("greet.py", &content, &ws()).expect("a merge");
        let after = applied(
            GREET,
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        assert!(after.starts_with("import argparse\n"), "{after}");
        assert!(
            after.contains("return text.upper() if upper else text"),
            "{after}"
        );
        assert!(p.what.contains("`import argparse`"), "{}", p.what);
        // An import no longer used may go.
        let unused = "def add(a, b):\n    return a + b\n";
        let file = "import os\n\n\ndef add(a, b):\n    return os.sep and a + b\n";
        let w = Mem::new(&[("m.py", file)]);
        assert_eq!(partial_write("m.py", unused, &w), None);
        assert_eq!(imported_names("from m import (x, y as z)"), ["x", "z"]);
        assert_eq!(imported_names("import a.b, c as d"), ["a", "d"]);
    }

    const TEST_GREET: &str = "import unittest\n\nfrom greet import greeting\n\n\nclass GreetTest(unittest.TestCase):\n    def test_plain(self):\n        self.assertEqual(greeting(\"ada\"), \"Hello, ada!\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

    #[test]
    fn a_write_of_only_an_indented_method_adds_it_to_the_one_class() {
        let w = Mem::new(&[("test_greet.py", TEST_GREET)]);
        // As the 1.5B model wrote it (todo_multi_step): the new method and nothing else.
        let content = "    def test_upper(self):\n        self.assertEqual(greeting('ada', True), 'HELLO, ADA!')\n";
        let p = partial_write("test_greet.py", content, &w).expect("a merge");
        assert_eq!(p.tool, "str_replace");
        let after = applied(
            TEST_GREET,
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        assert_eq!(
            after,
            TEST_GREET.replace(
                "Hello, ada!\")\n",
                "Hello, ada!\")\n\n    def test_upper(self):\n        self.assertEqual(greeting('ada', True), 'HELLO, ADA!')\n"
            )
        );
        assert!(
            p.what.contains("`test_upper`") && p.what.contains("`GreetTest`"),
            "{}",
            p.what
        );
        // Indented by 2 and fenced, replacing the method of the same name: level for level.
        let content =
            "```python\n  def test_plain(self):\n    self.assertTrue(greeting('ada'))\n```";
        let p = partial_write("test_greet.py", content, &w).expect("a merge");
        let after = applied(
            TEST_GREET,
            p.arguments["old_str"].as_str().unwrap(),
            p.arguments["new_str"].as_str().unwrap(),
        );
        assert!(
            after.contains("    def test_plain(self):\n        self.assertTrue(greeting('ada'))\n"),
            "{after}"
        );
        assert!(!after.contains("Hello, ada!"), "{after}");
        assert!(after.ends_with("    unittest.main()\n"), "{after}");
        // The same method again changes nothing.
        let same = "    def test_plain(self):\n        self.assertEqual(greeting(\"ada\"), \"Hello, ada!\")\n";
        let p = partial_write("test_greet.py", same, &w).expect("an edit");
        assert_eq!(p.arguments["old_str"], p.arguments["new_str"]);
    }

    #[test]
    fn indented_code_that_is_not_only_methods_of_one_class_stays_a_write() {
        let w = Mem::new(&[("test_greet.py", TEST_GREET)]);
        // A statement among the methods.
        let stray = "    def test_upper(self):\n        pass\n    print('x')\n";
        assert_eq!(partial_write("test_greet.py", stray, &w), None);
        // An indented class is not a method.
        let nested = "    class Inner:\n        pass\n";
        assert_eq!(partial_write("test_greet.py", nested, &w), None);
        // Two classes: which one is not clear.
        let two = format!("{TEST_GREET}\n\nclass Other:\n    def a(self):\n        pass\n");
        let w = Mem::new(&[("t.py", two.as_str())]);
        assert_eq!(
            partial_write("t.py", "    def b(self):\n        pass\n", &w),
            None
        );
        // No class at all.
        assert_eq!(
            partial_write("mathops.py", "    def b(self):\n        pass\n", &ws()),
            None
        );
    }

    #[test]
    fn the_same_part_again_is_an_edit_that_changes_nothing() {
        let part =
            "def greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    return text\n";
        let p = partial_write("greet.py", part, &ws()).expect("an edit");
        assert_eq!(p.arguments["old_str"], p.arguments["new_str"]);
        assert_eq!(p.arguments["old_str"], part.trim_end());
    }

    #[test]
    fn whole_files_new_files_deletions_and_scripts_stay_writes() {
        let w = ws();
        // A new file.
        assert_eq!(partial_write("new.py", "def f():\n    pass\n", &w), None);
        // The whole file again, changed.
        let whole = GREET.replace("return text", "return text.upper()");
        assert_eq!(partial_write("greet.py", &whole, &w), None);
        // One of two functions deleted on purpose: half is kept.
        let one = "def add(a, b):\n    return a + b\n";
        assert_eq!(partial_write("mathops.py", one, &w), None);
        // Code outside any definition: a script, not a part of the file.
        let script = "def mul(a, b):\n    return a * b\n\nprint(mul(2, 3))\n";
        assert_eq!(partial_write("mathops.py", script, &w), None);
        // Not a language rein parses.
        let notes = Mem::new(&[("notes.txt", "a\nb\n")]);
        assert_eq!(
            partial_write("notes.txt", "def f():\n    pass\n", &notes),
            None
        );
    }
}
