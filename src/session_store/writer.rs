//! Writing a session: one line per entry, each written whole and flushed to the OS at once
//! (so a killed rein loses at most the line it was writing), fsync at the end of each turn.

use super::entry::{Entry, SCHEMA};
use super::header::Header;
use super::load::{next_line, read_header};
use super::meta::{self, Meta};
use super::{SessionError, sessions_dir, valid_id};
use serde::Serialize;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The one writer of a session file. It holds an exclusive lock on the file, so a second
/// writer (another rein resuming the same session) is refused instead of interleaving lines.
#[derive(Debug)]
pub struct SessionWriter {
    file: File,
    path: PathBuf,
    header: Header,
    meta: Meta,
    line: Vec<u8>,
    /// The last write failed, possibly halfway through a line.
    torn: bool,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(flatten)]
    header: &'a Header,
}

/// The header as its JSONL line (with `"type":"header"` first).
pub(crate) fn header_line(header: &Header) -> Result<Vec<u8>, SessionError> {
    let mut line = serde_json::to_vec(&HeaderLine {
        ty: "header",
        header,
    })?;
    line.push(b'\n');
    Ok(line)
}

/// Takes the exclusive advisory lock of a session file, or says who holds it.
fn lock(file: &File, path: &Path) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Locked {
            path: path.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(SessionError::io(path, e)),
    }
}

fn file_name(header: &Header) -> String {
    let time = header.created_at.strftime("%Y-%m-%dT%H-%M-%S");
    format!("{time}_{}.jsonl", header.id)
}

impl SessionWriter {
    /// Creates `<data_dir>/sessions/<time>_<id>.jsonl` with `header` as its first line (never
    /// overwriting an existing file) and its sidecar.
    pub fn create(data_dir: &Path, header: Header) -> Result<SessionWriter, SessionError> {
        if !valid_id(&header.id) {
            return Err(SessionError::InvalidId(header.id));
        }
        let dir = sessions_dir(data_dir);
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .map_err(|e| SessionError::io(&dir, e))?;
        let path = dir.join(file_name(&header));
        let mut opts = std::fs::OpenOptions::new();
        opts.append(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let file = opts.open(&path).map_err(|e| SessionError::io(&path, e))?;
        lock(&file, &path)?;
        let mut writer = SessionWriter {
            file,
            meta: Meta::from_header(&header),
            path,
            header,
            line: Vec::with_capacity(4096),
            torn: false,
        };
        let line = header_line(&writer.header)?;
        writer.write_line(&line)?;
        // No sidecar yet: listing reads a new, short file directly until the first sync.
        Ok(writer)
    }

    /// Opens an existing session to continue it. A cut-off last line (rein was killed while
    /// writing it) is closed with a newline first, so new entries start on a line of their own.
    pub fn open_append(path: &Path) -> Result<SessionWriter, SessionError> {
        let header = read_header(path)?;
        let io = |e| SessionError::io(path, e);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        lock(&file, path)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io)?;
            }
        }
        let (meta, _) = meta::current(path)?;
        Ok(SessionWriter {
            file,
            path: path.to_path_buf(),
            header,
            meta,
            line: Vec::with_capacity(4096),
            torn: false,
        })
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The header written at creation.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The current title (latest rename), if any.
    pub fn title(&self) -> Option<&str> {
        self.meta.title.as_deref()
    }

    /// Writes one entry as one line, handed to the OS in a single write.
    pub fn append(&mut self, entry: &Entry) -> Result<(), SessionError> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let result = serde_json::to_writer(&mut line, entry)
            .map_err(SessionError::from)
            .and_then(|()| {
                line.push(b'\n');
                self.write_line(&line)
            });
        if result.is_ok() {
            // The line is valid UTF-8: serde_json wrote it.
            if let Ok(text) = std::str::from_utf8(&line) {
                self.meta.observe_line(text.trim_end());
            }
            self.meta.updated_at = entry.ts();
        }
        self.line = line;
        result
    }

    /// Appends a conversation message.
    pub fn append_message(&mut self, msg: &crate::llm::Message) -> Result<(), SessionError> {
        self.append(&Entry::from_message(msg))
    }

    /// Appends a `rename` entry and updates the sidecar at once.
    pub fn rename(&mut self, title: &str) -> Result<(), SessionError> {
        self.append(&Entry::rename(title))?;
        self.write_meta();
        Ok(())
    }

    /// Forces the file to disk and refreshes the sidecar (call at the end of each turn).
    pub fn sync(&mut self) -> Result<(), SessionError> {
        self.file
            .sync_data()
            .map_err(|e| SessionError::io(&self.path, e))?;
        self.write_meta();
        Ok(())
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), SessionError> {
        let io = |e| SessionError::io(&self.path, e);
        if self.torn {
            // A failed write may have left part of a line: end it so this one stands alone.
            self.file.write_all(b"\n").map_err(io)?;
            self.meta.size += 1;
            self.torn = false;
        }
        if let Err(e) = self.file.write_all(line) {
            self.torn = true;
            return Err(io(e));
        }
        self.meta.size += line.len() as u64;
        Ok(())
    }

    /// The sidecar is a cache: failing to write it only makes listing slower.
    fn write_meta(&mut self) {
        // The file's real length, even after a write that failed halfway.
        if let Ok(m) = self.file.metadata() {
            self.meta.size = m.len();
        }
        if let Err(e) = self.meta.write(&self.path) {
            tracing::warn!("cannot write the sidecar of {}: {e}", self.path.display());
        }
    }
}

/// Starts a new session `new_id` whose header names `source`'s id as its parent and whose
/// entries are a copy of `source`'s (every intact line, including types this rein does not
/// know). The copy is synced before it is returned.
pub fn fork(data_dir: &Path, source: &Path, new_id: &str) -> Result<SessionWriter, SessionError> {
    let parent = read_header(source)?;
    let header = Header {
        schema: SCHEMA,
        id: new_id.to_string(),
        cwd: parent.cwd.clone(),
        git_branch: parent.git_branch.clone(),
        model: parent.model.clone(),
        provider: parent.provider.clone(),
        created_at: jiff::Timestamp::now(),
        parent: Some(parent.id.clone()),
        title: parent.title.clone(),
    };
    let mut writer = SessionWriter::create(data_dir, header)?;
    let io = |e| SessionError::io(source, e);
    let mut reader = BufReader::with_capacity(256 * 1024, File::open(source).map_err(io)?);
    let mut buf = Vec::new();
    let mut seen_header = false;
    while let Some(complete) = next_line(&mut reader, &mut buf).map_err(io)? {
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // The header is replaced; a cut-off last line is not an entry.
        if !std::mem::replace(&mut seen_header, true) || !complete {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            continue;
        };
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
            continue;
        }
        writer.meta.observe_line(text);
        buf.push(b'\n');
        writer.write_line(&buf)?;
    }
    // The copied checkpoint entries name blobs: the copy gets them too.
    let blobs =
        |p: &Path| crate::checkpoint::BlobStore::new(crate::checkpoint::dir_for(p).join("blobs"));
    let target = blobs(writer.path());
    blobs(source)
        .link_into(&target)
        .map_err(|e| SessionError::io(target.dir(), e))?;
    writer.sync()?;
    Ok(writer)
}
