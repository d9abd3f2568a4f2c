//! `small_model`: what rein does for a small local model, end to end through the real
//! `rein exec` against the scripted server on loopback (where `auto` turns the aids on): the
//! first step is forced to be a tool call, the tool set is small and has no examples, the
//! system prompt lists the workspace's files, a failing command gets the next step named, and
//! code shown instead of written is sent back once. `small_model = "off"` has none of it.
//! For every model, a shell script written with `$1` in single quotes gets a note.

use crate::support;

use rein::llm::ProviderKind;
use serde_json::json;
use support::rein::{
    World, assert_ok, last_result, stderr, stdout, system_prompt, tool_names, user_texts,
};
use support::{Reply, ScriptedServer};

both!(
    a_local_server_gets_a_forced_first_step_a_small_tool_set_and_the_file_list,
    a_failing_command_names_the_file_in_the_traceback,
    a_failed_assertion_names_the_function_it_checks_and_its_module,
    code_shown_instead_of_written_is_sent_back_once,
    giving_up_after_a_failed_call_is_sent_back_twice_at_most,
    a_change_asked_for_and_not_made_is_sent_back_once_a_write_ends_it,
    small_model_off_offers_everything_and_forces_nothing,
    a_tool_the_person_names_is_offered_on_the_forced_first_step,
    a_command_that_made_the_change_is_not_sent_back,
    code_shown_in_a_block_becomes_the_edit_it_describes,
    a_document_shown_in_a_block_becomes_its_new_version,
    a_line_shown_with_a_new_name_becomes_the_edit_of_that_line,
    a_rename_names_the_places_the_old_name_still_appears,
    a_write_of_part_of_a_read_file_keeps_the_rest,
    a_write_of_part_of_a_file_changed_since_it_was_read_stays_a_write,
    a_write_of_only_a_method_puts_it_into_the_class,
    a_loose_line_written_over_a_file_goes_beside_its_kind_or_is_refused,
    a_line_change_claimed_and_not_made_becomes_the_edit,
    a_function_the_task_asks_for_is_named_and_its_lone_write_added,
    a_test_added_to_an_imagined_class_goes_into_the_real_one_and_its_import_is_named,
    an_option_the_task_quotes_and_no_file_has_is_sent_back_once,
    an_option_parsed_and_never_used_names_the_call_to_change,
    a_new_script_shown_and_its_run_command_become_a_write_and_a_run,
    a_block_naming_a_link_out_of_the_workspace_reads_nothing_there,
    code_blocks_are_only_text_when_the_aid_is_off_or_the_message_asks_no_change,
    the_files_the_message_names_are_read_before_the_first_request,
    running_python_is_no_change_though_it_writes_bytecode,
    a_subagent_of_a_small_model_gets_the_file_list_and_a_forced_first_look,
    a_command_block_that_already_ran_is_not_run_again,
    a_change_not_checked_since_is_sent_back_once_per_command_run,
    a_change_not_checked_with_the_command_the_task_names_is_sent_back_to_run_it,
    a_script_that_prints_an_expansion_as_is_gets_a_note_until_fixed,
    an_import_of_an_old_name_points_at_the_importer_and_the_new_name,
    a_todo_list_with_steps_left_and_an_empty_answer_force_the_next_step,
);

/// A script whose `echo` would print `$1` as is gets a note on the write's result (for every
/// model: `small_model = "off"` here), and the edit that fixes it gets none; the fixed script
/// is what runs.
fn a_script_that_prints_an_expansion_as_is_gets_a_note_until_fixed(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let script = "#!/bin/bash\necho 'Hello, ${1:-world}!'\n";
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "hello.sh", "content": script}),
    ))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "hello.sh", "old_str": "'Hello, ${1:-world}!'", "new_str": "\"Hello, ${1:-world}!\""}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "./hello.sh ada"})))
    .push(Reply::text("done"));
    let w = World::new(&s);
    let o = w.exec(&["--yes", "write hello.sh"]);
    assert_ok(&o);
    let written = last_result(&s.request(1)).content;
    assert!(
        written.contains("line 2: `${1:-world}` is inside single quotes, so echo prints it as is"),
        "{written}"
    );
    let edited = last_result(&s.request(2)).content;
    assert!(edited.starts_with("Edited hello.sh"), "{edited}");
    assert!(!edited.contains("shell check"), "{edited}");
    let ran = last_result(&s.request(3)).content;
    assert!(ran.contains("Hello, ada!"), "{ran}");
}

/// `rein exec` with `small_model` left to its default (the scripted server is on loopback).
fn exec_auto(w: &World, args: &[&str]) -> std::process::Output {
    let mut c = w.cmd();
    c.env_remove("REIN_SMALL_MODEL").arg("exec").args(args);
    support::rein::run_with_timeout(c, std::time::Duration::from_secs(60))
}

/// Whether the request forced a tool call, in either wire format.
fn forced(req: &support::RecordedRequest) -> bool {
    match &req.body["tool_choice"] {
        serde_json::Value::String(s) => s == "required",
        v => v["type"] == "any",
    }
}

fn a_local_server_gets_a_forced_first_step_a_small_tool_set_and_the_file_list(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(Reply::text("calc.py defines add."));
    let w = World::new(&s);
    w.write("calc.py", "def add(a, b):\n    return a + b\n");
    w.write(".env", "TOKEN=hidden\n");
    w.write("pkg/util.py", "X = 1\n");
    let o = exec_auto(&w, &["what does calc.py define?"]);
    assert_ok(&o);
    assert!(
        stdout(&o).contains("calc.py defines add."),
        "{}",
        stdout(&o)
    );
    let (first, second) = (s.request(0), s.request(1));
    assert!(forced(&first), "{}", first.body_text);
    assert!(
        !forced(&second),
        "only the first step is forced: {}",
        second.body_text
    );
    // The forced first step is a look; then the small tool set, without examples.
    let mut names = tool_names(&first);
    names.sort();
    assert_eq!(names, ["bash", "read_file"]);
    let names = tool_names(&second);
    assert!(names.iter().any(|n| n == "write_file"), "{names:?}");
    assert!(!names.iter().any(|n| n == "task"), "no subagent: {names:?}");
    assert!(
        !second.body_text.contains("Example:"),
        "{}",
        second.body_text
    );
    let system = system_prompt(&first);
    assert!(system.contains("# Files in the workspace"), "{system}");
    assert!(
        system.contains("- calc.py\n") && system.contains("- pkg/util.py\n"),
        "{system}"
    );
    assert!(
        !system.contains(".env"),
        "hidden files are not listed: {system}"
    );
}

/// The result a small model gets for `command`, run in a workspace of `files` for `task`
/// (the model then gives up three times: after the failed command and the change not
/// made, each sent back once).
fn failing_command_result(
    kind: ProviderKind,
    files: &[(&str, &str)],
    command: &str,
    task: &str,
) -> String {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({ "command": command })))
        .push(Reply::text("It fails."))
        .push(Reply::text("Still failing."))
        .push(Reply::text("I give up."));
    let w = World::new(&s);
    for (path, content) in files {
        w.write(path, content);
    }
    assert_ok(&exec_auto(&w, &["--yes", task]));
    last_result(&s.request(1)).content
}

