//! Runs a command line under real bash inside `rein sandbox` with every `execve` and file
//! access traced, in a throwaway copy of a workspace full of decoys, and compares what ran
//! with what the policy said.

use super::trace::{Trace, resolve};
use rein::policy::shell::{self, Part};
use rein::policy::{Action, Confinement, Policy, explain};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Text in every secret file and in the environment; an allowed command must never show it.
pub const SECRET: &str = "oracle-secret-5b0f";

/// Longest a case may run (`watch`, `tail -f` run until killed).
const CASE_TIME: Duration = Duration::from_secs(4);

/// Programs that run another command, whose `execve`s must be commands the policy rated.
const WRAPPERS: &[&str] = &[
    "bash", "sh", "dash", "env", "timeout", "nice", "nohup", "stdbuf", "setsid", "xargs", "find",
    "time", "taskset", "ionice", "flock", "script", "chroot", "setpriv", "watch", "su", "runuser",
    "sudo", "busybox", "toybox", "strace", "unshare",
];

/// Wrappers that run their command through `$SHELL -c` / `sh -c`.
const VIA_SHELL: &[&str] = &["watch", "flock", "script", "su", "runuser", "sudo"];

/// Build tools that run their project's code and keep caches in the workspace: what they
/// start is theirs (the repository is trusted that far); they are still never allowed to run
/// a denied program.
const BUILD_TOOLS: &[&str] = &["cargo", "pytest", "py.test"];

/// What one case found.
pub struct Outcome {
    pub verdict: String,
    /// Disagreements between the policy and what bash did; empty when they agree.
    pub findings: Vec<String>,
}

/// Why the oracle cannot run here, if it cannot.
pub fn unavailable(world: &World) -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        let strace = Command::new("strace").arg("-V").output();
        if !strace.is_ok_and(|o| o.status.success()) {
            return Some("strace is not installed".into());
        }
        let s = Scratch::new(world);
        let probe = s.root.join("outside-probe");
        let out = s
            .rein_sandbox(&format!("echo x > {}", probe.display()))
            .output();
        let stderr = out
            .as_ref()
            .map(|o| String::from_utf8_lossy(&o.stderr).to_string())
            .unwrap_or_default();
        if probe.exists() || !stderr.contains("workspace-write, no network") {
            return Some(format!("the sandbox is not enforced here: {stderr}"));
        }
        None
    })
    .clone()
}

/// A fresh copy of the decoy world: `ws/` (the workspace, a git repository), `home/` with
/// secrets, `tmp/`, and `log/` for the trace (outside what the sandbox lets bash write).
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub log: PathBuf,
}

impl Scratch {
    pub fn new(world: &World) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("rein-oracle-")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let status = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", world.template.path().display()))
            .arg(&root)
            .status()
            .expect("cp");
        assert!(status.success(), "copying the template");
        Scratch {
            ws: root.join("ws"),
            home: root.join("home"),
            tmp: root.join("tmp"),
            log: root.join("log"),
            root,
            _dir: dir,
        }
    }

    /// `rein sandbox -- bash -c CMD` in the workspace, with HOME and TMPDIR in the scratch.
    fn rein_sandbox(&self, cmd: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["sandbox", "--", "bash", "-c", cmd]);
        self.env(&mut c);
        c
    }

    fn env(&self, c: &mut Command) {
        c.current_dir(&self.ws)
            .env_clear()
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("LANG", "C")
            .env("SHELL", "/bin/bash")
            .env("ORACLE_TOKEN", SECRET)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null());
    }

    /// Runs `cmd` traced; returns the trace and what it printed.
    fn trace(&self, cmd: &str, time: Duration) -> (Trace, String) {
        let out_path = self.log.join("out");
        let out = std::fs::File::create(&out_path).expect("output file");
        let err = out.try_clone().expect("output file");
        let mut c = Command::new("strace");
        c.args([
            "--pidns-translation",
            "--seccomp-bpf",
            "-f",
            "-ff",
            "-qq",
            "-y",
            "-s",
            "4096",
            "-e",
            "signal=none",
            "-e",
        ])
        .arg(concat!(
            "trace=execve,execveat,clone,clone3,fork,vfork,chdir,fchdir,openat,open,creat,",
            "unlink,unlinkat,rename,renameat,renameat2,mkdir,mkdirat,rmdir,truncate,",
            "symlink,symlinkat,link,linkat,chmod,fchmodat,chown,fchownat,lchown"
        ))
        .arg("-o")
        .arg(self.log.join("t"))
        .arg(env!("CARGO_BIN_EXE_rein"))
        .args(["sandbox", "--", "bash", "-c", cmd]);
        self.env(&mut c);
        c.stdout(out).stderr(err);
        {
            use std::os::unix::process::CommandExt;
            c.process_group(0);
        }
        let mut child = c.spawn().expect("strace");
        let deadline = Instant::now() + time;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                _ if Instant::now() > deadline => {
                    // SAFETY: kill(2) on the process group we created; no memory involved.
                    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                    let _ = child.wait();
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let printed = std::fs::read_to_string(&out_path).unwrap_or_default();
        (Trace::read(&self.log, "t"), printed)
    }
}

