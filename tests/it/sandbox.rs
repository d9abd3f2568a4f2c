//! The bash sandbox against real commands on this machine: `bash -c` under a Sandbox applied
//! to a tokio Command, in temp dirs laid out like a user's machine.
//!
//! Where the kernel lacks what a test needs, the test prints why and returns; set
//! `REIN_SANDBOX_TESTS_REQUIRED=1` to make that a failure instead (CI on Landlock kernels).
#![cfg(target_os = "linux")]

use rein::config::SandboxMode;
use rein::sandbox::{ChildIo, Mechanism, Sandbox, SandboxStatus, Stderr, run_sandboxed};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A user's machine in miniature: `proj` is the workspace; `proj-evil` its look-alike
/// sibling; `home` a stand-in for `$HOME`; `tmp` the session temp dir.
struct Machine {
    _root: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    evil: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
}

fn machine() -> Machine {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (ws, evil, home, tmp) = (
        root.join("proj"),
        root.join("proj-evil"),
        root.join("home"),
        root.join("tmp"),
    );
    for d in [&ws, &evil, &home, &tmp] {
        std::fs::create_dir(d).unwrap();
    }
    Machine {
        _root: dir,
        root,
        ws,
        evil,
        home,
        tmp,
    }
}

impl Machine {
    fn sandbox(&self, mode: SandboxMode, network: bool) -> Sandbox {
        Sandbox::new(mode, network, self.ws.clone(), self.tmp.clone())
    }

    /// Runs `script` with `bash -c` in the workspace under `sb`; returns (exit code, output).
    async fn run(&self, sb: &Sandbox, script: &str) -> (i32, String) {
        self.run_as(sb, script, None).await
    }

