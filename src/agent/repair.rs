//! Repairs for what small models get wrong in an answer: tool calls written as text instead of
//! structured calls, and echoes of the late reminder. The turn loop applies them to a finished
//! response before it is stored (see `turn.rs`).

use crate::llm::{AssistantPart, ToolCall};
use crate::protocol::QuirkKind;
use serde_json::Value;

/// Something the harness handled in an answer, for the person and the session file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quirk {
    /// What it was.
    pub kind: QuirkKind,
    /// The call it concerns, if any.
    pub call_id: Option<String>,
    /// Details for the session file.
    pub detail: String,
    /// One sentence for the person.
    pub text: String,
}

/// One answer after repair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// The parts to store: echoes taken out, text calls turned into tool-call parts.
    pub parts: Vec<AssistantPart>,
    /// The tool calls to run, in order.
    pub calls: Vec<ToolCall>,
    /// What was repaired.
    pub quirks: Vec<Quirk>,
    /// The answer was nothing but an echo of the reminder.
    pub echo_only: bool,
    /// What to tell the model when it wrote calls as text to tools that are not offered.
    pub nudge: Option<String>,
}

impl Repaired {
    /// The visible text of the repaired answer.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                AssistantPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Repairs one answer: drops echoes of the reminder and, when the model made no structured
/// call, recovers calls it wrote as text to `offered` tools (or prepares a nudge when it named
/// others and `may_nudge`).
pub fn repair(parts: Vec<AssistantPart>, offered: &[&str], may_nudge: bool) -> Repaired {
    let mut out = Repaired::default();
    let mut echoed = String::new();
    for part in parts {
        match part {
            AssistantPart::Text { text } => match strip_reminder_echo(&text) {
                Some(kept) => {
                    echoed.push_str(&text);
                    if !kept.is_empty() {
                        out.parts.push(AssistantPart::Text { text: kept });
                    }
                }
                None => out.parts.push(AssistantPart::Text { text }),
            },
            AssistantPart::ToolCall(mut c) => {
                if let Some(decoded) = decode_double_encoding(&c.arguments) {
                    out.quirks.push(Quirk {
                        kind: QuirkKind::DoublyEncodedArguments,
                        call_id: Some(c.id.clone()),
                        detail: format!("{}: {}", c.name, shorten(&c.arguments, 300)),
                        text: format!(
                            "The model sent the {} call's arguments doubly encoded; they were \
                             decoded.",
                            c.name
                        ),
                    });
                    c.arguments = decoded;
                }
                out.calls.push(c.clone());
                out.parts.push(AssistantPart::ToolCall(c));
            }
            other => out.parts.push(other),
        }
    }
    drop_invented_results(&mut out);
    if !echoed.is_empty() {
        out.quirks.push(Quirk {
            kind: QuirkKind::ReminderEcho,
            call_id: None,
            detail: shorten(&echoed, 300),
            text: "The model repeated rein's reminder; the echo was dropped.".into(),
        });
    }
    if out.calls.is_empty()
        && let Some(found) = find_text_calls(&out.text())
    {
        recover(&mut out, found, offered, may_nudge);
    }
    out.echo_only = !echoed.is_empty()
        && out.calls.is_empty()
        && out.nudge.is_none()
        && out.text().trim().is_empty();
    out
}

/// Where a model starts writing a tool's result itself (chat templates' tags for results).
const RESULT_TAGS: [&str; 3] = ["<tool_response>", "<tool_result>", "<|im_start|>tool"];

/// Cuts the answer's text where the model starts inventing a tool's result: that text and
/// everything after it (further calls, conclusions) rest on results no tool produced. The
/// calls before it still run and bring the real results.
fn drop_invented_results(out: &mut Repaired) {
    let mut cut: Option<String> = None;
    out.parts.retain_mut(|part| {
        let AssistantPart::Text { text } = part else {
            return true;
        };
        if let Some(dropped) = cut.as_mut() {
            dropped.push_str(text);
            return false;
        }
        let Some(at) = RESULT_TAGS.iter().filter_map(|t| text.find(t)).min() else {
            return true;
        };
        cut = Some(text[at..].to_string());
        text.truncate(at);
        !text.trim().is_empty()
    });
    if let Some(dropped) = cut {
        out.quirks.push(Quirk {
            kind: QuirkKind::InventedToolResult,
            call_id: None,
            detail: shorten(&dropped, 300),
            text: "The model wrote a tool's result itself; that text and what followed it were \
                   dropped."
                .into(),
        });
    }
}

/// Turns text calls into real ones when every tool they name is offered; otherwise prepares
/// the nudge (only for text that was unmistakably meant as calls).
fn recover(out: &mut Repaired, found: TextCalls, offered: &[&str], may_nudge: bool) {
    let format = found.format.as_str();
    let unknown: Vec<&str> = found
        .calls
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !offered.contains(n))
        .collect();
    if !unknown.is_empty() {
        if !(found.unmistakable() && may_nudge) {
            return;
        }
        let names = unknown.join(", ");
        out.nudge = Some(format!(
            "[rein] Nothing ran: your last message wrote a call to `{names}` as text, and there \
             is no tool of that name. Tools run only when you call them through the tool-calling \
             interface, never as text in your answer. The tools are: {}. Call one of them, or \
             answer in plain words if you are done.",
            offered.join(", ")
        ));
        out.quirks.push(Quirk {
            kind: QuirkKind::UnknownTextCall,
            call_id: None,
            detail: format!("{format}: {names}"),
            text: format!("The model wrote a call to `{names}` as text (no such tool); told it how to call tools."),
        });
        return;
    }
    out.parts
        .retain(|p| !matches!(p, AssistantPart::Text { .. }));
    if !found.rest.is_empty() {
        out.parts.push(AssistantPart::Text { text: found.rest });
    }
    for c in found.calls {
        let call = ToolCall {
            id: crate::llm::openai::new_call_id(),
            name: c.name,
            arguments: c.arguments,
        };
        out.quirks.push(Quirk {
            kind: QuirkKind::RecoveredToolCall,
            call_id: Some(call.id.clone()),
            detail: format!("{format}: {}", call.name),
            text: format!(
                "Recovered a {} call the model wrote as text ({format}).",
                call.name
            ),
        });
        out.parts.push(AssistantPart::ToolCall(call.clone()));
        out.calls.push(call);
    }
}