fn a_failing_command_names_the_file_in_the_traceback(kind: ProviderKind) {
    let result = failing_command_result(
        kind,
        &[
            ("calc.py", "def sum_to(n):\n    return undefined_name\n"),
            ("test_calc.py", "import calc\nassert calc.sum_to(3) == 6\n"),
        ],
        "python3 test_calc.py",
        "make the test pass",
    );
    assert!(
        result.contains("NameError"),
        "the real output comes first: {result}"
    );
    assert!(
        result.contains("The error points at calc.py line 2: read that file with read_file"),
        "{result}"
    );
}

/// The todo_multi_step task's test run as the 1.5B model met it: its new test was right and
/// `greeting` wrong. The note names `greeting` and greet.py, where the fix goes, instead of
/// only the test's line.
fn a_failed_assertion_names_the_function_it_checks_and_its_module(kind: ProviderKind) {
    let result = failing_command_result(
        kind,
        &[
            (
                "greet.py",
                "def greeting(name, upper=False):\n    return f\"Hello, {name.upper() if upper else name}!\"\n",
            ),
            (
                "test_greet.py",
                "import unittest\n\nfrom greet import greeting\n\n\nclass T(unittest.TestCase):\n    def test_upper(self):\n        self.assertEqual(greeting(\"ada\", upper=True), \"HELLO, ADA!\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
            ),
        ],
        "python3 test_greet.py",
        "make the tests pass",
    );
    assert!(
        result.contains("AssertionError: 'Hello, ADA!' != 'HELLO, ADA!'"),
        "{result}"
    );
    assert!(
        result.contains("The test at test_greet.py line 8 checks `greeting`")
            && result.contains("read greet.py with read_file and fix `greeting` there"),
        "{result}"
    );
}

/// Half a rename: the module defines `get_user`, another file still imports `get_usr`. The
/// failing run's note names the new name and sends the model to the importing file.
fn an_import_of_an_old_name_points_at_the_importer_and_the_new_name(kind: ProviderKind) {
    let result = failing_command_result(
        kind,
        &[
            ("users.py", "def get_user(uid):\n    return 'ada'\n"),
            ("report.py", "from users import get_usr\n"),
            ("app.py", "import report\n"),
        ],
        "python3 app.py",
        "finish renaming get_usr",
    );
    assert!(result.contains("ImportError"), "{result}");
    assert!(
        result.contains(
            "report.py line 1 imports `get_usr` from users.py, which defines `get_user` instead"
        ),
        "{result}"
    );
}

fn code_shown_instead_of_written_is_sent_back_once(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let prose = "Here is the fix:\n```python\ndef sum_to(n):\n    return n * (n + 1) // 2\n```";
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(Reply::text(prose))
        .push(Reply::text(prose))
        .push(Reply::text("Done."));
    let w = World::new(&s);
    // The nudges alone: with `code_blocks` the block would become the edit.
    w.user_config("retry_backoff_ms = 20\nsmall_model = \"first_call,tools,files,nudges\"\n");
    w.write("calc.py", "def sum_to(n):\n    return 0\n");
    let o = exec_auto(&w, &["--yes", "fix sum_to in calc.py"]);
    assert_ok(&o);
    assert_eq!(
        s.request_count(),
        4,
        "each nudge once, then the answer stands"
    );
    let asked = user_texts(&s.request(2));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("Your answer shows code, but no file was changed")),
        "{asked:?}"
    );
    let asked = user_texts(&s.request(3));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("No file was changed yet, but the task asks")),
        "{asked:?}"
    );
    assert_eq!(stdout(&o), "Done.\n");
    // The answer sent back twice is on stderr once, then named.
    let err = stderr(&o);
    assert_eq!(err.matches("Here is the fix:").count(), 1, "{err}");
    assert!(
        err.contains(
            "rein told the model: Your answer shows code, but no file was changed.\n\
             (the same answer as above)\n\
             rein told the model: No file was changed yet"
        ),
        "{err}"
    );
}

fn a_change_asked_for_and_not_made_is_sent_back_once_a_write_ends_it(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(Reply::text("Fixed."))
        .push(fix_ident())
        .push(Reply::text("Fixed now."));
    let w = World::new(&s);
    w.write("calc.py", "def ident(n):\n    return 0\n");
    let o = exec_auto(&w, &["--yes", "fix ident in calc.py"]);
    assert_ok(&o);
    assert_eq!(
        s.request_count(),
        4,
        "after the write, the answer stands (no command ran: nothing to check again)"
    );
    assert!(
        forced(&s.request(2)),
        "the answer to a nudge must be a call"
    );
    assert!(
        !forced(&s.request(3)),
        "after the call, a plain answer may end it"
    );
    let asked = user_texts(&s.request(2));
    assert!(
        asked.iter().any(|t| t.contains("No file was changed yet")
            && t.contains("Files the task names: `calc.py`;")),
        "the nudge names the file the task names: {asked:?}"
    );
    assert_eq!(w.read("calc.py").unwrap(), "def ident(n):\n    return n\n");
    // The answer rein sent back is not the result: stdout has the final one alone, and
    // stderr shows the sent-back one with what rein told the model, in order.
    assert_eq!(stdout(&o), "Fixed now.\n");
    let err = stderr(&o);
    assert!(
        err.contains("Fixed.\nrein told the model: No file was changed yet, but the task asks"),
        "{err}"
    );
    // A question is not sent back.
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(Reply::text("It returns 0."));
    let w = World::new(&s);
    w.write("calc.py", "def ident(n):\n    return 0\n");
    assert_ok(&exec_auto(
        &w,
        &["what does ident return? do not edit any file"],
    ));
    assert_eq!(s.request_count(), 2);
}

/// A todo list with a step left is followed by a forced call, and so is the nudge after an
/// empty answer; a list with every step done is not.
fn a_todo_list_with_steps_left_and_an_empty_answer_force_the_next_step(kind: ProviderKind) {
    let todos = |second: &str| {
        Reply::tool_call(
            "write_todos",
            json!({"todos": [
                {"content": "read notes.txt", "status": "completed"},
                {"content": "sum up the notes", "status": second},
            ]}),
        )
    };
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .push(todos("pending"))
        .push(Reply::text(""))
        .push(todos("completed"))
        .push(Reply::text("The notes say: ship on Friday."));
    let w = World::new(&s);
    w.write("notes.txt", "ship on Friday\n");
    let o = exec_auto(&w, &["keep a todo list and sum up notes.txt"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 5);
    assert!(!forced(&s.request(1)), "{}", s.request(1).body_text);
    assert!(
        forced(&s.request(2)),
        "a step is left: {}",
        s.request(2).body_text
    );
    let asked = user_texts(&s.request(3));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("Your last answer was empty")
                && t.contains("The next step on your todo list is \"sum up the notes\"")),
        "the nudge names the first step not completed: {asked:?}"
    );
    assert!(
        forced(&s.request(3)),
        "the empty answer's nudge: {}",
        s.request(3).body_text
    );
    assert!(
        !forced(&s.request(4)),
        "every step is done: {}",
        s.request(4).body_text
    );
}

