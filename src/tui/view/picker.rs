//! A selectable list: the slash command and `@` file popups. (The full-screen session picker
//! of `--resume` is `session_picker.rs`.)

use crate::tui::theme::Theme;
use crate::tui::wrap::{str_width, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Padding, Widget};

/// One row of a picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerItem {
    /// Main text.
    pub label: String,
    /// Secondary text, dim, right of the label.
    pub detail: String,
    /// Char indices of `label` that matched the filter (drawn bold).
    pub matched: Vec<u32>,
}

impl PickerItem {
    /// An item without match highlights.
    pub fn new(label: impl Into<String>, detail: impl Into<String>) -> PickerItem {
        PickerItem {
            label: label.into(),
            detail: detail.into(),
            matched: Vec::new(),
        }
    }
}

/// Items, a selection and a scroll offset.
#[derive(Clone, Debug, Default)]
pub struct Picker {
    /// Title on the border.
    pub title: String,
    /// Rows.
    pub items: Vec<PickerItem>,
    /// Selected row.
    pub selected: usize,
    /// Shown when there are no items.
    pub empty_text: String,
    offset: usize,
}

impl Picker {
    /// A picker with items.
    pub fn new(title: impl Into<String>, items: Vec<PickerItem>) -> Picker {
        Picker {
            title: title.into(),
            items,
            ..Picker::default()
        }
    }

    /// Replaces the items, keeping the selection in range.
    pub fn set_items(&mut self, items: Vec<PickerItem>) {
        self.items = items;
        self.selected = self.selected.min(self.items.len().saturating_sub(1));
    }

    /// Moves the selection (wrapping around).
    pub fn move_by(&mut self, n: i64) {
        let len = self.items.len() as i64;
        if len == 0 {
            return;
        }
        self.selected = (self.selected as i64 + n).rem_euclid(len) as usize;
    }

    /// The selected item.
    pub fn selected_item(&self) -> Option<&PickerItem> {
        self.items.get(self.selected)
    }

    /// Rows it wants when at most `max` item rows are allowed (including borders).
    pub fn height(&self, max: u16) -> u16 {
        let rows = self.items.len().max(1).min(usize::from(max));
        rows as u16 + 2
    }

    /// Draws the picker in `area` (borders included).
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        if area.height < 3 || area.width < 6 {
            return;
        }
        Clear.render(area, buf);
        // One column of padding inside the border.
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Rounded)
            .border_style(theme.fg(theme.border))
            .padding(Padding::horizontal(1))
            .title(Span::styled(format!(" {} ", self.title), theme.dim()));
        let inner = block.inner(area);
        block.render(area, buf);
        let rows = usize::from(inner.height);
        if self.items.is_empty() {
            buf.set_line(
                inner.x,
                inner.y,
                &Line::styled(self.empty_text.clone(), theme.dim()),
                inner.width,
            );
            return;
        }
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + rows {
            self.offset = self.selected + 1 - rows;
        }
        let width = usize::from(inner.width);
        // Details start in one column, after the widest label (within reason).
        let label_w = self
            .items
            .iter()
            .map(|i| str_width(&crate::tui::wrap::one_line(&i.label)))
            .max()
            .unwrap_or(0)
            .min(width / 2);
        for (row, (i, item)) in self
            .items
            .iter()
            .enumerate()
            .skip(self.offset)
            .take(rows)
            .enumerate()
        {
            let line = Self::item_line(item, i == self.selected, label_w, width, theme);
            buf.set_line(inner.x, inner.y + row as u16, &line, inner.width);
        }
    }

    /// One row: the label (matched characters stand out), its detail in the column after
    /// the widest label, the selection's background to the edge.
    fn item_line(
        item: &PickerItem,
        selected: bool,
        label_w: usize,
        width: usize,
        theme: &Theme,
    ) -> Line<'static> {
        let base = if selected {
            theme.selected()
        } else {
            theme.text()
        };
        let mut spans = Vec::new();
        let clean = crate::tui::wrap::one_line(&item.label);
        let label = truncate(&clean, width.saturating_sub(2));
        for (ci, ch) in label.chars().enumerate() {
            let style = if item.matched.contains(&(ci as u32)) {
                base.add_modifier(Modifier::BOLD).fg(if selected {
                    theme.selection_fg
                } else {
                    theme.accent
                })
            } else {
                base
            };
            crate::tui::wrap::push_span(&mut spans, ch.encode_utf8(&mut [0u8; 4]), style);
        }
        let used = str_width(&label).max(label_w);
        let room = width.saturating_sub(used + 3);
        if !item.detail.is_empty() && room > 4 {
            let detail_style = if selected { base } else { theme.dim() };
            let pad = used - str_width(&label);
            spans.push(Span::styled(" ".repeat(pad + 2), base));
            spans.push(Span::styled(
                truncate(&item.detail, room).into_owned(),
                detail_style,
            ));
        }
        let fill = width.saturating_sub(crate::tui::wrap::spans_width(&spans));
        spans.push(Span::styled(
            " ".repeat(fill),
            if selected { base } else { Style::new() },
        ));
        Line::from(spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_wraps_and_stays_in_range() {
        let mut p = Picker::new(
            "t",
            vec![PickerItem::new("a", ""), PickerItem::new("b", "")],
        );
        p.move_by(-1);
        assert_eq!(p.selected, 1);
        p.move_by(1);
        assert_eq!(p.selected, 0);
        p.selected = 1;
        p.set_items(vec![PickerItem::new("only", "")]);
        assert_eq!(p.selected, 0);
        assert_eq!(p.height(8), 3);
    }
}
