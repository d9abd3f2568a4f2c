//! Anthropic Messages wire format: request body and stream assembly.
//!
//! Events are classified by their JSON `type` (some relays drop the `event:` lines). Content
//! blocks are keyed by `index`; thinking blocks keep their signatures and redacted thinking its
//! opaque data, because both must be sent back verbatim in later requests.

use super::sse::SseEvent;
use super::wire_cache::WireCache;
use super::{AssistantPart, LlmError, Message, Request, Response, StreamNotice, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::ops::Range;

/// The `anthropic-version` header value rein speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Output budget when the request leaves it open (the Messages API requires one).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body for `POST {base}/v1/messages`.
pub fn build_body(req: &Request) -> Value {
    // The reminder is a text block of its own at the end of the final user turn, so the tool
    // results before it stay in the cached prefix.
    let mut messages = render(&req.messages);
    if let Some(reminder) = &req.reminder {
        add_reminder(&mut messages, reminder);
    }
    mark_cache_breakpoints(&mut messages, req.reminder.is_some());
    let mut body = envelope(req);
    body["messages"] = Value::Array(messages);
    body
}

/// The body of [`build_body`] as JSON text, serialising only what `cache` does not hold yet.
pub fn build_body_text(req: &Request, cache: &mut WireCache) -> String {
    let segments = segments(&req.messages);
    // The last two turns carry the cache breakpoints: always built fresh.
    let mut assembled = cache.assemble(&req.messages, &segments, render, 2, req.mark);
    if let Some(reminder) = &req.reminder {
        add_reminder(&mut assembled.tail, reminder);
    }
    mark_cache_breakpoints(&mut assembled.tail, req.reminder.is_some());
    let envelope = cache.envelope(req, Value::Null, || (envelope(req), None));
    assembled.body(&envelope, "messages")
}

/// Which turn a message belongs to: `None` when it adds no block (it joins its neighbours).
fn role(msg: &Message) -> Option<&'static str> {
    let (role, empty) = match msg {
        Message::User { content } => ("user", content.is_empty()),
        Message::UserImage { .. } | Message::ToolResult { .. } => ("user", false),
        Message::Assistant { parts } => ("assistant", !parts.iter().any(sends_a_block)),
    };
    (!empty).then_some(role)
}

/// Where the history may be cut: between turns (consecutive messages of one role are one turn,
/// because the API requires user and assistant turns to alternate).
fn segments(msgs: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut current = None;
    for (i, msg) in msgs.iter().enumerate() {
        match (current, role(msg)) {
            (_, None) => {}
            (None, r) => current = r,
            (Some(c), Some(r)) if c == r => {}
            (Some(_), r) => {
                out.push(start..i);
                start = i;
                current = r;
            }
        }
    }
    if start < msgs.len() {
        out.push(start..msgs.len());
    }
    out
}

/// The turns of `msgs` (without the reminder and the cache markers).
fn render(msgs: &[Message]) -> Vec<Value> {
    // (role, content blocks); consecutive entries of one role are merged.
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for msg in msgs {
        let (role, blocks) = match msg {
            Message::User { content } => {
                let blocks = if content.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "text", "text": content})]
                };
                ("user", blocks)
            }
            Message::UserImage { image } => ("user", vec![image_block(image)]),
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
            Message::Assistant { parts } => ("assistant", assistant_blocks(parts)),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Tool results must open the user turn, before any text; images come next,
                // before the text about them, as Anthropic's vision guide advises.
                blocks.sort_by_key(|b| match b["type"].as_str() {
                    Some("tool_result") => 0,
                    Some("image") => 1,
                    _ => 2,
                });
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// An image as a base64 `image` block; one whose bytes are gone is a text note instead.
fn image_block(image: &crate::images::Image) -> Value {
    match image.base64() {
        Some(data) => json!({
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": image.meta.media_type.as_str(),
                "data": data,
            },
        }),
        None => json!({"type": "text", "text": image.note()}),
    }
}

