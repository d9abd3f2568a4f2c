//! Environment assignments that change what later commands run or do (`LD_PRELOAD=..`,
//! `GIT_EXTERNAL_DIFF=..`, `PATH=..`), as opposed to ones that only change output.

/// Upper-case environment variables that only change output, logging or locale.
const HARMLESS_VARS: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_LOG_STYLE",
    "RUST_TEST_THREADS",
    "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "LANG",
    "LANGUAGE",
    "TZ",
    "CI",
    "DEBUG",
    "VERBOSE",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "GIT_TERMINAL_PROMPT",
];

/// Why assigning the variable `name` (before a command, or on its own) can change what later
/// commands run or do, if it can. Lower-case names are shell-local by convention, except the
/// proxy variables that network tools read.
pub(crate) fn assignment(name: &str) -> Option<String> {
    let local = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with("_proxy");
    if local || HARMLESS_VARS.contains(&name) || name.starts_with("LC_") {
        None
    } else {
        Some(format!("setting {name} can change what commands run or do"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_that_change_what_runs_are_caught() {
        assert!(assignment("LD_PRELOAD").is_some());
        assert!(assignment("GIT_EXTERNAL_DIFF").is_some());
        assert!(assignment("PATH").is_some());
        assert!(assignment("https_proxy").is_some());
        assert_eq!(assignment("RUST_BACKTRACE"), None);
        assert_eq!(assignment("LC_ALL"), None);
        assert_eq!(assignment("f"), None);
    }
}
