//! Here-documents as bash reads them, to check tree-sitter-bash's reading against.
//!
//! tree-sitter-bash's scanner takes the delimiter word up to the next blank and only unquotes
//! a leading quote (`<<E'OF'` waits for a line `E'OF'`, bash for `EOF`), ends a body at any
//! line that merely starts with the delimiter, strips spaces for `<<-`, and misreads several
//! here-docs on one line. Bash: the delimiter is the word after quote removal; the bodies
//! start after the next newline token, in the order of their operators; a body ends at the
//! first line equal to the delimiter (leading tabs removed for `<<-`; `\⏎` joined first when
//! nothing in the word was quoted); inside `$( )` a line starting with the delimiter and
//! holding a `)` also ends it (bash's compatibility rule). Where the two readings differ, or
//! where this reader is not sure, the caller fails closed.

use super::node_text;
use std::ops::Range;
use tree_sitter::Node;

/// One here-document as bash reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HereDoc {
    /// Byte range of the delimiter word as written.
    pub(super) word: Range<usize>,
    /// The delimiter after quote removal.
    pub(super) delim: String,
    /// Whether any part of the word was quoted: the body is then not expanded.
    pub(super) quoted: bool,
    /// Where the first line of the body starts.
    pub(super) body_start: usize,
    /// From the start of the line that ends the body to the end of the delimiter in it;
    /// `None` when the text ends first.
    pub(super) end: Option<Range<usize>>,
    /// The body as the command reads it (tabs stripped for `<<-`, `\⏎` joined if unquoted).
    pub(super) body: String,
}

/// Every here-document of a script, and why the reading may be wrong, if it may.
#[derive(Debug, Default)]
pub(super) struct Located {
    pub(super) docs: Vec<HereDoc>,
    pub(super) unsure: Option<String>,
}

/// Finds every here-document of `text` (outside backticks, whose text bash reads again
/// later) where bash finds it.
pub(super) fn locate(text: &str) -> Located {
    let mut lexer = Lexer {
        s: text.as_bytes(),
        i: 0,
        docs: Vec::new(),
        unsure: None,
        depth: 0,
    };
    if text.contains('\0') {
        lexer.doubt("a NUL byte, which bash drops");
    }
    lexer.list(Until::End);
    lexer.docs.sort_by_key(|d| d.word.start);
    Located {
        docs: lexer.docs,
        unsure: lexer.unsure,
    }
}

/// Why tree-sitter's here-docs in the tree under `root` are not bash's, if they are not.
pub(super) fn disagreement(located: &Located, root: Node, text: &str) -> Option<String> {
    if let Some(why) = &located.unsure {
        return Some(format!("a here-doc rein cannot read for sure ({why})"));
    }
    let tree = tree_docs(root, text);
    if tree.len() != located.docs.len() {
        return Some(format!(
            "bash reads {} here-doc(s) where the parser finds {}",
            located.docs.len(),
            tree.len()
        ));
    }
    for (b, t) in located.docs.iter().zip(&tree) {
        let differs = t.start != b.word.start
            || t.end != b.end.as_ref().map(|e| e.end)
            || t.body_start < b.body_start
            || text
                .get(b.body_start..t.body_start)
                .is_none_or(|gap| !gap.chars().all(char::is_whitespace));
        if differs {
            return Some(format!(
                "bash ends the here-doc `{}` elsewhere than the parser (its delimiter is `{}`)",
                text.get(b.word.clone()).unwrap_or_default(),
                b.delim
            ));
        }
    }
    None
}

/// `text` with every here-doc's delimiter replaced by a plain unique word (quoted when the
/// original was), so that tree-sitter reads the bodies where bash does.
pub(super) fn canonical(text: &str, docs: &[HereDoc]) -> Option<String> {
    let mut tag = String::from("REIN_HEREDOC");
    while text.contains(&tag) {
        tag.push('_');
    }
    let mut cuts: Vec<(Range<usize>, String)> = Vec::new();
    for (n, d) in docs.iter().enumerate() {
        let q = if d.quoted { "'" } else { "" };
        cuts.push((d.word.clone(), format!("{q}{tag}{n}_{q} ")));
        if let Some(end) = &d.end {
            cuts.push((end.clone(), format!("{tag}{n}_")));
        }
    }
    cuts.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len() + 32 * docs.len());
    let mut pos = 0;
    for (range, with) in cuts {
        out.push_str(text.get(pos..range.start)?);
        out.push_str(&with);
        pos = range.end;
    }
    out.push_str(text.get(pos..)?);
    Some(out)
}

