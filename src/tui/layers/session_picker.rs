//! The session picker of `rein --resume` and `/resume`: full screen, newest first, one row
//! per session (relative time, title, message count, model, directory). Typing filters
//! fuzzily, in memory: the sessions are listed once when the picker opens.

use super::Layer;
use crate::protocol::SessionSummary;
use crate::session_cli::relative_time;
use crate::tui::theme::Theme;
use crate::tui::view::status::Hints;
use crate::tui::wrap::{one_line, push_span, short_path, spans_width, str_width, truncate};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::event::{MouseEvent, MouseEventKind};
use jiff::Timestamp;
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};
use std::path::PathBuf;

/// Width of the relative-time column ("12 days ago").
const TIME_W: usize = 11;
/// Width of the message-count column ("9999 msgs").
const COUNT_W: usize = 9;
/// Widest model column.
const MODEL_MAX: usize = 20;
/// Widest directory column.
const CWD_MAX: usize = 32;
/// Rows a wheel notch moves.
const WHEEL: i64 = 3;

/// What a key did to the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PickerAction {
    /// Nothing to do outside the picker.
    None,
    /// Open this session.
    Open(Box<SessionSummary>),
    /// Leave without choosing.
    Close,
}

/// A row after filtering: which session, and the char indices of its title that matched.
#[derive(Clone, Debug)]
struct Shown {
    index: usize,
    matched: Vec<u32>,
}

/// The session picker's state.
#[derive(Debug)]
pub struct SessionPicker {
    sessions: Vec<SessionSummary>,
    /// One-line titles, as drawn and matched.
    titles: Vec<String>,
    /// What the filter searches besides the title: model, directory and id. Each field is
    /// matched on its own: across a concatenation, a short query would match scattered
    /// letters of unrelated fields.
    fields: Vec<[String; 3]>,
    /// Whether each session ran in the current directory.
    here: Vec<bool>,
    all_dirs: bool,
    query: String,
    shown: Vec<Shown>,
    selected: usize,
    offset: usize,
    /// List rows of the last frame (the page size).
    rows: usize,
    now: Timestamp,
    home: Option<PathBuf>,
    loading: bool,
}

impl SessionPicker {
    /// A picker over `sessions` (newest first). `here` are the spellings of the current
    /// directory (as given and canonical): it starts with that directory's sessions when
    /// there are any, else with all. `current` is the open session's id, if any: it is listed
    /// marked "current" (opening it changes nothing), or the empty list says why it is not.
    pub fn new(
        sessions: Vec<SessionSummary>,
        here: &[PathBuf],
        now: Timestamp,
        home: Option<PathBuf>,
        current: Option<String>,
    ) -> SessionPicker {
        // A fork says so: it starts as a copy of its origin and would look the same.
        let titles: Vec<String> = sessions
            .iter()
            .map(|s| {
                let title = match &s.parent {
                    Some(p) => format!(
                        "{} · fork of {}",
                        one_line(&s.title),
                        p.chars().take(8).collect::<String>()
                    ),
                    None => one_line(&s.title),
                };
                match current.as_deref() == Some(s.id.as_str()) {
                    true => format!("{title} · current"),
                    false => title,
                }
            })
            .collect();
        let fields = sessions
            .iter()
            .map(|s| [s.model.clone(), s.cwd.display().to_string(), s.id.clone()])
            .collect();
        let here: Vec<bool> = sessions.iter().map(|s| here.contains(&s.cwd)).collect();
        let all_dirs = !here.iter().any(|h| *h);
        let mut p = SessionPicker {
            sessions,
            titles,
            fields,
            here,
            all_dirs,
            query: String::new(),
            shown: Vec::new(),
            selected: 0,
            offset: 0,
            rows: 10,
            now,
            home,
            loading: false,
        };
        p.refilter();
        p
    }

    /// A picker that waits for the sessions to be listed.
    pub fn loading() -> SessionPicker {
        let mut p = SessionPicker::new(Vec::new(), &[], Timestamp::UNIX_EPOCH, None, None);
        p.loading = true;
        p
    }

