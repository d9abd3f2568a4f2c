//! The Linux sandbox: Landlock for the filesystem, a seccomp filter for the network, a private
//! mount namespace for the read-only holes Landlock cannot express, and a PID namespace (or a
//! subreaper) so that nothing outlives the command.
//!
//! Everything that allocates (paths, the Landlock ruleset, the BPF program) is prepared in
//! rein before the fork; the child only makes system calls before it executes the command.
//! Between rein and the command sit one or two processes of rein's (see `supervise`).

use super::SandboxMode;
use super::mounts::{self, GitPlan, MountPlan, Mounted, NsSupport};
use super::readable::{self, Grant};
use super::seccomp::{Filter, Shared, Sockets};
use super::supervise::{self, Reaping};
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, make_bitflags,
};
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The newest Landlock ABI whose rights rein has been tested with. Newer kernels get these
/// rights (the kernel keeps old ABIs stable); older ones get what they support.
pub(crate) const TESTED_ABI: i32 = 7;

/// The oldest ABI rein trusts: before ABI 3, `truncate` was not governed, so a command could
/// empty any file.
const MIN_ABI: i32 = 3;

/// What the running kernel offers, found once per process.
#[derive(Debug)]
pub(crate) struct Kernel {
    /// Landlock ABI version reported by the kernel (≤ 0: none).
    pub(crate) abi: i32,
    /// How a private mount namespace can be had, if at all.
    pub(crate) ns: NsSupport,
}

/// The kernel's capabilities (probed on first use: one syscall and a few short forks).
pub(crate) fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        let abi = landlock_abi();
        let only = |plain, user| NsSupport {
            plain,
            user,
            pid: false,
        };
        let mut ns = NsSupport {
            plain: probe_namespace(only(true, false)),
            user: probe_namespace(only(false, true)),
            pid: false,
        };
        ns.pid = ns.any() && probe_namespace(NsSupport { pid: true, ..ns });
        tracing::debug!(abi, ?ns, "sandbox: kernel probed");
        Kernel { abi, ns }
    })
}

fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: NULL attributes, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(0)
}

/// Why the kernel cannot confine commands as `mode` asks, if it cannot.
pub(crate) fn missing_support(network: bool, simulate_no_landlock: bool) -> Option<String> {
    let k = kernel();
    if simulate_no_landlock {
        return Some("REIN_SANDBOX_UNAVAILABLE=1 simulates a kernel without Landlock".into());
    }
    if k.abi < 1 {
        return Some(
            "this kernel has no Landlock support (Linux 6.2+ with Landlock enabled is needed)"
                .into(),
        );
    }
    if k.abi < MIN_ABI {
        return Some(format!(
            "this kernel's Landlock ABI is {}; rein needs ABI {MIN_ABI} (Linux 6.2) or newer",
            k.abi
        ));
    }
    if !network && !super::seccomp::supported() {
        return Some("rein has no network filter for this CPU architecture".into());
    }
    None
}

/// What the command's process does once confined (`Ok`) or when confining it failed: exec the
/// command, or report the error and exit. It runs in a process that shares its parent's memory
/// (see [`supervise::spawn_shared`]): system calls only.
pub(crate) type Start<'a> = &'a dyn Fn(io::Result<()>) -> std::convert::Infallible;

/// Everything the child needs, prepared before the fork.
pub(crate) struct Confinement {
    mounts: Option<MountPlan>,
    /// The Landlock ruleset; `None` when Landlock is unavailable.
    ruleset: Option<OwnedFd>,
    /// Rights to grant on mounts made in the child (raw Landlock bits).
    late: LateGrants,
    seccomp: Option<Filter>,
    /// The write end of the report pipe (owned by the caller's `Supervision`).
    report: RawFd,
    /// The child's end of the channel that carries the proxy's listener to rein (the network
    /// allow-list; owned by the caller's `Supervision`).
    proxy: Option<RawFd>,
}

/// Landlock rights for what only exists once the child has mounted it.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct LateGrants {
    shm: u64,
    pts: u64,
    proc: u64,
}

/// A [`Confinement`] as it travels to the zygote: its descriptors go alongside, in the order
/// report, ruleset (when `ruleset`), proxy channel (when `proxy`).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct WireConfinement {
    mounts: Option<MountPlan>,
    ruleset: bool,
    late: LateGrants,
    seccomp: Option<Vec<u64>>,
    proxy: bool,
}

