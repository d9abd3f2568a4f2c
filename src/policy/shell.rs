//! Parse a command line into the simple commands it would run.
//!
//! tree-sitter-bash gives the syntax tree. This module walks every place a command can run
//! (lists, pipelines, subshells, groups, substitutions, control flow, function bodies, here-docs
//! fed to shells); [`commands`] knows what wrappers such as `sh -c`, `xargs` or `find -exec` run.
//! Whatever is only known when the command runs makes a part *opaque*: it may never be allowed
//! without asking.

mod commands;
mod words;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use tree_sitter::{Node, Parser, Tree};
use words::Word;

/// One simple command that a command line would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The normalised command: words unquoted, expansions as written, single spaces.
    pub command: String,
    /// The same words, one per entry (the first is the normalised command name).
    pub words: Vec<String>,
    /// Why this part must never be allowed without asking, if so.
    pub opaque: Option<String>,
    /// A second form checked against deny rules only (`rm` for `./rm` or `rm${IFS}-rf`).
    pub deny_alias: Option<String>,
    /// The construct it was found in when that is not plain syntax (`xargs`, `find -delete`).
    pub via: Option<String>,
}

/// Parses `command` into every simple command it would run, in source order.
pub fn parse(command: &str) -> Vec<Part> {
    let mut walker = Walker::default();
    walker.script(command, &Ctx::default());
    walker.parts
}

/// How deep `sh -c`, `eval` and the like may nest before the rest is treated as opaque.
const MAX_DEPTH: usize = 8;

thread_local! {
    // Creating a parser and loading the grammar costs more than parsing a short command.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse_tree(text: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(text, None)
    })
}

/// What a command's standard input is, when it matters (a shell reading its script).
#[derive(Clone, Debug)]
enum Stdin {
    /// A here-doc or here-string with known text.
    Script(String),
    /// A here-doc or here-string with expansions in it.
    Unknown,
}

/// Inherited facts about where a command sits.
#[derive(Clone, Debug, Default)]
struct Ctx {
    opaque: Option<String>,
    via: Option<String>,
}

impl Ctx {
    fn with_opaque(&self, reason: Option<String>) -> Ctx {
        Ctx {
            opaque: reason.or_else(|| self.opaque.clone()),
            via: self.via.clone(),
        }
    }

    fn with_via(&self, via: &str) -> Ctx {
        Ctx {
            opaque: self.opaque.clone(),
            via: Some(via.to_string()),
        }
    }
}

/// What redirections contribute to the command they belong to.
#[derive(Default)]
struct Extra<'t> {
    /// Words tree-sitter attached to a redirection that are really arguments (`ls >f arg`).
    args: Vec<Node<'t>>,
    opaque: Option<String>,
    stdin: Option<Stdin>,
}

#[derive(Default)]
struct Walker {
    parts: Vec<Part>,
    depth: usize,
}

impl Walker {
    /// Parses and walks a script (the whole command line, or the string given to `sh -c`).
    fn script(&mut self, text: &str, ctx: &Ctx) {
        if self.depth >= MAX_DEPTH {
            self.push_opaque(text, "nested too deeply to check", ctx);
            return;
        }
        self.depth += 1;
        let mut tree = parse_tree(text);
        let joined = tree.as_ref().and_then(|t| join_continuations(text, t));
        if let Some(joined) = &joined {
            tree = parse_tree(joined);
        }
        let text = joined.as_deref().unwrap_or(text);
        match tree {
            Some(tree) if !tree.root_node().has_error() => self.walk(tree.root_node(), text, ctx),
            tree => {
                let reason = "part of a command line that could not be parsed";
                self.push_opaque(text, "the command line could not be parsed", ctx);
                let ctx = ctx.with_opaque(Some(reason.to_string()));
                if let Some(tree) = tree {
                    self.walk(tree.root_node(), text, &ctx);
                }
                // tree-sitter may not see commands that bash would run (`{rm,-rf,x}`).
                for words in crude_commands(text) {
                    self.run_words(words, &ctx, None);
                }
            }
        }
        self.depth -= 1;
    }

    fn walk(&mut self, node: Node, src: &str, ctx: &Ctx) {
        match node.kind() {
            "command" => self.command(node, src, ctx, Extra::default()),
            "redirected_statement" => self.redirected(node, src, ctx),
            "variable_assignment" => self.assignment(node, src, ctx),
            "declaration_command" | "unset_command" => self.declaration(node, src, ctx),
            "test_command" => {
                if contains_expansion(node) {
                    let reason = "a test with expansions (arithmetic comparisons can run code)";
                    self.push_opaque(node_text(node, src), reason, ctx);
                }
                self.walk_children(node, src, ctx);
            }
            "c_style_for_statement" => {
                self.push_opaque(
                    node_text(node, src),
                    "arithmetic evaluation can run code",
                    ctx,
                );
                self.walk_children(node, src, ctx);
            }
            "compound_statement" if node.child(0).is_some_and(|c| c.kind() == "((") => {
                self.push_opaque(
                    node_text(node, src),
                    "arithmetic evaluation can run code",
                    ctx,
                );
                self.walk_children(node, src, ctx);
            }
            "for_statement" => {
                if let Some(var) = node.child_by_field_name("variable")
                    && let Some(reason) = super::risk::assignment(node_text(var, src))
                {
                    self.push_opaque(node_text(var, src), &reason, ctx);
                }
                self.walk_children(node, src, ctx);
            }
            "comment" | "heredoc_start" | "heredoc_end" => {}
            ";;" | ";&" | ";;&" if node.parent().is_none_or(|p| p.kind() != "case_item") => {
                self.push_opaque(src, "`;;` outside a case statement is a syntax error", ctx);
            }
            _ => self.walk_children(node, src, ctx),
        }
    }

