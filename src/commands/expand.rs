//! Filling a command in: arguments, `allowed-tools` as rules, the `/init` prompt.

use std::collections::HashMap;

/// The `/init` prompt.
const INIT_PROMPT: &str = include_str!("../../assets/init.md");

/// Splits arguments like a shell would for words: spaces separate, quotes group.
pub fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Fills in `$ARGUMENTS` (the whole argument text), `$1`…`$9` (the words) and `$NAME` (from
/// `NAME=value` words, Codex's named arguments; a `$NAME` no word names stays as written, so a
/// shell snippet's `$HOME` survives). `$$` is a literal `$` in Codex prompts (`codex`). When the
/// body has no placeholder at all, the arguments are appended (`ARGUMENTS: …`, as Claude Code
/// does), so they never get lost.
pub fn substitute(body: &str, args: &str, codex: bool) -> String {
    let args = args.trim();
    let words = split_args(args);
    let named: HashMap<&str, &str> = words
        .iter()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| is_placeholder_name(k))
        .collect();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if codex && after.starts_with('$') {
            out.push('$');
            rest = &after[1..];
            continue;
        }
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let mut chars = after.chars();
        if let Some(d) = chars
            .next()
            .and_then(|c| c.to_digit(10))
            .filter(|d| *d >= 1)
        {
            out.push_str(words.get(d as usize - 1).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
            continue;
        }
        let len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        let key = &after[..len];
        if let Some(value) = named.get(key).filter(|_| is_placeholder_name(key)) {
            out.push_str(value);
            used = true;
            rest = &after[len..];
            continue;
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

/// `FILE`, `TICKET_ID`: an upper-case placeholder name.
fn is_placeholder_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `allowed-tools` entries as bash patterns rein's policy understands: `Bash(git add:*)` is
/// `git add *`, `Bash(npm test)` is `npm test`. Other entries (rein asks for file tools by
/// path and the mode decides edits) are returned apart so the person hears they do nothing.
pub(super) fn bash_patterns(tools: &[String]) -> (Vec<String>, Vec<String>) {
    let mut patterns = Vec::new();
    let mut other = Vec::new();
    for t in tools {
        let inner = t
            .strip_prefix("Bash(")
            .and_then(|r| r.strip_suffix(')'))
            .map(str::trim);
        match inner {
            Some(p) if !p.is_empty() && p != "*" && p != ":*" => {
                let p = match p.strip_suffix(":*") {
                    Some(prefix) => format!("{} *", prefix.trim_end()),
                    None => p.to_string(),
                };
                patterns.push(p);
            }
            _ => other.push(t.clone()),
        }
    }
    (patterns, other)
}

/// The `/init` prompt; `existing` when the workspace has an `AGENTS.md` already.
pub fn init_prompt(existing: bool, args: &str) -> String {
    let mut text = INIT_PROMPT.trim_end().to_string();
    if existing {
        text.push_str(
            "\n\nAGENTS.md exists already: read it first, keep what is still right, and improve \
             it with str_replace (or write_file for the whole file) rather than starting over.",
        );
    } else {
        text.push_str("\n\nThere is no AGENTS.md yet: create it with write_file.");
    }
    if !args.trim().is_empty() {
        text.push_str(&format!("\n\nAlso: {}", args.trim()));
    }
    text
}
