//! Markdown tables: column widths fit the screen, cells wrap inside their column.

use crate::tui::theme::Theme;
use crate::tui::wrap::{Wrap, spans_width};
use pulldown_cmark::Alignment;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// A table waiting for a width.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub(super) prefix: Vec<Span<'static>>,
    pub(super) aligns: Vec<Alignment>,
    pub(super) header: Vec<Vec<Span<'static>>>,
    pub(super) rows: Vec<Vec<Vec<Span<'static>>>>,
}

impl Table {
    pub(super) fn layout(&self, width: usize, theme: &Theme, out: &mut Vec<Line<'static>>) {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(self.header.len()))
            .max()
            .unwrap_or(0);
        if ncols == 0 {
            return;
        }
        let mut natural = vec![1usize; ncols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, cell) in row.iter().enumerate() {
                natural[i] = natural[i].max(spans_width(cell));
            }
        }
        let sep_w = 3 * (ncols - 1);
        let avail = width
            .saturating_sub(spans_width(&self.prefix) + sep_w)
            .max(ncols);
        let widths = fit_columns(&natural, avail);
        let border = theme.fg(theme.border);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        if !self.header.is_empty() {
            self.layout_row(&self.header, &widths, Some(bold), out, border);
            let mut spans = self.prefix.clone();
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            spans.push(Span::styled(rule.join("─┼─"), border));
            out.push(Line::from(spans));
        }
        for row in &self.rows {
            self.layout_row(row, &widths, None, out, border);
        }
    }

    fn layout_row(
        &self,
        row: &[Vec<Span<'static>>],
        widths: &[usize],
        patch: Option<Style>,
        out: &mut Vec<Line<'static>>,
        border: Style,
    ) {
        let empty = Vec::new();
        let cells: Vec<Vec<Line<'static>>> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let mut spans = row.get(i).unwrap_or(&empty).clone();
                if let Some(p) = patch {
                    for s in &mut spans {
                        s.style = s.style.patch(p);
                    }
                }
                let mut lines = Vec::new();
                crate::tui::wrap::wrap_spans(&spans, *w, &[], &[], Wrap::Word, &mut lines);
                lines
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for y in 0..height {
            let mut spans = self.prefix.clone();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │ ", border));
                }
                let line = cells[i].get(y);
                let used = line.map_or(0, |l| spans_width(&l.spans));
                let pad = w.saturating_sub(used);
                let (left, right) = match self.aligns.get(i) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                if left > 0 {
                    spans.push(Span::raw(" ".repeat(left)));
                }
                if let Some(line) = line {
                    spans.extend(line.spans.iter().cloned());
                }
                // The last column needs no padding on the right.
                if right > 0 && i + 1 < widths.len() {
                    spans.push(Span::raw(" ".repeat(right)));
                }
            }
            out.push(Line::from(spans));
        }
    }
}

/// Column widths: natural widths when they fit, else the largest columns are capped evenly.
fn fit_columns(natural: &[usize], avail: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= avail {
        return natural.to_vec();
    }
    // Largest cap such that the capped widths fit (binary search: caps are monotone).
    let (mut lo, mut hi) = (1usize, natural.iter().copied().max().unwrap_or(1));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let sum: usize = natural.iter().map(|n| (*n).min(mid)).sum();
        if sum <= avail {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    natural.iter().map(|n| (*n).min(lo).max(1)).collect()
}