    /// Whether the sessions have not arrived yet.
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// The filter text.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The sessions shown, in order.
    pub fn shown(&self) -> impl Iterator<Item = &SessionSummary> {
        self.shown.iter().map(|r| &self.sessions[r.index])
    }

    /// The highlighted session.
    pub fn selected(&self) -> Option<&SessionSummary> {
        self.shown
            .get(self.selected)
            .map(|r| &self.sessions[r.index])
    }

    /// Whether sessions of every directory are shown (else only this directory's).
    pub fn all_dirs(&self) -> bool {
        self.all_dirs
    }

    /// Applies one terminal event.
    pub fn on_event(&mut self, event: TermEvent) -> PickerAction {
        match event {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            TermEvent::Paste(text) => {
                self.query.push_str(&one_line(&text));
                self.refilter();
                PickerAction::None
            }
            TermEvent::Mouse(MouseEvent { kind, .. }) => {
                match kind {
                    MouseEventKind::ScrollUp => self.move_by(-WHEEL),
                    MouseEventKind::ScrollDown => self.move_by(WHEEL),
                    _ => {}
                }
                PickerAction::None
            }
            _ => PickerAction::None,
        }
    }

    fn move_by(&mut self, n: i64) {
        let last = self.shown.len().saturating_sub(1) as i64;
        self.selected = (self.selected as i64 + n).clamp(0, last.max(0)) as usize;
    }

