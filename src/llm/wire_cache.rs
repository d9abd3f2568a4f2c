//! Serialized wire messages kept between requests. Every request re-sends the whole history;
//! building a JSON tree of it and serialising it again each time made a step's cost grow with
//! the history. Here the history is cut into segments whose wire form does not depend on what
//! follows them; each segment's JSON text is kept under a hash of its messages, so a request
//! serialises only what is new (the end of the history, micro-compacted results) and copies the
//! rest. The last segments are always built fresh: the reminder and cache markers go there.
//!
//! Looking every segment up each request still touched the whole history (a hash of each, a
//! lookup, a scattered copy). So each conversation also keeps its last request's prefix as one
//! text: a request's [`HistoryMark`] says which leading messages the previous request had,
//! untouched, and the text of the segments among them is kept in place; only the rest is
//! looked up and appended.

use super::{HistoryMark, Message, Request, ToolSpec};
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// How many requests an entry survives unused (parallel subagents share one client).
const KEEP_GENERATIONS: u64 = 4;

/// A content-addressed store of segments' JSON text.
#[derive(Default)]
pub struct WireCache {
    /// Keyed by a hash already: the map's own hash of it need not be SipHash's.
    entries: HashMap<(u64, usize), Entry, foldhash::fast::FixedState>,
    /// Per conversation, its last request's prefix text.
    last: HashMap<u64, Prefix, foldhash::fast::FixedState>,
    generation: u64,
    spare: Spare,
    /// The last request's envelope text, and what it was made from.
    envelope: Option<(EnvelopeInputs, Arc<Envelope>)>,
}

/// A body's text apart from the history: the object the history goes into and, for formats
/// that send the system prompt as the history's first message, that message.
pub struct Envelope {
    /// The object's JSON text (without the history's key).
    pub object: String,
    /// The message before the history, as JSON text.
    pub lead: Option<String>,
}

/// What an [`Envelope`] is made from: the request's fields outside the history, and `extra`
/// (what else the format puts there, e.g. the reasoning settings).
#[derive(PartialEq)]
struct EnvelopeInputs {
    model: String,
    system: String,
    tools: Vec<ToolSpec>,
    max_tokens: u32,
    force_tool: bool,
    extra: Value,
}

impl EnvelopeInputs {
    fn of(req: &Request, extra: Value) -> EnvelopeInputs {
        EnvelopeInputs {
            model: req.model.clone(),
            system: req.system.clone(),
            tools: req.tools.clone(),
            max_tokens: req.max_tokens,
            force_tool: req.force_tool,
            extra,
        }
    }

    fn matches(&self, req: &Request, extra: &Value) -> bool {
        self.model == req.model
            && self.system == req.system
            && self.tools == req.tools
            && self.max_tokens == req.max_tokens
            && self.force_tool == req.force_tool
            && self.extra == *extra
    }
}

/// Where a sent body's buffer goes back to, for the next request's body.
#[derive(Clone, Default)]
pub struct Spare(Arc<Mutex<String>>);

impl Spare {
    /// `text` as a body that gives its buffer back here once the last copy of it is dropped.
    pub fn wrap(&self, text: String) -> Recycled {
        Recycled {
            text,
            spare: self.clone(),
        }
    }

    /// The buffer given back last, emptied (a new one if there is none).
    fn take(&self) -> String {
        let mut text = std::mem::take(&mut *crate::sync::lock(&self.0));
        text.clear();
        text
    }
}

/// A request body that hands its buffer on to the next: a fresh buffer the history's size for
/// every request cost a page fault per 4 KiB written.
pub struct Recycled {
    text: String,
    spare: Spare,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let mut spare = crate::sync::lock(&self.spare.0);
        if spare.capacity() < self.text.capacity() {
            *spare = std::mem::take(&mut self.text);
        }
    }
}

