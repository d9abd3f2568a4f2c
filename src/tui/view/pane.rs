//! The bordered pane whose body scrolls under a footer that stays: the question and the
//! rewind plan are drawn in it.

use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Padding, StatefulWidget, Widget};

/// Where a pane's body is scrolled to, and how much of it the last frame showed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PaneScroll {
    /// First body row shown.
    pub offset: usize,
    /// Body rows shown in the last frame (a page).
    pub rows: usize,
    /// Body rows in all in the last frame (to clamp scrolling).
    pub total: usize,
}

impl PaneScroll {
    /// Scrolls by `n` rows (negative: up), within the body.
    pub fn scroll_by(&mut self, n: i64) {
        let max = self.total.saturating_sub(self.rows);
        let next = (self.offset as i64).saturating_add(n).max(0) as usize;
        self.offset = next.min(max);
    }

    /// Rows a page key moves.
    pub fn page(&self) -> i64 {
        self.rows.max(1) as i64
    }
}

/// A pane: `block` (its border and titles), the body that scrolls, the footer that stays.
pub struct ScrollPane<'a> {
    block: Block<'a>,
    body: &'a [Line<'static>],
    footer: &'a [Line<'static>],
    theme: &'a Theme,
}

impl<'a> ScrollPane<'a> {
    /// A pane around `body` and `footer`.
    pub fn new(
        block: Block<'a>,
        body: &'a [Line<'static>],
        footer: &'a [Line<'static>],
        theme: &'a Theme,
    ) -> ScrollPane<'a> {
        ScrollPane {
            block,
            body,
            footer,
            theme,
        }
    }

    /// Rows outside the body: the border and the footer.
    pub fn chrome(footer_rows: usize) -> usize {
        2 + footer_rows
    }
}

impl StatefulWidget for ScrollPane<'_> {
    type State = PaneScroll;

    fn render(self, area: Rect, buf: &mut Buffer, scroll: &mut PaneScroll) {
        let total = self.body.len();
        let rows = usize::from(area.height)
            .saturating_sub(Self::chrome(self.footer.len()))
            .min(total);
        scroll.rows = rows;
        scroll.total = total;
        scroll.offset = scroll.offset.min(total.saturating_sub(rows));
        Clear.render(area, buf);
        let mut block = self.block.padding(Padding::horizontal(1));
        if total > rows {
            let end = (scroll.offset + rows).min(total);
            let at = format!(" {}-{end} of {total} lines · ↑↓ scroll ", scroll.offset + 1);
            block = block.title_bottom(Line::styled(at, self.theme.dim()).right_aligned());
        }
        let inner = block.inner(area);
        block.render(area, buf);
        let shown = self.body.iter().skip(scroll.offset).take(rows);
        for (line, y) in shown.chain(self.footer).zip(inner.rows().map(|r| r.y)) {
            buf.set_line(inner.x, y, line, inner.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::widgets::Borders;

    fn drawn(body: usize, footer: usize, height: u16, scroll: &mut PaneScroll) -> Vec<String> {
        let theme = Theme::dark();
        let body: Vec<Line<'static>> = (1..=body).map(|i| Line::from(format!("b{i}"))).collect();
        let footer: Vec<Line<'static>> =
            (1..=footer).map(|i| Line::from(format!("f{i}"))).collect();
        let area = Rect::new(0, 0, 40, height);
        let mut buf = Buffer::empty(area);
        let block = Block::default().borders(Borders::ALL);
        ScrollPane::new(block, &body, &footer, &theme).render(area, &mut buf, scroll);
        (0..height)
            .map(|y| (0..40).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect()
    }

    #[test]
    fn the_footer_stays_while_the_body_scrolls_and_the_border_says_where() {
        let mut scroll = PaneScroll::default();
        let rows = drawn(10, 2, 7, &mut scroll);
        assert_eq!((scroll.rows, scroll.total), (3, 10));
        assert!(rows[1].starts_with("│ b1"), "{rows:?}");
        assert!(
            rows[4].starts_with("│ f1") && rows[5].starts_with("│ f2"),
            "{rows:?}"
        );
        assert!(rows[6].contains("1-3 of 10 lines · ↑↓ scroll"), "{rows:?}");
        scroll.scroll_by(100);
        let rows = drawn(10, 2, 7, &mut scroll);
        assert_eq!(scroll.offset, 7, "scrolling stops at the last page");
        assert!(
            rows[3].starts_with("│ b10") && rows[6].contains("8-10 of 10"),
            "{rows:?}"
        );
        scroll.scroll_by(-100);
        assert_eq!(scroll.offset, 0);
    }

    #[test]
    fn a_body_that_fits_has_no_scroll_marker() {
        let mut scroll = PaneScroll::default();
        let rows = drawn(2, 1, 7, &mut scroll);
        assert_eq!((scroll.rows, scroll.total), (2, 2));
        assert!(!rows.concat().contains("lines ·"), "{rows:?}");
    }
}
