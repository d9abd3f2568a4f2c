//! Unified diffs (similar): 3 lines of context, line numbers, +/− colours, and the content
//! syntax-highlighted by the file's extension.

use super::highlight;
use crate::protocol::EditDiff;
use crate::sanitize::shown;
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Beyond this many lines a diff is shown without syntax colours (highlighting is slow).
const MAX_HIGHLIGHTED: usize = 2_000;

/// A file's diff, computed once and laid out per width.
#[derive(Clone, Debug, PartialEq)]
pub struct FileDiff {
    /// The file.
    pub path: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Whether the file is new.
    pub created: bool,
    /// The diff lines (gutter + content).
    pub lines: Vec<RichLine>,
    /// What changed the file (`/diff` names each call under the header).
    pub origins: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Same,
    Add,
    Del,
}

impl FileDiff {
    /// Diffs `old` (None: the file is new) against `new`.
    pub fn new(path: &str, old: Option<&str>, new: &str, theme: &Theme) -> FileDiff {
        FileDiff::from_edit(path, &EditDiff::between(old, new), theme)
    }

    /// Lays out a diff computed by the agent (an approval, a resumed edit).
    pub fn from_edit(path: &str, edit: &EditDiff, theme: &Theme) -> FileDiff {
        let (rows, hunk_starts) = numbered_rows(edit);
        let created = edit.created;
        let max_no = rows
            .iter()
            .filter_map(|(_, o, n, _)| o.max(n).map(|x| x + 1))
            .max()
            .unwrap_or(1);
        let num_w = max_no.to_string().len();
        let highlighted = if rows.len() <= MAX_HIGHLIGHTED {
            highlight_hunks(path, &rows, &hunk_starts, &theme.syntax_theme)
        } else {
            None
        };
        let mut lines = Vec::with_capacity(rows.len() + hunk_starts.len());
        for (i, (kind, old_no, new_no, text)) in rows.iter().enumerate() {
            if i > 0 && hunk_starts.contains(&i) {
                lines.push(RichLine::new(vec![Span::styled(
                    format!("{:>w$} ⋮", "", w = num_w * 2),
                    theme.dim(),
                )]));
            }
            let (sign, fg, bg) = match kind {
                Kind::Same => (" ", theme.dim, None),
                Kind::Add => ("+", theme.diff_add, Some(theme.diff_add_bg)),
                Kind::Del => ("-", theme.diff_del, Some(theme.diff_del_bg)),
            };
            let no = |n: &Option<usize>| n.map_or(String::new(), |n| (n + 1).to_string());
            let gutter_style = Style::new().fg(fg);
            // A new file has no old line numbers: one column is enough.
            let numbers = if created {
                format!("{:>w$} ", no(new_no), w = num_w)
            } else {
                format!("{:>w$} {:>w$} ", no(old_no), no(new_no), w = num_w)
            };
            let mut gutter = vec![Span::styled(numbers, theme.dim())];
            let sign_style = match kind {
                Kind::Same => gutter_style,
                _ => gutter_style.add_modifier(Modifier::BOLD),
            };
            gutter.push(Span::styled(format!("{sign} "), with_bg(sign_style, bg)));
            let cols = if created { num_w + 3 } else { num_w * 2 + 4 };
            let rest = vec![Span::raw(" ".repeat(cols))];
            let mut spans = match highlighted.as_ref().and_then(|h| h.get(i)) {
                Some(spans) => spans.clone(),
                None => {
                    let style = match kind {
                        Kind::Same => theme.text(),
                        _ => Style::new().fg(fg),
                    };
                    vec![Span::styled(text.clone(), style)]
                }
            };
            for s in &mut spans {
                s.style = with_bg(s.style, bg);
            }
            lines.push(
                RichLine::new(spans)
                    .prefixed(gutter, rest)
                    .wrapped(Wrap::Char),
            );
        }
        FileDiff {
            path: path.to_string(),
            added: edit.added,
            removed: edit.removed,
            created,
            lines,
            origins: Vec::new(),
        }
    }

    /// `+N −M` for summaries.
    pub fn counts(&self) -> String {
        format!("+{} −{}", self.added, self.removed)
    }

    /// `+N −M` as coloured spans (headers of edit cells and of `/diff`).
    pub fn count_spans(&self, theme: &Theme) -> Vec<Span<'static>> {
        count_spans(self.added, self.removed, theme)
    }

    /// A header line: the path and the counts.
    pub fn header(&self, theme: &Theme) -> RichLine {
        let mut spans = vec![Span::styled(
            self.path.clone(),
            Style::new().add_modifier(Modifier::BOLD),
        )];
        spans.push(Span::raw(" "));
        spans.extend(self.count_spans(theme));
        if self.created {
            spans.push(Span::styled(" (new file)", theme.dim()));
        }
        if self.added == 0 && self.removed == 0 {
            spans.push(Span::styled(" (no changes)", theme.dim()));
        }
        RichLine::new(spans)
    }

    /// Lays the diff out at `width`.
    pub fn layout(&self, width: usize, out: &mut Vec<Line<'static>>) {
        crate::tui::wrap::layout_all(&self.lines, width, out);
    }
}

