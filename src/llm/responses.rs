//! OpenAI Responses wire format (`POST {base}/responses`): request body and stream assembly.
//!
//! rein keeps no state on the server (`store: false`): every request carries the whole
//! conversation as input items. Reasoning comes back encrypted (`include:
//! ["reasoning.encrypted_content"]`) and is sent back verbatim in later requests, so the model
//! keeps its chain of thought across tool calls without OpenAI storing anything. Output items
//! are keyed by `output_index`; text and reasoning summaries stream as deltas, and each
//! `response.output_item.done` carries the finished item, which wins over the deltas.

mod wire;

use super::sse::SseEvent;
use super::wire_cache::WireCache;
use super::{
    AssistantPart, LlmError, Message, Reasoning, Request, Response, StreamNotice, ToolCall, Usage,
};
use serde_json::{Value, json};
use std::ops::Range;
use wire::{Event, WireItem, WireUsage};

/// The request body for `POST {base}/responses`.
pub fn build_body(req: &Request, reasoning: &Reasoning) -> Value {
    let mut input = render(&req.messages);
    if let Some(reminder) = &req.reminder {
        fold_reminder(&mut input, reminder);
    }
    let mut body = envelope(req, reasoning);
    body["input"] = Value::Array(input);
    body
}

/// The body of [`build_body`] as JSON text, serialising only what `cache` does not hold yet.
pub fn build_body_text(req: &Request, reasoning: &Reasoning, cache: &mut WireCache) -> String {
    // Every message's items stand alone: each message is a segment.
    let segments: Vec<Range<usize>> = (0..req.messages.len()).map(|i| i..i + 1).collect();
    let mut assembled = cache.assemble(&req.messages, &segments, render, 1, req.mark);
    if let Some(reminder) = &req.reminder {
        fold_reminder(&mut assembled.tail, reminder);
    }
    // The reasoning object is all `envelope` reads besides the request.
    let extra = reasoning_object(reasoning, &req.model).unwrap_or(Value::Null);
    let envelope = cache.envelope(req, extra, || (envelope(req, reasoning), None));
    assembled.body(&envelope, "input")
}

/// The input items of `msgs` (without the reminder).
fn render(msgs: &[Message]) -> Vec<Value> {
    let mut input = Vec::with_capacity(msgs.len() + 1);
    for msg in msgs {
        match msg {
            Message::User { content } => {
                if !content.is_empty() {
                    input.push(user_item(content));
                }
            }
            Message::UserImage { image } => input.push(match image.data_url() {
                Some(url) => json!({
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": url}],
                }),
                None => user_item(&image.note()),
            }),
            Message::Assistant { parts } => assistant_items(parts, &mut input),
            Message::ToolResult {
                call_id, content, ..
            } => input.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": content,
            })),
        }
    }
    input
}

/// Everything in the body but the input items.
fn envelope(req: &Request, reasoning: &Reasoning) -> Value {
    let mut body = json!({
        "model": req.model,
        "stream": true,
        // Nothing is kept on the server; reasoning travels encrypted in the input instead.
        "store": false,
    });
    if !req.system.is_empty() {
        body["instructions"] = Value::String(req.system.clone());
    }
    if req.max_tokens > 0 {
        body["max_output_tokens"] = json!(req.max_tokens);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": false,
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!(if req.force_tool { "required" } else { "auto" });
    }
    if let Some(r) = reasoning_object(reasoning, &req.model) {
        body["reasoning"] = r;
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body
}

/// The `reasoning` object: what the config says, else summaries for a reasoning model (other
/// models reject the object, so it is left out for them).
fn reasoning_object(r: &Reasoning, model: &str) -> Option<Value> {
    let summary = r
        .summary
        .clone()
        .or_else(|| is_reasoning_model(model).then(|| "auto".to_owned()));
    if r.effort.is_none() && summary.is_none() {
        return None;
    }
    let mut obj = serde_json::Map::new();
    if let Some(e) = &r.effort {
        obj.insert("effort".into(), Value::String(e.clone()));
    }
    // `none` in the config means "no summaries": the field is left out.
    if let Some(s) = summary.filter(|s| s != "none") {
        obj.insert("summary".into(), Value::String(s));
    }
    Some(Value::Object(obj))
}

/// Whether `model` is one of OpenAI's reasoning families (GPT-5, o-series, codex-mini).
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name);
    if name.starts_with("gpt-5-chat") {
        return false;
    }
    ["gpt-5", "o1", "o3", "o4", "codex-mini", "gpt-oss"]
        .iter()
        .any(|p| name.starts_with(p))
}

