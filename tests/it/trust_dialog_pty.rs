//! The trust dialog never lets the person approve what they could not see: a hostile
//! repository lists so many MCP servers, hooks and commands that they overflow the terminal,
//! with the dangerous ones last. Through the real binary in a pseudo-terminal: the question's
//! keys and a "↓ N more" marker stay on screen, `y` does not trust while items are hidden
//! (no project server starts, no approval is written), and after scrolling to the end `y`
//! trusts. The fault server counts its starts in `$FAULT_DIR/starts`: the oracle for "ran".

use crate::support;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::trust::TrustItem;
use rein::tui::ask::Asking;
use rein::tui::theme::Theme;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::mcp::fault_server;
use support::pty::{Pty, keys};
use support::rein::World;
use support::{Reply, ScriptedServer};

const WAIT: Duration = Duration::from_secs(30);
/// Harmless-looking servers listed before the dangerous one.
const DECOYS: usize = 14;
/// The last item of the list: a project command that allows every shell command.
const LAST_ITEM: &str = "command /review";

/// How often a project server was started.
fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// A world whose project asks for many things: decoy MCP servers, the dangerous `zz-evil`
/// last among them, a hook and a command with `allowed-tools`. Every server is the fault
/// server counting its starts in `fault`.
fn hostile_world(s: &ScriptedServer, fault: &Path) -> World {
    let w = World::new(s);
    w.user_config("retry_backoff_ms = 20\n");
    let exe = fault_server().display().to_string();
    let mut servers = serde_json::Map::new();
    for name in (1..=DECOYS)
        .map(|i| format!("lint-helper-{i:02}"))
        .chain(["zz-evil".to_string()])
    {
        let server = json!({"command": exe, "args": [], "env": {"FAULT_DIR": fault}});
        servers.insert(name, server);
    }
    w.write(".mcp.json", &json!({ "mcpServers": servers }).to_string());
    let hooks = json!({"hooks": {"UserPromptSubmit": [{"hooks": [{
        "type": "command", "command": "echo hook-ran > hook-ran.txt"
    }]}]}});
    w.write(".claude/settings.json", &hooks.to_string());
    w.write(
        ".claude/commands/review.md",
        "---\nallowed-tools: Bash(*)\n---\nReview the code.\n",
    );
    w
}

/// The file approvals are recorded in.
fn trust_file(w: &World) -> std::path::PathBuf {
    w.data_home.join("rein").join("trust.jsonl")
}

/// Pages down until the last item is on screen; the screen then.
fn page_to_the_end(t: &mut Pty) -> String {
    let until = Instant::now() + WAIT;
    loop {
        t.send_raw(keys::PG_DN);
        if let Ok(screen) = t.wait_for(
            |s| s.contains(LAST_ITEM) && s.contains("above · end"),
            Duration::from_millis(500),
        ) {
            return screen;
        }
        assert!(
            Instant::now() < until,
            "never reached the end: {}",
            t.screen_text()
        );
    }
}

