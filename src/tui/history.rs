//! The input history file: one JSON string per line, newest last, shared by all sessions.

use std::io::Write;
use std::path::Path;

/// Entries kept in the file.
const KEEP: usize = 1_000;

/// Reads the history (oldest first). A missing or damaged file gives what could be read.
pub fn load(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<String>(l).ok())
        .filter(|e| !e.trim().is_empty())
        .collect();
    if entries.len() > KEEP {
        entries.drain(..entries.len() - KEEP);
        // Trim the file too, so it does not grow forever.
        if let Err(e) = rewrite(path, &entries) {
            tracing::warn!("could not trim the input history {}: {e}", path.display());
        }
    }
    entries
}

fn rewrite(path: &Path, entries: &[String]) -> std::io::Result<()> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut out = String::new();
    for e in entries {
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
        out.push('\n');
    }
    std::fs::write(&tmp, out)?;
    std::fs::rename(&tmp, path)
}

/// Appends one entry.
pub fn append(path: &Path, entry: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(file, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_multi_line_entries_and_skips_damage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/history.jsonl");
        append(&path, "first").expect("append");
        append(&path, "two\nlines").expect("append");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        writeln!(f, "{{torn").expect("write");
        append(&path, "third").expect("append");
        assert_eq!(load(&path), vec!["first", "two\nlines", "third"]);
        assert!(load(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn keeps_the_newest_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("history.jsonl");
        for i in 0..KEEP + 5 {
            append(&path, &format!("m{i}")).expect("append");
        }
        let entries = load(&path);
        assert_eq!(entries.len(), KEEP);
        assert_eq!(entries[0], "m5");
        assert_eq!(load(&path).len(), KEEP, "the file was trimmed");
    }
}