fn user_item(text: &str) -> Value {
    json!({
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    })
}

fn assistant_items(parts: &[AssistantPart], input: &mut Vec<Value>) {
    for part in parts {
        match part {
            AssistantPart::Text { text } if !text.is_empty() => input.push(json!({
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            })),
            // Only encrypted reasoning can go back: without it the item means nothing to the
            // server (and unsigned text from another provider would be rejected).
            AssistantPart::Thinking {
                text,
                signature: Some(encrypted),
            } => {
                let summary: Vec<Value> = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "summary_text", "text": text})]
                };
                input.push(json!({
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": encrypted,
                }));
            }
            AssistantPart::ToolCall(c) => input.push(json!({
                "type": "function_call",
                "call_id": c.id,
                "name": c.name,
                "arguments": sendable_arguments(&c.arguments),
            })),
            AssistantPart::Text { .. }
            | AssistantPart::Thinking { .. }
            | AssistantPart::RedactedThinking { .. } => {}
        }
    }
}

/// Arguments as sent back: a truncated call's invalid JSON becomes `{}` (its tool result
/// already told the model what went wrong).
fn sendable_arguments(args: &str) -> String {
    match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(_)) => args.to_owned(),
        _ => "{}".to_owned(),
    }
}

/// Appends the reminder to the last user message or tool output, so everything before it
/// stays byte-identical for the prompt cache; else it becomes a user message of its own.
fn fold_reminder(input: &mut Vec<Value>, reminder: &str) {
    let Some(last) = input.last_mut() else {
        input.push(user_item(reminder));
        return;
    };
    let joined = |t: &str| {
        if t.is_empty() {
            reminder.to_owned()
        } else {
            format!("{t}\n\n{reminder}")
        }
    };
    if last["type"] == "function_call_output"
        && let Some(out) = last["output"].as_str()
    {
        last["output"] = Value::String(joined(out));
    } else if last["type"] == "message"
        && last["role"] == "user"
        && let Some(part) = last["content"].get_mut(0)
        && let Some(t) = part["text"].as_str()
    {
        part["text"] = Value::String(joined(t));
    } else if last["type"] == "message"
        && last["role"] == "user"
        && let Some(parts) = last["content"].as_array_mut()
    {
        // An image message: the reminder is a text part after the image.
        parts.push(json!({"type": "input_text", "text": reminder}));
    } else {
        input.push(user_item(reminder));
    }
}

/// One output item being assembled.
#[derive(Clone, Debug)]
enum Item {
    Message(String),
    Reasoning {
        /// Summary parts, in order (joined with a blank line).
        summary: Vec<String>,
        encrypted: Option<String>,
    },
    Call {
        call_id: String,
        name: String,
        arguments: String,
        done: bool,
    },
    /// Something rein does not use (web search calls and the like).
    Other,
}