impl Confinement {
    /// The wire form and the descriptors to pass with it (owned by this confinement and the
    /// caller's `Supervision`, which outlive the send).
    pub(crate) fn to_wire(&self) -> (WireConfinement, Vec<RawFd>) {
        let mut fds = vec![self.report];
        fds.extend(self.ruleset.as_ref().map(AsRawFd::as_raw_fd));
        fds.extend(self.proxy);
        let unprivileged = self.mounts.as_ref().and_then(|m| m.unprivileged.as_ref());
        fds.extend(unprivileged.iter().flat_map(|u| u.userns.iter().copied()));
        let wire = WireConfinement {
            mounts: self.mounts.clone(),
            ruleset: self.ruleset.is_some(),
            late: self.late,
            seccomp: self.seccomp.as_ref().map(Filter::to_words),
            proxy: self.proxy.is_some(),
        };
        (wire, fds)
    }

    /// The confinement the zygote runs, from the wire form and the descriptors it came with
    /// (taken from `fds` in the order [`Confinement::to_wire`] gave them; the raw ones stay
    /// owned by the caller). `None` when a descriptor is missing.
    pub(crate) fn from_wire(
        wire: WireConfinement,
        fds: &mut impl Iterator<Item = OwnedFd>,
        kept: &mut Vec<OwnedFd>,
    ) -> Option<Confinement> {
        let raw = |fd: OwnedFd, kept: &mut Vec<OwnedFd>| {
            let n = fd.as_raw_fd();
            kept.push(fd);
            n
        };
        let report = raw(fds.next()?, kept);
        let ruleset = match wire.ruleset {
            true => Some(fds.next()?),
            false => None,
        };
        let proxy = match wire.proxy {
            true => Some(raw(fds.next()?, kept)),
            false => None,
        };
        let mut mounts = wire.mounts;
        // The user namespaces come last, in order; the zygote's numbers replace rein's.
        if let Some(u) = mounts.as_mut().and_then(|m| m.unprivileged.as_mut()) {
            for fd in &mut u.userns {
                *fd = raw(fds.next()?, kept);
            }
        }
        Some(Confinement {
            mounts,
            ruleset,
            late: wire.late,
            seccomp: wire.seccomp.as_deref().map(Filter::from_words),
            report,
            proxy,
        })
    }
}

/// Settings for [`Confinement::prepare`].
pub(crate) struct Request<'a> {
    pub(crate) mode: SandboxMode,
    /// The whole network (`network = true`).
    pub(crate) network: bool,
    /// The network allow-list: a network namespace with only `lo`, and the child's end of the
    /// channel for the proxy's listener (namespaces only).
    pub(crate) proxy: Option<RawFd>,
    pub(crate) workspace: &'a Path,
    pub(crate) temp_dir: &'a Path,
    /// More directories bash may write (build caches), created when missing.
    pub(crate) extra_writable: &'a [PathBuf],
    pub(crate) cwd: &'a Path,
    pub(crate) use_landlock: bool,
    /// Private namespaces (false: the fallback, Landlock and seccomp only).
    pub(crate) use_namespaces: bool,
    /// Secret paths to hide (canonical, existing).
    pub(crate) secrets: &'a [PathBuf],
    /// The mounts of the covered directories' views, outer ones first (namespaces).
    pub(crate) covers: Vec<std::sync::Arc<mounts::ViewMounts>>,
    /// The covered directories (home, the shared temporary and runtime directories), each
    /// left out of the read rules but for its shown places (canonical).
    pub(crate) covered: &'a readable::Covered,
    /// How `.git` is presented (namespaces only).
    pub(crate) git: GitPlan,
    /// What to make read-only as a whole, relative to the workspace (namespaces only): nested
    /// `.git` entries and the hook directories the person's git configuration names.
    pub(crate) read_only: &'a [PathBuf],
    /// The write end of the report pipe.
    pub(crate) report: RawFd,
    /// The ruleset built ahead for this sandbox's next command.
    pub(crate) spare: &'a std::sync::Arc<super::spare::SpareRuleset>,
}

fn cstring(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte.", p.display()))
}

