//! Text-level checks of what bash expands: the commands hidden in `$(..)` and backticks
//! wherever they are (tree-sitter does not parse backticks inside `${x:-..}`, here-strings or
//! here-doc bodies), and whether arithmetic is plain numbers.

/// Most hidden scripts taken from one text; the rest is opaque anyway.
const MAX_HIDDEN: usize = 32;

/// The scripts of every `$(..)`, `<(..)`, `>(..)` and backtick substitution in `text`,
/// outermost first. Meant for text bash expands (double-quoted, here-doc bodies, the inside of
/// `${..}`); single quotes are ignored, so it may find more than bash would run, which is what
/// deny checks want.
pub(crate) fn hidden_scripts(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() && found.len() < MAX_HIDDEN {
        let c = chars[i];
        match c {
            '\\' => i += 1,
            '`' => {
                let (body, end) = backtick_body(&chars, i + 1);
                found.push(body);
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                // `$((` is arithmetic; its inside is expanded too, so scan it as text.
                if chars.get(i + 2) == Some(&'(') {
                    i += 3;
                    continue;
                }
                let (body, end) = paren_body(&chars, i + 2);
                found.push(body);
                i = end;
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                let (body, end) = paren_body(&chars, i + 2);
                found.push(body);
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The text up to the matching unescaped backtick (`\`` inside is a nested backtick).
fn backtick_body(chars: &[char], start: usize) -> (String, usize) {
    let mut body = String::new();
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' if matches!(chars.get(i + 1), Some('`' | '\\' | '$')) => {
                body.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '`' => return (body, i),
            c => body.push(c),
        }
        i += 1;
    }
    (body, i)
}

/// The text up to the `)` that closes an opening `(` just before `start`.
fn paren_body(chars: &[char], start: usize) -> (String, usize) {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (_, '\\') => i += 1,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => {
                return (chars[start..i].iter().collect(), i);
            }
            (None, ')') => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    (chars[start.min(chars.len())..].iter().collect(), i)
}

/// Whether an arithmetic expression (the inside of `$((..))` or `((..))`) is made of numbers
/// and operators only. A name is evaluated recursively and an array subscript in it runs
/// code (`x='a[$(cmd)]'; echo $((x))`), so names are not plain.
pub(crate) fn plain_arithmetic(expr: &str) -> bool {
    expr.chars().all(|c| {
        c.is_ascii_digit()
            || c.is_whitespace()
            || matches!(
                c,
                '+' | '-'
                    | '*'
                    | '/'
                    | '%'
                    | '('
                    | ')'
                    | '<'
                    | '>'
                    | '='
                    | '!'
                    | '&'
                    | '|'
                    | '^'
                    | '~'
                    | '?'
                    | ':'
                    | ','
            )
    })
}

/// The inside of `$((..))`, `$[..]` or `((..))`, if `src` is one of those.
pub(crate) fn arithmetic_body(src: &str) -> Option<&str> {
    src.strip_prefix("$((")
        .and_then(|s| s.strip_suffix("))"))
        .or_else(|| src.strip_prefix("((").and_then(|s| s.strip_suffix("))")))
        .or_else(|| src.strip_prefix("$[").and_then(|s| s.strip_suffix(']')))
}

/// Whether `text` contains anything bash would expand: `$`, a backtick.
pub(crate) fn expands(text: &str) -> bool {
    text.contains('$') || text.contains('`')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_are_found_wherever_they_are() {
        let cases: &[(&str, &[&str])] = &[
            ("${y:-`rm -rf ~`}", &["rm -rf ~"]),
            ("${x:=$(rm a)}", &["rm a"]),
            ("a `b \\`c\\`` d", &["b `c`"]),
            ("$(a $(b) c)", &["a $(b) c"]),
            ("$((1 + $(rm x)))", &["rm x"]),
            (
                "'$(single quotes are literal here)'",
                &["single quotes are literal here"],
            ),
            ("<(curl x) >(rm y)", &["curl x", "rm y"]),
            ("$(unclosed", &["unclosed"]),
            ("plain $x text", &[]),
        ];
        for (text, scripts) in cases {
            assert_eq!(hidden_scripts(text), *scripts, "{text}");
        }
    }

    #[test]
    fn arithmetic_with_names_is_not_plain() {
        for plain in ["1+2", " (3 * 4) % 5 ", "1 << 2", "7 > 3 ? 1 : 0"] {
            assert!(plain_arithmetic(plain), "{plain}");
        }
        for code in ["x", "a[$(id)]", "i+1", "0x1f", "$x"] {
            assert!(!plain_arithmetic(code), "{code}");
        }
        assert_eq!(arithmetic_body("$((1+2))"), Some("1+2"));
        assert_eq!(arithmetic_body("((x++))"), Some("x++"));
        assert_eq!(arithmetic_body("$x"), None);
    }
}