/// Assembles a Responses stream into a [`Response`].
#[derive(Clone, Debug, Default)]
pub struct Assembler {
    items: Vec<(u64, Item)>,
    refusal: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Assembler {
    /// An empty assembler.
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Whether `response.completed` or `response.incomplete` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Takes one event; text and reasoning-summary deltas are reported to `on` as they arrive.
    /// `error` and `response.failed` are returned as [`LlmError::Provider`].
    pub fn push(
        &mut self,
        ev: &SseEvent,
        on: &mut dyn FnMut(StreamNotice),
    ) -> Result<(), LlmError> {
        let data = ev.data.trim();
        if data.is_empty() || self.done || data == "[DONE]" {
            return Ok(());
        }
        let event: Event = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "a stream event was not valid JSON ({e}): {}",
                shorten(data)
            ))
        })?;
        // The JSON `type` decides; the `event:` line is only a fallback for relays.
        let kind = event.kind.as_deref().unwrap_or(ev.event.as_str());
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                let done = kind.ends_with(".done");
                if let Some(item) = event.item {
                    self.item(event.output_index, *item, done, on);
                }
            }
            "response.output_text.delta" => {
                if let Some(d) = event.delta.filter(|d| !d.is_empty()) {
                    if let Item::Message(t) =
                        self.slot(event.output_index, || Item::Message(String::new()))
                    {
                        t.push_str(&d);
                    }
                    on(StreamNotice::Text(d));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.reasoning_delta(event.output_index, event.summary_index, event.delta, on);
            }
            "response.refusal.delta" => self.refusal.push_str(event.delta.as_deref().unwrap_or("")),
            "response.function_call_arguments.delta" => {
                if let Some(Item::Call {
                    arguments,
                    done: false,
                    ..
                }) = self.find(event.output_index)
                {
                    let piece = event.delta.unwrap_or_default();
                    arguments.push_str(&piece);
                    on(StreamNotice::ToolArgs(piece));
                }
            }
            "response.function_call_arguments.done" => {
                if let (
                    Some(Item::Call {
                        arguments, done, ..
                    }),
                    Some(a),
                ) = (self.find(event.output_index), event.arguments)
                {
                    *arguments = a;
                    *done = true;
                }
            }
            "response.completed" | "response.incomplete" => {
                self.complete(event.response.as_deref())
            }
            "response.failed" => return Err(failed(event.response.as_deref())),
            "error" => return Err(event_error(&event)),
            // created, in_progress, content_part.*, *.done for text: nothing to do.
            _ => {}
        }
        Ok(())
    }

    /// The item at `index`, if it was announced.
    fn find(&mut self, index: Option<u64>) -> Option<&mut Item> {
        let i = index?;
        self.items
            .iter_mut()
            .rev()
            .find(|(at, _)| *at == i)
            .map(|(_, item)| item)
    }

    /// The item at `index`, opened with `make` when a delta arrives before its announcement.
    fn slot(&mut self, index: Option<u64>, make: impl FnOnce() -> Item) -> &mut Item {
        let at = index.unwrap_or_else(|| self.items.last().map_or(0, |(i, _)| *i));
        let pos = match self.items.iter().rposition(|(i, _)| *i == at) {
            Some(p) => p,
            None => {
                self.items.push((at, make()));
                self.items.len() - 1
            }
        };
        &mut self.items[pos].1
    }

    fn reasoning_delta(
        &mut self,
        index: Option<u64>,
        part: Option<u64>,
        delta: Option<String>,
        on: &mut dyn FnMut(StreamNotice),
    ) {
        let Some(d) = delta.filter(|d| !d.is_empty()) else {
            return;
        };
        let make = || Item::Reasoning {
            summary: Vec::new(),
            encrypted: None,
        };
        if let Item::Reasoning { summary, .. } = self.slot(index, make) {
            let part = usize::try_from(part.unwrap_or(0)).unwrap_or(0);
            // A new summary part is a new paragraph of the thinking shown.
            if part >= summary.len() {
                if !summary.is_empty() {
                    on(StreamNotice::Reasoning("\n\n".into()));
                }
                summary.resize(part + 1, String::new());
            }
            summary[part].push_str(&d);
            on(StreamNotice::Reasoning(d));
        }
    }

    /// An item announced (`added`) or finished (`done`): the finished item is authoritative.
    fn item(
        &mut self,
        index: Option<u64>,
        w: WireItem,
        done: bool,
        on: &mut dyn FnMut(StreamNotice),
    ) {
        let at = index.unwrap_or(self.items.len() as u64);
        let new = match w.kind.as_str() {
            "message" => Item::Message(w.text()),
            "reasoning" => Item::Reasoning {
                summary: w.summary_texts(),
                encrypted: w.encrypted_content.filter(|e| !e.is_empty()),
            },
            "function_call" => Item::Call {
                call_id: w.call_id.or(w.id).unwrap_or_default(),
                name: w.name.unwrap_or_default(),
                arguments: w.arguments.unwrap_or_default(),
                done,
            },
            _ => Item::Other,
        };
        let Some(pos) = self.items.iter().rposition(|(i, _)| *i == at) else {
            // Announced and finished at once (or `done` without `added`): show what it says.
            if done {
                announce(&new, on);
            }
            self.items.push((at, new));
            return;
        };
        if !done {
            return;
        }
        let old = &mut self.items[pos].1;
        merge(old, new, on);
    }

    fn complete(&mut self, response: Option<&wire::WireResponse>) {
        self.done = true;
        let Some(r) = response else {
            return;
        };
        if let Some(u) = r.usage {
            self.usage = Some(usage_of(u));
        }
        let incomplete = r
            .incomplete_details
            .as_ref()
            .and_then(|d| d.reason.as_deref());
        self.finish_reason = Some(match (r.status.as_deref(), incomplete) {
            // `length` is what [`Response::truncated`] looks for.
            (_, Some("max_output_tokens")) => "length".to_owned(),
            (_, Some(reason)) => reason.to_owned(),
            (Some(status), None) => status.to_owned(),
            (None, None) => "completed".to_owned(),
        });
    }

    /// The assembled response, provided the stream completed: a stream that ends before
    /// `response.completed` was cut off, so none of its tool calls may run.
    pub fn finish(self) -> Result<Response, LlmError> {
        if !self.done {
            return Err(LlmError::Network(
                "the stream ended before response.completed".into(),
            ));
        }
        Ok(self.into_response())
    }

    /// Whatever was assembled so far, complete or not (for tests and diagnostics).
    pub fn into_response(self) -> Response {
        let mut items = self.items;
        items.sort_by_key(|(i, _)| *i);
        let mut parts = Vec::with_capacity(items.len());
        for (_, item) in items {
            match item {
                Item::Message(text) if !text.is_empty() => parts.push(AssistantPart::Text { text }),
                Item::Reasoning { summary, encrypted } => {
                    let text = summary.join("\n\n");
                    if text.is_empty() && encrypted.is_none() {
                        continue;
                    }
                    parts.push(AssistantPart::Thinking {
                        text,
                        signature: encrypted,
                    });
                }
                Item::Call {
                    call_id,
                    name,
                    arguments,
                    ..
                } => parts.push(AssistantPart::ToolCall(ToolCall {
                    id: if call_id.is_empty() {
                        super::openai::new_call_id()
                    } else {
                        call_id
                    },
                    name,
                    arguments,
                })),
                Item::Message(_) | Item::Other => {}
            }
        }
        Response {
            parts,
            refusal: (!self.refusal.is_empty()).then_some(self.refusal),
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
    }
}

