//! Driving the real `rein` binary in a pseudo-terminal: keys in, screen out.
//!
//! ```ignore
//! let w = World::new(&server);
//! let mut t = w.spawn_tui(100, 30);
//! t.wait_for_text("enter send", Duration::from_secs(10)).unwrap();
//! t.send_keys("hello");
//! t.send_raw(keys::ENTER);
//! let screen = t.wait_for(|s| s.contains("Hi there"), Duration::from_secs(10))
//!     .unwrap_or_else(|s| panic!("no answer; screen:\n{s}"));
//! ```
//!
//! A reader thread feeds everything the program writes into a `vt100::Parser` (the screen)
//! and keeps the raw bytes (to check escape sequences such as leaving the alternate screen).
//! It answers the one query a terminal must answer (cursor position), so nothing waits on a
//! reply that a real terminal would send. The child is killed when the `Pty` is dropped.

use super::rein::World;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Byte sequences of keys, as a terminal sends them.
pub mod keys {
    /// Enter.
    pub const ENTER: &[u8] = b"\r";
    /// Escape (send it on its own: followed at once by more bytes it reads as Alt+key).
    pub const ESC: &[u8] = b"\x1b";
    /// Ctrl+C.
    pub const CTRL_C: &[u8] = b"\x03";
    /// Ctrl+D.
    pub const CTRL_D: &[u8] = b"\x04";
    /// Tab.
    pub const TAB: &[u8] = b"\t";
    /// Backspace.
    pub const BACKSPACE: &[u8] = b"\x7f";
    /// Page up.
    pub const PG_UP: &[u8] = b"\x1b[5~";
    /// Page down.
    pub const PG_DN: &[u8] = b"\x1b[6~";
    /// Arrow up.
    pub const UP: &[u8] = b"\x1b[A";
    /// Arrow down.
    pub const DOWN: &[u8] = b"\x1b[B";
}

/// Leaves the alternate screen.
pub const LEAVE_ALT_SCREEN: &[u8] = b"\x1b[?1049l";
/// Enters the alternate screen.
pub const ENTER_ALT_SCREEN: &[u8] = b"\x1b[?1049h";
/// Shows the cursor.
pub const SHOW_CURSOR: &[u8] = b"\x1b[?25h";

/// Terminal modes the program has switched on, as the screen model saw them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modes {
    /// The alternate screen is shown.
    pub alternate_screen: bool,
    /// The cursor is hidden.
    pub cursor_hidden: bool,
    /// Bracketed paste is on.
    pub bracketed_paste: bool,
    /// Mouse reporting is on.
    pub mouse: bool,
}

