//! rein's side of one sandboxed command: stopping it, and what to do once it has exited
//! (read the reaper's report, copy the `.git` view back, check the tripwire and the
//! repositories the person's git would go into).

#[cfg(target_os = "linux")]
use super::gitview::GitView;
#[cfg(target_os = "linux")]
use super::supervise::{REPORT_SETUP_FAILED, REPORT_STOPPED, RawReport};
use super::tripwire::Tripwire;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// How a sandboxed command ended.
#[derive(Debug)]
pub struct Finished {
    /// The command's own exit status (the supervisor's when the reaper could not report).
    pub status: ExitStatus,
    /// Processes the command left running when it ended, which were killed.
    pub killed: u32,
    /// Whether it was stopped on request (timeout, interrupt).
    pub stopped: bool,
    /// Why the sandbox could not start the command, if it could not.
    pub setup_error: Option<String>,
    /// What the sandbox dropped or undid afterwards, for the model and the person.
    pub notes: Vec<String>,
}

impl Finished {
    /// The line for the tool result when processes were left running, if any were.
    pub fn killed_note(&self) -> Option<String> {
        (self.killed > 0).then(|| {
            let n = self.killed;
            let (what, were) = if n == 1 {
                ("process", "it was")
            } else {
                ("processes", "they were")
            };
            format!(
                "[the command left {n} {what} running (background jobs, daemons); {were} killed \
                 when it ended: nothing a command starts outlives it. Run a server and what uses it \
                 in the same command.]"
            )
        })
    }
}

/// rein's state for one command between spawn and exit.
#[derive(Default)]
pub struct Supervision {
    /// Read and write ends of the report pipe.
    report: Option<(OwnedFd, OwnedFd)>,
    /// The command's view of `.git`, and where to keep it afterwards.
    #[cfg(target_os = "linux")]
    pub(super) view: Option<(GitView, std::sync::Arc<super::private::PrivateDir>)>,
    pub(super) tripwire: Option<Tripwire>,
    /// The check for repositories the command made where the person's git would go.
    pub(super) gitlinks: Option<super::gitlinks::GitlinkCheck>,
    /// What the sandbox has to say about the command before it ran.
    pub(super) notes: Vec<String>,
    /// The network allow-list's proxy for this command.
    #[cfg(target_os = "linux")]
    pub(super) net: Option<NetRun>,
}

/// The proxy of one command: the channel its listener comes over, and the task that serves it
/// (stopped when this is dropped or the command finishes).
#[cfg(target_os = "linux")]
pub(super) struct NetRun {
    proxy: std::sync::Arc<crate::netproxy::NetProxy>,
    channel: Option<super::netns::Channel>,
    log: std::sync::Arc<crate::netproxy::CommandLog>,
    /// Dropping it stops the proxy task and every connection it serves.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

#[cfg(target_os = "linux")]
impl NetRun {
    /// A fresh channel for `proxy`.
    pub(super) fn new(proxy: std::sync::Arc<crate::netproxy::NetProxy>) -> io::Result<NetRun> {
        Ok(NetRun {
            proxy,
            channel: Some(super::netns::Channel::new()?),
            log: std::sync::Arc::default(),
            stop: None,
        })
    }

    /// The child's end of the channel (valid until [`NetRun::start`]).
    pub(super) fn child_end(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.channel.as_ref().map_or(-1, |c| c.child.as_raw_fd())
    }

