//! Drawing: one widget per file; `draw` lays the screen out.
//!
//! Top to bottom: conversation, queued messages, todo panel, composer, status line, key hints.
//! Popups float over the bottom of the conversation. A question (approval) takes the bottom
//! pane instead of the composer and grows upward to at most [`APPROVAL_SHARE`] of the screen,
//! so the conversation above, which led to the call, stays in view.

pub mod approval;
pub mod cell;
pub mod composer;
pub mod conversation;
pub mod diff;
pub mod highlight;
pub mod markdown;
pub mod picker;
pub mod rewind;
pub mod session_picker;
pub mod status;
pub mod stream;
pub mod table;
pub mod todos;
pub mod tool;

use crate::tui::app::App;
use crate::tui::wrap::{RichLine, truncate};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// Below this size only a "terminal too small" notice is drawn.
pub const MIN_WIDTH: u16 = 40;
/// Percent of the screen's height a question may take at most (it scrolls inside).
pub const APPROVAL_SHARE: u16 = 60;
/// Below this size only a "terminal too small" notice is drawn.
pub const MIN_HEIGHT: u16 = 10;

/// Draws a frame.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let area = frame.area();
    draw_buffer(area, frame.buffer_mut(), app);
}

/// Draws the app into `buf` (what `draw` does, without a `Frame`).
pub fn draw_buffer(area: Rect, buf: &mut Buffer, app: &mut App) {
    draw_screen(area, buf, app);
    // Whatever a widget drew, every cell must be one the terminal lays out as ratatui does.
    crate::tui::sanitize::settle_cells(buf);
}

fn draw_screen(area: Rect, buf: &mut Buffer, app: &mut App) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(area, buf, app);
        return;
    }
    if app.approvals.is_empty()
        && let Some(picker) = &mut app.session_picker
    {
        picker.render(area, buf, &app.theme);
        return;
    }
    if !app.approvals.is_empty() {
        draw_with_question(area, buf, app);
        return;
    }
    let w = area.width;
    // Fixed rows at the bottom; the conversation keeps at least 3 rows.
    let hints_h = 1u16;
    let status_h = 1u16;
    let offer_h = u16::from(app.plan_offer && !app.busy) * 2;
    let mut composer_h = app.composer.height(w) + offer_h;
    let mut todo_h = todos::height(&app.todos, app.todos_hidden);
    let mut queued_h = app.queued.len().min(3) as u16;
    let budget = area.height.saturating_sub(hints_h + status_h + 3);
    composer_h = composer_h.min(budget.max(2));
    queued_h = queued_h.min(budget.saturating_sub(composer_h));
    todo_h = todo_h.min(budget.saturating_sub(composer_h + queued_h));
    let conv_h = area.height - hints_h - status_h - composer_h - todo_h - queued_h;

    let mut y = area.y;
    let conv = Rect::new(area.x, y, w, conv_h);
    y += conv_h;
    let queued = Rect::new(area.x, y, w, queued_h);
    y += queued_h;
    let todo_area = Rect::new(area.x, y, w, todo_h);
    y += todo_h;
    let offer = Rect::new(area.x, y, w, offer_h.min(composer_h));
    let composer = Rect::new(
        area.x,
        y + offer.height,
        w,
        composer_h.saturating_sub(offer.height),
    );
    y += composer_h;
    let status_area = Rect::new(area.x, y, w, status_h);
    let hints_area = Rect::new(area.x, y + status_h, w, hints_h);

    if app.conversation.is_empty() {
        welcome(conv, buf, app);
    }
    {
        let (ctx, conversation) = app.render_parts();
        conversation.render(conv, buf, &ctx);
    }
    draw_queued(app, queued, buf);
    draw_plan_offer(app, offer, buf);
    let spinner = app.busy.then(|| app.spinner_index());
    todos::render(&app.todos, todo_area, buf, &app.theme, spinner);
    let title = (!app.queued.is_empty()).then(|| {
        Line::from(Span::styled(
            format!(" {} queued · sent when the turn ends ", app.queued.len()),
            app.theme.fg(app.theme.warning),
        ))
    });
    // A `!` line is not a message: say what Enter will do with it.
    let title = title.or_else(|| {
        app.composer.is_shell_command().then(|| {
            Line::from(Span::styled(
                " ! shell command · runs in the workspace; its output goes with your next message ",
                app.theme.fg(app.theme.accent),
            ))
        })
    });
    app.composer.set_busy(app.busy);
    app.composer
        .render(composer, buf, &app.theme, title, app.busy);
    status::render_status(app, status_area, buf);
    status::render_hints(app, hints_area, buf);

    // Popups float over the bottom of the conversation, never over the todo panel.
    let rows = App::popup_rows();
    let popup = match (&mut app.model_picker, &mut app.popup) {
        (Some(picker), _) => Some(picker),
        (None, Some(popup)) => Some(&mut popup.picker),
        (None, None) => None,
    };
    if let Some(picker) = popup {
        let h = picker.height(rows).min(conv_h);
        let rect = Rect::new(area.x, conv.y + conv_h - h, w.min(72), h);
        picker.render(rect, buf, &app.theme);
    }
    if let Some(dialog) = &mut app.rewind {
        let modal_area = Rect::new(area.x, area.y, w, area.height - hints_h - status_h);
        rewind::render(dialog, modal_area, buf, &app.theme);
    }
}

