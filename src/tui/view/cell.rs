//! Laying conversation cells out: each cell's lines for a width, kept between frames in its
//! [`CellLayout`] until the cell changes (its revision) or scrolls far out of view.

use super::diff::FileDiff;
use super::stream::StreamLayout;
use crate::protocol::{Todo, TodoStatus};
use crate::tui::model::cell::{Cell, CellKind, InfoLine, Level, Run, Tone};
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap, sanitize, str_width};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// Marker of the todo in progress when nothing runs.
pub const STILL: &str = "▸";

/// Braille spinner frames.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What a frame needs to lay cells out.
pub struct RenderCtx<'a> {
    /// Colours.
    pub theme: &'a Theme,
    /// The current time (injected, so frames are reproducible).
    pub now: Instant,
    /// Spinner frame index.
    pub spinner: usize,
    /// Expand every foldable cell (Ctrl+O).
    pub expand_all: bool,
}

impl RenderCtx<'_> {
    /// The current spinner glyph.
    pub fn spinner_glyph(&self) -> &'static str {
        SPINNER[self.spinner % SPINNER.len()]
    }
}

/// The layout kept for one cell: `None` until the cell is first measured or drawn (most cells
/// of a long resumed conversation never are), and again once it scrolled far away.
#[derive(Debug, Default)]
pub struct CellLayout {
    held: Option<Box<Held>>,
}

/// A layout made for one cell at one revision.
#[derive(Debug)]
struct Held {
    id: u64,
    revision: u64,
    laid: Laid,
}

#[derive(Debug)]
enum Laid {
    /// An answer's incremental markdown layout.
    Answer(StreamLayout),
    /// Any other cell's lines.
    Lines(Lines),
}

#[derive(Debug, Default)]
struct Lines {
    width: usize,
    expanded: bool,
    valid: bool,
    lines: Vec<Line<'static>>,
    /// The cell's diffs, highlighted once per content (a resize only lays them out again).
    diffs: Vec<FileDiff>,
}

impl CellLayout {
    /// Whether laid-out lines are held.
    pub fn is_laid_out(&self) -> bool {
        self.held.is_some()
    }

    /// Frees the laid-out lines of `cell` (it scrolled far out of view); they are rebuilt
    /// when it is drawn again. A streaming answer keeps its incremental state.
    pub fn drop_layout(&mut self, cell: &Cell) {
        if !matches!(cell.kind(), CellKind::Assistant(a) if a.is_streaming()) {
            self.held = None;
        }
    }

    /// The content lines of `cell` for `width` columns (the marker column is not included).
    pub fn lines(&mut self, cell: &Cell, width: usize, ctx: &RenderCtx<'_>) -> &[Line<'static>] {
        let answer = matches!(cell.kind(), CellKind::Assistant(_));
        // A layout made for another cell (the transcript changed under it) is not reused.
        let fits = matches!(&self.held,
            Some(h) if h.id == cell.id() && matches!(h.laid, Laid::Answer(_)) == answer);
        if !fits {
            self.held = Some(Box::new(Held {
                id: cell.id(),
                revision: cell.revision(),
                laid: if answer {
                    Laid::Answer(StreamLayout::default())
                } else {
                    Laid::Lines(Lines::default())
                },
            }));
        }
        let Some(held) = self.held.as_deref_mut() else {
            return &[];
        };
        let changed = held.revision != cell.revision();
        held.revision = cell.revision();
        match (&mut held.laid, cell.kind()) {
            (Laid::Answer(stream), CellKind::Assistant(a)) => {
                if changed && a.is_streaming() {
                    stream.text_grew();
                } else if changed {
                    // Finished (or its text replaced): rendered again in one piece.
                    *stream = StreamLayout::default();
                }
                stream.lines(a.text(), !a.is_streaming(), width, ctx.theme)
            }
            (Laid::Lines(lines), kind) => {
                let expanded = cell.expanded || ctx.expand_all;
                lines.valid &= !changed;
                lines.lay(kind, cell.is_live(), width, expanded, ctx)
            }
            (Laid::Answer(_), _) => &[],
        }
    }
}

