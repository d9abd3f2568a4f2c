//! Top-level definitions ("units") of a source text and the merge of a code block into a file
//! by them: a definition the block names replaces the file's one of that name, a new one is
//! added, and nothing the block does not name is removed. Used by the code-block aid
//! (`agent::code_blocks`) and by `write_file`'s note on definitions an overwrite lost.

/// The languages whose blocks can be merged into files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// `.py`
    Python,
    /// `.rs`
    Rust,
    /// `.js`, `.ts` and their kin.
    Js,
    /// `.sh`, `.bash`.
    Shell,
}

impl Lang {
    /// The language a fence's info word names (`python`, `rs`, `bash`, …).
    pub(crate) fn of_info(word: &str) -> Option<Lang> {
        Some(match word.to_ascii_lowercase().as_str() {
            "python" | "py" | "python3" => Lang::Python,
            "rust" | "rs" => Lang::Rust,
            "javascript" | "js" | "typescript" | "ts" | "jsx" | "tsx" | "node" => Lang::Js,
            "bash" | "sh" | "shell" | "zsh" | "console" | "shellscript" => Lang::Shell,
            _ => return None,
        })
    }

    /// The language of a file name, by its extension.
    pub(crate) fn of_path(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.')?.1;
        match ext {
            "py" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            "js" | "ts" | "mjs" | "cjs" | "jsx" | "tsx" => Some(Lang::Js),
            "sh" | "bash" => Some(Lang::Shell),
            _ => None,
        }
    }
}

/// One definition: its key (kind and name) and the lines it spans, `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// What identifies it across the block and the file (`def mean`, `class T`, `fn main`).
    pub key: String,
    /// First line (decorators, attributes and doc comments included).
    pub start: usize,
    /// The line that names it (`def …`, `fn …`), after what is attached above it.
    pub head: usize,
    /// One past its last non-blank line.
    pub end: usize,
}

/// A definition's key as a person reads it, in backticks: its name (`main`), or the main
/// guard's line.
pub(crate) fn shown_key(key: &str) -> String {
    if key == "main-guard" {
        return "`if __name__ == \"__main__\"`".into();
    }
    format!("`{}`", key.rsplit(' ').next().unwrap_or(key))
}

/// The definitions of `lines` at indentation `indent` (Python) or column 0 (brace languages).
pub fn units(lang: Lang, lines: &[&str]) -> Vec<Unit> {
    match lang {
        Lang::Python => py_units(lines, 0, 0, lines.len()),
        Lang::Rust | Lang::Js | Lang::Shell => brace_units(lang, lines),
    }
}

/// Merges `block` into `file`: the file's text with the block's definitions in place, its
/// missing imports added; `None` when the block defines nothing.
pub fn merge(lang: Lang, file: &str, block: &str) -> Option<String> {
    let b: Vec<&str> = block.lines().collect();
    let block_units = units(lang, &b);
    if block_units.is_empty() {
        return None;
    }
    let mut out: Vec<String> = file.lines().map(str::to_string).collect();
    for u in &block_units {
        let new_lines: Vec<&str> = b[u.start..u.end].to_vec();
        merge_unit(lang, &mut out, &u.key, &new_lines, u.start < u.head);
    }
    if lang == Lang::Python {
        add_imports(&mut out, &b);
    }
    let mut text = out.join("\n");
    if file.ends_with('\n') || file.is_empty() {
        text.push('\n');
    }
    Some(text)
}

