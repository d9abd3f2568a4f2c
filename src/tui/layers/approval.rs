//! A question (approval) as a layer: the request in front of the queue, its keys, its pane
//! and the hints for its keys. The queue and the clock stay with the app; the layer is
//! built over them for one key or one frame.

use super::Layer;
use crate::protocol::{ApprovalMode, ApprovalRequest, Decision, ToolDisplay};
use crate::tui::theme::Theme;
use crate::tui::view::approval::{self, ApprovalView};
use crate::tui::view::status::{Hint, Hints, Tone};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// What a key in a question asks of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAction {
    /// Nothing for the app (scrolled, typed in the note).
    None,
    /// Answer the request in front.
    Answer(Decision),
    /// A first Esc: refuse, unless a second Esc soon stops the turn.
    StartRefusing,
    /// Refuse everything asked and stop the turn.
    RefuseAndStop,
    /// No second Esc came: send the refusal now.
    SendRefusal,
    /// Shift+Tab: accept edits and say yes (an edit), else cycle the mode.
    ShiftTab,
}

/// The question in front of the queue, over the app's state for it.
pub struct ApprovalLayer<'a> {
    /// The request asked.
    pub request: &'a ApprovalRequest,
    /// Its pane's state (note, scroll).
    pub view: &'a mut ApprovalView,
    /// Which of how many pending questions it is.
    pub pos: usize,
    /// Questions pending in all (answered ones of this run included).
    pub total: usize,
    /// A first Esc refused it and a second may follow.
    pub refusing: bool,
    /// The approval mode in force (Shift+Tab's meaning depends on it).
    pub mode: ApprovalMode,
}

impl ApprovalLayer<'_> {
    /// Rows the pane would like at `width`.
    pub fn wanted_height(&mut self, width: u16, theme: &Theme) -> u16 {
        approval::wanted_height(self.request, self.view, width, theme)
    }

    /// Shift+Tab on an edit means "yes, and accept edits from now on".
    pub fn shift_tab_accepts(&self) -> bool {
        matches!(self.request.display, ToolDisplay::Edit { .. })
            && self.mode != ApprovalMode::AcceptEdits
    }

    /// Keys while the note is typed.
    fn note_key(&mut self, key: KeyEvent) -> ApprovalAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let view = &mut *self.view;
        match key.code {
            KeyCode::Enter | KeyCode::Tab => view.editing_note = false,
            KeyCode::Esc => {
                view.note.clear();
                view.editing_note = false;
            }
            KeyCode::Backspace => {
                view.note.pop();
            }
            KeyCode::Char('u') if ctrl => view.note.clear(),
            KeyCode::Char(c) if !ctrl => view.note.push(c),
            _ => {}
        }
        ApprovalAction::None
    }
}

impl Layer for ApprovalLayer<'_> {
    type Action = ApprovalAction;

    fn on_key(&mut self, key: KeyEvent) -> ApprovalAction {
        if self.view.editing_note {
            return self.note_key(key);
        }
        if self.refusing {
            // A second Esc refuses and stops, as Ctrl+C does. Another key means no second
            // Esc is coming; it is not meant for the next question, not seen yet.
            return if key.code == KeyCode::Esc {
                ApprovalAction::RefuseAndStop
            } else {
                ApprovalAction::SendRefusal
            };
        }
        let always = self.request.always.is_some();
        let scroll = &mut self.view.scroll;
        let page = scroll.page();
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                return ApprovalAction::Answer(Decision::Yes);
            }
            KeyCode::Char('a') | KeyCode::Char('A') if always => {
                return ApprovalAction::Answer(Decision::Always);
            }
            KeyCode::Char('n') | KeyCode::Char('N') => return ApprovalAction::Answer(Decision::No),
            KeyCode::Esc => {
                self.view.refusing = true;
                return ApprovalAction::StartRefusing;
            }
            KeyCode::BackTab => return ApprovalAction::ShiftTab,
            KeyCode::Tab if key.modifiers.contains(KeyModifiers::SHIFT) => {
                return ApprovalAction::ShiftTab;
            }
            KeyCode::Tab => self.view.editing_note = true,
            KeyCode::Up | KeyCode::Char('k') => scroll.scroll_by(-1),
            KeyCode::Down | KeyCode::Char('j') => scroll.scroll_by(1),
            KeyCode::PageUp => scroll.scroll_by(-page),
            KeyCode::PageDown | KeyCode::Char(' ') => scroll.scroll_by(page),
            KeyCode::Home => scroll.scroll_by(i64::MIN / 2),
            KeyCode::End => scroll.scroll_by(i64::MAX / 2),
            _ => {}
        }
        ApprovalAction::None
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let (pos, total) = (self.pos, self.total);
        approval::render(self.request, pos, total, self.view, area, buf, theme);
    }

    fn hints(&self) -> Option<Hints> {
        // The clock stops while rein waits for the person; the turn's run time is kept.
        let lead = Some(("waiting for you".to_string(), Tone::Warning));
        let keys = if self.view.editing_note {
            vec![
                Hint::new("enter", "keep note"),
                Hint::new("esc", "drop note"),
            ]
        } else {
            let shift_tab = if self.shift_tab_accepts() {
                "yes, accept edits from now on"
            } else {
                "mode"
            };
            vec![Hint::new("↑↓", "scroll"), Hint::new("shift+tab", shift_tab)]
        };
        Some(Hints { lead, keys })
    }
}
