//! Cutting text down to size: one primitive ([`cut`]) that every caller uses, each adding the
//! marker its reader needs (`…`, `[…12 more bytes]`, a note to the model).

/// What a limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Unicode scalar values (what a person reads as characters, near enough for limits).
    Chars,
    /// UTF-8 bytes (what memory and wire formats pay for); the cut never splits a character.
    Bytes,
}

/// The longest prefix of `s` within `max` units, or `None` when `s` fits whole.
pub fn cut(s: &str, max: usize, unit: Unit) -> Option<&str> {
    match unit {
        Unit::Bytes => {
            if s.len() <= max {
                return None;
            }
            let mut end = max;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            Some(&s[..end])
        }
        Unit::Chars => s.char_indices().nth(max).map(|(end, _)| &s[..end]),
    }
}

/// The first line of `s` within `max` characters, ending in `…` when anything (the rest of
/// the line or further lines) was left out.
pub fn headline(s: &str, max: usize) -> String {
    let s = s.trim();
    let first = s.lines().next().unwrap_or("").trim_end();
    match cut(first, max, Unit::Chars) {
        Some(head) => format!("{head}…"),
        None if first.len() < s.len() => format!("{first} …"),
        None => first.to_string(),
    }
}

/// Formats a byte count for people (`12.3 MB`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_by_unit_on_char_boundaries() {
        let cases: &[(&str, usize, Unit, Option<&str>)] = &[
            ("hello", 5, Unit::Chars, None),
            ("hello", 4, Unit::Chars, Some("hell")),
            ("héllo", 2, Unit::Chars, Some("hé")),
            ("héllo", 2, Unit::Bytes, Some("h")),
            ("héllo", 3, Unit::Bytes, Some("hé")),
            ("héllo", 6, Unit::Bytes, None),
            ("", 0, Unit::Chars, None),
            ("x", 0, Unit::Bytes, Some("")),
        ];
        for &(s, max, unit, want) in cases {
            assert_eq!(cut(s, max, unit), want, "{s:?} {max} {unit:?}");
        }
    }

    #[test]
    fn headline_marks_what_was_left_out() {
        let cases = [
            ("cargo test", 20, "cargo test"),
            ("cargo test --workspace", 10, "cargo test…"),
            ("set -e\nmake", 20, "set -e …"),
            ("  padded  ", 20, "padded"),
            ("", 5, ""),
        ];
        for (s, max, want) in cases {
            assert_eq!(headline(s, max), want, "{s:?}");
        }
    }
}
