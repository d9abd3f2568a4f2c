//! The sandbox's zygote: a small process, exec'd from rein's own binary once per rein process,
//! that starts sandboxed commands for rein.
//!
//! Forking rein for a command copies rein's whole address space three times (the supervisor,
//! the PID namespace's init, the command) and tears it down three times; forking a freshly
//! exec'd process that holds almost nothing costs a fraction of that. rein still prepares
//! everything (environment, mounts, Landlock ruleset, seccomp program) and sends it with the
//! descriptors over a private socket. The zygote clones a child *for rein* (`CLONE_PARENT`:
//! rein is its parent, waits for it and signals it as before), which sets up the same
//! confinement a child forked from rein does (cloned straight into the namespaces as their
//! init when there is a PID namespace: one process less), and execs the command. The zygote
//! holds no secret (its environment is empty), is not dumpable, and exits when rein's end of
//! the socket closes.

use super::linux::{Confinement, Start, WireConfinement, arrange_as_init, confine_ahead};
use super::mounts::{Mounted, NsEntry};
use super::park;
use super::run::pipe;
use super::supervise;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::ffi::{CString, c_char};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The argument that makes rein's binary serve as the zygote (see [`serve`]).
pub const ZYGOTE_ARG: &str = "__sandbox-zygote";

/// The environment variable that turns the zygote off (`0`): commands are then forked from
/// rein, as before it existed.
pub const SWITCH: &str = "REIN_SANDBOX_ZYGOTE";

/// The largest request the zygote reads; a larger one is started by forking rein instead.
const MAX_REQUEST: usize = 192 << 10;

/// What the zygote tells a child once rein has the child's pid.
const GO: u8 = b'g';

/// The most descriptors one request carries: three streams, report, ruleset, proxy channel,
/// and the pipe that tells rein whether the command started.
const MAX_FDS: usize = 7;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
/// A pidfd of rein (the zygote's parent), for the children's parent-death check; -1 where the
/// kernel has none.
static REIN_PIDFD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static ON: AtomicBool = AtomicBool::new(false);
/// A pidfd of the zygote itself, for its parked inits (see [`park`]); -1 where the kernel has
/// none, and then nothing is parked.
static ZYGOTE_PIDFD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static CLIENT: Mutex<Option<Client>> = Mutex::new(None);

/// Starts sandboxed commands through a zygote run from `program` (a binary whose `main` calls
/// [`serve`] when given [`ZYGOTE_ARG`]; the first program given is kept); without it,
/// commands are forked from rein itself.
pub fn enable(program: PathBuf) {
    let _ = PROGRAM.set(program);
    ON.store(true, Ordering::SeqCst);
}

/// Forks commands from rein again (for comparisons); a running zygote stays for later.
pub fn disable() {
    ON.store(false, Ordering::SeqCst);
}

/// One command for the zygote: what to exec, where, and with which streams.
#[derive(Serialize, Deserialize)]
pub(super) struct Request {
    /// An absolute path.
    pub(super) program: Vec<u8>,
    /// Including `argv[0]`.
    pub(super) argv: Vec<Vec<u8>>,
    /// The whole environment, `NAME=value`.
    pub(super) env: Vec<Vec<u8>>,
    /// An absolute path.
    pub(super) cwd: Vec<u8>,
    /// For stdin, stdout and stderr: the index of the passed descriptor, or `None` for
    /// `/dev/null` (the same index twice shares one pipe, as `2>&1` does).
    pub(super) stdio: [Option<u8>; 3],
    /// Its descriptors follow the streams' among the passed ones; after them comes the write
    /// end of rein's start pipe (see [`Client::call`]).
    pub(super) confinement: WireConfinement,
}

/// How a request ended: the child's pid (rein's child) and, when the command could not be
/// started, the error (the child has then exited or is about to).
pub(super) struct Started {
    pub(super) pid: libc::pid_t,
    pub(super) error: Option<io::Error>,
}

