//! What makes a word not plain data: substitutions, expansions that run code, secrets; and
//! the values the line assigns to variables, which those checks look through.

use super::words::{DynKind, Word};
use super::{Walker, braces, field_nodes, node_text, scan, words};
use tree_sitter::Node;

impl Walker {
    /// Records the values assigned to variables anywhere in the script, so that a `"$f"`
    /// used before the assignment is read (in a function, a loop) is still known.
    pub(super) fn collect_vars(&mut self, root: Node, src: &str) {
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
                                braces::expand_braces(Word::from_node(v, src)).unwrap_or_default()
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

    /// Why a word is not plain data, if it is not: a substitution, an expansion with an
    /// operator, arithmetic with names, or a variable that may hold a secret.
    pub(super) fn word_doubt(&self, w: &Word) -> Option<String> {
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
    pub(super) fn may_run_unseen(&self, why: &str) {
        self.unseen
            .borrow_mut()
            .get_or_insert_with(|| why.to_string());
    }

    /// Why `w` names a secret location (also from any directory `cd` went to), if it does.
    pub(super) fn secret_doubt(&self, w: &Word) -> Option<String> {
        for v in w.substitute(&|name| self.vars.get(name).cloned()) {
            if let Some(r) = crate::policy::secrets::names_secret(&v) {
                return Some(r);
            }
            let relative = !v.text().starts_with(['/', '~', '$']);
            for dir in self.dirs.iter().filter(|_| relative) {
                let mut joined = dir.clone();
                joined.push_char('/', true);
                joined.toks.extend(v.toks.iter().cloned());
                if let Some(r) = crate::policy::secrets::names_secret(&joined) {
                    return Some(r);
                }
            }
        }
        None
    }
}

impl Walker {
    /// Why `w` names a terminal or another device (also from a directory `cd` went to), if
    /// it may: reading one reads what the person types, and is never harmless.
    pub(super) fn device_doubt(&self, w: &Word) -> Option<String> {
        for v in w.substitute(&|name| self.vars.get(name).cloned()) {
            let relative = !v.text().starts_with(['/', '~', '$']);
            let mut variants = vec![v.clone()];
            for dir in self.dirs.iter().filter(|_| relative) {
                let mut joined = dir.clone();
                joined.push_char('/', true);
                joined.toks.extend(v.toks.iter().cloned());
                variants.push(joined);
            }
            for v in variants {
                let named = match v.literal() {
                    Some(t) => device_candidates(&t).into_iter().any(|c| is_device(&c)),
                    None => DEVICE_SAMPLES.iter().any(|s| v.could_be(s)),
                };
                if named {
                    return Some(format!(
                        "`{}` may be a terminal or another device",
                        w.text()
                    ));
                }
            }
        }
        None
    }
}

/// Device files reading which is harmless: no terminal, no hardware, nothing of the person's.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    // bash's standard descriptors: its input is /dev/null, its outputs are pipes.
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// Paths a pattern is tried against: terminals and descriptors that may be one.
const DEVICE_SAMPLES: &[&str] = &[
    "/dev/pts/0",
    "/dev/tty",
    "/dev/tty1",
    "/dev/ttyS0",
    "/dev/console",
    "/dev/ptmx",
    "/dev/fd/3",
    "/proc/self/fd/0",
    "/proc/1/task/1/fd/0",
];

/// The paths a literal word may name: itself, and the value of `--opt=PATH` or `-oPATH`.
fn device_candidates(t: &str) -> Vec<String> {
    let mut out = vec![t.to_string()];
    if let Some((_, v)) = t.split_once('=') {
        out.push(v.to_string());
    }
    if t.starts_with('-') && !t.starts_with("--") && t.len() > 2 {
        out.extend(t.char_indices().skip(2).map(|(i, _)| t[i..].to_string()));
    }
    out.into_iter()
        .filter(|c| c.contains("dev") || c.contains("proc"))
        .collect()
}

/// Whether path `p` is a device other than a harmless one, or a descriptor under `/proc`.
/// `.`, `..` and repeated slashes are resolved; a relative path that climbs out of the
/// working directory may reach `/dev`.
fn is_device(p: &str) -> bool {
    let mut parts: Vec<&str> = Vec::new();
    let mut climbs = false;
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." if parts.is_empty() => climbs = true,
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if !p.starts_with('/') && !climbs {
        return false;
    }
    let path = format!("/{}", parts.join("/"));
    match parts.as_slice() {
        ["dev", _, ..] => !HARMLESS_DEVICES.contains(&path.as_str()),
        ["proc", _, "fd", _, ..] | ["proc", _, "task", _, "fd", _, ..] => true,
        _ => false,
    }
}

/// Variable names that usually hold secrets (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`): the
/// sandbox's list, so what is masked in results is never printed unasked either.
fn secret_var(name: &str) -> bool {
    crate::sandbox::may_hold_secret(name)
}