fn shorten(s: &str, max: usize) -> String {
    match crate::text::cut(s, max, crate::text::Unit::Chars) {
        Some(head) => format!("{head}..."),
        None => s.to_owned(),
    }
}

/// How a tool call written as text was spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextCallFormat {
    /// `<tool_call>{"name": .., "arguments": ..}</tool_call>` (Hermes, Qwen).
    Hermes,
    /// A fenced code block holding the call object.
    Fenced,
    /// The whole answer is the call object (or several).
    Bare,
    /// gpt-oss Harmony tokens: `to=functions.NAME ... <|message|>{..}`.
    Harmony,
}

impl TextCallFormat {
    /// The name recorded in the session file.
    pub fn as_str(self) -> &'static str {
        match self {
            TextCallFormat::Hermes => "hermes",
            TextCallFormat::Fenced => "fenced",
            TextCallFormat::Bare => "bare",
            TextCallFormat::Harmony => "harmony",
        }
    }
}

/// One tool call found in an answer's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextCall {
    /// The tool the model named.
    pub name: String,
    /// The arguments as JSON text (an object).
    pub arguments: String,
}

/// The tool calls an answer's text holds, and the prose around them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextCalls {
    /// The calls, in order.
    pub calls: Vec<TextCall>,
    /// How they were written.
    pub format: TextCallFormat,
    /// The text with the calls taken out (trimmed).
    pub rest: String,
}

impl TextCalls {
    /// Whether the text was meant as a call for certain: tags made for tool calls, or nothing
    /// but call objects. (A fenced block inside prose may just be an example.)
    pub fn unmistakable(&self) -> bool {
        matches!(
            self.format,
            TextCallFormat::Hermes | TextCallFormat::Harmony
        ) || self.rest.is_empty()
    }
}

/// Finds tool calls written as text. `None` when the text holds none (prose, code, JSON that
/// is not a call object).
pub fn find_text_calls(text: &str) -> Option<TextCalls> {
    hermes(text)
        .or_else(|| harmony(text))
        .or_else(|| bare(text))
        .or_else(|| fenced(text))
}

