//! The approval modal: what would run (a highlighted command, or the diff of an edit), why
//! rein asks, and the keys to answer.

use super::diff::FileDiff;
use super::highlight;
use crate::protocol::{ApprovalRequest, ToolDisplay};
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap, sanitize, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Widget};

/// View state of the modal for the request in front of the queue.
#[derive(Debug, Default)]
pub struct ApprovalView {
    /// The note typed after Tab.
    pub note: String,
    /// Whether keys go to the note.
    pub editing_note: bool,
    /// First body row shown.
    pub scroll: usize,
    /// Body rows that fit in the last frame (for paging).
    pub body_rows: usize,
    /// Body rows in all in the last frame (to clamp scrolling).
    pub body_total: usize,
    cache: Option<(String, Vec<RichLine>, String)>,
}

impl ApprovalView {
    /// Resets for the next request.
    pub fn reset(&mut self) {
        *self = ApprovalView::default();
    }

    /// Scrolls the body.
    pub fn scroll_by(&mut self, n: i64) {
        let max = self.body_total.saturating_sub(self.body_rows);
        let next = (self.scroll as i64).saturating_add(n).max(0) as usize;
        self.scroll = next.min(max);
    }

    fn body(&mut self, req: &ApprovalRequest, theme: &Theme) -> (&[RichLine], &str) {
        let fresh = matches!(&self.cache, Some((id, _, _)) if *id == req.id);
        if !fresh {
            let (lines, title) = build_body(req, theme);
            self.cache = Some((req.id.clone(), lines, title));
        }
        match &self.cache {
            Some((_, lines, title)) => (lines, title),
            None => (&[], ""),
        }
    }
}

fn build_body(req: &ApprovalRequest, theme: &Theme) -> (Vec<RichLine>, String) {
    let label = sanitize(req.display.label()).into_owned();
    match &req.display {
        ToolDisplay::Exec { command } => {
            let command = sanitize(command);
            let mut lines = Vec::new();
            for (i, spans) in highlight::highlight_shell(&command, &theme.syntax_theme)
                .into_iter()
                .enumerate()
            {
                let spans = mark(spans, &req.part);
                let first = if i == 0 { "$ " } else { "  " };
                lines.push(
                    RichLine::new(spans)
                        .prefixed(
                            vec![Span::styled(first, theme.dim())],
                            vec![Span::raw("  ")],
                        )
                        .wrapped(Wrap::Char),
                );
            }
            (lines, format!("Allow {label}?"))
        }
        ToolDisplay::Edit { path, diff } => {
            let Some(diff) = diff else {
                let note = "(not a text file: its whole content is replaced)";
                return (
                    vec![RichLine::new(vec![Span::styled(note, theme.dim())])],
                    format!("Allow {label} {}?", sanitize(path)),
                );
            };
            let diff = FileDiff::from_edit(path, diff, theme);
            let title = format!("Allow {label} {}? {}", sanitize(path), diff.counts());
            let mut lines = diff.lines;
            if lines.is_empty() {
                lines.push(RichLine::new(vec![Span::styled(
                    "(no changes)",
                    theme.dim(),
                )]));
            }
            (lines, title)
        }
        ToolDisplay::Read { path, .. } => (
            vec![RichLine::new(vec![
                Span::styled("read ", theme.dim()),
                Span::styled(
                    sanitize(path).into_owned(),
                    Style::new().add_modifier(Modifier::BOLD),
                ),
            ])],
            format!("Allow {label} outside the workspace?"),
        ),
        ToolDisplay::Other { args, .. } => {
            let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
            let mut lines: Vec<RichLine> = pretty
                .lines()
                .map(|l| {
                    RichLine::new(vec![Span::raw(sanitize(l).into_owned())]).wrapped(Wrap::Char)
                })
                .collect();
            match req.display.mcp_parts() {
                Some((server, tool)) => {
                    lines.insert(0, mcp_header(server, tool, theme));
                    let (server, tool) = (sanitize(server), sanitize(tool));
                    (lines, format!("Allow MCP tool {tool} of {server}?"))
                }
                None => (lines, format!("Allow {label}?")),
            }
        }
        other => (
            vec![RichLine::new(vec![Span::raw(
                sanitize(&other.subject()).into_owned(),
            )])],
            format!("Allow {label}?"),
        ),
    }
}

