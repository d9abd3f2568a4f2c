//! Headless front end: `rein exec [--json] [--yes] [PROMPT | -]`.
//!
//! Consumes the same events as the TUI. Plain mode prints the assistant's text on stdout and
//! one line per tool call (plus notices) on stderr, so `rein exec ... > answer.md` captures only
//! the answer; `--json` prints every event as a JSON line on stdout instead.

use crate::agent::dispatch::Approver;
use crate::agent::{self, AgentOptions};
use crate::config::Config;
use crate::protocol::{Event, Op, ToolDisplay, ToolStatus, TurnOutcome};
use crate::text::headline;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};

/// What `rein exec` was asked to do.
#[derive(Clone, Debug)]
pub struct ExecOptions {
    /// Print events as JSON lines.
    pub json: bool,
    /// Approve every `ask` (denies stay denied).
    pub yes: bool,
    /// The prompt.
    pub prompt: String,
    /// New or resumed session.
    pub session: crate::agent::journal::SessionStart,
}

/// Exit code when the turn completed.
pub const EXIT_OK: i32 = 0;
/// Exit code when the turn failed.
pub const EXIT_FAILED: i32 = 1;
/// Exit code after SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Prints events for a person reading a terminal or a log.
struct PlainPrinter {
    stream_text: bool,
    calls: HashMap<String, ToolDisplay>,
    open_line: bool,
    saw_error: bool,
}

impl PlainPrinter {
    fn new() -> PlainPrinter {
        PlainPrinter {
            stream_text: std::io::stdout().is_terminal(),
            calls: HashMap::new(),
            open_line: false,
            saw_error: false,
        }
    }

    fn out(&mut self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        if !text.is_empty() {
            self.open_line = !text.ends_with('\n');
        }
    }

    fn err(&mut self, line: &str) {
        if self.open_line {
            self.out("\n");
        }
        eprintln!("{line}");
    }

    fn event(&mut self, ev: &Event, indent: &str) {
        match ev {
            Event::AssistantDelta { text } if self.stream_text && indent.is_empty() => {
                self.out(text)
            }
            Event::AssistantMessage { text } if indent.is_empty() => {
                if !self.stream_text && !text.is_empty() {
                    self.out(text);
                }
                if self.open_line {
                    self.out("\n");
                }
            }
            Event::ToolCallStarted { call_id, display } => {
                self.calls.insert(call_id.clone(), display.clone());
            }
            Event::ToolCallFinished {
                call_id,
                status,
                output,
                exit_code,
                ..
            } => {
                let (label, subject) = match self.calls.remove(call_id) {
                    Some(d) => (d.label().to_string(), d.subject()),
                    None => (String::new(), String::new()),
                };
                let verdict = verdict(*status, *exit_code, output);
                self.err(&format!("{indent}• {label}  {subject}  → {verdict}"));
            }
            Event::SubagentStarted { description, .. } => {
                self.err(&format!(
                    "{indent}• subagent: {}",
                    headline(description, 100)
                ));
            }
            Event::Subagent { event, .. } => {
                let nested = format!("{indent}    ");
                self.event(event, &nested);
            }
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                self.err(&format!(
                    "{indent}retrying in {:.1} s (attempt {attempt} of {max_attempts}): {reason}",
                    *delay_ms as f64 / 1000.0
                ));
            }
            Event::Notice { text } => self.err(&format!("{indent}{text}")),
            Event::Error { message } => {
                self.saw_error = true;
                self.err(&format!("{indent}error: {message}"));
            }
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => self.err(&format!(
                "context compacted: {before_tokens} → {after_tokens} tokens"
            )),
            _ => {}
        }
    }
}

/// How a finished call is summed up: `ok`, `exit 1`, `error: …` (with the output's first line).
fn verdict(status: ToolStatus, exit_code: Option<i32>, output: &str) -> String {
    // The first line, marked `…` when it was cut or more lines follow.
    let first = headline(output, 160);
    match (status, exit_code) {
        (ToolStatus::Ok, None | Some(0)) => "ok".to_string(),
        (ToolStatus::Ok, Some(code)) => format!("exit {code}"),
        (ToolStatus::Blocked, _) => format!("blocked: {first}"),
        (ToolStatus::Denied, _) => format!("denied: {first}"),
        (ToolStatus::Interrupted, _) => format!("interrupted: {first}"),
        (ToolStatus::Error, _) => format!("error: {first}"),
    }
}

/// Runs one prompt to completion and returns the process exit code.
pub async fn run(config: Config, opts: ExecOptions) -> i32 {
    let approver = if opts.yes {
        Approver::ApproveAll
    } else {
        Approver::RefuseAll
    };
    let mut agent_opts = AgentOptions::new(config, approver);
    agent_opts.session = opts.session.clone();
    let mut handle = match agent::spawn(agent_opts) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("rein: cannot start: {e:#}");
            return EXIT_FAILED;
        }
    };
    if handle
        .ops
        .send(Op::UserInput {
            text: opts.prompt.clone(),
        })
        .is_err()
    {
        eprintln!("rein: the agent stopped before it could start");
        return EXIT_FAILED;
    }
    let mut printer = PlainPrinter::new();
    let mut interrupted_by_signal = false;
    let mut sigint = Box::pin(tokio::signal::ctrl_c());
    loop {
        let event = tokio::select! {
            ev = handle.events.recv() => ev,
            _ = &mut sigint, if !interrupted_by_signal => {
                interrupted_by_signal = true;
                let _ = handle.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else {
            if !printer.saw_error {
                eprintln!("rein: the agent stopped unexpectedly");
            }
            return EXIT_FAILED;
        };
        if opts.json {
            match serde_json::to_string(&event) {
                Ok(line) => {
                    let mut stdout = std::io::stdout().lock();
                    let _ = writeln!(stdout, "{line}");
                    let _ = stdout.flush();
                }
                Err(e) => tracing::error!("cannot serialise event: {e}"),
            }
        } else {
            printer.event(&event, "");
        }
        if let Event::TurnFinished { outcome } = event {
            let _ = handle.ops.send(Op::Shutdown);
            // Let the agent finish writing (session file, temp dir) before the process ends.
            let drain = async { while handle.events.recv().await.is_some() {} };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
            return match outcome {
                _ if interrupted_by_signal => EXIT_INTERRUPTED,
                TurnOutcome::Completed => EXIT_OK,
                TurnOutcome::Interrupted => EXIT_INTERRUPTED,
                TurnOutcome::Failed { reason } => {
                    eprintln!("rein: {reason}");
                    EXIT_FAILED
                }
            };
        }
    }
}
