//! The `/rewind` dialog: pick a message, pick what to restore, then read the diff of the code
//! restore and answer once.

use super::diff::FileDiff;
use super::pane::{PaneScroll, ScrollPane};
use super::picker::{Picker, PickerItem};
use crate::protocol::{FileText, RewindPlan, RewindPoint};
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, one_line, sanitize, truncate};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, StatefulWidget};

/// What can be restored, in the order the options list shows them.
pub const OPTIONS: [(bool, bool, &str); 3] = [
    (true, true, "Restore code and conversation"),
    (false, true, "Restore conversation only"),
    (true, false, "Restore code only"),
];

/// The step the dialog is at.
#[derive(Debug)]
pub enum RewindDialog {
    /// Waiting for the list of messages.
    Loading,
    /// Choosing the message to go back to.
    Points {
        /// The messages, oldest first.
        points: Vec<RewindPoint>,
        /// The list.
        picker: Picker,
    },
    /// Choosing what to restore.
    Options {
        /// The chosen message.
        point: RewindPoint,
        /// The messages, to go back to the list.
        points: Vec<RewindPoint>,
        /// The options.
        picker: Picker,
    },
    /// Reading the diff of a code restore.
    Plan(PlanView),
}

/// A code restore plan laid out for reading.
#[derive(Debug)]
pub struct PlanView {
    /// The plan.
    pub plan: RewindPlan,
    /// Files that changed outside rein since.
    pub changed_outside: usize,
    /// Files that can be restored.
    pub restorable: usize,
    body: Vec<RichLine>,
    /// Where the diff is scrolled to.
    pub scroll: PaneScroll,
}

impl RewindDialog {
    /// The list of messages, the newest selected.
    pub fn points(points: Vec<RewindPoint>) -> RewindDialog {
        let items = points
            .iter()
            .map(|p| {
                let detail = match p.files_changed {
                    0 => String::new(),
                    1 => "1 file changed".into(),
                    n => format!("{n} files changed"),
                };
                PickerItem::new(one_line(&p.text), detail)
            })
            .collect();
        let mut picker = Picker::new(
            "rewind to before which message? · enter choose · esc close",
            items,
        );
        picker.empty_text = "No message to go back to yet.".into();
        picker.selected = points.len().saturating_sub(1);
        RewindDialog::Points { points, picker }
    }

    /// The options for `point`.
    pub fn options(point: RewindPoint, points: Vec<RewindPoint>) -> RewindDialog {
        let items = OPTIONS
            .iter()
            .map(|(code, _, label)| {
                let detail = if *code && point.files_changed == 0 {
                    "(that turn changed no file)"
                } else {
                    ""
                };
                PickerItem::new(*label, detail)
            })
            .collect();
        let title = format!(
            "before “{}” · enter choose · esc back",
            truncate(&one_line(&point.text), 40)
        );
        RewindDialog::Options {
            point,
            points,
            picker: Picker::new(title, items),
        }
    }
}

fn text_of(t: &FileText) -> Option<&str> {
    match t {
        FileText::Text { text } => Some(text),
        _ => None,
    }
}

fn describe(t: &FileText) -> String {
    match t {
        FileText::Absent => "no file".into(),
        FileText::Text { text } => crate::text::human_bytes(text.len() as u64),
        FileText::Opaque { size: Some(n) } => {
            format!("binary or large, {}", crate::text::human_bytes(*n))
        }
        FileText::Opaque { size: None } => "not a file".into(),
    }
}

