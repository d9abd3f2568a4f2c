//! `/rewind` and `/undo` attacked, in the real app in a pseudo-terminal: a command swaps paths
//! the restore will write or delete for symbolic links (to `$HOME`, to `.git/hooks`, to a file
//! outside the workspace) or for a hard link, in a turn of its own or between the plan and the
//! confirmation. A restore never writes or deletes outside the workspace nor in `.git`, and it
//! names every file it refused.

use crate::support;

use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use support::pty::{Pty, idle, keys, wait_until};
use support::rein::{World, stderr, stdout};
use support::{Reply, ScriptedServer};

/// Generous: the machine may be busy; assertions are about behaviour, not speed.
const WAIT: Duration = Duration::from_secs(40);

fn exec_ok(w: &World, args: &[&str]) -> String {
    let o = w.exec(args);
    assert!(
        o.status.success(),
        "rein exec {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Every file under `dir` with its content (links as `-> target`), to compare before/after.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, format!("-> {}", target.display()));
            } else if meta.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(rel, std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// One answer reading each of `paths` (an existing file is only overwritten after a read).
fn read_calls(paths: &[&str]) -> Reply {
    paths.iter().fold(Reply::new(), |r, path| {
        r.call("read_file", json!({ "path": path }))
    })
}

fn write_calls(files: &[(&str, &str)]) -> Reply {
    files.iter().fold(Reply::new(), |r, (path, content)| {
        r.call("write_file", json!({"path": path, "content": content}))
    })
}

/// Opens `/rewind`, picks the message `ups` rows above the newest, "Restore code only", and
/// returns the plan on screen.
fn plan_code_only(t: &mut Pty, message: &str, ups: usize) -> String {
    t.type_line("/rewind");
    t.expect(
        "the list of messages",
        |s| s.contains("rewind to before which message") && s.contains(message),
        WAIT,
    );
    for _ in 0..ups {
        t.send_raw(keys::UP);
    }
    t.send_raw(keys::ENTER);
    t.expect(
        "the options",
        |s| s.contains("Restore code only") && s.contains(message),
        WAIT,
    );
    t.send_raw(keys::DOWN);
    t.send_raw(keys::DOWN);
    t.send_raw(keys::ENTER);
    t.expect("the restore plan", |s| s.contains("╭ Restore "), WAIT)
}

/// A bash command of the model swaps what the first turn wrote for links: `conf/` becomes a
/// link to `$HOME` (where files of the same names live), `hooks/` a link to `.git/hooks`,
/// `tolink.txt` a link to a file in `$HOME`. Undoing the swap would write the three files
/// back, going back to before the first turn would write `conf/settings.txt` and `tolink.txt`:
/// through the links, each would land outside the workspace or in `.git`.
#[test]
fn a_turn_that_swaps_restored_paths_for_links_cannot_make_a_restore_leave_the_workspace() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    w.write(
        ".git/hooks/pre-commit",
        "#!/bin/sh\necho the person's own hook\n",
    );
    w.write("conf/settings.txt", "settings v1\n");
    w.write("tolink.txt", "tolink v1\n");
    w.write("ok.txt", "ok v1\n");
    // Where the swap moves the originals: out of the checkpoints' sight, so the plan is short.
    w.write(".gitignore", "old/\n");
    for (name, text) in [
        ("settings.txt", "home settings, keep me\n"),
        ("made.txt", "home made, keep me\n"),
        ("profile", "home profile, keep me\n"),
    ] {
        std::fs::write(w.home.join(name), text).unwrap();
    }
    s.push(read_calls(&["conf/settings.txt", "tolink.txt", "ok.txt"]))
        .push(write_calls(&[
            ("conf/settings.txt", "settings v2\n"),
            ("conf/made.txt", "made by rein\n"),
            ("hooks/pre-commit", "#!/bin/sh\necho rein's file\n"),
            ("tolink.txt", "tolink v2\n"),
            ("ok.txt", "ok v2\n"),
        ]))
        .push(Reply::text("first done"));
    exec_ok(&w, &["--yes", "first turn"]);
    assert_eq!(w.read("conf/made.txt").as_deref(), Some("made by rein\n"));

    let (home, ws) = (w.home.display(), w.ws.display());
    let swap = format!(
        "mkdir old && mv conf hooks tolink.txt old/ && ln -s {home} conf && ln -s {ws}/.git/hooks hooks && \
         ln -s {home}/profile tolink.txt"
    );
    s.push(Reply::tool_call("bash", json!({ "command": swap })))
        .push(Reply::text("second done"));
    let out = exec_ok(&w, &["--continue", "--yes", "second turn"]);
    let result = support::rein::last_result(&s.request(s.request_count() - 1));
    assert!(
        w.ws.join("conf").is_symlink(),
        "the swap ran:\n{out}\n{}",
        result.content
    );
    let home_before = snapshot(&w.home);
    let git_before = snapshot(&w.ws.join(".git"));

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 60);
    t.expect(
        "the resumed session",
        |s| s.contains("second done") && idle(s),
        WAIT,
    );
    // The swap's own turn: its scan saw the files behind the links go (a name that resolves
    // through a link to a file of the same name is not the workspace's file).
    t.type_line("/undo");
    let plan = t.expect("the plan of the swap", |s| s.contains(" Restore "), WAIT);
    for path in ["conf/settings.txt", "conf/made.txt", "hooks/pre-commit"] {
        assert!(
            plan.lines()
                .any(|l| l.contains(path) && l.contains("cannot restore")),
            "{path} is not in the plan of the swap:\n{plan}"
        );
    }
    t.send_raw(keys::ESC);
    t.expect(
        "the plan closed",
        |s| !s.contains("╭ Restore ") && idle(s),
        WAIT,
    );
    // Before the first turn: what it created is gone from the workspace (nothing to delete),
    // what it changed is behind links now.
    let plan = plan_code_only(&mut t, "first turn", 1);
    for path in ["conf/settings.txt", "tolink.txt"] {
        assert!(
            plan.lines()
                .any(|l| l.contains(path) && l.contains("cannot restore")),
            "{path} is not refused in the plan:\n{plan}"
        );
    }
    t.send_keys("y");
    wait_until("ok.txt back", WAIT, || {
        w.read("ok.txt").as_deref() == Some("ok v1\n")
    });
    let screen = t.expect(
        "the refusals",
        |s| s.matches("Not restored: ").count() >= 2 && idle(s),
        WAIT,
    );
    for path in ["conf/settings.txt", "tolink.txt"] {
        assert!(
            screen.contains(&format!("Not restored: {path}")),
            "{path}:\n{screen}"
        );
    }
    assert_eq!(snapshot(&w.home), home_before, "$HOME untouched");
    assert_eq!(snapshot(&w.ws.join(".git")), git_before, ".git untouched");
    assert!(w.ws.join("tolink.txt").is_symlink());
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

/// The plan is shown; before the person confirms, another process swaps `dir/` for a link to
/// a directory outside the workspace, `new.txt` (to be deleted) for a link to a file in
/// `$HOME`, `sub/` (its file to be deleted) for a link to `$HOME`, holding a file of that name,
/// and `hard.txt` for a hard link to a file in `$HOME`. Confirming shows the new plan;
/// confirming that one writes and deletes inside the workspace only.
#[test]
fn links_swapped_in_between_the_plan_and_the_confirmation_are_refused() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    w.write("dir/f.txt", "f v1\n");
    w.write("hard.txt", "hard v1\n");
    w.write("ok.txt", "ok v1\n");
    let outside = w.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "outside, keep me\n").unwrap();
    std::fs::write(w.home.join("keep.txt"), "home, keep me\n").unwrap();
    std::fs::write(w.home.join("created.txt"), "home's own, keep me\n").unwrap();
    std::fs::write(w.home.join("hard-target"), "home hard target, keep me\n").unwrap();
    s.push(read_calls(&["dir/f.txt", "hard.txt", "ok.txt"]))
        .push(write_calls(&[
            ("dir/f.txt", "f v2\n"),
            ("new.txt", "created by rein\n"),
            ("sub/created.txt", "created by rein\n"),
            ("hard.txt", "hard v2\n"),
            ("ok.txt", "ok v2\n"),
        ]))
        .push(Reply::text("edited"));
    exec_ok(&w, &["--yes", "edit files"]);

    let mut t = Pty::spawn(w.pty_command(&["--continue"]), 100, 60);
    t.expect(
        "the resumed session",
        |s| s.contains("edited") && idle(s),
        WAIT,
    );
    t.type_line("/undo");
    let plan = t.expect("the plan", |s| s.contains(" Restore 5 files"), WAIT);
    assert!(!plan.contains("cannot restore"), "{plan}");

    // The swap, while the plan is open.
    std::fs::remove_dir_all(w.ws.join("dir")).unwrap();
    std::os::unix::fs::symlink(&outside, w.ws.join("dir")).unwrap();
    std::fs::remove_file(w.ws.join("new.txt")).unwrap();
    std::os::unix::fs::symlink(w.home.join("keep.txt"), w.ws.join("new.txt")).unwrap();
    std::fs::remove_dir_all(w.ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&w.home, w.ws.join("sub")).unwrap();
    std::fs::remove_file(w.ws.join("hard.txt")).unwrap();
    std::fs::hard_link(w.home.join("hard-target"), w.ws.join("hard.txt")).unwrap();
    let home_before = snapshot(&w.home);
    let outside_before = snapshot(&outside);

    t.send_keys("y");
    let plan = t.expect(
        "the new plan",
        |s| s.contains("restore hard.txt") && s.contains("cannot restore"),
        WAIT,
    );
    for path in ["dir/f.txt", "new.txt", "sub/created.txt"] {
        assert!(
            plan.lines()
                .any(|l| l.contains(path) && l.contains("cannot restore")),
            "{path} is not refused in the plan:\n{plan}"
        );
    }
    assert!(
        plan.contains("hard.txt") && plan.contains("changed outside rein"),
        "{plan}"
    );
    // Restore everything it can, the file changed outside rein (the hard link) included.
    t.send_keys("y");
    wait_until("ok.txt back", WAIT, || {
        w.read("ok.txt").as_deref() == Some("ok v1\n")
    });
    let screen = t.expect(
        "the refusals",
        |s| s.matches("Not restored: ").count() >= 3 && idle(s),
        WAIT,
    );
    for path in ["dir/f.txt", "new.txt", "sub/created.txt"] {
        assert!(
            screen.contains(&format!("Not restored: {path}")),
            "{path}:\n{screen}"
        );
    }
    assert_eq!(snapshot(&w.home), home_before, "$HOME untouched");
    assert_eq!(snapshot(&outside), outside_before, "outside untouched");
    // The hard link's name now holds the restored file; the file it shared stays as it was.
    assert_eq!(w.read("hard.txt").as_deref(), Some("hard v1\n"));
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}

