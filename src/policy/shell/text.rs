//! Text-level helpers: line continuations, the rough split of text tree-sitter cannot
//! parse, assignment words.

use super::MAX_PARTS;
use super::words::Word;
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

/// A rough split of text tree-sitter cannot parse: commands end at operators, words at
/// unquoted blanks. Only used to find deny-worthy commands in input that is doubtful anyway.
pub(super) fn crude_commands(text: &str) -> Vec<Vec<Word>> {
    let mut cmds = Vec::new();
    let mut cur: Vec<Word> = Vec::new();
    let mut word = Word::default();
    let mut in_word = false;
    let mut drop_next = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    let end_word =
        |word: &mut Word, in_word: &mut bool, drop_next: &mut bool, cur: &mut Vec<Word>| {
            if *in_word {
                let w = std::mem::take(word);
                if *drop_next {
                    *drop_next = false;
                } else {
                    cur.push(w);
                }
                *in_word = false;
            }
        };
    while let Some(c) = chars.next() {
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('\'') => word.push_char(c, true),
            Some(_) if c == '"' => quote = None,
            Some(_) if c == '\\' => match chars.peek().copied() {
                Some('\n') => {
                    chars.next();
                }
                Some(n @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    word.push_char(n, true);
                }
                _ => word.push_char('\\', true),
            },
            Some(_) => word.push_char(c, true),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(n) = chars.next()
                        && n != '\n'
                    {
                        word.push_char(n, true);
                        in_word = true;
                    }
                }
                '#' if !in_word => {
                    for n in chars.by_ref() {
                        if n == '\n' {
                            break;
                        }
                    }
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
                    if !cur.is_empty() {
                        cmds.push(std::mem::take(&mut cur));
                    }
                }
                '<' | '>' => {
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
                    drop_next = true;
                }
                ';' | '&' | '|' | '(' | ')' | '`' | '\n' | '$'
                    if c != '$' || chars.peek() == Some(&'(') =>
                {
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
                    if !cur.is_empty() {
                        cmds.push(std::mem::take(&mut cur));
                    }
                }
                c if c.is_whitespace() => {
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur)
                }
                _ => {
                    word.push_char(c, false);
                    in_word = true;
                }
            },
        }
        if cmds.len() > MAX_PARTS {
            break;
        }
    }
    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
    cmds.push(cur);
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
