//! Width-independent styled lines (`RichLine`) and wrapping them to a width.
//!
//! Views build `RichLine`s once (markdown parsing, highlighting and diffing are the expensive
//! part) and wrap them per width, which is cheap; that is what makes resizes and streaming fast.

pub use super::sanitize::{one_line, sanitize};
use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::borrow::Cow;
use unicode_segmentation::UnicodeSegmentation;

/// How a line breaks when it is wider than the space it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// At spaces; words longer than a line are split.
    Word,
    /// At any character, keeping every space (code, diffs).
    Char,
    /// Never: the line is cut at the edge.
    Cut,
}

/// One logical line: its content plus the prefix of its first and following visual lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RichLine {
    /// Prefix of the first visual line (a list marker, a quote bar, a gutter).
    pub first: Vec<Span<'static>>,
    /// Prefix of the continuation lines.
    pub rest: Vec<Span<'static>>,
    /// The content.
    pub spans: Vec<Span<'static>>,
    /// Wrapping mode.
    pub wrap: Option<Wrap>,
}

impl RichLine {
    /// A line of spans without prefix, word-wrapped.
    pub fn new(spans: Vec<Span<'static>>) -> RichLine {
        RichLine {
            spans,
            ..RichLine::default()
        }
    }

    /// An empty line.
    pub fn blank() -> RichLine {
        RichLine::default()
    }

    /// Sets both prefixes.
    pub fn prefixed(mut self, first: Vec<Span<'static>>, rest: Vec<Span<'static>>) -> RichLine {
        self.first = first;
        self.rest = rest;
        self
    }

    /// Sets the wrap mode.
    pub fn wrapped(mut self, wrap: Wrap) -> RichLine {
        self.wrap = Some(wrap);
        self
    }

    /// Wraps this line to `width` columns, appending the visual lines to `out`.
    pub fn layout(&self, width: usize, out: &mut Vec<Line<'static>>) {
        wrap_spans(
            &self.spans,
            width,
            &self.first,
            &self.rest,
            self.wrap.unwrap_or(Wrap::Word),
            out,
        );
    }
}

/// Lays out many lines.
pub fn layout_all(lines: &[RichLine], width: usize, out: &mut Vec<Line<'static>>) {
    for line in lines {
        line.layout(width, out);
    }
}

/// Display width of one grapheme cluster, exactly as ratatui's buffer draws it: control
/// characters take no cell; a cluster (`❤️`, a ZWJ family, a letter with combining marks) takes
/// the width of the whole cluster, not the sum of its characters.
pub fn grapheme_width(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        usize::from(g.cell_width())
    }
}

/// Display width of a string, cluster by cluster.
pub fn str_width(s: &str) -> usize {
    // ASCII without control characters is one cell per byte; most text is that.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// Display width of spans.
pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Cuts `s` to at most `width` columns, ending with `…` when something was cut.
pub fn truncate(s: &str, width: usize) -> Cow<'_, str> {
    if str_width(s) <= width {
        return Cow::Borrowed(s);
    }
    if width == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut w = 0;
    for g in s.graphemes(true) {
        let gw = grapheme_width(g);
        if w + gw > width - 1 {
            break;
        }
        out.push_str(g);
        w += gw;
    }
    out.push('…');
    Cow::Owned(out)
}

/// Shortens a path for display: `~` for the home directory, `…/a/b` when longer than `max`.
pub fn short_path(path: &std::path::Path, home: Option<&std::path::Path>, max: usize) -> String {
    let mut s = one_line(&path.display().to_string());
    if let Some(home) = home
        && let Ok(rest) = path.strip_prefix(home)
    {
        s = if rest.as_os_str().is_empty() {
            "~".to_string()
        } else {
            format!("~/{}", one_line(&rest.display().to_string()))
        };
    }
    if s.chars().count() <= max {
        return s;
    }
    let parts: Vec<&str> = s.split('/').filter(|p| !p.is_empty()).collect();
    let tail = parts[parts.len().saturating_sub(2)..].join("/");
    let short = format!("…/{tail}");
    if short.chars().count() <= max {
        short
    } else {
        truncate(&short, max).into_owned()
    }
}

/// Appends `text` with `style` to `spans`, merging with the last span when the style matches.
pub fn push_span(spans: &mut Vec<Span<'static>>, text: &str, style: Style) {
    if text.is_empty() {
        return;
    }
    if let Some(last) = spans.last_mut()
        && last.style == style
    {
        last.content.to_mut().push_str(text);
        return;
    }
    spans.push(Span::styled(text.to_string(), style));
}

struct Builder<'a> {
    out: &'a mut Vec<Line<'static>>,
    rest: &'a [Span<'static>],
    rest_w: usize,
    width: usize,
    cur: Vec<Span<'static>>,
    cur_w: usize,
    /// Whether the current visual line holds content (beyond the prefix).
    has_content: bool,
    /// Drop trailing spaces at breaks (word wrapping).
    trim: bool,
}

