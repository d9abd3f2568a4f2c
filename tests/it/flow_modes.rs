//! The approval modes through the real `rein exec` against the scripted model server. Plan
//! mode refuses edits and every command that is not allowed, even with `--yes` (what `--yes`
//! would approve is exactly what plan mode must not run); accept edits runs edits inside the
//! workspace without `--yes` but nothing more: protected paths, paths outside the workspace,
//! commands and deny rules still hold.

use crate::support;

use serde_json::json;
use support::rein::{World, last_result, stderr, tool_results};
use support::{Reply, ScriptedServer};

/// `rein exec --yes --mode plan`: the edit and the asking command are refused with "plan
/// mode", the allowed command runs, and the model is told it is planning.
#[test]
fn plan_mode_refuses_edits_and_asking_commands_even_with_yes() {
    let s = ScriptedServer::openai();
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "plan.txt", "content": "x\n"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "touch made.txt"}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "ls"})))
    .push(Reply::text("Plan: 1. create plan.txt"));
    let w = World::new(&s);
    w.write("seen.txt", "here\n");
    let o = w.exec(&["--yes", "--mode", "plan", "make the files"]);
    assert!(w.read("plan.txt").is_none(), "plan mode wrote a file");
    assert!(
        w.read("made.txt").is_none(),
        "plan mode ran a command that asks"
    );
    for i in [1, 2] {
        let refused = last_result(&s.request(i)).content;
        assert!(refused.contains("plan mode"), "{refused}\n{}", stderr(&o));
    }
    let listed = last_result(&s.request(3)).content;
    assert!(
        listed.contains("seen.txt"),
        "an allowed command did not run: {listed}"
    );
    assert!(s.request(0).body_text.contains("You are in plan mode"));
}