/// The decoy world, built once per test and copied for each case; removed when dropped.
pub struct World {
    template: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let template = tempfile::Builder::new()
            .prefix("rein-oracle-template-")
            .tempdir()
            .expect("temp dir");
        build_template(template.path());
        World { template }
    }

    /// The template's workspace: what the policy sees on disk (rows only rated, not run).
    pub fn workspace(&self) -> PathBuf {
        self.template.path().join("ws")
    }
}

fn build_template(root: &Path) {
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, text).expect("write");
    };
    for d in ["ws", "home", "tmp", "log", "remote.git"] {
        std::fs::create_dir_all(root.join(d)).expect("dir");
    }
    // Files named like options: globs and `$x` in arguments can become them.
    for name in [
        "-delete",
        "-exec",
        "-o",
        "-rf",
        "-fprint",
        "--output=pwn.txt",
        "--pre=sh",
        "--compress-program=sh",
        "-ao",
    ] {
        write(&format!("ws/{name}"), "decoy\n");
    }
    write("ws/README.md", "# readme\nTODO: nothing\n");
    write("ws/notes.txt", "b\na\na\n");
    write("ws/data.csv", "b,2\na,1\n");
    write("ws/src/main.rs", "fn main() {} // TODO\n");
    write("ws/src/lib.rs", "pub fn f() {}\n");
    write("ws/app.py", "print(1)  # TODO\n");
    write("ws/files.txt", "README.md\nnotes.txt\n");
    write("ws/victim/a", "victim\n");
    write("ws/evil.sh", "#!/bin/sh\necho pwned > PWNED\n");
    write("ws/evil.rc", "echo pwned > PWNED\n");
    write("ws/big.txt", &"zebra,1\napple,2\n".repeat(4_000));
    // Outside the workspace, in no list of secret places, and a link to it the repository
    // planted: with the sandbox off, an allowed command must not open it.
    write("outside/key", "outside the workspace\n");
    std::fs::create_dir_all(root.join("ws/docs")).expect("dir");
    std::os::unix::fs::symlink("../../outside/key", root.join("ws/docs/link")).expect("link");
    for d in ["lsb", "tree-sitter", "pytest", "sub"] {
        write(&format!("ws/{d}/keep"), "x\n");
    }
    write("home/.ssh/id_rsa", &format!("{SECRET}\n"));
    write("home/.agents/env", &format!("# {SECRET}\n"));
    write("home/.aws/credentials", &format!("{SECRET}\n"));
    write("home/.netrc", &format!("{SECRET}\n"));
    let ws = root.join("ws");
    let git = |args: &[&str], dir: &Path| {
        let ok = Command::new("git")
            .args([
                "-c",
                "user.name=o",
                "-c",
                "user.email=o@o",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", root.join("home"))
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "git {args:?}");
    };
    std::process::Command::new("chmod")
        .args(["+x", "evil.sh"])
        .current_dir(&ws)
        .status()
        .expect("chmod");
    git(&["init", "-q", "--bare"], &root.join("remote.git"));
    git(&["init", "-q"], &ws);
    git(&["add", "README.md", "notes.txt", "src"], &ws);
    git(&["commit", "-qm", "first"], &ws);
    git(&["remote", "add", "origin", "../remote.git"], &ws);
    std::fs::write(ws.join("notes.txt"), "changed\n").expect("write");
    foreign_repositories(root, &git);
    signed_head(&ws);
}

/// Programs in the workspace that write `PWNED` when run: `0/` for a `PATH=0` set behind
/// rein's back, `./ls` and `./cat` for an unset PATH (bash then looks in `.`).
fn hijackers(root: &Path) {
    for rel in ["ws/0/ls", "ws/0/cat", "ws/0/echo", "ws/ls", "ws/cat"] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, "#!/bin/sh\necho pwned > PWNED\n").expect("write");
        let status = Command::new("chmod").arg("+x").arg(&p).status();
        assert!(status.is_ok_and(|s| s.success()), "chmod {rel}");
    }
}

