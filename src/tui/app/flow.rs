//! The pair-programming flow around a turn: approval modes (Shift+Tab, `/mode`), approving a
//! plan, `/permissions`, the `/model` picker and the composer edited in `$EDITOR`.

use super::App;
use crate::protocol::{ApprovalMode, Op, RuleInfo};
use crate::tui::layers::pickers::{ModelAction, ModelPicker};
use crate::tui::model::cell::{CellKind, Level};
use crate::tui::model::cell::{InfoLine, Run, Tone};
use crate::tui::view::picker::{Picker, PickerItem};
use crossterm::event::{KeyCode, KeyEvent};

/// What the model is told when the person approves its plan with one key.
pub const PLAN_APPROVED: &str = "The plan is approved. Carry it out now.";

impl App {
    /// Shift+Tab: the next mode (ask → accept edits → plan). The agent enforces it; the
    /// status line shows it at once.
    pub(crate) fn cycle_mode(&mut self) {
        let next = self.status.mode.next();
        self.set_mode(next);
    }

    /// Shift+Tab on a question: an edit is approved and edits are accepted from now on
    /// (unless that mode is already on: then, as for any other call, the mode cycles); the
    /// agent rates the waiting calls again under the new mode (plan refuses, accept edits
    /// allows workspace edits) and withdraws what it decided.
    pub(crate) fn approval_shift_tab(&mut self) {
        // The same test decides the hint (`ApprovalLayer::hints`).
        let accepts = self
            .approval_layer()
            .is_some_and(|(layer, _)| layer.shift_tab_accepts());
        if accepts {
            self.set_mode(ApprovalMode::AcceptEdits);
            self.answer(crate::protocol::Decision::Yes);
        } else {
            self.cycle_mode();
        }
    }

    pub(crate) fn set_mode(&mut self, mode: ApprovalMode) {
        self.status.mode = mode;
        if mode != ApprovalMode::Plan {
            self.plan_offer = false;
        }
        self.send(Op::SetMode { mode });
    }

    /// `/mode [ask|accept-edits|plan]`.
    pub(crate) fn mode_command(&mut self, args: &str) {
        if args.is_empty() {
            let now = self.status.mode.label();
            self.notice(
                format!("mode: {now} · /mode ask|accept-edits|plan, or shift+tab cycles"),
                Level::Info,
            );
            return;
        }
        match ApprovalMode::parse(args) {
            Some(mode) => self.set_mode(mode),
            None => self.notice(
                format!("unknown mode \"{args}\": use ask, accept-edits or plan"),
                Level::Warn,
            ),
        }
    }

    /// The one-key answer to a plan: switch to `mode` and tell the model to go ahead. The
    /// plan stays in the transcript.
    pub(crate) fn approve_plan(&mut self, mode: ApprovalMode) {
        self.plan_offer = false;
        self.set_mode(mode);
        self.submit_message(PLAN_APPROVED.to_string());
    }

    /// The keys of the plan offer (`y`, `e`, Esc) while the composer is empty; false when the
    /// key is not one of them (the offer then closes and the key goes on).
    pub(crate) fn plan_offer_key(&mut self, key: &KeyEvent) -> bool {
        match key.code {
            KeyCode::Char('y') => self.approve_plan(ApprovalMode::Ask),
            KeyCode::Char('e') => self.approve_plan(ApprovalMode::AcceptEdits),
            KeyCode::Esc => self.plan_offer = false,
            _ => {
                self.plan_offer = false;
                return false;
            }
        }
        true
    }

