//! The sandbox's zygote through the real binary: commands come from it (not from forks of
//! rein), it holds no environment, it does not outlive rein, and a zygote killed mid-session
//! loses no command.
#![cfg(target_os = "linux")]

use crate::sandbox_e2e::processes_with;
use crate::support::rein::{World, assert_ok, last_result};
use crate::support::{Reply, ScriptedServer};
use rein::sandbox::zygote::ZYGOTE_ARG;
use serde_json::json;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bash(command: &str) -> Reply {
    Reply::tool_call("bash", json!({ "command": command }))
}

/// `rein exec --yes go` in `w`, started (not waited for).
fn start(w: &World) -> Child {
    let mut c = Command::new(crate::support::rein::rein_bin());
    c.env_clear()
        .current_dir(&w.ws)
        .envs(w.env_vars())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .args(["exec", "--yes", "go"]);
    c.spawn().unwrap()
}

/// Starts `rein exec` in `w` (its first command must run a while) and returns it with the
/// processes seen while the command runs: the zygote and the command's supervisor, both rein's
/// children with the zygote's command line (a fork of rein would carry rein's `exec --yes go`).
fn start_and_see_the_zygote(w: &World) -> (Child, Vec<u32>) {
    let child = start(w);
    let rein = child.id();
    let mut seen = Vec::new();
    let both = wait_for(Duration::from_secs(20), || {
        seen = zygote_children(rein);
        seen.len() >= 2
    });
    assert!(both, "no zygote-started command under rein: {seen:?}");
    (child, seen)
}

/// Waits for `child` (at most 90 s).
fn finish(child: Child) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(90)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("rein did not finish");
        }
    }
}

/// The children of `pid` (every thread's) whose command line is the zygote's, that is the
/// zygote and the supervisors it cloned for rein.
fn zygote_children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for child in children_of(pid) {
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        let is_zygote = cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == ZYGOTE_ARG.as_bytes());
        if is_zygote && !found.contains(&child) {
            found.push(child);
        }
    }
    found
}

/// The children of `pid`'s threads.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|t| {
            let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            list.split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Polls until `check` holds (at most `limit`).
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Whether `pid` is gone (or only a zombie waiting for its new parent).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

#[test]
fn commands_start_from_the_zygote_which_holds_nothing_and_ends_with_rein() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    s.push(bash("sleep 3; echo slept"))
        .push(Reply::text("done"));
    let (child, seen) = start_and_see_the_zygote(&w);
    for pid in &seen {
        // Readable as the same user only where the test may (root); the zygote's own
        // environment is empty, so no key can be in it.
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            let key = w
                .env_vars()
                .into_iter()
                .find(|(k, _)| k.contains("API_KEY"));
            if let Some((_, value)) = key {
                let value = value.to_string_lossy().into_owned();
                assert!(
                    !String::from_utf8_lossy(&env).contains(&value),
                    "the key reached process {pid}"
                );
            }
        }
    }
    let out = finish(child);
    assert_ok(&out);
    assert!(last_result(&s.request(1)).content.contains("slept"));
    assert!(
        wait_for(Duration::from_secs(10), || seen.iter().all(|p| gone(*p))),
        "a zygote process outlived rein: {seen:?}"
    );
}

#[test]
fn a_killed_zygote_loses_no_command() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    s.push(bash("touch started; sleep 2; echo first-done"))
        .push(bash("echo second-done"))
        .push(Reply::text("done"));
    let child = start(&w);
    let rein = child.id();
    let mut seen = Vec::new();
    // Killed while idle: once the first command runs (a kill while it starts one is covered
    // too, but its timing cannot be chosen from outside).
    let running = wait_for(Duration::from_secs(20), || {
        seen = zygote_children(rein);
        seen.len() >= 2 && w.ws.join("started").exists()
    });
    assert!(running, "no zygote-started command under rein: {seen:?}");
    // The zygote has no children of its own (it clones them for rein); the supervisor has.
    let zygote = *seen
        .iter()
        .find(|p| children_of(**p).is_empty())
        .expect("the zygote");
    unsafe { libc::kill(zygote as i32, libc::SIGKILL) };
    let out = finish(child);
    assert_ok(&out);
    let first = last_result(&s.request(1)).content;
    assert!(first.contains("first-done"), "{first}");
    let second = last_result(&s.request(2)).content;
    assert!(second.contains("second-done"), "{second}");
}

