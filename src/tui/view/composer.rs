//! The composer: a textarea that grows to ~10 lines, collapses large pastes, and walks the
//! input history on Up/Down when empty.

use crate::tui::theme::Theme;
use crate::tui::wrap::str_width;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui_textarea::{CursorMove, DataCursor, Input, TextArea, WrapMode};

/// Visible rows before the composer scrolls.
pub const MAX_ROWS: u16 = 10;
/// Pastes with more lines than this collapse to `[pasted N lines]`.
const PASTE_LINES: usize = 5;
/// Pastes with more characters than this collapse too.
const PASTE_CHARS: usize = 1_500;
/// History entries kept in memory.
const HISTORY_MAX: usize = 1_000;

/// The text being typed.
#[derive(Debug)]
pub struct Composer {
    textarea: TextArea<'static>,
    /// (placeholder, content) of collapsed pastes.
    pastes: Vec<(String, String)>,
    history: Vec<String>,
    /// Index into `history` while walking it.
    walk: Option<usize>,
    /// A turn runs: what is typed now is queued (the placeholder says so).
    busy: bool,
}

impl Composer {
    /// An empty composer with the persisted input history (oldest first).
    pub fn new(mut history: Vec<String>) -> Composer {
        if history.len() > HISTORY_MAX {
            history.drain(..history.len() - HISTORY_MAX);
        }
        Composer {
            textarea: new_textarea(),
            pastes: Vec::new(),
            history,
            walk: None,
            busy: false,
        }
    }

    /// Tells the composer whether a turn runs (changes the placeholder).
    pub fn set_busy(&mut self, busy: bool) {
        if busy != self.busy {
            self.busy = busy;
            self.textarea.set_placeholder_text(placeholder(busy));
        }
    }

    /// The text as shown (pastes collapsed).
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.textarea.is_empty()
    }

    /// Whether the text is a `!command` (run as a shell command, not sent to the model).
    pub fn is_shell_command(&self) -> bool {
        self.textarea
            .lines()
            .first()
            .is_some_and(|l| l.trim_start().starts_with('!'))
    }

    /// Empties the composer.
    pub fn clear(&mut self) {
        self.textarea = new_textarea();
        self.textarea.set_placeholder_text(placeholder(self.busy));
        self.pastes.clear();
        self.walk = None;
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.textarea = new_textarea();
        self.textarea.set_placeholder_text(placeholder(self.busy));
        self.textarea.insert_str(text);
    }

    /// Takes the message to send: the text with collapsed pastes expanded. Empties the
    /// composer and records the message in the history.
    pub fn take(&mut self) -> String {
        let mut text = self.text();
        for (placeholder, content) in &self.pastes {
            if let Some(at) = text.find(placeholder.as_str()) {
                text.replace_range(at..at + placeholder.len(), content);
            }
        }
        self.clear();
        text
    }

    /// Adds a sent message to the in-memory history.
    pub fn remember(&mut self, text: &str) {
        if text.trim().is_empty() || self.history.last().is_some_and(|l| l == text) {
            return;
        }
        self.history.push(text.to_string());
        if self.history.len() > HISTORY_MAX {
            self.history.remove(0);
        }
    }

    /// Inserts pasted text; a large paste shows as `[pasted N lines]` but is sent whole.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        let chars = text.chars().count();
        if lines > PASTE_LINES || chars > PASTE_CHARS {
            let base = if lines > PASTE_LINES {
                format!("[pasted {lines} lines]")
            } else {
                format!("[pasted {chars} chars]")
            };
            let mut placeholder = base.clone();
            let mut n = 2;
            while self.pastes.iter().any(|(p, _)| *p == placeholder) {
                placeholder = format!("{} #{n}]", base.trim_end_matches(']'));
                n += 1;
            }
            self.textarea.insert_str(&placeholder);
            self.pastes.push((placeholder, text));
        } else {
            self.textarea.insert_str(&text);
        }
        self.walk = None;
    }

    /// Feeds a key to the textarea.
    pub fn input(&mut self, input: Input) {
        if self.textarea.input(input) {
            self.walk = None;
        }
    }

    /// Inserts a line break at the cursor.
    pub fn newline(&mut self) {
        self.textarea.insert_newline();
        self.walk = None;
    }

    /// Deletes from the cursor to the start of the line (readline's Ctrl+U).
    pub fn delete_to_line_start(&mut self) {
        self.textarea.delete_line_by_head();
    }

    /// Whether Up/Down should walk the history instead of moving the cursor.
    pub fn walks_history(&self) -> bool {
        match self.walk {
            None => self.is_empty(),
            Some(i) => self.history.get(i).is_some_and(|h| *h == self.text()),
        }
    }

    /// Whether the text is a recalled history entry, unchanged.
    pub fn is_recalled(&self) -> bool {
        self.walk
            .and_then(|i| self.history.get(i))
            .is_some_and(|h| *h == self.text())
    }

    /// Recalls the previous (older) history entry.
    pub fn history_prev(&mut self) -> bool {
        let next = match self.walk {
            None => self.history.len().checked_sub(1),
            Some(i) => i.checked_sub(1),
        };
        let Some(i) = next else {
            return false;
        };
        let entry = self.history[i].clone();
        self.set_text(&entry);
        self.walk = Some(i);
        true
    }

    /// Recalls the next (newer) entry, or empties the composer after the newest.
    pub fn history_next(&mut self) -> bool {
        let Some(i) = self.walk else {
            return false;
        };
        if i + 1 < self.history.len() {
            let entry = self.history[i + 1].clone();
            self.set_text(&entry);
            self.walk = Some(i + 1);
        } else {
            self.textarea = new_textarea();
            self.textarea.set_placeholder_text(placeholder(self.busy));
            self.walk = None;
        }
        true
    }

    /// The whitespace-delimited word that ends at the cursor: (row, start column, word).
    pub fn word_at_cursor(&self) -> (usize, usize, String) {
        let DataCursor(row, col) = self.textarea.cursor();
        let line = self
            .textarea
            .lines()
            .get(row)
            .map(String::as_str)
            .unwrap_or("");
        let before: Vec<char> = line.chars().take(col).collect();
        let start = before
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |p| p + 1);
        (row, start, before[start..].iter().collect())
    }

    /// Replaces the word ending at the cursor (from `start`) with `with`.
    pub fn replace_word(&mut self, row: usize, start: usize, with: &str) {
        let DataCursor(_, col) = self.textarea.cursor();
        let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(start)) else {
            return;
        };
        self.textarea.move_cursor(CursorMove::Jump(r, c));
        self.textarea.delete_str(col.saturating_sub(start));
        self.textarea.insert_str(with);
        self.walk = None;
    }

    /// Rows the composer wants at `width` (text rows plus the top rule).
    pub fn height(&self, width: u16) -> u16 {
        let w = usize::from(width.saturating_sub(2)).max(1);
        let rows: usize = self
            .textarea
            .lines()
            .iter()
            .map(|l| (str_width(l) + 1).div_ceil(w).max(1))
            .sum();
        (rows.clamp(1, usize::from(MAX_ROWS)) as u16) + 1
    }

    /// Draws the composer: a rule with `title`, then the prompt marker and the text.
    pub fn render(
        &self,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        title: Option<Line<'static>>,
        busy: bool,
    ) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let rule = "─".repeat(usize::from(area.width));
        buf.set_line(
            area.x,
            area.y,
            &Line::styled(rule, theme.fg(theme.border)),
            area.width,
        );
        if let Some(title) = title {
            buf.set_line(
                area.x + 1.min(area.width),
                area.y,
                &title,
                area.width.saturating_sub(1),
            );
        }
        if area.height < 2 {
            return;
        }
        let marker_style = if busy {
            theme.dim()
        } else {
            theme.fg(theme.accent).add_modifier(Modifier::BOLD)
        };
        buf.set_span(area.x, area.y + 1, &Span::styled("›", marker_style), 1);
        // Under the rule, right of the marker.
        let [_, below] = Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
        let [_, text_area] =
            Layout::horizontal([Constraint::Length(2), Constraint::Fill(1)]).areas(below);
        if text_area.width > 0 {
            (&self.textarea).render(text_area, buf);
        }
    }

    /// Applies the theme's colours.
    pub fn set_theme(&mut self, theme: &Theme) {
        self.textarea.set_placeholder_style(theme.dim());
        self.textarea.set_style(theme.text());
    }
}

