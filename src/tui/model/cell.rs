//! The conversation's cells as data: what each one shows, and the changes it goes through (an
//! answer streams, a call finishes). No terminal types: `view/cell.rs` lays cells out and
//! keeps their laid-out lines, and a cell's revision tells it when they are stale.

use super::tool::ToolCall;
use crate::protocol::{EditDiff, Todo};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where cell ids come from: unique for the process, so a layout kept for one cell is never
/// taken for another's (after a removal or a `/clear`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What a cell shows.
#[derive(Debug)]
pub enum CellKind {
    /// A message the person sent.
    User(String),
    /// A model answer, possibly still streaming.
    Assistant(Answer),
    /// Model reasoning; folded to one line unless expanded.
    Reasoning {
        /// The text.
        text: String,
        /// Whether more may come.
        streaming: bool,
    },
    /// A tool call.
    Tool(Box<ToolCall>),
    /// A notice line.
    Notice {
        /// The text.
        text: String,
        /// How loud.
        level: Level,
    },
    /// `context compacted: 104k → 31k tokens`.
    Compacted {
        /// Tokens before.
        before: u64,
        /// Tokens after.
        after: u64,
    },
    /// File diffs (`/diff`).
    Diff(Vec<FileEdit>),
    /// A todo list snapshot (`/todos`).
    Todos(Vec<Todo>),
    /// Preformatted lines (`/help`).
    Info(Vec<InfoLine>),
}

/// A conversation cell: what it shows and whether it is unfolded.
#[derive(Debug)]
pub struct Cell {
    kind: CellKind,
    /// Unfolded by a click.
    pub expanded: bool,
    id: u64,
    /// Counts the changes to `kind` (a layout made at another revision is stale).
    revision: u64,
}

impl Cell {
    /// A new cell.
    pub fn new(kind: CellKind) -> Cell {
        Cell {
            kind,
            expanded: false,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            revision: 0,
        }
    }

    /// What it shows.
    pub fn kind(&self) -> &CellKind {
        &self.kind
    }

    /// What it shows, to change it: every change goes through here, so none can leave a
    /// stale layout on screen.
    pub fn kind_mut(&mut self) -> &mut CellKind {
        self.revision = self.revision.wrapping_add(1);
        &mut self.kind
    }

    /// The cell's identity, for the layouts kept of it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How many times its content changed.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether the cell changes with time alone (spinners, elapsed time).
    pub fn is_live(&self) -> bool {
        match &self.kind {
            CellKind::Tool(t) => t.is_running(),
            CellKind::Reasoning { streaming, .. } => *streaming,
            _ => false,
        }
    }

    /// Whether clicking it (or Ctrl+O) shows more.
    pub fn is_foldable(&self) -> bool {
        matches!(self.kind, CellKind::Tool(_) | CellKind::Reasoning { .. })
    }
}

/// A model answer: its text so far and whether more may come.
///
/// Only text: a resumed conversation of 100,000 items holds its answers at the cost of their
/// bytes; the view keeps parse and layout state for the answers it draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    text: String,
    streaming: bool,
}

impl Answer {
    /// An answer that starts streaming.
    pub fn streaming() -> Answer {
        Answer {
            text: String::new(),
            streaming: true,
        }
    }

    /// A finished answer, taking ownership of its text (no copy).
    pub fn complete(text: String) -> Answer {
        Answer {
            text,
            streaming: false,
        }
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether more text may come.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// Appends streamed text. O(length of the delta).
    pub fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    /// Marks the text complete, replacing it with the authoritative `text` when given.
    pub fn finish(&mut self, text: Option<&str>) {
        if let Some(t) = text {
            self.text = t.to_string();
        }
        self.streaming = false;
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_of_a_cell_is_counted_and_ids_are_unique() {
        let mut a = Cell::new(CellKind::Assistant(Answer::streaming()));
        let b = Cell::new(CellKind::User("hi".into()));
        assert_ne!(a.id(), b.id());
        let before = a.revision();
        if let CellKind::Assistant(answer) = a.kind_mut() {
            answer.push("Hel");
            answer.push("lo");
            answer.finish(None);
        }
        assert_ne!(a.revision(), before);
        let CellKind::Assistant(answer) = a.kind() else {
            panic!("not an answer")
        };
        assert_eq!((answer.text(), answer.is_streaming()), ("Hello", false));
    }
}