impl Lines {
    /// Lays `kind` out again when it changed, the width or folding did, or it moves by itself.
    fn lay(
        &mut self,
        kind: &CellKind,
        live: bool,
        width: usize,
        expanded: bool,
        ctx: &RenderCtx<'_>,
    ) -> &[Line<'static>] {
        if !self.valid {
            self.diffs = laid_diffs(kind, ctx.theme);
        }
        if !self.valid || self.width != width || self.expanded != expanded || live {
            self.lines.clear();
            let laid = Laying {
                kind,
                diffs: &self.diffs,
            };
            laid.layout(width, expanded, ctx, &mut self.lines);
            self.width = width;
            self.expanded = expanded;
            self.valid = true;
        }
        &self.lines
    }
}

/// The one-character marker drawn left of a cell's first line.
pub fn marker(cell: &Cell, ctx: &RenderCtx<'_>) -> Option<Span<'static>> {
    let t = ctx.theme;
    match cell.kind() {
        CellKind::User(_) => Some(Span::styled("›", t.fg(t.user).add_modifier(Modifier::BOLD))),
        CellKind::Assistant(_) => Some(Span::styled("●", t.fg(t.accent))),
        CellKind::Reasoning { .. } => Some(Span::styled("∴", t.dim())),
        CellKind::Tool(tool) => Some(super::tool::marker(tool, t, ctx.spinner_glyph())),
        CellKind::Notice { level, .. } => Some(match level {
            Level::Info => Span::styled("·", t.dim()),
            Level::Warn => Span::styled("!", t.fg(t.warning).add_modifier(Modifier::BOLD)),
            Level::Error => Span::styled("✗", t.fg(t.error).add_modifier(Modifier::BOLD)),
        }),
        CellKind::Diff(_) => Some(Span::styled("±", t.fg(t.accent))),
        CellKind::Todos(_) => Some(Span::styled("☰", t.fg(t.accent))),
        CellKind::Compacted { .. } | CellKind::Info(_) => None,
    }
}

/// The diffs a cell shows, highlighted (a finished edit's, `/diff`'s files).
fn laid_diffs(kind: &CellKind, theme: &Theme) -> Vec<FileDiff> {
    match kind {
        CellKind::Tool(tool) => super::tool::laid_diff(tool, theme).into_iter().collect(),
        CellKind::Diff(files) => files
            .iter()
            .map(|f| {
                let mut d = FileDiff::from_edit(&f.path, &f.diff, theme);
                d.origins = f.origins.clone();
                d
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A cell and its highlighted diffs, while one layout runs.
struct Laying<'a> {
    kind: &'a CellKind,
    diffs: &'a [FileDiff],
}

impl Laying<'_> {
    fn layout(
        &self,
        width: usize,
        expanded: bool,
        ctx: &RenderCtx<'_>,
        out: &mut Vec<Line<'static>>,
    ) {
        let t = ctx.theme;
        match self.kind {
            CellKind::User(text) => {
                let style = t.fg(t.user);
                for line in sanitize(text).split('\n') {
                    RichLine::new(vec![Span::styled(line.to_string(), style)]).layout(width, out);
                }
            }
            CellKind::Assistant(_) => {}
            CellKind::Reasoning { text, streaming } => {
                layout_reasoning(text, *streaming, width, expanded, t, out);
            }
            CellKind::Tool(tool) => out.extend(super::tool::layout(
                tool,
                self.diffs.first(),
                width,
                ctx.now,
                expanded,
                t,
            )),
            CellKind::Notice { text, level } => {
                let style = match level {
                    Level::Info => t.dim(),
                    Level::Warn => t.fg(t.warning),
                    Level::Error => t.fg(t.error),
                };
                for line in sanitize(text).split('\n') {
                    RichLine::new(vec![Span::styled(line.to_string(), style)]).layout(width, out);
                }
            }
            CellKind::Compacted { before, after } => {
                layout_compacted(*before, *after, width, t, out)
            }
            CellKind::Diff(_) => layout_diff(self.diffs, width, t, out),
            CellKind::Todos(todos) => {
                if todos.is_empty() {
                    out.push(Line::styled("the todo list is empty", t.dim()));
                }
                for todo in todos {
                    todo_line(todo, t, STILL).layout(width, out);
                }
            }
            CellKind::Info(lines) => {
                for line in lines {
                    info_line(line, t).layout(width, out);
                }
            }
        }
    }
}

/// `──── context compacted: 104k → 31k tokens ────`.
fn layout_compacted(
    before: u64,
    after: u64,
    width: usize,
    t: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    let label = format!(
        " context compacted: {} → {} tokens ",
        format_tokens(before),
        format_tokens(after)
    );
    let w = str_width(&label);
    let side = width.saturating_sub(w) / 2;
    let rule = t.fg(t.border);
    out.push(Line::from(vec![
        Span::styled("─".repeat(side), rule),
        Span::styled(label, t.dim()),
        Span::styled("─".repeat(width.saturating_sub(w + side)), rule),
    ]));
}

/// An info line in the theme's colours.
fn info_line(line: &InfoLine, t: &Theme) -> RichLine {
    let spans = |runs: &[Run]| -> Vec<Span<'static>> {
        runs.iter()
            .map(|r| {
                let style = match r.tone {
                    Tone::Plain => Style::default(),
                    Tone::Text => t.text(),
                    Tone::Dim => t.dim(),
                    Tone::Accent => t.fg(t.accent),
                    Tone::Border => t.fg(t.border),
                    Tone::Warning => t.fg(t.warning),
                };
                let style = if r.bold {
                    style.add_modifier(Modifier::BOLD)
                } else {
                    style
                };
                Span::styled(r.text.clone(), style)
            })
            .collect()
    };
    RichLine::new(spans(&line.runs)).prefixed(spans(&line.first), spans(&line.rest))
}

/// A model's reasoning: folded to its first line (the last while it streams), whole when
/// expanded.
fn layout_reasoning(
    text: &str,
    streaming: bool,
    width: usize,
    expanded: bool,
    t: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    let style = t.dim().add_modifier(Modifier::ITALIC);
    let text = sanitize(text);
    let text = text.trim();
    if expanded {
        for line in text.split('\n') {
            RichLine::new(vec![Span::styled(line.to_string(), style)]).layout(width, out);
        }
        return;
    }
    let lines: Vec<&str> = text.split('\n').filter(|l| !l.trim().is_empty()).collect();
    let shown = if streaming {
        lines.last()
    } else {
        lines.first()
    };
    let mut spans = vec![Span::styled(
        if streaming { "thinking " } else { "thought " },
        t.dim().add_modifier(Modifier::BOLD),
    )];
    spans.push(Span::styled(
        shown.map_or("", |l| l.trim()).to_string(),
        style,
    ));
    if !streaming && lines.len() > 1 {
        spans.push(Span::styled(
            format!(" (+{} lines)", lines.len() - 1),
            t.dim(),
        ));
    }
    RichLine::new(spans).wrapped(Wrap::Cut).layout(width, out);
}

/// `/diff`: each changed file's header, the calls that changed it, and its diff.
fn layout_diff(files: &[FileDiff], width: usize, t: &Theme, out: &mut Vec<Line<'static>>) {
    if files.is_empty() {
        out.push(Line::styled("no file changes in this session yet", t.dim()));
    }
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            out.push(Line::default());
        }
        f.header(t).layout(width, out);
        for o in &f.origins {
            RichLine::new(vec![Span::styled(
                format!("by {}", sanitize(o).replace('\n', " ")),
                t.dim(),
            )])
            .wrapped(Wrap::Cut)
            .layout(width, out);
        }
        f.layout(width, out);
    }
}

