//! When rein runs as root, its commands do not: they run as `nobody`, with no capability.
//!
//! Root reads every file on the machine whatever its mode (root owns most of `/etc`, and
//! `CAP_DAC_OVERRIDE` opens the rest), so no list of secret places could keep a root
//! command from the ssh host keys, a TLS key in `/etc/ssl/private`, a database's files or
//! another person's home. Run as `nobody`, a command reads outside the workspace only what
//! any user of the machine may read, whatever the places are called.
//!
//! The directories it may write (the workspace, the session's temp dir, build caches, the
//! `.git` view) are still writable: each is mounted *idmapped* in the command's namespace
//! (`mount_setattr` with `MOUNT_ATTR_IDMAP`), through a user namespace that maps the
//! directory's owner to `nobody`. Inside, the owner's files are `nobody`'s; what the command
//! creates is the owner's on disk, as if the owner had written it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// The uid and gid a command runs as when rein is root (`nobody`, `nogroup`): ids that own
/// nothing and are in every passwd file, so `whoami` and the like still work.
pub(crate) const COMMAND_IDS: (u32, u32) = (65534, 65534);

/// Whether commands run as [`COMMAND_IDS`]: rein is the machine's root (not root of a
/// container's user namespace, which holds no host secret and may map no other id) and makes
/// the mount namespace itself (`NsMode::Plain`).
pub(crate) fn drops_root(plain_namespaces: bool) -> bool {
    // SAFETY: geteuid cannot fail.
    plain_namespaces && unsafe { libc::geteuid() } == 0 && in_initial_user_namespace()
}

/// Whether this process is in the initial user namespace (every id mapped to itself); read
/// once, since rein never changes its own.
fn in_initial_user_namespace() -> bool {
    static INITIAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INITIAL.get_or_init(|| {
        std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
            let fields: Vec<&str> = map.split_whitespace().collect();
            fields == ["0", "0", "4294967295"]
        })
    })
}

/// The user namespaces made so far, one per owner (uid, gid); kept open for rein's life.
static MADE: Mutex<Vec<((u32, u32), OwnedFd)>> = Mutex::new(Vec::new());

/// A user namespace that maps `owner` (uid, gid) to [`COMMAND_IDS`] and nothing else, for
/// idmapped mounts: its descriptor (close-on-exec), made at the first use.
pub(crate) fn userns_for(owner: (u32, u32)) -> io::Result<RawFd> {
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, fd)) = made.iter().find(|(o, _)| *o == owner) {
        return Ok(fd.as_raw_fd());
    }
    let fd = make_userns(owner)?;
    let raw = fd.as_raw_fd();
    made.push((owner, fd));
    Ok(raw)
}

/// Forks a child that makes a user namespace, writes its maps from here (root may map any
/// id), opens it and kills the child: the descriptor keeps the namespace.
fn make_userns((uid, gid): (u32, u32)) -> io::Result<OwnedFd> {
    let mut ready = [0 as libc::c_int; 2];
    // SAFETY: `ready` has room for the two descriptors.
    if unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the pipe's ends were just made and are owned here.
    let (ready_r, ready_w) = unsafe {
        (
            OwnedFd::from_raw_fd(ready[0]),
            OwnedFd::from_raw_fd(ready[1]),
        )
    };
    // SAFETY: the child runs only async-signal-safe calls and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: plain calls; the child dies with rein, or when killed below.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                libc::write(ready_w.as_raw_fd(), b"u".as_ptr().cast(), 1);
                loop {
                    libc::pause();
                }
            }
            libc::_exit(1);
        }
    }
    drop(ready_w);
    let result = map_and_open(pid, &ready_r, uid, gid);
    // SAFETY: killing and reaping our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
    result
}

/// Waits for the child's namespace, maps `uid`/`gid` in it to the command's ids and opens it.
fn map_and_open(pid: libc::pid_t, ready: &OwnedFd, uid: u32, gid: u32) -> io::Result<OwnedFd> {
    let mut byte = 0u8;
    // SAFETY: one byte into a valid buffer.
    let n = unsafe { libc::read(ready.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) };
    if n != 1 {
        return Err(io::Error::other(
            "the helper could not make a user namespace",
        ));
    }
    let (to_uid, to_gid) = COMMAND_IDS;
    std::fs::write(
        format!("/proc/{pid}/uid_map"),
        format!("{uid} {to_uid} 1\n"),
    )?;
    std::fs::write(
        format!("/proc/{pid}/gid_map"),
        format!("{gid} {to_gid} 1\n"),
    )?;
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
    Ok(OwnedFd::from(ns))
}

/// Becomes [`COMMAND_IDS`] with no supplementary group: every capability goes with root.
/// Call in the command's process after the mounts and before Landlock and seccomp.
/// Async-signal-safe.
pub(crate) fn become_command_ids() -> io::Result<()> {
    let (uid, gid) = COMMAND_IDS;
    // SAFETY: plain calls; no supplementary group, then the gid while still root, then the uid.
    let ok = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setresgid(gid, gid, gid) == 0
            && libc::setresuid(uid, uid, uid) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_is_made_once_per_owner() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return; // only root may map another id; rein makes these only as root
        }
        let a = userns_for((0, 0)).expect("make");
        let b = userns_for((0, 0)).expect("again");
        let c = userns_for((1234, 1234)).expect("another owner");
        assert_eq!(a, b, "one namespace per owner");
        assert_ne!(a, c);
        let link = std::fs::read_link(format!("/proc/self/fd/{a}")).expect("link");
        assert!(link.to_string_lossy().starts_with("user:["), "{link:?}");
    }
}
