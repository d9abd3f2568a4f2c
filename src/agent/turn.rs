//! The inner loop: call the model, run the tools it asks for, append the results, repeat until
//! it stops asking (or loop detection, the request cap when one is set, an interrupt or an
//! error ends it).

mod small_model;

use small_model::{edited_path, last_todos};

use super::context;
use super::dispatch::{CallResult, Dispatcher, INTERRUPTED, Preparation};
use super::loop_guard::{LoopGuard, Verdict};
use super::repair::{self, Quirk};
use super::repeating::{self, RepeatWatch};
use crate::llm::ToolCall;
use crate::llm::{
    AssistantPart, Client, HistoryMark, LlmError, Message, Request, Response, StreamNotice,
};
use crate::protocol::EventSink;
use crate::protocol::{Event, QuirkKind, ToolStatus};
use crate::tools::ToolCtx;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// What distinguishes one loop from another (main agent vs subagent).
pub struct LoopConfig {
    /// System prompt.
    pub system: String,
    /// Model requests allowed for one user message (`None`: no cap; loop detection ends a
    /// run that goes round in circles).
    pub max_requests: Option<u32>,
    /// Tool results sent in full (older ones are micro-compacted); `None` disables it.
    pub keep_tool_results: Option<usize>,
    /// Output token cap per request.
    pub max_tokens: u32,
    /// Aids for a small model (`small_model`).
    pub aids: crate::config::ModelAids,
}

/// How a run of the loop ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoopEnd {
    /// The model stopped asking for tools.
    Completed,
    /// Cancelled.
    Interrupted,
    /// A request failed for good.
    Failed(String),
    /// `max_requests` requests were made and the model still wanted tools.
    RequestCap,
    /// Loop detection ended the run; the text says why.
    Looped(String),
}

/// Hooks the main agent uses for persistence, accounting and reminders; subagents use defaults.
pub trait TurnHooks: Send {
    /// A message was appended to the history.
    fn appended(&mut self, _msg: &Message) {}
    /// A tool result was appended; `result` is how the call went (its display, exit code,
    /// the todo list it set).
    fn tool_result(&mut self, msg: &Message, _result: &CallResult) {
        self.appended(msg);
    }
    /// Text appended at the end of the request (never stored), e.g. the todo reminder.
    fn reminder(&mut self) -> Option<String> {
        None
    }
    /// The provider's usage for the last request, and the history length it covered.
    fn usage(&mut self, _input: u64, _output: u64, _history_len: usize) {}
    /// Index of the first message that micro-compaction may rewrite.
    fn frozen_prefix(&self) -> usize {
        0
    }
    /// Called after the results of one response's tool calls were appended.
    fn after_tools(&mut self) {}
    /// The turn was interrupted while the model was writing this answer (never stored as a
    /// message).
    fn interrupted_answer(&mut self, _text: String) {}
    /// The harness repaired something in an answer (for the session file).
    fn quirk(&mut self, _quirk: &Quirk) {}
    /// Called before each request (`keep` is the loop's micro-compaction setting); may replace
    /// the history (auto-compaction), and then says so (true).
    fn before_request<'a>(
        &'a mut self,
        _history: &'a mut Vec<Message>,
        _keep: Option<usize>,
    ) -> futures::future::BoxFuture<'a, bool> {
        Box::pin(async { false })
    }
}

/// Hooks that do nothing.
pub struct NoHooks;
impl TurnHooks for NoHooks {}

/// Everything one run of the loop needs.
pub struct TurnEnv<'a> {
    /// The model client.
    pub client: &'a Client,
    /// Current model name.
    pub model: &'a RwLock<String>,
    /// Tool dispatch.
    pub dispatcher: &'a Dispatcher,
    /// Template context for tool calls (call id is filled in per call).
    pub ctx: ToolCtx,
    /// Per-loop settings.
    pub lc: &'a LoopConfig,
}

fn read_model(model: &RwLock<String>) -> String {
    crate::sync::read(model).clone()
}

