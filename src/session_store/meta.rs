//! The sidecar (`<name>.meta.json`): what a listing shows about a session, kept up to date by
//! the writer so listing never reads whole session files.

use super::entry::{ModelChangeEntry, RenameEntry, UserEntry, peek_type, rfc3339};
use super::header::Header;
use super::load::{next_line, parse_header};
use super::{SessionError, short_title, sidecar_path};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Version of the sidecar format (a sidecar of another version is ignored and rebuilt).
const META_VERSION: u32 = 1;

/// Summary facts about one session file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Meta {
    pub version: u32,
    pub id: String,
    pub cwd: PathBuf,
    pub model: String,
    pub provider: String,
    pub parent: Option<String>,
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    pub updated_at: Timestamp,
    /// The latest `rename`.
    pub title: Option<String>,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
    /// User and assistant messages of the main conversation.
    pub message_count: u64,
    /// Length of the session file these facts describe; a longer file means they are stale.
    pub size: u64,
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
}

fn line_type(line: &str) -> Option<Cow<'_, str>> {
    match peek_type(line) {
        Some(t) => Some(Cow::Borrowed(t)),
        None => serde_json::from_str::<TypeOnly>(line).ok().map(|t| t.ty),
    }
}

impl Meta {
    /// The facts of a session that has only its header.
    pub fn from_header(h: &Header) -> Meta {
        Meta {
            version: META_VERSION,
            id: h.id.clone(),
            cwd: h.cwd.clone(),
            model: h.model.clone(),
            provider: h.provider.clone(),
            parent: h.parent.clone(),
            created_at: h.created_at,
            updated_at: h.created_at,
            title: h.title.clone(),
            first_prompt: None,
            message_count: 0,
            size: 0,
        }
    }

    /// Updates the facts with one entry line (only the few types that matter are parsed).
    pub fn observe_line(&mut self, line: &str) {
        let Some(ty) = line_type(line) else {
            return;
        };
        match ty.as_ref() {
            "user" => {
                self.message_count += 1;
                if self.first_prompt.is_none()
                    && let Ok(e) = serde_json::from_str::<UserEntry>(line)
                    && e.by_person()
                {
                    self.first_prompt = Some(short_title(&e.content));
                }
            }
            "assistant" => self.message_count += 1,
            "rename" => {
                if let Ok(e) = serde_json::from_str::<RenameEntry>(line) {
                    self.title = Some(e.title);
                }
            }
            "model_change" => {
                if let Ok(e) = serde_json::from_str::<ModelChangeEntry>(line) {
                    self.model = e.model;
                }
            }
            _ => {}
        }
    }

    /// The sidecar of `session`, if it exists and is readable.
    pub fn read(session: &Path) -> Option<Meta> {
        let text = std::fs::read(sidecar_path(session)).ok()?;
        let meta: Meta = serde_json::from_slice(&text).ok()?;
        (meta.version == META_VERSION).then_some(meta)
    }

    /// Replaces the sidecar of `session` atomically (write a temp file, then rename).
    pub fn write(&self, session: &Path) -> std::io::Result<()> {
        let target = sidecar_path(session);
        let tmp = target.with_extension("json.tmp");
        let mut file = private_file(&tmp)?;
        file.write_all(&serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        drop(file);
        std::fs::rename(&tmp, &target)
    }
}

/// Creates (or truncates) a file only its owner can read.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)
}

/// The facts of `session` as they are now: the sidecar when it matches the file; otherwise the
/// sidecar brought up to date from the lines appended since, or (without a usable sidecar)
/// from the whole file. The second value says whether the sidecar was fresh.
pub(crate) fn current(session: &Path) -> Result<(Meta, bool), SessionError> {
    let io = |e| SessionError::io(session, e);
    let len = std::fs::metadata(session).map_err(io)?.len();
    let sidecar = Meta::read(session);
    if let Some(meta) = &sidecar
        && meta.size == len
    {
        return Ok((meta.clone(), true));
    }
    let file = std::fs::File::open(session).map_err(io)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut buf = Vec::new();
    let resume_at = sidecar.filter(|m| m.size > 0 && m.size < len && ends_line_at(session, m.size));
    let mut meta = match resume_at {
        Some(meta) => {
            reader.seek(SeekFrom::Start(meta.size)).map_err(io)?;
            meta
        }
        None => {
            let header = loop {
                match next_line(&mut reader, &mut buf).map_err(io)? {
                    None => {
                        return Err(SessionError::Empty {
                            path: session.to_path_buf(),
                        });
                    }
                    Some(_) if buf.iter().all(u8::is_ascii_whitespace) => continue,
                    Some(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        break parse_header(&line, session)?;
                    }
                }
            };
            Meta::from_header(&header)
        }
    };
    while let Some(complete) = next_line(&mut reader, &mut buf).map_err(io)? {
        // A cut-off last line is not an entry (yet).
        if complete && let Ok(line) = std::str::from_utf8(&buf) {
            meta.observe_line(line);
        }
    }
    meta.size = len;
    if let Ok(modified) = std::fs::metadata(session).and_then(|m| m.modified())
        && let Ok(ts) = Timestamp::try_from(modified)
    {
        meta.updated_at = meta.updated_at.max(ts);
    }
    Ok((meta, false))
}

/// Whether byte `offset - 1` of the file is a newline (so a scan may resume at `offset`).
fn ends_line_at(path: &Path, offset: u64) -> bool {
    use std::io::Read;
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut byte = [0u8; 1];
    f.seek(SeekFrom::Start(offset - 1)).is_ok()
        && f.read_exact(&mut byte).is_ok()
        && byte[0] == b'\n'
}
