//! A command's output: live deltas for the UI, a bounded head and tail for the model, and the
//! full text in a file when it is too long to return. Memory stays bounded however much a
//! command prints.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Characters returned to the model at most (plus the marker line).
pub(super) const MAX_CHARS: usize = 30_000;
/// Characters kept from the start when cutting; the rest of the budget goes to the end, where
/// test summaries and errors usually are.
const HEAD_CHARS: usize = 12_000;
const TAIL_CHARS: usize = MAX_CHARS - HEAD_CHARS;
/// Bytes kept in memory from the start; past this the output goes to a file as well.
const HEAD_KEEP: usize = 128 * 1024;
/// Bytes kept in memory from the end.
const TAIL_KEEP: usize = 128 * 1024;
/// Bytes streamed to the UI at most; beyond this the UI waits for the result.
const STREAM_LIMIT: usize = 1024 * 1024;

/// Collects a running command's output.
pub(super) struct Output {
    temp_dir: PathBuf,
    label: String,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// The full output, once it outgrew `head` (or why it could not be saved).
    spill: Option<Result<(PathBuf, BufWriter<File>), String>>,
    total_bytes: u64,
    total_chars: u64,
    /// An incomplete UTF-8 sequence held back from the last delta.
    carry: Vec<u8>,
    streamed: usize,
}

/// Length of an incomplete UTF-8 sequence at the end of `b` (0 if it ends on a boundary).
fn incomplete_suffix(b: &[u8]) -> usize {
    for i in 1..=b.len().min(3) {
        let byte = b[b.len() - i];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > i { i } else { 0 };
    }
    0
}

/// The first `n` characters of `s`, ending at a line break when one is near the end.
fn head_of(s: &str, n: usize) -> &str {
    let cut = s.char_indices().nth(n).map_or(s.len(), |(i, _)| i);
    let part = &s[..cut];
    match part.rfind('\n') {
        Some(i) if i >= part.len() / 5 * 4 => &part[..i],
        _ => part,
    }
}

/// The last `n` characters of `s`, starting after a line break when one is near the start.
fn tail_of(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    let skip = count.saturating_sub(n);
    let start = s.char_indices().nth(skip).map_or(s.len(), |(i, _)| i);
    let part = &s[start..];
    match part.find('\n') {
        Some(i) if i < part.len() / 5 => &part[i + 1..],
        _ => part,
    }
}

impl Output {
    /// An empty collector; a long output is saved in `temp_dir` under a name built from `label`.
    pub(super) fn new(temp_dir: PathBuf, label: &str) -> Output {
        let label: String = label
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(64)
            .collect();
        Output {
            temp_dir,
            label,
            head: Vec::new(),
            tail: VecDeque::new(),
            spill: None,
            total_bytes: 0,
            total_chars: 0,
            carry: Vec::new(),
            streamed: 0,
        }
    }

