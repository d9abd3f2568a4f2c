//! The conversation pane: a virtualized list of cells.
//!
//! The scroll position is an anchor (cell, row within the cell) rather than a global line
//! number, so a frame only lays out the cells it shows: drawing a 10,000-cell (or a resumed
//! 100,000-item) conversation costs the same as a short one, even right after a resize,
//! and no height of an off-screen cell is ever computed. Following the bottom is the
//! default; scrolling up pins the anchor until the view reaches the bottom again.
//!
//! Laid-out lines are kept for the most recently measured cells only (a few thousand), so
//! scrolling through a huge session does not end up holding its whole layout.
//!
//! The cells themselves are the model's (`model::transcript::Transcript`), handed in at each
//! frame; this pane keeps only what drawing them needs: their layouts and the scroll state.

use super::cell::{CellLayout, RenderCtx, marker};
use crate::tui::model::cell::Cell;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::VecDeque;

/// Width of the marker column left of every cell.
const GUTTER: u16 = 2;
/// Cells whose layout is kept; beyond this the least recently laid out ones (off screen)
/// free theirs.
const WARM_CELLS: usize = 2_048;

/// Where the top row of the view is: `row` counts the separator line above the cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anchor {
    cell: usize,
    row: usize,
}

/// The conversation pane: the cells' layouts plus scroll state.
#[derive(Debug, Default)]
pub struct Conversation {
    /// One per cell, in the transcript's order.
    layouts: Vec<CellLayout>,
    /// `None`: follow the bottom.
    anchor: Option<Anchor>,
    /// Cells added since the view stopped following.
    new_below: usize,
    /// Scroll requested since the last frame (negative: up).
    pending: i64,
    jump_top: bool,
    /// Cell under each row of the last frame (for clicks).
    rows: Vec<Option<usize>>,
    area: Rect,
    /// Cells laid out, oldest first (may hold stale or repeated indices; they only decide
    /// whose layout is freed first).
    warm: VecDeque<usize>,
}

impl Conversation {
    /// A cell was appended to the transcript; it counts as new when the view is scrolled up.
    pub fn added(&mut self) {
        if self.anchor.is_some() {
            self.new_below += 1;
        }
    }

    /// Cell `i` left the transcript (a retried response's partial text), which now holds
    /// `len` cells.
    pub fn removed(&mut self, i: usize, len: usize) {
        if i < self.layouts.len() {
            self.layouts.remove(i);
        }
        if let Some(a) = &mut self.anchor {
            if a.cell > i {
                a.cell -= 1;
            } else if a.cell == i {
                a.row = 0;
            }
            if a.cell >= len {
                self.anchor = None;
                self.new_below = 0;
            }
        }
    }

    /// Forgets every layout and follows the bottom again (the transcript was cleared).
    pub fn clear(&mut self) {
        *self = Conversation::default();
    }

    /// Scrolls by `lines` (negative: up), applied at the next frame.
    pub fn scroll(&mut self, lines: i64) {
        self.pending = self.pending.saturating_add(lines);
    }

    /// Scrolls a page up (`-1`) or down (`1`).
    pub fn page(&mut self, dir: i64) {
        let page = i64::from(self.area.height.saturating_sub(2).max(1));
        self.scroll(dir * page);
    }

    /// Shows cell `i` of the `len` there are at the top (a picker's "jump to message";
    /// benchmarks).
    pub fn scroll_to_cell(&mut self, i: usize, len: usize) {
        if i < len {
            self.anchor = Some(Anchor { cell: i, row: 0 });
            self.pending = 0;
            self.jump_top = false;
        }
    }

    /// Jumps to the first message.
    pub fn to_top(&mut self) {
        self.jump_top = true;
        self.pending = 0;
    }

    /// Jumps to the bottom and follows new output again.
    pub fn to_bottom(&mut self) {
        self.anchor = None;
        self.jump_top = false;
        self.pending = 0;
        self.new_below = 0;
    }

    /// Whether the view follows new output.
    pub fn is_following(&self) -> bool {
        self.anchor.is_none() && !self.jump_top && self.pending >= 0
    }

    /// Cells added below while scrolled up.
    pub fn new_below(&self) -> usize {
        self.new_below
    }

    /// The cell drawn at screen row `y` in the last frame.
    pub fn cell_at(&self, x: u16, y: u16) -> Option<usize> {
        let a = self.area;
        if x < a.x || x >= a.x + a.width || y < a.y || y >= a.y + a.height {
            return None;
        }
        self.rows.get(usize::from(y - a.y)).copied().flatten()
    }

