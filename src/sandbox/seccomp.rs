//! A small seccomp BPF filter, written by hand: it refuses to create sockets (no network),
//! refuses the terminal ioctls that inject input into another program's terminal, and, where a
//! command shares the person's IPC namespace, System V IPC and POSIX message queues.
//!
//! Why seccomp and not Landlock alone: Landlock (up to the ABI 7 we build for) restricts TCP
//! `bind`/`connect` by port but not UDP, raw sockets, or connecting to pathname unix sockets
//! such as `/var/run/docker.sock`. Refusing `socket()` itself covers all of them, works without
//! privileges (it only needs `no_new_privs`), and costs one syscall in the child.
//!
//! `socketpair()` stays allowed: it makes a connected pair inside the process and cannot reach
//! anything outside, and shells, Python's asyncio and libuv use it for plain IPC.

use std::io;

/// `struct seccomp_data` offsets. Little-endian: the low 32 bits of an argument come first
/// (the supported CPUs below are all little-endian).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
const DATA_ARG0: u32 = 16;
const DATA_ARG1: u32 = 24;
const DATA_ARG2: u32 = 32;

/// `AUDIT_ARCH_*` values (`<linux/audit.h>`), not exported by the libc crate.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;

/// System call numbers of one calling convention the kernel accepts on this machine.
struct Arch {
    audit: u32,
    socket: u32,
    ioctl: u32,
    io_uring_setup: u32,
    /// The multiplexed socket call of 32-bit x86/arm: its arguments sit behind a pointer the
    /// filter cannot read, so it is refused as a whole.
    socketcall: Option<u32>,
    /// Calls that change mounts. Landlock refuses most of them but not `mount_setattr`, which
    /// could make the read-only binds writable again; none of them has a use in a sandbox.
    mount: &'static [u32],
    /// `add_key`, `request_key`, `keyctl`: the kernel's keyrings are the person's (a command
    /// keeps their session keyring and uid, and Kerberos tickets live in the persistent one);
    /// Landlock does not govern them. ENOSYS: "no keyrings here", which their users handle.
    keys: [u32; 3],
    /// Calls private to this convention, numbered beyond the common table, that programs
    /// need (32-bit arm's `cacheflush` and `set_tls`): allowed, first to last.
    private: Option<(u32, u32)>,
    /// Calls that set a file's mode, with the index of the mode argument: `chmod`, `fchmod`,
    /// `fchmodat`, `fchmodat2`, `open`, `openat`, `creat`, `mknod`, `mknodat` (those this
    /// convention has). Setting the setuid or setgid bit is refused (see [`SET_ID_BITS`]).
    modes: &'static [(u32, u32)],
    /// System V IPC (shared memory, message queues, semaphores, the i386 multiplexer) and
    /// POSIX message queues: kernel objects of the IPC namespace that Landlock does not
    /// govern (see [`Shared::ipc`]).
    ipc: &'static [u32],
    /// `prlimit64` and `setpriority`, which change another process by pid (see
    /// [`Shared::pids`]).
    prlimit64: u32,
    setpriority: u32,
}

/// `S_ISUID | S_ISGID`. A file the command marks setuid stays so on disk after the call,
/// owned by the workspace's owner: whoever runs it later, outside the sandbox, would run the
/// command's code with that owner's rights (root's, when rein runs as root). No coding task
/// needs one, so no command may set either bit; `openat2`, whose mode the filter cannot
/// read, and io_uring, which can open files too, get ENOSYS (their users fall back).
const SET_ID_BITS: u32 = 0o6000;

/// `openat2`, numbered alike on every architecture.
const OPENAT2: u32 = 437;

/// The first system call number this filter has not been reviewed for, the same in every
/// table since Linux 5.1 (`file_setattr`, 469, is the last one Linux 6.18 has). A number the
/// kernel adds later gets ENOSYS, as on a kernel without it, until rein is reviewed for it:
/// what the sandbox allows is what rein knows, not whatever a newer kernel offers.
const FIRST_UNREVIEWED: u32 = 470;

/// The new mount API, numbered alike on every architecture: open_tree, move_mount, fsopen,
/// fsconfig, fsmount, fspick, mount_setattr, open_tree_attr.
const NEW_MOUNT_API: [u32; 8] = [428, 429, 430, 431, 432, 433, 442, 467];

/// `mount`, `umount2`, `pivot_root` (x86_64) and the new mount API.
#[cfg(target_arch = "x86_64")]
const MOUNT_X86_64: [u32; 11] = concat(&[165, 166, 155]);
/// `mount`, `umount`, `umount2`, `pivot_root` (i386) and the new mount API.
#[cfg(target_arch = "x86_64")]
const MOUNT_I386: [u32; 12] = concat(&[21, 22, 52, 217]);
/// `umount2`, `mount`, `pivot_root` (generic table) and the new mount API.
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const MOUNT_AARCH64: [u32; 11] = concat(&[39, 40, 41]);
/// `mount`, `umount`, `umount2`, `pivot_root` (arm) and the new mount API.
#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const MOUNT_ARM: [u32; 12] = concat(&[21, 22, 52, 218]);

/// `old` followed by [`NEW_MOUNT_API`].
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "aarch64", target_endian = "little")
))]
const fn concat<const N: usize>(old: &[u32]) -> [u32; N] {
    let mut out = [0; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < old.len() {
            old[i]
        } else {
            NEW_MOUNT_API[i - old.len()]
        };
        i += 1;
    }
    out
}