/// A here-doc as tree-sitter reads it.
struct TreeDoc {
    /// Where its delimiter word starts.
    start: usize,
    /// Where its body starts (where it ends when it has none).
    body_start: usize,
    /// Where the delimiter of its last line ends, if it has one.
    end: Option<usize>,
}

fn tree_docs(root: Node, text: &str) -> Vec<TreeDoc> {
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        // Bash reads a backtick's text again when it runs it; so does the walk.
        if node.kind() == "command_substitution" && node_text(node, text).starts_with('`') {
            continue;
        }
        if node.kind() == "heredoc_redirect" {
            found.push(tree_doc(node));
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    found.sort_by_key(|d| d.start);
    found
}

fn tree_doc(node: Node) -> TreeDoc {
    let mut doc = TreeDoc {
        start: node.end_byte(),
        body_start: node.end_byte(),
        end: None,
    };
    let mut body = None;
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "heredoc_start" => doc.start = child.start_byte(),
            "heredoc_body" => body = Some(child.start_byte()),
            "heredoc_end" if child.end_byte() > child.start_byte() => {
                doc.end = Some(child.end_byte());
                doc.body_start = child.start_byte();
            }
            _ => {}
        }
    }
    if let Some(b) = body {
        doc.body_start = b;
    }
    doc
}

/// What ends the list being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// The end of the text.
    End,
    /// An unmatched `)` (a command or process substitution).
    Paren,
}

/// A here-doc operator whose body is read at the next newline.
struct Pending {
    word: Range<usize>,
    delim: Vec<u8>,
    quoted: bool,
    strip_tabs: bool,
}

/// Nesting of substitutions beyond which the reader gives up (and the caller fails closed).
const MAX_DEPTH: usize = 200;

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    docs: Vec<HereDoc>,
    unsure: Option<String>,
    depth: usize,
}

