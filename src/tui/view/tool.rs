//! Drawing a tool call cell: one summary line with a spinner and elapsed time while it runs,
//! the live tail of its output, then a short preview (or the diff of an edit) that can be
//! expanded. A `task` call also lists its subagent's tool calls and shows its answer.

use super::diff::{FileDiff, count_spans};
use crate::protocol::{ToolDisplay, ToolStatus};
use crate::tui::model::tool::{ChildCall, ToolCall};
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap, sanitize};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// Output lines shown while a tool runs.
const LIVE_TAIL: usize = 5;
/// Diff lines shown before `… N more lines`.
const DIFF_PREVIEW: usize = 12;
/// Subagent tool calls listed while it runs.
const CHILD_TAIL: usize = 3;

/// The status icon (a spinner frame while running).
pub fn marker(call: &ToolCall, theme: &Theme, spinner: &str) -> Span<'static> {
    let (icon, color) = match call.status {
        None if call.waiting => ("?".to_string(), theme.warning),
        None => (spinner.to_string(), theme.accent),
        Some(ToolStatus::Ok) => ("✓".to_string(), theme.success),
        Some(ToolStatus::Error) => ("✗".to_string(), theme.error),
        Some(ToolStatus::Blocked) => ("⊘".to_string(), theme.error),
        Some(ToolStatus::Denied) => ("✗".to_string(), theme.warning),
        Some(ToolStatus::Interrupted) => ("■".to_string(), theme.warning),
    };
    Span::styled(icon, Style::new().fg(color).add_modifier(Modifier::BOLD))
}

/// The diff a finished call's cell lays out (the written change, else the refused proposal),
/// highlighted once and kept with the cell's layout; a running call shows none.
pub fn laid_diff(call: &ToolCall, theme: &Theme) -> Option<FileDiff> {
    call.status?;
    let edit = call.shown_edit()?;
    let mut diff = FileDiff::from_edit(&edit.path, &edit.diff, theme);
    diff.origins = edit.origins.clone();
    Some(diff)
}

/// Lays the cell out at `width`; `diff` is [`laid_diff`] of the call.
pub fn layout(
    call: &ToolCall,
    diff: Option<&FileDiff>,
    width: usize,
    now: Instant,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    Laid { call, diff }.layout(width, now, expanded, theme)
}

/// A call and its highlighted diff, while one layout runs.
struct Laid<'a> {
    call: &'a ToolCall,
    diff: Option<&'a FileDiff>,
}

