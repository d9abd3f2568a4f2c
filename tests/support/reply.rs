//! Scripted replies: what the fake model answers, and how the delivery goes wrong.
//!
//! A [`Reply`] is wire-format neutral; the server renders it as Chat Completions chunks or as
//! Anthropic Messages events. Faults are placed by event count: "after n events" means the
//! first `n` SSE events of the rendered stream are sent before the fault (clamped so the
//! stream's terminator — `[DONE]` / `message_stop` — never arrives before a fault).
//!
//! Rendered layout, useful for choosing `n` (each item is split into `fragments` deltas):
//! - OpenAI: role chunk, reasoning deltas, text deltas, per tool call a header fragment (id,
//!   name, empty arguments) then argument fragments, the finish chunk, a usage chunk (when
//!   usage is set), `data: [DONE]`.
//! - Anthropic: `message_start`, `ping`, per item a block (`content_block_start`, deltas —
//!   tool input begins with an empty `partial_json` —, thinking ends with a `signature_delta`,
//!   `content_block_stop`), `message_delta`, `message_stop`.
//! - Responses: `response.created`, per item `response.output_item.added`, its deltas
//!   (`reasoning_summary_text`, `output_text`, `function_call_arguments` followed by
//!   `function_call_arguments.done`), `response.output_item.done` (a reasoning item carries
//!   `encrypted_content` = [`encrypted`] of its text), then `response.completed` (or
//!   `response.incomplete` for the finish reason `length`).

use super::Gate;
use rein::llm::ProviderKind;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One piece of the scripted answer, in order.
#[derive(Clone, Debug)]
pub enum Item {
    /// Reasoning (`reasoning_content` / a thinking block).
    Reasoning(String),
    /// Visible text.
    Text(String),
    /// A tool call; `arguments` is sent exactly as given (may be invalid JSON).
    ToolCall {
        /// The call id (generated when `None`).
        id: Option<String>,
        /// The tool name.
        name: String,
        /// Raw arguments text.
        arguments: String,
    },
}

/// Something that goes wrong (or is held back) while a stream is delivered.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Abort the connection (no terminating chunk) after `after` events.
    Drop {
        /// Events sent before it.
        after: usize,
    },
    /// Send a `data:` line that is not valid JSON after `after` events, then carry on.
    Malformed {
        /// Events sent before it.
        after: usize,
    },
    /// Send an in-stream error event after `after` events, then end the stream cleanly.
    ErrorEvent {
        /// Events sent before it.
        after: usize,
        /// The error message.
        message: String,
        /// Overloaded (retryable) or an invalid-request error (not retryable).
        retryable: bool,
    },
    /// Go silent for `duration` after `after` events (headers are already sent), then carry on.
    Stall {
        /// Events sent before it.
        after: usize,
        /// How long to stay silent.
        duration: Duration,
    },
    /// Hold the stream after `after` events until the test calls [`Gate::release`].
    Pause {
        /// Events sent before it.
        after: usize,
        /// The gate to wait on.
        gate: Gate,
    },
}

/// One scripted answer to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(super) items: Vec<Item>,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) cached: u64,
    pub(super) finish_reason: Option<String>,
    pub(super) fragments: usize,
    pub(super) status: Option<(u16, String)>,
    pub(super) retry_after: Option<String>,
    pub(super) location: Option<String>,
    pub(super) faults: Vec<Fault>,
    pub(super) delay: Duration,
    pub(super) chunk_delay: Duration,
    pub(super) raw: Option<String>,
}