/// A call object: `{"name", "arguments"|"parameters"}` or OpenAI's `{"function": {..}}`, with
/// nothing else but `type` / `id`.
fn call_of(v: &Value) -> Option<TextCall> {
    let obj = v.as_object()?;
    if let Some(f) = obj.get("function").filter(|f| f.is_object()) {
        return obj
            .keys()
            .all(|k| matches!(k.as_str(), "function" | "type" | "id"))
            .then(|| call_of(f))
            .flatten();
    }
    let name = obj.get("name")?.as_str()?.trim();
    let args = obj.get("arguments").or_else(|| obj.get("parameters"));
    let known = obj.keys().all(|k| {
        matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "type" | "id"
        )
    });
    if name.is_empty() || !known {
        return None;
    }
    let arguments = match args {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(a @ Value::Object(_)) => a.to_string(),
        // Some models double-encode: the arguments as a JSON string holding the object.
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(a @ Value::Object(_)) => a.to_string(),
            _ => decode_double_encoding(s)?,
        },
        Some(_) => return None,
    };
    Some(TextCall {
        name: name.to_owned(),
        arguments,
    })
}

/// The object a tool call's arguments meant, when they came doubly encoded: a JSON string
/// that itself parses as an object (up to three levels deep), or an object whose quotes were
/// escaped in whole (`{\"command\": \"ls\"}`) or in part (`{"command": "ls\",\"x\":1}`). A
/// chat template that renders earlier calls' arguments as strings teaches a model all three.
/// `None` when they are an object already or no decoding gives one (a plain bad call: the
/// dispatcher answers it).
pub fn decode_double_encoding(arguments: &str) -> Option<String> {
    let mut value = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => return None,
        Ok(v) => v,
        Err(_) => return unescape_object(arguments),
    };
    for _ in 0..3 {
        let Value::String(inner) = &value else {
            return None;
        };
        value = serde_json::from_str::<Value>(inner).ok()?;
        if value.is_object() {
            return Some(value.to_string());
        }
    }
    None
}

/// Invalid JSON that is an object once its escaped quotes are read as quotes.
fn unescape_object(arguments: &str) -> Option<String> {
    if !arguments.contains("\\\"") {
        return None;
    }
    let object = |text: &str| {
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .map(|v| v.to_string())
    };
    let wrapped = serde_json::from_str::<Value>(&format!("\"{}\"", arguments.trim())).ok();
    wrapped
        .as_ref()
        .and_then(Value::as_str)
        .and_then(object)
        .or_else(|| object(&arguments.replace("\\\"", "\"")))
}

/// Call objects from one JSON value: an object or an array of objects, all calls.
fn calls_of(v: &Value) -> Option<Vec<TextCall>> {
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(call_of).collect(),
        Value::Array(_) => None,
        other => call_of(other).map(|c| vec![c]),
    }
}

/// The first JSON value at the start of `s` (after whitespace) and the bytes it took.
fn leading_json(s: &str) -> Option<(Value, usize)> {
    let mut it = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    let v = it.next()?.ok()?;
    Some((v, it.byte_offset()))
}

fn hermes(text: &str) -> Option<TextCalls> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut cur = text;
    while let Some(start) = cur.find(OPEN) {
        rest.push_str(&cur[..start]);
        let body = &cur[start + OPEN.len()..];
        let (v, used) = leading_json(body)?;
        calls.extend(calls_of(&v)?);
        let after = &body[used..];
        // The closing tag may be missing when the server cut the stop sequence.
        cur = match after.trim_start().strip_prefix(CLOSE) {
            Some(tail) => tail,
            None => after,
        };
    }
    rest.push_str(cur);
    (!calls.is_empty()).then(|| TextCalls {
        calls,
        format: TextCallFormat::Hermes,
        rest: rest.trim().to_owned(),
    })
}