    /// `/permissions` lists the rules; `/permissions drop N` drops session rule N.
    pub(crate) fn permissions_command(&mut self, args: &str) {
        if args.is_empty() {
            self.send(Op::ListPermissions);
            return;
        }
        let n = args
            .strip_prefix("drop")
            .map(str::trim)
            .and_then(|n| n.parse::<usize>().ok());
        let rule = n
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| self.permissions.iter().filter(|r| r.session).nth(i))
            .cloned();
        match rule {
            Some(r) => self.send(Op::DropSessionRule {
                tool: r.tool,
                pattern: r.pattern,
            }),
            None => self.notice(
                "no such session rule: /permissions lists them, numbered; /permissions drop N",
                Level::Warn,
            ),
        }
    }

    /// Shows the rules in force, grouped by where they came from.
    pub(crate) fn show_permissions(&mut self, rules: Vec<RuleInfo>) {
        let mut lines = vec![InfoLine::new(vec![
            Run::new(Tone::Accent, "Permissions").bold(),
        ])];
        let mut sources: Vec<&str> = Vec::new();
        for r in &rules {
            if !sources.contains(&r.source.as_str()) {
                sources.push(&r.source);
            }
        }
        for source in sources {
            lines.push(InfoLine::new(vec![Run::new(
                Tone::Accent,
                format!("  {source}"),
            )]));
            let of_source = rules.iter().filter(|r| r.source == source);
            if of_source.clone().any(|r| r.session) {
                for (i, r) in of_source.enumerate() {
                    lines.push(InfoLine::new(vec![Run::plain(format!(
                        "    {}. {} {}",
                        i + 1,
                        r.action,
                        r.spec()
                    ))]));
                }
                continue;
            }
            // Built-in and config rules: one line per action and tool, patterns listed.
            let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
            for r in of_source {
                match groups
                    .iter_mut()
                    .find(|(a, tool, _)| *a == r.action && *tool == r.tool)
                {
                    Some(g) => g.2.push(&r.pattern),
                    None => groups.push((&r.action, &r.tool, vec![&r.pattern])),
                }
            }
            for (action, tool, patterns) in groups {
                lines.push(
                    InfoLine::new(vec![
                        Run::new(Tone::Text, format!("    {action:<5} {tool}  ")),
                        Run::new(Tone::Dim, patterns.join("  ")),
                    ])
                    .prefixed(vec![], vec![Run::plain(" ".repeat(8))]),
                );
            }
        }
        let session = rules.iter().filter(|r| r.session).count();
        let hint = if session == 0 {
            "No session rules yet: `a` in a question adds one. Last match wins; deny always wins."
        } else {
            "/permissions drop N drops session rule N. Last match wins; deny always wins."
        };
        lines.push(InfoLine::new(vec![Run::new(Tone::Dim, hint)]));
        self.permissions = rules;
        self.push_cell(CellKind::Info(lines));
    }

    /// `/model` without a name: ask the server for its models; the picker waits for them.
    pub(crate) fn open_model_picker(&mut self) {
        let mut picker = Picker::new("models", Vec::new());
        picker.empty_text = "asking the server for its models…".into();
        self.model_picker = Some(ModelPicker { picker });
        self.send(Op::ListModels);
    }

    /// The server's model list arrived.
    pub(crate) fn models_listed(&mut self, models: Vec<String>, error: Option<String>) {
        let Some(ModelPicker { picker }) = &mut self.model_picker else {
            return;
        };
        if models.is_empty() {
            self.model_picker = None;
            let why = error.unwrap_or_else(|| "it listed none".into());
            let model = self.status.model.clone();
            self.notice(
                format!("model: {model} · the server did not list its models ({why}); /model NAME switches"),
                Level::Warn,
            );
            return;
        }
        let current = self.status.model.clone();
        let items: Vec<PickerItem> = models
            .iter()
            .map(|m| {
                let detail = if *m == current { "current" } else { "" };
                PickerItem::new(m.clone(), detail)
            })
            .collect();
        picker.set_items(items);
        picker.selected = models.iter().position(|m| *m == current).unwrap_or(0);
    }

    /// Carries out what a key in the model picker asked for.
    pub(crate) fn model_action(&mut self, action: ModelAction) {
        match action {
            ModelAction::Stay => {}
            ModelAction::Close | ModelAction::Choose(None) => self.model_picker = None,
            ModelAction::Choose(Some(model)) => {
                self.model_picker = None;
                if model != self.status.model {
                    self.send(Op::SetModel { model });
                }
            }
        }
    }

    /// The text edited in `$EDITOR` (Ctrl+G) came back.
    pub fn edited(&mut self, result: Result<String, String>) {
        match result {
            Ok(text) => {
                let text = text.strip_suffix('\n').unwrap_or(&text);
                self.composer.set_text(text);
                self.update_popup();
            }
            Err(e) => self.notice(format!("the editor did not run: {e}"), Level::Warn),
        }
        self.mark_dirty();
    }
}
