//! The centred dialog box of the questions asked before the app starts (trust a project, use
//! a local model, what to set). Its message scrolls between a marker that says how much is
//! hidden and a pinned footer (the question and its keys), so nothing is cut off unseen: a
//! repository that asks for many things cannot push one of them, or the question, off screen.

use super::pane::PaneScroll;
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Widget};

/// Widest a dialog box gets.
const MAX_WIDTH: u16 = 90;
/// How a list item starts: its wrapped rows are indented under its text.
const BULLET: &str = "  • ";

/// What a dialog says.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dialog<'a> {
    /// On the top border.
    pub title: &'a str,
    /// The body, which scrolls when it does not fit.
    pub message: &'a str,
    /// Pinned under the body and always drawn (the question and its keys).
    pub footer: Option<&'a str>,
    /// A warning pinned above the footer (why a key did nothing).
    pub note: Option<&'a str>,
}

/// Where a dialog's message is scrolled to, and how much of it has been on screen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DialogScroll {
    /// Where the message is scrolled to, and the last frame's page and total (in rows).
    pub view: PaneScroll,
    /// Message rows from the top that have all been on screen (in the last frame's wrapping).
    seen_rows: usize,
    /// Message lines (before wrapping) from the top that have all been on screen: kept
    /// across a resize, which wraps the rows anew.
    seen_lines: usize,
    /// The wrap width of the last frame.
    width: usize,
    /// Whether a frame was drawn at all.
    drawn: bool,
}

impl DialogScroll {
    /// Scrolls by `n` rows (negative: up), within the message.
    pub fn scroll_by(&mut self, n: i64) {
        self.view.scroll_by(n);
    }

    /// Rows a page key moves: a page, so paging never skips a row.
    pub fn page(&self) -> i64 {
        self.view.page()
    }

    /// Whether the message is taller than its space (there is something to scroll).
    pub fn overflows(&self) -> bool {
        self.view.total > self.view.rows
    }

    /// Message rows below the last one shown.
    pub fn hidden_below(&self) -> usize {
        self.view
            .total
            .saturating_sub(self.view.offset + self.view.rows)
    }

    /// Whether every row of the message has been on screen in a drawn frame.
    pub fn all_seen(&self) -> bool {
        self.drawn && self.seen_rows >= self.view.total
    }

    /// A new wrapping of the message (`first_row`: where each line starts, `total` rows):
    /// after a resize only the whole lines seen before still count as seen.
    fn rewrapped(&mut self, width: usize, first_row: &[usize], total: usize) {
        if self.drawn && width != self.width {
            self.seen_rows = first_row.get(self.seen_lines).copied().unwrap_or(total);
        }
        self.width = width;
        self.view.total = total;
        self.drawn = true;
    }

    /// The frame shows `rows` message rows from `offset` (clamped here); `line_of_row` maps
    /// each row to its line. Only rows joining the seen part from the top count as seen.
    fn shown(&mut self, rows: usize, line_of_row: &[usize], lines: usize) {
        self.view.rows = rows;
        self.view.offset = self.view.offset.min(self.view.total.saturating_sub(rows));
        if self.view.offset <= self.seen_rows {
            self.seen_rows = self
                .seen_rows
                .max(self.view.offset + rows)
                .min(self.view.total);
        }
        self.seen_lines = line_of_row.get(self.seen_rows).copied().unwrap_or(lines);
    }
}

/// The message wrapped to `width`: the rows, each row's line, and each line's first row.
struct Wrapped {
    rows: Vec<Line<'static>>,
    line_of_row: Vec<usize>,
    first_row: Vec<usize>,
}

fn wrap_message(message: &str, width: usize, theme: &Theme) -> Wrapped {
    let mut w = Wrapped {
        rows: Vec::new(),
        line_of_row: Vec::new(),
        first_row: Vec::new(),
    };
    let text = crate::tui::wrap::sanitize(message);
    for (i, l) in text.split('\n').enumerate() {
        let line = match l.strip_prefix(BULLET) {
            Some(rest) => RichLine::new(vec![Span::styled(rest.to_string(), theme.text())])
                .prefixed(vec![Span::raw(BULLET)], vec![Span::raw("    ")]),
            None => RichLine::new(vec![Span::styled(l.to_string(), theme.text())]),
        };
        w.first_row.push(w.rows.len());
        line.layout(width, &mut w.rows);
        // Every line takes a row, so each has a first row that can be seen.
        if w.rows.len() == w.first_row[i] {
            w.rows.push(Line::default());
        }
        w.line_of_row.resize(w.rows.len(), i);
    }
    w
}

