//! Helpers of the `rein` command line: the one output path for everything printed outside
//! the TUI (sanitized, and surviving a closed pipe), startup errors worded and wrapped for a
//! terminal, and the summary printed when the TUI exits.

use crate::session_store::{self, Entry};
use crate::tui::view::cell::format_tokens;
use std::path::Path;

/// A problem found before anything ran (settings, usage): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartupError(pub String);

/// Writes `text` to stdout through the one sanitizer (control characters shown, not
/// obeyed). A reader that went away (`rein config | head -1`) is not an error: there is just
/// nobody left to print for.
pub fn print_stdout(text: &str) -> std::io::Result<()> {
    raw::write(raw::Stream::Out, &crate::sanitize::visible(text))
}

/// Writes `text` to stderr through the one sanitizer; a closed stderr is ignored.
pub fn print_stderr(text: &str) {
    let _ = raw::write(raw::Stream::Err, &crate::sanitize::visible(text));
}

/// Replaces Rust's default panic hook, which prints the message raw: a panic can quote the
/// text it choked on (a slice of a file or a model's answer), so the report goes through the
/// one sanitizer like every other byte rein prints. Also logged.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let backtrace = std::backtrace::Backtrace::capture();
        tracing::error!("panic{place}: {}", crate::sanitize::visible(&message));
        print_stderr(&panic_report(&message, &place, &backtrace.to_string()));
    }));
}

/// What a panic prints: where and why, the backtrace when one was captured.
fn panic_report(message: &str, place: &str, backtrace: &str) -> String {
    let mut text = format!("rein panicked{place}: {message}\n");
    if !backtrace.is_empty() && !backtrace.starts_with("disabled") {
        text.push_str(backtrace);
        text.push('\n');
    }
    text
}

/// Prints `rein: <message>` on stderr, word-wrapped to the terminal when stderr is one. Never
/// panics, even with stderr closed.
pub fn print_error(message: &str) {
    let text = format!("rein: {}", crate::sanitize::visible(message));
    let width = stderr_is_terminal()
        .then(|| crossterm::terminal::size().ok())
        .flatten()
        .map(|(cols, _)| usize::from(cols));
    let text = match width {
        Some(w) if w > 20 => wrap_words(&text, w, "      "),
        _ => text,
    };
    print_stderr(&format!("{text}\n"));
}

/// Writes text rein composed itself, escapes included (clap's coloured help): never text
/// that holds anything from a model, a file, a server or the command line.
pub fn print_own_styled(text: &str, to_stderr: bool) {
    let stream = if to_stderr {
        raw::Stream::Err
    } else {
        raw::Stream::Out
    };
    let _ = raw::write(stream, text);
}

/// Whether stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    raw::is_terminal(raw::Stream::Out)
}

/// Whether stderr is a terminal.
pub fn stderr_is_terminal() -> bool {
    raw::is_terminal(raw::Stream::Err)
}

/// `println!` through the one sanitizer (the raw macros are disallowed in `src/`).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = $crate::cli::print_stdout(&format!("{}\n", format_args!($($arg)*)));
    }};
}

/// `eprintln!` through the one sanitizer (the raw macros are disallowed in `src/`).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::print_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// The only place outside the TUI that touches stdout and stderr (clippy.toml forbids
/// `std::io::stdout`/`stderr` and the print macros everywhere else), so no print site can
/// skip the sanitizer.
#[allow(clippy::disallowed_methods)]
mod raw {
    use std::io::{IsTerminal, Write};

    /// Which standard stream.
    #[derive(Clone, Copy)]
    pub enum Stream {
        Out,
        Err,
    }

    /// Writes and flushes; a reader that went away is not an error.
    pub fn write(stream: Stream, text: &str) -> std::io::Result<()> {
        let written = match stream {
            Stream::Out => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|()| out.flush())
            }
            Stream::Err => {
                let mut err = std::io::stderr().lock();
                err.write_all(text.as_bytes()).and_then(|()| err.flush())
            }
        };
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }

    /// Whether `stream` is a terminal.
    pub fn is_terminal(stream: Stream) -> bool {
        match stream {
            Stream::Out => std::io::stdout().is_terminal(),
            Stream::Err => std::io::stderr().is_terminal(),
        }
    }
}

/// Greedy word wrap at `width` columns; lines after the first of each paragraph start with
/// `indent`. Words longer than a line stay whole (a path is better long than broken).
pub fn wrap_words(text: &str, width: usize, indent: &str) -> String {
    let width_of = crate::tui::wrap::str_width;
    let mut out = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            let fits = width_of(&line) + 1 + width_of(word) <= width;
            if line.is_empty() || line.trim().is_empty() {
                line.push_str(word);
            } else if fits {
                line.push(' ');
                line.push_str(word);
            } else {
                out.push(std::mem::take(&mut line));
                line = format!("{indent}{word}");
            }
        }
        out.push(line);
    }
    out.join("\n")
}