    /// Once the child is spawned: closes rein's copy of the child's end and serves what
    /// arrives on rein's end, on the current tokio runtime or, when the caller blocks while the
    /// command runs (`own_thread`: `rein sandbox`), on a thread of its own.
    fn start(&mut self, own_thread: bool) {
        let Some(channel) = self.channel.take() else {
            return;
        };
        let super::netns::Channel { rein, child } = channel;
        drop(child);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        self.stop = Some(stop);
        let (proxy, log) = (self.proxy.clone(), self.log.clone());
        let task = async move {
            let serve = async {
                if let Some(listener) = super::netns::receive_listener(rein).await {
                    crate::netproxy::serve(proxy, listener, log).await;
                }
            };
            tokio::select! {
                () = serve => {}
                _ = stopped => {}
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if !own_thread => {
                rt.spawn(task);
            }
            _ => {
                let thread = std::thread::Builder::new()
                    .name("rein-netproxy".into())
                    .spawn(move || {
                        match tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                        {
                            Ok(rt) => rt.block_on(task),
                            Err(e) => tracing::warn!("network proxy: no runtime: {e}"),
                        }
                    });
                if let Err(e) = thread {
                    tracing::warn!("network proxy: no thread: {e}");
                }
            }
        }
    }

    /// Stops serving; what the proxy refused, for the tool result.
    fn finish(mut self) -> Option<String> {
        self.stop.take();
        self.log.note()
    }
}

impl Supervision {
    /// A supervision reading reports from a fresh pipe; returns it and the write end's number
    /// for the child.
    #[cfg(target_os = "linux")]
    pub(super) fn with_pipe() -> io::Result<(Supervision, std::os::fd::RawFd)> {
        use std::os::fd::AsRawFd;
        let (read, write) = pipe()?;
        // SAFETY: plain fcntl on our own descriptor.
        unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let raw = write.as_raw_fd();
        Ok((
            Supervision {
                report: Some((read, write)),
                ..Supervision::default()
            },
            raw,
        ))
    }

    /// Starts the network proxy for a command that was just spawned (no-op without one); on a
    /// thread of its own when the caller blocks until the command ends (`own_thread`).
    pub(super) fn start_proxy(&mut self, own_thread: bool) {
        #[cfg(target_os = "linux")]
        if let Some(net) = &mut self.net {
            net.start(own_thread);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = own_thread;
    }

    /// Asks the supervisor `pid` to stop the command: it kills every process of it and exits.
    pub fn stop(&self, pid: u32) {
        if let Ok(pid) = i32::try_from(pid) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }

    /// Once the supervisor has exited with `status`: what happened, and the checks after the
    /// command (all its processes are gone by now).
    pub fn finish(mut self, status: ExitStatus) -> Finished {
        #[cfg(target_os = "linux")]
        let report = self.read_report();
        #[cfg(not(target_os = "linux"))]
        let report = None;
        self.finish_with(status, report)
    }

    /// Takes the report pipe's read end, for a caller that reads the report itself.
    /// Call once the child is spawned (it holds its own copy of the write end, so the pipe
    /// ends when the supervising processes have exited).
    pub(super) fn take_report_reader(&mut self) -> Option<OwnedFd> {
        self.report.take().map(|(read, _write)| read)
    }

    /// [`Supervision::finish`] with the report already read (`None`: none came).
    fn finish_with(mut self, status: ExitStatus, report: Option<RawReport>) -> Finished {
        let mut done = Finished {
            status,
            killed: 0,
            stopped: false,
            setup_error: None,
            notes: std::mem::take(&mut self.notes),
        };
        #[cfg(target_os = "linux")]
        if let Some(r) = report {
            done.killed = r.killed;
            done.stopped = r.kind == REPORT_STOPPED;
            done.status = ExitStatus::from_raw(r.status);
            if r.kind == REPORT_SETUP_FAILED {
                done.setup_error = Some(io::Error::from_raw_os_error(r.errno).to_string());
            }
        }
        #[cfg(target_os = "linux")]
        if let Some((view, private)) = self.view.take() {
            done.notes.extend(view.sync());
            private.keep_view(view);
        }
        if let Some(t) = self.tripwire.take() {
            done.notes.extend(t.check());
        }
        // After the view is copied back and the tripwire has restored what it guards: the
        // index as it now is names where the person's git goes.
        if let Some(g) = self.gitlinks.take() {
            done.notes.extend(g.run());
        }
        #[cfg(target_os = "linux")]
        if let Some(net) = self.net.take() {
            done.notes.extend(net.finish());
        }
        done
    }

    /// The last report in the pipe, if any came.
    #[cfg(target_os = "linux")]
    fn read_report(&mut self) -> Option<RawReport> {
        let (read, _) = self.report.take()?;
        read_reports(&read).0
    }
}

/// The last report waiting in the (non-blocking) pipe `read`, and whether the pipe has ended
/// (every writer gone).
#[cfg(target_os = "linux")]
fn read_reports(read: &OwnedFd) -> (Option<RawReport>, bool) {
    use std::os::fd::AsRawFd;
    let mut last = None;
    let mut buf = [0u8; RawReport::SIZE];
    loop {
        // SAFETY: `buf` is a valid buffer of the length passed.
        let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n != RawReport::SIZE as isize {
            return (last, n == 0);
        }
        last = RawReport::decode(&buf).or(last);
    }
}

/// Where a sandboxed command's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stderr {
    /// `/dev/null`.
    Null,
    /// A pipe of its own ([`Supervised::stderr`]).
    Pipe,
    /// The stdout pipe, as `2>&1` does: both streams in the order they were written.
    Stdout,
}

/// The streams of a sandboxed command; stdout is always a pipe ([`Supervised::stdout`]).
#[derive(Clone, Copy, Debug)]
pub struct ChildIo {
    /// A pipe to its stdin ([`Supervised::stdin`]); else `/dev/null`.
    pub stdin: bool,
    pub stderr: Stderr,
}

/// The pipes of one command: the child's end and rein's end of each.
pub(super) struct Streams {
    stdin: Option<Pipe>,
    stdout: Pipe,
    stderr: Option<Pipe>,
    merged: bool,
}

/// One pipe: the end the child gets and the end rein keeps.
struct Pipe {
    child: OwnedFd,
    ours: OwnedFd,
}

impl Streams {
    /// Fresh pipes for `io` (closed on exec, so no other child inherits them).
    pub(super) fn new(io: ChildIo) -> io::Result<Streams> {
        let to_child = || {
            pipe().map(|(read, write)| Pipe {
                child: read,
                ours: write,
            })
        };
        let from_child = || {
            pipe().map(|(read, write)| Pipe {
                child: write,
                ours: read,
            })
        };
        Ok(Streams {
            stdin: io.stdin.then(to_child).transpose()?,
            stdout: from_child()?,
            stderr: (io.stderr == Stderr::Pipe).then(from_child).transpose()?,
            merged: io.stderr == Stderr::Stdout,
        })
    }

