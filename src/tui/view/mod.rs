//! Drawing: one widget per file; `draw` lays the screen out.
//!
//! Top to bottom: conversation, queued messages, todo panel, composer, status line, key hints.
//! Popups float over the bottom of the conversation. A question (approval) takes the bottom
//! pane instead of the composer and grows upward to at most [`APPROVAL_SHARE`] of the screen,
//! so the conversation above, which led to the call, stays in view.

pub mod approval;
pub mod cell;
pub mod composer;
pub mod conversation;
pub mod dialog;
pub mod diff;
pub mod highlight;
pub mod markdown;
pub mod pane;
pub mod picker;
pub mod rewind;
pub mod status;
pub mod stream;
pub mod table;
pub mod todos;
pub mod tool;

pub use dialog::{Dialog, DialogScroll, draw_dialog};

use crate::tui::model::StatusInfo;
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, truncate};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use std::collections::VecDeque;
use std::path::Path;

/// Below this size only a "terminal too small" notice is drawn.
pub const MIN_WIDTH: u16 = 40;
/// Percent of the screen's height a question may take at most (it scrolls inside).
pub const APPROVAL_SHARE: u16 = 60;
/// Below this size only a "terminal too small" notice is drawn.
pub const MIN_HEIGHT: u16 = 10;
/// Widest a completion popup gets.
const POPUP_WIDTH: u16 = 72;

/// What draws a whole screen: the app, which knows the layers that are up. The view draws
/// what it is handed and never reaches back into the app.
pub trait Screen {
    /// Draws everything into `buf` over `area`.
    fn render_screen(&mut self, area: Rect, buf: &mut Buffer);
}

/// Draws a frame.
pub fn draw(frame: &mut Frame<'_>, screen: &mut impl Screen) {
    let area = frame.area();
    draw_buffer(area, frame.buffer_mut(), screen);
}

/// Draws the screen into `buf` (what `draw` does, without a `Frame`).
pub fn draw_buffer(area: Rect, buf: &mut Buffer, screen: &mut impl Screen) {
    screen.render_screen(area, buf);
    // Whatever a widget drew, every cell must be one the terminal lays out as ratatui does.
    crate::tui::sanitize::settle_cells(buf);
}

/// Whether `area` is too small for anything but [`too_small`].
pub fn is_too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Rows the parts under the conversation would like (before the conversation's share).
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    /// The composer with its border.
    pub composer: u16,
    /// The plan offer above the composer.
    pub offer: u16,
    /// The todo panel.
    pub todos: u16,
    /// The queued messages.
    pub queued: u16,
}

/// The main screen, top to bottom.
#[derive(Clone, Copy, Debug)]
pub struct ScreenAreas {
    /// Everything above the status line (where a dialog floats).
    pub body: Rect,
    /// The conversation.
    pub conversation: Rect,
    /// The queued messages.
    pub queued: Rect,
    /// The todo panel.
    pub todos: Rect,
    /// The plan offer.
    pub offer: Rect,
    /// The composer.
    pub composer: Rect,
    /// The status line.
    pub status: Rect,
    /// The key hint line.
    pub hints: Rect,
}

/// Lays the main screen out: the status and hint lines at the bottom, the composer, todo
/// panel and queue above them as they fit, the conversation keeping at least 3 rows.
pub fn screen_areas(area: Rect, wanted: Wanted) -> ScreenAreas {
    let [body, status, hints] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let budget = body.height.saturating_sub(3);
    let composer_h = (wanted.composer + wanted.offer).min(budget.max(2));
    let queued_h = wanted.queued.min(budget.saturating_sub(composer_h));
    let todo_h = wanted
        .todos
        .min(budget.saturating_sub(composer_h + queued_h));
    let [conversation, queued, todos, bottom] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(queued_h),
        Constraint::Length(todo_h),
        Constraint::Length(composer_h),
    ])
    .areas(body);
    let [offer, composer] = Layout::vertical([
        Constraint::Length(wanted.offer.min(composer_h)),
        Constraint::Fill(1),
    ])
    .areas(bottom);
    ScreenAreas {
        body,
        conversation,
        queued,
        todos,
        offer,
        composer,
        status,
        hints,
    }
}