#[cfg(target_arch = "x86_64")]
const ARCHES: &[Arch] = &[
    Arch {
        audit: AUDIT_ARCH_X86_64,
        socket: 41,
        ioctl: 16,
        io_uring_setup: 425,
        socketcall: None,
        mount: &MOUNT_X86_64,
        keys: [248, 249, 250],
        private: None,
        modes: &[
            (90, 1),
            (91, 1),
            (268, 2),
            (452, 2),
            (2, 2),
            (257, 3),
            (85, 1),
            (133, 1),
            (259, 2),
        ],
        ipc: &[
            29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245,
        ],
        prlimit64: 302,
        setpriority: 141,
    },
    Arch {
        audit: AUDIT_ARCH_I386,
        socket: 359,
        ioctl: 54,
        io_uring_setup: 425,
        socketcall: Some(102),
        mount: &MOUNT_I386,
        keys: [286, 287, 288],
        private: None,
        modes: &[
            (15, 1),
            (94, 1),
            (306, 2),
            (452, 2),
            (5, 2),
            (295, 3),
            (8, 1),
            (14, 1),
            (297, 2),
        ],
        ipc: &[
            117, 277, 278, 279, 280, 281, 282, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402,
            418, 419, 420,
        ],
        prlimit64: 340,
        setpriority: 97,
    },
];

#[cfg(all(target_arch = "aarch64", target_endian = "little"))]
const ARCHES: &[Arch] = &[
    Arch {
        audit: AUDIT_ARCH_AARCH64,
        socket: 198,
        ioctl: 29,
        io_uring_setup: 425,
        socketcall: None,
        mount: &MOUNT_AARCH64,
        keys: [217, 218, 219],
        private: None,
        modes: &[(52, 1), (53, 2), (452, 2), (56, 3), (33, 2)],
        ipc: &[
            180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196,
            197,
        ],
        prlimit64: 261,
        setpriority: 140,
    },
    Arch {
        audit: AUDIT_ARCH_ARM,
        socket: 281,
        ioctl: 54,
        io_uring_setup: 425,
        socketcall: Some(102),
        mount: &MOUNT_ARM,
        keys: [309, 310, 311],
        // `__ARM_NR_breakpoint` to `__ARM_NR_get_tls`.
        private: Some((0x000f_0001, 0x000f_0006)),
        modes: &[
            (15, 1),
            (94, 1),
            (333, 2),
            (452, 2),
            (5, 2),
            (322, 3),
            (8, 1),
            (14, 1),
            (324, 2),
        ],
        // 117 is the old ABI's multiplexer.
        ipc: &[
            117, 274, 275, 276, 277, 278, 279, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307,
            308, 312, 418, 419, 420,
        ],
        prlimit64: 369,
        setpriority: 97,
    },
];

#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "aarch64", target_endian = "little")
)))]
const ARCHES: &[Arch] = &[];

/// Whether this build knows the system call numbers of the CPU it runs on.
pub(crate) fn supported() -> bool {
    !ARCHES.is_empty()
}

/// x86_64 also accepts x32 system calls (numbers with bit 30 set): all beyond the reviewed
/// table, so refused.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const _: () = assert!(FIRST_UNREVIEWED < X32_SYSCALL_BIT);

// BPF opcodes (`<linux/bpf_common.h>`).
const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;

/// The bits of `socket()`'s type argument that name the type (`SOCK_TYPE_MASK`); the others are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u32 = 0xf;

/// Which sockets a command may create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// None (no network).
    Refuse,
    /// TCP over IPv4 or IPv6 only (the network allow-list: the command has a network namespace
    /// of its own, so TCP reaches only its `lo`, where the proxy listens). No UDP (no DNS of
    /// its own), no raw or packet sockets, no unix sockets (daemons outside, such as a
    /// resolver's or Docker's, are reached through paths, which no namespace separates).
    TcpOnly,
    /// Any (`network = true`).
    Allow,
}

/// What a command shares with the person's other processes, which decides what the filter
/// must refuse: in the fallback both, with namespaces nothing (the PIDs too where the kernel
/// allows a PID namespace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shared {
    /// The IPC namespace: System V shared memory, message queues and semaphores of the
    /// person's programs (a database's buffers, an X server's window images), and their POSIX
    /// message queues, kernel objects Landlock does not govern. The calls get ENOSYS.
    pub(crate) ipc: bool,
    /// The PID namespace: `prlimit64` and `setpriority` could change the person's processes,
    /// rein included, by pid (a file size limit of 0 kills rein at its next write), and the
    /// change would outlive the call; Landlock does not govern them. Only a command's own
    /// limits and priority may change (pid 0), and another's limits may still be read.
    pub(crate) pids: bool,
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

/// A compiled filter, ready to install in a child before exec.
///
/// Mount changes and the terminal-injection ioctls are always refused; sockets only when
/// the network is off.
#[derive(Clone)]
pub(crate) struct Filter {
    prog: Vec<libc::sock_filter>,
}

impl Filter {
    /// The program as plain words, to send it to the zygote.
    pub(crate) fn to_words(&self) -> Vec<u64> {
        let word = |i: &libc::sock_filter| {
            u64::from(i.code) | u64::from(i.jt) << 16 | u64::from(i.jf) << 24 | u64::from(i.k) << 32
        };
        self.prog.iter().map(word).collect()
    }

    /// The program [`Filter::to_words`] made.
    pub(crate) fn from_words(words: &[u64]) -> Filter {
        let ins = |w: &u64| libc::sock_filter {
            code: *w as u16,
            jt: (*w >> 16) as u8,
            jf: (*w >> 24) as u8,
            k: (*w >> 32) as u32,
        };
        Filter {
            prog: words.iter().map(ins).collect(),
        }
    }
}