    /// The child's ends as the zygote takes them: for stdin, stdout and stderr the index into
    /// the descriptors (`None`: `/dev/null`), and the descriptors.
    #[cfg(target_os = "linux")]
    pub(super) fn for_child(&self) -> ([Option<u8>; 3], Vec<std::os::fd::BorrowedFd<'_>>) {
        use std::os::fd::AsFd;
        let mut fds = Vec::new();
        fn add<'a>(p: &'a Pipe, fds: &mut Vec<std::os::fd::BorrowedFd<'a>>) -> u8 {
            fds.push(p.child.as_fd());
            (fds.len() - 1) as u8
        }
        let stdin = self.stdin.as_ref().map(|p| add(p, &mut fds));
        let stdout = Some(add(&self.stdout, &mut fds));
        let stderr = match (&self.stderr, self.merged) {
            (Some(p), _) => Some(add(p, &mut fds)),
            (None, true) => stdout,
            (None, false) => None,
        };
        ([stdin, stdout, stderr], fds)
    }

    /// The child's ends as `std::process::Command` takes them (copies: these stay open until
    /// rein's copies are closed in [`Supervised::new`]).
    pub(super) fn stdio(&self) -> io::Result<[std::process::Stdio; 3]> {
        use std::process::Stdio;
        let copy = |p: &Pipe| p.child.try_clone().map(Stdio::from);
        Ok([
            self.stdin
                .as_ref()
                .map_or_else(|| Ok(Stdio::null()), copy)?,
            copy(&self.stdout)?,
            match (&self.stderr, self.merged) {
                (Some(p), _) => copy(p)?,
                (None, true) => copy(&self.stdout)?,
                (None, false) => Stdio::null(),
            },
        ])
    }
}

/// A pipe `(read, write)` whose ends close on exec.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out-array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A sandboxed command's end, waited for through its supervisor's pidfd (the supervisor is
/// rein's child) and the report pipe: the report comes once every process of the command is
/// gone, a little before the supervising processes themselves have exited.
struct Exit {
    pidfd: tokio::io::unix::AsyncFd<OwnedFd>,
    /// The report pipe's read end, until it has ended.
    report: Option<tokio::io::unix::AsyncFd<OwnedFd>>,
    /// The report, once read.
    got: Option<RawReport>,
    /// The command's end: from the report, or from the supervisor's exit.
    status: Option<ExitStatus>,
    /// Whether the supervisor has been reaped.
    reaped: bool,
}

impl Exit {
    fn new(pid: u32, report: Option<OwnedFd>) -> io::Result<Exit> {
        use std::os::fd::FromRawFd;
        use tokio::io::{Interest, unix::AsyncFd};
        // SAFETY: plain syscall; `pid` is our own child, not yet reaped, so it is not reused.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: each AsyncFd owns its descriptor; nothing else closes or replaces it.
        let pidfd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?;
        let report = report
            .map(|r| unsafe { AsyncFd::register_with_interest(r, Interest::READABLE) })
            .transpose()?;
        Ok(Exit {
            pidfd,
            report,
            got: None,
            status: None,
            reaped: false,
        })
    }

