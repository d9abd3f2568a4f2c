//! Attacks on the sandbox through the real binary: `rein exec --yes` against the scripted
//! model server, where the model asks for the attack command. `--yes` approves everything, so
//! what is tested is the sandbox, not the approval. Each class runs in both mechanisms (with
//! namespaces: `sandbox_escape.rs`; forced fallback without them: `sandbox_fallback.rs`).
//!
//! The oracles are what must never happen: a payload outside the workspace that runs, a secret
//! value in anything sent to the model or stored, a process alive after the call, a write
//! outside, a terminal reached.

use crate::support::rein::{SentResult, World, assert_ok, last_result, run_with_timeout};
use crate::support::{Gate, Reply, ScriptedServer};
use rein::config::SandboxMode;
use rein::sandbox::{Mechanism, Sandbox, SandboxStatus};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod reach;
pub use reach::*;

/// Which confinement rein is made to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Private namespaces (what the kernel offers here).
    Namespaces,
    /// `REIN_SANDBOX_FALLBACK=1`: Landlock, seccomp and the tripwire only.
    Fallback,
    /// Namespaces, each command forked from rein instead of started by the zygote
    /// (`REIN_SANDBOX_ZYGOTE=0`, rein's way when its zygote cannot run).
    Forked,
}

impl Mode {
    /// Whether this machine can run the mode; prints why not (the test then returns) unless
    /// `REIN_SANDBOX_TESTS_REQUIRED` is set, which makes it a failure.
    fn ready(self) -> bool {
        let dir = std::env::temp_dir();
        let sb = match self {
            Mode::Namespaces | Mode::Forked => {
                Sandbox::new(SandboxMode::WorkspaceWrite, false, dir.clone(), dir)
            }
            Mode::Fallback => {
                Sandbox::without_namespaces(SandboxMode::WorkspaceWrite, false, dir.clone(), dir)
            }
        };
        let want = match self {
            Mode::Namespaces | Mode::Forked => Mechanism::Namespaces,
            Mode::Fallback => Mechanism::LandlockOnly,
        };
        if sb.status() == &SandboxStatus::Enforced && sb.mechanism() == want {
            return true;
        }
        assert!(
            std::env::var_os("REIN_SANDBOX_TESTS_REQUIRED").is_none(),
            "{self:?} is not available here: {:?} {:?}",
            sb.status(),
            sb.mechanism()
        );
        eprintln!("SKIPPED: {self:?} is not available here: {:?}", sb.status());
        false
    }

    /// The scripted server and a temp world, when the mode is available here.
    fn world(self) -> Option<(ScriptedServer, World)> {
        if !self.ready() {
            return None;
        }
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        Some((s, w))
    }

    fn env(self, c: &mut Command) {
        match self {
            Mode::Namespaces => {}
            Mode::Fallback => {
                c.env("REIN_SANDBOX_FALLBACK", "1");
            }
            Mode::Forked => {
                c.env(rein::sandbox::zygote::SWITCH, "0");
            }
        }
    }
}

pub use crate::support::rein::rein_bin;

/// `rein` in `w` with its clean environment, in `mode`.
fn rein(w: &World, mode: Mode) -> Command {
    let mut c = Command::new(rein_bin());
    c.env_clear()
        .current_dir(&w.ws)
        .envs(w.env_vars())
        .stdin(Stdio::null());
    mode.env(&mut c);
    c
}

/// `rein exec --yes <prompt>` to completion.
fn exec(mut c: Command) -> Output {
    c.args(["exec", "--yes", "go"]);
    let o = run_with_timeout(c, Duration::from_secs(90));
    assert_ok(&o);
    o
}

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// The last line every attack script prints, to tell that it really ran.
const DONE: &str = "attack-script-done";

/// A tool call running `body` as a script file: what the permission layer makes of a command
/// line is not under test here (it refuses `rm` and `chmod` outright), the sandbox is.
fn script(w: &World, body: &str) -> Reply {
    let dir = w.readable_dir("attacks");
    let path = dir.join(format!("{:016x}.sh", rand_u64()));
    std::fs::write(&path, format!("{body}\necho {DONE}\n")).unwrap();
    bash(&format!("bash {}", path.display()))
}

/// The result of call `i`, which must be an attack script that ran to its end.
fn attacked(s: &ScriptedServer, i: usize) -> String {
    let r = results(s, i).content;
    assert!(r.contains(DONE), "the attack did not run: {r}");
    r
}

