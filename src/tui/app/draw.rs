//! Which parts are on screen and what they are handed: the app lays the screen out with
//! `view`'s layouts and has each part (and the layer on top) draw itself.

use super::App;
use crate::tui::layers::Layer;
use crate::tui::view::picker::Picker;
use crate::tui::view::status::{self, Hint, Hints};
use crate::tui::view::{self, Wanted, todos};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

impl view::Screen for App {
    fn render_screen(&mut self, area: Rect, buf: &mut Buffer) {
        if view::is_too_small(area) {
            view::too_small(area, buf, &self.theme);
            return;
        }
        if self.approvals.is_empty()
            && let Some(picker) = &mut self.session_picker
        {
            picker.render(area, buf, &self.theme);
            return;
        }
        if !self.approvals.is_empty() {
            self.draw_with_question(area, buf);
            return;
        }
        self.draw_main(area, buf);
    }
}

impl App {
    /// The main screen: conversation, queue, todos, composer, status and hints, with a popup
    /// or dialog over them.
    fn draw_main(&mut self, area: Rect, buf: &mut Buffer) {
        let offer = u16::from(self.plan_offer && !self.busy) * 2;
        let wanted = Wanted {
            composer: self.composer.height(area.width),
            offer,
            todos: todos::height(&self.todos, self.todos_hidden),
            queued: self.queued.len().min(3) as u16,
        };
        let areas = view::screen_areas(area, wanted);
        if self.transcript.is_empty() {
            let home = self.home.as_deref();
            view::welcome(areas.conversation, buf, &self.theme, &self.status, home);
        }
        self.draw_conversation(areas.conversation, buf);
        let editable = self.composer.is_empty();
        view::draw_queued(&self.queued, editable, &self.theme, areas.queued, buf);
        view::draw_plan_offer(&self.theme, areas.offer, buf);
        let spinner = self.busy.then(|| self.spinner_index());
        todos::render(&self.todos, areas.todos, buf, &self.theme, spinner);
        let (mut composer, theme) = self.composer_layer();
        composer.render(areas.composer, buf, theme);
        self.draw_status_lines(areas.status, areas.hints, buf);

        let conversation = areas.conversation;
        let float = |picker: &Picker| {
            let h = picker.height(App::popup_rows()).min(conversation.height);
            view::popup_area(conversation, h)
        };
        if let Some(layer) = &mut self.model_picker {
            layer.render(float(&layer.picker), buf, &self.theme);
        } else if let Some(layer) = &mut self.popup {
            layer.render(float(&layer.picker), buf, &self.theme);
        }
        if let Some(dialog) = &mut self.rewind {
            dialog.render(areas.body, buf, &self.theme);
        }
    }

    /// The screen while a question waits: the conversation, then the question in the bottom
    /// pane, then the status and key lines.
    fn draw_with_question(&mut self, area: Rect, buf: &mut Buffer) {
        let Some((mut layer, theme)) = self.approval_layer() else {
            return;
        };
        let areas = view::question_areas(area, layer.wanted_height(area.width, theme));
        self.draw_conversation(areas.conversation, buf);
        if let Some((mut layer, theme)) = self.approval_layer() {
            layer.render(areas.pane, buf, theme);
        }
        self.draw_status_lines(areas.status, areas.hints, buf);
    }

    fn draw_conversation(&mut self, area: Rect, buf: &mut Buffer) {
        let (ctx, conversation, transcript) = self.render_parts();
        conversation.render(area, buf, &ctx, transcript.cells());
    }

    fn draw_status_lines(&mut self, status_area: Rect, hints_area: Rect, buf: &mut Buffer) {
        let home = self.home.as_deref();
        status::render_status(&self.status, home, &self.theme, status_area, buf);
        let hints = self.hints();
        status::render_hints(&hints, &self.theme, hints_area, buf);
    }

    /// The hint line: the keys of the layer on top (the composer's under the layers that
    /// write their keys inside themselves), or how to finish quitting.
    pub(crate) fn hints(&mut self) -> Hints {
        if self.last_ctrl_c.is_some() {
            return Hints::keys([Hint::new("ctrl+c", "again to quit")]);
        }
        let top = if let Some((layer, _)) = self.approval_layer() {
            layer.hints()
        } else if let Some(picker) = &self.model_picker {
            picker.hints()
        } else if let Some(popup) = &self.popup {
            popup.hints()
        } else {
            None
        };
        top.or_else(|| self.composer_layer().0.hints())
            .unwrap_or_default()
    }
}
