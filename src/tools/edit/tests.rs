use super::*;
use crate::tools::test_ctx::TestCtx;
use std::os::unix::fs::PermissionsExt;

async fn run(t: &TestCtx, args: Value) -> Result<String, String> {
    t.call(&StrReplace, args)
        .await
        .map(|o| o.text)
        .map_err(|e| e.0)
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "old_str": old, "new_str": new})
}

#[tokio::test]
async fn replaces_a_unique_match_and_shows_the_region() {
    let t = TestCtx::new();
    let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    t.write_seen("f.txt", &body);
    let out = run(
        &t,
        edit("f.txt", "line 10\n", "line ten\nline ten and a half\n"),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "Edited f.txt (1 replacement). The edited region now reads:\n\
         \x20    7\tline 7\n     8\tline 8\n     9\tline 9\n    10\tline ten\n    11\tline ten and a half\n\
         \x20   12\tline 11\n    13\tline 12\n    14\tline 13"
    );
    assert_eq!(
        t.read("f.txt"),
        body.replace("line 10\n", "line ten\nline ten and a half\n")
    );
}

#[tokio::test]
async fn empty_old_str_is_refused() {
    let t = TestCtx::new();
    t.write_seen("f.txt", "abc\n");
    let err = run(&t, edit("f.txt", "", "x")).await.unwrap_err();
    assert!(
        err.starts_with("`old_str` is empty. To create a file use write_file;"),
        "{err}"
    );
    assert!(t.prepare(&StrReplace, edit("f.txt", "", "x")).is_err());
}

#[tokio::test]
async fn identical_strings_are_refused() {
    let t = TestCtx::new();
    t.write_seen("f.txt", "abc\n");
    let err = run(&t, edit("f.txt", "abc", "abc")).await.unwrap_err();
    assert!(
        err.starts_with("`old_str` and `new_str` are identical"),
        "{err}"
    );
}

#[tokio::test]
async fn missing_file_and_directory_are_errors() {
    let t = TestCtx::new();
    t.write_seen("src/lib.rs", "x");
    let err = run(&t, edit("src/lbi.rs", "x", "y")).await.unwrap_err();
    assert_eq!(
        err,
        "src/lbi.rs does not exist. Did you mean src/lib.rs? Use write_file to create a new file."
    );
    let err = run(&t, edit("src", "x", "y")).await.unwrap_err();
    assert!(err.starts_with("src is a directory, not a file."), "{err}");
}

#[tokio::test]
async fn binary_file_is_an_error() {
    let t = TestCtx::new();
    t.write_seen("b.bin", b"ab\0cd");
    let err = run(&t, edit("b.bin", "ab", "x")).await.unwrap_err();
    assert_eq!(
        err,
        "b.bin is not a UTF-8 text file; str_replace edits text only."
    );
}

#[tokio::test]
async fn not_found_with_whitespace_hint() {
    let t = TestCtx::new();
    t.write_seen("m.py", "def f():\n\treturn 1\n");
    let err = run(&t, edit("m.py", "    return 1", "    return 2"))
        .await
        .unwrap_err();
    assert!(
        err.starts_with(
            "old_str was not found in m.py. It does match lines 2-2 when whitespace is ignored"
        ),
        "{err}"
    );
    assert!(err.contains("     2\t\treturn 1\n"), "{err}");
    assert_eq!(t.read("m.py"), "def f():\n\treturn 1\n", "file untouched");
}

#[tokio::test]
async fn not_found_with_closest_line() {
    let t = TestCtx::new();
    t.write_seen("c.rs", "fn a() {}\nlet total = price * quantity;\n");
    let err = run(&t, edit("c.rs", "let total = price * qty;", "x"))
        .await
        .unwrap_err();
    assert!(err.starts_with("old_str was not found in c.rs. The closest line to `let total = price * qty;` is line 2:"), "{err}");
}