/// The reminder as the last text block of the final user turn (or a user turn of its own).
fn add_reminder(turns: &mut Vec<Value>, reminder: &str) {
    if reminder.is_empty() {
        return;
    }
    let block = json!({"type": "text", "text": reminder});
    match turns.last_mut() {
        Some(last) if last["role"] == "user" => {
            if let Some(blocks) = last["content"].as_array_mut() {
                blocks.push(block);
            }
        }
        _ => turns.push(json!({"role": "user", "content": [block]})),
    }
}

/// Everything in the body but the messages.
fn envelope(req: &Request) -> Value {
    let max_tokens = if req.max_tokens > 0 {
        req.max_tokens
    } else {
        DEFAULT_MAX_TOKENS
    };
    let mut body = json!({
        "model": req.model,
        "max_tokens": max_tokens,
        "stream": true,
    });
    if !req.system.is_empty() {
        // A cache breakpoint here caches the tools and the system prompt together.
        body["system"] =
            json!([{"type": "text", "text": req.system, "cache_control": {"type": "ephemeral"}}]);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
        if req.force_tool {
            body["tool_choice"] = json!({"type": "any"});
        }
    }
    body
}

/// Marks prompt-cache breakpoints so each request reuses the previous one's prefix: the end of
/// the final turn (before the late reminder, which is rebuilt every request) and the end of the
/// turn before. Thinking blocks can't carry a marker, so they are skipped.
fn mark_cache_breakpoints(messages: &mut [Value], ends_with_reminder: bool) {
    let marker = json!({"type": "ephemeral"});
    let n = messages.len();
    let mut marks = 0;
    for (i, msg) in messages.iter_mut().enumerate().rev().take(2) {
        let Some(blocks) = msg["content"].as_array_mut() else {
            continue;
        };
        // In the final turn, leave the last block (the reminder) outside the cached prefix.
        let end = if i + 1 == n && ends_with_reminder {
            blocks.len().saturating_sub(1)
        } else {
            blocks.len()
        };
        if let Some(block) = blocks[..end]
            .iter_mut()
            .rev()
            .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        {
            block["cache_control"] = marker.clone();
            marks += 1;
        }
    }
    debug_assert!(marks <= 2);
}

/// Whether [`assistant_blocks`] makes a block of `part`.
fn sends_a_block(part: &AssistantPart) -> bool {
    match part {
        AssistantPart::Text { text } => !text.is_empty(),
        AssistantPart::Thinking { signature, .. } => signature.is_some(),
        AssistantPart::RedactedThinking { .. } | AssistantPart::ToolCall(_) => true,
    }
}

fn assistant_blocks(parts: &[AssistantPart]) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            AssistantPart::Text { text } if !text.is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            AssistantPart::Text { .. } => {}
            // Unsigned thinking (from a broken stream or another provider) is rejected by the
            // API, so only signed blocks go back.
            AssistantPart::Thinking {
                text,
                signature: Some(sig),
            } => blocks.push(json!({"type": "thinking", "thinking": text, "signature": sig})),
            AssistantPart::Thinking { .. } => {}
            AssistantPart::RedactedThinking { data } => {
                blocks.push(json!({"type": "redacted_thinking", "data": data}));
            }
            AssistantPart::ToolCall(c) => {
                // `input` must be an object; a truncated call's invalid arguments become `{}`
                // (its tool result already told the model what went wrong).
                let input = match serde_json::from_str::<Value>(&c.arguments) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({}),
                };
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
        }
    }
    blocks
}

/// One stream event; a flat struct is faster than a tagged enum and tolerates new fields.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    // Rare, large fields are boxed: the struct is built and moved for every delta.
    #[serde(default)]
    message: Option<Box<StartMessage>>,
    #[serde(default)]
    content_block: Option<Box<BlockStart>>,
    #[serde(default, borrow)]
    delta: Option<EventDelta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct BlockStart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
struct EventDelta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy, Debug)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Clone, Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        start_input: Option<Value>,
    },
    /// A block type rein does not use (e.g. server tool results); dropped.
    Other,
}

