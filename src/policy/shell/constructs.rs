//! Redirections and the compound constructs the walk understands: assignments,
//! declarations, `unset`, `(( ))`, `[[ ]]`, `for` and `case`.

use super::words::Word;
use super::{Ctx, Extra, Role, Stdin, Walker, brief, field_nodes, is_statement, node_text, scan};
use tree_sitter::Node;

impl Walker {
    pub(super) fn redirected(&mut self, node: Node, src: &str, ctx: &Ctx) {
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
    pub(super) fn redirect<'t>(
        &mut self,
        node: Node<'t>,
        src: &str,
        ctx: &Ctx,
        extra: &mut Extra<'t>,
    ) {
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

    pub(super) fn heredoc<'t>(
        &mut self,
        node: Node<'t>,
        children: Vec<Node<'t>>,
        src: &str,
        ctx: &Ctx,
        extra: &mut Extra<'t>,
    ) {
        let start = children.iter().find(|c| c.kind() == "heredoc_start");
        // Bash's reading of it (the tree agrees on where it ends); not found only inside
        // backticks, whose text is also read again on its own.
        let doc = start.and_then(|s| self.docs.iter().find(|d| d.word.start == s.start_byte()));
        let quoted = match doc {
            Some(d) => d.quoted,
            None => start.is_some_and(|s| node_text(*s, src).contains(['\'', '"', '\\'])),
        };
        let doc_body = doc.map(|d| d.body.clone());
        for (i, child) in children.into_iter().enumerate() {
            match node.field_name_for_child(i as u32) {
                Some("redirect") => self.redirect(child, src, ctx, extra),
                Some("argument") => extra.args.push(child),
                _ if child.kind() == "heredoc_body" => {
                    let body = node_text(child, src);
                    let script = doc_body.clone().unwrap_or_else(|| body.to_string());
                    if quoted {
                        extra.stdin = Some(Stdin::Script(script));
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
                        Stdin::Script(script)
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
    pub(super) fn redirect_doubt(&self, op: &str, target: Option<&Word>) -> Option<String> {
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
            .or_else(|| self.device_doubt(target))
            .or_else(|| self.outside_doubt("", target))
    }

    /// A `NAME=value`, standalone or before a command; returns (for the latter) why it
    /// makes the command doubtful.
    pub(super) fn assignment(
        &mut self,
        node: Node,
        src: &str,
        ctx: &Ctx,
        standalone: bool,
    ) -> Option<String> {
        let name = node.child_by_field_name("name");
        let value = node.child_by_field_name("value");
        if let Some(v) = value {
            self.walk_word(v, src, ctx);
        }
        let var = name.map_or("", |n| node_text(n, src));
        let mut reason = match name.map(|n| n.kind()) {
            Some("variable_name") => crate::policy::risk::assignment(var),
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
    pub(super) fn declaration(&mut self, node: Node, src: &str, ctx: &Ctx) {
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
                "variable_name" => {
                    // `local PATH` unsets PATH in a function: a bare name is checked too.
                    let r = crate::policy::risk::assignment(node_text(child, src));
                    reason = reason.or(r);
                    words.push(Word::lit(node_text(child, src)));
                }
                "comment" => self.comment(child, src, ctx),
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
    pub(super) fn unset(&mut self, node: Node, src: &str, ctx: &Ctx) {
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
            // `unset PATH` makes bash look commands up in the current directory.
            if let Some(name) = w
                .literal()
                .filter(|t| !words.is_empty() && !t.starts_with('-'))
                && let Some(r) = crate::policy::risk::assignment(&name)
            {
                reason.get_or_insert(r);
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
    pub(super) fn arithmetic_command(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let text = node_text(node, src);
        self.hidden(text, ctx);
        self.walk_word_children(node, src, ctx);
        let plain = scan::arithmetic_body(text.trim()).is_some_and(scan::plain_arithmetic);
        if !plain {
            self.push_doubt(text, "arithmetic evaluation can run code", ctx);
        }
    }

    /// `[[ .. ]]` (and `[ .. ]` when tree-sitter reads it so): operands are words; the
    /// arithmetic comparisons evaluate their operands as arithmetic, where a name is evaluated
    /// recursively and can run code, so those must be plain numbers; `-v`/`-R` take a name,
    /// which must have no subscript.
    pub(super) fn test_command(&mut self, node: Node, src: &str, ctx: &Ctx) {
        self.walk_word_children(node, src, ctx);
        let text = node_text(node, src);
        let mut reason = None;
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            let mut cursor = n.walk();
            let children: Vec<Node> = n.children(&mut cursor).collect();
            let op = test_operand_kind(&children, src);
            for c in children {
                if EXPRESSIONS.contains(&c.kind()) {
                    stack.push(c);
                }
                if c.kind() == "test_operator" || EXPRESSIONS.contains(&c.kind()) || !c.is_named() {
                    continue;
                }
                reason = reason.or_else(|| self.test_operand_doubt(c, src, op));
            }
        }
        if let Some(r) = reason {
            self.push_doubt(text, &r, ctx);
        }
    }

    /// Why an operand of `[[ ]]` is not plain, given what its operator makes of it.
    fn test_operand_doubt(&self, c: Node, src: &str, op: Operand) -> Option<String> {
        let w = Word::from_node(c, src);
        let plain = |f: fn(&str) -> bool| w.literal().is_some_and(|t| f(&t));
        let arith = match op {
            Operand::Word => return self.word_doubt(&w),
            Operand::Number => !plain(|t| scan::plain_arithmetic(t) && !t.trim().is_empty()),
            Operand::Name => !plain(plain_name_or_number),
        };
        arith.then(|| {
            format!(
                "`{}` is evaluated as arithmetic, which can run code",
                w.text()
            )
        })
    }
    /// `for x in words; do ..; done`: the words are data; the variable must be harmless.
    pub(super) fn for_statement(&mut self, node: Node, src: &str, ctx: &Ctx) {
        let var = node.child_by_field_name("variable");
        let name = var.map_or("", |v| node_text(v, src));
        let mut reason = crate::policy::risk::assignment(name);
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
    pub(super) fn case_statement(&mut self, node: Node, src: &str, ctx: &Ctx) {
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
}

/// Expression nodes inside `[[ ]]`, whose children are operands and operators.
const EXPRESSIONS: &[&str] = &[
    "binary_expression",
    "unary_expression",
    "parenthesized_expression",
];

/// What the operator of a `[[ ]]` expression makes of its operands.
#[derive(Clone, Copy)]
enum Operand {
    /// Text or a pattern.
    Word,
    /// Arithmetic (`-eq`, `-lt`, ...).
    Number,
    /// A variable name (`-v`, `-R`), whose subscript is arithmetic.
    Name,
}

fn test_operand_kind(children: &[Node], src: &str) -> Operand {
    let ops = children.iter().map(|c| node_text(*c, src));
    let mut kind = Operand::Word;
    for op in ops {
        match op {
            "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => return Operand::Number,
            "-v" | "-R" => kind = Operand::Name,
            _ => {}
        }
    }
    kind
}

/// Whether an operand of `-v`/`-R` is a plain number or name (no subscript).
fn plain_name_or_number(t: &str) -> bool {
    let t = t.trim();
    !t.is_empty()
        && (t
            .trim_start_matches(['-', '+'])
            .chars()
            .all(|c| c.is_ascii_digit())
            || (t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !t.starts_with(|c: char| c.is_ascii_digit())))
}