impl Laid<'_> {
    fn preview_lines(&self) -> usize {
        match &self.call.display {
            // What was read or set is the model's business; the header says enough.
            ToolDisplay::Read { .. } | ToolDisplay::Skill { .. } | ToolDisplay::Todos { .. }
                if !self.call.status.is_some_and(ToolStatus::is_error) =>
            {
                0
            }
            _ if self.call.status.is_some_and(ToolStatus::is_error) => 8,
            ToolDisplay::Task { .. } => 6,
            _ => 5,
        }
    }

    fn layout(
        &self,
        width: usize,
        now: Instant,
        expanded: bool,
        theme: &Theme,
    ) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        self.header(theme, now).layout(width, &mut out);
        let bar = Span::styled("│ ", theme.fg(theme.border));
        let status_style = match self.call.status {
            Some(ToolStatus::Blocked | ToolStatus::Error) => theme.fg(theme.error),
            Some(ToolStatus::Denied | ToolStatus::Interrupted) => theme.fg(theme.warning),
            _ => theme.dim(),
        };
        if let Some(desc) = &self.call.subagent {
            RichLine::new(vec![Span::styled(sanitize(desc).into_owned(), theme.dim())])
                .prefixed(vec![bar.clone()], vec![bar.clone()])
                .layout(width, &mut out);
            self.layout_children(width, expanded, theme, &mut out);
        }
        if let (Some(_), Some(ToolStatus::Ok), Some(diff)) =
            (&self.call.diff, self.call.status, self.diff)
        {
            let mut lines = Vec::new();
            diff.layout(width, &mut lines);
            let total = lines.len();
            if !expanded && total > DIFF_PREVIEW {
                lines.truncate(DIFF_PREVIEW);
                out.extend(lines);
                out.push(more_line(total - DIFF_PREVIEW, true, theme));
            } else {
                out.extend(lines);
            }
            return out;
        }
        if let (Some(_), Some(status), Some(proposed)) =
            (&self.call.proposed, self.call.status, self.diff)
            && status != ToolStatus::Ok
            && self.call.diff.is_none()
        {
            self.layout_refused_diff(proposed, width, expanded, theme, &mut out);
        }
        if let (ToolDisplay::Todos { todos }, true) = (&self.call.display, expanded)
            && !self.call.status.is_some_and(ToolStatus::is_error)
        {
            for todo in todos {
                let mut line = super::cell::todo_line(todo, theme, super::cell::STILL);
                line.first.insert(0, bar.clone());
                line.rest.insert(0, bar.clone());
                line.layout(width, &mut out);
            }
            return out;
        }
        self.layout_output(width, expanded, status_style, theme, &mut out);
        out
    }

    /// The call's output under its header: the live tail while it runs, a preview when
    /// folded (a command's last lines, other tools' first), all of it when expanded.
    fn layout_output(
        &self,
        width: usize,
        expanded: bool,
        status_style: Style,
        theme: &Theme,
        out: &mut Vec<Line<'static>>,
    ) {
        let bar = Span::styled("│ ", theme.fg(theme.border));
        let output = self.call.output.trim_end_matches('\n');
        if output.is_empty() {
            return;
        }
        let style = match self.call.status {
            None | Some(ToolStatus::Ok) => theme.dim(),
            _ => status_style,
        };
        let line = |text: &str, wrap: Wrap, out: &mut Vec<Line<'static>>| {
            RichLine::new(vec![Span::styled(sanitize(text).into_owned(), style)])
                .prefixed(vec![bar.clone()], vec![bar.clone()])
                .wrapped(wrap)
                .layout(width, out);
        };
        if self.call.is_running() && !expanded {
            // Only the tail is looked at, so a huge live output costs nothing per frame.
            let mut tail: Vec<&str> = output.rsplitn(LIVE_TAIL + 1, '\n').collect();
            let earlier = if tail.len() > LIVE_TAIL {
                tail.pop().map_or(0, |rest| rest.matches('\n').count() + 1)
            } else {
                0
            } + self.call.dropped_lines();
            tail.reverse();
            if earlier > 0 {
                out.push(Line::from(vec![
                    bar.clone(),
                    Span::styled(self::earlier(earlier), theme.dim()),
                ]));
            }
            for l in tail {
                line(l, Wrap::Cut, out);
            }
            return;
        }
        let (all, spill) = split_spill_note(output);
        if expanded {
            for l in &all {
                line(l, Wrap::Char, out);
            }
            return;
        }
        if let Some(note) = spill {
            out.push(Line::from(vec![
                bar.clone(),
                Span::styled(note, theme.fg(theme.warning)),
            ]));
        }
        // One hidden line takes the row its "… 1 line" marker would.
        let n = match self.preview_lines() {
            n if n + 1 >= all.len() => all.len(),
            n => n,
        };
        if all.len() > n && matches!(self.call.display, ToolDisplay::Exec { .. }) && n > 0 {
            // A command's last lines carry its summary and its errors: show the tail.
            out.push(Line::from(vec![
                bar.clone(),
                Span::styled(earlier(all.len() - n), theme.dim()),
            ]));
            for l in &all[all.len() - n..] {
                line(l, Wrap::Cut, out);
            }
            return;
        }
        for l in &all[..n] {
            line(l, Wrap::Cut, out);
        }
        if all.len() > n {
            out.push(more_line(all.len() - n, n > 0, theme));
        }
    }

    /// A refused edit keeps what it proposed: folded to one line, the diff when expanded.
    fn layout_refused_diff(
        &self,
        proposed: &FileDiff,
        width: usize,
        expanded: bool,
        theme: &Theme,
        out: &mut Vec<Line<'static>>,
    ) {
        if expanded {
            proposed.layout(width, out);
            return;
        }
        let mut spans = vec![Span::styled("▸ proposed change (", theme.dim())];
        spans.extend(proposed.count_spans(theme));
        spans.push(Span::styled(
            "), not written · click or ctrl+o shows it",
            theme.dim(),
        ));
        RichLine::new(spans).wrapped(Wrap::Cut).layout(width, out);
    }

    fn header(&self, theme: &Theme, now: Instant) -> RichLine {
        let label = crate::sanitize::shown(self.call.display.label()).replace('\n', " ");
        let subject = crate::sanitize::shown(&self.call.display.subject()).replace('\n', " ");
        let mut spans = vec![Span::styled(
            label,
            Style::new().add_modifier(Modifier::BOLD),
        )];
        if !subject.is_empty() {
            spans.push(Span::raw(format!("  {subject}")));
        }
        // A refused or failed edit wrote nothing: its folded line names the proposed counts.
        let unwritten = self.call.status.is_some_and(|s| s != ToolStatus::Ok);
        let proposed = self.call.proposed.as_deref().filter(|_| !unwritten);
        if let Some(edit) = self.call.diff.as_deref().or(proposed) {
            spans.push(Span::raw(" ("));
            spans.extend(count_spans(edit.diff.added, edit.diff.removed, theme));
            spans.push(Span::raw(")"));
        }
        if let Some(code) = self.call.exit_code.filter(|c| *c != 0) {
            spans.push(Span::styled(
                format!("  exit {code}"),
                theme.fg(theme.warning),
            ));
        }
        // A call from a resumed session has no recorded duration: none is shown.
        if self.call.waiting && self.call.status.is_none() {
            spans.push(Span::styled("  waiting for you", theme.fg(theme.warning)));
            return RichLine::new(spans).wrapped(Wrap::Word);
        }
        let elapsed = match (self.call.elapsed_ms, self.call.status) {
            (Some(ms), _) => Some(ms),
            (None, None) => {
                Some(now.saturating_duration_since(self.call.started).as_millis() as u64)
            }
            (None, Some(_)) => None,
        };
        let label = match self.call.status {
            Some(ToolStatus::Blocked) => Some(("blocked", theme.error)),
            Some(ToolStatus::Denied) => Some(("denied", theme.warning)),
            Some(ToolStatus::Interrupted) => Some(("interrupted", theme.warning)),
            Some(ToolStatus::Error) => Some(("failed", theme.error)),
            _ => None,
        };
        if let Some((label, color)) = label {
            spans.push(Span::styled(format!("  {label}"), theme.fg(color)));
        }
        if let Some(elapsed) = elapsed
            && !matches!(
                self.call.status,
                Some(ToolStatus::Blocked | ToolStatus::Denied)
            )
        {
            spans.push(Span::styled(
                format!("  {}", format_elapsed(elapsed)),
                theme.dim(),
            ));
        }
        RichLine::new(spans).wrapped(Wrap::Word)
    }

    fn layout_children(
        &self,
        width: usize,
        expanded: bool,
        theme: &Theme,
        out: &mut Vec<Line<'static>>,
    ) {
        let bar = Span::styled("│ ", theme.fg(theme.border));
        let shown: &[ChildCall] = if expanded {
            &self.call.children
        } else if self.call.is_running() {
            &self.call.children[self.call.children.len().saturating_sub(CHILD_TAIL)..]
        } else {
            &[]
        };
        let hidden = self.call.children.len() - shown.len();
        if hidden > 0 {
            let calls = if hidden == 1 {
                "tool call"
            } else {
                "tool calls"
            };
            let what = if self.call.is_running() {
                format!("earlier {calls}")
            } else {
                calls.to_string()
            };
            out.push(Line::from(vec![
                bar.clone(),
                Span::styled(format!("↳ {hidden} {what}"), theme.dim()),
            ]));
        }
        for c in shown {
            let (icon, color) = match c.status {
                None => ("…", theme.accent),
                Some(ToolStatus::Ok) => ("✓", theme.success),
                Some(_) => ("✗", theme.error),
            };
            RichLine::new(vec![
                Span::styled("↳ ", theme.dim()),
                Span::styled(format!("{icon} "), theme.fg(color)),
                Span::styled(sanitize(&c.summary).replace('\n', " "), theme.dim()),
            ])
            .prefixed(vec![bar.clone()], vec![bar.clone()])
            .wrapped(Wrap::Cut)
            .layout(width, out);
        }
    }
}

