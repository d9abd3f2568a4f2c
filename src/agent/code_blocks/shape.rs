//! Edits by the shape of lines: a block of a few lines that repeats lines of a file with one
//! name or value changed in each (`from users import get_user` for the file's
//! `from users import get_usr`; the 1.5B model shows such a line after a failed run and
//! stops, as if it had edited it), and the places a name an edit renamed still appears.

/// One token of a line, as far as its shape goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Name,
    Number,
    Text,
    Other,
}

/// The tokens of `line`: names, numbers, quoted strings and single other characters.
fn tokens(line: &str) -> Vec<(Kind, &str)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let kind = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            i = scan(bytes, i, |b| {
                b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
            });
            Kind::Name
        } else if c.is_ascii_digit() {
            i = scan(bytes, i, |b| {
                b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
            });
            Kind::Number
        } else if c == b'"' || c == b'\'' {
            i = string_end(bytes, i);
            Kind::Text
        } else {
            i += 1;
            Kind::Other
        };
        // Cuts fall on ASCII bytes or the line's end, so they are character boundaries.
        out.push((kind, line.get(start..i).unwrap_or_default()));
    }
    out
}

/// The index after the run of bytes from `i` that `keep` accepts.
fn scan(bytes: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while i < bytes.len() && keep(bytes[i]) {
        i += 1;
    }
    i
}

