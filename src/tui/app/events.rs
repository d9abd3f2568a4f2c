//! Applying agent events to the view state.

use super::{App, Response};
use crate::protocol::{
    ApprovalMode, Event, NoticeLevel, SessionInfo, ToolDisplay, ToolStatus, TurnOutcome,
};
use crate::tui::model::cell::FileEdit;
use crate::tui::model::cell::{Answer, CellKind, Level};
use crate::tui::model::tool::{ChildCall, ToolCall};
use crate::tui::wrap::one_line;

/// The cell level a notice of this level is drawn with.
fn notice_level(level: NoticeLevel) -> Level {
    match level {
        NoticeLevel::Info => Level::Info,
        NoticeLevel::Warn => Level::Warn,
        NoticeLevel::Error => Level::Error,
    }
}

impl App {
    /// Applies one event from the agent (live, or replayed when a session is resumed).
    pub fn on_agent_event(&mut self, event: Event) {
        self.mark_dirty();
        match event {
            Event::SessionConfigured(info) => self.configure(info),
            Event::TurnStarted => {
                self.busy = true;
                self.turn_started.get_or_insert(self.now);
            }
            Event::UserMessage { text } => {
                self.push_cell(CellKind::User(text));
            }
            Event::ReasoningDelta { text } => self.reasoning_delta(&text),
            Event::AssistantDelta { text } => self.assistant_delta(&text),
            Event::AssistantMessage { text } => {
                self.clear_retry();
                self.assistant_message(text);
            }
            Event::ToolCallStarted { call_id, display } => self.tool_started(call_id, display),
            Event::ToolOutputDelta { call_id, chunk } => {
                if let Some(tool) = self.tool_mut(&call_id) {
                    tool.push_output(&chunk);
                }
            }
            Event::ToolCallFinished {
                call_id,
                status,
                output,
                elapsed_ms,
                exit_code,
            } => self.tool_finished(&call_id, status, output, elapsed_ms, exit_code),
            Event::FileChanged {
                call_id,
                path,
                old,
                new,
            } => self.file_changed(&call_id, path, old, new),
            Event::TodosUpdated { todos } => self.todos = todos,
            Event::SubagentStarted {
                task_id,
                description,
            } => self.subagent_started(task_id, description),
            Event::Subagent { task_id, event } => self.subagent_event(&task_id, *event),
            Event::SubagentFinished { task_id, .. } => {
                if let Some(tool) = self.tool_mut(&task_id) {
                    for c in &mut tool.children {
                        c.status.get_or_insert(ToolStatus::Interrupted);
                    }
                }
            }
            Event::TurnFinished { outcome } => self.turn_finished(outcome),
            other => self.on_status_event(other),
        }
    }