/// A prefix's wire text and where each of its segments ends in it.
#[derive(Default)]
struct Prefix {
    /// The request it was built for.
    seq: u64,
    /// Each segment, with the byte of `text` its wire messages end at.
    segments: Vec<(Range<usize>, usize)>,
    /// The segments' wire messages, serialised and joined by commas. Shared with the
    /// [`Assembled`] of its request, and unshared again (so grown in place) by the next.
    text: Arc<String>,
    used: u64,
}

impl Prefix {
    /// Keeps the leading segments that `segments` starts with too and that lie before
    /// `unchanged`; drops the rest and their text.
    fn keep_common(&mut self, segments: &[Range<usize>], unchanged: usize) {
        let common = self
            .segments
            .iter()
            .zip(segments)
            .take_while(|((had, _), seg)| had == *seg && seg.end <= unchanged)
            .count();
        self.segments.truncate(common);
        let end = self.segments.last().map_or(0, |(_, end)| *end);
        Arc::make_mut(&mut self.text).truncate(end);
    }
}

/// A segment's identity: a hash of its messages and how many there are.
type Key = (u64, usize);

impl std::fmt::Debug for WireCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WireCache({} segments)", self.entries.len())
    }
}

struct Entry {
    json: Arc<str>,
    used: u64,
}

/// A request's messages as wire JSON: the cached prefix and the freshly built tail.
pub struct Assembled {
    /// The prefix's wire messages, serialised and joined by commas (shared with the cache).
    prefix: Arc<String>,
    /// The tail's wire messages, for the caller to finish (reminder, cache markers).
    pub tail: Vec<Value>,
    /// The buffer the body is written into (a sent body's, given back).
    buffer: Cell<String>,
}

impl Assembled {
    /// The envelope's object with `key` set to the whole array: its lead (e.g. a system
    /// message), the prefix, the finished tail (the object must not hold `key`). Written once
    /// into one buffer: the history's text is copied once per request, not once per layer.
    pub fn body(&self, envelope: &Envelope, key: &str) -> String {
        let rest = &envelope.object;
        let tail: Vec<String> = self.tail.iter().map(Value::to_string).collect();
        let pieces = envelope
            .lead
            .as_deref()
            .into_iter()
            .chain((!self.prefix.is_empty()).then_some(self.prefix.as_str()))
            .chain(tail.iter().map(String::as_str));
        let size: usize = pieces.clone().map(|p| p.len() + 1).sum();
        let mut out = self.buffer.take();
        out.reserve(size + rest.len() + key.len() + 8);
        out.push('{');
        out.push_str(&Value::String(key.to_owned()).to_string());
        out.push_str(":[");
        for (i, piece) in pieces.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(piece);
        }
        out.push(']');
        // `rest` is "{}" or "{...}": keep its members after ours.
        if rest.len() > 2 {
            out.push(',');
        }
        out.push_str(&rest[1..]);
        out
    }
}

impl WireCache {
    /// Where sent bodies give their buffers back (see [`Recycled`]).
    pub fn spare(&self) -> Spare {
        self.spare.clone()
    }

    /// The envelope `build` makes of `req` (the object and the lead message), made and
    /// serialised anew only when `req`'s fields outside the history or `extra` changed since
    /// the last request: the tools' schemas and the system prompt, cloned into a JSON tree,
    /// serialised and dropped, were most of a step's body building.
    pub fn envelope(
        &mut self,
        req: &Request,
        extra: Value,
        build: impl FnOnce() -> (Value, Option<Value>),
    ) -> Arc<Envelope> {
        if let Some((inputs, text)) = &self.envelope
            && inputs.matches(req, &extra)
        {
            return text.clone();
        }
        let (object, lead) = build();
        let text = Arc::new(Envelope {
            object: object.to_string(),
            lead: lead.as_ref().map(Value::to_string),
        });
        self.envelope = Some((EnvelopeInputs::of(req, extra), text.clone()));
        text
    }

