//! Parse a command line into the simple commands it would run.
//!
//! tree-sitter-bash gives the syntax tree. The walk accepts a short list of node kinds it
//! understands (lists, pipelines, subshells, groups, `if`/`while`/`for`/`case`, functions,
//! simple commands, plain words and parameters, redirections to `/dev/null` or from files);
//! anything else, any expansion whose result it cannot know, any substitution, a parse error
//! or a limit makes the parts it touches *doubtful*: never allowed without asking. It still
//! looks inside everything it can (substitutions, `sh -c` strings, text tree-sitter does not
//! parse) so deny rules see hidden commands. [`commands`] knows what wrappers run and
//! [`args`] which arguments of allowed commands write or run.

mod arg_options;
mod args;
mod braces;
mod checks;
mod commands;
mod constructs;
mod getopt;
mod git;
mod git_config;
mod heredoc;
mod outside;
mod scan;
#[cfg(test)]
mod tests;
mod text;
pub(crate) mod words;
mod wrapper_options;
mod wrappers;

use std::cell::RefCell;
use std::collections::HashMap;
pub(crate) use text::is_assignment;
use text::{crude_commands, join_continuations};
use tree_sitter::{Node, Parser, Tree};
use words::Word;

/// One simple command that a command line would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The normalised command: words quoted where needed, expansions as written, single
    /// spaces; what rules are matched against.
    pub command: String,
    /// The same words, unquoted, one per entry (the first is the normalised command name).
    pub words: Vec<String>,
    /// Why this part must never be allowed without asking, if so.
    pub doubt: Option<String>,
    /// Other forms checked against deny rules only (`rm` for `./rm` or `rm${IFS}-rf`).
    pub deny_alias: Vec<String>,
    /// The command name when it is a pattern (`/bin/r?`): deny rules whose program it could
    /// match apply.
    pub name_glob: Option<String>,
    /// The construct it was found in when that is not plain syntax (`xargs`, `find -exec`).
    pub via: Option<String>,
    /// Whether it is a command rules rate or a wrapper whose command is rated separately.
    pub role: Role,
    /// The program that runs, when certain: a bare name (`ls`, system directories removed)
    /// or a path as written (`./x`).
    pub program: Option<String>,
}

/// What a part is to the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A command: allowed only when a rule allows it.
    Command,
    /// A transparent wrapper (`timeout`, `env`, `xargs`, ...) that was fully understood: it
    /// passes unless a rule says otherwise, and the command it runs is its own part.
    Wrapper,
}

/// Parses `command` into every simple command it would run, in source order.
pub fn parse(command: &str) -> Vec<Part> {
    parse_in(command, None)
}

/// [`parse`] for a command run in `workspace` (the current directory when `None`): what git
/// finds there decides whether `git -C DIR` stays in the workspace's repository.
pub fn parse_in(command: &str, workspace: Option<&std::path::Path>) -> Vec<Part> {
    parse_for(command, workspace, false)
}

/// [`parse_in`] for commands that run `unconfined` (the sandbox off): an argument that may
/// name a file outside the workspace makes its part doubtful (see `outside`).
pub fn parse_for(
    command: &str,
    workspace: Option<&std::path::Path>,
    unconfined: bool,
) -> Vec<Part> {
    let mut walker = Walker {
        workspace: workspace.map(std::path::Path::to_path_buf),
        unconfined,
        ..Walker::default()
    };
    if command.len() > MAX_LEN {
        walker.push_doubt(
            command,
            "the command line is too long to check",
            &Ctx::default(),
        );
        walker.crude(command, &Ctx::default().with_doubt(Some(TOO_LONG.into())));
    } else {
        walker.script(command, &Ctx::default());
    }
    // One part stands for what may run unseen: its program is unknown.
    if let Some(why) = walker.unseen.take() {
        walker.push_doubt("(unseen)", &why, &Ctx::default());
    }
    walker.git_after_cd();
    let mut seen = std::collections::HashSet::new();
    walker
        .parts
        .into_iter()
        .filter(|p| seen.insert((p.command.clone(), p.doubt.clone(), p.via.clone())))
        .collect()
}

