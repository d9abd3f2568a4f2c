//! `bash`: run a command line in the workspace, in its own process group, with a timeout,
//! live output, and a bounded result.

mod output;

use super::task::string_arg;
use super::{
    Access, Effect, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args,
};
use crate::llm::ToolSpec;
use crate::protocol::{Event, ToolDisplay};
use output::Output;
use serde::Deserialize;
use serde_json::{Value, json};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// Longest timeout a call may ask for, in seconds.
const MAX_TIMEOUT_SECS: u64 = 600;
/// How long to keep reading after the shell exits while a background process holds the output.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);
/// How long to wait for a killed process to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(2);
const NAME: &str = "bash";

/// The `bash` tool.
pub struct Bash;

/// A command line to run, with its timeout fixed.
struct Command {
    access: Access,
    command: String,
    timeout: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    /// A float too, since some models send `30.0`.
    timeout_secs: Option<f64>,
}

/// The timeout for a call: the requested one, else the configured default, within 1..=600 s.
fn timeout_secs(requested: Option<f64>, default: u64) -> u64 {
    match requested {
        Some(t) if t.is_finite() => t.ceil().clamp(1.0, MAX_TIMEOUT_SECS as f64) as u64,
        _ => default.clamp(1, MAX_TIMEOUT_SECS),
    }
}

/// A conventional name for a signal number.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

/// The status line appended to the output, if the command did not simply succeed.
fn status_line(status: ExitStatus) -> Option<String> {
    if let Some(sig) = status.signal() {
        let name = signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_string);
        return Some(format!("[exit code: {} (killed by {name})]", 128 + sig));
    }
    match status.code() {
        Some(0) | None => None,
        // The shell reports a child killed by a signal as 128 + the signal number.
        Some(code) if code > 128 => match signal_name(code - 128) {
            Some(name) => Some(format!("[exit code: {code} ({name})]")),
            None => Some(format!("[exit code: {code}]")),
        },
        Some(code) => Some(format!("[exit code: {code}]")),
    }
}

/// The exit code a shell would report: the code, or 128 + N for a death by signal N.
fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 128,
    }
}

/// Sends `sig` to every process in the group `pgid`.
fn kill_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) has no memory-safety preconditions; a stale group only yields ESRCH.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// Kills the process group when dropped while armed, so a call abandoned mid-run (its future
/// dropped) leaves nothing running.
struct GroupGuard {
    pgid: i32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            kill_group(self.pgid, libc::SIGKILL);
        }
    }
}

/// How the wait for the command ended.
enum End {
    /// The shell exited; `stragglers` when background processes still held the output.
    Exited {
        status: ExitStatus,
        stragglers: bool,
    },
    TimedOut,
    Cancelled,
}

