//! `str_replace`: replace an exact piece of a text file, keeping its line endings.

mod hint;

use super::files::{
    Before, Fingerprint, MAX_EDIT_BYTES, Opened, directory_error, missing_error, numbered,
    open_regular, resolve, shell_check, unread_error, write_unchanged,
};
use super::task::string_arg;
use super::{
    Access, Effect, FileWrite, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput,
    parse_args,
};
use crate::llm::ToolSpec;
use crate::protocol::{EditDiff, ToolDisplay};
use crate::sandbox::paths::ResolvedPath;
use serde::Deserialize;
use serde_json::{Value, json};

/// Lines of context shown around an edited region.
const CONTEXT_LINES: usize = 3;
/// Edited regions shown in the result (the rest are counted).
const MAX_REGIONS: usize = 5;
/// Match line numbers listed in the "matches N times" error.
const MAX_LISTED_MATCHES: usize = 10;

const NAME: &str = "str_replace";

/// The `str_replace` tool.
pub struct StrReplace;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old_str: String,
    new_str: String,
    replace_all: Option<bool>,
}

/// A checked edit, ready to write over exactly the content it was planned on.
struct Edit {
    access: Access,
    path: ResolvedPath,
    old: String,
    new: String,
    /// Byte ranges of the replacement text in `new`.
    regions: Vec<(usize, usize)>,
    /// The change shown.
    diff: EditDiff,
    /// `new_str` came inside a markdown fence, which was left out.
    unfenced: bool,
    /// The model had read the file, or may read it unasked: only then does the result show it.
    read: bool,
}

/// Whether a file's newlines are mostly CRLF.
fn uses_crlf(content: &str) -> bool {
    let crlf = content.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= content.matches('\n').count()
}

/// `s` with every newline written as `eol`.
fn with_eol(s: &str, eol: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', eol)
}

/// 1-based line numbers of the byte offsets `positions` (ascending) in `content`.
fn line_numbers(content: &str, positions: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut from = 0;
    positions
        .iter()
        .map(|&p| {
            line += content[from..p].matches('\n').count();
            from = p;
            line
        })
        .collect()
}

/// Loads the file to edit as text.
fn load(path: &ResolvedPath) -> Result<String, ToolError> {
    let (mut file, meta) = match open_regular(path)? {
        Opened::File(file, meta) => (file, meta),
        Opened::Missing => return Err(missing_error(path, "Use write_file to create a new file.")),
        Opened::Directory => return Err(directory_error(path)),
        Opened::Special => {
            return Err(ToolError(format!(
                "{} is not a regular file; str_replace edits regular text files only.",
                path.display
            )));
        }
    };
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError(format!(
            "{} is too large for str_replace ({} bytes). Use bash (e.g. sed) to edit it.",
            path.display,
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut file, &mut bytes)
        .map_err(|e| ToolError(format!("cannot read {}: {e}.", path.display)))?;
    match String::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => Ok(s),
        _ => Err(ToolError(format!(
            "{} is not a UTF-8 text file; str_replace edits text only.",
            path.display
        ))),
    }
}

/// Checks the arguments against the current file and computes the new content.
fn plan(ctx: &ToolCtx, args: &Args) -> Result<Edit, ToolError> {
    check_args(args)?;
    let path = resolve(ctx, &args.path)?;
    let old = load(&path)?;
    // A never-read file may be edited where the model quotes text that occurs exactly once:
    // it knows what it replaces and nothing else changes. Anything else needs the read
    // (write_file always does), and a file changed since the read is read again.
    let quoted_once = old.matches(args.old_str.as_str()).count() == 1;
    let read = ctx.reads.was_read(&path);
    // The permission check has not run yet: a refusal shows a file the model never read only
    // where the rules let it read that file unasked (then it counts as read, as does a done
    // edit).
    let may_show = ctx.may_show(&path);
    let fingerprint = Fingerprint::of(old.as_bytes());
    if read || (!quoted_once && may_show) {
        ctx.reads
            .check_showing(&path, Some(&old), &fingerprint, "edit")?;
    } else if !quoted_once {
        return Err(unread_error(&path, NAME));
    }
    let read = read || may_show;
    let eol = if uses_crlf(&old) { "\r\n" } else { "\n" };
    let found = find_matches(&old, args, eol, &path)?;
    let (new, regions) = replace(&old, &found, eol);
    Ok(Edit {
        access: Access::Write { path: path.clone() },
        diff: EditDiff::between(Some(&old), &new),
        path,
        old,
        new,
        regions,
        unfenced: false,
        read,
    })
}

/// Leaves out a markdown fence around all of `new_str` (not when `old_str` has one: then
/// fences are the file's text); returns whether it did.
fn unfence_new_str(args: &mut Args) -> bool {
    if args.old_str.contains("```") {
        return false;
    }
    let Some(mut inside) = super::files::unfence::unfence(&args.path, &args.new_str) else {
        return false;
    };
    // A fence always ends its last line; the text it replaces may not.
    if !args.old_str.ends_with('\n') && inside.ends_with('\n') {
        inside.pop();
    }
    args.new_str = inside;
    true
}