/// A repository outside the workspace whose configuration runs programs (`evil/`), and the
/// ways into it from the workspace: `sub2/.git` naming it, the link `link`.
fn foreign_repositories(root: &Path, git: &dyn Fn(&[&str], &Path)) {
    let evil = root.join("evil");
    std::fs::create_dir_all(&evil).expect("dir");
    std::fs::write(evil.join("f"), "x\n").expect("write");
    git(&["init", "-q"], &evil);
    git(&["add", "f"], &evil);
    git(&["commit", "-qm", "evil"], &evil);
    std::fs::write(evil.join("f"), "changed\n").expect("write");
    let config = evil.join(".git/config");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("[core]\n\tfsmonitor = \"echo pwned > PWNED; false\"\n");
    text.push_str("[diff]\n\texternal = \"echo pwned > PWNED; true #\"\n");
    std::fs::write(&config, text).expect("config");
    std::fs::create_dir_all(root.join("ws/sub2/deeper")).expect("dir");
    std::fs::write(root.join("ws/sub2/.git"), "gitdir: ../../evil/.git\n").expect("write");
    std::os::unix::fs::symlink("../evil", root.join("ws/link")).expect("symlink");
    hijackers(root);
}

/// A signed commit on top of the workspace's HEAD (a made-up signature: verifying it is
/// what runs gpg).
fn signed_head(ws: &Path) {
    let out = |args: &[&str], input: Option<&str>| {
        let mut c = Command::new("git");
        c.args(args).current_dir(ws).env("GIT_CONFIG_NOSYSTEM", "1");
        c.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        c.stdout(Stdio::piped());
        let mut child = c.spawn().expect("git");
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            stdin.write_all(text.as_bytes()).expect("stdin");
        }
        let o = child.wait_with_output().expect("git");
        assert!(o.status.success(), "git {args:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let tree = out(&["rev-parse", "HEAD^{tree}"], None);
    let parent = out(&["rev-parse", "HEAD"], None);
    let commit = format!(
        "tree {tree}\nparent {parent}\nauthor o <o@o> 0 +0000\ncommitter o <o@o> 0 +0000\n\
         gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n =abcd\n \
         -----END PGP SIGNATURE-----\n\nsigned\n"
    );
    let id = out(
        &["hash-object", "-t", "commit", "-w", "--stdin"],
        Some(&commit),
    );
    out(&["update-ref", "HEAD", &id], None);
}

/// Runs `cmd` and compares: every program bash (or a wrapper) ran was rated by the policy;
/// an `allow` never ran a denied program, a shell from a non-shell, or a program of the
/// scratch; never wrote a file (outside the temp dir); never opened or printed a secret. Rated
/// for the sandbox off, an `allow` never opened a file outside the workspace (the template's
/// `outside/key`, which `ws/docs/link` leads to).
pub fn check(world: &World, cmd: &str) -> Outcome {
    let mut s = Scratch::new(world);
    // Rated where it runs: what git finds on disk there counts.
    let policy = Policy::new(Vec::new(), false).with_workspace(&s.ws);
    let verdict = policy.check_bash(cmd);
    let parts = shell::parse_in(cmd, Some(&s.ws));
    let started = |trace: &Trace| {
        trace
            .execs
            .iter()
            .find(|e| e.by == "rein" && e.argv.first().map(String::as_str) == Some("bash"))
            .map(|e| e.pid)
    };
    let (mut trace, mut printed) = s.trace(cmd, CASE_TIME);
    if started(&trace).is_none() {
        // A loaded machine (a build beside the tests) can take the whole case time to get
        // rein and its sandbox going: once more, with time to spare, in a fresh scratch.
        s = Scratch::new(world);
        (trace, printed) = s.trace(cmd, CASE_TIME * 8);
    }
    let mut findings = Vec::new();
    let Some(bash) = started(&trace) else {
        return Outcome {
            verdict: explain(&verdict),
            findings: vec![format!("bash did not start: {printed}")],
        };
    };
    let under = |pid: u32| trace.descends(pid, bash);
    let in_build_tool = |pid: u32| {
        trace.lineage(pid).iter().any(|p| {
            trace
                .image
                .get(p)
                .is_some_and(|i| BUILD_TOOLS.contains(&i.as_str()))
                || trace
                    .execs
                    .iter()
                    .any(|e| e.pid == *p && BUILD_TOOLS.iter().any(|b| e.path.ends_with(b)))
        })
    };
    let unknown_name = parts.iter().any(|p| p.program.is_none());
    // Started by bash through wrappers only: what bash itself ran, not a tool's helper.
    let from_bash = |e: &super::trace::Exec| {
        WRAPPERS.contains(&e.by.as_str())
            && trace
                .lineage(e.pid)
                .iter()
                .take_while(|p| **p != bash)
                .all(|p| {
                    trace
                        .born_as
                        .get(p)
                        .is_some_and(|b| WRAPPERS.contains(&b.as_str()))
                })
    };
    for e in trace
        .execs
        .iter()
        .filter(|e| under(e.pid) && !(e.pid == bash && e.by == "rein"))
    {
        let name = e.argv.first().cloned().unwrap_or_default();
        let through_shell = VIA_SHELL.contains(&e.by.as_str())
            || parts.iter().any(|p| {
                p.via
                    .as_deref()
                    .is_some_and(|v| VIA_SHELL.iter().any(|w| v.starts_with(w)))
            });
        if from_bash(e) && !rated(&parts, e, &name) && !unknown_name && !through_shell {
            findings.push(format!(
                "{} ran `{}`, which the policy never rated",
                e.by,
                e.argv.join(" ")
            ));
        }
        if verdict.action != Action::Allow || in_build_tool(e.pid) {
            continue;
        }
        let argv_verdict = policy.check_bash(&quote_argv(&e.argv));
        if argv_verdict.action == Action::Deny {
            findings.push(format!(
                "allowed, but ran the denied `{}`",
                e.argv.join(" ")
            ));
        }
        if e.path.starts_with(&s.root.to_string_lossy().to_string())
            || Path::new(&e.path).is_relative()
        {
            findings.push(format!("allowed, but ran `{}` from the workspace", e.path));
        }
        let shell = ["sh", "bash", "dash"].contains(&base(&e.path).as_str());
        if shell && !WRAPPERS.contains(&e.by.as_str()) {
            findings.push(format!(
                "allowed, but {} started a shell: {}",
                e.by,
                e.argv.join(" ")
            ));
        }
    }
    // The same line rated for the sandbox off: allowed, it must not read outside.
    let unconfined = Policy::new(Vec::new(), false)
        .with_workspace(&s.ws)
        .with_confinement(Confinement::Off);
    if unconfined.check_bash(cmd).action == Action::Allow {
        let outside = std::fs::canonicalize(s.root.join("outside"))
            .unwrap_or_else(|_| s.root.join("outside"));
        // An open with `O_NOFOLLOW` of a link fails (grep -r opens what it finds so).
        let follows = |a: &&super::trace::Access| {
            !(a.nofollow && std::fs::symlink_metadata(&a.path).is_ok_and(|m| m.is_symlink()))
        };
        for a in trace
            .accesses
            .iter()
            .filter(|a| under(a.pid) && !a.write)
            .filter(follows)
        {
            if std::fs::canonicalize(&a.path).is_ok_and(|p| p.starts_with(&outside)) {
                findings.push(format!(
                    "allowed with the sandbox off, but {} opened {}, which leads outside",
                    a.by,
                    a.path.display()
                ));
            }
        }
    }
    if verdict.action == Action::Allow {
        for a in trace
            .accesses
            .iter()
            .filter(|a| under(a.pid) && !in_build_tool(a.pid))
        {
            if a.write && !harmless_write(&s, a) {
                findings.push(format!("allowed, but {} wrote {}", a.by, a.path.display()));
            }
            if is_secret(&s, &a.path) {
                findings.push(format!("allowed, but {} opened {}", a.by, a.path.display()));
            }
        }
        if printed.contains(SECRET) {
            findings.push("allowed, but printed a secret".into());
        }
    }
    findings.dedup();
    if findings.len() > 6 {
        let more = findings.len() - 5;
        findings.truncate(5);
        findings.push(format!("... and {more} more"));
    }
    Outcome {
        verdict: explain(&verdict),
        findings,
    }
}

/// Whether the policy rated the program `e` ran (by name or path, or a form deny rules see).
fn rated(parts: &[Part], e: &super::trace::Exec, name: &str) -> bool {
    let base = base(&e.path);
    parts.iter().any(|p| {
        p.program
            .as_deref()
            .is_some_and(|prog| prog == name || prog == base || base_of(prog) == base)
            || p.deny_alias
                .iter()
                .any(|a| a.split(' ').next() == Some(base.as_str()))
    })
}

fn base(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn base_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// An argv as a command line for the policy.
fn quote_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes that are not writes to files: devices, the sandbox's temp dir, git's own lock
/// and index files.
fn harmless_write(s: &Scratch, a: &super::trace::Access) -> bool {
    let p = &a.path;
    p.starts_with("/dev/null")
        || p.starts_with("/dev/tty")
        || p.starts_with("/dev/pts")
        || p.starts_with("/proc/self/fd")
        || p.starts_with("/dev/fd")
        || p == Path::new("/dev/stdout")
        || p == Path::new("/dev/stderr")
        || p.starts_with(&s.tmp)
        || (a.by == "git" && p.starts_with(s.ws.join(".git")))
}

fn is_secret(s: &Scratch, path: &Path) -> bool {
    let p = resolve(Path::new("/"), &path.to_string_lossy());
    [".ssh", ".agents/env", ".aws", ".netrc"]
        .iter()
        .any(|d| p.starts_with(s.home.join(d)))
        || (p.starts_with("/proc") && p.file_name().is_some_and(|n| n == "environ"))
}