/// The person's own git in `dir`, outside any sandbox, with the world's `HOME`; whatever it
/// says (where rein moved a repository aside, there is none).
pub fn person_git(w: &World, dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=p", "-c", "user.email=p@example.com"])
        .args(args)
        .current_dir(dir)
        .env("HOME", &w.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git")
}

/// [`person_git`] in `dir`, which must succeed.
pub fn person_git_ok(w: &World, dir: &Path, args: &[&str]) -> Output {
    let o = person_git(w, dir, args);
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The person's own git in the workspace, which must succeed.
fn git(w: &World, args: &[&str]) -> Output {
    person_git_ok(w, &w.ws, args)
}

/// A repository in the workspace with one commit, made by the person.
fn repo(w: &World) {
    std::fs::write(
        w.home.join(".gitconfig"),
        "[user]\n\tname = p\n\temail = p@example.com\n",
    )
    .unwrap();
    git(w, &["init", "-q"]);
    w.write("README", "hi\n");
    git(w, &["add", "README"]);
    git(w, &["commit", "-qm", "first"]);
}

/// A script outside the workspace that records, by creating `<marker>-<what>`, that it ran.
fn payload(w: &World) -> (PathBuf, PathBuf) {
    let marker = w.dir.path().join("payload-ran");
    let script = w.dir.path().join("payload.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'-\"$1\"\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, marker)
}

/// The markers the payload left (it must never have run).
fn ran(marker: &Path) -> Vec<String> {
    let name = marker.file_name().unwrap().to_string_lossy().into_owned();
    let mut out: Vec<String> = std::fs::read_dir(marker.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&name))
        .collect();
    out.sort();
    out
}

fn results(s: &ScriptedServer, i: usize) -> SentResult {
    last_result(&s.request(i))
}

fn unique(tag: &str) -> String {
    format!("{tag}-{:016x}", rand_u64())
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    h.write_u128(now.map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// Class 1: rein's own processes. A hostile repository's config, a relative `PATH` entry and
/// programs planted there: nothing of it runs outside the sandbox when rein builds its next
/// request (the changed-files reminder), and rein's bash is not the planted one.
pub fn rein_runs_no_code_from_the_repository(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    // A hostile checkout: its config starts programs on `git status`.
    git(
        &w,
        &[
            "config",
            "core.fsmonitor",
            &format!("{} fsmonitor", payload_script.display()),
        ],
    );
    let plant = format!(
        "mkdir -p bin && printf '#!/bin/sh\\n{s} git\\n' > bin/git && \
         printf '#!/bin/sh\\ntouch \"$PWD/bash-planted-ran\"\\nexec /bin/bash \"$@\"\\n' > bin/bash && \
         chmod +x bin/git bin/bash && echo planted > changed.txt",
        s = payload_script.display()
    );
    s.push(script(&w, &plant))
        .push(bash("echo second"))
        .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    // A relative entry first: it means the workspace, where the command planted `bin/`.
    let path = format!("bin:{}", std::env::var("PATH").unwrap_or_default());
    c.env("PATH", path);
    exec(c);
    assert_eq!(ran(&marker), Vec::<String>::new(), "a payload ran");
    assert!(
        !w.ws.join("bash-planted-ran").exists(),
        "the planted bash ran"
    );
    attacked(&s, 1);
    assert_eq!(results(&s, 2).content, "second");
    // The attack was staged.
    assert!(w.ws.join("bin/git").exists() && w.ws.join("bin/bash").exists());
}

/// Plants what would make the person's git run a payload: a common dir with its own config
/// and hooks, a hook in a `hooks/` that does not exist yet, `config.worktree`, attributes, and
/// config edits.
fn plant_git_payload(script: &Path) -> String {
    format!(
        "mkdir -p evil/hooks; printf '#!/bin/sh\\n{s} hook\\n' > evil/hooks/pre-commit; \
         chmod +x evil/hooks/pre-commit; cp -r .git/objects .git/refs .git/HEAD evil/ 2>/dev/null; \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = {s} common-fsmonitor\\n\\thooksPath = %s/evil/hooks\\n' \"$PWD\" > evil/config; \
         echo \"$PWD/evil\" > .git/commondir; \
         mkdir -p .git/hooks; cp evil/hooks/pre-commit .git/hooks/pre-commit; \
         printf '[core]\\n\\thooksPath = %s/evil/hooks\\n' \"$PWD\" > .git/config.worktree; \
         git config extensions.worktreeConfig true; \
         printf '[core]\\n\\tfsmonitor = {s} fsmonitor\\n' >> .git/config; \
         git config core.hooksPath \"$PWD/evil/hooks\"; \
         mkdir -p .git/info && echo '* filter=evil' > .git/info/attributes; \
         git config filter.evil.clean '{s} filter'; \
         echo attempted",
        s = script.display()
    )
}

/// The person's own git after the session: status, add and commit run none of it.
fn persons_git_runs_nothing(w: &World, marker: &Path) {
    git(w, &["status", "--short"]);
    w.write("after.txt", "x\n");
    git(w, &["add", "after.txt"]);
    git(w, &["commit", "-qm", "after the session"]);
    git(w, &["log", "-1", "-p"]);
    assert_eq!(
        ran(marker),
        Vec::<String>::new(),
        "a payload ran in the person's git"
    );
}

/// Class 1 (the allow-list): configuration git reads, including names that do not exist yet,
/// never reaches the real `.git`; the person's later `git commit` runs no planted hook.
pub fn planted_git_configuration_never_reaches_the_persons_git(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    std::fs::remove_dir_all(w.ws.join(".git/hooks")).unwrap();
    let config_before = std::fs::read(w.ws.join(".git/config")).unwrap();
    s.push(script(&w, &plant_git_payload(&payload_script)))
        .push(bash("echo b > b.txt && git add b.txt && git -c maintenance.auto=false -c gc.auto=0 commit -qm by-the-model && git log --oneline | wc -l"))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    let git_dir = w.ws.join(".git");
    for name in ["commondir", "config.worktree", "hooks", "info/attributes"] {
        assert!(
            !git_dir.join(name).exists(),
            ".git/{name} reached the repository"
        );
    }
    assert_eq!(
        std::fs::read(git_dir.join("config")).unwrap(),
        config_before
    );
    let planted = attacked(&s, 1);
    assert!(planted.contains(".git/commondir"), "{planted}");
    // git itself still works in the protected repository, and its commits are kept.
    let committed = results(&s, 2).content;
    assert_eq!(committed.trim(), "2", "{committed}");
    let log = git(&w, &["log", "--oneline"]);
    assert!(String::from_utf8_lossy(&log.stdout).contains("by-the-model"));
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for a `.git` view kept between commands (nothing changed since a settled
/// refresh): what a command plants in it is still gone for the next command and never reaches
/// the repository. The first two commands give the view time to settle (100 ms).
pub fn a_kept_git_view_still_forgets_what_a_command_planted(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    repo(&w);
    s.push(bash("sleep 0.3; echo built"))
        .push(bash("sleep 0.3; echo kept"))
        .push(bash(&format!(
            "echo \"$PWD/evil\" > .git/commondir && echo planted; echo {DONE}"
        )))
        .push(bash("ls -a .git; cat .git/commondir 2>&1"))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    assert_eq!(results(&s, 2).content.trim(), "kept");
    attacked(&s, 3);
    let after = results(&s, 4).content;
    assert!(after.contains("HEAD"), "{after}");
    assert!(
        !after.contains("evil") && after.contains("No such file"),
        "the next command saw the planted commondir: {after}"
    );
    assert!(!w.ws.join(".git/commondir").exists());
}

/// A hidden place the person replaces while a command runs (a rename, as editors and tools
/// save): the next command must not see the new one. (The zygote makes the next command's
/// namespaces while the command before runs; one made before the replacement covers the old
/// directory, which a rename takes along, and must not be used.)
pub fn a_secret_replaced_between_commands_stays_hidden(mode: Mode) {
    if mode == Mode::Fallback {
        return a_secret_inside_the_workspace_stops_commands_without_namespaces();
    }
    let Some((s, w)) = mode.world() else {
        return;
    };
    let private = w.ws.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("key"), "old-hidden\n").unwrap();
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nhide = [\"{}\"]\n",
        private.display()
    ));
    let secret = unique("REPLACED-SECRET");
    let ready = w.ws.join("ready");
    // The first two commands let the next command's namespaces be made with the old place.
    s.push(bash("cat private/key; echo first"))
        .push(bash("touch ready; sleep 1.5; echo second"))
        .push(bash("cat private/key; ls -a private; echo third"))
        .push(bash(
            "sleep 0.5; echo fourth; awk '{print $22}' /proc/1/stat /proc/self/stat",
        ))
        .push(bash(
            "echo fifth; awk '{print $22}' /proc/1/stat /proc/self/stat",
        ))
        .push(Reply::text("done"));
    let replaced = {
        let (ready, private, secret) = (ready.clone(), private.clone(), secret.clone());
        std::thread::spawn(move || {
            let end = std::time::Instant::now() + Duration::from_secs(60);
            while !ready.exists() && std::time::Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
            // Well after the second command started: what is made for the third is made.
            std::thread::sleep(Duration::from_millis(500));
            let old = private.with_file_name("private-old");
            std::fs::rename(&private, &old).unwrap();
            std::fs::create_dir(&private).unwrap();
            std::fs::write(private.join("key"), format!("{secret}\n")).unwrap();
        })
    };
    exec(rein(&w, mode));
    replaced.join().unwrap();
    let first = results(&s, 1).content;
    assert!(
        first.contains("first") && !first.contains("old-hidden"),
        "{first}"
    );
    let third = results(&s, 3).content;
    assert!(third.contains("third"), "{third}");
    assert!(
        !third.contains(&secret) && !third.lines().any(|l| l.trim() == "key"),
        "the replaced secret showed: {third}"
    );
    // Made ahead while nothing changed: the fifth command's init is older than it (its
    // start time, in clock ticks, is from before the fourth command's half second).
    let fifth = results(&s, 5).content;
    assert!(fifth.contains("fifth"), "{fifth}");
    assert!(
        mode != Mode::Namespaces || ran_in_namespaces_made_ahead(&fifth),
        "the fifth command's namespaces were not made ahead: {fifth}"
    );
}

/// Whether a command that printed its init's start time and then its own, in clock ticks
/// (`awk '{print $22}' /proc/1/stat /proc/self/stat`), ran in namespaces made at least 0.2 s
/// before it.
fn ran_in_namespaces_made_ahead(output: &str) -> bool {
    let ticks: Vec<u64> = output
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    matches!(ticks[..], [init, own] if own >= init + 20)
}

/// Without namespaces a hidden place inside the workspace cannot be kept from commands
/// (Landlock cannot take a part out of the workspace's grant): no command runs, and the error
/// names the place and the way out; nothing of it reaches the model. Read-only, the walk
/// leaves it out as anywhere else, and commands run. Home's dot entries, with rein started in
/// `~`, likewise.
fn a_secret_inside_the_workspace_stops_commands_without_namespaces() {
    for (mode, runs) in [("workspace-write", false), ("read-only", true)] {
        let Some((s, w)) = Mode::Fallback.world() else {
            return;
        };
        let private = w.ws.join("private");
        std::fs::create_dir(&private).unwrap();
        let secret = unique("HIDDEN-IN-WS");
        std::fs::write(private.join("key"), format!("{secret}\n")).unwrap();
        w.user_config(&format!(
            "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nmode = \"{mode}\"\nhide = [\"{}\"]\n",
            private.display()
        ));
        s.push(bash("cat private/key; echo ran"))
            .push(Reply::text("done"));
        exec(rein(&w, Mode::Fallback));
        let r = results(&s, 1).content;
        assert!(
            !r.contains(&secret),
            "{mode}: the hidden file was read: {r}"
        );
        match runs {
            true => assert!(r.contains("ran"), "{mode}: {r}"),
            false => assert!(
                !r.contains("ran") && r.contains("cannot hide") && r.contains("private"),
                "{mode}: {r}"
            ),
        }
    }
    // Started in `~`: home's dot entries lie in the workspace's grant too.
    let Some((s, w)) = Mode::Fallback.world() else {
        return;
    };
    std::fs::create_dir(w.ws.join(".ssh")).unwrap();
    let key = unique("HOME-KEY");
    std::fs::write(w.ws.join(".ssh/id_ed25519"), format!("{key}\n")).unwrap();
    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\n");
    s.push(bash("cat .ssh/id_ed25519; echo ran"))
        .push(Reply::text("done"));
    let mut c = rein(&w, Mode::Fallback);
    c.env("HOME", &w.ws);
    exec(c);
    let r = results(&s, 1).content;
    assert!(!r.contains(&key), "home's key was read: {r}");
    assert!(
        !r.contains("ran") && r.contains("cannot hide") && r.contains(".ssh"),
        "{r}"
    );
}

/// Namespaces made ahead carry part of the command's confinement made ahead too (the empty
/// bounding set, the seccomp filter): a command started in them is confined exactly as one
/// started fresh. The oracle is the first command of the session, which nothing was made
/// ahead for: every later one shows the same capabilities, `no_new_privs`, filter count and
/// speculation state, and still has no socket.
pub fn a_command_in_namespaces_made_ahead_is_confined_as_a_fresh_one(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let state = "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp(_filters)?|Speculation.*):' \
        /proc/self/status; (exec 3<>/dev/tcp/127.0.0.1/9) 2>&1 | sed 's/.*: //'; echo end";
    s.push(bash(state))
        .push(bash(&format!("sleep 0.5; {state}")))
        .push(bash(&format!(
            "{state}; awk '{{print $22}}' /proc/1/stat /proc/self/stat"
        )))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    let lines = |n: usize| -> Vec<String> {
        let r = results(&s, n).content;
        let mut lines: Vec<String> = r.lines().map(|l| l.trim().to_string()).collect();
        let end = lines.iter().position(|l| l == "end");
        assert!(end.is_some(), "command {n}: {r}");
        lines.truncate(end.unwrap_or(0));
        lines
    };
    let fresh = lines(1);
    let joined = fresh.join("\n");
    let has = |want: [&str; 2]| fresh.iter().any(|l| l.split_whitespace().eq(want));
    assert!(has(["Seccomp:", "2"]), "filtered: {joined}");
    assert!(has(["Seccomp_filters:", "1"]), "one filter: {joined}");
    // Kernels before 5.16 force the mitigation on filtered processes unless told not to.
    assert!(!joined.contains("force mitigated"), "{joined}");
    assert!(
        fresh.iter().any(|l| l == "Permission denied"),
        "no socket: {joined}"
    );
    for n in [2, 3] {
        assert_eq!(
            lines(n),
            fresh,
            "command {n} is confined otherwise than the first"
        );
    }
    // The third command's init is older than it: made during the second's half second.
    let third = results(&s, 3).content;
    assert!(
        mode != Mode::Namespaces || ran_in_namespaces_made_ahead(&third),
        "the third command's namespaces were not made ahead: {third}"
    );
}

/// Class 1 for a repository the session made: from the command after `git init` on, it is
/// protected like any other.
pub fn a_repository_made_in_the_session_is_protected_from_then_on(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    s.push(bash("git init -q && echo made"))
        .push(script(&w, &plant_git_payload(&payload_script)))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    assert!(results(&s, 1).content.contains("git repository"));
    attacked(&s, 2);
    assert!(!w.ws.join(".git/commondir").exists());
    assert!(!w.ws.join(".git/hooks/pre-commit").exists());
    git(&w, &["config", "user.name", "p"]);
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for nested repositories (a vendored checkout, a repository inside the workspace):
/// what a command plants in their `.git` never reaches the person's git there either.
pub fn nested_repositories_are_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    let nested = ["vendor/lib", "deep/er/still/repo"];
    for dir in nested {
        std::fs::create_dir_all(w.ws.join(dir)).unwrap();
        git(&w, &["-C", dir, "init", "-q"]);
        w.write(&format!("{dir}/file.txt"), "x\n");
        git(&w, &["-C", dir, "add", "file.txt"]);
        git(&w, &["-C", dir, "commit", "-qm", "first"]);
    }
    let configs: Vec<Vec<u8>> = nested
        .iter()
        .map(|d| std::fs::read(w.ws.join(d).join(".git/config")).unwrap())
        .collect();
    let plant: String = nested
        .iter()
        .map(|d| format!("(cd {d} && {})\n", plant_git_payload(&payload_script)))
        .collect();
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    for (dir, config) in nested.iter().zip(&configs) {
        let git_dir = w.ws.join(dir).join(".git");
        for name in [
            "commondir",
            "config.worktree",
            "hooks/pre-commit",
            "info/attributes",
        ] {
            assert!(
                !git_dir.join(name).exists(),
                "{dir}/.git/{name} reached the repository"
            );
        }
        assert_eq!(
            &std::fs::read(git_dir.join("config")).unwrap(),
            config,
            "{dir}"
        );
        git(&w, &["-C", dir, "status", "--short"]);
        w.write(&format!("{dir}/after.txt"), "x\n");
        git(&w, &["-C", dir, "add", "after.txt"]);
        git(&w, &["-C", dir, "commit", "-qm", "after the session"]);
    }
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for hook directories the person's git configuration points into the workspace
/// (`core.hooksPath`: a project's `.githooks`, husky's `.husky/_`, named in the repository's
/// configuration or in an include of the global one, existing or not yet): a command cannot
/// write a hook there, swap the directory or make it first; the person's later commits, with
/// either configuration in force, run none of it.
pub fn hook_directories_the_persons_git_uses_are_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    std::fs::create_dir(w.ws.join(".githooks")).unwrap();
    let own_hook = "#!/bin/sh\nexit 0\n";
    w.write(".githooks/pre-commit", own_hook);
    let exe = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(w.ws.join(".githooks/pre-commit"), exe).unwrap();
    git(&w, &["config", "core.hooksPath", ".githooks"]);
    let global = std::fs::read_to_string(w.home.join(".gitconfig")).unwrap();
    std::fs::write(
        w.home.join(".gitconfig"),
        format!("{global}[include]\n\tpath = husky.inc\n"),
    )
    .unwrap();
    std::fs::write(w.home.join("husky.inc"), "[core]\n\thooksPath = .husky/_\n").unwrap();
    let plant = format!(
        "printf '#!/bin/sh\\n{s} pre-commit\\n' > .githooks/pre-commit; \
         printf '#!/bin/sh\\n{s} post-commit\\n' > .githooks/post-commit; \
         chmod +x .githooks/post-commit; ln -s {s} .githooks/commit-msg; \
         mv .githooks old-hooks && mkdir .githooks && \
         printf '#!/bin/sh\\n{s} swapped\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit; \
         mkdir -p .husky/_ && printf '#!/bin/sh\\n{s} husky\\n' > .husky/_/pre-commit; \
         chmod +x .husky/_/pre-commit; ln -s {s} .husky/_/post-commit; \
         echo attempted",
        s = payload_script.display()
    );
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".githooks/pre-commit")).unwrap(),
        own_hook,
        "the person's own hook is as it was"
    );
    assert!(!w.ws.join(".husky").exists(), "a hook directory was made");
    persons_git_runs_nothing(&w, &marker);
    // The global configuration's hook directory in force instead.
    git(&w, &["config", "--unset", "core.hooksPath"]);
    commits_a_file(&w, &w.ws, "later.txt", "with husky's hooks path");
    assert_eq!(
        ran(&marker),
        Vec::<String>::new(),
        "a payload ran in the person's git"
    );
}

/// The person adds a new file `name` in the repository at `dir` and commits it.
fn commits_a_file(w: &World, dir: &Path, name: &str, message: &str) {
    std::fs::write(dir.join(name), "x\n").unwrap();
    person_git_ok(w, dir, &["add", name]);
    person_git_ok(w, dir, &["commit", "-qm", message]);
}

/// Class 1 for the hook directories of repositories nested in the workspace: the nested
/// repository's own `core.hooksPath` (husky in a package that is a repository of its own) and
/// the person's relative global one (`core.hooksPath = .githooks` names one in every
/// repository). A command cannot make either; the person's later commits there, under either
/// configuration, run nothing.
pub fn hook_directories_of_nested_repositories_are_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    let global = std::fs::read_to_string(w.home.join(".gitconfig")).unwrap();
    let relative = format!("{global}[core]\n\thooksPath = .githooks\n");
    std::fs::write(w.home.join(".gitconfig"), relative).unwrap();
    let lib = w.ws.join("lib");
    std::fs::create_dir(&lib).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "core.hooksPath", ".husky/_"],
    ] {
        person_git_ok(&w, &lib, args);
    }
    commits_a_file(&w, &lib, "a.txt", "first");
    let plant = format!(
        "for d in lib/.husky/_ lib/.githooks; do mkdir -p $d && \
         printf '#!/bin/sh\\n{s} nested\\n' > $d/pre-commit && chmod +x $d/pre-commit; done; \
         echo attempted",
        s = payload_script.display()
    );
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    for dir in ["lib/.husky/_/pre-commit", "lib/.githooks/pre-commit"] {
        assert!(!w.ws.join(dir).exists(), "{dir} was made");
    }
    // The nested repository's own hooks path, then the global one, in force.
    commits_a_file(&w, &lib, "b.txt", "with husky's hooks path");
    person_git_ok(&w, &lib, &["config", "--unset", "core.hooksPath"]);
    commits_a_file(&w, &lib, "c.txt", "with the global hooks path");
    assert_eq!(
        ran(&marker),
        Vec::<String>::new(),
        "a payload ran in the person's git"
    );
}

