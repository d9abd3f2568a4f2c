//! The status line (model, provider, cwd, session, context use, modes) and the key hint line.

use super::cell::format_tokens;
use crate::protocol::ApprovalMode;
use crate::tui::model::StatusInfo;
use crate::tui::theme::Theme;
use crate::tui::wrap::{spans_width, str_width, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use std::path::Path;

/// Context use at or above this share of the window is shown in the warning colour.
pub const WARN_RATIO: f64 = 0.8;

/// Draws the status line: model · provider · cwd · session on the left, context use and
/// modes on the right. On narrow screens labels go first, then the session, then the provider.
/// `home` shortens the directory to `~`.
pub fn render_status(
    status: &StatusInfo,
    home: Option<&Path>,
    theme: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let full = right_side(status, theme, true, true);
    let short = right_side(status, theme, false, true);
    let right = if spans_width(&full) + 40 <= width {
        full
    } else if spans_width(&short) + 24 <= width {
        short
    } else {
        right_side(status, theme, false, false)
    };
    let right_w = spans_width(&right);
    let room = width.saturating_sub(right_w + 2);
    let left = cut_spans(left_side(status, home, theme, room), room);
    let left_w = spans_width(&left);
    buf.set_line(area.x, area.y, &Line::from(left), area.width);
    if right_w + left_w < width {
        let x = area.x + (width - right_w) as u16;
        buf.set_line(x, area.y, &Line::from(right), right_w as u16);
    }
}

fn right_side(s: &StatusInfo, t: &Theme, labels: bool, modes: bool) -> Vec<Span<'static>> {
    let base = t.fg(t.status_fg);
    let sep = Span::styled(" · ", t.fg(t.border));
    let mut right = Vec::new();
    if s.context_window > 0 {
        let ratio = s.used_tokens as f64 / s.context_window as f64;
        let style = if ratio >= WARN_RATIO {
            t.fg(t.warning).add_modifier(Modifier::BOLD)
        } else {
            base
        };
        right.push(Span::styled(
            format!(
                "{}/{} {:.0}%",
                format_tokens(s.used_tokens),
                format_tokens(s.context_window),
                (ratio * 100.0).min(999.0)
            ),
            style,
        ));
    }
    // The approval mode shows (Shift+Tab changes it); plan and accept edits stand out and
    // stay even when there is no room for the rest.
    if !modes && s.mode == ApprovalMode::Ask {
        return right;
    }
    if !right.is_empty() {
        right.push(sep.clone());
    }
    let mode_style = match s.mode {
        ApprovalMode::Ask => base,
        ApprovalMode::AcceptEdits => t.fg(t.accent).add_modifier(Modifier::BOLD),
        ApprovalMode::Plan => t.fg(t.warning).add_modifier(Modifier::BOLD),
    };
    let mode = match (labels, s.mode) {
        (true, ApprovalMode::Ask) => "mode ask".to_string(),
        (_, m) => m.label().to_string(),
    };
    right.push(Span::styled(mode, mode_style));
    for (label, value) in [("sandbox", &s.sandbox_mode)] {
        if value.is_empty() || !modes {
            continue;
        }
        right.push(sep.clone());
        let text = if labels {
            format!("{label} {value}")
        } else {
            value.clone()
        };
        right.push(Span::styled(text, base));
    }
    right
}