/// `… 12 earlier lines` above the tail of a command's output.
fn earlier(n: usize) -> String {
    let noun = if n == 1 { "line" } else { "lines" };
    format!("… {n} earlier {noun}")
}

/// The lines of a result without bash's "[... N characters cut; the full output … is saved in
/// PATH …]" marker, and a short note saying so when it was there.
fn split_spill_note(output: &str) -> (Vec<&str>, Option<String>) {
    let mut note = None;
    let mut lines = Vec::new();
    for l in output.split('\n') {
        let marker = l.starts_with("[... ") && l.contains(" characters cut; ");
        if marker && note.is_none() {
            let saved = l
                .split_once("is saved in ")
                .and_then(|(_, rest)| rest.split_once(". Read it").map(|(p, _)| p));
            note = Some(match saved {
                Some(path) => format!("output cut; the full output is saved in {path}"),
                None => "output cut; the full output could not be saved".to_string(),
            });
            continue;
        }
        lines.push(l);
    }
    (lines, note)
}

/// `… 12 more lines` under a preview, `… 200 lines` when nothing is previewed.
fn more_line(n: usize, more: bool, theme: &Theme) -> Line<'static> {
    let noun = if n == 1 { "line" } else { "lines" };
    let more = if more { "more " } else { "" };
    Line::from(Span::styled(format!("… {n} {more}{noun}"), theme.dim()))
}