/// One instruction whose jump targets are still symbolic.
enum Ins {
    Load(u32),
    /// `if A == k goto target` (else fall through).
    JumpIfEq(u32, Target),
    /// `if A >= k goto target` (else fall through).
    JumpIfGe(u32, Target),
    /// `if A != k goto target` (else fall through).
    JumpIfNe(u32, Target),
    Return(u32),
    /// `A &= k`.
    And(u32),
    Label(Target),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The start of the checks for `ARCHES[i]` (`ARCHES.len()` = unknown calling convention).
    Arch(usize),
    /// The ioctl argument check of `ARCHES[i]`.
    Ioctl(usize),
    /// The `socket()` check of `ARCHES[i]` (when sockets are not all allowed).
    Socket(usize),
    /// Node `n` of the search tree of `ARCHES[i]`.
    Node(usize, usize),
    /// `return -ENOSYS`.
    Nosys,
    /// `return -EPERM`.
    Eperm,
    /// `return -EACCES`.
    Eacces,
    /// `return ALLOW`.
    Allow,
    /// The type check of a TCP-only `socket()` of `ARCHES[i]`.
    SocketType(usize),
    /// A number of `ARCHES[i]` at or beyond [`FIRST_UNREVIEWED`].
    Beyond(usize),
    /// The check of a mode in argument `a` (any calling convention).
    Mode(u32),
    /// The pid and new-limit checks of `prlimit64` (any calling convention).
    Prlimit,
    /// The target checks of `setpriority` (any calling convention).
    Setpriority,
}

impl Filter {
    /// [`Filter::build`], kept: the program depends on its two inputs alone, and every command
    /// asks for one.
    pub(crate) fn cached(sockets: Sockets, shared: Shared) -> Option<Filter> {
        type Built = ((Sockets, Shared), Option<Filter>);
        static BUILT: std::sync::Mutex<Vec<Built>> = std::sync::Mutex::new(Vec::new());
        let mut built = crate::sync::lock(&BUILT);
        if let Some((_, filter)) = built.iter().find(|(k, _)| *k == (sockets, shared)) {
            return filter.clone();
        }
        let filter = Filter::build(sockets, shared);
        built.push(((sockets, shared), filter.clone()));
        filter
    }

    /// The filter for one sandbox: socket creation as `sockets` says, the calls that reach what
    /// the command shares with the person as `shared` says; `TIOCSTI`/`TIOCLINUX` and mount
    /// changes are always refused. `None` when this CPU is not supported.
    pub(crate) fn build(sockets: Sockets, shared: Shared) -> Option<Filter> {
        if !supported() {
            return None;
        }
        let mut code = Vec::new();
        for (i, arch) in ARCHES.iter().enumerate() {
            code.push(Ins::Label(Target::Arch(i)));
            // Which calling convention? Numbers mean different calls in each.
            code.push(Ins::Load(DATA_ARCH));
            code.push(Ins::JumpIfNe(arch.audit, Target::Arch(i + 1)));
            code.push(Ins::Load(DATA_NR));
            // Beyond the reviewed table: x32 calls (bit 30, practically unused), calls a newer
            // kernel adds, and this convention's private calls, checked apart.
            code.push(Ins::JumpIfGe(FIRST_UNREVIEWED, Target::Beyond(i)));
            // A search tree over the few calls that need a decision: every other call is
            // allowed after a handful of comparisons, which also keeps the kernel's
            // per-filter cache of always-allowed calls cheap to build (it runs the filter
            // once per system call number when the filter is installed, in every command).
            let special = runs(&special_calls(arch, i, sockets, shared));
            let mut nodes = 0;
            dispatch(&mut code, &special, i, &mut nodes);
            if sockets != Sockets::Allow {
                code.push(Ins::Label(Target::Socket(i)));
                if sockets == Sockets::TcpOnly {
                    tcp_only(&mut code, i);
                }
                // Every address family: inet, inet6, unix (outside daemons), netlink, packet...
                code.push(Ins::Return(errno(libc::EACCES)));
            }
            // ioctl(fd, cmd, ...): the kernel reads cmd as a 32-bit value, so only the low half
            // of the argument is compared (high garbage bits cannot slip past).
            code.push(Ins::Label(Target::Ioctl(i)));
            code.push(Ins::Load(DATA_ARG1));
            code.push(Ins::JumpIfEq(libc::TIOCSTI as u32, Target::Eperm));
            code.push(Ins::JumpIfEq(libc::TIOCLINUX as u32, Target::Eperm));
            code.push(Ins::Return(ALLOW));
            code.push(Ins::Label(Target::Beyond(i)));
            if let Some((first, last)) = arch.private {
                code.push(Ins::JumpIfGe(last + 1, Target::Nosys));
                code.push(Ins::JumpIfGe(first, Target::Allow));
            }
            code.push(Ins::Return(errno(libc::ENOSYS)));
        }
        // The mode checks, shared by every calling convention (the arguments sit alike).
        for a in 1..=3 {
            code.push(Ins::Label(Target::Mode(a)));
            code.push(Ins::Load(DATA_ARG0 + 8 * a));
            code.push(Ins::And(SET_ID_BITS));
            code.push(Ins::JumpIfNe(0, Target::Eperm));
            code.push(Ins::Return(ALLOW));
        }
        other_process_checks(&mut code);
        // A calling convention this build does not know: refuse everything.
        code.push(Ins::Label(Target::Arch(ARCHES.len())));
        code.push(Ins::Label(Target::Nosys));
        code.push(Ins::Return(errno(libc::ENOSYS)));
        code.push(Ins::Label(Target::Eperm));
        code.push(Ins::Return(errno(libc::EPERM)));
        code.push(Ins::Label(Target::Eacces));
        code.push(Ins::Return(errno(libc::EACCES)));
        code.push(Ins::Label(Target::Allow));
        code.push(Ins::Return(ALLOW));
        assemble(&code).map(|prog| Filter { prog })
    }

