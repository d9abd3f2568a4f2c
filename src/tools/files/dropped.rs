//! A whole-file write that loses top-level definitions the file had: a model that meant to
//! add one function wrote the file anew with only that function (`main` and the imports
//! gone), then ran nothing that noticed.

use super::units::{Lang, shown_key, units};

/// The most names a note lists.
const MAX_NAMES: usize = 5;

/// Larger texts are not compared (a generated file, a bundle: parsing costs more than the
/// note is worth there).
const MAX_COMPARED: usize = 256 << 10;

/// A note naming the top-level definitions (functions, classes, a Python main guard…) `old`
/// had and `new` does not, for a source file the definition parser knows; `None` when none
/// went.
pub(crate) fn note(path: &str, old: &str, new: &str) -> Option<String> {
    let lang = Lang::of_path(path)?;
    if old.len().max(new.len()) > MAX_COMPARED {
        return None;
    }
    let kept = definitions(lang, new);
    let gone: Vec<String> = definitions(lang, old)
        .into_iter()
        .filter(|key| !kept.contains(key))
        .collect();
    if gone.is_empty() {
        return None;
    }
    let mut names: Vec<String> = gone.iter().take(MAX_NAMES).map(|k| shown_key(k)).collect();
    if gone.len() > MAX_NAMES {
        names.push(format!("and {} more", gone.len() - MAX_NAMES));
    }
    Some(format!(
        "Note: {path} no longer defines {}, which it did before this write. If you meant to \
         change only part of the file, write it again with them kept (or use str_replace).",
        names.join(", ")
    ))
}

/// Why a write of a few loose lines over a source file with definitions is not made (for a
/// small model: `small_model` aid `code_blocks`): the 1.5B model wrote the one line a nudge
/// named (`parser.add_argument(...)`) as the whole of greet.py, and then of test_greet.py.
/// `None` when `new` defines something, or is not a small part of `old`'s length.
pub(crate) fn fragment_refusal(path: &str, old: &str, new: &str) -> Option<String> {
    let lang = Lang::of_path(path)?;
    if old.len().max(new.len()) > MAX_COMPARED || !definitions(lang, new).is_empty() {
        return None;
    }
    let gone = definitions(lang, old);
    let count = |t: &str| t.lines().filter(|l| !l.trim().is_empty()).count();
    let (old_lines, new_lines) = (count(old), count(new));
    // A quarter of the file or more may be a new version of it (a module made a script).
    if gone.is_empty() || new_lines * 4 >= old_lines {
        return None;
    }
    let names: Vec<String> = gone.iter().take(MAX_NAMES).map(|k| shown_key(k)).collect();
    Some(format!(
        "Not written: this would replace all {old_lines} lines of {path} (with {}) by \
         {new_lines} line{}. To add lines to it, use str_replace: old_str is the line they go \
         after, copied from the file, and new_str is that line followed by yours. To replace \
         the whole file, write all of its new content.",
        names.join(", "),
        if new_lines == 1 { "" } else { "s" },
    ))
}

/// The keys of `source`'s top-level definitions (`def main`, `fn run`), each once.
fn definitions(lang: Lang, source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut keys: Vec<String> = Vec::new();
    for unit in units(lang, &lines) {
        if !keys.contains(&unit.key) {
            keys.push(unit.key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "import argparse\n\n\ndef greeting(name):\n    return name\n\n\n\
                       async def fetch():\n    pass\n\n\nclass Greeter:\n    def hello(self):\n        \
                       pass\n\n\ndef main():\n    print(greeting('x'))\n";

    #[test]
    fn top_level_definitions_a_write_drops_are_named() {
        let new = "def greeting(name, upper=False):\n    return name.upper() if upper else name\n";
        let note = note("greet.py", OLD, new).unwrap();
        assert!(
            note.contains("greet.py no longer defines `fetch`, `Greeter`, `main`,"),
            "{note}"
        );
        assert!(
            !note.contains("`greeting`") && !note.contains("`hello`"),
            "{note}"
        );
    }

    #[test]
    fn other_languages_and_the_main_guard_are_named_too() {
        let old = "fn run() {}\n\nfn helper() {}\n";
        let rust = note("src/lib.rs", old, "fn run() {}\n").unwrap();
        assert!(rust.contains("no longer defines `helper`,"), "{rust}");
        let old = "def main():\n    pass\n\n\nif __name__ == \"__main__\":\n    main()\n";
        let guard = note("app.py", old, "def main():\n    pass\n").unwrap();
        assert!(guard.contains("`if __name__ == \"__main__\"`"), "{guard}");
    }

    #[test]
    fn nothing_is_said_when_every_definition_stays_or_for_other_files() {
        let grown = format!("{OLD}\n\ndef mul(a, b):\n    return a * b\n");
        assert_eq!(note("greet.py", OLD, &grown), None);
        assert_eq!(note("greet.txt", OLD, "x"), None);
        assert_eq!(note("new.py", "", "def f():\n    pass\n"), None);
        let huge = format!("{OLD}{}", "# filler\n".repeat(MAX_COMPARED / 9 + 1));
        assert_eq!(note("greet.py", &huge, ""), None);
    }

    #[test]
    fn a_few_loose_lines_over_a_file_with_definitions_are_refused() {
        let line = "parser.add_argument(\"--upper\", action=\"store_true\")\n";
        let why = fragment_refusal("greet.py", OLD, line).unwrap();
        assert!(why.starts_with("Not written:"), "{why}");
        assert!(
            why.contains("lines of greet.py (with `greeting`, `fetch`"),
            "{why}"
        );
        assert!(why.contains("by 1 line."), "{why}");
        // Definitions, a quarter of the file, a file without definitions, another kind.
        assert_eq!(
            fragment_refusal("greet.py", OLD, "def f():\n    pass\n"),
            None
        );
        let script = "import sys\nprint(sys.argv)\nprint(1)\nprint(2)\n";
        assert_eq!(fragment_refusal("greet.py", OLD, script), None);
        assert_eq!(
            fragment_refusal("run.py", "print(1)\nprint(2)\n", line),
            None
        );
        assert_eq!(fragment_refusal("greet.txt", OLD, line), None);
    }

    #[test]
    fn a_long_list_is_capped() {
        let old: String = (0..8).map(|i| format!("def f{i}():\n    pass\n")).collect();
        let note = note("m.py", &old, "").unwrap();
        assert!(note.contains("`f4`, and 3 more,"), "{note}");
    }
}