/// Class 1 for configuration files the person's git includes from the workspace (a team's
/// shared `.gitconfig` that the repository's configuration includes, and a file the global
/// configuration includes that does not exist yet): a command can neither change, swap nor
/// make one, so the person's later `git status` and commit run no `core.fsmonitor` from it.
pub fn configuration_files_the_persons_git_includes_are_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    let shared = "[alias]\n\tst = status\n";
    w.write(".gitconfig", shared);
    git(&w, &["config", "include.path", "../.gitconfig"]);
    let global = std::fs::read_to_string(w.home.join(".gitconfig")).unwrap();
    let missing = w.ws.join("team/extra.inc");
    let include = format!("{global}[include]\n\tpath = {}\n", missing.display());
    std::fs::write(w.home.join(".gitconfig"), include).unwrap();
    let plant = format!(
        "printf '[core]\\n\\tfsmonitor = {s} appended\\n' >> .gitconfig; \
         mkdir -p team && printf '[core]\\n\\tfsmonitor = {s} made\\n' > team/extra.inc; \
         mv .gitconfig old.gitconfig && printf '[core]\\n\\tfsmonitor = {s} swapped\\n' > .gitconfig; \
         echo attempted",
        s = payload_script.display()
    );
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".gitconfig")).unwrap(),
        shared,
        "the shared configuration is as it was"
    );
    assert!(!missing.exists(), "an included file was made");
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for configuration files a nested repository's own configuration includes: one in
/// its tree (`lib/.git/config` including `../team.inc`) and one beside it in the workspace
/// (`../../shared.inc`). A command can neither change nor swap either, so the person's later
/// `git status` and commit in `lib` run no `core.fsmonitor` from them.
pub fn configuration_files_nested_repositories_include_are_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    let lib = w.ws.join("lib");
    std::fs::create_dir(&lib).unwrap();
    person_git_ok(&w, &lib, &["init", "-q"]);
    let shared = "[alias]\n\tst = status\n";
    w.write("lib/team.inc", shared);
    w.write("shared.inc", shared);
    for include in ["../team.inc", "../../shared.inc"] {
        person_git_ok(&w, &lib, &["config", "--add", "include.path", include]);
    }
    commits_a_file(&w, &lib, "a.txt", "first");
    let plant = format!(
        "printf '[core]\\n\\tfsmonitor = {s} appended\\n' >> lib/team.inc; \
         mv shared.inc old.inc && printf '[core]\\n\\tfsmonitor = {s} swapped\\n' > shared.inc; \
         echo attempted",
        s = payload_script.display()
    );
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    for file in ["lib/team.inc", "shared.inc"] {
        assert_eq!(
            std::fs::read_to_string(w.ws.join(file)).unwrap(),
            shared,
            "{file} is not as it was"
        );
    }
    person_git_ok(&w, &lib, &["status", "--short"]);
    commits_a_file(&w, &lib, "b.txt", "after the session");
    assert_eq!(
        ran(&marker),
        Vec::<String>::new(),
        "a payload ran in the person's git"
    );
}

