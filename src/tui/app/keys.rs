//! Keys, mouse and paste: the modal first, then the completion popup, then the composer.

use super::{App, Effect};
use crate::protocol::{Decision, Op};
use crate::tui::files;
use crate::tui::layers::Layer;
use crate::tui::layers::approval::{ApprovalAction, ApprovalLayer};
use crate::tui::layers::composer::{ComposerAction, ComposerLayer};
use crate::tui::layers::pickers::{Popup, PopupAction, PopupKind};
use crate::tui::layers::session_picker::PickerAction;
use crate::tui::model::cell::Level;
use crate::tui::theme::Theme;
use crate::tui::view::picker::{Picker, PickerItem};
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};

/// Rows a wheel notch scrolls.
const WHEEL: i64 = 3;
/// Rows of the completion popups.
const POPUP_ITEMS: usize = 8;

impl App {
    /// Applies one terminal event.
    pub fn on_terminal_event(&mut self, event: TermEvent) {
        match event {
            TermEvent::Key(key) => {
                if key.kind != KeyEventKind::Release {
                    self.on_key(key);
                    self.mark_dirty();
                }
            }
            TermEvent::Mouse(m) => self.on_mouse(m),
            TermEvent::Paste(text) => {
                self.on_paste(&text);
                self.mark_dirty();
            }
            TermEvent::Resize(..) => self.mark_dirty(),
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    /// A key goes to the layer on top; Ctrl+C is the app's under the full-screen layers.
    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let since_last_key = self.last_key.map(|t| self.now.saturating_duration_since(t));
        self.last_key = Some(self.now);
        if self.approvals.is_empty()
            && let Some(picker) = &mut self.session_picker
        {
            let action = picker.on_key(key);
            self.picker_action(action);
            return;
        }
        if self.approvals.is_empty() && self.rewind.is_some() {
            self.rewind_key(key);
            return;
        }
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('C')) {
            self.ctrl_c();
            return;
        }
        if !self.approvals.is_empty() {
            if self.approval_guard && matches!(key.code, KeyCode::Char(_)) {
                // Still typing the message the modal interrupted: not an answer.
                if since_last_key.is_some_and(|d| d < super::APPROVAL_GUARD) {
                    return;
                }
                self.approval_guard = false;
            }
            self.approval_key(key);
            return;
        }
        if let Some(picker) = &mut self.model_picker {
            let action = picker.on_key(key);
            self.model_action(action);
            return;
        }
        if self.plan_offer && !self.busy && self.composer.is_empty() && self.plan_offer_key(&key) {
            return;
        }
        if let Some(popup) = &mut self.popup
            && !self.composer.is_recalled()
        {
            match popup.on_key(key) {
                PopupAction::Pass => {}
                PopupAction::Moved => return,
                PopupAction::Accept { run } => {
                    self.accept_popup(run);
                    return;
                }
                PopupAction::Dismiss => {
                    self.popup = None;
                    self.popup_dismissed = Some(self.composer.word_at_cursor().2);
                    self.update_popup();
                    return;
                }
            }
        }
        let action = self.composer_layer().0.on_key(key);
        self.composer_action(action);
    }

    /// The composer layer over the app's state, and the theme to draw it with.
    pub(crate) fn composer_layer(&mut self) -> (ComposerLayer<'_>, &Theme) {
        let layer = ComposerLayer {
            scrolled: !self.conversation.is_following(),
            busy: self.busy,
            interrupting: self.interrupting,
            queued: self.queued.len(),
            expand_all: self.expand_all,
            has_todos: !self.todos.is_empty(),
            run_time: self.run_time(),
            spinner: self.spinner_index(),
            composer: &mut self.composer,
        };
        (layer, &self.theme)
    }

    /// Carries out what a composer key asked for.
    fn composer_action(&mut self, action: ComposerAction) {
        match action {
            ComposerAction::Edited => {}
            ComposerAction::Walked => {
                self.popup = None;
                return;
            }
            ComposerAction::Submit => self.submit(),
            ComposerAction::Esc => {
                if !self.esc_rewind() {
                    self.interrupt();
                }
            }
            ComposerAction::Quit => self.request_quit(),
            ComposerAction::ToggleTodos => self.todos_hidden = !self.todos_hidden,
            ComposerAction::Editor => self.effect(Effect::EditInEditor(self.composer.text())),
            ComposerAction::Suspend => self.effect(Effect::Suspend),
            ComposerAction::ToggleExpand => self.expand_all = !self.expand_all,
            ComposerAction::Page(dir) => self.conversation.page(dir),
            ComposerAction::Top => self.conversation.to_top(),
            ComposerAction::Bottom => self.conversation.to_bottom(),
            ComposerAction::EditQueued => {
                if let Some(text) = self.queued.pop_back() {
                    self.composer.set_text(&text);
                }
            }
            ComposerAction::CycleMode => self.cycle_mode(),
        }
        self.update_popup();
    }

