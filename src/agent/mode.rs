//! The approval mode in force, shared by the op router (its one writer) and the dispatchers
//! that enforce it.

use crate::protocol::ApprovalMode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// A shared, lock-free cell holding the current [`ApprovalMode`]; a waiting question hears
/// when it changes (it is rated again under the new mode).
#[derive(Clone, Debug)]
pub struct ModeSwitch(Arc<AtomicU8>, Arc<tokio::sync::Notify>);

impl Default for ModeSwitch {
    /// Set to the default mode (ask).
    fn default() -> ModeSwitch {
        ModeSwitch::new(ApprovalMode::default())
    }
}

impl ModeSwitch {
    /// A switch set to `mode`.
    pub fn new(mode: ApprovalMode) -> ModeSwitch {
        ModeSwitch(
            Arc::new(AtomicU8::new(mode.permissiveness())),
            Arc::default(),
        )
    }

    /// The mode in force.
    pub fn get(&self) -> ApprovalMode {
        let n = self.0.load(Ordering::SeqCst);
        ApprovalMode::ALL
            .into_iter()
            .find(|m| m.permissiveness() == n)
            .unwrap_or_default()
    }

    /// Sets the mode.
    pub fn set(&self, mode: ApprovalMode) {
        self.0.store(mode.permissiveness(), Ordering::SeqCst);
        self.1.notify_waiters();
    }

    /// Resolves at the next `set` after it was created (created before awaiting, so no change
    /// in between is missed).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.1.notified()
    }
}

/// What the model reads in the reminder while planning.
pub const PLAN_REMINDER: &str = "You are in plan mode: the user wants a plan before any change. \
Read and explore as much as you need, but do not edit files or run commands that change \
anything: such calls are refused. End your answer with the plan: numbered, concrete steps \
(files, functions, commands, tests). The user approves it or asks for changes.";

/// The text a call refused by plan mode gets.
pub fn plan_refusal(what: &str) -> String {
    format!(
        "Refused: plan mode ({what} is not run while planning). Keep exploring with reads and \
         allowed commands, then end your answer with the plan; the user switches modes to let \
         you carry it out."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_holds_every_mode() {
        assert_eq!(ModeSwitch::default().get(), ApprovalMode::Ask);
        let s = ModeSwitch::new(ApprovalMode::Plan);
        let shared = s.clone();
        assert_eq!(shared.get(), ApprovalMode::Plan);
        for m in ApprovalMode::ALL {
            s.set(m);
            assert_eq!(shared.get(), m);
        }
    }
}
