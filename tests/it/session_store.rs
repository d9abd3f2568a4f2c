//! The session store on real files: writing, loading, repair, resume, listing, lookup, fork,
//! export, and that the API key never reaches the data dir.

use jiff::Timestamp;
use rein::llm::{AssistantPart, Message, ToolCall};
use rein::protocol::{Decision, EditDiff, Event, Todo, TodoStatus, ToolDisplay, ToolStatus};
use rein::session_store::{
    self, DANGLING_TOOL_RESULT, Entry, Header, RenameEntry, SessionError, SessionWriter, UserEntry,
};
use std::io::Write;
use std::path::{Path, PathBuf};

fn header(id: &str, cwd: &Path) -> Header {
    Header::new(id, cwd, "model-a", "openai")
}

fn call(id: &str, name: &str, args: &str) -> AssistantPart {
    AssistantPart::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    })
}

fn text(t: &str) -> AssistantPart {
    AssistantPart::Text { text: t.into() }
}

fn todo(content: &str, status: TodoStatus) -> Todo {
    Todo {
        content: content.into(),
        active_form: format!("{content}ing"),
        status,
    }
}

/// One entry of every type, in a plausible order.
fn every_entry() -> Vec<Entry> {
    vec![
        Entry::user("fix the \"bug\"\nin main.rs"),
        Entry::image(rein::images::ImageRef {
            name: "shot.png".into(),
            path: Some("/work/proj/shot.png".into()),
            media_type: rein::images::MediaType::Png,
            width: 1280,
            height: 720,
            bytes: 81_234,
            sha256: "9f".repeat(32),
            original: None,
        }),
        Entry::assistant(vec![
            AssistantPart::Thinking {
                text: "look first".into(),
                signature: Some("sig==".into()),
            },
            AssistantPart::RedactedThinking {
                data: "opaque".into(),
            },
            text("Let me look."),
            call("c1", "bash", r#"{"command":"ls -la"}"#),
        ]),
        Entry::approval("c1", Decision::Always, Some("fine".into())),
        Entry::tool_result("c1", "bash", "a\nb\u{1F600}\n", ToolStatus::Ok, Some(12)),
        Entry::todos(vec![
            todo("Read", TodoStatus::Completed),
            todo("Fix", TodoStatus::InProgress),
        ]),
        Entry::usage(1200, 80),
        Entry::compaction(
            "We looked at main.rs.",
            150_000,
            900,
            vec![
                Message::User {
                    content: "Summary: we looked at main.rs.".into(),
                },
                Message::Assistant {
                    parts: vec![text("Continuing.")],
                },
            ],
        ),
        Entry::error("the model server answered HTTP 500"),
        Entry::interrupted(),
        Entry::rename("Fix the bug"),
        Entry::model_change("model-b"),
        Entry::subagent("task1", Entry::user("explore src/")),
        Entry::subagent("task1", Entry::assistant(vec![text("src/ has 3 files")])),
        Entry::checkpoint(Some("c1".into()), vec![file_change("src/main.rs")]),
        Entry::rewind(0, vec![file_change("src/main.rs")], None),
    ]
}

fn file_change(path: &str) -> rein::checkpoint::Change {
    rein::checkpoint::Change {
        path: path.into(),
        before: rein::checkpoint::FileState::Absent,
        after: rein::checkpoint::FileState::File {
            size: 3,
            mode: 0o644,
            hash: Some("ab".repeat(32)),
            kept: true,
        },
    }
}

fn new_session(data: &Path, id: &str, entries: &[Entry]) -> PathBuf {
    let mut w = SessionWriter::create(data, header(id, Path::new("/work/proj"))).unwrap();
    for e in entries {
        w.append(e).unwrap();
    }
    w.sync().unwrap();
    w.path().to_path_buf()
}

#[test]
fn every_entry_type_round_trips_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let entries = every_entry();
    let types: std::collections::BTreeSet<&str> = entries.iter().map(Entry::type_name).collect();
    assert_eq!(
        types.len(),
        session_store::KNOWN_TYPES.len(),
        "every type is covered"
    );
    let path = new_session(dir.path(), "0123456789ab", &entries);

    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.ends_with("_0123456789ab.jsonl"), "{name}");
    let text = std::fs::read_to_string(&path).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "header");
    assert_eq!(first["schema"], 1);
    assert_eq!(first["parent"], serde_json::Value::Null);
    assert_eq!(
        text.lines().count(),
        1 + entries.len(),
        "one line per entry"
    );

    let loaded = session_store::load(&path).unwrap();
    assert_eq!(loaded.header.id, "0123456789ab");
    assert_eq!(loaded.header.model, "model-a");
    assert_eq!(loaded.entries, entries);
    assert!(loaded.notices.is_empty(), "{:?}", loaded.notices);
}