    async fn run_as(&self, sb: &Sandbox, script: &str, uid: Option<u32>) -> (i32, String) {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("-c")
            .arg(script)
            .current_dir(&self.ws)
            .env("TMPDIR", &self.tmp)
            .env("FAKE_HOME", &self.home)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        if let Some(id) = uid {
            // A relative program: forked from this process, where the uid applies.
            cmd.uid(id).gid(id);
        }
        let io = ChildIo {
            stdin: false,
            stderr: Stderr::Pipe,
        };
        let child = sb.spawn(&mut cmd, io).expect("spawn");
        let (out, _) = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("timeout")
            .expect("wait");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    /// A git repository in the workspace, made outside the sandbox, with one hook.
    fn git_repo(&self) {
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&self.ws)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::fs::write(self.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(
            self.ws.join(".git/hooks/pre-commit"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
}

/// Whether `sb` is enforced here; if not, prints why (the test then returns early) unless
/// `REIN_SANDBOX_TESTS_REQUIRED` is set.
fn enforced(sb: &Sandbox) -> bool {
    match sb.status() {
        SandboxStatus::Enforced => true,
        other => {
            assert!(
                std::env::var_os("REIN_SANDBOX_TESTS_REQUIRED").is_none(),
                "sandbox not enforced: {other:?}"
            );
            eprintln!("SKIPPED: the sandbox is not enforced on this machine: {other:?}");
            false
        }
    }
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap()
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else if meta.is_symlink() {
                out.push((
                    p.clone(),
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                let mut data = std::fs::read(&p).unwrap();
                data.extend(format!("{:o}", meta.permissions().mode()).bytes());
                out.push((p, data));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_leave_nothing_behind() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    std::fs::write(m.home.join("existing"), "keep").unwrap();
    symlink(&m.home, m.ws.join("link-out")).unwrap();
    let etc = format!("/etc/rein-sandbox-test-{}", std::process::id());
    let before = (snapshot(&m.home), snapshot(&m.evil));
    for script in [
        "echo x > \"$FAKE_HOME/new\"".to_string(),
        "echo x >> \"$FAKE_HOME/existing\"".to_string(),
        "mkdir \"$FAKE_HOME/dir\"".to_string(),
        "rm \"$FAKE_HOME/existing\"".to_string(),
        "chmod 777 \"$FAKE_HOME/existing\"".to_string(),
        format!("echo x > {etc}"),
        "echo x > ../proj-evil/f".to_string(),
        format!("echo x > {}/f", m.evil.display()),
        "echo x > link-out/through-link".to_string(),
        "cp /etc/hostname link-out/".to_string(),
        // Root tricks: a block device for the disk, a setuid bit outside.
        "mknod disk b 8 0".to_string(),
        "chmod u+s \"$(command -v env)\"".to_string(),
        // A grandchild: a shell started from a subshell.
        "( sh -c 'echo x > \"$FAKE_HOME/grandchild\"' )".to_string(),
        "bash -c '(sleep 0; touch \"$FAKE_HOME/deep\") & wait $!'".to_string(),
    ] {
        let (code, out) = m.run(&sb, &script).await;
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    assert!(!Path::new(&etc).exists() && !m.ws.join("disk").exists());
    let env = std::fs::metadata(which("env")).unwrap();
    assert_eq!(env.permissions().mode() & 0o4000, 0, "env became setuid");
    assert_eq!(
        (snapshot(&m.home), snapshot(&m.evil)),
        before,
        "something changed outside"
    );
}

#[tokio::test]
async fn git_hooks_git_config_and_rein_stay_read_only() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    m.git_repo();
    std::fs::create_dir(m.ws.join(".rein")).unwrap();
    std::fs::write(
        m.ws.join(".rein/config.toml"),
        "sandbox = \"workspace-write\"\n",
    )
    .unwrap();
    std::fs::write(m.ws.join("evil.sh"), "#!/bin/sh\necho pwned\n").unwrap();
    let protected = || {
        (
            snapshot(&m.ws.join(".git/hooks")),
            std::fs::read(m.ws.join(".git/config")).unwrap(),
        )
    };
    let before = (protected(), snapshot(&m.ws.join(".rein")));
    // Git itself works in the protected repository.
    let (code, out) = m
        .run(
            &sb,
            "echo a > a.txt && git add a.txt && git commit -qm one && git log --oneline",
        )
        .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("one"), "{out}");
    for script in [
        "echo 'echo pwned' > .git/hooks/pre-commit",
        "echo x > .git/hooks/post-checkout",
        "ln -s ../../evil.sh .git/hooks/post-commit",
        "mv evil.sh .git/hooks/pre-push",
        "rm .git/hooks/pre-commit",
        "mv .git/hooks/pre-rebase.sample .git/hooks/pre-rebase",
        "rm -rf .git/hooks",
        "echo '[core] fsmonitor = evil.sh' >> .git/config",
        "git config core.fsmonitor ./evil.sh",
        "rm .git/config",
        // Swapping the whole repository for one with other hooks.
        "mv .git .git-old",
        "rm -rf .git",
        "echo 'sandbox = \"off\"' > .rein/config.toml",
        "touch .rein/new",
        "rm -rf .rein",
        "mv .rein .rein-old",
        // Back into the host's mount namespace, where the read-only binds do not exist.
        "nsenter -t 1 -m -- sh -c 'echo x > .git/hooks/pre-commit'",
        // Undoing the read-only bind: mount_setattr(AT_FDCWD, ".git/hooks", 0, {clr: RDONLY}).
        "python3 -c \"import ctypes, struct, sys; libc = ctypes.CDLL(None); a = ctypes.create_string_buffer(struct.pack('QQQQ', 0, 1, 0, 0)); sys.exit(libc.syscall(442, -100, b'.git/hooks', 0, a, 32) != 0 or open('.git/hooks/pre-commit', 'w').write('echo pwned'))\"",
        "umount .git/hooks && echo x > .git/hooks/pre-commit",
    ] {
        let (code, out) = m.run(&sb, script).await;
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
    }
    assert_eq!(
        (protected(), snapshot(&m.ws.join(".rein"))),
        before,
        "a protected path changed"
    );
    assert!(!m.ws.join(".git-old").exists() && !m.ws.join(".rein-old").exists());
}

/// A descriptor open in rein without close-on-exec (a library's, or one rein inherited)
/// never reaches a sandboxed command, in either mechanism: the command's process marks all
/// but its three streams close-on-exec.
#[tokio::test]
async fn descriptors_left_open_in_rein_never_reach_a_command() {
    let m = machine();
    let outside = m.root.join("left-open.log");
    let file = std::fs::File::create(&outside).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: clears close-on-exec on a descriptor this test owns.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, 0) };
    let fd = file.as_raw_fd();
    for sb in [
        m.sandbox(SandboxMode::WorkspaceWrite, false),
        Sandbox::without_namespaces(
            SandboxMode::WorkspaceWrite,
            false,
            m.ws.clone(),
            m.tmp.clone(),
        ),
    ] {
        if !enforced(&sb) {
            return;
        }
        let (_, out) = m
            .run(&sb, &format!("ls -l /proc/self/fd; echo planted >&{fd}"))
            .await;
        assert!(!out.contains("left-open.log"), "{out}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "{out}");
    }
}

#[tokio::test]
async fn writes_inside_the_workspace_and_temp_work() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    // A file of another user (as in a checkout where someone else left a file). Root's
    // commands run as `nobody` with namespaces (they get the workspace owner's rights, not
    // root's) and cannot edit it; in the fallback root may.
    std::fs::write(m.ws.join("theirs.txt"), "old").unwrap();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::os::unix::fs::chown(m.ws.join("theirs.txt"), Some(4242), Some(4242)).unwrap();
    }
    let as_nobody = root && sb.mechanism() == Mechanism::Namespaces;
    let script = r#"set -e
        { echo mine > theirs.txt; } 2>/dev/null || echo refused
        echo hello > new.txt
        mkdir -p a/b/c && echo deep > a/b/c/file
        mv new.txt renamed.txt && mv a/b/c/file a/moved
        rm -r a/b && rm renamed.txt
        echo top > top.txt && sed -i s/top/TOP/ top.txt
        echo t > "$TMPDIR/scratch" && cat "$TMPDIR/scratch"
        mktemp > /dev/null
        echo discard > /dev/null
        git init -q && git add -A && git commit -qm first
        echo more >> top.txt && git commit -qam second
        git log --oneline | wc -l"#;
    let (code, out) = m.run(&sb, script).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.trim_end().ends_with('2'), "{out}");
    assert_eq!(
        std::fs::read_to_string(m.ws.join("top.txt")).unwrap(),
        "TOP\nmore\n"
    );
    assert_eq!(
        std::fs::read_to_string(m.ws.join("a/moved")).unwrap(),
        "deep\n"
    );
    assert!(!m.ws.join("a/b").exists() && !m.ws.join("renamed.txt").exists());
    assert_eq!(
        std::fs::read_to_string(m.tmp.join("scratch")).unwrap(),
        "t\n"
    );
    let theirs = if as_nobody { "old" } else { "mine\n" };
    assert_eq!(
        std::fs::read_to_string(m.ws.join("theirs.txt")).unwrap(),
        theirs
    );
    assert_eq!(out.contains("refused"), as_nobody, "{out}");
    // A later command in the now-protected repository can still commit.
    let (code, out) = m
        .run(
            &sb,
            "echo x > later.txt && git add later.txt && git commit -qm third",
        )
        .await;
    assert_eq!(code, 0, "{out}");
}

#[tokio::test]
async fn everyday_tools_run_normally() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    m.git_repo();
    let script = "set -e; git status --short; python3 -c 'print(6*7)'; \
                  if command -v cargo > /dev/null; then cargo --version; else echo 'cargo (not on PATH)'; fi; \
                  python3 -c 'import multiprocessing as m; l = m.Lock(); l.acquire(); print(\"lock ok\")'";
    let (code, out) = m.run(&sb, script).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("42") && out.contains("cargo ") && out.contains("lock ok"),
        "{out}"
    );
}

