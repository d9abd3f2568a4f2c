//! The small pickers that float over the conversation: the `/model` picker and the
//! completion popup of `/commands` and `@files`.

use super::Layer;
use crate::tui::theme::Theme;
use crate::tui::view::picker::Picker;
use crate::tui::view::status::{Hint, Hints};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The `/model` picker: empty and loading until the server's list arrives.
#[derive(Debug)]
pub struct ModelPicker {
    /// The models.
    pub picker: Picker,
}

/// What a key in the model picker asks of the app.
#[derive(Debug, PartialEq, Eq)]
pub enum ModelAction {
    /// The picker stays open.
    Stay,
    /// Close it.
    Close,
    /// Close it and switch to this model (`None`: nothing was listed).
    Choose(Option<String>),
}

impl Layer for ModelPicker {
    type Action = ModelAction;

    fn on_key(&mut self, key: KeyEvent) -> ModelAction {
        let picker = &mut self.picker;
        match key.code {
            KeyCode::Up => picker.move_by(-1),
            KeyCode::Down => picker.move_by(1),
            KeyCode::PageUp => picker.move_by(-8),
            KeyCode::PageDown => picker.move_by(8),
            KeyCode::Esc => return ModelAction::Close,
            KeyCode::Enter => {
                return ModelAction::Choose(picker.selected_item().map(|i| i.label.clone()));
            }
            _ => {}
        }
        ModelAction::Stay
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.picker.render(area, buf, theme);
    }

    fn hints(&self) -> Option<Hints> {
        Some(Hints::keys([
            Hint::new("↑↓", "select"),
            Hint::new("enter", "switch"),
            Hint::new("esc", "close"),
        ]))
    }
}

/// Which completion popup is open.
#[derive(Debug)]
pub(crate) enum PopupKind {
    /// Slash commands.
    Slash,
    /// Files for `@` (row and start column of the `@word` in the composer).
    File { row: usize, start: usize },
}

/// An open completion popup.
#[derive(Debug)]
pub(crate) struct Popup {
    pub(crate) kind: PopupKind,
    pub(crate) picker: Picker,
}

/// What a key in the completion popup asks of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopupAction {
    /// Not a popup key: it goes on to the composer.
    Pass,
    /// The selection moved.
    Moved,
    /// Complete the selected item (`run`: and send it when it needs nothing more).
    Accept {
        /// Enter (rather than Tab).
        run: bool,
    },
    /// Close it until the word under the cursor changes.
    Dismiss,
}

impl Layer for Popup {
    type Action = PopupAction;

    fn on_key(&mut self, key: KeyEvent) -> PopupAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Up => self.picker.move_by(-1),
            KeyCode::Down => self.picker.move_by(1),
            KeyCode::Char('p') if ctrl => self.picker.move_by(-1),
            KeyCode::Char('n') if ctrl => self.picker.move_by(1),
            KeyCode::Tab => return PopupAction::Accept { run: false },
            KeyCode::Enter if plain => return PopupAction::Accept { run: true },
            KeyCode::Esc => return PopupAction::Dismiss,
            _ => return PopupAction::Pass,
        }
        PopupAction::Moved
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.picker.render(area, buf, theme);
    }

    fn hints(&self) -> Option<Hints> {
        Some(Hints::keys([
            Hint::new("↑↓", "select"),
            Hint::new("tab", "complete"),
            Hint::new("enter", "accept"),
            Hint::new("esc", "close"),
        ]))
    }
}