/// The screen while a question waits.
#[derive(Clone, Copy, Debug)]
pub struct QuestionAreas {
    /// The conversation, which led to the call.
    pub conversation: Rect,
    /// The question.
    pub pane: Rect,
    /// The status line.
    pub status: Rect,
    /// The key hint line.
    pub hints: Rect,
}

/// Lays the screen out for a question that would like `wanted` rows: it gets them, up to
/// [`APPROVAL_SHARE`] percent of the screen, and the conversation keeps at least 3 rows.
pub fn question_areas(area: Rect, wanted: u16) -> QuestionAreas {
    let cap = (area.height * APPROVAL_SHARE / 100).max(6);
    let pane_h = wanted.min(cap).min(area.height.saturating_sub(5));
    let [conversation, pane, status, hints] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(pane_h),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    QuestionAreas {
        conversation,
        pane,
        status,
        hints,
    }
}

/// Where a completion popup `height` rows tall floats: over the bottom of the conversation
/// (never over the todo panel), from its left edge.
pub fn popup_area(conversation: Rect, height: u16) -> Rect {
    let [_, strip] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(height)]).areas(conversation);
    let [popup, _] = Layout::horizontal([
        Constraint::Length(strip.width.min(POPUP_WIDTH)),
        Constraint::Fill(1),
    ])
    .areas(strip);
    popup
}

/// A `width`×`height` box in the middle of `area` (a pixel left and up when it can't be exact).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    let [_, column, _] = Layout::horizontal([
        Constraint::Length((area.width - width) / 2),
        Constraint::Length(width),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, rect, _] = Layout::vertical([
        Constraint::Length((area.height - height) / 2),
        Constraint::Length(height),
        Constraint::Fill(1),
    ])
    .areas(column);
    rect
}

/// After a turn planned in plan mode: approve the plan with one key.
pub fn draw_plan_offer(t: &Theme, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let key = |k: &str| Span::styled(k.to_string(), t.fg(t.accent).add_modifier(Modifier::BOLD));
    let line = RichLine::new(vec![
        Span::styled(
            "plan ready · ",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ),
        key("y"),
        Span::raw(" approve and switch to ask  "),
        key("e"),
        Span::raw(" approve and switch to accept edits  "),
        key("esc"),
        Span::styled(" keep planning (or type to answer)", t.dim()),
    ]);
    let mut lines = Vec::new();
    line.layout(usize::from(area.width), &mut lines);
    for (i, l) in lines.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(area.x, area.y + i as u16, l, area.width);
    }
}

/// The notice drawn instead of the screen when the terminal is smaller than
/// [`MIN_WIDTH`]×[`MIN_HEIGHT`].
pub fn too_small(area: Rect, buf: &mut Buffer, t: &Theme) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let lines = [
        RichLine::new(vec![Span::styled(
            "terminal too small",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        )]),
        RichLine::new(vec![Span::styled(
            format!(
                "{}×{}, need {MIN_WIDTH}×{MIN_HEIGHT}",
                area.width, area.height
            ),
            t.dim(),
        )]),
    ];
    let mut out = Vec::new();
    crate::tui::wrap::layout_all(&lines, usize::from(area.width), &mut out);
    let top = area.y + area.height.saturating_sub(out.len() as u16) / 2;
    for (i, line) in out.iter().enumerate() {
        let y = top + i as u16;
        if y >= area.y + area.height {
            break;
        }
        let lw = crate::tui::wrap::spans_width(&line.spans) as u16;
        let x = area.x + area.width.saturating_sub(lw) / 2;
        buf.set_line(x, y, line, area.width);
    }
}