/// `server NAME  tool NAME`: which server a call goes to, above its arguments.
fn mcp_header(server: &str, tool: &str, theme: &Theme) -> RichLine {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    RichLine::new(vec![
        Span::styled("server ", theme.dim()),
        Span::styled(sanitize(server).into_owned(), bold),
        Span::styled("  tool ", theme.dim()),
        Span::styled(sanitize(tool).into_owned(), bold),
    ])
}

/// Underlines the first occurrence of `part` so the person sees what triggered the question.
fn mark(spans: Vec<Span<'static>>, part: &str) -> Vec<Span<'static>> {
    let part = part.trim();
    if part.is_empty() {
        return spans;
    }
    let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
    let Some(start) = text.find(part) else {
        return spans;
    };
    let end = start + part.len();
    let mut out = Vec::with_capacity(spans.len() + 2);
    let mut pos = 0;
    for span in spans {
        let s_start = pos;
        let s_end = pos + span.content.len();
        pos = s_end;
        if s_end <= start || s_start >= end {
            out.push(span);
            continue;
        }
        let a = start.max(s_start) - s_start;
        let b = end.min(s_end) - s_start;
        let content = span.content.as_ref();
        if a > 0 {
            out.push(Span::styled(content[..a].to_string(), span.style));
        }
        out.push(Span::styled(
            content[a..b].to_string(),
            span.style
                .add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
        ));
        if b < content.len() {
            out.push(Span::styled(content[b..].to_string(), span.style));
        }
    }
    out
}

/// Draws the modal for `req` (`pos` of `total` pending) centred in `area`.
pub fn render(
    req: &ApprovalRequest,
    pos: usize,
    total: usize,
    view: &mut ApprovalView,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) {
    let width = area.width.saturating_sub(4).min(110);
    let max_height = area.height.saturating_sub(2);
    if width < 10 || max_height < 6 {
        return;
    }
    let inner_w = usize::from(width - 4);
    let (body, title) = view.body(req, theme);
    let title = title.to_string();
    let mut body_lines = Vec::new();
    crate::tui::wrap::layout_all(body, inner_w, &mut body_lines);

    let footer = footer_lines(req, view, theme, inner_w);
    let chrome = 2 + footer.len() + 1;
    let body_room = usize::from(max_height).saturating_sub(chrome).max(1);
    let body_rows = body_lines.len().min(body_room);
    view.body_rows = body_rows;
    view.body_total = body_lines.len();
    view.scroll = view.scroll.min(body_lines.len().saturating_sub(body_rows));
    let height = (chrome + body_rows) as u16;
    let x = area.x + (area.width - width) / 2;
    let y = area.y + (area.height.saturating_sub(height)) / 2;
    let rect = Rect::new(x, y, width, height.min(area.height));
    Clear.render(rect, buf);

    let mut title_spans = vec![Span::styled(
        format!(" {} ", truncate(&title, inner_w.saturating_sub(12))),
        Style::new().fg(theme.accent).add_modifier(Modifier::BOLD),
    )];
    if let Some(sub) = &req.subagent {
        title_spans.push(Span::styled(
            format!("· subagent: {} ", truncate(&sanitize(sub), 30)),
            theme.fg(theme.warning),
        ));
    }
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(theme.fg(theme.accent))
        .title(Line::from(title_spans));
    if total > 1 {
        block = block.title_top(Line::from(format!(" {pos} of {total} ")).right_aligned());
    }
    if body_lines.len() > body_rows {
        let end = (view.scroll + body_rows).min(body_lines.len());
        block = block.title_bottom(
            Line::styled(
                format!(
                    " {}-{} of {} lines · ↑↓ scroll ",
                    view.scroll + 1,
                    end,
                    body_lines.len()
                ),
                theme.dim(),
            )
            .right_aligned(),
        );
    }
    let inner = block.inner(rect);
    block.render(rect, buf);
    // One column of padding inside the border.
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );

    let mut row = inner.y;
    for line in body_lines.iter().skip(view.scroll).take(body_rows) {
        buf.set_line(inner.x, row, line, inner.width);
        row += 1;
    }
    row += 1;
    for line in &footer {
        if row >= inner.y + inner.height {
            break;
        }
        buf.set_line(inner.x, row, line, inner.width);
        row += 1;
    }
}