/// The screen while a question waits: the conversation, then the question in the bottom pane
/// (as tall as it needs, at most [`APPROVAL_SHARE`] percent), then the status and key lines.
fn draw_with_question(area: Rect, buf: &mut Buffer, app: &mut App) {
    let Some(req) = app.approvals.front() else {
        return;
    };
    let w = area.width;
    let fixed = 2u16;
    let wanted = approval::wanted_height(req, &mut app.approval_view, w, &app.theme);
    let cap = (area.height * APPROVAL_SHARE / 100).max(6);
    let pane_h = wanted.min(cap).min(area.height.saturating_sub(fixed + 3));
    let conv_h = area.height - fixed - pane_h;
    let conv = Rect::new(area.x, area.y, w, conv_h);
    let pane = Rect::new(area.x, area.y + conv_h, w, pane_h);
    {
        let (ctx, conversation) = app.render_parts();
        conversation.render(conv, buf, &ctx);
    }
    let pos = app.approvals_answered + 1;
    let total = app.approvals_answered + app.approvals.len();
    if let Some(req) = app.approvals.front() {
        approval::render(
            req,
            pos,
            total,
            &mut app.approval_view,
            pane,
            buf,
            &app.theme,
        );
    }
    let status_area = Rect::new(area.x, pane.y + pane_h, w, 1);
    status::render_status(app, status_area, buf);
    status::render_hints(app, Rect::new(area.x, status_area.y + 1, w, 1), buf);
}

/// After a turn planned in plan mode: approve the plan with one key.
fn draw_plan_offer(app: &App, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let key = |k: &str| Span::styled(k.to_string(), t.fg(t.accent).add_modifier(Modifier::BOLD));
    let line = RichLine::new(vec![
        Span::styled(
            "plan ready · ",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        ),
        key("y"),
        Span::raw(" approve and switch to ask  "),
        key("e"),
        Span::raw(" approve and switch to accept edits  "),
        key("esc"),
        Span::styled(" keep planning (or type to answer)", t.dim()),
    ]);
    let mut lines = Vec::new();
    line.layout(usize::from(area.width), &mut lines);
    for (i, l) in lines.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(area.x, area.y + i as u16, l, area.width);
    }
}

fn too_small(area: Rect, buf: &mut Buffer, app: &App) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let t = &app.theme;
    let lines = [
        RichLine::new(vec![Span::styled(
            "terminal too small",
            t.fg(t.warning).add_modifier(Modifier::BOLD),
        )]),
        RichLine::new(vec![Span::styled(
            format!(
                "{}×{}, need {MIN_WIDTH}×{MIN_HEIGHT}",
                area.width, area.height
            ),
            t.dim(),
        )]),
    ];
    let mut out = Vec::new();
    crate::tui::wrap::layout_all(&lines, usize::from(area.width), &mut out);
    let top = area.y + area.height.saturating_sub(out.len() as u16) / 2;
    for (i, line) in out.iter().enumerate() {
        let y = top + i as u16;
        if y >= area.y + area.height {
            break;
        }
        let lw = crate::tui::wrap::spans_width(&line.spans) as u16;
        let x = area.x + area.width.saturating_sub(lw) / 2;
        buf.set_line(x, y, line, area.width);
    }
}