/// The marker over the footer when the message does not fit: how much is above and below.
fn marker(scroll: &DialogScroll, width: usize, theme: &Theme) -> Line<'static> {
    let below = scroll.hidden_below();
    let above = scroll.view.offset;
    let text = match (above, below) {
        (0, b) => format!("↓ {b} more lines (↓ PgDn)"),
        (a, 0) => format!("↑ {a} above · end"),
        (a, b) => format!("↓ {b} more lines · ↑ {a} above (↑↓ PgUp PgDn)"),
    };
    let style = if below > 0 {
        theme.fg(theme.warning).add_modifier(Modifier::BOLD)
    } else {
        theme.dim()
    };
    Line::styled(truncate(&text, width).into_owned(), style)
}

/// The rows pinned under the message: a blank row, the note, the footer.
fn pinned_rows(dialog: &Dialog<'_>, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    let warn = theme.fg(theme.warning).add_modifier(Modifier::BOLD);
    let parts = [(dialog.note, warn), (dialog.footer, theme.text())];
    for (text, style) in parts {
        let Some(text) = text else { continue };
        for l in crate::tui::wrap::sanitize(text).split('\n') {
            RichLine::new(vec![Span::styled(l.to_string(), style)]).layout(width, &mut rows);
        }
    }
    if !rows.is_empty() {
        rows.insert(0, Line::default());
    }
    rows
}

