//! `rein policy check` through the real binary for git commands in a hostile repository
//! laid out as the attacks were: a committed directory git takes for a bare repository,
//! `git --bare`, submodules whose configuration runs a program, a `post-index-change` hook
//! that `git status` runs, a partial clone that fetches. Where it is cheap, the real git runs
//! the attack first (its marker file appears), so each test proves its layout is live; then
//! rein must ask. An ordinary repository (hooks, clean submodules) still gets `allow`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The real git in `dir`, away from the person's configuration; panics when it fails.
fn git(dir: &Path, args: &[&str]) {
    let out = git_run(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The real git in `dir`, whatever it answers.
fn git_run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c"])
        .arg("protocol.file.allow=always")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .output()
        .expect("git runs")
}

/// `rein policy check COMMAND` run in `dir` (no user config): its verdict line.
fn rate(dir: &Path, command: &str) -> String {
    let home = tempfile::tempdir().expect("temp dir");
    crate::support::rein::policy_check(dir, home.path(), &[command]).1
}

/// A repository with one commit of `a.txt` and `b.txt`, in a temp dir of its own.
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    git(d.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(d.path().join("a.txt"), "a\n").unwrap();
    std::fs::write(d.path().join("b.txt"), "b\n").unwrap();
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-qm", "first"]);
    d
}

/// Makes `dir` look like a git directory (what a hostile repository can commit: `HEAD`,
/// `objects/.keep`, `refs/.keep`) whose `config` runs `touch MARKER` as its external diff.
fn bare_shaped(dir: &Path, marker: &Path) {
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
        std::fs::write(dir.join(d).join(".keep"), "").unwrap();
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let config = format!(
        "[core]\n\tfsmonitor = \"touch {m}; false\"\n[diff]\n\texternal = \"touch {m}; false\"\n",
        m = marker.display()
    );
    std::fs::write(dir.join("config"), config).unwrap();
}

/// Makes `path` an executable shell script that touches `marker`.
fn script(path: &Path, marker: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_committed_bare_repository_directory_asks() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    bare_shaped(&ws.join("sub"), &marker);
    std::fs::create_dir_all(ws.join("d")).unwrap();
    bare_shaped(&ws.join("d/sub"), &marker);
    // Oracle: git takes `sub` for a repository and runs what its config names.
    let _ = git_run(
        &ws.join("sub"),
        &["diff", "--no-index", "../a.txt", "../b.txt"],
    );
    assert!(
        marker.exists(),
        "the layout does not run the program under git"
    );
    for command in [
        "git -C sub status",
        "git -C sub diff",
        "git -C sub log -p",
        "git -C sub show",
        "git -C sub diff --no-index ../a.txt ../b.txt",
        // git applies each -C from the one before: `d/sub`.
        "git -C d -C sub status",
        "git -C d/sub/objects log -p",
    ] {
        let out = rate(ws, command);
        assert!(
            out.starts_with("ask:") && out.contains("looks like a git directory (it has HEAD)"),
            "{command}: {out}"
        );
    }
    // A directory that is not there yet (a part before may make it) is judged as git would
    // find it then.
    let out = rate(ws, "git -C sub/new status");
    assert!(out.contains("`sub` looks like a git directory"), "{out}");
    // The workspace's own `.git` is found first at its level: still rated by the rules.
    assert!(rate(ws, "git -C d status").starts_with("allow:"));
}

#[test]
fn git_bare_asks_like_git_dir() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    // The repository tracks a git-directory shape at its top, config included.
    bare_shaped(ws, &marker);
    let _ = git_run(ws, &["--bare", "diff", "--no-index", "a.txt", "b.txt"]);
    assert!(
        marker.exists(),
        "the layout does not run the program under git"
    );
    for command in [
        "git --bare diff --no-index a.txt b.txt",
        "git --bare log -p",
    ] {
        let out = rate(ws, command);
        assert!(
            out.starts_with("ask:") && out.contains("git --bare"),
            "{command}: {out}"
        );
    }
}

/// A superproject with the submodule `sm` (its git directory in `.git/modules/sm`).
fn with_submodule() -> (tempfile::TempDir, tempfile::TempDir) {
    let inner = repo();
    let sup = repo();
    let url = inner.path().display().to_string();
    git(sup.path(), &["submodule", "add", "-q", &url, "sm"]);
    git(sup.path(), &["commit", "-qm", "sm"]);
    (sup, inner)
}