fn welcome(area: Rect, buf: &mut Buffer, app: &App) {
    if area.height < 4 {
        return;
    }
    let t = &app.theme;
    let s = &app.status;
    let width = usize::from(area.width.saturating_sub(4));
    let mut lines = vec![Line::from(vec![
        Span::styled("rein", t.fg(t.accent).add_modifier(Modifier::BOLD)),
        Span::styled("  a calm coding agent", t.dim()),
    ])];
    if s.configured {
        lines.push(Line::from(vec![
            Span::styled(truncate(&s.model, width).into_owned(), t.text()),
            Span::styled(format!(" · {}", s.provider), t.dim()),
        ]));
        lines.push(Line::styled(app.short_path(&s.cwd, width), t.dim()));
    }
    lines.push(Line::default());
    for (k, what) in [
        ("enter", "send a message"),
        ("/", "commands (/help lists everything)"),
        ("@", "mention a file (inserts its path)"),
        ("!", "run a command yourself"),
        ("⇧tab", "mode: ask → accept edits → plan"),
        ("esc", "interrupt · ctrl+c twice quits"),
        ("⇧drag", "select text (the wheel scrolls)"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("{k:>6}  "), t.fg(t.accent)),
            Span::styled(what, t.dim()),
        ]));
    }
    for (i, line) in lines.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        if y >= area.y + area.height {
            break;
        }
        buf.set_line(area.x + 2, y, line, area.width.saturating_sub(2));
    }
}

fn draw_queued(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    for (i, text) in app.queued.iter().take(usize::from(area.height)).enumerate() {
        let first = crate::tui::wrap::one_line(text.lines().next().unwrap_or(""));
        // The last one says how to take it back (Up, when the composer is empty).
        let last = i + 1 == app.queued.len() && app.composer.is_empty();
        let hint = if last { "  ↑ edit" } else { "" };
        let room = usize::from(area.width).saturating_sub(12 + crate::tui::wrap::str_width(hint));
        let line = Line::from(vec![
            Span::styled("  ↳ queued  ", t.dim()),
            Span::styled(truncate(&first, room).into_owned(), t.fg(t.user)),
            Span::styled(hint, t.dim()),
        ]);
        buf.set_line(area.x, area.y + i as u16, &line, area.width);
    }
}

/// Draws the "what to set" screen shown when no model is configured.
pub fn draw_setup_error(
    area: Rect,
    buf: &mut Buffer,
    message: &str,
    theme: &crate::tui::theme::Theme,
) {
    draw_setup_dialog(area, buf, "rein needs a model", message, theme);
}

/// Draws the "what to set" screen under `title` (what is missing: a model, a key).
pub fn draw_setup_dialog(
    area: Rect,
    buf: &mut Buffer,
    title: &str,
    message: &str,
    theme: &crate::tui::theme::Theme,
) {
    // The local model needs nothing set: the way out for a newcomer with no key.
    let footer = Some("L: local model, no key (rein --local) · other keys quit");
    draw_dialog(area, buf, title, message, footer, theme);
}

/// Draws a centred dialog box with a title, a message and an optional dim footer.
pub fn draw_dialog(
    area: Rect,
    buf: &mut Buffer,
    title: &str,
    message: &str,
    footer: Option<&str>,
    theme: &crate::tui::theme::Theme,
) {
    if area.width < 4 || area.height < 3 {
        return;
    }
    let width = area.width.saturating_sub(4).min(90);
    let inner_w = usize::from(width.saturating_sub(4)).max(1);
    let mut lines = Vec::new();
    for l in crate::tui::wrap::sanitize(message).split('\n') {
        RichLine::new(vec![Span::styled(l.to_string(), theme.text())]).layout(inner_w, &mut lines);
    }
    if let Some(footer) = footer {
        lines.push(Line::default());
        lines.push(Line::styled(footer.to_string(), theme.dim()));
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let rect = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    let block = ratatui::widgets::Block::default()
        .borders(ratatui::widgets::Borders::ALL)
        .border_type(ratatui::widgets::BorderType::Rounded)
        .border_style(theme.fg(theme.warning))
        .title(Span::styled(
            format!(
                " {} ",
                truncate(title, usize::from(width.saturating_sub(4)))
            ),
            theme.fg(theme.warning).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(rect);
    ratatui::widgets::Widget::render(block, rect, buf);
    for (i, line) in lines.iter().take(usize::from(inner.height)).enumerate() {
        buf.set_line(
            inner.x + 1,
            inner.y + i as u16,
            line,
            inner.width.saturating_sub(1),
        );
    }
}