/// What the reader thread shares with the test.
struct State {
    parser: vt100::Parser,
    raw: Vec<u8>,
    /// The program's side of the terminal is closed (it exited and nothing else holds it).
    eof: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// A program running in a pseudo-terminal.
pub struct Pty {
    shared: Arc<Shared>,
    master: Box<dyn MasterPty + Send>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    exit: Option<u32>,
    pid: u32,
}

fn size(cols: u16, rows: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn nz(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n.max(1)).unwrap()
}

impl Pty {
    /// Starts `cmd` in a new pseudo-terminal of `cols`×`rows`.
    pub fn spawn(cmd: CommandBuilder, cols: u16, rows: u16) -> Pty {
        let pair = native_pty_system()
            .openpty(size(cols, rows))
            .expect("open a pseudo-terminal");
        let child = pair.slave.spawn_command(cmd).expect("spawn in the pty");
        // Only the child may hold the terminal's other end, or the reader never sees EOF.
        drop(pair.slave);
        let pid = child.process_id().expect("child pid");
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = Arc::new(Mutex::new(pair.master.take_writer().expect("pty writer")));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                parser: vt100::Parser::new(nz(rows), nz(cols), 0),
                raw: Vec::new(),
                eof: false,
            }),
            changed: Condvar::new(),
        });
        let (thread_shared, thread_writer) = (shared.clone(), writer.clone());
        std::thread::Builder::new()
            .name("pty-reader".into())
            .spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    let mut st = thread_shared.state.lock().unwrap();
                    st.raw.extend_from_slice(chunk);
                    st.parser.process(chunk);
                    // Cursor position report request: answer like a terminal would.
                    if contains(chunk, b"\x1b[6n") {
                        let (row, col) = st.parser.screen().cursor_position();
                        let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                        let _ = thread_writer.lock().unwrap().write_all(reply.as_bytes());
                    }
                    drop(st);
                    thread_shared.changed.notify_all();
                }
                thread_shared.state.lock().unwrap().eof = true;
                thread_shared.changed.notify_all();
            })
            .expect("start the pty reader");
        Pty {
            shared,
            master: pair.master,
            writer,
            child,
            exit: None,
            pid,
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Types text (each character is a key press; `\r` is Enter).
    pub fn send_keys(&mut self, text: &str) {
        self.send_raw(text.as_bytes());
    }

    /// Sends bytes as they are (escape sequences, control keys).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).expect("write to the pty");
        w.flush().expect("flush the pty");
    }

    /// Resizes the terminal (the program gets SIGWINCH).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        // The screen model takes the new size first: output after the signal is for it.
        let mut st = self.shared.state.lock().unwrap();
        st.parser.screen_mut().set_size(nz(rows), nz(cols));
        self.master
            .resize(size(cols, rows))
            .expect("resize the pty");
    }

    /// The visible screen, rows joined by `\n`.
    pub fn screen_text(&self) -> String {
        screen_of(&self.shared.state.lock().unwrap())
    }

    /// The terminal modes in effect now.
    pub fn modes(&self) -> Modes {
        let st = self.shared.state.lock().unwrap();
        let screen = st.parser.screen();
        Modes {
            alternate_screen: screen.alternate_screen(),
            cursor_hidden: screen.hide_cursor(),
            bracketed_paste: screen.bracketed_paste(),
            mouse: screen.mouse_protocol_mode() != vt100::MouseProtocolMode::None,
        }
    }

    /// Whether the terminal is in cooked mode (line editing and echo on), as a shell
    /// expects it, rather than raw mode.
    pub fn is_cooked(&self) -> bool {
        let Some(fd) = self.master.as_raw_fd() else {
            return false;
        };
        // SAFETY: `fd` is the open master of this pty and `termios` is plain data.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut termios) } != 0 {
            return false;
        }
        termios.c_lflag & libc::ICANON != 0 && termios.c_lflag & libc::ECHO != 0
    }

    /// Every byte the program wrote so far.
    pub fn raw_output(&self) -> Vec<u8> {
        self.shared.state.lock().unwrap().raw.clone()
    }

    /// Waits until `pred` holds for the screen and returns that screen; on timeout returns
    /// the last screen as the error, so a failing test shows what was there.
    pub fn wait_for(
        &self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let end = Instant::now() + timeout;
        let mut st = self.shared.state.lock().unwrap();
        loop {
            let screen = screen_of(&st);
            if pred(&screen) {
                return Ok(screen);
            }
            let now = Instant::now();
            if now >= end {
                return Err(screen);
            }
            // Woken by new output; the cap keeps time-based screens (spinners) checked too.
            let wait = (end - now).min(Duration::from_millis(100));
            st = self.shared.changed.wait_timeout(st, wait).unwrap().0;
        }
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<String, String> {
        self.wait_for(|s| s.contains(needle), timeout)
    }

    /// Like [`Pty::wait_for`], but panics with `what` and the screen on timeout.
    pub fn expect(&self, what: &str, pred: impl Fn(&str) -> bool, timeout: Duration) -> String {
        self.wait_for(pred, timeout)
            .unwrap_or_else(|screen| panic!("timed out waiting for {what}; screen:\n{screen}"))
    }

    /// Waits for the program to exit and its output to be read to the end; its exit code,
    /// or `None` if it is still running after `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<u32> {
        let end = Instant::now() + timeout;
        while self.exit.is_none() {
            match self.child.try_wait() {
                Ok(Some(status)) => self.exit = Some(status.exit_code()),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
        // Drain what it wrote before exiting (a grandchild may keep the terminal open: then
        // give up after a while rather than wait for it). Generous: on a loaded machine (a
        // local model answering beside the tests) the reader thread may not run for seconds.
        let drain_end = Instant::now() + Duration::from_secs(10);
        let mut st = self.shared.state.lock().unwrap();
        while !st.eof && Instant::now() < drain_end {
            st = self
                .shared
                .changed
                .wait_timeout(st, Duration::from_millis(20))
                .unwrap()
                .0;
        }
        self.exit
    }

    /// Types `text` and presses Enter.
    pub fn type_line(&mut self, text: &str) {
        self.send_keys(text);
        self.send_raw(keys::ENTER);
    }

    /// Waits for the app's first full frame (the model in the status line, the idle hints).
    pub fn ready(&self, timeout: Duration) -> String {
        self.expect(
            "the first full frame",
            |s| s.contains("scripted-model") && s.contains("enter send"),
            timeout,
        )
    }

    /// Quits the full-screen app as a person does (Ctrl+C, the hint, Ctrl+C again) and
    /// returns its exit code.
    pub fn quit_app(&mut self, timeout: Duration) -> Option<u32> {
        self.send_raw(keys::CTRL_C);
        self.expect(
            "the quit hint",
            |s| s.contains("ctrl+c again to quit"),
            timeout,
        );
        self.send_raw(keys::CTRL_C);
        self.wait_exit(timeout)
    }

    /// The exit code if the program has exited.
    pub fn try_exit(&mut self) -> Option<u32> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.exit = Some(status.exit_code());
        }
        self.exit
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.try_exit().is_none() {
            // SIGHUP, a short grace period, then SIGKILL.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn screen_of(st: &State) -> String {
    let screen = st.parser.screen();
    let cols = screen.size().1.get();
    screen.rows(0, cols).collect::<Vec<_>>().join("\n")
}

/// Whether `haystack` contains `needle`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Where `needle` last occurs in `haystack`.
pub fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    (0..=haystack.len() - needle.len())
        .rev()
        .find(|&i| &haystack[i..i + needle.len()] == needle)
}