/// Class 1 (`.rein`): a command cannot plant rein's project settings for the next run.
pub fn a_planted_rein_dir_is_gone_before_the_next_run(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    s.push(script(
        &w,
        "mkdir -p .rein && printf 'edits = \"allow\"\\n' > .rein/config.toml",
    ))
    .push(Reply::text("done"));
    exec(rein(&w, mode));
    assert!(!w.ws.join(".rein").exists(), ".rein survived the command");
    let r = attacked(&s, 1);
    assert!(r.contains(".rein") && r.contains("removed"), "{r}");
    let mut c = rein(&w, mode);
    c.arg("config");
    let o = run_with_timeout(c, Duration::from_secs(30));
    assert!(!String::from_utf8_lossy(&o.stdout).contains(".rein/config.toml"));
}

/// Class 4: secrets, by construction. Files under random names in home (and the ones a
/// review found a deny-list missing), variables under random names in rein's environment,
/// rein's config and data, the key, and a git config whose includes and helpers lead to
/// secrets: none reaches the model or any file rein writes, while the allow-listed
/// toolchains, `pass_env` and the git identity still do.
pub fn secrets_never_reach_the_model_or_the_session(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    // A key of this test's own: other processes on the machine may hold the shared test key.
    let key = unique("sk-test-KEY");
    let key = key.as_str();
    let mut secrets = vec![key.to_string()];
    let mut planted = Vec::new();
    let r = || format!("{:x}", rand_u64());
    let random_places = [
        format!(".{}/{}", r(), r()),
        r(),
        format!(".config/{}/{}.json", r(), r()),
        format!(".cargo/{}", r()),
        format!(".cache/{}/token", r()),
    ];
    let known_misses = [
        ".config/git/credentials",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".cargo/credentials.toml",
        ".env",
        ".bash_history",
        ".agents/env",
        ".ssh/id_ed25519",
    ];
    for rel in random_places.iter().map(String::as_str).chain(known_misses) {
        let secret = unique("FILE-SECRET");
        let path = w.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = if rel == ".agents/env" {
            format!("API_KEY={key}\nOTHER={secret}\n")
        } else {
            format!("{secret}\n")
        };
        std::fs::write(&path, text).unwrap();
        planted.push(path);
        secrets.push(secret);
    }
    // A toolchain bash must still see, and the identity git must still have.
    let tool = w.home.join(format!(".cargo/bin/{}", r()));
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    let tool_text = unique("TOOLCHAIN-VISIBLE");
    std::fs::write(&tool, &tool_text).unwrap();
    let included = w.home.join(format!(".{}", r()));
    let include_secret = unique("INCLUDE-SECRET");
    std::fs::write(
        &included,
        format!("[user]\n\tsigningkey = {include_secret}\n"),
    )
    .unwrap();
    planted.push(included.clone());
    secrets.push(include_secret);
    let email = format!("{}@example.com", r());
    std::fs::write(
        w.home.join(".gitconfig"),
        format!(
            "[include]\n\tpath = {}\n[user]\n\tname = P\n\temail = {email}\n[credential]\n\thelper = store\n",
            included.display()
        ),
    )
    .unwrap();
    planted.push(w.home.join(".gitconfig"));
    let config_secret = unique("CONFIG-SECRET");
    let passed = format!("P{:X}", rand_u64());
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n# {config_secret}\n[sandbox]\npass_env = [\"{passed}\"]\n"
    ));
    planted.push(w.config_home.join("rein/config.toml"));
    secrets.push(config_secret);
    let mut env_secrets: Vec<(String, String)> = [
        "DATABASE_URL",
        "SENTRY_DSN",
        "SLACK_WEBHOOK_URL",
        "NPM_CONFIG__AUTH",
        "GITHUB_PAT_X",
        "APIKEY",
        "AUTH",
    ]
    .into_iter()
    .map(|k| (k.to_string(), unique("ENV-SECRET")))
    .collect();
    // Names no pattern could know.
    env_secrets.extend((0..3).map(|_| (format!("V{:X}", rand_u64()), unique("ENV-SECRET"))));
    secrets.extend(env_secrets.iter().map(|(_, v)| v.clone()));
    let cats: String = planted
        .iter()
        .map(|p| format!("'{}' ", p.display()))
        .collect();
    let attack = format!(
        "cat {cats} \"$XDG_CONFIG_HOME/rein/config.toml\"; ls -laR ~; find ~ -type f -exec cat {{}} +; \
        env; echo \"passed=${passed}\"; cat '{tool}'; echo; git config --global --list; \
        git config --show-origin --list; tr '\\0' '\\n' < /proc/self/environ; \
        for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; \
        grep -ra SECRET \"$HOME\" \"$XDG_CONFIG_HOME\" \"$XDG_DATA_HOME\"; \
        cat \"$XDG_DATA_HOME\"/rein/sessions/* \"$XDG_DATA_HOME\"/rein/*/* ; true",
        tool = tool.display(),
    );
    s.push(script(&w, &attack)).push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.env("API_KEY", key).env(&passed, "visible-123");
    for (k, v) in &env_secrets {
        c.env(k, v);
    }
    exec(c);
    let result = attacked(&s, 1);
    assert!(result.contains("passed=visible-123"), "{result}");
    assert!(
        result.contains(&tool_text),
        "the allow-listed toolchain is hidden: {result}"
    );
    assert!(
        result.contains(&format!("user.email={email}")),
        "no git identity: {result}"
    );
    for req in s.requests() {
        for secret in &secrets {
            if let Some(at) = req.body_text.find(secret.as_str()) {
                let from = req.body_text[..at]
                    .char_indices()
                    .rev()
                    .nth(300)
                    .map_or(0, |(i, _)| i);
                panic!("{secret} reached the model: …{}", &req.body_text[from..at]);
            }
        }
    }
    let planted: Vec<PathBuf> = planted
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    for file in w.all_files() {
        if file.canonicalize().is_ok_and(|f| planted.contains(&f)) {
            continue;
        }
        let text = std::fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{secret} is in {}",
                file.display()
            );
        }
    }
}