/// A TCP listener on 127.0.0.1 in the test process; returns its port and a flag raised when
/// a connection arrives.
fn tcp_listener() -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if conn.is_ok() && tx.send(()).is_err() {
                break;
            }
        }
    });
    (port, rx)
}

#[tokio::test]
async fn network_is_off_by_default_and_on_when_configured() {
    let m = machine();
    let off = m.sandbox(SandboxMode::WorkspaceWrite, false);
    let on = m.sandbox(SandboxMode::WorkspaceWrite, true);
    if !enforced(&off) || !enforced(&on) {
        return;
    }
    let (port, connected) = tcp_listener();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let tcp = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let send_udp = format!(
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp_port}))\""
    );

    let (code, out) = m.run(&off, &tcp).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        connected.recv_timeout(Duration::from_millis(300)).is_err(),
        "a connection got through"
    );
    assert!(
        off.explain_failure(&out, Some(code))
            .is_some_and(|n| n.contains("network = true")),
        "{out}"
    );
    let (code, out) = m.run(&off, &send_udp).await;
    assert_ne!(code, 0, "{out}");
    assert!(udp.recv(&mut [0u8; 8]).is_err(), "a datagram got through");

    let (code, out) = m.run(&on, &tcp).await;
    assert_eq!(code, 0, "{out}");
    connected
        .recv_timeout(Duration::from_secs(5))
        .expect("no connection with the network on");
    let (code, out) = m.run(&on, &send_udp).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        udp.recv(&mut [0u8; 8]).is_ok(),
        "no datagram with the network on"
    );
}

