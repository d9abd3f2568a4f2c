//! Making text from tools and models safe to draw: tabs become spaces; escape sequences and
//! other control characters are dropped, payload and all (they would move the cursor, retitle
//! the window, draw images or write the clipboard).

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

/// `s` without escape sequences and control characters (newlines kept, tabs as 4 spaces).
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 introducers (8-bit forms of ESC [, ESC ], ESC P …) carry the same payloads.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `sanitize`, with line breaks turned into spaces: for one-line places (status, titles).
pub fn one_line(s: &str) -> String {
    sanitize(s).replace('\n', " ")
}

/// Skips what follows an ESC (ECMA-48): a control sequence, a control string, or an escape
/// sequence of intermediate bytes and one final byte.
fn skip_escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        // OSC, DCS, SOS, PM, APC (kitty graphics is `ESC _G…`): a string up to its terminator.
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        // `ESC ( B` and friends: intermediates 0x20–0x2F, then one final byte.
        Some(_) => {
            while chars
                .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                .is_some()
            {}
            chars.next();
        }
        None => {}
    }
}

/// Skips a control sequence's parameters and its final byte (0x40–0x7E).
fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

/// Skips a control string up to its terminator: ST (`ESC \` or 0x9C) or BEL. An ESC that
/// does not start ST ends the string too (terminals abort it) and starts a new sequence.
fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.next_if_eq(&'\\').is_none() {
                    skip_escape(chars);
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_go_with_their_payloads() {
        let cases = [
            ("colours", "\u{1b}[31mred\u{1b}[0m", "red"),
            ("tab and CR", "a\tb\r\nc", "a    b\nc"),
            ("OSC title, BEL", "\u{1b}]0;title\u{7}ok", "ok"),
            (
                "OSC hyperlink, ST",
                "\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\",
                "link",
            ),
            ("OSC 52 clipboard", "a\u{1b}]52;c;aGVsbG8=\u{7}b", "ab"),
            ("DCS", "x\u{1b}Pq#0;2;0;0;0\u{1b}\\y", "xy"),
            (
                "kitty graphics APC",
                "\u{1b}_Gf=100,a=T;iVBORw0KGgo=\u{1b}\\done",
                "done",
            ),
            (
                "PM and SOS",
                "\u{1b}^private\u{1b}\\\u{1b}Xsos\u{1b}\\z",
                "z",
            ),
            ("charset designation", "\u{1b}(Bplain", "plain"),
            ("keypad mode", "\u{1b}=keys", "keys"),
            ("8-bit CSI", "\u{9b}1;31mred", "red"),
            ("8-bit OSC with 8-bit ST", "\u{9d}0;t\u{9c}ok", "ok"),
            ("unterminated string", "ok\u{1b}]0;never ends", "ok"),
            (
                "ESC ends a string, starts CSI",
                "\u{1b}Pdata\u{1b}[1mbold",
                "bold",
            ),
            ("lone ESC at the end", "end\u{1b}", "end"),
        ];
        for (what, input, want) in cases {
            assert_eq!(sanitize(input), want, "{what}");
        }
        assert!(matches!(sanitize("plain\ntext"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\nb"), "a b");
    }
}
