//! A short scheduler slice for the processes that start a sandboxed command.
//!
//! A command starts through a chain of processes (the zygote, the namespaces' init, the
//! command's process), each woken by the one before. On a machine with more runnable tasks
//! than CPUs, every new or woken task of the chain waited behind the busy ones (3–4 ms each
//! here, measured with `perf sched`), so a sandboxed `bash -c true` took 20 ms where an
//! unsandboxed one took 3. Linux's EEVDF scheduler (6.12 and later) lets any process ask for
//! a shorter slice (`sched_setattr` with `sched_runtime`, no privilege needed): its virtual
//! deadline comes sooner, so it runs soon after waking, for the same share of the CPU. The
//! zygote asks for one, its children inherit it, and the command's process gives it back
//! before exec, so the command itself is scheduled like any other program. Older kernels
//! ignore the request.

use std::io;

/// The slice the zygote and the inits ask for: the shortest the kernel grants (0.1 ms).
pub(crate) const SHORT_NS: u64 = 100_000;

/// `struct sched_attr` (`include/uapi/linux/sched/types.h`, version 1).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Asks for a slice of `runtime_ns` for this thread (0: the kernel's default), keeping its
/// policy and nice value; a real-time, idle or deadline policy is left as it is. System calls
/// only: safe between clone and exec.
pub(crate) fn request(runtime_ns: u64) -> io::Result<()> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: the kernel writes at most `size` bytes into `attr`, which lives on this stack.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr,
            size,
            0,
        )
    };
    if got != 0 {
        return Err(io::Error::last_os_error());
    }
    if !matches!(attr.policy as i32, libc::SCHED_OTHER | libc::SCHED_BATCH) {
        return Ok(());
    }
    attr.size = size;
    attr.flags = 0;
    attr.runtime = runtime_ns;
    // SAFETY: `attr` is a valid, fully initialised `sched_attr` of `size` bytes.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if set != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slice `/proc` shows for a task of this process or for a process (`se.slice`), in
    /// nanoseconds.
    fn slice_of(path: &str) -> Option<u64> {
        let sched = std::fs::read_to_string(path).ok()?;
        sched
            .lines()
            .find(|l| l.starts_with("se.slice"))?
            .rsplit(':')
            .next()?
            .trim()
            .parse()
            .ok()
    }

    #[test]
    fn a_short_slice_is_granted_inherited_and_given_back() {
        // Its own thread: the setting is per thread, and the test harness's threads are shared.
        let seen = std::thread::spawn(|| {
            let own = "/proc/thread-self/sched";
            let before = slice_of(own);
            request(SHORT_NS).expect("request");
            let short = slice_of(own);
            // SAFETY: the child only sleeps (a system call) until it is killed.
            let child = unsafe { libc::fork() };
            // Never kill(-1) below: that would signal every process the test may reach.
            assert!(child >= 0, "fork failed");
            if child == 0 {
                loop {
                    // SAFETY: async-signal-safe.
                    unsafe { libc::sleep(10) };
                }
            }
            let inherited = slice_of(&format!("/proc/{child}/sched"));
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(child, libc::SIGKILL);
                libc::waitpid(child, std::ptr::null_mut(), 0);
            }
            request(0).expect("give back");
            (before, short, inherited, slice_of(own))
        })
        .join()
        .expect("thread");
        let (before, short, inherited, after) = seen;
        if before.is_none() {
            // No `se.slice` in /proc: a kernel without EEVDF, which ignores the request.
            return;
        }
        assert_eq!(short, Some(SHORT_NS));
        assert_eq!(inherited, Some(SHORT_NS), "a child inherits the slice");
        assert_eq!(after, before, "runtime 0 restores the default");
    }
}