/// How deep `sh -c`, `eval` and the like may nest before the rest is doubtful.
const MAX_DEPTH: usize = 8;
/// How deep the syntax tree may nest (`((((...))))`) before the rest is doubtful.
pub(crate) const MAX_NODE_DEPTH: usize = 100;
/// Longest command line parsed; longer ones are doubtful as a whole.
const MAX_LEN: usize = 64 * 1024;
/// Most parts one command line produces; past it the line is doubtful.
const MAX_PARTS: usize = 400;
/// Most bytes of script text read for one command line, nested scripts included.
const MAX_WORK: usize = 256 * 1024;
const TOO_LONG: &str = "part of a command line too long to check";

/// UTF-8 as tree-sitter-bash may safely see it: ASCII as it is, every other character as one
/// stand-in (U+00C0). The grammar's lexer treats all characters from `~` up alike, and the C
/// library's classes (rein never sets a locale) call none of them letters, digits or space,
/// so the parse is the same; but the grammar's scanner passes the character to `isdigit`,
/// whose table a character above U+00FF overruns: `{` and such a character crashed rein
/// (tree-sitter-bash issue 337). Byte offsets are those of the real text.
struct AsciiOrOther;

impl tree_sitter::Decode for AsciiOrOther {
    fn decode(bytes: &[u8]) -> (i32, u32) {
        let Some(&first) = bytes.first() else {
            return (-1, 0);
        };
        if first < 0x80 {
            return (i32::from(first), 1);
        }
        // The text is a `str`, so this is the length of a valid sequence; a cut chunk (never
        // made here: each read returns the rest of the text) counts as one byte.
        let len = match first {
            0xF0.. => 4,
            0xE0.. => 3,
            _ => 2,
        };
        (0xC0, len.min(bytes.len()) as u32)
    }
}

thread_local! {
    // Creating a parser and loading the grammar costs more than parsing a short command.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Longest a parse may take; tree-sitter's error recovery is slow on some garbage.
const MAX_PARSE_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// Parses `text` as bash (one parser per thread, at most [`MAX_PARSE_TIME`]).
pub(crate) fn parse_tree(text: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        let started = std::time::Instant::now();
        let mut give_up = |_: &tree_sitter::ParseState| {
            if started.elapsed() > MAX_PARSE_TIME {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        };
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut give_up);
        let bytes = text.as_bytes();
        let parser = slot.as_mut()?;
        let tree = parser.parse_custom_encoding::<AsciiOrOther, _, _>(
            &mut |i, _| bytes.get(i..).unwrap_or_default(),
            None,
            Some(options),
        );
        // An aborted parse leaves state behind for the next one.
        if tree.is_none() {
            parser.reset();
        }
        tree
    })
}