#[test]
fn torn_last_line_is_skipped_and_the_session_continues() {
    let dir = tempfile::tempdir().unwrap();
    let entries = vec![Entry::user("one"), Entry::assistant(vec![text("two")])];
    let path = new_session(dir.path(), "aaaaaaaaaaaa", &entries);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"type":"tool_result","ts":"2026-01-01T00:00:00Z","call_id":"c"#)
        .unwrap();
    drop(f);

    let loaded = session_store::load(&path).unwrap();
    assert_eq!(loaded.entries, entries);
    assert_eq!(loaded.notices.len(), 1);
    assert!(
        loaded.notices[0].contains("cut off"),
        "{:?}",
        loaded.notices
    );

    // Continuing starts a fresh line: the new entry survives, the fragment stays skipped.
    let mut w = SessionWriter::open_append(&path).unwrap();
    w.append(&Entry::user("three")).unwrap();
    drop(w);
    let loaded = session_store::load(&path).unwrap();
    assert_eq!(loaded.entries.len(), 3);
    assert_eq!(loaded.entries[2].to_message().unwrap().text(), "three");
    assert!(loaded.notices[0].contains("Line 4"), "{:?}", loaded.notices);
}

#[test]
fn empty_and_foreign_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let err = session_store::load(&empty).unwrap_err();
    assert!(matches!(err, SessionError::Empty { .. }), "{err:?}");
    assert!(err.to_string().contains("is empty"), "{err}");

    let foreign = dir.path().join("foreign.jsonl");
    std::fs::write(&foreign, "{\"hello\":1}\n").unwrap();
    let err = session_store::load(&foreign).unwrap_err();
    assert!(err.to_string().contains("not a rein session"), "{err}");
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"header\",\"schema\":3,\"id\":\"x\",\"shiny\":true}\n{\"type\":\"warp\"}\n",
    )
    .unwrap();
    let err = session_store::load(&path).unwrap_err();
    assert!(
        err.to_string().contains(
            "written by a newer rein (schema 3); this rein reads up to schema 1: upgrade rein"
        ),
        "{err}"
    );
    assert!(matches!(
        SessionWriter::open_append(&path),
        Err(SessionError::FutureSchema { found: 3, .. })
    ));
}

#[test]
fn unknown_entry_types_of_the_same_schema_are_skipped_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_session(dir.path(), "bbbbbbbbbbbb", &[Entry::user("one")]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(
        f,
        r#"{{"type":"hologram","ts":"2026-01-01T00:00:00Z","x":1}}"#
    )
    .unwrap();
    writeln!(
        f,
        r#"{{"type":"hologram","ts":"2026-01-01T00:00:01Z","x":2}}"#
    )
    .unwrap();
    drop(f);
    let mut w = SessionWriter::open_append(&path).unwrap();
    w.append(&Entry::user("two")).unwrap();
    drop(w);
    let loaded = session_store::load(&path).unwrap();
    assert_eq!(loaded.entries.len(), 2);
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert!(loaded.notices[0].contains("2 entries of unknown type `hologram`"));
}

