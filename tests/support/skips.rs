//! Suites that skip say so where a person sees it: libtest captures a passing test's output,
//! so each skip is also kept here and printed once, uncaptured, when the test process exits.

use std::sync::{Mutex, Once};

static SKIPS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

/// Records that `suite` skipped because of `why` (printed now, captured, and at exit, not).
pub fn skip(suite: &str, why: &str) {
    eprintln!("skipping {suite}: {why}");
    let line = format!("{suite} ({why})");
    if let Ok(mut s) = SKIPS.lock()
        && !s.contains(&line)
    {
        s.push(line);
    }
    // SAFETY: registering a plain `extern "C" fn` with the C library's atexit.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(print_skips);
    });
}

extern "C" fn print_skips() {
    let Ok(s) = SKIPS.lock() else { return };
    if s.is_empty() {
        return;
    }
    let text = format!("\nSKIPPED SUITES: {}\n", s.join("; "));
    // Straight to fd 2: the test harness's capture only sees `print!`-style macros.
    // SAFETY: writing a valid buffer to the process's stderr.
    unsafe {
        libc::write(2, text.as_ptr().cast(), text.len());
    }
}