/// The mounts of a command in its own namespaces.
fn mount_plan(
    req: &Request<'_>,
    git: GitPlan,
    ns: NsSupport,
    workspace: &Path,
    writable: &[PathBuf],
) -> Result<MountPlan, String> {
    let cstrings = |paths: &[PathBuf]| -> Result<Vec<CString>, String> {
        paths.iter().map(|p| cstring(p)).collect()
    };
    let write_ws = req.mode == SandboxMode::WorkspaceWrite;
    let git = if write_ws { git } else { GitPlan::Leave };
    let mut plan = MountPlan {
        ns,
        writable: cstrings(writable)?,
        protect_in: if write_ws {
            Some(cstring(workspace)?)
        } else {
            None
        },
        git,
        read_only: cstrings(req.read_only)?,
        covers: req.covers.clone(),
        hidden: cstrings(req.secrets)?,
        cwd: cstring(req.cwd)?,
        net: req.proxy.is_some(),
        unprivileged: None,
    };
    if super::idmap::drops_root(ns.plain) {
        plan.unprivileged = idmapped(&plan, writable);
    }
    Ok(plan)
}

/// How root's commands write as `nobody` under `plan` (see `idmap`), when this machine lets
/// them: a user namespace per owner, and every writable directory's filesystem idmappable
/// (tried once per set of directories, in a child that arranges the mounts: ext4, xfs, btrfs
/// and tmpfs can, 9p or NFS cannot). Else `None`, and root's commands stay root with the file
/// capabilities only, as without namespaces (logged).
fn idmapped(plan: &MountPlan, writable: &[PathBuf]) -> Option<mounts::Unprivileged> {
    static TRIED: std::sync::Mutex<Vec<(Vec<CString>, bool)>> = std::sync::Mutex::new(Vec::new());
    let unprivileged = unprivileged(writable, &plan.git)
        .inspect_err(|e| tracing::warn!("sandbox: root's commands stay root: {e}"))
        .ok()?;
    let mut tried = TRIED.lock().unwrap_or_else(|e| e.into_inner());
    let works = match tried.iter().find(|(dirs, _)| *dirs == plan.writable) {
        Some((_, works)) => *works,
        None => {
            let probe = MountPlan {
                protect_in: None,
                git: GitPlan::Leave,
                unprivileged: Some(unprivileged.clone()),
                cwd: c"/".into(),
                ..plan.clone()
            };
            let works = probe_plan(&probe);
            if !works {
                tracing::warn!(
                    "sandbox: a writable directory cannot be idmapped; root's commands stay root"
                );
            }
            tried.push((plan.writable.clone(), works));
            works
        }
    };
    works.then_some(unprivileged)
}

/// The user namespaces that idmap each writable directory and the `.git` view from its
/// owner to the command's ids (rein is root; see `idmap`).
fn unprivileged(writable: &[PathBuf], git: &GitPlan) -> io::Result<mounts::Unprivileged> {
    let mut userns: Vec<(u32, u32, libc::c_int)> = Vec::new();
    let mut index_of = |dir: &Path| -> io::Result<usize> {
        let meta = std::fs::metadata(dir)?;
        let owner = (meta.uid(), meta.gid());
        if let Some(at) = userns.iter().position(|(u, g, _)| (*u, *g) == owner) {
            return Ok(at);
        }
        let fd = super::idmap::userns_for(owner)?;
        userns.push((owner.0, owner.1, fd));
        Ok(userns.len() - 1)
    };
    // One inside another (outer ones come first) is bound from the outer one's idmapped
    // mount and keeps its mapping: a mount is idmapped once.
    let writable = writable
        .iter()
        .enumerate()
        .map(
            |(i, d)| match writable[..i].iter().any(|o| d.starts_with(o)) {
                true => Ok(None),
                false => index_of(d).map(Some),
            },
        )
        .collect::<io::Result<Vec<_>>>()?;
    let git_view = match git {
        GitPlan::View { dir, .. } => Some(index_of(Path::new(OsStr::from_bytes(dir.as_bytes())))?),
        _ => None,
    };
    Ok(mounts::Unprivileged {
        userns: userns.into_iter().map(|(_, _, fd)| fd).collect(),
        writable,
        git_view,
    })
}