impl Lexer<'_> {
    fn doubt(&mut self, why: &str) {
        self.unsure.get_or_insert_with(|| why.to_string());
    }

    fn at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    fn skip(&mut self, n: usize) {
        self.i = (self.i + n).min(self.s.len());
    }

    /// Reads commands until `until`; here-doc bodies are read at each newline token.
    fn list(&mut self, until: Until) {
        let mut pending = Vec::new();
        let mut word_start = true;
        let mut parens = 0usize;
        while let Some(c) = self.at(0) {
            let next = self.at(1);
            let starts = word_start;
            word_start = false;
            match c {
                b'\n' => {
                    self.skip(1);
                    self.gather(&mut pending, until);
                    word_start = true;
                }
                b' ' | b'\t' => {
                    self.skip(1);
                    word_start = true;
                }
                b'#' if starts => {
                    while self.at(0).is_some_and(|c| c != b'\n') {
                        self.skip(1);
                    }
                }
                b'\\' => {
                    word_start = starts && next == Some(b'\n');
                    self.skip(2);
                }
                b'<' if next == Some(b'<') => {
                    self.operator(&mut pending);
                    word_start = true;
                }
                b'<' | b'>' if next == Some(b'(') => {
                    self.skip(2);
                    self.nested();
                }
                b'(' if starts && next == Some(b'(') => {
                    self.skip(2);
                    self.arithmetic(b')');
                }
                b'(' => {
                    parens += 1;
                    self.skip(1);
                    word_start = true;
                }
                b')' if parens == 0 && until == Until::Paren => {
                    self.skip(1);
                    if !pending.is_empty() {
                        self.doubt("a here-doc left open in a command substitution");
                    }
                    return;
                }
                b')' | b';' | b'&' | b'|' | b'<' | b'>' => {
                    parens = parens.saturating_sub(usize::from(c == b')'));
                    self.skip(1);
                    word_start = true;
                }
                _ => self.word_char(c, starts, until),
            }
        }
        if until == Until::Paren {
            self.doubt("an unclosed command substitution");
        }
        self.gather(&mut pending, until);
    }

    /// One character of a word outside any quote.
    fn word_char(&mut self, c: u8, starts: bool, until: Until) {
        match c {
            b'\'' => self.single(),
            b'"' => self.double(),
            b'`' => self.backtick(),
            b'$' => self.dollar(),
            _ => {
                // A case pattern's `)` would end the substitution early for this reader.
                if starts && until == Until::Paren && self.s[self.i..].starts_with(b"case") {
                    self.doubt("a case statement inside a command substitution");
                }
                self.skip(1);
            }
        }
    }

    fn nested(&mut self) {
        if self.depth >= MAX_DEPTH {
            self.doubt("substitutions nested too deeply");
            self.i = self.s.len();
            return;
        }
        self.depth += 1;
        self.list(Until::Paren);
        self.depth -= 1;
    }

    fn single(&mut self) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            self.skip(1);
            if c == b'\'' {
                return;
            }
        }
        self.doubt("an unclosed quote");
    }

    fn double(&mut self) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            match c {
                b'\\' => self.skip(2),
                b'"' => return self.skip(1),
                b'`' => self.backtick(),
                b'$' if matches!(self.at(1), Some(b'(' | b'{' | b'[')) => self.dollar(),
                _ => self.skip(1),
            }
        }
        self.doubt("an unclosed quote");
    }

    fn backtick(&mut self) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            match c {
                b'\\' => self.skip(2),
                b'`' => return self.skip(1),
                _ => self.skip(1),
            }
        }
        self.doubt("an unclosed backtick");
    }

    /// `$` and what follows it.
    fn dollar(&mut self) {
        match (self.at(1), self.at(2)) {
            (Some(b'('), Some(b'(')) => {
                self.skip(3);
                self.arithmetic(b')');
            }
            (Some(b'('), _) => {
                self.skip(2);
                self.nested();
            }
            (Some(b'{'), next) => {
                if matches!(next, Some(b' ' | b'\t' | b'\n' | b'|')) {
                    self.doubt("a `${ …; }` substitution");
                }
                self.skip(2);
                self.braced(b'{', b'}');
            }
            (Some(b'['), _) => {
                self.skip(2);
                self.arithmetic(b']');
            }
            (Some(b'\''), _) => {
                self.skip(1);
                self.ansi();
            }
            (Some(b'"'), _) => {
                self.skip(1);
                self.double();
            }
            _ => self.skip(1),
        }
    }

    /// `$'…'`: a backslash escapes the next character, also a quote.
    fn ansi(&mut self) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            match c {
                b'\\' => self.skip(2),
                b'\'' => return self.skip(1),
                _ => self.skip(1),
            }
        }
        self.doubt("an unclosed quote");
    }

    /// The inside of `${…}`, after its opening.
    fn braced(&mut self, open: u8, close: u8) {
        let mut depth = 0usize;
        while let Some(c) = self.at(0) {
            match c {
                b'\\' => self.skip(2),
                b'\'' => self.single(),
                b'"' => self.double(),
                b'`' => self.backtick(),
                b'$' => self.dollar(),
                _ if c == open => {
                    depth += 1;
                    self.skip(1);
                }
                _ if c == close && depth == 0 => return self.skip(1),
                _ if c == close => {
                    depth -= 1;
                    self.skip(1);
                }
                _ => self.skip(1),
            }
        }
        self.doubt("an unclosed `${`");
    }

    /// The inside of `((…))`, `$((…))` or `$[…]`: `<<` is a shift there, unless bash reads
    /// the text as nested subshells after all, which a newline could make a here-doc.
    fn arithmetic(&mut self, close: u8) {
        let start = self.i;
        let open = if close == b']' { b'[' } else { b'(' };
        self.braced(open, close);
        let inside = &self.s[start..self.i];
        if close == b')' && self.at(0) == Some(b')') {
            self.skip(1);
        }
        let has = |pat: &[u8]| inside.windows(pat.len()).any(|w| w == pat);
        if has(b"<<") && inside.contains(&b'\n') {
            self.doubt("`<<` and a newline inside arithmetic");
        }
    }

    /// `<<`, `<<-` or `<<<` and, for the first two, the delimiter word.
    fn operator(&mut self, pending: &mut Vec<Pending>) {
        if self.at(2) == Some(b'<') {
            return self.skip(3);
        }
        let strip_tabs = self.at(2) == Some(b'-');
        self.skip(if strip_tabs { 3 } else { 2 });
        while matches!(self.at(0), Some(b' ' | b'\t')) {
            self.skip(1);
        }
        let start = self.i;
        if self.at(0) == Some(b'#') {
            self.doubt("a here-doc without a delimiter");
            return;
        }
        let (delim, quoted) = self.delimiter();
        if self.i == start {
            self.doubt("a here-doc without a delimiter");
            return;
        }
        pending.push(Pending {
            word: start..self.i,
            delim,
            quoted,
            strip_tabs,
        });
    }

    /// Reads a delimiter word; returns it after quote removal and whether it was quoted.
    fn delimiter(&mut self) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut quoted = false;
        while let Some(c) = self.at(0) {
            match (c, self.at(1)) {
                (b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')', _) => break,
                (b'\\', Some(b'\n')) => self.skip(2),
                (b'\\', Some(n)) => {
                    quoted = true;
                    out.push(n);
                    self.skip(2);
                }
                (b'\'', _) => {
                    quoted = true;
                    let from = self.i + 1;
                    self.single();
                    let to = if self.s[..self.i].ends_with(b"'") && self.i > from {
                        self.i - 1
                    } else {
                        self.i
                    };
                    out.extend_from_slice(&self.s[from.min(to)..to]);
                }
                (b'"', _) => {
                    quoted = true;
                    self.double_delimiter(&mut out);
                }
                (b'$', Some(b'\'')) => {
                    quoted = true;
                    self.skip(1);
                    self.ansi_delimiter(&mut out);
                }
                (b'$', Some(b'"')) => {
                    quoted = true;
                    self.skip(1);
                    self.double_delimiter(&mut out);
                }
                (b'$', Some(b'(' | b'{' | b'[')) | (b'`', _) => {
                    self.doubt("a here-doc delimiter with an expansion in it");
                    let from = self.i;
                    if c == b'`' {
                        self.backtick();
                    } else {
                        self.dollar();
                    }
                    out.extend_from_slice(&self.s[from..self.i]);
                }
                _ => {
                    out.push(c);
                    self.skip(1);
                }
            }
        }
        (out, quoted)
    }

    /// A double-quoted part of a delimiter: a backslash is removed before `$`, `` ` ``,
    /// `"`, `\` and a newline.
    fn double_delimiter(&mut self, out: &mut Vec<u8>) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            match (c, self.at(1)) {
                (b'\\', Some(b'\n')) => self.skip(2),
                (b'\\', Some(n @ (b'$' | b'`' | b'"' | b'\\'))) => {
                    out.push(n);
                    self.skip(2);
                }
                (b'"', _) => return self.skip(1),
                (b'$', Some(b'(' | b'{' | b'[')) | (b'`', _) => {
                    self.doubt("a here-doc delimiter with an expansion in it");
                    let from = self.i;
                    if c == b'`' {
                        self.backtick();
                    } else {
                        self.dollar();
                    }
                    out.extend_from_slice(&self.s[from..self.i]);
                }
                _ => {
                    out.push(c);
                    self.skip(1);
                }
            }
        }
        self.doubt("an unclosed quote");
    }

    /// A `$'…'` part of a delimiter, its escapes decoded.
    fn ansi_delimiter(&mut self, out: &mut Vec<u8>) {
        self.skip(1);
        while let Some(c) = self.at(0) {
            match c {
                b'\'' => return self.skip(1),
                b'\\' => self.ansi_escape(out),
                _ => {
                    out.push(c);
                    self.skip(1);
                }
            }
        }
        self.doubt("an unclosed quote");
    }

    fn ansi_escape(&mut self, out: &mut Vec<u8>) {
        let Some(e) = self.at(1) else {
            out.push(b'\\');
            return self.skip(1);
        };
        self.skip(2);
        let simple = match e {
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(27),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            _ => None,
        };
        if let Some(b) = simple {
            return out.push(b);
        }
        let (radix, max) = match e {
            b'0'..=b'7' => (8, 3),
            b'x' => (16, 2),
            b'c' | b'u' | b'U' => {
                self.doubt("an escape in a here-doc delimiter rein does not decode");
                return out.extend_from_slice(&[b'\\', e]);
            }
            _ => return out.extend_from_slice(&[b'\\', e]),
        };
        let mut value: u32 = 0;
        let mut digits = 0;
        if radix == 8 {
            value = u32::from(e - b'0');
            digits = 1;
        }
        while digits < max
            && let Some(d) = self.at(0).and_then(|d| char::from(d).to_digit(radix))
        {
            value = value * radix + d;
            digits += 1;
            self.skip(1);
        }
        if radix == 16 && digits == 0 {
            return out.extend_from_slice(b"\\x");
        }
        out.push((value & 0xFF) as u8);
    }

    /// Reads the bodies of the here-docs whose operators came before this newline.
    fn gather(&mut self, pending: &mut Vec<Pending>, until: Until) {
        for p in std::mem::take(pending) {
            let doc = self.body(p, until);
            self.docs.push(doc);
        }
    }

    fn body(&mut self, p: Pending, until: Until) -> HereDoc {
        let body_start = self.i;
        let mut body = Vec::new();
        let doc = |end: Option<Range<usize>>, body: &[u8]| HereDoc {
            word: p.word.clone(),
            delim: String::from_utf8_lossy(&p.delim).into_owned(),
            quoted: p.quoted,
            body_start,
            end,
            body: String::from_utf8_lossy(body).into_owned(),
        };
        while self.i < self.s.len() {
            let start = self.i;
            let (line, joined) = self.line(!p.quoted);
            let line_end = if self.s[..self.i].ends_with(b"\n") {
                self.i - 1
            } else {
                self.i
            };
            let tabs = if p.strip_tabs {
                line.iter().take_while(|&&b| b == b'\t').count()
            } else {
                0
            };
            if line == p.delim || line[tabs..] == p.delim[..] {
                return doc(Some(start..line_end), &body);
            }
            let rest = &line[tabs..];
            if until == Until::Paren
                && rest.starts_with(&p.delim)
                && rest[p.delim.len()..].contains(&b')')
            {
                if joined {
                    self.doubt("a continued line ending a here-doc in a substitution");
                }
                self.i = start + tabs + p.delim.len();
                return doc(Some(start..self.i), &body);
            }
            body.extend_from_slice(rest);
            body.push(b'\n');
        }
        doc(None, &body)
    }

    /// One line of a body, without its newline; with `join`, `\⏎` pairs are removed
    /// (and the second value says whether any was).
    fn line(&mut self, join: bool) -> (Vec<u8>, bool) {
        let mut line = Vec::new();
        let mut joined = false;
        while let Some(c) = self.at(0) {
            match c {
                b'\n' => {
                    self.skip(1);
                    break;
                }
                b'\\' if join && self.at(1) == Some(b'\n') => {
                    joined = true;
                    self.skip(2);
                }
                b'\\' if join && self.at(1).is_some() => {
                    line.extend_from_slice(&self.s[self.i..self.i + 2]);
                    self.skip(2);
                }
                _ => {
                    line.push(c);
                    self.skip(1);
                }
            }
        }
        (line, joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (delimiter, quoted, body, the text of the end line) of each here-doc bash reads.
    fn docs(text: &str) -> Vec<(String, bool, String, Option<String>)> {
        let located = locate(text);
        assert_eq!(located.unsure, None, "{text:?}");
        located
            .docs
            .into_iter()
            .map(|d| {
                let end = d.end.map(|e| text[e].to_string());
                (d.delim, d.quoted, d.body, end)
            })
            .collect()
    }

    fn one(
        delim: &str,
        quoted: bool,
        body: &str,
        end: &str,
    ) -> (String, bool, String, Option<String>) {
        (delim.into(), quoted, body.into(), Some(end.into()))
    }

    #[test]
    fn delimiters_are_words_after_quote_removal() {
        let cases = [
            (
                "cat <<E'OF'\nx\nEOF\nrm -rf /\nE'OF'\n",
                one("EOF", true, "x\n", "EOF"),
            ),
            ("cat <<E\"OF\"\nEOF\n", one("EOF", true, "", "EOF")),
            ("cat <<EOF''\nEOF\n", one("EOF", true, "", "EOF")),
            ("cat <<\\EOF\n$x\nEOF\n", one("EOF", true, "$x\n", "EOF")),
            ("cat <<$'E\\x4fF'\nEOF\n", one("EOF", true, "", "EOF")),
            ("cat <<$\"EOF\"\nEOF\n", one("EOF", true, "", "EOF")),
            ("cat << 'a b'\na b\n", one("a b", true, "", "a b")),
            ("cat <<$x\n$x\n", one("$x", false, "", "$x")),
            ("cat <<EO\\\nF\nEOF\n", one("EOF", false, "", "EOF")),
            ("cat <<EOF;echo\nEOF\n", one("EOF", false, "", "EOF")),
            ("cat <<''\nx\n\n", one("", true, "x\n", "")),
        ];
        for (text, want) in cases {
            assert_eq!(docs(text), vec![want], "{text:?}");
        }
    }

    #[test]
    fn bodies_end_where_bash_ends_them() {
        let cases = [
            // Only an exact line ends a body: not trailing blanks, not a longer word.
            (
                "cat <<EOF\nEOF \nEOFX\n EOF\nEOF\n",
                one("EOF", false, "EOF \nEOFX\n EOF\n", "EOF"),
            ),
            // `<<-` strips tabs, not spaces.
            (
                "cat <<-EOF\n\tx\n  EOF\n\t\tEOF\nls",
                one("EOF", false, "x\n  EOF\n", "\t\tEOF"),
            ),
            // Unquoted: `\⏎` joins lines first.
            (
                "cat <<EOF\nE\\\nOF\nrm x\nEOF\n",
                one("EOF", false, "", "E\\\nOF"),
            ),
            (
                "cat <<EOF\nx\\\nEOF\nEOF\n",
                one("EOF", false, "xEOF\n", "EOF"),
            ),
            ("cat <<'EOF'\nx\\\nEOF\n", one("EOF", true, "x\\\n", "EOF")),
            // The last line needs no newline.
            ("cat <<EOF\nx\nEOF", one("EOF", false, "x\n", "EOF")),
            // A substitution's `)` after the delimiter ends it too.
            (
                "x=$(cat <<EOF\nb\nEOF; rm y)\n",
                one("EOF", false, "b\n", "EOF"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(docs(text), vec![want], "{text:?}");
        }
    }

    #[test]
    fn bodies_start_after_the_newline_token_in_operator_order() {
        let text = "cat <<A <<'B' 'x\ny'; cat <<C # <<D\na\nA\nb\nB\nc\nC\nls\n";
        assert_eq!(
            docs(text),
            vec![
                one("A", false, "a\n", "A"),
                one("B", true, "b\n", "B"),
                one("C", false, "c\n", "C")
            ]
        );
        // Inside a substitution the substitution's own newlines count.
        let text = "echo \"$(cat <<X\nx\nX\n)\" <<Y\ny\nY\n";
        assert_eq!(
            docs(text),
            vec![one("X", false, "x\n", "X"), one("Y", false, "y\n", "Y")]
        );
        // Not here-docs: shifts, here-strings, comments, quotes, backticks.
        for text in [
            "echo $((1<<2)) <<<x\n",
            "((x<<=1))\n",
            "echo '<<A' \"<<B\" # <<C\n",
            "echo `cat <<A`\n",
        ] {
            assert_eq!(docs(text), vec![], "{text:?}");
        }
    }

    #[test]
    fn what_it_cannot_read_for_sure_is_said() {
        for text in [
            "cat <<$(x)\n$(x)\n",
            "cat <<`x`\n",
            "x=$(case a in a) cat <<E;; esac\nE\n)",
            "cat <<\n",
            "cat <<E 'x\n",
            "$((1<<2\n))",
        ] {
            assert!(locate(text).unsure.is_some(), "{text:?}");
        }
    }

    #[test]
    fn canonical_delimiters_keep_bodies_and_quoting() {
        let text = "cat <<E'OF' | tr a b\n$x\nEOF\nrm y\n";
        let located = locate(text);
        assert_eq!(
            canonical(text, &located.docs).as_deref(),
            Some("cat <<'REIN_HEREDOC0_'  | tr a b\n$x\nREIN_HEREDOC0_\nrm y\n")
        );
    }
}
