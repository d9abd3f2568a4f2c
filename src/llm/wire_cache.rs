//! Serialized wire messages kept between requests. Every request re-sends the whole history;
//! building a JSON tree of it and serialising it again each time made a step's cost grow with
//! the history. Here the history is cut into segments whose wire form does not depend on what
//! follows them; each segment's JSON text is kept under a hash of its messages, so a request
//! serialises only what is new (the end of the history, micro-compacted results) and copies the
//! rest. The last segments are always built fresh: the reminder and cache markers go there.

use super::Message;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

/// How many requests an entry survives unused (parallel subagents share one client).
const KEEP_GENERATIONS: u64 = 4;

/// A content-addressed store of segments' JSON text.
#[derive(Default)]
pub struct WireCache {
    /// Keyed by a hash already: the map's own hash of it need not be SipHash's.
    entries: HashMap<(u64, usize), Entry, foldhash::fast::FixedState>,
    generation: u64,
}

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
    /// The prefix's segments: each one's wire messages, serialised and joined by commas
    /// (never empty), shared with the cache rather than copied.
    prefix: Vec<Arc<str>>,
    /// The tail's wire messages, for the caller to finish (reminder, cache markers).
    pub tail: Vec<Value>,
}

impl Assembled {
    /// `object`'s JSON text with `key` set to the whole array: `lead` (e.g. a system message),
    /// the prefix, the finished tail (`object` must not hold `key`). Written once into one
    /// buffer: the history's text is copied once per request, not once per layer.
    pub fn body(&self, object: &Value, key: &str, lead: Option<&Value>) -> String {
        let rest = object.to_string();
        let lead = lead.map(Value::to_string);
        let tail: Vec<String> = self.tail.iter().map(Value::to_string).collect();
        let pieces = lead
            .iter()
            .map(String::as_str)
            .chain(self.prefix.iter().map(|p| &**p))
            .chain(tail.iter().map(String::as_str));
        let size: usize = pieces.clone().map(|p| p.len() + 1).sum();
        let mut out = String::with_capacity(size + rest.len() + key.len() + 8);
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
    /// Renders `messages` cut at `segments` (in order, covering them) with `render`, building
    /// fresh at least the last `tail_messages` wire messages and reusing cached text before.
    pub fn assemble(
        &mut self,
        messages: &[Message],
        segments: &[Range<usize>],
        render: fn(&[Message]) -> Vec<Value>,
        tail_messages: usize,
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
        let mut prefix = Vec::with_capacity(tail_start);
        for seg in &segments[..tail_start] {
            let json = self.segment(&messages[seg.clone()], render);
            if !json.is_empty() {
                prefix.push(json);
            }
        }
        self.evict();
        Assembled {
            prefix,
            tail: tail.into_iter().rev().flatten().collect(),
        }
    }

    /// One segment's JSON text, from the cache or rendered now.
    fn segment(&mut self, messages: &[Message], render: fn(&[Message]) -> Vec<Value>) -> Arc<str> {
        let key = key(messages);
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
    }
}

/// A segment's identity: a hash of its messages and how many there are.
fn key(messages: &[Message]) -> (u64, usize) {
    let hash = foldhash::quality::FixedState::with_seed(0x7265_696e).hash_one(messages);
    (hash, messages.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{
        AssistantPart, Reasoning, Request, ToolCall, ToolSpec, anthropic, openai, responses,
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
            model: "m".into(),
            system: if g.next(2) == 0 {
                String::new()
            } else {
                "be brief".into()
            },
            messages,
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "runs".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: g.next(2) as u32 * 100,
            reminder: match g.next(3) {
                0 => None,
                1 => Some(String::new()),
                _ => Some("<reminder>".into()),
            },
            force_tool: g.next(2) == 0,
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
                for _ in 0..=g.next(3) {
                    let i = history.len();
                    history.push(message(&mut g, i));
                }
                if g.next(3) == 0 && !history.is_empty() {
                    let at = g.next(history.len() as u64) as usize;
                    history[at] = message(&mut g, at);
                }
                let req = request(history.clone(), &mut g);
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
        cache.assemble(&msgs, &segments, render, 1);
        assert_eq!(cache.entries.len(), 4);
        for _ in 0..=KEEP_GENERATIONS {
            cache.assemble(&msgs[..1], &segments[..1], render, 1);
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
        let assembled = cache.assemble(&msgs, &segments, render, 1);
        let text = assembled.body(&json!({"a": 1}), "m", Some(&json!("lead")));
        assert_eq!(text, r#"{"m":["lead","m0","m2"],"a":1}"#);
        let text = assembled.body(&json!({}), "m", None);
        assert_eq!(text, r#"{"m":["m0","m2"]}"#);
        let empty = cache.assemble(&[], &[], render, 1);
        assert_eq!(empty.body(&json!({}), "m", None), r#"{"m":[]}"#);
    }
}
