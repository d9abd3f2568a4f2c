//! A whole-file write that loses top-level definitions the file had: a model that meant to
//! add one function wrote the file anew with only that function (`main` and the imports
//! gone), then ran nothing that noticed.

/// The most names a note lists.
const MAX_NAMES: usize = 5;

/// A note naming the top-level Python functions and classes `old` defined and `new` does
/// not, for a `.py` file; `None` when none went (or for other files).
pub(crate) fn note(path: &str, old: &str, new: &str) -> Option<String> {
    if !path.ends_with(".py") {
        return None;
    }
    let kept = definitions(new);
    let gone: Vec<&str> = definitions(old)
        .into_iter()
        .filter(|name| !kept.contains(name))
        .collect();
    if gone.is_empty() {
        return None;
    }
    let mut names: Vec<String> = gone
        .iter()
        .take(MAX_NAMES)
        .map(|n| format!("`{n}`"))
        .collect();
    if gone.len() > MAX_NAMES {
        names.push(format!("and {} more", gone.len() - MAX_NAMES));
    }
    Some(format!(
        "Note: {path} no longer defines {}, which it did before this write. If you meant to \
         change only part of the file, write it again with them kept (or use str_replace).",
        names.join(", ")
    ))
}

/// The names of `def`, `async def` and `class` statements at the start of a line.
fn definitions(source: &str) -> Vec<&str> {
    let mut names = Vec::new();
    for line in source.lines() {
        let rest = ["def ", "async def ", "class "]
            .iter()
            .find_map(|kw| line.strip_prefix(kw));
        let Some(rest) = rest else { continue };
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
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
    fn nothing_is_said_when_every_definition_stays_or_for_other_files() {
        let grown = format!("{OLD}\n\ndef mul(a, b):\n    return a * b\n");
        assert_eq!(note("greet.py", OLD, &grown), None);
        assert_eq!(note("greet.txt", OLD, "x"), None);
        assert_eq!(note("new.py", "", "def f():\n    pass\n"), None);
    }

    #[test]
    fn a_long_list_is_capped() {
        let old: String = (0..8).map(|i| format!("def f{i}():\n    pass\n")).collect();
        let note = note("m.py", &old, "").unwrap();
        assert!(note.contains("`f4`, and 3 more,"), "{note}");
    }
}
