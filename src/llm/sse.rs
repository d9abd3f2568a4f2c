//! Server-sent events framing (CRLF, comments, multi-line data, event names).
//!
//! The parser is incremental and pull-based: [`SseParser::feed`] takes bytes exactly as the
//! network delivers them (any split, even inside a UTF-8 code point or between `\r` and `\n`),
//! and [`SseParser::next_event`] yields each complete event. Text is decoded per line, after
//! reassembly, so split code points survive.

/// Largest event (or unterminated line) accepted; protects memory from a server that never
/// sends a newline.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name (empty when the event had none, which means `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// Whether this is the OpenAI-style `[DONE]` terminator.
    pub fn is_done(&self) -> bool {
        self.data.trim() == "[DONE]"
    }
}

/// The stream broke the framing rules badly enough to stop reading it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event exceeded {MAX_EVENT_BYTES} bytes")]
pub struct SseTooLarge;

/// Incremental SSE parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes received and not yet consumed (starting at `pos`).
    buf: Vec<u8>,
    pos: usize,
    /// `buf[pos..scanned]` is known to hold no line ending, so a long line arriving in many
    /// pieces is scanned once, not once per piece.
    scanned: usize,
    /// The last line ended with `\r` at the very end of `buf`: a leading `\n` in the next
    /// piece belongs to that line ending.
    skip_lf: bool,
    /// Whether the first line was seen (a UTF-8 BOM is skipped before it).
    started: bool,
    /// The input has ended; flush what is pending.
    eof: bool,
    /// Fields of the event being built.
    event: String,
    data: String,
    has_data: bool,
    /// The last dispatched event (reused to avoid allocations).
    out: SseEvent,
    comments: usize,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Adds the next piece of the body.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), SseTooLarge> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.scanned = self.scanned.saturating_sub(self.pos);
            self.pos = 0;
        }
        // What is left is an unfinished line; it and the event being built are bounded.
        if self.buf.len() > MAX_EVENT_BYTES || self.data.len() > MAX_EVENT_BYTES {
            return Err(SseTooLarge);
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Marks the end of the body: the rest is flushed by the following `next_event` calls,
    /// including a last line without a newline and an event without its blank line.
    pub fn end(&mut self) {
        self.eof = true;
    }

    /// Number of `:` comment lines seen so far (e.g. `: OPENROUTER PROCESSING`).
    pub fn comment_lines(&self) -> usize {
        self.comments
    }

    /// The next complete event, if the bytes fed so far contain one.
    pub fn next_event(&mut self) -> Option<&SseEvent> {
        loop {
            if self.skip_lf {
                if self.pos < self.buf.len() {
                    if self.buf[self.pos] == b'\n' {
                        self.pos += 1;
                    }
                    self.skip_lf = false;
                } else if !self.eof {
                    return None;
                }
            }
            let rest = &self.buf[self.pos..];
            let skip = self.scanned.saturating_sub(self.pos);
            let found = memchr::memchr2(b'\n', b'\r', &rest[skip..]).map(|i| i + skip);
            let (line_end, next) = match found {
                Some(i) => {
                    let after = self.pos + i + 1;
                    if rest[i] == b'\r' {
                        if after < self.buf.len() {
                            (
                                i,
                                if self.buf[after] == b'\n' {
                                    after + 1
                                } else {
                                    after
                                },
                            )
                        } else {
                            self.skip_lf = true;
                            (i, after)
                        }
                    } else {
                        (i, after)
                    }
                }
                None if self.eof && !rest.is_empty() => (rest.len(), self.buf.len()),
                None if self.eof => {
                    // End of input: an event still being built is dispatched, so a server
                    // that omits the final blank line loses nothing.
                    return if self.dispatch() {
                        Some(&self.out)
                    } else {
                        None
                    };
                }
                None => {
                    self.scanned = self.buf.len();
                    return None;
                }
            };
            let start = self.pos;
            self.pos = next;
            if line_end == 0 {
                if self.dispatch() {
                    return Some(&self.out);
                }
                continue;
            }
            let line_range = start..start + line_end;
            self.process_line(line_range);
        }
    }

    /// Moves the event being built to `out`; false when it has no data (nothing to dispatch).
    fn dispatch(&mut self) -> bool {
        if !self.has_data {
            self.event.clear();
            return false;
        }
        self.has_data = false;
        std::mem::swap(&mut self.out.data, &mut self.data);
        std::mem::swap(&mut self.out.event, &mut self.event);
        self.data.clear();
        self.event.clear();
        if self.out.data.ends_with('\n') {
            self.out.data.pop();
        }
        true
    }

    fn process_line(&mut self, range: std::ops::Range<usize>) {
        let mut line = &self.buf[range];
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.first() == Some(&b':') {
            self.comments += 1;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                push_utf8(&mut self.data, value);
                self.data.push('\n');
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            // Older llama.cpp servers reported a failure mid-stream as an `error: {json}` line
            // (a field SSE does not define): read it as an error event, so the server's words
            // reach the person instead of a stream that "ended early".
            b"error" => {
                self.event.clear();
                self.event.push_str("error");
                push_utf8(&mut self.data, value);
                self.data.push('\n');
                self.has_data = true;
            }
            // `id`, `retry` and unknown fields do not matter for model streams.
            _ => {}
        }
    }
}

