//! Test support: the scripted model server used by every end-to-end test.
//!
//! ```ignore
//! mod support;
//! use support::{Reply, ScriptedServer};
//!
//! let server = ScriptedServer::openai();            // or ScriptedServer::anthropic()
//! server
//!     .push(Reply::tool_call("bash", json!({"command": "ls"})))
//!     .push(Reply::rate_limited(1))                 // 429 + Retry-After: 1
//!     .push(Reply::text("Done.").usage(120, 8));
//! // Point rein at it: BASE_URL=server.base_url(), any MODEL, no key needed.
//! // Afterwards: server.requests() / server.request(i) hold every request with its path,
//! // headers, JSON body and timestamps; server.remaining() says what was not consumed.
//! ```
//!
//! - Each request consumes one [`Reply`] (FIFO). When none is left the server answers HTTP
//!   400 "scripted server: no reply left", which rein does not retry, so a test fails fast.
//! - Requests to a path other than the wire format's endpoint get a 404 (or the JSON given with
//!   `route(path, json)`, e.g. llama.cpp's `/props`), consume nothing and are kept apart in
//!   `other_requests()`.
//! - Replies are built from items (`say`, `reasoning`, `call`, `call_raw`), split into
//!   `fragments(n)` deltas each (default 3), with optional `usage` and `finish_reason`.
//! - Faults: `Reply::status(code, msg)`, `Reply::redirect(code, location)`,
//!   `Reply::rate_limited(secs)` / `.retry_after(v)`, `.drop_after(n)`, `.malformed_after(n)`,
//!   `.overloaded_after(n)`, `.stream_error_after(n, msg)`, `.stall_after(n, d)`, `.delay(d)`,
//!   `.chunk_delay(d)`, and `.pause_after(n, &gate)` with a [`Gate`] the test releases. `n`
//!   counts SSE events (see [`reply`] for the layout).
//! - The server runs on its own thread and runtime; it stops when dropped.
//!
//! [`rein::World`] runs the real binary against it in a private temp world; [`pty::Pty`]
//! runs it in a pseudo-terminal (`World::spawn_tui`) to drive the full-screen app by keys and
//! read its screen.

#![allow(dead_code, unused_imports)]

/// Generates one `#[test]` per wire format from `fn name(kind: ProviderKind)` functions of the
/// test file (use with `#[macro_use] mod support;`).
#[allow(unused_macros)]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod openai {
            $(#[test] fn $name() { super::$name(rein::llm::ProviderKind::OpenAi) })*
        }
        mod anthropic {
            $(#[test] fn $name() { super::$name(rein::llm::ProviderKind::Anthropic) })*
        }
    };
}

/// Like [`both!`], with a third test per function for the OpenAI Responses format.
#[allow(unused_macros)]
macro_rules! all_formats {
    ($($name:ident),* $(,)?) => {
        both!($($name),*);
        mod openai_responses {
            $(#[test] fn $name() { super::$name(rein::llm::ProviderKind::OpenAiResponses) })*
        }
    };
}

pub mod client;
pub mod reply;
pub mod server;

pub use reply::{Fault, Item, Reply};
pub use server::{Gate, RecordedRequest, ScriptedServer};
pub mod mcp;
pub mod pty;
pub mod rein;
pub mod skips;