#[tokio::test]
async fn unix_sockets_outside_are_unreachable() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    // Like /var/run/docker.sock: a daemon's socket outside the workspace.
    let path = m.root.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'GET /')\"",
        path.display()
    );
    let (code, out) = m.run(&sb, &script).await;
    assert_ne!(code, 0, "{out}");
    assert!(listener.accept().is_err(), "the daemon got a connection");
    // An abstract socket (no file at all) too.
    use std::os::linux::net::SocketAddrExt;
    let name = format!("rein-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let script =
        format!("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('\\0{name}')\"");
    let (code, out) = m.run(&sb, &script).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        abstract_listener.accept().is_err(),
        "the abstract listener got a connection"
    );
    // Without the sandbox the same commands do connect (the test is not vacuous).
    let (code, out) = m
        .run(&Sandbox::off(m.ws.clone(), m.tmp.clone()), &script)
        .await;
    assert_eq!(code, 0, "{out}");
}

#[tokio::test]
async fn extra_writable_dirs_are_writable_and_nothing_else() {
    let m = machine();
    let cache = m.home.join(".cache/go-build");
    let sb = m
        .sandbox(SandboxMode::WorkspaceWrite, false)
        .with_writable_dirs(vec![cache.clone()]);
    if !enforced(&sb) {
        return;
    }
    let (code, out) = m
        .run(&sb, &format!("echo c > {}/entry", cache.display()))
        .await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(cache.join("entry")).unwrap(), "c\n");
    let (code, out) = m.run(&sb, "echo x > \"$FAKE_HOME/.cache/other\"").await;
    assert_ne!(code, 0, "{out}");
    assert!(!m.home.join(".cache/other").exists());
}

#[tokio::test]
async fn a_temp_dir_made_anew_between_commands_stays_writable() {
    // The next command's Landlock rules are built ahead, while the current one runs; a temp dir
    // removed and made again meanwhile is another directory, and its rules must be too.
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    for round in 0..3 {
        let (code, out) = m.run(&sb, "echo x > \"$TMPDIR/f\" && echo x > f").await;
        assert_eq!(code, 0, "round {round}: {out}");
        // Time for the rules built ahead, then a new temp dir under the same name.
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::remove_dir_all(&m.tmp).unwrap();
        std::fs::create_dir(&m.tmp).unwrap();
    }
    let (code, out) = m.run(&sb, "echo x > \"$FAKE_HOME/f\"").await;
    assert_ne!(code, 0, "a write outside succeeded: {out}");
}

#[tokio::test]
async fn read_only_mode_blocks_workspace_writes() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::ReadOnly, false);
    if !enforced(&sb) {
        return;
    }
    std::fs::write(m.ws.join("file"), "keep").unwrap();
    for script in ["echo x > new", "echo x >> file", "rm file", "mkdir d"] {
        let (code, out) = m.run(&sb, script).await;
        assert_ne!(code, 0, "`{script}` succeeded: {out}");
        assert!(
            sb.explain_failure(&out, Some(code))
                .is_some_and(|n| n.contains("workspace-write")),
            "{out}"
        );
    }
    assert_eq!(snapshot(&m.ws).len(), 1);
    assert_eq!(std::fs::read_to_string(m.ws.join("file")).unwrap(), "keep");
    let (code, out) = m
        .run(
            &sb,
            "cat file && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
        )
        .await;
    assert_eq!((code, out.as_str()), (0, "keept\n"));
}

#[tokio::test]
async fn mode_off_confines_nothing() {
    let m = machine();
    let sb = Sandbox::new(SandboxMode::Off, false, m.ws.clone(), m.tmp.clone());
    assert_eq!(sb.status(), &SandboxStatus::Off);
    let (port, connected) = tcp_listener();
    let script = format!("echo x > \"$FAKE_HOME/f\" && exec 3<>/dev/tcp/127.0.0.1/{port}");
    let (code, out) = m.run(&sb, &script).await;
    assert_eq!(code, 0, "{out}");
    assert!(m.home.join("f").exists());
    connected
        .recv_timeout(Duration::from_secs(5))
        .expect("no connection");
}