/// Appends `bytes` as text; invalid UTF-8 becomes U+FFFD instead of failing the stream.
fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> (Vec<SseEvent>, usize) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece).unwrap();
            while let Some(ev) = p.next_event() {
                out.push(ev.clone());
            }
        }
        p.end();
        while let Some(ev) = p.next_event() {
            out.push(ev.clone());
        }
        (out, p.comment_lines())
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn all_line_endings_give_the_same_events() {
        let expected = vec![ev("", "a"), ev("ping", "b\nc"), ev("", "[DONE]")];
        for nl in ["\n", "\r\n", "\r"] {
            let text =
                "data: a\n\nevent: ping\ndata: b\ndata:c\n\ndata: [DONE]\n\n".replace('\n', nl);
            assert_eq!(events(&[text.as_bytes()]).0, expected, "line ending {nl:?}");
            // Byte by byte, so `\r` and `\n` of one CRLF arrive in different pieces.
            let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
            assert_eq!(events(&bytes).0, expected, "line ending {nl:?} split");
        }
    }

    #[test]
    fn comments_are_counted_and_skipped() {
        let (evs, comments) = events(&[b": OPENROUTER PROCESSING\n\n: x\ndata: 1\n\n"]);
        assert_eq!(evs, vec![ev("", "1")]);
        assert_eq!(comments, 2);
    }

    #[test]
    fn event_name_without_data_is_not_dispatched_and_resets() {
        let (evs, _) = events(&[b"event: ping\n\ndata: x\n\n"]);
        assert_eq!(evs, vec![ev("", "x")]);
    }

    #[test]
    fn split_utf8_code_point_survives() {
        let text = "data: pelican \u{1F985}!\n\n".as_bytes();
        let pieces: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events(&pieces).0, vec![ev("", "pelican \u{1F985}!")]);
    }

    #[test]
    fn last_event_without_blank_line_is_flushed_at_end() {
        assert_eq!(
            events(&[b"data: a\n\ndata: b"]).0,
            vec![ev("", "a"), ev("", "b")]
        );
        assert_eq!(events(&[b"data: a\r"]).0, vec![ev("", "a")]);
    }

    #[test]
    fn bom_and_field_without_colon() {
        let (evs, _) = events(&[b"\xEF\xBB\xBFdata: a\ndata\nid: 7\n\n"]);
        assert_eq!(evs, vec![ev("", "a\n")]);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut p = SseParser::new();
        let piece = vec![b'x'; 1024 * 1024];
        let mut refused = false;
        for _ in 0..70 {
            if p.feed(&piece).is_err() {
                refused = true;
                break;
            }
            assert!(p.next_event().is_none());
        }
        assert!(refused);
    }

    #[test]
    fn value_keeps_all_but_one_leading_space() {
        assert_eq!(events(&[b"data:  x \n\n"]).0, vec![ev("", " x ")]);
    }
}
