//! A document a small model shows instead of writing: the 1.5B model, asked to document an
//! option in README.md, answered "Here's the updated `README.md` file:" and the whole README
//! in a ```` ```markdown ```` block, and the turn ended with the file unchanged. Such a block
//! becomes the edit of that document: a new file, or a new version of one whose title it
//! keeps.

use super::{Block, FileState, Proposal, Workspace, path_tokens, replacement};
use serde_json::json;

/// Documents larger than this are left alone (a new version of a long document shown in an
/// answer is more likely an excerpt).
const MAX_DOC: usize = 32 * 1024;

/// Whether a block's info string says it is Markdown.
pub(super) fn is_markdown_info(info: &str) -> bool {
    let word = info.split([' ', ':', '{']).next().unwrap_or_default();
    ["markdown", "md"].contains(&word.to_ascii_lowercase().as_str())
}

/// Whether `path` is a document a task may name and a small model should see: Markdown,
/// reStructuredText or plain text.
pub(super) fn is_doc_path(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && ["md", "markdown", "rst", "txt"].contains(&ext)
    })
}

/// The edit a Markdown block stands for: the document the answer names just before it (or
/// the one the person's message names) written anew when missing, or replaced when the block
/// starts with the document's own title. `None` when the target or the claim is unclear.
pub(super) fn doc_edit(block: &Block<'_>, message: &str, ws: &dyn Workspace) -> Option<Proposal> {
    let path = doc_target(&block.prose, message)?;
    let mut content = block.body.join("\n");
    if content.trim().is_empty() || content.len() > MAX_DOC {
        return None;
    }
    content.push('\n');
    match ws.file(&path) {
        FileState::Missing => Some(Proposal {
            tool: "write_file",
            what: format!(
                "The model showed the new document {path} instead of writing it; made it a \
                 write_file call."
            ),
            arguments: json!({ "path": path, "content": content }),
        }),
        FileState::Text(old) if old.len() <= MAX_DOC && same_title(&old, &content) => {
            let (old_str, new_str) = replacement(&old, &content)?;
            Some(Proposal {
                tool: "str_replace",
                what: format!(
                    "The model showed a new version of {path} instead of writing it; made it \
                     a str_replace call."
                ),
                arguments: json!({ "path": path, "old_str": old_str, "new_str": new_str }),
            })
        }
        _ => None,
    }
}

/// The Markdown document named in the last two lines of prose before the block, else the
/// one the message names (when it names one).
fn doc_target(prose: &str, message: &str) -> Option<String> {
    let is_md = |p: &String| p.ends_with(".md") || p.ends_with(".markdown");
    let tail: Vec<&str> = prose.lines().rev().take(2).collect();
    if let Some(p) = tail
        .iter()
        .flat_map(|l| path_tokens(l).into_iter().rev())
        .find(is_md)
    {
        return Some(p);
    }
    let mut named = path_tokens(message).into_iter().filter(is_md);
    let first = named.next()?;
    named.all(|p| p == first).then_some(first)
}

/// Whether both texts start with the same first line, letter case aside (`# greet` and
/// `# Greet`): the block is a version of this document, not some other text.
fn same_title(old: &str, new: &str) -> bool {
    let first = |t: &str| {
        t.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_lowercase)
    };
    first(old).is_some() && first(old) == first(new)
}

#[cfg(test)]
mod tests {
    use super::super::{proposals, tests::Mem};

    const README: &str = "# greet\n\nUsage: `python3 greet.py NAME`\n";

    /// The 1.5B model's answer in todo_multi_step, its inner fence and all.
    const ANSWER: &str = "To document the `--upper` option in README.md, we need to add a new section to the file. Here's the updated `README.md` file:\n\n```markdown\n# Greet\n\nThis program greets you.\n\n## Usage\n\n```bash\npython greet.py [name] [--upper]\n```\n\n- `--upper`: If specified, the greeting will be in upper case.\n```\n\nNow, we can run it:\n\n```bash\npython greet.py --upper ada\n```\n";

    const TASK: &str = "(3) document the option in README.md.";

    #[test]
    fn a_readme_shown_with_its_title_becomes_its_new_version_inner_fences_and_all() {
        let mut ws = Mem::new(&[("README.md", README)]);
        let props = proposals(ANSWER, TASK, &ws);
        let tools: Vec<&str> = props.iter().map(|p| p.tool).collect();
        assert_eq!(tools, ["str_replace", "bash"], "{props:#?}");
        assert_eq!(props[1].arguments["command"], "python greet.py --upper ada");
        ws.apply(&props);
        let after = ws.text("README.md");
        assert!(after.starts_with("# Greet\n"), "{after}");
        assert!(
            after.contains("```bash\npython greet.py [name] [--upper]\n```\n\n- `--upper`"),
            "{after}"
        );
        assert!(after.ends_with("upper case.\n"), "{after}");
    }

    #[test]
    fn a_new_document_is_written_and_another_documents_text_is_not() {
        let ws = Mem::new(&[]);
        let props = proposals(ANSWER, TASK, &ws);
        assert_eq!(props[0].tool, "write_file");
        assert_eq!(props[0].arguments["path"], "README.md");
        // A README with another title: the block may be an excerpt or another text.
        let ws = Mem::new(&[("README.md", "# Project\n\nLong text.\n")]);
        let props = proposals(ANSWER, TASK, &ws);
        assert!(props.iter().all(|p| p.tool == "bash"), "{props:#?}");
        // No document named anywhere: nothing to write.
        let unnamed = "Here is how it reads:\n\n```markdown\n# greet\n\nText.\n```\n";
        let ws = Mem::new(&[("README.md", README)]);
        assert!(proposals(unnamed, "add a flag", &ws).is_empty());
        // The message names the one document.
        let props = proposals(unnamed, TASK, &ws);
        assert_eq!(props.len(), 1, "{props:#?}");
        assert_eq!(props[0].arguments["path"], "README.md");
    }
}