/// Refuses an edit that could not change anything.
fn check_args(args: &Args) -> Result<(), ToolError> {
    if args.old_str.is_empty() {
        return Err(ToolError::new(
            "`old_str` is empty. To create a file use write_file; to insert text, put an \
             existing nearby line in old_str and repeat it in new_str with your addition.",
        ));
    }
    if args.old_str == args.new_str {
        return Err(ToolError::new(
            "`old_str` and `new_str` are identical, so nothing would change. Put the \
             replacement text in new_str.",
        ));
    }
    Ok(())
}

/// Where `old_str` is found in the file, and what replaces it there.
struct Matches {
    /// The text looked for, in the line-ending style it was found in.
    needle: String,
    replacement: String,
    /// Byte offsets of the occurrences to replace.
    positions: Vec<usize>,
}

/// The occurrences to replace: `old_str` in the file's line-ending style first, then exactly
/// as given; more than one only with `replace_all`.
fn find_matches(
    old: &str,
    args: &Args,
    eol: &str,
    path: &ResolvedPath,
) -> Result<Matches, ToolError> {
    let mut tries = vec![(with_eol(&args.old_str, eol), with_eol(&args.new_str, eol))];
    if tries[0].0 != args.old_str {
        tries.push((args.old_str.clone(), args.new_str.clone()));
    }
    let found = tries.into_iter().find_map(|(needle, replacement)| {
        let positions: Vec<usize> = old.match_indices(needle.as_str()).map(|(i, _)| i).collect();
        (!positions.is_empty()).then_some((needle, replacement, positions))
    });
    let Some((needle, replacement, positions)) = found else {
        let hint = hint::not_found(old, &args.old_str);
        return Err(ToolError(format!(
            "old_str was not found in {}.{hint}",
            path.display
        )));
    };
    let replace_all = args.replace_all.unwrap_or(false);
    if positions.len() > 1 && !replace_all {
        let inside_words = inside_longer_words(old, &needle, &positions);
        return Err(ToolError(several_matches(
            old,
            &positions,
            &path.display,
            inside_words,
        )));
    }
    let positions = if replace_all {
        positions
    } else {
        vec![positions[0]]
    };
    Ok(Matches {
        needle,
        replacement,
        positions,
    })
}

/// Longest line shown of a match.
const LISTED_LINE_CHARS: usize = 120;

/// Whether some occurrence of `needle` is part of a longer word (`1` in `$1`, `total` in
/// `subtotal`): replacing every one would then change those words too.
fn inside_longer_words(text: &str, needle: &str, positions: &[usize]) -> bool {
    let wordy = |c: char| c.is_alphanumeric() || matches!(c, '_' | '$');
    let starts_wordy = needle.chars().next().is_some_and(wordy);
    let ends_wordy = needle.chars().next_back().is_some_and(wordy);
    positions.iter().any(|&p| {
        let before = text[..p].chars().next_back().is_some_and(wordy);
        let after = text[p + needle.len()..].chars().next().is_some_and(wordy);
        (starts_wordy && before) || (ends_wordy && after)
    })
}

/// The error for an `old_str` found more than once: each line it is on, and the ways on as
/// calls (small models repeated the same call when told only to "include more lines").
/// `replace_all` is not offered when some occurrence is inside a longer word: the 1.5B model,
/// offered it for `1`, turned `$1` into `$3` with `total=1`.
fn several_matches(text: &str, positions: &[usize], display: &str, inside_words: bool) -> String {
    let lines = line_numbers(text, positions);
    let all: Vec<&str> = text.lines().collect();
    let mut listed = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for n in lines
        .iter()
        .filter(|n| seen.insert(**n))
        .take(MAX_LISTED_MATCHES)
    {
        let line = all.get(n.saturating_sub(1)).copied().unwrap_or("");
        let shown: String = line.chars().take(LISTED_LINE_CHARS).collect();
        listed.push_str(&format!("{n:>6}\t{shown}\n"));
    }
    if seen.len()
        < lines
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    {
        listed.push_str("   ...\n");
    }
    let n = positions.len();
    if inside_words {
        return format!(
            "old_str matches {n} times in {display}, some inside longer words:\n{listed}Put the \
             whole line you mean to change in old_str (copied from above, without the line \
             number), so that it matches once, and that line as it should be in new_str."
        );
    }
    format!(
        "old_str matches {n} times in {display}:\n{listed}To change every one, call str_replace \
         again with the same old_str and \"replace_all\": true. To change only one, make old_str \
         longer with more of its line or the lines around it, so that it matches once."
    )
}