/// The Landlock ruleset of a command (built before the fork, or ahead: see `spare`) and the
/// grants added late.
fn landlock_rules(
    req: &Request<'_>,
    kernel_abi: i32,
    namespaces: bool,
    writable: &[PathBuf],
) -> Result<(Option<OwnedFd>, LateGrants), String> {
    // Without namespaces the secrets and home can only be kept out of the read rules.
    // Home is left out in both: without namespaces that hides it; with them, the
    // shown places are mounts in an empty tmpfs, and Landlock looks for a rule on a
    // mount's own root, not on the directory it covers, so they need rules of their own.
    let mut unreadable = if namespaces {
        Vec::new()
    } else {
        req.secrets.to_vec()
    };
    // Root without namespaces keeps its file rights: what only root (or a group) may read
    // in the system's directories is left out by its mode.
    // SAFETY: geteuid cannot fail.
    if !namespaces && unsafe { libc::geteuid() } == 0 {
        unreadable.extend(super::secrets::closed_system_places().iter().cloned());
        unreadable.sort();
        unreadable.dedup();
    }
    let inputs = super::spare::Inputs::new(
        kernel_abi,
        // In its own network namespace, TCP reaches only `lo` of that namespace: the
        // proxy, and servers the command starts itself.
        req.network || req.proxy.is_some(),
        req.network,
        writable,
        &unreadable,
        req.covered.to_vec(),
        namespaces,
    );
    req.spare.take(inputs)
}

/// Without namespaces a place to hide is only left out of Landlock's read rules, which cannot
/// take a part out of a directory granted as a whole: one inside a directory commands may
/// write (the workspace, the temporary one, a build cache) would stay readable. The command is
/// not run then (fail closed, as the allow-list without a network namespace), and the error
/// says which place and what to do.
fn refuse_unhideable(secrets: &[PathBuf], writable: &[PathBuf]) -> Result<(), String> {
    let inside = secrets
        .iter()
        .find_map(|s| writable.iter().find(|w| s.starts_with(w)).map(|w| (s, w)));
    match inside {
        None => Ok(()),
        Some((secret, dir)) => Err(format!(
            "Without namespaces the sandbox cannot hide {} from commands: it lies inside {}, \
             which they may write. Start rein in a directory that does not hold it, drop it \
             from [sandbox] hide if you listed it there, or run rein where namespaces are \
             available; the command was not run.",
            secret.display(),
            dir.display()
        )),
    }
}

/// Creates `dir` if needed and returns its canonical path.
fn writable_dir(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir)
        .and_then(|()| super::paths::canonicalize(dir))
        .map_err(|e| format!("The sandbox cannot use {}: {e}.", dir.display()))
}

impl Confinement {
    /// No confinement, only the supervision (sandbox off, or unavailable).
    pub(crate) fn unconfined(report: RawFd) -> Confinement {
        Confinement {
            mounts: None,
            ruleset: None,
            late: LateGrants::default(),
            seccomp: None,
            report,
            proxy: None,
        }
    }

    /// Prepares the confinement for one command.
    pub(crate) fn prepare(mut req: Request<'_>) -> Result<Confinement, String> {
        let workspace = super::paths::canonicalize(req.workspace).map_err(|e| {
            let ws = req.workspace.display();
            format!("The sandbox cannot use the workspace {ws}: {e}.")
        })?;
        let write_ws = req.mode == SandboxMode::WorkspaceWrite;
        let mut writable = vec![writable_dir(req.temp_dir)?];
        for dir in req.extra_writable {
            writable.push(writable_dir(dir)?);
        }
        if write_ws {
            writable.push(workspace.clone());
        }
        // Outer directories first, so an inner bind lands on top of an outer one.
        writable.sort_by_key(|p| p.components().count());
        writable.dedup();

        let k = kernel();
        let namespaces = req.use_namespaces && k.ns.any();
        if req.proxy.is_some() && !namespaces {
            // Fail closed: without its own network namespace a command could reach any host on
            // the proxy's port (Landlock's TCP rules know ports, not hosts).
            return Err(
                "The network allow-list needs network namespaces, which are not available \
                        here; the command was not run."
                    .into(),
            );
        }
        if !namespaces && req.use_landlock {
            refuse_unhideable(req.secrets, &writable)?;
        }
        let mounts = match namespaces {
            true => {
                let git = std::mem::replace(&mut req.git, GitPlan::Leave);
                Some(mount_plan(&req, git, k.ns, &workspace, &writable)?)
            }
            false => None,
        };
        let (ruleset, late) = if req.use_landlock && k.abi >= MIN_ABI {
            landlock_rules(&req, k.abi, namespaces, &writable)?
        } else {
            (None, LateGrants::default())
        };
        let sockets = match (req.network, req.proxy) {
            (true, _) => Sockets::Allow,
            (false, Some(_)) => Sockets::TcpOnly,
            (false, None) => Sockets::Refuse,
        };
        // With namespaces the command gets an IPC namespace of its own (`NsEntry`), and a PID
        // namespace where the kernel allows one.
        let shared = Shared {
            ipc: !namespaces,
            pids: !mounts.as_ref().is_some_and(|plan| plan.ns.pid),
        };
        let seccomp = Filter::cached(sockets, shared);
        if seccomp.is_none() && !req.network {
            return Err(
                "The sandbox has no network filter for this CPU; set sandbox.network = true or \
                        sandbox = \"off\"."
                    .into(),
            );
        }
        Ok(Confinement {
            mounts,
            ruleset,
            late,
            seccomp,
            report: req.report,
            proxy: req.proxy,
        })
    }

