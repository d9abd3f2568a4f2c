//! Functions a task asks for that no file defines yet (`Add a function `mul(a, b)` to
//! mathops.py`): the 1.5B model, told only "make the change", changed `add`'s body instead of
//! adding `mul`. The nudge names what is missing and where it goes.

use crate::agent::code_blocks::{FileState, Lang, Workspace};
use crate::tools::files::units;

/// Names quoted in a task at the most.
const MAX_NAMES: usize = 3;

/// A sentence naming the functions the task quotes (`` `mul(a, b)` ``) that none of the
/// workspace's files of that language defines, and the file the task names to put them in;
/// `None` when there are none. `merges_parts`: a `write_file` of only the new function is
/// merged into the file it read (`code_blocks`), so the sentence may say so.
pub fn definitions_to_add(
    task: &str,
    named: &[String],
    ws: &dyn Workspace,
    merges_parts: bool,
) -> Option<String> {
    let target = source_target(named)?;
    let lang = Lang::of_path(target)?;
    let defined = defined_names(lang, ws);
    let missing: Vec<String> = quoted_calls(task)
        .into_iter()
        .filter(|n| !defined.contains(n))
        .take(MAX_NAMES)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let list = missing
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let how = if merges_parts {
        "write_file of that file with only the new code adds it and keeps the rest of the file \
         (or use str_replace)"
    } else {
        "use str_replace, keeping what the file has"
    };
    Some(format!(
        "The task asks for {list}, which no file defines yet: add it to {target} ({how}), \
         without changing the functions already there."
    ))
}

/// The first file of `named` that is source code and not a test: where new code goes.
pub(super) fn source_target(named: &[String]) -> Option<&String> {
    named.iter().find(|f| {
        let name = f.rsplit('/').next().unwrap_or(f);
        Lang::of_path(f).is_some() && !name.starts_with("test") && !name.contains("_test.")
    })
}

/// The nudge for a command-line option the task quotes (`` `--upper` ``) that none of the
/// workspace's sources has, once a change was made: the 1.5B model, asked for `--upper` on
/// greet.py, gave `greeting` an `upper` branch and never added the option to `main`'s
/// parser. `None` when every quoted option is there, or no source file is named.
pub fn option_not_added(task: &str, named: &[String], ws: &dyn Workspace) -> Option<String> {
    // The task is looked at first: most quote no option, and then no file is read.
    let options = quoted_options(task);
    if options.is_empty() {
        return None;
    }
    let target = source_target(named)?;
    let lang = Lang::of_path(target)?;
    let texts: Vec<String> = ws
        .sources(lang)
        .iter()
        .filter_map(|f| match ws.file(f) {
            FileState::Text(t) => Some(t),
            _ => None,
        })
        .collect();
    let option = options
        .into_iter()
        .find(|o| !texts.iter().any(|t| t.contains(o.as_str())))?;
    let parser = matches!(ws.file(target), FileState::Text(t) if t.contains(".add_argument("));
    let how = if parser {
        format!(
            " (`parser.add_argument(\"{option}\", action=\"store_true\")` beside the other \
             arguments)"
        )
    } else {
        String::new()
    };
    Some(format!(
        "[rein] The task asks for the option `{option}`, and no file has it yet. Read {target}, \
         add `{option}` where it reads its command-line arguments{how} and use it where the \
         task says, with str_replace; then run {target} with `{option}` to check it."
    ))
}

/// The long options a task writes in backticks: `` `--upper` ``.
pub(super) fn quoted_options(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for quoted in task.split('`').skip(1).step_by(2) {
        let Some(name) = quoted.trim().strip_prefix("--") else {
            continue;
        };
        let plain = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if plain && !out.iter().any(|o| o[2..] == *name) {
            out.push(format!("--{name}"));
        }
    }
    out
}

/// The nudge for a file the task asks to add something to that the run has not changed
/// (the 1.5B model added `mul` to mathops.py, said it had added its test, and stopped).
pub fn target_not_changed(file: &str, merges_parts: bool) -> String {
    let how = if merges_parts {
        "str_replace (or write_file with only the new code: rein keeps the rest of the file)"
    } else {
        "str_replace"
    };
    format!(
        "[rein] The task asks to add something to {file}, and you have not changed it yet. \
         Read it with read_file, add what the task asks with {how}, then run the check again."
    )
}

/// The files of `named` the task asks to add something to (`add a test for it to
/// test_x.py`): named after "to" in a clause that says "add". Other files a task names may
/// be there to be read or kept ("keep the tests in test_x.py passing").
pub fn added_to(task: &str, named: &[String]) -> Vec<String> {
    let lower = without_code(&task.to_lowercase());
    named
        .iter()
        .filter(|f| {
            let f = f.to_lowercase();
            [format!("to {f}"), format!("to `{f}`")].iter().any(|to| {
                lower.match_indices(to.as_str()).any(|(at, _)| {
                    let clause_start = lower[..at]
                        .rfind([',', ';', '(', ')', '\n'])
                        .max(lower[..at].rfind(". "))
                        .map_or(0, |i| i + 1);
                    lower[clause_start..at]
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w == "add")
                })
            })
        })
        .cloned()
        .collect()
}

