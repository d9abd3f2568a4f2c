//! Headless front end: `rein exec [--json] [--yes] [PROMPT | -]`.
//!
//! Consumes the same events as the TUI. Plain mode prints the turn's final answer on stdout
//! and everything else on stderr: one line per tool call, notices, and the text of answers the
//! turn went on from (before tool calls, or ones rein asked the model to continue after), so
//! `rein exec ... > answer.md` captures only the answer, as `codex exec` and `claude -p` do.
//! On a terminal the text is streamed as it comes instead. `--json` prints every event as a
//! JSON line on stdout.

use crate::agent::dispatch::Approver;
use crate::agent::{self, AgentOptions};
use crate::cli::{print_error, print_stderr, print_stdout};
use crate::config::Config;
use crate::protocol::{
    Event, NUDGE_NOTICE, NoticeLevel, Op, ToolDisplay, ToolStatus, TurnOutcome, retry_notice,
};
use crate::text::headline;
use std::collections::HashMap;

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
    /// A file that also gets the final answer (`-o`), written when the turn ends.
    pub last_message_file: Option<std::path::PathBuf>,
}

/// How a headless run ended (`main` maps each to its exit code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecEnd {
    /// The turn completed.
    Completed,
    /// The turn completed, but every tool call the model made was refused because it needed
    /// approval and nobody could give it (no `--yes`): the work asked for was not done.
    AllRefused,
    /// The turn failed (or the agent could not start).
    Failed,
    /// Interrupted (Ctrl+C).
    Interrupted,
}

/// Tool calls of a run, by what became of them (subagents' included). Calls a deny rule
/// blocked count as neither: `--yes` would not have changed them.
#[derive(Default)]
struct CallTally {
    /// Refused for want of approval.
    refused: usize,
    /// Ran (well or not).
    ran: usize,
}

impl CallTally {
    fn observe(&mut self, ev: &Event) {
        match ev {
            Event::ToolCallFinished { status, .. } => match status {
                ToolStatus::Denied => self.refused += 1,
                ToolStatus::Blocked => {}
                _ => self.ran += 1,
            },
            Event::Subagent { event, .. } => self.observe(event),
            _ => {}
        }
    }
}

/// Prints events for a person reading a terminal or a log.
struct PlainPrinter {
    stream_text: bool,
    /// `--yes` was not given: a refusal means nobody was asked.
    unattended: bool,
    calls: HashMap<String, ToolDisplay>,
    open_line: bool,
    saw_error: bool,
    /// Answer text not printed yet (it is printed whole when not streamed to a terminal).
    unprinted: String,
    /// The last complete answer, not printed yet: stdout's if the turn ends with it, stderr's
    /// if the turn goes on.
    held: Option<String>,
    /// The last answer printed as narration.
    narrated: Option<String>,
}

impl PlainPrinter {
    fn new(unattended: bool) -> PlainPrinter {
        PlainPrinter {
            stream_text: crate::cli::stdout_is_terminal(),
            unattended,
            calls: HashMap::new(),
            open_line: false,
            saw_error: false,
            unprinted: String::new(),
            held: None,
            narrated: None,
        }
    }

    /// The turn went on after the held answer: it was narration, printed with the tool lines.
    /// An answer repeated word for word (a small model sent back often repeats itself) is
    /// named, not printed again.
    fn narrate_held(&mut self) {
        if let Some(text) = self.held.take() {
            if self.narrated.as_deref() == Some(text.as_str()) {
                self.err("(the same answer as above)");
            } else {
                self.err(text.trim_end());
                self.narrated = Some(text);
            }
        }
    }

    /// The turn ended: the held answer is the final one.
    fn finish(&mut self) {
        if let Some(text) = self.held.take() {
            self.out(&text);
            if self.open_line {
                self.out("\n");
            }
        }
    }

    /// The turn was interrupted: what the model had written is printed, then how to go on.
    fn interrupted(&mut self, session_id: Option<&str>) {
        let partial = std::mem::take(&mut self.unprinted);
        if !partial.is_empty() {
            self.narrate_held();
            self.out(&partial);
        }
        self.finish();
        self.err("interrupted");
        print_stderr(&format!(
            "{}
",
            continue_hint(session_id)
        ));
    }

    /// Everything goes through the one sanitizer, a piece at a time (it needs no state, so an
    /// escape split over two deltas is shown like a whole one).
    fn out(&mut self, text: &str) {
        let _ = print_stdout(text);
        if !text.is_empty() {
            self.open_line = !text.ends_with('\n');
        }
    }

