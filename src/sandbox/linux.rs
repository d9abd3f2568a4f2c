//! The Linux sandbox: Landlock for the filesystem, a seccomp filter for the network, and a
//! private mount namespace for the read-only holes Landlock cannot express.
//!
//! Everything that allocates (paths, the Landlock ruleset, the BPF program) is prepared in
//! rein before the fork; the child only makes system calls before it executes the command.

use super::mounts::{self, MountPlan, NsSupport};
use super::seccomp::Filter;
use crate::config::SandboxMode;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, make_bitflags,
};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The newest Landlock ABI whose rights rein has been tested with. Newer kernels get these
/// rights (the kernel keeps old ABIs stable); older ones get what they support.
const TESTED_ABI: i32 = 7;

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

/// The kernel's capabilities (probed on first use: one syscall and two short forks).
pub(crate) fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        let abi = landlock_abi();
        let ns = NsSupport {
            plain: probe_namespace(NsSupport {
                plain: true,
                user: false,
            }),
            user: probe_namespace(NsSupport {
                plain: false,
                user: true,
            }),
        };
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
pub(crate) fn missing_support(
    mode: SandboxMode,
    network: bool,
    simulate_no_landlock: bool,
) -> Option<String> {
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
    if mode == SandboxMode::WorkspaceWrite && !k.ns.any() {
        return Some(
            "no private mount namespace is available (unprivileged user namespaces are disabled), so \
             .git/hooks, .git/config and .rein cannot be kept read-only"
                .into(),
        );
    }
    None
}

/// Everything the child needs, prepared before the fork.
pub(crate) struct Confinement {
    mounts: Option<MountPlan>,
    /// The Landlock ruleset; `None` when Landlock is unavailable.
    ruleset: Option<OwnedFd>,
    /// Rights to grant on a private `/dev/shm` (raw Landlock bits).
    shm_access: u64,
    seccomp: Option<Filter>,
}

/// Settings for [`Confinement::prepare`].
pub(crate) struct Request<'a> {
    pub(crate) mode: SandboxMode,
    pub(crate) network: bool,
    pub(crate) workspace: &'a Path,
    pub(crate) temp_dir: &'a Path,
    /// More directories bash may write (build caches), created when missing.
    pub(crate) extra_writable: &'a [PathBuf],
    pub(crate) cwd: &'a Path,
    pub(crate) use_landlock: bool,
}

fn cstring(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte.", p.display()))
}

/// Creates `dir` if needed and returns its canonical path.
fn writable_dir(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::canonicalize(dir))
        .map_err(|e| format!("The sandbox cannot use {}: {e}.", dir.display()))
}

impl Confinement {
    /// Prepares the confinement for one command.
    pub(crate) fn prepare(req: &Request<'_>) -> Result<Confinement, String> {
        let workspace = std::fs::canonicalize(req.workspace).map_err(|e| {
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
        let mounts = match k.ns.any() {
            true => Some(MountPlan {
                ns: k.ns,
                writable: writable
                    .iter()
                    .map(|p| cstring(p))
                    .collect::<Result<_, _>>()?,
                protect_in: if write_ws {
                    Some(cstring(&workspace)?)
                } else {
                    None
                },
                cwd: cstring(req.cwd)?,
            }),
            false => None,
        };
        let (ruleset, shm_access) = if req.use_landlock && k.abi >= MIN_ABI {
            let abi = ABI::from(k.abi.min(TESTED_ABI));
            build_ruleset(abi, req.network, &writable)
                .map_err(|e| format!("The sandbox could not build its Landlock rules: {e}."))?
        } else {
            (None, 0)
        };
        let seccomp = Filter::build(!req.network);
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
            shm_access,
            seccomp,
        })
    }