    /// Runs in the child between fork and exec: sets up the namespaces and mounts, forks the
    /// supervising processes (which never return from here), and confines the process that
    /// goes on to exec the command. System calls only (async-signal-safe); errors carry only
    /// an errno.
    pub(crate) fn enter(&self) -> io::Result<()> {
        self.enter_after(&|| Ok(()), None)
    }

    /// [`Confinement::enter`], calling `gate` once the namespaces and mounts are ready and
    /// before any other process is forked (the zygote's child waits there for rein to have its
    /// pid, so that setting up overlaps that round trip). With `start`, the command's process
    /// shares this one's memory until it execs and runs `start` (see [`Start`]); this call
    /// then never returns.
    pub(crate) fn enter_after(
        &self,
        gate: &dyn Fn() -> io::Result<()>,
        start: Option<Start>,
    ) -> io::Result<()> {
        supervise::block_signals()?;
        let mut mounted = Mounted::default();
        let mut pid_ns = false;
        if let Some(plan) = &self.mounts {
            pid_ns = plan.enter_namespaces()?;
            mounted = plan.arrange()?;
        }
        gate()?;
        if let Some(channel) = self.proxy {
            // In the new network namespace, before anything of the command runs.
            super::netns::open_proxy_port(channel)?;
        }
        if !pid_ns {
            supervise::become_subreaper()?;
            let pid = self.command_process(mounted, start)?;
            if pid > 0 {
                supervise::reap(pid, Reaping::Subreaper, self.report);
            }
            return self.confine_command(mounted);
        }
        let pid = supervise::fork()?;
        if pid > 0 {
            supervise::forward(pid, self.report);
        }
        // The namespace's init: it dies with the supervisor, and the namespace with it.
        // SAFETY: plain prctl.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        mounted.proc = mounts::fresh_proc();
        match self.command_process(mounted, start) {
            Ok(0) => {}
            Ok(pid) => supervise::reap(pid, Reaping::PidNamespace, self.report),
            Err(e) => supervise::fail(self.report, &e),
        }
        self.confine_command(mounted)
    }

    /// Makes the process that becomes the command and returns its pid here. With `start` it
    /// shares this process's memory until it execs (this process waits until then; nothing
    /// is copied) and never comes back; without, it is forked and returns `Ok(0)` here.
    fn command_process(&self, mounted: Mounted, start: Option<Start>) -> io::Result<libc::pid_t> {
        match start {
            Some(start) => supervise::spawn_shared(&|| start(self.confine_command(mounted))),
            None => supervise::fork(),
        }
    }

    /// The namespaces a child can be cloned into directly, to be their init itself (see
    /// [`Confinement::enter_as_init`]); `None` when this confinement has no PID namespace.
    /// Call in the process that clones.
    pub(crate) fn init_entry(&self) -> Option<mounts::NsEntry> {
        let plan = self.mounts.as_ref()?;
        plan.ns_entry().ok().filter(|e| e.pid())
    }

    /// Whether the child calls `unshare` (namespaces without a PID namespace to be cloned
    /// into): a process that shares its parent's memory cannot enter a user namespace so.
    pub(crate) fn unshares(&self) -> bool {
        self.mounts.is_some() && self.init_entry().is_none()
    }

    /// [`Confinement::enter_after`] for a child cloned into the namespaces `entry` gives
    /// (rein's child, the init of its PID namespace): it sets up the mounts, waits at `gate`,
    /// makes the command's process (which runs `start`) and reaps; a stop request (`SIGTERM`)
    /// kills the whole namespace. One process less than a supervisor that forks an init. The
    /// stop signals must be blocked already when it is cloned: an init ignores signals it has
    /// no handler for.
    pub(crate) fn enter_as_init(
        &self,
        entry: mounts::NsEntry,
        gate: &dyn Fn() -> io::Result<()>,
        start: Start,
    ) -> io::Result<()> {
        let plan = self
            .mounts
            .as_ref()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let mounted = arrange_as_init(plan, entry)?;
        gate()?;
        self.run_as_init(mounted, start)
    }