impl Builder<'_> {
    fn avail(&self) -> usize {
        self.width.saturating_sub(self.cur_w)
    }

    fn newline(&mut self) {
        let mut line = std::mem::take(&mut self.cur);
        // Trailing spaces of a word-wrapped line are invisible; dropping them keeps copies clean.
        if let Some(last) = line.last_mut() {
            let trimmed = last.content.trim_end_matches(' ').len();
            if self.trim && trimmed < last.content.len() && self.has_content {
                last.content.to_mut().truncate(trimmed);
            }
        }
        self.out.push(Line::from(line));
        self.cur = self.rest.to_vec();
        self.cur_w = self.rest_w;
        self.has_content = false;
    }

    /// Adds one grapheme cluster, breaking the line first when it does not fit.
    fn push_grapheme(&mut self, g: &str, style: Style) {
        let gw = grapheme_width(g);
        if gw > self.avail() && self.has_content {
            self.newline();
        }
        push_span(&mut self.cur, g, style);
        self.cur_w += gw;
        self.has_content = true;
    }

    fn push_str(&mut self, s: &str, w: usize, style: Style) {
        push_span(&mut self.cur, s, style);
        self.cur_w += w;
        self.has_content = true;
    }
}

/// Wraps `spans` to `width` columns with the given prefixes, appending to `out`.
/// Always produces at least one line.
pub fn wrap_spans(
    spans: &[Span<'static>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
    mode: Wrap,
    out: &mut Vec<Line<'static>>,
) {
    let width = width.max(1);
    let mut b = Builder {
        out,
        rest,
        rest_w: spans_width(rest),
        width,
        cur: first.to_vec(),
        cur_w: spans_width(first),
        has_content: false,
        trim: mode == Wrap::Word,
    };
    match mode {
        Wrap::Cut => {
            // What is cut off ends in `…`, so a cut line never looks complete.
            let cut = spans_width(spans) > b.avail();
            let room = if cut {
                b.avail().saturating_sub(1)
            } else {
                b.avail()
            };
            let mut used = 0;
            let mut last_style = Style::default();
            'spans: for span in spans {
                for g in span.content.graphemes(true) {
                    let gw = grapheme_width(g);
                    if used + gw > room {
                        break 'spans;
                    }
                    used += gw;
                    last_style = span.style;
                    b.push_str(g, gw, span.style);
                }
            }
            if cut && b.avail() >= 1 {
                b.push_str("…", 1, last_style);
            }
        }
        Wrap::Char => {
            for span in spans {
                // Fast path: the whole span fits.
                let w = str_width(&span.content);
                if w <= b.avail() {
                    b.push_str(&span.content, w, span.style);
                    continue;
                }
                for g in span.content.graphemes(true) {
                    b.push_grapheme(g, span.style);
                }
            }
        }
        Wrap::Word => wrap_words(&mut b, spans),
    }
    let line = std::mem::take(&mut b.cur);
    b.out.push(Line::from(line));
}

/// A word may span several styles (`**bold**text`), so words are collected as pieces.
fn wrap_words(b: &mut Builder<'_>, spans: &[Span<'static>]) {
    let mut pending = Pending::default();
    for span in spans {
        let text: &str = &span.content;
        let mut start = 0;
        let mut in_space: Option<bool> = None;
        for (i, c) in text.char_indices() {
            let is_space = c == ' ';
            if in_space != Some(is_space) {
                if let Some(was_space) = in_space {
                    pending.push(b, &text[start..i], span.style, was_space);
                }
                start = i;
                in_space = Some(is_space);
            }
        }
        if let Some(was_space) = in_space {
            pending.push(b, &text[start..], span.style, was_space);
        }
    }
    pending.flush(b);
    // Trailing spaces of the logical line are dropped: invisible anyway.
}

