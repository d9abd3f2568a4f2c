//! Model providers: one neutral message model, three wire formats, shared HTTP + SSE + retries.
//!
//! The agent builds a [`Request`] from provider-neutral [`Message`]s; a [`Client`] turns it into
//! an HTTP request in the configured wire format, streams the answer, reports deltas as they
//! arrive and returns the assembled [`Response`].

pub mod anthropic;
pub mod client;
pub mod openai;
pub mod responses;
pub mod sse;
mod wire_cache;

pub use client::{Client, ClientOptions};

use serde::{Deserialize, Serialize};

/// Which wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
    /// OpenAI Responses (`POST {base}/responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl ProviderKind {
    /// The name used in config and the status line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAiResponses => "openai-responses",
        }
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id (rein makes one up when the provider sends none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Raw JSON text of the arguments, exactly as streamed (may be invalid).
    pub arguments: String,
}

/// One piece of an assistant message, in the order the model produced it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning; Anthropic thinking blocks carry a signature that must be sent back.
    Thinking {
        /// The reasoning text (for the Responses API: its summary).
        text: String,
        /// Anthropic's signature for the block, or the Responses API's `encrypted_content`.
        signature: Option<String>,
    },
    /// An Anthropic redacted thinking block (opaque, sent back as is).
    RedactedThinking {
        /// The opaque payload.
        data: String,
    },
    /// A tool call.
    ToolCall(ToolCall),
}

/// A provider-neutral conversation message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The person (or the harness speaking for them, e.g. a summary).
    User {
        /// The text.
        content: String,
    },
    /// An image attached to the user message before it (`@shot.png`); the wire formats send it
    /// in the same user turn. Serialised, it is only a reference (see `crate::images`).
    UserImage {
        /// The image.
        image: crate::images::Image,
    },
    /// The model.
    Assistant {
        /// Its parts in order.
        parts: Vec<AssistantPart>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool's name (OpenAI-compatible servers sometimes want it).
        name: String,
        /// The text the model sees.
        content: String,
        /// Whether it is an error (Anthropic `is_error`).
        is_error: bool,
    },
}

impl Message {
    /// The assistant's tool calls (empty for other roles).
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        let parts: &[AssistantPart] = match self {
            Message::Assistant { parts } => parts,
            _ => &[],
        };
        parts.iter().filter_map(|p| match p {
            AssistantPart::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    /// Concatenated visible text of an assistant message or the content of a user message.
    pub fn text(&self) -> String {
        match self {
            Message::User { content } => content.clone(),
            Message::UserImage { image } => image.meta.label(),
            Message::ToolResult { content, .. } => content.clone(),
            Message::Assistant { parts } => parts
                .iter()
                .filter_map(|p| match p {
                    AssistantPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One model request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools offered (may be empty: e.g. the compaction summary).
    pub tools: Vec<ToolSpec>,
    /// Context for the model alone (the late reminder), rebuilt for every request and never
    /// stored. The wire format places it at the very end, after everything cacheable.
    pub reminder: Option<String>,
    /// Upper bound on output tokens.
    pub max_tokens: u32,
    /// The answer must be a tool call (`tool_choice` required; a small model's first step).
    pub force_tool: bool,
    /// Where this request stands in its conversation (what it shares with the one before), so
    /// that the wire form of what did not change is not looked at again; `None` for one-off
    /// requests.
    pub mark: Option<HistoryMark>,
}

/// A request's place in its conversation: request `seq` of `conversation`, whose first
/// `unchanged` messages are those of request `seq - 1`, untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryMark {
    /// One run of the agent loop (a subagent runs its own).
    pub conversation: u64,
    /// Counts the conversation's requests from 1.
    pub seq: u64,
    /// How many leading messages are the previous request's, unchanged.
    pub unchanged: usize,
}

/// Token usage reported by the provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (for Anthropic: input + cache read + cache creation).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
}

/// Reasoning settings for models that take them (the Responses API's `reasoning` object).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// `effort`: e.g. `minimal`, `low`, `medium`, `high` (`None`: the server's default).
    pub effort: Option<String>,
    /// `summary`: `auto`, `concise` or `detailed` (`None`: no summaries asked for).
    pub summary: Option<String>,
}

/// The assembled answer of one streamed request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The message parts in order.
    pub parts: Vec<AssistantPart>,
    /// A refusal (OpenAI `delta.refusal`), if any.
    pub refusal: Option<String>,
    /// `finish_reason` / `stop_reason` as sent (`None` if the stream had none).
    pub finish_reason: Option<String>,
    /// Usage, when reported.
    pub usage: Option<Usage>,
}

impl Response {
    /// Whether the output was cut off by the token limit.
    pub fn truncated(&self) -> bool {
        matches!(
            self.finish_reason.as_deref(),
            Some("length") | Some("max_tokens")
        )
    }

    /// Concatenated visible text.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                AssistantPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            AssistantPart::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

/// Something streamed or happening while a request is in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamNotice {
    /// Visible text arrived.
    Text(String),
    /// Reasoning text arrived.
    Reasoning(String),
    /// A piece of a tool call's arguments arrived (not shown; watched for an answer that
    /// repeats itself).
    ToolArgs(String),
    /// The attempt failed and the whole request will be retried; discard partial output.
    Retrying {
        /// The next attempt number (2 = first retry).
        attempt: u32,
        /// Attempts in all.
        max_attempts: u32,
        /// Wait before it.
        delay: std::time::Duration,
        /// What went wrong.
        reason: String,
    },
}

/// Why a request failed for good.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LlmError {
    /// The server answered with a non-success status (after retries if retryable).
    #[error("the model server answered HTTP {status}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// The server reported an error inside the stream.
    #[error("the model server reported an error: {message}")]
    Provider {
        /// The error message.
        message: String,
        /// Whether retrying makes sense (e.g. overloaded).
        retryable: bool,
    },
    /// Could not connect, or the stream broke / stalled.
    #[error("network error: {0}")]
    Network(String),
    /// The stream was not in the expected format.
    #[error("malformed response from the model server: {0}")]
    Malformed(String),
    /// The request was cancelled (interrupt).
    #[error("cancelled")]
    Cancelled,
}
