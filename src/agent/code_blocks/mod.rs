//! Code a small model shows instead of writing (`small_model` aid `code_blocks`): the fenced
//! blocks of an answer that ends a change request without a call become the edits they
//! describe, as ordinary tool calls (`str_replace`, `write_file`, `bash`) that the permission
//! layer rates and the person reviews like any other. Aider's whole-file and function-level
//! edit formats showed that weak models edit better this way than through tool calls.

mod beside;
mod claimed;
mod docs;
mod insert;
mod partial;
mod shape;

pub(crate) use beside::beside_its_kind;
pub(crate) use insert::anchored_insert;
pub(crate) use partial::partial_write;
pub(crate) use shape::left_by_rename;

use crate::tools::files::units;
pub use crate::tools::files::units::Lang;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// What a file of the workspace holds, as rein may read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileState {
    /// No file by that name.
    Missing,
    /// A text file.
    Text(String),
    /// Anything rein will not merge into (binary, too large, refused, a directory).
    Other,
}

/// The workspace as the conversion sees it.
pub trait Workspace {
    /// What `path` (relative to the workspace) holds.
    fn file(&self, path: &str) -> FileState;
    /// The workspace's source files of `lang` (relative paths, a bounded number).
    fn sources(&self, lang: Lang) -> Vec<String>;
}

/// A tool call made from a block.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The tool: `str_replace`, `write_file` or `bash`.
    pub tool: &'static str,
    /// Its arguments.
    pub arguments: Value,
    /// One sentence for the person and the session file.
    pub what: String,
}

/// One fenced block of an answer and the prose before it.
struct Block<'a> {
    info: &'a str,
    body: Vec<&'a str>,
    prose: String,
}

/// The tool calls that the answer's code blocks describe, in their order: edits of the
/// files they name (or whose definitions they repeat), new files the answer or the person's
/// message names, and short shell commands to run; without blocks, the one-line changes the
/// answer says it made and did not (see `claimed`).
pub fn proposals(answer: &str, message: &str, ws: &dyn Workspace) -> Vec<Proposal> {
    let mut out: Vec<Proposal> = Vec::new();
    let mut edited = BTreeSet::new();
    for block in fences(answer) {
        if docs::is_markdown_info(block.info) {
            if let Some(p) = docs::doc_edit(&block, message, ws)
                && edited.insert(p.arguments["path"].to_string())
            {
                out.push(p);
            }
            continue;
        }
        let lang = block
            .info
            .split([' ', ':', '{'])
            .next()
            .and_then(Lang::of_info);
        let (named, body) = named_target(&block);
        if named.is_none() && lang == Some(Lang::Shell) && is_command(&body) {
            out.push(command(&body));
            continue;
        }
        // Only a block that says what it is may stand for a whole file (an untyped block
        // after a sentence naming a script could be anything, a JSON plan for one).
        let typed = lang.is_some() || named.is_some();
        // (path, named by the answer or the message, named by the answer)
        let target = named
            .or_else(|| prose_target(&block.prose, lang))
            .map(|p| (p, true, true))
            .or_else(|| defining_file(lang, &body, ws).map(|p| (p, false, false)))
            .or_else(|| message_target(message, lang, ws).map(|p| (p, true, false)));
        let Some((path, explicit, in_answer)) = target else {
            continue;
        };
        let Some(lang) = lang.or_else(|| Lang::of_path(&path)) else {
            continue;
        };
        let claim = Claim {
            names_file: explicit,
            in_answer,
            whole: explicit && typed,
        };
        if !edited.contains(&path)
            && let Some(p) = edit(&path, lang, &body.join("\n"), claim, ws)
        {
            edited.insert(path);
            out.push(p);
        }
    }
    if out.is_empty() {
        // No code shown: a line change the answer claims in words is the edit it names.
        out = claimed::claimed_line_edits(answer, ws);
    }
    out
}

/// Files read for a small model before its first step, at the most.
const MAX_NAMED: usize = 3;

