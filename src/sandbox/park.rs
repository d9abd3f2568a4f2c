//! The next command's init, made ahead: the zygote's most expensive work for a command (the
//! namespaces, and the two dozen mounts that make the command's view) done while the command
//! before it runs, instead of between rein's request and the command's exec.
//!
//! Once a command has exec'd, the zygote clones an init for the next one with the same
//! confinement's namespaces and mounts, *parked*: it arranges them while the zygote waits for
//! the next request, then waits for that request. The next request
//! takes it only if a fresh init would arrange exactly the same view now:
//! - the same plan (every path, cover, bind and secret; only the working directory, set
//!   per command after the mounts, may differ);
//! - every path the arrangement mounted, bound, covered or skipped names the same object
//!   (device, inode and type) or is missing, as when it was parked: a secret replaced by a
//!   rename, a `.git` entry or a writable directory made anew, a `.rein` made since;
//! - the zygote's mount table has not changed since (what is mounted beneath those paths:
//!   a fresh init copies the table of its time);
//! - the parked init is alive.
//!
//! Else the parked init ends and a fresh one is made at once, as without parking (rein reaps
//! the ended one, waiting for its teardown, while the fresh one sets up). The paths are
//! looked at before the clone and once it has arranged them (they must agree, or it is not
//! kept), so what it arranged is what was looked at.
//!
//! What confines the command's process without depending on the request is done ahead too,
//! in the parked init, which the process inherits it from: the empty capability bounding set,
//! and the seccomp filter (a request fits only with the same filter; none is installed ahead
//! when the init must open the proxy's port). Everything that depends on the request (the
//! streams, the directory, the proxy's port, the Landlock ruleset, capabilities and ids) is
//! still done per command, in the parked init after the request and in the command's process,
//! exactly as for a fresh one. A parked init runs nothing of a command's: rein learns its pid
//! before it gets the request. It dies with rein (`PR_SET_PDEATHSIG`) and ends when the zygote
//! does (its pidfd).

use super::linux::Confinement;
use super::mounts::{MountPlan, NsEntry};
use super::seccomp::Filter;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// What a parked init says once it has read its arguments: the zygote may go on.
pub(super) const STARTED: u8 = b's';

/// What a parked init says once it has its own descriptor table (after the request).
pub(super) const TAKEN: u8 = b't';

/// What a parked init is made from, kept with it (it reads them while the zygote goes on).
pub(super) struct Args {
    /// Its user namespaces' descriptors are those in `_userns`.
    pub(super) plan: MountPlan,
    pub(super) _userns: Vec<OwnedFd>,
    pub(super) entry: NsEntry,
    /// The seccomp filter it installs ahead (see `linux::confine_ahead`).
    pub(super) filter: Option<Filter>,
    pub(super) report: RawFd,
    pub(super) wake: RawFd,
}

/// What the zygote hands a parked init: where the request is (the zygote's `Ready`, in the
/// memory they share) and its error pipe.
#[repr(C)]
pub(super) struct Wake {
    pub(super) ready: *const (),
    pub(super) err: RawFd,
}

/// One path's object: device, inode and type; `None` when missing.
type Id = Option<(u64, u64, u32)>;

/// What a parked init was arranged from, to compare with a later request's.
pub(super) struct Watch {
    flags: libc::c_int,
    key: Vec<u8>,
    paths: Vec<CString>,
    ids: Vec<Id>,
    /// The zygote's mount table, polled for a change.
    mounts: OwnedFd,
}