/// The deepest nesting of brackets in `text` (quotes read roughly): deeper than the walk
/// may go means the text is not parsed at all.
fn nesting(text: &str) -> usize {
    let (mut depth, mut max, mut single) = (0usize, 0usize, false);
    for c in text.chars() {
        match c {
            '\'' => single = !single,
            '(' | '{' | '[' if !single => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' if !single => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
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
    doubt: Option<String>,
    via: Option<String>,
}

impl Ctx {
    fn with_doubt(&self, reason: Option<String>) -> Ctx {
        Ctx {
            doubt: self.doubt.clone().or(reason),
            via: self.via.clone(),
        }
    }

    fn with_via(&self, via: &str) -> Ctx {
        Ctx {
            doubt: self.doubt.clone(),
            via: Some(via.to_string()),
        }
    }
}

/// What redirections contribute to the command they belong to.
#[derive(Default)]
struct Extra<'t> {
    /// Words tree-sitter attached to a redirection that are really arguments (`ls >f arg`).
    args: Vec<Node<'t>>,
    doubt: Option<String>,
    stdin: Option<Stdin>,
}

#[derive(Default)]
struct Walker {
    parts: Vec<Part>,
    /// Nesting of scripts (`sh -c`).
    depth: usize,
    /// Nesting of syntax nodes.
    node_depth: usize,
    /// Values assigned to variables anywhere in the line (`x=..`, `for x in ..`).
    vars: HashMap<String, Vec<Word>>,
    /// Directories `cd` went to: relative paths are checked from there too.
    dirs: Vec<Word>,
    /// Bytes of script text read so far (nested scripts are read again).
    work: usize,
    /// Why something in the line may run a command rein cannot see (an expansion that runs
    /// code, a script only known when it runs), if something may.
    unseen: RefCell<Option<String>>,
    /// The here-docs of the script being walked, as bash reads them.
    docs: Vec<heredoc::HereDoc>,
    /// The directory the command runs in, if not the current one.
    workspace: Option<std::path::PathBuf>,
    /// Commands run without the sandbox: nothing hides what lies outside the workspace.
    unconfined: bool,
    /// Where reading is harmless then, found once per line.
    places: std::cell::OnceCell<Option<outside::Places>>,
}

impl Walker {
    /// Parses and walks a script (the whole command line, or the string given to `sh -c`).
    fn script(&mut self, text: &str, ctx: &Ctx) {
        self.work += text.len();
        if self.work > MAX_WORK {
            if self.work - text.len() <= MAX_WORK {
                self.push_doubt(text, "too complex to check", ctx);
            }
            return;
        }
        if self.depth >= MAX_DEPTH || nesting(text) > MAX_NODE_DEPTH / 2 {
            let reason = "nested too deeply to check";
            self.push_doubt(text, reason, ctx);
            // Only a rough split here: scanning substitutions again would nest further.
            for words in crude_commands(text) {
                self.run_words(words, &ctx.with_doubt(Some(reason.into())), None);
            }
            return;
        }
        self.depth += 1;
        let outer = std::mem::take(&mut self.docs);
        self.read(text, ctx);
        self.docs = outer;
        self.depth -= 1;
    }

    /// Parses and walks a script within the limits. Where tree-sitter's here-docs are not
    /// bash's, the script is doubtful, and it is read again with delimiters tree-sitter reads
    /// right (or, failing that, only searched as text) so that what bash runs after a here-doc
    /// still meets the deny rules.
    fn read(&mut self, text: &str, ctx: &Ctx) {
        // tree-sitter reads `\v`, `\f`, `\r` as blanks where bash does not (a `#` after
        // one starts a comment only for tree-sitter), so no such text is trusted.
        if let Some(c) = text::control_char(text) {
            let why = format!("the control character `{c}` is read differently by bash");
            self.push_doubt(text, &why, ctx);
        }
        let mut tree = parse_tree(text);
        let mut located = heredoc::locate(text);
        let mut text = std::borrow::Cow::Borrowed(text);
        let mut ctx = ctx.clone();
        if let Some(t) = tree.as_ref().filter(|t| !t.root_node().has_error())
            && let Some(why) = heredoc::disagreement(&located, t.root_node(), &text)
        {
            self.push_doubt(&text, &why, &ctx);
            ctx = ctx.with_doubt(Some(why));
            let canonical = located
                .unsure
                .is_none()
                .then(|| heredoc::canonical(&text, &located.docs))
                .flatten();
            let Some(canonical) = canonical else {
                self.walk(t.root_node(), &text, &ctx);
                self.crude(&text, &ctx);
                return;
            };
            tree = parse_tree(&canonical);
            located = heredoc::locate(&canonical);
            text = canonical.into();
        }
        if let Some(joined) = tree.as_ref().and_then(|t| join_continuations(&text, t)) {
            tree = parse_tree(&joined);
            located = heredoc::locate(&joined);
            text = joined.into();
        }
        match tree {
            Some(tree) if !tree.root_node().has_error() => {
                if let Some(why) = heredoc::disagreement(&located, tree.root_node(), &text) {
                    self.push_doubt(&text, &why, &ctx);
                    let ctx = ctx.with_doubt(Some(why));
                    self.walk(tree.root_node(), &text, &ctx);
                    self.crude(&text, &ctx);
                    return;
                }
                self.docs = located.docs;
                self.collect_vars(tree.root_node(), &text);
                self.walk(tree.root_node(), &text, &ctx);
            }
            tree => {
                let reason = "part of a command line that could not be parsed";
                self.push_doubt(&text, "the command line could not be parsed", &ctx);
                let ctx = ctx.with_doubt(Some(reason.to_string()));
                if let Some(tree) = tree {
                    self.walk(tree.root_node(), &text, &ctx);
                }
                self.crude(&text, &ctx);
            }
        }
    }

    /// Deny checks for text the parser could not (or was not allowed to) read: a rough split
    /// into commands, and the substitutions in it.
    fn crude(&mut self, text: &str, ctx: &Ctx) {
        // tree-sitter may not see commands that bash would run (`{rm,-rf,x}`).
        for words in crude_commands(text) {
            self.run_words(words, ctx, None);
        }
        self.hidden(text, ctx);
    }

    /// Walks the scripts of substitutions found in `text` by scanning it, for text
    /// tree-sitter keeps as plain text although bash expands it.
    fn hidden(&mut self, text: &str, ctx: &Ctx) {
        if !scan::expands(text) && !text.contains(['<', '>']) {
            return;
        }
        let ctx = ctx.with_doubt(Some("a command hidden in text bash expands".into()));
        for inner in scan::hidden_scripts(text) {
            if self.full() {
                return;
            }
            self.script(&inner, &ctx);
        }
    }

    fn full(&self) -> bool {
        self.parts.len() >= MAX_PARTS
    }

    /// Enters a node unless a limit is reached (then the rest is doubtful); the caller
    /// leaves it with `self.node_depth -= 1`.
    fn enter(&mut self, node: Node, src: &str, ctx: &Ctx) -> bool {
        if self.full() {
            return false;
        }
        if self.node_depth >= MAX_NODE_DEPTH {
            self.too_deep(node, src, ctx);
            return false;
        }
        self.node_depth += 1;
        true
    }

    /// A statement-level node.
    fn walk(&mut self, node: Node, src: &str, ctx: &Ctx) {
        if self.enter(node, src, ctx) {
            self.walk_kind(node, src, ctx);
            self.node_depth -= 1;
        }
    }

    fn walk_kind(&mut self, node: Node, src: &str, ctx: &Ctx) {
        match node.kind() {
            "program"
            | "list"
            | "pipeline"
            | "subshell"
            | "do_group"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "while_statement"
            | "negated_command"
            | "variable_assignments" => self.walk_children(node, src, ctx),
            "compound_statement" if node.child(0).is_some_and(|c| c.kind() == "((") => {
                self.arithmetic_command(node, src, ctx)
            }
            "compound_statement" => self.walk_children(node, src, ctx),
            "command" => self.command(node, src, ctx, Extra::default()),
            "redirected_statement" => self.redirected(node, src, ctx),
            "variable_assignment" => {
                self.assignment(node, src, ctx, true);
            }
            "declaration_command" => self.declaration(node, src, ctx),
            "unset_command" => self.unset(node, src, ctx),
            "test_command" => self.test_command(node, src, ctx),
            "for_statement" => self.for_statement(node, src, ctx),
            "case_statement" => self.case_statement(node, src, ctx),
            "function_definition" => match node.child_by_field_name("body") {
                Some(body) => self.walk(body, src, ctx),
                None => self.unsupported(node, src, ctx),
            },
            "comment" => self.comment(node, src, ctx),
            "heredoc_start" | "heredoc_end" => {}
            ";;" | ";&" | ";;&" => {
                self.push_doubt(src, "`;;` outside a case statement is a syntax error", ctx)
            }
            _ if !node.is_named() => {}
            _ => self.unsupported(node, src, ctx),
        }
    }

    /// A comment is skipped only where bash starts one too; elsewhere (`x\ #`, after a
    /// blank bash does not know) its text may be commands, so it is doubtful and searched.
    fn comment(&mut self, node: Node, src: &str, ctx: &Ctx) {
        if text::starts_comment(src, node.start_byte()) {
            return;
        }
        let why = "a `#` that bash does not read as the start of a comment";
        let body = node_text(node, src);
        self.push_doubt(body, why, ctx);
        self.crude(
            body.trim_start_matches('#'),
            &ctx.with_doubt(Some(why.into())),
        );
    }

    fn walk_children(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child, src, ctx);
        }
    }

    /// A construct the walk does not understand: doubtful, but searched for commands.
    fn unsupported(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let reason = match node.kind() {
            "c_style_for_statement" => "arithmetic evaluation can run code".to_string(),
            kind => format!(
                "`{}` ({kind}) is not a construct rein can check",
                brief(node, src)
            ),
        };
        self.push_doubt(node_text(node, src), &reason, ctx);
        let ctx = ctx.with_doubt(Some(reason));
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if is_statement(child.kind()) {
                self.walk(child, src, &ctx);
            } else {
                self.walk_word(child, src, &ctx);
            }
        }
    }

    /// Past the depth limit: the rest is doubtful and only searched as text.
    fn too_deep(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let reason = "nested too deeply to check";
        self.push_doubt(node_text(node, src), reason, ctx);
        self.crude(node_text(node, src), &ctx.with_doubt(Some(reason.into())));
    }

    /// A word-level node: finds the commands of substitutions in it.
    fn walk_word(&mut self, node: Node, src: &str, ctx: &Ctx) {
        if !self.enter(node, src, ctx) {
            return;
        }
        match node.kind() {
            "command_substitution" | "process_substitution" => {
                // Bash re-reads a backtick body after removing its backslashes (`\``).
                if node_text(node, src).starts_with('`') {
                    self.hidden(node_text(node, src), ctx);
                }
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    self.walk(child, src, ctx);
                }
            }
            // Inside `${..}`, here-strings and bodies tree-sitter leaves backticks as text.
            "expansion" | "heredoc_body" | "arithmetic_expansion" | "string" => {
                self.hidden(node_text(node, src), ctx);
                self.walk_word_children(node, src, ctx);
            }
            "comment" => self.comment(node, src, ctx),
            "raw_string" | "ansi_c_string" => {}
            _ => self.walk_word_children(node, src, ctx),
        }
        self.node_depth -= 1;
    }

    fn walk_word_children(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk_word(child, src, ctx);
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
                _ if child.is_named() => self.unsupported(child, src, ctx),
                _ => {}
            }
        }
        let mut doubt = extra.doubt.take();
        for assign in assigns {
            if let Some(reason) = self.assignment(assign, src, ctx, false) {
                doubt.get_or_insert(reason);
            }
        }
        args.sort_by_key(|n| n.start_byte());
        let Some(name) = name else {
            for arg in args {
                self.walk_word(arg, src, ctx);
            }
            if let Some(reason) = doubt {
                self.push_doubt(node_text(node, src), &reason, ctx);
            }
            return;
        };
        let mut words = Vec::with_capacity(args.len() + 1);
        for n in std::iter::once(name).chain(args) {
            self.walk_word(n, src, ctx);
            words.push(Word::from_node(n, src));
        }
        let keyword = name.kind() == "command_name" && node_text(name, src) == "time";
        let ctx = ctx.with_doubt(doubt);
        let stdin = extra.stdin.as_ref();
        if keyword {
            self.time_keyword(&words, &ctx, stdin);
        } else {
            self.run_words(words, &ctx, stdin);
        }
    }

    /// Brace-expands the words, then rates what they run.
    fn run_words(&mut self, words: Vec<Word>, ctx: &Ctx, stdin: Option<&Stdin>) {
        let mut expanded = Vec::with_capacity(words.len());
        let mut too_large = false;
        for w in words {
            match braces::expand_braces(w.clone()) {
                Some(ws) => expanded.extend(ws),
                None => {
                    too_large = true;
                    expanded.push(w);
                }
            }
        }
        let ctx = if too_large {
            ctx.with_doubt(Some("a brace expansion too large to check".to_string()))
        } else {
            ctx.clone()
        };
        self.run(expanded, &ctx, stdin);
    }

    /// Adds a doubtful part shown as its source text.
    fn push_doubt(&mut self, text: &str, reason: &str, ctx: &Ctx) {
        let short = match text.char_indices().nth(160) {
            Some((i, _)) => format!("{}…", &text[..i]),
            None => text.to_string(),
        };
        let mut words: Vec<String> = short.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            words.push("…".into());
        }
        self.parts.push(Part {
            command: words.join(" "),
            words,
            doubt: Some(reason.to_string()),
            deny_alias: Vec::new(),
            name_glob: None,
            via: ctx.via.clone(),
            role: Role::Command,
            program: None,
        });
    }
}

/// Node kinds that are statements (walked for commands) rather than words.
fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "redirected_statement"
            | "list"
            | "pipeline"
            | "subshell"
            | "compound_statement"
            | "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition"
            | "negated_command"
            | "declaration_command"
            | "unset_command"
            | "test_command"
            | "variable_assignment"
            | "variable_assignments"
            | "do_group"
            | "else_clause"
            | "elif_clause"
            | "program"
    )
}

fn field_nodes<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor).collect()
}

/// The source text of `node`; empty if its range is not valid in `src` (never panics).
fn node_text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// The first line of a node's text, shortened, for reasons.
fn brief<'s>(node: Node, src: &'s str) -> &'s str {
    let text = node_text(node, src);
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}