/// Nudges for calls written as text to tools that do not exist, per run of the loop: a model
/// that keeps doing it is answering in text after all.
const MAX_NUDGES: u32 = 2;

/// What rein says when the answer after tool results is empty (small models stop like that
/// mid-task); sent once per run of the loop.
const EMPTY_NUDGE: &str = "[rein] Your last answer was empty. If the task is not finished, \
    continue it with the tools; if it is, say in a sentence what you did.";

/// What rein says when it stopped an answer that kept repeating itself; sent once per run of
/// the loop (a second one ends it).
const REPEAT_NUDGE: &str = "[rein] Your answer kept repeating the same text, so it was \
    stopped. Do the next step of the task now with one tool call, or say in a sentence what \
    you did if it is finished.";

/// How a request ended without a response to take.
enum Failed {
    /// The loop ends (interrupted, or the request failed), with the text streamed so far.
    End(LoopEnd, String),
    /// The answer kept repeating itself and was stopped: its text up to the first repeat.
    Repeating(String),
}

/// The answer's parts, with a refusal shown as text.
fn answer_parts(response: &Response) -> Vec<AssistantPart> {
    let mut parts = response.parts.clone();
    if let Some(refusal) = response.refusal.as_ref().filter(|r| !r.is_empty()) {
        parts.push(AssistantPart::Text {
            text: refusal.clone(),
        });
    }
    parts
}

