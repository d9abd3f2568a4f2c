//! `checkpoint` and `rewind` entries in the session store: a resume shows and continues the
//! rewound conversation and knows the checkpoints; `/fork` carries the blobs along and
//! `sessions rm` deletes them.

use rein::checkpoint::{BlobStore, Change, FileState, blobs, dir_for};
use rein::llm::{AssistantPart, Message};
use rein::protocol::Event;
use rein::session_store::{self, Entry, Header, SessionWriter};

fn text(t: &str) -> Vec<AssistantPart> {
    vec![AssistantPart::Text { text: t.into() }]
}

fn change(path: &str) -> Change {
    Change {
        path: path.into(),
        before: FileState::Absent,
        after: FileState::File {
            size: 2,
            mode: 0o644,
            hash: Some(blobs::hash(b"hi")),
            kept: true,
        },
    }
}

fn session(data: &std::path::Path) -> std::path::PathBuf {
    let header = Header::new("0123456789ab", std::path::Path::new("/w"), "m", "openai");
    let mut w = SessionWriter::create(data, header).unwrap();
    let one = Message::User {
        content: "one".into(),
    };
    let answer_one = Message::Assistant {
        parts: text("answer one"),
    };
    for e in [
        Entry::user("one"),
        Entry::assistant(text("answer one")),
        Entry::checkpoint(Some("c1".into()), vec![change("made.txt")]),
        Entry::user("two"),
        Entry::assistant(text("answer two")),
        Entry::checkpoint(Some("c2".into()), vec![change("second.txt")]),
        Entry::rewind(1, vec![], Some((vec![one, answer_one], vec![]))),
        Entry::user("three"),
        Entry::assistant(text("answer three")),
    ] {
        w.append(&e).unwrap();
    }
    w.sync().unwrap();
    w.path().to_path_buf()
}

#[test]
fn a_resume_shows_and_continues_the_rewound_conversation_and_keeps_the_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path());
    let r = session_store::resume(&path).unwrap();
    let users: Vec<&str> = r
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, vec!["one", "three"]);
    let shown: Vec<String> = r
        .view
        .iter()
        .map(|i| match i {
            Event::UserMessage { text } | Event::Notice { text, .. } => text.clone(),
            Event::AssistantMessage { text } => text.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            "one",
            "answer one",
            "Rewound the conversation to before “two”.",
            "three",
            "answer three"
        ]
    );
    // The points: "two" is gone from the conversation; the code of both turns can go back.
    let live: Vec<bool> = r.rewind.points().iter().map(|p| p.live).collect();
    assert_eq!(live, vec![true, false, true]);
    let planned: Vec<String> = r.rewind.plan(0).into_iter().map(|p| p.path).collect();
    assert_eq!(planned, vec!["made.txt", "second.txt"]);

    // The conversation before "three" is the rewound one, too.
    let before = session_store::resume_before(&path, 2, None).unwrap();
    assert_eq!(before.messages.len(), 2);
    assert!(
        before
            .view
            .iter()
            .all(|i| !matches!(i, Event::UserMessage { text } if text == "two"))
    );
}

#[test]
fn fork_carries_the_blobs_and_rm_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path());
    let store = BlobStore::new(dir_for(&path).join("blobs"));
    let h = blobs::hash(b"hi");
    store.put(&h, b"hi").unwrap();

    let copy = session_store::fork(dir.path(), &path, "ba9876543210").unwrap();
    let copied = BlobStore::new(dir_for(copy.path()).join("blobs"));
    assert_eq!(copied.get(&h).unwrap(), b"hi");
    let copy_path = copy.path().to_path_buf();
    drop(copy);

    session_store::remove(&path).unwrap();
    assert!(!dir_for(&path).exists());
    assert_eq!(copied.get(&h).unwrap(), b"hi", "the fork keeps its own");
    session_store::remove(&copy_path).unwrap();
    assert!(!dir_for(&copy_path).exists());
}

/// The output of a `!command` is context for the person's next message, not a message to
/// rewind to: points and cuts count the person's messages only, as the live session does.
#[test]
fn shell_output_is_not_a_point_to_rewind_to() {
    let dir = tempfile::tempdir().unwrap();
    let header = Header::new("0123456789ac", std::path::Path::new("/w"), "m", "openai");
    let mut w = SessionWriter::create(dir.path(), header).unwrap();
    for e in [
        Entry::user("one"),
        Entry::assistant(text("answer one")),
        Entry::shell_context("I ran a command myself\n$ ls"),
        Entry::user("two"),
        Entry::assistant(text("answer two")),
    ] {
        w.append(&e).unwrap();
    }
    w.sync().unwrap();
    let path = w.path().to_path_buf();
    let r = session_store::resume(&path).unwrap();
    let points: Vec<&str> = r.rewind.points().iter().map(|p| p.text.as_str()).collect();
    assert_eq!(points, ["one", "two"]);
    let before = session_store::resume_before(&path, 1, None).unwrap();
    let last = before.messages.last().unwrap();
    assert!(
        matches!(last, Message::User { content } if content.contains("$ ls")),
        "the cut keeps the shell output before `two`: {:#?}",
        before.messages
    );
}