    /// Confines the calling process. Runs in the child between fork and exec, so it only makes
    /// system calls (async-signal-safe); errors carry only an errno.
    pub(crate) fn enter(&self) -> io::Result<()> {
        let shm = match &self.mounts {
            Some(plan) => plan.enter()?,
            None => false,
        };
        // Required for Landlock and seccomp without privileges; also stops setuid binaries
        // from gaining rights the sandbox does not have.
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(ruleset) = &self.ruleset {
            if shm && self.shm_access != 0 {
                grant_dev_shm(ruleset, self.shm_access)?;
            }
            // SAFETY: plain syscall on a valid ruleset descriptor.
            if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) }
                != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = &self.seccomp {
            filter.install()?;
        }
        Ok(())
    }
}

/// `struct landlock_path_beneath_attr` (packed in the kernel header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds a rule for the child's own tmpfs on `/dev/shm`, which did not exist when the ruleset
/// was built.
fn grant_dev_shm(ruleset: &OwnedFd, access: u64) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let path = mounts::dev_shm();
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
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
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
    let err = io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    if rc == 0 { Ok(()) } else { Err(err) }
}

/// Builds the ruleset: read and execute everywhere; write in `writable`; a few device files.
fn build_ruleset(
    abi: ABI,
    network: bool,
    writable: &[PathBuf],
) -> Result<(Option<OwnedFd>, u64), String> {
    let e = |e: landlock::RulesetError| e.to_string();
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    // Device nodes are never created or driven from the writable trees: a root command could
    // otherwise make a block device for the disk and write to it.
    let tree = all & !make_bitflags!(AccessFs::{MakeChar | MakeBlock | IoctlDev});
    let device: BitFlags<AccessFs> = all & make_bitflags!(AccessFs::{ReadFile | WriteFile});
    // Terminals: prompts and pty-based tools (script, expect, pty test suites) need their
    // ioctls; TIOCSTI/TIOCLINUX, the ones that inject input, are refused by seccomp.
    let terminal = all & make_bitflags!(AccessFs::{ReadFile | WriteFile | IoctlDev});

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(e)?;
    if !network && abi >= ABI::V4 {
        // No rule for any port: every TCP bind and connect is refused (seccomp already stops
        // socket creation; this is the second lock on the same door).
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(e)?;
    }
    if abi >= ABI::V6 {
        // Signals only to processes inside the sandbox; abstract unix sockets only to
        // listeners inside it.
        let scopes = if network {
            BitFlags::from(Scope::Signal)
        } else {
            Scope::from_all(abi)
        };
        ruleset = ruleset.scope(scopes).map_err(e)?;
    }
    let fd = |p: &Path| PathFd::new(p).map_err(|err| format!("{}: {err}", p.display()));
    let mut created = ruleset.create().map_err(e)?;
    created = created
        .add_rule(PathBeneath::new(fd(Path::new("/"))?, read))
        .map_err(e)?;
    for dir in writable {
        created = created
            .add_rule(PathBeneath::new(fd(dir)?, tree))
            .map_err(e)?;
    }
    for (path, access) in [
        ("/dev/null", device),
        ("/dev/zero", device),
        ("/dev/tty", terminal),
        ("/dev/ptmx", terminal),
        ("/dev/pts", terminal),
    ] {
        // Missing device files (minimal containers) are simply not granted.
        if let Ok(fd) = PathFd::new(path) {
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(e)?;
        }
    }
    Ok((created.into(), tree.bits()))
}

/// Whether a child can set up a private mount namespace the way `ns` allows (forks once; the
/// child only makes system calls and exits).
fn probe_namespace(ns: NsSupport) -> bool {
    let temp = std::env::temp_dir()
        .canonicalize()
        .ok()
        .and_then(|p| cstring(&p).ok());
    let plan = MountPlan {
        ns,
        writable: temp.into_iter().collect(),
        protect_in: None,
        cwd: c"/".into(),
    };
    // SAFETY: the child only runs async-signal-safe code (`MountPlan::enter`) and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = if plan.enter().is_ok() { 0 } else { 1 };
        // SAFETY: leaving the forked child without running destructors or atexit handlers.
        unsafe { libc::_exit(code) };
    }
    if pid < 0 {
        return false;
    }
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