/// Puts one definition into `out`: over the one of the same key (method by method for a
/// Python class both have; the old doc comment and attributes kept when the new one has
/// none), or as a new one where new definitions go.
fn merge_unit(lang: Lang, out: &mut Vec<String>, key: &str, new_lines: &[&str], attached: bool) {
    let view: Vec<&str> = out.iter().map(String::as_str).collect();
    let found = units(lang, &view).into_iter().find(|u| u.key == key);
    let placeholder = is_placeholder(lang, new_lines);
    match found {
        // "# existing code" stands for the real body: it never replaces it.
        Some(_) if placeholder => {}
        Some(old) if lang == Lang::Python && key.starts_with("class ") => {
            let merged = merge_class(&view[old.start..old.end], new_lines);
            out.splice(old.start..old.end, merged);
        }
        Some(old) => {
            let new: Vec<String> = new_lines.iter().map(|s| s.to_string()).collect();
            let from = if attached { old.start } else { old.head };
            out.splice(from..old.end, new);
        }
        None if lang == Lang::Python
            && let Some((body, m)) = lone_method(&view, key, new_lines) =>
        {
            if placeholder {
                return;
            }
            let lines: Vec<String> = new_lines.iter().map(|l| reindent(l, 0, body)).collect();
            out.splice(m.start..m.end, lines);
        }
        None => {
            let at = insertion_point(lang, &view);
            let mut new: Vec<String> = Vec::new();
            if at > 0 && !view[at - 1].trim().is_empty() {
                new.extend(blank_lines(lang));
            }
            new.extend(new_lines.iter().map(|s| s.to_string()));
            if at < view.len() {
                new.extend(blank_lines(lang));
            }
            out.splice(at..at, new);
        }
    }
}

/// Whether a definition shows no code of its body, only a stand-in for it: after the line that
/// names it, nothing but blank lines, `pass`, braces and at least one comment or `...` (a model's
/// `# existing code`, `// ... rest unchanged`).
fn is_placeholder(lang: Lang, lines: &[&str]) -> bool {
    let body: Vec<&str> = match lang {
        Lang::Python => {
            let Some(head) = lines.iter().position(|l| py_key(l).is_some()) else {
                return false;
            };
            if !lines[head].trim_end().ends_with(':') {
                return false;
            }
            lines[head + 1..].to_vec()
        }
        Lang::Rust | Lang::Js | Lang::Shell => {
            let text = lines.join("\n");
            let (Some(open), Some(close)) = (text.find('{'), text.rfind('}')) else {
                return false;
            };
            if close <= open {
                return false;
            }
            return stands_in(&text[open + 1..close].lines().collect::<Vec<_>>());
        }
    };
    stands_in(&body)
}

/// Whether `body` holds no code: blank lines and `pass`, with at least one comment or `...`.
fn stands_in(body: &[&str]) -> bool {
    let marker = |t: &str| {
        t.starts_with('#')
            || t.starts_with("//")
            || t.starts_with("/*")
            || t.contains("...")
            || t == "…"
    };
    let code = body
        .iter()
        .map(|l| l.trim())
        .any(|t| !(t.is_empty() || t == "pass" || t.starts_with('*') || marker(t)));
    !code && body.iter().any(|l| marker(l.trim()))
}

