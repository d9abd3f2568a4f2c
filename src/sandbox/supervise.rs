//! The processes between rein and a sandboxed command, so that nothing the command starts
//! outlives it.
//!
//! rein's child (the *supervisor*) either
//! - enters new namespaces with a PID namespace and forks its *init*: the init forks the
//!   command and reaps everything; when the command exits it kills whatever is left
//!   (`kill(-1)` inside the namespace reaches every process in it and nothing else), or
//! - (started by the zygote) is cloned into the new namespaces and is their init itself, or
//! - (no PID namespace) becomes a child subreaper, forks the command, and after it exits kills
//!   its remaining descendants: orphans are re-parented to the subreaper, so repeatedly killing
//!   its children reaches every process the command started, `setsid` or double fork included.
//!
//! Either way the reaper writes one [`RawReport`] to a pipe rein reads once the supervisor has
//! exited. rein stops a command by sending the supervisor `SIGTERM` (`SIGINT`, `SIGHUP` and
//! `SIGQUIT` too, e.g. Ctrl-C under `rein sandbox`); the supervisor then kills everything.
//! Signals are waited for with `sigwaitinfo` on a blocked set, so none is lost between checks.
//!
//! All of this runs after `fork` in a child of a multi-threaded process: system calls only, no
//! allocation, no locks.

use std::io;

/// Report kinds.
pub(crate) const REPORT_DONE: u32 = 1;
/// Stopped on request before the command finished.
pub(crate) const REPORT_STOPPED: u32 = 2;
/// Something between fork and exec failed after the point where an error could reach `spawn`.
pub(crate) const REPORT_SETUP_FAILED: u32 = 3;

const REPORT_MAGIC: u32 = 0x7265_696e; // "rein"

/// What the reaper tells rein, written once to the report pipe (atomic: < `PIPE_BUF`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RawReport {
    magic: u32,
    /// One of the `REPORT_*` kinds.
    pub(crate) kind: u32,
    /// The command's wait status (`REPORT_DONE`).
    pub(crate) status: i32,
    /// Processes that were still running when the command ended and were killed.
    pub(crate) killed: u32,
    /// The error number of a failed setup (`REPORT_SETUP_FAILED`).
    pub(crate) errno: i32,
}

impl RawReport {
    pub(crate) const SIZE: usize = std::mem::size_of::<RawReport>();

    /// Decodes one record; `None` if it is not one of ours.
    pub(crate) fn decode(bytes: &[u8]) -> Option<RawReport> {
        if bytes.len() != Self::SIZE {
            return None;
        }
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
            u32::from_ne_bytes(w)
        };
        let r = RawReport {
            magic: word(0),
            kind: word(1),
            status: word(2) as i32,
            killed: word(3),
            errno: word(4) as i32,
        };
        (r.magic == REPORT_MAGIC).then_some(r)
    }
}

