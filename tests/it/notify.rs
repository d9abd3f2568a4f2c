//! Notifications (issue 22 §4) through the real TUI in a pty: a bell when a turn ends while the
//! terminal reported lost focus, none while it has focus, and the person's `notify` program
//! run with a JSON argument, outside the workspace.

use crate::support;
use std::time::Duration;
use support::pty::{Pty, idle};
use support::rein::World;
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(20);
const FOCUS_LOST: &[u8] = b"\x1b[O";
const FOCUS_GAINED: &[u8] = b"\x1b[I";

fn bells(t: &Pty) -> usize {
    t.raw_output().iter().filter(|&&b| b == 0x07).count()
}

/// Runs one turn that answers "done" after `focus` was reported; the bells it rang.
fn turn_with_focus(world: &World, focus: &[u8]) -> usize {
    let mut t = world.spawn_tui(100, 30);
    t.ready(WAIT);
    t.send_raw(focus);
    let before = bells(&t);
    t.type_line("hello");
    t.expect("the answer", |s| s.contains("done") && idle(s), WAIT);
    // The bell is written with the event that ends the turn, before the frame that shows it.
    let rang = bells(&t) - before;
    t.quit_app(WAIT);
    rang
}

#[test]
fn a_finished_turn_rings_the_bell_only_when_the_terminal_lost_focus() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    server.push(Reply::text("done").delay(Duration::from_millis(300)));
    assert_eq!(
        turn_with_focus(&world, FOCUS_LOST),
        1,
        "no bell after focus was lost"
    );
    server.push(Reply::text("done").delay(Duration::from_millis(300)));
    assert_eq!(
        turn_with_focus(&world, FOCUS_GAINED),
        0,
        "a bell while focused"
    );
}

#[test]
fn the_notify_program_gets_json_and_runs_outside_the_workspace() {
    let server = ScriptedServer::openai();
    let world = World::new(&server);
    let out = world.home.join("notified.txt");
    world.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\nnotify = \"osc9\"\n\
         notify_command = [\"sh\", \"-c\", \"printf '%s %s\\\\n' \\\"$(pwd)\\\" \\\"$1\\\" >> '{}'\", \"notify\"]\n",
        out.display()
    ));
    server.push(Reply::text("done"));
    let mut t = world.spawn_tui(100, 30);
    t.ready(WAIT);
    t.type_line("hello");
    t.expect("the answer", |s| s.contains("done") && idle(s), WAIT);
    support::pty::wait_until("the notify program ran", WAIT, || out.exists());
    let raw = t.raw_output();
    assert!(
        support::pty::contains(&raw, b"\x1b]9;rein finished its turn\x07"),
        "no OSC 9 notification"
    );
    t.quit_app(WAIT);
    let text = std::fs::read_to_string(&out).unwrap();
    let (cwd, json) = text.trim().split_once(' ').unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["type"], "turn-finished", "{text}");
    let ws = world.ws.canonicalize().unwrap();
    assert!(
        !std::path::Path::new(cwd).starts_with(&ws),
        "the notify program ran in the workspace: {cwd}"
    );
}