fn footer_lines(
    req: &ApprovalRequest,
    view: &ApprovalView,
    theme: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let label = |k: &str| Span::styled(format!("{k:<8}"), theme.dim());
    let mut info = |k: &str, v: String| {
        RichLine::new(vec![Span::raw(v)])
            .prefixed(vec![label(k)], vec![Span::raw(" ".repeat(8))])
            .layout(width, &mut out);
    };
    if let ToolDisplay::Exec { .. } = &req.display {
        let part = req.part.trim();
        if !part.is_empty() {
            info("asks", format!("for `{}`", sanitize(part)));
        }
        info("why", sanitize(&req.reason).into_owned());
        info("cwd", req.cwd.display().to_string());
    } else {
        info("why", sanitize(&req.reason).into_owned());
    }
    if view.editing_note || !view.note.is_empty() {
        let cursor = if view.editing_note { "▏" } else { "" };
        RichLine::new(vec![
            Span::raw(view.note.clone()),
            Span::styled(cursor, theme.fg(theme.accent)),
        ])
        .prefixed(
            vec![Span::styled("note    ", theme.fg(theme.accent))],
            vec![Span::raw(" ".repeat(8))],
        )
        .layout(width, &mut out);
    }
    let key = |k: &str| {
        Span::styled(
            k.to_string(),
            theme.fg(theme.accent).add_modifier(Modifier::BOLD),
        )
    };
    let always = match req.display {
        ToolDisplay::Edit { .. } => " always for this file  ",
        ToolDisplay::Read { .. } => " always for this path  ",
        ToolDisplay::Exec { .. } => " always for this command  ",
        _ => " always for this tool  ",
    };
    let keys = if view.editing_note {
        vec![
            key("enter"),
            Span::raw(" keep note  "),
            key("esc"),
            Span::raw(" drop note"),
        ]
    } else {
        vec![
            key("y"),
            Span::raw(" yes  "),
            key("a"),
            Span::raw(always),
            key("n"),
            Span::raw(" no  "),
            key("tab"),
            Span::raw(" note  "),
            key("esc"),
            Span::raw(" no"),
        ]
    };
    out.push(Line::default());
    RichLine::new(keys).layout(width, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triggering_part_is_underlined() {
        let spans = vec![Span::raw("cargo test && "), Span::raw("git push origin")];
        let out = mark(spans, "git push");
        let text: Vec<&str> = out.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, vec!["cargo test && ", "git push", " origin"]);
        assert!(out[1].style.add_modifier.contains(Modifier::UNDERLINED));
    }

    fn request(display: ToolDisplay, part: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: "1".into(),
            call_id: "c1".into(),
            display,
            cwd: std::path::PathBuf::from("/w"),
            part: part.into(),
            reason: "default ask".into(),
            subagent: None,
        }
    }

    /// The modal as rows of text, trailing spaces dropped.
    fn drawn(req: &ApprovalRequest, w: u16, h: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        render(
            req,
            1,
            1,
            &mut ApprovalView::default(),
            area,
            &mut buf,
            &Theme::dark(),
        );
        (0..h)
            .map(|y| {
                let row: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
                row.trim_end().to_string()
            })
            .filter(|r| !r.is_empty())
            .collect()
    }

    #[test]
    fn a_command_dialog_names_the_part_the_reason_and_the_directory() {
        let req = request(
            ToolDisplay::Exec {
                command: "ls && rm x".into(),
            },
            "rm x",
        );
        let rows = drawn(&req, 44, 14);
        assert_eq!(rows[0], "  ╭ Allow bash? ─────────────────────────╮");
        assert_eq!(rows[1], "  │ $ ls && rm x                         │");
        for want in ["asks    for `rm x`", "why     default ask", "cwd     /w"] {
            assert!(rows.iter().any(|r| r.contains(want)), "{want}: {rows:#?}");
        }
        assert!(rows.iter().any(|r| r.contains("always for this command")));
    }

    #[test]
    fn an_edit_dialog_draws_the_diff_it_was_given() {
        let diff = crate::protocol::EditDiff::between(Some("a\nb\n"), "a\nc\n");
        let req = request(
            ToolDisplay::Edit {
                path: "f.txt".into(),
                diff: Some(diff),
            },
            "f.txt",
        );
        let rows = drawn(&req, 44, 14);
        assert_eq!(rows[0], "  ╭ Allow edit f.txt? +1 −1 ─────────────╮");
        assert_eq!(rows[1], "  │ 1 1   a                              │");
        assert_eq!(rows[2], "  │ 2   - b                              │");
        assert_eq!(rows[3], "  │   2 + c                              │");
        let binary = request(
            ToolDisplay::Edit {
                path: "logo.png".into(),
                diff: None,
            },
            "logo.png",
        );
        let rows = drawn(&binary, 60, 14);
        assert!(
            rows[1].contains("(not a text file: its whole content is replaced)"),
            "{rows:#?}"
        );
    }
}