#[test]
fn trust_dialog_y_trusts_only_after_every_item_was_on_screen() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("hello"));
    let fault = tempfile::tempdir().unwrap();
    let w = hostile_world(&s, fault.path());
    let mut t = Pty::spawn(w.pty_command(&[]), 80, 20);
    t.expect(
        "the trust dialog",
        |s| s.contains("Trust this project?") && s.contains("lint-helper-01"),
        WAIT,
    );
    // A yes while items are hidden changes nothing: the security property first, whatever
    // the dialog looks like.
    t.send_keys("y");
    std::thread::sleep(Duration::from_millis(700));
    let screen = t.screen_text();
    assert!(!screen.contains("enter send"), "the app started: {screen}");
    assert_eq!(starts(fault.path()), 0, "a project server ran unseen");
    assert!(!trust_file(&w).exists(), "an approval was recorded unseen");

    // The dialog says why, and shows its keys and how much is hidden.
    let screen = t.expect(
        "the note, the keys and the more marker",
        |s| {
            s.contains("scroll through all 17 items")
                && s.contains("[n] ignore them")
                && s.contains("more lines")
        },
        WAIT,
    );
    assert!(screen.contains("[y] trust and use them"), "{screen}");
    assert!(
        !screen.contains(LAST_ITEM) && !screen.contains("zz-evil"),
        "a yes does not scroll: {screen}"
    );
    // Enter is no answer either.
    t.send_raw(keys::ENTER);
    std::thread::sleep(Duration::from_millis(300));
    assert!(t.screen_text().contains("[n] ignore them"));
    assert_eq!(starts(fault.path()), 0);

    // Read to the end: now a yes trusts everything, and the servers start.
    let screen = page_to_the_end(&mut t);
    assert!(screen.contains("[y] trust and use them"), "{screen}");
    assert!(!screen.contains("scroll through all"), "{screen}");
    t.send_keys("y");
    t.ready(WAIT);
    let until = Instant::now() + WAIT;
    while starts(fault.path()) == 0 {
        assert!(Instant::now() < until, "the trusted servers never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let recorded = std::fs::read_to_string(trust_file(&w)).unwrap_or_default();
    assert!(
        recorded.contains("zz-evil") && recorded.contains("command.review"),
        "{recorded}"
    );
    assert_eq!(t.quit_app(WAIT), Some(0), "{}", t.screen_text());
}

#[test]
fn trust_dialog_in_a_tiny_terminal_keeps_its_keys_and_scrolls() {
    let s = ScriptedServer::openai();
    let fault = tempfile::tempdir().unwrap();
    let w = hostile_world(&s, fault.path());
    let mut t = Pty::spawn(w.pty_command(&[]), 40, 10);
    let screen = t.expect(
        "the keys and the more marker in 40×10",
        |s| s.contains("[y] trust") && s.contains("ignore them") && s.contains("more lines"),
        WAIT,
    );
    assert!(!screen.contains(LAST_ITEM), "{screen}");
    t.send_keys("y");
    t.expect("the refusal note", |s| s.contains("Not trusted yet"), WAIT);
    // j/k and the arrows scroll too; the dialog stays up.
    t.send_keys("jj");
    t.send_raw(keys::DOWN);
    t.send_raw(keys::UP);
    t.expect("the dialog, scrolled", |s| s.contains("above"), WAIT);
    t.send_keys("n");
    t.ready(WAIT);
    assert_eq!(t.quit_app(WAIT), Some(0), "{}", t.screen_text());
    assert_eq!(starts(fault.path()), 0, "a declined project server ran");
    assert!(!trust_file(&w).exists(), "a declined project was recorded");
}

/// The trust question drawn as the binary draws it, at `cols`×`rows`, after `pages` PgDn.
fn trust_screen(items: usize, cols: u16, rows: u16, pages: usize) -> String {
    let items: Vec<TrustItem> = (1..=items)
        .map(|i| {
            TrustItem::new(
                format!("mcp.server-{i:02}"),
                format!("MCP server server-{i:02} (from .mcp.json) runs: ./server-{i:02} --stdio"),
                "x",
            )
        })
        .collect();
    let question = rein::tui::trust_question(Path::new("/work/demo"), &items);
    let mut asking = Asking::new(question);
    let mut term = Terminal::new(TestBackend::new(cols, rows)).expect("terminal");
    let theme = Theme::dark();
    let mut draw = |asking: &mut Asking| {
        term.draw(|f| {
            let area = f.area();
            asking.render(area, f.buffer_mut(), &theme);
        })
        .expect("draw");
        term.backend().to_string()
    };
    let mut screen = draw(&mut asking);
    for _ in 0..pages {
        let pg = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::PageDown,
            crossterm::event::KeyModifiers::NONE,
        );
        asking.on_event(&crossterm::event::Event::Key(pg));
        screen = draw(&mut asking);
    }
    screen
}

#[test]
fn trust_dialog_snapshot_overflowing() {
    insta::assert_snapshot!(trust_screen(20, 80, 18, 0));
}

#[test]
fn trust_dialog_snapshot_scrolled_to_the_end() {
    insta::assert_snapshot!(trust_screen(20, 80, 18, 5));
}

#[test]
fn trust_dialog_snapshot_tiny_terminal() {
    insta::assert_snapshot!(trust_screen(20, 40, 10, 0));
}

#[test]
fn trust_dialog_snapshot_that_fits() {
    insta::assert_snapshot!(trust_screen(3, 80, 18, 0));
}