/// `rein exec --mode accept-edits` without `--yes`: an edit inside the workspace runs; an edit
/// of a protected path and a command that asks are refused (nobody to ask); a write outside
/// the workspace and a denied command are blocked as ever.
#[test]
fn accept_edits_runs_workspace_edits_and_nothing_more() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    // A place commands may read (the file tools refuse the hidden ones outright).
    let outside_file = w.readable_dir("out").join("out.txt");
    s.push(Reply::tool_call(
        "write_file",
        json!({"path": "in.txt", "content": "inside\n"}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": ".git/hooks/pre-commit", "content": "evil\n"}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": outside_file.display().to_string(), "content": "out\n"}),
    ))
    .push(Reply::tool_call(
        "write_file",
        json!({"path": ".githooks/pre-commit", "content": "#!/bin/sh\nevil\n"}),
    ))
    .push(Reply::tool_call(
        "bash",
        json!({"command": "touch made.txt"}),
    ))
    .push(Reply::tool_call("bash", json!({"command": "sudo true"})))
    .push(Reply::text("Done what I could."));
    // The person's git runs hooks from `.githooks` (`core.hooksPath`): protected like `.git/hooks`.
    std::fs::create_dir_all(w.ws.join(".git")).unwrap();
    std::fs::write(
        w.ws.join(".git/config"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    let o = w.exec(&["--mode", "accept-edits", "edit"]);
    assert_eq!(
        w.read("in.txt").as_deref(),
        Some("inside\n"),
        "{}",
        stderr(&o)
    );
    assert!(
        w.read(".git/hooks/pre-commit").is_none(),
        "a protected path was written"
    );
    assert!(
        !outside_file.exists(),
        "a file outside the workspace was written"
    );
    assert!(
        w.read(".githooks/pre-commit").is_none(),
        "a hook directory the person's git uses was written"
    );
    assert!(
        w.read("made.txt").is_none(),
        "a command ran without approval"
    );
    let results: Vec<String> = (2..=6)
        .map(|i| {
            tool_results(&s.request(i))
                .last()
                .map(|r| r.content.clone())
                .unwrap_or_default()
        })
        .collect();
    // The protected path and the command ask (refused: nobody to ask); outside the workspace
    // and `sudo` are denied outright; the hook directory is refused like `.git/hooks`.
    assert!(
        results[2].starts_with("Refused without asking"),
        "{}",
        results[2]
    );
    for i in [0, 3] {
        assert!(
            results[i].starts_with("Refused without asking"),
            "{}",
            results[i]
        );
    }
    for i in [1, 4] {
        assert!(results[i].contains("Blocked by policy"), "{}", results[i]);
    }
}

/// Accept edits, a model writing a git directory file by file (`objects`, `refs`, a `config`
/// that gives it a work tree and a program, then `HEAD`): the person's git would use that
/// folder whenever they work in it, so what makes it one asks (refused: nobody to ask), and
/// so does every write into it once it is one.
#[test]
fn accept_edits_never_writes_a_folder_into_a_git_directory() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\
                  \tfsmonitor = \"touch \\\"$HOME/PWN-edits\\\"; false #\"\n";
    let head = "ref: refs/heads/main\n";
    for (path, content) in [
        ("x/objects/info/keep", ""),
        ("x/refs/heads/keep", ""),
        ("x/config", config),
        ("x/HEAD", head),
        ("y/HEAD", head),
        ("y/objects/info/keep", ""),
    ] {
        s.push(Reply::tool_call(
            "write_file",
            json!({"path": path, "content": content}),
        ));
    }
    s.push(Reply::text("Done."));
    let o = w.exec(&["--mode", "accept-edits", "set up"]);
    assert!(w.read("x/config").is_some(), "{}", stderr(&o));
    // `x/HEAD` and `y/objects` would make a git directory; `y/HEAD` alone does not.
    for (i, refused) in [(4, true), (5, false), (6, true)] {
        let r = last_result(&s.request(i)).content;
        assert_eq!(r.starts_with("Refused without asking"), refused, "{r}");
    }
    assert!(w.read("x/HEAD").is_none() && w.read("y/objects/info/keep").is_none());
    // The oracle: with the `HEAD` it asked for, the person's git in `x` runs the program.
    let git_status = || {
        std::process::Command::new("git")
            .args(["status", "--short"])
            .current_dir(w.ws.join("x"))
            .env("HOME", &w.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git")
    };
    git_status();
    assert!(!w.home.join("PWN-edits").exists());
    std::fs::write(w.ws.join("x/HEAD"), head).unwrap();
    git_status();
    assert!(w.home.join("PWN-edits").exists(), "the oracle: git runs it");
}

/// Accept edits: Mercurial's and Jujutsu's metadata run programs their configuration names
/// (hg's hooks on every command, jj's signing program), so writes there ask like `.git`'s
/// (refused: nobody to ask); so does a write named through `.git` to the file a link there
/// leads to.
/// A file the person's git configuration includes from the workspace (a team's shared
/// `.gitconfig`, here not made yet) is git configuration too, and a nested repository's hook
/// directory holds hooks: accept-edits mode asks before writing either, as it asks for
/// `.git/config` (headless: refused).
#[test]
fn accept_edits_never_writes_a_configuration_file_the_persons_git_includes() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&w.ws)
            .env("HOME", &w.home)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    git(&["init", "-q"]);
    git(&["config", "include.path", "../.gitconfig"]);
    // A nested repository's own hook directory (husky in a package of its own).
    std::fs::create_dir(w.ws.join("lib")).unwrap();
    git(&["-C", "lib", "init", "-q"]);
    git(&["-C", "lib", "config", "core.hooksPath", ".husky/_"]);
    // Files the nested repository includes: in its tree, and beside it in the workspace (known
    // once a command's preparation has found the repository).
    for include in ["../team.inc", "../../shared.inc"] {
        git(&["-C", "lib", "config", "--add", "include.path", include]);
    }
    s.push(Reply::tool_call("bash", json!({"command": "ls"})));
    for path in [
        ".gitconfig",
        "lib/.husky/_/pre-commit",
        "lib/team.inc",
        "shared.inc",
        "notes.txt",
    ] {
        s.push(Reply::tool_call(
            "write_file",
            json!({"path": path, "content": "[core]\nfsmonitor = touch /tmp/x\n"}),
        ));
    }
    s.push(Reply::text("Done."));
    let o = w.exec(&["--mode", "accept-edits", "configure"]);
    assert!(w.read("notes.txt").is_some(), "{}", stderr(&o));
    for (i, path) in [
        (2, ".gitconfig"),
        (3, "lib/.husky/_/pre-commit"),
        (4, "lib/team.inc"),
        (5, "shared.inc"),
    ] {
        let r = last_result(&s.request(i)).content;
        assert!(r.starts_with("Refused without asking"), "{path}: {r}");
        assert!(w.read(path).is_none(), "{path} was written");
    }
}

#[test]
fn accept_edits_never_writes_other_version_control_metadata() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    std::fs::create_dir_all(w.ws.join(".hg")).unwrap();
    std::fs::create_dir_all(w.ws.join("sub/.jj/repo")).unwrap();
    // A repository's configuration that is a link to an ordinary file: named through `.git`.
    std::fs::create_dir_all(w.ws.join("lnk/.git")).unwrap();
    std::os::unix::fs::symlink("../../notes.cfg", w.ws.join("lnk/.git/config")).unwrap();
    for path in [
        ".hg/hgrc",
        "sub/.jj/repo/config.toml",
        "lnk/.git/config",
        "notes.txt",
    ] {
        s.push(Reply::tool_call(
            "write_file",
            json!({"path": path, "content": "[hooks]\npre-status = touch /tmp/x\n"}),
        ));
    }
    s.push(Reply::text("Done."));
    let o = w.exec(&["--mode", "accept-edits", "configure"]);
    assert!(w.read("notes.txt").is_some(), "{}", stderr(&o));
    for (i, path) in [
        (1, ".hg/hgrc"),
        (2, "sub/.jj/repo/config.toml"),
        (3, "notes.cfg"),
    ] {
        let r = last_result(&s.request(i)).content;
        assert!(r.starts_with("Refused without asking"), "{path}: {r}");
        assert!(w.read(path).is_none(), "{path} was written");
    }
}