/// The empty conversation: what rein is, the model and directory, and the first keys.
pub fn welcome(area: Rect, buf: &mut Buffer, t: &Theme, s: &StatusInfo, home: Option<&Path>) {
    if area.height < 4 {
        return;
    }
    let width = usize::from(area.width.saturating_sub(4));
    let mut lines = vec![Line::from(vec![
        Span::styled("rein", t.fg(t.accent).add_modifier(Modifier::BOLD)),
        Span::styled("  a calm coding agent", t.dim()),
    ])];
    if s.configured {
        lines.push(Line::from(vec![
            Span::styled(truncate(&s.model, width).into_owned(), t.text()),
            Span::styled(format!(" · {}", s.provider), t.dim()),
        ]));
        lines.push(Line::styled(
            crate::tui::wrap::short_path(&s.cwd, home, width),
            t.dim(),
        ));
    }
    lines.push(Line::default());
    for (k, what) in [
        ("enter", "send a message"),
        ("/", "commands (/help lists everything)"),
        ("@", "mention a file (inserts its path)"),
        ("!", "run a command yourself"),
        ("⇧tab", "mode: ask → accept edits → plan"),
        ("esc", "interrupt · ctrl+c twice quits"),
        ("⇧drag", "select text (the wheel scrolls)"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("{k:>6}  "), t.fg(t.accent)),
            Span::styled(what, t.dim()),
        ]));
    }
    for (i, line) in lines.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        if y >= area.y + area.height {
            break;
        }
        buf.set_line(area.x + 2, y, line, area.width.saturating_sub(2));
    }
}

/// The messages waiting for the turn to end, one line each; `editable`: the last says Up
/// brings it back (the composer is empty).
pub fn draw_queued(
    queued: &VecDeque<String>,
    editable: bool,
    t: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    for (i, text) in queued.iter().take(usize::from(area.height)).enumerate() {
        let first = crate::tui::wrap::one_line(text.lines().next().unwrap_or(""));
        // The last one says how to take it back (Up, when the composer is empty).
        let last = i + 1 == queued.len() && editable;
        let hint = if last { "  ↑ edit" } else { "" };
        let room = usize::from(area.width).saturating_sub(12 + crate::tui::wrap::str_width(hint));
        let line = Line::from(vec![
            Span::styled("  ↳ queued  ", t.dim()),
            Span::styled(truncate(&first, room).into_owned(), t.fg(t.user)),
            Span::styled(hint, t.dim()),
        ]);
        buf.set_line(area.x, area.y + i as u16, &line, area.width);
    }
}

/// Draws the "what to set" screen shown when no model is configured.
pub fn draw_setup_error(area: Rect, buf: &mut Buffer, message: &str, theme: &Theme) {
    let mut scroll = DialogScroll::default();
    draw_setup_dialog(area, buf, "rein needs a model", message, &mut scroll, theme);
}

/// Draws the "what to set" screen under `title` (what is missing: a model, a key), its
/// message scrolled to `scroll`.
pub fn draw_setup_dialog(
    area: Rect,
    buf: &mut Buffer,
    title: &str,
    message: &str,
    scroll: &mut DialogScroll,
    theme: &Theme,
) {
    // The local model needs nothing set: the way out for a newcomer with no key.
    let dialog = Dialog {
        title,
        message,
        footer: Some("L: local model, no key (rein --local) · other keys quit"),
        note: None,
    };
    draw_dialog(area, buf, &dialog, scroll, theme);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_keeps_three_rows_and_the_parts_stack_in_order() {
        let area = Rect::new(0, 0, 80, 12);
        let wanted = Wanted {
            composer: 20,
            offer: 2,
            todos: 5,
            queued: 3,
        };
        let a = screen_areas(area, wanted);
        assert_eq!(a.conversation.height, 3);
        assert_eq!((a.status.y, a.hints.y), (10, 11));
        assert_eq!(a.offer.height, 2);
        assert_eq!(a.offer.y + a.offer.height, a.composer.y);
        assert_eq!(a.composer.y + a.composer.height, a.status.y);
        assert_eq!(
            (a.queued.height, a.todos.height),
            (0, 0),
            "the composer comes first"
        );
        assert_eq!(
            a.body.height, 10,
            "a dialog floats over all but the two last lines"
        );
    }

    #[test]
    fn a_question_takes_at_most_its_share_and_a_popup_floats_low_and_left() {
        let area = Rect::new(0, 0, 100, 40);
        let q = question_areas(area, 100);
        assert_eq!(q.pane.height, 40 * APPROVAL_SHARE / 100);
        assert_eq!(q.conversation.height + q.pane.height + 2, 40);
        let p = popup_area(Rect::new(0, 0, 100, 20), 5);
        assert_eq!((p.x, p.y, p.width, p.height), (0, 15, POPUP_WIDTH, 5));
        let c = centered(Rect::new(0, 0, 11, 11), 4, 4);
        assert_eq!((c.x, c.y, c.width, c.height), (3, 3, 4, 4));
    }
}
