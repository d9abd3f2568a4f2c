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

/// The nice value of this process's autogroup (`/proc/self/autogroup`, "/autogroup-7 nice
/// -10"), if the kernel groups sessions. System calls on a stack buffer only: safe between
/// clone and exec.
pub(crate) fn autogroup_nice() -> Option<i32> {
    let mut buf = [0u8; 64];
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            c"/proc/self/autogroup".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: reading at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    parse_nice(buf.get(..usize::try_from(n).ok()?)?)
}

/// The number after "nice " in an autogroup line.
fn parse_nice(line: &[u8]) -> Option<i32> {
    let at = line.windows(5).position(|w| w == b"nice ")? + 5;
    let rest = &line[at..];
    let (negative, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mut value: i32 = 0;
    let mut any = false;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(i32::from(b - b'0'))?;
        any = true;
    }
    any.then_some(if negative { -value } else { value })
}

/// Gives the autogroup of a session just made (by `setsid`) the nice value `nice` of the one
/// it left. The kernel schedules each session's group against the others: a command in a
/// group of nice 0 beside rein's at -10 got a tenth of the share (15 ms for `bash -c true`
/// under load against 3 unsandboxed). A value this process may not set (lower than its
/// limit allows) is left as it is. System calls only: safe between clone and exec.
pub(crate) fn keep_autogroup_nice(nice: Option<i32>) {
    let Some(nice) = nice.filter(|n| *n != 0 && (-20..=19).contains(n)) else {
        return;
    };
    let mut text = [0u8; 4];
    let mut len = 0;
    if nice < 0 {
        text[0] = b'-';
        len = 1;
    }
    let abs = nice.unsigned_abs();
    if abs >= 10 {
        text[len] = b'0' + (abs / 10) as u8;
        len += 1;
    }
    text[len] = b'0' + (abs % 10) as u8;
    len += 1;
    // SAFETY: a NUL-terminated path; writing `len` bytes of `text`; the descriptor is closed.
    unsafe {
        let fd = libc::open(
            c"/proc/self/autogroup".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC,
        );
        if fd >= 0 {
            libc::write(fd, text.as_ptr().cast(), len);
            libc::close(fd);
        }
    }
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
    fn an_autogroup_line_gives_its_nice_value() {
        assert_eq!(parse_nice(b"/autogroup-1 nice -10\n"), Some(-10));
        assert_eq!(parse_nice(b"/autogroup-52 nice 5\n"), Some(5));
        assert_eq!(parse_nice(b"/autogroup-52 nice 0"), Some(0));
        assert_eq!(parse_nice(b"/autogroup-52 nice \n"), None);
        assert_eq!(parse_nice(b"garbage"), None);
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