/// A normal build in the sandbox, with the person's real home and toolchains: cargo (through
/// rustup's proxies) and python (through pyenv's shims, where installed) find what they need
/// in the allow-listed places.
pub fn builds_work_with_the_real_toolchains(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return;
    };
    let has = |p: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("cargo") {
        eprintln!("SKIPPED: no cargo on PATH");
        return;
    }
    w.write(
        "Cargo.toml",
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    w.write(
        "src/main.rs",
        "fn main() { println!(\"built-{}\", 6 * 7); }\n",
    );
    let python = if has("python3") {
        "python3 -c 'import sys; print(\"python-\" + str(sys.version_info[0]))'"
    } else {
        "echo python-3"
    };
    s.push(bash(&format!(
        "cargo run -q --offline 2>&1 | tail -5; {python}; echo {DONE}"
    )))
    .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.env("HOME", &home);
    for var in [
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "PYENV_ROOT",
    ] {
        if let Some(v) = std::env::var_os(var) {
            c.env(var, v);
        }
    }
    exec(c);
    let r = attacked(&s, 1);
    assert!(r.contains("built-42"), "cargo failed in the sandbox: {r}");
    assert!(r.contains("python-3"), "python failed in the sandbox: {r}");
}

/// Section 5: a workspace larger than the nested-repository scan looks at before the first
/// command (made small here by `REIN_NESTED_SCAN_LIMIT`): a repository found only past the
/// limit is protected all the same, and the result says that rein looked through everything.
pub fn a_repository_past_the_scan_limit_is_protected_too(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    for i in 0..30 {
        std::fs::create_dir_all(w.ws.join(format!("pad{i:02}/x"))).unwrap();
    }
    let dir = "pad00/x/late/repo";
    std::fs::create_dir_all(w.ws.join(dir)).unwrap();
    git(&w, &["-C", dir, "init", "-q"]);
    w.write(&format!("{dir}/file.txt"), "x\n");
    git(&w, &["-C", dir, "add", "file.txt"]);
    git(&w, &["-C", dir, "commit", "-qm", "first"]);
    let config = std::fs::read(w.ws.join(dir).join(".git/config")).unwrap();
    s.push(script(
        &w,
        &format!("(cd {dir} && {})", plant_git_payload(&payload_script)),
    ))
    .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.env(rein::sandbox::nested::LIMIT_SWITCH, "5");
    exec(c);
    let r = attacked(&s, 1);
    assert!(r.contains("more than 5 entries"), "{r}");
    let git_dir = w.ws.join(dir).join(".git");
    for name in [
        "commondir",
        "config.worktree",
        "hooks/pre-commit",
        "info/attributes",
    ] {
        assert!(
            !git_dir.join(name).exists(),
            "{dir}/.git/{name} reached the repository"
        );
    }
    assert_eq!(std::fs::read(git_dir.join("config")).unwrap(), config);
    w.write(&format!("{dir}/after.txt"), "x\n");
    git(&w, &["-C", dir, "add", "after.txt"]);
    git(&w, &["-C", dir, "commit", "-qm", "after the session"]);
    persons_git_runs_nothing(&w, &marker);
}