    /// Installs the filter on the calling thread. Only system calls: safe between fork and
    /// exec. The caller must have set `no_new_privs` first.
    pub(crate) fn install(&self) -> io::Result<()> {
        let fprog = libc::sock_fprog {
            len: self.prog.len() as u16,
            filter: self.prog.as_ptr() as *mut libc::sock_filter,
        };
        // `SPEC_ALLOW`: kernels before 5.16 otherwise force the speculation mitigations (SSBD,
        // and IBPB/STIBP on switches) on every filtered process, slowing the command and all
        // it runs (builds, tests). They protect the filtered process's own memory from code
        // running inside it, which here is the command itself; what the sandbox keeps from it
        // is outside its address space. Since 5.16 that is the kernels' default too.
        for flags in [libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW, 0] {
            // SAFETY: `fprog` points at `self.prog`, which outlives the call; the kernel copies
            // it.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    flags,
                    &fprog as *const libc::sock_fprog,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            // EINVAL for an unknown flag (before 4.17): the same filter without it.
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                break;
            }
        }
        Err(io::Error::last_os_error())
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        let same = |(a, b): (&libc::sock_filter, &libc::sock_filter)| {
            (a.code, a.jt, a.jf, a.k) == (b.code, b.jt, b.jf, b.k)
        };
        self.prog.len() == other.prog.len() && self.prog.iter().zip(&other.prog).all(same)
    }
}

/// The calls of `arch` (`ARCHES[i]`) the filter decides on, by number, with where each goes;
/// every other call is allowed.
fn special_calls(arch: &Arch, i: usize, sockets: Sockets, shared: Shared) -> Vec<(u32, Target)> {
    let mut special = vec![(arch.ioctl, Target::Ioctl(i))];
    special.extend(arch.mount.iter().map(|nr| (*nr, Target::Eperm)));
    special.extend(arch.keys.iter().map(|nr| (*nr, Target::Nosys)));
    special.extend(arch.modes.iter().map(|(nr, a)| (*nr, Target::Mode(*a))));
    special.push((OPENAT2, Target::Nosys));
    // io_uring can open files (with any mode) and create and connect sockets without going
    // through the calls above; ENOSYS makes its users fall back to plain system calls.
    special.push((arch.io_uring_setup, Target::Nosys));
    if shared.ipc {
        special.extend(arch.ipc.iter().map(|nr| (*nr, Target::Nosys)));
    }
    if shared.pids {
        special.push((arch.prlimit64, Target::Prlimit));
        special.push((arch.setpriority, Target::Setpriority));
    }
    if sockets != Sockets::Allow {
        special.push((arch.socket, Target::Socket(i)));
        // The multiplexer's arguments sit behind a pointer the filter cannot read.
        special.extend(arch.socketcall.map(|nr| (nr, Target::Eacces)));
    }
    special.sort_by_key(|(nr, _)| *nr);
    special
}

/// Runs of consecutive call numbers that go to the same target, as `(first, last, target)`:
/// the IPC calls come in runs (x86_64's 64 to 71), which the search then tests as one.
fn runs(special: &[(u32, Target)]) -> Vec<(u32, u32, Target)> {
    let mut out: Vec<(u32, u32, Target)> = Vec::new();
    for &(nr, target) in special {
        match out.last_mut() {
            Some((_, last, t)) if *t == target && last.checked_add(1) == Some(nr) => *last = nr,
            _ => out.push((nr, nr, target)),
        }
    }
    out
}

/// Emits a binary search over `runs` (sorted by number): a call in a run goes to its target,
/// any other is allowed.
fn dispatch(code: &mut Vec<Ins>, runs: &[(u32, u32, Target)], i: usize, nodes: &mut usize) {
    // A leaf tests at most two numbers: a run of several takes two tests, one number one.
    let tests: usize = runs.iter().map(|(f, l, _)| 1 + usize::from(f != l)).sum();
    if tests <= 2 {
        for &(first, last, target) in runs {
            if first == last {
                code.push(Ins::JumpIfEq(first, target));
                continue;
            }
            let past = Target::Node(i, *nodes);
            *nodes += 1;
            code.push(Ins::JumpIfGe(last + 1, past));
            code.push(Ins::JumpIfGe(first, target));
            code.push(Ins::Label(past));
        }
        code.push(Ins::Return(ALLOW));
        return;
    }
    let (low, high) = runs.split_at(runs.len() / 2);
    let upper = Target::Node(i, *nodes);
    *nodes += 1;
    code.push(Ins::JumpIfGe(high[0].0, upper));
    dispatch(code, low, i, nodes);
    code.push(Ins::Label(upper));
    dispatch(code, high, i, nodes);
}

/// `setpriority`'s `which` for every process of a user (`<sys/resource.h>`; libc's type for it
/// differs between C libraries).
const PRIO_USER: u32 = 2;