/// The one method of a class in `lines` that a top-level `def` taking `self` or `cls` stands
/// for (a model shows a method without its class), with the class body's indentation.
fn lone_method(lines: &[&str], key: &str, new_lines: &[&str]) -> Option<(usize, Unit)> {
    let takes_self = new_lines
        .iter()
        .find(|l| py_key(l).is_some())
        .is_some_and(|l| l.contains("(self") || l.contains("(cls"));
    if !takes_self {
        return None;
    }
    let mut found = units(Lang::Python, lines)
        .into_iter()
        .filter(|c| c.key.starts_with("class "))
        .filter_map(|c| {
            let body = body_indent(&lines[c.start..c.end])?;
            let m = py_units(lines, body, c.head + 1, c.end)
                .into_iter()
                .find(|m| m.key == key)?;
            Some((body, m))
        });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The blank lines between two definitions (PEP 8's two in Python).
fn blank_lines(lang: Lang) -> Vec<String> {
    let n = if lang == Lang::Python { 2 } else { 1 };
    vec![String::new(); n]
}

/// Where a new definition goes: before Python's `if __name__` block or Rust's test module,
/// else at the end (after the last non-blank line).
fn insertion_point(lang: Lang, lines: &[&str]) -> usize {
    let tail = units(lang, lines)
        .into_iter()
        .find(|u| matches!(u.key.as_str(), "main-guard" | "mod tests"))
        .map(|u| u.start);
    let code = if lang == Lang::Shell {
        shell_code_start(lines)
    } else {
        None
    };
    if let Some(at) = tail.or(code) {
        return at;
    }
    lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1)
}

/// A Python class merged method by method: the block's methods replace the file's of the
/// same name, new ones go at the end of the class; the rest of the class stays.
fn merge_class(old: &[&str], new: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = old.iter().map(|s| s.to_string()).collect();
    let Some(body) = body_indent(new) else {
        return out;
    };
    for m in py_units(new, body, 1, new.len()) {
        let view: Vec<&str> = out.iter().map(String::as_str).collect();
        let old_body = body_indent(&view).unwrap_or(body);
        let lines: Vec<String> = new[m.start..m.end]
            .iter()
            .map(|l| reindent(l, body, old_body))
            .collect();
        match py_units(&view, old_body, 1, view.len())
            .into_iter()
            .find(|u| u.key == m.key)
        {
            Some(_) if is_placeholder(Lang::Python, &new[m.start..m.end]) => {}
            Some(u) => {
                out.splice(u.start..u.end, lines);
            }
            None => {
                let end = view.len();
                out.splice(end..end, std::iter::once(String::new()).chain(lines));
            }
        }
    }
    out
}

/// The indentation of a class's body: that of its first non-blank line after the header.
fn body_indent(class: &[&str]) -> Option<usize> {
    class
        .iter()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
}

/// A line moved from one body indentation to another.
fn reindent(line: &str, from: usize, to: usize) -> String {
    if line.trim().is_empty() || from == to {
        return line.to_string();
    }
    let have = indent_of(line);
    // A block indented by 2 goes into a file indented by 4 level for level.
    let width = if from > 0 && have.is_multiple_of(from) {
        have / from * to
    } else {
        to + have.saturating_sub(from)
    };
    format!("{}{}", " ".repeat(width), line.trim_start())
}

/// Leading whitespace width (a tab counts as one, as Python compares them only to each other).
fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// Python definitions at exactly `indent` between `from` and `to`.
fn py_units(lines: &[&str], indent: usize, from: usize, to: usize) -> Vec<Unit> {
    scan(
        lines,
        from..to,
        |l| py_key(l).filter(|_| indent_of(l) == indent),
        |l| l.trim_start().starts_with('@'),
        |i| py_end(lines, i, indent, to),
    )
}

/// The definitions in `range`: where `key_of` names one, with the lines above it that
/// `attached` claims, to the end `end_of` finds.
fn scan(
    lines: &[&str],
    range: std::ops::Range<usize>,
    key_of: impl Fn(&str) -> Option<String>,
    attached: impl Fn(&str) -> bool,
    end_of: impl Fn(usize) -> usize,
) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let Some(key) = key_of(lines[i]) else {
            i += 1;
            continue;
        };
        let mut start = i;
        while start > range.start && attached(lines[start - 1]) {
            start -= 1;
        }
        let end = end_of(i);
        out.push(Unit {
            key,
            start,
            head: i,
            end,
        });
        i = end.max(i + 1);
    }
    out
}