/// `+N −M` as coloured spans, from the counts alone (a header needs no laid-out diff).
pub fn count_spans(added: usize, removed: usize, theme: &Theme) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("+{added}"), theme.fg(theme.diff_add)),
        Span::raw(" "),
        Span::styled(format!("−{removed}"), theme.fg(theme.diff_del)),
    ]
}

fn with_bg(style: Style, bg: Option<ratatui::style::Color>) -> Style {
    match bg {
        Some(ratatui::style::Color::Reset) | None => style,
        Some(c) => style.bg(c),
    }
}

/// One line of an edit: its kind, old and new line numbers, and text.
type Row = (Kind, Option<usize>, Option<usize>, String);

/// The edit's lines with their kind and old and new line numbers, and where each hunk
/// starts among them.
fn numbered_rows(edit: &EditDiff) -> (Vec<Row>, Vec<usize>) {
    let mut rows = Vec::new();
    let mut hunk_starts = Vec::new();
    for hunk in &edit.hunks {
        hunk_starts.push(rows.len());
        let (mut old_no, mut new_no) = (hunk.old_start - 1, hunk.new_start - 1);
        for line in &hunk.lines {
            let (kind, text) = match line.split_at_checked(1) {
                Some(("+", text)) => (Kind::Add, text),
                Some(("-", text)) => (Kind::Del, text),
                Some((_, text)) => (Kind::Same, text),
                None => (Kind::Same, ""),
            };
            let (o, n) = match kind {
                Kind::Same => (Some(old_no), Some(new_no)),
                Kind::Add => (None, Some(new_no)),
                Kind::Del => (Some(old_no), None),
            };
            old_no += usize::from(o.is_some());
            new_no += usize::from(n.is_some());
            rows.push((kind, o, n, shown(text).into_owned()));
        }
    }
    (rows, hunk_starts)
}

/// Highlights each hunk as one run of code so multi-line constructs keep their colours.
fn highlight_hunks(
    path: &str,
    rows: &[Row],
    starts: &[usize],
    theme: &str,
) -> Option<Vec<Vec<Span<'static>>>> {
    let mut out = Vec::with_capacity(rows.len());
    for (h, start) in starts.iter().enumerate() {
        let end = starts.get(h + 1).copied().unwrap_or(rows.len());
        let lines = rows[*start..end].iter().map(|r| r.3.as_str());
        out.extend(highlight::highlight_path_lines(path, lines, theme)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: &FileDiff, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        d.layout(width, &mut out);
        out.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn changes_show_numbers_signs_and_three_lines_of_context() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\nline 10b\n");
        let d = FileDiff::new("notes.txt", Some(&old), &new, &Theme::dark());
        assert_eq!((d.added, d.removed), (2, 1));
        assert_eq!(
            text(&d, 60),
            vec![
                " 7  7   line 7",
                " 8  8   line 8",
                " 9  9   line 9",
                "10    - line 10",
                "   10 + line ten",
                "   11 + line 10b",
                "11 12   line 11",
                "12 13   line 12",
                "13 14   line 13",
            ]
        );
        assert_eq!(d.counts(), "+2 −1");
    }

    #[test]
    fn separate_hunks_get_a_separator_and_new_files_are_all_additions() {
        let old: String = (1..=30).map(|i| format!("{i}\n")).collect();
        let new = old
            .replace("2\n", "two\n")
            .replace("28\n", "twenty-eight\n");
        let d = FileDiff::new("a.txt", Some(&old), &new, &Theme::dark());
        assert!(text(&d, 60).iter().any(|l| l.trim() == "⋮"));

        let d = FileDiff::new("src/new.rs", None, "fn a() {}\nfn b() {}\n", &Theme::dark());
        assert!(d.created);
        assert_eq!((d.added, d.removed), (2, 0));
        assert_eq!(text(&d, 60), vec!["1 + fn a() {}", "2 + fn b() {}"]);
        // Rust is highlighted: more than one colour in a line.
        let colours: std::collections::HashSet<_> =
            d.lines[0].spans.iter().filter_map(|s| s.style.fg).collect();
        assert!(colours.len() >= 2, "{:?}", d.lines[0]);
    }

    #[test]
    fn long_lines_wrap_under_the_gutter() {
        let d = FileDiff::new("a.txt", None, &"x".repeat(30), &Theme::dark());
        assert_eq!(
            text(&d, 20),
            vec!["1 + xxxxxxxxxxxxxxxx", "    xxxxxxxxxxxxxx"]
        );
    }
}