/// The index after the string that opens at `i` (the line's end when it is not closed).
fn string_end(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Tokens a block needs before it counts as an edit (`x = 2` is too little to tell which
/// line is meant).
const MIN_TOKENS: usize = 4;

/// Whether `shown` is `line` with at most one name, number or string changed: `Some(true)`
/// when one is, `Some(false)` when they are the same, `None` when `shown` is another line.
/// Comments must be the same: a comment's words say nothing of which line is meant.
fn same_shape(line: &str, shown: &str) -> Option<bool> {
    let (a, b) = (line.trim(), shown.trim());
    if a == b {
        return Some(false);
    }
    if ["#", "//", "--", "/*", "*"]
        .iter()
        .any(|c| b.starts_with(c))
    {
        return None;
    }
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.len() != tb.len() {
        return None;
    }
    let mut changed = 0;
    for (x, y) in ta.iter().zip(&tb) {
        if x == y {
            continue;
        }
        if x.0 != y.0 || x.0 == Kind::Other {
            return None;
        }
        changed += 1;
    }
    (changed <= 1).then_some(changed == 1)
}

/// `file` with the lines `block` repeats replaced by the block's versions, when the block's
/// lines repeat exactly one run of the file's lines with at most one name, number or string
/// changed in each, and one at least changed. Each line keeps the file's indentation.
pub(super) fn edit_by_shape(file: &str, block: &str) -> Option<String> {
    let shown: Vec<&str> = trim_blank_ends(block.lines().collect());
    let lines: Vec<&str> = file.lines().collect();
    let size: usize = shown.iter().map(|l| tokens(l).len()).sum();
    if size < MIN_TOKENS || shown.len() > lines.len() {
        return None;
    }
    let fits = |at: usize| -> Option<bool> {
        let mut any = false;
        for (line, s) in lines[at..at + shown.len()].iter().zip(&shown) {
            if line.trim().is_empty() != s.trim().is_empty() {
                return None;
            }
            any |= same_shape(line, s)?;
        }
        Some(any)
    };
    let mut found = (0..=lines.len() - shown.len()).filter_map(|at| fits(at).map(|c| (at, c)));
    let (at, changed) = found.next()?;
    if found.next().is_some() || !changed {
        return None;
    }
    let mut out = String::with_capacity(file.len() + block.len());
    for (i, line) in lines.iter().enumerate() {
        match i.checked_sub(at).and_then(|k| shown.get(k)) {
            Some(s) if !s.trim().is_empty() => {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(indent);
                out.push_str(s.trim());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    if !file.ends_with('\n') {
        out.pop();
    }
    Some(out)
}

/// `lines` without blank lines at either end.
fn trim_blank_ends(mut lines: Vec<&str>) -> Vec<&str> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let lead = lines.iter().take_while(|l| l.trim().is_empty()).count();
    lines.split_off(lead)
}

/// The one name an edit renamed: `old` and `new` (a `str_replace`'s strings) have the same
/// tokens but for one name changed to another, wherever they differ.
fn renamed<'a>(old: &'a str, new: &'a str) -> Option<(String, String)> {
    let all = |t: &'a str| -> Vec<(Kind, &'a str)> { t.lines().flat_map(tokens).collect() };
    let (a, b) = (all(old), all(new));
    if a.len() != b.len() {
        return None;
    }
    let mut pair: Option<(&str, &str)> = None;
    for (x, y) in a.iter().zip(&b) {
        if x == y {
            continue;
        }
        if x.0 != Kind::Name || y.0 != Kind::Name {
            return None;
        }
        match pair {
            None => pair = Some((x.1, y.1)),
            Some(p) if p == (x.1, y.1) => {}
            Some(_) => return None,
        }
    }
    pair.map(|(x, y)| (x.to_string(), y.to_string()))
}

/// Places a note names at the most.
const MAX_PLACES: usize = 8;

/// After an edit of `path` that renamed one name (`old_str` → `new_str`), where that name
/// still appears in the workspace's files of the same language, a note naming them: the
/// 1.5B model renamed a function in one or two files and stopped, three files short.
pub(crate) fn left_by_rename(
    path: &str,
    old: &str,
    new: &str,
    ws: &dyn super::Workspace,
) -> Option<String> {
    let (from, to) = renamed(old, new)?;
    let lang = super::Lang::of_path(path)?;
    let mut places: Vec<String> = Vec::new();
    let mut more = 0usize;
    for file in ws.sources(lang) {
        let super::FileState::Text(text) = ws.file(&file) else {
            continue;
        };
        let lines: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| has_name(l, &from))
            .map(|(i, _)| i + 1)
            .collect();
        if lines.is_empty() {
            continue;
        }
        if places.len() == MAX_PLACES {
            more += 1;
            continue;
        }
        let numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
        let word = if lines.len() == 1 { "line" } else { "lines" };
        places.push(format!("{file} ({word} {})", numbers.join(", ")));
    }
    if places.is_empty() {
        return None;
    }
    let also = if more > 0 {
        format!(" and {more} more files")
    } else {
        String::new()
    };
    Some(format!(
        "[rein] `{from}` still appears in {}{also}. If `{from}` is renamed to `{to}` \
         everywhere, change those too with str_replace.",
        places.join(", ")
    ))
}

/// Whether `line` holds `name` as a whole name (not part of a longer one). Only lines that
/// hold it as text are split: a note looks through up to 200 files.
fn has_name(line: &str, name: &str) -> bool {
    line.contains(name)
        && tokens(line)
            .iter()
            .any(|(k, t)| *k == Kind::Name && *t == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "from users import get_usr\n\n\ndef report(ids):\n    return \", \".join(get_usr(i) for i in ids)\n";

    #[test]
    fn a_line_with_one_name_changed_replaces_that_line_keeping_its_indentation() {
        let got = edit_by_shape(REPORT, "from users import get_user");
        assert_eq!(
            got.as_deref(),
            Some(
                REPORT
                    .replacen("import get_usr", "import get_user", 1)
                    .as_str()
            )
        );
        // Shown without its indentation, the body's line keeps the file's.
        let got = edit_by_shape(REPORT, "return \", \".join(get_user(i) for i in ids)\n");
        assert_eq!(
            got.as_deref(),
            Some(
                REPORT
                    .replacen("join(get_usr(", "join(get_user(", 1)
                    .as_str()
            )
        );
        // A number changed (`total=1` for `total=0`), and two lines in a row.
        let sum = "#!/usr/bin/env bash\ntotal=1\nwhile read -r n; do\n    total=$((total + n))\ndone < \"$1\"\n";
        let got = edit_by_shape(sum, "total=0\nwhile read -r n; do\n");
        assert_eq!(
            got.as_deref(),
            Some(sum.replacen("total=1", "total=0", 1).as_str())
        );
    }

    #[test]
    fn lines_that_are_not_the_files_with_one_change_edit_nothing() {
        // The same line: nothing to change.
        assert_eq!(edit_by_shape(REPORT, "from users import get_usr"), None);
        // An operator changed is another line (`a * b` for `a + b` changed `add`).
        assert_eq!(
            edit_by_shape("def add(a, b):\n    return a + b\n", "return a * b"),
            None
        );
        // Two names changed, or a token more.
        assert_eq!(edit_by_shape(REPORT, "from people import get_user"), None);
        assert_eq!(edit_by_shape(REPORT, "from users import get_user, x"), None);
        // Too short to tell which line is meant.
        assert_eq!(edit_by_shape("x = 1\ny = 1\n", "x = 2"), None);
        // A comment is never a changed line.
        assert_eq!(
            edit_by_shape("# old words here\nx = 1\n", "# new words here"),
            None
        );
        // Two lines it could be.
        let twice = "a = f(1)\nb = 2\na = f(1)\n";
        assert_eq!(edit_by_shape(twice, "a = f(3)"), None);
        // Lines that are not consecutive in the file.
        assert_eq!(
            edit_by_shape(REPORT, "from users import get_user\ndef report(ids):"),
            None
        );
        // An unclosed string is one token to the end of the line.
        assert_eq!(edit_by_shape("print('a b c')\n", "print('a b"), None);
    }

    #[test]
    fn an_edit_renames_one_name_only_when_every_change_is_that_name() {
        let r = |a: &str, b: &str| renamed(a, b);
        let want = Some(("get_usr".to_string(), "get_user".to_string()));
        assert_eq!(
            r(
                "from users import get_usr\n",
                "from users import get_user\n"
            ),
            want
        );
        assert_eq!(r("get_usr", "get_user"), want);
        assert_eq!(
            r(
                "x = get_usr(1)\nprint(get_usr(2))",
                "x = get_user(1)\nprint(get_user(2))"
            ),
            want
        );
        // Two names changed, a value changed, or nothing changed.
        assert_eq!(r("a = b", "c = d"), None);
        assert_eq!(r("f(1)", "g(2)"), None);
        assert_eq!(r("return a + b", "return a * b"), None);
        assert_eq!(r("f(1)", "f(1)"), None);
        // Only a whole name counts as an appearance.
        assert!(has_name("print(get_usr(1))", "get_usr"));
        assert!(!has_name("print(get_usr_id(1))", "get_usr"));
        assert!(!has_name("# about get_usr_x", "get_usr"));
    }
}