    /// Waits until the command has ended (cancel-safe).
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            let report = async {
                match &self.report {
                    Some(r) => r.readable().await.map(Some),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ready = self.pidfd.readable() => {
                    let mut ready = ready?;
                    match reap(self.pidfd.get_ref())? {
                        Some(status) => {
                            self.reaped = true;
                            self.take_report();
                            self.status = Some(self.reported().unwrap_or(status));
                        }
                        None => ready.clear_ready(),
                    }
                }
                ready = report => {
                    if let Some(mut ready) = ready? {
                        ready.clear_ready();
                    }
                    self.take_report();
                    self.status = self.reported();
                }
            }
        }
    }

    /// Reads what the report pipe holds; stops watching it once it has ended.
    fn take_report(&mut self) {
        if let Some(r) = &self.report {
            let (got, ended) = read_reports(r.get_ref());
            self.got = got.or(self.got);
            if ended {
                self.report = None;
            }
        }
    }

    /// The command's status as the report gives it.
    fn reported(&self) -> Option<ExitStatus> {
        self.got.map(|r| ExitStatus::from_raw(r.status))
    }

    /// Waits until the supervisor has exited, and reaps it.
    async fn reap_supervisor(&mut self) {
        while !self.reaped {
            let Ok(mut ready) = self.pidfd.readable().await else {
                return;
            };
            match reap(self.pidfd.get_ref()) {
                Ok(Some(_)) | Err(_) => self.reaped = true,
                Ok(None) => ready.clear_ready(),
            }
        }
    }
}

/// Reaps the process behind `pidfd` if it has exited.
fn reap(pidfd: &OwnedFd) -> io::Result<Option<ExitStatus>> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child through its pidfd.
        let rc = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        // SAFETY: waitid filled the child fields (si_pid is 0 when nothing exited).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if pid == 0 {
            return Ok(None);
        }
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            _ => status & 0x7f,
        };
        return Ok(Some(ExitStatus::from_raw(raw)));
    }
}

/// A sandboxed command, with its streams and its supervision.
pub struct Supervised {
    /// A pipe to the command's stdin (when [`ChildIo::stdin`]).
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    /// The command's stdout (and stderr with [`Stderr::Stdout`]).
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    /// The command's stderr (with [`Stderr::Pipe`]).
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
    /// `None` once handed to the reaper task of a dropped command.
    exit: Option<Exit>,
    supervision: Option<Supervision>,
    /// The supervisor's pid until it is reaped.
    pid: Option<u32>,
}