#[test]
fn a_submodule_whose_config_runs_a_program_asks() {
    let (sup, _inner) = with_submodule();
    let ws = sup.path();
    // A clean submodule is rated by the rules (git writes `core.worktree` for it).
    for command in ["git status", "git diff", "git log -p"] {
        assert!(rate(ws, command).starts_with("allow:"), "{command}");
    }
    let marker = ws.join("PWNED");
    let config = ws.join(".git/modules/sm/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[core]\n\tfsmonitor = \"touch {}; false\"\n",
        marker.display()
    ));
    std::fs::write(&config, text).unwrap();
    // Even without `.gitmodules`: git recurses into every gitlink of the index.
    git(ws, &["rm", "-q", "--cached", ".gitmodules"]);
    std::fs::remove_file(ws.join(".gitmodules")).unwrap();
    git(ws, &["commit", "-qm", "no gitmodules"]);
    let _ = git_run(ws, &["status"]);
    assert!(
        marker.exists(),
        "the layout does not run the program under git"
    );
    for command in ["git status", "git diff"] {
        let out = rate(ws, command);
        assert!(
            out.starts_with("ask:") && out.contains("in the submodule `sm`"),
            "{command}: {out}"
        );
        assert!(out.contains("core.fsmonitor"), "{command}: {out}");
    }
}

#[test]
fn an_embedded_repository_with_its_own_git_dir_asks() {
    let sup = repo();
    let ws = sup.path();
    let sm = ws.join("vendor/sm");
    std::fs::create_dir_all(&sm).unwrap();
    git(&sm, &["init", "-q"]);
    git(&sm, &["commit", "-q", "--allow-empty", "-m", "i"]);
    // `git add` of a repository records a gitlink; its `.git` stays a directory.
    git(ws, &["add", "vendor/sm"]);
    git(ws, &["commit", "-qm", "embed"]);
    assert!(rate(ws, "git status").starts_with("allow:"));
    let marker = ws.join("PWNED");
    // A hook git runs when the submodule's index is refreshed.
    script(&sm.join(".git/hooks/post-index-change"), &marker);
    std::fs::write(sm.join("new.txt"), "x").unwrap();
    let _ = git_run(&sm, &["add", "new.txt"]);
    std::fs::remove_file(&marker).ok();
    // A stale index (a fresh extraction) makes the submodule's status refresh it.
    std::fs::write(sm.join("new.txt"), "x").unwrap();
    let _ = git_run(ws, &["status"]);
    assert!(
        marker.exists(),
        "the layout does not run the hook under git"
    );
    let out = rate(ws, "git status");
    assert!(
        out.starts_with("ask:") && out.contains("in the submodule `vendor/sm`"),
        "{out}"
    );
    assert!(out.contains("post-index-change"), "{out}");
}

#[test]
fn a_post_index_change_hook_asks_in_hooks_and_hooks_path() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    script(&ws.join(".git/hooks/post-index-change"), &marker);
    // A stale index, as in an extracted tarball.
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let _ = git_run(ws, &["status"]);
    assert!(
        marker.exists(),
        "the layout does not run the hook under git"
    );
    let out = rate(ws, "git status");
    assert!(
        out.starts_with("ask:") && out.contains("`post-index-change` hook"),
        "{out}"
    );
    assert!(rate(ws, "git log -p").starts_with("ask:"));
    std::fs::remove_file(ws.join(".git/hooks/post-index-change")).unwrap();
    assert!(rate(ws, "git status").starts_with("allow:"));
    // The same hook where `core.hooksPath` points.
    git(ws, &["config", "core.hooksPath", ".githooks"]);
    script(&ws.join(".githooks/post-index-change"), &marker);
    let out = rate(ws, "git status");
    assert!(out.contains(".githooks/post-index-change"), "{out}");
}

#[test]
fn ordinary_repositories_with_hooks_are_still_allowed() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    // Hooks that run on commits (which ask), in `.git/hooks` and husky's `.husky/_`.
    script(&ws.join(".git/hooks/pre-commit"), &marker);
    for hook in ["pre-commit", "commit-msg", "pre-push", "post-checkout", "h"] {
        script(&ws.join(".husky/_").join(hook), &marker);
    }
    git(ws, &["config", "core.hooksPath", ".husky/_"]);
    for command in [
        "git status",
        "git diff",
        "git log -p",
        "git show",
        "git -C .husky status",
    ] {
        let out = rate(ws, command);
        assert!(out.starts_with("allow:"), "{command}: {out}");
    }
}

#[test]
fn a_partial_clone_asks_unless_lazy_fetch_is_off() {
    let r = repo();
    let ws = r.path();
    git(
        ws,
        &["config", "remote.origin.url", "http://127.0.0.1:9/x.git"],
    );
    git(ws, &["config", "remote.origin.promisor", "true"]);
    git(
        ws,
        &["config", "remote.origin.partialclonefilter", "blob:none"],
    );
    git(ws, &["config", "core.repositoryformatversion", "1"]);
    git(ws, &["config", "extensions.partialclone", "origin"]);
    for command in ["git show HEAD:a.txt", "git log -p", "git diff HEAD~0 HEAD"] {
        let out = rate(ws, command);
        assert!(
            out.starts_with("ask:") && out.contains("partial clone"),
            "{command}: {out}"
        );
    }
    let out = rate(ws, "git --no-lazy-fetch show HEAD:a.txt");
    assert!(out.starts_with("allow:"), "{out}");
}