/// `prlimit64(pid, resource, new, old)` changes limits only with pid 0 (the caller) and reads
/// any; `setpriority(which, who, prio)` only with who 0 and not for a whole user (`PRIO_USER`
/// with who 0 is every process of the caller's uid). Shared by every calling convention: the
/// arguments sit alike, and the pids and the `which` are C ints (low halves).
fn other_process_checks(code: &mut Vec<Ins>) {
    code.push(Ins::Label(Target::Prlimit));
    code.push(Ins::Load(DATA_ARG0));
    code.push(Ins::JumpIfEq(0, Target::Allow));
    // The new limit is a pointer: both halves must be zero (NULL) for a read.
    code.push(Ins::Load(DATA_ARG2));
    code.push(Ins::JumpIfNe(0, Target::Eperm));
    code.push(Ins::Load(DATA_ARG2 + 4));
    code.push(Ins::JumpIfNe(0, Target::Eperm));
    code.push(Ins::Return(ALLOW));
    code.push(Ins::Label(Target::Setpriority));
    code.push(Ins::Load(DATA_ARG1));
    code.push(Ins::JumpIfNe(0, Target::Eperm));
    code.push(Ins::Load(DATA_ARG0));
    code.push(Ins::JumpIfEq(PRIO_USER, Target::Eperm));
    code.push(Ins::Return(ALLOW));
}

/// `socket(family, type, protocol)` allowed only for `AF_INET`/`AF_INET6`, `SOCK_STREAM`, and
/// protocol 0 or `IPPROTO_TCP` (not SCTP or MPTCP streams); anything else falls through to the
/// refusal that follows. The arguments are C ints, so their low halves are what the kernel sees.
fn tcp_only(code: &mut Vec<Ins>, i: usize) {
    code.push(Ins::Load(DATA_ARG0));
    code.push(Ins::JumpIfEq(libc::AF_INET as u32, Target::SocketType(i)));
    code.push(Ins::JumpIfEq(libc::AF_INET6 as u32, Target::SocketType(i)));
    code.push(Ins::Return(errno(libc::EACCES)));
    code.push(Ins::Label(Target::SocketType(i)));
    code.push(Ins::Load(DATA_ARG1));
    code.push(Ins::And(SOCK_TYPE_MASK));
    code.push(Ins::JumpIfNe(libc::SOCK_STREAM as u32, Target::Eacces));
    code.push(Ins::Load(DATA_ARG2));
    code.push(Ins::JumpIfEq(0, Target::Allow));
    code.push(Ins::JumpIfEq(libc::IPPROTO_TCP as u32, Target::Allow));
}