/// The key of a line that starts a Python definition.
fn py_key(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("if __name__") {
        return Some("main-guard".into());
    }
    let (kind, rest) = if let Some(r) = t.strip_prefix("async def ") {
        ("def", r)
    } else if let Some(r) = t.strip_prefix("def ") {
        ("def", r)
    } else {
        ("class", t.strip_prefix("class ")?)
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then(|| format!("{kind} {name}"))
}

/// One past the last non-blank line of the definition starting at `start`.
fn py_end(lines: &[&str], start: usize, indent: usize, to: usize) -> usize {
    let mut last = start;
    for (j, line) in lines.iter().enumerate().take(to).skip(start + 1) {
        let t = line.trim_start();
        if t.is_empty() {
            continue;
        }
        let closes = t.starts_with([')', ']', '}']);
        if indent_of(line) <= indent && !closes {
            break;
        }
        last = j;
    }
    last + 1
}

/// Definitions at column 0 of a brace language (Rust, JavaScript, shell functions).
fn brace_units(lang: Lang, lines: &[&str]) -> Vec<Unit> {
    scan(
        lines,
        0..lines.len(),
        |l| brace_key(lang, l),
        is_attached,
        |i| brace_end(lang, lines, i),
    )
}

/// The first line of a shell script's top-level code outside its functions (new functions
/// go before it, so they are defined when it runs).
fn shell_code_start(lines: &[&str]) -> Option<usize> {
    let defs = brace_units(Lang::Shell, lines);
    (0..lines.len())
        .find(|&i| is_loose_shell(lines[i]) && !defs.iter().any(|u| (u.start..u.end).contains(&i)))
}

/// A top-level shell line that is code (not a comment, shebang or blank).
fn is_loose_shell(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#') && !line.starts_with([' ', '\t'])
}

/// Lines that belong to the definition below them (attributes, doc comments).
fn is_attached(line: &str) -> bool {
    let t = line.trim_start();
    (t.starts_with("#[") || t.starts_with("///") || t.starts_with('@'))
        && !line.starts_with([' ', '\t'])
}

/// The key of a column-0 line that starts a definition in a brace language.
fn brace_key(lang: Lang, line: &str) -> Option<String> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let mut words = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty());
    let skip = [
        "pub", "crate", "super", "async", "const", "unsafe", "export", "default", "extern",
    ];
    let kinds: &[&str] = match lang {
        Lang::Rust => &["fn", "struct", "enum", "trait", "mod", "union", "type"],
        Lang::Js => &["function", "class"],
        Lang::Shell => &["function"],
        Lang::Python => &[],
    };
    let first = words.by_ref().find(|w| !skip.contains(w))?;
    if lang == Lang::Rust && first == "impl" {
        let head = line.split('{').next().unwrap_or(line).trim();
        return Some(head.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    if kinds.contains(&first) {
        return words.next().map(|name| format!("{first} {name}"));
    }
    // A shell function without the keyword: `name() {`.
    let shell_fn = lang == Lang::Shell
        && line.trim_end().ends_with('{')
        && line.contains("()")
        && line.starts_with(first);
    shell_fn.then(|| format!("function {first}"))
}

/// One past the line where the braces opened on `start` close again (the start line alone
/// for an item without a body, `struct A;`).
fn brace_end(lang: Lang, lines: &[&str], start: usize) -> usize {
    let quotes: &[char] = if lang == Lang::Rust {
        &['"']
    } else {
        &['"', '\'']
    };
    let mut depth = 0i64;
    let mut opened = false;
    for (j, line) in lines.iter().enumerate().skip(start) {
        for c in code_part(line, quotes).chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
            return j + 1;
        }
    }
    lines.len()
}

/// A line without its string literals and line comment (so their braces do not count).
fn code_part(line: &str, quotes: &[char]) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if quotes.contains(&c) => quote = Some(c),
            None if c == '/' && chars.peek() == Some(&'/') => break,
            None => out.push(c),
        }
    }
    out
}

/// Adds the block's top-level imports the file lacks, after the file's last import (or at
/// its top, after a module docstring).
fn add_imports(out: &mut Vec<String>, block: &[&str]) {
    let is_import = |l: &str| {
        (l.starts_with("import ") || l.starts_with("from ")) && !l.starts_with([' ', '\t'])
    };
    let missing: Vec<String> = block
        .iter()
        .filter(|l| is_import(l))
        .filter(|l| !out.iter().any(|o| o.trim_end() == l.trim_end()))
        .map(|l| l.to_string())
        .collect();
    if missing.is_empty() {
        return;
    }
    let at = match out.iter().rposition(|l| is_import(l)) {
        Some(i) => i + 1,
        None => after_docstring(out),
    };
    out.splice(at..at, missing);
}

/// The line after a module docstring at the top of a Python file (0 when there is none).
fn after_docstring(lines: &[String]) -> usize {
    let Some(first) = lines.first().map(|l| l.trim_start()) else {
        return 0;
    };
    let Some(quote) = ["\"\"\"", "'''"].into_iter().find(|q| first.starts_with(q)) else {
        return 0;
    };
    if first.len() > 3 && first[3..].contains(quote) {
        return 1;
    }
    lines
        .iter()
        .skip(1)
        .position(|l| l.contains(quote))
        .map_or(0, |i| i + 2)
}
