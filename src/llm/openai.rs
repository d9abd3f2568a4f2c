//! OpenAI-compatible Chat Completions wire format: request body and stream assembly.
//!
//! The assembler follows what real servers send, not just what OpenAI documents: tool-call
//! fragments are merged by `index` (id and name only in the first fragment, later `""` never
//! overwrites them, a fragment without `index` is a new call), reasoning arrives as
//! `reasoning_content` or `reasoning`, Mistral sends `content` as an array of parts, usage comes
//! in a final chunk with empty `choices` or in the finish chunk, and errors can arrive inside a
//! `data:` line of an HTTP 200 stream.

mod wire;

use super::sse::SseEvent;
use super::wire_cache::WireCache;
use super::{AssistantPart, LlmError, Message, Request, Response, StreamNotice, ToolCall, Usage};
use serde_json::{Value, json};
use std::ops::Range;
use wire::{Args, Chunk, Content, Delta, ToolCallDelta};

/// The request body for `POST {base}/chat/completions`.
pub fn build_body(req: &Request) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = system_message(req) {
        messages.push(system);
    }
    messages.extend(render(&req.messages));
    if let Some(reminder) = &req.reminder {
        fold_reminder(&mut messages, reminder);
    }
    let mut body = envelope(req);
    body["messages"] = Value::Array(messages);
    body
}

/// The body of [`build_body`] as JSON text, serialising only what `cache` does not hold yet.
/// The same JSON value; the keys may come in another order.
pub fn build_body_text(req: &Request, cache: &mut WireCache, official_openai: bool) -> String {
    let segments = segments(&req.messages);
    let mut assembled = cache.assemble(&req.messages, &segments, render, 1, req.mark);
    if let Some(reminder) = &req.reminder {
        // The tail holds the last wire message whenever there is one; with none, the reminder
        // becomes a message of its own, as in build_body.
        fold_reminder(&mut assembled.tail, reminder);
    }
    let envelope = cache.envelope(req, Value::Bool(official_openai), || {
        let mut body = envelope(req);
        if official_openai {
            use_max_completion_tokens(&mut body);
        }
        (body, system_message(req))
    });
    assembled.body(&envelope, "messages")
}

/// Where the history's wire form may be cut: a run of user messages (sent as one), a run of
/// assistant messages (sent as one), or one tool result.
fn segments(msgs: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let start = i;
        i += 1;
        match &msgs[start] {
            Message::User { .. } | Message::UserImage { .. } => {
                while matches!(
                    msgs.get(i),
                    Some(Message::User { .. } | Message::UserImage { .. })
                ) {
                    i += 1;
                }
            }
            Message::Assistant { .. } => {
                while matches!(msgs.get(i), Some(Message::Assistant { .. })) {
                    i += 1;
                }
            }
            Message::ToolResult { .. } => {}
        }
        out.push(start..i);
    }
    out
}

fn system_message(req: &Request) -> Option<Value> {
    (!req.system.is_empty()).then(|| json!({"role": "system", "content": req.system}))
}

/// The wire messages of `msgs` (without system prompt and reminder).
fn render(msgs: &[Message]) -> Vec<Value> {
    let mut messages = Vec::with_capacity(msgs.len());
    let mut i = 0;
    while i < msgs.len() {
        match &msgs[i] {
            Message::User { .. } | Message::UserImage { .. } => {
                // Consecutive user messages become one: several chat templates (Mistral,
                // Llama-based servers) reject two user turns in a row.
                let start = i;
                while matches!(
                    msgs.get(i),
                    Some(Message::User { .. } | Message::UserImage { .. })
                ) {
                    i += 1;
                }
                messages.push(json!({"role": "user", "content": user_content(&msgs[start..i])}));
            }
            Message::Assistant { .. } => {
                let mut parts: Vec<&AssistantPart> = Vec::new();
                while let Some(Message::Assistant { parts: p }) = msgs.get(i) {
                    parts.extend(p);
                    i += 1;
                }
                if let Some(m) = assistant_message(&parts) {
                    messages.push(m);
                }
            }
            Message::ToolResult {
                call_id,
                name,
                content,
                ..
            } => {
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": name,
                    "content": content,
                }));
                i += 1;
            }
        }
    }
    messages
}

