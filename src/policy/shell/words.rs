//! Words of a simple command: quotes and escapes removed, run-time expansions kept as pieces
//! whose value is unknown, brace expansion applied.

use tree_sitter::Node;

/// What kind of run-time expansion a piece of a word is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DynKind {
    /// `$x`, `${x}`, `$1`, `$@`: a parameter's value.
    Var,
    /// `${x:-..}`, `${x@P}`, `${!x}`, arrays: an expansion with an operator.
    Complex,
    /// `$(..)` or backticks: a command's output.
    Subst,
    /// `$((..))`: arithmetic (can run code through array subscripts).
    Arith,
    /// `<(..)` / `>(..)`: becomes a `/dev/fd/N` path.
    ProcSub,
    /// Words that come from somewhere else at run time (the input of `xargs`).
    Input,
}

/// One piece of a word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A character; `quoted` when quotes or a backslash made it literal.
    Char { c: char, quoted: bool },
    /// Something only known at run time, as written.
    Dyn {
        src: String,
        quoted: bool,
        kind: DynKind,
    },
}

/// A shell word as the shell would see it before run-time expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) toks: Vec<Tok>,
}

impl Word {
    /// A word made of quoted (literal) text.
    pub(crate) fn lit(s: &str) -> Word {
        let mut w = Word::default();
        w.push_str(s, true);
        w
    }

    /// A word only known at run time, shown as `shown`.
    pub(crate) fn unknown(shown: &str, kind: DynKind) -> Word {
        Word {
            toks: vec![Tok::Dyn {
                src: shown.to_string(),
                quoted: false,
                kind,
            }],
        }
    }

    /// Builds a word from a syntax node of `src`.
    pub(crate) fn from_node(node: Node, src: &str) -> Word {
        let mut w = Word::default();
        w.add_node(node, src, 0);
        w
    }

    /// The word without its first `n` pieces (`-oFILE` → `FILE` with `n` = 2).
    pub(crate) fn tail(&self, n: usize) -> Word {
        Word {
            toks: self.toks.iter().skip(n).cloned().collect(),
        }
    }

    /// Builds a word from an unquoted here-doc body: text with expansions, like a
    /// double-quoted string without the quotes.
    pub(crate) fn from_heredoc(node: Node, src: &str) -> Word {
        let mut w = Word::default();
        w.add_expanding_text(node, src, node.start_byte(), node.end_byte());
        w
    }

    pub(crate) fn push_char(&mut self, c: char, quoted: bool) {
        self.toks.push(Tok::Char { c, quoted });
    }

    fn push_str(&mut self, s: &str, quoted: bool) {
        self.toks.extend(s.chars().map(|c| Tok::Char { c, quoted }));
    }

    /// The word's value when it is fully known before it runs (no expansion, no glob).
    pub(crate) fn literal(&self) -> Option<String> {
        if self.has_glob() {
            return None;
        }
        self.toks
            .iter()
            .map(|t| match t {
                Tok::Char { c, .. } => Some(*c),
                Tok::Dyn { .. } => None,
            })
            .collect()
    }

