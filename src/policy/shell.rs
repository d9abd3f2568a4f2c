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

mod args;
mod commands;
mod getopt;
mod git;
mod scan;
#[cfg(test)]
mod tests;
pub(crate) mod words;
mod wrappers;

use std::cell::RefCell;
use std::collections::HashMap;
use tree_sitter::{Node, Parser, Tree};
use words::{DynKind, Word};

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
    let mut walker = Walker::default();
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

thread_local! {
    // Creating a parser and loading the grammar costs more than parsing a short command.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Longest a parse may take; tree-sitter's error recovery is slow on some garbage.
const MAX_PARSE_TIME: std::time::Duration = std::time::Duration::from_millis(500);

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
        let tree = parser.parse_with_options(
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
        let mut tree = parse_tree(text);
        let joined = tree.as_ref().and_then(|t| join_continuations(text, t));
        if let Some(joined) = &joined {
            tree = parse_tree(joined);
        }
        let text = joined.as_deref().unwrap_or(text);
        match tree {
            Some(tree) if !tree.root_node().has_error() => {
                self.collect_vars(tree.root_node(), text);
                self.walk(tree.root_node(), text, ctx);
            }
            tree => {
                let reason = "part of a command line that could not be parsed";
                self.push_doubt(text, "the command line could not be parsed", ctx);
                let ctx = ctx.with_doubt(Some(reason.to_string()));
                if let Some(tree) = tree {
                    self.walk(tree.root_node(), text, &ctx);
                }
                self.crude(text, &ctx);
            }
        }
        self.depth -= 1;
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

    /// A statement-level node.
    fn walk(&mut self, node: Node, src: &str, ctx: &Ctx) {
        if self.full() {
            return;
        }
        if self.node_depth >= MAX_NODE_DEPTH {
            self.too_deep(node, src, ctx);
            return;
        }
        self.node_depth += 1;
        self.walk_kind(node, src, ctx);
        self.node_depth -= 1;
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
            "comment" | "heredoc_start" | "heredoc_end" => {}
            ";;" | ";&" | ";;&" => {
                self.push_doubt(src, "`;;` outside a case statement is a syntax error", ctx)
            }
            _ if !node.is_named() => {}
            _ => self.unsupported(node, src, ctx),
        }
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
        if self.full() {
            return;
        }
        if self.node_depth >= MAX_NODE_DEPTH {
            self.too_deep(node, src, ctx);
            return;
        }
        self.node_depth += 1;
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
            "raw_string" | "ansi_c_string" | "comment" => {}
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

    /// Records the values assigned to variables anywhere in the script, so that a `"$f"`
    /// used before the assignment is read (in a function, a loop) is still known.
    fn collect_vars(&mut self, root: Node, src: &str) {
        let mut stack = vec![root];
        let mut budget = 4096;
        while let Some(node) = stack.pop() {
            budget -= 1;
            if budget == 0 {
                return;
            }
            match node.kind() {
                "variable_assignment" => {
                    let name = node.child_by_field_name("name").map(|n| node_text(n, src));
                    let value = node
                        .child_by_field_name("value")
                        .map_or_else(Word::default, |v| Word::from_node(v, src));
                    if let Some(name) = name {
                        self.vars.entry(name.to_string()).or_default().push(value);
                    }
                }
                "for_statement" => {
                    if let Some(var) = node.child_by_field_name("variable") {
                        let values: Vec<Word> = field_nodes(node, "value")
                            .into_iter()
                            .flat_map(|v| {
                                words::expand_braces(Word::from_node(v, src)).unwrap_or_default()
                            })
                            .collect();
                        let values = if values.is_empty() {
                            vec![Word::unknown("$@", DynKind::Var)]
                        } else {
                            values
                        };
                        self.vars
                            .entry(node_text(var, src).to_string())
                            .or_default()
                            .extend(values);
                    }
                }
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
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
            match words::expand_braces(w.clone()) {
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
                _ if is_statement(child.kind()) => self.walk(child, src, ctx),
                _ => self.walk_word(child, src, ctx),
            }
        }
        match body {
            Some(b) if b.kind() == "command" => self.command(b, src, ctx, extra),
            other => {
                if let Some(b) = other {
                    self.walk(b, src, ctx);
                }
                for arg in &extra.args {
                    self.walk_word(*arg, src, ctx);
                }
                let reason = extra.doubt.or_else(|| {
                    (!extra.args.is_empty())
                        .then(|| "words after a redirection of a compound command".to_string())
                });
                if let Some(reason) = reason {
                    self.push_doubt(node_text(node, src), &reason, ctx);
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
                            self.walk_word(child, src, ctx);
                            dest = Some(child);
                        }
                        Some("destination") => extra.args.push(child),
                        Some("descriptor") => {}
                        _ if !child.is_named() => op.push_str(child.kind()),
                        _ => self.walk_word(child, src, ctx),
                    }
                }
                let target = dest.map(|d| Word::from_node(d, src));
                if let Some(reason) = self.redirect_doubt(&op, target.as_ref()) {
                    extra.doubt.get_or_insert(reason);
                }
            }
            "herestring_redirect" => {
                for child in children {
                    if child.is_named() && child.kind() != "file_descriptor" {
                        self.walk_word(child, src, ctx);
                        let word = Word::from_node(child, src);
                        if let Some(reason) = self.word_doubt(&word) {
                            extra.doubt.get_or_insert(reason);
                        }
                        extra.stdin = Some(match word.literal() {
                            Some(t) => Stdin::Script(t + "\n"),
                            None => Stdin::Unknown,
                        });
                    }
                }
            }
            "heredoc_redirect" => self.heredoc(node, children, src, ctx, extra),
            _ => {
                extra
                    .doubt
                    .get_or_insert(format!("an unknown redirection `{}`", brief(node, src)));
                self.walk_word_children(node, src, ctx);
            }
        }
    }

    fn heredoc<'t>(
        &mut self,
        node: Node<'t>,
        children: Vec<Node<'t>>,
        src: &str,
        ctx: &Ctx,
        extra: &mut Extra<'t>,
    ) {
        let quoted = children
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .is_some_and(|s| node_text(*s, src).contains(['\'', '"', '\\']));
        for (i, child) in children.into_iter().enumerate() {
            match node.field_name_for_child(i as u32) {
                Some("redirect") => self.redirect(child, src, ctx, extra),
                Some("argument") => extra.args.push(child),
                _ if child.kind() == "heredoc_body" => {
                    let body = node_text(child, src);
                    if quoted {
                        extra.stdin = Some(Stdin::Script(body.to_string()));
                        continue;
                    }
                    self.walk_word(child, src, ctx);
                    let word = Word::from_heredoc(child, src);
                    let reason = self.word_doubt(&word).or_else(|| {
                        body.contains('`')
                            .then(|| "a backtick in a here-doc".into())
                    });
                    let plain = !scan::expands(body) && !body.contains('\\');
                    extra.stdin = Some(if plain {
                        Stdin::Script(body.to_string())
                    } else {
                        Stdin::Unknown
                    });
                    if let Some(reason) = reason {
                        extra.doubt.get_or_insert(reason);
                    }
                }
                _ if is_statement(child.kind()) => self.walk(child, src, ctx),
                _ => self.walk_word(child, src, ctx),
            }
        }
    }

    /// Why a redirection with operator `op` to `target` is not harmless, if it is not: it
    /// writes a file, opens a connection, or goes somewhere only known at run time.
    fn redirect_doubt(&self, op: &str, target: Option<&Word>) -> Option<String> {
        let Some(target) = target else {
            // `2>&-`, `<&-` close a descriptor.
            return (!op.ends_with('-')).then(|| format!("a redirection `{op}` without a target"));
        };
        if let Some(reason) = self.word_doubt(target) {
            return Some(reason);
        }
        let shown = target.text();
        let Some(t) = target.literal() else {
            return Some(format!(
                "a redirection to `{shown}`, which is only known when it runs"
            ));
        };
        if t.starts_with("/dev/tcp/") || t.starts_with("/dev/udp/") {
            // bash itself connects for these paths, whichever direction.
            return Some(format!("a redirection opens a network connection: {shown}"));
        }
        let dup = op.ends_with('&') && (t == "-" || t.chars().all(|c| c.is_ascii_digit()));
        let writes = op.contains('>');
        let harmless = matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr");
        if dup || harmless {
            return None;
        }
        if writes {
            return Some(format!("output redirection to a file: {op} {shown}"));
        }
        self.secret_doubt(target)
    }

    /// A `NAME=value`, standalone or before a command; returns (for the latter) why it
    /// makes the command doubtful.
    fn assignment(&mut self, node: Node, src: &str, ctx: &Ctx, standalone: bool) -> Option<String> {
        let name = node.child_by_field_name("name");
        let value = node.child_by_field_name("value");
        if let Some(v) = value {
            self.walk_word(v, src, ctx);
        }
        let var = name.map_or("", |n| node_text(n, src));
        let mut reason = match name.map(|n| n.kind()) {
            Some("variable_name") => super::risk::assignment(var),
            _ => Some(format!(
                "the assignment `{}` is not a plain name",
                brief(node, src)
            )),
        };
        if reason.is_none()
            && let Some(v) = value
        {
            let word = Word::from_node(v, src);
            reason = self.word_doubt(&word);
            if v.kind() == "array" {
                let mut cursor = v.walk();
                for item in v.named_children(&mut cursor) {
                    reason = reason.or_else(|| self.word_doubt(&Word::from_node(item, src)));
                }
            }
        }
        if standalone {
            if let Some(r) = &reason {
                self.push_doubt(node_text(node, src), r, ctx);
            }
            return None;
        }
        reason
    }

    /// `export`, `declare`, `local`, `readonly`, `typeset`: plain assignments of harmless
    /// variables pass; options (`declare -i` evaluates arithmetic) and anything else are
    /// doubtful.
    fn declaration(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut words = Vec::new();
        let mut reason = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    let r = self.assignment(child, src, ctx, false);
                    reason = reason.or(r);
                    words.push(Word::lit(node_text(child, src)));
                }
                "variable_name" => words.push(Word::lit(node_text(child, src))),
                "comment" => {}
                _ => {
                    self.walk_word(child, src, ctx);
                    let w = Word::from_node(child, src);
                    if words.is_empty() {
                        words.push(w);
                        continue;
                    }
                    self.may_run_unseen("a declaration option can evaluate code");
                    reason.get_or_insert(format!(
                        "`{}` with `{}` can do more than assign",
                        words[0].text(),
                        w.text()
                    ));
                    words.push(w);
                }
            }
        }
        let builtin = words.first().map(Word::text).unwrap_or_default();
        if words.len() == 1 {
            reason.get_or_insert(format!("`{builtin}` alone prints variables"));
        }
        self.emit_role(
            builtin,
            &words,
            &ctx.with_doubt(reason),
            Role::Wrapper,
            None,
        );
    }

    /// `unset NAME...`: an array subscript in a name is arithmetic that can run code.
    fn unset(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut words = Vec::new();
        let mut reason = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk_word(child, src, ctx);
            let w = Word::from_node(child, src);
            let plain = w.literal().is_some_and(|t| {
                t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
            if !plain && !words.is_empty() {
                reason.get_or_insert(format!("unset `{}` is not a plain name", w.text()));
            }
            words.push(w);
        }
        self.emit_role(
            "unset".into(),
            &words,
            &ctx.with_doubt(reason),
            Role::Wrapper,
            None,
        );
    }

    /// `(( expr ))`: plain numbers pass; names are evaluated and can run code.
    fn arithmetic_command(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let text = node_text(node, src);
        self.hidden(text, ctx);
        self.walk_word_children(node, src, ctx);
        let plain = scan::arithmetic_body(text.trim()).is_some_and(scan::plain_arithmetic);
        if !plain {
            self.push_doubt(text, "arithmetic evaluation can run code", ctx);
        }
    }

    /// `[[ .. ]]` (and `[ .. ]` when tree-sitter reads it so): operands are words; the
    /// arithmetic comparisons and `-v` evaluate their operands as arithmetic, which can run
    /// code, so those operands must be plain numbers or names.
    fn test_command(&mut self, node: Node, src: &str, ctx: &Ctx) {
        self.walk_word_children(node, src, ctx);
        let text = node_text(node, src);
        let mut reason = None;
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            let mut cursor = n.walk();
            let children: Vec<Node> = n.children(&mut cursor).collect();
            let arith_op = children.iter().any(|c| {
                matches!(
                    node_text(*c, src),
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" | "-v" | "-R"
                )
            });
            for c in children {
                let w = Word::from_node(c, src);
                let r = if matches!(
                    c.kind(),
                    "test_operator"
                        | "binary_expression"
                        | "unary_expression"
                        | "parenthesized_expression"
                ) || !c.is_named()
                {
                    None
                } else if arith_op && !w.literal().is_some_and(|t| plain_operand(&t)) {
                    Some(format!(
                        "`{}` is evaluated as arithmetic, which can run code",
                        w.text()
                    ))
                } else {
                    self.word_doubt(&w)
                };
                reason = reason.or(r);
                if matches!(
                    c.kind(),
                    "binary_expression" | "unary_expression" | "parenthesized_expression"
                ) {
                    stack.push(c);
                }
            }
        }
        if let Some(r) = reason {
            self.push_doubt(text, &r, ctx);
        }
    }

    /// `for x in words; do ..; done`: the words are data; the variable must be harmless.
    fn for_statement(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let var = node.child_by_field_name("variable");
        let name = var.map_or("", |v| node_text(v, src));
        let mut reason = super::risk::assignment(name);
        if node.child(0).is_some_and(|c| c.kind() == "select") {
            reason.get_or_insert("`select` reads from the terminal".into());
        }
        for v in field_nodes(node, "value") {
            self.walk_word(v, src, ctx);
            reason = reason.or_else(|| self.word_doubt(&Word::from_node(v, src)));
        }
        if let Some(r) = &reason {
            self.push_doubt(brief(node, src), r, ctx);
        }
        if let Some(body) = node.child_by_field_name("body") {
            self.walk(body, src, ctx);
        }
    }

    /// `case word in pattern) ..;; esac`: the word and patterns are data.
    fn case_statement(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let mut reason = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "case_item" => {
                    let mut c2 = child.walk();
                    for (i, item) in child.children(&mut c2).enumerate() {
                        if child.field_name_for_child(i as u32) == Some("value") {
                            self.walk_word(item, src, ctx);
                            reason =
                                reason.or_else(|| self.word_doubt(&Word::from_node(item, src)));
                        } else if is_statement(item.kind()) {
                            self.walk(item, src, ctx);
                        }
                    }
                }
                _ if child.is_named() && !is_statement(child.kind()) => {
                    self.walk_word(child, src, ctx);
                    reason = reason.or_else(|| self.word_doubt(&Word::from_node(child, src)));
                }
                _ if child.is_named() => self.walk(child, src, ctx),
                _ => {}
            }
        }
        if let Some(r) = reason {
            self.push_doubt(brief(node, src), &r, ctx);
        }
    }

    /// Why a word is not plain data, if it is not: a substitution, an expansion with an
    /// operator, arithmetic with names, or a variable that may hold a secret.
    fn word_doubt(&self, w: &Word) -> Option<String> {
        for (src, kind) in w.dyns() {
            let reason = match kind {
                DynKind::Subst => Some(format!(
                    "the output of `{src}` becomes part of the command line"
                )),
                DynKind::Complex => {
                    self.may_run_unseen(&format!("the expansion `{src}` can run commands"));
                    Some(format!("the expansion `{src}` is only known when it runs"))
                }
                DynKind::Arith
                    if !scan::arithmetic_body(src).is_some_and(scan::plain_arithmetic) =>
                {
                    self.may_run_unseen(&format!("`{src}` can run commands"));
                    Some(format!(
                        "`{src}` evaluates names as arithmetic, which can run code"
                    ))
                }
                DynKind::Var => words::var_name(src)
                    .filter(|n| secret_var(n))
                    .map(|n| format!("`${n}` may hold a secret")),
                _ => None,
            };
            if reason.is_some() {
                return reason;
            }
        }
        None
    }

    /// Notes that something may run a command no part shows.
    fn may_run_unseen(&self, why: &str) {
        self.unseen
            .borrow_mut()
            .get_or_insert_with(|| why.to_string());
    }

    /// Why `w` names a secret location (also from any directory `cd` went to), if it does.
    fn secret_doubt(&self, w: &Word) -> Option<String> {
        for v in w.substitute(&|name| self.vars.get(name).cloned()) {
            if let Some(r) = super::secrets::names_secret(&v) {
                return Some(r);
            }
            let relative = !v.text().starts_with(['/', '~', '$']);
            for dir in self.dirs.iter().filter(|_| relative) {
                let mut joined = dir.clone();
                joined.push_char('/', true);
                joined.toks.extend(v.toks.iter().cloned());
                if let Some(r) = super::secrets::names_secret(&joined) {
                    return Some(r);
                }
            }
        }
        None
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

/// Whether an operand of an arithmetic test is a plain number or name (no subscript).
fn plain_operand(t: &str) -> bool {
    let t = t.trim();
    !t.is_empty()
        && (t
            .trim_start_matches(['-', '+'])
            .chars()
            .all(|c| c.is_ascii_digit())
            || (t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !t.starts_with(|c: char| c.is_ascii_digit())))
}

/// Variable names that usually hold secrets (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`).
fn secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "CREDENTIAL",
        "PRIVATE",
        "ACCESS_KEY",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|s| upper.contains(s))
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
/// unquoted blanks. Only used to find deny-worthy commands in input that is doubtful anyway.
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
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