fn giving_up_after_a_failed_call_is_sent_back_twice_at_most(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let read = || Reply::tool_call("read_file", json!({"path": "missing.py"}));
    s.push(read())
        .push(Reply::text("I cannot do this."))
        .push(read())
        .push(Reply::text("Still cannot."))
        .push(read())
        .push(Reply::text("Still cannot."));
    let w = World::new(&s);
    let o = exec_auto(&w, &["--yes", "look at missing.py"]);
    assert_ok(&o);
    assert_eq!(
        s.request_count(),
        6,
        "sent back after each of two failures, then the answer stands"
    );
    let asked = user_texts(&s.request(2));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("Your last call failed, and the task is not finished")),
        "{asked:?}"
    );
    assert!(stdout(&o).contains("Still cannot."), "{}", stdout(&o));
    // A command that failed counts as a failed call; one that ran fine does not.
    for (command, sent_back) in [("exit 3", true), ("true", false)] {
        let s = ScriptedServer::start(kind);
        s.push(Reply::tool_call("bash", json!({"command": command})))
            .push(Reply::text("Here is what I found."))
            .push(Reply::text("That is all."));
        let w = World::new(&s);
        let o = exec_auto(&w, &["--yes", "what does the build print?"]);
        assert_ok(&o);
        assert_eq!(s.request_count(), 2 + usize::from(sent_back), "{command}");
        if sent_back {
            let asked = user_texts(&s.request(2));
            assert!(
                asked
                    .last()
                    .is_some_and(|t| t.starts_with("[rein] Your last call failed")),
                "{asked:?}"
            );
        }
    }
}

fn small_model_off_offers_everything_and_forces_nothing(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({"command": "exit 3"})))
        .push(Reply::text("```python\nx = 1\ny = 2\n```"));
    let w = World::new(&s);
    w.write("calc.py", "X = 1\n");
    w.user_config("retry_backoff_ms = 20\nsmall_model = \"off\"\n");
    let o = exec_auto(&w, &["--yes", "run it"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 2, "no code nudge");
    let first = s.request(0);
    assert!(!forced(&first), "{}", first.body_text);
    assert!(tool_names(&first).iter().any(|n| n == "task"));
    assert!(!system_prompt(&first).contains("# Files in the workspace"));
    let result = last_result(&s.request(1)).content;
    assert!(!result.contains("The command failed"), "{result}");
}

fn a_tool_the_person_names_is_offered_on_the_forced_first_step(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "hello.txt", "content": "hi\n"}),
    ))
    .push(Reply::text("Created."));
    let w = World::new(&s);
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "Use the write_file tool to create hello.txt containing hi",
        ],
    );
    assert_ok(&o);
    let first = s.request(0);
    assert!(forced(&first), "{}", first.body_text);
    let mut names = tool_names(&first);
    names.sort();
    assert_eq!(names, ["bash", "read_file", "write_file"]);
    assert_eq!(w.read("hello.txt").as_deref(), Some("hi\n"));
    assert_eq!(s.request_count(), 2, "the write ended it: no nudge");
}

fn a_command_that_made_the_change_is_not_sent_back(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "echo hi > hello.txt"}),
    ))
    .push(Reply::text("Created hello.txt."));
    let w = World::new(&s);
    let o = exec_auto(&w, &["--yes", "create hello.txt containing hi"]);
    assert_ok(&o);
    assert_eq!(w.read("hello.txt").as_deref(), Some("hi\n"));
    assert_eq!(
        s.request_count(),
        2,
        "a command that writes is a change: no \"no file was changed\" nudge"
    );
    assert!(stdout(&o).contains("Created hello.txt."), "{}", stdout(&o));
}

const STATS: &str = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef summary(values):\n    return {\"n\": len(values), \"mean\": mean(values)}\n";

/// The answer of a small model that shows the fix instead of making it.
const SHOWN_FIX: &str = "To fix the `ZeroDivisionError`, here's the updated code:\n\n```python\ndef mean(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n```\n\nThis keeps the rest.";

fn code_shown_in_a_block_becomes_the_edit_it_describes(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "stats.py"})))
        .push(Reply::text(SHOWN_FIX))
        .push(Reply::text("Fixed: the mean of an empty list is 0.0."));
    let w = World::new(&s);
    w.write("stats.py", STATS);
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "--json",
            "Fix stats.py: the mean of an empty list should be 0.0.",
        ],
    );
    assert_ok(&o);
    let want = STATS.replace(
        "def mean(values):\n",
        "def mean(values):\n    if not values:\n        return 0.0\n",
    );
    assert_eq!(w.read("stats.py").unwrap(), want, "only mean changed");
    // The model sees its block as the call it became, with the tool's real result.
    let result = last_result(&s.request(2));
    assert!(result.content.contains("stats.py"), "{}", result.content);
    assert!(!result.is_error, "{}", result.content);
    let out = stdout(&o);
    assert!(
        out.contains("applied_code_block"),
        "the quirk is reported: {out}"
    );
}

/// The 1.5B model's answer to a failed run after a rename: the importing line as it should
/// read, for the file it names, and nothing done. The line becomes its edit, and the check
/// nudge has the fix run.
fn a_line_shown_with_a_new_name_becomes_the_edit_of_that_line(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let answer = "To fix the import error, I changed the import statement in `report.py` to \
                  import `get_user` from `users.py` instead of `get_usr`.\n\n```python\n# \
                  report.py\nfrom users import get_user\n```\n\nAfter making this change, \
                  the program `python3 app.py` runs without any errors.";
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 app.py"}),
    ))
    .push(Reply::text(answer))
    .push(Reply::text("Fixed."))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "python3 app.py"}),
    ))
    .push(Reply::text("Done: it prints ada, grace."));
    let w = World::new(&s);
    let report = "from users import get_usr\n\n\ndef report(ids):\n    return \", \".join(get_user(i) for i in ids)\n";
    w.write("report.py", report);
    w.write(
        "users.py",
        "def get_user(uid):\n    return {1: 'ada', 2: 'grace'}[uid]\n",
    );
    w.write(
        "app.py",
        "from report import report\n\nprint(report([1, 2]))\n",
    );
    let task = "Rename `get_usr` to `get_user` everywhere. `python3 app.py` must still work.";
    let o = exec_auto(&w, &["--yes", "--json", task]);
    assert_ok(&o);
    assert_eq!(
        w.read("report.py").unwrap(),
        report.replacen("import get_usr", "import get_user", 1),
        "only the import line changed"
    );
    assert_eq!(s.request_count(), 5, "{}", stdout(&o));
    let ran = last_result(&s.request(4));
    assert!(ran.content.contains("ada, grace"), "{}", ran.content);
    assert!(stdout(&o).contains("applied_code_block"), "{}", stdout(&o));
}

const GREET: &str = "import argparse\n\n\ndef greeting(name, upper=False):\n    return f\"Hello, {name}!\"\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    print(greeting(parser.parse_args(argv).name))\n\n\nif __name__ == \"__main__\":\n    main()\n";

