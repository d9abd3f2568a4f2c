//! The conversation's cells as data: what each one shows. No terminal types: `view/cell.rs`
//! lays cells out and keeps their laid-out lines.

use crate::protocol::EditDiff;

/// How loud a notice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Informational, dim.
    Info,
    /// Needs attention (retrying, interrupted).
    Warn,
    /// Something failed.
    Error,
}

/// One file's change as a cell shows it: the path, the hunks, and the calls that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct FileEdit {
    /// The file, as the tool named it.
    pub path: String,
    /// What changed (the view highlights it when the cell is drawn).
    pub diff: EditDiff,
    /// What changed the file (`/diff` names each call under the header).
    pub origins: Vec<String>,
}

impl FileEdit {
    /// The change a call computed (an edit's proposal, a resumed edit).
    pub fn new(path: &str, diff: EditDiff) -> FileEdit {
        FileEdit {
            path: path.to_string(),
            diff,
            origins: Vec::new(),
        }
    }

    /// The change from `old` (`None`: the file is new) to `new`.
    pub fn between(path: &str, old: Option<&str>, new: &str) -> FileEdit {
        FileEdit::new(path, EditDiff::between(old, new))
    }
}

/// What an info run is coloured as; the view picks the theme's colour for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// The terminal's own colours.
    Plain,
    /// The theme's text colour.
    Text,
    /// Dim (explanations, paths).
    Dim,
    /// The accent (names, headings).
    Accent,
    /// The border colour (quote bars).
    Border,
    /// A warning.
    Warning,
}

/// A piece of an info line in one tone.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The text (already one line).
    pub text: String,
    /// Its colour.
    pub tone: Tone,
    /// Bold (headings).
    pub bold: bool,
}

impl Run {
    /// `text` in `tone`.
    pub fn new(tone: Tone, text: impl Into<String>) -> Run {
        Run {
            text: text.into(),
            tone,
            bold: false,
        }
    }

    /// `text` in the terminal's own colours (indents, plain descriptions).
    pub fn plain(text: impl Into<String>) -> Run {
        Run::new(Tone::Plain, text)
    }

    /// The same run in bold.
    pub fn bold(mut self) -> Run {
        self.bold = true;
        self
    }
}

/// One line of an info cell (`/help`, `/skills` …): its runs, word-wrapped, and what goes
/// before its first and its later rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfoLine {
    /// Before the first row.
    pub first: Vec<Run>,
    /// Before each later row.
    pub rest: Vec<Run>,
    /// The content.
    pub runs: Vec<Run>,
}

impl InfoLine {
    /// A line of runs without prefix.
    pub fn new(runs: Vec<Run>) -> InfoLine {
        InfoLine {
            runs,
            ..InfoLine::default()
        }
    }

    /// An empty line.
    pub fn blank() -> InfoLine {
        InfoLine::default()
    }

    /// Sets both prefixes.
    pub fn prefixed(mut self, first: Vec<Run>, rest: Vec<Run>) -> InfoLine {
        self.first = first;
        self.rest = rest;
        self
    }

    /// The line's text without its prefixes (tests, copying).
    pub fn text(&self) -> String {
        self.runs.iter().map(|r| r.text.as_str()).collect()
    }
}
