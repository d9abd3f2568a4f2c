//! The inner loop: call the model, run the tools it asks for, append the results, repeat until
//! it stops asking (or loop detection, the request cap when one is set, an interrupt or an
//! error ends it).

use super::context;
use super::dispatch::{CallResult, Dispatcher, INTERRUPTED};
use super::loop_guard::{LoopGuard, Verdict};
use super::repair::{self, Quirk};
use crate::llm::ToolCall;
use crate::llm::{AssistantPart, Client, LlmError, Message, Request, Response, StreamNotice};
use crate::protocol::EventSink;
use crate::protocol::{Event, QuirkKind, ToolStatus};
use crate::tools::ToolCtx;
use std::sync::RwLock;
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
    /// the history (auto-compaction).
    fn before_request<'a>(
        &'a mut self,
        _history: &'a mut Vec<Message>,
        _keep: Option<usize>,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async {})
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
        let mut without_reminder = false;
        let mut nudges = 0;
        let mut asked_after_empty = false;
        let mut guard = LoopGuard::default();
        let mut requests = 0u32;
        let mut sent = Vec::new();
        loop {
            if self.lc.max_requests.is_some_and(|cap| requests >= cap) {
                return LoopEnd::RequestCap;
            }
            requests += 1;
            if self.cancel().is_cancelled() {
                return LoopEnd::Interrupted;
            }
            hooks
                .before_request(history, self.lc.keep_tool_results)
                .await;
            if self.cancel().is_cancelled() {
                return LoopEnd::Interrupted;
            }
            // The copy sent is kept between requests and brought up to date, not rebuilt.
            let mut messages = std::mem::take(&mut sent);
            match self.lc.keep_tool_results {
                Some(keep) => {
                    context::micro_compact_into(&mut messages, history, keep, hooks.frozen_prefix())
                }
                // Nothing is compacted: the same update with nothing old enough.
                None => context::micro_compact_into(&mut messages, history, usize::MAX, 0),
            }
            let reminder = if std::mem::take(&mut without_reminder) {
                None
            } else {
                hooks.reminder()
            };
            let mut request = Request {
                model: read_model(self.model),
                system: self.lc.system.clone(),
                messages,
                tools: self.dispatcher.specs(),
                max_tokens: self.lc.max_tokens,
                reminder,
            };
            let response = self.request(&request).await;
            sent = std::mem::take(&mut request.messages);
            let response = match response {
                Ok(r) => r,
                Err((end, partial)) => {
                    if end == LoopEnd::Interrupted && !partial.is_empty() {
                        hooks.interrupted_answer(partial);
                    }
                    return end;
                }
            };
            if let Some(u) = response.usage {
                hooks.usage(u.input_tokens, u.output_tokens, history.len());
            }
            let truncated = response.truncated();
            let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            let repaired = repair::repair(answer_parts(&response), &offered, nudges < MAX_NUDGES);
            for q in &repaired.quirks {
                self.quirk(q, hooks);
            }
            let text = repaired.text();
            self.events()
                .send(Event::AssistantMessage { text: text.clone() });
            if repaired.echo_only && request.reminder.is_some() {
                // Nothing but the reminder came back: ask again without it (the echo is not
                // kept, so the history stays as it was).
                without_reminder = true;
                continue;
            }
            let calls = repaired.calls;
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
                nudges += 1;
                let msg = Message::User { content: nudge };
                history.push(msg.clone());
                hooks.appended(&msg);
                continue;
            }
            if calls.is_empty() {
                if truncated && text.trim().is_empty() {
                    return LoopEnd::Failed(
                        "the model's answer was cut off by the output token limit".into(),
                    );
                }
                if text.trim().is_empty() {
                    let after_tools = matches!(
                        history.iter().rev().nth(1),
                        Some(Message::ToolResult { .. })
                    );
                    let ask = after_tools && !std::mem::replace(&mut asked_after_empty, true);
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
                        let msg = Message::User {
                            content: EMPTY_NUDGE.into(),
                        };
                        history.push(msg.clone());
                        hooks.appended(&msg);
                        continue;
                    }
                }
                return LoopEnd::Completed;
            }
            let mut results = self.run_calls(&calls, truncated).await;
            let verdict = guard.step(&calls, &results);
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
                return LoopEnd::Interrupted;
            }
            if let Verdict::Stop(reason) = verdict {
                return LoopEnd::Looped(reason);
            }
        }
    }

    /// Sends one request, streaming its text to the front end; a failed one returns the text
    /// streamed so far.
    async fn request(&self, request: &Request) -> Result<Response, (LoopEnd, String)> {
        let events = self.events().clone();
        let mut partial = String::new();
        let mut on = |n: StreamNotice| match n {
            StreamNotice::Text(text) => {
                partial.push_str(&text);
                events.send(Event::AssistantDelta { text })
            }
            StreamNotice::Reasoning(text) => events.send(Event::ReasoningDelta { text }),
            StreamNotice::Retrying {
                attempt,
                max_attempts,
                delay,
                reason,
            } => events.send(Event::Retrying {
                attempt,
                max_attempts,
                delay_ms: delay.as_millis() as u64,
                reason,
            }),
        };
        let result = self.client.stream(request, self.cancel(), &mut on).await;
        match result {
            Ok(r) => Ok(r),
            Err(LlmError::Cancelled) => Err((LoopEnd::Interrupted, partial)),
            Err(e) => Err((LoopEnd::Failed(e.to_string()), partial)),
        }
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

    /// Runs the calls of one response in order; consecutive `task` calls run concurrently
    /// (up to 4 at once). Every call gets exactly one result, in order.
    async fn run_calls(&self, calls: &[ToolCall], truncated: bool) -> Vec<CallResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            if self.cancel().is_cancelled() {
                let display = self
                    .dispatcher
                    .registry
                    .describe(&calls[i].name, &calls[i].arguments);
                results.push(CallResult::interrupted(display));
                self.events().send(Event::ToolCallFinished {
                    call_id: calls[i].id.clone(),
                    status: ToolStatus::Interrupted,
                    output: INTERRUPTED.into(),
                    elapsed_ms: 0,
                    exit_code: None,
                });
                i += 1;
                continue;
            }
            let batch_end = if calls[i].name == "task" {
                let mut j = i;
                while j < calls.len() && calls[j].name == "task" && j - i < 4 {
                    j += 1;
                }
                j
            } else {
                i + 1
            };
            let batch = &calls[i..batch_end];
            let futures = batch.iter().map(|call| {
                let mut ctx = self.ctx.clone();
                ctx.call_id = call.id.clone();
                async move { self.dispatcher.dispatch(call, &ctx, truncated).await }
            });
            results.extend(futures::future::join_all(futures).await);
            i = batch_end;
        }
        results
    }
}
