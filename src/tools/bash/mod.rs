//! `bash`: run a command line in the workspace, in its own process group, with a timeout,
//! live output, and a bounded result.

pub(crate) mod output;

use super::task::string_arg;
use super::{
    Access, Effect, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args,
};
use crate::llm::ToolSpec;
use crate::protocol::{Event, ToolDisplay};
use crate::sandbox::{ChildIo, Finished, SpawnError, Stderr, Supervised};
use output::Output;
use serde::Deserialize;
use serde_json::{Value, json};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// Longest timeout a call may ask for, in seconds.
const MAX_TIMEOUT_SECS: u64 = 600;
/// How long to keep reading after the command ended (its processes are gone by then; this
/// only bounds the unforeseen).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);
/// How long to wait for a stopped command's supervisor to exit.
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

/// How the wait for the command ended.
enum End {
    /// The command and everything it started are gone.
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Builds the `bash -c` command for `command` in the workspace (bash from a trusted place:
/// never a relative `PATH` entry or a directory commands may write).
fn build_command(ctx: &ToolCtx, command: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(ctx.sandbox.program("bash"));
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.workspace)
        .env("TMPDIR", &ctx.temp_dir);
    for name in &ctx.env_remove {
        cmd.env_remove(name);
    }
    cmd
}

/// Starts `command` under the sandbox. Its stderr shares the stdout pipe, which keeps the two
/// in the order they were written.
fn start(ctx: &ToolCtx, command: &str) -> Result<Supervised, ToolError> {
    let io = ChildIo {
        stdin: false,
        stderr: Stderr::Stdout,
    };
    ctx.sandbox
        .spawn(&mut build_command(ctx, command), io)
        .map_err(|e| match e {
            SpawnError::Sandbox(e) => ToolError(format!(
                "the sandbox could not be set up for this command: {e}"
            )),
            SpawnError::Start(e) => ToolError(format!(
                "could not start bash in {}: {e}",
                ctx.workspace.display()
            )),
        })
}

/// Stops a command that is still running: the supervisor kills everything it started; if
/// it does not exit in time, it is killed too.
async fn stop(running: &mut Supervised) -> ExitStatus {
    running.stop();
    if let Ok(Ok(status)) = tokio::time::timeout(REAP_WAIT, running.exited()).await {
        return status;
    }
    running.kill();
    match tokio::time::timeout(REAP_WAIT, running.exited()).await {
        Ok(Ok(status)) => status,
        _ => ExitStatus::from_raw(libc::SIGKILL),
    }
}

/// The note an interrupted command's output ends with.
pub const INTERRUPTED_NOTE: &str =
    "[interrupted by the user; the command and all its child processes were stopped]";

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
    let mut running = start(ctx, command)?;
    let Some(stdout) = running.stdout.take() else {
        return Err(ToolError::new("could not capture the command's output."));
    };
    let mut stream = Streaming {
        ctx,
        stdout,
        out: Output::new(ctx.temp_dir.clone(), &ctx.call_id),
        buf: vec![0u8; 32 * 1024],
        eof: false,
    };
    let end = watch(&mut running, &mut stream, timeout).await?;
    let status = match end {
        End::Exited(status) => status,
        _ => {
            let status = stop(&mut running).await;
            // Collect what was written before the stop. An interrupt returns at once: its
            // output is not shown to the model.
            if !stream.eof && !matches!(end, End::Cancelled) {
                let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, stream.drain()).await;
            }
            status
        }
    };
    let finished = running.finish(status);
    let mut out = stream.out;
    if let Some(chunk) = out.flush_stream() {
        send_chunk(ctx, chunk);
    }
    if let Some(e) = &finished.setup_error {
        return Err(ToolError(format!(
            "the sandbox could not be set up for this command: {e}"
        )));
    }
    result(ctx, out, &end, &finished, timeout)
}

/// Shows a chunk of the command's output live.
fn send_chunk(ctx: &ToolCtx, chunk: String) {
    ctx.events.send(Event::ToolOutputDelta {
        call_id: ctx.call_id.clone(),
        chunk,
    })
}

/// A command's output as it streams: kept (and saved when long) and shown chunk by chunk.
struct Streaming<'a> {
    ctx: &'a ToolCtx,
    stdout: tokio::net::unix::pipe::Receiver,
    out: Output,
    buf: Vec<u8>,
    eof: bool,
}

impl Streaming<'_> {
    /// Takes in the `n` bytes just read.
    fn take(&mut self, n: usize) {
        if let Some(chunk) = self.out.push(&self.buf[..n]) {
            send_chunk(self.ctx, chunk);
        }
    }

    /// Reads until end-of-file (bounded by the caller).
    async fn drain(&mut self) {
        while let Ok(n) = self.stdout.read(&mut self.buf).await {
            if n == 0 {
                break;
            }
            self.take(n);
        }
    }
}