    fn err(&mut self, line: &str) {
        if self.open_line {
            self.out("\n");
        }
        print_stderr(&format!("{line}\n"));
    }

    fn event(&mut self, ev: &Event, indent: &str) {
        match ev {
            Event::AssistantDelta { text } if self.stream_text && indent.is_empty() => {
                self.out(text)
            }
            Event::AssistantDelta { text } if indent.is_empty() => self.unprinted.push_str(text),
            Event::AssistantMessage { text } if indent.is_empty() => {
                self.unprinted.clear();
                if self.stream_text {
                    if self.open_line {
                        self.out("\n");
                    }
                } else if !text.trim().is_empty() {
                    self.narrate_held();
                    self.held = Some(text.clone());
                }
            }
            Event::ToolCallStarted { call_id, display } => {
                if indent.is_empty() {
                    self.narrate_held();
                }
                self.calls.insert(call_id.clone(), display.clone());
            }
            Event::TurnFinished { outcome } if *outcome != TurnOutcome::Interrupted => {
                self.finish()
            }
            Event::Notice {
                level: NoticeLevel::Info,
                text,
            } if indent.is_empty() && text.starts_with(NUDGE_NOTICE) => {
                self.narrate_held();
                self.err(text);
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
                let verdict = verdict(*status, *exit_code, output, self.unattended);
                self.err(&format!("{indent}• {label}  {subject}  → {verdict}"));
            }
            Event::SubagentStarted { description, .. } => {
                if indent.is_empty() {
                    self.narrate_held();
                }
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
                let notice = retry_notice(*attempt, *max_attempts, *delay_ms, reason);
                self.err(&format!("{indent}{notice}"));
            }
            Event::Notice {
                level: NoticeLevel::Error,
                text,
            } => {
                self.saw_error = true;
                self.err(&format!("{indent}error: {text}"));
            }
            Event::Notice {
                level: NoticeLevel::Warn,
                text,
            } => self.err(&format!("{indent}warning: {text}")),
            Event::Notice { text, .. } | Event::ModelQuirk { text, .. } => {
                self.err(&format!("{indent}{text}"))
            }
            // The labels' names are already one visible line (`images::display_name`).
            Event::ImagesAttached { labels } => {
                for label in labels {
                    self.err(&format!("{indent}{label}"));
                }
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
/// `unattended`: without `--yes` a refusal means nobody was asked, and says so.
fn verdict(status: ToolStatus, exit_code: Option<i32>, output: &str, unattended: bool) -> String {
    // The first line, marked `…` when it was cut or more lines follow.
    let first = headline(output, 160);
    match (status, exit_code) {
        (ToolStatus::Ok, None | Some(0)) => "ok".to_string(),
        (ToolStatus::Ok, Some(code)) => format!("exit {code}"),
        (ToolStatus::Blocked, _) => format!("blocked: {first}"),
        (ToolStatus::Denied, _) if unattended => match approval_reason(output) {
            Some(why) => {
                format!("refused: it needs approval ({why}) and nobody was asked (no --yes)")
            }
            None => "refused: it needs approval and nobody was asked (no --yes)".into(),
        },
        (ToolStatus::Denied, _) => format!("denied: {first}"),
        // Its output is what it printed until then, not a reason.
        (ToolStatus::Interrupted, _) => "interrupted".to_string(),
        // The model's copy starts "Error: "; the line says it once.
        (ToolStatus::Error, _) => {
            format!("error: {}", first.strip_prefix("Error: ").unwrap_or(&first))
        }
    }
}

/// How to go on with an interrupted run.
fn continue_hint(session_id: Option<&str>) -> String {
    let latest = "rein exec --continue \"…\" (the latest session here)";
    match session_id.filter(|id| !id.is_empty()) {
        Some(id) => format!("To continue: rein exec -r {id} \"…\", or {latest}."),
        None => format!("To continue: {latest}."),
    }
}

/// Why a refused call needed approval, from the refusal the model got
/// ("… needs approval (bash: rm -rf x), but …").
fn approval_reason(output: &str) -> Option<String> {
    let start = output.find("needs approval (")? + "needs approval (".len();
    let len = output[start..].find("), but")?;
    Some(headline(&output[start..start + len], 160))
}

/// The op for the prompt: `/name args` runs a command (custom or `/init`) when `name` looks
/// like one (`/etc/hosts …` does not); `//text` sends `/text`; anything else is the message.
fn prompt_op(prompt: &str) -> Op {
    let trimmed = prompt.trim_start();
    if let Some(escaped) = trimmed.strip_prefix("//") {
        return Op::UserInput {
            text: format!("/{escaped}"),
        };
    }
    if let Some(line) = trimmed.strip_prefix('/') {
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if crate::commands::is_command_name(name) {
            return Op::RunCommand {
                name: name.to_string(),
                args: args.trim().to_string(),
            };
        }
    }
    Op::UserInput {
        text: prompt.to_string(),
    }
}

/// Runs one prompt to completion.
pub async fn run(config: Config, opts: ExecOptions) -> ExecEnd {
    let mut last_message = String::new();
    let end = match start(config, &opts) {
        Some(handle) => drive(handle, &opts, &mut last_message).await,
        None => ExecEnd::Failed,
    };
    match &opts.last_message_file {
        Some(path) => write_last_message(path, &last_message, end),
        None => end,
    }
}

/// The signals that stop a headless run: Ctrl+C, and `SIGTERM` and `SIGHUP` (`timeout`, a
/// closed terminal, a dropped ssh). Each interrupts the turn like Ctrl+C, so the running
/// command is stopped and every check after it runs before rein exits (dying at once would
/// leave the command running unsupervised and unchecked).
struct StopSignals(Vec<tokio::signal::unix::Signal>);

impl StopSignals {
    fn new() -> StopSignals {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ];
        StopSignals(kinds.into_iter().filter_map(|k| signal(k).ok()).collect())
    }

    /// Waits for the next of them.
    async fn recv(&mut self) {
        if self.0.is_empty() {
            return std::future::pending().await;
        }
        let each = self.0.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(each).await;
    }
}

/// Shows the agent's events until its turn ends; `last_message` keeps its last answer.
async fn drive(
    mut handle: agent::AgentHandle,
    opts: &ExecOptions,
    last_message: &mut String,
) -> ExecEnd {
    let mut printer = PlainPrinter::new(!opts.yes);
    let mut tally = CallTally::default();
    let mut interrupted_by_signal = false;
    let mut session_id: Option<String> = None;
    let mut stop = StopSignals::new();
    loop {
        let event = tokio::select! {
            ev = handle.events.recv() => ev,
            _ = stop.recv(), if !interrupted_by_signal => {
                interrupted_by_signal = true;
                let _ = handle.ops.send(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else {
            if !printer.saw_error {
                print_error("the agent stopped unexpectedly");
            }
            return ExecEnd::Failed;
        };
        tally.observe(&event);
        match &event {
            Event::SessionConfigured(info) => session_id = Some(info.session_id.clone()),
            Event::AssistantMessage { text } if !text.trim().is_empty() => {
                *last_message = text.clone();
            }
            _ => {}
        }
        show(&event, opts.json, &mut printer);
        if let Event::TurnFinished { outcome } = event {
            let _ = handle.ops.send(Op::Shutdown);
            // Let the agent finish writing (session file, temp dir) before the process ends.
            let drain = async { while handle.events.recv().await.is_some() {} };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
            let interrupted = interrupted_by_signal || outcome == TurnOutcome::Interrupted;
            if interrupted {
                match opts.json {
                    true => print_stderr(&format!("{}\n", continue_hint(session_id.as_deref()))),
                    false => printer.interrupted(session_id.as_deref()),
                }
            }
            return end_of(outcome, interrupted_by_signal, &tally, opts.yes);
        }
    }
}

/// Writes the final answer (as stdout shows it, with a last newline; empty when there was
/// none, so an old file does not pass for this run's) to `path` for `-o`; a file that cannot
/// be written fails the run.
fn write_last_message(path: &std::path::Path, text: &str, end: ExecEnd) -> ExecEnd {
    let mut text = crate::sanitize::visible(text).into_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match std::fs::write(path, text) {
        Ok(()) => end,
        Err(e) => {
            print_error(&format!(
                "cannot write the answer to {}: {e}",
                path.display()
            ));
            ExecEnd::Failed
        }
    }
}

/// Starts the agent and sends it the prompt; `None` (the reason printed) when it cannot.
fn start(config: Config, opts: &ExecOptions) -> Option<agent::AgentHandle> {
    let approver = if opts.yes {
        Approver::ApproveAll
    } else {
        Approver::RefuseAll
    };
    let mut agent_opts = AgentOptions::new(config, approver);
    agent_opts.session = opts.session.clone();
    // Headless: the one prompt should see the MCP tools, so the first request waits for them.
    agent_opts.mcp_wait = true;
    let handle = match agent::spawn(agent_opts) {
        Ok(h) => h,
        Err(e) => {
            print_error(&format!("cannot start: {e:#}"));
            return None;
        }
    };
    // An agent that could not be built has already sent why and ended (so this send fails):
    // its events say it as for one that ends a moment later.
    let _ = handle.ops.send(prompt_op(&opts.prompt));
    Some(handle)
}

/// Prints one event: a JSON line with `--json`, else as text.
fn show(event: &Event, json: bool, printer: &mut PlainPrinter) {
    if json {
        match serde_json::to_string(&JsonLine::of(event)) {
            // JSON escapes C0 but not DEL, C1 or bidi overrides: those become `\uXXXX`.
            Ok(line) => {
                let _ = print_stdout(&format!("{}\n", crate::sanitize::json_safe(&line)));
            }
            Err(e) => tracing::error!("cannot serialise event: {e}"),
        }
    } else {
        printer.event(event, "");
    }
}

/// What `--json` prints for an event: the event itself, except that an error notice keeps the
/// line it had when errors were an event of their own, `{"type":"error","message":…}`, which
/// scripts match on (also inside a subagent's event). A replayed history is left as it is: its
/// errors were notices already.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum JsonLine<'a> {
    Error {
        r#type: &'static str,
        message: &'a str,
    },
    Subagent {
        r#type: &'static str,
        task_id: &'a str,
        event: Box<JsonLine<'a>>,
    },
    Event(&'a Event),
}

impl<'a> JsonLine<'a> {
    fn of(event: &'a Event) -> JsonLine<'a> {
        match event {
            Event::Notice {
                level: NoticeLevel::Error,
                text,
            } => JsonLine::Error {
                r#type: "error",
                message: text,
            },
            Event::Subagent { task_id, event } => JsonLine::Subagent {
                r#type: "subagent",
                task_id,
                event: Box::new(JsonLine::of(event)),
            },
            _ => JsonLine::Event(event),
        }
    }
}

/// How the run ends after its turn finished with `outcome`; says what was refused unasked.
fn end_of(outcome: TurnOutcome, by_signal: bool, tally: &CallTally, yes: bool) -> ExecEnd {
    if tally.refused > 0 && !yes {
        print_error(&format!(
            "{} action{} refused: {} approval and nobody was asked (no --yes). Run \
             again with --yes to approve what asks, or allow it with a rule \
             ([[rules]] in config.toml; `rein policy check` shows the verdict).",
            tally.refused,
            if tally.refused == 1 { " was" } else { "s were" },
            if tally.refused == 1 {
                "it needs"
            } else {
                "they need"
            },
        ));
    }
    match outcome {
        _ if by_signal => ExecEnd::Interrupted,
        TurnOutcome::Completed if tally.refused > 0 && tally.ran == 0 => ExecEnd::AllRefused,
        TurnOutcome::Completed => ExecEnd::Completed,
        TurnOutcome::Interrupted => ExecEnd::Interrupted,
        TurnOutcome::Failed { reason } => {
            print_error(&reason);
            ExecEnd::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(event: &Event) -> serde_json::Value {
        serde_json::to_value(JsonLine::of(event)).unwrap()
    }

    #[test]
    fn an_error_notice_keeps_the_json_line_scripts_read() {
        let line = serde_json::to_string(&JsonLine::of(&Event::error("boom"))).unwrap();
        assert_eq!(line, r#"{"type":"error","message":"boom"}"#);
        let nested = Event::Subagent {
            task_id: "call_1".into(),
            event: Box::new(Event::error("boom")),
        };
        assert_eq!(
            json(&nested),
            serde_json::json!({"type": "subagent", "task_id": "call_1",
                "event": {"type": "error", "message": "boom"}})
        );
        // Any other notice is printed as the event it is.
        assert_eq!(
            json(&Event::notice("hi")),
            serde_json::json!({"type": "notice", "level": "info", "text": "hi"})
        );
    }

    #[test]
    fn a_failed_call_says_error_once() {
        let line = verdict(
            ToolStatus::Error,
            None,
            "Error: old_str was not found in a.py.\nmore",
            true,
        );
        assert_eq!(line, "error: old_str was not found in a.py. …");
    }

    #[test]
    fn only_an_error_notice_counts_as_the_reason_for_a_stop() {
        let mut printer = PlainPrinter::new(true);
        printer.event(&Event::notice("Error: only a word here"), "");
        assert!(!printer.saw_error);
        printer.event(&Event::error("cannot start: no temp dir"), "");
        assert!(printer.saw_error);
    }
}