/// Asks for the change the greet.py tests script, naming no file (so no aid reads greet.py
/// before the model does).
fn ask_for_upper_case(w: &World) -> std::process::Output {
    exec_auto(
        w,
        &[
            "--yes",
            "--json",
            "Make the greeting upper case on request.",
        ],
    )
}

/// The 1.5B model's `write_file` of greet.py holding only the function it changed: over a
/// file it read, that becomes the `str_replace` of that function (`main` and the guard
/// kept); over a file it never read, the write is refused as ever (the merge would show it
/// the file's text); with `small_model = "off"`, the write is the write it says.
fn a_write_of_part_of_a_read_file_keeps_the_rest(kind: ProviderKind) {
    let part = "```python\ndef greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    return text.upper() if upper else text\n```";
    let merged = GREET.replace(
        "    return f\"Hello, {name}!\"\n",
        "    text = f\"Hello, {name}!\"\n    return text.upper() if upper else text\n",
    );
    let write = || Reply::tool_call("write_file", json!({"path": "greet.py", "content": part}));
    for (aids, read_first) in [(true, true), (true, false), (false, true)] {
        let s = ScriptedServer::start(kind);
        if read_first {
            s.push(Reply::tool_call("read_file", json!({"path": "greet.py"})));
        }
        // The second write repeats the first: merged again, it changes nothing.
        s.push(write())
            .push(write())
            .push(Reply::tool_call("bash", json!({"command": "true"})))
            .push(Reply::text("Done."));
        let w = World::new(&s);
        w.write("greet.py", GREET);
        if !aids {
            w.user_config("small_model = \"off\"\n");
        }
        let o = ask_for_upper_case(&w);
        assert_ok(&o);
        let first = last_result(&s.request(1 + usize::from(read_first))).content;
        let out = stdout(&o);
        match (aids, read_first) {
            (true, true) => {
                assert!(first.starts_with("Edited greet.py"), "{first}");
                let again = last_result(&s.request(3)).content;
                assert!(
                    again.contains("identical, so nothing would change"),
                    "{again}"
                );
                assert_eq!(w.read("greet.py").unwrap(), merged);
                assert!(
                    out.contains("partial_write"),
                    "the quirk is reported: {out}"
                );
            }
            (true, false) => {
                assert!(first.contains("you had not read it"), "{first}");
                // Shown by the refusal, the file counts as read: the same write now merges.
                let second = last_result(&s.request(2)).content;
                assert!(second.starts_with("Edited greet.py"), "{second}");
                assert_eq!(w.read("greet.py").unwrap(), merged);
            }
            _ => {
                assert!(first.contains("no longer defines `main`"), "{first}");
                assert!(!w.read("greet.py").unwrap().contains("def main"));
                assert!(!out.contains("partial_write"), "{out}");
            }
        }
    }
}

/// A file changed after the model read it is not merged into: the `old_str` would show it
/// the change. The write is refused as ever (and shows the file); the same write again is
/// merged.
fn a_write_of_part_of_a_file_changed_since_it_was_read_stays_a_write(kind: ProviderKind) {
    let part = "def greeting(name, upper=False):\n    return name.upper() if upper else name\n";
    let write = || Reply::tool_call("write_file", json!({"path": "greet.py", "content": part}));
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "greet.py"})))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "printf '# touched\\n' >> greet.py"}),
        ))
        .push(write())
        .push(write())
        .push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text("Done."));
    let w = World::new(&s);
    w.write("greet.py", GREET);
    let o = ask_for_upper_case(&w);
    assert_ok(&o);
    let refused = last_result(&s.request(3));
    assert!(
        refused.content.contains("changed since you read it"),
        "{}",
        refused.content
    );
    // No call in the history has an `old_str` (the tools' schemas have `"old_str":{`).
    let body = &s.request(3).body_text;
    assert!(
        !body.contains("\\\"old_str\\\":") && !body.contains("\"old_str\":\""),
        "the call stays the write it was: {body}"
    );
    let merged = last_result(&s.request(4)).content;
    assert!(merged.starts_with("Edited greet.py"), "{merged}");
    let after = w.read("greet.py").unwrap();
    assert!(
        after.contains("def main(") && after.ends_with("# touched\n"),
        "{after}"
    );
}

const TEST_GREET: &str = "import unittest\n\nfrom greet import greeting\n\n\nclass GreetTest(unittest.TestCase):\n    def test_plain(self):\n        self.assertEqual(greeting(\"ada\"), \"Hello, ada!\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

/// A workspace with greet.py and its tests, the small-model aids on or off.
fn greet_world(s: &ScriptedServer, aids: bool) -> World {
    let w = World::new(s);
    w.write("greet.py", GREET);
    w.write("test_greet.py", TEST_GREET);
    if !aids {
        w.user_config("small_model = \"off\"\n");
    }
    w
}

/// The todo_multi_step task as the 1.5B model met it: told to add a test, it wrote
/// test_greet.py as the one new method, indented. Over the file it read, the method goes into
/// the file's class and the tests run both; with `small_model = "off"` the write is the write
/// it says, and the file no longer parses.
fn a_write_of_only_a_method_puts_it_into_the_class(kind: ProviderKind) {
    let tests = TEST_GREET;
    let method = "    def test_upper(self):\n        self.assertEqual(greeting('ada').upper(), 'HELLO, ADA!')\n";
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        s.push(Reply::tool_call(
            "read_file",
            json!({"path": "test_greet.py"}),
        ))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "test_greet.py", "content": method}),
        ))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "python3 -m unittest -v test_greet 2>&1"}),
        ))
        .push(Reply::text("Done."));
        let w = greet_world(&s, aids);
        let o = ask_for_upper_case(&w);
        assert_ok(&o);
        let (written, ran) = (
            last_result(&s.request(2)).content,
            last_result(&s.request(3)).content,
        );
        if aids {
            assert!(written.starts_with("Edited test_greet.py"), "{written}");
            let want = tests.replace("Hello, ada!\")\n", &format!("Hello, ada!\")\n\n{method}"));
            assert_eq!(w.read("test_greet.py").unwrap(), want);
            assert!(
                ran.contains("test_upper") && ran.contains("test_plain") && ran.contains("OK"),
                "{ran}"
            );
            assert!(stdout(&o).contains("partial_write"), "{}", stdout(&o));
        } else {
            assert!(written.starts_with("Overwrote test_greet.py"), "{written}");
            assert!(ran.contains("IndentationError"), "{ran}");
        }
    }
}