/// The new content and the byte ranges of the replacements in it. An edit that reaches the
/// end of the file keeps its trailing newline as it was.
fn replace(old: &str, m: &Matches, eol: &str) -> (String, Vec<(usize, usize)>) {
    let mut new = String::with_capacity(old.len() + m.positions.len() * m.replacement.len());
    let mut regions = Vec::with_capacity(m.positions.len());
    let mut from = 0;
    for &p in &m.positions {
        new.push_str(&old[from..p]);
        regions.push((new.len(), new.len() + m.replacement.len()));
        new.push_str(&m.replacement);
        from = p + m.needle.len();
    }
    new.push_str(&old[from..]);
    if from == old.len() && !new.is_empty() {
        let had = old.ends_with('\n');
        if had && !new.ends_with('\n') {
            new.push_str(eol);
        } else if !had && new.ends_with('\n') {
            let cut = if new.ends_with("\r\n") { 2 } else { 1 };
            new.truncate(new.len() - cut);
        }
    }
    (new, regions)
}

/// The edited regions of the new content with line numbers and a little context.
fn show_regions(edit: &Edit) -> String {
    let lines: Vec<&str> = edit.new.split('\n').collect();
    let last = if edit.new.ends_with('\n') {
        lines.len().saturating_sub(2)
    } else {
        lines.len().saturating_sub(1)
    };
    let starts: Vec<usize> = edit.regions.iter().map(|r| r.0).collect();
    let ends: Vec<usize> = edit
        .regions
        .iter()
        .map(|r| r.1.saturating_sub(1).max(r.0))
        .collect();
    let start_lines = line_numbers(&edit.new, &starts);
    let end_lines = line_numbers(&edit.new, &ends);
    // Merge overlapping windows (0-based, inclusive) so no line is shown twice.
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for (s, e) in start_lines.iter().zip(&end_lines) {
        let lo = (s - 1).saturating_sub(CONTEXT_LINES);
        let hi = (e - 1 + CONTEXT_LINES).min(last);
        match windows.last_mut() {
            Some(w) if lo <= w.1 + 1 => w.1 = w.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    let shown: Vec<String> = windows
        .iter()
        .take(MAX_REGIONS)
        .map(|&(lo, hi)| numbered(lo + 1, lines[lo..=hi.max(lo)].iter().copied()))
        .collect();
    let mut out = shown.join("\n   ...\n");
    if windows.len() > MAX_REGIONS {
        out.push_str(&format!(
            "\n   ... ({} more edited regions not shown)",
            windows.len() - MAX_REGIONS
        ));
    }
    out
}

/// The result of a done edit: the edited regions, when the model had read the file.
fn edited_text(edit: &Edit) -> String {
    let n = edit.regions.len();
    let count = if n == 1 {
        "1 replacement".to_string()
    } else {
        format!("{n} replacements")
    };
    if !edit.read {
        return format!(
            "Edited {} ({count}). You had not read it, so it is not shown: read it with \
             read_file to see the result.",
            edit.path.display
        );
    }
    let what = if n == 1 {
        "The edited region now reads"
    } else {
        "The edited regions now read"
    };
    format!(
        "Edited {} ({count}). {what}:\n{}",
        edit.path.display,
        show_regions(edit)
    )
}

impl Tool for StrReplace {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Edit a file: replace an exact piece of it. old_str must match the \
                file exactly, indentation included (copy it from read_file output without the \
                line numbers), and occur once unless replace_all is true; add nearby lines to \
                make it unique. Example: {\"path\": \"calc.py\", \"old_str\": \"return a - b\", \
                \"new_str\": \"return a + b\"}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                    "old_str": {"type": "string", "description": "The exact text to replace."},
                    "new_str": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one. Default false."}
                },
                "required": ["path", "old_str", "new_str"]
            }),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let mut args: Args = parse_args(NAME, args)?;
        let unfenced = unfence_new_str(&mut args);
        let mut edit = plan(ctx, &args)?;
        edit.unfenced = unfenced;
        Ok(Box::new(edit))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Edit {
            path: string_arg(args, "path"),
            diff: None,
        }
    }
}

impl Prepared for Edit {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Edit {
            path: self.path.display.clone(),
            diff: Some(self.diff.clone()),
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        let reads = ctx.reads.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let before = Before::Present {
                    fingerprint: Fingerprint::of(self.old.as_bytes()),
                    text: None,
                };
                write_unchanged(&self.path, &before, self.new.as_bytes())?;
                let mut text = edited_text(&self);
                // A file edited unread stays unread: its text may be one a rule keeps from
                // the model, so neither this result nor a later refusal shows it.
                if self.read {
                    reads.saw(&self.path.path, Some(Fingerprint::of(self.new.as_bytes())));
                }
                if self.unfenced {
                    text = format!("{text}\n{}.", super::files::unfence::UNFENCED_NOTE);
                }
                if let Some(note) = shell_check::notes(&self.path.display, &self.new) {
                    text = format!("{text}\n{note}");
                }
                Ok(ToolOutput::ok(text).with(Effect::FileWritten(FileWrite {
                    path: self.path.display,
                    old: Some(self.old),
                    new: self.new,
                })))
            })
            .await
            .map_err(|e| ToolError(format!("editing the file failed: {e}")))?
        })
    }
}

#[cfg(test)]
mod tests;
