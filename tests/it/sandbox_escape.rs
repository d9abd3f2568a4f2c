//! Escapes from the sandbox with namespaces (what rein uses where the kernel allows): one
//! end-to-end test per class through the real `rein exec --yes`. See `sandbox_e2e`.
#![cfg(target_os = "linux")]

use crate::sandbox_e2e;

use sandbox_e2e::Mode;

sandbox_classes!(Mode::Namespaces);

/// Repositories a command makes where the person's own git goes by itself, and `PATH`
/// entries that mean the command's directory: through the real binary, with namespaces and
/// in the fallback.
mod made_in_the_session {
    use crate::support::rein::{World, assert_ok, last_result, rein_bin, run_with_timeout, stderr};
    use crate::support::{Reply, ScriptedServer};
    use rein::config::SandboxMode;
    use rein::sandbox::{Mechanism, Sandbox, SandboxStatus};
    use serde_json::json;
    use std::path::Path;
    use std::process::{Command, Output, Stdio};
    use std::time::Duration;

    /// Whether rein gets the mechanism here (the fallback when `fallback`); says why not.
    fn available(fallback: bool) -> bool {
        let dir = std::env::temp_dir();
        let (sb, want) = match fallback {
            false => (
                Sandbox::new(SandboxMode::WorkspaceWrite, false, dir.clone(), dir),
                Mechanism::Namespaces,
            ),
            true => (
                Sandbox::without_namespaces(SandboxMode::WorkspaceWrite, false, dir.clone(), dir),
                Mechanism::LandlockOnly,
            ),
        };
        let ready = sb.status() == &SandboxStatus::Enforced && sb.mechanism() == want;
        if !ready {
            assert!(
                std::env::var_os("REIN_SANDBOX_TESTS_REQUIRED").is_none(),
                "not available here: {:?}",
                sb.status()
            );
            eprintln!("SKIPPED: not available here: {:?}", sb.status());
        }
        ready
    }

    /// `rein` in the world's workspace, in the fallback when `fallback`.
    fn rein(w: &World, fallback: bool) -> Command {
        let mut c = Command::new(rein_bin());
        c.env_clear()
            .current_dir(&w.ws)
            .envs(w.env_vars())
            .stdin(Stdio::null());
        if fallback {
            c.env("REIN_SANDBOX_FALLBACK", "1");
        }
        c
    }