    fn walk_children(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child, src, ctx);
        }
    }

    /// A simple command: prefix assignments, name, arguments, redirections.
    fn command<'t>(&mut self, node: Node<'t>, src: &str, ctx: &Ctx, mut extra: Extra<'t>) {
        let mut name = None;
        let mut args = std::mem::take(&mut extra.args);
        let mut assigns = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        for (i, child) in children.into_iter().enumerate() {
            match node.field_name_for_child(i as u32) {
                Some("name") => name = Some(child),
                Some("argument") => args.push(child),
                Some("redirect") => self.redirect(child, src, ctx, &mut extra),
                _ if child.kind() == "variable_assignment" => assigns.push(child),
                _ => self.walk(child, src, ctx),
            }
        }
        let mut opaque = extra.opaque.take();
        for assign in assigns {
            if let Some(value) = assign.child_by_field_name("value") {
                self.walk(value, src, ctx);
            }
            let var = assign
                .child_by_field_name("name")
                .map_or("", |n| node_text(n, src));
            if let Some(reason) = super::risk::assignment(var) {
                opaque.get_or_insert(reason);
            }
        }
        args.sort_by_key(|n| n.start_byte());
        let Some(name) = name else {
            for arg in args {
                self.walk(arg, src, ctx);
            }
            if let Some(reason) = opaque {
                self.push_opaque(node_text(node, src), &reason, ctx);
            }
            return;
        };
        let mut words = Vec::with_capacity(args.len() + 1);
        for n in std::iter::once(name).chain(args) {
            self.walk(n, src, ctx);
            words.push(Word::from_node(n, src));
        }
        let ctx = ctx.with_opaque(opaque);
        self.run_words(words, &ctx, extra.stdin.as_ref());
    }

    /// Brace-expands the words, then rates what they run.
    fn run_words(&mut self, words: Vec<Word>, ctx: &Ctx, stdin: Option<&Stdin>) {
        let mut expanded = Vec::with_capacity(words.len());
        let mut too_large = false;
        for w in words {
            match words::expand_braces(w.clone()) {
                Some(ws) => expanded.extend(ws),
                None => {
                    too_large = true;
                    expanded.push(w);
                }
            }
        }
        let ctx = if too_large {
            ctx.with_opaque(Some("a brace expansion too large to check".to_string()))
        } else {
            ctx.clone()
        };
        self.run(expanded, &ctx, stdin);
    }

    fn redirected(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut extra = Extra::default();
        let mut body = None;
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for (i, child) in children.into_iter().enumerate() {
            match node.field_name_for_child(i as u32) {
                Some("body") => body = Some(child),
                _ if child.kind().ends_with("redirect") => {
                    self.redirect(child, src, ctx, &mut extra)
                }
                _ => self.walk(child, src, ctx),
            }
        }
        match body {
            Some(b) if b.kind() == "command" => self.command(b, src, ctx, extra),
            other => {
                if let Some(b) = other {
                    self.walk(b, src, ctx);
                }
                for arg in &extra.args {
                    self.walk(*arg, src, ctx);
                }
                let reason = extra.opaque.or_else(|| {
                    (!extra.args.is_empty())
                        .then(|| "words after a redirection of a compound command".to_string())
                });
                if let Some(reason) = reason {
                    self.push_opaque(node_text(node, src), &reason, ctx);
                }
            }
        }
    }

    /// Notes what a redirection does to its command and walks what it contains.
    fn redirect<'t>(&mut self, node: Node<'t>, src: &str, ctx: &Ctx, extra: &mut Extra<'t>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        match node.kind() {
            "file_redirect" => {
                let mut op = String::new();
                let mut dest = None;
                for (i, child) in children.into_iter().enumerate() {
                    match node.field_name_for_child(i as u32) {
                        Some("destination") if dest.is_none() => {
                            self.walk(child, src, ctx);
                            dest = Some(child);
                        }
                        Some("destination") => extra.args.push(child),
                        Some("descriptor") => {}
                        _ if !child.is_named() => op.push_str(child.kind()),
                        _ => self.walk(child, src, ctx),
                    }
                }
                let target = dest.map(|d| Word::from_node(d, src));
                let shown = target.as_ref().map(Word::text).unwrap_or_default();
                if shown.starts_with("/dev/tcp/") || shown.starts_with("/dev/udp/") {
                    // bash itself connects for these paths, whichever direction.
                    extra.opaque.get_or_insert(format!(
                        "a redirection opens a network connection: {shown}"
                    ));
                }
                if writes_file(&op, target.as_ref()) {
                    extra
                        .opaque
                        .get_or_insert(format!("output redirection to a file: {op} {shown}"));
                }
            }
            "herestring_redirect" => {
                for child in children {
                    if child.is_named() && child.kind() != "file_descriptor" {
                        self.walk(child, src, ctx);
                        let word = Word::from_node(child, src);
                        extra.stdin = Some(match word.literal() {
                            Some(t) => Stdin::Script(t + "\n"),
                            None => Stdin::Unknown,
                        });
                    }
                }
            }
            "heredoc_redirect" => {
                for (i, child) in children.into_iter().enumerate() {
                    match node.field_name_for_child(i as u32) {
                        Some("redirect") => self.redirect(child, src, ctx, extra),
                        Some("argument") => extra.args.push(child),
                        _ if child.kind() == "heredoc_body" => {
                            extra.stdin = Some(if contains_expansion(child) {
                                Stdin::Unknown
                            } else {
                                Stdin::Script(node_text(child, src).to_string())
                            });
                            self.walk(child, src, ctx);
                        }
                        _ => self.walk(child, src, ctx),
                    }
                }
            }
            _ => self.walk_children(node, src, ctx),
        }
    }

    /// A standalone `NAME=value`.
    fn assignment(&mut self, node: Node, src: &str, ctx: &Ctx) {
        self.walk_children(node, src, ctx);
        let var = node
            .child_by_field_name("name")
            .map_or("", |n| node_text(n, src));
        if let Some(reason) = super::risk::assignment(var) {
            self.push_opaque(node_text(node, src), &reason, ctx);
        }
    }

    /// `export`, `declare`, `local`, `readonly`, `typeset`, `unset`: rated as commands.
    fn declaration(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut words = Vec::new();
        let mut risky = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    if let Some(value) = child.child_by_field_name("value") {
                        self.walk(value, src, ctx);
                    }
                    let var = child
                        .child_by_field_name("name")
                        .map_or("", |n| node_text(n, src));
                    if let Some(reason) = super::risk::assignment(var) {
                        risky.get_or_insert(reason);
                    }
                    words.push(Word::lit(node_text(child, src)));
                }
                "variable_name" => words.push(Word::lit(node_text(child, src))),
                "comment" => {}
                _ => {
                    self.walk(child, src, ctx);
                    words.push(Word::from_node(child, src));
                }
            }
        }
        let ctx = ctx.with_opaque(risky);
        let name = words.first().map(Word::text).unwrap_or_default();
        self.emit(name, &words, &ctx, None);
    }

    /// Adds a part that is opaque as a whole, shown as its source text.
    fn push_opaque(&mut self, text: &str, reason: &str, ctx: &Ctx) {
        let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        self.parts.push(Part {
            command: words.join(" "),
            words,
            opaque: Some(reason.to_string()),
            deny_alias: None,
            via: ctx.via.clone(),
        });
    }
}