    fn content_width(area: Rect) -> usize {
        usize::from(area.width.saturating_sub(GUTTER)).max(1)
    }

    /// Rows of cell `i` including its separator line.
    fn height(&mut self, cells: &[Cell], i: usize, width: usize, ctx: &RenderCtx<'_>) -> usize {
        let sep = usize::from(i > 0);
        self.note_laid_out(i);
        self.layouts[i].lines(&cells[i], width, ctx).len() + sep
    }

    /// Remembers that cell `i` is about to hold a layout.
    fn note_laid_out(&mut self, i: usize) {
        if !self.layouts[i].is_laid_out() {
            self.warm.push_back(i);
        }
    }

    /// Frees the layout of the least recently laid out cells outside `visible`.
    fn evict(&mut self, cells: &[Cell], visible: std::ops::RangeInclusive<usize>) {
        let mut kept = 0;
        while self.warm.len() > WARM_CELLS && kept < self.warm.len() {
            let Some(j) = self.warm.pop_front() else {
                break;
            };
            if visible.contains(&j) {
                self.warm.push_back(j);
                kept += 1;
            } else if let (Some(layout), Some(cell)) = (self.layouts.get_mut(j), cells.get(j)) {
                layout.drop_layout(cell);
            }
        }
    }

    /// The anchor that shows the bottom of the conversation.
    fn bottom_anchor(
        &mut self,
        cells: &[Cell],
        height: usize,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> Anchor {
        let mut need = height;
        let mut i = cells.len();
        while i > 0 {
            i -= 1;
            let h = self.height(cells, i, width, ctx);
            if h >= need {
                return Anchor {
                    cell: i,
                    row: h - need,
                };
            }
            need -= h;
        }
        Anchor { cell: 0, row: 0 }
    }

    /// Whether at least `height` rows exist from `a` to the end.
    fn fills(
        &mut self,
        cells: &[Cell],
        a: Anchor,
        height: usize,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> bool {
        let mut rows = 0;
        for i in a.cell..cells.len() {
            let h = self.height(cells, i, width, ctx);
            rows += if i == a.cell {
                h.saturating_sub(a.row)
            } else {
                h
            };
            if rows >= height {
                return true;
            }
        }
        false
    }

    fn move_up(
        &mut self,
        cells: &[Cell],
        mut a: Anchor,
        mut n: usize,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> Anchor {
        loop {
            if a.row >= n {
                a.row -= n;
                return a;
            }
            n -= a.row;
            if a.cell == 0 {
                a.row = 0;
                return a;
            }
            a.cell -= 1;
            a.row = self.height(cells, a.cell, width, ctx);
        }
    }

    fn move_down(
        &mut self,
        cells: &[Cell],
        mut a: Anchor,
        mut n: usize,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> Anchor {
        loop {
            let h = self.height(cells, a.cell, width, ctx);
            if a.row + n < h {
                a.row += n;
                return a;
            }
            n -= h - a.row;
            if a.cell + 1 >= cells.len() {
                a.row = h.saturating_sub(1);
                return a;
            }
            a.cell += 1;
            a.row = 0;
        }
    }

    /// Draws the visible ones of `cells` into `area`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, ctx: &RenderCtx<'_>, cells: &[Cell]) {
        // One layout per cell; a removal the pane was not told of only costs a re-layout
        // (a layout is checked against its cell's id).
        self.layouts.resize_with(cells.len(), CellLayout::default);
        self.area = area;
        self.rows.clear();
        self.rows.resize(usize::from(area.height), None);
        let height = usize::from(area.height);
        if height == 0 || area.width == 0 || cells.is_empty() {
            self.pending = 0;
            self.jump_top = false;
            return;
        }
        let width = Self::content_width(area);
        let mut top = match (self.jump_top, self.anchor) {
            (true, _) => Anchor { cell: 0, row: 0 },
            (false, Some(a)) => {
                // The cell may have shrunk (resize, retry): keep the anchor inside it.
                let cell = a.cell.min(cells.len() - 1);
                let h = self.height(cells, cell, width, ctx);
                Anchor {
                    cell,
                    row: a.row.min(h.saturating_sub(1)),
                }
            }
            (false, None) => self.bottom_anchor(cells, height, width, ctx),
        };
        let was_following = self.anchor.is_none() && !self.jump_top;
        self.jump_top = false;
        let pending = std::mem::take(&mut self.pending);
        if pending < 0 {
            top = self.move_up(cells, top, pending.unsigned_abs() as usize, width, ctx);
        } else if pending > 0 && !was_following {
            top = self.move_down(cells, top, pending as usize, width, ctx);
        }
        if self.fills(cells, top, height + 1, width, ctx) {
            self.anchor = Some(top);
        } else {
            // At (or past) the bottom: follow again.
            self.anchor = None;
            self.new_below = 0;
            top = self.bottom_anchor(cells, height, width, ctx);
        }
        self.draw_from(cells, top, area, buf, ctx, width);
    }

    fn draw_from(
        &mut self,
        cells: &[Cell],
        top: Anchor,
        area: Rect,
        buf: &mut Buffer,
        ctx: &RenderCtx<'_>,
        width: usize,
    ) {
        let height = usize::from(area.height);
        let mut y = 0usize;
        let mut skip = top.row;
        let content_x = area.x + GUTTER.min(area.width);
        let content_w = area.width.saturating_sub(GUTTER);
        let mut last = top.cell;
        for (i, cell) in cells.iter().enumerate().skip(top.cell) {
            if y >= height {
                break;
            }
            if i > 0 {
                if skip > 0 {
                    skip -= 1;
                } else {
                    y += 1;
                }
            }
            self.note_laid_out(i);
            last = i;
            let mark = marker(cell, ctx);
            let lines = self.layouts[i].lines(cell, width, ctx);
            for (row, line) in lines.iter().enumerate().skip(skip) {
                if y >= height {
                    break;
                }
                let sy = area.y + y as u16;
                if row == 0
                    && let Some(m) = &mark
                {
                    buf.set_span(area.x, sy, m, GUTTER.min(area.width));
                }
                buf.set_line(content_x, sy, line, content_w);
                self.rows[y] = Some(i);
                y += 1;
            }
            skip = 0;
        }
        self.evict(cells, top.cell..=last);
        if !self.is_following_now() && self.new_below > 0 {
            self.draw_new_marker(area, buf, ctx);
        }
    }

    fn is_following_now(&self) -> bool {
        self.anchor.is_none()
    }

    fn draw_new_marker(&self, area: Rect, buf: &mut Buffer, ctx: &RenderCtx<'_>) {
        let label = format!(" ↓ {} new ", self.new_below);
        let w = crate::tui::wrap::str_width(&label) as u16;
        if area.width < w || area.height == 0 {
            return;
        }
        let x = area.x + area.width - w;
        let y = area.y + area.height - 1;
        let style = Style::new()
            .fg(ctx.theme.selection_fg)
            .bg(ctx.theme.accent)
            .add_modifier(Modifier::BOLD);
        buf.set_line(x, y, &Line::from(Span::styled(label, style)), w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::model::cell::CellKind;
    use crate::tui::theme::Theme;
    use std::time::Instant;

    fn text_at(buf: &Buffer, y: u16) -> String {
        (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect()
    }

    #[test]
    fn scrolling_through_a_long_history_keeps_a_bounded_layout() {
        let theme = Theme::dark();
        let ctx = RenderCtx {
            theme: &theme,
            now: Instant::now(),
            spinner: 0,
            expand_all: false,
        };
        let mut conv = Conversation::default();
        let n = 3 * WARM_CELLS;
        let cells: Vec<Cell> = (0..n)
            .map(|i| Cell::new(CellKind::User(format!("message {i}"))))
            .collect();
        let area = Rect::new(0, 0, 40, 10);
        let mut buf = Buffer::empty(area);
        conv.render(area, &mut buf, &ctx, &cells);
        let laid = |c: &Conversation| c.layouts.iter().filter(|l| l.is_laid_out()).count();
        assert!(laid(&conv) <= 10, "only the bottom is laid out at first");
        conv.to_top();
        conv.render(area, &mut buf, &ctx, &cells);
        assert_eq!(text_at(&buf, 0).trim_end(), "› message 0");
        // Page down through everything.
        while !conv.is_following() {
            conv.page(1);
            buf = Buffer::empty(area);
            conv.render(area, &mut buf, &ctx, &cells);
            assert!(laid(&conv) <= WARM_CELLS + 10, "{}", laid(&conv));
        }
        assert!(text_at(&buf, 9).contains(&format!("message {}", n - 1)));
        // Evicted cells lay themselves out again when shown.
        conv.to_top();
        buf = Buffer::empty(area);
        conv.render(area, &mut buf, &ctx, &cells);
        assert_eq!(text_at(&buf, 0).trim_end(), "› message 0");
    }
}