/// Streams the output until the command exits (and its output ends), is interrupted or
/// times out.
async fn watch(
    running: &mut Supervised,
    stream: &mut Streaming<'_>,
    timeout: u64,
) -> Result<End, ToolError> {
    let deadline = tokio::time::sleep(Duration::from_secs(timeout));
    tokio::pin!(deadline);
    let cancel = stream.ctx.cancel.clone();
    let mut status: Option<ExitStatus> = None;
    // The supervisor exits only once every process of the command is gone, so the output
    // reaches end-of-file right after; the limit guards against the unforeseen.
    let mut drain_until: Option<Instant> = None;
    loop {
        if let Some(status) = status
            && (stream.eof || drain_until.is_some_and(|t| Instant::now() >= t))
        {
            return Ok(End::Exited(status));
        }
        let drain = async {
            match drain_until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if status.is_none() => return Ok(End::Cancelled),
            _ = &mut deadline, if status.is_none() => return Ok(End::TimedOut),
            read = stream.stdout.read(&mut stream.buf), if !stream.eof => match read {
                Ok(0) | Err(_) => stream.eof = true,
                Ok(n) => stream.take(n),
            },
            waited = running.exited(), if status.is_none() => match waited {
                Ok(s) => {
                    status = Some(s);
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Err(e) => return Err(ToolError(format!("waiting for the command failed: {e}"))),
            },
            _ = drain => {}
        }
    }
}

/// The tool result for a command that ran.
fn result(
    ctx: &ToolCtx,
    out: Output,
    end: &End,
    finished: &Finished,
    timeout: u64,
) -> Result<ToolOutput, ToolError> {
    let body = out.finish();
    let mut text = body
        .as_deref()
        .unwrap_or("(no output)")
        .trim_end_matches('\n')
        .to_string();
    let mut lines: Vec<String> = Vec::new();
    match end {
        // What ran stays: the person watched it stream, and the model gets the same.
        End::Cancelled => {
            text.push_str(&format!("\n{INTERRUPTED_NOTE}"));
            return Ok(ToolOutput::ok(text).with(Effect::Interrupted));
        }
        End::TimedOut => lines.push(format!(
            "[timed out after {timeout}s; the command and all its child processes were killed. \
             Narrow the command (e.g. run one test, limit the input), run long jobs in the \
             background with output to a file, or raise timeout_secs (max {MAX_TIMEOUT_SECS}).]"
        )),
        End::Exited(_) => {
            lines.extend(status_line(finished.status));
            // A command the sandbox stopped gets a note, so the model doesn't flail.
            lines.extend(ctx.sandbox.explain_failure(&text, finished.status.code()));
            lines.extend(not_executable_note(
                &text,
                finished.status.code(),
                &ctx.workspace,
            ));
            lines.extend(finished.killed_note());
        }
    }
    lines.extend(finished.notes.iter().cloned());
    for line in lines {
        text.push('\n');
        text.push_str(&line);
    }
    Ok(match end {
        End::TimedOut => ToolOutput::error(text),
        _ => ToolOutput::ok(text).with(Effect::Exited {
            code: exit_code(finished.status),
        }),
    })
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

    /// The stop is bounded: the supervisor kills everything, then a kill after `REAP_WAIT`.
    fn stops_itself(&self) -> bool {
        true
    }
}

/// What to do about a workspace script run as `./script` without its execute bit (exit 126):
/// `chmod` is not allowed, so the model should not try it (a model went round in circles).
fn not_executable_note(
    output: &str,
    code: Option<i32>,
    workspace: &std::path::Path,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    if code != Some(126) {
        return None;
    }
    let workspace = workspace.canonicalize().ok()?;
    output.lines().find_map(|line| {
        let word =
            crate::sandbox::refused_path(line).filter(|_| line.contains("Permission denied"))?;
        let path = workspace.join(word);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let inside = path.canonicalize().ok()?.starts_with(&workspace);
        (inside && meta.is_file() && meta.permissions().mode() & 0o111 == 0).then(|| {
            let name = crate::sanitize::visible_line(word.trim_start_matches("./"));
            format!(
                "[rein] {name} is not executable, and chmod is not allowed here. Run it through \
                 its interpreter (`bash {name}`, `python3 {name}`); to make it executable, write \
                 it with write_file starting with a `#!` line (e.g. `#!/usr/bin/env bash`)."
            )
        })
    })
}

#[cfg(test)]
mod tests;
