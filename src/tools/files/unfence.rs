//! Code a model wrapped in a markdown fence as a file's whole content: the fence lines are
//! markdown, not part of the file (a small model wrote "```python" as the first line of a
//! `.py` file, which then failed to parse).

use std::path::Path;

/// What the tool's result says when it wrote a fence's inside.
pub(crate) const UNFENCED_NOTE: &str = "The text came inside a ``` fence; rein wrote only the \
     lines inside it (a fence is markdown, not part of the file)";

/// Files whose content may well be a fenced block as written.
const MARKUP: &[&str] = &[
    "md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org",
];

/// The lines inside `text` when all of it is one fenced block (an opening ```` ``` ```` line,
/// with or without a language, and a closing one, with no other fence between), for a file
/// `path` that is not markup; `None` otherwise.
pub(crate) fn unfence(path: &str, text: &str) -> Option<String> {
    let markup = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MARKUP.contains(&e.to_ascii_lowercase().as_str()));
    if markup {
        return None;
    }
    let trimmed = text.trim_end();
    let (open, rest) = trimmed.split_once('\n')?;
    let info = open.trim_end().strip_prefix("```")?;
    if !info
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+-._#".contains(c))
    {
        return None;
    }
    let inside = rest.strip_suffix("```")?;
    let inside = inside
        .strip_suffix('\n')
        .or(inside.is_empty().then_some(inside))?;
    if inside.lines().any(|l| l.trim_start().starts_with("```")) {
        return None;
    }
    let newline = if inside.is_empty() { "" } else { "\n" };
    Some(format!("{inside}{newline}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_fenced_block_becomes_its_inside() {
        let code = "def f():\n    return 1\n";
        for open in ["```python", "```", "```py ", "```c++"] {
            let fenced = format!("{open}\n{code}```");
            assert_eq!(unfence("a.py", &fenced).as_deref(), Some(code), "{open}");
            assert_eq!(
                unfence("script", &format!("{fenced}\n\n")).as_deref(),
                Some(code)
            );
        }
        assert_eq!(unfence("a.py", "```\n```").as_deref(), Some(""));
    }

    #[test]
    fn anything_else_is_left_as_written() {
        let code = "def f():\n    return 1\n";
        // Markup files may hold a fenced block as their content.
        assert_eq!(unfence("README.md", &format!("```python\n{code}```")), None);
        assert_eq!(unfence("notes.TXT", &format!("```\n{code}```")), None);
        // Not all of it fenced, two blocks, no closing fence, a fence mid-line.
        assert_eq!(unfence("a.py", &format!("# x\n```\n{code}```")), None);
        assert_eq!(unfence("a.py", &format!("```\n{code}```\n# x\n")), None);
        assert_eq!(
            unfence("a.py", &format!("```\n{code}```\n```\n{code}```")),
            None
        );
        assert_eq!(unfence("a.py", &format!("```python\n{code}")), None);
        assert_eq!(unfence("a.py", &format!("```python {{\n{code}```")), None);
        assert_eq!(unfence("a.py", &format!("x = '```'\n{code}")), None);
        assert_eq!(unfence("a.py", code), None);
    }
}
