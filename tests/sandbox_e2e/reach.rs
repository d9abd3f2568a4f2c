//! What a command could reach without touching a path: the kernel's keyrings and IPC objects,
//! other processes, descriptors rein inherited, a repository `.git` only points to, and a
//! protected file too large to keep; and the person's runtime directory, which no list of
//! secret places names.

use super::*;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;

/// The number the inherited descriptor gets in rein (and would get in a command).
const INHERITED_FD: i32 = 7;

/// A command that prints what it can read of the user key `desc` (`payload:` and the value, or
/// the error), with the keyring calls of this CPU.
fn read_key(desc: &str) -> String {
    format!(
        "python3 - <<'PY'\n\
         import ctypes, os\n\
         calls = {{'x86_64': (249, 250), 'aarch64': (218, 219)}}[os.uname().machine]\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         kid = libc.syscall(calls[0], b'user', b'{desc}', None, 0)\n\
         buf = ctypes.create_string_buffer(256)\n\
         n = libc.syscall(calls[1], 11, kid, buf, 256) if kid > 0 else -1\n\
         print('payload:' + buf.value.decode() if n > 0 else 'refused: errno %d' % ctypes.get_errno())\n\
         PY"
    )
}

/// Class: the person's kernel keyrings (where Kerberos tickets and cached passwords live)
/// are out of reach: a key in rein's session keyring never reaches the model.
pub fn the_persons_keyrings_are_out_of_reach(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let desc = unique("rein-key");
    let secret = unique("KEYRING-SECRET");
    s.push(bash(&read_key(&desc))).push(Reply::text("done"));
    let mut c = rein(&w, mode);
    let (d, v) = (
        std::ffi::CString::new(desc.clone()).unwrap(),
        secret.clone(),
    );
    // SAFETY: only system calls between fork and exec, on buffers made before the fork.
    unsafe {
        c.pre_exec(move || {
            // A session keyring of rein's own, holding the secret, as a person's would.
            libc::syscall(libc::SYS_keyctl, 1, std::ptr::null::<libc::c_char>());
            let id = libc::syscall(
                libc::SYS_add_key,
                c"user".as_ptr(),
                d.as_ptr(),
                v.as_ptr(),
                v.len(),
                -3, // KEY_SPEC_SESSION_KEYRING
            );
            if id < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let out = exec(c);
    let r = results(&s, 1).content;
    assert!(r.contains("refused"), "the key call was not refused: {r}");
    assert!(
        !r.contains(&secret),
        "the keyring's secret reached the model: {r}"
    );
    let all = String::from_utf8_lossy(&out.stdout);
    assert!(!all.contains(&secret));
}

/// The person's System V shared memory segment, message queue and POSIX message queue, made
/// by the test as the person's programs would (a database's buffers, an X server's window
/// images), removed when dropped. Mode 0666, so that only the IPC namespace, not the
/// permission bits, keeps them from a command (root's commands run as `nobody`).
struct PersonsIpc {
    key: libc::key_t,
    shm: libc::c_int,
    msg: libc::c_int,
    queue: std::ffi::CString,
}

/// `struct msgbuf` with room for one secret.
#[repr(C)]
struct Message {
    kind: libc::c_long,
    text: [u8; 64],
}

impl PersonsIpc {
    fn new(secret: &str) -> PersonsIpc {
        // Positive and never IPC_PRIVATE (0).
        let key = (rand_u64() % 0x7fff_0000) as libc::key_t + 1;
        let queue = std::ffi::CString::new(format!("/{}", unique("rein-queue"))).unwrap();
        // SAFETY: plain IPC calls on buffers owned here; the segment is detached at once.
        unsafe {
            let flags = libc::IPC_CREAT | libc::IPC_EXCL | 0o666;
            let shm = libc::shmget(key, 4096, flags);
            let msg = libc::msgget(key, flags);
            assert!(shm >= 0 && msg >= 0, "{}", std::io::Error::last_os_error());
            let at = libc::shmat(shm, std::ptr::null(), 0);
            assert_ne!(at as isize, -1, "{}", std::io::Error::last_os_error());
            std::ptr::copy_nonoverlapping(secret.as_ptr(), at.cast(), secret.len());
            libc::shmdt(at);
            let mut m = Message {
                kind: 1,
                text: [0; 64],
            };
            m.text[..secret.len()].copy_from_slice(secret.as_bytes());
            let sent = libc::msgsnd(msg, (&raw const m).cast(), secret.len(), 0);
            assert_eq!(sent, 0, "{}", std::io::Error::last_os_error());
            let q = libc::mq_open(queue.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o666, 0usize);
            assert!(q >= 0, "{}", std::io::Error::last_os_error());
            libc::mq_close(q);
            PersonsIpc {
                key,
                shm,
                msg,
                queue,
            }
        }
    }

    /// What the segment holds now.
    fn segment(&self, len: usize) -> Vec<u8> {
        // SAFETY: reads `len` bytes of a 4096-byte segment attached read-only, then detaches.
        unsafe {
            let at = libc::shmat(self.shm, std::ptr::null(), libc::SHM_RDONLY);
            assert_ne!(at as isize, -1);
            let bytes = std::slice::from_raw_parts(at.cast::<u8>(), len).to_vec();
            libc::shmdt(at);
            bytes
        }
    }

    /// The message waiting in the queue, if one is.
    fn message(&self) -> Option<Vec<u8>> {
        let mut m = Message {
            kind: 0,
            text: [0; 64],
        };
        // SAFETY: receives into a buffer of the size given.
        let n = unsafe { libc::msgrcv(self.msg, (&raw mut m).cast(), 64, 0, libc::IPC_NOWAIT) };
        (n >= 0).then(|| m.text[..n as usize].to_vec())
    }

    /// Whether the POSIX queue still exists.
    fn queue_exists(&self) -> bool {
        // SAFETY: opens and closes a queue by name.
        unsafe {
            let q = libc::mq_open(self.queue.as_ptr(), libc::O_RDONLY);
            q >= 0 && libc::mq_close(q) == 0
        }
    }

    /// A command that reads and overwrites what it can reach of these by key and by id, takes
    /// the message, removes the POSIX queue, and makes a segment of its own.
    fn attack(&self, secret_len: usize) -> String {
        let queue = self.queue.to_str().unwrap();
        format!(
            "python3 - <<'PY'\n\
             import ctypes\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             libc.shmat.restype = ctypes.c_void_p\n\
             failed = ctypes.c_void_p(-1).value\n\
             for sid in {{{shm}, libc.shmget({key}, 0, 0)}}:\n\
             \x20   at = libc.shmat(sid, None, 0)\n\
             \x20   if at is None or at == failed:\n\
             \x20       print('shm refused', ctypes.get_errno())\n\
             \x20   else:\n\
             \x20       print('shm:', ctypes.string_at(at, {secret_len}))\n\
             \x20       ctypes.memmove(at, b'X' * {secret_len}, {secret_len})\n\
             for qid in {{{msg}, libc.msgget({key}, 0)}}:\n\
             \x20   buf = ctypes.create_string_buffer(72)\n\
             \x20   n = libc.msgrcv(qid, buf, 64, 0, 0o4000)\n\
             \x20   print('msg:', buf.raw[8:8 + n]) if n >= 0 else print('msg refused', ctypes.get_errno())\n\
             print('mq_unlink', libc.mq_unlink(b'{queue}'), ctypes.get_errno())\n\
             own = libc.shmget(0, 4096, 0o1000 | 0o600)\n\
             print('own shm', 'works' if own >= 0 else 'refused %d' % ctypes.get_errno())\n\
             PY",
            shm = self.shm,
            msg = self.msg,
            key = self.key,
        )
    }
}

impl Drop for PersonsIpc {
    fn drop(&mut self) {
        // SAFETY: removes the objects this value made.
        unsafe {
            libc::shmctl(self.shm, libc::IPC_RMID, std::ptr::null_mut());
            libc::msgctl(self.msg, libc::IPC_RMID, std::ptr::null_mut());
            libc::mq_unlink(self.queue.as_ptr());
        }
    }
}

/// Class: kernel objects Landlock does not govern. The person's System V shared memory and
/// message queues (and POSIX message queues) are neither read, nor changed, nor removed by a
/// command; with namespaces the command gets IPC of its own, which works.
pub fn the_persons_shared_memory_and_message_queues_are_out_of_reach(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("SHM-SECRET");
    let ipc = PersonsIpc::new(&secret);
    s.push(bash(&ipc.attack(secret.len())))
        .push(Reply::text("done"));
    let out = exec(rein(&w, mode));
    let r = results(&s, 1).content;
    assert!(r.contains("own shm"), "the attack did not run: {r}");
    assert!(
        !r.contains(&secret),
        "the person's IPC reached the model: {r}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&secret));
    assert_eq!(ipc.segment(secret.len()), secret.as_bytes(), "changed: {r}");
    assert_eq!(ipc.message().as_deref(), Some(secret.as_bytes()), "{r}");
    assert!(
        ipc.queue_exists(),
        "the person's POSIX queue was removed: {r}"
    );
    // Programs that use System V IPC (a test database) work where it is the command's own.
    let own = match mode {
        Mode::Fallback => format!("own shm refused {}", libc::ENOSYS),
        Mode::Namespaces | Mode::Forked => "own shm works".into(),
    };
    assert!(r.contains(&own), "{r}");
}

/// The `Max open files` line of a process's limits and its nice value.
fn limits_and_nice(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let nofile = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: state is field 3, nice field 19.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let nice = rest.split(' ').nth(16).unwrap().to_string();
    (nofile, nice)
}

/// Class: processes outside the sandbox, by pid. Landlock governs signals and ptrace, not a
/// process's limits or priority: a command that shared the person's PID namespace lowered
/// rein's open-file limit or gave it a file size limit of 0, which kills it at its next write,
/// and reniced the person's programs, for good. Its own limits and priority still change.
/// Their environment stays unread too (Landlock's ptrace rule, without a PID namespace).
pub fn processes_outside_keep_their_limits_and_priority(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("VICTIM-SECRET");
    let mut victim = Command::new("sleep")
        .arg("120")
        .env("VICTIM_TOKEN", &secret)
        .spawn()
        .unwrap();
    let before = limits_and_nice(victim.id());
    let attack = format!(
        r#"p=$PPID; rein=
        while [ "${{p:-0}}" -gt 1 ]; do
            [ "$(cat /proc/$p/comm 2>/dev/null)" = rein ] && rein="$rein $p"
            p=$(awk '{{print $4}}' /proc/$p/stat 2>/dev/null)
        done
        echo "rein:$rein"
        tr '\0' '\n' < /proc/{victim}/environ
        for t in {victim} $rein; do
            prlimit --pid $t --nofile=64:64 && echo "changed-limit $t"
            renice -n 19 -p $t >/dev/null && echo "changed-priority $t"
        done
        prlimit --nofile=512:512 sh -c 'ulimit -n' && echo own-limit
        nice -n 5 nice && echo own-priority"#,
        victim = victim.id()
    );
    s.push(script(&w, &attack)).push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    let after = limits_and_nice(victim.id());
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(
        !r.contains("changed-"),
        "a process outside was changed: {r}"
    );
    assert_eq!(after, before, "{r}");
    assert!(r.contains("own-limit") && r.contains("own-priority"), "{r}");
    if mode == Mode::Fallback {
        // Without a PID namespace rein is there to be named: the attack aimed at it.
        let line = r.lines().find(|l| l.starts_with("rein:")).unwrap_or("");
        assert!(line.len() > "rein:".len(), "rein not found: {r}");
    }
}

/// Class: secrets outside home that no list names. The person's runtime directory
/// (`$XDG_RUNTIME_DIR`, `/run/user/<uid>`) holds podman's registry credentials, keyring and
/// agent sockets: neither a command nor the file tools see anything in it, under any name.
pub fn the_persons_runtime_directory_is_out_of_reach(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let runtime = w.dir.path().join(unique("runtime"));
    let secret = unique("REGISTRY-SECRET");
    std::fs::create_dir_all(runtime.join("containers")).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let auth = runtime.join("containers/auth.json");
    std::fs::write(
        &auth,
        format!("{{\"auths\":{{\"r\":{{\"auth\":\"{secret}\"}}}}}}"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&runtime, w.ws.join("run-link")).unwrap();
    let dir = runtime.display();
    s.push(script(
        &w,
        &format!(
            "cat '{dir}/containers/auth.json'; ls -laR '{dir}'; cat run-link/containers/auth.json; \
             grep -r REGISTRY '{dir}' /run/user 2>&1 | head; find '{dir}' -type f -exec cat {{}} +; true"
        ),
    ))
    .push(Reply::tool_call(
        "read_file",
        json!({ "path": auth.to_string_lossy() }),
    ))
    .push(Reply::tool_call(
        "read_file",
        json!({ "path": "run-link/containers/auth.json" }),
    ))
    .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.env("XDG_RUNTIME_DIR", &runtime);
    let out = exec(c);
    let shown = attacked(&s, 1);
    assert!(
        !shown.contains(&secret),
        "a command read the runtime directory: {shown}"
    );
    for i in [2, 3] {
        let r = results(&s, i).content;
        assert!(!r.contains(&secret), "read_file {i} read it: {r}");
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&secret));
}

/// Class: secrets outside home that no list names, in the shared temporary directories. A
/// Kerberos ticket cache (`/tmp/krb5cc_<uid>`, 0600) or any other file of the person's there
/// is out of reach of commands and the file tools; the workspace and the session's temp dir,
/// which lie there too, still work.
pub fn the_shared_temporary_directories_show_only_the_workspace(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("TICKET-SECRET");
    let planted: Vec<PathBuf> = ["/tmp", "/var/tmp"]
        .iter()
        .filter(|d| Path::new(d).is_dir())
        .map(|d| Path::new(d).join(unique("krb5cc")))
        .collect();
    for p in &planted {
        std::fs::write(p, &secret).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let names: Vec<String> = planted
        .iter()
        .map(|p| format!("'{}'", p.display()))
        .collect();
    let names = names.join(" ");
    // Every file at the top of the shared temp dirs, where the tickets are, is tried; not the
    // whole trees (a build's `target` there made the search outlast the call's timeout).
    s.push(script(
        &w,
        &format!(
            "cat {names}; find /tmp /var/tmp -maxdepth 1 -type f -exec grep -a TICKET {{}} + \
             2>/dev/null | head -3; \
             echo temp-ok > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; echo ws-ok > in-ws && cat in-ws; true"
        ),
    ))
    .push(Reply::tool_call(
        "read_file",
        json!({ "path": planted[0].to_string_lossy() }),
    ))
    .push(bash(&format!("cat {names}")))
    .push(Reply::text("done"));
    let out = exec(rein(&w, mode));
    for p in &planted {
        let _ = std::fs::remove_file(p);
    }
    let shown = attacked(&s, 1);
    assert!(
        !shown.contains(&secret),
        "a command read a shared temp dir: {shown}"
    );
    assert!(
        shown.contains("temp-ok") && shown.contains("ws-ok"),
        "the temp dir or the workspace broke: {shown}"
    );
    let r = results(&s, 2).content;
    assert!(!r.contains(&secret), "read_file read it: {r}");
    // The failed command says why, so the model asks instead of hunting for another way
    // (in the fallback the read rules answer "Permission denied", the mounts "No such file").
    let r = results(&s, 3).content;
    assert!(!r.contains(&secret));
    assert!(
        r.contains("hidden from bash") && r.contains("read_allow"),
        "no note on the hidden place: {r}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&secret));
}

/// Whether the test runs as root, which these classes are about; says so when not.
fn as_root(class: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("{class}: not root, so rein's commands are not either; nothing to check");
    }
    root
}

/// Class: secrets outside home that no list names and only root may read. When rein runs
/// as root (containers, CI agents), its commands run as `nobody`: a key only root may read
/// (`/etc/ssl/private`, the ssh host keys), another person's private file and a group-root
/// file stay out of reach, whatever their names; the workspace still works, and what the
/// command writes there belongs on disk to the workspace's owner (here another user, whose
/// repository root works in). The fallback, without namespaces, keeps root's file rights and
/// its user; there Landlock leaves out, by their mode, what only root or a group may read in
/// `/etc` and `/opt` (a new directory there holds the files).
pub fn what_only_root_may_read_is_out_of_reach_of_roots_commands(mode: Mode) {
    if !as_root("root-only files") {
        return;
    }
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("ROOT-ONLY-SECRET");
    // In a top-level directory commands read (the system's), so no view covers it: only
    // the file rights of `nobody` keep it out of reach.
    let place = readable_system_dir();
    let files = [
        ("host_key", 0, 0, 0o600),
        ("others", 4321, 4321, 0o600),
        ("group", 0, 0, 0o640),
    ];
    for (name, uid, gid, perm) in files {
        let p = place.path().join(name);
        std::fs::write(&p, format!("{secret}-{name}")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(perm)).unwrap();
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    }
    std::os::unix::fs::chown(&w.ws, Some(4321), Some(4321)).unwrap();
    let dir = place.path().display();
    s.push(script(
        &w,
        &format!(
            "cat {dir}/host_key {dir}/others {dir}/group; grep -r ROOT-ONLY {dir}; \
             echo made > made-here && cat made-here; true"
        ),
    ))
    .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        !r.contains(&secret),
        "root's command read a root-only file: {r}"
    );
    assert!(r.contains("Permission denied"), "{r}");
    assert!(r.contains("made"), "the workspace broke: {r}");
    let made = std::fs::metadata(w.ws.join("made-here")).unwrap();
    if mode != Mode::Fallback {
        assert_eq!(
            (made.uid(), made.gid()),
            (4321, 4321),
            "a new file belongs to the workspace's owner"
        );
    }
}

/// A new directory in `/opt`, one of the top-level directories commands read as they are
/// (`nobody` may pass it).
fn readable_system_dir() -> tempfile::TempDir {
    std::fs::create_dir_all("/opt").unwrap();
    let dir = tempfile::Builder::new()
        .prefix("rtw")
        .tempdir_in("/opt")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Class: secrets in places no list names, outside home and the shared temporary
/// directories: a directory at `/` outside the system's (a data disk, `/srv`), one in `/run`
/// (a container's `/run/secrets`), and beside the workspace (the tests' worlds lie in `/var`
/// or `/home`). Every file world-readable, so only the sandbox's allow-list of top-level
/// directories keeps them out of reach, whatever their names. The system, the workspace and a
/// place `read_allow` names in such a directory stay readable.
pub fn a_secret_in_a_top_level_directory_no_list_names_is_out_of_reach(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("TOP-LEVEL-SECRET");
    let readable = |p: &Path, text: &str| {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
    };
    let beside = w.dir.path().join("beside-token");
    readable(&beside, &secret);
    let mut files = vec![beside];
    // Only root may make directories at `/` and in `/run`.
    let made: Vec<tempfile::TempDir> = if as_root("top-level directories") {
        ["/", "/run"]
            .iter()
            .map(|at| {
                tempfile::Builder::new()
                    .prefix("rtw")
                    .tempdir_in(at)
                    .unwrap()
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut shown = None;
    for dir in &made {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let token = dir.path().join("token");
        readable(&token, &secret);
        files.push(token);
        let place = dir.path().join("shown");
        std::fs::create_dir(&place).unwrap();
        readable(&place.join("data"), "shown-data-line");
        shown = Some(place);
    }
    if let Some(place) = &shown {
        w.user_config(&format!(
            "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nread_allow = [\"{}\"]\n",
            place.display()
        ));
    }
    let cats: Vec<String> = files
        .iter()
        .map(|f| format!("cat '{}';", f.display()))
        .collect();
    let shown_cat = shown.map_or(String::new(), |p| format!("cat '{}/data';", p.display()));
    s.push(script(
        &w,
        &format!(
            "{} {shown_cat} head -c 200 /etc/os-release; echo made > f && cat f; true",
            cats.join(" ")
        ),
    ))
    .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        !r.contains(&secret),
        "a command read a secret no list names: {r}"
    );
    assert!(r.contains("ID="), "the system is hidden: {r}");
    assert!(r.contains("made"), "the workspace broke: {r}");
    if !made.is_empty() {
        assert!(
            r.contains("shown-data-line"),
            "a place home_allow names is hidden: {r}"
        );
    }
}

/// A directory made at `/` while the session runs (a drive mounted, a container's secrets
/// directory) stays hidden from the next command: `/` grants only the system's directories,
/// not whatever it holds when a ruleset is built again.
pub fn a_directory_made_at_the_root_while_the_session_runs_stays_hidden(mode: Mode) {
    if !as_root("a directory made at /") {
        return;
    }
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("MADE-AT-ROOT-SECRET");
    let later = Path::new("/").join(unique("rtw-later"));
    let gate = Gate::new();
    s.push(script(&w, "true"))
        .push(script(&w, &format!("cat '{}/token'; true", later.display())).pause_after(0, &gate))
        .push(Reply::text("done"));
    let maker = {
        let (gate, later, secret) = (gate.clone(), later.clone(), secret.clone());
        std::thread::spawn(move || {
            // The first command has run (its ruleset's successor is built) when the second
            // reply is asked for.
            assert!(gate.wait_reached(Duration::from_secs(60)), "never asked");
            std::fs::create_dir(&later).unwrap();
            std::fs::write(later.join("token"), &secret).unwrap();
            gate.release();
        })
    };
    exec(rein(&w, mode));
    maker.join().unwrap();
    let r = attacked(&s, 2);
    std::fs::remove_dir_all(&later).unwrap();
    assert!(!r.contains(&secret), "a directory made at / was read: {r}");
    assert!(r.contains("Permission denied"), "{r}");
}

/// rein started in a subdirectory of a repository: commands read the repository's root (a
/// build's root manifest, git's directory), wherever it lies, and still write only the
/// workspace.
pub fn a_workspace_in_a_subdirectory_of_a_repository_reads_its_root(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    git(&w, &["init", "-q"]);
    std::fs::write(w.ws.join("top.txt"), "the-root-manifest").unwrap();
    let sub = w.ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    s.push(script(
        &w,
        "cat ../top.txt; echo no > ../escape; echo yes > here; true",
    ))
    .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.current_dir(&sub);
    exec(c);
    let r = attacked(&s, 1);
    assert!(
        r.contains("the-root-manifest"),
        "the repository's root is hidden: {r}"
    );
    assert!(
        !w.ws.join("escape").exists(),
        "a write outside the workspace landed"
    );
    assert!(sub.join("here").exists(), "the workspace broke: {r}");
}

/// A linked worktree (`git worktree add`) reads its main repository's git directories, which
/// lie outside it; a `.git` file the main repository never registered shows nothing: a hostile
/// checkout's `gitdir:` line could name any directory of the person's.
pub fn a_linked_worktree_reads_its_main_repository_and_nothing_else(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let main = w.dir.path().join("main");
    std::fs::create_dir(&main).unwrap();
    let m = main.display().to_string();
    git(&w, &["-C", &m, "init", "-q"]);
    git(
        &w,
        &[
            "-C",
            &m,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "the-main-commit",
        ],
    );
    git(
        &w,
        &[
            "-C",
            &m,
            "worktree",
            "add",
            "-q",
            &w.ws.display().to_string(),
        ],
    );
    s.push(script(
        &w,
        "git -c safe.directory='*' log --oneline | head -1; true",
    ))
    .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        r.contains("the-main-commit"),
        "git cannot read the main repository: {r}"
    );

    // A hostile checkout's `.git` file naming a directory of the person's that no main
    // repository registered: nothing is shown.
    let Some((s, w)) = mode.world() else {
        return;
    };
    let secret = unique("UNREGISTERED-GITDIR-SECRET");
    let named = w.dir.path().join("named");
    std::fs::create_dir(&named).unwrap();
    std::fs::write(named.join("key"), &secret).unwrap();
    std::fs::write(named.join("commondir"), "..\n").unwrap();
    std::fs::write(w.ws.join(".git"), format!("gitdir: {}\n", named.display())).unwrap();
    s.push(script(&w, &format!("cat '{}/key'; true", named.display())))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        !r.contains(&secret),
        "an unregistered gitdir was shown: {r}"
    );
}

/// A workspace inside a directory only its owner may enter (`/home/alice`, 0700) still works
/// for root's commands by its full path, and nothing else in that directory shows.
pub fn a_workspace_in_a_closed_directory_works_for_roots_commands(mode: Mode) {
    if mode == Mode::Fallback || !as_root("closed directory") {
        return;
    }
    let Some((s, w)) = mode.world() else {
        return;
    };
    let closed = crate::support::rein::world_dir();
    let secret = unique("CLOSED-DIR-SECRET");
    std::fs::write(closed.path().join("private"), &secret).unwrap();
    let ws = closed.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let ws_real = ws.canonicalize().unwrap();
    let full = ws_real.display();
    s.push(script(
        &w,
        &format!(
            "echo in-ws > {full}/f && cat {full}/f && cd / && cat {full}/f; \
             cat {full}/../private; ls {full}/..; true"
        ),
    ))
    .push(Reply::text("done"));
    let mut c = rein(&w, mode);
    c.current_dir(&ws);
    exec(c);
    let r = attacked(&s, 1);
    assert_eq!(
        r.matches("in-ws").count(),
        2,
        "the workspace by its full path: {r}"
    );
    assert!(!r.contains(&secret), "the closed directory showed: {r}");
    assert_eq!(std::fs::read_to_string(ws.join("f")).unwrap(), "in-ws\n");
}

/// The person can show a place of `/tmp` to commands: `[sandbox] home_allow` takes absolute
/// places there (a build's log another program writes), and only that place is shown.
pub fn a_place_in_tmp_named_in_home_allow_is_shown(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let shown = tempfile::Builder::new()
        .prefix("rein-logs")
        .tempdir()
        .unwrap();
    let shown_path = shown.path().canonicalize().unwrap();
    std::fs::write(shown_path.join("build.log"), "the-log-line").unwrap();
    let beside = tempfile::tempdir().unwrap();
    std::fs::write(beside.path().join("other.log"), "not-shown-line").unwrap();
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nhome_allow = [\"{}\"]\n",
        shown_path.display()
    ));
    s.push(script(
        &w,
        &format!(
            "cat '{}/build.log' '{}/other.log'; true",
            shown_path.display(),
            beside.path().display()
        ),
    ))
    .push(Reply::text("done"));
    exec(rein(&w, mode));
    let r = attacked(&s, 1);
    assert!(
        r.contains("the-log-line"),
        "the allowed place is hidden: {r}"
    );
    assert!(
        !r.contains("not-shown-line"),
        "more than the allowed place shows: {r}"
    );
}

/// A file outside the workspace opened for appending and left open (not close-on-exec) as
/// `INHERITED_FD` in whatever `c` starts, as a wrapper script's `exec 7>>log` would.
fn inherit_outside_file(w: &World, c: &mut Command) -> PathBuf {
    let outside = w.dir.path().join("inherited.log");
    let file = std::fs::File::create(&outside).unwrap();
    let raw = file.as_raw_fd();
    // SAFETY: dup2 between fork and exec; the descriptor stays open in this process meanwhile.
    unsafe {
        c.pre_exec(move || match libc::dup2(raw, INHERITED_FD) {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        })
    };
    std::mem::forget(file);
    outside
}

/// Class: descriptors rein inherited (a log file outside, another terminal) never reach a
/// command: a write through one would land outside, past Landlock, which checks opens.
pub fn inherited_descriptors_never_reach_a_command(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let attack = format!("ls -l /proc/self/fd; echo planted >&{INHERITED_FD}; echo \"exit $?\"");
    s.push(script(&w, &attack)).push(Reply::text("done"));
    let mut c = rein(&w, mode);
    let outside = inherit_outside_file(&w, &mut c);
    exec(c);
    let r = attacked(&s, 1);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "{r}");
    assert!(
        !r.contains("inherited.log"),
        "the command saw the descriptor: {r}"
    );
}

/// The same for the processes rein starts unsandboxed: with `sandbox = "off"` a command is
/// started by the launch gate alone, and still gets only its three streams.
#[test]
fn inherited_descriptors_never_reach_an_unsandboxed_command() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    w.user_config("sandbox = \"off\"\n");
    s.push(bash(&format!(
        "ls -l /proc/self/fd; echo planted >&{INHERITED_FD}"
    )))
    .push(Reply::text("done"));
    let mut c = rein(&w, Mode::Namespaces);
    let outside = inherit_outside_file(&w, &mut c);
    exec(c);
    let r = results(&s, 1).content;
    assert!(r.contains("/proc/self/fd") || r.contains("total"), "{r}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "{r}");
}

/// Class 1 for a `.git` that only points to the repository (`git init --separate-git-dir`
/// into the workspace, or a symlinked `.git`): what a command plants there never reaches the
/// person's git either.
pub fn a_linked_repository_in_the_workspace_is_protected_too(mode: Mode) {
    for layout in ["gitdir file", "symlink"] {
        let Some((s, w)) = mode.world() else {
            return;
        };
        let (payload_script, marker) = payload(&w);
        std::fs::write(
            w.home.join(".gitconfig"),
            "[user]\n\tname = p\n\temail = p@example.com\n",
        )
        .unwrap();
        std::fs::create_dir(w.ws.join("meta")).unwrap();
        match layout {
            "gitdir file" => {
                let dir = w.ws.join("meta/gitdata");
                git(
                    &w,
                    &[
                        "init",
                        "-q",
                        &format!("--separate-git-dir={}", dir.display()),
                    ],
                );
            }
            _ => {
                git(&w, &["init", "-q"]);
                std::fs::rename(w.ws.join(".git"), w.ws.join("meta/gitdata")).unwrap();
                std::os::unix::fs::symlink("meta/gitdata", w.ws.join(".git")).unwrap();
            }
        }
        w.write("README", "hi\n");
        git(&w, &["add", "README"]);
        git(&w, &["commit", "-qm", "first"]);
        let plant = format!(
            "printf '[core]\\n\\tfsmonitor = {s} fsmonitor\\n' >> meta/gitdata/config; \
             mkdir -p meta/gitdata/hooks; printf '#!/bin/sh\\n{s} hook\\n' > meta/gitdata/hooks/pre-commit; \
             chmod +x meta/gitdata/hooks/pre-commit; echo attempted",
            s = payload_script.display()
        );
        s.push(script(&w, &plant)).push(Reply::text("done"));
        exec(rein(&w, mode));
        attacked(&s, 1);
        let config = std::fs::read_to_string(w.ws.join("meta/gitdata/config")).unwrap();
        assert!(!config.contains("fsmonitor"), "{layout}: {config}");
        persons_git_runs_nothing(&w, &marker);
    }
}

/// A hooks directory `.githooks` the person's git uses (`core.hooksPath`), holding
/// `pre-commit` with `own_hook`.
fn persons_hooks_dir(w: &World, own_hook: &str) {
    std::fs::create_dir(w.ws.join(".githooks")).unwrap();
    w.write(".githooks/pre-commit", own_hook);
    let exe = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(w.ws.join(".githooks/pre-commit"), exe).unwrap();
    git(w, &["config", "core.hooksPath", ".githooks"]);
}

/// A command that rewrites `.githooks/pre-commit` to run `payload` (its line marked `tag`) at
/// the same size and puts its modification time back, so only the change time tells; then it
/// runs on for `settle_ms`.
fn same_size_and_time_rewrite(payload: &Path, tag: &str, settle_ms: u32) -> String {
    format!(
        "python3 - <<'PY'\n\
         import os, time\n\
         p = '.githooks/pre-commit'\n\
         st = os.stat(p)\n\
         old = open(p).read()\n\
         new = '#!/bin/sh\\n{s} {tag}\\n#'\n\
         new = (new + old[len(new):])[:len(old)]\n\
         assert len(new) == len(old) and '{tag}' in new, (len(new), len(old))\n\
         try:\n    open(p, 'w').write(new)\nexcept OSError as e:\n    print('write refused', e)\n\
         os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\n\
         time.sleep({settle_ms} / 1000)\n\
         PY",
        s = payload.display()
    )
}

/// Class 1 for protected files too large to keep a copy of: a hook rewritten at the same
/// size with its old modification time put back is still seen (fallback) or never written.
pub fn a_large_protected_hook_cannot_be_swapped_unseen(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    // Over a MiB, so the tripwire keeps no copy.
    persons_hooks_dir(
        &w,
        &format!("#!/bin/sh\n#{}\nexit 0\n", "x".repeat(1 << 20)),
    );
    let plant = same_size_and_time_rewrite(&payload_script, "large-hook", 0);
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    let now = std::fs::read_to_string(w.ws.join(".githooks/pre-commit")).unwrap_or_default();
    assert!(!now.contains("large-hook"), "the planted hook is in place");
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for protected files the fallback keeps a copy of between commands (see the
/// tripwire's `read_kept`): a hook read by an earlier command's check, then rewritten at the
/// same size with its old modification time by a command that runs on until the change has
/// settled, is still seen (fallback) or never written.
pub fn a_kept_protected_hook_cannot_be_swapped_unseen(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    // Long enough for the planted line, well under the size the tripwire keeps copies of.
    persons_hooks_dir(
        &w,
        &format!(
            "#!/bin/sh\n# the team's checks {}\nexit 0\n",
            "x".repeat(300)
        ),
    );
    // Older than a timestamp tick and then some when the first command's check reads it.
    std::thread::sleep(std::time::Duration::from_millis(150));
    let plant = same_size_and_time_rewrite(&payload_script, "kept-hook", 200);
    s.push(script(&w, "true"))
        .push(script(&w, &plant))
        .push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 2);
    let now = std::fs::read_to_string(w.ws.join(".githooks/pre-commit")).unwrap_or_default();
    assert!(!now.contains("kept-hook"), "the planted hook is in place");
    persons_git_runs_nothing(&w, &marker);
}

/// Class 1 for a repository renamed away (`mv .git .git-away` after planting in it): the person
/// is never left to move the planted copy back; rein moves it back and undoes the plants
/// (without namespaces), or the rename fails (with them).
pub fn a_renamed_repository_is_moved_back(mode: Mode) {
    let Some((s, w)) = mode.world() else {
        return;
    };
    let (payload_script, marker) = payload(&w);
    repo(&w);
    let plant = format!(
        "mkdir -p .git/hooks; printf '#!/bin/sh\\n{s} hook\\n' > .git/hooks/pre-commit; \
         chmod +x .git/hooks/pre-commit; mv .git .git-away; mkdir .git; echo attempted",
        s = payload_script.display()
    );
    s.push(script(&w, &plant)).push(Reply::text("done"));
    exec(rein(&w, mode));
    attacked(&s, 1);
    assert!(
        !w.ws.join(".git-away").exists(),
        "the repository was left renamed"
    );
    persons_git_runs_nothing(&w, &marker);
}
