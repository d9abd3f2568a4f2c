//! Generates realistic session files for the session benchmarks and the RSS probe.
//!
//! A "turn" is a prompt, four tool round trips (reasoning + text + call, then a multi-line
//! result), a final answer and a usage line: about 500 bytes per entry on average, so
//! 100,000 entries make a file of about 50 MB.

use rein::llm::{AssistantPart, Message, ToolCall};
use rein::protocol::{Todo, TodoStatus, ToolStatus};
use rein::session_store::{Entry, Header, SessionWriter};
use std::path::{Path, PathBuf};

/// Text with the newlines, quotes and non-ASCII a real transcript has (they cost escaping).
fn prose(seed: usize, len: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "parser",
        "returns",
        "\"Ok\"",
        "when",
        "a",
        "line",
        "ends",
        "in",
        "\\n;",
        "tests",
        "pass",
        "→",
        "src/main.rs:42",
        "fn",
        "main()",
        "{",
        "}",
        "cargo",
        "build",
    ];
    let mut s = String::with_capacity(len + 16);
    let mut i = seed;
    while s.len() < len {
        s.push_str(WORDS[i % WORDS.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
        s.push(if i.is_multiple_of(11) { '\n' } else { ' ' });
    }
    s
}

/// Appends one turn of about 11 entries to `w`; returns how many were written.
fn turn(w: &mut SessionWriter, n: usize) -> usize {
    let mut written = 0;
    let mut put = |e: Entry| {
        w.append(&e).expect("append");
        written += 1;
    };
    put(Entry::user(prose(n, 160)));
    for k in 0..4 {
        let id = format!("call_{n}_{k}");
        put(Entry::assistant(vec![
            AssistantPart::Thinking {
                text: prose(n + k, 120),
                signature: None,
            },
            AssistantPart::Text {
                text: prose(n + k + 1, 60),
            },
            AssistantPart::ToolCall(ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: format!("{{\"command\":\"cargo test -q --lib part{k}\"}}"),
            }),
        ]));
        put(Entry::tool_result(
            id,
            "bash",
            prose(n * 3 + k, 480),
            ToolStatus::Ok,
            Some(1200),
        ));
    }
    put(Entry::assistant(vec![AssistantPart::Text {
        text: prose(n + 9, 400),
    }]));
    if n.is_multiple_of(5) {
        put(Entry::todos(vec![Todo {
            content: "Run the tests".into(),
            active_form: "Running the tests".into(),
            status: TodoStatus::InProgress,
        }]));
    }
    put(Entry::usage(50_000 + n as u64, 300));
    written
}

/// Writes a session of about `entries` entries into `data_dir`; with `compact_every`, a
/// compaction (summary + context) every that many entries, as a long session would have.
pub fn generate(data_dir: &Path, entries: usize, compact_every: Option<usize>) -> PathBuf {
    let header = Header::new("b0b0b0b0b0b0", Path::new("/work/proj"), "model", "openai");
    let mut w = SessionWriter::create(data_dir, header).expect("create");
    let mut n = 0;
    let mut since = 0;
    while n < entries {
        let k = turn(&mut w, n);
        n += k;
        since += k;
        if compact_every.is_some_and(|every| since >= every) {
            let summary = prose(n, 6000);
            w.append(&Entry::compaction(
                summary.clone(),
                180_000,
                2_000,
                vec![
                    Message::User { content: summary },
                    Message::Assistant {
                        parts: vec![AssistantPart::Text {
                            text: "Continuing.".into(),
                        }],
                    },
                ],
            ))
            .expect("append");
            n += 1;
            since = 0;
        }
    }
    w.sync().expect("sync");
    w.path().to_path_buf()
}

/// Writes `count` small sessions (a prompt, an answer, synced) spread over a few directories.
pub fn generate_many(data_dir: &Path, count: usize) {
    for i in 0..count {
        let cwd = PathBuf::from(format!("/work/proj{}", i % 7));
        let mut w = SessionWriter::create(
            data_dir,
            Header::new(format!("{i:012x}"), &cwd, "m", "openai"),
        )
        .expect("create");
        w.append(&Entry::user(prose(i, 120))).expect("append");
        w.append(&Entry::assistant(vec![AssistantPart::Text {
            text: prose(i + 1, 200),
        }]))
        .expect("append");
        w.sync().expect("sync");
    }
}
