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
    use std::process::{Command, Stdio};
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

    use crate::sandbox_e2e::{person_git, person_git_ok as git};

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
        heads_back(&w.ws);
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
        heads_back(&w.ws);
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

    /// `script` run by `rein sandbox -- bash` (from a file: no quoting in between), in the
    /// fallback when `fallback`; what rein said.
    fn sandboxed(w: &World, fallback: bool, name: &str, script: &str) -> String {
        let path = w.readable_dir("attacks").join(format!("{name}.sh"));
        std::fs::write(&path, format!("set -e\n{script}echo {name}-done\n")).unwrap();
        let mut c = rein(w, fallback);
        c.args(["sandbox", "--", "bash"]).arg(&path);
        let o = run_with_timeout(c, Duration::from_secs(120));
        assert_ok(&o);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("{name}-done")),
            "{}",
            stderr(&o)
        );
        stderr(&o)
    }

    /// Puts back every `HEAD` rein moved aside below `dir`: a `.git` file's git directory in
    /// the workspace is a folder git takes for one, vetted on its own (see `madegit`).
    fn heads_back(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == "HEAD.rein-unsafe" {
                std::fs::rename(&path, dir.join("HEAD")).unwrap();
            } else if entry.file_type().unwrap().is_dir() {
                heads_back(&path);
            }
        }
    }

    /// Moves each `dir/.git.rein-unsafe` back (asserting rein moved it there), then runs the
    /// person's `git status`: the oracle that what rein moved aside would have run.
    fn moved_back_it_runs(w: &World, dirs: &[&str], want: &[&str]) {
        heads_back(&w.ws);
        for dir in dirs {
            let d = w.ws.join(dir);
            std::fs::rename(d.join(".git.rein-unsafe"), d.join(".git")).unwrap();
        }
        git(w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(w), want);
    }

    /// `dir` becomes a submodule whose `.git` is a file naming `gitdir` (relative to the
    /// workspace; a bash word), followed by `tail` (bash commands writing more to it).
    fn gitfile_submodule(dir: &str, gitdir: &str, tag: &str, tail: &str) -> String {
        format!(
            "{}git add {dir}\nmv {dir}/.git {gitdir}\n\
             {{ printf 'gitdir: ../../%s' {gitdir}; {tail}; }} > {dir}/.git\n",
            new_repo(dir, ".", &fsmonitor(tag))
        )
    }

    /// A `.git` file git reads and rein read otherwise: padded with 5000 line breaks past
    /// rein's old 4096 bytes, naming a directory that is not UTF-8, or a name ending in a
    /// space (rein read it trimmed); and the workspace's own `.git` made as a padded file.
    fn gitfiles_read_as_git_reads_them(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let script = [
            gitfile_submodule(
                "v/pad",
                "hid-pad",
                "pad",
                "head -c 5000 /dev/zero | tr '\\0' '\\n'",
            ),
            gitfile_submodule("v/bytes", "\"$(printf 'hid-\\377')\"", "bytes", "true"),
            gitfile_submodule("v/space", "'hid-space '", "space", "true"),
            // rein used to vet the trimmed name: a clean repository there.
            "git init -q --bare hid-space\n".to_string(),
        ]
        .concat();
        let said = sandboxed(&w, fallback, "gitfiles", &script);
        let dirs = ["v/bytes", "v/pad", "v/space"];
        for dir in dirs {
            assert!(said.contains(&format!("`{dir}`")), "{dir}: {said}");
            assert!(w.ws.join(dir).join(".git.rein-unsafe").is_file(), "{dir}");
        }
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        moved_back_it_runs(&w, &dirs, &["PWN-bytes", "PWN-pad", "PWN-space"]);

        // The workspace's own repository, made as a padded `.git` file.
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        let script = format!(
            "git init -q . && {}\nmv .git hid-own\n\
             {{ printf 'gitdir: hid-own'; head -c 5000 /dev/zero | tr '\\0' '\\n'; }} > .git\n",
            fsmonitor("own")
        );
        let said = sandboxed(&w, fallback, "own", &script);
        assert!(
            said.contains("workspace's git repository") && said.contains("moved"),
            "{said}"
        );
        assert!(w.ws.join(".git.rein-unsafe").is_file());
        moved_back_it_runs(&w, &[""], &["PWN-own"]);
    }

    #[test]
    fn a_git_file_is_read_as_git_reads_it() {
        gitfiles_read_as_git_reads_them(false);
        gitfiles_read_as_git_reads_them(true);
    }

    /// A split index whose shared file a command took away (holding the submodule entry), put
    /// back by the next command: the first check fails closed, so the repository is moved aside.
    fn split_index_with_its_shared_file_away(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let first = format!(
            "{}git add v/l\ngit update-index --split-index\ngit update-index --split-index\n\
             S=$(cd .git && ls sharedindex.*)\nmv .git/$S keep-$S\n",
            new_repo("v/l", ".", &fsmonitor("split"))
        );
        let said = sandboxed(&w, fallback, "split-away", &first);
        let back = "S=$(ls | grep keep-sharedindex)\nmv $S .git/${S#keep-}\n";
        let said = said + &sandboxed(&w, fallback, "split-back", back);
        assert!(
            said.contains("`v/l`") && said.contains("core.fsmonitor"),
            "{said}"
        );
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        moved_back_it_runs(&w, &["v/l"], &["PWN-split"]);
    }

    #[test]
    fn a_split_index_whose_shared_file_is_away_fails_closed() {
        split_index_with_its_shared_file_away(false);
        split_index_with_its_shared_file_away(true);
    }

    /// With namespaces, the binds on a nested repository found before the first command move
    /// with its parent: a command renames `vendor/x` and makes a new repository at its path.
    #[test]
    fn a_new_repository_at_a_found_ones_path_is_vetted() {
        if !available(false) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        git(&w, &w.ws, &["init", "-q"]);
        w.write("vendor/x/y", "y\n");
        let x = w.ws.join("vendor/x");
        git(&w, &x, &["init", "-q"]);
        git(&w, &x, &["add", "y"]);
        git(&w, &x, &["commit", "-qm", "s"]);
        git(&w, &w.ws, &["add", "vendor/x"]);
        git(&w, &w.ws, &["commit", "-qm", "sub"]);
        let script = format!(
            "mv vendor/x vendor/x-old\n{}",
            new_repo("vendor/x", ".", &fsmonitor("renamed"))
        );
        let said = sandboxed(&w, false, "rename", &script);
        assert!(
            said.contains("`vendor/x`") && said.contains("core.fsmonitor"),
            "{said}"
        );
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        moved_back_it_runs(&w, &["vendor/x"], &["PWN-renamed"]);
    }

    /// An index rein cannot read (over its 256 MiB, padded with an extension git skips) and a
    /// submodule whose `.git` is a symlink: the walk that checks every nested repository
    /// follows the link as git does.
    fn symlinked_git_behind_an_unreadable_index(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let pad = w.readable_dir("attacks").join("pad-index.py");
        std::fs::write(
            &pad,
            "import hashlib\np='.git/index'\nbody=open(p,'rb').read()[:-20]\nn=257<<20\n\
             ext=b'Zzzz'+n.to_bytes(4,'big')\nh=hashlib.sha1(body+ext)\nz=bytes(1<<20)\n\
             for _ in range(257): h.update(z)\n\
             with open(p,'wb') as f:\n    f.write(body+ext)\n    f.seek(n,1)\n    f.write(h.digest())\n",
        )
        .unwrap();
        let script = format!(
            "{}git add v/l\nmv v/l/.git hidg\nln -s ../../hidg v/l/.git\npython3 {}\n",
            new_repo("v/l", ".", &fsmonitor("link")),
            pad.display()
        );
        let said = sandboxed(&w, fallback, "symlink", &script);
        assert!(
            said.contains("`v/l`") && said.contains("core.fsmonitor"),
            "{said}"
        );
        assert!(w.ws.join("v/l/.git.rein-unsafe").is_symlink());
        git(&w, &w.ws, &["status", "--short"]);
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        moved_back_it_runs(&w, &["v/l"], &["PWN-link"]);
    }

    #[test]
    fn a_symlinked_git_is_checked_when_the_index_cannot_be_read() {
        symlinked_git_behind_an_unreadable_index(false);
        symlinked_git_behind_an_unreadable_index(true);
    }

    /// One bash call each: a command made into a file (no quoting in between).
    fn bash_call(w: &World, name: &str, script: &str) -> Reply {
        let path = w.readable_dir("attacks").join(format!("{name}.sh"));
        std::fs::write(&path, format!("set -e\n{script}echo {name}-done\n")).unwrap();
        Reply::tool_call(
            "bash",
            json!({ "command": format!("bash {}", path.display()) }),
        )
    }

    /// Repositories no submodule entry names, in one session where no repository was: a new
    /// one deep in new folders, one made safe and given a program by a later command, and a
    /// folder made into a git directory (what `git init --bare` makes, given a work tree).
    /// The person's git in each folder (a prompt runs it on `cd`) runs nothing; moved back,
    /// each would have run its program. A plain one stays.
    fn repositories_made_anywhere(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        let bare = "git init -q --bare x && cd x && git config core.bare false && git config \
                    core.worktree .. && git config core.fsmonitor 'touch \"$HOME/PWN-bare\"; false #'\n";
        s.push(bash_call(
            &w,
            "first",
            &[
                new_repo("a/b/c", ".", &fsmonitor("deep")),
                new_repo("lib", ".", "true"),
                new_repo(
                    "plain",
                    ".",
                    "git remote add origin https://example.com/p.git",
                ),
            ]
            .concat(),
        ))
        .push(bash_call(
            &w,
            "second",
            &format!("cd lib && {}\n", fsmonitor("later")),
        ))
        .push(bash_call(&w, "third", bare))
        .push(Reply::text("done"));
        let mut c = rein(&w, fallback);
        c.args(["exec", "--yes", "go"]);
        let o = run_with_timeout(c, Duration::from_secs(90));
        assert_ok(&o);
        let said: Vec<String> = (1..=3)
            .map(|i| last_result(&s.request(i)).content)
            .collect();
        assert!(
            said[0].contains("`a/b/c`") && !said[0].contains("`lib`"),
            "{}",
            said[0]
        );
        assert!(
            said[1].contains("`lib`") && said[1].contains("core.fsmonitor"),
            "{}",
            said[1]
        );
        assert!(
            said[2].contains("`x`") && said[2].contains("core.worktree"),
            "{}",
            said[2]
        );
        assert!(!said.concat().contains("`plain`"), "{said:?}");
        let status = |dir: &str| git(&w, &w.ws.join(dir), &["status", "--short"]);
        // Where rein moved `.git` aside, the person's git finds no repository there.
        for dir in ["a/b/c", "lib", "x", "plain"] {
            person_git_in(&w, &w.ws.join(dir));
        }
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        assert!(w.ws.join("plain/.git/config").is_file());
        // The oracle: what rein moved aside would have run in the person's git there.
        assert!(w.ws.join("x/HEAD.rein-unsafe").is_file());
        heads_back(&w.ws);
        for dir in ["a/b/c", "lib"] {
            let d = w.ws.join(dir);
            std::fs::rename(d.join(".git.rein-unsafe"), d.join(".git")).unwrap();
            status(dir);
        }
        status("x");
        assert_eq!(payloads(&w), ["PWN-bare", "PWN-deep", "PWN-later"]);
    }

    #[test]
    fn a_repository_made_anywhere_in_the_workspace_is_vetted() {
        repositories_made_anywhere(false);
    }

    #[test]
    fn a_repository_made_anywhere_in_the_workspace_is_vetted_in_the_fallback() {
        repositories_made_anywhere(true);
    }

    /// The person's own Mercurial: `REIN_TEST_HG`, else `hg` on `PATH`, else the pinned one
    /// `.ci/setup-hg.sh` installs from PyPI on first use (as the MCP servers and the local
    /// model are); `None` (a visible skip) when none can be had.
    fn person_hg() -> Option<std::path::PathBuf> {
        let runs = |hg: &Path| {
            Command::new(hg)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if let Some(hg) = std::env::var_os("REIN_TEST_HG").map(std::path::PathBuf::from) {
            return Some(hg).filter(|hg| runs(hg)).or_else(|| {
                crate::support::skips::skip(
                    "sandbox_escape Mercurial",
                    "REIN_TEST_HG does not run",
                );
                None
            });
        }
        if runs(Path::new("hg")) {
            return Some("hg".into());
        }
        let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/setup-hg.sh");
        let installed = Command::new("bash")
            .arg(&setup)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .filter(|hg| runs(hg));
        if installed.is_none() {
            crate::support::skips::skip(
                "sandbox_escape Mercurial",
                "no hg, and .ci/setup-hg.sh could not install it (python3 venv and PyPI needed)",
            );
        }
        installed
    }

    /// `hg status` in `dir` as the person, with the world's `HOME`.
    fn hg_status(hg: &Path, w: &World, dir: &Path) {
        let o = Command::new(hg)
            .args(["status"])
            .current_dir(dir)
            .env("HOME", &w.home)
            .env("HGRCPATH", "")
            .output()
            .expect("hg");
        assert!(
            o.status.success(),
            "hg status: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// A workspace that is a Mercurial repository: a command gives its `.hg/hgrc` a hook and
    /// makes a new repository with another in a subfolder. The person's `hg status` (which
    /// runs `pre-status` hooks) in either runs nothing; the workspace's configuration is put
    /// back, the new repository moved aside; with the command's versions, both would run.
    fn mercurial_repositories(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let Some(hg) = person_hg() else { return };
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        let init = |dir: &Path| {
            let o = Command::new(&hg)
                .arg("init")
                .arg(dir)
                .env("HOME", &w.home)
                .output()
                .expect("hg");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        init(&w.ws);
        let own = "[ui]\nusername = p\n";
        std::fs::write(w.ws.join(".hg/hgrc"), own).unwrap();
        let template = w.readable_dir("hg-template").join("t");
        init(&template);
        let hook = |tag: &str| format!("[hooks]\npre-status = touch \"$HOME/PWN-{tag}\"\n");
        let script = format!(
            "printf '%s' '{}' >> .hg/hgrc\nmkdir sub\ncp -r {}/.hg sub/.hg\n\
             printf '%s' '{}' > sub/.hg/hgrc\n",
            hook("hg-own"),
            template.display(),
            hook("hg-new")
        );
        let said = sandboxed(&w, fallback, "mercurial", &script);
        assert!(
            said.contains("`.hg`") && said.contains("put it back"),
            "{said}"
        );
        assert!(
            said.contains("`sub/.hg`") && said.contains("[hooks]"),
            "{said}"
        );
        assert_eq!(std::fs::read_to_string(w.ws.join(".hg/hgrc")).unwrap(), own);
        hg_status(&hg, &w, &w.ws);
        hg_status(&hg, &w, &w.ws.join("sub"));
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        // The oracle: the command's versions would have run in the person's hg.
        std::fs::rename(w.ws.join(".hg/hgrc.rein-unsafe"), w.ws.join(".hg/hgrc")).unwrap();
        let sub = w.ws.join("sub");
        std::fs::rename(sub.join(".hg.rein-unsafe"), sub.join(".hg")).unwrap();
        hg_status(&hg, &w, &w.ws);
        hg_status(&hg, &w, &sub);
        assert_eq!(payloads(&w), ["PWN-hg-new", "PWN-hg-own"]);
    }

    #[test]
    fn mercurial_repositories_run_nothing_in_the_persons_hg() {
        mercurial_repositories(false);
        mercurial_repositories(true);
    }

    /// Without read-only binds (the fallback), a command deletes the person's nested `.git`
    /// and makes folders until a new `.git` elsewhere gets its inode number (ext4 hands the
    /// freed one out again), then gives that repository a program. rein tells it from the
    /// person's (the inode's generation differs) and moves it aside; moved back, the person's
    /// `git status` there would run it. Only where the number came back (else nothing to see).
    #[test]
    fn a_git_folder_given_the_inode_of_the_persons_is_judged_all_the_same() {
        if !available(true) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        git(&w, &w.ws, &["init", "-q", "lib"]);
        let script = format!(
            "INO=$(stat -c %i lib/.git)\nmkdir n\nrm -rf lib/.git\n\
             for i in $(seq 500); do mkdir n/.git; [ \"$(stat -c %i n/.git)\" = \"$INO\" ] && break; \
             mv n/.git n/x$i; done\n\
             if [ \"$(stat -c %i n/.git)\" = \"$INO\" ]; then touch reused; fi\n\
             (cd n && git init -q . && {})\n",
            fsmonitor("reused")
        );
        sandboxed(&w, true, "reused-inode", &script);
        if !w.ws.join("reused").exists() {
            return;
        }
        assert!(
            w.ws.join("n/.git.rein-unsafe").is_dir() && !w.ws.join("n/.git").exists(),
            "the new repository was taken for the person's"
        );
        person_git_in(&w, &w.ws.join("n"));
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        heads_back(&w.ws.join("n"));
        git_back(&w.ws.join("n"));
        person_git_in(&w, &w.ws.join("n"));
        assert_eq!(payloads(&w), ["PWN-reused"]);
    }

    /// In the fallback, a command deletes the workspace's `.git` and makes folders until one
    /// gets its inode number, at the top of the workspace: rein does not take that folder for
    /// the `.git` the command renamed, so it is not moved into its place.
    #[test]
    fn a_folder_given_the_number_of_the_deleted_git_is_not_moved_back_as_git() {
        if !available(true) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let script = "INO=$(stat -c %i .git)\nmkdir made\nrm -rf .git\n\
             for i in $(seq 500); do mkdir made/d$i; \
             if [ \"$(stat -c %i made/d$i)\" = \"$INO\" ]; then mv made/d$i lookalike; \
             touch made/reused; break; fi; done\n";
        sandboxed(&w, true, "lookalike", script);
        if !w.ws.join("made/reused").exists() {
            // The number did not come back here: nothing to see.
            return;
        }
        assert!(
            w.ws.join("lookalike").is_dir(),
            "the folder was moved into the place of .git"
        );
    }

    /// A Mercurial repository whose `.hg/hgrc` includes a team's file (`%include
    /// ../team.hgrc`): the workspace itself, or (`nested`) a repository `lib` in it including
    /// the workspace's file (`%include ../../team.hgrc`, outside its own tree). A command gives
    /// that file a `pre-status` hook, in place and by swapping it. The person's `hg status`
    /// runs nothing; the file is as it was. With the command's version, it would run.
    fn mercurial_includes(fallback: bool, nested: bool) {
        if !available(fallback) {
            return;
        }
        let Some(hg) = person_hg() else { return };
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        let (repo, include) = match nested {
            true => (w.ws.join("lib"), "../../team.hgrc"),
            false => (w.ws.clone(), "../team.hgrc"),
        };
        let o = Command::new(&hg)
            .arg("init")
            .arg(&repo)
            .env("HOME", &w.home)
            .output()
            .expect("hg");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(
            repo.join(".hg/hgrc"),
            format!("[ui]\nusername = p\n%include {include}\n"),
        )
        .unwrap();
        let team = "[ui]\nverbose = false\n";
        w.write("team.hgrc", team);
        let hook = |tag: &str| format!("[hooks]\npre-status = touch \"$HOME/PWN-{tag}\"\n");
        let script = format!(
            "printf '%s' '{}' >> team.hgrc || true\n\
             (mv team.hgrc team.old && printf '%s' '{}' > team.hgrc) || true\n",
            hook("appended"),
            hook("swapped")
        );
        sandboxed(&w, fallback, "hg-include", &script);
        assert_eq!(w.read("team.hgrc").as_deref(), Some(team));
        hg_status(&hg, &w, &repo);
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        // The oracle: the command's version would have run in the person's hg.
        w.write("team.hgrc", &hook("included"));
        hg_status(&hg, &w, &repo);
        assert_eq!(payloads(&w), ["PWN-included"]);
    }

    #[test]
    fn files_mercurial_includes_run_nothing_in_the_persons_hg() {
        mercurial_includes(false, false);
        mercurial_includes(true, false);
    }

    #[test]
    fn files_a_nested_mercurial_repository_includes_run_nothing_in_the_persons_hg() {
        mercurial_includes(false, true);
        mercurial_includes(true, true);
    }

    /// Runs the person's `git status` in `dir`, whatever it says.
    fn person_git_in(w: &World, dir: &Path) {
        person_git(w, dir, &["status", "--short"]);
    }

    /// Renames the directory or link rein moved `dir/.git` to (any `.git.rein-unsafe*` name that
    /// is not a plain file) back to `.git`.
    fn git_back(dir: &Path) {
        let aside = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".git.rein-unsafe")
                    && !e.file_type().unwrap().is_file()
            })
            .unwrap_or_else(|| panic!("nothing moved aside in {}", dir.display()));
        std::fs::rename(aside.path(), dir.join(".git")).unwrap();
    }

    /// The third review's attacks on the look after each command, in one session: the names
    /// rein moves to taken first; a `.git` link to nothing, filled by a later command inside
    /// the workspace's `.git/objects`; a folder whose name is not UTF-8; a repository built in
    /// `.git/objects` and reached through a link; a moved-aside `.git` the person looks into;
    /// a configuration that is a link; a folder made unreadable, and one read-only (both only
    /// bite a non-root user: CI runs this suite as one too); and the person's own repository
    /// renamed by a command, which stays theirs.
    fn attacks_on_the_look(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        git(&w, &w.ws, &["init", "-q", "lib"]);
        let hook = w.ws.join("lib/.git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let z = "Z=.git/objects/zz; mkdir -p $Z/objects $Z/refs && echo 'ref: refs/heads/main' > \
                 $Z/HEAD && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n' > $Z/config && \
                 git config -f $Z/config core.fsmonitor 'touch \"$HOME/PWN-dangling\"; false #'\n";
        let first = [
            "mkdir d1 && (cd d1 && touch .git.rein-unsafe && for i in $(seq 2 99); do touch \
             .git.rein-unsafe-$i; done)\n"
                .to_string(),
            new_repo("d1", ".", &fsmonitor("decoy")),
            "mkdir sub && ln -s ../.git/objects/zz sub/.git\n".to_string(),
            "D=$(printf '\\377')\n".to_string(),
            new_repo("\"$D/r\"", ".", &fsmonitor("utf8")),
            "ln -s \"$D/r\" tools-utf8\n".to_string(),
            new_repo(".git/objects/zy/r", ".", &fsmonitor("objdir")),
            "ln -s .git/objects/zy/r tools-obj\n".to_string(),
            new_repo(
                "bad",
                ".",
                &format!("git config core.worktree .. && {}", fsmonitor("aside")),
            ),
            new_repo(
                "lnk",
                ".",
                "mv .git/config ../notes.cfg && ln -s ../../notes.cfg .git/config",
            ),
            new_repo("xo/r", ".", &fsmonitor("xonly")),
            "ln -s xo/r tools-x && chmod 111 xo\nmv lib lib2\n".to_string(),
            new_repo(
                "ro",
                ".",
                &format!("{} && chmod 555 .", fsmonitor("readonly")),
            ),
        ]
        .concat();
        s.push(bash_call(&w, "first", &first))
            .push(bash_call(&w, "second", z))
            .push(Reply::text("done"));
        let mut c = rein(&w, fallback);
        c.args(["exec", "--yes", "go"]);
        let o = run_with_timeout(c, Duration::from_secs(90));
        assert_ok(&o);
        let said = format!(
            "{}\n{}",
            last_result(&s.request(1)).content,
            last_result(&s.request(2)).content
        );
        for dir in [
            "d1",
            "sub",
            "tools-obj",
            "bad",
            "lnk",
            "tools-x",
            "tools-utf8",
            "lib2",
        ] {
            person_git_in(&w, &w.ws.join(dir));
        }
        person_git_in(&w, &w.ws.join("bad/.git.rein-unsafe"));
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran: {said}");
        for shown in [
            "`d1`",
            "`sub`",
            "`.git/objects/zy/r`",
            "`bad`",
            "`lnk`",
            "`xo/r`",
        ] {
            assert!(said.contains(shown), "{shown}: {said}");
        }
        assert!(said.contains("symbolic link"), "{said}");
        assert!(
            !said.contains("`lib2`"),
            "the person's repository was moved: {said}"
        );
        assert!(w.ws.join("lib2/.git/hooks/pre-commit").is_file());
        // The oracle: put back, each would have run in the person's git there.
        heads_back(&w.ws);
        for dir in ["d1", "sub", "bad", ".git/objects/zy/r", "xo/r", "ro"] {
            git_back(&w.ws.join(dir));
        }
        let utf8 = std::fs::canonicalize(w.ws.join("tools-utf8")).unwrap();
        git_back(&utf8);
        for dir in [
            "d1",
            "sub",
            "tools-obj",
            "bad",
            "tools-x",
            "tools-utf8",
            "ro",
        ] {
            person_git_in(&w, &w.ws.join(dir));
        }
        let want = [
            "decoy", "dangling", "objdir", "aside", "xonly", "utf8", "readonly",
        ];
        let mut want: Vec<String> = want.iter().map(|t| format!("PWN-{t}")).collect();
        want.sort();
        assert_eq!(payloads(&w), want);
    }

    #[test]
    fn the_look_after_each_command_holds_against_the_third_review() {
        attacks_on_the_look(false);
    }

    #[test]
    fn the_look_after_each_command_holds_against_the_third_review_in_the_fallback() {
        attacks_on_the_look(true);
    }

    /// Across sessions: a plain repository whose `.git` file names a git directory inside the
    /// workspace's `.git/objects` (the next session takes it for the person's), given a program
    /// by a command of the next session: the git directory loses its `HEAD`.
    #[test]
    fn a_git_directory_in_the_workspaces_objects_is_looked_at_in_the_next_session() {
        if !available(false) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let first = "Z=.git/objects/zz; mkdir -p $Z/objects $Z/refs sub && echo 'ref: refs/heads/main' \
                     > $Z/HEAD && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n' > \
                     $Z/config && echo 'gitdir: ../.git/objects/zz' > sub/.git\n";
        let said = sandboxed(&w, false, "session1", first);
        assert!(!said.contains("moved"), "{said}");
        let second = "git config -f .git/objects/zz/config core.fsmonitor 'touch \"$HOME/PWN-next\"; false #'\n";
        let said = sandboxed(&w, false, "session2", second);
        assert!(said.contains("`.git/objects/zz`"), "{said}");
        person_git_in(&w, &w.ws.join("sub"));
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran");
        heads_back(&w.ws);
        person_git_in(&w, &w.ws.join("sub"));
        assert_eq!(payloads(&w), ["PWN-next"]);
    }

    /// `rein sandbox` stopped by `SIGTERM` (`timeout`) or `SIGHUP`: the command is stopped,
    /// and the checks after it still run (here the one that moves aside a repository it made
    /// with a program in it); both mechanisms.
    #[test]
    fn rein_sandbox_stopped_by_a_signal_still_checks_what_the_command_left() {
        for (fallback, signal, tag) in [
            (false, libc::SIGTERM, "30.4714"),
            (true, libc::SIGHUP, "30.4715"),
        ] {
            if !available(fallback) {
                continue;
            }
            let s = ScriptedServer::openai();
            let w = World::new(&s);
            let script = format!(
                "git init -q x && git -C x config core.fsmonitor 'touch \"$HOME/PWN\"; false #' && \
                 touch started && sleep {tag}"
            );
            let mut c = rein(&w, fallback);
            c.args(["sandbox", "--", "bash", "-c", &script])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let child = c.spawn().unwrap();
            let started = w.ws.join("started");
            crate::support::pty::wait_until("the command", Duration::from_secs(20), || {
                started.exists()
            });
            unsafe { libc::kill(child.id() as i32, signal) };
            let o = child.wait_with_output().unwrap();
            let ps = Command::new("pgrep")
                .args(["-f", &format!("^sleep {tag}$")])
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
                "sleep {tag} still running"
            );
            assert!(
                w.ws.join("x/.git.rein-unsafe").exists() && !w.ws.join("x/.git").exists(),
                "signal {signal}, fallback {fallback}: no check ran: {}",
                stderr(&o)
            );
        }
    }

    /// The fourth review's: repositories where the walk does not go, reached through a link a
    /// command made: inside a new `.hg`, in the `modules` of a repository the command made,
    /// inside what rein moved aside, and one built there by a later command behind a link
    /// made first (to nothing yet). Each is judged where the link leads.
    fn attacks_through_links(fallback: bool) {
        if !available(fallback) {
            return;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        persons_repo(&w);
        let first = [
            new_repo("bad", ".", &fsmonitor("bad")),
            "mkdir -p h/.hg\n".to_string(),
            new_repo("h/.hg/r", ".", &fsmonitor("hg-inside")),
            "ln -s h/.hg/r tools-hg\n".to_string(),
            "git init -q y\n".to_string(),
            new_repo("y/.git/modules/m", ".", &fsmonitor("modules")),
            "ln -s y/.git/modules/m tools-mod\n".to_string(),
        ]
        .concat();
        let second = [
            new_repo("bad/.git.rein-unsafe/r", ".", &fsmonitor("in-aside")),
            "ln -s bad/.git.rein-unsafe/r tools-aside\n".to_string(),
            "ln -s bad/.git.rein-unsafe/late tools-late\n".to_string(),
        ]
        .concat();
        let third = new_repo("bad/.git.rein-unsafe/late", ".", &fsmonitor("late"));
        s.push(bash_call(&w, "first", &first))
            .push(bash_call(&w, "second", &second))
            .push(bash_call(&w, "third", &third))
            .push(Reply::text("done"));
        let mut c = rein(&w, fallback);
        c.args(["exec", "--yes", "go"]);
        let o = run_with_timeout(c, Duration::from_secs(90));
        assert_ok(&o);
        let said: String = (1..=3)
            .map(|i| last_result(&s.request(i)).content + "\n")
            .collect();
        let tools = ["tools-hg", "tools-mod", "tools-aside", "tools-late"];
        for dir in tools {
            person_git_in(&w, &w.ws.join(dir));
        }
        assert_eq!(payloads(&w), Vec::<String>::new(), "a payload ran: {said}");
        // The oracle: put back, each would have run in the person's git there.
        heads_back(&w.ws);
        for dir in tools {
            let real = std::fs::canonicalize(w.ws.join(dir)).unwrap();
            git_back(&real);
            person_git_in(&w, &w.ws.join(dir));
        }
        assert_eq!(
            payloads(&w),
            ["PWN-hg-inside", "PWN-in-aside", "PWN-late", "PWN-modules"]
        );
    }

    #[test]
    fn repositories_reached_through_links_are_judged_where_the_links_lead() {
        attacks_through_links(false);
        attacks_through_links(true);
    }
}