#[test]
fn a_command_stopped_at_its_timeout_leaves_nothing_running() {
    // The zygote's child is the init of the command's PID namespace: an init ignores signals
    // it has no handler for, so rein's stop request must still reach it (it is blocked before
    // the child exists) and take everything in the namespace with it.
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let tag = format!(
        "{}.{}",
        1000 + std::process::id() % 1000,
        std::process::id()
    );
    let command = format!(
        "(trap '' TERM HUP INT; exec sleep {tag}1) > /dev/null 2>&1 & \
         setsid sleep {tag}2 > /dev/null 2>&1 & echo started; sleep {tag}3"
    );
    s.push(Reply::tool_call(
        "bash",
        json!({ "command": command, "timeout_secs": 1 }),
    ))
    .push(Reply::text("done"));
    let out = finish(start(&w));
    assert_ok(&out);
    let result = last_result(&s.request(1)).content;
    assert!(result.contains("started"), "{result}");
    assert!(result.contains("timed out after 1s"), "{result}");
    let left = || processes_with(&format!("sleep {tag}"));
    assert!(
        wait_for(Duration::from_secs(5), || left().is_empty()),
        "outlived the timeout: {:?}",
        left()
    );
}

/// A command that cannot start is reported as such, from the zygote and from a fork alike, and
/// the next command still runs. Here bash is found (as rein looks, outside the sandbox) in a
/// directory of `$HOME` the sandbox does not show, so its exec fails inside: the start status
/// comes back on rein's own pipe (without it, the failure looks like a command that ran and
/// exited 127).
#[test]
fn a_command_that_cannot_start_says_so_and_the_session_goes_on() {
    for zygote in ["1", "0"] {
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        let tools = w.home.join("odd-tools");
        std::fs::create_dir_all(&tools).unwrap();
        let bash_path = String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v bash"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        std::fs::copy(bash_path.trim(), tools.join("bash")).unwrap();
        s.push(bash("echo first"))
            .push(bash("echo second"))
            .push(Reply::text("done"));
        let mut c = w.cmd();
        c.env("PATH", &tools)
            .env(rein::sandbox::zygote::SWITCH, zygote)
            .args(["exec", "--yes", "go"]);
        let out = crate::support::rein::run_with_timeout(c, Duration::from_secs(60));
        assert_ok(&out);
        for i in [1, 2] {
            let result = last_result(&s.request(i)).content;
            assert!(
                result.contains("could not start bash"),
                "zygote={zygote}, call {i}: {result}"
            );
        }
    }
}

/// The scheduler slice `/proc/<pid>/sched` shows (`se.slice`), when the kernel has one.
fn slice_in(sched: &str) -> Option<u64> {
    let line = sched
        .lines()
        .find(|l| l.trim_start().starts_with("se.slice"))?;
    line.rsplit(':').next()?.trim().parse().ok()
}

/// The zygote and the supervisors it clones ask for the shortest scheduler slice (they only
/// hand over to each other, and each hand-off waited a whole slice behind busy tasks under
/// load); the command gets the kernel's default back before exec.
#[test]
fn the_zygote_starts_commands_with_a_short_slice_and_commands_run_with_the_default() {
    let own = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
    let Some(default) = slice_in(&own) else {
        eprintln!("skipping: this kernel shows no scheduler slice");
        return;
    };
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    s.push(bash("sleep 2; grep se.slice /proc/self/sched"))
        .push(Reply::text("done"));
    let (child, seen) = start_and_see_the_zygote(&w);
    for pid in &seen {
        let sched = std::fs::read_to_string(format!("/proc/{pid}/sched")).unwrap_or_default();
        assert_eq!(slice_in(&sched), Some(100_000), "process {pid}: {sched}");
    }
    let out = finish(child);
    assert_ok(&out);
    let result = last_result(&s.request(1)).content;
    assert_eq!(slice_in(&result), Some(default), "the command's: {result}");
}

/// Whether `pid` is a zombie (exited, not reaped).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

/// The zygote makes the next command's namespaces ahead; when the next command's differ (here
/// each command makes a place the person hides, which the next one must not see) those end,
/// and rein, their parent, reaps them: none is left a zombie.
#[test]
fn namespaces_made_ahead_and_not_used_are_reaped() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let hidden: Vec<String> = (0..6)
        .map(|i| format!("\"{}\"", w.ws.join(format!("h{i}")).display()))
        .collect();
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n[sandbox]\nhide = [{}]\n",
        hidden.join(", ")
    ));
    for i in 0..6 {
        s.push(bash(&format!("mkdir h{i} && echo made {i}")));
    }
    s.push(bash("touch ready; sleep 2; echo slept"))
        .push(Reply::text("done"));
    let child = start(&w);
    let rein = child.id();
    let ready = w.ws.join("ready");
    assert!(
        wait_for(Duration::from_secs(60), || ready.exists()),
        "the last command did not start"
    );
    let zombies: Vec<u32> = children_of(rein)
        .into_iter()
        .filter(|p| zombie(*p))
        .collect();
    let out = finish(child);
    assert_ok(&out);
    assert!(last_result(&s.request(7)).content.contains("slept"));
    assert!(
        zombies.is_empty(),
        "rein left children unreaped: {zombies:?}"
    );
}
