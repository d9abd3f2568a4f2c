//! rein's side of one sandboxed command: stopping it, and what to do once it has exited
//! (read the reaper's report, copy the `.git` view back, check the tripwire).

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
        use std::os::fd::{AsRawFd, FromRawFd};
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid out-array of two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors are fresh and owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
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
        let mut done = Finished {
            status,
            killed: 0,
            stopped: false,
            setup_error: None,
            notes: std::mem::take(&mut self.notes),
        };
        #[cfg(target_os = "linux")]
        if let Some(r) = self.read_report() {
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
        #[cfg(target_os = "linux")]
        if let Some(net) = self.net.take() {
            done.notes.extend(net.finish());
        }
        done
    }

    /// The last report in the pipe, if any came.
    #[cfg(target_os = "linux")]
    fn read_report(&mut self) -> Option<RawReport> {
        use std::os::fd::AsRawFd;
        let (read, _) = self.report.take()?;
        let mut last = None;
        let mut buf = [0u8; RawReport::SIZE];
        loop {
            // SAFETY: `buf` is a valid buffer of the length passed.
            let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n != RawReport::SIZE as isize {
                return last;
            }
            last = RawReport::decode(&buf).or(last);
        }
    }
}

/// A sandboxed command started with tokio, with its supervision.
pub struct Supervised {
    /// The supervisor process (the command runs beneath it).
    pub child: tokio::process::Child,
    supervision: Option<Supervision>,
    pid: Option<u32>,
}

impl Supervised {
    /// Pairs a spawned supervisor with its supervision.
    pub fn new(child: tokio::process::Child, supervision: Supervision) -> Supervised {
        let pid = child.id();
        Supervised {
            child,
            supervision: Some(supervision),
            pid,
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
            // SAFETY: plain calls; a stale pid only yields ESRCH.
            unsafe {
                if libc::getpgid(pid) == pid {
                    libc::kill(-pid, libc::SIGKILL);
                } else {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Finishes after the supervisor exited with `status` (see [`Supervision::finish`]).
    pub fn finish(&mut self, status: ExitStatus) -> Finished {
        self.pid = None;
        self.supervision.take().unwrap_or_default().finish(status)
    }

    /// Waits for the command and everything it started.
    pub async fn wait(&mut self) -> io::Result<Finished> {
        let status = self.child.wait().await?;
        Ok(self.finish(status))
    }

    /// Waits, collecting stdout and stderr (when piped).
    pub async fn wait_with_output(mut self) -> io::Result<(std::process::Output, Finished)> {
        use tokio::io::AsyncReadExt;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut stdout = self.child.stdout.take();
        let mut stderr = self.child.stderr.take();
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
        let (status, (), ()) = tokio::join!(self.child.wait(), read_out, read_err);
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
    /// A call abandoned mid-run (its future dropped) still leaves nothing running.
    fn drop(&mut self) {
        self.stop();
    }
}