/// `text` with the clause marks inside backticks (`,;()`) made blanks: a `mul(a, b)` there
/// splits no clause, and a quoted file name stays as it is.
fn without_code(text: &str) -> String {
    let mut inside = false;
    text.chars()
        .map(|c| match c {
            '`' => {
                inside = !inside;
                c
            }
            ',' | ';' | '(' | ')' if inside => ' ',
            _ => c,
        })
        .collect()
}

/// The names of functions a task writes in backticks as calls: `` `mul(a, b)` `` → `mul`.
fn quoted_calls(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for quoted in task.split('`').skip(1).step_by(2) {
        let Some((name, _)) = quoted.trim().split_once('(') else {
            continue;
        };
        let ident = name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if ident && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The names the workspace's `lang` files define: their top-level definitions, and Python
/// methods (a task quoting `test_add()` of a test class is not about a new function).
fn defined_names(lang: Lang, ws: &dyn Workspace) -> Vec<String> {
    let mut names = Vec::new();
    for file in ws.sources(lang) {
        let FileState::Text(text) = ws.file(&file) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for unit in units::units(lang, &lines) {
            names.extend(unit.key.rsplit(' ').next().map(str::to_string));
        }
        names.extend(text.lines().filter_map(|l| method_name(lang, l)));
    }
    names
}

/// The name an indented `def` line defines (Python), if `line` is one.
fn method_name(lang: Lang, line: &str) -> Option<String> {
    if lang != Lang::Python || !line.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix("async ")
        .unwrap_or(rest)
        .strip_prefix("def ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::code_blocks::tests::Mem;

    fn ws() -> Mem {
        Mem::new(&[
            ("mathops.py", "def add(a, b):\n    return a + b\n"),
            (
                "test_mathops.py",
                "class T:\n    def test_add(self):\n        pass\n",
            ),
        ])
    }

    fn named() -> Vec<String> {
        vec!["test_mathops.py".into(), "mathops.py".into()]
    }

    #[test]
    fn a_quoted_function_no_file_defines_is_named_with_the_file_to_add_it_to() {
        let task = "Add a function `mul(a, b)` to mathops.py and a test to test_mathops.py.";
        let s = definitions_to_add(task, &named(), &ws(), true).expect("a sentence");
        assert!(
            s.starts_with("The task asks for `mul`, which no file defines yet: add it to mathops.py (write_file"),
            "{s}"
        );
        let s = definitions_to_add(task, &named(), &ws(), false).expect("a sentence");
        assert!(s.contains("(use str_replace"), "{s}");
    }

    #[test]
    fn the_files_a_task_asks_to_add_to_are_those_after_to_in_a_clause_that_says_add() {
        let named = |t: &str| crate::agent::aids::named_files(t);
        let task = "Add a function `mul(a, b)` to mathops.py that returns the product of a \
                    and b, and add a unittest test for it to test_mathops.py. Run the tests.";
        assert_eq!(
            added_to(task, &named(task)),
            ["mathops.py", "test_mathops.py"]
        );
        let task = "Do these: (1) add a `--upper` option to greet.py that prints it, (2) add \
                    a unittest for it to test_greet.py, (3) document the option in README.md.";
        assert_eq!(added_to(task, &named(task)), ["greet.py", "test_greet.py"]);
        for task in [
            "The tests in test_calc.py fail. Find the bug in calc.py and fix it.",
            "Refactor shapes.py. Keep the tests in test_shapes.py passing.",
            "Add logging, then move the helper to util.py.",
            "Copy the header to out.txt, then add a footer.",
        ] {
            assert!(added_to(task, &named(task)).is_empty(), "{task}");
        }
    }

    #[test]
    fn a_quoted_option_no_source_has_is_named_with_the_parser_to_add_it_to() {
        let greet = "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n";
        let w = Mem::new(&[("greet.py", greet), ("README.md", "Use `--upper`.\n")]);
        let task = "(1) add a `--upper` option to greet.py, (2) document it in README.md.";
        let named = crate::agent::aids::named_files(task);
        let s = option_not_added(task, &named, &w).expect("a nudge");
        assert!(
            s.starts_with("[rein] The task asks for the option `--upper`, and no file has it yet. Read greet.py, add `--upper` where it reads its command-line arguments (`parser.add_argument(\"--upper\", action=\"store_true\")`"),
            "{s}"
        );
        let added = greet.replace(
            "\"name\")",
            "\"name\")\n    parser.add_argument(\"--upper\")",
        );
        let w = Mem::new(&[("greet.py", &added)]);
        assert_eq!(option_not_added(task, &named, &w), None);
        // No option quoted, or no source file named to put it in.
        let w = Mem::new(&[("greet.py", greet)]);
        assert_eq!(
            option_not_added("Add upper case to greet.py.", &named, &w),
            None
        );
        assert_eq!(option_not_added(task, &["README.md".into()], &w), None);
    }

    #[test]
    fn defined_names_methods_and_plain_words_are_not_asked_for() {
        let w = ws();
        for task in [
            "Fix `add(a, b)` in mathops.py.",
            "Make `test_add()` in mathops.py pass.",
            "Add `--upper` and `mul` to mathops.py.",
            "Add `x.y(1)` to mathops.py.",
        ] {
            assert_eq!(definitions_to_add(task, &named(), &w, true), None, "{task}");
        }
        // No source file named to put it in.
        let none: Vec<String> = vec!["test_mathops.py".into(), "notes.txt".into()];
        assert_eq!(
            definitions_to_add("Add `mul(a, b)`.", &none, &w, true),
            None
        );
    }
}
