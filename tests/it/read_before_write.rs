//! Read before overwrite, through the real `rein exec` binary: `write_file` over an existing
//! file and `str_replace` need the file read (or written) in this session and unchanged since;
//! new files need nothing; a subagent's reads do not count for the parent.

use crate::support;

use serde_json::json;
use support::rein::{World, assert_ok, last_result, stderr};
use support::{Reply, ScriptedServer};

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

/// The case: a small model replaced a never-read calc.py with its one new function.
#[test]
fn overwriting_an_unread_file_is_refused_until_it_is_read() {
    let s = ScriptedServer::openai();
    let mul_only = "def mul(a, b):\n    return a * b\n";
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "calc.py", "content": mul_only}),
    ))
    .push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "calc.py", "content": format!("{CALC}\n\n{mul_only}")}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "new_module.py", "content": "X = 1\n"}),
    ))
    .push(Reply::text("Added mul."));
    let w = World::new(&s);
    w.write("calc.py", CALC);
    let o = w.exec(&["--yes", "add mul to calc.py"]);
    assert_ok(&o);
    let refused = last_result(&s.request(1));
    assert!(
        refused
            .content
            .starts_with("Error: calc.py exists and you had not read it")
    );
    assert!(
        refused
            .content
            .contains("Now call write_file again with the whole new file")
    );
    // The refused write changed nothing; after the read the whole new content went in.
    assert!(
        last_result(&s.request(3))
            .content
            .starts_with("Overwrote calc.py")
    );
    assert_eq!(w.read("calc.py").unwrap(), format!("{CALC}\n\n{mul_only}"));
    // Creating a file needs no read.
    assert!(
        last_result(&s.request(4))
            .content
            .starts_with("Created new_module.py")
    );
}

#[test]
fn a_file_changed_since_the_read_must_be_read_again() {
    let s = ScriptedServer::openai();
    let edit = json!({"path": "calc.py", "old_str": "a - b", "new_str": "a - b  # sub"});
    // Unread, quoting text that is not unique: refused (a unique quote may edit unread).
    let vague = json!({"path": "calc.py", "old_str": "return", "new_str": "return "});
    s.push(Reply::tool_call("str_replace", vague))
        .push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        // Changed by something other than the file tools after the read.
        .push(Reply::tool_call(
            "bash",
            json!({"command": "printf '# header\\n' >> calc.py"}),
        ))
        .push(Reply::tool_call("str_replace", edit.clone()))
        .push(Reply::tool_call(
            "read_file",
            json!({"path": "calc.py", "offset": 5}),
        ))
        .push(Reply::tool_call("str_replace", edit))
        .push(Reply::text("Commented."));
    let w = World::new(&s);
    w.write("calc.py", CALC);
    let o = w.exec(&["--yes", "comment sub"]);
    assert_ok(&o);
    let first = last_result(&s.request(1)).content;
    assert!(
        first.starts_with("Error: calc.py exists and you had not read it")
            && first.contains("Now call str_replace again"),
        "{first}"
    );
    let changed = last_result(&s.request(4)).content;
    assert!(
        changed.starts_with(
            "Error: calc.py changed since you read it, so nothing was changed. Here it is"
        ),
        "{changed}\n{}",
        stderr(&o)
    );
    assert!(
        last_result(&s.request(6))
            .content
            .starts_with("Edited calc.py")
    );
    assert_eq!(
        w.read("calc.py").unwrap(),
        format!("{}# header\n", CALC.replace("a - b", "a - b  # sub"))
    );
}

/// A subagent's reads stay its own: the parent did not see the file, so it must read it.
#[test]
fn a_subagents_read_does_not_count_for_the_parent() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "task",
        json!({"description": "Read calc.py and summarise it."}),
    ))
    .push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
    .push(Reply::text("It defines add and sub."))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": "calc.py", "content": "def mul(a, b):\n    return a * b\n"}),
    ))
    .push(Reply::text("Tried."));
    let w = World::new(&s);
    w.write("calc.py", CALC);
    let o = w.exec(&["--yes", "replace calc.py"]);
    assert_ok(&o);
    let parent = last_result(&s.request(4)).content;
    assert!(
        parent.starts_with("Error: calc.py exists and you had not read it"),
        "{parent}"
    );
    assert_eq!(w.read("calc.py").unwrap(), CALC);
}
