//! One Landlock ruleset, built once and shared by the commands that follow, off their path.
//!
//! Building a ruleset opens every sibling on the way to what is excluded (`/dev`, home, the
//! secrets without namespaces) and adds a rule for each: dozens to hundreds of system calls,
//! most of what rein does to prepare a call. The inputs are the same from one command to the
//! next, and `landlock_restrict_self` does not consume a ruleset, so one ruleset serves many
//! commands: each gets a descriptor of it. It is used only while it was built from exactly
//! the command's inputs (the paths, and the writable directories' identities: a temp dir made
//! anew is another directory) and from a walk that is still current; else a command builds
//! its own as before. After [`USES`] commands the next ruleset is built on tokio's blocking
//! pool while the command runs (or the model thinks). The walk itself (the siblings'
//! descriptors) is kept too and replayed while it is current (see
//! [`Walk`](super::readable::Walk)).
//!
//! A shared ruleset must never reach a command: it could add rules that later commands would
//! be confined by. Ruleset descriptors are close-on-exec: the kernel makes them so, and
//! `try_clone` and the zygote's `recvmsg` keep it.

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
    /// Home and the shared temporary and runtime directories, each with its shown places.
    pub(crate) covered: Vec<(PathBuf, Vec<PathBuf>)>,
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
        covered: Vec<(PathBuf, Vec<PathBuf>)>,
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
            covered,
            private_terminals,
        }
    }

    /// Builds the ruleset these inputs describe: from the `last` walk when it was made for
    /// the same paths and is still valid, else from a walk now (which becomes the last).
    fn build(&self, last: &Mutex<Option<Arc<KeptWalk>>>) -> Result<Built, String> {
        let writable: Vec<PathBuf> = self.writable.iter().map(|(p, _)| p.clone()).collect();
        let rules = Rules {
            abi: ABI::from(self.kernel_abi.min(TESTED_ABI)),
            tcp: self.tcp,
            network: self.network,
            writable: &writable,
            unreadable: &self.unreadable,
            covered: &self.covered,
            private_terminals: self.private_terminals,
        };
        let fail = |e: String| format!("The sandbox could not build its Landlock rules: {e}.");
        let replay = crate::sync::lock(last).clone().filter(|k| {
            k.replayable
                && k.unreadable == self.unreadable
                && k.covered == self.covered
                && k.walk.still_valid()
        });
        if let Some(kept) = replay {
            let (fd, late) = build_ruleset(&rules, Grants::Replay(&kept.walk)).map_err(fail)?;
            return Ok((fd, late, kept));
        }
        let mut walk = Walk::start(&self.unreadable, &self.covered, descriptor_budget());
        let (fd, late) = build_ruleset(&rules, Grants::Walk(Some(&mut walk))).map_err(fail)?;
        let settled = std::time::SystemTime::now() - std::time::Duration::from_millis(100);
        let replayable = walk.keepable(settled);
        if !replayable {
            walk.forget_grants();
        }
        let kept = Arc::new(KeptWalk {
            unreadable: self.unreadable.clone(),
            covered: self.covered.clone(),
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
    covered: Vec<(PathBuf, Vec<PathBuf>)>,
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

/// Commands one ruleset serves before a fresh one is built. Each command's child adds up to
/// three rules of its own to it (its private `/proc`, `/dev/pts`, `/dev/shm`, which exist
/// only in its namespace); they stay in the ruleset after the command ends and every later
/// command's domain copies them, so the count is bounded (a few hundred dead rules cost a
/// domain only microseconds).
const USES: u32 = 32;

/// The ruleset of one sandbox (shared by its clones), kept and handed to command after
/// command while it was built from the same inputs and its walk is current.
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
    /// The ruleset, its inputs and how many commands it has served.
    kept: Option<(Inputs, Built, u32)>,
    /// A fresh one is being built: no second one is started meanwhile.
    building: bool,
    /// Rulesets built (for tests: a kept one is reused, not rebuilt).
    #[cfg(test)]
    builds: u32,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("kept", &self.kept.as_ref().map(|k| k.2))
            .field("building", &self.building)
            .finish()
    }
}

impl SpareRuleset {
    /// The ruleset for `inputs`: the kept one when it was built from them and its walk is
    /// current (a descriptor of the same ruleset), else one built now, which is kept. The
    /// last command a kept ruleset serves starts the next one's build in the background
    /// (when there is a tokio runtime).
    pub(crate) fn take(
        self: &Arc<Self>,
        inputs: Inputs,
    ) -> Result<(Option<OwnedFd>, LateGrants), String> {
        let mut slot = crate::sync::lock(&self.slot);
        // A ruleset from a walk that is no longer current (a directory beside home made since,
        // a new mount) is not used: the command gets what a walk now gives.
        let reusable = slot
            .kept
            .as_ref()
            .is_some_and(|(from, (_, _, walk), _)| *from == inputs && walk.walk.still_valid());
        if !reusable {
            slot.kept = None;
            drop(slot);
            let built = inputs.build(&self.last)?;
            slot = crate::sync::lock(&self.slot);
            #[cfg(test)]
            {
                slot.builds += 1;
            }
            slot.kept = Some((inputs.clone(), built, 0));
        }
        let Some((_, (fd, late, _), uses)) = slot.kept.as_mut() else {
            return Err("The sandbox lost its Landlock ruleset.".into());
        };
        *uses += 1;
        let late = *late;
        let shared = match fd {
            Some(fd) => Some(
                fd.try_clone()
                    .map_err(|e| format!("The sandbox could not share its Landlock rules: {e}."))?,
            ),
            None => None,
        };
        if *uses >= USES {
            slot.kept = None;
            drop(slot);
            self.refill(inputs);
        }
        Ok((shared, late))
    }

    /// Builds a ruleset from `inputs` on tokio's blocking pool, unless one is being built.
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
            if slot.kept.is_none() {
                #[cfg(test)]
                {
                    slot.builds += 1;
                }
                slot.kept = built.map(|built| (inputs, built, 0));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(writable: &[PathBuf]) -> Inputs {
        let abi = super::super::linux::kernel().abi;
        Inputs::new(abi, false, false, writable, &[], Vec::new(), true)
    }

    fn builds(spare: &SpareRuleset) -> u32 {
        crate::sync::lock(&spare.slot).builds
    }

    /// A writable temp dir (canonical) and an empty spare, when Landlock is there to build for.
    fn setup() -> Option<(tempfile::TempDir, PathBuf, Arc<SpareRuleset>)> {
        if super::super::linux::kernel().abi < 3 {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().canonicalize().unwrap();
        Some((dir, w, Arc::new(SpareRuleset::default())))
    }

    /// Takes the ruleset for a command whose only writable directory is `w`.
    fn take(spare: &Arc<SpareRuleset>, w: &std::path::Path) -> Option<OwnedFd> {
        spare.take(inputs(&[w.to_path_buf()])).unwrap().0
    }

    #[test]
    fn one_ruleset_serves_the_same_inputs_and_a_new_directory_gets_its_own() {
        let Some((_dir, w, spare)) = setup() else {
            return;
        };
        for _ in 0..3 {
            assert!(take(&spare, &w).is_some());
        }
        assert_eq!(builds(&spare), 1, "the kept ruleset was not reused");
        // The temp dir made anew is another directory: the kept ruleset is not used for it.
        std::fs::remove_dir(&w).unwrap();
        std::fs::create_dir(&w).unwrap();
        take(&spare, &w);
        let fresh = builds(&spare);
        assert_eq!(fresh, 2, "a ruleset for the old directory was used");
    }

    #[test]
    fn a_ruleset_serves_a_bounded_number_of_commands() {
        let Some((_dir, w, spare)) = setup() else {
            return;
        };
        for _ in 0..USES {
            take(&spare, &w);
        }
        assert_eq!(builds(&spare), 1);
        // No runtime here to build the next one ahead: the next command builds its own.
        take(&spare, &w);
        let fresh = builds(&spare);
        assert_eq!(fresh, 2, "a ruleset served more than {USES} commands");
    }

    #[tokio::test]
    async fn the_next_ruleset_is_built_ahead_when_one_is_used_up() {
        let Some((_dir, w, spare)) = setup() else {
            return;
        };
        for _ in 0..USES {
            take(&spare, &w);
        }
        for _ in 0..500 {
            if builds(&spare) == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(builds(&spare), 2, "no ruleset was built ahead");
        take(&spare, &w);
        assert_eq!(builds(&spare), 2, "the one built ahead was not used");
    }
}