/// Largest file read for a small model before its first step.
const MAX_NAMED_BYTES: usize = 32 * 1024;

/// The workspace's source files and documents that `message` names, in its order (a few,
/// small, text): what a small model should see before its first step.
pub fn named_files(message: &str, ws: &dyn Workspace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let named = path_tokens(message)
        .into_iter()
        .filter(|p| Lang::of_path(p).is_some() || docs::is_doc_path(p));
    for path in named {
        if out.len() == MAX_NAMED || out.contains(&path) {
            continue;
        }
        if let FileState::Text(t) = ws.file(&path)
            && t.len() <= MAX_NAMED_BYTES
        {
            out.push(path);
        }
    }
    out
}

/// The fenced blocks of `text` (``` or ~~~, indented up to a list item's depth), each with
/// the prose since the previous one.
fn fences(text: &str) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(&str, &str, Vec<&str>)> = None;
    // Inside a Markdown block, whether one of its own blocks is open.
    let mut inner = false;
    for line in text.lines() {
        let t = line.trim_start();
        match open.as_mut() {
            None => match ["```", "~~~"].into_iter().find(|f| t.starts_with(f)) {
                Some(fence) => {
                    open = Some((fence, t[3..].trim(), Vec::new()));
                    inner = false;
                }
                None => {
                    prose.push_str(line);
                    prose.push('\n');
                }
            },
            Some((fence, info, body)) => {
                let bare = t.trim_end() == *fence;
                // A Markdown document holds blocks of its own: `` ```bash `` opens one, and
                // the bare fence after it closes that one, not the document.
                if docs::is_markdown_info(info) && t.starts_with(*fence) && (inner || !bare) {
                    inner = !bare;
                    body.push(line);
                } else if bare {
                    out.push(Block {
                        info,
                        body: std::mem::take(body),
                        prose: std::mem::take(&mut prose),
                    });
                    open = None;
                } else {
                    body.push(line);
                }
            }
        }
    }
    out
}

/// A path the block names itself: in its info string (```` ```python:calc.py ````,
/// ```` ```calc.py ````, `title="calc.py"`) or in a first line that is only a comment
/// naming a file (`# calc.py`, `// src/lib.rs`); the body without that line.
fn named_target<'a>(block: &Block<'a>) -> (Option<String>, Vec<&'a str>) {
    if let Some(p) = file_tokens(block.info).into_iter().next() {
        return (Some(p), block.body.clone());
    }
    let first = block.body.first().map(|l| l.trim()).unwrap_or_default();
    let comment = ["#", "//", "--", "/*"]
        .into_iter()
        .find_map(|c| first.strip_prefix(c))
        .filter(|_| !first.starts_with("#!"));
    if let Some(rest) = comment {
        let rest = rest.trim().trim_end_matches("*/").trim();
        let rest = ["File:", "file:", "filename:", "Filename:"]
            .into_iter()
            .find_map(|l| rest.strip_prefix(l))
            .unwrap_or(rest)
            .trim();
        if let [one] = file_tokens(rest).as_slice()
            && one.len() == rest.trim_matches('`').len()
        {
            return (Some(one.clone()), block.body[1..].to_vec());
        }
    }
    (None, block.body.clone())
}

/// The last file the prose just before a block names, when its kind fits the block's.
fn prose_target(prose: &str, lang: Option<Lang>) -> Option<String> {
    let tail: Vec<&str> = prose.lines().rev().take(2).collect();
    tail.iter()
        .flat_map(|l| file_tokens(l).into_iter().rev())
        .find(|p| fits(p, lang))
}