/// The todo_multi_step task as the 1.5B model met it after the option nudge: it wrote the
/// one line the nudge named as the whole of greet.py, then of test_greet.py. Over greet.py,
/// which calls `parser.add_argument` already, the line goes after that call; over
/// test_greet.py, which has no such call, the write is refused and the file kept. With
/// `small_model = "off"` both writes are made as they are.
fn a_loose_line_written_over_a_file_goes_beside_its_kind_or_is_refused(kind: ProviderKind) {
    let tests = TEST_GREET;
    let line = "parser.add_argument(\"--upper\", action=\"store_true\")\n";
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        for path in ["greet.py", "test_greet.py"] {
            s.push(Reply::tool_call("read_file", json!({"path": path})));
        }
        for path in ["greet.py", "test_greet.py"] {
            s.push(Reply::tool_call(
                "write_file",
                json!({"path": path, "content": line}),
            ));
        }
        s.push(Reply::tool_call(
            "bash",
            json!({"command": "python3 greet.py --upper ada"}),
        ))
        .push(Reply::text("Done."));
        let w = greet_world(&s, aids);
        let o = ask_for_upper_case(&w);
        assert_ok(&o);
        let (greet, refused, ran) = (
            last_result(&s.request(3)),
            last_result(&s.request(4)),
            last_result(&s.request(5)).content,
        );
        if !aids {
            assert_eq!(w.read("greet.py").unwrap(), line);
            assert_eq!(w.read("test_greet.py").unwrap(), line);
            continue;
        }
        assert!(
            greet.content.starts_with("Edited greet.py"),
            "{}",
            greet.content
        );
        assert_eq!(
            w.read("greet.py").unwrap(),
            GREET.replace(
                "    parser.add_argument(\"name\")\n",
                &format!("    parser.add_argument(\"name\")\n    {line}"),
            )
        );
        assert!(ran.starts_with("Hello, ada!"), "greet.py still runs: {ran}");
        assert!(
            refused.content.starts_with("Error: Not written")
                && refused.content.contains("str_replace"),
            "{}",
            refused.content
        );
        assert_eq!(w.read("test_greet.py").unwrap(), tests, "the file is kept");
    }
}

/// The add_function task's last step as the 1.5B model met it: told by the NameError note
/// which import line to extend, it answered that it had changed that line (backticked, and
/// the file named), twice, with the file unchanged. The claim becomes the edit, and the
/// tests run on it pass. With `small_model = "off"` the answer is only text.
fn a_line_change_claimed_and_not_made_becomes_the_edit(kind: ProviderKind) {
    let mathops = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
    let tests = "import unittest\n\nfrom mathops import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let claim = "I changed the line `from mathops import add` to `from mathops import add, mul` in `test_mathops.py` and ran the command again.";
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        let run = || Reply::tool_call("bash", json!({"command": "python3 test_mathops.py 2>&1"}));
        s.push(run())
            .push(Reply::text(claim))
            .push(run())
            .push(Reply::text("The tests pass."))
            .push(Reply::text("The tests pass."));
        let w = World::new(&s);
        w.write("mathops.py", mathops);
        w.write("test_mathops.py", tests);
        if !aids {
            w.user_config("small_model = \"off\"\n");
        }
        let o = exec_auto(
            &w,
            &["--yes", "--json", "Make the tests in test_mathops.py pass."],
        );
        assert_ok(&o);
        let after = w.read("test_mathops.py").unwrap();
        if !aids {
            assert_eq!(after, tests);
            continue;
        }
        assert_eq!(after, tests.replace("import add\n", "import add, mul\n"));
        let edited = last_result(&s.request(2));
        assert!(
            edited.content.starts_with("Edited test_mathops.py"),
            "{}",
            edited.content
        );
        let ran = last_result(&s.request(3)).content;
        assert!(ran.contains("Ran 2 tests") && ran.contains("OK"), "{ran}");
    }
}

/// The add_function task as the 1.5B model met it: it claimed `mul` without a change. The
/// nudge names `mul` as defined nowhere and the file to add it to; a `write_file` of that
/// file with `mul` alone then adds it and keeps `add` and `sub`. Its claim to have added the
/// test, with test_mathops.py unchanged, is sent back once, and its next steps are calls
/// until that file is changed.
fn a_function_the_task_asks_for_is_named_and_its_lone_write_added(kind: ProviderKind) {
    let mathops = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
    let s = ScriptedServer::start(kind);
    s.push(Reply::text("I added `mul` and ran the tests."))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "mathops.py", "content": "def mul(a, b):\n    return a * b\n"}),
        ))
        .push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text("Added mul and its test."))
        .push(Reply::tool_call(
            "read_file",
            json!({"path": "test_mathops.py"}),
        ))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "test_mathops.py", "old_str": "add, sub", "new_str": "add, mul, sub"}),
        ))
        .push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text("Now it is done."));
    let w = World::new(&s);
    w.write("mathops.py", mathops);
    w.write("test_mathops.py", "from mathops import add, sub\n");
    let task = "Add a function `mul(a, b)` to mathops.py and a test for it to test_mathops.py.";
    let o = exec_auto(&w, &["--yes", task]);
    assert_ok(&o);
    // Checked, but test_mathops.py, which the task asks to add to, was never changed: sent
    // back once, naming it.
    assert_eq!(s.request_count(), 8, "{}", stdout(&o));
    let told = user_texts(&s.request(4));
    assert!(
        told.last().is_some_and(|t| t.starts_with(
            "[rein] The task asks to add something to test_mathops.py, and you have not changed it yet."
        )),
        "{told:?}"
    );
    assert_eq!(stdout(&o), "Now it is done.\n");
    // After reading the file it was sent to, the model must act on it; once it changed the
    // file, it may answer again.
    assert!(forced(&s.request(5)), "{}", s.request(5).body_text);
    assert!(!forced(&s.request(6)), "{}", s.request(6).body_text);
    let asked = user_texts(&s.request(1));
    assert!(
        asked.iter().any(|t| t
            .contains("The task asks for `mul`, which no file defines yet: add it to mathops.py")),
        "{asked:?}"
    );
    assert_eq!(
        w.read("mathops.py").unwrap(),
        format!("{mathops}\n\ndef mul(a, b):\n    return a * b\n")
    );
}

