//! Running one hook: `bash -c COMMAND` with the JSON input on stdin, through the launch gate's
//! environment allow-list, inside the bash sandbox unless the person's own config says
//! `sandbox = false` for it. It never outlives its timeout: a sandboxed hook is stopped by the
//! sandbox's supervisor (everything it started dies with it), an unsandboxed one runs in a
//! process group of its own that is killed whole.

use super::HookSpec;
use super::answer::Ran;
use crate::sandbox::{ChildIo, Sandbox, SpawnError, Stderr, Supervised};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Most output kept from one stream of a hook (the rest is read and dropped).
const MAX_OUTPUT: usize = 64 * 1024;
/// How long a stopped hook's supervisor gets to exit before it is killed.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// The variables a hook gets besides the allow-list: where the project is (Claude Code's name
/// too, so its scripts work unchanged).
fn own_env(workspace: &Path) -> Vec<(String, String)> {
    let ws = workspace.display().to_string();
    vec![
        ("REIN_PROJECT_DIR".into(), ws.clone()),
        ("CLAUDE_PROJECT_DIR".into(), ws),
    ]
}

/// Runs `spec` with `input` on stdin; what happened, never an error.
pub async fn run(
    spec: &HookSpec,
    input: &str,
    sandbox: &Sandbox,
    cancel: &CancellationToken,
) -> Ran {
    let started = if spec.sandboxed {
        start_sandboxed(spec, sandbox).map(Running::Sandboxed)
    } else {
        start_unconfined(spec, &sandbox.workspace)
    };
    let mut running = match started {
        Ok(r) => r,
        Err(why) => {
            return Ran {
                failed: Some(format!("could not start ({why})")),
                ..Ran::default()
            };
        }
    };
    let (stdin, stdout, stderr) = running.streams();
    let input = input.as_bytes().to_vec();
    let feed = async move {
        if let Some(mut s) = stdin {
            // A hook that does not read its input closes the pipe: not an error.
            let _ = s.write_all(&input).await;
            let _ = s.shutdown().await;
        }
    };
    let collect = async {
        let (out, err, ()) = tokio::join!(read_capped(stdout), read_capped(stderr), feed);
        let status = running.exited().await;
        (out, err, status)
    };
    let outcome = tokio::select! {
        r = tokio::time::timeout(spec.timeout, collect) => r.ok(),
        _ = cancel.cancelled() => None,
    };
    match outcome {
        Some((stdout, stderr, Ok(status))) => {
            let code = running.finish(status);
            Ran {
                code,
                stdout,
                stderr,
                failed: None,
            }
        }
        Some((_, _, Err(e))) => {
            running.stop().await;
            Ran {
                failed: Some(format!("could not be waited for ({e})")),
                ..Ran::default()
            }
        }
        None => {
            running.stop().await;
            let why = if cancel.is_cancelled() {
                "was stopped by the interrupt".to_string()
            } else {
                format!(
                    "timed out after {} s and was stopped",
                    spec.timeout.as_secs()
                )
            };
            Ran {
                failed: Some(why),
                ..Ran::default()
            }
        }
    }
}

/// Reads a stream to its end, keeping the first [`MAX_OUTPUT`] bytes.
async fn read_capped<R: AsyncRead + Unpin>(stream: Option<R>) -> String {
    let Some(mut s) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// A started hook. One lives for one hook run, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Running {
    /// Under the sandbox's supervisor.
    Sandboxed(Supervised),
    /// The person's own, unsandboxed: its process group, and the neutral directory it runs in.
    Unconfined {
        child: tokio::process::Child,
        _dir: Option<crate::launch::NeutralDir>,
    },
}

/// A hook's stdin, and its stdout and stderr.
type Streams = (
    Option<Box<dyn AsyncWrite + Unpin + Send>>,
    Option<Box<dyn AsyncRead + Unpin + Send>>,
    Option<Box<dyn AsyncRead + Unpin + Send>>,
);

impl Running {
    /// Takes its streams.
    fn streams(&mut self) -> Streams {
        match self {
            Running::Sandboxed(s) => (
                s.stdin.take().map(|w| Box::new(w) as _),
                s.stdout.take().map(|r| Box::new(r) as _),
                s.stderr.take().map(|r| Box::new(r) as _),
            ),
            Running::Unconfined { child, .. } => (
                child.stdin.take().map(|w| Box::new(w) as _),
                child.stdout.take().map(|r| Box::new(r) as _),
                child.stderr.take().map(|r| Box::new(r) as _),
            ),
        }
    }

    /// Waits until it has exited (for a sandboxed hook: everything it started too).
    async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Running::Sandboxed(s) => s.exited().await,
            Running::Unconfined { child, .. } => child.wait().await,
        }
    }

    /// The exit code once it exited (the command's own, for a sandboxed hook).
    fn finish(&mut self, status: std::process::ExitStatus) -> Option<i32> {
        match self {
            Running::Sandboxed(s) => {
                let done = s.finish(status);
                if done.setup_error.is_some() {
                    return None;
                }
                done.status.code()
            }
            Running::Unconfined { .. } => status.code(),
        }
    }

    /// Stops it and everything it started, and reaps it.
    async fn stop(&mut self) {
        match self {
            Running::Sandboxed(s) => {
                s.stop();
                if !matches!(tokio::time::timeout(REAP_WAIT, s.exited()).await, Ok(Ok(_))) {
                    s.kill();
                    let _ = tokio::time::timeout(REAP_WAIT, s.exited()).await;
                }
            }
            Running::Unconfined { child, .. } => {
                if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                    // SAFETY: plain kill(2) of the hook's own process group.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
                let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            }
        }
    }
}

impl Drop for Running {
    /// A hook abandoned mid-run (its future dropped) leaves nothing running: the sandboxed one
    /// is stopped by `Supervised`'s own drop; an unconfined one not yet reaped loses its group.
    fn drop(&mut self) {
        if let Running::Unconfined { child, .. } = self
            && let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok())
        {
            // SAFETY: plain kill(2); the child is not reaped, so its pid is still its group's.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

/// `bash -c COMMAND` in the workspace, confined like the bash tool.
fn start_sandboxed(spec: &HookSpec, sandbox: &Sandbox) -> Result<Supervised, String> {
    let mut cmd = std::process::Command::new(sandbox.program("bash"));
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&sandbox.workspace)
        .env("TMPDIR", &sandbox.temp_dir);
    for (k, v) in own_env(&sandbox.workspace) {
        cmd.env(k, v);
    }
    let io = ChildIo {
        stdin: true,
        stderr: Stderr::Pipe,
    };
    sandbox.spawn(&mut cmd, io).map_err(|e| match e {
        SpawnError::Sandbox(e) => format!("the sandbox could not be set up: {e}"),
        SpawnError::Start(e) => format!("bash could not start: {e}"),
    })
}

/// The person's unsandboxed hook: through the launch gate (a private directory outside the
/// workspace, the environment allow-list, bash from the trusted `PATH`), in its own process
/// group.
fn start_unconfined(spec: &HookSpec, workspace: &Path) -> Result<Running, String> {
    let env = own_env(workspace);
    let mut prepared = crate::launch::prepare(&crate::launch::Request {
        program: "bash",
        cwd: None,
        env: &env,
        workspace,
        in_project: false,
        purpose: crate::launch::Purpose::Hook,
    })?;
    let mut std_cmd = prepared.command();
    std_cmd.arg("-c").arg(&spec.command);
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("bash could not start: {e}"))?;
    Ok(Running::Unconfined {
        child,
        _dir: prepared.take_dir(),
    })
}
