//! Making text from tools and models safe to draw: tabs become spaces; escape sequences and
//! other control characters are dropped, payload and all (they would move the cursor, retitle
//! the window, draw images or write the clipboard). Characters whose width terminals disagree
//! on are dropped too (variation selectors, joiners, skin tones, invisible format characters):
//! where ratatui counts one width and the terminal draws another, the rest of the row shifts
//! and cells of an earlier frame stay on screen.

use ratatui::buffer::{Buffer, CellWidth};
use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;
use unicode_width::UnicodeWidthChar;

/// `s` without escape sequences, control characters and width-ambiguous characters (newlines
/// kept, tabs as 4 spaces).
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| (c.is_control() && c != '\n') || width_ambiguous(c) || halfwidth_mark(c))
    {
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
            // Halfwidth sound marks join the katakana before them in some terminals, not in
            // others: the standalone fullwidth marks are drawn alike everywhere.
            '\u{ff9e}' => out.push('\u{309b}'),
            '\u{ff9f}' => out.push('\u{309c}'),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() || width_ambiguous(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Halfwidth katakana sound marks, drawn as their fullwidth forms (see `sanitize`).
fn halfwidth_mark(c: char) -> bool {
    matches!(c, '\u{ff9e}' | '\u{ff9f}')
}

/// Rewrites every cell of a drawn frame whose cluster a terminal would lay out differently
/// from ratatui. ratatui puts a cluster in one cell as wide as the cluster; a terminal that
/// draws characters one by one (most do) gives each its own cell. Where they disagree (`का`
/// and a flag's two letters fill two cells in the terminal, a mark with no letter before it
/// joins the cell to its left, `⚠️` is one cell or two), ratatui's next diff leaves cells of
/// the old frame on screen. The cluster is cut into pieces that both count alike and laid
/// out over the same cells, so nothing around it moves.
pub fn settle_cells(buf: &mut Buffer) {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        let mut x = area.left();
        while x < area.right() {
            let symbol = buf[(x, y)].symbol();
            let width = symbol.cell_width().max(1);
            if symbol.len() > 1 && !drawn_alike(symbol) {
                let cells = settled(symbol, usize::from(width));
                for (i, piece) in cells.iter().enumerate() {
                    let cx = x + i as u16;
                    if cx < area.right() {
                        buf[(cx, y)].set_symbol(piece);
                    }
                }
            }
            x = x.saturating_add(width);
        }
    }
}

/// `width` cells for a cluster: its pieces that both count alike, in order, a wide piece
/// followed by the blank its second cell holds, then blanks.
fn settled(g: &str, width: usize) -> Vec<String> {
    let mut cells: Vec<String> = Vec::with_capacity(width);
    for piece in pieces(g) {
        let piece = if drawn_alike(piece) {
            piece
        } else {
            match piece.char_indices().nth(1) {
                Some((end, _)) if drawn_alike(&piece[..end]) => &piece[..end],
                None if drawn_alike(piece) => piece,
                _ => continue,
            }
        };
        let w = usize::from(piece.cell_width());
        if cells.len() + w > width {
            break;
        }
        cells.push(piece.to_string());
        cells.extend((1..w).map(|_| " ".to_string()));
    }
    cells.resize(width, " ".to_string());
    cells
}

/// A cluster cut before each character that takes room, zero-width ones kept with the one
/// before them.
fn pieces(g: &str) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = g
        .char_indices()
        .filter(|(i, c)| *i == 0 || c.width().unwrap_or(0) > 0)
        .map(|(i, _)| i)
        .collect();
    starts.push(g.len());
    (0..starts.len() - 1).map(move |k| &g[starts[k]..starts[k + 1]])
}

/// Whether ratatui and a terminal drawing character by character give a cluster the same
/// cells: it starts with a character that takes room, no other one does, and ratatui counts
/// it as wide as that character.
fn drawn_alike(g: &str) -> bool {
    let mut chars = g.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    let first_w = first.width().unwrap_or(0);
    first_w > 0
        && chars.all(|c| c.width().unwrap_or(0) == 0)
        && usize::from(g.cell_width()) == first_w
}

/// Characters that change the width of what surrounds them, or are invisible, in ways
/// terminals do not agree on: variation selectors (`⚠️` is one column in xterm and VTE, two in
/// kitty), zero-width joiners (a family emoji is two columns or six), skin-tone modifiers and
/// Unicode format characters (bidi overrides that reorder text, tags that hide text, soft
/// hyphens). Dropped, each piece of a sequence is drawn alone at the width everyone agrees on.
fn width_ambiguous(c: char) -> bool {
    matches!(c,
        '\u{ad}'
        | '\u{600}'..='\u{605}'
        | '\u{61c}'
        | '\u{6dd}'
        | '\u{70f}'
        | '\u{890}'..='\u{891}'
        | '\u{8e2}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{110bd}'
        | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}'
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{1f3fb}'..='\u{1f3ff}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}'
        | '\u{e0100}'..='\u{e01ef}'
    )
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
            (
                "emoji presentation selector",
                "\u{26a0}\u{fe0f} warn",
                "\u{26a0} warn",
            ),
            (
                "zero-width joiners",
                "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}",
                "\u{1f468}\u{1f469}\u{1f467}",
            ),
            ("skin tone", "\u{1f44d}\u{1f3fd}", "\u{1f44d}"),
            ("bidi override", "a\u{202e}cba\u{202c}d", "acbad"),
            ("tag characters", "x\u{e0041}\u{e0042}y", "xy"),
            ("soft hyphen and BOM", "co\u{ad}op\u{feff}", "coop"),
            (
                "halfwidth sound marks",
                "\u{ff76}\u{ff9e}\u{ff8a}\u{ff9f}",
                "\u{ff76}\u{309b}\u{ff8a}\u{309c}",
            ),
            (
                "combining marks stay",
                "e\u{301}\u{20e3}",
                "e\u{301}\u{20e3}",
            ),
        ];
        for (what, input, want) in cases {
            assert_eq!(sanitize(input), want, "{what}");
        }
        assert!(matches!(sanitize("plain\ntext"), Cow::Borrowed(_)));
        assert!(matches!(sanitize("日本語 ✅ e\u{301}"), Cow::Borrowed(_)));
    }

    fn cells(g: &str) -> Vec<String> {
        settled(g, usize::from(g.cell_width().max(1)))
    }

    #[test]
    fn clusters_terminals_lay_out_otherwise_are_cut_into_cells_both_agree_on() {
        // Two characters that take room: one cell each.
        assert_eq!(cells("\u{915}\u{93e}"), ["\u{915}", "\u{93e}"]);
        assert_eq!(cells("\u{1f1fa}\u{1f1f8}"), ["\u{1f1fa}", "\u{1f1f8}"]);
        // A mark with no letter before it is dropped; the letter keeps its cell.
        assert_eq!(cells("\u{301}\u{93e}"), ["\u{93e}"]);
        // Counted wider than its characters: the character, then a blank.
        assert_eq!(cells("\u{26a0}\u{fe0f}"), ["\u{26a0}", " "]);
        // Clusters everyone draws alike are left alone.
        for g in ["e\u{301}", "\u{1100}\u{1161}", "\u{8868}", "\u{2705}"] {
            assert!(drawn_alike(g), "{g:?}");
        }
        let mut buf = Buffer::with_lines(["a\u{915}\u{93e}b"]);
        settle_cells(&mut buf);
        let row: Vec<&str> = (0..4).map(|x| buf[(x, 0)].symbol()).collect();
        assert_eq!(row, ["a", "\u{915}", "\u{93e}", "b"]);
    }
}