    /// Adds a chunk; returns the text to stream to the UI, if any.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Option<String> {
        self.total_bytes += bytes.len() as u64;
        self.total_chars += bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
        let room = HEAD_KEEP.saturating_sub(self.head.len()).min(bytes.len());
        let (first, rest) = bytes.split_at(room);
        self.head.extend_from_slice(first);
        if !rest.is_empty() {
            if self.spill.is_none() {
                self.spill = Some(self.open_spill());
            }
            if let Some(Ok((_, w))) = &mut self.spill
                && let Err(e) = w.write_all(rest)
            {
                self.spill = Some(Err(e.to_string()));
            }
            if rest.len() >= TAIL_KEEP {
                self.tail.clear();
                self.tail.extend(&rest[rest.len() - TAIL_KEEP..]);
            } else {
                let over = (self.tail.len() + rest.len()).saturating_sub(TAIL_KEEP);
                self.tail.drain(..over);
                self.tail.extend(rest);
            }
        }
        self.stream(bytes)
    }

    fn stream(&mut self, bytes: &[u8]) -> Option<String> {
        if self.streamed >= STREAM_LIMIT {
            return None;
        }
        self.carry.extend_from_slice(bytes);
        let ready = self.carry.len() - incomplete_suffix(&self.carry);
        let mut text = String::from_utf8_lossy(&self.carry[..ready]).into_owned();
        self.carry.drain(..ready);
        self.streamed += ready;
        if self.streamed >= STREAM_LIMIT {
            text.push_str(
                "\n[... live output stops here; the result will show the start and the end ...]\n",
            );
        }
        (!text.is_empty()).then_some(text)
    }

    /// Whatever is still held back from the live stream (an incomplete character at the end).
    pub(super) fn flush_stream(&mut self) -> Option<String> {
        if self.carry.is_empty() || self.streamed >= STREAM_LIMIT {
            return None;
        }
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry.clear();
        Some(text)
    }

    /// Creates the file holding the full output and writes the head to it.
    fn open_spill(&self) -> Result<(PathBuf, BufWriter<File>), String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // Private to the user: a command's output may hold anything it printed.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.temp_dir)
            .map_err(|e| e.to_string())?;
        let mut last = String::new();
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = self.temp_dir.join(format!(
                "bash-output-{}-{}-{n}.log",
                self.label,
                std::process::id()
            ));
            // create_new never follows a link a command may have planted under this name.
            let opened = File::options()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path);
            match opened {
                Ok(file) => {
                    let mut w = BufWriter::new(file);
                    w.write_all(&self.head).map_err(|e| e.to_string())?;
                    return Ok((path, w));
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    /// The text for the model: everything, or the head and tail around a marker naming the file
    /// with the full output. `None` when the command printed nothing.
    pub(super) fn finish(mut self) -> Option<String> {
        if self.total_bytes == 0 {
            return None;
        }
        let (head_text, tail_text, total_chars) = match self.spill.take() {
            None => {
                let text = String::from_utf8_lossy(&self.head).into_owned();
                let count = text.chars().count();
                if count <= MAX_CHARS {
                    return Some(text);
                }
                self.spill = Some(self.open_spill());
                (text.clone(), text, count as u64)
            }
            Some(spill) => {
                self.spill = Some(spill);
                let head = String::from_utf8_lossy(&self.head).into_owned();
                let tail: Vec<u8> = self
                    .tail
                    .iter()
                    .copied()
                    .skip_while(|b| b & 0xC0 == 0x80)
                    .collect();
                (
                    head,
                    String::from_utf8_lossy(&tail).into_owned(),
                    self.total_chars,
                )
            }
        };
        let saved = match self.spill.take() {
            Some(Ok((path, mut w))) => match w.flush() {
                Ok(()) => format!(
                    "the full output ({} bytes) is saved in {}",
                    self.total_bytes,
                    path.display()
                ),
                Err(e) => format!("the full output could not be saved: {e}"),
            },
            Some(Err(e)) => format!("the full output could not be saved: {e}"),
            None => "the full output was not saved".into(),
        };
        let head = head_of(&head_text, HEAD_CHARS);
        let tail = tail_of(&tail_text, TAIL_CHARS);
        let shown = (head.chars().count() + tail.chars().count()) as u64;
        let cut = total_chars.saturating_sub(shown);
        Some(format!(
            "{head}\n[... {cut} characters cut; {saved}. Read it with read_file (offset) or grep.]\n{tail}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collector() -> (tempfile::TempDir, Output) {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::new(dir.path().join("tmp"), "call/1");
        (dir, out)
    }

    #[test]
    fn deltas_hold_back_a_split_character() {
        let (_d, mut out) = collector();
        let bytes = "aé€😀b".as_bytes();
        // "é" is 2 bytes starting at 1; split inside it.
        assert_eq!(out.push(&bytes[..2]).as_deref(), Some("a"));
        assert_eq!(out.push(&bytes[2..4]).as_deref(), Some("é"));
        assert_eq!(
            out.push(&bytes[4..7]).as_deref(),
            Some("€"),
            "bytes 4..6 hold the € partly"
        );
        assert_eq!(out.push(&bytes[7..9]), None);
        assert_eq!(out.push(&bytes[9..]).as_deref(), Some("😀b"));
        assert_eq!(out.flush_stream(), None);
        assert_eq!(out.finish().as_deref(), Some("aé€😀b"));
    }

    #[test]
    fn incomplete_tail_is_flushed_lossily() {
        let (_d, mut out) = collector();
        assert_eq!(out.push(b"x\xe2\x82").as_deref(), Some("x"));
        assert_eq!(out.flush_stream().as_deref(), Some("\u{FFFD}"));
    }

    #[test]
    fn empty_output_is_none() {
        let (_d, out) = collector();
        assert_eq!(out.finish(), None);
    }

    #[test]
    fn short_output_is_returned_whole_without_a_file() {
        let (d, mut out) = collector();
        let text = "line\n".repeat(6000);
        out.push(text.as_bytes());
        assert_eq!(out.finish().as_deref(), Some(text.as_str()));
        assert!(!d.path().join("tmp").exists(), "no file for a short output");
    }

    fn saved_path(result: &str) -> PathBuf {
        let start = result.find("is saved in ").unwrap() + "is saved in ".len();
        let end = result[start..].find(". Read it").unwrap();
        PathBuf::from(&result[start..start + end])
    }

    #[test]
    fn long_output_in_memory_is_cut_and_saved() {
        let (_d, mut out) = collector();
        let text: String = (0..8000).map(|i| format!("row {i}\n")).collect();
        for chunk in text.as_bytes().chunks(1000) {
            out.push(chunk);
        }
        let result = out.finish().unwrap();
        assert!(result.starts_with("row 0\nrow 1\n"));
        assert!(result.ends_with("row 7999\n"));
        assert!(result.chars().count() < MAX_CHARS + 300);
        let marker = result.lines().find(|l| l.starts_with("[... ")).unwrap();
        let shown = result.chars().count() - marker.chars().count() - 2;
        let cut: usize = marker["[... ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(cut + shown, text.chars().count(), "{marker}");
        assert_eq!(std::fs::read_to_string(saved_path(&result)).unwrap(), text);
        let name = saved_path(&result)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("bash-output-call1-"), "{name}");
    }

    #[test]
    fn saved_outputs_are_private_and_never_written_through_a_planted_link() {
        use std::os::unix::fs::PermissionsExt;
        let (d, _) = collector();
        // The session temp dir is writable by commands: one may plant links under the names
        // rein is about to use.
        let dir = d.path().join("fresh-session-tmp");
        std::fs::create_dir(&dir).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        for n in 0..8 {
            let name = format!("bash-output-call1-{}-{n}.log", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        }
        let mut out = Output::new(dir.clone(), "call1");
        out.push(&vec![b'x'; HEAD_KEEP + 10]);
        let result = out.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let saved = saved_path(&result);
        assert!(
            std::fs::symlink_metadata(&saved).unwrap().is_file(),
            "{result}"
        );
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&saved), 0o600);
        let nested = d.path().join("a/b");
        let mut out = Output::new(nested.clone(), "call1");
        out.push(&vec![b'y'; HEAD_KEEP + 10]);
        let _ = out.finish().unwrap();
        assert_eq!(mode(&nested), 0o700);
    }

    #[test]
    fn huge_output_keeps_head_tail_and_file() {
        let (_d, mut out) = collector();
        let mut all = Vec::new();
        for i in 0..200_000 {
            let line = format!("{i:08}\n");
            all.extend_from_slice(line.as_bytes());
            out.push(line.as_bytes());
        }
        let result = out.finish().unwrap();
        assert!(result.starts_with("00000000\n00000001\n"));
        assert!(result.ends_with("00199999\n"));
        assert!(result.contains(&format!(
                "[... {} characters cut;",
                all.len()
                    - (result.len()
                        - result
                            .lines()
                            .find(|l| l.starts_with("[..."))
                            .unwrap()
                            .len()
                        - 2)
            )));
        assert_eq!(std::fs::read(saved_path(&result)).unwrap(), all);
    }

    #[test]
    fn live_stream_stops_at_the_limit() {
        let (_d, mut out) = collector();
        let chunk = vec![b'a'; 64 * 1024];
        let mut streamed = 0;
        let mut notices = 0;
        for _ in 0..40 {
            if let Some(text) = out.push(&chunk) {
                streamed += text.split("\n[...").next().unwrap_or("").len();
                notices += text.matches("live output stops here").count();
            }
        }
        assert_eq!(streamed, STREAM_LIMIT);
        assert_eq!(notices, 1);
    }
}
