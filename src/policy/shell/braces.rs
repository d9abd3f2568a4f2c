//! Bash brace expansion (`{a,b}`, `{1..3}`, `{a..c}`), bounded.

use super::words::{Tok, Word};

/// Most words one brace expansion may produce before the command is treated as opaque.
pub(crate) const MAX_BRACE_WORDS: usize = 256;

/// Applies bash brace expansion (`{a,b}`, `{1..3}`, `{a..c}`); `None` when it would produce
/// more than [`MAX_BRACE_WORDS`] words.
pub(crate) fn expand_braces(word: Word) -> Option<Vec<Word>> {
    let mut out = Vec::new();
    let mut todo = vec![word];
    while let Some(w) = todo.pop() {
        match expand_first(&w).ok()? {
            Some(mut alts) => {
                alts.reverse();
                todo.extend(alts);
            }
            None => out.push(w),
        }
        if out.len() + todo.len() > MAX_BRACE_WORDS {
            return None;
        }
    }
    Some(out)
}

fn is_unquoted(t: &Tok, ch: char) -> bool {
    matches!(t, Tok::Char { c, quoted: false } if *c == ch)
}

/// A brace expansion that would produce too many words.
struct TooLarge;

/// Expands the first brace group of `w`, if it has one.
fn expand_first(w: &Word) -> Result<Option<Vec<Word>>, TooLarge> {
    let toks = &w.toks;
    // Each brace is matched by a scan of the rest: bound the work.
    if toks.iter().filter(|t| is_unquoted(t, '{')).count() > 64 {
        return Err(TooLarge);
    }
    for open in 0..toks.len() {
        if !is_unquoted(&toks[open], '{') {
            continue;
        }
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (i, t) in toks.iter().enumerate().skip(open + 1) {
            if is_unquoted(t, '{') {
                depth += 1;
            } else if is_unquoted(t, '}') {
                if depth == 0 {
                    close = Some(i);
                    break;
                }
                depth -= 1;
            } else if depth == 0 && is_unquoted(t, ',') {
                commas.push(i);
            }
        }
        let Some(close) = close else { continue };
        let pre = &toks[..open];
        let post = &toks[close + 1..];
        let join = |mid: &[Tok]| Word {
            toks: pre.iter().chain(mid).chain(post).cloned().collect(),
        };
        if !commas.is_empty() {
            let mut bounds = vec![open];
            bounds.extend(&commas);
            bounds.push(close);
            return Ok(Some(
                bounds
                    .windows(2)
                    .map(|b| join(&toks[b[0] + 1..b[1]]))
                    .collect(),
            ));
        }
        // `{x..y..step}` is short; longer groups are not sequences.
        if close - open > 80 {
            continue;
        }
        let inner = Word {
            toks: toks[open + 1..close].to_vec(),
        };
        if let Some(seq) = inner.literal().map(|s| sequence(&s)).transpose()?.flatten() {
            return Ok(Some(
                seq.iter()
                    .map(|s| {
                        join(
                            &s.chars()
                                .map(|c| Tok::Char { c, quoted: true })
                                .collect::<Vec<_>>(),
                        )
                    })
                    .collect(),
            ));
        }
    }
    Ok(None)
}

/// The items of a sequence expression `x..y[..step]`, if `s` is one.
fn sequence(s: &str) -> Result<Option<Vec<String>>, TooLarge> {
    let parts: Vec<&str> = s.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return Ok(None);
    }
    let step: i64 = match parts
        .get(2)
        .map(|p| p.parse::<i64>().ok().and_then(i64::checked_abs))
    {
        Some(Some(n)) => n.max(1),
        Some(None) => return Ok(None),
        None => 1,
    };
    let (a, b) = (parts[0], parts[1]);
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let steps = x.abs_diff(y) / step.unsigned_abs();
        if steps >= MAX_BRACE_WORDS as u64 {
            return Err(TooLarge);
        }
        // i128: the values lie between x and y, but `i * dir` alone may not fit an i64.
        let (count, x) = (steps as i128 + 1, x as i128);
        let width = if (a.trim_start_matches('-').starts_with('0') && a.len() > 1)
            || (b.trim_start_matches('-').starts_with('0') && b.len() > 1)
        {
            a.len().max(b.len())
        } else {
            0
        };
        let dir = if y as i128 >= x {
            step as i128
        } else {
            -(step as i128)
        };
        return Ok(Some(
            (0..count)
                .map(|i| format!("{:0width$}", x + i * dir))
                .collect(),
        ));
    }
    let (mut ca, mut cb) = (a.chars(), b.chars());
    if let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next())
        && x.is_ascii_alphabetic()
        && y.is_ascii_alphabetic()
    {
        let (x, y) = (x as i64, y as i64);
        let dir = if y >= x { step } else { -step };
        let count = x.abs_diff(y) / step.unsigned_abs() + 1;
        return Ok(Some(
            (0..count as i64)
                .filter_map(|i| u32::try_from(x + i * dir).ok().and_then(char::from_u32))
                .map(String::from)
                .collect(),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unquoted(s: &str) -> Word {
        let mut w = Word::default();
        w.push_unquoted(s);
        w
    }

    fn texts(ws: Vec<Word>) -> Vec<String> {
        ws.iter().map(Word::text).collect()
    }

    #[test]
    fn braces_expand_like_bash() {
        let cases: &[(&str, &[&str])] = &[
            ("{rm,-rf,/tmp/x}", &["rm", "-rf", "/tmp/x"]),
            ("--{output=a,stat}", &["--output=a", "--stat"]),
            ("a{b,c{d,e}}f", &["abf", "acdf", "acef"]),
            ("f{1..3}", &["f1", "f2", "f3"]),
            ("{01..03}", &["01", "02", "03"]),
            ("{c..a}", &["c", "b", "a"]),
            // Not expansions: `{}`, no comma.
            ("{}", &["{}"]),
            ("{x}", &["{x}"]),
        ];
        for (word, expected) in cases {
            assert_eq!(
                texts(expand_braces(unquoted(word)).unwrap()),
                *expected,
                "{word}"
            );
        }
        assert_eq!(texts(expand_braces(Word::lit("{a,b}")).unwrap()), ["{a,b}"]);
        for too_large in [
            "{1..100000}",
            "{-9223372036854775808..9223372036854775807}",
            "{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",
        ] {
            assert!(expand_braces(unquoted(too_large)).is_none(), "{too_large}");
        }
        let wide = "{-9223372036854775808..9223372036854775807..72340172838076673}";
        assert_eq!(expand_braces(unquoted(wide)).map(|w| w.len()), Some(256));
    }
}
