//! An answer that keeps repeating the same text: a small model's degenerate loop, one line or
//! paragraph again and again until the output limit (8,192 tokens: minutes on a local
//! server). Found while the answer streams, so the request can be stopped there.

/// Bytes of the stream's end looked at for a repetition (up to twice as many are kept).
const WINDOW: usize = 8192;
/// The longest repeated piece looked for, in bytes.
const MAX_PERIOD: usize = 1024;
/// A repetition counts once it covers at least this many bytes…
const MIN_SPAN: usize = 2048;
/// …and its piece comes at least this many times in a row.
const MIN_REPEATS: usize = 8;
/// Bytes that arrive between two looks.
const LOOK_EVERY: usize = 512;

/// Watches what a model streams (text and tool arguments alike) for a repetition.
#[derive(Default)]
pub struct RepeatWatch {
    tail: Vec<u8>,
    since_look: usize,
    /// The repeated piece's length, once found.
    period: Option<usize>,
}

impl RepeatWatch {
    /// Adds what arrived; whether the stream is repeating itself now.
    pub fn push(&mut self, piece: &str) -> bool {
        if self.period.is_some() {
            return true;
        }
        self.tail.extend_from_slice(piece.as_bytes());
        // Trimmed once it holds two windows, not per piece: a piece per token would otherwise
        // move the whole window each time.
        if self.tail.len() > 2 * WINDOW {
            let cut = self.tail.len() - WINDOW;
            self.tail.drain(..cut);
        }
        self.since_look += piece.len();
        if self.since_look >= LOOK_EVERY {
            self.since_look = 0;
            self.period = period(&self.tail);
        }
        self.period.is_some()
    }

    /// Starts over (the request is sent again: what came so far is discarded).
    pub fn reset(&mut self) {
        *self = RepeatWatch::default();
    }

    /// The repeated piece's length in bytes, once found.
    pub fn period(&self) -> Option<usize> {
        self.period
    }
}

/// The shortest `p` ≤ [`MAX_PERIOD`] with which the end of `tail` repeats over at least
/// [`MIN_SPAN`] bytes and [`MIN_REPEATS`] pieces.
fn period(tail: &[u8]) -> Option<usize> {
    let n = tail.len();
    (1..=MAX_PERIOD).find(|&p| {
        let span = (MIN_REPEATS * p).max(MIN_SPAN);
        span <= n && (n - span..n - p).all(|i| tail[i] == tail[i + p])
    })
}

/// `text` up to the end of the repetition's first piece: what came before it and the piece once.
pub fn cut(text: &str, period: usize) -> &str {
    let bytes = text.as_bytes();
    if bytes.len() <= period {
        return text;
    }
    let mut start = bytes.len() - period;
    while start > 0 && bytes[start - 1] == bytes[start - 1 + period] {
        start -= 1;
    }
    let mut end = (start + period).min(bytes.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(text: &str) -> RepeatWatch {
        let mut w = RepeatWatch::default();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(7) {
            w.push(&piece.iter().collect::<String>());
        }
        w
    }

    #[test]
    fn a_line_or_paragraph_said_again_and_again_is_found() {
        let line = "I will now add the --upper option to greet.py.\n";
        let text = format!("Let me plan.\n{}", line.repeat(60));
        let w = watch(&text);
        assert_eq!(w.period(), Some(line.len()));
        // What came before, and the piece once (where a piece starts is where the repeating
        // starts: here at the newline before the first one).
        let kept = cut(&text, line.len());
        assert!(kept.starts_with("Let me plan.\nI will now add"), "{kept:?}");
        assert_eq!(kept.matches("--upper").count(), 1, "{kept:?}");
        assert!(
            kept.len() <= "Let me plan.\n".len() + line.len(),
            "{kept:?}"
        );
        let paragraph =
            "def test_upper(self):\n    self.assertEqual(greeting('ada', True), 'HELLO, ADA!')\n\n"
                .repeat(3);
        assert!(
            watch(&format!("{{\"content\": \"{}", paragraph.repeat(12)))
                .period()
                .is_some()
        );
        assert!(
            watch(&"é".repeat(3000)).period().is_some(),
            "one character again and again"
        );
    }

    #[test]
    fn long_answers_that_do_not_repeat_are_left_alone() {
        // Real text: this crate's own sources, which repeat words and short lines but never
        // one piece many times in a row.
        for source in [include_str!("turn.rs"), include_str!("../sandbox/linux.rs")] {
            assert_eq!(watch(source).period(), None);
        }
        let numbered: String = (0..2000).map(|i| format!("{i}\n")).collect();
        assert_eq!(watch(&numbered).period(), None, "lines that differ");
        // A few repetitions are fine (a table's rule, a row of "=").
        let short = format!("{}\n{}", "=".repeat(80), "| a | b |\n".repeat(6));
        assert_eq!(watch(&short).period(), None);
    }

    #[test]
    fn a_cut_ends_on_a_character_boundary() {
        let text = format!("ok {}", "ünï ".repeat(600));
        let w = watch(&text);
        let p = w.period().unwrap();
        let kept = cut(&text, p);
        assert!(kept.starts_with("ok ") && kept.len() < 40, "{kept:?}");
    }
}
