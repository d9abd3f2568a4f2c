//! Text-level helpers: line continuations, the rough split of text tree-sitter cannot
//! parse, assignment words.

use super::MAX_PARTS;
use super::words::Word;
use std::iter::Peekable;
use std::str::Chars;
use tree_sitter::Tree;

/// Removes backslash-newline line continuations that tree-sitter would read as word breaks
/// (`r\⏎m` is `rm` to bash); `None` when there are none outside quotes and comments.
pub(super) fn join_continuations(text: &str, tree: &Tree) -> Option<String> {
    let bytes = text.as_bytes();
    let mut cuts = Vec::new();
    for i in 0..bytes.len().saturating_sub(1) {
        if bytes[i] != b'\\' || bytes[i + 1] != b'\n' {
            continue;
        }
        let escapes = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
        if escapes % 2 == 1 {
            continue;
        }
        let mut node = tree.root_node().descendant_for_byte_range(i, i + 1);
        let mut literal = false;
        while let Some(n) = node {
            if matches!(
                n.kind(),
                "raw_string" | "comment" | "ansi_c_string" | "heredoc_body"
            ) {
                literal = true;
                break;
            }
            node = n.parent();
        }
        if !literal {
            cuts.push(i);
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for cut in cuts {
        out.push_str(&text[pos..cut]);
        pos = cut + 2;
    }
    out.push_str(&text[pos..]);
    Some(out)
}

/// The first control character in `text` other than TAB and newline (DEL included), shown
/// as an escape (`\v`, `\x01`).
pub(super) fn control_char(text: &str) -> Option<String> {
    let c = text
        .chars()
        .find(|&c| c.is_ascii_control() && c != '\t' && c != '\n')?;
    Some(match c {
        '\x0b' => "\\v".to_string(),
        '\x0c' => "\\f".to_string(),
        '\r' => "\\r".to_string(),
        '\0' => "\\0".to_string(),
        '\x1b' => "\\e".to_string(),
        c => format!("\\x{:02x}", c as u32),
    })
}

/// Whether bash starts a comment at the `#` at byte `at` of `src`: at the start, or after an
/// unescaped blank, newline or operator character.
pub(super) fn starts_comment(src: &str, at: usize) -> bool {
    let bytes = src.as_bytes();
    let Some(before) = at.checked_sub(1) else {
        return true;
    };
    let Some(&prev) = bytes.get(before) else {
        return false;
    };
    let escapes = bytes[..before]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count();
    b" \t\n;&|()<>".contains(&prev) && escapes % 2 == 0
}

/// A rough split of text tree-sitter cannot parse: commands end at operators, words at
/// unquoted blanks. Only used to find deny-worthy commands in input that is doubtful anyway.
pub(super) fn crude_commands(text: &str) -> Vec<Vec<Word>> {
    let mut split = CrudeSplit::default();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match split.quote {
            Some(q) => split.quoted(q, c, &mut chars),
            None => split.unquoted(c, &mut chars),
        }
        if split.cmds.len() > MAX_PARTS {
            break;
        }
    }
    split.end_word();
    let mut cmds = split.cmds;
    cmds.push(split.cur);
    without_keywords(cmds)
}

/// Where [`crude_commands`] is in the text.
#[derive(Default)]
struct CrudeSplit {
    /// The commands so far.
    cmds: Vec<Vec<Word>>,
    /// The words of the command being read.
    cur: Vec<Word>,
    /// The word being read.
    word: Word,
    in_word: bool,
    /// The next word is a redirection's target, not an argument.
    drop_next: bool,
    /// The open quote, if any.
    quote: Option<char>,
}

impl CrudeSplit {
    fn end_word(&mut self) {
        if self.in_word {
            let w = std::mem::take(&mut self.word);
            if self.drop_next {
                self.drop_next = false;
            } else {
                self.cur.push(w);
            }
            self.in_word = false;
        }
    }

    fn end_command(&mut self) {
        self.end_word();
        if !self.cur.is_empty() {
            self.cmds.push(std::mem::take(&mut self.cur));
        }
    }

    /// `c` inside the quote `q`.
    fn quoted(&mut self, q: char, c: char, chars: &mut Peekable<Chars<'_>>) {
        match q {
            '\'' if c == '\'' => self.quote = None,
            '\'' => self.word.push_char(c, true),
            _ if c == '"' => self.quote = None,
            _ if c == '\\' => match chars.peek().copied() {
                Some('\n') => {
                    chars.next();
                }
                Some(n @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    self.word.push_char(n, true);
                }
                _ => self.word.push_char('\\', true),
            },
            _ => self.word.push_char(c, true),
        }
    }

    /// `c` outside quotes.
    fn unquoted(&mut self, c: char, chars: &mut Peekable<Chars<'_>>) {
        match c {
            '\'' | '"' => {
                self.quote = Some(c);
                self.in_word = true;
            }
            '\\' => {
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    self.word.push_char(n, true);
                    self.in_word = true;
                }
            }
            '#' if !self.in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                self.end_command();
            }
            '<' | '>' => {
                self.end_word();
                self.drop_next = true;
            }
            ';' | '&' | '|' | '(' | ')' | '`' | '\n' | '$'
                if c != '$' || chars.peek() == Some(&'(') =>
            {
                self.end_command()
            }
            c if c.is_whitespace() => self.end_word(),
            _ => {
                self.word.push_char(c, false);
                self.in_word = true;
            }
        }
    }
}

/// `cmds` without their leading keywords and assignments, and without the empty ones.
fn without_keywords(cmds: Vec<Vec<Word>>) -> Vec<Vec<Word>> {
    const KEYWORDS: &[&str] = &[
        "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time",
    ];
    cmds.into_iter()
        .map(|cmd| {
            let skip = cmd
                .iter()
                .take_while(|w| {
                    w.literal()
                        .is_some_and(|t| KEYWORDS.contains(&t.as_str()) || is_assignment(&t))
                })
                .count();
            cmd.into_iter().skip(skip).collect::<Vec<Word>>()
        })
        .filter(|cmd| !cmd.is_empty())
        .collect()
}

/// Whether `word` has the shape `NAME=value`.
pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