    /// Recomputes the rows for the scope and the query: newest first, or best match first.
    fn refilter(&mut self) {
        self.selected = 0;
        self.offset = 0;
        let in_scope = |i: &usize| self.all_dirs || self.here[*i];
        let query = self.query.trim();
        if query.is_empty() {
            self.shown = (0..self.sessions.len())
                .filter(in_scope)
                .map(|index| Shown {
                    index,
                    matched: Vec::new(),
                })
                .collect();
            return;
        }
        let mut matcher = Matcher::new(Config::DEFAULT);
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, usize)> = (0..self.sessions.len())
            .filter(in_scope)
            .filter_map(|i| {
                std::iter::once(&self.titles[i])
                    .chain(&self.fields[i])
                    .filter_map(|f| pattern.score(Utf32Str::new(f, &mut buf), &mut matcher))
                    .max()
                    .map(|s| (s, i))
            })
            .collect();
        // Best match first; among equals, the most recent.
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.shown = scored
            .into_iter()
            .map(|(_, index)| {
                let mut idx = Vec::new();
                let title = Utf32Str::new(&self.titles[index], &mut buf);
                pattern.indices(title, &mut matcher, &mut idx);
                idx.sort_unstable();
                idx.dedup();
                Shown {
                    index,
                    matched: idx,
                }
            })
            .collect();
    }

    /// The title (which sessions are listed), the filter line with its cursor, a rule.
    fn render_header(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let x = area.x + 1;
        let w = area.width.saturating_sub(2);
        let width = usize::from(w);
        // Title.
        let total_here = self.here.iter().filter(|h| **h).count();
        let scope = if self.all_dirs {
            format!("all directories · {}", sessions_count(self.sessions.len()))
        } else {
            format!("this directory · {}", sessions_count(total_here))
        };
        let title = Line::from(vec![
            Span::styled(
                "Resume a session",
                theme.fg(theme.accent).add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!("  {scope}"), theme.dim()),
        ]);
        buf.set_line(x, area.y, &title, w);
        // Filter line with a block cursor.
        let prompt = Span::styled("› ", theme.fg(theme.accent).add_modifier(Modifier::BOLD));
        let query = one_line(&self.query);
        let room = width.saturating_sub(3);
        let shown_query = if str_width(&query) > room {
            let skip = query.chars().count().saturating_sub(room);
            query.chars().skip(skip).collect()
        } else {
            query.clone()
        };
        let mut spans = vec![prompt, Span::styled(shown_query, theme.text())];
        spans.push(Span::styled(
            " ",
            Style::new().add_modifier(Modifier::REVERSED),
        ));
        if query.is_empty() {
            spans.push(Span::styled(" type to filter", theme.dim()));
        }
        buf.set_line(x, area.y + 1, &Line::from(spans), w);
        buf.set_line(
            area.x,
            area.y + 2,
            &Line::styled("─".repeat(usize::from(area.width)), theme.fg(theme.border)),
            area.width,
        );
    }

    fn empty_text(&self) -> String {
        if self.loading {
            "reading the saved sessions…".into()
        } else if self.sessions.is_empty() {
            "No saved sessions yet: this one is saved from its first message. Esc goes back.".into()
        } else if self.query.trim().is_empty() {
            "No sessions in this directory yet; tab shows every directory.".into()
        } else if self.all_dirs {
            format!("No session matches \"{}\".", one_line(self.query.trim()))
        } else {
            format!(
                "No session of this directory matches \"{}\"; tab searches every directory.",
                one_line(self.query.trim())
            )
        }
    }

    /// Column widths for `width`: the directory and then the model go first when narrow.
    fn columns(&self, width: usize) -> Columns {
        let longest = |f: &dyn Fn(&SessionSummary) -> usize, max: usize| {
            self.shown
                .iter()
                .map(|r| f(&self.sessions[r.index]))
                .max()
                .unwrap_or(0)
                .min(max)
        };
        let model = longest(&|s| str_width(&s.model), MODEL_MAX);
        let cwd = longest(
            &|s| str_width(&short_path(&s.cwd, self.home.as_deref(), CWD_MAX)),
            CWD_MAX,
        );
        // marker(2) time gap(2) title gap(2) count
        let fixed = 2 + TIME_W + 2 + 2 + COUNT_W;
        let mut c = Columns { model, cwd };
        if width < fixed + 20 + 2 + c.model + 2 + c.cwd {
            c.cwd = 0;
        }
        if width < fixed + 20 + 2 + c.model {
            c.model = 0;
        }
        c
    }

    fn row_line(
        &self,
        shown: &Shown,
        cols: &Columns,
        width: usize,
        selected: bool,
        theme: &Theme,
    ) -> Line<'static> {
        let s = &self.sessions[shown.index];
        let base = if selected {
            theme.selected()
        } else {
            theme.text()
        };
        let dim = if selected { base } else { theme.dim() };
        let mut spans: Vec<Span<'static>> = Vec::new();
        spans.push(Span::styled(if selected { "› " } else { "  " }, base));
        let when = relative_time(s.updated_at, self.now);
        spans.push(Span::styled(format!("{when:<TIME_W$}  "), dim));
        let mut tail: Vec<Span<'static>> = Vec::new();
        tail.push(Span::styled(
            format!("  {:>COUNT_W$}", format!("{} msgs", s.message_count)),
            dim,
        ));
        if cols.model > 0 {
            let model = truncate(&one_line(&s.model), cols.model).into_owned();
            tail.push(Span::styled(format!("  {model:<w$}", w = cols.model), dim));
        }
        if cols.cwd > 0 {
            let cwd = short_path(&s.cwd, self.home.as_deref(), cols.cwd);
            tail.push(Span::styled(format!("  {cwd}"), dim));
        }
        let title_w = width.saturating_sub(spans_width(&spans) + spans_width(&tail));
        let title = truncate(&self.titles[shown.index], title_w);
        let hit = base.add_modifier(Modifier::BOLD).fg(if selected {
            theme.selection_fg
        } else {
            theme.accent
        });
        let mut title_spans = Vec::new();
        for (ci, ch) in title.chars().enumerate() {
            let style = if shown.matched.contains(&(ci as u32)) {
                hit
            } else {
                base
            };
            push_span(&mut title_spans, ch.encode_utf8(&mut [0u8; 4]), style);
        }
        let pad = title_w.saturating_sub(spans_width(&title_spans));
        spans.extend(title_spans);
        spans.push(Span::styled(" ".repeat(pad), base));
        spans.extend(tail);
        let fill = width.saturating_sub(spans_width(&spans));
        spans.push(Span::styled(
            " ".repeat(fill),
            if selected { base } else { Style::new() },
        ));
        Line::from(spans)
    }
}