/// The content of one wire user message: a string, as always, without images; with them, a
/// list of parts (text parts joined as the string would be, then each image as a data URL).
fn user_content(run: &[Message]) -> Value {
    let mut parts: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut any_image = false;
    for msg in run {
        let content = match msg {
            Message::User { content } => content.clone(),
            Message::UserImage { image } => match image.data_url() {
                Some(url) => {
                    any_image = true;
                    if !text.is_empty() {
                        parts.push(json!({"type": "text", "text": std::mem::take(&mut text)}));
                    }
                    parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
                    continue;
                }
                None => image.note(),
            },
            _ => continue,
        };
        if !text.is_empty() && !content.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&content);
    }
    if !any_image {
        return Value::String(text);
    }
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    Value::Array(parts)
}

/// Everything in the body but the messages.
fn envelope(req: &Request) -> Value {
    let mut body = json!({
        "model": req.model,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if req.max_tokens > 0 {
        body["max_tokens"] = json!(req.max_tokens);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if req.force_tool {
            body["tool_choice"] = json!("required");
        }
    }
    body
}

/// Appends the reminder to the end of the last user or tool message. A user message of its own
/// after a tool result is what small models answered by echoing it; inside the last message it
/// reads as context. Everything before it stays byte-identical, so a server's prompt cache
/// still covers the whole history.
fn fold_reminder(messages: &mut Vec<Value>, reminder: &str) {
    let last = messages.last_mut().filter(|m| {
        matches!(m["role"].as_str(), Some("user" | "tool"))
            && (m["content"].is_string() || m["content"].is_array())
    });
    match last {
        // A message with images: the reminder is one more text part at its end.
        Some(m) if m["content"].is_array() => {
            if let Some(parts) = m["content"].as_array_mut() {
                parts.push(json!({"type": "text", "text": reminder}));
            }
        }
        Some(m) => {
            let content = m["content"].as_str().unwrap_or_default();
            m["content"] = Value::String(if content.is_empty() {
                reminder.to_owned()
            } else {
                format!("{content}\n\n{reminder}")
            });
        }
        None => messages.push(json!({"role": "user", "content": reminder})),
    }
}

/// Official OpenAI reasoning models reject `max_tokens`; they want `max_completion_tokens`.
/// Other servers mostly know only `max_tokens`, so the client renames it for api.openai.com.
pub fn use_max_completion_tokens(body: &mut Value) {
    if let Some(obj) = body.as_object_mut()
        && let Some(v) = obj.remove("max_tokens")
    {
        obj.insert("max_completion_tokens".into(), v);
    }
}

fn assistant_message(parts: &[&AssistantPart]) -> Option<Value> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for part in parts {
        match part {
            AssistantPart::Text { text: t } => text.push_str(t),
            AssistantPart::Thinking { text: t, .. } => reasoning.push_str(t),
            AssistantPart::RedactedThinking { .. } => {}
            AssistantPart::ToolCall(c) => calls.push(json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": sendable_arguments(&c.arguments)},
            })),
        }
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
    if !calls.is_empty() {
        // Servers that stream `reasoning_content` (DeepSeek, Kimi, vLLM) want it back while
        // a tool-call loop is in progress; on plain answers it is dropped, as they advise.
        if !reasoning.is_empty() {
            m["reasoning_content"] = Value::String(reasoning);
        }
        m["tool_calls"] = Value::Array(calls);
    }
    Some(m)
}

/// Arguments as sent back in history: servers that render history through a chat template
/// parse them, so invalid JSON (a truncated call) would fail every later request.
fn sendable_arguments(args: &str) -> String {
    // Checked on every request for every call in the history: validated without building a
    // tree (an object is what starts with `{` and parses).
    let object = args.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(args).is_ok();
    if object {
        args.to_owned()
    } else {
        "{}".to_owned()
    }
}