#[tokio::test]
async fn several_matches_need_replace_all() {
    let t = TestCtx::new();
    t.write_seen("d.txt", "foo\nbar\nfoo\nbaz foo\n");
    let err = run(&t, edit("d.txt", "foo", "qux")).await.unwrap_err();
    assert_eq!(
        err,
        "old_str matches 3 times in d.txt:\n     1\tfoo\n     3\tfoo\n     4\tbaz foo\n\
         To change every one, call str_replace again with the same old_str and \"replace_all\": \
         true. To change only one, make old_str longer with more of its line or the lines around \
         it, so that it matches once."
    );
    let out = run(
        &t,
        json!({"path": "d.txt", "old_str": "foo", "new_str": "qux", "replace_all": true}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("Edited d.txt (3 replacements)."), "{out}");
    assert!(out.contains("     4\tbaz qux"), "{out}");
    assert_eq!(t.read("d.txt"), "qux\nbar\nqux\nbaz qux\n");
}

/// Replacing every `1` would turn `$1` into `$3` too: the way offered is the whole line.
#[tokio::test]
async fn several_matches_inside_longer_words_ask_for_the_whole_line() {
    let t = TestCtx::new();
    let script = "# the sum of $1\ntotal=1\ndone < \"$1\"\nsubtotal=0\n";
    t.write_seen("sum.sh", script);
    for (old_str, count) in [("1", 3), ("total", 2)] {
        let err = run(&t, edit("sum.sh", old_str, "x")).await.unwrap_err();
        assert!(
            err.starts_with(&format!(
                "old_str matches {count} times in sum.sh, some inside longer words:"
            )),
            "{err}"
        );
        assert!(
            err.contains("Put the whole line you mean to change in old_str"),
            "{err}"
        );
        assert!(!err.contains("replace_all"), "{err}");
    }
    let err = run(&t, edit("sum.sh", "total=", "x")).await.unwrap_err();
    assert!(
        err.contains("inside longer words"),
        "`subtotal=` holds it: {err}"
    );
    assert_eq!(t.read("sum.sh"), script);
}

#[tokio::test]
async fn replace_all_far_apart_shows_separate_regions() {
    let t = TestCtx::new();
    let body: String = (1..=30)
        .map(|i| {
            if i == 2 || i == 28 {
                "x\n".to_string()
            } else {
                format!("{i}\n")
            }
        })
        .collect();
    t.write_seen("r.txt", body);
    let out = run(
        &t,
        json!({"path": "r.txt", "old_str": "x\n", "new_str": "y\n", "replace_all": true}),
    )
    .await
    .unwrap();
    assert!(out.contains("     5\t5\n   ...\n    25\t25\n"), "{out}");
    assert!(out.ends_with("    30\t30"), "{out}");
}

#[tokio::test]
async fn crlf_file_matched_with_lf_text() {
    let t = TestCtx::new();
    t.write_seen("w.txt", "one\r\ntwo\r\nthree\r\n");
    let out = run(&t, edit("w.txt", "one\ntwo\n", "uno\ndos\n"))
        .await
        .unwrap();
    assert!(
        out.contains("     1\tuno\n     2\tdos\n     3\tthree"),
        "{out}"
    );
    assert_eq!(t.read("w.txt"), "uno\r\ndos\r\nthree\r\n");
    // A single-line old_str growing into several lines gets CRLF too.
    run(&t, edit("w.txt", "three", "3\n4")).await.unwrap();
    assert_eq!(t.read("w.txt"), "uno\r\ndos\r\n3\r\n4\r\n");
}

#[tokio::test]
async fn lf_file_matched_with_crlf_text() {
    let t = TestCtx::new();
    t.write_seen("u.txt", "a\nb\n");
    run(&t, edit("u.txt", "a\r\nb", "c\r\nd")).await.unwrap();
    assert_eq!(t.read("u.txt"), "c\nd\n");
}

#[tokio::test]
async fn trailing_newline_presence_is_kept() {
    let t = TestCtx::new();
    t.write_seen("n.txt", "a\nb\n");
    run(&t, edit("n.txt", "b\n", "c")).await.unwrap();
    assert_eq!(t.read("n.txt"), "a\nc\n");
    t.write_seen("m.txt", "a\nb");
    run(&t, edit("m.txt", "b", "c\n")).await.unwrap();
    assert_eq!(t.read("m.txt"), "a\nc");
    t.write_seen("k.txt", "a\r\nb\r\n");
    run(&t, edit("k.txt", "b\n", "c")).await.unwrap();
    assert_eq!(t.read("k.txt"), "a\r\nc\r\n");
    // Edits away from the end leave it alone.
    t.write_seen("e.txt", "x\ny");
    run(&t, edit("e.txt", "x\n", "z\n")).await.unwrap();
    assert_eq!(t.read("e.txt"), "z\ny");
}

#[tokio::test]
async fn deleting_text_and_keeping_mode() {
    let t = TestCtx::new();
    let p = t.write_seen("s.sh", "#!/bin/sh\necho a\necho b\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = run(&t, edit("s.sh", "echo a\n", "")).await.unwrap();
    assert!(out.contains("     1\t#!/bin/sh\n     2\techo b"), "{out}");
    assert_eq!(t.read("s.sh"), "#!/bin/sh\necho b\n");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test]
async fn prepare_shows_the_diff_and_writes_nothing() {
    let t = TestCtx::new();
    t.write_seen("a.txt", "hello world\n");
    let call = t
        .prepare(&StrReplace, edit("a.txt", "world", "rein"))
        .unwrap();
    let Access::Write { path } = call.access() else {
        panic!("expected a write access");
    };
    assert_eq!(path.display, "a.txt");
    assert_eq!(
        call.display(),
        ToolDisplay::Edit {
            path: "a.txt".into(),
            diff: Some(EditDiff::between(Some("hello world\n"), "hello rein\n")),
        }
    );
    assert_eq!(t.read("a.txt"), "hello world\n", "prepare does not write");
    let err = t
        .prepare(&StrReplace, edit("a.txt", "nope", "x"))
        .err()
        .unwrap();
    assert!(
        err.0.starts_with("old_str was not found in a.txt."),
        "{}",
        err.0
    );
}

/// The invariant: an edit is written exactly as shown, or not at all.
#[tokio::test]
async fn an_edit_whose_file_changed_after_prepare_is_refused() {
    let t = TestCtx::new();
    t.write_seen("a.txt", "one\ntwo\n");
    let cases = [
        ("another edit", Some("one\ntwo\nthree\n")),
        ("the same bytes rewritten", Some("one\ntwo\n")),
        ("removed", None),
    ];
    for (what, meanwhile) in cases {
        t.write_seen("a.txt", "one\ntwo\n");
        let call = t.prepare(&StrReplace, edit("a.txt", "two", "2")).unwrap();
        match meanwhile {
            Some(text) => {
                t.write("a.txt", text);
            }
            None => std::fs::remove_file(t.ws.join("a.txt")).unwrap(),
        }
        let result = call.run(&t.ctx).await;
        if meanwhile == Some("one\ntwo\n") {
            // Same bytes: what was shown is still exactly what gets written.
            assert!(result.is_ok(), "{what}: {result:?}");
            assert_eq!(t.read("a.txt"), "one\n2\n");
            continue;
        }
        let err = result.expect_err(what);
        assert!(
            err.0
                .starts_with("the file changed since you proposed this edit; read it again."),
            "{what}: {}",
            err.0
        );
        match meanwhile {
            Some(text) => assert_eq!(t.read("a.txt"), text, "{what}: the other change stays"),
            None => assert!(!t.ws.join("a.txt").exists(), "{what}: nothing recreated"),
        }
    }
}

#[tokio::test]
async fn a_file_must_have_been_read_and_unchanged() {
    let t = TestCtx::new();
    t.write("f.txt", "alpha\nbeta\nbeta\n");
    // Unread, and the quoted text is not unique: refused, and nothing of the file is shown
    // (this comes before the permission check).
    let err = run(&t, edit("f.txt", "beta", "gamma")).await.unwrap_err();
    assert_eq!(
        err,
        "f.txt exists and you had not read it, so nothing was changed. 1. Read it with \
         read_file. 2. Now call str_replace again with old_str copied exactly from what \
         read_file shows."
    );
    assert_eq!(t.read("f.txt"), "alpha\nbeta\nbeta\n");
    t.call(&crate::tools::files::ReadFile, json!({"path": "f.txt"}))
        .await
        .unwrap();
    std::fs::write(t.ws.join("f.txt"), "alpha\nbeta\n\n").unwrap();
    // Changed since the read: refused even where the text is unique.
    let err = run(&t, edit("f.txt", "beta", "gamma")).await.unwrap_err();
    assert!(err.starts_with("f.txt changed since you read it"), "{err}");
    // The refusal showed the file: the edit goes through now.
    run(&t, edit("f.txt", "beta", "gamma")).await.unwrap();
    // Its own edit does not make the file unread.
    run(&t, edit("f.txt", "gamma", "delta")).await.unwrap();
    assert_eq!(t.read("f.txt"), "alpha\ndelta\n\n");
}

#[tokio::test]
async fn an_unread_file_is_edited_where_the_quoted_text_is_unique() {
    let t = TestCtx::new();
    t.write("f.txt", "alpha\nbeta\nomega\n");
    let out = run(&t, edit("f.txt", "beta", "gamma")).await.unwrap();
    assert_eq!(t.read("f.txt"), "alpha\ngamma\nomega\n");
    // The result shows nothing of a file the model never read, and it stays unread.
    assert_eq!(
        out,
        "Edited f.txt (1 replacement). You had not read it, so it is not shown: read it with \
         read_file to see the result."
    );
    let err = run(&t, edit("f.txt", "a", "b")).await.unwrap_err();
    assert!(err.contains("you had not read it"), "{err}");
    // A file whose quoted text is not unique must be read, however small.
    let big = "line\n".repeat(1000);
    t.write("big.txt", &big);
    let err = run(&t, edit("big.txt", "line", "x")).await.unwrap_err();
    assert!(err.ends_with("from what read_file shows."), "{err}");
    assert!(run(&t, edit("big.txt", "line", "x")).await.is_err());
}

#[test]
fn describe_names_the_path() {
    let args = json!({"path": "src/lib.rs", "old_str": "a\nb\n", "new_str": "a\nc\nd\ne\n"});
    assert_eq!(StrReplace.describe(&args).path(), Some("src/lib.rs"));
}

#[test]
fn crlf_detection() {
    assert!(uses_crlf("a\r\nb\r\n"));
    assert!(!uses_crlf("a\nb\n"));
    assert!(!uses_crlf("a\r\nb\nc\nd\n"));
}

#[tokio::test]
async fn a_fenced_new_str_is_written_without_its_fence() {
    let t = TestCtx::new();
    t.write_seen("g.py", "def g():\n    return 0\n");
    let out = run(&t, edit("g.py", "return 0", "```python\nreturn 1\n```"))
        .await
        .unwrap();
    assert!(out.contains("inside a ``` fence"), "{out}");
    assert_eq!(t.read("g.py"), "def g():\n    return 1\n");
    // Fences in the file's own text stay: old_str quotes one.
    t.write_seen("h.py", "DOC = \"\"\"\n```\nx\n```\n\"\"\"\n");
    let out = run(&t, edit("h.py", "```\nx\n```", "```\ny\n```"))
        .await
        .unwrap();
    assert!(!out.contains("fence"), "{out}");
    assert_eq!(t.read("h.py"), "DOC = \"\"\"\n```\ny\n```\n\"\"\"\n");
}