/// Assembles a Messages stream into a [`Response`].
#[derive(Clone, Debug, Default)]
pub struct Assembler {
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
    stopped: bool,
    pings: usize,
}

impl Assembler {
    /// An empty assembler.
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Whether `message_stop` was seen.
    pub fn is_done(&self) -> bool {
        self.stopped
    }

    /// Number of `ping` events seen.
    pub fn pings(&self) -> usize {
        self.pings
    }

    /// Takes one event; text and thinking deltas are reported to `on` as they arrive.
    /// An `error` event is returned as [`LlmError::Provider`] (overloaded and rate limits are
    /// retryable); what was assembled before it stays available.
    pub fn push(
        &mut self,
        ev: &SseEvent,
        on: &mut dyn FnMut(StreamNotice),
    ) -> Result<(), LlmError> {
        let data = ev.data.trim();
        if data.is_empty() || self.stopped {
            return Ok(());
        }
        let event: Event = serde_json::from_str(data)
            .map_err(|e| LlmError::Malformed(format!("a stream event was not valid JSON ({e})")))?;
        match event.kind.as_ref() {
            "message_start" => {
                if let Some(u) = event.message.and_then(|m| m.usage) {
                    self.merge_usage(u);
                }
            }
            "content_block_start" => {
                let index = event.index.unwrap_or(self.blocks.len() as u64);
                let block = match event.content_block {
                    Some(b) => start_block(*b),
                    None => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                if let Some(d) = event.delta {
                    self.apply_delta(event.index, d, on)?;
                }
            }
            "message_delta" => {
                if let Some(r) = event.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(r);
                }
                if let Some(u) = event.usage {
                    self.merge_usage(u);
                }
            }
            "message_stop" => self.stopped = true,
            "ping" => self.pings += 1,
            "error" => return Err(error_of(event.error.as_deref())),
            // content_block_stop needs no action; unknown events are ignored, as the API asks.
            _ => {}
        }
        Ok(())
    }

    fn apply_delta(
        &mut self,
        index: Option<u64>,
        d: EventDelta,
        on: &mut dyn FnMut(StreamNotice),
    ) -> Result<(), LlmError> {
        let pos = match index {
            Some(i) => self.blocks.iter().rposition(|(bi, _)| *bi == i),
            None => self.blocks.len().checked_sub(1),
        };
        let kind = d.kind.as_deref().unwrap_or("");
        let pos = match pos {
            Some(p) => p,
            // Lenient: a text or thinking delta without its block start opens the block.
            None if kind == "text_delta" || kind == "thinking_delta" => {
                let block = if kind == "text_delta" {
                    Block::Text(String::new())
                } else {
                    Block::Thinking {
                        text: String::new(),
                        signature: String::new(),
                    }
                };
                let i = index.unwrap_or(self.blocks.len() as u64);
                self.blocks.push((i, block));
                self.blocks.len() - 1
            }
            None => {
                return Err(LlmError::Malformed(format!(
                    "a {kind} arrived for a content block that was never started"
                )));
            }
        };
        match (&mut self.blocks[pos].1, kind) {
            (Block::Text(t), "text_delta") => {
                if let Some(s) = d.text.filter(|s| !s.is_empty()) {
                    t.push_str(&s);
                    on(StreamNotice::Text(s.into_owned()));
                }
            }
            (Block::Thinking { text, .. }, "thinking_delta") => {
                if let Some(s) = d.thinking.filter(|s| !s.is_empty()) {
                    text.push_str(&s);
                    on(StreamNotice::Reasoning(s.into_owned()));
                }
            }
            (Block::Thinking { signature, .. }, "signature_delta") => {
                if let Some(s) = d.signature {
                    signature.push_str(&s);
                }
            }
            (Block::ToolUse { json, .. }, "input_json_delta") => {
                if let Some(s) = d.partial_json {
                    json.push_str(&s);
                    on(StreamNotice::ToolArgs(s.into_owned()));
                }
            }
            // citations_delta and deltas for blocks rein drops.
            _ => {}
        }
        Ok(())
    }