fn placeholder(busy: bool) -> &'static str {
    if busy {
        "Type to queue a message for when the turn ends · esc interrupts"
    } else {
        "Ask rein anything · / commands · @ files"
    }
}

fn new_textarea() -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_cursor_line_style(Style::default());
    t.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    t.set_wrap_mode(WrapMode::WordOrGlyph);
    t.set_placeholder_text(placeholder(false));
    t.set_placeholder_style(Style::default().add_modifier(Modifier::DIM));
    t.set_max_histories(200);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_pastes_collapse_but_are_sent_whole() {
        let mut c = Composer::new(Vec::new());
        c.input(Input {
            key: ratatui_textarea::Key::Char('x'),
            ..Input::default()
        });
        let big: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        c.paste(&big);
        c.paste(&big);
        assert_eq!(c.text(), "x[pasted 20 lines][pasted 20 lines #2]");
        let sent = c.take();
        assert_eq!(sent, format!("x{big}{big}"));
        assert!(c.is_empty());

        c.paste("two\r\nlines");
        assert_eq!(c.text(), "two\nlines");
    }

    #[test]
    fn history_walks_only_from_an_empty_or_recalled_composer() {
        let mut c = Composer::new(vec!["first".into(), "second".into()]);
        assert!(c.walks_history());
        assert!(c.history_prev());
        assert_eq!(c.text(), "second");
        assert!(c.walks_history());
        assert!(c.history_prev());
        assert_eq!(c.text(), "first");
        assert!(!c.history_prev(), "stops at the oldest");
        assert!(c.history_next());
        assert_eq!(c.text(), "second");
        assert!(c.history_next());
        assert_eq!(c.text(), "");
        // Edited text is not replaced by history.
        c.set_text("draft");
        assert!(!c.walks_history());
    }

    #[test]
    fn grows_to_ten_rows_then_scrolls() {
        let mut c = Composer::new(Vec::new());
        assert_eq!(c.height(40), 2);
        c.set_text(&"line\n".repeat(30));
        assert_eq!(c.height(40), MAX_ROWS + 1);
        let (row, start, word) = {
            c.set_text("look at @src/ma");
            c.word_at_cursor()
        };
        assert_eq!((row, start, word.as_str()), (0, 8, "@src/ma"));
        c.replace_word(row, start, "@src/main.rs ");
        assert_eq!(c.text(), "look at @src/main.rs ");
    }
}
