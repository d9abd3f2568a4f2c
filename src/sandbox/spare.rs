//! A Landlock ruleset built ahead for the next command, off its path.
//!
//! Building a ruleset opens every sibling on the way to what is excluded (`/dev`, home, the
//! secrets without namespaces) and adds a rule for each: dozens of system calls, most of what
//! rein does to prepare a call. The inputs are the same from one command to the next, so after
//! each command's ruleset is taken, the next one is built on tokio's blocking pool while the
//! command runs (or the model thinks). A command takes the spare only when it was built from
//! exactly its inputs (the paths, and the writable directories' identities: a temp dir made
//! anew is another directory), else builds its own as before. At most one spare is kept: one
//! descriptor per sandbox.

use super::linux::{LateGrants, Rules, TESTED_ABI, build_ruleset};
use landlock::ABI;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What a ruleset is built from (see [`Rules`]).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Inputs {
    pub(crate) kernel_abi: i32,
    pub(crate) tcp: bool,
    pub(crate) network: bool,
    /// Each writable directory (canonical) with its device and inode.
    writable: Vec<(PathBuf, (u64, u64))>,
    pub(crate) unreadable: Vec<PathBuf>,
    pub(crate) home: Option<(PathBuf, Vec<PathBuf>)>,
    pub(crate) private_terminals: bool,
}

impl Inputs {
    /// The inputs, with each of `writable` (canonical paths) identified by device and inode
    /// (0, 0 when it cannot be looked at: building the ruleset then says why).
    pub(crate) fn new(
        kernel_abi: i32,
        tcp: bool,
        network: bool,
        writable: &[PathBuf],
        unreadable: &[PathBuf],
        home: Option<(PathBuf, Vec<PathBuf>)>,
        private_terminals: bool,
    ) -> Inputs {
        let writable = writable
            .iter()
            .map(|p| {
                let id = std::fs::metadata(p).map_or((0, 0), |m| (m.dev(), m.ino()));
                (p.clone(), id)
            })
            .collect();
        Inputs {
            kernel_abi,
            tcp,
            network,
            writable,
            unreadable: unreadable.to_vec(),
            home,
            private_terminals,
        }
    }

    /// Builds the ruleset these inputs describe.
    fn build(&self) -> Result<(Option<OwnedFd>, LateGrants), String> {
        let writable: Vec<PathBuf> = self.writable.iter().map(|(p, _)| p.clone()).collect();
        let rules = Rules {
            abi: ABI::from(self.kernel_abi.min(TESTED_ABI)),
            tcp: self.tcp,
            network: self.network,
            writable: &writable,
            unreadable: &self.unreadable,
            home: self.home.as_ref().map(|(h, s)| (h.as_path(), s.as_slice())),
            private_terminals: self.private_terminals,
        };
        build_ruleset(&rules)
            .map_err(|e| format!("The sandbox could not build its Landlock rules: {e}."))
    }
}

/// The spare ruleset of one sandbox (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct SpareRuleset {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    spare: Option<(Inputs, Option<OwnedFd>, LateGrants)>,
    /// A spare is being built: no second one is started meanwhile.
    building: bool,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("spare", &self.spare.is_some())
            .field("building", &self.building)
            .finish()
    }
}

impl SpareRuleset {
    /// The ruleset for `inputs`: the spare when it was built from them, else one built now.
    /// Then the next one is built in the background (when there is a tokio runtime).
    pub(crate) fn take(
        self: &Arc<Self>,
        inputs: Inputs,
    ) -> Result<(Option<OwnedFd>, LateGrants), String> {
        let spare = crate::sync::lock(&self.slot).spare.take();
        let got = match spare {
            Some((built_from, fd, late)) if built_from == inputs => (fd, late),
            _ => inputs.build()?,
        };
        self.refill(inputs);
        Ok(got)
    }

    /// Builds a spare from `inputs` on tokio's blocking pool, unless one is being built.
    fn refill(self: &Arc<Self>, inputs: Inputs) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut slot = crate::sync::lock(&self.slot);
            if slot.building {
                return;
            }
            slot.building = true;
        }
        let me = self.clone();
        rt.spawn_blocking(move || {
            let built = inputs.build().ok();
            let mut slot = crate::sync::lock(&me.slot);
            slot.building = false;
            slot.spare = built.map(|(fd, late)| (inputs, fd, late));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(writable: &[PathBuf]) -> Inputs {
        let abi = super::super::linux::kernel().abi;
        Inputs::new(abi, false, false, writable, &[], None, true)
    }

    #[tokio::test]
    async fn a_spare_is_taken_only_when_built_from_the_same_inputs() {
        if super::super::linux::kernel().abi < 3 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().canonicalize().unwrap();
        let spare = Arc::new(SpareRuleset::default());
        spare.take(inputs(std::slice::from_ref(&w))).unwrap();
        let built = || {
            let slot = crate::sync::lock(&spare.slot);
            !slot.building && slot.spare.is_some()
        };
        for _ in 0..500 {
            if built() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(built(), "no spare was built");
        // The temp dir made anew is another directory: the spare is not taken for it.
        std::fs::remove_dir(&w).unwrap();
        std::fs::create_dir(&w).unwrap();
        let now = inputs(std::slice::from_ref(&w));
        let slot = crate::sync::lock(&spare.slot);
        let (from, _, _) = slot.spare.as_ref().unwrap();
        assert!(
            *from != now,
            "a spare for the old directory matched the new one"
        );
    }
}