/// Processes whose working directory is `dir`, as (pid, command line with spaces).
pub fn processes_in(dir: &std::path::Path) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cwd) = std::fs::read_link(e.path().join("cwd")) else {
            continue;
        };
        if cwd != dir {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline)
            .trim_end_matches('\0')
            .replace('\0', " ");
        // Zombies have an empty command line and are gone for every practical purpose.
        if !cmdline.is_empty() {
            out.push((pid, cmdline));
        }
    }
    out
}

/// CPU time a process has used so far (user + system), in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory of a process (`VmRSS`), in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

impl World {
    /// `rein <args>` for a pseudo-terminal, with the same environment as [`World::cmd`]
    /// plus `TERM`.
    pub fn pty_command(&self, args: &[&str]) -> CommandBuilder {
        let mut c = CommandBuilder::new(crate::support::rein::rein_bin());
        c.args(args);
        c.env_clear();
        for (k, v) in self.env_vars() {
            c.env(k, v);
        }
        c.env("TERM", "xterm-256color");
        c.cwd(&self.ws);
        c
    }

    /// The full-screen app (`rein` with no subcommand) in a `cols`×`rows` terminal.
    pub fn spawn_tui(&self, cols: u16, rows: u16) -> Pty {
        Pty::spawn(self.pty_command(&[]), cols, rows)
    }
}

/// Whether no turn runs and no dialog is open: the hint line then reads "enter send".
pub fn idle(screen: &str) -> bool {
    screen
        .lines()
        .last()
        .is_some_and(|l| l.contains("enter send"))
}

/// Polls `cond` every 10 ms until it holds; panics naming `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