/// Widths of the optional columns (0: hidden).
struct Columns {
    model: usize,
    cwd: usize,
}

/// Full screen: its keys are written on its last row, not on the hint line.
impl Layer for SessionPicker {
    type Action = PickerAction;

    /// Applies one key.
    fn on_key(&mut self, key: KeyEvent) -> PickerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let page = self.rows.max(1) as i64;
        match key.code {
            KeyCode::Esc => return PickerAction::Close,
            KeyCode::Char('c') | KeyCode::Char('d') if ctrl => return PickerAction::Close,
            KeyCode::Enter => {
                return match self.selected() {
                    Some(s) => PickerAction::Open(Box::new(s.clone())),
                    None => PickerAction::None,
                };
            }
            KeyCode::Up => self.move_by(-1),
            KeyCode::Down => self.move_by(1),
            KeyCode::Char('p') if ctrl => self.move_by(-1),
            KeyCode::Char('n') if ctrl => self.move_by(1),
            KeyCode::PageUp => self.move_by(-page),
            KeyCode::PageDown => self.move_by(page),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = self.shown.len().saturating_sub(1),
            KeyCode::Tab | KeyCode::BackTab => {
                let keep = self.selected().map(|s| s.path.clone());
                self.all_dirs = !self.all_dirs;
                self.refilter();
                if let Some(at) = keep.and_then(|p| self.shown().position(|s| s.path == p)) {
                    self.selected = at;
                }
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.refilter();
            }
            KeyCode::Char('u') if ctrl => {
                self.query.clear();
                self.refilter();
            }
            KeyCode::Char('w') if ctrl => {
                let kept = self.query.trim_end().rfind(' ').map_or(0, |i| i + 1);
                self.query.truncate(kept);
                self.refilter();
            }
            KeyCode::Char(c) if !ctrl && !alt => {
                self.query.push(c);
                self.refilter();
            }
            _ => {}
        }
        PickerAction::None
    }

    /// Draws the picker over all of `area`.
    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        if area.width < 10 || area.height < 5 {
            return;
        }
        Clear.render(area, buf);
        let x = area.x + 1;
        let w = area.width.saturating_sub(2);
        let width = usize::from(w);
        self.render_header(area, buf, theme);
        // Hints.
        let hints = format!(
            "↑↓ move · pgup pgdn page · enter open · tab {} · esc back",
            if self.all_dirs {
                "this directory"
            } else {
                "all directories"
            }
        );
        let bottom = area.y + area.height - 1;
        buf.set_line(
            x,
            bottom,
            &Line::styled(truncate(&hints, width).into_owned(), theme.dim()),
            w,
        );
        // Rows.
        let top = area.y + 3;
        let rows = usize::from(bottom.saturating_sub(top));
        self.rows = rows;
        if self.shown.is_empty() {
            let text = self.empty_text();
            buf.set_line(
                x + 2,
                top,
                &Line::styled(text, theme.dim()),
                w.saturating_sub(2),
            );
            return;
        }
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + rows {
            self.offset = self.selected + 1 - rows;
        }
        let cols = self.columns(width);
        for (row, shown) in self.shown.iter().skip(self.offset).take(rows).enumerate() {
            let selected = self.offset + row == self.selected;
            let line = self.row_line(shown, &cols, width, selected, theme);
            buf.set_line(x, top + row as u16, &line, w);
        }
    }

    fn hints(&self) -> Option<Hints> {
        None
    }
}

