//! Markdown that grows while it streams.
//!
//! Appending a delta only pushes to the answer's string (`model::cell::Answer`). At layout
//! time the text is cut at safe points (a blank line outside code fences, a closed fence, or
//! every few dozen lines inside an open fence); everything before the last cut is parsed and
//! laid out once and kept, so each frame only re-parses the short tail. When the response is
//! complete the whole text is rendered once more, so the final result is exactly what a
//! one-shot render would give.

use super::markdown::{self, MdBlock};
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, sanitize};
use ratatui::text::Line;

/// Lines inside an open code fence after which the stable part moves on.
const FENCE_CHUNK: usize = 40;

struct Fence {
    ch: char,
    len: usize,
    opener: String,
    lines: usize,
}

/// The layout of a markdown text that can grow (an answer while it streams).
///
/// Created only for the answers that are drawn; the text itself is the model's
/// ([`crate::tui::model::cell::Answer`]) and is handed in at each layout.
#[derive(Default)]
pub struct StreamLayout {
    stable_end: usize,
    scan_pos: usize,
    fence: Option<Fence>,
    /// Fence opener the tail must start with (the stable part ends inside a fence).
    reopen: Option<String>,
    stable: Vec<MdBlock>,
    width: usize,
    lines: Vec<Line<'static>>,
    stable_lines: usize,
    stable_laid: usize,
    tail_valid: bool,
}

impl std::fmt::Debug for StreamLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamLayout")
            .field("stable_end", &self.stable_end)
            .field("lines", &self.lines.len())
            .finish()
    }
}

impl StreamLayout {
    /// The text grew since the last layout: only its tail is laid out again.
    pub fn text_grew(&mut self) {
        self.tail_valid = false;
    }

    /// Lines of `text` for `width`; re-parses only what changed since the last call. `done`:
    /// no more text comes (a layout made while it streamed is not reused then: a finished
    /// text is rendered in one piece).
    pub fn lines(
        &mut self,
        text: &str,
        done: bool,
        width: usize,
        theme: &Theme,
    ) -> &[Line<'static>] {
        let l = self;
        if width != l.width {
            l.width = width;
            l.reset_lines();
        }
        if done {
            if l.stable.is_empty() && !text.is_empty() {
                l.stable = markdown::render(&sanitize(text), theme);
                l.stable_end = text.len();
            }
        } else {
            l.advance(text, theme);
        }
        if l.stable_laid < l.stable.len() {
            l.lines.truncate(l.stable_lines);
            markdown::layout(&l.stable[l.stable_laid..], width, theme, &mut l.lines);
            l.stable_laid = l.stable.len();
            l.stable_lines = l.lines.len();
            l.tail_valid = false;
        }
        if !l.tail_valid {
            l.lines.truncate(l.stable_lines);
            if !done && l.stable_end < text.len() {
                let tail = &text[l.stable_end..];
                let source = match &l.reopen {
                    Some(opener) => format!("{opener}{tail}"),
                    None => tail.to_string(),
                };
                let blocks = markdown::render(&sanitize(&source), theme);
                if !blocks.is_empty() && !l.stable.is_empty() && l.reopen.is_none() {
                    l.lines.push(Line::default());
                }
                markdown::layout(&blocks, width, theme, &mut l.lines);
            }
            l.tail_valid = true;
        }
        &l.lines
    }

    fn reset_lines(&mut self) {
        self.lines.clear();
        self.stable_lines = 0;
        self.stable_laid = 0;
        self.tail_valid = false;
    }

    /// Scans complete lines not seen yet and moves the stable part to the last safe cut.
    fn advance(&mut self, text: &str, theme: &Theme) {
        let mut cut: Option<(usize, Option<String>)> = None;
        while let Some(nl) = text[self.scan_pos..].find('\n') {
            let end = self.scan_pos + nl + 1;
            let line = &text[self.scan_pos..end - 1];
            match &mut self.fence {
                Some(f) => {
                    if closes(line, f) {
                        self.fence = None;
                        cut = Some((end, None));
                    } else {
                        f.lines += 1;
                        if f.lines >= FENCE_CHUNK {
                            f.lines = 0;
                            cut = Some((end, Some(f.opener.clone())));
                        }
                    }
                }
                None => {
                    if let Some(f) = opens(line) {
                        self.fence = Some(f);
                    } else if line.trim().is_empty() {
                        cut = Some((end, None));
                    }
                }
            }
            self.scan_pos = end;
        }
        let Some((end, reopen)) = cut else {
            return;
        };
        if end <= self.stable_end {
            return;
        }
        let chunk = &text[self.stable_end..end];
        let source = match &self.reopen {
            Some(opener) => format!("{opener}{chunk}"),
            None => chunk.to_string(),
        };
        let blocks = markdown::render(&sanitize(&source), theme);
        if !blocks.is_empty() {
            if !self.stable.is_empty() && self.reopen.is_none() {
                self.stable.push(MdBlock::Line(RichLine::blank()));
            }
            self.stable.extend(blocks);
        }
        self.stable_end = end;
        self.reopen = reopen;
        self.tail_valid = false;
    }
}

fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let len = rest.chars().take_while(|c| *c == ch).count();
    (len >= 3).then(|| (ch, len, &rest[len..]))
}

fn opens(line: &str) -> Option<Fence> {
    let (ch, len, info) = fence_marker(line)?;
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some(Fence {
        ch,
        len,
        opener: format!("{}\n", line.trim_start()),
        lines: 0,
    })
}

fn closes(line: &str, fence: &Fence) -> bool {
    matches!(fence_marker(line), Some((ch, len, rest)) if ch == fence.ch && len >= fence.len && rest.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    const DOC: &str = "# Plan\n\nFirst paragraph with **bold** words that wrap around.\n\n1. one\n2. two\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nAfter the code.\n";

    #[test]
    fn streaming_in_small_pieces_ends_like_a_one_shot_render() {
        let theme = Theme::dark();
        let expected = text(StreamLayout::default().lines(DOC, true, 30, &theme));

        let mut s = StreamLayout::default();
        let mut sent = String::new();
        for (i, c) in DOC.chars().enumerate() {
            sent.push(c);
            s.text_grew();
            if i % 7 == 0 {
                // Interleave layouts as frames would.
                let _ = s.lines(&sent, false, 30, &theme);
            }
        }
        // Even before finishing, the streamed layout matches here (cuts at safe points).
        assert_eq!(text(s.lines(&sent, false, 30, &theme)), expected);
    }

    #[test]
    fn long_open_fences_are_cut_and_continue_as_code() {
        let theme = Theme::dark();
        let mut s = StreamLayout::default();
        let mut sent = String::from("```\n");
        for i in 0..100 {
            sent.push_str(&format!("line {i}\n"));
            s.text_grew();
            let _ = s.lines(&sent, false, 40, &theme);
        }
        let lines = text(s.lines(&sent, false, 40, &theme));
        assert_eq!(lines.len(), 100, "{lines:?}");
        assert_eq!(lines[45], "  line 45");
        assert!(s.stable_end > 0, "the stable part moved into the fence");
    }
}
