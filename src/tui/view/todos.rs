//! The todo panel above the composer: shown while the list is non-empty (Ctrl+T hides it).

use super::cell::{SPINNER, STILL, todo_line};
use crate::protocol::{Todo, TodoStatus};
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// Item rows at most.
pub const MAX_ROWS: usize = 8;

/// Rows the panel wants (title + items), 0 when hidden or empty.
pub fn height(todos: &[Todo], hidden: bool) -> u16 {
    if hidden || todos.is_empty() {
        0
    } else {
        (todos.len().min(MAX_ROWS) + 1) as u16
    }
}

/// Draws the panel.
/// `spinner` is the frame while a turn runs; `None` draws a still marker (idle means still).
pub fn render(todos: &[Todo], area: Rect, buf: &mut Buffer, theme: &Theme, spinner: Option<usize>) {
    if area.height == 0 || area.width < 4 {
        return;
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let title = Line::from(vec![
        Span::styled("─ ", theme.fg(theme.border)),
        Span::styled(
            "Todos ",
            theme.fg(theme.accent).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("{done}/{} ", todos.len()), theme.dim()),
        Span::styled("─".repeat(usize::from(area.width)), theme.fg(theme.border)),
    ]);
    buf.set_line(area.x, area.y, &title, area.width);
    let rows = usize::from(area.height - 1);
    if rows == 0 {
        return;
    }
    // Keep the item in progress in view: start a little before it when the list is long.
    let focus = todos
        .iter()
        .position(|t| t.status == TodoStatus::InProgress)
        .or_else(|| todos.iter().position(|t| t.status == TodoStatus::Pending))
        .unwrap_or(0);
    let start = if todos.len() <= rows {
        0
    } else {
        focus.saturating_sub(rows / 3).min(todos.len() - rows)
    };
    let glyph = spinner.map_or(STILL, |s| SPINNER[s % SPINNER.len()]);
    let width = usize::from(area.width.saturating_sub(2)).max(1);
    for (row, todo) in todos.iter().skip(start).take(rows).enumerate() {
        let mut lines = Vec::new();
        todo_line(todo, theme, glyph)
            .wrapped(crate::tui::wrap::Wrap::Cut)
            .layout(width, &mut lines);
        if let Some(line) = lines.first() {
            buf.set_line(
                area.x + 2,
                area.y + 1 + row as u16,
                line,
                area.width.saturating_sub(2),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(content: &str, active: &str, status: TodoStatus) -> Todo {
        Todo {
            content: content.into(),
            active_form: active.into(),
            status,
        }
    }

    fn rows(buf: &Buffer) -> Vec<String> {
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn the_panel_counts_done_items_and_shows_the_active_form() {
        let todos = [
            todo(
                "Read the parser",
                "Reading the parser",
                TodoStatus::Completed,
            ),
            todo("Fix the loop", "Fixing the loop", TodoStatus::InProgress),
            todo(
                "Run a very long test suite name",
                "Running",
                TodoStatus::Pending,
            ),
        ];
        let theme = Theme::dark();
        let area = Rect::new(0, 0, 28, height(&todos, false));
        let mut buf = Buffer::empty(area);
        render(&todos, area, &mut buf, &theme, None);
        assert_eq!(
            rows(&buf),
            [
                "─ Todos 1/3 ────────────────",
                "  ☑ Read the parser         ",
                &format!("  {STILL} Fixing the loop         "),
                "  ☐ Run a very long test su…",
            ]
        );
        // The done item is struck through, the active one bold in the accent colour.
        let done = &buf[(4, 1)];
        assert!(done.modifier.contains(Modifier::CROSSED_OUT));
        let active = &buf[(4, 2)];
        assert!(active.modifier.contains(Modifier::BOLD));
        assert_eq!(active.fg, theme.accent);
        assert_eq!(height(&todos, true), 0, "hidden");
    }
}
