//! `rein sessions list | show | export | rm`: what they print.

use crate::session_store::{self, SessionSummary};
use jiff::Timestamp;
use std::io::BufRead;
use std::path::Path;

/// "3 min ago", "yesterday", "12 days ago": how long before `now` the time `then` was.
pub fn relative_time(then: Timestamp, now: Timestamp) -> String {
    let secs = now.as_second() - then.as_second();
    match secs {
        i64::MIN..=59 => "just now".into(),
        60..=3_599 => format!("{} min ago", secs / 60),
        3_600..=86_399 => format!("{} h ago", secs / 3_600),
        86_400..=172_799 => "yesterday".into(),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// The table (or JSON array) printed by `rein sessions list`.
pub fn list(data_dir: &Path, cwd: &Path, all: bool, json: bool) -> String {
    let sessions: Vec<SessionSummary> =
        session_store::list(data_dir, if all { None } else { Some(cwd) });
    if json {
        let text = serde_json::to_string_pretty(&sessions).unwrap_or_else(|_| "[]".into());
        return crate::sanitize::json_safe(&text).into_owned() + "\n";
    }
    if sessions.is_empty() {
        return if all {
            "No saved sessions.\n".into()
        } else {
            "No saved sessions in this directory (use --all to see every session).\n".into()
        };
    }
    let now = Timestamp::now();
    let mut out = String::new();
    for s in &sessions {
        out.push_str(&format!(
            "{}  {:<14} {:>4} msgs  {:<20} {}{}\n",
            s.id,
            relative_time(s.updated_at, now),
            s.message_count,
            s.model.chars().take(20).collect::<String>(),
            s.title,
            if all {
                format!("  ({})", s.cwd.display())
            } else {
                String::new()
            }
        ));
    }
    out
}

/// Output formats of `rein sessions export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A readable transcript.
    Markdown,
    /// Header and entries as one JSON object.
    Json,
}

/// `rein sessions show` / `export`. Both are printed through the one sanitizer: Markdown with
/// control characters made visible (also when written to a file), JSON with them escaped.
pub fn export(data_dir: &Path, id: &str, format: Format) -> Result<String, String> {
    let path = session_store::find(data_dir, id).map_err(|e| e.to_string())?;
    let loaded = session_store::load(&path).map_err(|e| e.to_string())?;
    Ok(match format {
        Format::Markdown => session_store::export_markdown(&loaded),
        // JSON keeps the text exactly: what it does not escape itself becomes `\uXXXX`.
        Format::Json => {
            crate::sanitize::json_safe(&session_store::export_json(&loaded)).into_owned()
        }
    })
}

/// `rein sessions rm`: asks on the terminal unless `yes`; returns what happened.
pub fn remove(data_dir: &Path, id: &str, yes: bool) -> Result<String, String> {
    let path = session_store::find(data_dir, id).map_err(|e| e.to_string())?;
    let header = session_store::read_header(&path).map_err(|e| e.to_string())?;
    if !yes {
        crate::cli::print_stderr(&format!(
            "Delete session {} ({})? [y/N] ",
            header.id,
            path.display()
        ));
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok("Nothing deleted.".into());
        }
    }
    session_store::remove(&path).map_err(|e| e.to_string())?;
    Ok(format!("Deleted session {}.", header.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times() {
        let now = Timestamp::from_second(1_000_000_000).unwrap();
        let ago = |s: i64| relative_time(Timestamp::from_second(1_000_000_000 - s).unwrap(), now);
        assert_eq!(ago(5), "just now");
        assert_eq!(ago(600), "10 min ago");
        assert_eq!(ago(7_200), "2 h ago");
        assert_eq!(ago(90_000), "yesterday");
        assert_eq!(ago(864_000), "10 days ago");
    }
}