/// The add_function task's last step as the 1.5B model took it: a `str_replace` quoting a
/// test class that is not in the file, with `test_mul` added to it. The method goes after
/// the quote's last line the file holds; the run that fails on `mul` not being imported names
/// the import line to extend. With `small_model = "off"` the call fails as it was written.
fn a_test_added_to_an_imagined_class_goes_into_the_real_one_and_its_import_is_named(
    kind: ProviderKind,
) {
    let mathops = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
    let tests = "import unittest\n\nfrom mathops import add\n\n\nclass MathopsTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let imagined = "class TestMathops(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == '__main__':\n    unittest.main()";
    let added = imagined.replace(
        "5)\n\n\n",
        "5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n\n",
    );
    let run = || {
        Reply::tool_call(
            "bash",
            json!({"command": "python3 -m unittest -q test_mathops"}),
        )
    };
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        s.push(Reply::tool_call("read_file", json!({"path": "test_mathops.py"})))
            .push(Reply::tool_call(
                "str_replace",
                json!({"path": "test_mathops.py", "old_str": imagined, "new_str": added}),
            ))
            .push(run())
            .push(Reply::tool_call(
                "str_replace",
                json!({"path": "test_mathops.py", "old_str": "from mathops import add\n", "new_str": "from mathops import add, mul\n"}),
            ))
            .push(run())
            .push(Reply::text("Done."));
        let w = World::new(&s);
        w.write("mathops.py", mathops);
        w.write("test_mathops.py", tests);
        if !aids {
            w.user_config("small_model = \"off\"\n");
        }
        let task = "Add a unittest test for mul to test_mathops.py.";
        let o = exec_auto(&w, &["--yes", "--json", task]);
        assert_ok(&o);
        let edit = last_result(&s.request(2)).content;
        let after = w.read("test_mathops.py").unwrap();
        if !aids {
            assert!(edit.contains("old_str was not found"), "{edit}");
            assert!(!after.contains("test_mul"), "{after}");
            assert!(!stdout(&o).contains("anchored_insert"), "{}", stdout(&o));
            continue;
        }
        assert!(edit.starts_with("Edited test_mathops.py"), "{edit}");
        assert!(stdout(&o).contains("anchored_insert"), "{}", stdout(&o));
        let failed = last_result(&s.request(3)).content;
        assert!(failed.contains("NameError"), "{failed}");
        assert!(
            failed.contains("uses `mul`, which mathops.py defines but test_mathops.py does not import: change the line `from mathops import add` to `from mathops import add, mul`"),
            "{failed}"
        );
        let passed = last_result(&s.request(5)).content;
        assert!(
            passed.contains("Ran 2 tests") && !passed.contains("FAILED"),
            "{passed}"
        );
        assert_eq!(
            after,
            tests.replace("import add\n", "import add, mul\n").replace(
                "5)\n",
                "5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
            )
        );
    }
    // In another run it "replaced" a test of its own making with the one it meant: added
    // to the file's one class.
    let s = ScriptedServer::start(kind);
    let invented =
        |n: u8| format!("    def test_mul(self):\n        self.assertEqual(mul(2, 3), {n})\n");
    s.push(Reply::tool_call(
        "read_file",
        json!({"path": "test_mathops.py"}),
    ))
    .push(Reply::tool_call(
        "str_replace",
        json!({"path": "test_mathops.py", "old_str": invented(5), "new_str": invented(6)}),
    ))
    .push(Reply::text("Done."));
    let w = World::new(&s);
    w.write("mathops.py", mathops);
    w.write("test_mathops.py", tests);
    assert_ok(&exec_auto(
        &w,
        &["--yes", "Add a unittest test for mul to test_mathops.py."],
    ));
    let edit = last_result(&s.request(2)).content;
    assert!(edit.starts_with("Edited test_mathops.py"), "{edit}");
    assert_eq!(
        w.read("test_mathops.py").unwrap(),
        tests.replace("5)\n", &format!("5)\n\n{}", invented(6)))
    );
}

/// The todo_multi_step task as the 1.5B model met it: it gave `greeting` its upper-case
/// branch and stopped, with no `--upper` in `main`'s parser. The answer is sent back once,
/// naming the option and the parser line to add; once the option is there, the answer
/// stands.
fn an_option_the_task_quotes_and_no_file_has_is_sent_back_once(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "greet.py"})))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "greet.py", "old_str": "    return f\"Hello, {name}!\"\n", "new_str": "    text = f\"Hello, {name}!\"\n    return text.upper() if upper else text\n"}),
        ))
        .push(Reply::text("Added the option."))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "greet.py", "old_str": "    parser.add_argument(\"name\")\n    print(greeting(parser.parse_args(argv).name))\n", "new_str": "    parser.add_argument(\"name\")\n    parser.add_argument(\"--upper\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    print(greeting(args.name, args.upper))\n"}),
        ))
        .push(Reply::tool_call("bash", json!({"command": "python3 greet.py --upper ada"})))
        .push(Reply::text("Now it is there."));
    let w = World::new(&s);
    w.write("greet.py", GREET);
    let task = "Add a `--upper` option to greet.py that prints the greeting in upper case.";
    let o = exec_auto(&w, &["--yes", task]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 6, "{}", stdout(&o));
    let told = user_texts(&s.request(3));
    assert!(
        told.last().is_some_and(|t| t.starts_with(
            "[rein] The task asks for the option `--upper`, and no file has it yet. Read greet.py, add `--upper` where it reads its command-line arguments (`parser.add_argument(\"--upper\", action=\"store_true\")`"
        )),
        "{told:?}"
    );
    assert!(forced(&s.request(3)), "{}", s.request(3).body_text);
    assert_eq!(last_result(&s.request(5)).content.trim_end(), "HELLO, ADA!");
    assert_eq!(stdout(&o), "Now it is there.\n");
}

/// The todo_multi_step task's first step as the 1.5B model met it: greet.py's parser got
/// `--upper` and `main` still called `greeting(args.name)`. The nudge names that line and
/// the line it should be; the model's answer that it changed it (and had not) becomes the
/// edit, and greet.py then prints upper case.
fn an_option_parsed_and_never_used_names_the_call_to_change(kind: ProviderKind) {
    let greet = "import argparse\n\n\ndef greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    return text.upper() if upper else text\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args(argv)\n    print(greeting(args.name))\n\n\nif __name__ == \"__main__\":\n    main()\n";
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "greet.py"})))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "greet.py", "old_str": "    parser.add_argument(\"name\")\n", "new_str": "    parser.add_argument(\"name\")\n    parser.add_argument(\"--upper\", action=\"store_true\")\n"}),
        ))
        .push(Reply::text("Added the option."))
        .push(Reply::text("I changed the line `print(greeting(args.name))` to `print(greeting(args.name, upper=args.upper))` in greet.py."))
        .push(Reply::tool_call("bash", json!({"command": "python3 greet.py --upper ada"})))
        .push(Reply::text("It prints upper case now."));
    let w = World::new(&s);
    w.write("greet.py", greet);
    let task = "Add a `--upper` option to greet.py that prints the greeting in upper case.";
    let o = exec_auto(&w, &["--yes", task]);
    assert_ok(&o);
    let told = user_texts(&s.request(3));
    assert!(
        told.last().is_some_and(|t| t.starts_with("[rein] greet.py reads `--upper` into `args.upper` but never uses it: change the line `print(greeting(args.name))` to `print(greeting(args.name, upper=args.upper))` with str_replace, then run greet.py with `--upper` to check it.")),
        "{told:?}"
    );
    let edited = last_result(&s.request(4)).content;
    assert!(edited.starts_with("Edited greet.py"), "{edited}");
    assert_eq!(last_result(&s.request(5)).content.trim_end(), "HELLO, ADA!");
    assert_eq!(s.request_count(), 6, "{}", stdout(&o));
}