/// A tool call being assembled from fragments.
#[derive(Clone, Debug, Default)]
struct PartialCall {
    index: Option<i64>,
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a Chat Completions stream into a [`Response`].
#[derive(Clone, Debug, Default)]
pub struct Assembler {
    text: String,
    reasoning: String,
    refusal: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    data_events: usize,
}

impl Assembler {
    /// An empty assembler.
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Whether `[DONE]` was seen (nothing after it matters).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Takes one event; text and reasoning deltas are reported to `on` as they arrive.
    /// An error reported by the server inside the stream is returned as
    /// [`LlmError::Provider`]; what was assembled before it stays available.
    pub fn push(
        &mut self,
        ev: &SseEvent,
        on: &mut dyn FnMut(StreamNotice),
    ) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        self.data_events += 1;
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(_) if ev.event == "error" => {
                return Err(LlmError::Provider {
                    message: shorten(data),
                    retryable: false,
                });
            }
            Err(e) => {
                return Err(LlmError::Malformed(format!(
                    "a stream event was not valid JSON ({e}): {}",
                    shorten(data)
                )));
            }
        };
        if let Some(u) = chunk.usage {
            self.usage = Some(usage_of(u));
        }
        for choice in chunk.choices.iter().flatten() {
            // With several choices (n > 1) only the first one is kept.
            if choice.index.and_then(|i| i.0).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(u) = choice.usage {
                self.usage = Some(usage_of(u));
            }
            if let Some(delta) = &choice.delta {
                self.apply(delta, on);
            }
            if let Some(reason) = choice.finish_reason.as_ref().and_then(|r| r.non_empty()) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        if let Some(err) = stream_error(&chunk, &ev.event) {
            return Err(err);
        }
        Ok(())
    }

    fn apply(&mut self, delta: &Delta, on: &mut dyn FnMut(StreamNotice)) {
        let reasoning = delta
            .reasoning_content
            .as_ref()
            .and_then(|r| r.non_empty())
            .or_else(|| delta.reasoning.as_ref().and_then(|r| r.non_empty()));
        if let Some(r) = reasoning {
            self.add_reasoning(r, on);
        }
        match &delta.content {
            Some(Content::Text(t)) if !t.is_empty() => self.add_text(t, on),
            Some(Content::Parts(parts)) => {
                for part in parts {
                    let kind = part.kind.as_ref().and_then(|k| k.non_empty());
                    if let Some(thinking) = &part.thinking {
                        self.add_thinking_content(thinking, on);
                    }
                    if matches!(kind, None | Some("text"))
                        && let Some(t) = part.text.as_ref().and_then(|t| t.non_empty())
                    {
                        self.add_text(t, on);
                    }
                }
            }
            _ => {}
        }
        if let Some(r) = delta.refusal.as_ref().and_then(|r| r.non_empty()) {
            self.refusal.push_str(r);
        }
        for call in delta.tool_calls.iter().flatten() {
            self.merge_call(call, on);
        }
    }

    fn add_text(&mut self, t: &str, on: &mut dyn FnMut(StreamNotice)) {
        self.text.push_str(t);
        on(StreamNotice::Text(t.to_owned()));
    }

    fn add_reasoning(&mut self, t: &str, on: &mut dyn FnMut(StreamNotice)) {
        self.reasoning.push_str(t);
        on(StreamNotice::Reasoning(t.to_owned()));
    }

    fn add_thinking_content(&mut self, c: &Content, on: &mut dyn FnMut(StreamNotice)) {
        match c {
            Content::Text(t) if !t.is_empty() => self.add_reasoning(t, on),
            Content::Parts(parts) => {
                for p in parts {
                    if let Some(t) = p.text.as_ref().and_then(|t| t.non_empty()) {
                        self.add_reasoning(t, on);
                    }
                }
            }
            _ => {}
        }
    }

    fn merge_call(&mut self, frag: &ToolCallDelta, on: &mut dyn FnMut(StreamNotice)) {
        let index = frag.index.and_then(|i| i.0);
        let id = frag.id.as_ref().and_then(|t| t.non_empty());
        let func = frag.function.as_ref();
        let name = func
            .and_then(|f| f.name.as_ref())
            .and_then(|t| t.non_empty());
        let slot = match index {
            Some(i) => match self.calls.iter().rposition(|c| c.index == Some(i)) {
                // Some proxies give every parallel call index 0: a named fragment arriving
                // after a complete call at the same index starts a new one.
                Some(pos) if name.is_some() && self.calls[pos].is_complete() => None,
                found => found,
            },
            // Without an index, a fragment that names nothing continues the previous call;
            // anything else is a new call (Mistral, Gemini send each call whole).
            None if id.is_none() && name.is_none() && !self.calls.is_empty() => {
                Some(self.calls.len() - 1)
            }
            None => None,
        };
        let slot = match slot {
            Some(pos) => pos,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = id.to_owned();
        }
        if let Some(name) = name
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        let piece: &str = match func.and_then(|f| f.arguments.as_ref()) {
            Some(Args::Text(t)) => t,
            Some(Args::Json(j)) => j,
            _ => return,
        };
        if !piece.is_empty() {
            call.arguments.push_str(piece);
            on(StreamNotice::ToolArgs(piece.to_owned()));
        }
    }