/// The one file of the block's language in the workspace that defines a name the block
/// defines.
fn defining_file(lang: Option<Lang>, body: &[&str], ws: &dyn Workspace) -> Option<String> {
    let lang = lang?;
    let keys: BTreeSet<String> = units::units(lang, body)
        .into_iter()
        .map(|u| u.key)
        .collect();
    if keys.is_empty() {
        return None;
    }
    let mut found = ws.sources(lang).into_iter().filter(|path| {
        let FileState::Text(text) = ws.file(path) else {
            return false;
        };
        let lines: Vec<&str> = text.lines().collect();
        units::units(lang, &lines)
            .iter()
            .any(|u| keys.contains(&u.key))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The one file the person's message names that fits the block's language (for a new file
/// the task asks for, or an existing one the model did not name).
fn message_target(message: &str, lang: Option<Lang>, ws: &dyn Workspace) -> Option<String> {
    let lang = lang?;
    let named: BTreeSet<String> = file_tokens(message)
        .into_iter()
        .filter(|p| Lang::of_path(p) == Some(lang))
        .filter(|p| ws.file(p) != FileState::Other)
        .collect();
    let mut it = named.into_iter();
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// Whether `path`'s kind fits a block in `lang` (any file fits a block without a language).
fn fits(path: &str, lang: Option<Lang>) -> bool {
    match lang {
        Some(l) => Lang::of_path(path) == Some(l),
        None => Lang::of_path(path).is_some(),
    }
}

/// File names in `text`: relative paths ending in a source extension, without quotes,
/// backticks or trailing punctuation; never absolute or with `..`.
fn file_tokens(text: &str) -> Vec<String> {
    path_tokens(text)
        .into_iter()
        .filter(|w| Lang::of_path(w).is_some())
        .collect()
}

/// The relative paths with an extension that `text` names (`calc.py`, `notes.txt`,
/// `src/app.rs`), in order: plain characters only, never absolute or going up.
pub(crate) fn path_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| {
        c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | '=' | '*')
    })
    .map(|w| w.trim_end_matches(['.', ':', ';', '!', '?']))
    .filter(|w| w.contains('.'))
    .filter(|w| !w.starts_with('/') && !w.split('/').any(|s| s == ".." || s.is_empty()))
    .filter(|w| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    })
    .map(str::to_string)
    .collect()
}

/// A short shell block meant to be run (`python3 x.py`, `$ cargo test`): a few lines of
/// plain commands, no script.
fn is_command(body: &[&str]) -> bool {
    let lines: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let scripty = |l: &&str| {
        l.contains("()")
            || l.ends_with('{')
            || l.ends_with("\\")
            || l.contains("<<")
            || ["if ", "for ", "while ", "case ", "do", "done", "fi", "then"]
                .iter()
                .any(|k| l.starts_with(k))
    };
    !lines.is_empty() && lines.len() <= 3 && !lines.iter().any(scripty)
}

/// The bash call that runs a command block (prompts `$ ` taken off).
fn command(body: &[&str]) -> Proposal {
    let lines: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.strip_prefix("$ ").unwrap_or(l))
        .collect();
    let command = lines.join("\n");
    Proposal {
        tool: "bash",
        what: format!(
            "The model showed a command instead of running it; made it a bash call: {}",
            lines.join("; ")
        ),
        arguments: json!({ "command": command }),
    }
}

/// What the answer says of a block's file.
#[derive(Clone, Copy)]
struct Claim {
    /// The answer or the message names the file (not only its definitions).
    names_file: bool,
    /// The answer itself names the file (in the block or just before it).
    in_answer: bool,
    /// The block may stand for the whole file: named, and of a stated language.
    whole: bool,
}

/// The edit a block makes to `path`: a new file (named explicitly), or the smallest
/// replacement that merges its definitions in, or the whole file when the block is a whole
/// script the answer names, or the lines it repeats with a name changed (see `shape`).
fn edit(path: &str, lang: Lang, block: &str, claim: Claim, ws: &dyn Workspace) -> Option<Proposal> {
    let mut content = block.to_string();
    if !content.ends_with('\n') {
        content.push('\n');
    }
    let text = match ws.file(path) {
        FileState::Missing if claim.names_file && !block.trim().is_empty() => {
            return Some(Proposal {
                tool: "write_file",
                what: format!(
                    "The model showed the new file {path} instead of writing it; made it a \
                     write_file call."
                ),
                arguments: json!({ "path": path, "content": content }),
            });
        }
        FileState::Text(t) => t,
        _ => return None,
    };
    let merged = if claim.whole && is_new_version(&text, block) {
        content
    } else {
        units::merge(lang, &text, block)
            .or_else(|| {
                let whole = claim.whole && is_whole_file(lang, &text, block);
                whole.then_some(content)
            })
            // Lines repeated with a name changed: only where the answer names the file.
            .or_else(|| {
                claim
                    .in_answer
                    .then(|| shape::edit_by_shape(&text, block))?
            })?
    };
    let (old, new) = replacement(&text, &merged)?;
    Some(Proposal {
        tool: "str_replace",
        what: format!(
            "The model showed code for {path} instead of editing it; made it a str_replace \
             call."
        ),
        arguments: json!({ "path": path, "old_str": old, "new_str": new }),
    })
}