/// The word being gathered and the spaces before it, until it is known where it goes.
#[derive(Default)]
struct Pending<'a> {
    word: Vec<(&'a str, Style)>,
    word_w: usize,
    spaces: Vec<(&'a str, Style)>,
    spaces_w: usize,
}

impl<'a> Pending<'a> {
    /// Adds a run of spaces (which ends the word before it) or of other characters.
    fn push(&mut self, b: &mut Builder<'_>, piece: &'a str, style: Style, is_space: bool) {
        if is_space {
            self.flush(b);
            self.spaces.push((piece, style));
            self.spaces_w += piece.len();
        } else {
            self.word.push((piece, style));
            self.word_w += str_width(piece);
        }
    }

    /// Places the word: after its spaces on this line, else on the next line, else (too long
    /// for any line) split where the lines end.
    fn flush(&mut self, b: &mut Builder<'_>) {
        if self.word.is_empty() {
            return;
        }
        let leading = !b.has_content;
        if self.spaces_w + self.word_w <= b.avail() {
            // Fits on this line together with the spaces before it.
            for (s, st) in self.spaces.drain(..) {
                b.push_str(s, str_width(s), st);
            }
        } else if self.word_w <= b.width.saturating_sub(b.rest_w) && !leading {
            b.newline();
            self.spaces.clear();
        } else {
            // Too long for any line: keep the spaces that fit and split the word.
            for (s, st) in self.spaces.drain(..) {
                for g in s.graphemes(true) {
                    if b.avail() == 0 {
                        break;
                    }
                    b.push_grapheme(g, st);
                }
            }
            for (s, st) in self.word.drain(..) {
                for g in s.graphemes(true) {
                    b.push_grapheme(g, st);
                }
            }
            self.word_w = 0;
            self.spaces_w = 0;
            return;
        }
        for (s, st) in self.word.drain(..) {
            b.push_str(s, str_width(s), st);
        }
        self.word_w = 0;
        self.spaces_w = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn wrap(s: &str, width: usize, mode: Wrap) -> Vec<String> {
        let mut out = Vec::new();
        let rl = RichLine::new(vec![Span::raw(s.to_string())])
            .prefixed(vec![Span::raw("- ")], vec![Span::raw("  ")])
            .wrapped(mode);
        rl.layout(width, &mut out);
        texts(&out)
    }

    #[test]
    fn word_wrap_breaks_at_spaces_with_hanging_prefix() {
        assert_eq!(
            wrap("the quick brown fox jumps", 12, Wrap::Word),
            vec!["- the quick", "  brown fox", "  jumps"]
        );
    }

    #[test]
    fn long_words_are_split_and_no_line_exceeds_the_width() {
        let lines = wrap("a abcdefghijklmnopqrstuvwxyz b", 10, Wrap::Word);
        for l in &lines {
            assert!(str_width(l) <= 10, "{l:?} in {lines:?}");
        }
        assert_eq!(
            lines.concat().replace(' ', ""),
            "-aabcdefghijklmnopqrstuvwxyzb"
        );
    }

    #[test]
    fn char_wrap_keeps_spaces_and_wide_chars_fit() {
        assert_eq!(wrap("ab  cdef", 6, Wrap::Char), vec!["- ab  ", "  cdef"]);
        let lines = wrap("日本語のテキスト", 7, Wrap::Char);
        for l in &lines {
            assert!(str_width(l) <= 7, "{lines:?}");
        }
        assert_eq!(wrap("abcdefgh", 5, Wrap::Cut), vec!["- ab…"]);
        assert_eq!(wrap("abc", 5, Wrap::Cut), vec!["- abc"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = vec![Span::raw("plain "), Span::styled("bold words here", bold)];
        let mut out = Vec::new();
        wrap_spans(&spans, 11, &[], &[], Wrap::Word, &mut out);
        assert_eq!(texts(&out), vec!["plain bold", "words here"]);
        assert_eq!(out[1].spans[0].style, bold);
    }

    #[test]
    fn tiny_widths_never_panic() {
        for w in 0..4 {
            let _ = wrap("hello wide 日本 world", w, Wrap::Word);
            let _ = wrap("hello", w, Wrap::Char);
        }
        assert_eq!(truncate("hello", 3), "he…");
        assert_eq!(truncate("hi", 3), "hi");
    }

    /// The oracle: the cells ratatui's buffer actually fills for the string.
    fn ratatui_width(s: &str) -> usize {
        let area = ratatui::layout::Rect::new(0, 0, 200, 1);
        let mut buf = ratatui::buffer::Buffer::empty(area);
        let (x, _) = buf.set_stringn(0, 0, s, 200, Style::new());
        usize::from(x)
    }

    #[test]
    fn widths_match_what_ratatui_draws() {
        let cases = [
            ("ascii", "hello world", 11),
            ("CJK", "日本語のテキスト", 16),
            ("emoji with VS16", "❤️", 2),
            ("text heart then emoji heart", "♥❤️", 3),
            ("ZWJ family", "👨‍👩‍👧‍👦", 2),
            ("flag", "🇫🇷", 2),
            ("combining marks", "e\u{301}le\u{300}ve", 5),
            ("Hangul jamo", "\u{1100}\u{1161}\u{11A8}", 2),
            ("skin tone", "👍🏽", 2),
            ("mixed", "a❤️b日👨‍👩‍👧c", 9),
            ("zero width joiner alone", "a\u{200d}b", 2),
        ];
        for (what, s, want) in cases {
            assert_eq!(str_width(s), ratatui_width(s), "{what}: {s:?}");
            assert_eq!(str_width(s), want, "{what}: {s:?}");
        }
    }

    #[test]
    fn wrapped_clusters_never_split_nor_overflow() {
        let text = "❤️❤️❤️ 👨‍👩‍👧‍👦👨‍👩‍👧‍👦 e\u{301}e\u{301}e\u{301} 日本語 ok";
        for mode in [Wrap::Word, Wrap::Char, Wrap::Cut] {
            // From the narrowest width that fits the prefix and one wide cluster.
            for width in 4..12 {
                for line in wrap(text, width, mode) {
                    assert!(
                        ratatui_width(&line) <= width,
                        "{mode:?} at {width}: {line:?} is {} cells",
                        ratatui_width(&line)
                    );
                    assert!(!line.starts_with('\u{301}') && !line.starts_with('\u{fe0f}'));
                }
            }
        }
        assert_eq!(truncate("❤️❤️❤️", 4), "❤️…");
    }
}