fn harmony(text: &str) -> Option<TextCalls> {
    const TO: &str = "to=functions.";
    const MESSAGE: &str = "<|message|>";
    let mut calls = Vec::new();
    let mut cur = text;
    while let Some(at) = cur.find(TO) {
        let after = &cur[at + TO.len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .collect();
        let body = &after[after.find(MESSAGE)? + MESSAGE.len()..];
        let (v, used) = leading_json(body)?;
        let arguments = match v {
            Value::Object(_) => v.to_string(),
            _ => return None,
        };
        if name.is_empty() {
            return None;
        }
        calls.push(TextCall { name, arguments });
        cur = &body[used..];
    }
    // The prose is what the final channel said, if anything.
    let rest = text
        .rsplit_once("<|channel|>final<|message|>")
        .map(|(_, t)| t.split("<|").next().unwrap_or("").trim().to_owned())
        .unwrap_or_default();
    (!calls.is_empty()).then_some(TextCalls {
        calls,
        format: TextCallFormat::Harmony,
        rest,
    })
}

fn bare(text: &str) -> Option<TextCalls> {
    let trimmed = text.trim();
    if !trimmed.starts_with(['{', '[']) {
        return None;
    }
    let mut calls = Vec::new();
    for v in serde_json::Deserializer::from_str(trimmed).into_iter::<Value>() {
        calls.extend(calls_of(&v.ok()?)?);
    }
    (!calls.is_empty()).then(|| TextCalls {
        calls,
        format: TextCallFormat::Bare,
        rest: String::new(),
    })
}

fn fenced(text: &str) -> Option<TextCalls> {
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut cur = text;
    while let Some(open) = cur.find("```") {
        let info_end = cur[open + 3..].find('\n').map(|i| open + 3 + i)?;
        let lang = cur[open + 3..info_end].trim();
        if !matches!(lang, "" | "json" | "tool_call" | "tool_code" | "javascript") {
            rest.push_str(&cur[..info_end]);
            cur = &cur[info_end..];
            continue;
        }
        let body_start = info_end + 1;
        let close = cur[body_start..].find("```").map(|i| body_start + i);
        let body = &cur[body_start..close.unwrap_or(cur.len())];
        match serde_json::from_str::<Value>(body.trim())
            .ok()
            .and_then(|v| calls_of(&v))
        {
            Some(found) => {
                rest.push_str(&cur[..open]);
                calls.extend(found);
            }
            None => rest.push_str(&cur[..close.map_or(cur.len(), |c| c + 3)]),
        }
        cur = close.map_or("", |c| &cur[c + 3..]);
    }
    rest.push_str(cur);
    (!calls.is_empty()).then(|| TextCalls {
        calls,
        format: TextCallFormat::Fenced,
        rest: rest.trim().to_owned(),
    })
}

/// The opening tag of the late reminder.
pub const REMINDER_OPEN: &str = "<system-reminder>";
/// The closing tag of the late reminder.
pub const REMINDER_CLOSE: &str = "</system-reminder>";
/// The reminder's first line, which says it is not part of the conversation.
pub const REMINDER_NOTE: &str =
    "Note from rein, not from the user: context for you only. Do not repeat or answer it.";

/// The text without any echo of the late reminder, or `None` when it holds no echo.
pub fn strip_reminder_echo(text: &str) -> Option<String> {
    let mut out = text.to_owned();
    let mut found = false;
    while let Some(start) = out.find(REMINDER_OPEN) {
        found = true;
        let end = out[start..]
            .find(REMINDER_CLOSE)
            .map_or(out.len(), |i| start + i + REMINDER_CLOSE.len());
        out.replace_range(start..end, "");
    }
    // A closing tag without its opening one: the echo started before it.
    if let Some(i) = out.find(REMINDER_CLOSE) {
        found = true;
        out.replace_range(..i + REMINDER_CLOSE.len(), "");
    }
    let lines: Vec<&str> = out.lines().collect();
    let kept: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let l = l.trim();
            !(l == REMINDER_NOTE || is_time_line(l))
        })
        .collect();
    found |= kept.len() != lines.len();
    found.then(|| kept.join("\n").trim().to_owned())
}

/// The reminder's `Current time: 2026-12-01 10:00 UTC.` line.
fn is_time_line(line: &str) -> bool {
    line.strip_prefix("Current time: ").is_some_and(|t| {
        let b = t.as_bytes();
        b.len() >= 10
            && b[..10].iter().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            })
    })
}

#[cfg(test)]
mod tests;