/// Whether a block without definitions stands for the whole file: the file has none
/// either, and the block is at least half its length.
fn is_whole_file(lang: Lang, file: &str, block: &str) -> bool {
    let lines: Vec<&str> = file.lines().collect();
    units::units(lang, &lines).is_empty() && block.lines().count() * 2 >= lines.len()
}

/// Whether a block is a new version of the whole file (so a definition it renamed replaces
/// the old one instead of joining it): it starts where the file starts, is nearly as long,
/// and leaves nothing out with a `...` placeholder.
fn is_new_version(file: &str, block: &str) -> bool {
    fn first(t: &str) -> Option<&str> {
        t.lines().find(|l| !l.trim().is_empty()).map(str::trim_end)
    }
    let elided = block.lines().any(|l| {
        let t = l.trim();
        t == "..." || t == "…" || (t.contains("...") && (t.starts_with('#') || t.starts_with("//")))
    });
    let (b, f) = (block.lines().count(), file.lines().count());
    !elided && first(file).is_some() && first(file) == first(block) && b * 5 >= f * 4
}

/// The smallest span of whole lines of `old` that differs from `new`, widened until it
/// occurs once in `old`: the `old_str`/`new_str` of one `str_replace`; `None` when they are
/// the same.
fn replacement(old: &str, new: &str) -> Option<(String, String)> {
    if old == new {
        return None;
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let (mut lo, mut hi_a, mut hi_b) = (prefix, a.len() - suffix, b.len() - suffix);
    loop {
        let span: String = a[lo..hi_a].concat();
        if !span.is_empty() && old.matches(&span).count() == 1 {
            return Some((span, b[lo..hi_b].concat()));
        }
        if lo == 0 && hi_a == a.len() {
            return (!old.is_empty()).then(|| (old.to_string(), new.to_string()));
        }
        lo = lo.saturating_sub(1);
        if hi_a < a.len() {
            hi_a += 1;
            hi_b += 1;
        }
    }
}

/// The workspace through the file tools' own resolution: paths anchored at the workspace,
/// no symlink followed, secret places refused.
pub struct ToolWorkspace<'a>(pub &'a crate::tools::ToolCtx);

/// Source files looked at for a definition's file at the most.
const MAX_SOURCES: usize = 200;

impl Workspace for ToolWorkspace<'_> {
    fn file(&self, path: &str) -> FileState {
        use crate::tools::files::{Before, read_before, resolve};
        let Ok(resolved) = resolve(self.0, path) else {
            return FileState::Other;
        };
        if !resolved.inside_workspace || resolved.protected {
            return FileState::Other;
        }
        match read_before(&resolved) {
            Ok(Before::Missing) => FileState::Missing,
            Ok(Before::Present {
                text: Some(text), ..
            }) => FileState::Text(text),
            _ => FileState::Other,
        }
    }

    fn sources(&self, lang: Lang) -> Vec<String> {
        let root = &self.0.workspace;
        super::aids::workspace_walk(root, 6)
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|e| {
                let rel = e.path().strip_prefix(root).ok()?.to_str()?.to_string();
                (Lang::of_path(&rel) == Some(lang)).then_some(rel)
            })
            .take(MAX_SOURCES)
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests;
