//! Why an `old_str` was not found: a whitespace-only difference, or the closest line.

use crate::tools::files::numbered;
use std::collections::HashSet;

/// Lines of a file compared when looking for the closest line (bounds the cost on huge files).
const MAX_CANDIDATES: usize = 20_000;
/// Characters of a line quoted in a hint.
const QUOTE_CHARS: usize = 160;
/// Lines of a whitespace-equal block shown in a hint.
const SHOW_LINES: usize = 12;

/// Collapses every run of whitespace to one space and trims the ends.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line shortened for quoting.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

/// Explains why `needle` does not occur in `content`, pointing at what the model probably
/// meant. The text starts with a space so it can follow the "not found" sentence.
pub(super) fn not_found(content: &str, needle: &str) -> String {
    let file_lines: Vec<&str> = content.lines().collect();
    let wanted: Vec<String> = needle.lines().map(squash).collect();
    let first = wanted.iter().position(|l| !l.is_empty());
    let last = wanted.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return " old_str is only whitespace; include the text around the place you want to change."
            .into();
    };
    let wanted = &wanted[first..=last];

    // The same lines with different whitespace: indentation, tabs, trailing spaces, CRLF.
    let squashed: Vec<String> = file_lines.iter().map(|l| squash(l)).collect();
    if let Some(start) = squashed.windows(wanted.len()).position(|w| w == wanted) {
        let end = start + wanted.len();
        let shown = &file_lines[start..end.min(start + SHOW_LINES)];
        let more = if end - start > SHOW_LINES {
            "\n..."
        } else {
            ""
        };
        return format!(
            " It does match lines {}-{} when whitespace is ignored, so only whitespace differs \
             (indentation, tabs vs spaces, trailing spaces or line endings). The file has:\n{}{more}\n\
             Copy old_str exactly from these lines (without the line numbers).",
            start + 1,
            end,
            numbered(start + 1, shown.iter().copied())
        );
    }

    // Find the first line of old_str that is not in the file and the file line closest to it.
    let present: HashSet<&str> = squashed.iter().map(String::as_str).collect();
    let Some(missing) = wanted
        .iter()
        .find(|l| !l.is_empty() && !present.contains(l.as_str()))
    else {
        let at = squashed
            .iter()
            .position(|l| *l == wanted[0])
            .map_or(1, |i| i + 1);
        return format!(
            " Every line of old_str is in the file, but not together in this order (the first \
             one is at line {at}). Read that part of the file again and copy the block exactly."
        );
    };
    let candidates: Vec<(usize, &str)> = squashed
        .iter()
        .enumerate()
        .take(MAX_CANDIDATES)
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, l.as_str()))
        .collect();
    let texts: Vec<&str> = candidates.iter().map(|(_, l)| *l).collect();
    let best = similar::get_close_matches(missing.as_str(), &texts, 1, 0.6);
    let closest = best.first().and_then(|b| {
        let idx = texts.iter().position(|t| std::ptr::eq(*t, *b))?;
        Some(candidates[idx].0)
    });
    match closest {
        Some(i) => format!(
            " The closest line to `{}` is line {}: `{}`. Read the file around there and copy \
             old_str exactly.",
            quote(missing),
            i + 1,
            quote(file_lines[i].trim())
        ),
        None => format!(
            " Nothing in the file resembles `{}`. Read the file again (read_file) and copy \
             old_str exactly.",
            quote(missing)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_only_difference() {
        let content = "fn main() {\n\tlet x = 1;\n\tprintln!(\"{x}\");\n}\n";
        let hint = not_found(content, "    let x = 1;\n    println!(\"{x}\");");
        assert!(
            hint.starts_with(" It does match lines 2-3 when whitespace is ignored"),
            "{hint}"
        );
        assert!(
            hint.contains("     2\t\tlet x = 1;\n     3\t\tprintln!"),
            "{hint}"
        );
    }

    #[test]
    fn closest_line_is_named() {
        let content = "alpha\nlet total = price * quantity;\nomega\n";
        let hint = not_found(content, "let total = price * qty;");
        assert_eq!(
            hint,
            " The closest line to `let total = price * qty;` is line 2: `let total = price * \
             quantity;`. Read the file around there and copy old_str exactly."
        );
    }

    #[test]
    fn closest_line_for_the_first_missing_line_of_a_block() {
        let content = "a();\nb();\nc();\nfn helper(x: u32) -> u32 {\n";
        let hint = not_found(content, "a();\nfn helper(x: u64) -> u32 {");
        assert!(
            hint.contains("`fn helper(x: u64) -> u32 {` is line 4"),
            "{hint}"
        );
    }

    #[test]
    fn lines_present_but_not_together() {
        let hint = not_found("one\ntwo\nthree\n", "three\none");
        assert!(
            hint.contains("not together in this order (the first one is at line 3)"),
            "{hint}"
        );
    }

    #[test]
    fn nothing_similar() {
        let hint = not_found("abc\n", "completely different text");
        assert!(
            hint.starts_with(" Nothing in the file resembles `completely different text`."),
            "{hint}"
        );
    }

    #[test]
    fn whitespace_only_needle() {
        assert!(not_found("abc\n", "  \n ").contains("only whitespace"));
    }
}