/// One todo item as a line: `☐ pending`, `⠋ Running the tests` (in progress), `☑ done`.
pub fn todo_line(todo: &Todo, t: &Theme, spinner: &str) -> RichLine {
    let (mark, text, style) = match todo.status {
        TodoStatus::Pending => ("☐ ".to_string(), &todo.content, t.text()),
        TodoStatus::InProgress => (
            format!("{spinner} "),
            if todo.active_form.is_empty() {
                &todo.content
            } else {
                &todo.active_form
            },
            t.fg(t.accent).add_modifier(Modifier::BOLD),
        ),
        TodoStatus::Completed => (
            "☑ ".to_string(),
            &todo.content,
            t.dim().add_modifier(Modifier::CROSSED_OUT),
        ),
    };
    let mark_style = match todo.status {
        TodoStatus::Completed => t.fg(t.success),
        TodoStatus::InProgress => t.fg(t.accent),
        TodoStatus::Pending => t.dim(),
    };
    RichLine::new(vec![Span::styled(sanitize(text).replace('\n', " "), style)])
        .prefixed(vec![Span::styled(mark, mark_style)], vec![Span::raw("  ")])
}

/// `950`, `1.2k`, `104k`, `1.3M`.
pub fn format_tokens(n: u64) -> String {
    if n < 1_000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", n as f64 / 1_000.0)
    } else if n < 1_000_000 {
        format!("{}k", n / 1_000)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::model::cell::Answer;

    #[test]
    fn token_counts_read_naturally() {
        assert_eq!(format_tokens(950), "950");
        assert_eq!(format_tokens(1_234), "1.2k");
        assert_eq!(format_tokens(104_000), "104k");
        assert_eq!(format_tokens(31_400), "31k");
        assert_eq!(format_tokens(1_300_000), "1.3M");
    }

    fn ctx(theme: &Theme) -> RenderCtx<'_> {
        RenderCtx {
            theme,
            now: Instant::now(),
            spinner: 0,
            expand_all: false,
        }
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn reasoning_folds_to_one_line_and_is_laid_out_again_when_it_changes() {
        let theme = Theme::dark();
        let ctx = ctx(&theme);
        let mut cell = Cell::new(CellKind::Reasoning {
            text: "First idea.\nSecond idea.\nThird.".into(),
            streaming: false,
        });
        let mut layout = CellLayout::default();
        assert_eq!(
            text(layout.lines(&cell, 40, &ctx)),
            ["thought First idea. (+2 lines)"]
        );
        cell.expanded = true;
        assert_eq!(layout.lines(&cell, 40, &ctx).len(), 3);
        if let CellKind::Reasoning { text, .. } = cell.kind_mut() {
            text.push_str("\nFourth.");
        }
        assert_eq!(layout.lines(&cell, 40, &ctx).len(), 4);
    }

    #[test]
    fn the_authoritative_text_replaces_the_stream() {
        let theme = Theme::dark();
        let ctx = ctx(&theme);
        let mut cell = Cell::new(CellKind::Assistant(Answer::streaming()));
        let mut layout = CellLayout::default();
        if let CellKind::Assistant(a) = cell.kind_mut() {
            a.push("partial garbage");
        }
        assert_eq!(text(layout.lines(&cell, 20, &ctx)), ["partial garbage"]);
        // Far out of view, a streaming answer keeps its incremental state.
        layout.drop_layout(&cell);
        assert!(layout.is_laid_out());
        if let CellKind::Assistant(a) = cell.kind_mut() {
            a.finish(Some("final"));
        }
        assert_eq!(text(layout.lines(&cell, 20, &ctx)), ["final"]);
        layout.drop_layout(&cell);
        assert!(!layout.is_laid_out());
    }
}
