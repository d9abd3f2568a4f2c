//! `/rewind`, `/undo` and Esc Esc: the dialog's keys and the agent's answers. The files are
//! the agent's business; the app only sends ops and shows plans.

use super::App;
use crate::protocol::{Op, RewindPlan, RewindPoint};
use crate::tui::view::cell::Level;
use crate::tui::view::rewind::{OPTIONS, PlanView, RewindDialog};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl App {
    /// Opens the dialog and asks the agent for the messages (`/rewind`, Esc Esc).
    pub(crate) fn open_rewind(&mut self) {
        if self.busy {
            self.notice(
                "/rewind has to wait until the turn ends (esc interrupts it)",
                Level::Warn,
            );
            return;
        }
        self.rewind = Some(RewindDialog::Loading);
        self.send(Op::ListRewindPoints);
    }

    /// `/undo`: asks for the plan that restores the code of the last turn.
    pub(crate) fn undo(&mut self) {
        if self.busy {
            self.notice(
                "/undo has to wait until the turn ends (esc interrupts it)",
                Level::Warn,
            );
            return;
        }
        self.send(Op::Undo);
    }

    /// The messages arrived.
    pub(crate) fn on_rewind_points(&mut self, points: Vec<RewindPoint>) {
        if matches!(self.rewind, Some(RewindDialog::Loading)) {
            self.rewind = Some(RewindDialog::points(points));
        }
    }

    /// A code restore plan arrived (after choosing an option, or `/undo`).
    pub(crate) fn on_rewind_plan(&mut self, plan: RewindPlan) {
        self.rewind = Some(RewindDialog::Plan(PlanView::new(plan, &self.theme)));
    }

    /// A rewind was carried out.
    pub(crate) fn on_rewound(
        &mut self,
        message: String,
        conversation: bool,
        restored: Vec<String>,
        skipped: Vec<String>,
    ) {
        self.rewind = None;
        if !restored.is_empty() {
            self.notice(
                format!(
                    "Restored {}: {}",
                    plural(restored.len()),
                    restored.join(", ")
                ),
                Level::Info,
            );
        }
        for why in skipped {
            self.notice(format!("Not restored: {why}"), Level::Warn);
        }
        if conversation {
            // The message goes back to the composer, to send again or change.
            if self.composer.is_empty() {
                self.composer.set_text(&message);
            }
        }
    }

    /// Keys while the dialog is open.
    pub(crate) fn rewind_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(dialog) = self.rewind.as_mut() else {
            return;
        };
        if ctrl && matches!(key.code, KeyCode::Char('c')) {
            self.rewind = None;
            return;
        }
        match dialog {
            RewindDialog::Loading => {
                if key.code == KeyCode::Esc {
                    self.rewind = None;
                }
            }
            RewindDialog::Points { points, picker } => match key.code {
                KeyCode::Esc => self.rewind = None,
                KeyCode::Up | KeyCode::Char('k') => picker.move_by(-1),
                KeyCode::Down | KeyCode::Char('j') => picker.move_by(1),
                KeyCode::Enter => {
                    if let Some(point) = points.get(picker.selected).cloned() {
                        let points = std::mem::take(points);
                        self.rewind = Some(RewindDialog::options(point, points));
                    }
                }
                _ => {}
            },
            RewindDialog::Options {
                point,
                points,
                picker,
            } => match key.code {
                KeyCode::Esc => {
                    let (points, at) = (std::mem::take(points), point.index);
                    let mut list = RewindDialog::points(points);
                    if let RewindDialog::Points { points, picker } = &mut list {
                        picker.selected = points.iter().position(|p| p.index == at).unwrap_or(0);
                    }
                    self.rewind = Some(list);
                }
                KeyCode::Up | KeyCode::Char('k') => picker.move_by(-1),
                KeyCode::Down | KeyCode::Char('j') => picker.move_by(1),
                KeyCode::Enter => {
                    let (code, conversation, _) = OPTIONS[picker.selected.min(OPTIONS.len() - 1)];
                    let to = point.index;
                    self.rewind = None;
                    self.send(Op::Rewind {
                        to,
                        code,
                        conversation,
                        confirm: None,
                        overwrite_changed: false,
                    });
                }
                _ => {}
            },
            RewindDialog::Plan(view) => {
                let page = view.body_rows.max(1) as i64;
                let answer = match key.code {
                    KeyCode::Char('y') | KeyCode::Char('Y') if view.restorable > 0 => Some(true),
                    KeyCode::Char('s') | KeyCode::Char('S')
                        if view.restorable > 0 && view.changed_outside > 0 =>
                    {
                        Some(false)
                    }
                    KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                        self.rewind = None;
                        self.notice("Nothing was restored.", Level::Info);
                        return;
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        view.scroll_by(-1);
                        None
                    }
                    KeyCode::Down | KeyCode::Char('j') => {
                        view.scroll_by(1);
                        None
                    }
                    KeyCode::PageUp => {
                        view.scroll_by(-page);
                        None
                    }
                    KeyCode::PageDown | KeyCode::Char(' ') => {
                        view.scroll_by(page);
                        None
                    }
                    _ => None,
                };
                if let Some(overwrite_changed) = answer {
                    let plan = &view.plan;
                    let op = Op::Rewind {
                        to: plan.to,
                        code: true,
                        conversation: plan.conversation,
                        confirm: Some(plan.id.clone()),
                        overwrite_changed,
                    };
                    self.rewind = None;
                    self.send(op);
                }
            }
        }
    }

    /// Esc on an empty composer while idle: the second within the double-press interval opens
    /// the rewind dialog. Returns whether the key was used so.
    pub(crate) fn esc_rewind(&mut self) -> bool {
        if self.busy || !self.composer.is_empty() {
            self.last_esc = None;
            return false;
        }
        let twice = self
            .last_esc
            .is_some_and(|t| self.now.saturating_duration_since(t) < super::DOUBLE_PRESS);
        if twice {
            self.last_esc = None;
            self.open_rewind();
        } else {
            self.last_esc = Some(self.now);
        }
        true
    }
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 file".into()
    } else {
        format!("{n} files")
    }
}
