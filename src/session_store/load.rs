//! Reading a session file: stream-parsed line by line, so memory stays near the size of the
//! entries themselves and a damaged line costs only that line.

use super::SessionError;
use super::entry::{Entry, Parsed, SCHEMA, parse_entry};
use super::header::Header;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A session file as read from disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedSession {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Its entries in order (damaged and unknown lines left out).
    pub entries: Vec<Entry>,
    /// What was skipped and why, for the person.
    pub notices: Vec<String>,
}

#[derive(Deserialize)]
struct HeaderProbe {
    #[serde(rename = "type")]
    ty: Option<String>,
    schema: Option<u32>,
}

/// Parses the first line of a session file.
pub(crate) fn parse_header(line: &str, path: &Path) -> Result<Header, SessionError> {
    let not_a_session = |reason: String| SessionError::NotASession {
        path: path.to_path_buf(),
        reason,
    };
    let probe: HeaderProbe = serde_json::from_str(line)
        .map_err(|e| not_a_session(format!("the first line is not a JSON header ({e})")))?;
    if probe.ty.as_deref() != Some("header") {
        return Err(not_a_session(
            "the first line is not a header (`\"type\":\"header\"` is missing)".into(),
        ));
    }
    let schema = probe
        .schema
        .ok_or_else(|| not_a_session("the header has no schema version".into()))?;
    if schema > SCHEMA {
        return Err(SessionError::FutureSchema {
            path: path.to_path_buf(),
            found: schema,
            supported: SCHEMA,
        });
    }
    serde_json::from_str(line).map_err(|e| not_a_session(format!("the header is damaged ({e})")))
}

/// Reads one line (without its `\n`) into `buf`; returns whether it ended with a newline, or
/// `None` at the end of the file.
pub(crate) fn next_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    if reader.read_until(b'\n', buf)? == 0 {
        return Ok(None);
    }
    let complete = buf.last() == Some(&b'\n');
    if complete {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    Ok(Some(complete))
}

fn open(path: &Path) -> Result<BufReader<File>, SessionError> {
    let file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    // Large reads keep the syscall count low on 50 MB files; the buffer is reused.
    Ok(BufReader::with_capacity(256 * 1024, file))
}

fn read_first_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    path: &Path,
) -> Result<Header, SessionError> {
    let io = |e| SessionError::io(path, e);
    loop {
        match next_line(reader, buf).map_err(io)? {
            None => {
                return Err(SessionError::Empty {
                    path: path.to_path_buf(),
                });
            }
            Some(_) if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Some(_) => break,
        }
    }
    let line = std::str::from_utf8(buf).map_err(|_| SessionError::NotASession {
        path: path.to_path_buf(),
        reason: "the first line is not UTF-8 text".into(),
    })?;
    parse_header(line, path)
}

/// Reads only the header of a session file.
pub fn read_header(path: &Path) -> Result<Header, SessionError> {
    let mut reader = open(path)?;
    read_first_line(&mut reader, &mut Vec::new(), path)
}

/// Reads a whole session. A cut-off last line, damaged lines and entry types from a newer rein
/// are skipped and reported in `notices`; an empty file, a missing header and a newer schema
/// are errors.
pub fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    let mut entries = Vec::new();
    let (header, notices) = read_entries(path, |_, entry| entries.push(entry))?;
    Ok(LoadedSession {
        path: path.to_path_buf(),
        header,
        entries,
        notices,
    })
}

/// Streams the entries of a session file to `each`, in order; returns the header and the
/// notices about what was skipped.
pub(crate) fn read_entries(
    path: &Path,
    mut each: impl FnMut(&Header, Entry),
) -> Result<(Header, Vec<String>), SessionError> {
    let mut reader = open(path)?;
    let mut buf = Vec::with_capacity(64 * 1024);
    let header = read_first_line(&mut reader, &mut buf, path)?;
    let mut notices = Vec::new();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut line_no = 1usize;
    while let Some(complete) =
        next_line(&mut reader, &mut buf).map_err(|e| SessionError::io(path, e))?
    {
        line_no += 1;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = match std::str::from_utf8(&buf) {
            Ok(line) => parse_entry(line).map_err(|e| e.to_string()),
            Err(_) => Err("not UTF-8 text".to_string()),
        };
        match parsed {
            Ok(Parsed::Entry(entry)) => each(&header, entry),
            Ok(Parsed::Unknown(ty)) => *unknown.entry(ty).or_default() += 1,
            Err(_) if !complete => {
                tracing::warn!("{}: last line cut off, skipped", path.display());
                notices.push(
                    "The last line of the session was cut off (rein was probably stopped while \
                     writing it); it was skipped."
                        .into(),
                );
            }
            Err(e) => {
                tracing::warn!("{}: line {line_no} damaged, skipped: {e}", path.display());
                notices.push(format!(
                    "Line {line_no} of the session is damaged and was skipped ({e})."
                ));
            }
        }
    }
    for (ty, n) in unknown {
        tracing::warn!(
            "{}: skipped {n} entries of unknown type {ty}",
            path.display()
        );
        notices.push(format!(
            "Skipped {n} entr{} of unknown type `{ty}` (written by a newer rein).",
            if n == 1 { "y" } else { "ies" }
        ));
    }
    Ok((header, notices))
}
