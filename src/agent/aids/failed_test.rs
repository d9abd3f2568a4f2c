//! A test that fails on its assertion: the 1.5B model's `greeting` gave 'Hello, ADA!' for
//! `upper=True` and its own new test expected 'HELLO, ADA!'. Told only that the error points
//! at test_greet.py line 11 (the test, which was right), it stopped. The note names the
//! function the assertion checks and the module that defines it.

use std::path::Path;

/// Calls in an assertion line that are not the code under test.
const BUILTINS: &[&str] = &[
    "len",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "sorted",
    "sum",
    "min",
    "max",
    "abs",
    "round",
    "repr",
    "bool",
    "print",
    "range",
    "type",
    "isinstance",
];

/// The longest assertion message quoted back.
const MAX_SHOWN: usize = 160;

/// The next step after a Python test's `AssertionError` at `file` line `line` (a test file):
/// fix the workspace function the failing line calls, in the module the test imports it
/// from. `None` when the failure is not an assertion, or its function is not found.
pub(super) fn failed_assertion(
    output: &str,
    exit_code: i32,
    workspace: &Path,
    file: &str,
    line: u32,
) -> Option<String> {
    let name = file.rsplit('/').next().unwrap_or(file);
    if !(name.starts_with("test") || name.contains("_test.")) || !name.ends_with(".py") {
        return None;
    }
    let assertion = output
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("AssertionError"))?;
    let source = super::read_module(workspace, file)?;
    let checked = source
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let (function, (_, module)) = called_functions(checked)
        .into_iter()
        .find_map(|f| Some((f, super::import_defining(workspace, file, f)?)))?;
    let shown: String = crate::sanitize::visible_line(assertion)
        .chars()
        .take(MAX_SHOWN)
        .collect();
    let function = crate::sanitize::visible_line(function);
    Some(format!(
        "[rein] The command failed (exit {exit_code}). The test at {file} line {line} checks \
         `{function}`, and it gave something else ({shown}). The test says what the task \
         asks: read {module} with read_file and fix `{function}` there with str_replace (not \
         the test, unless the task says the test is wrong), then run the command again."
    ))
}

/// The plain functions a line calls, in order: `name(` not after a `.` (methods such as
/// `self.assertEqual` are not the code under test), builtins left out.
fn called_functions(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices('(') {
        let before = &line[..i];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let name = &before[start..];
        let method = before[..start].ends_with('.');
        let plain = name.starts_with(|c: char| c.is_alphabetic() || c == '_');
        if plain && !method && !BUILTINS.contains(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = ".F\n======================================================================\nFAIL: test_upper (__main__.GreetTest.test_upper)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/WS/test_greet.py\", line 11, in test_upper\n    self.assertEqual(greeting(\"ada\", upper=True), \"HELLO, ADA!\")\nAssertionError: 'Hello, ADA!' != 'HELLO, ADA!'\n- Hello, ADA!\n+ HELLO, ADA!\n\n\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let tests = "import unittest\n\nfrom greet import greeting\n\n\nclass GreetTest(unittest.TestCase):\n    def test_plain(self):\n        self.assertEqual(greeting(\"ada\"), \"Hello, ada!\")\n\n    def test_upper(self):\n        self.assertEqual(greeting(\"ada\", upper=True), \"HELLO, ADA!\")\n";
        std::fs::write(dir.path().join("test_greet.py"), tests).unwrap();
        let greet = "def greeting(name, upper=False):\n    return f\"Hello, {name.upper() if upper else name}!\"\n";
        std::fs::write(dir.path().join("greet.py"), greet).unwrap();
        dir
    }

    #[test]
    fn a_failed_assertion_names_the_function_it_checks_and_its_module() {
        let ws = workspace();
        let output = OUTPUT.replace("/WS", &ws.path().to_string_lossy());
        let note = super::super::after_failure(&output, 1, ws.path());
        assert_eq!(
            note,
            "[rein] The command failed (exit 1). The test at test_greet.py line 11 checks \
             `greeting`, and it gave something else (AssertionError: 'Hello, ADA!' != \
             'HELLO, ADA!'). The test says what the task asks: read greet.py with read_file \
             and fix `greeting` there with str_replace (not the test, unless the task says \
             the test is wrong), then run the command again."
        );
    }

    #[test]
    fn other_failures_and_lines_without_a_workspace_function_get_the_plain_note() {
        let ws = workspace();
        let root = ws.path().to_string_lossy().to_string();
        // Not an assertion.
        let error = OUTPUT
            .replace("/WS", &root)
            .replace("AssertionError", "KeyError");
        // A line that calls only methods and builtins.
        let builtins = OUTPUT.replace("/WS", &root).replace("line 11", "line 8");
        std::fs::write(
            ws.path().join("test_greet.py"),
            "import unittest\n\nfrom greet import greeting\n\n\nclass T(unittest.TestCase):\n    def test_len(self):\n        self.assertEqual(len(\"ab\"), 3)\n",
        )
        .unwrap();
        for output in [error, builtins] {
            let note = super::super::after_failure(&output, 1, ws.path());
            assert!(
                note.contains("The error points at test_greet.py line"),
                "{note}"
            );
        }
        assert_eq!(
            called_functions("self.assertEqual(greeting(\"a\", x=len(y)), fmt(2))"),
            ["greeting", "fmt"]
        );
    }
}