    fn merge_usage(&mut self, u: WireUsage) {
        // Later values win field by field: compatible servers often report the real input
        // count only in message_delta.
        let cur = self.usage.get_or_insert_with(WireUsage::default);
        cur.input_tokens = u.input_tokens.or(cur.input_tokens);
        cur.output_tokens = u.output_tokens.or(cur.output_tokens);
        cur.cache_read_input_tokens = u.cache_read_input_tokens.or(cur.cache_read_input_tokens);
        cur.cache_creation_input_tokens = u
            .cache_creation_input_tokens
            .or(cur.cache_creation_input_tokens);
    }

    /// The assembled response, provided `message_stop` arrived; a stream that ends without it
    /// was cut off, so none of its tool calls may run.
    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.stopped {
            return Err(LlmError::Network(
                "the stream ended before message_stop".into(),
            ));
        }
        Ok(self.into_response())
    }

    /// Whatever was assembled so far, complete or not (for tests and diagnostics).
    pub fn into_response(self) -> Response {
        let mut parts = Vec::with_capacity(self.blocks.len());
        for (_, block) in self.blocks {
            match block {
                Block::Text(text) if !text.is_empty() => parts.push(AssistantPart::Text { text }),
                Block::Thinking { text, signature } => parts.push(AssistantPart::Thinking {
                    text,
                    signature: (!signature.is_empty()).then_some(signature),
                }),
                Block::Redacted(data) => parts.push(AssistantPart::RedactedThinking { data }),
                Block::ToolUse {
                    id,
                    name,
                    json,
                    start_input,
                } => {
                    // Empty streamed input means the input from content_block_start (`{}`).
                    // Input cut off by max_tokens stays as the raw, invalid JSON: the tool
                    // dispatcher then answers the call with an "arguments were not valid
                    // JSON" error result instead of running it, and the history stays valid.
                    let arguments = if json.trim().is_empty() {
                        match start_input {
                            Some(v @ Value::Object(_)) => v.to_string(),
                            _ => "{}".to_owned(),
                        }
                    } else {
                        json
                    };
                    parts.push(AssistantPart::ToolCall(ToolCall {
                        id: if id.is_empty() {
                            super::openai::new_call_id()
                        } else {
                            id
                        },
                        name,
                        arguments,
                    }));
                }
                Block::Text(_) | Block::Other => {}
            }
        }
        Response {
            parts,
            refusal: None,
            finish_reason: self.stop_reason,
            usage: self.usage.map(usage_of),
        }
    }
}

fn start_block(b: BlockStart) -> Block {
    match b.kind.as_str() {
        "text" => Block::Text(b.text.unwrap_or_default()),
        "thinking" => Block::Thinking {
            text: b.thinking.unwrap_or_default(),
            signature: b.signature.unwrap_or_default(),
        },
        "redacted_thinking" => Block::Redacted(b.data.unwrap_or_default()),
        "tool_use" => Block::ToolUse {
            id: b.id.unwrap_or_default(),
            name: b.name.unwrap_or_default(),
            json: String::new(),
            start_input: b.input,
        },
        _ => Block::Other,
    }
}

fn usage_of(u: WireUsage) -> Usage {
    Usage {
        input_tokens: u.input_tokens.unwrap_or(0)
            + u.cache_read_input_tokens.unwrap_or(0)
            + u.cache_creation_input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        cached_input_tokens: u.cache_read_input_tokens.unwrap_or(0),
    }
}

/// Turns an Anthropic error object (`{"type": "overloaded_error", "message": ...}`) into a
/// provider error; overload, rate limits and internal errors are worth retrying.
pub fn error_of(err: Option<&Value>) -> LlmError {
    let kind = err
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    LlmError::Provider {
        message: format!("{message} ({kind})"),
        retryable: matches!(
            kind,
            "overloaded_error" | "rate_limit_error" | "api_error" | "timeout_error"
        ),
    }
}

#[cfg(test)]
mod tests;
