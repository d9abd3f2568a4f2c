//! The approval modal: what would run (a highlighted command, or the diff of an edit), why
//! rein asks, and the keys to answer.

use super::diff::FileDiff;
use super::highlight;
use super::pane::{PaneScroll, ScrollPane};
use crate::protocol::{ApprovalRequest, ToolDisplay};
use crate::sanitize::shown;
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, StatefulWidget};

/// View state of the modal for the request in front of the queue.
#[derive(Debug, Default)]
pub struct ApprovalView {
    /// The note typed after Tab.
    pub note: String,
    /// Whether keys go to the note.
    pub editing_note: bool,
    /// Esc was pressed: refused unless a second Esc stops the turn.
    pub refusing: bool,
    /// Where the body is scrolled to.
    pub scroll: PaneScroll,
    cache: Option<(String, Vec<RichLine>, String)>,
    /// The body laid out: (request id, width, lines).
    layout: Option<(String, usize, Vec<Line<'static>>)>,
    /// The scroll position was set for this request (an edit starts at its first change).
    placed: bool,
}

impl ApprovalView {
    /// Resets for the next request.
    pub fn reset(&mut self) {
        *self = ApprovalView::default();
    }

    /// The body's lines at `width`, laid out once per request and width. The first time, an
    /// edit is scrolled to its first change (a small window may not show it otherwise).
    fn laid_out(&mut self, req: &ApprovalRequest, width: usize, theme: &Theme) -> &[Line<'static>] {
        let fresh = matches!(&self.layout, Some((id, w, _)) if *id == req.id && *w == width);
        if !fresh {
            let (body, _) = self.body(req, theme);
            let mut lines = Vec::new();
            let mut first_change = None;
            for (i, l) in body.iter().enumerate() {
                if first_change.is_none() && i == change_index(req).unwrap_or(usize::MAX) {
                    first_change = Some(lines.len());
                }
                l.layout(width, &mut lines);
            }
            if !self.placed {
                self.placed = true;
                // One line of context above the change.
                self.scroll.offset = first_change.map_or(0, |r| r.saturating_sub(1));
            }
            self.layout = Some((req.id.clone(), width, lines));
        }
        match &self.layout {
            Some((_, _, lines)) => lines,
            None => &[],
        }
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

/// The body line of an edit's first added or removed line (hunk separators count as lines).
fn change_index(req: &ApprovalRequest) -> Option<usize> {
    let diff = req.display.diff()?;
    let mut index = 0;
    for (h, hunk) in diff.hunks.iter().enumerate() {
        if h > 0 {
            index += 1;
        }
        for line in &hunk.lines {
            if line.starts_with('+') || line.starts_with('-') {
                return Some(index);
            }
            index += 1;
        }
    }
    None
}

fn build_body(req: &ApprovalRequest, theme: &Theme) -> (Vec<RichLine>, String) {
    let label = shown(req.display.label()).into_owned();
    match &req.display {
        ToolDisplay::Exec { command } => (
            exec_body(command, &req.part, theme),
            format!("Allow {label}?"),
        ),
        ToolDisplay::Edit { path, diff } => {
            let Some(diff) = diff else {
                let note = "(not a text file: its whole content is replaced)";
                return (
                    vec![RichLine::new(vec![Span::styled(note, theme.dim())])],
                    format!("Allow {label} {}?", shown(path)),
                );
            };
            let diff = FileDiff::from_edit(path, diff, theme);
            let title = format!("Allow {label} {}? {}", shown(path), diff.counts());
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
                    shown(path).into_owned(),
                    Style::new().add_modifier(Modifier::BOLD),
                ),
            ])],
            format!("Allow {label} outside the workspace?"),
        ),
        ToolDisplay::Network { host, port } => (
            vec![RichLine::new(vec![
                Span::styled("connect to ", theme.dim()),
                Span::styled(
                    format!("{}:{port}", shown(host)),
                    Style::new().add_modifier(Modifier::BOLD),
                ),
            ])],
            format!("Allow network to {}?", shown(host)),
        ),
        ToolDisplay::Mcp {
            server, tool, args, ..
        } => {
            let mut lines = pretty_args(args);
            lines.insert(0, mcp_header(server, tool, theme));
            let (server, tool) = (shown(server), shown(tool));
            (lines, format!("Allow MCP tool {tool} of {server}?"))
        }
        ToolDisplay::Other { args, .. } => (pretty_args(args), format!("Allow {label}?")),
        other => (
            vec![RichLine::new(vec![Span::raw(
                shown(&other.subject()).into_owned(),
            )])],
            format!("Allow {label}?"),
        ),
    }
}

