//! SSE parse + assemble throughput on ~10 MB streams shaped like real provider output
//! (target: at least 200 MB/s). The body is fed in 16 KiB pieces, as a network would.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rein::llm::sse::SseParser;
use rein::llm::{Response, StreamNotice, anthropic, openai};
use serde_json::json;
use std::hint::black_box;

const TARGET: usize = 10 * 1024 * 1024;
const PIECE: usize = 16 * 1024;

const WORDS: [&str; 8] = [
    " the",
    " file",
    " is",
    " \"quoted\"",
    " fn main()",
    "\n",
    " über",
    " 42",
];

/// A gpt-4o-like stream: reasoning, text, then tool calls with fragmented arguments.
fn openai_stream() -> Vec<u8> {
    let chunk = |delta: serde_json::Value| {
        let v = json!({
            "id": "chatcmpl-AnEcq1xt0vMmYw5j3TD0Ks9cGELdY", "object": "chat.completion.chunk",
            "created": 1736200000, "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_5f20662549",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}],
        });
        format!("data: {v}\n\n")
    };
    let mut out = String::with_capacity(TARGET + 4096);
    out.push_str(&chunk(json!({"role": "assistant", "content": ""})));
    let mut i = 0;
    while out.len() < TARGET / 4 {
        out.push_str(&chunk(json!({"reasoning_content": WORDS[i % WORDS.len()]})));
        i += 1;
    }
    while out.len() < TARGET / 2 {
        out.push_str(&chunk(json!({"content": WORDS[i % WORDS.len()]})));
        i += 1;
    }
    let mut call = 0;
    while out.len() < TARGET {
        out.push_str(&chunk(
            json!({"tool_calls": [{"index": call, "id": format!("call_{call}"),
            "type": "function", "function": {"name": "write_file", "arguments": ""}}]}),
        ));
        out.push_str(&chunk(json!({"tool_calls": [{"index": call, "function": {"arguments": "{\"path\": \"src/main.rs\", \"content\": \""}}]})));
        for _ in 0..200 {
            out.push_str(&chunk(json!({"tool_calls": [{"index": call, "function": {"arguments": "fn main() {\\n"}}]})));
        }
        out.push_str(&chunk(
            json!({"tool_calls": [{"index": call, "function": {"arguments": "\"}"}}]}),
        ));
        call += 1;
    }
    out.push_str("data: {\"id\":\"chatcmpl-x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
    out.push_str("data: {\"id\":\"chatcmpl-x\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":90000,\"total_tokens\":91000}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// A Claude-like stream: a thinking block, a text block, then tool_use blocks.
fn anthropic_stream() -> Vec<u8> {
    let ev =
        |v: serde_json::Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let mut out = String::with_capacity(TARGET + 4096);
    out.push_str(&ev(
        json!({"type": "message_start", "message": {"id": "msg_01XMATm4UFnjP841TckVuNF4",
        "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 1000, "output_tokens": 1}}}),
    ));
    out.push_str(&ev(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
    let mut i = 0;
    while out.len() < TARGET / 4 {
        out.push_str(&ev(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": WORDS[i % WORDS.len()]}})));
        i += 1;
    }
    out.push_str(&ev(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}})));
    out.push_str(&ev(json!({"type": "content_block_stop", "index": 0})));
    out.push_str(&ev(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})));
    while out.len() < TARGET / 2 {
        out.push_str(&ev(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": WORDS[i % WORDS.len()]}})));
        i += 1;
    }
    out.push_str(&ev(json!({"type": "content_block_stop", "index": 1})));
    let mut index = 2;
    while out.len() < TARGET {
        out.push_str(&ev(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{index}"), "name": "write_file", "input": {}}})));
        out.push_str(&ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})));
        out.push_str(&ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"src/main.rs\", \"content\": \""}})));
        for _ in 0..200 {
            out.push_str(&ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "fn main() {\\n"}})));
        }
        out.push_str(&ev(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "\"}"}})));
        out.push_str(&ev(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    out.push_str(&ev(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 90000}})));
    out.push_str(&ev(json!({"type": "message_stop"})));
    out.into_bytes()
}

fn run_openai(body: &[u8]) -> Response {
    let mut parser = SseParser::new();
    let mut asm = openai::Assembler::new();
    let mut notices = 0usize;
    let mut on = |n: StreamNotice| {
        black_box(&n);
        notices += 1;
    };
    for piece in body.chunks(PIECE) {
        parser.feed(piece).unwrap();
        while let Some(ev) = parser.next_event() {
            asm.push(ev, &mut on).unwrap();
        }
    }
    parser.end();
    while let Some(ev) = parser.next_event() {
        asm.push(ev, &mut on).unwrap();
    }
    asm.finish().unwrap()
}

fn run_anthropic(body: &[u8]) -> Response {
    let mut parser = SseParser::new();
    let mut asm = anthropic::Assembler::new();
    let mut on = |n: StreamNotice| {
        black_box(&n);
    };
    for piece in body.chunks(PIECE) {
        parser.feed(piece).unwrap();
        while let Some(ev) = parser.next_event() {
            asm.push(ev, &mut on).unwrap();
        }
    }
    parser.end();
    while let Some(ev) = parser.next_event() {
        asm.push(ev, &mut on).unwrap();
    }
    asm.finish().unwrap()
}

fn bench(c: &mut Criterion) {
    let oa = openai_stream();
    let an = anthropic_stream();
    // Sanity: the streams assemble into what they contain.
    assert!(run_openai(&oa).tool_calls().count() > 10);
    assert!(run_anthropic(&an).tool_calls().count() > 10);
    let mut g = c.benchmark_group("sse_parse_assemble");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(oa.len() as u64));
    g.bench_function("openai_10MB", |b| b.iter(|| run_openai(black_box(&oa))));
    g.throughput(Throughput::Bytes(an.len() as u64));
    g.bench_function("anthropic_10MB", |b| {
        b.iter(|| run_anthropic(black_box(&an)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