impl Default for Reply {
    fn default() -> Self {
        Reply::new()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Reply {
    /// An empty successful stream; add items with the builder methods.
    pub fn new() -> Reply {
        Reply {
            items: Vec::new(),
            usage: None,
            cached: 0,
            finish_reason: None,
            fragments: 3,
            status: None,
            retry_after: None,
            location: None,
            faults: Vec::new(),
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            raw: None,
        }
    }

    /// A stream answering `text` and nothing else.
    pub fn text(text: &str) -> Reply {
        Reply::new().say(text)
    }

    /// A stream with one tool call whose arguments are `args` serialized.
    pub fn tool_call(name: &str, args: Value) -> Reply {
        Reply::new().call(name, args)
    }

    /// A non-streaming HTTP error with a JSON error body in the server's format.
    pub fn status(code: u16, message: &str) -> Reply {
        Reply {
            status: Some((code, message.to_owned())),
            ..Reply::new()
        }
    }

    /// HTTP 429 with `Retry-After: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::status(429, "Rate limit reached, retry later")
            .retry_after(&retry_after_secs.to_string())
    }

    /// HTTP `code` (e.g. 307) with `Location: <location>`.
    pub fn redirect(code: u16, location: &str) -> Reply {
        Reply {
            location: Some(location.to_owned()),
            ..Reply::status(code, "Moved")
        }
    }

    /// Replays an SSE body verbatim (e.g. a recorded fixture); faults still apply by event.
    pub fn raw_sse(body: &str) -> Reply {
        Reply {
            raw: Some(body.to_owned()),
            ..Reply::new()
        }
    }

    /// Appends visible text.
    pub fn say(mut self, text: &str) -> Reply {
        self.items.push(Item::Text(text.to_owned()));
        self
    }

    /// Appends reasoning.
    pub fn reasoning(mut self, text: &str) -> Reply {
        self.items.push(Item::Reasoning(text.to_owned()));
        self
    }

    /// Appends a tool call with a generated id.
    pub fn call(self, name: &str, args: Value) -> Reply {
        self.call_raw(name, &args.to_string())
    }

    /// Appends a tool call whose arguments text is sent as is (use it for invalid JSON).
    pub fn call_raw(mut self, name: &str, arguments: &str) -> Reply {
        self.items.push(Item::ToolCall {
            id: None,
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        });
        self
    }

    /// Appends a tool call with a chosen id.
    pub fn call_with_id(mut self, id: &str, name: &str, args: Value) -> Reply {
        self.items.push(Item::ToolCall {
            id: Some(id.to_owned()),
            name: name.to_owned(),
            arguments: args.to_string(),
        });
        self
    }

    /// Reports usage (input, output tokens).
    pub fn usage(mut self, input: u64, output: u64) -> Reply {
        self.usage = Some((input, output));
        self
    }

    /// Reports `n` of the input tokens as read from the prompt cache (Responses:
    /// `input_tokens_details.cached_tokens`).
    pub fn cached(mut self, n: u64) -> Reply {
        self.cached = n;
        self
    }

    /// Overrides `finish_reason` / `stop_reason` (default: tool calls → `tool_calls` /
    /// `tool_use`, else `stop` / `end_turn`).
    pub fn finish_reason(mut self, reason: &str) -> Reply {
        self.finish_reason = Some(reason.to_owned());
        self
    }

    /// Splits each text, reasoning and arguments string into `n` deltas (default 3).
    pub fn fragments(mut self, n: usize) -> Reply {
        self.fragments = n.max(1);
        self
    }

    /// Adds a `Retry-After` header (seconds or an HTTP date) to a status reply.
    pub fn retry_after(mut self, value: &str) -> Reply {
        self.retry_after = Some(value.to_owned());
        self
    }

    /// Waits `d` before sending the response headers.
    pub fn delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }

    /// Waits `d` between consecutive events.
    pub fn chunk_delay(mut self, d: Duration) -> Reply {
        self.chunk_delay = d;
        self
    }

    /// Adds a fault (several are applied in order).
    pub fn fault(mut self, f: Fault) -> Reply {
        self.faults.push(f);
        self
    }

    /// Aborts the connection after `n` events.
    pub fn drop_after(self, n: usize) -> Reply {
        self.fault(Fault::Drop { after: n })
    }

    /// Sends a line of invalid JSON after `n` events.
    pub fn malformed_after(self, n: usize) -> Reply {
        self.fault(Fault::Malformed { after: n })
    }

    /// Sends a retryable "overloaded" error event after `n` events and ends the stream.
    pub fn overloaded_after(self, n: usize) -> Reply {
        self.fault(Fault::ErrorEvent {
            after: n,
            message: "Overloaded".into(),
            retryable: true,
        })
    }

    /// Sends a non-retryable error event after `n` events and ends the stream.
    pub fn stream_error_after(self, n: usize, message: &str) -> Reply {
        self.fault(Fault::ErrorEvent {
            after: n,
            message: message.into(),
            retryable: false,
        })
    }

    /// Goes silent for `d` after `n` events.
    pub fn stall_after(self, n: usize, d: Duration) -> Reply {
        self.fault(Fault::Stall {
            after: n,
            duration: d,
        })
    }

    /// Holds the stream after `after` events until `gate` is released.
    pub fn pause_after(self, n: usize, gate: &Gate) -> Reply {
        self.fault(Fault::Pause {
            after: n,
            gate: gate.clone(),
        })
    }