/// A `str_replace` that renamed one name gets the places that name still appears in the
/// workspace's files of that language (whole names only, other languages left out); with
/// `small_model = "off"`, none.
fn a_rename_names_the_places_the_old_name_still_appears(kind: ProviderKind) {
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        s.push(Reply::tool_call("read_file", json!({"path": "users.py"})))
            .push(Reply::tool_call(
                "str_replace",
                json!({"path": "users.py", "old_str": "def get_usr(", "new_str": "def get_user("}),
            ))
            .push(Reply::text("Renamed."));
        let w = World::new(&s);
        w.write("users.py", "def get_usr(uid):\n    return uid\n");
        w.write("app.py", "from users import get_usr\n\nprint(get_usr(1))\n");
        w.write(
            "report.py",
            "from users import get_usr\n\ndef get_usr_ids():\n    pass\n",
        );
        w.write("notes.md", "get_usr is old\n");
        if !aids {
            w.user_config("small_model = \"off\"\n");
        }
        assert_ok(&exec_auto(
            &w,
            &["--yes", "Rename `get_usr` to `get_user`."],
        ));
        let edited = last_result(&s.request(2)).content;
        assert!(edited.starts_with("Edited users.py"), "{edited}");
        let note = "`get_usr` still appears in app.py (lines 1, 3), report.py (line 1). If \
                    `get_usr` is renamed to `get_user` everywhere, change those too with \
                    str_replace.";
        assert_eq!(edited.contains(note), aids, "{edited}");
    }
}

fn a_new_script_shown_and_its_run_command_become_a_write_and_a_run(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    let answer = "Here is `count_words.py`:\n\n```python\nwith open('notes.txt') as f:\n    print(len(f.read().split()))\n```\n\nRun it:\n\n```bash\npython3 count_words.py\n```";
    s.push(Reply::tool_call("bash", json!({"command": "ls"})))
        .push(Reply::text(answer))
        .push(Reply::text("It prints 3."));
    let w = World::new(&s);
    w.write("notes.txt", "one two three\n");
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "Write a Python script count_words.py that prints the number of words in notes.txt, run it and tell me the number.",
        ],
    );
    assert_ok(&o);
    assert!(w.read("count_words.py").unwrap().contains("print(len("));
    let results = support::rein::tool_results(&s.request(2));
    let ran = results.last().unwrap();
    assert!(
        ran.content.contains('3'),
        "the command ran: {}",
        ran.content
    );
}

fn a_block_naming_a_link_out_of_the_workspace_reads_nothing_there(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text(SHOWN_FIX));
    // Nothing is applied, so the nudges ask again.
    for _ in 0..3 {
        s.push(Reply::text("Done."));
    }
    let w = World::new(&s);
    let outside = w.dir.path().join("outside.py");
    std::fs::write(
        &outside,
        "def mean(values):\n    return 'OUTSIDE-SECRET-7731'\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, w.ws.join("stats.py")).unwrap();
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "Fix stats.py: the mean of an empty list should be 0.0.",
        ],
    );
    assert_ok(&o);
    for i in 0..s.request_count() {
        assert!(
            !s.request(i).body_text.contains("OUTSIDE-SECRET-7731"),
            "request {i} leaked the file behind the link"
        );
    }
    let kept = std::fs::read_to_string(&outside).unwrap();
    assert!(
        kept.contains("OUTSIDE-SECRET-7731"),
        "the file outside is untouched: {kept}"
    );
}

fn code_blocks_are_only_text_when_the_aid_is_off_or_the_message_asks_no_change(kind: ProviderKind) {
    for (config, message) in [
        (
            "small_model = \"first_call,tools,files,nudges\"\n",
            "Fix stats.py: the mean of an empty list should be 0.0.",
        ),
        (
            "",
            "What would make mean() safe for an empty list? Do not edit any file.",
        ),
    ] {
        let s = ScriptedServer::start(kind);
        s.push(Reply::tool_call("read_file", json!({"path": "stats.py"})))
            .push(Reply::text(SHOWN_FIX))
            .push(Reply::text("Done."))
            .push(Reply::text("Done."));
        let w = World::new(&s);
        w.user_config(&format!("retry_backoff_ms = 20\n{config}"));
        w.write("stats.py", STATS);
        let o = exec_auto(&w, &["--yes", message]);
        assert_ok(&o);
        assert_eq!(w.read("stats.py").unwrap(), STATS, "{config} / {message}");
    }
}

/// The todo_multi_step task's last step as the 1.5B model met it: asked to document an
/// option in README.md, it answered with the whole README in a Markdown block (a fenced
/// block of its own inside) and a command to run. README.md, named by the task, is read
/// before the first request; the block becomes its new version (the title is the file's),
/// the command runs. With `small_model = "off"` the README stays as it was.
fn a_document_shown_in_a_block_becomes_its_new_version(kind: ProviderKind) {
    let readme = "# greet\n\nUsage: `python3 greet.py NAME`\n";
    let answer = "Here's the updated `README.md` file:\n\n```markdown\n# Greet\n\n## Usage\n\n```bash\npython3 greet.py NAME [--upper]\n```\n\n- `--upper`: print the greeting in upper case.\n```\n\nCheck it:\n\n```bash\ngrep -c -- --upper README.md\n```\n";
    for aids in [true, false] {
        let s = ScriptedServer::start(kind);
        // The first step looks (a small model's first request offers only looking tools).
        s.push(Reply::tool_call("bash", json!({"command": "true"})))
            .push(Reply::text(answer))
            .push(Reply::text("Documented."));
        let w = World::new(&s);
        w.write("README.md", readme);
        if !aids {
            w.user_config("small_model = \"off\"\n");
        }
        let o = exec_auto(
            &w,
            &[
                "--yes",
                "--json",
                "Document the --upper option in README.md.",
            ],
        );
        assert_ok(&o);
        let after = w.read("README.md").unwrap();
        if !aids {
            assert_eq!(after, readme);
            continue;
        }
        let first = support::rein::tool_results(&s.request(0));
        assert!(
            first.len() == 1 && first[0].content.contains("Usage: `python3 greet.py NAME`"),
            "README.md is read before the first request: {first:?}"
        );
        assert_eq!(
            after,
            "# Greet\n\n## Usage\n\n```bash\npython3 greet.py NAME [--upper]\n```\n\n- `--upper`: print the greeting in upper case.\n"
        );
        let ran = last_result(&s.request(2)).content;
        assert!(
            ran.starts_with('2'),
            "the command ran on the new README: {ran}"
        );
    }
}

fn the_files_the_message_names_are_read_before_the_first_request(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text(SHOWN_FIX))
        .push(Reply::text("Fixed."))
        // The change came after the command: asked to run the check.
        .push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(Reply::text("Checked."));
    let w = World::new(&s);
    w.write("stats.py", STATS);
    w.write("secret.py", "TOKEN = 'never-read-3391'\n");
    std::os::unix::fs::symlink(w.dir.path().join("outside.py"), w.ws.join("link.py")).unwrap();
    std::fs::write(
        w.dir.path().join("outside.py"),
        "OUTSIDE = 'never-read-5512'\n",
    )
    .unwrap();
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "Fix stats.py (and link.py): the mean of an empty list should be 0.0.",
        ],
    );
    assert_ok(&o);
    let first = s.request(0);
    let results = support::rein::tool_results(&first);
    assert_eq!(
        results.len(),
        1,
        "stats.py only (link.py leads out): {:?}",
        first.body_text
    );
    assert!(
        results[0].content.contains("def summary(values)"),
        "{}",
        results[0].content
    );
    assert!(
        !first.body_text.contains("never-read-3391"),
        "a file the message does not name"
    );
    assert!(
        !first.body_text.contains("never-read-5512"),
        "a link out of the workspace"
    );
    // Read means seen: the model's edit of the file needs no read of its own.
    assert!(w.read("stats.py").unwrap().contains("return 0.0"));
}

