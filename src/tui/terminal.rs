//! Terminal setup and restore. Every exit path (normal, error, panic, signal) restores the
//! terminal: raw mode off, keyboard protocol popped, mouse and paste modes off, alternate
//! screen left, cursor shown.

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{Command, cursor, execute};
use std::fmt;
use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Mouse reporting limited to clicks and the wheel (modes 1000 + SGR 1006). Without the
/// motion modes a moving mouse wakes nothing up, and Shift+drag still selects natively.
struct MouseCapture(bool);

impl Command for MouseCapture {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        if self.0 {
            f.write_str("\x1b[?1000h\x1b[?1006h")
        } else {
            f.write_str("\x1b[?1006l\x1b[?1000l")
        }
    }
}

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Enters the full-screen mode and installs the panic hook that undoes it.
pub fn enter() -> io::Result<Guard> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    // Built before switching, so a failure below still restores what was set.
    let guard = Guard(());
    activate()?;
    Ok(guard)
}

/// Back to full-screen mode after [`suspend`] (the guard from [`enter`] still restores it).
pub fn resume() -> io::Result<()> {
    activate()
}

/// Leaves full-screen mode for a while (an editor runs, the job is stopped); [`resume`]
/// comes back.
pub fn suspend() {
    restore();
}

#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
fn activate() -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        // Focus reports tell the notifier when the person looks elsewhere.
        EnableFocusChange,
        MouseCapture(true),
        cursor::Hide
    )?;
    // The kitty keyboard protocol tells Shift+Enter from Enter. It is pushed without asking
    // first: asking waits up to 2 s for terminals that never answer, and terminals without
    // the protocol ignore the sequence.
    let _ = execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    );
    Ok(())
}

/// Whether the terminal is in full-screen mode (a panic hook may have restored it).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Restores the terminal if it is in full-screen mode (idempotent; safe from a panic hook).
#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags);
    let _ = execute!(
        out,
        MouseCapture(false),
        DisableFocusChange,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.flush();
    let _ = disable_raw_mode();
}

/// Writes `text` to the system clipboard through the terminal (OSC 52).
#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
pub fn copy_osc52(text: &str) -> io::Result<()> {
    execute!(
        io::stdout(),
        crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
    )
}