    /// Carries out what the session picker asked for.
    fn picker_action(&mut self, action: PickerAction) {
        match action {
            PickerAction::None => {}
            PickerAction::Close => self.session_picker = None,
            PickerAction::Open(s) if s.id == self.status.session_id => {
                self.session_picker = None;
                self.notice("that is the open session", Level::Info);
            }
            PickerAction::Open(s) => {
                self.session_picker = None;
                self.send(Op::Resume { id: s.id });
            }
        }
    }

    fn ctrl_c(&mut self) {
        if self
            .last_ctrl_c
            .is_some_and(|t| self.now.saturating_duration_since(t) < super::DOUBLE_PRESS)
        {
            self.request_quit();
            return;
        }
        self.last_ctrl_c = Some(self.now);
        if !self.approvals.is_empty() {
            self.refuse_all_and_stop();
        } else if !self.composer.is_empty() {
            self.composer.clear();
            self.popup = None;
        } else {
            self.interrupt();
        }
    }

    /// Stop means stop: refuse everything asked and end the turn.
    fn refuse_all_and_stop(&mut self) {
        self.esc_refusing = None;
        while !self.approvals.is_empty() {
            self.answer(Decision::No);
        }
        self.interrupt();
    }

    /// The refusal of a first Esc, once no second Esc came.
    pub(crate) fn send_esc_refusal(&mut self) {
        if self.esc_refusing.take().is_some() {
            self.answer(Decision::No);
        }
    }

    fn submit(&mut self) {
        let text = self.composer.take();
        self.popup = None;
        self.popup_dismissed = None;
        if text.trim().is_empty() {
            return;
        }
        self.composer.remember(&text);
        self.effect(Effect::SaveHistory(text.clone()));
        let trimmed = text.trim_start();
        if let Some(escaped) = trimmed.strip_prefix("//") {
            // `//path is…` sends a message that starts with one slash.
            self.submit_message(format!("/{escaped}"));
        } else if trimmed.starts_with('/') {
            self.run_command(text.trim());
        } else {
            self.submit_message(text);
        }
    }

    /// The question in front as a layer, and the theme to draw it with (`None` when nothing
    /// is asked).
    pub(crate) fn approval_layer(&mut self) -> Option<(ApprovalLayer<'_>, &Theme)> {
        let request = self.approvals.front()?;
        let layer = ApprovalLayer {
            request,
            view: &mut self.approval_view,
            pos: self.approvals.position().0,
            total: self.approvals.position().1,
            refusing: self.esc_refusing.is_some(),
            mode: self.status.mode,
        };
        Some((layer, &self.theme))
    }

    fn approval_key(&mut self, key: KeyEvent) {
        let Some(action) = self
            .approval_layer()
            .map(|(mut layer, _)| layer.on_key(key))
        else {
            return;
        };
        match action {
            ApprovalAction::None => {}
            ApprovalAction::Answer(decision) => self.answer(decision),
            ApprovalAction::StartRefusing => self.esc_refusing = Some(self.now),
            ApprovalAction::RefuseAndStop => self.refuse_all_and_stop(),
            ApprovalAction::SendRefusal => self.send_esc_refusal(),
            ApprovalAction::ShiftTab => self.approval_shift_tab(),
        }
    }

    /// Answers the request in front of the queue.
    pub(crate) fn answer(&mut self, decision: Decision) {
        let Some(req) = self.approvals.answer_front() else {
            return;
        };
        let note = std::mem::take(&mut self.approval_view.note);
        let note = (!note.trim().is_empty()).then(|| note.trim().to_string());
        self.send(Op::Approval {
            id: req.id.clone(),
            decision,
            note,
        });
        self.approval_view.reset();
        if req.subagent.is_none()
            && let Some(&i) = self.tool_cells.get(&req.call_id)
            && let Some(cell) = self.transcript.get_mut(i)
            && let crate::tui::model::cell::CellKind::Tool(t) = cell.kind_mut()
        {
            t.answered(self.now);
        }
        // The last question was answered: the turn's clock runs again.
        if self.approvals.is_empty()
            && let Some(since) = self.waiting_since.take()
        {
            self.waited += self.now.saturating_duration_since(since);
        }
    }

    fn accept_popup(&mut self, run: bool) {
        let Some(popup) = self.popup.take() else {
            return;
        };
        let Some(item) = popup.picker.selected_item() else {
            return;
        };
        match popup.kind {
            PopupKind::Slash => {
                // The label is `/name ARGS`.
                let name = item
                    .label
                    .trim_start_matches('/')
                    .split(' ')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let takes_args = self.takes_args(&name);
                if run && !takes_args {
                    self.composer.set_text(&format!("/{name}"));
                    self.submit();
                } else {
                    self.composer.set_text(&format!("/{name} "));
                    if run && !self.needs_args(&name) {
                        // `/model`, `/compact` and `/resume` run without arguments too.
                        self.submit();
                    }
                }
            }
            PopupKind::File { row, start } => {
                self.composer
                    .replace_word(row, start, &format!("@{} ", item.label));
            }
        }
        self.popup_dismissed = None;
        self.update_popup();
    }