/// Builds the `bash -c` command for `command` in the workspace.
fn build_command(ctx: &ToolCtx, command: &str) -> Result<tokio::process::Command, ToolError> {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .env("TMPDIR", &ctx.temp_dir);
    for name in &ctx.env_remove {
        cmd.env_remove(name);
    }
    // SAFETY: runs in the forked child before exec; dup2 is async-signal-safe and allocates
    // nothing. Sharing one pipe keeps stdout and stderr in the order they were written.
    unsafe {
        cmd.pre_exec(|| {
            if libc::dup2(1, 2) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    ctx.sandbox.apply(&mut cmd).map_err(|e| {
        ToolError(format!(
            "the sandbox could not be set up for this command: {e}"
        ))
    })?;
    Ok(cmd)
}

/// Runs `command` and turns what happened into the tool result.
async fn run_command(ctx: &ToolCtx, command: &str, timeout: u64) -> Result<ToolOutput, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new("Interrupted by the user."));
    }
    tokio::fs::create_dir_all(&ctx.temp_dir)
        .await
        .map_err(|e| {
            ToolError(format!(
                "cannot create the temp dir {}: {e}",
                ctx.temp_dir.display()
            ))
        })?;
    let mut child = build_command(ctx, command)?.spawn().map_err(|e| {
        ToolError(format!(
            "could not start bash in {}: {e}",
            ctx.workspace.display()
        ))
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .unwrap_or(0);
    let mut guard = GroupGuard { pgid, armed: true };
    let Some(mut stdout) = child.stdout.take() else {
        return Err(ToolError::new("could not capture the command's output."));
    };

    let mut out = Output::new(ctx.temp_dir.clone(), &ctx.call_id);
    let send = |chunk: String| {
        ctx.events.send(Event::ToolOutputDelta {
            call_id: ctx.call_id.clone(),
            chunk,
        })
    };
    let mut buf = vec![0u8; 32 * 1024];
    let deadline = tokio::time::sleep(Duration::from_secs(timeout));
    tokio::pin!(deadline);
    let mut status: Option<ExitStatus> = None;
    let mut eof = false;
    let mut drain_until: Option<Instant> = None;
    let end = loop {
        if eof && let Some(status) = status {
            break End::Exited {
                status,
                stragglers: false,
            };
        }
        let drain = async {
            match drain_until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break End::Cancelled,
            _ = &mut deadline => break End::TimedOut,
            read = stdout.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    if let Some(chunk) = out.push(&buf[..n]) {
                        send(chunk);
                    }
                }
            },
            waited = child.wait(), if status.is_none() => match waited {
                Ok(s) => {
                    status = Some(s);
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Err(e) => return Err(ToolError(format!("waiting for the command failed: {e}"))),
            },
            _ = drain => {
                if let Some(status) = status {
                    break End::Exited { status, stragglers: true };
                }
            }
        }
    };

    match &end {
        End::Exited {
            stragglers: false, ..
        } => {}
        _ => {
            kill_group(pgid, libc::SIGKILL);
            // Collect what was written before the kill; EOF comes once the whole group is gone.
            // An interrupt returns at once: its output is not shown to the model.
            if !eof && !matches!(end, End::Cancelled) {
                let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, async {
                    while let Ok(n) = stdout.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if let Some(chunk) = out.push(&buf[..n]) {
                            send(chunk);
                        }
                    }
                })
                .await;
            }
            if status.is_none() {
                let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            }
        }
    }
    guard.armed = false;
    if let Some(chunk) = out.flush_stream() {
        send(chunk);
    }

    let body = out.finish();
    let mut text = body
        .as_deref()
        .unwrap_or("(no output)")
        .trim_end_matches('\n')
        .to_string();
    // A command the sandbox stopped gets a note, so the model doesn't flail.
    let sandbox_note = match &end {
        End::Exited { status, .. } => ctx.sandbox.explain_failure(&text, status.code()),
        _ => None,
    };
    let mut push_line = |line: &str| {
        text.push('\n');
        text.push_str(line);
    };
    match end {
        End::Cancelled => Err(ToolError::new("Interrupted by the user.")),
        End::TimedOut => {
            push_line(&format!(
                "[timed out after {timeout}s; the command and all its child processes were killed. \
                 Narrow the command (e.g. run one test, limit the input), run long jobs in the \
                 background with output to a file, or raise timeout_secs (max {MAX_TIMEOUT_SECS}).]"
            ));
            Ok(ToolOutput::error(text))
        }
        End::Exited { status, stragglers } => {
            if let Some(line) = status_line(status) {
                push_line(&line);
            }
            if let Some(note) = sandbox_note {
                push_line(&note);
            }
            if stragglers {
                push_line(
                    "[background processes that kept the output open were stopped; to keep one \
                     running, redirect its output, e.g. `cmd > log 2>&1 &`]",
                );
            }
            Ok(ToolOutput::ok(text).with(Effect::Exited {
                code: exit_code(status),
            }))
        }
    }
}

impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Run a shell command (bash) in the workspace and get its output and exit \
                code: list and search files, run programs and tests. Each call is a new shell \
                (`cd` does not carry over) with no input; it times out after 60 s \
                (timeout_secs, up to 600). Long output is cut. Read and edit files with \
                read_file, write_file and str_replace instead. \
                Example: {\"command\": \"python3 -m unittest -q\"}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run with `bash -c`."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS, "description": "Kill the command after this many seconds (default 60)."}
                },
                "required": ["command"]
            }),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::new(
                "`command` is empty. Give the shell command to run.",
            ));
        }
        Ok(Box::new(Command {
            access: Access::Bash {
                command: args.command.clone(),
            },
            timeout: timeout_secs(args.timeout_secs, ctx.bash_timeout_secs),
            command: args.command,
        }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Exec {
            command: string_arg(args, "command"),
        }
    }
}

impl Prepared for Command {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Exec {
            command: self.command.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move { run_command(ctx, &self.command, self.timeout).await })
    }
}

#[cfg(test)]
mod tests;