impl Supervised {
    /// Pairs the supervisor `pid` (rein's child) with its streams and its supervision; closes
    /// rein's copies of the child's ends.
    pub(super) fn new(
        pid: u32,
        streams: Streams,
        mut supervision: Supervision,
    ) -> io::Result<Supervised> {
        use tokio::net::unix::pipe;
        let Streams {
            stdin,
            stdout,
            stderr,
            ..
        } = streams;
        let report = supervision.take_report_reader();
        let ours = || -> io::Result<_> {
            Ok((
                Exit::new(pid, report)?,
                stdin
                    .map(|p| pipe::Sender::from_owned_fd(p.ours))
                    .transpose()?,
                pipe::Receiver::from_owned_fd(stdout.ours)?,
                stderr
                    .map(|p| pipe::Receiver::from_owned_fd(p.ours))
                    .transpose()?,
            ))
        };
        match ours() {
            Ok((exit, stdin, stdout, stderr)) => Ok(Supervised {
                stdin,
                stdout: Some(stdout),
                stderr,
                exit: Some(exit),
                supervision: Some(supervision),
                pid: Some(pid),
            }),
            Err(e) => {
                // Nothing could wait for it or read it: it must not run on unwatched.
                if let Ok(pid) = i32::try_from(pid) {
                    // SAFETY: plain calls on our own child and its process group.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                        libc::waitpid(pid, std::ptr::null_mut(), 0);
                    }
                }
                Err(e)
            }
        }
    }

    /// Asks the supervisor to kill every process of the command.
    pub fn stop(&self) {
        if let (Some(s), Some(pid)) = (&self.supervision, self.pid) {
            s.stop(pid);
        }
    }

    /// Last resort when the supervisor does not exit: kills it and its process group.
    pub fn kill(&self) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: plain calls on our own child, not yet reaped.
            unsafe {
                if libc::getpgid(pid) == pid {
                    libc::kill(-pid, libc::SIGKILL);
                } else {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Waits until the command and everything it started are gone (cancel-safe; call
    /// [`Supervised::finish`] with the status). Returns the command's status.
    pub async fn exited(&mut self) -> io::Result<ExitStatus> {
        let exit = self.exit.as_mut().ok_or(io::ErrorKind::NotFound)?;
        let status = exit.wait().await?;
        if exit.reaped {
            // The pid may belong to another process from now on.
            self.pid = None;
        }
        Ok(status)
    }

    /// Finishes after the command ended with `status` (see [`Supervision::finish`]).
    pub fn finish(&mut self, status: ExitStatus) -> Finished {
        let report = self.exit.as_mut().and_then(|e| {
            e.take_report();
            e.got
        });
        let supervision = self.supervision.take().unwrap_or_default();
        supervision.finish_with(status, report)
    }

    /// Waits for the command and everything it started.
    pub async fn wait(&mut self) -> io::Result<Finished> {
        let status = self.exited().await?;
        Ok(self.finish(status))
    }

    /// Waits, collecting stdout and stderr.
    pub async fn wait_with_output(mut self) -> io::Result<(std::process::Output, Finished)> {
        use tokio::io::AsyncReadExt;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut stdout = self.stdout.take();
        let mut stderr = self.stderr.take();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        let (status, (), ()) = tokio::join!(self.exited(), read_out, read_err);
        let finished = self.finish(status?);
        let output = std::process::Output {
            status: finished.status,
            stdout: out,
            stderr: err,
        };
        Ok((output, finished))
    }
}

impl Drop for Supervised {
    /// A call abandoned mid-run (its future dropped) still leaves nothing running, and the
    /// supervisor is reaped once it has exited (it exits right after the report).
    fn drop(&mut self) {
        let ended = self.exit.as_ref().is_some_and(|e| e.status.is_some());
        if !ended {
            self.stop();
        }
        if let Some(mut exit) = self.exit.take()
            && !exit.reaped
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move { exit.reap_supervisor().await });
        }
    }
}