impl TurnEnv<'_> {
    fn events(&self) -> &EventSink {
        &self.ctx.events
    }

    fn cancel(&self) -> &CancellationToken {
        &self.ctx.cancel
    }

    /// Runs the loop on `history` (which already ends with the user's message).
    pub async fn run(&self, history: &mut Vec<Message>, hooks: &mut dyn TurnHooks) -> LoopEnd {
        let mut st = RunState::default();
        if let Some(end) = self.read_named_files(history, &mut st, hooks).await {
            return end;
        }
        loop {
            if self.lc.max_requests.is_some_and(|cap| st.requests >= cap) {
                return LoopEnd::RequestCap;
            }
            st.requests += 1;
            if self.cancel().is_cancelled() {
                return LoopEnd::Interrupted;
            }
            if hooks
                .before_request(history, self.lc.keep_tool_results)
                .await
            {
                st.synced.reset();
            }
            if self.cancel().is_cancelled() {
                return LoopEnd::Interrupted;
            }
            let mut request = self.next_request(history, &mut st, hooks);
            let response = self.request(&request).await;
            st.sent = std::mem::take(&mut request.messages);
            let response = match response {
                Ok(r) => r,
                Err(Failed::Repeating(kept)) => {
                    match self.stopped_repeating(kept, history, &mut st, hooks) {
                        Some(end) => return end,
                        None => continue,
                    }
                }
                Err(Failed::End(end, partial)) => {
                    if end == LoopEnd::Interrupted && !partial.is_empty() {
                        hooks.interrupted_answer(partial);
                    }
                    return end;
                }
            };
            let (calls, truncated) =
                match self.take_answer(&request, &response, history, &mut st, hooks) {
                    Next::Again => continue,
                    Next::End(end) => return end,
                    Next::Run(calls) => (calls, response.truncated()),
                };
            if let Some(end) = self
                .run_and_record(&calls, truncated, history, &mut st, hooks)
                .await
            {
                return end;
            }
        }
    }

    /// The next request: the history's copy brought up to date (micro-compacted), the
    /// reminder, and the tools offered (fewer, and the call forced, for a small model).
    fn next_request(
        &self,
        history: &[Message],
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Request {
        // The copy sent is kept between requests and brought up to date, not rebuilt.
        let mut messages = std::mem::take(&mut st.sent);
        let (keep, frozen) = match self.lc.keep_tool_results {
            Some(keep) => (keep, hooks.frozen_prefix()),
            // Nothing is compacted: the same update with nothing old enough.
            None => (usize::MAX, 0),
        };
        let unchanged =
            context::micro_compact_into(&mut messages, history, keep, frozen, &mut st.synced);
        let mark = st.mark(unchanged);
        let reminder = if std::mem::take(&mut st.without_reminder) {
            None
        } else {
            hooks.reminder()
        };
        let aids = self.lc.aids;
        let mut tools = self.dispatcher.specs();
        let task = task_message(history).unwrap_or_default();
        if aids.tools {
            tools = super::aids::small_tools(super::aids::without_examples(tools), task);
        }
        // A small model's first answer is an action, not a plan in prose: a look at the
        // workspace (it wrote over files it had never seen when it could write at once).
        let first = aids.first_call && st.requests == 1;
        if first {
            tools = super::aids::look_tools(tools, task);
        }
        // After a nudge the answer must be a call: the 1.5B model answered a nudge in
        // text by repeating its claim word for word.
        let force_tool = first || std::mem::take(&mut st.force_next);
        Request {
            model: read_model(self.model),
            system: self.lc.system.clone(),
            messages,
            force_tool: force_tool && !tools.is_empty(),
            tools,
            max_tokens: self.lc.max_tokens,
            reminder,
            mark: Some(mark),
        }
    }

    /// Takes the model's answer into the history (repaired, shown) and says what comes next:
    /// its calls to run, another request, or the end of the run.
    fn take_answer(
        &self,
        request: &Request,
        response: &Response,
        history: &mut Vec<Message>,
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Next {
        if let Some(u) = response.usage {
            hooks.usage(u.input_tokens, u.output_tokens, history.len());
        }
        let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let mut repaired = repair::repair(answer_parts(response), &offered, st.nudges < MAX_NUDGES);
        if repaired.calls.is_empty() && repaired.nudge.is_none() {
            self.apply_code_blocks(&mut repaired, &offered, history);
        }
        if self.lc.aids.code_blocks {
            self.complete_partial_edits(&mut repaired);
        }
        for q in &repaired.quirks {
            self.quirk(q, hooks);
        }
        let text = repaired.text();
        self.events()
            .send(Event::AssistantMessage { text: text.clone() });
        if repaired.echo_only && request.reminder.is_some() {
            // Nothing but the reminder came back: ask again without it (the echo is not
            // kept, so the history stays as it was).
            st.without_reminder = true;
            return Next::Again;
        }
        let mut parts = repaired.parts;
        if parts.is_empty() {
            // An empty answer still needs a message so the history stays well-formed.
            parts.push(AssistantPart::Text {
                text: String::new(),
            });
        }
        let assistant = Message::Assistant { parts };
        history.push(assistant.clone());
        hooks.appended(&assistant);
        if let Some(nudge) = repaired.nudge {
            st.nudges += 1;
            append_user(history, hooks, nudge);
            return Next::Again;
        }
        if repaired.calls.is_empty() {
            return self.answer_without_calls(&text, response.truncated(), history, st, hooks);
        }
        Next::Run(repaired.calls)
    }

    /// An answer with no calls ends the run, unless it is empty after tool results or a
    /// small model stopped too early (each asked about once).
    fn answer_without_calls(
        &self,
        text: &str,
        truncated: bool,
        history: &mut Vec<Message>,
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Next {
        if truncated && text.trim().is_empty() {
            return Next::End(LoopEnd::Failed(
                "the model's answer was cut off by the output token limit".into(),
            ));
        }
        if text.trim().is_empty() {
            let after_tools = matches!(
                history.iter().rev().nth(1),
                Some(Message::ToolResult { .. })
            );
            let ask = after_tools && !std::mem::replace(&mut st.asked_after_empty, true);
            let q = Quirk {
                kind: QuirkKind::EmptyAnswer,
                call_id: None,
                detail: if ask {
                    "asked to continue".into()
                } else {
                    String::new()
                },
                text: if ask {
                    "The model answered nothing; asking it to continue.".into()
                } else {
                    "The model answered nothing.".into()
                },
            };
            self.quirk(&q, hooks);
            if ask {
                st.force_next = self.lc.aids.first_call;
                let mut nudge = EMPTY_NUDGE.to_string();
                // The 1.5B model, asked to continue a list with steps left, ran `date`.
                if self.lc.aids.nudges
                    && let Some(step) = last_todos(history).and_then(super::aids::next_todo)
                {
                    nudge.push_str(&format!(
                        " The next step on your todo list is \"{step}\": do it now with the \
                         tools, then mark it completed with write_todos."
                    ));
                }
                append_user(history, hooks, nudge);
                return Next::Again;
            }
        }
        if self.lc.aids.nudges
            && let Some(nudge) = self.unfinished_nudge(history, text, st)
        {
            st.force_next = self.lc.aids.first_call;
            // Shown as a resumed conversation shows it: the answer above is not the end.
            self.events()
                .send(Event::notice(crate::protocol::nudge_notice(&nudge)));
            append_user(history, hooks, nudge);
            return Next::Again;
        }
        Next::End(LoopEnd::Completed)
    }

    /// Runs one answer's calls and appends their results; returns how the run ends when
    /// loop detection or an interrupt ends it.
    async fn run_and_record(
        &self,
        calls: &[ToolCall],
        truncated: bool,
        history: &mut Vec<Message>,
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Option<LoopEnd> {
        let mut results = self.run_calls(calls, truncated).await;
        // A check to run after a change: one that ran before, or one the task names (looked
        // up once per run: the task does not change within it).
        let check_named = *st.check_named.get_or_insert_with(|| {
            task_message(history)
                .and_then(super::aids::named_command)
                .is_some()
        });
        for (call, result) in calls.iter().zip(&results) {
            // A plan with steps left is no place to stop: the 1.5B model answered a fresh
            // todo list with nothing, then claimed every step done.
            if call.name == "write_todos" && !result.status.is_error() {
                st.force_next |=
                    self.lc.aids.first_call && super::aids::todos_left(&call.arguments);
            }
            let changed = !result.status.is_error() && result.changed_files;
            st.wrote |= changed;
            if changed
                && let Some(path) = edited_path(call)
                && !st.edited.contains(&path)
            {
                st.edited.push(path);
            }
            if call.name == "bash" {
                st.ran_command = true;
                st.unchecked = false;
                st.asked.check = false;
            } else if (st.ran_command || check_named) && changed {
                st.unchecked = true;
            }
        }
        st.command_failed = calls
            .last()
            .zip(results.last())
            .is_some_and(|(c, r)| c.name == "bash" && r.exit_code.is_some_and(|e| e != 0));
        self.keep_target_forced(st);
        if self.lc.aids.nudges {
            self.name_next_steps(calls, &mut results);
        }
        let verdict = st.guard.step(calls, &results);
        if let (Verdict::Nudge(note), Some(last)) = (&verdict, results.last_mut()) {
            last.output = format!("{}\n\n{note}", last.output);
        }
        for (call, result) in calls.iter().zip(results) {
            let msg = Message::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: result.output.clone(),
                is_error: result.status.is_error(),
            };
            hooks.tool_result(&msg, &result);
            history.push(msg);
        }
        hooks.after_tools();
        if self.cancel().is_cancelled() {
            return Some(LoopEnd::Interrupted);
        }
        match verdict {
            Verdict::Stop(reason) => Some(LoopEnd::Looped(reason)),
            _ => None,
        }
    }

    /// Sends one request, streaming its text to the front end; a failed one returns the text
    /// streamed so far. An answer that keeps repeating itself (text, reasoning or a tool's
    /// arguments) is stopped as soon as that shows, instead of running to the output limit.
    async fn request(&self, request: &Request) -> Result<Response, Failed> {
        let events = self.events().clone();
        let stop = self.cancel().child_token();
        let mut partial = String::new();
        let mut watch = RepeatWatch::default();
        // Whether the repetition showed in the visible text (then the text is cut there).
        let mut in_text = false;
        let mut on = |n: StreamNotice| match n {
            StreamNotice::Text(text) => {
                partial.push_str(&text);
                if watch.push(&text) && !stop.is_cancelled() {
                    in_text = true;
                    stop.cancel();
                }
                events.send(Event::AssistantDelta { text })
            }
            StreamNotice::Reasoning(text) => {
                if watch.push(&text) {
                    stop.cancel();
                }
                events.send(Event::ReasoningDelta { text })
            }
            StreamNotice::ToolArgs(args) => {
                if watch.push(&args) {
                    stop.cancel();
                }
            }
            StreamNotice::Retrying {
                attempt,
                max_attempts,
                delay,
                reason,
            } => {
                partial.clear();
                watch.reset();
                events.send(Event::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                })
            }
        };
        let result = self.client.stream(request, &stop, &mut on).await;
        if let Some(period) = watch.period()
            && !self.cancel().is_cancelled()
        {
            let kept = match in_text {
                true => repeating::cut(&partial, period).to_owned(),
                false => partial,
            };
            return Err(Failed::Repeating(kept));
        }
        match result {
            Ok(r) => Ok(r),
            Err(LlmError::Cancelled) => Err(Failed::End(LoopEnd::Interrupted, partial)),
            Err(e) => Err(Failed::End(LoopEnd::Failed(e.to_string()), partial)),
        }
    }

    /// An answer stopped because it kept repeating itself: what came before the repetition
    /// (and one piece of it) is kept as the answer, and the model is asked once to go on; a
    /// second one ends the run (the person may continue it).
    fn stopped_repeating(
        &self,
        kept: String,
        history: &mut Vec<Message>,
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Option<LoopEnd> {
        let ask = !std::mem::replace(&mut st.asked_after_repeat, true);
        let q = Quirk {
            kind: QuirkKind::RepeatingAnswer,
            call_id: None,
            detail: if ask {
                "asked to go on".into()
            } else {
                String::new()
            },
            text: "The model's answer kept repeating itself; rein stopped it.".into(),
        };
        self.quirk(&q, hooks);
        self.events()
            .send(Event::AssistantMessage { text: kept.clone() });
        let assistant = Message::Assistant {
            parts: vec![AssistantPart::Text { text: kept }],
        };
        history.push(assistant.clone());
        hooks.appended(&assistant);
        if !ask {
            return Some(LoopEnd::Failed(
                "the model's answer kept repeating itself (stopped twice)".into(),
            ));
        }
        append_user(history, hooks, REPEAT_NUDGE.into());
        None
    }

    /// Tells the front end and the session file what was repaired.
    fn quirk(&self, q: &Quirk, hooks: &mut dyn TurnHooks) {
        tracing::info!(kind = ?q.kind, detail = %q.detail, "model quirk");
        self.events().send(Event::ModelQuirk {
            kind: q.kind,
            text: q.text.clone(),
        });
        hooks.quirk(q);
    }

    /// Runs the calls of one response in order; consecutive calls that may run in parallel
    /// (subagents' questions) run concurrently, up to 4 at once. Every call gets exactly one
    /// result, in order.
    async fn run_calls(&self, calls: &[ToolCall], truncated: bool) -> Vec<CallResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            if self.cancel().is_cancelled() {
                results.push(self.not_run(&calls[i]));
                i += 1;
                continue;
            }
            let batch = self.parallel_batch(&calls[i..], truncated);
            i += batch.len();
            let futures = batch.into_iter().map(|(call, ctx, prepared)| async move {
                self.dispatcher.run_prepared(call, prepared, &ctx).await
            });
            results.extend(futures::future::join_all(futures).await);
        }
        results
    }

    /// The next call prepared, with the calls after it that may run alongside it. A call is
    /// prepared just before it runs (it checks the world as it is then), so one prepared ahead
    /// that must run alone is dropped here and prepared again in its turn.
    fn parallel_batch<'c>(
        &self,
        calls: &'c [ToolCall],
        truncated: bool,
    ) -> Vec<(&'c ToolCall, ToolCtx, Preparation)> {
        let mut batch = Vec::new();
        for call in calls.iter().take(MAX_PARALLEL) {
            let mut ctx = self.ctx.clone();
            ctx.call_id = call.id.clone();
            let prepared = self.dispatcher.prepare_call(call, &ctx, truncated);
            let parallel = prepared.parallel();
            if !batch.is_empty() && !parallel {
                break;
            }
            batch.push((call, ctx, prepared));
            if !parallel {
                break;
            }
        }
        batch
    }

    /// A call left unrun because the turn was interrupted first.
    fn not_run(&self, call: &ToolCall) -> CallResult {
        let display = self
            .dispatcher
            .registry
            .describe(&call.name, &call.arguments);
        self.events().send(Event::ToolCallFinished {
            call_id: call.id.clone(),
            status: ToolStatus::Interrupted,
            output: INTERRUPTED.into(),
            elapsed_ms: 0,
            exit_code: None,
        });
        CallResult::interrupted(display)
    }
}