    /// The events that change no cell of a running response: notices, answers to listings,
    /// the status line, approvals and rewinds.
    fn on_status_event(&mut self, event: Event) {
        match event {
            Event::ApprovalRequested(req) => self.enqueue_approval(req),
            Event::ApprovalWithdrawn { id } => self.withdraw_approval(&id),
            Event::RewindPoints { points } => self.on_rewind_points(points),
            Event::RewindPlan(plan) => self.on_rewind_plan(plan),
            Event::Rewound {
                message,
                conversation,
                restored,
                skipped,
                ..
            } => self.on_rewound(message, conversation, restored, skipped),
            Event::Compacted {
                before_tokens,
                after_tokens,
            } => {
                self.push_cell(CellKind::Compacted {
                    before: before_tokens,
                    after: after_tokens,
                });
            }
            Event::Usage {
                used_tokens,
                context_window,
            } => {
                self.status.used_tokens = used_tokens;
                self.status.context_window = context_window;
            }
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => self.retrying(attempt, max_attempts, delay_ms, &reason),
            Event::Notice { level, text } => self.notice(text, notice_level(level)),
            Event::ModelQuirk { text, .. } => self.notice(text, Level::Warn),
            Event::ImagesAttached { labels } => self.images_attached(&labels),
            Event::PromptReturned { text } => self.prompt_returned(text),
            Event::ModelChanged { model } => {
                self.status.model = one_line(&model);
                self.notice(format!("model: {model}"), Level::Info);
            }
            Event::McpStatus { servers } => self.notice(
                crate::protocol::describe_mcp_servers(&servers)
                    .trim_end()
                    .to_string(),
                Level::Info,
            ),
            Event::ModeChanged { mode } => self.status.mode = mode,
            Event::Permissions { rules } => self.show_permissions(rules),
            Event::Models { models, error } => self.models_listed(models, error),
            Event::SessionsListed {
                sessions,
                here,
                now,
            } => self.sessions_listed(sessions, &here, now),
            Event::SkillsListed { catalog } => self.skills_listed(&catalog),
            Event::MemoryListed { files } => self.memory_listed(&files),
            Event::Indexing { active } => self.status.indexing = active,
            Event::CommandsListed { commands } => self.custom_commands = commands,
            // Applied by `on_agent_event` (listed so a new event must be placed).
            Event::SessionConfigured(_)
            | Event::TurnStarted
            | Event::UserMessage { .. }
            | Event::ReasoningDelta { .. }
            | Event::AssistantDelta { .. }
            | Event::AssistantMessage { .. }
            | Event::ToolCallStarted { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolCallFinished { .. }
            | Event::FileChanged { .. }
            | Event::TodosUpdated { .. }
            | Event::SubagentStarted { .. }
            | Event::Subagent { .. }
            | Event::SubagentFinished { .. }
            | Event::TurnFinished { .. } => {}
        }
    }

    /// Streamed reasoning: the response's reasoning cell grows (it is made on the first).
    fn reasoning_delta(&mut self, text: &str) {
        self.clear_retry();
        let i = match self.response.reasoning {
            Some(i) => i,
            None => {
                let i = self.push_cell(CellKind::Reasoning {
                    text: String::new(),
                    streaming: true,
                });
                self.response.reasoning = Some(i);
                i
            }
        };
        if let Some(cell) = self.transcript.get_mut(i)
            && let CellKind::Reasoning { text: t, .. } = cell.kind_mut()
        {
            t.push_str(text);
        }
    }

    /// Streamed answer text: the reasoning is over, the response's answer cell grows.
    fn assistant_delta(&mut self, text: &str) {
        self.clear_retry();
        self.end_reasoning();
        let i = match self.response.text {
            Some(i) => i,
            None => {
                let i = self.push_cell(CellKind::Assistant(Answer::streaming()));
                self.response.text = Some(i);
                i
            }
        };
        if let Some(cell) = self.transcript.get_mut(i)
            && let CellKind::Assistant(stream) = cell.kind_mut()
        {
            stream.push(text);
        }
    }

    /// A call begins: its cell (with the diff an edit proposes).
    fn tool_started(&mut self, call_id: String, display: ToolDisplay) {
        self.clear_retry();
        self.end_response();
        let mut cell = ToolCall::new(call_id.clone(), display, self.now);
        cell.proposed = self.proposed_diff(&cell.display);
        let i = self.push_cell(CellKind::Tool(Box::new(cell)));
        self.tool_cells.insert(call_id, i);
    }

    /// A call ended: its cell shows how, and a written edit the change it made.
    fn tool_finished(
        &mut self,
        call_id: &str,
        status: ToolStatus,
        output: String,
        elapsed_ms: u64,
        exit_code: Option<i32>,
    ) {
        let Some(&i) = self.tool_cells.get(call_id) else {
            return;
        };
        let Some(cell) = self.transcript.get_mut(i) else {
            return;
        };
        if let CellKind::Tool(tool) = cell.kind_mut() {
            tool.finish(status, output, elapsed_ms);
            tool.exit_code = exit_code;
            // A written edit is exactly the change it showed (when no `FileChanged` brought
            // the contents, as a resumed one may not).
            if let (ToolStatus::Ok, None, Some(d), Some(path)) =
                (status, &tool.diff, tool.display.diff(), tool.display.path())
            {
                tool.diff = Some(Box::new(FileEdit::new(path, d.clone())));
            }
            // A written edit shows what it wrote, not what it proposed.
            if status == ToolStatus::Ok {
                tool.proposed = None;
            }
        }
    }

    /// A subagent began: the `task` call's cell (made when its start was not seen) shows it.
    fn subagent_started(&mut self, task_id: String, description: String) {
        if !self.tool_cells.contains_key(&task_id) {
            let display = ToolDisplay::Task {
                description: description.clone(),
            };
            let cell = ToolCall::new(task_id.clone(), display, self.now);
            let i = self.push_cell(CellKind::Tool(Box::new(cell)));
            self.tool_cells.insert(task_id.clone(), i);
        }
        if let Some(tool) = self.tool_mut(&task_id) {
            tool.subagent = Some(description);
        }
    }

    /// A request failed and is tried again: one line says so, updated in place, and goes away
    /// when the retry works.
    fn retrying(&mut self, attempt: u32, max_attempts: u32, delay_ms: u64, reason: &str) {
        // The partial response is superseded by the retry: take it off the screen.
        let Response { reasoning, text } = self.response;
        let mut partial: Vec<usize> = [reasoning, text].into_iter().flatten().collect();
        partial.sort_unstable_by(|a, b| b.cmp(a));
        for i in partial {
            self.remove_cell(i);
        }
        self.response = Response::default();
        let text = crate::protocol::retry_notice(attempt, max_attempts, delay_ms, reason);
        let kind = CellKind::Notice {
            text,
            level: Level::Warn,
        };
        match self.retry_cell.and_then(|i| self.transcript.get_mut(i)) {
            Some(cell) => {
                *cell.kind_mut() = kind;
            }
            None => self.retry_cell = Some(self.push_cell(kind)),
        }
    }

    /// The retried request went through (or the turn ended): the transient line goes.
    fn clear_retry(&mut self) {
        if let Some(i) = self.retry_cell.take() {
            self.remove_cell(i);
        }
    }

    /// The diff an edit proposes, laid out once (kept to show a refused edit, folded).
    fn proposed_diff(&self, display: &ToolDisplay) -> Option<Box<FileEdit>> {
        match display {
            ToolDisplay::Edit {
                path,
                diff: Some(d),
            } => Some(Box::new(FileEdit::new(path, d.clone()))),
            _ => None,
        }
    }

    fn enqueue_approval(&mut self, req: crate::protocol::ApprovalRequest) {
        if self.approvals.is_empty() {
            self.approval_guard = !self.composer.is_empty();
            // The question is about the call at the bottom: show it and what led to it.
            self.conversation.to_bottom();
        }
        self.waiting_since.get_or_insert(self.now);
        if req.subagent.is_none()
            && let Some(tool) = self.tool_mut(&req.call_id)
        {
            tool.waiting = true;
        }
        self.approvals.push(req);
    }

    /// The agent decided a question itself (the mode changed): it leaves the queue, and the
    /// pane resets when it was the one shown.
    fn withdraw_approval(&mut self, id: &str) {
        let Some((at, req)) = self.approvals.withdraw(id) else {
            return;
        };
        let now = self.now;
        if req.subagent.is_none()
            && let Some(tool) = self.tool_mut(&req.call_id)
        {
            tool.answered(now);
        }
        if at == 0 {
            self.approval_view.reset();
            self.esc_refusing = None;
        }
        // The last question was answered: the turn's clock runs again.
        if self.approvals.is_empty()
            && let Some(since) = self.waiting_since.take()
        {
            self.waited += self.now.saturating_duration_since(since);
        }
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolCall> {
        let i = *self.tool_cells.get(call_id)?;
        match self.transcript.get_mut(i)?.kind_mut() {
            CellKind::Tool(t) => Some(t),
            _ => None,
        }
    }

    fn configure(&mut self, info: SessionInfo) {
        let SessionInfo {
            session_id,
            model,
            provider,
            cwd,
            context_window,
            approval_mode,
            sandbox_mode,
            mode,
            history,
            keep_view,
        } = info;
        self.status.mode = mode;
        let first = !self.status.configured;
        self.status.model = one_line(&model);
        self.status.provider = one_line(&provider);
        self.status.cwd = cwd;
        self.status.session_id = one_line(&session_id);
        self.status.context_window = context_window;
        self.status.approval_mode = one_line(&approval_mode);
        self.status.sandbox_mode = one_line(&sandbox_mode);
        self.status.configured = true;
        if keep_view && !first && history.is_empty() {
            // A fork: the same conversation goes on under a new session id.
            return;
        }
        // Notices from before the first configuration (a bad theme file) stay on screen.
        let early: Vec<_> = if first {
            std::mem::take(&mut self.transcript).into_cells()
        } else {
            Vec::new()
        };
        self.transcript.clear();
        self.conversation.clear();
        self.tool_cells.clear();
        self.response = Response::default();
        self.approvals.clear();
        self.approval_view.reset();
        self.file_changes.clear();
        self.todos.clear();
        self.last_answer = None;
        self.files = None;
        self.files_requested = false;
        self.replay(history);
        for cell in early {
            self.push(cell);
        }
    }

    /// Builds a resumed conversation from its replayed events, exactly as live ones build
    /// it; a replayed todo list also stays where it changed (live, the panel shows it). Then
    /// every call is over: no later event refers to one, and none shows a duration (it was
    /// not timed now).
    fn replay(&mut self, events: Vec<Event>) {
        self.transcript.reserve(events.len());
        for event in events {
            match event {
                Event::TodosUpdated { todos } => {
                    self.push_cell(CellKind::Todos(todos.clone()));
                    self.todos = todos;
                }
                other => self.on_agent_event(other),
            }
        }
        for (_, i) in self.tool_cells.drain() {
            if let Some(cell) = self.transcript.get_mut(i)
                && let CellKind::Tool(tool) = cell.kind_mut()
            {
                if tool.is_running() {
                    let output = std::mem::take(&mut tool.output);
                    tool.finish(ToolStatus::Interrupted, output, 0);
                }
                tool.elapsed_ms = None;
            }
        }
        self.response = Response::default();
    }

    fn end_reasoning(&mut self) {
        if let Some(i) = self.response.reasoning
            && let Some(cell) = self.transcript.get_mut(i)
            && let CellKind::Reasoning { streaming, .. } = cell.kind_mut()
        {
            *streaming = false;
        }
    }

    /// Closes the streaming cells of the current response.
    fn end_response(&mut self) {
        self.end_reasoning();
        if let Some(i) = self.response.text
            && let Some(cell) = self.transcript.get_mut(i)
            && let CellKind::Assistant(stream) = cell.kind_mut()
            && stream.is_streaming()
        {
            stream.finish(None);
            if !stream.text().trim().is_empty() {
                self.last_answer = Some(stream.text().to_string());
            }
        }
        self.response = Response::default();
    }

    fn assistant_message(&mut self, text: String) {
        self.end_reasoning();
        match self.response.text {
            Some(i) => {
                if let Some(cell) = self.transcript.get_mut(i)
                    && let CellKind::Assistant(stream) = cell.kind_mut()
                {
                    stream.finish(Some(&text));
                }
                if text.trim().is_empty() {
                    self.remove_cell(i);
                }
            }
            None if !text.trim().is_empty() => {
                self.push_cell(CellKind::Assistant(Answer::complete(text.clone())));
            }
            None => {}
        }
        if !text.trim().is_empty() {
            self.last_answer = Some(text);
        }
        self.response = Response::default();
    }

    /// A file was written: `/diff` learns it, and the call that wrote it shows the change.
    /// (Its contents are missing only from a replay that did not keep them: then the call's
    /// own diff shows it.)
    fn file_changed(
        &mut self,
        call_id: &str,
        path: String,
        old: Option<String>,
        new: Option<String>,
    ) {
        let diff = new
            .as_deref()
            .map(|new| FileEdit::between(&path, old.as_deref(), new));
        let origin = self.origin_of(call_id);
        self.record_file_change(path, old, new, origin);
        let child_command = self.is_child_command(call_id);
        let Some(diff) = diff else {
            return;
        };
        match self.tool_mut(call_id) {
            // A command's or a subagent's changes are for `/diff`; its cell shows what it
            // printed.
            Some(tool)
                if matches!(
                    tool.display,
                    ToolDisplay::Exec { .. } | ToolDisplay::Task { .. }
                ) => {}
            None if child_command => {}
            Some(tool) => {
                tool.diff = Some(Box::new(diff));
            }
            None => {
                self.push_cell(CellKind::Diff(vec![diff]));
            }
        }
    }

    /// Keeps what `/diff` needs: per file, the content before its first change and after its
    /// last (`None`: not kept, too large).
    fn record_file_change(
        &mut self,
        path: String,
        old: Option<String>,
        new: Option<String>,
        origin: Option<String>,
    ) {
        let complete = new.is_some();
        let c = match self.file_changes.iter().position(|c| c.path == path) {
            Some(i) => {
                let c = &mut self.file_changes[i];
                c.complete &= complete;
                c.new = new;
                c
            }
            None => {
                self.file_changes.push(super::FileChange {
                    path,
                    old,
                    new,
                    complete,
                    origins: Vec::new(),
                });
                let last = self.file_changes.len() - 1;
                &mut self.file_changes[last]
            }
        };
        if let Some(o) = origin
            && c.origins.last() != Some(&o)
        {
            c.origins.push(o);
        }
    }

    /// The call that made a change, as `/diff` names it (a subagent's calls too).
    fn origin_of(&self, call_id: &str) -> Option<String> {
        self.transcript.cells().iter().find_map(|c| match c.kind() {
            CellKind::Tool(t) if t.call_id == call_id => Some(ToolCall::summary(&t.display)),
            CellKind::Tool(t) => t
                .children
                .iter()
                .find(|ch| ch.call_id == call_id)
                .map(|ch| ch.summary.clone()),
            _ => None,
        })
    }

    /// Whether `call_id` is a subagent's command (its changes are for `/diff` only).
    fn is_child_command(&self, call_id: &str) -> bool {
        self.transcript.cells().iter().any(|c| match c.kind() {
            CellKind::Tool(t) => t
                .children
                .iter()
                .any(|ch| ch.call_id == call_id && ch.command),
            _ => false,
        })
    }

    fn subagent_event(&mut self, task_id: &str, event: crate::protocol::Event) {
        let label = self
            .tool_mut(task_id)
            .and_then(|t| t.subagent.clone())
            .unwrap_or_else(|| "subagent".to_string());
        match event {
            Event::ToolCallStarted { call_id, display } => {
                if let Some(tool) = self.tool_mut(task_id) {
                    tool.children.push(ChildCall {
                        call_id,
                        summary: ToolCall::summary(&display),
                        status: None,
                        command: matches!(display, ToolDisplay::Exec { .. }),
                    });
                }
            }
            Event::ToolCallFinished {
                call_id, status, ..
            } => {
                if let Some(tool) = self.tool_mut(task_id)
                    && let Some(c) = tool.children.iter_mut().find(|c| c.call_id == call_id)
                {
                    c.status = Some(status);
                }
            }
            Event::ApprovalRequested(mut req) => {
                req.subagent.get_or_insert(first_line(&label));
                self.enqueue_approval(req);
            }
            Event::ApprovalWithdrawn { id } => self.withdraw_approval(&id),
            Event::Notice { level, text } => {
                let text = format!("{}: {text}", first_line(&label));
                self.notice(text, notice_level(level));
            }
            // A subagent's write counts for /diff like any other.
            changed @ Event::FileChanged { .. } => self.on_agent_event(changed),
            _ => {}
        }
    }

    fn turn_finished(&mut self, outcome: TurnOutcome) {
        self.end_response();
        // Calls that never reported an end were stopped with the turn.
        let running: Vec<usize> = self.tool_cells.values().copied().collect();
        for i in running {
            if let Some(cell) = self.transcript.get_mut(i)
                && let CellKind::Tool(t) = cell.kind_mut()
                && t.is_running()
            {
                let elapsed = self.now.saturating_duration_since(t.started).as_millis() as u64;
                let output = std::mem::take(&mut t.output);
                t.finish(ToolStatus::Interrupted, output, elapsed);
            }
        }
        // A retry line stays only when the request failed in the end.
        let failed = matches!(outcome, TurnOutcome::Failed { .. });
        if failed {
            self.retry_cell = None;
        } else {
            self.clear_retry();
        }
        let outcome_interrupted = outcome == TurnOutcome::Interrupted;
        self.plan_offer = outcome == TurnOutcome::Completed
            && self.status.mode == ApprovalMode::Plan
            && !self.shell_turn;
        match outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::Interrupted => self.notice("interrupted", Level::Warn),
            TurnOutcome::Failed { reason } => {
                self.notice(format!("turn failed: {reason}"), Level::Error)
            }
        }
        self.busy = false;
        self.shell_turn = false;
        self.waiting_since = None;
        self.interrupting = false;
        self.turn_started = None;
        self.approvals.clear();
        self.approval_view.reset();
        if outcome_interrupted {
            // Stopping is not a "send": what was queued comes back to the composer.
            self.unqueue_to_composer();
        } else if let Some(next) = self.queued.pop_front() {
            self.start_turn(next);
        }
    }
}

impl App {
    /// Adds the labels of the images the last message attached to its cell, one a line.
    fn images_attached(&mut self, labels: &[String]) {
        let Some(cell) = self
            .transcript
            .iter_mut()
            .rev()
            .find(|c| matches!(c.kind(), CellKind::User(_)))
        else {
            return;
        };
        if let CellKind::User(text) = cell.kind_mut() {
            for label in labels {
                text.push('\n');
                text.push_str(label);
            }
        }
    }

    /// A message that was not sent comes back to the composer (before what is typed there),
    /// and its cell, still the last one, leaves the conversation.
    fn prompt_returned(&mut self, text: String) {
        let last = self.transcript.len().saturating_sub(1);
        if self
            .transcript
            .get_mut(last)
            .is_some_and(|c| matches!(c.kind(), CellKind::User(t) if *t == text))
        {
            self.transcript.remove(last);
            self.conversation.removed(last, self.transcript.len());
        }
        let typed = self.composer.text();
        if typed.trim().is_empty() {
            self.composer.set_text(&text);
        } else {
            self.composer.set_text(&format!("{text}\n\n{typed}"));
        }
    }

    /// Puts the queued messages back in the composer (before what is typed there), one
    /// paragraph each.
    fn unqueue_to_composer(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let mut parts: Vec<String> = self.queued.drain(..).collect();
        if !self.composer.is_empty() {
            parts.push(self.composer.text());
        }
        self.composer.set_text(&parts.join("\n\n"));
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}