impl PlanView {
    /// Lays out `plan`: per file a header (what happens, and a warning when it changed outside
    /// rein or cannot be restored) and its diff from now to then.
    pub fn new(plan: RewindPlan, theme: &Theme) -> PlanView {
        let mut body = Vec::new();
        let bold = theme.text().add_modifier(Modifier::BOLD);
        for f in &plan.files {
            let verb = match (&f.current, &f.target) {
                (_, FileText::Absent) => "delete",
                (FileText::Absent, _) => "recreate",
                _ => "restore",
            };
            let mut head = vec![
                Span::styled(format!("{verb} "), theme.fg(theme.accent)),
                Span::styled(crate::sanitize::shown(&f.path).into_owned(), bold),
            ];
            if let Some(why) = &f.problem {
                head.push(Span::styled(
                    format!("  cannot restore: {}", sanitize(why)),
                    theme.fg(theme.error),
                ));
            } else if f.changed_outside {
                head.push(Span::styled(
                    "  changed outside rein since",
                    theme.fg(theme.warning).add_modifier(Modifier::BOLD),
                ));
            }
            body.push(RichLine::new(head));
            let opaque = |t: &FileText| matches!(t, FileText::Opaque { .. });
            if f.problem.is_none() && !opaque(&f.current) && !opaque(&f.target) {
                let diff = FileDiff::new(
                    &f.path,
                    text_of(&f.current),
                    text_of(&f.target).unwrap_or(""),
                    theme,
                );
                body.extend(diff.lines);
            } else {
                body.push(RichLine::new(vec![Span::styled(
                    format!(
                        "  now {} → then {}",
                        describe(&f.current),
                        describe(&f.target)
                    ),
                    theme.dim(),
                )]));
            }
            body.push(RichLine::blank());
        }
        let changed_outside = plan
            .files
            .iter()
            .filter(|f| f.changed_outside && f.problem.is_none())
            .count();
        let restorable = plan.files.iter().filter(|f| f.problem.is_none()).count();
        PlanView {
            plan,
            changed_outside,
            restorable,
            body,
            scroll: PaneScroll {
                rows: 1,
                ..PaneScroll::default()
            },
        }
    }

    fn footer(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let key = |k: &str| {
            Span::styled(
                k.to_string(),
                theme.fg(theme.accent).add_modifier(Modifier::BOLD),
            )
        };
        let mut out = Vec::new();
        let mut say = |text: String, style| {
            RichLine::new(vec![Span::styled(text, style)]).layout(width, &mut out);
        };
        if self.changed_outside > 0 {
            let names: Vec<&str> = self
                .plan
                .files
                .iter()
                .filter(|f| f.changed_outside && f.problem.is_none())
                .map(|f| f.path.as_str())
                .collect();
            say(
                format!(
                    "Changed outside rein since rein last touched {}: {}",
                    if names.len() == 1 { "it" } else { "them" },
                    names.join(", ")
                ),
                theme.fg(theme.warning),
            );
        }
        if self.plan.conversation {
            say(
                "The conversation also goes back to before that message.".into(),
                theme.dim(),
            );
        }
        out.push(Line::default());
        let keys = if self.restorable == 0 {
            vec![key("esc"), Span::raw(" close (nothing can be restored)")]
        } else if self.changed_outside > 0 {
            vec![
                key("y"),
                Span::raw(" restore all, overwriting those  "),
                key("s"),
                Span::raw(" restore the others  "),
                key("n"),
                Span::raw(" cancel"),
            ]
        } else {
            vec![
                key("y"),
                Span::raw(" restore  "),
                key("n"),
                Span::raw(" cancel"),
            ]
        };
        RichLine::new(keys).layout(width, &mut out);
        out
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let width = area.width.saturating_sub(4).min(110);
        let max_height = area.height.saturating_sub(2);
        if width < 10 || max_height < 6 {
            return;
        }
        let inner_w = usize::from(width - 4);
        let mut lines = Vec::new();
        crate::tui::wrap::layout_all(&self.body, inner_w, &mut lines);
        let footer = self.footer(theme, inner_w);
        let chrome = ScrollPane::chrome(footer.len());
        let rows = usize::from(max_height).saturating_sub(chrome).max(1);
        let height = (chrome + lines.len().min(rows)) as u16;
        let rect = super::centered(area, width, height);
        let n = self.plan.files.len();
        let title = format!(
            " Restore {n} file{} to before “{}” ",
            if n == 1 { "" } else { "s" },
            truncate(&one_line(&self.plan.message), 40)
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Rounded)
            .border_style(theme.fg(theme.accent))
            .title(Span::styled(
                title,
                theme.fg(theme.accent).add_modifier(Modifier::BOLD),
            ));
        ScrollPane::new(block, &lines, &footer, theme).render(rect, buf, &mut self.scroll);
    }
}

/// Draws the dialog over `area`.
pub fn render(dialog: &mut RewindDialog, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let picker = match dialog {
        RewindDialog::Plan(view) => return view.render(area, buf, theme),
        RewindDialog::Loading => None,
        RewindDialog::Points { picker, .. } | RewindDialog::Options { picker, .. } => Some(picker),
    };
    let width = area.width.saturating_sub(4).min(90);
    let mut loading = Picker::new("rewind", Vec::new());
    loading.empty_text = "listing the messages…".into();
    let picker = picker.unwrap_or(&mut loading);
    let h = picker.height(area.height.saturating_sub(4).max(1));
    picker.render(super::centered(area, width, h), buf, theme);
}