    /// The SSE events of this reply (each ending with a blank line), without faults.
    pub fn events(&self, format: ProviderKind) -> Vec<String> {
        if let Some(raw) = &self.raw {
            return raw
                .split_inclusive("\n\n")
                .filter(|e| !e.trim().is_empty())
                .map(str::to_owned)
                .collect();
        }
        match format {
            ProviderKind::OpenAi => self.openai_events(),
            ProviderKind::Anthropic => self.anthropic_events(),
            ProviderKind::OpenAiResponses => self.responses_events(),
        }
    }

    fn has_calls(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i, Item::ToolCall { .. }))
    }

    fn openai_events(&self) -> Vec<String> {
        let chunk = |delta: Value, finish: Value| {
            let v = json!({
                "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            });
            format!("data: {v}\n\n")
        };
        let mut out = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        let mut call_index = 0;
        for item in &self.items {
            match item {
                Item::Reasoning(t) => {
                    for p in split(t, self.fragments) {
                        out.push(chunk(json!({"reasoning_content": p}), Value::Null));
                    }
                }
                Item::Text(t) => {
                    for p in split(t, self.fragments) {
                        out.push(chunk(json!({"content": p}), Value::Null));
                    }
                }
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    let id = id.clone().unwrap_or_else(|| fresh_id("call"));
                    out.push(chunk(
                        json!({"tool_calls": [{"index": call_index, "id": id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]}),
                        Value::Null,
                    ));
                    for p in split(arguments, self.fragments) {
                        out.push(chunk(
                            json!({"tool_calls": [{"index": call_index, "function": {"arguments": p}}]}),
                            Value::Null,
                        ));
                    }
                    call_index += 1;
                }
            }
        }
        let finish = self.finish_reason.clone().unwrap_or_else(|| {
            if self.has_calls() {
                "tool_calls"
            } else {
                "stop"
            }
            .to_owned()
        });
        out.push(chunk(json!({}), Value::String(finish)));
        if let Some((i, o)) = self.usage {
            let v = json!({
                "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                "model": "scripted", "choices": [],
                "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o},
            });
            out.push(format!("data: {v}\n\n"));
        }
        out.push("data: [DONE]\n\n".to_owned());
        out
    }

    fn anthropic_events(&self) -> Vec<String> {
        let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
        let (input, output) = self.usage.unwrap_or((0, 0));
        let mut out = vec![
            ev(json!({"type": "message_start", "message": {
                "id": fresh_id("msg"), "type": "message", "role": "assistant", "model": "scripted",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": 1}}})),
            ev(json!({"type": "ping"})),
        ];
        for (index, item) in self.items.iter().enumerate() {
            let delta =
                |d: Value| ev(json!({"type": "content_block_delta", "index": index, "delta": d}));
            match item {
                Item::Reasoning(t) => {
                    out.push(ev(json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
                    for p in split(t, self.fragments) {
                        out.push(delta(json!({"type": "thinking_delta", "thinking": p})));
                    }
                    out.push(delta(
                        json!({"type": "signature_delta", "signature": "c2NyaXB0ZWQ="}),
                    ));
                }
                Item::Text(t) => {
                    out.push(ev(json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}})));
                    for p in split(t, self.fragments) {
                        out.push(delta(json!({"type": "text_delta", "text": p})));
                    }
                }
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    let id = id.clone().unwrap_or_else(|| fresh_id("toolu"));
                    out.push(ev(json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
                    out.push(delta(
                        json!({"type": "input_json_delta", "partial_json": ""}),
                    ));
                    for p in split(arguments, self.fragments) {
                        out.push(delta(
                            json!({"type": "input_json_delta", "partial_json": p}),
                        ));
                    }
                }
            }
            out.push(ev(json!({"type": "content_block_stop", "index": index})));
        }
        let stop = self.finish_reason.clone().unwrap_or_else(|| {
            if self.has_calls() {
                "tool_use"
            } else {
                "end_turn"
            }
            .to_owned()
        });
        out.push(ev(json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": output}})));
        out.push(ev(json!({"type": "message_stop"})));
        out
    }
}

impl Reply {
    fn responses_events(&self) -> Vec<String> {
        let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
        let id = fresh_id("resp");
        let mut out = vec![ev(json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}))];
        for (index, item) in self.items.iter().enumerate() {
            let item_id = fresh_id("item");
            let (added, deltas, done) = match item {
                Item::Reasoning(t) => {
                    let deltas = split(t, self.fragments)
                        .into_iter()
                        .map(|p| {
                            json!({
                        "type": "response.reasoning_summary_text.delta", "item_id": item_id,
                        "output_index": index, "summary_index": 0, "delta": p})
                        })
                        .collect();
                    (
                        json!({"type": "reasoning", "id": item_id, "summary": []}),
                        deltas,
                        json!({"type": "reasoning", "id": item_id,
                            "summary": [{"type": "summary_text", "text": t}],
                            "encrypted_content": encrypted(t)}),
                    )
                }
                Item::Text(t) => {
                    let deltas = split(t, self.fragments)
                        .into_iter()
                        .map(|p| {
                            json!({
                        "type": "response.output_text.delta", "item_id": item_id,
                        "output_index": index, "content_index": 0, "delta": p})
                        })
                        .collect();
                    (
                        json!({"type": "message", "id": item_id, "role": "assistant",
                            "status": "in_progress", "content": []}),
                        deltas,
                        json!({"type": "message", "id": item_id, "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": t, "annotations": []}]}),
                    )
                }
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    let call_id = id.clone().unwrap_or_else(|| fresh_id("call"));
                    let mut deltas: Vec<Value> = split(arguments, self.fragments)
                        .into_iter()
                        .map(|p| {
                            json!({
                        "type": "response.function_call_arguments.delta", "item_id": item_id,
                        "output_index": index, "delta": p})
                        })
                        .collect();
                    deltas.push(json!({"type": "response.function_call_arguments.done",
                        "item_id": item_id, "output_index": index, "arguments": arguments}));
                    let call = |args: &str| {
                        json!({"type": "function_call", "id": item_id,
                        "call_id": call_id, "name": name, "arguments": args})
                    };
                    (call(""), deltas, call(arguments))
                }
            };
            out.push(ev(
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            ));
            out.extend(deltas.into_iter().map(ev));
            out.push(ev(
                json!({"type": "response.output_item.done", "output_index": index, "item": done}),
            ));
        }
        let (input, output) = self.usage.unwrap_or((0, 0));
        let usage = json!({"input_tokens": input,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output});
        let truncated = matches!(
            self.finish_reason.as_deref(),
            Some("length" | "max_output_tokens")
        );
        let last = if truncated {
            json!({"type": "response.incomplete", "response": {"id": id, "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}, "usage": usage}})
        } else {
            json!({"type": "response.completed", "response": {"id": id, "status": "completed",
                "usage": if self.usage.is_some() { usage } else { Value::Null }}})
        };
        out.push(ev(last));
        out
    }
}

/// The `encrypted_content` the scripted Responses server sends for a reasoning item with
/// summary `text` (a client must send it back as is).
pub fn encrypted(text: &str) -> String {
    let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
    format!("gAAAA-scripted-{hex}")
}

/// The JSON body of an HTTP error reply in the given format.
pub(super) fn error_body(format: ProviderKind, status: u16, message: &str) -> Value {
    let kind = match status {
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    match format {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
            json!({"error": {"message": message, "type": kind, "code": status}})
        }
        ProviderKind::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
}

/// An in-stream error event in the given format.
pub(super) fn error_event(format: ProviderKind, message: &str, retryable: bool) -> String {
    match format {
        ProviderKind::OpenAi => {
            let (kind, code) = if retryable {
                ("server_error", "overloaded")
            } else {
                ("invalid_request_error", "invalid_request")
            };
            let v = json!({"error": {"message": message, "type": kind, "code": code}});
            format!("event: error\ndata: {v}\n\n")
        }
        ProviderKind::OpenAiResponses => {
            let code = if retryable {
                "server_is_overloaded"
            } else {
                "invalid_prompt"
            };
            let v = json!({"type": "error", "code": code, "message": message, "param": null});
            format!("event: error\ndata: {v}\n\n")
        }
        ProviderKind::Anthropic => {
            let kind = if retryable {
                "overloaded_error"
            } else {
                "invalid_request_error"
            };
            let v = json!({"type": "error", "error": {"type": kind, "message": message}});
            format!("event: error\ndata: {v}\n\n")
        }
    }
}

/// A `data:` line whose JSON is cut off.
pub(super) const MALFORMED_EVENT: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"oops\n\n";

fn fresh_id(prefix: &str) -> String {
    format!(
        "{prefix}_scripted_{}",
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    )
}

/// Splits `s` into at most `n` non-empty pieces of similar size, on char boundaries.
fn split(s: &str, n: usize) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