    /// Renders `messages` cut at `segments` (in order, covering them) with `render`, building
    /// fresh at least the last `tail_messages` wire messages and reusing cached text before.
    /// With `mark`, the keys of segments the previous request of the conversation had, and
    /// that lie in its unchanged part, are reused rather than computed.
    pub fn assemble(
        &mut self,
        messages: &[Message],
        segments: &[Range<usize>],
        render: fn(&[Message]) -> Vec<Value>,
        tail_messages: usize,
        mark: Option<HistoryMark>,
    ) -> Assembled {
        self.generation += 1;
        let mut tail_start = segments.len();
        let mut tail: Vec<Vec<Value>> = Vec::new();
        let mut fresh = 0;
        while tail_start > 0 && fresh < tail_messages {
            tail_start -= 1;
            let rendered = render(&messages[segments[tail_start].clone()]);
            fresh += rendered.len();
            tail.push(rendered);
        }
        let mut prefix = self.reusable_prefix(mark, &segments[..tail_start]);
        let kept = prefix.segments.len();
        for seg in &segments[kept..tail_start] {
            let msgs = &messages[seg.clone()];
            let json = self.segment(key(msgs), msgs, render);
            let text = Arc::make_mut(&mut prefix.text);
            if !json.is_empty() {
                if !text.is_empty() {
                    text.push(',');
                }
                text.push_str(&json);
            }
            prefix.segments.push((seg.clone(), text.len()));
        }
        let text = prefix.text.clone();
        if let Some(mark) = mark {
            prefix.seq = mark.seq;
            prefix.used = self.generation;
            self.last.insert(mark.conversation, prefix);
        }
        self.evict();
        Assembled {
            prefix: text,
            tail: tail.into_iter().rev().flatten().collect(),
            buffer: Cell::new(self.spare.take()),
        }
    }

    /// The previous request's prefix cut to what this one's `segments` share with it (empty
    /// when that request is not the one before this, or there is no mark).
    fn reusable_prefix(&mut self, mark: Option<HistoryMark>, segments: &[Range<usize>]) -> Prefix {
        let Some(mark) = mark else {
            return Prefix::default();
        };
        match self.last.remove(&mark.conversation) {
            Some(mut last) if last.seq.checked_add(1) == Some(mark.seq) => {
                last.keep_common(segments, mark.unchanged);
                last
            }
            _ => Prefix::default(),
        }
    }

    /// One segment's JSON text, from the cache or rendered now.
    fn segment(
        &mut self,
        key: Key,
        messages: &[Message],
        render: fn(&[Message]) -> Vec<Value>,
    ) -> Arc<str> {
        let generation = self.generation;
        let entry = self.entries.entry(key).or_insert_with(|| {
            let json: Vec<String> = render(messages).iter().map(Value::to_string).collect();
            Entry {
                json: json.join(",").into(),
                used: generation,
            }
        });
        entry.used = generation;
        entry.json.clone()
    }

    fn evict(&mut self) {
        let oldest = self.generation.saturating_sub(KEEP_GENERATIONS);
        self.entries.retain(|_, e| e.used > oldest);
        self.last.retain(|_, k| k.used > oldest);
    }
}