/// The checkpoints' first scan runs in the background from the start (the status line says
/// so) and a command that changes a file while it runs is still undoable.
#[test]
fn the_first_scan_runs_in_the_background_and_what_bash_changes_meanwhile_is_undoable() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    // Enough distinct files that the scan is seen running (each is read, hashed and kept;
    // 10,000 of them take ~0.2 s since the scan keeps them in one pack).
    for d in 0..40 {
        for f in 0..250 {
            w.write(&format!("big/d{d}/f{f}.txt"), &format!("file {d} {f}\n"));
        }
    }
    w.write("a.txt", "a v1\n");
    s.push(Reply::tool_call(
        "bash",
        json!({"command": "printf 'a v2\\n' > a.txt"}),
    ))
    .push(Reply::text("changed a"));
    let mut t = w.spawn_tui(100, 40);
    t.expect(
        "the scan running",
        |s| s.contains("indexing workspace…"),
        WAIT,
    );
    t.type_line("change a");
    t.expect("the bash approval", |s| s.contains("Allow "), WAIT);
    t.send_keys("y");
    // The command waits for the scan: what it changes must be compared with a whole shadow.
    let slow = Duration::from_secs(120);
    t.expect("the answer", |s| s.contains("changed a") && idle(s), slow);
    assert_eq!(w.read("a.txt").as_deref(), Some("a v2\n"));
    t.expect(
        "the scan over",
        |s| !s.contains("indexing workspace…"),
        slow,
    );
    t.type_line("/undo");
    let plan = t.expect("the plan", |s| s.contains(" Restore 1 file"), WAIT);
    assert!(plan.contains("restore a.txt"), "{plan}");
    t.send_keys("y");
    wait_until("a.txt back", WAIT, || {
        w.read("a.txt").as_deref() == Some("a v1\n")
    });
    t.send_raw(keys::CTRL_D);
    assert_eq!(t.wait_exit(WAIT), Some(0));
}