    /// The rest of [`Confinement::enter_as_init`] once the namespaces are arranged (by
    /// [`arrange_as_init`], maybe for an earlier request with the same mounts, see
    /// `zygote`'s parking) and rein has the pid: the proxy's port, the command's process,
    /// then reaping. Never returns but with an error.
    pub(crate) fn run_as_init(&self, mounted: Mounted, start: Start) -> io::Result<()> {
        if let Some(channel) = self.proxy {
            super::netns::open_proxy_port(channel)?;
        }
        let pid = self.command_process(mounted, Some(start))?;
        supervise::reap(pid, Reaping::PidNamespace, self.report)
    }

    /// The mounts this confinement arranges, if any.
    pub(crate) fn mount_plan(&self) -> Option<&MountPlan> {
        self.mounts.as_ref()
    }

    /// The seccomp filter an init made ahead may install in itself for this confinement's
    /// command (see [`confine_ahead`]); none when the init must open the proxy's port, a
    /// socket the filter may refuse.
    pub(crate) fn ahead_filter(&self) -> Option<&Filter> {
        self.seccomp.as_ref().filter(|_| self.proxy.is_none())
    }

    /// The last steps in the process that becomes the command.
    fn confine_command(&self, mounted: Mounted) -> io::Result<()> {
        // Dies with its reaper; a session of its own: no controlling terminal, so it can
        // neither read the person's keys nor take over the terminal's foreground.
        // SAFETY: plain calls.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        supervise::unblock_signals()?;
        // The command gets its three streams and nothing else: a descriptor rein inherited
        // (a file outside, a terminal) would be a way around Landlock, which checks opens.
        close_on_exec_from(3)?;
        if let Some(plan) = &self.mounts {
            plan.finish()?;
        }
        // The zygote's short slice is for starting; the command is scheduled like any other
        // program (a failure changes only its latency, so it is not one).
        let _ = super::slice::request(0);
        let confined = self.ruleset.is_some() || self.seccomp.is_some();
        // Root (or uid 0 of a user namespace) keeps no capability that could undo the mounts
        // after exec or read other processes' memory and environment (CAP_SYS_PTRACE
        // overrides "not dumpable"). Others have none to drop.
        // SAFETY: geteuid cannot fail.
        if !mounted.bounded
            && (self.mounts.is_some() || (confined && unsafe { libc::geteuid() } == 0))
        {
            mounts::drop_capabilities()?;
        }
        // Root's commands run as nobody: outside what they may write, they read only what
        // any user may (see `idmap`).
        if self
            .mounts
            .as_ref()
            .is_some_and(|m| m.unprivileged.is_some())
        {
            super::idmap::become_command_ids()?;
        }
        if !confined {
            return Ok(());
        }
        // Required for Landlock and seccomp without privileges; also stops setuid binaries
        // from gaining rights the sandbox does not have.
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(ruleset) = &self.ruleset {
            // The ruleset is shared with other commands (see `spare`): these rules stay in it,
            // reaching nothing once this namespace is gone.
            for (done, path, access) in [
                (mounted.shm, mounts::dev_shm(), self.late.shm),
                (mounted.pts, mounts::dev_pts(), self.late.pts),
                (mounted.proc, mounts::proc(), self.late.proc),
            ] {
                if done && access != 0 {
                    grant_path(ruleset, path, access)?;
                }
            }
            // SAFETY: plain syscall on a valid ruleset descriptor.
            if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) }
                != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = self.seccomp.as_ref().filter(|_| !mounted.filtered) {
            filter.install()?;
        }
        Ok(())
    }
}

/// In an init made ahead (see `park`), once arranged: the confinement of its command's
/// process that does not depend on the request, done here, off the command's path (the
/// process inherits both): an empty capability bounding set, and `filter` (the request's
/// [`Confinement::ahead_filter`] must then be the same). The init's own capabilities stay
/// (dropping from the bounding set does not touch them), and nothing it does after is
/// refused: no socket, no mount, no `openat2`. Async-signal-safe.
pub(crate) fn confine_ahead(mounted: &mut Mounted, filter: Option<&Filter>) -> io::Result<()> {
    mounts::drop_capabilities()?;
    mounted.bounded = true;
    if let Some(filter) = filter {
        // Needed to install a filter without `CAP_SYS_ADMIN`; the command's process sets it
        // too (for Landlock), and this process never execs.
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        filter.install()?;
        mounted.filtered = true;
    }
    Ok(())
}

