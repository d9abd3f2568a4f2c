//! `/rewind`, `/undo` and Esc Esc: the dialog's keys and the agent's answers. The files are
//! the agent's business; the app only sends ops and shows plans.

use super::App;
use crate::protocol::{Op, RewindPlan, RewindPoint};
use crate::tui::layers::Layer;
use crate::tui::layers::rewind::RewindAction;
use crate::tui::model::cell::Level;
use crate::tui::view::rewind::{PlanView, RewindDialog};
use crossterm::event::KeyEvent;

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

    /// Keys while the dialog is open: the dialog decides, the app carries it out.
    pub(crate) fn rewind_key(&mut self, key: KeyEvent) {
        let Some(dialog) = self.rewind.as_mut() else {
            return;
        };
        match dialog.on_key(key) {
            RewindAction::Stay => {}
            RewindAction::Close => self.rewind = None,
            RewindAction::Cancelled => {
                self.rewind = None;
                self.notice("Nothing was restored.", Level::Info);
            }
            RewindAction::Send(op) => {
                self.rewind = None;
                self.send(op);
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