/// Tokens a session used, summed over its requests (subagents' included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenTotals {
    /// Prompt tokens over all requests.
    pub input: u64,
    /// Completion tokens over all requests.
    pub output: u64,
    /// Requests that reported usage.
    pub requests: u64,
}

impl TokenTotals {
    fn add(&mut self, entry: &Entry) {
        match entry {
            Entry::Usage(u) => {
                self.input += u.input_tokens;
                self.output += u.output_tokens;
                self.requests += 1;
            }
            Entry::Subagent(s) => self.add(&s.entry),
            _ => {}
        }
    }
}

/// The token totals of a saved session.
pub fn token_totals(session: &Path) -> Option<TokenTotals> {
    let loaded = session_store::load(session).ok()?;
    let mut totals = TokenTotals::default();
    for e in &loaded.entries {
        totals.add(e);
    }
    Some(totals)
}

/// What to print after the TUI closed: how to resume the session and what it used. `None`
/// when no session was saved (nothing was sent).
pub fn exit_summary(data_dir: &Path, session_id: &str) -> Option<String> {
    if session_id.is_empty() {
        return None;
    }
    let path = session_store::find(data_dir, session_id).ok()?;
    let totals = token_totals(&path)?;
    let mut text = format!("Resume this session with: rein -r {session_id}\n");
    if totals.requests > 0 {
        text.push_str(&format!(
            "Tokens: {} in, {} out over {} model request{}.\n",
            format_tokens(totals.input),
            format_tokens(totals.output),
            totals.requests,
            if totals.requests == 1 { "" } else { "s" }
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_prints_what_it_quotes_visibly() {
        let report = super::panic_report(
            "byte index 3 is not a char boundary of `a\u{1b}]52;c;aGk=\u{7}b`",
            " at src/x.rs:1",
            "disabled backtrace",
        );
        assert!(report.starts_with("rein panicked at src/x.rs:1: byte index"));
        let printed = crate::sanitize::visible(&report);
        assert!(printed.contains("\u{241b}]52;c;aGk=\u{2407}b"), "{printed}");
        assert!(!printed.contains('\u{1b}') && !printed.contains("disabled"));
    }

    use super::*;

    #[test]
    fn wrapping_keeps_words_whole_and_indents_continuations() {
        let wrapped = wrap_words("rein: one two three four five", 14, "  ");
        assert_eq!(wrapped, "rein: one two\n  three four\n  five");
        for line in wrapped.lines() {
            assert!(crate::tui::wrap::str_width(line) <= 14, "{line:?}");
        }
        assert_eq!(wrap_words("a\nb c", 80, "  "), "a\nb c");
        assert_eq!(
            wrap_words("x /a/very/long/path y", 6, ""),
            "x\n/a/very/long/path\ny"
        );
    }
}

/// Progress of the local model's install on stderr: on a terminal one running line that
/// rewrites itself (size, share and rate), elsewhere (logs, CI) a line every tenth. Every line
/// goes through the sanitizer; only rein's own `\r` and erase-line codes go around it.
#[derive(Debug)]
pub struct StderrProgress {
    terminal: bool,
    running: bool,
    last_tenth: Option<u64>,
}

impl StderrProgress {
    /// Progress for this process's stderr.
    pub fn new() -> StderrProgress {
        StderrProgress {
            terminal: stderr_is_terminal(),
            running: false,
            last_tenth: None,
        }
    }
}

impl Default for StderrProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl crate::local::Progress for StderrProgress {
    fn line(&mut self, text: &str) {
        if self.running {
            let _ = raw::write(raw::Stream::Err, "\n");
            self.running = false;
        }
        if !text.is_empty() {
            print_stderr(&format!("{}\n", crate::sanitize::one_line(text)));
        }
    }

    fn bytes(&mut self, done: u64, total: u64, rate: f64) {
        let text = crate::sanitize::one_line(&crate::local::progress_text(done, total, rate));
        if self.terminal {
            let _ = raw::write(raw::Stream::Err, &format!("\r{text}\u{1b}[K"));
            self.running = true;
            return;
        }
        let tenth = (done * 10).checked_div(total).unwrap_or(10);
        if self.last_tenth != Some(tenth) {
            self.last_tenth = Some(tenth);
            print_stderr(&format!("{text}\n"));
        }
    }
}