/// Reports the text and reasoning of an item that arrived whole, without deltas.
fn announce(item: &Item, on: &mut dyn FnMut(StreamNotice)) {
    match item {
        Item::Message(t) if !t.is_empty() => on(StreamNotice::Text(t.clone())),
        Item::Reasoning { summary, .. } if !summary.is_empty() => {
            on(StreamNotice::Reasoning(summary.join("\n\n")));
        }
        _ => {}
    }
}

/// Takes the finished item over the streamed one, reporting text that never streamed.
fn merge(old: &mut Item, new: Item, on: &mut dyn FnMut(StreamNotice)) {
    match (&mut *old, new) {
        (Item::Message(t), Item::Message(full)) => {
            if t.is_empty() && !full.is_empty() {
                on(StreamNotice::Text(full.clone()));
            }
            if !full.is_empty() {
                *t = full;
            }
        }
        (
            Item::Reasoning { summary, encrypted },
            Item::Reasoning {
                summary: full,
                encrypted: enc,
            },
        ) => {
            if summary.is_empty() && !full.is_empty() {
                on(StreamNotice::Reasoning(full.join("\n\n")));
            }
            if !full.is_empty() {
                *summary = full;
            }
            if enc.is_some() {
                *encrypted = enc;
            }
        }
        (
            Item::Call {
                call_id,
                name,
                arguments,
                done,
            },
            Item::Call {
                call_id: id,
                name: n,
                arguments: a,
                ..
            },
        ) => {
            if !id.is_empty() {
                *call_id = id;
            }
            if !n.is_empty() {
                *name = n;
            }
            // The finished item's arguments are the whole text; the deltas may have gaps.
            if !a.is_empty() || arguments.is_empty() {
                *arguments = a;
            }
            *done = true;
        }
        (slot, new) => *slot = new,
    }
}

fn usage_of(u: WireUsage) -> Usage {
    Usage {
        input_tokens: u.input_tokens.unwrap_or(0),
        output_tokens: u.output_tokens.unwrap_or(0),
        cached_input_tokens: u
            .input_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
    }
}

/// `response.failed`: the response's `error` object says why.
fn failed(response: Option<&wire::WireResponse>) -> LlmError {
    match response.and_then(|r| r.error.as_ref()) {
        Some(err) => super::openai::provider_error(err),
        None => LlmError::Provider {
            message: "the response failed without saying why".into(),
            retryable: true,
        },
    }
}

/// An `error` event: `{"type": "error", "code", "message", "param"}` (or nested `error`).
fn event_error(event: &Event) -> LlmError {
    if let Some(err) = &event.error {
        return super::openai::provider_error(err);
    }
    let obj = json!({
        "message": event.message.clone().unwrap_or_else(|| "unknown error".into()),
        "code": event.code.clone().unwrap_or(Value::Null),
    });
    super::openai::provider_error(&obj)
}

fn shorten(s: &str) -> String {
    super::client::shorten(s, 500)
}

#[cfg(test)]
mod tests;
