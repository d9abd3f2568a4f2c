//! The `/rewind` dialog as a layer: choose a message, choose what to restore, then read the
//! plan and answer once. The steps are the dialog's own; the files are the agent's business.

use super::Layer;
use crate::protocol::Op;
use crate::tui::theme::Theme;
use crate::tui::view::rewind::{self, OPTIONS, PlanView, RewindDialog};
use crate::tui::view::status::Hints;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// What a key in the dialog asks of the app.
#[derive(Debug)]
pub enum RewindAction {
    /// The dialog goes on.
    Stay,
    /// Close it.
    Close,
    /// Close it: the person said no to the plan (nothing was restored).
    Cancelled,
    /// Close it and send this (a rewind, or the answer to its plan).
    Send(Op),
}

impl Layer for RewindDialog {
    type Action = RewindAction;

    fn on_key(&mut self, key: KeyEvent) -> RewindAction {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return RewindAction::Close;
        }
        match self {
            RewindDialog::Loading if key.code == KeyCode::Esc => RewindAction::Close,
            RewindDialog::Loading => RewindAction::Stay,
            RewindDialog::Points { .. } => self.points_key(key),
            RewindDialog::Options { .. } => self.options_key(key),
            RewindDialog::Plan(view) => plan_key(view, key),
        }
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        rewind::render(self, area, buf, theme);
    }

    /// Each step writes its keys in its title or footer.
    fn hints(&self) -> Option<Hints> {
        None
    }
}

impl RewindDialog {
    /// Choosing the message: Enter goes on to the options.
    fn points_key(&mut self, key: KeyEvent) -> RewindAction {
        let RewindDialog::Points { points, picker } = self else {
            return RewindAction::Stay;
        };
        match key.code {
            KeyCode::Esc => return RewindAction::Close,
            KeyCode::Up | KeyCode::Char('k') => picker.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => picker.move_by(1),
            KeyCode::Enter => {
                if let Some(point) = points.get(picker.selected).cloned() {
                    let points = std::mem::take(points);
                    *self = RewindDialog::options(point, points);
                }
            }
            _ => {}
        }
        RewindAction::Stay
    }

    /// Choosing what to restore: Esc goes back to the message, Enter rewinds.
    fn options_key(&mut self, key: KeyEvent) -> RewindAction {
        let RewindDialog::Options {
            point,
            points,
            picker,
        } = self
        else {
            return RewindAction::Stay;
        };
        match key.code {
            KeyCode::Esc => {
                let (points, at) = (std::mem::take(points), point.index);
                let mut list = RewindDialog::points(points);
                if let RewindDialog::Points { points, picker } = &mut list {
                    picker.selected = points.iter().position(|p| p.index == at).unwrap_or(0);
                }
                *self = list;
            }
            KeyCode::Up | KeyCode::Char('k') => picker.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => picker.move_by(1),
            KeyCode::Enter => {
                let (code, conversation, _) = OPTIONS[picker.selected.min(OPTIONS.len() - 1)];
                return RewindAction::Send(Op::Rewind {
                    to: point.index,
                    code,
                    conversation,
                    confirm: None,
                    overwrite_changed: false,
                });
            }
            _ => {}
        }
        RewindAction::Stay
    }
}

/// Reading the plan: `y` restores, `s` skips what changed outside rein, `n`/Esc cancels.
fn plan_key(view: &mut PlanView, key: KeyEvent) -> RewindAction {
    let page = view.scroll.page();
    let overwrite_changed = match key.code {
        KeyCode::Char('y') | KeyCode::Char('Y') if view.restorable > 0 => true,
        KeyCode::Char('s') | KeyCode::Char('S')
            if view.restorable > 0 && view.changed_outside > 0 =>
        {
            false
        }
        KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => return RewindAction::Cancelled,
        KeyCode::Up | KeyCode::Char('k') => return scrolled(view, -1),
        KeyCode::Down | KeyCode::Char('j') => return scrolled(view, 1),
        KeyCode::PageUp => return scrolled(view, -page),
        KeyCode::PageDown | KeyCode::Char(' ') => return scrolled(view, page),
        _ => return RewindAction::Stay,
    };
    let plan = &view.plan;
    RewindAction::Send(Op::Rewind {
        to: plan.to,
        code: true,
        conversation: plan.conversation,
        confirm: Some(plan.id.clone()),
        overwrite_changed,
    })
}

fn scrolled(view: &mut PlanView, rows: i64) -> RewindAction {
    view.scroll.scroll_by(rows);
    RewindAction::Stay
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RewindPoint;

    fn press(dialog: &mut RewindDialog, code: KeyCode) -> RewindAction {
        dialog.on_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn points() -> Vec<RewindPoint> {
        ["first", "second", "third"]
            .iter()
            .enumerate()
            .map(|(index, text)| RewindPoint {
                index,
                text: text.to_string(),
                files_changed: 1,
            })
            .collect()
    }

    #[test]
    fn choosing_a_message_and_an_option_sends_that_rewind() {
        let mut dialog = RewindDialog::points(points());
        press(&mut dialog, KeyCode::Up);
        assert!(matches!(
            press(&mut dialog, KeyCode::Enter),
            RewindAction::Stay
        ));
        assert!(
            matches!(dialog, RewindDialog::Options { ref point, .. } if point.text == "second")
        );
        press(&mut dialog, KeyCode::Down);
        let RewindAction::Send(Op::Rewind {
            to,
            code,
            conversation,
            confirm,
            ..
        }) = press(&mut dialog, KeyCode::Enter)
        else {
            panic!("Enter on an option rewinds");
        };
        assert_eq!((to, code, conversation), (1, OPTIONS[1].0, OPTIONS[1].1));
        assert_eq!(confirm, None, "the code restore plan is asked for first");
    }

    #[test]
    fn esc_on_the_options_goes_back_to_the_same_message_and_then_closes() {
        let mut dialog = RewindDialog::points(points());
        press(&mut dialog, KeyCode::Up);
        press(&mut dialog, KeyCode::Enter);
        assert!(matches!(
            press(&mut dialog, KeyCode::Esc),
            RewindAction::Stay
        ));
        let RewindDialog::Points { picker, .. } = &dialog else {
            panic!("Esc goes back to the messages");
        };
        assert_eq!(
            picker.selected, 1,
            "the message chosen before stays selected"
        );
        assert!(matches!(
            press(&mut dialog, KeyCode::Esc),
            RewindAction::Close
        ));
    }

    #[test]
    fn ctrl_c_closes_every_step() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for mut dialog in [RewindDialog::Loading, RewindDialog::points(points())] {
            assert!(matches!(dialog.on_key(ctrl_c), RewindAction::Close));
        }
    }
}