/// Draws a centred dialog box: the title on its border, the message scrolled to `scroll`
/// (with a "↓ N more" marker when it does not fit), and the note and footer pinned at the
/// bottom. When the box is too short for all of that, the footer's last rows (the keys) win.
pub fn draw_dialog(
    area: Rect,
    buf: &mut Buffer,
    dialog: &Dialog<'_>,
    scroll: &mut DialogScroll,
    theme: &Theme,
) {
    if area.width < 4 || area.height < 3 {
        return;
    }
    let width = area.width.saturating_sub(4).min(MAX_WIDTH);
    let text_w = usize::from(width.saturating_sub(4)).max(1);
    let wrapped = wrap_message(dialog.message, text_w, theme);
    let total = wrapped.rows.len();
    scroll.rewrapped(text_w, &wrapped.first_row, total);
    let room = usize::from(area.height - 2);
    let mut pinned = pinned_rows(dialog, text_w, theme);
    let fits = total + pinned.len() <= room;
    if !fits && pinned.len() + 1 >= room && !pinned.is_empty() {
        // Short of room: the blank row goes first.
        pinned.remove(0);
    }
    // Without room for all pinned rows, the bottom ones stay (the keys).
    let pinned_start = (pinned.len() + usize::from(!fits)).saturating_sub(room);
    let pinned = &pinned[pinned_start.min(pinned.len())..];
    let marker_rows = usize::from(!fits && pinned.len() < room);
    let body_rows = room.saturating_sub(pinned.len() + marker_rows).min(total);
    scroll.shown(body_rows, &wrapped.line_of_row, wrapped.first_row.len());
    let height = (body_rows + marker_rows + pinned.len() + 2).min(usize::from(area.height));
    let rect = super::centered(area, width, height as u16);
    let title = truncate(dialog.title, usize::from(width.saturating_sub(4)));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.fg(theme.warning))
        .title(Span::styled(
            format!(" {title} "),
            theme.fg(theme.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(rect);
    Clear.render(rect, buf);
    block.render(rect, buf);
    let body = wrapped.rows.iter().skip(scroll.view.offset).take(body_rows);
    let mark = (marker_rows == 1).then(|| marker(scroll, text_w, theme));
    let rows = body.chain(mark.as_ref()).chain(pinned);
    for (line, y) in rows.zip(inner.rows().map(|r| r.y)) {
        buf.set_line(inner.x + 1, y, line, inner.width.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(buf: &Buffer) -> Vec<String> {
        let area = buf.area;
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect()
    }

    fn draw(w: u16, h: u16, dialog: &Dialog<'_>, scroll: &mut DialogScroll) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        draw_dialog(area, &mut buf, dialog, scroll, &Theme::dark());
        text(&buf)
    }

    fn items(n: usize) -> String {
        let mut m = String::from("The project asks for:\n");
        for i in 1..=n {
            m.push_str(&format!("\n  • item {i:02}"));
        }
        m
    }

    const KEYS: &str = "Trust this project?  [y] trust and use them   [n] ignore them";

    fn dialog(message: &str) -> Dialog<'_> {
        Dialog {
            title: "Trust this project?",
            message,
            footer: Some(KEYS),
            note: None,
        }
    }

    fn has(rows: &[String], needle: &str) -> bool {
        rows.iter().any(|r| r.contains(needle))
    }

    #[test]
    fn a_long_message_scrolls_under_the_pinned_keys_and_says_how_much_is_hidden() {
        let message = items(40);
        let d = dialog(&message);
        let mut scroll = DialogScroll::default();
        let rows = draw(110, 32, &d, &mut scroll);
        assert!(has(&rows, "[n] ignore them"), "{rows:#?}");
        assert!(has(&rows, "item 01") && !has(&rows, "item 40"), "{rows:#?}");
        let below = scroll.hidden_below();
        assert!(has(&rows, &format!("↓ {below} more lines")), "{rows:#?}");
        assert!(!scroll.all_seen());
        // Paging down shows every row on the way, and the end says so.
        while scroll.hidden_below() > 0 {
            scroll.scroll_by(scroll.page());
            let rows = draw(110, 32, &d, &mut scroll);
            assert!(has(&rows, "[y] trust and use them"), "{rows:#?}");
        }
        let rows = draw(110, 32, &d, &mut scroll);
        assert!(
            has(&rows, "item 40") && has(&rows, "above · end"),
            "{rows:#?}"
        );
        assert!(scroll.all_seen());
    }

    #[test]
    fn a_message_that_fits_is_seen_at_once_and_has_no_marker() {
        let message = items(3);
        let mut scroll = DialogScroll::default();
        assert!(!scroll.all_seen(), "nothing is seen before a frame");
        let rows = draw(80, 24, &dialog(&message), &mut scroll);
        assert!(has(&rows, "item 03") && has(&rows, "[n] ignore them"));
        assert!(!has(&rows, "more lines") && !scroll.overflows());
        assert!(scroll.all_seen());
    }

    #[test]
    fn jumping_past_unseen_rows_does_not_count_them_as_seen() {
        let message = items(60);
        let d = dialog(&message);
        let mut scroll = DialogScroll::default();
        draw(80, 20, &d, &mut scroll);
        scroll.view.offset = usize::MAX / 2;
        let rows = draw(80, 20, &d, &mut scroll);
        assert!(has(&rows, "item 60"));
        assert!(!scroll.all_seen(), "the middle was never on screen");
    }

    #[test]
    fn a_resize_keeps_the_whole_lines_already_seen() {
        let message = items(30);
        let d = dialog(&message);
        let mut scroll = DialogScroll::default();
        draw(100, 16, &d, &mut scroll);
        while scroll.hidden_below() > 0 {
            scroll.scroll_by(scroll.page());
            draw(100, 16, &d, &mut scroll);
        }
        assert!(scroll.all_seen());
        draw(44, 16, &d, &mut scroll);
        assert!(scroll.all_seen(), "every line was seen before the resize");
    }

    #[test]
    fn a_tiny_terminal_still_shows_the_keys_and_nothing_panics() {
        let message = items(25);
        let d = dialog(&message);
        let mut scroll = DialogScroll::default();
        let rows = draw(40, 10, &d, &mut scroll);
        let all = rows.concat();
        assert!(
            all.contains("[y] trust") && all.contains("[n] ignore"),
            "{rows:#?}"
        );
        assert!(has(&rows, "more lines"), "{rows:#?}");
        assert!(has(&rows, "item 01"), "{rows:#?}");
        for w in 0..=50 {
            for h in 0..=14 {
                let mut scroll = DialogScroll::default();
                draw(w, h, &d, &mut scroll);
                scroll.scroll_by(3);
                draw(w, h, &d, &mut scroll);
            }
        }
    }

    #[test]
    fn a_warning_note_is_pinned_above_the_footer() {
        let message = items(40);
        let d = Dialog {
            note: Some("Scroll through all 40 items before trusting."),
            ..dialog(&message)
        };
        let mut scroll = DialogScroll::default();
        let rows = draw(110, 32, &d, &mut scroll);
        let note = rows
            .iter()
            .position(|r| r.contains("Scroll through all 40"));
        let keys = rows.iter().position(|r| r.contains("[y] trust"));
        assert!(
            matches!((note, keys), (Some(n), Some(k)) if n < k),
            "{rows:#?}"
        );
    }

    #[test]
    fn long_items_wrap_under_their_text() {
        let message = format!("x\n  • {}", "word ".repeat(30));
        let mut scroll = DialogScroll::default();
        let rows = draw(60, 20, &dialog(&message), &mut scroll);
        let first = rows.iter().position(|r| r.contains("• word")).unwrap_or(0);
        assert!(rows[first + 1].contains("│     word"), "{rows:#?}");
    }
}