    /// Opens, refreshes or closes the completion popup after the composer changed.
    pub(crate) fn update_popup(&mut self) {
        if self.composer.is_recalled() {
            // A recalled entry is sent as it is: no completion until it is edited.
            self.popup = None;
            return;
        }
        let text = self.composer.text();
        let (row, start, word) = self.composer.word_at_cursor();
        if self.popup_dismissed.as_ref().is_some_and(|d| *d == word) {
            self.popup = None;
            return;
        }
        self.popup_dismissed = None;
        if text.starts_with('/') && !text.contains(char::is_whitespace) {
            let items = self.command_items(&text[1..]);
            if items.is_empty() {
                self.popup = None;
                return;
            }
            self.set_popup(PopupKind::Slash, "commands", items, "");
            return;
        }
        if let Some(query) = word.strip_prefix('@') {
            if self.files.is_none() && !self.files_requested {
                self.files_requested = true;
                let root = if self.status.cwd.as_os_str().is_empty() {
                    std::path::PathBuf::from(".")
                } else {
                    self.status.cwd.clone()
                };
                self.effect(Effect::IndexFiles(root));
            }
            let items: Vec<PickerItem> = match &self.files {
                Some(list) => files::fuzzy(list, query, 50)
                    .into_iter()
                    .map(|(label, matched)| PickerItem {
                        label,
                        detail: String::new(),
                        matched,
                    })
                    .collect(),
                None => Vec::new(),
            };
            let empty = if self.files.is_some() {
                "no matching files"
            } else {
                "listing files…"
            };
            self.set_popup(PopupKind::File { row, start }, "files", items, empty);
            return;
        }
        self.popup = None;
    }

    fn set_popup(&mut self, kind: PopupKind, title: &str, items: Vec<PickerItem>, empty: &str) {
        let same_kind = matches!(
            (&self.popup, &kind),
            (
                Some(Popup {
                    kind: PopupKind::Slash,
                    ..
                }),
                PopupKind::Slash
            ) | (
                Some(Popup {
                    kind: PopupKind::File { .. },
                    ..
                }),
                PopupKind::File { .. }
            )
        );
        if same_kind && let Some(p) = &mut self.popup {
            p.kind = kind;
            p.picker.set_items(items);
            p.picker.empty_text = empty.to_string();
            return;
        }
        let mut picker = Picker::new(title, items);
        picker.empty_text = empty.to_string();
        self.popup = Some(Popup { kind, picker });
    }

    /// Rows a popup may use.
    pub(crate) fn popup_rows() -> u16 {
        POPUP_ITEMS as u16
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let dir = if m.kind == MouseEventKind::ScrollUp {
                    -1
                } else {
                    1
                };
                if !self.approvals.is_empty() {
                    self.approval_view.scroll.scroll_by(dir * WHEEL);
                } else if let Some(crate::tui::view::rewind::RewindDialog::Plan(view)) =
                    &mut self.rewind
                {
                    view.scroll.scroll_by(dir * WHEEL);
                } else if let Some(picker) = &mut self.session_picker {
                    picker.on_event(TermEvent::Mouse(m));
                } else {
                    self.conversation.scroll(dir * WHEEL);
                }
                self.mark_dirty();
            }
            MouseEventKind::Down(MouseButton::Left)
                if self.approvals.is_empty() && self.session_picker.is_none() =>
            {
                if let Some(i) = self.conversation.cell_at(m.column, m.row)
                    && let Some(cell) = self.transcript.get_mut(i)
                    && cell.is_foldable()
                {
                    cell.expanded = !cell.expanded;
                    self.mark_dirty();
                }
            }
            _ => {}
        }
    }

    fn on_paste(&mut self, text: &str) {
        if !self.approvals.is_empty() {
            if self.approval_view.editing_note {
                let line = text.replace(['\r', '\n'], " ");
                self.approval_view.note.push_str(&line);
            }
            return;
        }
        if let Some(picker) = &mut self.session_picker {
            picker.on_event(TermEvent::Paste(text.to_string()));
            return;
        }
        // A dragged image file arrives as its path: it becomes a mention, which attaches it.
        match crate::images::mention::paste_as_mention(text) {
            Some(mention) => self.composer.paste(&mention),
            None => self.composer.paste(text),
        }
        self.update_popup();
    }

    /// Shows a warning in the conversation (a bad theme file, a failed clipboard write).
    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice(text, Level::Warn);
        self.mark_dirty();
    }
}