/// `1 session`, `3 sessions`.
fn sessions_count(n: usize) -> String {
    format!("{n} session{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::layers::Layer;
    use crossterm::event::KeyModifiers;

    fn summary(id: &str, title: &str, cwd: &str, minutes_ago: i64) -> SessionSummary {
        let now = Timestamp::from_second(1_800_000_000).expect("ts");
        let at = now - jiff::SignedDuration::from_mins(minutes_ago);
        SessionSummary {
            id: id.into(),
            title: title.into(),
            cwd: PathBuf::from(cwd),
            model: "m".into(),
            created_at: at,
            updated_at: at,
            message_count: 2,
            path: PathBuf::from(format!("/d/sessions/{id}.jsonl")),
            parent: None,
        }
    }

    fn picker() -> SessionPicker {
        SessionPicker::new(
            vec![
                summary("a1", "fix the parser", "/w", 1),
                summary("b2", "write docs", "/other", 5),
                summary("c3", "parser benchmarks", "/w", 60),
            ],
            &[PathBuf::from("/w")],
            Timestamp::from_second(1_800_000_000).expect("ts"),
            None,
            None,
        )
    }

    fn key(p: &mut SessionPicker, code: KeyCode) -> PickerAction {
        p.on_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn ids(p: &SessionPicker) -> Vec<&str> {
        p.shown().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn starts_with_this_directory_and_tab_shows_all() {
        let mut p = picker();
        assert_eq!(ids(&p), vec!["a1", "c3"]);
        key(&mut p, KeyCode::Down);
        assert_eq!(p.selected().map(|s| s.id.as_str()), Some("c3"));
        key(&mut p, KeyCode::Tab);
        assert_eq!(ids(&p), vec!["a1", "b2", "c3"]);
        // The selection stays on the same session.
        assert_eq!(p.selected().map(|s| s.id.as_str()), Some("c3"));
    }

    #[test]
    fn typing_filters_and_enter_opens_the_best_match() {
        let mut p = picker();
        key(&mut p, KeyCode::Tab);
        for c in "docs".chars() {
            key(&mut p, KeyCode::Char(c));
        }
        assert_eq!(ids(&p), vec!["b2"]);
        let PickerAction::Open(s) = key(&mut p, KeyCode::Enter) else {
            panic!("enter opens");
        };
        assert_eq!(s.id, "b2");
        key(&mut p, KeyCode::Backspace);
        key(&mut p, KeyCode::Backspace);
        key(&mut p, KeyCode::Backspace);
        key(&mut p, KeyCode::Backspace);
        assert_eq!(ids(&p).len(), 3);
        assert_eq!(key(&mut p, KeyCode::Esc), PickerAction::Close);
    }

    #[test]
    fn each_field_is_matched_on_its_own() {
        let mut p = SessionPicker::new(
            vec![
                summary("a1", "tell me about HERONS", "/tmp/.tmpR8aIad/ws", 1),
                summary("b2", "tell me about OTTERS", "/tmp/.tmpR8aIad/ws", 2),
            ],
            &[PathBuf::from("/tmp/.tmpR8aIad/ws")],
            Timestamp::from_second(1_800_000_000).expect("ts"),
            None,
            None,
        );
        for c in "otters".chars() {
            key(&mut p, KeyCode::Char(c));
        }
        assert_eq!(ids(&p), vec!["b2"]);
        // The directory and the id are searched too.
        p.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        for c in "tmpr8".chars() {
            key(&mut p, KeyCode::Char(c));
        }
        assert_eq!(ids(&p), vec!["a1", "b2"]);
        p.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        key(&mut p, KeyCode::Char('b'));
        key(&mut p, KeyCode::Char('2'));
        assert_eq!(ids(&p), vec!["b2"]);
    }

    #[test]
    fn moving_stays_in_range_and_enter_on_nothing_does_nothing() {
        let mut p = picker();
        key(&mut p, KeyCode::Up);
        assert_eq!(p.selected().map(|s| s.id.as_str()), Some("a1"));
        key(&mut p, KeyCode::PageDown);
        assert_eq!(p.selected().map(|s| s.id.as_str()), Some("c3"));
        for c in "zzzz".chars() {
            key(&mut p, KeyCode::Char(c));
        }
        assert!(p.selected().is_none());
        assert_eq!(key(&mut p, KeyCode::Enter), PickerAction::None);
    }
}