fn running_python_is_no_change_though_it_writes_bytecode(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 -c 'import calc'"}),
    ))
    .push(Reply::text("I added mul to calc.py."))
    .push(Reply::text("Done."));
    let w = World::new(&s);
    w.write("calc.py", "def add(a, b):\n    return a + b\n");
    let o = exec_auto(&w, &["--yes", "Add a function mul to calc.py."]);
    assert_ok(&o);
    assert!(
        w.ws.join("__pycache__").is_dir(),
        "the import wrote bytecode"
    );
    let asked = user_texts(&s.request(2));
    assert!(
        asked.iter().any(|t| t.contains("No file was changed yet")),
        "bytecode is not the change asked for: {asked:?}"
    );
}

fn a_subagent_of_a_small_model_gets_the_file_list_and_a_forced_first_look(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "task",
        json!({"description": "Find the file that defines parse_header."}),
    ))
    .push(Reply::text("pkg/net/wire.py defines it."))
    .push(Reply::text("It is pkg/net/wire.py."));
    let w = World::new(&s);
    w.write(
        "pkg/net/wire.py",
        "def parse_header(line):\n    return line\n",
    );
    let o = exec_auto(
        &w,
        &[
            "--yes",
            "Use the task tool to have a subagent find which file defines parse_header.",
        ],
    );
    assert_ok(&o);
    let sub = system_prompt(&s.request(1));
    assert!(
        sub.contains("# Files in the workspace") && sub.contains("- pkg/net/wire.py"),
        "{sub}"
    );
    // Its first answer is a look, not a plan in prose (the 1.5B model's subagent said "I will
    // search" and ended).
    assert!(forced(&s.request(1)), "{}", s.request(1).body_text);
    let mut looks = tool_names(&s.request(1));
    looks.sort();
    assert_eq!(looks, ["bash", "read_file"]);
}

fn a_command_block_that_already_ran_is_not_run_again(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 -c 'print(6 * 7)'"}),
    ))
    .push(Reply::text(
        "It works. Check it with:\n```bash\npython3 -c 'print(6 * 7)'\n```",
    ));
    let w = World::new(&s);
    w.user_config("retry_backoff_ms = 20\nsmall_model = \"code_blocks\"\n");
    let o = exec_auto(&w, &["--yes", "Fix the product printer."]);
    assert_ok(&o);
    assert_eq!(
        s.request_count(),
        2,
        "the block of a command that ran is only text"
    );
}

fn a_change_not_checked_since_is_sent_back_once_per_command_run(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "python3 calc.py"}),
    ))
    .push(fix_ident())
    .push(Reply::text("Fixed; the tests pass."))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "python3 calc.py"}),
    ))
    .push(Reply::text("Checked."));
    let w = World::new(&s);
    w.write("calc.py", "def ident(n):\n    return 0\n");
    let o = exec_auto(&w, &["--yes", "fix ident in calc.py"]);
    assert_ok(&o);
    assert_eq!(s.request_count(), 5, "asked once, then the answer stands");
    let asked = user_texts(&s.request(3));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("You changed files after the last command you ran")),
        "{asked:?}"
    );
    assert!(
        forced(&s.request(3)),
        "the answer to a nudge must be a call"
    );
    assert!(stdout(&o).contains("Checked."), "{}", stdout(&o));

    // Asked once per run: an edit after the check ends it as it stands.
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("bash", json!({"command": "true"})))
        .push(fix_ident())
        .push(Reply::text("Done."))
        .push(Reply::tool_call(
            "str_replace",
            json!({"path": "calc.py", "old_str": "return 9", "new_str": "return 1"}),
        ))
        .push(Reply::text("Done again."));
    let w = World::new(&s);
    w.write(
        "calc.py",
        "def ident(n):\n    return 0\n\n\ndef one():\n    return 9\n",
    );
    assert_ok(&exec_auto(&w, &["--yes", "fix ident and one in calc.py"]));
    assert_eq!(s.request_count(), 5);
    assert_eq!(
        w.read("calc.py").unwrap(),
        "def ident(n):\n    return n\n\n\ndef one():\n    return 1\n"
    );

    // Once per command run: a fix after the check's run is sent back too, three times in a
    // run at the most.
    let s = ScriptedServer::start(kind);
    for name in ["a", "b", "c", "d"] {
        s.push(Reply::tool_call("bash", json!({"command": "python3 v.py"})))
            .push(Reply::tool_call(
                "str_replace",
                json!({"path": "v.py", "old_str": format!("{name} = 0"), "new_str": format!("{name} = 1")}),
            ))
            .push(Reply::text(&format!("Fixed {name}.")));
    }
    let w = World::new(&s);
    w.write("v.py", "a = 0\nb = 0\nc = 0\nd = 0\n");
    let o = exec_auto(&w, &["--yes", "fix v.py"]);
    assert_ok(&o);
    assert_eq!(
        s.request_count(),
        12,
        "three nudges, then the answer stands"
    );
    let asked = user_texts(&s.request(11));
    let nudges = asked
        .iter()
        .filter(|t| t.contains("You changed files after the last command you ran"))
        .count();
    assert_eq!(nudges, 3, "{asked:?}");
    assert!(stdout(&o).contains("Fixed d."), "{}", stdout(&o));
    assert_eq!(w.read("v.py").unwrap(), "a = 1\nb = 1\nc = 1\nd = 1\n");
}

fn a_change_not_checked_with_the_command_the_task_names_is_sent_back_to_run_it(kind: ProviderKind) {
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(fix_ident())
        .push(Reply::text("Renamed; it still works."))
        .push(Reply::tool_call(
            "bash",
            json!({"command": "python3 calc.py"}),
        ))
        .push(Reply::text("Checked."));
    let w = World::new(&s);
    w.write("calc.py", "def ident(n):\n    return 0\n");
    let task = "Fix ident in calc.py. The program `python3 calc.py` must still work.";
    assert_ok(&exec_auto(&w, &["--yes", task]));
    assert_eq!(s.request_count(), 5, "asked once, then the answer stands");
    let asked = user_texts(&s.request(3));
    assert!(
        asked
            .iter()
            .any(|t| t.contains("have not run `python3 calc.py` since, which the task names")),
        "no command ran before, but the task names one: {asked:?}"
    );
    // Without a named command and with none run, a change is not sent back to be checked.
    let s = ScriptedServer::start(kind);
    s.push(Reply::tool_call("read_file", json!({"path": "calc.py"})))
        .push(fix_ident())
        .push(Reply::text("Fixed."));
    let w = World::new(&s);
    w.write("calc.py", "def ident(n):\n    return 0\n");
    assert_ok(&exec_auto(&w, &["--yes", "Fix ident in calc.py."]));
    assert_eq!(s.request_count(), 3);
}

/// The call that fixes `ident` in the `calc.py` these tests write (`return 0` → `return n`).
fn fix_ident() -> Reply {
    Reply::tool_call(
        "str_replace",
        json!({"path": "calc.py", "old_str": "return 0", "new_str": "return n"}),
    )
}