/// In a child cloned into the namespaces `entry` gives (their init): maps its ids and arranges
/// `plan`'s mounts and a fresh `/proc`. Async-signal-safe.
pub(crate) fn arrange_as_init(plan: &MountPlan, entry: mounts::NsEntry) -> io::Result<Mounted> {
    supervise::block_signals()?;
    entry.map_ids()?;
    let mut mounted = plan.arrange()?;
    mounted.proc = mounts::fresh_proc();
    Ok(mounted)
}

/// Marks every descriptor from `first` on close-on-exec. System calls only (safe between fork
/// and exec): `close_range` (Linux 5.11, older than any Landlock ABI rein accepts), else each
/// number up to the descriptor limit.
pub(crate) fn close_on_exec_from(first: u32) -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: plain syscall; it changes only descriptor flags.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if rc == 0 {
        return Ok(());
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let end = limit.rlim_cur.min(1 << 20) as libc::c_int;
    for fd in first as libc::c_int..end {
        // SAFETY: plain fcntl; EBADF (no such descriptor) is expected and ignored.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// `struct landlock_path_beneath_attr` (packed in the kernel header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds a rule for a mount the child made (`/dev/shm`, `/dev/pts`, `/proc`), which did not
/// exist when the ruleset was built.
fn grant_path(ruleset: &OwnedFd, path: &std::ffi::CStr, access: u64) -> io::Result<()> {
    use std::os::fd::{AsFd, FromRawFd};
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns (closed when dropped).
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    add_rule(ruleset, fd.as_fd(), access)
}

/// Adds the rule "`access` beneath `parent`" to `ruleset`.
fn add_rule(ruleset: &OwnedFd, parent: std::os::fd::BorrowedFd<'_>, access: u64) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: `attr` is a valid rule for the duration of the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the Landlock rules allow.
pub(crate) struct Rules<'a> {
    pub(crate) abi: ABI,
    /// TCP bind and connect are not restricted (the whole network, or a namespace of its own).
    pub(crate) tcp: bool,
    /// The whole network: abstract unix sockets are not scoped either.
    pub(crate) network: bool,
    pub(crate) writable: &'a [PathBuf],
    /// Paths left out of the read rules (canonical).
    pub(crate) unreadable: &'a [PathBuf],
    /// Directories left out of the read rules but for their shown places (canonical).
    pub(crate) covered: &'a readable::Covered,
    /// The child mounts its own `/dev/pts`: `/dev/ptmx` may open terminals there.
    pub(crate) private_terminals: bool,
}

/// Where a ruleset's read grants come from.
pub(crate) enum Grants<'a> {
    /// A walk now, kept in the given walk when there is one.
    Walk(Option<&'a mut readable::Walk>),
    /// A kept walk, replayed.
    Replay(&'a readable::Walk),
}

/// Builds the ruleset: read and execute everywhere but `/dev` and the unreadable paths; write
/// in the writable trees; a few device files.
pub(crate) fn build_ruleset(
    r: &Rules<'_>,
    grants: Grants<'_>,
) -> Result<(Option<OwnedFd>, LateGrants), String> {
    let e = |e: landlock::RulesetError| e.to_string();
    let abi = r.abi;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let file_only = AccessFs::from_file(abi);
    // Device nodes are never created or driven from the writable trees: a root command could
    // otherwise make a block device for the disk and write to it.
    let tree = all & !make_bitflags!(AccessFs::{MakeChar | MakeBlock | IoctlDev});
    let device: BitFlags<AccessFs> = all & make_bitflags!(AccessFs::{ReadFile | WriteFile});
    // Terminals the command opens itself (script, expect, pty test suites) need their ioctls;
    // TIOCSTI/TIOCLINUX, the ones that inject input, are refused by seccomp.
    let terminal = all & make_bitflags!(AccessFs::{ReadFile | WriteFile | IoctlDev});

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(e)?;
    if !r.tcp && abi >= ABI::V4 {
        // No rule for any port: every TCP bind and connect is refused (seccomp already stops
        // socket creation; this is the second lock on the same door).
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(e)?;
    }
    if abi >= ABI::V6 {
        // Signals only to processes inside the sandbox; abstract unix sockets only to
        // listeners inside it.
        let scopes = if r.network {
            BitFlags::from(Scope::Signal)
        } else {
            Scope::from_all(abi)
        };
        ruleset = ruleset.scope(scopes).map_err(e)?;
    }
    let mut created = ruleset.create().map_err(e)?;
    let fd = |p: &Path| PathFd::new(p).map_err(|err| format!("{}: {err}", p.display()));
    for dir in r.writable {
        created = created
            .add_rule(PathBeneath::new(fd(dir)?, tree))
            .map_err(e)?;
    }
    let ptmx: &[&str] = if r.private_terminals {
        &["/dev/ptmx"]
    } else {
        &[]
    };
    let devices = readable::DATA_DEVICES
        .iter()
        .map(|p| (*p, device))
        .chain(
            readable::RANDOM_DEVICES
                .iter()
                .map(|p| (*p, read & file_only)),
        )
        .chain(ptmx.iter().map(|p| (*p, terminal)));
    for (path, access) in devices {
        // Missing device files (minimal containers) are simply not granted.
        if let Ok(fd) = PathFd::new(path) {
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(e)?;
        }
    }
    let late = LateGrants {
        shm: tree.bits(),
        pts: (terminal | AccessFs::ReadDir).bits(),
        proc: read.bits(),
    };
    let created: Option<OwnedFd> = created.into();
    let Some(ruleset) = created else {
        return Err("Landlock made no ruleset".into());
    };
    // The read grants (hundreds beside a crowded `/tmp` or `/home`) are added directly: the
    // kind of each is known, so the crate's look at every descriptor is not needed.
    let mut add = |kind: readable::Kind, fd: std::os::fd::BorrowedFd<'_>| {
        let access: BitFlags<AccessFs> = match kind {
            readable::Kind::List => AccessFs::ReadDir.into(),
            readable::Kind::Tree => read,
            readable::Kind::File => read & file_only,
        };
        add_rule(&ruleset, fd, access.bits())
            .map_err(|err| format!("a read rule could not be added: {err}"))
    };
    match grants {
        Grants::Replay(walk) => walk.replay(&mut add)?,
        Grants::Walk(mut record) => {
            readable::each_grant::<String>(r.unreadable, r.covered, &mut |grant: Grant| {
                let (kind, fd) = grant.parts();
                add(kind, fd)?;
                if let Some(walk) = record.as_deref_mut() {
                    walk.keep(grant);
                }
                Ok(())
            })?
        }
    }
    Ok((Some(ruleset), late))
}

/// Whether a child can set up private namespaces the way `ns` allows (forks once, twice with
/// a PID namespace; the children only make system calls and exit).
fn probe_namespace(ns: NsSupport) -> bool {
    probe(ns, false)
}

/// Whether the namespaces that work here can have a network namespace added, with `lo` up
/// (for the network allow-list).
pub(crate) fn probe_network_namespace() -> bool {
    let k = kernel();
    k.ns.any() && probe(k.ns, true)
}

fn probe(ns: NsSupport, net: bool) -> bool {
    let temp = std::env::temp_dir()
        .canonicalize()
        .ok()
        .and_then(|p| cstring(&p).ok());
    let plan = MountPlan {
        ns,
        writable: temp.into_iter().collect(),
        protect_in: None,
        git: GitPlan::Leave,
        read_only: Vec::new(),
        covers: Vec::new(),
        hidden: Vec::new(),
        cwd: c"/".into(),
        net,
        unprivileged: None,
    };
    probe_plan(&plan)
}

/// Whether a child can enter the namespaces of `plan` and arrange its mounts.
fn probe_plan(plan: &MountPlan) -> bool {
    let net = plan.net;
    let child = || -> io::Result<()> {
        if plan.enter_namespaces()? {
            // The first process forked is the PID namespace's init.
            if supervise::fork()? == 0 {
                // SAFETY: leaving the forked child.
                unsafe { libc::_exit(0) };
            }
        }
        plan.arrange()?;
        if net {
            super::netns::loopback_up()?;
        }
        Ok(())
    };
    // SAFETY: the child only runs async-signal-safe code and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = if child().is_ok() { 0 } else { 1 };
        // SAFETY: leaving the forked child without running destructors or atexit handlers.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return false;
    }
    wait_ok(pid)
}

/// Waits for `pid` and tells whether it exited with 0.
fn wait_ok(pid: libc::pid_t) -> bool {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}