    /// The person's own git in `dir`, outside any sandbox, with the world's `HOME`.
    fn git(w: &World, dir: &Path, args: &[&str]) -> Output {
        let o = Command::new("git")
            .args(["-c", "user.name=p", "-c", "user.email=p@example.com"])
            .args(args)
            .current_dir(dir)
            .env("HOME", &w.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// The person's repository: one commit, and a submodule entry at `vendor/pre` with
    /// nothing checked out (as a hostile clone's history can hold).
    fn persons_repo(w: &World) {
        git(w, &w.ws, &["init", "-q"]);
        w.write("README", "hi\n");
        let commit = "0123456789abcdef0123456789abcdef01234567";
        git(w, &w.ws, &["add", "README"]);
        let entry = format!("160000,{commit},vendor/pre");
        git(w, &w.ws, &["update-index", "--add", "--cacheinfo", &entry]);
        git(w, &w.ws, &["commit", "-qm", "first"]);
    }

    /// A new repository in `dir` with one commit, whose configuration then gets `extra`.
    fn new_repo(dir: &str, init: &str, extra: &str) -> String {
        format!(
            "mkdir -p {dir} && (cd {dir} && git init -q {init} && echo x > f && git add f && \
             git -c user.name=a -c user.email=a@b commit -qm s && {extra})\n"
        )
    }

    /// What runs the payload named `tag` on `git status` there.
    fn fsmonitor(tag: &str) -> String {
        format!("git config core.fsmonitor 'touch \"$HOME/PWN-{tag}\"; false #'")
    }

    /// The attack as one script: a new repository staged as a submodule (the report's), a
    /// `.git` made where the index already has a submodule, a `.git` file naming a directory
    /// of the workspace; and a plain clone-like repository, which must stay.
    fn attack(w: &World) -> String {
        let body = [
            new_repo("vendor/lib", ".", &fsmonitor("staged")),
            "git add vendor/lib\n".to_string(),
            new_repo("vendor/pre", ".", &fsmonitor("present")),
            "mkdir -p meta\n".to_string(),
            new_repo(
                "vendor/file",
                "--separate-git-dir ../../meta/g .",
                &fsmonitor("file"),
            ),
            "git add vendor/file\n".to_string(),
            new_repo(
                "vendor/clean",
                ".",
                "git config user.name a && git remote add origin https://example.com/c.git",
            ),
            "git add vendor/clean\necho attack-done\n".to_string(),
        ]
        .concat();
        let dir = w.readable_dir("attacks");
        let path = dir.join("gitlinks.sh");
        std::fs::write(&path, format!("set -e\n{body}")).unwrap();
        format!("bash {}", path.display())
    }

    /// The payloads that ran in the person's git (files `PWN-*` in the world's home).
    fn payloads(w: &World) -> Vec<String> {
        let mut ran: Vec<String> = std::fs::read_dir(&w.home)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("PWN-"))
            .collect();
        ran.sort();
        ran
    }

    /// After the attack: the three repositories were moved aside, with a note each, the plain
    /// one stays; the person's `git status` runs nothing. Moved back, they would have run.
    fn nothing_runs_in_the_persons_git_status(w: &World, said: &str) {
        let status = git(w, &w.ws, &["status", "--short"]);
        assert!(String::from_utf8_lossy(&status.stdout).contains("vendor/lib"));
        assert_eq!(payloads(w), Vec::<String>::new(), "a payload ran");
        for dir in ["vendor/lib", "vendor/pre", "vendor/file"] {
            assert!(
                said.contains(&format!("`{dir}`")) && said.contains("core.fsmonitor"),
                "{dir}: {said}"
            );
            assert!(!w.ws.join(dir).join(".git").exists(), "{dir}/.git stayed");
            assert!(w.ws.join(dir).join(".git.rein-unsafe").exists(), "{dir}");
        }
        assert!(!said.contains("`vendor/clean`"), "{said}");
        assert!(w.ws.join("vendor/clean/.git/config").is_file());
        // The oracle: what rein moved aside would have run.
        for dir in ["vendor/lib", "vendor/pre", "vendor/file"] {
            let d = w.ws.join(dir);
            std::fs::rename(d.join(".git.rein-unsafe"), d.join(".git")).unwrap();
        }
        git(w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(w), ["PWN-file", "PWN-present", "PWN-staged"]);
    }

    fn through_exec(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        s.push(Reply::tool_call("bash", json!({ "command": attack(&w) })))
            .push(Reply::text("done"));
        let mut c = rein(&w, fallback);
        c.args(["exec", "--yes", "go"]);
        let o = run_with_timeout(c, Duration::from_secs(90));
        assert_ok(&o);
        let result = last_result(&s.request(1)).content;
        assert!(result.contains("attack-done"), "{result}");
        nothing_runs_in_the_persons_git_status(&w, &result);
    }

    fn through_rein_sandbox(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let command = attack(&w);
        let mut c = rein(&w, fallback);
        c.args(["sandbox", "--", "bash", "-c", &command]);
        let o = run_with_timeout(c, Duration::from_secs(60));
        assert_ok(&o);
        nothing_runs_in_the_persons_git_status(&w, &stderr(&o));
    }

    #[test]
    fn a_repository_made_where_the_persons_git_goes_is_moved_aside() {
        through_exec(false);
    }

    #[test]
    fn a_repository_made_where_the_persons_git_goes_is_moved_aside_in_the_fallback() {
        through_exec(true);
    }

    #[test]
    fn a_repository_made_where_the_persons_git_goes_is_moved_aside_by_rein_sandbox() {
        through_rein_sandbox(false);
        through_rein_sandbox(true);
    }

    /// Started where there is no repository yet, a command makes the workspace's own (as "set
    /// up a new project" does) and plants a program in its configuration: moved aside, as the
    /// person's next `git status` there would run it; a plain `git init` stays.
    fn own_repository_made_by_a_command(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        assert!(!w.ws.join(".git").exists());
        let run = |command: &str| {
            let mut c = rein(&w, fallback);
            c.args(["sandbox", "--", "bash", "-c", command]);
            let o = run_with_timeout(c, Duration::from_secs(60));
            assert_ok(&o);
            stderr(&o)
        };
        let said = run(&format!("git init -q . && {}", fsmonitor("own")));
        assert!(
            said.contains("workspace's git repository") && said.contains("core.fsmonitor"),
            "{said}"
        );
        assert!(w.ws.join(".git.rein-unsafe/config").is_file());
        assert!(!w.ws.join(".git").exists());
        // The oracle: moved back, the person's git would have run it.
        std::fs::rename(w.ws.join(".git.rein-unsafe"), w.ws.join(".git")).unwrap();
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), ["PWN-own"]);

        std::fs::remove_dir_all(w.ws.join(".git")).unwrap();
        std::fs::remove_file(w.home.join("PWN-own")).unwrap();
        let said = run("git init -q . && git config user.name a && echo x > f && git add f");
        assert!(!said.contains("moved"), "{said}");
        assert!(w.ws.join(".git/config").is_file());
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), Vec::<String>::new());
    }

    #[test]
    fn the_workspaces_own_repository_made_by_a_command_is_vetted() {
        own_repository_made_by_a_command(false);
        own_repository_made_by_a_command(true);
    }

    /// The person's `PATH` starts with `node_modules/.bin` and an empty entry (both mean the
    /// command's directory): the model's `rg` and `ls` are the system's, never the repository's.
    fn relative_path_entries(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        for (file, tag) in [("node_modules/.bin/rg", "NODE"), ("ls", "EMPTY")] {
            w.write(file, &format!("#!/bin/sh\necho PLANTED-{tag}\n"));
            let p = w.ws.join(file);
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        s.push(Reply::tool_call(
            "bash",
            json!({ "command": "rg foo; ls; echo path-done" }),
        ))
        .push(Reply::text("done"));
        let mut c = rein(&w, fallback);
        let path = format!(
            "node_modules/.bin::{}",
            std::env::var("PATH").unwrap_or_default()
        );
        c.env("PATH", path).args(["exec", "--yes", "go"]);
        let o = run_with_timeout(c, Duration::from_secs(60));
        assert_ok(&o);
        let result = last_result(&s.request(1)).content;
        assert!(result.contains("path-done"), "{result}");
        assert!(
            !result.contains("PLANTED"),
            "a planted program ran: {result}"
        );
        assert!(result.contains("node_modules"), "the real ls ran: {result}");
    }

    #[test]
    fn relative_path_entries_never_reach_commands() {
        relative_path_entries(false);
    }

    #[test]
    fn relative_path_entries_never_reach_commands_in_the_fallback() {
        relative_path_entries(true);
    }
}