/// `850ms`, `1.2s`, `2m 03s`.
pub fn format_elapsed(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        let s = ms / 1000;
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::model::cell::FileEdit;
    use std::time::Duration;

    /// The cell's lines, with its diff highlighted as the cell's layout would.
    fn lay(
        c: &ToolCall,
        width: usize,
        now: Instant,
        expanded: bool,
        theme: &Theme,
    ) -> Vec<Line<'static>> {
        let diff = laid_diff(c, theme);
        layout(c, diff.as_ref(), width, now, expanded, theme)
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn exec(command: &str) -> ToolDisplay {
        ToolDisplay::Exec {
            command: command.into(),
        }
    }

    fn cell(now: Instant) -> ToolCall {
        ToolCall::new("c1".into(), exec("cargo test"), now)
    }

    #[test]
    fn running_shows_elapsed_and_the_live_tail() {
        let t0 = Instant::now();
        let mut c = cell(t0);
        c.output = (1..=9).map(|i| format!("out {i}\n")).collect();
        let lines = text(&lay(
            &c,
            40,
            t0 + Duration::from_millis(3_200),
            false,
            &Theme::dark(),
        ));
        assert_eq!(
            lines,
            vec![
                "bash  cargo test  3.2s",
                "│ … 4 earlier lines",
                "│ out 5",
                "│ out 6",
                "│ out 7",
                "│ out 8",
                "│ out 9"
            ]
        );
    }

    #[test]
    fn finished_shows_a_preview_and_expands() {
        let t0 = Instant::now();
        let mut c = cell(t0);
        c.status = Some(ToolStatus::Ok);
        c.elapsed_ms = Some(1_250);
        c.output = (1..=9).map(|i| format!("out {i}\n")).collect();
        let theme = Theme::dark();
        // A command's preview is its tail: the summary and the errors are at the end.
        let short = text(&lay(&c, 40, t0, false, &theme));
        assert_eq!(
            short,
            [
                "bash  cargo test  1.2s",
                "│ … 4 earlier lines",
                "│ out 5",
                "│ out 6",
                "│ out 7",
                "│ out 8",
                "│ out 9"
            ]
        );
        assert_eq!(text(&lay(&c, 40, t0, true, &theme)).len(), 10);
        // Other tools preview their head.
        let mut other = ToolCall::new(
            "o".into(),
            ToolDisplay::Other {
                name: "mcp__q".into(),
                args: serde_json::Value::Null,
            },
            t0,
        );
        other.finish(ToolStatus::Ok, c.output.clone(), 5);
        let short = text(&lay(&other, 40, t0, false, &theme));
        assert_eq!(short[1], "│ out 1");
        assert_eq!(short.last().map(String::as_str), Some("… 4 more lines"));
    }

    #[test]
    fn one_hidden_line_is_shown_instead_of_a_marker() {
        let t0 = Instant::now();
        let theme = Theme::dark();
        let read = ToolDisplay::Read {
            path: "a.rs".into(),
            lines: None,
        };
        let mut c = ToolCall::new("r".into(), read, t0);
        c.finish(ToolStatus::Ok, "just one line".into(), 3);
        assert_eq!(
            text(&lay(&c, 40, t0, false, &theme)),
            ["read  a.rs  3ms", "│ just one line"]
        );
        let mut c = cell(t0);
        c.finish(
            ToolStatus::Ok,
            (1..=6).map(|i| format!("{i}\n")).collect(),
            3,
        );
        let lines = text(&lay(&c, 40, t0, false, &theme));
        assert!(
            !lines.iter().any(|l| l.contains("1 earlier line")),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn a_long_one_line_error_is_cut_with_an_ellipsis() {
        let t0 = Instant::now();
        let mut c = cell(t0);
        c.finish(ToolStatus::Error, format!("Error: {}", "x".repeat(100)), 3);
        let lines = text(&lay(&c, 40, t0, false, &Theme::dark()));
        assert_eq!(lines[1].chars().count(), 40, "{lines:?}");
        assert!(lines[1].ends_with('…'), "{lines:?}");
    }

    #[test]
    fn a_cut_and_saved_output_says_where_the_rest_is() {
        let t0 = Instant::now();
        let mut c = cell(t0);
        let out = "head 1\n[... 5000 characters cut; the full output (9000 bytes) is saved in \
                   /tmp/rein-x/out.txt. Read it with read_file (offset) or grep.]\ntail 1\ntail 2";
        c.finish(ToolStatus::Ok, out.into(), 3);
        let lines = text(&lay(&c, 80, t0, false, &Theme::dark()));
        assert_eq!(
            lines[1],
            "│ output cut; the full output is saved in /tmp/rein-x/out.txt"
        );
        assert!(
            !lines.iter().any(|l| l.contains("characters cut")),
            "{lines:?}"
        );
        assert_eq!(lines.last().map(String::as_str), Some("│ tail 2"));
    }

    #[test]
    fn a_call_waiting_for_an_answer_says_so_and_is_timed_from_the_answer() {
        let t0 = Instant::now();
        let theme = Theme::dark();
        let mut c = cell(t0);
        c.waiting = true;
        let later = t0 + Duration::from_secs(30);
        assert_eq!(
            text(&lay(&c, 60, later, false, &theme))[0],
            "bash  cargo test  waiting for you"
        );
        assert_eq!(marker(&c, &theme, "⠋").content, "?");
        c.answered(later);
        assert_eq!(
            text(&lay(
                &c,
                60,
                later + Duration::from_millis(200),
                false,
                &theme
            ))[0],
            "bash  cargo test  200ms"
        );
    }

    #[test]
    fn a_refused_edit_keeps_its_diff_folded() {
        let t0 = Instant::now();
        let theme = Theme::dark();
        let diff = crate::protocol::EditDiff::between(Some("a\nb\n"), "a\nB\n");
        let display = ToolDisplay::Edit {
            path: "x.txt".into(),
            diff: Some(diff.clone()),
        };
        let mut c = ToolCall::new("e".into(), display, t0);
        c.proposed = Some(Box::new(FileEdit::new("x.txt", diff.clone())));
        c.finish(
            ToolStatus::Denied,
            "The user denied this tool call.".into(),
            0,
        );
        let folded = text(&lay(&c, 80, t0, false, &theme));
        // The count is given once, on the line that says it was not written.
        assert_eq!(folded[0], "edit  x.txt  denied");
        assert!(
            folded[1].contains("proposed change (+1 −1), not written"),
            "{folded:?}"
        );
        let open = text(&lay(&c, 80, t0, true, &theme));
        assert!(open.iter().any(|l| l.contains("+ B")), "{open:?}");
        assert!(open.iter().any(|l| l.contains("- b")), "{open:?}");
    }

    #[test]
    fn todos_expand_with_the_panel_markers() {
        let t0 = Instant::now();
        let theme = Theme::dark();
        let todo = |content: &str, status| crate::protocol::Todo {
            content: content.into(),
            active_form: String::new(),
            status,
        };
        let display = ToolDisplay::Todos {
            todos: vec![
                todo("Write it", crate::protocol::TodoStatus::Completed),
                todo("Test it", crate::protocol::TodoStatus::InProgress),
                todo("Ship it", crate::protocol::TodoStatus::Pending),
            ],
        };
        let mut c = ToolCall::new("t".into(), display, t0);
        c.finish(
            ToolStatus::Ok,
            "[x] Write it\n[~] Test it\n[ ] Ship it".into(),
            1,
        );
        let open = text(&lay(&c, 60, t0, true, &theme));
        assert_eq!(
            &open[1..],
            ["│ ☑ Write it", "│ ▸ Test it", "│ ☐ Ship it"],
            "no activeForm: the content is shown"
        );
    }

    #[test]
    fn one_subagent_call_is_one_tool_call() {
        let t0 = Instant::now();
        let mut c = ToolCall::new(
            "t".into(),
            ToolDisplay::Task {
                description: "look".into(),
            },
            t0,
        );
        c.subagent = Some("look".into());
        c.children.push(ChildCall {
            call_id: "x".into(),
            summary: "read  a".into(),
            status: Some(ToolStatus::Ok),
            command: false,
        });
        c.finish(ToolStatus::Ok, "found".into(), 1);
        let lines = text(&lay(&c, 60, t0, false, &Theme::dark()));
        assert!(lines.contains(&"│ ↳ 1 tool call".to_string()), "{lines:?}");
    }

    #[test]
    fn blocked_and_denied_say_so() {
        let t0 = Instant::now();
        let mut c = cell(t0);
        c.status = Some(ToolStatus::Blocked);
        c.output = "Blocked by rule deny bash(rm *).".into();
        let lines = text(&lay(&c, 60, t0, false, &Theme::dark()));
        assert_eq!(
            lines,
            vec![
                "bash  cargo test  blocked",
                "│ Blocked by rule deny bash(rm *)."
            ]
        );
        assert_eq!(format_elapsed(125_000), "2m 05s");
    }

    #[test]
    fn the_header_is_rendered_from_the_display() {
        let t0 = Instant::now();
        let theme = Theme::dark();
        let header = |display: ToolDisplay, exit_code: Option<i32>| {
            let mut c = ToolCall::new("c".into(), display, t0);
            c.status = Some(ToolStatus::Ok);
            c.elapsed_ms = Some(10);
            c.exit_code = exit_code;
            text(&lay(&c, 60, t0, false, &theme)).remove(0)
        };
        let read = ToolDisplay::Read {
            path: "src/main.rs".into(),
            lines: None,
        };
        let other = ToolDisplay::Other {
            name: "mcp__find".into(),
            args: serde_json::json!({"q": "x"}),
        };
        let cases = [
            (exec("cargo test -q"), None, "bash  cargo test -q  10ms"),
            (exec("bash run.sh"), None, "bash  bash run.sh  10ms"),
            (exec("false"), Some(1), "bash  false  exit 1  10ms"),
            (exec("true"), Some(0), "bash  true  10ms"),
            (read, None, "read  src/main.rs  10ms"),
            (other, None, "mcp__find  {\"q\":\"x\"}  10ms"),
        ];
        for (display, code, want) in cases {
            assert_eq!(header(display, code), want);
        }
    }
}