/// Class 5: terminals. rein runs in a terminal; the command has none (no controlling
/// terminal, so it cannot become the terminal's foreground either; `/dev/tty` refused),
/// cannot paint on rein's screen, and cannot read what is typed in another terminal.
pub fn commands_have_no_terminal(mode: Mode) {
    use portable_pty::{PtySize, native_pty_system};
    let Some((s, w)) = mode.world() else {
        return;
    };
    // Another terminal where the person types a secret.
    let other = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 80,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a second terminal");
    let typed = unique("TYPED-SECRET");
    let mut keys = other.master.take_writer().unwrap();
    std::io::Write::write_all(&mut keys, format!("{typed}\n").as_bytes()).unwrap();
    let other_tty = other
        .master
        .tty_name()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/dev/pts/0".into());
    let attack = format!(
        "awk '{{print \"tty_nr=\" $7}}' /proc/self/stat; echo PAINT$((1+1)) > /dev/tty; \
         timeout 2 cat {other_tty}; for f in /dev/pts/[0-9]*; do timeout 1 cat $f; done; \
         python3 -c 'import os; m, s = os.openpty(); os.write(m, b\"ok\\n\"); print(\"own pty\", os.read(s, 3))'; true"
    );
    s.push(script(&w, &attack)).push(Reply::text("done"));
    let mut cmd = portable_pty::CommandBuilder::new(rein_bin());
    cmd.args(["exec", "--yes", "go"]);
    cmd.env_clear();
    for (k, v) in w.env_vars() {
        cmd.env(k, v);
    }
    match mode {
        Mode::Namespaces => {}
        Mode::Fallback => cmd.env("REIN_SANDBOX_FALLBACK", "1"),
        Mode::Forked => cmd.env(rein::sandbox::zygote::SWITCH, "0"),
    }
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(&w.ws);
    let mut pty = crate::support::pty::Pty::spawn(cmd, 120, 40);
    assert!(
        pty.wait_exit(Duration::from_secs(90)).is_some(),
        "rein did not finish"
    );
    let screen = pty.raw_output();
    assert!(
        !crate::support::pty::contains(&screen, b"PAINT2"),
        "the command painted on rein's terminal"
    );
    let r = attacked(&s, 1);
    assert!(
        r.contains("tty_nr=0\n"),
        "the command has a controlling terminal: {r}"
    );
    assert!(
        !r.contains(&typed),
        "the command read another terminal: {r}"
    );
    if mode != Mode::Fallback {
        // Its own terminals work (a private /dev/pts).
        assert!(r.contains("own pty b'ok"), "{r}");
    }
    drop(keys);
}

/// Processes whose command line holds `tag`.
pub fn processes_with(tag: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(tag))
        .collect()
}