    /// The word as shown: literal text with expansions as written.
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        for t in &self.toks {
            match t {
                Tok::Char { c, .. } => s.push(*c),
                Tok::Dyn { src, .. } => s.push_str(src),
            }
        }
        s
    }

    /// The word written so that it reads back as the same word: literal text quoted where
    /// the shell would treat it specially, globs and expansions as written.
    pub(crate) fn shown(&self) -> String {
        if let Some(lit) = self.literal() {
            return match (self.toks.first(), lit.strip_prefix('~')) {
                (
                    Some(Tok::Char {
                        c: '~',
                        quoted: false,
                    }),
                    Some(""),
                ) => "~".into(),
                (
                    Some(Tok::Char {
                        c: '~',
                        quoted: false,
                    }),
                    Some(rest),
                ) => {
                    format!("~{}", quote(rest))
                }
                _ => quote(&lit),
            };
        }
        let mut s = String::new();
        let mut run = String::new();
        let flush = |run: &mut String, s: &mut String| {
            if !run.is_empty() {
                s.push_str(&quote(run));
                run.clear();
            }
        };
        for t in &self.toks {
            match t {
                Tok::Char { c, quoted: false } if is_glob_char(*c) || *c == ']' => {
                    flush(&mut run, &mut s);
                    s.push(*c);
                }
                Tok::Char { c, .. } => run.push(*c),
                Tok::Dyn { src, quoted, .. } => {
                    flush(&mut run, &mut s);
                    if *quoted {
                        s.push('"');
                        s.push_str(src);
                        s.push('"');
                    } else {
                        s.push_str(src);
                    }
                }
            }
        }
        flush(&mut run, &mut s);
        s
    }

    /// The literal characters before the first expansion or glob character.
    pub(crate) fn literal_prefix(&self) -> String {
        let mut s = String::new();
        for t in &self.toks {
            match t {
                Tok::Char { c, quoted } if *quoted || !is_glob_char(*c) => s.push(*c),
                _ => break,
            }
        }
        s
    }

    /// Whether an unquoted `*`, `?` or `[..]` makes this a filename pattern.
    pub(crate) fn has_glob(&self) -> bool {
        self.toks.iter().enumerate().any(|(i, t)| match t {
            Tok::Char {
                c: '*' | '?',
                quoted: false,
            } => true,
            Tok::Char {
                c: '[',
                quoted: false,
            } => self.toks[i + 1..]
                .iter()
                .any(|t| matches!(t, Tok::Char { c: ']', .. })),
            _ => false,
        })
    }

    /// Whether the word may start with `-` once expanded (and so be read as an option): it
    /// does, or its first character is only known at run time.
    pub(crate) fn may_be_option(&self) -> bool {
        match self.toks.first() {
            Some(Tok::Char { c: '-', .. }) => true,
            Some(Tok::Char { c, quoted: false }) => is_glob_char(*c) && self.has_glob(),
            Some(Tok::Dyn { src, kind, .. }) => {
                *kind != DynKind::ProcSub && !var_name(src).is_some_and(never_an_option)
            }
            _ => false,
        }
    }

    /// Whether expansion may turn this word into several (or none): an unquoted expansion
    /// is split, a glob matches any number of files.
    pub(crate) fn may_split(&self) -> bool {
        self.has_glob()
            || self.toks.iter().any(
                |t| matches!(t, Tok::Dyn { quoted: false, kind, .. } if *kind != DynKind::ProcSub),
            )
    }

    /// The expansions in the word, as written, with their kinds.
    pub(crate) fn dyns(&self) -> impl Iterator<Item = (&str, DynKind)> {
        self.toks.iter().filter_map(|t| match t {
            Tok::Dyn { src, kind, .. } => Some((src.as_str(), *kind)),
            Tok::Char { .. } => None,
        })
    }

    /// Whether the word, once expanded, could be exactly `target`: a glob that matches it, an
    /// expansion that could produce it.
    pub(crate) fn could_be(&self, target: &str) -> bool {
        if let Some(lit) = self.literal() {
            return lit == target;
        }
        globset::GlobBuilder::new(&self.to_glob())
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher().is_match(target))
            .unwrap_or(true)
    }

    /// The word as a glob: literal characters escaped, shell patterns kept, every expansion
    /// `*` (it could be anything).
    pub(crate) fn to_glob(&self) -> String {
        let mut s = String::new();
        for t in &self.toks {
            match t {
                Tok::Char { c, quoted: false } if is_glob_char(*c) || *c == ']' => s.push(*c),
                Tok::Char { c, .. } => {
                    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!') {
                        s.push('\\');
                    }
                    s.push(*c);
                }
                Tok::Dyn { .. } => s.push('*'),
            }
        }
        s
    }

    /// Replaces every `$name` for which `value` knows values by them: one word per
    /// combination of alternatives (for checks; field splitting is not applied).
    pub(crate) fn substitute(&self, value: &dyn Fn(&str) -> Option<Vec<Word>>) -> Vec<Word> {
        let mut out = vec![Word::default()];
        for t in &self.toks {
            let known = match t {
                Tok::Dyn {
                    src,
                    kind: DynKind::Var,
                    ..
                } => var_name(src).and_then(value),
                _ => None,
            };
            match known {
                Some(alternatives) if !alternatives.is_empty() => {
                    let mut next = Vec::new();
                    for w in &out {
                        for alt in &alternatives {
                            let mut joined = w.clone();
                            joined.toks.extend(alt.toks.iter().cloned());
                            next.push(joined);
                        }
                    }
                    out = next;
                }
                _ => {
                    for w in &mut out {
                        w.toks.push(t.clone());
                    }
                }
            }
            if out.len() > super::braces::MAX_BRACE_WORDS {
                return vec![self.clone()];
            }
        }
        out
    }

    fn add_node(&mut self, node: Node, src: &str, depth: usize) {
        let text = src.get(node.byte_range()).unwrap_or_default();
        if depth > super::MAX_NODE_DEPTH {
            self.push_dyn(text, false, DynKind::Complex);
            return;
        }
        match node.kind() {
            "word" | "number" | "extglob_pattern" | "brace_expression" => self.push_unquoted(text),
            "raw_string" => self.push_str(strip(text, 1, 1), true),
            "ansi_c_string" => self.push_str(&ansi_c(strip(text, 2, 1)), true),
            "string" => self.add_double_quoted(node, src),
            "translated_string" => match node.named_child(0) {
                Some(inner) if inner.kind() == "string" => self.add_double_quoted(inner, src),
                _ => self.push_dyn(text, false, DynKind::Complex),
            },
            "simple_expansion" => self.push_dyn(text, false, DynKind::Var),
            "expansion" => self.push_dyn(text, false, expansion_kind(node)),
            "command_substitution" => self.push_dyn(text, false, DynKind::Subst),
            "process_substitution" => self.push_dyn(text, false, DynKind::ProcSub),
            "arithmetic_expansion" => self.push_dyn(text, false, DynKind::Arith),
            "concatenation" | "command_name" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                if children.is_empty() {
                    self.push_unquoted(text);
                }
                for child in children {
                    self.add_node(child, src, depth + 1);
                }
            }
            // `$` before a translated string and other lone tokens are plain text.
            _ if !node.is_named() => self.push_unquoted(text),
            _ => self.push_dyn(text, false, DynKind::Complex),
        }
    }

    fn push_dyn(&mut self, src: &str, quoted: bool, kind: DynKind) {
        self.toks.push(Tok::Dyn {
            src: src.to_string(),
            quoted,
            kind,
        });
    }

    /// Unquoted text: a backslash quotes the next character; backslash-newline vanishes.
    pub(crate) fn push_unquoted(&mut self, text: &str) {
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('\n') => {}
                    Some(n) => self.push_char(n, true),
                    None => self.push_char('\\', true),
                }
            } else {
                self.push_char(c, false);
            }
        }
    }

    /// Inside double quotes a backslash only escapes `$`, backtick, `"`, `\` and newline.
    fn push_double_quoted_text(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.peek() {
                    Some('\n') => {
                        chars.next();
                    }
                    Some(&n @ ('$' | '`' | '"' | '\\')) => {
                        chars.next();
                        self.push_char(n, true);
                    }
                    _ => self.push_char('\\', true),
                }
            } else {
                self.push_char(c, true);
            }
        }
    }

    fn add_double_quoted(&mut self, node: Node, src: &str) {
        let end = node.end_byte();
        let inner_end =
            if end > node.start_byte() + 1 && src.get(..end).is_some_and(|s| s.ends_with('"')) {
                end - 1
            } else {
                end
            };
        let start = (node.start_byte() + 1).min(inner_end);
        self.add_expanding_text(node, src, start, inner_end);
    }

    /// Text between `start` and `end` in which the node's children are expansions.
    fn add_expanding_text(&mut self, node: Node, src: &str, start: usize, inner_end: usize) {
        let mut pos = start;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.start_byte() < pos || child.end_byte() > inner_end {
                continue;
            }
            self.push_double_quoted_text(src.get(pos..child.start_byte()).unwrap_or_default());
            let text = src.get(child.byte_range()).unwrap_or_default();
            let kind = match child.kind() {
                "string_content" | "heredoc_content" => None,
                "simple_expansion" => Some(DynKind::Var),
                "expansion" => Some(expansion_kind(child)),
                "command_substitution" => Some(DynKind::Subst),
                "arithmetic_expansion" => Some(DynKind::Arith),
                _ => Some(DynKind::Complex),
            };
            match kind {
                None => self.push_double_quoted_text(text),
                Some(kind) => self.push_dyn(text, true, kind),
            }
            pos = child.end_byte();
        }
        self.push_double_quoted_text(src.get(pos..inner_end).unwrap_or_default());
    }
}