/// A command highlighted, one body line per line of it, the part that asks underlined.
fn exec_body(command: &str, part: &str, theme: &Theme) -> Vec<RichLine> {
    let command = shown(command);
    let found = locate_part(&command, part);
    let mut lines = Vec::new();
    let mut offset = 0;
    for (i, spans) in highlight::highlight_shell(&command, &theme.syntax_theme)
        .into_iter()
        .enumerate()
    {
        // The range is in the whole command; each line gets its own part of it.
        let len: usize = spans.iter().map(|s| s.content.len()).sum();
        let here = found.clone().and_then(|r| {
            let (a, b) = (r.start.max(offset), r.end.min(offset + len));
            (a < b).then(|| a - offset..b - offset)
        });
        offset += len + 1;
        let spans = mark(spans, here);
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
    lines
}

/// A call's arguments, pretty-printed, a line each (wrapped anywhere: JSON has long words).
fn pretty_args(args: &serde_json::Value) -> Vec<RichLine> {
    let pretty = serde_json::to_string_pretty(args).unwrap_or_default();
    pretty
        .lines()
        .map(|l| RichLine::new(vec![Span::raw(shown(l).into_owned())]).wrapped(Wrap::Char))
        .collect()
}

/// `server NAME  tool NAME`: which server a call goes to, above its arguments.
fn mcp_header(server: &str, tool: &str, theme: &Theme) -> RichLine {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    RichLine::new(vec![
        Span::styled("server ", theme.dim()),
        Span::styled(shown(server).into_owned(), bold),
        Span::styled("  tool ", theme.dim()),
        Span::styled(shown(tool).into_owned(), bold),
    ])
}

/// Where `part` (a normalised simple command: words joined by single spaces, quotes removed)
/// appears in `command` as written: quotes and backslashes in the command are skipped while
/// matching, and a space matches any run of blanks. A byte range of `command`.
pub fn locate_part(command: &str, part: &str) -> Option<std::ops::Range<usize>> {
    let part: Vec<char> = part.trim().chars().collect();
    if part.is_empty() {
        return None;
    }
    let chars: Vec<(usize, char)> = command.char_indices().collect();
    let quote = |c: char| matches!(c, '\'' | '"' | '\\');
    for start in 0..chars.len() {
        if chars[start].1 != part[0] && !quote(chars[start].1) {
            continue;
        }
        if let Some(end) = match_from(&chars, start, &part) {
            let end = chars.get(end).map_or(command.len(), |(b, _)| *b);
            return Some(chars[start].0..end);
        }
    }
    None
}

/// The char index where `part` ends when it matches `chars` from `start`.
fn match_from(chars: &[(usize, char)], start: usize, part: &[char]) -> Option<usize> {
    let quote = |c: char| matches!(c, '\'' | '"' | '\\');
    let (mut i, mut j) = (start, 0);
    while j < part.len() {
        let c = chars.get(i)?.1;
        if part[j] == ' ' && c.is_whitespace() {
            while chars.get(i).is_some_and(|(_, c)| c.is_whitespace()) {
                i += 1;
            }
            j += 1;
        } else if c == part[j] {
            i += 1;
            j += 1;
        } else if quote(c) {
            i += 1;
        } else {
            return None;
        }
    }
    // Take a closing quote of the last word along.
    while chars.get(i).is_some_and(|(_, c)| matches!(c, '\'' | '"')) {
        i += 1;
    }
    Some(i)
}

/// Underlines `range` of the spans' text so the person sees what triggered the question.
fn mark(spans: Vec<Span<'static>>, range: Option<std::ops::Range<usize>>) -> Vec<Span<'static>> {
    let Some(std::ops::Range { start, end }) = range else {
        return spans;
    };
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

/// Rows the pane would like at `width` for `req` (borders, body, footer), before any cap.
pub fn wanted_height(
    req: &ApprovalRequest,
    view: &mut ApprovalView,
    width: u16,
    theme: &Theme,
) -> u16 {
    let inner_w = usize::from(width.saturating_sub(4)).max(1);
    let body = view.laid_out(req, inner_w, theme).len();
    let footer = footer_lines(req, view, theme, inner_w).len();
    (2 + body + footer) as u16
}

/// Draws the question for `req` (`pos` of `total` pending) in the bottom pane `area`: what
/// would run, scrollable inside, then who asks and why, then the keys.
pub fn render(
    req: &ApprovalRequest,
    pos: usize,
    total: usize,
    view: &mut ApprovalView,
    area: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) {
    if area.width < 10 || area.height < 4 {
        return;
    }
    let inner_w = usize::from(area.width - 4);
    let footer = footer_lines(req, view, theme, inner_w);
    let title = view.body(req, theme).1.to_string();
    let body = view.laid_out(req, inner_w, theme).to_vec();
    let mut title_spans = vec![Span::styled(
        format!(" {} ", truncate(&title, inner_w.saturating_sub(12))),
        Style::new().fg(theme.accent).add_modifier(Modifier::BOLD),
    )];
    if let Some(sub) = &req.subagent {
        title_spans.push(Span::styled(
            format!("· subagent: {} ", truncate(&shown(sub), 30)),
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
    ScrollPane::new(block, &body, &footer, theme).render(area, buf, &mut view.scroll);
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
    if let ToolDisplay::Exec { command } = &req.display {
        let part = req.part.trim();
        if !part.is_empty() {
            // The part as written in the command (quotes kept), else as the rules saw it.
            let command = shown(command);
            let part = locate_part(&command, part)
                .map_or_else(|| shown(part).into_owned(), |r| command[r].to_string());
            info("asks", format!("for `{part}`"));
        }
        info("why", shown(&req.reason).into_owned());
        info("cwd", req.cwd.display().to_string());
    } else {
        info("why", shown(&req.reason).into_owned());
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
    for keys in key_lines(req, view, theme) {
        RichLine::new(keys).layout(width, &mut out);
    }
    out
}

/// The keys: what `a` allows exactly (when a rule can be made), and both ways of saying no.
fn key_lines(req: &ApprovalRequest, view: &ApprovalView, theme: &Theme) -> Vec<Vec<Span<'static>>> {
    let key = |k: &str| {
        Span::styled(
            k.to_string(),
            theme.fg(theme.accent).add_modifier(Modifier::BOLD),
        )
    };
    if view.refusing {
        return vec![vec![
            Span::styled("refused · ", theme.fg(theme.warning)),
            key("esc"),
            Span::raw(" again stops the turn"),
        ]];
    }
    if view.editing_note {
        return vec![vec![
            key("enter"),
            Span::raw(" keep note  "),
            key("esc"),
            Span::raw(" drop note"),
        ]];
    }
    let network = matches!(req.display, ToolDisplay::Network { .. });
    let yes = if network {
        " for this session  "
    } else {
        " yes  "
    };
    let mut first = vec![key("y"), Span::raw(yes)];
    if let (None, Some(why)) = (&req.always, &req.no_always) {
        first.push(Span::styled(
            format!("(no \"always\": {})", shown(why)),
            theme.dim(),
        ));
    }
    if let Some(rule) = &req.always {
        first.push(key("a"));
        first.push(Span::raw(if network {
            " always, saved to "
        } else {
            " don't ask again this session for: "
        }));
        first.push(Span::styled(
            shown(rule).into_owned(),
            Style::new().add_modifier(Modifier::BOLD),
        ));
    }
    let second = vec![
        key("n"),
        Span::raw("/"),
        key("esc"),
        Span::raw(" no, go on  "),
        key("esc esc"),
        Span::raw("/"),
        key("ctrl+c"),
        Span::raw(" no, stop  "),
        key("tab"),
        Span::raw(" note"),
    ];
    vec![first, second]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triggering_part_is_underlined() {
        let spans = vec![Span::raw("cargo test && "), Span::raw("git push origin")];
        let out = mark(
            spans,
            locate_part("cargo test && git push origin", "git push"),
        );
        let text: Vec<&str> = out.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, vec!["cargo test && ", "git push", " origin"]);
        assert!(out[1].style.add_modifier.contains(Modifier::UNDERLINED));
    }

    #[test]
    fn the_part_is_found_as_written_with_its_quotes() {
        let cases = [
            (
                "python3 -c 'print(42)'",
                "python3 -c print(42)",
                Some("python3 -c 'print(42)'"),
            ),
            (
                "ls && rm  -rf \"a b\"",
                "rm -rf a b",
                Some("rm  -rf \"a b\""),
            ),
            ("echo hi", "git push", None),
            ("git log", "", None),
        ];
        for (command, part, want) in cases {
            let got = locate_part(command, part).map(|r| &command[r]);
            assert_eq!(got, want, "{command:?} / {part:?}");
        }
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
            always: Some("rm x".into()),
            no_always: None,
        }
    }

    /// The pane as rows of text, trailing spaces dropped.
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
    fn a_network_question_offers_this_session_always_and_no() {
        let mut req = request(
            ToolDisplay::Network {
                host: "example.org".into(),
                port: 443,
            },
            "example.org:443",
        );
        req.always = Some("[sandbox.network] allow in ~/.config/rein/config.toml".into());
        let rows = drawn(&req, 120, 12);
        assert!(
            rows[0].starts_with("╭ Allow network to example.org? ─"),
            "{rows:#?}"
        );
        let text = rows.join("\n");
        for want in [
            "connect to example.org:443",
            "y for this session",
            "a always, saved to [sandbox.network] allow in ~/.config/rein/config.toml",
            "no, go on",
        ] {
            assert!(text.contains(want), "{want}: {rows:#?}");
        }
        assert!(!text.contains("don't ask again this session"), "{rows:#?}");
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
        assert_eq!(rows[0], "╭ Allow bash? ─────────────────────────────╮");
        assert_eq!(rows[1], "│ $ ls && rm x                             │");
        for want in ["asks    for `rm x`", "why     default ask", "cwd     /w"] {
            assert!(rows.iter().any(|r| r.contains(want)), "{want}: {rows:#?}");
        }
        // The key line wraps at this width: read the pane's text as one.
        let text: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_matches(|c| c == '│' || c == ' '))
            .collect();
        assert!(
            text.join(" ")
                .contains("a don't ask again this session for: rm x"),
            "{rows:#?}"
        );
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
        assert_eq!(rows[0], "╭ Allow edit f.txt? +1 −1 ─────────────────╮");
        assert_eq!(rows[1], "│ 1 1   a                                  │");
        assert_eq!(rows[2], "│ 2   - b                                  │");
        assert_eq!(rows[3], "│   2 + c                                  │");
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