/// The source text of `node`; empty if its range is not valid in `src` (never panics).
fn node_text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// Whether a redirection with operator `op` writes to a file rather than a descriptor or
/// `/dev/null`.
fn writes_file(op: &str, target: Option<&Word>) -> bool {
    let writes = op.contains('>') && !op.ends_with('-');
    if !writes {
        return false;
    }
    match target.and_then(Word::literal) {
        // `>&2`, `2>&1`: duplicating a descriptor writes no file.
        Some(t) if op.ends_with(">&") && (t == "-" || t.chars().all(|c| c.is_ascii_digit())) => {
            false
        }
        Some(t) => !matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr"),
        None => true,
    }
}

fn contains_expansion(node: Node) -> bool {
    if matches!(
        node.kind(),
        "simple_expansion" | "expansion" | "command_substitution" | "arithmetic_expansion"
    ) {
        return true;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if contains_expansion(child) {
            return true;
        }
    }
    false
}

/// Removes backslash-newline line continuations that tree-sitter would read as word breaks
/// (`r\⏎m` is `rm` to bash); `None` when there are none outside quotes and comments.
fn join_continuations(text: &str, tree: &Tree) -> Option<String> {
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
/// unquoted blanks. Only used to find deny-worthy commands in input that is opaque anyway.
fn crude_commands(text: &str) -> Vec<Vec<Word>> {
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
                    cmds.push(std::mem::take(&mut cur));
                }
                '<' | '>' => {
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
                    drop_next = true;
                }
                ';' | '&' | '|' | '(' | ')' | '`' | '\n' | '$'
                    if c != '$' || chars.peek() == Some(&'(') =>
                {
                    end_word(&mut word, &mut in_word, &mut drop_next, &mut cur);
                    cmds.push(std::mem::take(&mut cur));
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
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
