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

use super::cell::{Cell, RenderCtx};
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

/// The conversation: cells plus scroll state.
#[derive(Debug, Default)]
pub struct Conversation {
    cells: Vec<Cell>,
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
    /// All cells.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Consumes the conversation, returning its cells.
    pub fn into_cells(self) -> Vec<Cell> {
        self.cells
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// A cell by index.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Cell> {
        self.cells.get_mut(i)
    }

    /// The last cell.
    pub fn last_mut(&mut self) -> Option<&mut Cell> {
        self.cells.last_mut()
    }

    /// Mutable access to every cell (theme switch, expand all).
    pub fn cells_mut(&mut self) -> &mut [Cell] {
        &mut self.cells
    }

    /// Reserves room for `n` more cells (a resumed history).
    pub fn reserve(&mut self, n: usize) {
        self.cells.reserve(n);
    }

    /// Appends a cell; counts it as new when the view is scrolled up.
    pub fn push(&mut self, cell: Cell) {
        if self.anchor.is_some() {
            self.new_below += 1;
        }
        self.cells.push(cell);
    }

    /// Removes cell `i` (a retried response's partial text).
    pub fn remove(&mut self, i: usize) {
        if i >= self.cells.len() {
            return;
        }
        self.cells.remove(i);
        if let Some(a) = &mut self.anchor {
            if a.cell > i {
                a.cell -= 1;
            } else if a.cell == i {
                a.row = 0;
            }
            if a.cell >= self.cells.len() {
                self.anchor = None;
                self.new_below = 0;
            }
        }
    }

    /// Removes every cell and follows the bottom again.
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

    /// Shows cell `i` at the top (a picker's "jump to message"; benchmarks).
    pub fn scroll_to_cell(&mut self, i: usize) {
        if i < self.cells.len() {
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
    fn height(&mut self, i: usize, width: usize, ctx: &RenderCtx<'_>) -> usize {
        let sep = usize::from(i > 0);
        self.note_laid_out(i);
        self.cells[i].lines(width, ctx).len() + sep
    }

    /// Remembers that cell `i` is about to hold a layout.
    fn note_laid_out(&mut self, i: usize) {
        if !self.cells[i].is_laid_out() {
            self.warm.push_back(i);
        }
    }

    /// Frees the layout of the least recently laid out cells outside `visible`.
    fn evict(&mut self, visible: std::ops::RangeInclusive<usize>) {
        let mut kept = 0;
        while self.warm.len() > WARM_CELLS && kept < self.warm.len() {
            let Some(j) = self.warm.pop_front() else {
                break;
            };
            if visible.contains(&j) {
                self.warm.push_back(j);
                kept += 1;
            } else if let Some(cell) = self.cells.get_mut(j) {
                cell.drop_layout();
            }
        }
    }

    /// The anchor that shows the bottom of the conversation.
    fn bottom_anchor(&mut self, height: usize, width: usize, ctx: &RenderCtx<'_>) -> Anchor {
        let mut need = height;
        let mut i = self.cells.len();
        while i > 0 {
            i -= 1;
            let h = self.height(i, width, ctx);
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
    fn fills(&mut self, a: Anchor, height: usize, width: usize, ctx: &RenderCtx<'_>) -> bool {
        let mut rows = 0;
        for i in a.cell..self.cells.len() {
            let h = self.height(i, width, ctx);
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
            a.row = self.height(a.cell, width, ctx);
        }
    }

    fn move_down(
        &mut self,
        mut a: Anchor,
        mut n: usize,
        width: usize,
        ctx: &RenderCtx<'_>,
    ) -> Anchor {
        loop {
            let h = self.height(a.cell, width, ctx);
            if a.row + n < h {
                a.row += n;
                return a;
            }
            n -= h - a.row;
            if a.cell + 1 >= self.cells.len() {
                a.row = h.saturating_sub(1);
                return a;
            }
            a.cell += 1;
            a.row = 0;
        }
    }

    /// Draws the visible cells into `area`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, ctx: &RenderCtx<'_>) {
        self.area = area;
        self.rows.clear();
        self.rows.resize(usize::from(area.height), None);
        let height = usize::from(area.height);
        if height == 0 || area.width == 0 || self.cells.is_empty() {
            self.pending = 0;
            self.jump_top = false;
            return;
        }
        let width = Self::content_width(area);
        let mut top = match (self.jump_top, self.anchor) {
            (true, _) => Anchor { cell: 0, row: 0 },
            (false, Some(a)) => {
                // The cell may have shrunk (resize, retry): keep the anchor inside it.
                let cell = a.cell.min(self.cells.len() - 1);
                let h = self.height(cell, width, ctx);
                Anchor {
                    cell,
                    row: a.row.min(h.saturating_sub(1)),
                }
            }
            (false, None) => self.bottom_anchor(height, width, ctx),
        };
        let was_following = self.anchor.is_none() && !self.jump_top;
        self.jump_top = false;
        let pending = std::mem::take(&mut self.pending);
        if pending < 0 {
            top = self.move_up(top, pending.unsigned_abs() as usize, width, ctx);
        } else if pending > 0 && !was_following {
            top = self.move_down(top, pending as usize, width, ctx);
        }
        if self.fills(top, height + 1, width, ctx) {
            self.anchor = Some(top);
        } else {
            // At (or past) the bottom: follow again.
            self.anchor = None;
            self.new_below = 0;
            top = self.bottom_anchor(height, width, ctx);
        }
        self.draw_from(top, area, buf, ctx, width);
    }

    fn draw_from(
        &mut self,
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
        for i in top.cell..self.cells.len() {
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
            let marker = self.cells[i].marker(ctx);
            let lines = self.cells[i].lines(width, ctx);
            for (row, line) in lines.iter().enumerate().skip(skip) {
                if y >= height {
                    break;
                }
                let sy = area.y + y as u16;
                if row == 0
                    && let Some(m) = &marker
                {
                    buf.set_span(area.x, sy, m, GUTTER.min(area.width));
                }
                buf.set_line(content_x, sy, line, content_w);
                self.rows[y] = Some(i);
                y += 1;
            }
            skip = 0;
        }
        self.evict(top.cell..=last);
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
    use crate::tui::theme::Theme;
    use crate::tui::view::cell::CellKind;
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
        for i in 0..n {
            conv.push(Cell::new(CellKind::User(format!("message {i}"))));
        }
        let area = Rect::new(0, 0, 40, 10);
        let mut buf = Buffer::empty(area);
        conv.render(area, &mut buf, &ctx);
        let laid = |c: &Conversation| c.cells.iter().filter(|c| c.is_laid_out()).count();
        assert!(laid(&conv) <= 10, "only the bottom is laid out at first");
        conv.to_top();
        conv.render(area, &mut buf, &ctx);
        assert_eq!(text_at(&buf, 0).trim_end(), "› message 0");
        // Page down through everything.
        while !conv.is_following() {
            conv.page(1);
            buf = Buffer::empty(area);
            conv.render(area, &mut buf, &ctx);
            assert!(laid(&conv) <= WARM_CELLS + 10, "{}", laid(&conv));
        }
        assert!(text_at(&buf, 9).contains(&format!("message {}", n - 1)));
        // Evicted cells lay themselves out again when shown.
        conv.to_top();
        buf = Buffer::empty(area);
        conv.render(area, &mut buf, &ctx);
        assert_eq!(text_at(&buf, 0).trim_end(), "› message 0");
    }
}