/// Sends `req` with `fds` to the zygote. `None`: no zygote (not enabled, it cannot start, or
/// the request is too large), and nothing was started; fork from rein instead.
pub(super) fn launch(req: &Request, fds: &[BorrowedFd<'_>]) -> Option<io::Result<Started>> {
    let program = PROGRAM.get().filter(|_| ON.load(Ordering::SeqCst))?;
    let bytes = bincode::serialize(req).ok()?;
    if bytes.len() > MAX_REQUEST || fds.len() >= MAX_FDS {
        return None;
    }
    let mut slot = crate::sync::lock(&CLIENT);
    for _ in 0..2 {
        if slot.is_none() {
            match start_from_lasting_thread(program) {
                Ok(c) => *slot = Some(c),
                Err(e) => {
                    tracing::warn!("sandbox: the zygote cannot start ({e}); forking instead");
                    return None;
                }
            }
        }
        let client = slot.as_ref()?;
        match client.call(&bytes, fds) {
            Ok(started) => return Some(Ok(started)),
            Err(Call::Refused(e)) => return Some(Err(e)),
            // Not sent: nothing started; a new zygote gets the request once more.
            Err(Call::NotSent(e)) => {
                tracing::warn!("sandbox: the zygote is gone ({e}); starting a new one");
                *slot = None;
            }
        }
    }
    None
}

/// Where the zygote is started from (see [`start_from_lasting_thread`]).
type StartRequest = (PathBuf, std::sync::mpsc::Sender<io::Result<Client>>);

static STARTER: OnceLock<Mutex<std::sync::mpsc::Sender<StartRequest>>> = OnceLock::new();

/// Starts the zygote from a thread that lives as long as rein. The children the zygote makes
/// for rein (`CLONE_PARENT`) have that thread as their parent, and the kernel sends a
/// parent-death signal when the parent *thread* exits: started from a thread of tokio's
/// blocking pool, which ends after some idle seconds, every command would be killed with it.
fn start_from_lasting_thread(program: &Path) -> io::Result<Client> {
    let starter = STARTER.get_or_init(|| {
        let (send, receive) = std::sync::mpsc::channel::<StartRequest>();
        let spawned = std::thread::Builder::new()
            .name("rein-zygote-parent".into())
            .spawn(move || {
                // Ends only with the process: the sender is kept in a static.
                for (program, answer) in receive {
                    let _ = answer.send(Client::start(&program));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("sandbox: no thread to start the zygote from ({e})");
        }
        Mutex::new(send)
    });
    let (answer, answered) = std::sync::mpsc::channel();
    crate::sync::lock(starter)
        .send((program.to_path_buf(), answer))
        .map_err(|_| io::Error::other("the zygote's parent thread is gone"))?;
    answered
        .recv()
        .map_err(|_| io::Error::other("the zygote's parent thread is gone"))?
}

/// A call that started nothing and may be sent to a new zygote, or was answered with an error
/// (nothing started either).
enum Call {
    NotSent(io::Error),
    Refused(io::Error),
}

/// rein's end of a running zygote.
struct Client {
    socket: OwnedFd,
    process: std::process::Child,
}

impl Client {
    /// Execs `program` as the zygote, with an empty environment, `/` as its directory and the
    /// socket as its stdin.
    fn start(program: &Path) -> io::Result<Client> {
        let (ours, theirs) = socket_pair()?;
        let process = std::process::Command::new(program)
            .arg(ZYGOTE_ARG)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        tracing::debug!(pid = process.id(), "sandbox: the zygote runs");
        Ok(Client {
            socket: ours,
            process,
        })
    }

    fn call(&self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<Started, Call> {
        // Whether the command started comes straight from the child, on a pipe of rein's own:
        // its errno, or end-of-file once the command has exec'd. Not through the zygote, which
        // would add one more process to wake between the exec and rein going on.
        let (started_read, started_write) = pipe().map_err(Call::NotSent)?;
        self.send(bytes, fds, started_write)?;
        // First the pid (or why nothing started), as soon as the child exists: from then on
        // rein can wait for it and stop it whatever happens to the zygote. No pid, no command:
        // the child waits for the go, which the zygote gives only after sending the pid (a
        // zygote killed before that leaves a child that exits), so the request may go to a
        // new zygote.
        let Some((pid, errno, ended)) = self.reply() else {
            return Err(Call::NotSent(io::ErrorKind::UnexpectedEof.into()));
        };
        // Inits parked for earlier commands and not used (see `park`): rein's children, which
        // have exited or are exiting.
        for parked in ended.into_iter().filter(|p| *p > 0) {
            // SAFETY: waiting for our own child, which the zygote has ended.
            unsafe { libc::waitpid(parked, std::ptr::null_mut(), libc::__WALL) };
        }
        if pid <= 0 {
            return Err(Call::Refused(io::Error::from_raw_os_error(errno)));
        }
        // Then whether it execs. A zygote gone meanwhile leaves a child that exits without
        // the go or runs on: either way its report tells how it ends, and the next request
        // finds the socket closed and starts a new zygote.
        let error = match read_errno(&started_read) {
            0 => None,
            errno => Some(io::Error::from_raw_os_error(errno)),
        };
        Ok(Started { pid, error })
    }

    /// Sends the request with `fds` and then `started`, which rein no longer holds after:
    /// only the child's copies may keep that pipe open.
    fn send(&self, bytes: &[u8], fds: &[BorrowedFd<'_>], started: OwnedFd) -> Result<(), Call> {
        let mut all = fds.to_vec();
        all.push(started.as_fd());
        let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(all.len()))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&all)) {
            return Err(Call::NotSent(io::Error::other(
                "no room for the descriptors",
            )));
        }
        let iov = [IoSlice::new(bytes)];
        retry(|| rustix::net::sendmsg(&self.socket, &iov, &mut control, SendFlags::NOSIGNAL))
            .map_err(|e| Call::NotSent(e.into()))?;
        Ok(())
    }

    /// One `(pid, errno, ended parked inits)` reply; `None` when the zygote is gone.
    fn reply(&self) -> Option<(i32, i32, [i32; 2])> {
        let mut reply = [0u8; REPLY];
        let (n, _) =
            retry(|| rustix::net::recv(&self.socket, &mut reply, RecvFlags::empty())).ok()?;
        if n != reply.len() {
            return None;
        }
        let word =
            |i: usize| i32::from_ne_bytes([reply[i], reply[i + 1], reply[i + 2], reply[i + 3]]);
        Some((word(0), word(4), [word(8), word(12)]))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A connected pair of SEQPACKET sockets, closed on exec: rein's end and the zygote's.
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Retries `f` while it is interrupted by a signal.
fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    loop {
        match f() {
            Err(rustix::io::Errno::INTR) => {}
            r => return r,
        }
    }
}

/// The zygote itself (rein's binary given [`ZYGOTE_ARG`]): starts what arrives on stdin until
/// rein closes it. Returns the process's exit code.
pub fn serve() -> i32 {
    super::protect_process();
    // Named for `ps` and `top` (it would show as "exe", after `/proc/self/exe`).
    // SAFETY: plain prctl with a NUL-terminated name of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"rein-zygote".as_ptr(), 0, 0, 0) };
    // Each command's start is a chain of wake-ups: run soon after each (see `slice`). Without
    // it (an older kernel) commands start as before, only later under load.
    let _ = super::slice::request(super::slice::SHORT_NS);
    // Close-on-exec, as every pidfd: no command gets it. Kept for the zygote's lifetime.
    // SAFETY: getppid cannot fail; pidfd_open takes a pid and no flags.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getppid(), 0) };
    REIN_PIDFD.store(i32::try_from(pidfd).unwrap_or(-1), Ordering::SeqCst);
    // SAFETY: pidfd_open of this process, no flags.
    let own = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    ZYGOTE_PIDFD.store(i32::try_from(own).unwrap_or(-1), Ordering::SeqCst);
    // SAFETY: rein passes the socket as stdin, and nothing else in this process uses it.
    let socket = unsafe { OwnedFd::from_raw_fd(0) };
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut zygote = Zygote::default();
    loop {
        zygote.wait_for_request(&socket);
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let got = retry(|| {
            rustix::net::recvmsg(&socket, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC)
        });
        let Ok(msg) = got else { return 1 };
        let fds: Vec<OwnedFd> = control
            .drain()
            .flat_map(|m| match m {
                RecvAncillaryMessage::ScmRights(fds) => fds.collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .collect();
        if msg.bytes == 0 && fds.is_empty() {
            return 0;
        }
        let truncated =
            msg.flags.contains(ReturnFlags::TRUNC) || msg.flags.contains(ReturnFlags::CTRUNC);
        let answered = match bincode::deserialize::<Request>(&buf[..msg.bytes.min(buf.len())]) {
            Ok(req) if !truncated => start(req, fds, &socket, &mut zygote),
            _ => send_reply(&socket, 0, libc::EINVAL, [0; 2]),
        };
        if !answered {
            return 1;
        }
    }
}

/// A request made ready to exec: C strings, pointer arrays and the confinement.
struct Ready {
    /// The write end of rein's start pipe: the child's errno goes there too.
    started: RawFd,
    program: CString,
    cwd: CString,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
    _env: Vec<CString>,
    env_ptrs: Vec<*const c_char>,
    stdio: [Option<RawFd>; 3],
    confinement: Confinement,
}

/// What the zygote keeps between requests.
#[derive(Default)]
struct Zygote {
    stacks: InitStacks,
    /// The next command's init, made ahead (see [`park`]).
    parked: Option<park::Parked>,
    /// Parked inits that were not used and have ended or are ending: rein's children, named
    /// in the next answers for rein to reap.
    ended: Vec<libc::pid_t>,
    /// Parked inits told to end and not yet gone, kept until they are (see [`park::Ending`]).
    ending: Vec<park::Ending>,
}

/// Starts one request and answers it: `(pid, 0)` once the child exists, `(0, errno)` when
/// nothing was started (whether the command execs, the child tells rein itself). Returns,
/// once no child reads this memory any more, whether the answer was sent. Then parks an init
/// for the next command with the same mounts.
fn start(req: Request, fds: Vec<OwnedFd>, socket: &OwnedFd, zygote: &mut Zygote) -> bool {
    let mut kept = Vec::new();
    let Some((ready, started)) = Ready::new(req, fds, &mut kept) else {
        return send_reply(socket, 0, libc::EINVAL, [0; 2]);
    };
    zygote.settle_parked();
    let parked = zygote.parked.take().and_then(|p| {
        if p.fits(&ready.confinement) {
            return Some(p);
        }
        // Not waited for: rein reaps it (waiting for its teardown) while the fresh child sets
        // up on the other side.
        let ending = p.end();
        zygote.ended.push(ending.pid());
        zygote.ending.push(ending);
        None
    });
    let answered = match parked {
        Some(parked) => start_parked(&ready, started, parked, socket, zygote),
        None => start_fresh(&ready, started, socket, zygote),
    };
    if answered {
        zygote.park_next(&ready.confinement);
    }
    answered
}

/// [`start`] in a new child.
fn start_fresh(ready: &Ready, started: OwnedFd, socket: &OwnedFd, zygote: &mut Zygote) -> bool {
    let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    let ended = zygote.take_ended();
    let (err_read, err_write) = match pipe() {
        Ok(p) => p,
        Err(e) => return send_reply(socket, 0, errno(e), ended),
    };
    // The child goes on only once rein has its pid: nothing runs that rein cannot wait for.
    let (go_read, go_write) = match pipe() {
        Ok(p) => p,
        Err(e) => return send_reply(socket, 0, errno(e), ended),
    };
    // With a PID namespace the child is cloned into the namespaces as their init (one process
    // less); an init ignores signals it has no handler for, so the stop signals are blocked
    // before it exists, not by the child.
    let init = ready.confinement.init_entry();
    // Numbers, not the descriptors: an init shares this memory while these are dropped here.
    let (err_fd, go_fd, go_write_fd) = (
        err_write.as_raw_fd(),
        go_read.as_raw_fd(),
        go_write.as_raw_fd(),
    );
    let child = move || -> Infallible {
        // The child's copy of the zygote's end: it reads end-of-file if the zygote dies first.
        // SAFETY: closing a descriptor of the child's own table.
        unsafe { libc::close(go_write_fd) };
        ready.exec(err_fd, go_fd, init)
    };
    let child: &dyn Fn() -> Infallible = &child;
    let mask = supervise::block_signals_saving();
    // The child shares this memory unless it unshares namespaces (which needs its own).
    let stacks = &mut zygote.stacks;
    let cloned = match init {
        Some(entry) => stacks.clone_init(libc::CLONE_PARENT | entry.flags, &child),
        None if !ready.confinement.unshares() => stacks.clone_init(libc::CLONE_PARENT, &child),
        None => supervise::clone_with(libc::CLONE_PARENT),
    };
    if let Ok(pid) = cloned
        && pid != 0
    {
        supervise::restore_signals(&mask);
    }
    match cloned {
        Ok(0) => {
            drop(go_write);
            ready.exec(err_fd, go_fd, init)
        }
        Ok(pid) => {
            // rein reads end-of-file on its start pipe once the child's copies are gone.
            drop((err_write, go_read, started));
            if !send_reply(socket, pid, 0, ended) {
                // An init still reads `ready`: it sees end-of-file instead of the go and exits,
                // and only then may this return (and free what it reads).
                drop(go_write);
                read_errno(&err_read);
                return false;
            }
            // SAFETY: writing one byte from a local buffer to our own pipe.
            unsafe { libc::write(go_write.as_raw_fd(), [GO].as_ptr().cast(), 1) };
            drop(go_write);
            // Returns once the command has exec'd or the child has failed: from then on no
            // child reads this function's memory.
            read_errno(&err_read);
            true
        }
        Err(e) => {
            supervise::restore_signals(&mask);
            send_reply(socket, 0, errno(e), ended)
        }
    }
}

/// [`start`] in the init parked for it: rein gets its pid, then the init gets the request.
fn start_parked(
    ready: &Ready,
    started: OwnedFd,
    parked: park::Parked,
    socket: &OwnedFd,
    zygote: &mut Zygote,
) -> bool {
    let ended = zygote.take_ended();
    let (err_read, err_write) = match pipe() {
        Ok(p) => p,
        Err(e) => {
            zygote.ended.extend(parked.discard());
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            return send_reply(socket, 0, errno, ended);
        }
    };
    if !send_reply(socket, parked.pid(), 0, ended) {
        // rein is gone; so is the pid it never got.
        zygote.ended.extend(parked.discard());
        return false;
    }
    let wake = park::Wake {
        ready: std::ptr::from_ref(ready).cast(),
        err: err_write.as_raw_fd(),
    };
    // The init shares this descriptor table until it has taken its own copy: these stay open
    // here until then.
    parked.wake(&wake);
    // rein reads end-of-file on its start pipe once the child's copies are gone.
    drop((err_write, started));
    // Returns once the command has exec'd or the child has failed: from then on no child
    // reads this function's memory (nor `wake`).
    read_errno(&err_read);
    true
}

impl Zygote {
    /// Up to two ended parked inits for an answer.
    fn take_ended(&mut self) -> [libc::pid_t; 2] {
        self.ending.retain(|e| !e.exited());
        [self.ended.pop().unwrap_or(0), self.ended.pop().unwrap_or(0)]
    }

    /// Makes the next command's init ahead, arranged as `confinement`'s (see [`park`]); it
    /// arranges while the zygote waits for the next request.
    fn park_next(&mut self, confinement: &Confinement) {
        if self.parked.is_some() || ZYGOTE_PIDFD.load(Ordering::SeqCst) < 0 {
            return;
        }
        let (Some(plan), Some(entry)) = (confinement.mount_plan(), confinement.init_entry()) else {
            return;
        };
        let Some(watch) = park::Watch::new(plan, entry) else {
            return;
        };
        let Ok((report_read, report_write)) = pipe() else {
            return;
        };
        let Ok((wake_read, wake_write)) = pipe() else {
            return;
        };
        // The init reads its own copy of the plan and of the user namespaces' descriptors,
        // kept with it (the request's go once it is answered).
        let mut plan = plan.clone();
        let mut userns = Vec::new();
        for fd in plan
            .unprivileged
            .iter_mut()
            .flat_map(|u| u.userns.iter_mut())
        {
            // SAFETY: a descriptor of the request, open while it is handled.
            let Ok(copy) = unsafe { BorrowedFd::borrow_raw(*fd) }.try_clone_to_owned() else {
                return;
            };
            *fd = copy.as_raw_fd();
            userns.push(copy);
        }
        let args = Box::new(park::Args {
            plan,
            _userns: userns,
            entry,
            filter: confinement.ahead_filter().cloned(),
            report: report_write.as_raw_fd(),
            wake: wake_read.as_raw_fd(),
        });
        let at = std::ptr::from_ref::<park::Args>(&*args) as usize;
        // SAFETY: `args` is kept with the parked init until it has ended or taken a request.
        let child = move || -> Infallible { parked_init(unsafe { &*(at as *const park::Args) }) };
        let child: &dyn Fn() -> Infallible = &child;
        let mask = supervise::block_signals_saving();
        // Sharing the descriptor table too: the request's descriptors, which the zygote gets
        // later, are then the init's without passing them again.
        let flags = libc::CLONE_PARENT | libc::CLONE_FILES | entry.flags;
        let cloned = self.stacks.clone_init(flags, &child);
        supervise::restore_signals(&mask);
        let Ok(pid) = cloned else { return };
        let pidfd = self.stacks.newest_pidfd();
        let fds = park::Fds {
            report_read,
            _report_write: report_write,
            _wake_read: wake_read,
            wake_write,
        };
        // Returns once the init has read `child` (on this stack) and `at`.
        match park::Parked::started(pid, pidfd, fds, watch, args) {
            Ok(parked) => self.parked = Some(parked),
            Err(ended) => self.ended.extend(ended),
        }
    }

    /// Waits until a request can be read from `socket`, meanwhile checking the parked init
    /// once it has arranged.
    fn wait_for_request(&mut self, socket: &OwnedFd) {
        while let Some(parked) = self.parked.as_ref().filter(|p| !p.settled()) {
            if !parked.reported_before(socket) {
                return;
            }
            self.settle_parked();
        }
    }

    /// Waits until the parked init has arranged (if it has not yet) and checks it; ends it
    /// when it failed or the paths changed meanwhile.
    fn settle_parked(&mut self) {
        if let Some(mut parked) = self.parked.take() {
            if parked.settle() {
                self.parked = Some(parked);
            } else {
                self.ended.extend(parked.discard());
            }
        }
    }
}

/// A parked init (cloned with the zygote's memory and descriptor table): arranges the
/// namespaces, says so on its report pipe, and waits on its wake pipe for a request (see
/// [`park`]).
fn parked_init(args: &park::Args) -> Infallible {
    let (entry, report, wake) = (args.entry, args.report, args.wake);
    // From here on nothing on the zygote's stack is read: it may go on.
    park::tell(report, &[park::STARTED]);
    let arranged = arrange_as_init(&args.plan, entry).and_then(|mut m| {
        die_with_rein()?;
        confine_ahead(&mut m, args.filter.as_ref())?;
        Ok(m)
    });
    let mounted = match arranged {
        Ok(m) => m,
        Err(e) => report_and_exit(&[report], &e),
    };
    park::tell(report, &0i32.to_ne_bytes());
    let Some(wake) = park::wait_for_wake(wake, ZYGOTE_PIDFD.load(Ordering::SeqCst)) else {
        // SAFETY: leaving a child that started nothing.
        unsafe { libc::_exit(0) };
    };
    // SAFETY: `wake.ready` points at the zygote's `Ready`, which stays valid until this
    // child's command has exec'd or it has failed (`start_parked` waits for that).
    let ready = unsafe { &*wake.ready.cast::<Ready>() };
    // SAFETY: plain syscall: a private copy of the (shared) descriptor table.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        report_and_exit(&[wake.err, ready.started], &io::Error::last_os_error());
    }
    park::tell(report, &[park::TAKEN]);
    ready.exec_parked(wake.err, mounted)
}

/// The stack of an init that shares the zygote's memory; a command's process borrows
/// [`supervise::SHARED_STACK`] of it until its exec.
const INIT_STACK: usize = 256 << 10;

/// The inaccessible bottom of an init's stack (rounded up to the page size by the kernel).
const STACK_GUARD: usize = 4 << 10;

/// Stacks of inits (or supervisors) cloned with the zygote's memory (`CLONE_VM`), with each
/// one's pidfd: it outlives the request that started it, so its stack is reused or unmapped
/// only once it exits.
/// Sharing the memory spares copying the zygote's page tables for each command, the faults
/// that copy-on-write costs after it and tearing them down when the init exits.
#[derive(Default)]
struct InitStacks {
    busy: Vec<(OwnedFd, usize)>,
    /// Stacks of inits that have exited, kept mapped for the next ones: a new mapping costs
    /// its map and unmap calls and a fault on each page the init touches.
    free: Vec<usize>,
}

/// The most exited inits' stacks kept for reuse (commands rarely overlap).
const FREE_STACKS: usize = 4;

impl InitStacks {
    /// Clones `child` with `flags` as a process that shares this memory, on a stack of its
    /// own. The caller keeps what `child` uses unchanged until the command's exec.
    fn clone_init(
        &mut self,
        flags: libc::c_int,
        child: &&dyn Fn() -> Infallible,
    ) -> io::Result<libc::pid_t> {
        self.reclaim();
        let base = match self.free.pop() {
            Some(base) => base as *mut libc::c_void,
            None => new_stack()?,
        };
        let mut pidfd: libc::c_int = -1;
        let top = base.cast::<u8>().wrapping_add(INIT_STACK).cast();
        let flags = flags | libc::CLONE_VM | libc::CLONE_PIDFD;
        // SAFETY: the stack stays mapped and unused by others until the init has exited (see
        // `reclaim`); the caller keeps `child` and what it reads valid until the command's
        // exec, after which the init only reaps (system calls on its own stack).
        match unsafe { supervise::clone_on(top, flags, child, &mut pidfd) } {
            Ok(pid) => {
                // SAFETY: CLONE_PIDFD stored a fresh descriptor that nothing else owns.
                self.busy
                    .push((unsafe { OwnedFd::from_raw_fd(pidfd) }, base as usize));
                Ok(pid)
            }
            Err(e) => {
                // No process uses it.
                self.free.push(base as usize);
                Err(e)
            }
        }
    }

    /// The pidfd of the init cloned last; it stays open until that init has exited and a
    /// later clone has reclaimed its stack.
    fn newest_pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.busy.last().map(|(pidfd, _)| pidfd.as_fd())
    }

    /// Frees the stacks of inits that have exited: kept for the next ones, or unmapped.
    fn reclaim(&mut self) {
        let mut exited = Vec::new();
        self.busy.retain(|(pidfd, base)| {
            let mut poll = libc::pollfd {
                fd: pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: polling one valid descriptor without waiting.
            let done = unsafe { libc::poll(&mut poll, 1, 0) } == 1;
            if done {
                exited.push(*base);
            }
            !done
        });
        for base in exited {
            if self.free.len() < FREE_STACKS {
                self.free.push(base);
            } else {
                // SAFETY: the init that used this stack has exited (its pidfd says so).
                unsafe { libc::munmap(base as *mut libc::c_void, INIT_STACK) };
            }
        }
    }
}

/// Maps a new init stack with an inaccessible guard page at its bottom.
fn new_stack() -> io::Result<*mut libc::c_void> {
    // SAFETY: a fresh private anonymous mapping, checked below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            INIT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // A guard page below the stack: an overflow faults instead of writing over the zygote's
    // memory, which the init shares.
    // SAFETY: the lowest page of the mapping made above, which nothing uses yet.
    if unsafe { libc::mprotect(base, STACK_GUARD, libc::PROT_NONE) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: unmapping the mapping made above, which no process uses.
        unsafe { libc::munmap(base, INIT_STACK) };
        return Err(e);
    }
    Ok(base)
}

/// In the child: waits until the zygote has told rein the pid; exits if it never did (the
/// zygote died first).
fn wait_for_go(go: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reading one byte into a local buffer.
        let n = unsafe { libc::read(go, byte.as_mut_ptr().cast(), 1) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if n != 1 || byte[0] != GO {
            // SAFETY: leaving the child before anything of the command exists.
            unsafe { libc::_exit(1) };
        }
        return Ok(());
    }
}

/// In the child, rein's own (`CLONE_PARENT`), after its namespaces and ids are set (a change
/// of credentials clears it): killed when rein dies, even by `SIGKILL`, which takes the
/// command's PID namespace (or, without one, the command, see `confine_command`) with it.
/// Exits when rein died before this was armed: until rein's last thread has exited, the
/// child is the child of one of them, and is signalled when that one exits. `getppid` cannot
/// tell (it is 0 in a PID namespace of its own), rein's pidfd can.
fn die_with_rein() -> io::Result<()> {
    // SAFETY: plain prctl, and a poll of one descriptor without waiting.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut rein = libc::pollfd {
            fd: REIN_PIDFD.load(Ordering::SeqCst),
            events: libc::POLLIN,
            revents: 0,
        };
        if rein.fd >= 0 && libc::poll(&mut rein, 1, 0) > 0 {
            libc::_exit(1);
        }
    }
    Ok(())
}

/// The length of an answer: pid, errno, and two parked inits rein is to reap (or 0).
const REPLY: usize = 16;

/// Sends one `(pid, errno, ended)` answer: `ended` are parked inits that were not used and
/// have ended or are ending, for rein (their parent) to reap (a request ends at most two: the
/// one it does not fit, and the one made after it that failed).
fn send_reply(socket: &OwnedFd, pid: i32, errno: i32, ended: [i32; 2]) -> bool {
    let mut reply = [0u8; REPLY];
    reply[..4].copy_from_slice(&pid.to_ne_bytes());
    reply[4..8].copy_from_slice(&errno.to_ne_bytes());
    reply[8..12].copy_from_slice(&ended[0].to_ne_bytes());
    reply[12..].copy_from_slice(&ended[1].to_ne_bytes());
    retry(|| rustix::net::send(socket, &reply, SendFlags::NOSIGNAL)).is_ok()
}

impl Ready {
    /// With the write end of rein's start pipe, which the zygote closes once the child has
    /// its copy.
    fn new(req: Request, fds: Vec<OwnedFd>, kept: &mut Vec<OwnedFd>) -> Option<(Ready, OwnedFd)> {
        let c = |b: Vec<u8>| CString::new(b).ok();
        let argv: Vec<CString> = req.argv.into_iter().map(c).collect::<Option<_>>()?;
        let env: Vec<CString> = req.env.into_iter().map(c).collect::<Option<_>>()?;
        let streams = req
            .stdio
            .iter()
            .flatten()
            .map(|i| usize::from(*i) + 1)
            .max()
            .unwrap_or(0);
        let mut fds = fds.into_iter();
        let mut stream_fds = Vec::new();
        for _ in 0..streams {
            let fd = fds.next()?;
            stream_fds.push(fd.as_raw_fd());
            kept.push(fd);
        }
        let mut stdio = [None; 3];
        for (slot, index) in stdio.iter_mut().zip(req.stdio) {
            if let Some(i) = index {
                *slot = Some(*stream_fds.get(usize::from(i))?);
            }
        }
        let confinement = Confinement::from_wire(req.confinement, &mut fds, kept)?;
        let started = fds.next()?;
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let ready = Ready {
            started: started.as_raw_fd(),
            program: c(req.program)?,
            cwd: c(req.cwd)?,
            argv_ptrs: ptrs(&argv),
            env_ptrs: ptrs(&env),
            _argv: argv,
            _env: env,
            stdio,
            confinement,
        };
        Some((ready, started))
    }

    /// In the child: the streams, the directory, the confinement (which forks the supervising
    /// processes, once `go` says that rein has the pid), then exec. Reports an error on `err`
    /// and exits. `init`: the child was cloned into the command's namespaces as their init.
    fn exec(&self, err: RawFd, go: RawFd, init: Option<NsEntry>) -> ! {
        let start = |confined: io::Result<()>| -> Infallible {
            let e = match confined {
                Ok(()) => self.exec_command(),
                Err(e) => e,
            };
            report_and_exit(&[err, self.started], &e)
        };
        // `Ok` here too means this is the command's process (forked, not sharing memory).
        let prepared = self.prepare(go, init, &start);
        match start(prepared) {}
    }

    /// [`Ready::exec`] in a parked init, whose namespaces are `mounted` already.
    fn exec_parked(&self, err: RawFd, mounted: Mounted) -> Infallible {
        let start = |confined: io::Result<()>| -> Infallible {
            let e = match confined {
                Ok(()) => self.exec_command(),
                Err(e) => e,
            };
            report_and_exit(&[err, self.started], &e)
        };
        let run = self
            .streams_and_dir()
            .and_then(|()| self.confinement.run_as_init(mounted, &start));
        start(run)
    }

    /// What `std::process::Command` does before exec, then the confinement; the command's
    /// process runs `start` (in it, and only there, this returns `Ok`).
    fn prepare(&self, go: RawFd, init: Option<NsEntry>, start: Start) -> io::Result<()> {
        self.streams_and_dir()?;
        let gate = || {
            die_with_rein()?;
            wait_for_go(go)
        };
        match init {
            Some(entry) => self.confinement.enter_as_init(entry, &gate, start),
            None => self.confinement.enter_after(&gate, Some(start)),
        }
    }

    /// The process group, `SIGPIPE`, the three streams and the working directory.
    fn streams_and_dir(&self) -> io::Result<()> {
        // SAFETY: plain calls on this (single-threaded) child's own state; the path is a
        // valid NUL-terminated string owned by `self`.
        unsafe {
            if libc::setpgid(0, 0) != 0
                || libc::signal(libc::SIGPIPE, libc::SIG_DFL) == libc::SIG_ERR
            {
                return Err(io::Error::last_os_error());
            }
            for (target, source) in self.stdio.iter().enumerate() {
                stream(*source, target as RawFd)?;
            }
            if libc::chdir(self.cwd.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Execs the command; returns only on failure.
    fn exec_command(&self) -> io::Error {
        // SAFETY: valid NUL-terminated strings and NULL-terminated arrays owned by `self`.
        unsafe {
            execve(
                self.program.as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.env_ptrs.as_ptr(),
            )
        }
    }
}

/// `execve` as a bare system call, returning the kernel's error. The child shares the zygote's
/// memory, its thread's `errno` included, with the inits of other commands running at the same
/// time: by the time the libc wrapper's `errno` was read, another init's failed `waitpid`
/// could have put `ECHILD` there (seen as "exec failed: no child processes").
///
/// # Safety
/// `path` must be a NUL-terminated string, `argv` and `envp` NULL-terminated arrays of them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe fn execve(
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
) -> io::Error {
    let ret: isize;
    // SAFETY: the execve system call with the caller's valid arguments; on success it does not
    // return, on failure it changes nothing in this process.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_execve as isize => ret,
            in("rdi") path,
            in("rsi") argv,
            in("rdx") envp,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    // SAFETY: as above.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") libc::SYS_execve,
            inlateout("x0") path as isize => ret,
            in("x1") argv,
            in("x2") envp,
            options(nostack),
        );
    }
    // The kernel returns -errno (1 to 4095) on failure.
    match ret {
        -4095..=-1 => io::Error::from_raw_os_error(-ret as i32),
        _ => io::Error::from_raw_os_error(libc::EIO),
    }
}

/// [`execve`] through libc where rein has no bare system call for the CPU.
///
/// # Safety
/// As [`execve`].
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn execve(
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
) -> io::Error {
    // SAFETY: the caller's valid arguments.
    unsafe { libc::execve(path, argv, envp) };
    io::Error::last_os_error()
}

/// Writes `e`'s errno to the child's error pipes and leaves the child.
fn report_and_exit(pipes: &[RawFd], e: &io::Error) -> ! {
    let errno = e.raw_os_error().unwrap_or(libc::EIO).to_ne_bytes();
    // SAFETY: writing a local buffer to our own pipes, then leaving the child.
    unsafe {
        for fd in pipes {
            libc::write(*fd, errno.as_ptr().cast(), errno.len());
        }
        libc::_exit(127)
    }
}

/// Puts `source` (or `/dev/null`) on descriptor `target`.
fn stream(source: Option<RawFd>, target: RawFd) -> io::Result<()> {
    // SAFETY: plain descriptor calls; the path is a valid C string.
    unsafe {
        let fd = match source {
            Some(fd) => fd,
            None => libc::open(c"/dev/null".as_ptr(), libc::O_RDWR),
        };
        if fd < 0 || libc::dup2(fd, target) < 0 {
            return Err(io::Error::last_os_error());
        }
        if source.is_none() && fd != target {
            libc::close(fd);
        }
    }
    Ok(())
}

/// The errno the child wrote before it exited, or 0 once the command's exec closed the pipe.
fn read_errno(read: &OwnedFd) -> i32 {
    let mut buf = [0u8; 4];
    loop {
        // SAFETY: reading into a local buffer of the length passed.
        let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return match n {
            4 => i32::from_ne_bytes(buf),
            0 => 0,
            _ => libc::EIO,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request to run `program` with `sh -c script` in `dir`, unconfined, with the report
    /// pipe `report`; with the read end of its start pipe.
    fn request_for(
        program: &str,
        dir: &Path,
        script: &str,
        report: &OwnedFd,
    ) -> (Request, Vec<OwnedFd>, OwnedFd) {
        let confinement = Confinement::unconfined(report.as_raw_fd());
        let (wire, fds) = confinement.to_wire();
        let (started_read, started_write) = pipe().unwrap();
        let fds = fds
            .iter()
            // SAFETY: `report` is open for the duration of the borrow.
            .map(|fd| {
                unsafe { BorrowedFd::borrow_raw(*fd) }
                    .try_clone_to_owned()
                    .unwrap()
            })
            .chain([started_write])
            .collect();
        let req = Request {
            program: program.as_bytes().to_vec(),
            argv: vec![b"sh".to_vec(), b"-c".to_vec(), script.as_bytes().to_vec()],
            env: Vec::new(),
            cwd: dir.as_os_str().as_encoded_bytes().to_vec(),
            stdio: [None, None, None],
            confinement: wire,
        };
        (req, fds, started_read)
    }

    /// [`request_for`] with `/bin/sh`.
    fn request(dir: &Path, script: &str, report: &OwnedFd) -> (Request, Vec<OwnedFd>, OwnedFd) {
        request_for("/bin/sh", dir, script, report)
    }

    /// The first reply on `ours`.
    fn first_reply(ours: &OwnedFd) -> (i32, i32) {
        let mut reply = [0u8; REPLY];
        let (n, _) = rustix::net::recv(ours, &mut reply, RecvFlags::empty()).unwrap();
        assert_eq!(n, REPLY);
        let word =
            |i: usize| i32::from_ne_bytes([reply[i], reply[i + 1], reply[i + 2], reply[i + 3]]);
        (word(0), word(4))
    }

    #[test]
    fn whether_the_command_started_comes_on_reins_pipe_and_only_the_pid_from_the_zygote() {
        let dir = tempfile::tempdir().unwrap();
        let (_report_read, report) = pipe().unwrap();
        let (ours, theirs) = socket_pair().unwrap();
        for (program, errno) in [("/bin/sh", 0), ("/no/such/program", libc::ENOENT)] {
            let (req, fds, started) = request_for(program, dir.path(), "exit 0", &report);
            assert!(start(req, fds, &theirs, &mut Zygote::default()));
            let (pid, zygote_errno) = first_reply(&ours);
            assert!(pid > 0);
            assert_eq!(zygote_errno, 0);
            // The init of the first request may still be running (it is the test runner's
            // child, `CLONE_PARENT`, so this process cannot wait for it) and shares this
            // process's memory: its errors must not become the second request's.
            assert_eq!(read_errno(&started), errno, "{program}");
        }
        // Nothing more came from the zygote: one answer per request.
        rustix::io::ioctl_fionbio(&ours, true).unwrap();
        let mut more = [0u8; 8];
        assert!(rustix::net::recv(&ours, &mut more, RecvFlags::empty()).is_err());
    }

    #[test]
    fn a_child_runs_nothing_until_rein_has_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let (_report_read, report) = pipe().unwrap();
        let (req, fds, _started) = request(dir.path(), "touch ran", &report);
        // rein's end is gone: the pid cannot reach it, so the child must not go on.
        let (ours, theirs) = socket_pair().unwrap();
        drop(ours);
        assert!(!start(req, fds, &theirs, &mut Zygote::default()));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(!dir.path().join("ran").exists(), "the command ran unseen");
    }

    #[test]
    fn a_child_runs_once_rein_has_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let (_report_read, report) = pipe().unwrap();
        let (req, fds, _started) = request(dir.path(), "touch ran", &report);
        let (ours, theirs) = socket_pair().unwrap();
        assert!(start(req, fds, &theirs, &mut Zygote::default()));
        first_reply(&ours);
        let ran = dir.path().join("ran");
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ran.exists() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(ran.exists());
    }

    /// A child that waits until it is killed.
    fn waiting() -> Infallible {
        loop {
            // SAFETY: plain pause.
            unsafe { libc::pause() };
        }
    }

    fn kill_and_reap(pid: libc::pid_t) {
        let mut status = 0;
        // SAFETY: killing and waiting for our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFSIGNALED(status));
    }

    #[test]
    fn an_init_stack_is_reused_only_after_its_init_exits() {
        let mut stacks = InitStacks::default();
        let child: &dyn Fn() -> Infallible = &waiting;
        let first = stacks.clone_init(0, &child).unwrap();
        stacks.reclaim();
        assert_eq!(
            stacks.busy.len(),
            1,
            "the stack of a running init was freed"
        );
        let second = stacks.clone_init(0, &child).unwrap();
        let bases: Vec<usize> = stacks.busy.iter().map(|(_, b)| *b).collect();
        assert_ne!(bases[0], bases[1], "two running inits share a stack");
        stacks.reclaim();
        assert!(stacks.free.is_empty());
        kill_and_reap(first);
        kill_and_reap(second);
        stacks.reclaim();
        assert!(
            stacks.busy.is_empty(),
            "an exited init still holds its stack"
        );
        assert_eq!(stacks.free.len(), 2);
        let third = stacks.clone_init(0, &child).unwrap();
        assert!(
            bases.contains(&stacks.busy[0].1),
            "a freed stack was not reused"
        );
        assert_eq!(stacks.free.len(), 1);
        kill_and_reap(third);
    }

    #[test]
    fn a_zygote_gone_before_the_pid_started_nothing_and_the_request_may_be_resent() {
        let (ours, theirs) = socket_pair().unwrap();
        let client = Client {
            socket: ours,
            process: std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap(),
        };
        // A zygote that takes the request and dies before it answers.
        let zygote = std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let _ = rustix::net::recv(&theirs, &mut buf, RecvFlags::empty());
        });
        let answer = client.call(b"request", &[]);
        zygote.join().unwrap();
        assert!(matches!(answer, Err(Call::NotSent(_))));
    }
}
