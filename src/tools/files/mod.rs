//! The file tools (`read_file`, `write_file`) and the file helpers `str_replace` shares:
//! path resolution, race-free opening ([`anchor`]), writes guarded by what was shown
//! ([`guarded`]), text detection, line numbering.

pub(crate) mod anchor;
mod dropped;
mod guarded;
mod kernel;
mod read;
pub(crate) mod shell_check;
pub(crate) mod unfence;
pub(crate) mod units;
mod write;

pub(crate) use guarded::{Before, Fingerprint, Opened, open_regular, read_before, write_unchanged};
pub use read::ReadFile;
pub use write::WriteFile;

use super::{ToolCtx, ToolError};
use crate::sandbox::paths::{self, ResolvedPath};
use std::fs;
use std::path::Path;

/// How much of a file's start decides whether it is text.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Files larger than this are not loaded for an approval diff or an edit.
pub(crate) const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

/// Resolves a path argument against the workspace, as a tool error on failure. Places where
/// secrets live are refused here, on the resolved path, which is the one that gets opened;
/// kernel file systems (rein's own `/proc`) on the path as given too.
pub(crate) fn resolve(ctx: &ToolCtx, raw: &str) -> Result<ResolvedPath, ToolError> {
    let home = ctx.home.as_deref();
    kernel::refuse(&ctx.workspace, home, raw, None)?;
    let path = paths::resolve(&ctx.workspace, home, raw).map_err(ToolError)?;
    kernel::refuse(&ctx.workspace, home, raw, Some(&path))?;
    if let Some(place) = ctx.secrets.location_of(&path.path) {
        return Err(ToolError(format!(
            "{} is in {}, which bash cannot see either: outside the workspace, the home \
             directory shows only toolchains and build caches; /tmp, /var, /run, /home, /srv, \
             /mnt and the other top-level directories outside the system's (/usr, /etc, /opt) \
             only the workspace and the session's temp dir; and secrets (keys, tokens, \
             credentials, rein's own files) are hidden. Work without it, or ask the user (they \
             can add a place to `[sandbox] read_allow`).",
            path.display,
            place.display()
        )));
    }
    Ok(path)
}

/// The refusal for a write over an existing file the model has not read. It carries none of
/// the file: it comes before the permission check, and a rule may keep the file from the model.
pub(crate) fn unread_error(path: &ResolvedPath, tool: &str) -> ToolError {
    let next = if tool == "write_file" {
        "Now call write_file again with the whole new file: its content plus your change (or \
         str_replace to change one part)."
    } else {
        "Now call str_replace again with old_str copied exactly from what read_file shows."
    };
    ToolError(format!(
        "{} exists and you had not read it, so nothing was changed. 1. Read it with read_file. \
         2. {next}",
        path.display
    ))
}

/// Whether a file start looks like binary data: a NUL byte, or mostly bytes that are neither
/// valid UTF-8 nor ordinary text characters.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    if std::str::from_utf8(sample).is_ok() {
        return false;
    }
    let text = String::from_utf8_lossy(sample);
    let total = text.chars().count().max(1);
    let bad = text
        .chars()
        .filter(|&c| {
            c == char::REPLACEMENT_CHARACTER
                || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b'))
        })
        .count();
    bad * 10 > total * 3
}

/// Formats lines `cat -n` style (number right-aligned in 6 columns, then a tab), starting at
/// line number `first`.
pub(crate) fn numbered<'a>(first: usize, lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "{:>6}\t{}",
            first + i,
            line.strip_suffix('\r').unwrap_or(line)
        ));
    }
    out
}

/// Names in `dir` that look like a misspelling of `name`, best first (cheap: reads at most a
/// few thousand entries).
pub(crate) fn similar_names(dir: &Path, name: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .take(5000)
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let lower = name.to_lowercase();
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| n.to_lowercase() == lower)
        .cloned()
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for m in similar::get_close_matches(name, &refs, 3, 0.6) {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out.truncate(3);
    out
}

/// The error for a path that does not exist, with near-miss names from its directory.
pub(crate) fn missing_error(path: &ResolvedPath, hint: &str) -> ToolError {
    let mut msg = format!("{} does not exist.", path.display);
    let display_parent = Path::new(&path.display)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let (Some(parent), Some(name)) = (
        path.path.parent(),
        path.path.file_name().and_then(|n| n.to_str()),
    ) {
        if parent.is_dir() {
            let near: Vec<String> = similar_names(parent, name)
                .iter()
                .map(|n| display_parent.join(n).to_string_lossy().into_owned())
                .collect();
            if !near.is_empty() {
                msg.push_str(&format!(" Did you mean {}?", near.join(" or ")));
            }
        } else if parent.exists() {
            msg.push_str(&format!(
                " Its parent {} is a file, not a directory.",
                display_parent.display()
            ));
        } else if !display_parent.as_os_str().is_empty() {
            msg.push_str(&format!(
                " Its directory {} does not exist either.",
                display_parent.display()
            ));
        }
    }
    msg.push(' ');
    msg.push_str(hint);
    ToolError(msg)
}

/// The error for a directory where a file was expected, listing a few entries.
pub(crate) fn directory_error(path: &ResolvedPath) -> ToolError {
    let mut names: Vec<String> = fs::read_dir(&path.path)
        .map(|rd| {
            rd.take(5000)
                .filter_map(|e| {
                    let e = e.ok()?;
                    let mut n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().ok()?.is_dir() {
                        n.push('/');
                    }
                    Some(n)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let shown = names.len().min(20);
    let listing = if names.is_empty() {
        "It is empty.".to_string()
    } else if names.len() > shown {
        format!(
            "It contains {} (and {} more).",
            names[..shown].join(", "),
            names.len() - shown
        )
    } else {
        format!("It contains {}.", names.join(", "))
    };
    ToolError(format!(
        "{} is a directory, not a file. {listing} Use bash `ls` to list it, then name a file inside.",
        path.display
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_detection() {
        assert!(!looks_binary(b"plain text\nwith lines\n"));
        assert!(!looks_binary("unicode ünïcödé ✓\n".as_bytes()));
        assert!(looks_binary(b"ELF\x02\x01\x01\0\0\0"));
        // Latin-1 text with a few accented bytes is still text.
        assert!(!looks_binary(
            b"caf\xe9 au lait, cr\xe8me br\xfbl\xe9e and more plain words here"
        ));
        assert!(looks_binary(&[
            0x89, 0xff, 0xfe, 0x80, 0x81, 0x82, 0xc3, 0x28, 0xa0, 0xa1
        ]));
    }

    #[test]
    fn numbering_is_cat_n_style() {
        assert_eq!(numbered(9, ["a", "b\r"]), "     9\ta\n    10\tb");
    }
}