/// Class 6: nothing outlives the call, however it detaches, and the result says what was
/// killed; a delayed write after the call never lands.
pub fn nothing_outlives_the_call(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let tag = format!("{}.{}", 1000 + rand_u64() % 1000, std::process::id());
    let attack = format!(
        "nohup sleep {tag}1 > /dev/null 2>&1 & \
         setsid sleep {tag}2 > /dev/null 2>&1 & \
         ( (sleep {tag}3 > /dev/null 2>&1 &) & ); \
         (trap '' TERM HUP INT; exec sleep {tag}4) > /dev/null 2>&1 & \
         (sleep 2; touch late-write) > /dev/null 2>&1 & disown -a; sleep 0.3"
    );
    s.push(script(&w, &attack)).push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(r.contains("killed when it ended"), "{r}");
    assert_eq!(
        processes_with(&format!("sleep {tag}")),
        Vec::<String>::new()
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !w.ws.join("late-write").exists(),
        "a write landed after the call"
    );
    assert_eq!(
        processes_with(&format!("sleep {tag}")),
        Vec::<String>::new()
    );
}

/// Class 2/7: no write lands outside, not through links planted in `.git` for rein to follow
/// when it copies the command's changes back, nor anywhere else.
pub fn no_write_lands_outside(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    repo(&w);
    std::fs::write(w.home.join(".bashrc"), "keep\n").unwrap();
    let attack = "ln -sf \"$HOME/.bashrc\" .git/ORIG_HEAD; \
        rm -f .git/index && ln -s \"$HOME/.bashrc\" .git/index; \
        mkdir -p .git/rebase-merge && ln -s \"$HOME\" .git/rebase-merge/home; \
        echo pwned > .git/rebase-merge/home/pwned; echo x > ../outside.txt; \
        echo x > \"$HOME/direct\"; echo payload >> .git/rebase-merge/home/.bashrc; true";
    s.push(script(&w, attack)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    assert_eq!(
        std::fs::read_to_string(w.home.join(".bashrc")).unwrap(),
        "keep\n"
    );
    for p in [
        w.home.join("pwned"),
        w.home.join("direct"),
        w.ws.parent().unwrap().join("outside.txt"),
    ] {
        assert!(!p.exists(), "{} was written", p.display());
    }
    // The repository is still sound for the person.
    git(&w, &["status", "--short"]);
}

/// A command run as root keeps only the capabilities for files (chown, dac_override,
/// fowner, fsetid, kill, setgid, setuid, net_bind_service): none that reaches mounts, the
/// kernel, devices or other processes' memory, in its own sets or a child's. With namespaces
/// it is not root at all: it runs as `nobody` and holds none.
pub fn a_root_command_keeps_only_the_capabilities_for_files(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let attack = "echo uid=$(id -u); grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; \
        sh -c \"grep -E '^Cap(Prm|Eff):' /proc/self/status\"";
    s.push(script(&w, attack)).push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    const KEPT: u64 = 0b100_1111_1011;
    let sets: Vec<(&str, u64)> = r
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(name, hex)| Some((name, u64::from_str_radix(hex.trim(), 16).ok()?)))
        .collect();
    assert_eq!(sets.len(), 7, "{r}");
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // Others hold no capability to begin with, and with no_new_privs none can be gained by
    // exec, so their bounding set may stay full (as it does without namespaces).
    for (name, set) in sets.iter().filter(|(name, _)| root || *name != "CapBnd") {
        assert_eq!(
            set & !KEPT,
            0,
            "{name} holds more than the kept ones: {set:#x}"
        );
    }
    if root {
        let effective = sets.iter().find(|(name, _)| *name == "CapEff").map(|s| s.1);
        let (want, uid) = match mode {
            Mode::Fallback => (KEPT, "uid=0"),
            _ => (0, "uid=65534"),
        };
        assert_eq!(effective, Some(want), "root's command: {r}");
        assert!(r.contains(uid), "root's command runs as {uid}: {r}");
    }
}

/// Class: no code of the command runs outside the sandbox later. A file it marks setuid or
/// setgid would stay so on disk, owned by the workspace's owner (root, when rein runs as
/// root): anyone who ran it afterwards would run the command's code with the owner's rights.
/// Every way to set the bits is refused: `chmod`, `install -m`, `open`/`mknod` with the mode,
/// in every calling convention the machine runs.
pub fn a_command_cannot_leave_a_setuid_file_behind(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let attack = r#"cp /bin/sh sh-copy; chmod u+s sh-copy; chmod 6755 sh-copy
        install -m 4755 /bin/true installed; mkdir d; chmod g+s d
        python3 - <<'PY'
import os
for name, call in [
    ("opened", lambda: os.close(os.open("opened", os.O_CREAT | os.O_WRONLY, 0o4755))),
    ("made", lambda: os.mknod("made", 0o104755)),
    ("chmodded", lambda: (open("chmodded", "w").close(), os.chmod("chmodded", 0o2755))),
]:
    try:
        call()
        print(name, "returned")
    except OSError as e:
        print(name, "refused", e.errno)
PY
        ls -l"#;
    s.push(script(&w, attack)).push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(r.contains("opened") && r.contains("chmodded"), "{r}");
    let mut marked = Vec::new();
    for entry in walk(&w.ws) {
        let m = std::fs::symlink_metadata(&entry).unwrap();
        if m.permissions().mode() & 0o6000 != 0 {
            marked.push(entry);
        }
    }
    assert!(
        marked.is_empty(),
        "setuid/setgid files left behind: {marked:?}\n{r}"
    );
    assert!(w.ws.join("sh-copy").is_file(), "the copy itself works: {r}");
}

