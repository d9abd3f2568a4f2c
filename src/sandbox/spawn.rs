//! Starting a prepared command: through the zygote when there is one, else by forking rein.

use super::Confinement;
use super::run::Streams;
use std::io;

/// Starts `cmd` through the zygote; `None` when there is none, or it cannot take this command
/// (a program found through `PATH`), and nothing was started.
#[cfg(target_os = "linux")]
pub(super) fn via_zygote(
    cmd: &std::process::Command,
    confinement: &Confinement,
    streams: &Streams,
) -> Option<io::Result<u32>> {
    use std::os::fd::BorrowedFd;
    use std::os::unix::ffi::OsStrExt;
    let program = cmd.get_program();
    if !std::path::Path::new(program).is_absolute() {
        return None;
    }
    let here = std::env::current_dir().ok()?;
    let cwd = cmd
        .get_current_dir()
        .map_or_else(|| here.clone(), |d| here.join(d));
    let argv = std::iter::once(program)
        .chain(cmd.get_args())
        .map(|a| a.as_bytes().to_vec())
        .collect();
    // The whole environment: `Sandbox::prepare` cleared it and set every variable.
    let env = cmd
        .get_envs()
        .filter_map(|(k, v)| {
            let mut pair = k.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(v?.as_bytes());
            Some(pair)
        })
        .collect();
    let (wire, confinement_fds) = confinement.to_wire();
    let (stdio, mut fds) = streams.for_child();
    // SAFETY: the confinement (and the supervision behind it) keeps these open past the call.
    fds.extend(
        confinement_fds
            .iter()
            .map(|fd| unsafe { BorrowedFd::borrow_raw(*fd) }),
    );
    let req = super::zygote::Request {
        program: program.as_bytes().to_vec(),
        argv,
        env,
        cwd: cwd.as_os_str().as_bytes().to_vec(),
        stdio,
        confinement: wire,
    };
    let started = match super::zygote::launch(&req, &fds)? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    if let Some(e) = started.error {
        // The child exits right after reporting: reap it, as `Command::spawn` does.
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(started.pid, &mut status, 0) };
        return Some(Err(e));
    }
    Some(Ok(started.pid as u32))
}

/// Makes the child that forking `cmd` gives confine itself before exec.
pub(super) fn confine_on_fork(cmd: &mut std::process::Command, confinement: Confinement) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: `enter` only makes async-signal-safe system calls (no allocation, no locks).
        unsafe { cmd.pre_exec(move || confinement.enter()) };
    }
    #[cfg(not(target_os = "linux"))]
    let () = (cmd, confinement);
}

/// Forks rein for `cmd`: the child confines itself before exec.
pub(super) fn by_fork(
    cmd: &mut std::process::Command,
    confinement: Confinement,
    streams: &Streams,
) -> io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let [stdin, stdout, stderr] = streams.stdio()?;
    cmd.stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: `enter` only makes async-signal-safe system calls (no allocation, no locks).
    unsafe {
        cmd.pre_exec(move || confinement.enter())
    };
    #[cfg(not(target_os = "linux"))]
    let () = confinement;
    let spawned = cmd.spawn();
    // rein's copies of the child's ends must go, or the output would never end.
    use std::process::Stdio;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Ok(spawned?.id())
}