/// Resolves labels into the relative forward jumps classic BPF uses.
fn assemble(code: &[Ins]) -> Option<Vec<libc::sock_filter>> {
    // Address of each label = number of real instructions before it.
    let mut labels = Vec::new();
    let mut pc = 0usize;
    for ins in code {
        match ins {
            Ins::Label(t) => labels.push((*t, pc)),
            _ => pc += 1,
        }
    }
    let addr = |t: Target| labels.iter().find(|(l, _)| *l == t).map(|(_, a)| *a);
    let mut out = Vec::with_capacity(pc);
    for ins in code {
        let at = out.len();
        // Jumps are relative to the next instruction and must go forward within 255.
        let rel = |t: Target| -> Option<u8> { u8::try_from(addr(t)?.checked_sub(at + 1)?).ok() };
        let ins = match *ins {
            Ins::Label(_) => continue,
            Ins::Load(off) => stmt(LD_W_ABS, off),
            Ins::Return(v) => stmt(RET_K, v),
            Ins::And(k) => stmt(AND_K, k),
            Ins::JumpIfEq(k, t) => jump(JEQ_K, k, rel(t)?, 0),
            Ins::JumpIfGe(k, t) => jump(JGE_K, k, rel(t)?, 0),
            Ins::JumpIfNe(k, t) => jump(JEQ_K, k, 0, rel(t)?),
        };
        out.push(ins);
    }
    Some(out)
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The fallback's: the person's IPC and pids.
    const SHARED: Shared = Shared {
        ipc: true,
        pids: true,
    };

    /// With namespaces: nothing shared.
    const OWN: Shared = Shared {
        ipc: false,
        pids: false,
    };

    #[test]
    fn a_kept_filter_is_the_one_its_inputs_build() {
        let words = |f: Option<Filter>| f.map(|f| f.to_words());
        // Twice over: the second round is answered from what the first kept.
        for _ in 0..2 {
            for sockets in [Sockets::Refuse, Sockets::TcpOnly, Sockets::Allow] {
                for shared in [SHARED, OWN] {
                    assert!(
                        words(Filter::cached(sockets, shared))
                            == words(Filter::build(sockets, shared)),
                        "{sockets:?} {shared:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_program_reaches_the_zygote_unchanged() {
        for sockets in [Sockets::Refuse, Sockets::TcpOnly, Sockets::Allow] {
            let Some(f) = Filter::build(sockets, SHARED) else {
                return;
            };
            let back = Filter::from_words(&f.to_words());
            let fields = |f: &Filter| -> Vec<(u16, u8, u8, u32)> {
                f.prog.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
            };
            assert_eq!(fields(&back), fields(&f));
        }
    }

    /// A tiny interpreter for the subset of classic BPF the filter uses, to check the program
    /// without installing it.
    fn run(f: &Filter, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        run_counting(f, arch, nr, args).0
    }

    /// [`run`], also counting the instructions run.
    fn run_counting(f: &Filter, arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
        loop {
            let ins = f.prog[pc];
            pc += 1;
            steps += 1;
            match ins.code {
                LD_W_ABS => {
                    let k = ins.k as usize;
                    acc = u32::from_le_bytes([data[k], data[k + 1], data[k + 2], data[k + 3]]);
                }
                RET_K => return (ins.k, steps),
                JEQ_K => pc += if acc == ins.k { ins.jt } else { ins.jf } as usize,
                JGE_K => pc += if acc >= ins.k { ins.jt } else { ins.jf } as usize,
                AND_K => acc &= ins.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    /// What the filter must answer for a call whose arguments do not matter, from the tables.
    fn expected(arch: &Arch, nr: u32, sockets: Sockets, shared: Shared) -> Option<u32> {
        if let Some((first, last)) = arch.private
            && (first..=last).contains(&nr)
        {
            return Some(ALLOW);
        }
        if nr >= FIRST_UNREVIEWED {
            return Some(errno(libc::ENOSYS));
        }
        if nr == arch.ioctl || (nr == arch.socket && sockets != Sockets::Allow) {
            return None;
        }
        if arch.mount.contains(&nr) {
            return Some(errno(libc::EPERM));
        }
        if arch.keys.contains(&nr) {
            return Some(errno(libc::ENOSYS));
        }
        if sockets != Sockets::Allow && Some(nr) == arch.socketcall {
            return Some(errno(libc::EACCES));
        }
        if shared.ipc && arch.ipc.contains(&nr) {
            return Some(errno(libc::ENOSYS));
        }
        if shared.pids && (nr == arch.prlimit64 || nr == arch.setpriority) {
            // With all arguments 0: the caller's own.
            return Some(ALLOW);
        }
        if nr == arch.io_uring_setup || nr == OPENAT2 {
            return Some(errno(libc::ENOSYS));
        }
        // With no mode bits among the (zero) arguments, the mode calls are allowed.
        Some(ALLOW)
    }

    #[test]
    fn every_call_number_is_decided_as_the_tables_say_in_a_few_steps() {
        let mut numbers: Vec<u32> = (0..1100).collect();
        numbers.extend((0..600).map(|nr| nr | X32_SYSCALL_BIT));
        // 32-bit arm's private calls and their neighbours.
        numbers.extend(0x000f_0000..0x000f_0010);
        numbers.extend([u32::MAX, u32::MAX - 1, 0x8000_0000]);
        let settings = [Sockets::Refuse, Sockets::TcpOnly, Sockets::Allow]
            .into_iter()
            .flat_map(|s| [(s, OWN), (s, SHARED)]);
        for (sockets, shared) in settings {
            let f = Filter::build(sockets, shared).unwrap();
            for arch in ARCHES {
                for &nr in &numbers {
                    let Some(want) = expected(arch, nr, sockets, shared) else {
                        continue;
                    };
                    let (got, steps) = run_counting(&f, arch.audit, nr, [0; 6]);
                    let at = format!("{sockets:?} {shared:?} arch {:#x} nr {nr}", arch.audit);
                    assert_eq!(got, want, "{at}");
                    // The kernel runs the filter for every number when it is installed (its
                    // cache of always-allowed calls): a list of comparisons took 21 steps;
                    // the search tree takes 12 at most, plus the check for unreviewed numbers.
                    // (Calls whose arguments are checked, a mode or another process, are
                    // never cached by the kernel, and take up to five steps of checks on top.)
                    let checked = arch.modes.iter().any(|(m, _)| *m == nr)
                        || (shared.pids && [arch.prlimit64, arch.setpriority].contains(&nr));
                    if want == ALLOW {
                        assert!(steps <= 13 + 5 * checked as usize, "{steps} steps: {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_sockets_only_when_network_is_off() {
        let off = Filter::build(Sockets::Refuse, SHARED).unwrap();
        let on = Filter::build(Sockets::Allow, SHARED).unwrap();
        let x = AUDIT_ARCH_X86_64;
        for family in [
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_UNIX,
            libc::AF_NETLINK,
            libc::AF_PACKET,
        ] {
            assert_eq!(
                run(&off, x, 41, [family as u64, 1, 0, 0, 0, 0]),
                errno(libc::EACCES)
            );
            assert_eq!(run(&on, x, 41, [family as u64, 1, 0, 0, 0, 0]), ALLOW);
        }
        // socketpair, read, connect on an existing fd: allowed.
        assert_eq!(run(&off, x, 53, [1, 1, 0, 0, 0, 0]), ALLOW);
        assert_eq!(run(&off, x, 0, [0; 6]), ALLOW);
        assert_eq!(run(&off, x, 425, [0; 6]), errno(libc::ENOSYS));
        assert_eq!(run(&on, x, 425, [0; 6]), errno(libc::ENOSYS));
        // x32 socket and the i386 multiplexer.
        assert_eq!(
            run(&on, x, 41 | X32_SYSCALL_BIT, [2, 1, 0, 0, 0, 0]),
            errno(libc::ENOSYS)
        );
        assert_eq!(
            run(&off, AUDIT_ARCH_I386, 102, [1, 0, 0, 0, 0, 0]),
            errno(libc::EACCES)
        );
        assert_eq!(
            run(&off, AUDIT_ARCH_I386, 359, [2, 1, 0, 0, 0, 0]),
            errno(libc::EACCES)
        );
        assert_eq!(run(&on, AUDIT_ARCH_I386, 359, [2, 1, 0, 0, 0, 0]), ALLOW);
        assert_eq!(run(&off, 0x1234, 0, [0; 6]), errno(libc::ENOSYS));
        // Under 256 instructions, every forward jump fits classic BPF's 8-bit offsets
        // however the tables grow (`assemble` fails otherwise, and the sandbox with it).
        assert!(off.prog.len() < 256, "{}", off.prog.len());
    }

    #[test]
    fn the_allow_list_gets_tcp_sockets_only() {
        let f = Filter::build(Sockets::TcpOnly, SHARED).unwrap();
        let x = AUDIT_ARCH_X86_64;
        let socket = |family: i32, ty: i32, proto: i32| {
            run(&f, x, 41, [family as u64, ty as u64, proto as u64, 0, 0, 0])
        };
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        for family in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(family, libc::SOCK_STREAM, 0), ALLOW);
            assert_eq!(
                socket(family, libc::SOCK_STREAM | flags, libc::IPPROTO_TCP),
                ALLOW
            );
            for ty in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_SEQPACKET] {
                assert_eq!(socket(family, ty | flags, 0), errno(libc::EACCES), "{ty}");
            }
            // An SCTP or MPTCP stream is a stream too, but not TCP.
            assert_eq!(
                socket(family, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
                errno(libc::EACCES)
            );
            assert_eq!(socket(family, libc::SOCK_STREAM, 262), errno(libc::EACCES));
        }
        for family in [libc::AF_UNIX, libc::AF_NETLINK, libc::AF_PACKET] {
            assert_eq!(socket(family, libc::SOCK_STREAM, 0), errno(libc::EACCES));
        }
        // High bits of the family cannot smuggle another one past (the kernel reads an int).
        assert_eq!(
            run(
                &f,
                x,
                41,
                [(1u64 << 32) | libc::AF_UNIX as u64, 1, 0, 0, 0, 0]
            ),
            errno(libc::EACCES)
        );
        // The i386 multiplexer hides its arguments: refused; io_uring too.
        assert_eq!(
            run(&f, AUDIT_ARCH_I386, 102, [1, 0, 0, 0, 0, 0]),
            errno(libc::EACCES)
        );
        assert_eq!(run(&f, AUDIT_ARCH_I386, 359, [2, 1, 0, 0, 0, 0]), ALLOW);
        assert_eq!(
            run(&f, AUDIT_ARCH_I386, 359, [2, 2, 0, 0, 0, 0]),
            errno(libc::EACCES)
        );
        assert_eq!(run(&f, x, 425, [0; 6]), errno(libc::ENOSYS));
        assert!(f.prog.len() < 256, "{}", f.prog.len());
    }

    #[test]
    fn refuses_mount_changes_in_both_calling_conventions() {
        let f = Filter::build(Sockets::Allow, SHARED).unwrap();
        for nr in [165, 166, 155, 428, 429, 442, 467] {
            assert_eq!(
                run(&f, AUDIT_ARCH_X86_64, nr, [0; 6]),
                errno(libc::EPERM),
                "{nr}"
            );
        }
        for nr in [21, 22, 52, 217, 442] {
            assert_eq!(
                run(&f, AUDIT_ARCH_I386, nr, [0; 6]),
                errno(libc::EPERM),
                "{nr}"
            );
        }
        // Neighbours are untouched: open (2), unlinkat (263), i386 write (4).
        assert_eq!(run(&f, AUDIT_ARCH_X86_64, 2, [0; 6]), ALLOW);
        assert_eq!(run(&f, AUDIT_ARCH_X86_64, 263, [0; 6]), ALLOW);
        assert_eq!(run(&f, AUDIT_ARCH_I386, 4, [0; 6]), ALLOW);
    }

    #[test]
    fn refuses_the_keyrings_in_every_calling_convention() {
        for sockets in [Sockets::Refuse, Sockets::TcpOnly, Sockets::Allow] {
            let f = Filter::build(sockets, SHARED).unwrap();
            for (arch, numbers) in [
                (AUDIT_ARCH_X86_64, [248, 249, 250]),
                (AUDIT_ARCH_I386, [286, 287, 288]),
            ] {
                for nr in numbers {
                    assert_eq!(run(&f, arch, nr, [0; 6]), errno(libc::ENOSYS), "{nr}");
                }
            }
            // Neighbours are untouched: x86_64 247 (waitid) and 251 (ioprio_set).
            assert_eq!(run(&f, AUDIT_ARCH_X86_64, 247, [0; 6]), ALLOW);
            assert_eq!(run(&f, AUDIT_ARCH_X86_64, 251, [0; 6]), ALLOW);
        }
    }

    /// Every System V IPC and POSIX message queue call libc knows for x86_64 is in the table
    /// (an oracle apart from it), refused only where the command shares the person's IPC.
    #[test]
    fn refuses_the_persons_ipc_objects_only_without_a_namespace_of_its_own() {
        let calls = [
            libc::SYS_shmget,
            libc::SYS_shmat,
            libc::SYS_shmctl,
            libc::SYS_shmdt,
            libc::SYS_semget,
            libc::SYS_semop,
            libc::SYS_semctl,
            libc::SYS_semtimedop,
            libc::SYS_msgget,
            libc::SYS_msgsnd,
            libc::SYS_msgrcv,
            libc::SYS_msgctl,
            libc::SYS_mq_open,
            libc::SYS_mq_unlink,
            libc::SYS_mq_timedsend,
            libc::SYS_mq_timedreceive,
            libc::SYS_mq_notify,
            libc::SYS_mq_getsetattr,
        ];
        let shared = Filter::build(Sockets::Allow, SHARED).unwrap();
        let own = Filter::build(Sockets::Refuse, OWN).unwrap();
        for nr in calls {
            let nr = nr as u32;
            assert_eq!(
                run(&shared, AUDIT_ARCH_X86_64, nr, [0; 6]),
                errno(libc::ENOSYS),
                "{nr}"
            );
            assert_eq!(run(&own, AUDIT_ARCH_X86_64, nr, [0; 6]), ALLOW, "{nr}");
        }
        assert_eq!(ARCHES[0].ipc.len(), calls.len());
        // i386: the multiplexer and the direct calls (shmat 397, mq_open 277).
        for nr in [117, 397, 277] {
            assert_eq!(
                run(&shared, AUDIT_ARCH_I386, nr, [0; 6]),
                errno(libc::ENOSYS)
            );
            assert_eq!(run(&own, AUDIT_ARCH_I386, nr, [0; 6]), ALLOW);
        }
    }

    /// Another process's limits and priority change only where the command cannot name the
    /// person's processes (its own PID namespace); its own always may, and limits may be read.
    #[test]
    fn changes_only_its_own_limits_and_priority_where_it_shares_the_persons_pids() {
        let shared = Filter::build(Sockets::Refuse, SHARED).unwrap();
        let own = Filter::build(Sockets::Refuse, OWN).unwrap();
        let eperm = errno(libc::EPERM);
        for arch in ARCHES {
            let prlimit = |f: &Filter, pid: u64, new: u64| {
                run(
                    f,
                    arch.audit,
                    arch.prlimit64,
                    [pid, 7, new, 0x7ff0_0000, 0, 0],
                )
            };
            let setpriority = |f: &Filter, which: u64, who: u64| {
                run(f, arch.audit, arch.setpriority, [which, who, 19, 0, 0, 0])
            };
            // setrlimit and getrlimit are prlimit64 on pid 0; `prlimit --pid` reads.
            assert_eq!(prlimit(&shared, 0, 0x7ff0_1000), ALLOW);
            assert_eq!(prlimit(&shared, 4242, 0), ALLOW);
            assert_eq!(prlimit(&shared, 4242, 0x7ff0_1000), eperm);
            // A pointer above 4 GiB is not NULL either; a pid's high bits are not read.
            assert_eq!(prlimit(&shared, 4242, 1 << 40), eperm);
            assert_eq!(prlimit(&shared, 1 << 32, 0x7ff0_1000), ALLOW);
            // `nice` is PRIO_PROCESS 0; `renice -p`, `renice -u` and PRIO_USER 0 are not.
            let (process, group, user) = (0, 1, 2);
            assert_eq!(setpriority(&shared, process, 0), ALLOW);
            assert_eq!(setpriority(&shared, group, 0), ALLOW);
            assert_eq!(setpriority(&shared, process, 4242), eperm);
            assert_eq!(setpriority(&shared, user, 1000), eperm);
            assert_eq!(setpriority(&shared, user, 0), eperm);
            assert_eq!(prlimit(&own, 4242, 0x7ff0_1000), ALLOW);
            assert_eq!(setpriority(&own, user, 0), ALLOW);
        }
        assert_eq!(ARCHES[0].prlimit64 as libc::c_long, libc::SYS_prlimit64);
        assert_eq!(ARCHES[0].setpriority as libc::c_long, libc::SYS_setpriority);
    }

    #[test]
    fn refuses_setuid_and_setgid_bits_in_every_call_that_sets_a_mode() {
        for sockets in [Sockets::Refuse, Sockets::TcpOnly, Sockets::Allow] {
            let f = Filter::build(sockets, SHARED).unwrap();
            for arch in ARCHES {
                for &(nr, a) in arch.modes {
                    let with = |mode: u64| {
                        let mut args = [0u64; 6];
                        // open(O_CREAT), a path pointer and flags elsewhere: only the mode counts.
                        args[0] = 0xdead_beef;
                        args[a as usize] = mode;
                        run(&f, arch.audit, nr, args)
                    };
                    let eperm = errno(libc::EPERM);
                    assert_eq!(with(0o4755), eperm, "arch {:#x} nr {nr}", arch.audit);
                    assert_eq!(with(0o2755), eperm, "{nr}");
                    assert_eq!(
                        with(0o104755),
                        eperm,
                        "a regular file's type bits too: {nr}"
                    );
                    assert_eq!(with(0o755), ALLOW, "{nr}");
                    assert_eq!(with(0o1777), ALLOW, "the sticky bit is harmless: {nr}");
                    // Only the low half is the mode the kernel reads.
                    assert_eq!(with(0o4755 << 32), ALLOW, "{nr}");
                    // The other arguments never decide.
                    for other in (1..=3).filter(|o| *o != a) {
                        let mut args = [0u64; 6];
                        args[other as usize] = 0o4755;
                        assert_eq!(run(&f, arch.audit, nr, args), ALLOW, "{nr} arg {other}");
                    }
                }
                assert_eq!(run(&f, arch.audit, OPENAT2, [0; 6]), errno(libc::ENOSYS));
                assert_eq!(
                    run(&f, arch.audit, arch.io_uring_setup, [0; 6]),
                    errno(libc::ENOSYS)
                );
            }
        }
    }

    #[test]
    fn refuses_terminal_injection_even_with_high_bits_set() {
        let f = Filter::build(Sockets::Allow, SHARED).unwrap();
        let sti = libc::TIOCSTI;
        assert_eq!(
            run(&f, AUDIT_ARCH_X86_64, 16, [0, sti, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&f, AUDIT_ARCH_X86_64, 16, [0, sti | 1 << 40, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&f, AUDIT_ARCH_X86_64, 16, [0, libc::TIOCLINUX, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&f, AUDIT_ARCH_I386, 54, [0, sti, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&f, AUDIT_ARCH_X86_64, 16, [0, libc::TCGETS, 0, 0, 0, 0]),
            ALLOW
        );
    }
}