#[test]
fn a_backslash_ending_a_comment_hides_no_key() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    // The reviewer's file: git ends a comment at the line's end, backslash or not, so the
    // next line sets `core.fsmonitor` (its `;` starts a comment: the value is `touch PWNED`).
    let config = ws.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[core]\n\tbare = false # \\\n\tfsmonitor = touch PWNED; false #\n");
    std::fs::write(&config, text).unwrap();
    let _ = git_run(ws, &["status"]);
    assert!(
        marker.exists(),
        "the layout does not run the fsmonitor under git"
    );
    std::fs::remove_file(&marker).unwrap();
    for command in ["git status", "git diff", "git log"] {
        let out = rate(ws, command);
        assert!(
            out.starts_with("ask:") && out.contains("core.fsmonitor"),
            "{command}: {out}"
        );
    }
}

/// A git directory `dir` (objects, refs, HEAD) whose `config` runs `touch MARKER` as its
/// fsmonitor: where the second round's layouts send git.
fn hostile_git_dir(dir: &Path, marker: &Path) {
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}; false\"\n",
        marker.display()
    );
    std::fs::write(dir.join("config"), config).unwrap();
}

/// Each `commondir` git follows but rein could not read plainly (a link, a large file, bytes
/// that are not UTF-8) makes git use another repository's configuration: rein asks.
#[test]
fn a_commondir_rein_cannot_read_plainly_asks() {
    use std::os::unix::ffi::OsStrExt;
    let cases: [(&str, &[u8], bool); 3] = [
        ("a link", b"../evil\n", true),
        ("a large file", b"", false),
        ("not UTF-8", b"../ev\xffil\n", false),
    ];
    for (what, text, link) in cases {
        let r = repo();
        let ws = r.path();
        let marker = ws.join("PWNED");
        let evil_name: &[u8] = if what == "not UTF-8" {
            b"ev\xffil"
        } else {
            b"evil"
        };
        let evil = ws.join(std::ffi::OsStr::from_bytes(evil_name));
        hostile_git_dir(&evil, &marker);
        let commondir = ws.join(".git/commondir");
        match (link, what) {
            (true, _) => {
                std::fs::write(ws.join(".git/cd_target"), text).unwrap();
                std::os::unix::fs::symlink("cd_target", &commondir).unwrap();
            }
            (false, "a large file") => {
                let big = format!("../evil{}", "\n".repeat(5000));
                std::fs::write(&commondir, big).unwrap();
            }
            _ => std::fs::write(&commondir, text).unwrap(),
        }
        std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
        let _ = git_run(ws, &["status"]);
        assert!(marker.exists(), "{what}: git does not run the program");
        for command in ["git status", "git diff", "git log -p"] {
            let out = rate(ws, command);
            assert!(out.starts_with("ask:"), "{what}, {command}: {out}");
        }
    }
}

/// git reads a `.git` file as `gitdir: ` and the rest of the line, spaces and all: rein
/// vets the directory git uses, not a trimmed name beside it.
#[test]
fn a_gitdir_line_with_spaces_names_the_directory_git_uses() {
    for (line, dir) in [("gitdir: good  \n", "good  "), ("gitdir:  g\n", " g")] {
        let r = repo();
        let ws = r.path();
        let marker = ws.join("PWNED");
        // The trimmed name is a harmless git directory; the one git uses runs the program.
        let trimmed = ws.join(dir.trim());
        std::fs::rename(ws.join(".git"), &trimmed).unwrap();
        git_run(&trimmed, &["config", "core.bare", "false"]);
        copy_dir(&trimmed, &ws.join(dir));
        let config = ws.join(dir).join("config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[core]\n\tfsmonitor = \"touch {}; false\"\n",
            marker.display()
        ));
        std::fs::write(&config, text).unwrap();
        std::fs::write(ws.join(".git"), line).unwrap();
        std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
        let _ = git_run(ws, &["status"]);
        assert!(marker.exists(), "{line:?}: git does not run the program");
        let out = rate(ws, "git status");
        assert!(out.starts_with("ask:"), "{line:?}: {out}");
    }
}

/// git expands `%(prefix)/` in `core.hooksPath` to its install prefix, so the hooks can be
/// anywhere: rein asks instead of looking under the work tree.
#[test]
fn a_hooks_path_git_expands_asks() {
    let r = repo();
    let ws = r.path();
    let marker = ws.join("PWNED");
    script(&ws.join("h/post-index-change"), &marker);
    let up = "../".repeat(12);
    let value = format!("%(prefix)/{up}{}", ws.join("h").display());
    git(ws, &["config", "core.hooksPath", &value]);
    std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
    let _ = git_run(ws, &["status"]);
    assert!(marker.exists(), "git does not run the hook");
    let out = rate(ws, "git status");
    assert!(
        out.starts_with("ask:") && out.contains("%(prefix)"),
        "{out}"
    );
}

/// Copies the directory tree `from` to `to` (files and directories only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