/// `${x}` is a plain parameter; anything with an operator, index or indirection is not.
fn expansion_kind(node: Node) -> DynKind {
    let plain = node.named_child_count() == 1
        && node.child_by_field_name("operator").is_none()
        && node.child_count() == 3
        && node
            .named_child(0)
            .is_some_and(|c| matches!(c.kind(), "variable_name" | "special_variable_name"));
    if plain {
        DynKind::Var
    } else {
        DynKind::Complex
    }
}

/// The parameter name of `$name`, `${name}`, `$1`, `$@`.
pub(crate) fn var_name(src: &str) -> Option<&str> {
    let inner = src.strip_prefix('$')?;
    let inner = inner
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or(inner);
    let plain = !inner.is_empty()
        && (inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || matches!(inner, "@" | "*" | "#" | "?" | "-" | "$" | "!"));
    plain.then_some(inner)
}

/// Variables whose value never starts with `-` (paths from the environment, numbers).
fn never_an_option(name: &str) -> bool {
    matches!(
        name,
        "HOME" | "PWD" | "OLDPWD" | "TMPDIR" | "SHELL" | "?" | "$" | "#" | "!"
    )
}

fn is_glob_char(c: char) -> bool {
    matches!(c, '*' | '?' | '[')
}

/// Quotes `s` for display when the shell would not read it back as one literal word.
pub(crate) fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(
                    c,
                    '-' | '_' | '.' | '/' | ',' | ':' | '=' | '+' | '@' | '%' | '^'
                )
        });
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn strip(text: &str, front: usize, back: usize) -> &str {
    if text.len() >= front + back {
        text.get(front..text.len() - back).unwrap_or(text)
    } else {
        text
    }
}

