//! Chat Completions stream chunks as they appear on the wire, deserialized leniently.
//!
//! Servers differ in field types (`content` as a string or an array of parts, `arguments` as a
//! string or an object, odd values where a string is expected). A wrong type in one field must
//! not fail the whole chunk, so text-like fields accept anything and keep only strings.
//! Strings borrow from the event data when they contain no escapes, which keeps parsing fast.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// One `data:` payload.
#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// `{"error": {...}}` (OpenAI, Groq, OpenRouter, SGLang) or `"error": "text"`.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    /// vLLM's error shape: `{"object": "error", "message": ...}`.
    #[serde(default, borrow)]
    pub object: Option<Text<'a>>,
    #[serde(default)]
    pub message: Option<serde_json::Value>,
    #[serde(default)]
    pub code: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    pub kind: Option<serde_json::Value>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub index: Option<IgnoredOr<u64>>,
    /// `message` is what a non-streaming answer carries instead of `delta`.
    #[serde(default, borrow, alias = "message")]
    pub delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Text<'a>>,
    /// Moonshot/Kimi put usage inside the choice.
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Content<'a>>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub reasoning: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub refusal: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
pub(super) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub index: Option<IgnoredOr<i64>>,
    #[serde(default, borrow)]
    pub id: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub arguments: Option<Args<'a>>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default, alias = "input_tokens")]
    pub prompt_tokens: Option<IgnoredOr<u64>>,
    #[serde(default, alias = "output_tokens")]
    pub completion_tokens: Option<IgnoredOr<u64>>,
}

/// A value of type `T`, or `None` when the field held something else.
#[derive(Clone, Copy)]
pub(super) struct IgnoredOr<T>(pub Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for IgnoredOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffer through `Value` only in this rare numeric path; numbers are tiny.
        let v = serde_json::Value::deserialize(d)?;
        Ok(IgnoredOr(T::deserialize(v).ok()))
    }
}

/// A string field; any other JSON value reads as `None`.
pub(super) struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'a> Text<'a> {
    /// The string when present and non-empty.
    pub fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `delta.content`: a string, or (Mistral) an array of `text` / `thinking` parts.
pub(super) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
    Nothing,
}

#[derive(Deserialize)]
pub(super) struct ContentPart<'a> {
    #[serde(default, rename = "type", borrow)]
    pub kind: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub text: Option<Text<'a>>,
    /// Mistral: `thinking: [{"type": "text", "text": ...}]` (or a plain string).
    #[serde(default, borrow)]
    pub thinking: Option<Content<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Nothing)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                // A part of an unexpected shape is skipped, not fatal.
                while let Some(p) = seq.next_element::<MaybePart<'de>>()? {
                    if let Some(p) = p.0 {
                        parts.push(p);
                    }
                }
                Ok(Content::Parts(parts))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Nothing)
            }
        }
        d.deserialize_any(V)
    }
}

/// An array element that is a content part object, or anything else (ignored).
struct MaybePart<'a>(Option<ContentPart<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybePart<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybePart<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content part")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let part = ContentPart::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(MaybePart(Some(part)))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybePart(Some(ContentPart {
                    kind: None,
                    text: Some(Text(Some(Cow::Borrowed(v)))),
                    thinking: None,
                })))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybePart(Some(ContentPart {
                    kind: None,
                    text: Some(Text(Some(Cow::Owned(v.to_owned())))),
                    thinking: None,
                })))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybePart(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybePart(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `function.arguments`: normally a JSON string; some proxies send the object itself.
pub(super) enum Args<'a> {
    Text(Cow<'a, str>),
    Json(String),
    Nothing,
}

impl<'de: 'a, 'a> Deserialize<'de> for Args<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Args<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("tool call arguments")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Args::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Args::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Args::Text(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Args::Nothing)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Args::Nothing)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Args::Json(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Args::Json(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Args::Json(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Args::Json(serde_json::Value::from(v).to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let v = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Args::Json(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let v = serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Args::Json(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
