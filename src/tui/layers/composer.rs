//! The composer as the bottom layer: typing, history and the keys of the idle or busy
//! screen (send, interrupt, scroll, fold), with their hints.

use super::Layer;
use crate::tui::theme::Theme;
use crate::tui::view::cell::SPINNER;
use crate::tui::view::composer::Composer;
use crate::tui::view::status::{Hint, Hints, Tone, whole_seconds};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui_textarea::Input;
use std::time::Duration;

/// What a key in the composer asks of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComposerAction {
    /// The composer took it (typed, moved, walked the history).
    Edited,
    /// A recalled entry walked on: it is sent as it is, no completion.
    Walked,
    /// Enter: send what was typed.
    Submit,
    /// Esc: a second on an idle empty composer rewinds, else it interrupts.
    Esc,
    /// Ctrl+D on an empty composer.
    Quit,
    /// Ctrl+T: show or hide the todo panel.
    ToggleTodos,
    /// Ctrl+G: edit the text in `$EDITOR`.
    Editor,
    /// Ctrl+Z: suspend like a shell job.
    Suspend,
    /// Ctrl+O: expand or fold every cell.
    ToggleExpand,
    /// PageUp/PageDown: scroll the conversation a page (negative: up).
    Page(i64),
    /// Ctrl+Home.
    Top,
    /// Ctrl+End.
    Bottom,
    /// Up on an empty composer: the last queued message comes back to be edited.
    EditQueued,
    /// Shift+Tab: the next approval mode.
    CycleMode,
}

/// The composer, over the app's state for one key or one frame.
pub struct ComposerLayer<'a> {
    /// What is typed.
    pub composer: &'a mut Composer,
    /// A turn runs.
    pub busy: bool,
    /// The turn is being stopped.
    pub interrupting: bool,
    /// Messages queued for the end of the turn.
    pub queued: usize,
    /// The conversation is scrolled up.
    pub scrolled: bool,
    /// Every cell is expanded.
    pub expand_all: bool,
    /// There are todos (Ctrl+T shows them).
    pub has_todos: bool,
    /// How long the turn has run.
    pub run_time: Duration,
    /// The spinner's frame.
    pub spinner: usize,
}

impl ComposerLayer<'_> {
    /// Up and Down walk on through the history once an entry is recalled, even when it
    /// looks like a command or an @path.
    fn walk_key(&mut self, key: &KeyEvent) -> Option<ComposerAction> {
        if !self.composer.is_recalled() {
            return None;
        }
        match key.code {
            KeyCode::Up => self.composer.history_prev(),
            KeyCode::Down => self.composer.history_next(),
            _ => return None,
        };
        Some(ComposerAction::Walked)
    }

    /// The keys with Ctrl (and the rest of what is not typing).
    fn command_key(&mut self, key: &KeyEvent) -> Option<ComposerAction> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let action = match key.code {
            KeyCode::Char('d') if ctrl && self.composer.is_empty() => ComposerAction::Quit,
            KeyCode::Char('t') if ctrl => ComposerAction::ToggleTodos,
            KeyCode::Char('g') if ctrl => ComposerAction::Editor,
            KeyCode::Char('z') if ctrl => ComposerAction::Suspend,
            KeyCode::Char('o') if ctrl => ComposerAction::ToggleExpand,
            KeyCode::PageUp => ComposerAction::Page(-1),
            KeyCode::PageDown => ComposerAction::Page(1),
            KeyCode::Home if ctrl => ComposerAction::Top,
            KeyCode::End if ctrl => ComposerAction::Bottom,
            KeyCode::BackTab => ComposerAction::CycleMode,
            KeyCode::Tab if key.modifiers.contains(KeyModifiers::SHIFT) => {
                ComposerAction::CycleMode
            }
            _ => return None,
        };
        Some(action)
    }
}

impl Layer for ComposerLayer<'_> {
    type Action = ComposerAction;

    fn on_key(&mut self, key: KeyEvent) -> ComposerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let plain = !ctrl && !alt;
        if plain && let Some(action) = self.walk_key(&key) {
            return action;
        }
        if let Some(action) = self.command_key(&key) {
            return action;
        }
        match key.code {
            KeyCode::Esc => return ComposerAction::Esc,
            KeyCode::Enter if !shift && !alt && !ctrl => return ComposerAction::Submit,
            KeyCode::Enter => self.composer.newline(),
            KeyCode::Char('j') if ctrl => self.composer.newline(),
            KeyCode::Char('u') if ctrl => self.composer.delete_to_line_start(),
            // The last queued message comes back to be edited (it leaves the queue: Enter
            // queues it again, clearing the composer withdraws it).
            KeyCode::Up if plain && self.composer.is_empty() && self.queued > 0 => {
                return ComposerAction::EditQueued;
            }
            KeyCode::Up if plain && self.composer.walks_history() => {
                self.composer.history_prev();
            }
            KeyCode::Down if plain && self.composer.walks_history() => {
                self.composer.history_next();
            }
            KeyCode::Tab => {}
            _ => self.composer.input(Input::from(key)),
        }
        ComposerAction::Edited
    }

    /// A rule with what Enter will do when it is not plain sending, then the text.
    fn render(&mut self, area: Rect, buf: &mut Buffer, t: &Theme) {
        let title = (self.queued > 0).then(|| {
            Line::from(Span::styled(
                format!(" {} queued · sent when the turn ends ", self.queued),
                t.fg(t.warning),
            ))
        });
        // A `!` line is not a message: say what Enter will do with it.
        let title = title.or_else(|| {
            self.composer.is_shell_command().then(|| {
                Line::from(Span::styled(
                    " ! shell command · runs in the workspace; its output goes with your next message ",
                    t.fg(t.accent),
                ))
            })
        });
        self.composer.set_busy(self.busy);
        self.composer.render(area, buf, t, title, self.busy);
    }

    fn hints(&self) -> Option<Hints> {
        let mut hints = Hints::default();
        if self.scrolled {
            hints.keys.push(Hint::new("ctrl+end", "bottom"));
        }
        if self.busy {
            let glyph = SPINNER[self.spinner % SPINNER.len()];
            let label = if self.interrupting {
                "stopping"
            } else {
                "working"
            };
            let secs = whole_seconds(self.run_time.as_secs());
            hints.lead = Some((format!("{glyph} {label} {secs}"), Tone::Accent));
            hints.keys.push(Hint::new("esc", "interrupt"));
            hints.keys.push(Hint::new("enter", "queue a message"));
        } else {
            hints.keys.extend([
                Hint::new("enter", "send"),
                Hint::new("shift+enter", "newline"),
                Hint::new("/", "commands"),
                Hint::new("@", "files"),
                Hint::new("shift+tab", "mode"),
            ]);
        }
        let fold = if self.expand_all {
            "fold all"
        } else {
            "expand all"
        };
        hints.keys.push(Hint::new("ctrl+o", fold));
        if self.has_todos {
            hints.keys.push(Hint::new("ctrl+t", "todos"));
        }
        Some(hints)
    }
}