    /// The assembled response, provided the stream completed: `[DONE]`, a `finish_reason`, or
    /// a plain end after text. An end with no data at all, or in the middle of tool calls
    /// without any sign of completion, means the stream broke: its calls must not run.
    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            if self.data_events == 0 {
                return Err(LlmError::Network(
                    "the stream ended before any data arrived".into(),
                ));
            }
            if !self.calls.is_empty() {
                return Err(LlmError::Network(
                    "the stream ended in the middle of a tool call".into(),
                ));
            }
        }
        Ok(self.into_response())
    }

    /// Whatever was assembled so far, complete or not (for tests and diagnostics).
    pub fn into_response(self) -> Response {
        let mut parts = Vec::new();
        if !self.reasoning.is_empty() {
            parts.push(AssistantPart::Thinking {
                text: self.reasoning,
                signature: None,
            });
        }
        if !self.text.is_empty() {
            parts.push(AssistantPart::Text { text: self.text });
        }
        for c in self.calls {
            // A fragment list with neither name nor arguments is noise, not a call.
            if c.name.is_empty() && c.arguments.is_empty() {
                continue;
            }
            parts.push(AssistantPart::ToolCall(ToolCall {
                id: if c.id.is_empty() { new_call_id() } else { c.id },
                name: c.name,
                arguments: c.arguments,
            }));
        }
        Response {
            parts,
            refusal: (!self.refusal.is_empty()).then_some(self.refusal),
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
    }
}

impl PartialCall {
    fn is_complete(&self) -> bool {
        !self.name.is_empty()
            && !self.arguments.is_empty()
            && serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// A fresh tool-call id for servers that send none (ids must be unique within a history).
pub fn new_call_id() -> String {
    format!(
        "call_{:016x}{:08x}",
        rand::random::<u64>(),
        rand::random::<u32>()
    )
}

fn usage_of(u: wire::WireUsage) -> Usage {
    Usage {
        input_tokens: u.prompt_tokens.and_then(|v| v.0).unwrap_or(0),
        output_tokens: u.completion_tokens.and_then(|v| v.0).unwrap_or(0),
        cached_input_tokens: 0,
    }
}

/// The error a chunk reports, if any: `{"error": ...}`, vLLM's `{"object": "error", ...}`, or
/// anything under `event: error`.
fn stream_error(chunk: &Chunk, event: &str) -> Option<LlmError> {
    let vllm = chunk.object.as_ref().and_then(|o| o.non_empty()) == Some("error");
    let err: Value = match &chunk.error {
        Some(Value::Null) | None if vllm || event == "error" => json!({
            "message": chunk.message.clone().unwrap_or(Value::Null),
            "code": chunk.code.clone().unwrap_or(Value::Null),
            "type": chunk.kind.clone().unwrap_or(Value::Null),
        }),
        Some(Value::Null) | None => return None,
        Some(e) => e.clone(),
    };
    Some(provider_error(&err))
}

/// Turns an OpenAI-style error object (or string) into a provider error.
pub fn provider_error(err: &Value) -> LlmError {
    let message = match err {
        Value::String(s) => s.clone(),
        _ => match err.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(v) if !v.is_null() => v.to_string(),
            _ => shorten(&err.to_string()),
        },
    };
    let mut retryable = false;
    for key in ["code", "type", "status", "status_code"] {
        match err.get(key) {
            Some(Value::Number(n)) => {
                if let Some(n) = n.as_u64() {
                    retryable |= retryable_status(n);
                }
            }
            Some(Value::String(s)) => retryable |= retryable_code(s),
            _ => {}
        }
    }
    LlmError::Provider { message, retryable }
}

fn retryable_status(n: u64) -> bool {
    u16::try_from(n).is_ok_and(super::client::retryable_status)
}

/// Error codes that mean "try again later" across OpenAI-compatible servers.
fn retryable_code(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    if let Ok(n) = s.parse::<u64>() {
        return retryable_status(n);
    }
    [
        "rate_limit",
        "overloaded",
        "server_error",
        "internal",
        "unavailable",
        "timeout",
        "try again",
    ]
    .iter()
    .any(|k| s.contains(k))
}

fn shorten(s: &str) -> String {
    super::client::shorten(s, 500)
}

#[cfg(test)]
mod tests;