/// Decodes the escapes of a `$'..'` string. Bash ends the string at a NUL (`$'rm\0x'` is
/// `rm`), so the text after one is dropped.
pub(crate) fn ansi_c(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let (radix, max) = match e {
            '0'..='7' => (8, 3),
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            'c' => {
                if let Some(n) = chars.next() {
                    out.push(char::from((n as u8) & 0x1f));
                }
                continue;
            }
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        let mut digits = String::new();
        if radix == 8 {
            digits.push(e);
        }
        while digits.len() < max {
            match chars.peek() {
                Some(d) if d.is_digit(radix) => {
                    digits.push(*d);
                    chars.next();
                }
                _ => break,
            }
        }
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(ch) => out.push(ch),
            None => {
                out.push('\\');
                out.push(e);
                out.push_str(if radix == 8 { &digits[1..] } else { &digits });
            }
        }
    }
    match out.find('\0') {
        Some(nul) => out[..nul].to_string(),
        None => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unquoted(s: &str) -> Word {
        let mut w = Word::default();
        w.push_unquoted(s);
        w
    }

    #[test]
    fn ansi_c_escapes_decode_and_stop_at_nul() {
        let cases = [
            (r"\x72m", "rm"),
            (r"\162\155", "rm"),
            (r"a\tb\n", "a\tb\n"),
            (r"\u0072m", "rm"),
            (r"it\'s", "it's"),
            (r"rm\0 -rf", "rm"),
            (r"rm\x00x", "rm"),
            (r"rm\c@x", "rm"),
        ];
        for (body, decoded) in cases {
            assert_eq!(ansi_c(body), decoded, "{body}");
        }
    }

    #[test]
    fn backslashes_quote_the_next_character() {
        assert_eq!(unquoted(r"su\do").literal().as_deref(), Some("sudo"));
        assert!(!unquoted(r"\*").has_glob());
        assert!(unquoted("*.rs").has_glob());
        assert!(!unquoted("[").has_glob());
    }

    #[test]
    fn words_that_may_become_options() {
        let cases = [
            ("*.rs", true),
            ("-delet?", true),
            ("src/*.rs", false),
            ("[-]x", true),
            ("plain", false),
        ];
        for (word, may) in cases {
            assert_eq!(unquoted(word).may_be_option(), may, "{word}");
        }
        assert!(Word::unknown("$x", DynKind::Var).may_be_option());
    }

    #[test]
    fn globs_are_matched_against_names() {
        assert!(unquoted("/bin/r?").could_be("/bin/rm"));
        assert!(unquoted("-delet?").could_be("-delete"));
        assert!(!unquoted("*.rs").could_be("-delete"));
        assert!(Word::unknown("$x", DynKind::Var).could_be("-exec"));
        assert!(!Word::lit("*").could_be("-exec"));
    }

    #[test]
    fn shown_words_read_back_as_the_same_word() {
        assert_eq!(Word::lit("print(1)").shown(), "'print(1)'");
        assert_eq!(Word::lit("it's").shown(), r"'it'\''s'");
        assert_eq!(Word::lit("src/main.rs").shown(), "src/main.rs");
        assert_eq!(unquoted("*.rs").shown(), "*.rs");
        assert_eq!(Word::lit("*.rs").shown(), "'*.rs'");
    }
}
