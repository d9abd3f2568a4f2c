//! The layers of the screen. The one on top takes the keys: the session picker, a question,
//! the rewind dialog, the model picker, the completion popup, and under them all the
//! composer. Each layer handles its keys, draws itself and declares the hints for its own
//! keys, in one place. A layer changes only its own state; what the app must do (send an
//! op, close the layer, answer a question) comes back as the layer's `Action`.
//!
//! Layers draw with `view`'s widgets and hold `model` data; they never import `app`.

pub mod approval;
pub mod composer;
pub mod pickers;
pub mod rewind;
pub mod session_picker;

use crate::tui::theme::Theme;
use crate::tui::view::status::Hints;
use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// One layer of the screen: its keys, its drawing and the hints for its keys.
pub trait Layer {
    /// What a key asks of the app.
    type Action;

    /// Handles a key.
    fn on_key(&mut self, key: KeyEvent) -> Self::Action;

    /// Draws the layer in `area`.
    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme);

    /// The keys for the hint line; `None` when the layer writes its keys inside itself (the
    /// rewind dialog, the session picker) and the line goes on showing the layer below.
    fn hints(&self) -> Option<Hints>;
}