fn tool_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[test]
fn dangling_tool_calls_get_a_result_after_the_answered_ones() {
    let dir = tempfile::tempdir().unwrap();
    // Killed during the third call's run: c3 answered out of order, c1 and c2 never.
    let path = new_session(
        dir.path(),
        "cccccccccccc",
        &[
            Entry::user("go"),
            Entry::assistant(vec![
                text("three things"),
                call("c1", "bash", r#"{"command":"a"}"#),
                call("c2", "bash", r#"{"command":"b"}"#),
                call("c3", "bash", r#"{"command":"c"}"#),
            ]),
            Entry::tool_result("c3", "bash", "out3", ToolStatus::Ok, None),
        ],
    );
    // Resumed once before (not repaired on disk), the person typed on.
    let mut w = SessionWriter::open_append(&path).unwrap();
    w.append(&Entry::user("and now?")).unwrap();
    w.append(&Entry::assistant(vec![call("c4", "read_file", "{}")]))
        .unwrap();
    drop(w);

    let r = session_store::rebuild(session_store::load(&path).unwrap());
    assert_eq!(
        session_store::resume(&path).unwrap(),
        r,
        "streaming gives the same result"
    );
    let dangling = |id: &str| (id.to_string(), DANGLING_TOOL_RESULT.to_string(), true);
    assert_eq!(
        tool_results(&r.messages),
        vec![
            ("c3".to_string(), "out3".to_string(), false),
            dangling("c1"),
            dangling("c2"),
            dangling("c4"),
        ]
    );
    // The results sit between the assistant message and the next user message.
    let roles: Vec<&str> = r
        .messages
        .iter()
        .map(|m| match m {
            Message::User { .. } | Message::UserImage { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::ToolResult { .. } => "tool",
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "user",
            "assistant",
            "tool"
        ]
    );
    assert!(
        r.notices
            .iter()
            .any(|n| n.contains("3 tool calls had no recorded result"))
    );
    // The calls without a result end, interrupted, when the replay does.
    let mut view_outputs: Vec<(&str, ToolStatus, &str)> = r
        .view
        .iter()
        .filter_map(|i| match i {
            Event::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } => Some((call_id.as_str(), *status, output.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(view_outputs[0], ("c3", ToolStatus::Ok, "out3"));
    view_outputs.sort_unstable_by_key(|(id, ..)| *id);
    assert_eq!(
        view_outputs,
        vec![
            ("c1", ToolStatus::Interrupted, DANGLING_TOOL_RESULT),
            ("c2", ToolStatus::Interrupted, DANGLING_TOOL_RESULT),
            ("c3", ToolStatus::Ok, "out3"),
            ("c4", ToolStatus::Interrupted, DANGLING_TOOL_RESULT),
        ]
    );
}

#[test]
fn answered_calls_are_left_alone_and_orphan_results_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_session(
        dir.path(),
        "dddddddddddd",
        &[
            Entry::user("go"),
            Entry::assistant(vec![call("c1", "bash", "{}"), call("c2", "bash", "{}")]),
            Entry::tool_result("c1", "bash", "one", ToolStatus::Ok, None),
            Entry::tool_result("c2", "bash", "two", ToolStatus::Denied, None),
            // A result whose call was on a damaged line.
            Entry::tool_result("ghost", "bash", "boo", ToolStatus::Ok, None),
            Entry::assistant(vec![text("done")]),
        ],
    );
    let r = session_store::rebuild(session_store::load(&path).unwrap());
    assert_eq!(
        tool_results(&r.messages),
        vec![
            ("c1".to_string(), "one".to_string(), false),
            ("c2".to_string(), "two".to_string(), true),
        ]
    );
    assert!(
        r.notices
            .iter()
            .any(|n| n.contains("answered no preceding tool call"))
    );
    assert!(r.view.iter().any(|i| matches!(i,
        Event::ToolCallFinished { call_id, status: ToolStatus::Denied, .. } if call_id == "c2")));
}

#[test]
fn resume_after_compaction_starts_the_context_there_and_shows_everything() {
    let dir = tempfile::tempdir().unwrap();
    let context = vec![
        Message::User {
            content: "Summary of the work so far".into(),
        },
        Message::Assistant {
            parts: vec![text("Continuing.")],
        },
    ];
    let path = new_session(
        dir.path(),
        "eeeeeeeeeeee",
        &[
            Entry::user("first question"),
            Entry::assistant(vec![text("first answer")]),
            Entry::usage(90_000, 10),
            Entry::compaction("old summary", 5000, 100, vec![]),
            Entry::user("second question"),
            Entry::todos(vec![todo("Test", TodoStatus::Pending)]),
            Entry::compaction("Summary of the work so far", 150_000, 900, context.clone()),
            Entry::user("third question"),
            Entry::assistant(vec![
                AssistantPart::Thinking {
                    text: "hmm".into(),
                    signature: None,
                },
                text("third answer"),
            ]),
            Entry::usage(2000, 30),
            Entry::rename("Three questions"),
        ],
    );
    let r = session_store::rebuild(session_store::load(&path).unwrap());
    assert_eq!(
        session_store::resume(&path).unwrap(),
        r,
        "streaming gives the same result"
    );
    let mut expected = context;
    expected.push(Message::User {
        content: "third question".into(),
    });
    expected.push(Message::Assistant {
        parts: vec![
            AssistantPart::Thinking {
                text: "hmm".into(),
                signature: None,
            },
            text("third answer"),
        ],
    });
    assert_eq!(r.messages, expected);
    assert_eq!(r.usage.map(|u| u.input_tokens), Some(2000));
    assert_eq!(r.title.as_deref(), Some("Three questions"));
    assert_eq!(r.todos, vec![todo("Test", TodoStatus::Pending)]);

    let users: Vec<&str> = r
        .view
        .iter()
        .filter_map(|i| match i {
            Event::UserMessage { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        ["first question", "second question", "third question"]
    );
    let notices = r
        .view
        .iter()
        .filter(|i| matches!(i, Event::Notice { text, .. } if text.contains("compacted")))
        .count();
    assert_eq!(notices, 2);
    assert_eq!(
        r.view[r.view.len() - 2..],
        [
            Event::ReasoningDelta { text: "hmm".into() },
            Event::AssistantMessage {
                text: "third answer".into()
            }
        ]
    );
}

#[test]
fn subagent_entries_stay_out_of_the_context_and_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_session(
        dir.path(),
        "ffffffffffff",
        &[
            Entry::user("explore"),
            Entry::assistant(vec![call("t1", "task", r#"{"prompt":"look around"}"#)]),
            Entry::subagent("t1", Entry::user("look around")),
            Entry::subagent(
                "t1",
                Entry::assistant(vec![call("s1", "bash", r#"{"command":"ls"}"#)]),
            ),
            Entry::subagent(
                "t1",
                Entry::tool_result("s1", "bash", "src", ToolStatus::Ok, None),
            ),
            Entry::subagent("t1", Entry::assistant(vec![text("there is src")])),
            Entry::tool_result("t1", "task", "there is src", ToolStatus::Ok, None),
        ],
    );
    let loaded = session_store::load(&path).unwrap();
    assert_eq!(loaded.entries.len(), 7, "the side chain is kept on disk");
    let r = session_store::rebuild(loaded);
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        tool_results(&r.messages),
        vec![("t1".into(), "there is src".into(), false)]
    );
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert!(
        !r.view
            .iter()
            .any(|i| matches!(i, Event::UserMessage { text } if text == "look around"))
    );
}

/// A session with a fixed creation time and one user message at `updated`.
fn dated_session(
    data: &Path,
    id: &str,
    cwd: &Path,
    created: i64,
    updated: i64,
    prompt: &str,
) -> SessionWriter {
    let mut h = header(id, cwd);
    h.created_at = Timestamp::from_second(created).unwrap();
    let mut w = SessionWriter::create(data, h).unwrap();
    w.append(&Entry::User(UserEntry {
        ts: Timestamp::from_second(updated).unwrap(),
        content: prompt.into(),
        from: None,
        command: None,
    }))
    .unwrap();
    w
}

#[test]
fn listing_two_thousand_sessions_sorts_filters_and_falls_back_without_sidecars() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (here, there) = (Path::new("/work/here"), Path::new("/work/there"));
    let base = 1_700_000_000;
    // Eight writers at once: the fsyncs overlap instead of queueing.
    std::thread::scope(|s| {
        for t in 0..8i64 {
            s.spawn(move || {
                for i in (t..2000).step_by(8) {
                    let cwd = if i % 4 == 0 { here } else { there };
                    let id = format!("{i:012x}");
                    let prompt = format!("prompt {i}\nmore");
                    let mut w = dated_session(data, &id, cwd, base + i, base + 10 * i, &prompt);
                    w.append(&Entry::assistant(vec![text("ok")])).unwrap();
                    if i % 100 != 7 {
                        w.append(&Entry::Rename(RenameEntry {
                            ts: Timestamp::from_second(base + 10 * i).unwrap(),
                            title: format!("title {i}"),
                        }))
                        .unwrap();
                    }
                    w.sync().unwrap();
                }
            });
        }
    });
    // Sidecars that are missing or behind the file.
    let stale = session_store::find(data, &format!("{:012x}", 1000)).unwrap();
    let mut w = SessionWriter::open_append(&stale).unwrap();
    w.append(&Entry::user("one more")).unwrap();
    drop(w);
    let missing = session_store::find(data, &format!("{:012x}", 1004)).unwrap();
    std::fs::remove_file(session_store::sidecar_path(&missing)).unwrap();

    let all = session_store::list(data, None);
    assert_eq!(all.len(), 2000);
    assert!(
        all.is_sorted_by(|a, b| a.updated_at >= b.updated_at),
        "newest first"
    );
    let by_id = |id: i64| all.iter().find(|s| s.id == format!("{id:012x}")).unwrap();
    assert_eq!(by_id(1999).title, "title 1999");
    assert_eq!(by_id(1999).message_count, 2);
    assert_eq!(
        by_id(1999).updated_at,
        Timestamp::from_second(base + 19990).unwrap()
    );
    assert_eq!(
        by_id(107).title,
        "prompt 107",
        "no rename: the first prompt"
    );
    assert_eq!(
        by_id(107).message_count,
        2,
        "sidecar behind: the tail is counted"
    );
    assert_eq!(by_id(1000).message_count, 3);
    assert_eq!(
        by_id(1004).title,
        "title 1004",
        "no sidecar: read from the file"
    );
    assert_eq!(by_id(1004).message_count, 2);
    assert_eq!(by_id(1004).cwd, here);

    let mine = session_store::list(data, Some(here));
    assert_eq!(mine.len(), 500);
    assert!(mine.iter().all(|s| s.cwd == here));
    // The stale and sidecar-less sessions were touched last (file mtime).
    let newest = session_store::newest_for_cwd(data, here).unwrap();
    assert!(newest.id == format!("{:012x}", 1000) || newest.id == format!("{:012x}", 1004));
}

#[test]
fn ids_are_found_by_unique_prefix() {
    let dir = tempfile::tempdir().unwrap();
    for id in ["abc111111111", "abc222222222", "def333333333"] {
        new_session(dir.path(), id, &[Entry::user("x")]);
    }
    let p = session_store::find(dir.path(), "abc1").unwrap();
    assert_eq!(session_store::id_from_path(&p), Some("abc111111111"));
    assert_eq!(
        session_store::id_from_path(&session_store::find(dir.path(), "def333333333").unwrap()),
        Some("def333333333")
    );
    match session_store::find(dir.path(), "abc") {
        Err(SessionError::Ambiguous { candidates, .. }) => {
            assert_eq!(candidates, ["abc111111111", "abc222222222"]);
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    let err = session_store::find(dir.path(), "zzz").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no session with id zzz (see `rein sessions list --all`)"
    );
    assert!(matches!(
        session_store::find(&dir.path().join("nowhere"), "abc"),
        Err(SessionError::NotFound { .. })
    ));
}

#[test]
fn fork_copies_the_entries_and_names_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let entries = every_entry();
    let source = new_session(dir.path(), "111111111111", &entries);
    // A cut-off line at the end of the source is not copied.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&source)
        .unwrap()
        .write_all(b"{\"type\":\"us")
        .unwrap();

    let mut fork = session_store::fork(dir.path(), &source, "222222222222").unwrap();
    assert_eq!(fork.header().parent.as_deref(), Some("111111111111"));
    fork.append(&Entry::user("only in the fork")).unwrap();
    fork.sync().unwrap();
    let fork_path = fork.path().to_path_buf();
    drop(fork);

    let copy = session_store::load(&fork_path).unwrap();
    assert_eq!(copy.header.parent.as_deref(), Some("111111111111"));
    assert_eq!(copy.header.id, "222222222222");
    assert_eq!(copy.header.cwd, Path::new("/work/proj"));
    assert_eq!(&copy.entries[..entries.len()], &entries[..]);
    assert_eq!(copy.entries.len(), entries.len() + 1);
    assert!(copy.notices.is_empty(), "{:?}", copy.notices);
    assert_eq!(
        session_store::load(&source).unwrap().entries,
        entries,
        "source untouched"
    );

    let listed = session_store::list(dir.path(), None);
    let f = listed.iter().find(|s| s.id == "222222222222").unwrap();
    assert_eq!(f.parent.as_deref(), Some("111111111111"));
    assert_eq!(f.title, "Fix the bug");
}

#[test]
fn export_round_trips_and_reads_well() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_session(dir.path(), "333333333333", &every_entry());
    let loaded = session_store::load(&path).unwrap();
    let json = session_store::export_json(&loaded);
    let back = session_store::parse_export_json(&json).unwrap();
    assert_eq!(back.header, loaded.header);
    assert_eq!(back.entries, loaded.entries);

    let md = session_store::export_markdown(&loaded);
    for needle in [
        "# Fix the bug",
        "*Files changed: `src/main.rs`.*",
        "*Rewound the code to before user message 1",
        "## User",
        "fix the \"bug\"\nin main.rs",
        "**Tool call** `bash` (id `c1`)",
        "\"command\": \"ls -la\"",
        "**Result** of `bash` (id `c1`, ok)",
        "- [x] Read",
        "- [~] Fix",
        "> We looked at main.rs.",
        "150000 → 900 tokens",
        "*subagent `task1`*",
        "Model switched to `model-b`",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
}

#[test]
fn summaries_serialise_with_the_documented_field_names() {
    let dir = tempfile::tempdir().unwrap();
    new_session(dir.path(), "444444444444", &[Entry::user("hello there")]);
    let list = session_store::list(dir.path(), None);
    let json = serde_json::to_value(&list).unwrap();
    let obj = json[0].as_object().unwrap();
    assert_eq!(obj["id"], "444444444444");
    assert_eq!(obj["title"], "hello there");
    assert_eq!(obj["cwd"], "/work/proj");
    assert_eq!(obj["model"], "model-a");
    assert_eq!(obj["message_count"], 1);
    for key in ["created_at", "updated_at"] {
        let s = obj[key].as_str().unwrap();
        assert!(s.parse::<Timestamp>().is_ok(), "{key} = {s}");
    }
}

#[test]
fn one_writer_per_session_and_removal() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SessionWriter::create(dir.path(), header("555555555555", Path::new("/p"))).unwrap();
    let err = SessionWriter::open_append(w.path()).unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("another rein process"));
    w.append(&Entry::user("x")).unwrap();
    let path = w.path().to_path_buf();
    drop(w);
    let mut again = SessionWriter::open_append(&path).unwrap();
    again.append(&Entry::user("y")).unwrap();
    again.sync().unwrap();
    drop(again);
    assert_eq!(session_store::list(dir.path(), None)[0].message_count, 2);

    assert!(matches!(
        SessionWriter::create(dir.path(), header("../escape", Path::new("/p"))),
        Err(SessionError::InvalidId(_))
    ));
    session_store::remove(&path).unwrap();
    assert!(!path.exists());
    assert!(!session_store::sidecar_path(&path).exists());
    assert!(session_store::list(dir.path(), None).is_empty());
}

#[test]
fn the_api_key_never_reaches_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = rein::config::Inputs {
        env: [
            ("API_KEY", "sk-test-SECRET"),
            ("MODEL", "m"),
            ("BASE_URL", "https://api.example.com/v1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        home_dir: Some(dir.path().join("home")),
        config_dir: dir.path().join("config"),
        data_dir: dir.path().join("data"),
        cwd: dir.path().join("proj"),
        ..Default::default()
    };
    let config = rein::config::Config::from_inputs(&inputs).unwrap();
    assert_eq!(config.api_key.as_deref(), Some("sk-test-SECRET"));

    let mut w = SessionWriter::create(
        &config.data_dir,
        Header::for_config("666666666666", &config),
    )
    .unwrap();
    for e in every_entry() {
        w.append(&e).unwrap();
    }
    w.rename("secret-free").unwrap();
    w.sync().unwrap();
    let path = w.path().to_path_buf();
    drop(w);
    session_store::fork(&config.data_dir, &path, "777777777777").unwrap();

    let mut files = 0;
    let mut stack = vec![config.data_dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("sk-test-SECRET"),
                    "{} holds the key",
                    p.display()
                );
            }
        }
    }
    assert_eq!(files, 4, "two sessions and their sidecars");
}

#[test]
fn a_bounded_resume_keeps_the_first_prompt_and_the_recent_turns_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = vec![Entry::user("the very first prompt")];
    for i in 0..400 {
        let id = format!("c{i}");
        entries.push(Entry::assistant(vec![
            text(&format!("step {i}")),
            call(&id, "bash", "{}"),
        ]));
        entries.push(Entry::tool_result(
            &id,
            "bash",
            "x".repeat(1_000),
            ToolStatus::Ok,
            None,
        ));
        if i % 50 == 0 {
            entries.push(Entry::user(format!("user message {i}")));
        }
    }
    let path = new_session(dir.path(), "bounded00001", &entries);
    let full = rein::session_store::resume(&path).unwrap();
    let bounded = rein::session_store::resume_within(&path, Some(20_000)).unwrap();
    // The view is the same: everything stays on screen.
    assert_eq!(bounded.view, full.view);
    // The context is small, starts with the first prompt and ends with the latest turn.
    let bytes: usize = bounded.messages.iter().map(|m| m.text().len()).sum();
    assert!(bytes <= 45_000, "{bytes}");
    assert!(bounded.messages.len() < full.messages.len() / 4);
    assert_eq!(
        bounded.messages.first(),
        Some(&Message::User {
            content: "the very first prompt".into()
        })
    );
    assert_eq!(bounded.messages.last(), full.messages.last());
    // Every result still follows its call (nothing was cut between them).
    let mut open: Vec<String> = Vec::new();
    for m in &bounded.messages {
        match m {
            Message::Assistant { .. } => open = m.tool_calls().map(|c| c.id.clone()).collect(),
            Message::ToolResult { call_id, .. } => {
                assert!(open.contains(call_id), "orphan {call_id}")
            }
            Message::User { .. } | Message::UserImage { .. } => {}
        }
    }
    assert!(
        bounded.notices.iter().any(|n| n.contains("too far back")),
        "{:?}",
        bounded.notices
    );
    // Small sessions are not touched.
    let small = new_session(dir.path(), "bounded00002", &entries[..8]);
    let r = rein::session_store::resume_within(&small, Some(20_000)).unwrap();
    assert_eq!(
        r.messages,
        rein::session_store::resume(&small).unwrap().messages
    );
    assert!(r.notices.is_empty());
}

/// A resumed session shows what the live one showed: the recorded display and exit code. A
/// file written before displays were recorded still loads, its displays rebuilt from the
/// stored arguments (without touching the files they name).
#[test]
fn resumed_tool_calls_carry_their_display_old_files_rebuild_it() {
    let dir = tempfile::tempdir().unwrap();
    let diff = EditDiff::between(Some("a\n"), "b\n");
    let shown = ToolDisplay::Edit {
        path: "src/a.rs".into(),
        diff: Some(diff),
    };
    let edit_args = r#"{"path":"src/a.rs","old_str":"a","new_str":"b"}"#;
    let path = new_session(
        dir.path(),
        "dddddddddddd",
        &[
            Entry::user("go"),
            Entry::assistant(vec![
                call("e1", "str_replace", edit_args),
                call("b1", "bash", r#"{"command":"false"}"#),
                call(
                    "o1",
                    "read_file",
                    r#"{"path":"gone.rs","offset":3,"limit":2}"#,
                ),
            ]),
            Entry::tool_result("e1", "str_replace", "Edited", ToolStatus::Ok, Some(3))
                .shown_as(shown.clone(), None),
            Entry::tool_result("b1", "bash", "[exit code: 1]", ToolStatus::Ok, Some(4)).shown_as(
                ToolDisplay::Exec {
                    command: "false".into(),
                },
                Some(1),
            ),
            // Written by an older rein: no display.
            Entry::tool_result("o1", "read_file", "x", ToolStatus::Ok, None),
        ],
    );
    let r = session_store::resume(&path).unwrap();
    // Each call as it started (with the display the live view showed) and its exit code.
    let exit_code = |id: &str| {
        r.view.iter().find_map(|i| match i {
            Event::ToolCallFinished {
                call_id, exit_code, ..
            } if call_id == id => Some(*exit_code),
            _ => None,
        })
    };
    let tools: Vec<(String, ToolDisplay, Option<i32>)> = r
        .view
        .iter()
        .filter_map(|i| match i {
            Event::ToolCallStarted { call_id, display } => Some((
                call_id.clone(),
                display.clone(),
                exit_code(call_id).flatten(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("e1".to_string(), shown, None),
            (
                "b1".to_string(),
                ToolDisplay::Exec {
                    command: "false".into()
                },
                Some(1)
            ),
            (
                "o1".to_string(),
                ToolDisplay::Read {
                    path: "gone.rs".into(),
                    lines: Some(rein::protocol::LineRange { first: 3, last: 4 }),
                },
                None
            ),
        ]
    );
    // The line as written: optional fields, absent when there is nothing to say.
    let text = std::fs::read_to_string(&path).unwrap();
    let old = text
        .lines()
        .find(|l| l.contains("\"o1\"") && l.contains("tool_result"))
        .unwrap();
    assert!(
        !old.contains("display") && !old.contains("exit_code"),
        "{old}"
    );
}