#[tokio::test]
async fn without_landlock_the_sandbox_reports_unavailable_and_commands_still_run() {
    let m = machine();
    let sb = Sandbox::without_landlock(
        SandboxMode::WorkspaceWrite,
        false,
        m.ws.clone(),
        m.tmp.clone(),
    );
    match sb.status() {
        SandboxStatus::Unavailable(why) => assert!(why.contains("Landlock"), "{why}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(sb.describe().contains("approval"));
    let (code, out) = m.run(&sb, "echo hi > f && cat f").await;
    assert_eq!((code, out.as_str()), (0, "hi\n"));
}

#[tokio::test]
async fn a_non_root_user_is_confined_too() {
    let m = machine();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "SKIPPED: dropping to another user needs root (this test runs as non-root already)"
        );
        return;
    }
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    for d in [&m.root, &m.ws, &m.tmp, &m.home] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // Whether this kernel lets an unprivileged user make the namespaces at all.
    let mut probe = std::process::Command::new("true");
    probe.uid(65534).gid(65534);
    let supervision = sb.prepare(&mut probe).unwrap();
    let status = probe.status();
    if let Ok(s) = &status {
        supervision.finish(*s);
    }
    if let Err(e) = status {
        eprintln!("SKIPPED: unprivileged user namespaces are unavailable here: {e}");
        return;
    }
    let (port, connected) = tcp_listener();
    let nobody = Some(65534);
    let (code, out) = m
        .run_as(
            &sb,
            "id -u && echo x > inside && echo t > \"$TMPDIR/t\"",
            nobody,
        )
        .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("65534"), "{out}");
    // DAC would allow these (the dirs are world-writable); only the sandbox stops them.
    for script in [
        "echo x > \"$FAKE_HOME/f\"".to_string(),
        format!("exec 3<>/dev/tcp/127.0.0.1/{port}"),
    ] {
        let (code, out) = m.run_as(&sb, &script, nobody).await;
        assert_ne!(code, 0, "`{script}` succeeded as nobody: {out}");
    }
    assert!(!m.home.join("f").exists());
    assert!(connected.try_recv().is_err());
}

#[tokio::test]
async fn terminal_injection_and_signals_outside_are_refused() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    // On a non-terminal the kernel answers ENOTTY; the filter answers EPERM before it.
    let sti = "python3 -c \"import fcntl, termios, sys\ntry:\n fcntl.ioctl(0, termios.TIOCSTI, b'x')\nexcept OSError as e:\n print(e.errno)\"";
    let (_, out) = m.run(&sb, sti).await;
    assert_eq!(out.trim(), "1", "{out}");
    let (_, out) = m.run(&Sandbox::off(m.ws.clone(), m.tmp.clone()), sti).await;
    assert_eq!(out.trim(), "25", "{out}");
    // The test process (rein's stand-in) is outside the sandbox: no signals to it.
    let (code, out) = m.run(&sb, &format!("kill -0 {}", std::process::id())).await;
    assert_ne!(code, 0, "{out}");
}

#[tokio::test]
async fn shared_memory_is_private_to_the_command() {
    let m = machine();
    let sb = m.sandbox(SandboxMode::WorkspaceWrite, false);
    if !enforced(&sb) {
        return;
    }
    let name = format!("/dev/shm/rein-test-{}", std::process::id());
    let (code, out) = m.run(&sb, &format!("echo x > {name} && cat {name}")).await;
    assert_eq!((code, out.as_str()), (0, "x\n"));
    assert!(
        !Path::new(&name).exists(),
        "the command wrote to the host's /dev/shm"
    );
}

#[test]
fn rein_sandbox_runs_a_command_and_returns_its_exit_code() {
    let m = machine();
    // `rein sandbox` runs in the current directory, its workspace (which may lie in `/tmp`,
    // where a command sees only its workspace).
    let here = std::env::current_dir().unwrap();
    let sb = Sandbox::new(SandboxMode::WorkspaceWrite, false, here, m.tmp.clone());
    if !enforced(&sb) {
        return;
    }
    let argv = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
    assert_eq!(run_sandboxed(&sb, &argv("exit 3")).unwrap().0, 3);
    let target = m.home.join("f");
    assert_ne!(
        run_sandboxed(
            &sb,
            &argv(&format!("echo x > {} 2>/dev/null", target.display()))
        )
        .unwrap()
        .0,
        0
    );
    assert!(!target.exists());
    assert_eq!(run_sandboxed(&sb, &argv("kill -9 $$")).unwrap().0, 128 + 9);
    let mut child = std::process::Command::new("true");
    let supervision = sb.prepare(&mut child).unwrap();
    assert!(supervision.finish(child.status().unwrap()).status.success());
}