/// Calls of one response run at once, at most.
const MAX_PARALLEL: usize = 4;

/// What one run of the loop keeps between requests.
#[derive(Default)]
struct RunState {
    /// Requests made so far.
    requests: u32,
    /// The history's copy as last sent (brought up to date for the next request).
    sent: Vec<Message>,
    /// How far `sent` is known to be up to date (reset when the history is rewritten).
    synced: context::Synced,
    /// This run's place in the wire cache: its conversation id and last request number.
    conversation: Option<(u64, u64)>,
    /// The next request goes without the reminder (the last answer only echoed it).
    without_reminder: bool,
    /// Nudges for calls written as text.
    nudges: u32,
    /// An empty answer after tool results was already asked about.
    asked_after_empty: bool,
    /// An answer that kept repeating itself was already stopped and asked about.
    asked_after_repeat: bool,
    /// A small model's end-of-run nudges already sent.
    asked: super::aids::Asked,
    /// A call that may change files succeeded.
    wrote: bool,
    /// A bash command ran: the model has a check it can run again.
    ran_command: bool,
    /// A file tool changed files after the last bash command.
    unchecked: bool,
    /// The last step's last call was a command that failed (exit status not 0).
    command_failed: bool,
    /// The paths the file tools changed in this run, as the model named them.
    edited: Vec<String>,
    /// The file the task asks to add to that a nudge named, and the steps still forced to
    /// be calls until it is changed.
    target: Option<(String, u8)>,
    /// Whether the task names a command to run (`None`: not looked up yet).
    check_named: Option<bool>,
    /// The next request must be answered with a tool call.
    force_next: bool,
    /// Loop detection.
    guard: LoopGuard,
}

impl RunState {
    /// The next request's mark: its conversation, its number, and the `unchanged` messages it
    /// shares with the request before.
    fn mark(&mut self, unchanged: usize) -> HistoryMark {
        static CONVERSATIONS: AtomicU64 = AtomicU64::new(1);
        let (conversation, seq) = self
            .conversation
            .get_or_insert_with(|| (CONVERSATIONS.fetch_add(1, Ordering::Relaxed), 0));
        *seq += 1;
        HistoryMark {
            conversation: *conversation,
            seq: *seq,
            unchanged,
        }
    }
}

/// What follows an answer.
enum Next {
    /// Send another request.
    Again,
    /// The run ends.
    End(LoopEnd),
    /// Run these calls.
    Run(Vec<ToolCall>),
}

fn append_user(history: &mut Vec<Message>, hooks: &mut dyn TurnHooks, content: String) {
    let msg = Message::User { content };
    history.push(msg.clone());
    hooks.appended(&msg);
}

/// The person's last message (rein's own `[rein]` nudges are not the task).
fn task_message(history: &[Message]) -> Option<&str> {
    history.iter().rev().find_map(|m| match m {
        Message::User { content } if !content.starts_with("[rein]") => Some(content.as_str()),
        _ => None,
    })
}