fn left_side(s: &StatusInfo, home: Option<&Path>, t: &Theme, room: usize) -> Vec<Span<'static>> {
    if !s.configured {
        return vec![Span::styled("starting…", t.dim())];
    }
    let base = t.fg(t.status_fg);
    let sep = Span::styled(" · ", t.fg(t.border));
    let model = truncate(&s.model, room.max(1)).into_owned();
    let mut used = str_width(&model);
    // Said while it runs (before the rest: it is what changes): the first writing command
    // waits for it.
    const INDEXING: &str = "indexing workspace…";
    let indexing = s.indexing && used + 3 + str_width(INDEXING) <= room;
    if indexing {
        used += 3 + str_width(INDEXING);
    }
    // Decide what fits by priority (cwd, provider, session), then show in reading order.
    let mut cwd = None;
    let mut provider = None;
    let mut session = None;
    let cwd_room = room.saturating_sub(used + 3).min(40);
    if cwd_room >= 8 {
        let c = crate::tui::wrap::short_path(&s.cwd, home, cwd_room);
        used += 3 + str_width(&c);
        cwd = Some(c);
    }
    if !s.provider.is_empty() && used + 3 + str_width(&s.provider) <= room {
        used += 3 + str_width(&s.provider);
        provider = Some(s.provider.clone());
    }
    // Labelled: a bare hex id reads as noise (it is what `rein -r` takes).
    let short: String = s.session_id.chars().take(8).collect();
    let short = format!("session {short}");
    if !s.session_id.is_empty() && used + 3 + str_width(&short) <= room {
        session = Some(short);
    }
    let mut left = vec![Span::styled(
        model,
        t.fg(t.accent).add_modifier(Modifier::BOLD),
    )];
    if indexing {
        left.push(sep.clone());
        left.push(Span::styled(INDEXING, t.fg(t.warning)));
    }
    for part in [provider, cwd, session].into_iter().flatten() {
        left.push(sep.clone());
        left.push(Span::styled(part, base));
    }
    left
}

fn cut_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for s in spans {
        let w = str_width(&s.content);
        if used + w <= width {
            used += w;
            out.push(s);
        } else {
            let rest = width.saturating_sub(used);
            if rest > 1 {
                out.push(Span::styled(
                    truncate(&s.content, rest).into_owned(),
                    s.style,
                ));
            }
            break;
        }
    }
    out
}

/// A key and what it does now, as the hint line shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The key as written on the line (`ctrl+o`, `↑↓`).
    pub key: &'static str,
    /// What it does.
    pub what: &'static str,
}

impl Hint {
    /// `key` does `what`.
    pub const fn new(key: &'static str, what: &'static str) -> Hint {
        Hint { key, what }
    }
}

/// How the lead of the hint line stands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// rein waits for the person.
    Warning,
    /// rein is working.
    Accent,
}

/// The hint line: what is going on (if anything), then the keys that matter now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// Said first (`waiting for you`, `⠋ working 7s`).
    pub lead: Option<(String, Tone)>,
    /// The keys, most important first (the last ones go when the line is short).
    pub keys: Vec<Hint>,
}

impl Hints {
    /// Just these keys.
    pub fn keys(keys: impl Into<Vec<Hint>>) -> Hints {
        Hints {
            lead: None,
            keys: keys.into(),
        }
    }
}

/// Draws the one-line hint of the keys that matter now.
pub fn render_hints(hints: &Hints, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let t = theme;
    let mut spans: Vec<Span<'static>> = Vec::new();
    if let Some((text, tone)) = &hints.lead {
        let color = match tone {
            Tone::Warning => t.warning,
            Tone::Accent => t.accent,
        };
        spans.push(Span::styled(text.clone(), t.fg(color)));
    }
    for hint in &hints.keys {
        if !spans.is_empty() {
            spans.push(Span::styled("  ", t.dim()));
        }
        spans.push(Span::styled(
            hint.key,
            t.fg(t.status_fg).add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {}", hint.what), t.dim()));
    }
    let spans = whole_hints(spans, usize::from(area.width));
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// Drops the hints that don't fit whole (a key without its meaning helps nobody); hints are
/// separated by a two-space span.
fn whole_hints(mut spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    while spans_width(&spans) > width {
        match spans.iter().rposition(|s| s.content == "  ") {
            Some(i) if i > 0 => spans.truncate(i),
            _ => return cut_spans(spans, width),
        }
    }
    spans
}

/// `7s`, `2m 03s`.
pub fn whole_seconds(s: u64) -> String {
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m {:02}s", s / 60, s % 60)
    }
}