/// Every path under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// Class 7: a long output saved in full is readable by the user only. (Checked while rein
/// still runs: it removes its temp dir when it exits.)
pub fn saved_outputs_are_private(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let gate = crate::support::Gate::new();
    s.push(bash("seq 1 100000"))
        .push(Reply::text("done").pause_after(0, &gate));
    let mut c = rein(&w, mode);
    c.args(["exec", "--yes", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    assert!(s.wait_for_requests(2, Duration::from_secs(60)));
    let r = results(&s, 1).content;
    let start = r.find("is saved in ").expect("a saved output") + "is saved in ".len();
    let end = r[start..].find(". Read it").unwrap() + start;
    let saved = PathBuf::from(&r[start..end]);
    let mode_of = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let modes = (mode_of(&saved), mode_of(saved.parent().unwrap()));
    gate.release();
    let status = child.wait().unwrap();
    assert_eq!(modes, (0o600, 0o700), "{}", saved.display());
    assert!(status.success());
}

/// Shows the world's directory (which holds home, the workspace and what lies beside them) to
/// commands, as a person would name a data directory in `home_allow`.
fn show_world_dir(w: &World) {
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nhome_allow = [\"{}\"]\n",
        w.dir.path().canonicalize().unwrap().display()
    ));
}

/// Class 8: a directory on the way to home that holds more entries than rein may open
/// descriptors (a crowded `/tmp`, a shown data directory) still leaves what lies beside home
/// readable: the read rules once held a descriptor per entry and silently lost the late ones.
pub fn a_crowded_directory_beside_home_stays_readable(mode: Mode) {
    use std::os::unix::process::CommandExt;
    let Some((s, w)) = mode.world() else {
        return;
    };
    for i in 0..300 {
        std::fs::create_dir(w.dir.path().join(format!("crowd-{i:03}"))).unwrap();
    }
    let late = w.dir.path().join("zz-beside");
    std::fs::write(&late, "beside-home-content").unwrap();
    show_world_dir(&w);
    s.push(script(&w, &format!("cat '{}'", late.display())))
        .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    let limit = libc::rlimit {
        rlim_cur: 200,
        rlim_max: 200,
    };
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        c.pre_exec(move || match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    exec(c);
    let r = attacked(&s, 1);
    assert!(r.contains("beside-home-content"), "lost beside home: {r}");
}

/// A directory made beside home while the session runs (a new checkout, a drive's folder) is
/// readable by the very next command: a ruleset built ahead, or a kept walk of the siblings
/// on the way to home, is not used once a directory it was decided by has changed.
pub fn a_directory_made_beside_home_is_readable_by_the_next_command(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let later = w.dir.path().join(unique("made-later"));
    show_world_dir(&w);
    let gate = Gate::new();
    s.push(script(&w, "true"))
        .push(script(&w, &format!("cat '{}/f'", later.display())).pause_after(0, &gate))
        .push(Reply::text("done"));
    let maker = {
        let (gate, later) = (gate.clone(), later.clone());
        std::thread::spawn(move || {
            // The first command has run (its ruleset's successor is built) when the second
            // reply is asked for.
            assert!(gate.wait_reached(Duration::from_secs(60)), "never asked");
            std::fs::create_dir(&later).unwrap();
            std::fs::write(later.join("f"), "made-later-content").unwrap();
            gate.release();
        })
    };
    exec(rein(&w, mode));
    maker.join().unwrap();
    let r = attacked(&s, 2);
    assert!(r.contains("made-later-content"), "not readable: {r}");
}

/// Python that tries to add a rule granting writes in `target` to every descriptor the
/// command holds (`landlock_add_rule` is call 445 on every architecture rein runs on), and
/// prints what it reached: a Landlock ruleset in a command's hands would let it widen the
/// rules later commands are confined by, since one ruleset serves many commands.
fn widen_any_ruleset(target: &Path) -> String {
    format!(
        r#"python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Rule(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("access", ctypes.c_uint64), ("fd", ctypes.c_int32)]
target = os.open("{}", os.O_PATH)
reached = []
for name in os.listdir("/proc/self/fd"):
    try:
        link = os.readlink("/proc/self/fd/" + name)
    except OSError:
        link = "?"
    if "landlock" in link:
        reached.append("RULESET %s %s" % (name, link))
    rule = Rule((1 << 1) | (1 << 8), target)
    if libc.syscall(445, int(name), 1, ctypes.byref(rule), 0) == 0:
        reached.append("ADDED %s" % name)
print("\n".join(reached) or "no-ruleset-reached")
PY"#,
        target.display()
    )
}

/// A command never holds the Landlock ruleset rein shares between commands, so it cannot widen
/// what later commands may do; and later commands, confined by the same ruleset, still get
/// their own `/proc` (and, with namespaces, a writable `/dev/shm`).
pub fn a_command_cannot_widen_the_rules_of_later_ones(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let target = w.dir.path().join("outside");
    std::fs::create_dir_all(&target).unwrap();
    let later = format!(
        "echo x > '{}/f'; head -1 /proc/self/status; \
         echo shm > /dev/shm/rein-probe-$$ && echo shm-ok; rm -f /dev/shm/rein-probe-$$",
        target.display()
    );
    s.push(script(&w, &widen_any_ruleset(&target)))
        .push(script(&w, &later))
        .push(script(&w, &later))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        r.contains("no-ruleset-reached"),
        "a ruleset was reached: {r}"
    );
    for i in [2, 3] {
        let r = attacked(&s, i);
        assert!(
            r.contains("Name:"),
            "command {i} could not read its /proc: {r}"
        );
        let private_shm = mode != Mode::Fallback && Path::new("/dev/shm").is_dir();
        assert!(
            !private_shm || r.contains("shm-ok"),
            "command {i} could not write its /dev/shm: {r}"
        );
    }
    assert!(!target.join("f").exists(), "a later command wrote outside");
}

/// One `#[test]` per class for `mode`.
#[macro_export]
macro_rules! sandbox_classes {
    ($mode:expr) => {
        $crate::sandbox_classes!(@each $mode;
            rein_runs_no_code_from_the_repository,
            planted_git_configuration_never_reaches_the_persons_git,
            a_kept_git_view_still_forgets_what_a_command_planted,
            a_secret_replaced_between_commands_stays_hidden,
            a_command_in_namespaces_made_ahead_is_confined_as_a_fresh_one,
            a_repository_made_in_the_session_is_protected_from_then_on,
            nested_repositories_are_protected_too,
            hook_directories_the_persons_git_uses_are_protected_too,
            configuration_files_the_persons_git_includes_are_protected_too,
            hook_directories_of_nested_repositories_are_protected_too,
            configuration_files_nested_repositories_include_are_protected_too,
            a_planted_rein_dir_is_gone_before_the_next_run,
            secrets_never_reach_the_model_or_the_session,
            builds_work_with_the_real_toolchains,
            a_repository_past_the_scan_limit_is_protected_too,
            commands_have_no_terminal,
            nothing_outlives_the_call,
            no_write_lands_outside,
            a_command_cannot_leave_a_setuid_file_behind,
            saved_outputs_are_private,
            a_crowded_directory_beside_home_stays_readable,
            a_directory_made_beside_home_is_readable_by_the_next_command,
            a_root_command_keeps_only_the_capabilities_for_files,
            a_command_cannot_widen_the_rules_of_later_ones,
            the_persons_keyrings_are_out_of_reach,
            the_persons_shared_memory_and_message_queues_are_out_of_reach,
            processes_outside_keep_their_limits_and_priority,
            the_persons_runtime_directory_is_out_of_reach,
            the_shared_temporary_directories_show_only_the_workspace,
            what_only_root_may_read_is_out_of_reach_of_roots_commands,
            a_secret_in_a_top_level_directory_no_list_names_is_out_of_reach,
            a_directory_made_at_the_root_while_the_session_runs_stays_hidden,
            a_workspace_in_a_subdirectory_of_a_repository_reads_its_root,
            a_linked_worktree_reads_its_main_repository_and_nothing_else,
            a_workspace_in_a_closed_directory_works_for_roots_commands,
            a_place_in_tmp_named_in_home_allow_is_shown,
            inherited_descriptors_never_reach_a_command,
            a_linked_repository_in_the_workspace_is_protected_too,
            a_large_protected_hook_cannot_be_swapped_unseen,
            a_kept_protected_hook_cannot_be_swapped_unseen,
            a_renamed_repository_is_moved_back,
        );
    };
    (@each $mode:expr; $($name:ident),* $(,)?) => {
        $(#[test] fn $name() { sandbox_e2e::$name($mode) })*
    };
}