/// Signals that ask the supervisor to stop the command.
const STOP_SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// The signal set the supervisor and the reaper wait on.
fn wait_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset only write the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        for s in STOP_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the signals the supervisor waits for. Call first in the child, before any fork, so
/// a stop request that arrives early stays pending instead of killing the supervisor.
pub(crate) fn block_signals() -> io::Result<()> {
    let set = wait_set();
    // SAFETY: valid set; single-threaded child.
    let rc = unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Blocks the signals the supervisor waits for and returns the mask as it was (for a process
/// that clones a supervisor and goes on: [`restore_signals`] right after the clone).
pub(crate) fn block_signals_saving() -> libc::sigset_t {
    let set = wait_set();
    // SAFETY: an all-zero set is valid; sigprocmask only writes the old mask.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

/// Sets the signal mask back to `mask` (from [`block_signals_saving`]).
pub(crate) fn restore_signals(mask: &libc::sigset_t) {
    // SAFETY: a valid set.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
}

/// Unblocks every signal again: for the command itself, just before exec (exec keeps the mask).
pub(crate) fn unblock_signals() -> io::Result<()> {
    // SAFETY: an empty set is valid.
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `fork` without the C library's fork handlers (which may take locks): a plain `clone`.
/// Returns the child's pid in the parent and 0 in the child.
pub(crate) fn fork() -> io::Result<libc::pid_t> {
    clone_with(0)
}

/// Like [`fork`], with more `clone` flags (e.g. `CLONE_PARENT`).
pub(crate) fn clone_with(flags: libc::c_int) -> io::Result<libc::pid_t> {
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: clone without CLONE_VM behaves like fork; the extra arguments are zero, so their
    // order (which differs between architectures) does not matter.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) };
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid as libc::pid_t)
    }
}

use std::convert::Infallible;

/// The stack of a [`spawn_shared`] child, on the suspended caller's stack.
pub(crate) const SHARED_STACK: usize = 64 << 10;

/// Starts `child` in a new process that shares this one's memory until it execs or exits, as
/// `vfork` (and `posix_spawn`) do; this process waits meanwhile. No page tables are copied and
/// none are torn down at its exec: about 0.1 ms less per command than [`fork`]. `child` must
/// make system calls only (no allocation, no lock: it runs on memory this process owns) and
/// never return. Returns its pid.
pub(crate) fn spawn_shared(child: &dyn Fn() -> Infallible) -> io::Result<libc::pid_t> {
    let mut stack = [std::mem::MaybeUninit::<u8>::uninit(); SHARED_STACK];
    let top = stack.as_mut_ptr_range().end.cast::<libc::c_void>();
    let flags = libc::CLONE_VM | libc::CLONE_VFORK;
    // SAFETY: `stack` outlives the child as a process sharing this memory: CLONE_VFORK
    // suspends this thread until the child execs or exits.
    let pid = unsafe { clone_on(top, flags, &child, std::ptr::null_mut()) };
    std::hint::black_box(&mut stack);
    pid
}

/// `clone` with `flags` (plus `SIGCHLD`) that runs `child` on the stack ending at `top`;
/// `parent_tid` receives what `CLONE_PIDFD` or `CLONE_PARENT_SETTID` put there. Returns the
/// child's pid.
///
/// # Safety
/// With `CLONE_VM`, the stack, `child` (the reference itself too: the child reads it when it
/// starts, maybe after this returns) and whatever `child` uses must stay valid and unchanged
/// for as long as the child uses them, and `child` must make system calls only.
pub(crate) unsafe fn clone_on(
    top: *mut libc::c_void,
    flags: libc::c_int,
    child: &&dyn Fn() -> Infallible,
    parent_tid: *mut libc::c_int,
) -> io::Result<libc::pid_t> {
    // The child never returns: `Infallible` has no value.
    #[allow(unreachable_code)]
    extern "C" fn trampoline(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` points at `child`, alive while the child runs (see `clone_on`).
        let child = unsafe { &*(arg as *const &dyn Fn() -> Infallible) };
        match child() {}
    }
    // Stacks grow down on every architecture rein runs on; the top, aligned to 16 bytes.
    let top = (top as usize & !15) as *mut libc::c_void;
    let arg = child as *const &dyn Fn() -> Infallible as *mut libc::c_void;
    // SAFETY: the caller keeps the stack and `child` valid (see above).
    let pid = unsafe { libc::clone(trampoline, top, flags | libc::SIGCHLD, arg, parent_tid) };
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

/// Closes every descriptor from 3 up except `keep`, so a process that never calls exec holds
/// nothing of rein's (other commands' pipes, `spawn`'s error pipe) and rein sees end-of-file
/// on the output pipe as soon as the command's own processes close it.
fn close_all_but(keep: libc::c_int) {
    let close_range = |first: libc::c_int, last: libc::c_uint| {
        if first as libc::c_uint <= last {
            // SAFETY: closing descriptors has no memory-safety preconditions.
            unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, last, 0u32) };
        }
    };
    if keep >= 3 {
        close_range(3, (keep - 1) as libc::c_uint);
        close_range(keep + 1, libc::c_uint::MAX);
    } else {
        close_range(3, libc::c_uint::MAX);
    }
    // The standard streams go too: only the command's processes may hold the output pipe.
    for fd in 0..3 {
        // SAFETY: as above.
        unsafe { libc::close(fd) };
    }
}

fn write_report(fd: libc::c_int, r: RawReport) {
    let r = RawReport {
        magic: REPORT_MAGIC,
        ..r
    };
    // SAFETY: `r` is a plain repr(C) value of the size passed. A failed write only loses the
    // report; rein then falls back to the supervisor's exit status.
    unsafe { libc::write(fd, (&r as *const RawReport).cast(), RawReport::SIZE) };
}

/// The exit code that mirrors a wait status (128 + signal for a killed process).
fn exit_code(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

fn exit(code: libc::c_int) -> ! {
    // SAFETY: leaving a forked child without running destructors or atexit handlers.
    unsafe { libc::_exit(code) }
}

/// Waits until a signal of the wait set is pending and returns it.
fn next_signal(set: &libc::sigset_t) -> libc::c_int {
    loop {
        // SAFETY: an all-zero siginfo is a valid out-value; `set` is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig > 0 {
            return sig;
        }
    }
}

/// Reaps every child that has already exited; returns the status of `watched` if it was one
/// of them, and counts the others in `others`.
fn reap_exited(watched: libc::pid_t, others: &mut u32) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == watched {
            found = Some(status);
        } else {
            *others += 1;
        }
    }
}

/// How the reaper finds what is left once the command has exited.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reaping {
    /// The reaper is the init of a PID namespace that holds exactly the command's processes.
    PidNamespace,
    /// The reaper is a child subreaper: orphans of the command become its children.
    Subreaper,
}

/// Becomes a child subreaper (for [`Reaping::Subreaper`]); call before forking the command.
pub(crate) fn become_subreaper() -> io::Result<()> {
    // SAFETY: plain prctl.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Runs the reaper for the command `command` (a child of this process) and exits with the
/// command's exit code. `report` is the write end of the report pipe.
pub(crate) fn reap(command: libc::pid_t, how: Reaping, report: libc::c_int) -> ! {
    close_all_but(report);
    let set = wait_set();
    let mut others = 0u32;
    let mut status = None;
    let mut stopped = false;
    while status.is_none() {
        if next_signal(&set) == libc::SIGCHLD {
            status = reap_exited(command, &mut others);
        } else {
            stopped = true;
            break;
        }
    }
    // Whatever was still running before the kill does not count as killed if it had already
    // exited; count only what the kill below collects.
    let _ = reap_exited(command, &mut others);
    others = 0;
    kill_everything(how);
    let mut status_after = None;
    loop {
        let mut st = 0;
        // SAFETY: waiting for our own children.
        let pid = unsafe { libc::waitpid(-1, &mut st, 0) };
        if pid < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        if pid == command {
            status_after = Some(st);
        } else {
            others += 1;
        }
        if how == Reaping::Subreaper {
            // Orphans of what was just killed are now our children: kill them too.
            kill_everything(how);
        }
    }
    let status = status.or(status_after).unwrap_or(libc::SIGKILL);
    write_report(
        report,
        RawReport {
            kind: if stopped { REPORT_STOPPED } else { REPORT_DONE },
            status,
            killed: others,
            ..RawReport::default()
        },
    );
    exit(exit_code(status))
}

/// Sends `SIGKILL` to every process left: the whole PID namespace, or every child of this
/// subreaper (the command included when it is still running).
fn kill_everything(how: Reaping) {
    match how {
        // SAFETY: inside a PID namespace, -1 reaches every process in it but its init.
        Reaping::PidNamespace => unsafe {
            libc::kill(-1, libc::SIGKILL);
        },
        // The command, while it runs, is one of the children: a reaped pid is never signalled
        // (it may belong to someone else by now).
        Reaping::Subreaper => {
            for_each_child(|pid| {
                // SAFETY: `pid` is our child (it cannot be reused before we reap it).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            });
        }
    }
}

/// Calls `f` for every child of this (single-threaded) process, from
/// `/proc/thread-self/children`.
fn for_each_child(mut f: impl FnMut(libc::pid_t)) {
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let mut pid: libc::pid_t = 0;
    loop {
        // SAFETY: `buf` is a valid buffer of the length passed.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        for &b in &buf[..n as usize] {
            if b.is_ascii_digit() {
                pid = pid
                    .saturating_mul(10)
                    .saturating_add((b - b'0') as libc::pid_t);
            } else {
                if pid > 0 {
                    f(pid);
                }
                pid = 0;
            }
        }
    }
    if pid > 0 {
        f(pid);
    }
    // SAFETY: closing our own descriptor once.
    unsafe { libc::close(fd) };
}

/// The supervisor outside a PID namespace: waits for the namespace's init, kills it (and so
/// the whole namespace) when asked to stop, and exits with its exit code.
pub(crate) fn forward(init: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(report);
    let set = wait_set();
    let mut stopped = false;
    loop {
        if next_signal(&set) != libc::SIGCHLD {
            stopped = true;
            // SAFETY: killing our own child; the kernel then kills the whole namespace.
            unsafe { libc::kill(init, libc::SIGKILL) };
            continue;
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        if unsafe { libc::waitpid(init, &mut status, libc::WNOHANG) } == init {
            // A killed init wrote no report: say that the command was stopped.
            if stopped || !libc::WIFEXITED(status) {
                write_report(
                    report,
                    RawReport {
                        kind: REPORT_STOPPED,
                        status: libc::SIGKILL,
                        ..RawReport::default()
                    },
                );
            }
            exit(exit_code(status));
        }
    }
}

/// Reports a setup failure from a process that can no longer return an error to `spawn`,
/// and exits.
pub(crate) fn fail(report: libc::c_int, err: &io::Error) -> ! {
    write_report(
        report,
        RawReport {
            kind: REPORT_SETUP_FAILED,
            errno: err.raw_os_error().unwrap_or(libc::EINVAL),
            ..RawReport::default()
        },
    );
    exit(127)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_foreign_bytes_are_refused() {
        let r = RawReport {
            magic: REPORT_MAGIC,
            kind: REPORT_DONE,
            status: 256,
            killed: 3,
            errno: 0,
        };
        // SAFETY: viewing a plain repr(C) value as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts((&r as *const RawReport).cast::<u8>(), RawReport::SIZE)
        };
        assert_eq!(RawReport::decode(bytes), Some(r));
        assert_eq!(RawReport::decode(&bytes[1..]), None);
        assert_eq!(RawReport::decode(&[0u8; RawReport::SIZE]), None);
    }

    #[test]
    fn exit_codes_mirror_wait_statuses() {
        assert_eq!(exit_code(0), 0);
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(libc::SIGKILL), 128 + libc::SIGKILL);
    }
}
