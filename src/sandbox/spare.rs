//! A Landlock ruleset built ahead for the next command, off its path.
//!
//! Building a ruleset opens every sibling on the way to what is excluded (`/dev`, home, the
//! secrets without namespaces) and adds a rule for each: dozens of system calls, most of what
//! rein does to prepare a call. The inputs are the same from one command to the next, so after
//! each command's ruleset is taken, the next one is built on tokio's blocking pool while the
//! command runs (or the model thinks). A command takes the spare only when it was built from
//! exactly its inputs (the paths, and the writable directories' identities: a temp dir made
//! anew is another directory) and from a walk that is still current, else builds its own as
//! before. At most one spare is kept: one descriptor per sandbox. The walk itself (the
//! siblings' descriptors) is kept too and replayed while it is current (see
//! [`Walk`](super::readable::Walk)).

use super::linux::{Grants, LateGrants, Rules, TESTED_ABI, build_ruleset};
use super::readable::Walk;
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

    /// Builds the ruleset these inputs describe: from the `last` walk when it was made for
    /// the same paths and is still valid, else from a walk now (which becomes the last).
    fn build(&self, last: &Mutex<Option<Arc<KeptWalk>>>) -> Result<Built, String> {
        let writable: Vec<PathBuf> = self.writable.iter().map(|(p, _)| p.clone()).collect();
        let home = self.home.as_ref().map(|(h, s)| (h.as_path(), s.as_slice()));
        let rules = Rules {
            abi: ABI::from(self.kernel_abi.min(TESTED_ABI)),
            tcp: self.tcp,
            network: self.network,
            writable: &writable,
            unreadable: &self.unreadable,
            home,
            private_terminals: self.private_terminals,
        };
        let fail = |e: String| format!("The sandbox could not build its Landlock rules: {e}.");
        let replay = crate::sync::lock(last).clone().filter(|k| {
            k.replayable
                && k.unreadable == self.unreadable
                && k.home == self.home
                && k.walk.still_valid()
        });
        if let Some(kept) = replay {
            let (fd, late) = build_ruleset(&rules, Grants::Replay(&kept.walk)).map_err(fail)?;
            return Ok((fd, late, kept));
        }
        let mut walk = Walk::start(&self.unreadable, home, descriptor_budget());
        let (fd, late) = build_ruleset(&rules, Grants::Walk(Some(&mut walk))).map_err(fail)?;
        let settled = std::time::SystemTime::now() - std::time::Duration::from_millis(100);
        let replayable = walk.keepable(settled);
        if !replayable {
            walk.forget_grants();
        }
        let kept = Arc::new(KeptWalk {
            unreadable: self.unreadable.clone(),
            home: self.home.clone(),
            walk,
            replayable,
        });
        *crate::sync::lock(last) = Some(kept.clone());
        Ok((fd, late, kept))
    }
}

/// A ruleset, its late grants, and the walk its read grants came from.
type Built = (Option<OwnedFd>, LateGrants, Arc<KeptWalk>);

/// A walk, with the paths it was made for.
struct KeptWalk {
    unreadable: Vec<PathBuf>,
    home: Option<(PathBuf, Vec<PathBuf>)>,
    walk: Walk,
    /// Its descriptors are held: it may be replayed (else it only tells whether a ruleset
    /// built from it is current).
    replayable: bool,
}

/// Descriptors a kept walk may hold: a quarter of the limit, so commands and files rein opens
/// never run short (a walk past it is simply not kept).
fn descriptor_budget() -> usize {
    // SAFETY: an all-zero rlimit is valid; getrlimit fills it.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: plain call with a valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    usize::try_from(limit.rlim_cur / 4).unwrap_or(0).min(4096)
}

/// The spare ruleset of one sandbox (shared by its clones).
#[derive(Default)]
pub(crate) struct SpareRuleset {
    slot: Mutex<Slot>,
    /// The last walk (see [`Walk`]).
    last: Mutex<Option<Arc<KeptWalk>>>,
}

impl std::fmt::Debug for SpareRuleset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpareRuleset").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Slot {
    spare: Option<(Inputs, Built)>,
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
        // A spare from a walk that is no longer current (a directory beside home made since, a
        // new mount) is not taken: the command gets what a walk now gives.
        let got = match spare {
            Some((built_from, (fd, late, walk)))
                if built_from == inputs && walk.walk.still_valid() =>
            {
                (fd, late)
            }
            _ => {
                let (fd, late, _) = inputs.build(&self.last)?;
                (fd, late)
            }
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
            let built = inputs.build(&me.last).ok();
            let mut slot = crate::sync::lock(&me.slot);
            slot.building = false;
            slot.spare = built.map(|built| (inputs, built));
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
        let (from, _) = slot.spare.as_ref().unwrap();
        assert!(
            *from != now,
            "a spare for the old directory matched the new one"
        );
    }
}
