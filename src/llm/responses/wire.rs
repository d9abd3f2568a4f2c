//! Responses stream events as they appear on the wire: one flat, lenient struct for every
//! event type (unknown fields and events are ignored, as the API asks of clients).

use serde::Deserialize;
use serde_json::Value;

/// One `data:` payload.
#[derive(Deserialize)]
pub(super) struct Event {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub output_index: Option<u64>,
    #[serde(default)]
    pub summary_index: Option<u64>,
    #[serde(default)]
    pub delta: Option<String>,
    /// `response.function_call_arguments.done`: the whole arguments text.
    #[serde(default)]
    pub arguments: Option<String>,
    // Rare, large fields are boxed: the struct is built for every delta.
    #[serde(default)]
    pub item: Option<Box<WireItem>>,
    #[serde(default)]
    pub response: Option<Box<WireResponse>>,
    /// `error` events: `code` and `message` at the top level (some relays nest `error`).
    #[serde(default)]
    pub code: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// An output item (`message`, `reasoning`, `function_call`, ...).
#[derive(Deserialize)]
pub(super) struct WireItem {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
    /// `message`: `[{"type": "output_text", "text": ...}, {"type": "refusal", ...}]`.
    #[serde(default)]
    pub content: Option<Vec<WirePart>>,
    /// `reasoning`: `[{"type": "summary_text", "text": ...}]`.
    #[serde(default)]
    pub summary: Option<Vec<WirePart>>,
    #[serde(default)]
    pub encrypted_content: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WirePart {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

impl WireItem {
    /// The visible text of a `message` item.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .flatten()
            .filter(|p| matches!(p.kind.as_deref(), None | Some("output_text")))
            .filter_map(|p| p.text.as_deref())
            .collect()
    }

    /// The summary parts of a `reasoning` item.
    pub fn summary_texts(&self) -> Vec<String> {
        self.summary
            .iter()
            .flatten()
            .filter_map(|p| p.text.clone())
            .filter(|t| !t.is_empty())
            .collect()
    }
}

/// The `response` object of `response.completed` / `.incomplete` / `.failed`.
#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub incomplete_details: Option<Incomplete>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct Incomplete {
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens_details: Option<Details>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct Details {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}