/// A segment's identity: a hash of its messages and how many there are.
fn key(messages: &[Message]) -> Key {
    let hash = foldhash::quality::FixedState::with_seed(0x7265_696e).hash_one(messages);
    (hash, messages.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{
        AssistantPart, HistoryMark, Reasoning, Request, ToolCall, ToolSpec, anthropic, openai,
        responses,
    };
    use serde_json::json;

    /// A small deterministic generator (no seed file, no flakiness).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
        fn text(&mut self) -> String {
            ["", "a", "hello \"world\"\n", "ünïcode ✓", "{\"x\":1}"][self.next(5) as usize].into()
        }
    }

    /// An attached image, its bytes there or not (resumed from a changed file).
    fn image(g: &mut Lcg) -> Message {
        let meta = crate::images::ImageRef {
            name: "s.png".into(),
            path: None,
            media_type: crate::images::MediaType::Png,
            width: 2,
            height: 1,
            bytes: 3,
            sha256: format!("{:064x}", g.next(3)),
            original: None,
        };
        let mut image = crate::images::Image::new(meta, vec![1u8, 2, 3].into());
        if g.next(3) == 0 {
            image.drop_bytes("the file changed since it was attached");
        }
        Message::UserImage { image }
    }

    fn message(g: &mut Lcg, i: usize) -> Message {
        match g.next(4) {
            0 => Message::User { content: g.text() },
            3 => image(g),
            1 => {
                let parts = (0..g.next(3))
                    .map(|_| match g.next(4) {
                        0 => AssistantPart::Text { text: g.text() },
                        1 => AssistantPart::Thinking {
                            text: g.text(),
                            signature: (g.next(2) == 0).then(|| "sig".to_string()),
                        },
                        2 => AssistantPart::RedactedThinking {
                            data: "opaque".into(),
                        },
                        _ => AssistantPart::ToolCall(ToolCall {
                            id: format!("c{i}"),
                            name: "bash".into(),
                            arguments: ["{\"command\":\"ls\"}", "{bad", ""][g.next(3) as usize]
                                .into(),
                        }),
                    })
                    .collect();
                Message::Assistant { parts }
            }
            _ => Message::ToolResult {
                call_id: format!("c{i}"),
                name: "bash".into(),
                content: g.text(),
                is_error: g.next(2) == 0,
            },
        }
    }

    fn request(messages: Vec<Message>, g: &mut Lcg) -> Request {
        Request {
            // A reasoning model's name changes the Responses envelope's reasoning object too.
            model: if g.next(2) == 0 { "m" } else { "gpt-5" }.into(),
            system: if g.next(2) == 0 {
                String::new()
            } else {
                "be brief".into()
            },
            messages,
            tools: (0..g.next(3))
                .map(|i| ToolSpec {
                    name: format!("tool{i}"),
                    description: "runs".into(),
                    parameters: json!({"type": "object", "required": [g.next(2).to_string()]}),
                })
                .collect(),
            max_tokens: g.next(2) as u32 * 100,
            reminder: match g.next(3) {
                0 => None,
                1 => Some(String::new()),
                _ => Some("<reminder>".into()),
            },
            force_tool: g.next(2) == 0,
            mark: None,
        }
    }

    /// An envelope of these values.
    fn text_of(object: Value, lead: Option<Value>) -> Envelope {
        Envelope {
            object: object.to_string(),
            lead: lead.map(|l| l.to_string()),
        }
    }

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).expect("the body text is JSON")
    }

    /// Oracle: the cached text is the same JSON value as the plain body, request after request,
    /// while the history grows and older parts change (as micro-compaction does).
    #[test]
    fn cached_bodies_equal_fresh_ones() {
        let reasoning = Reasoning::default();
        for seed in 0..300 {
            let mut g = Lcg(seed);
            let (mut oa, mut an, mut re) = Default::default();
            let mut history: Vec<Message> = Vec::new();
            for step in 0..12 {
                let mut unchanged = history.len();
                for _ in 0..=g.next(3) {
                    let i = history.len();
                    history.push(message(&mut g, i));
                }
                if g.next(3) == 0 && !history.is_empty() {
                    let at = g.next(history.len() as u64) as usize;
                    history[at] = message(&mut g, at);
                    unchanged = unchanged.min(at);
                }
                let mut req = request(history.clone(), &mut g);
                // Now and then a request goes unmarked: the next one's mark is then relative to
                // a request the cache never saw, and must not be trusted.
                req.mark = (g.next(4) != 0).then_some(HistoryMark {
                    conversation: seed,
                    seq: step + 1,
                    unchanged,
                });
                let official = g.next(2) == 0;
                let mut want = openai::build_body(&req);
                if official {
                    openai::use_max_completion_tokens(&mut want);
                }
                let got = parsed(&openai::build_body_text(&req, &mut oa, official));
                assert_eq!(got, want, "openai, seed {seed} step {step}");
                let got = parsed(&anthropic::build_body_text(&req, &mut an));
                assert_eq!(
                    got,
                    anthropic::build_body(&req),
                    "anthropic, seed {seed} step {step}"
                );
                let got = parsed(&responses::build_body_text(&req, &reasoning, &mut re));
                assert_eq!(
                    got,
                    responses::build_body(&req, &reasoning),
                    "responses, seed {seed} step {step}"
                );
            }
        }
    }

    #[test]
    fn unused_segments_are_dropped() {
        let mut cache = WireCache::default();
        let msgs: Vec<Message> = (0..5)
            .map(|i| Message::User {
                content: format!("m{i}"),
            })
            .collect();
        let one = |i: usize| i..i + 1;
        let segments: Vec<Range<usize>> = (0..5).map(one).collect();
        let render = |m: &[Message]| m.iter().map(|_| json!(1)).collect();
        cache.assemble(&msgs, &segments, render, 1, None);
        assert_eq!(cache.entries.len(), 4);
        for _ in 0..=KEEP_GENERATIONS {
            cache.assemble(&msgs[..1], &segments[..1], render, 1, None);
        }
        assert!(cache.entries.is_empty(), "{cache:?}");
    }

    #[test]
    fn the_body_keeps_the_other_members_and_joins_every_piece() {
        let mut cache = WireCache::default();
        let msgs: Vec<Message> = (0..3)
            .map(|i| Message::User {
                content: format!("m{i}"),
            })
            .collect();
        let segments: Vec<Range<usize>> = (0..3).map(|i| i..i + 1).collect();
        let render = |m: &[Message]| match &m[0] {
            Message::User { content } if content == "m1" => Vec::new(),
            Message::User { content } => vec![json!(content)],
            _ => Vec::new(),
        };
        let assembled = cache.assemble(&msgs, &segments, render, 1, None);
        let text = assembled.body(&text_of(json!({"a": 1}), Some(json!("lead"))), "m");
        assert_eq!(text, r#"{"m":["lead","m0","m2"],"a":1}"#);
        let text = assembled.body(&text_of(json!({}), None), "m");
        assert_eq!(text, r#"{"m":["m0","m2"]}"#);
        let empty = cache.assemble(&[], &[], render, 1, None);
        assert_eq!(empty.body(&text_of(json!({}), None), "m"), r#"{"m":[]}"#);
    }

    /// A sent body's buffer is written again by the next request, and only once every copy of
    /// the sent body is gone (a retry may still hold one).
    #[test]
    fn a_body_buffer_is_reused_only_after_its_last_copy_is_dropped() {
        let mut cache = WireCache::default();
        let msgs = vec![Message::User {
            content: "x".repeat(10_000),
        }];
        let render = |m: &[Message]| m.iter().map(|_| json!("y".repeat(10_000))).collect();
        let body = |cache: &mut WireCache| {
            let segments = [Range { start: 0, end: 1 }];
            let text = cache
                .assemble(&msgs, &segments, render, 0, None)
                .body(&text_of(json!({}), None), "m");
            bytes::Bytes::from_owner(cache.spare().wrap(text))
        };
        let first = body(&mut cache);
        let held = first.clone();
        drop(first);
        let second = body(&mut cache);
        assert_ne!(
            second.as_ptr(),
            held.as_ptr(),
            "a held body was written over"
        );
        assert_eq!(held, second, "the held body changed");
        let at = held.as_ptr();
        drop(held);
        let third = body(&mut cache);
        assert_eq!(third.as_ptr(), at, "the buffer given back was not reused");
        assert_eq!(third, second);
    }
}