impl Watch {
    /// The watch of `plan` as it is now; `None` when a path cannot be looked at.
    pub(super) fn new(plan: &MountPlan, entry: NsEntry) -> Option<Watch> {
        // Opened before the paths are looked at: a change after this shows.
        // SAFETY: valid NUL-terminated path; flags only.
        let fd = unsafe {
            libc::open(
                c"/proc/self/mountinfo".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let mounts = unsafe { OwnedFd::from_raw_fd(fd) };
        let paths = plan.watched_paths();
        Some(Watch {
            flags: entry.flags,
            key: key(plan)?,
            ids: ids(&paths)?,
            paths,
            mounts,
        })
    }

    /// Whether a fresh init for `plan` would arrange what this one was arranged from.
    fn same(&self, plan: &MountPlan, flags: libc::c_int) -> bool {
        let mut poll = libc::pollfd {
            fd: self.mounts.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: polling one valid descriptor without waiting. (It is always readable; a
        // change of the table shows as `POLLPRI`, once.)
        let polled = unsafe { libc::poll(&mut poll, 1, 0) };
        let changed = polled < 0 || poll.revents & (libc::POLLPRI | libc::POLLERR) != 0;
        // The same key means the same watched paths (they come from the plan, not from its
        // working directory): the ones kept are looked at again.
        !changed
            && flags == self.flags
            && key(plan).is_some_and(|k| k == self.key)
            && self.unmoved()
    }

    /// Whether the watched paths still name what they named when the watch was made.
    fn unmoved(&self) -> bool {
        ids(&self.paths).is_some_and(|i| i == self.ids)
    }
}

/// The plan's key, with the identities of its user namespaces (`idmap`) for their numbers.
fn key(plan: &MountPlan) -> Option<Vec<u8>> {
    let userns = plan
        .unprivileged
        .as_ref()
        .map_or(&[][..], |u| &u.userns[..]);
    let mut userns_ids = Vec::with_capacity(userns.len());
    for fd in userns {
        // SAFETY: an all-zero `stat` is valid; fstat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a descriptor of the request, open while it is handled; valid out-pointer.
        if unsafe { libc::fstat(*fd, &mut st) } != 0 {
            return None;
        }
        userns_ids.push((st.st_dev, st.st_ino));
    }
    plan.park_key(&userns_ids)
}

/// The object each of `paths` names now.
fn ids(paths: &[CString]) -> Option<Vec<Id>> {
    paths.iter().map(id).collect()
}

/// `Some(None)` when `path` is missing, `None` when it cannot be looked at.
fn id(path: &CString) -> Option<Id> {
    // SAFETY: an all-zero `stat` is valid; lstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid NUL-terminated path and out-pointer.
    if unsafe { libc::lstat(path.as_ptr(), &mut st) } == 0 {
        return Some(Some((st.st_dev, st.st_ino, st.st_mode & libc::S_IFMT)));
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => Some(None),
        _ => None,
    }
}

/// The pipes between the zygote and a parked init. The init shares the zygote's descriptor
/// table until it takes a request, so these are its own too: they stay open until then.
pub(super) struct Fds {
    pub(super) report_read: OwnedFd,
    /// The init's end (held, not used, here).
    pub(super) _report_write: OwnedFd,
    /// The init's end (held, not used, here).
    pub(super) _wake_read: OwnedFd,
    pub(super) wake_write: OwnedFd,
}

/// A parked init.
pub(super) struct Parked {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    fds: Fds,
    watch: Watch,
    /// Read by the init until it has arranged (or ended); its filter is what a request's
    /// must equal.
    args: Box<Args>,
    /// Whether it has arranged and was checked after.
    settled: bool,
}

impl Parked {
    /// The init cloned as `pid` (watched by `pidfd`), once it has read its arguments.
    /// `Err` (with the pid, for rein to reap) when it ended first.
    pub(super) fn started(
        pid: libc::pid_t,
        pidfd: Option<BorrowedFd<'_>>,
        fds: Fds,
        watch: Watch,
        args: Box<Args>,
    ) -> Result<Parked, Option<libc::pid_t>> {
        // A copy of the zygote's own (which the zygote closes only once the init has exited
        // and its stack is reclaimed, at a later clone).
        let Some(Ok(pidfd)) = pidfd.map(|p| p.try_clone_to_owned()) else {
            // It cannot be watched (no descriptor left). Told to end, and its pipes and
            // arguments are never freed: it may read them until it has.
            tell(fds.wake_write.as_raw_fd(), &0usize.to_ne_bytes());
            wait_for_started(&fds);
            std::mem::forget(fds);
            std::mem::forget(args);
            return Err(Some(pid));
        };
        let parked = Parked {
            pid,
            pidfd,
            fds,
            watch,
            args,
            settled: false,
        };
        let mut started = [0u8; 1];
        if !parked.read(&mut started) || started[0] != STARTED {
            return Err(parked.discard());
        }
        Ok(parked)
    }

    /// Whether it has arranged and was checked.
    pub(super) fn settled(&self) -> bool {
        self.settled
    }

    /// Waits until it has arranged (if it has not yet); whether it did, and the paths it
    /// arranged from still name what they named before it was cloned (so what it arranged
    /// is what was looked at).
    pub(super) fn settle(&mut self) -> bool {
        if self.settled {
            return true;
        }
        let mut status = [0u8; 4];
        self.settled = self.read(&mut status) && status == [0; 4] && self.watch.unmoved();
        self.settled
    }

    /// Waits until `socket` has a request or the init has reported (or ended): `true` when
    /// the init did first.
    pub(super) fn reported_before(&self, socket: &OwnedFd) -> bool {
        let mut fds = [
            socket.as_raw_fd(),
            self.fds.report_read.as_raw_fd(),
            self.pidfd.as_raw_fd(),
        ]
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        loop {
            // SAFETY: polling three valid descriptors.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) };
            if n >= 0 {
                return fds[0].revents == 0;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }

    /// Its pid (rein's child).
    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Whether it can start a command confined as `confinement`.
    pub(super) fn fits(&self, confinement: &Confinement) -> bool {
        let (Some(plan), Some(entry)) = (confinement.mount_plan(), confinement.init_entry()) else {
            return false;
        };
        // Only a request with the filter installed ahead fits.
        let filter = confinement.ahead_filter();
        self.settled
            && self.alive()
            && filter == self.args.filter.as_ref()
            && self.watch.same(plan, entry.flags)
    }

    fn alive(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one valid descriptor without waiting.
        unsafe { libc::poll(&mut poll, 1, 0) == 0 }
    }

    /// Hands it the request and waits until it has taken its own descriptor table (or
    /// ended); the pipes close after.
    pub(super) fn wake(self, wake: &Wake) {
        let address = (std::ptr::from_ref(wake) as usize).to_ne_bytes();
        tell(self.fds.wake_write.as_raw_fd(), &address);
        let mut taken = [0u8; 1];
        self.read(&mut taken);
    }

    /// Tells it to end without waiting for it (see [`Ending`]).
    pub(super) fn end(self) -> Ending {
        tell(self.fds.wake_write.as_raw_fd(), &0usize.to_ne_bytes());
        Ending(self)
    }

    /// Ends it; returns its pid for rein to reap. Waits until it has ended: its descriptor
    /// numbers are the zygote's, and must not be reused while it could still read them.
    pub(super) fn discard(self) -> Option<libc::pid_t> {
        let ending = self.end();
        let mut poll = libc::pollfd {
            fd: ending.0.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one valid descriptor until the process has ended.
        while unsafe { libc::poll(&mut poll, 1, -1) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        Some(ending.pid())
    }

    /// Reads `buf` from the init's report pipe; `false` when it ended first.
    fn read(&self, buf: &mut [u8]) -> bool {
        let mut fds = [
            libc::pollfd {
                fd: self.fds.report_read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        loop {
            // SAFETY: polling two valid descriptors.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return false;
            }
            if fds[0].revents & libc::POLLIN != 0 {
                // SAFETY: reading into the caller's buffer of the length passed.
                let got = unsafe {
                    libc::read(
                        self.fds.report_read.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                    )
                };
                return usize::try_from(got).is_ok_and(|g| g == buf.len());
            }
            if fds[1].revents != 0 {
                return false;
            }
        }
    }
}

/// A parked init told to end, kept (with its pipes and arguments) until it has: it shares the
/// zygote's descriptor table, whose numbers must not be reused while it could still read
/// them. Its namespaces' teardown then overlaps the next command's start instead of coming
/// before it.
pub(super) struct Ending(Parked);

impl Ending {
    /// Its pid (rein's child: rein reaps it, waiting for it meanwhile).
    pub(super) fn pid(&self) -> libc::pid_t {
        self.0.pid
    }

    /// Whether it has exited (its descriptor numbers may be reused).
    pub(super) fn exited(&self) -> bool {
        !self.0.alive()
    }
}

/// Waits until the init has read its arguments, which are on the zygote's stack until then
/// (it writes first thing; only a kill from outside could keep it from it).
fn wait_for_started(fds: &Fds) {
    let mut started = [0u8; 1];
    // SAFETY: reading one byte into a local buffer.
    while unsafe { libc::read(fds.report_read.as_raw_fd(), started.as_mut_ptr().cast(), 1) } < 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
}

/// In a parked init: waits for the zygote's [`Wake`] on `wake`; `None` when told to end, or
/// the zygote (`zygote`, its pidfd) has ended. System calls only.
pub(super) fn wait_for_wake(wake: RawFd, zygote: RawFd) -> Option<&'static Wake> {
    let mut fds = [
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: zygote,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: polling two descriptors of the shared table.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if n <= 0 || fds[1].revents != 0 || fds[0].revents != libc::POLLIN {
            return None;
        }
        let mut address = [0u8; std::mem::size_of::<usize>()];
        // SAFETY: reading into a local buffer of the length passed.
        let got = unsafe { libc::read(wake, address.as_mut_ptr().cast(), address.len()) };
        if usize::try_from(got).ok() != Some(address.len()) {
            return None;
        }
        let address = usize::from_ne_bytes(address);
        // SAFETY: a non-zero address is the zygote's `Wake`, valid while the request is
        // handled (the zygote waits for the command's exec).
        return (address != 0).then(|| unsafe { &*(address as *const Wake) });
    }
}

/// Writes `bytes` to `fd` (a pipe with room: at most a few bytes are ever in it).
pub(super) fn tell(fd: RawFd, bytes: &[u8]) {
    // SAFETY: writing a caller's buffer of the length passed.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}
