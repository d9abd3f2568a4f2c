//! View state of the TUI. It applies agent `Event`s and terminal input and records what the
//! outside world should do as `Effect`s; it does no I/O itself, so every behaviour is testable
//! by feeding it events (time is injected with `set_now`).

mod commands;
mod draw;
mod events;
mod flow;
mod found;
mod keys;
mod rewind;

pub use commands::{COMMANDS, SlashCommand};
// Where `events` (and the tests) have always found them.
pub(crate) use crate::tui::layers::pickers::{ModelPicker, Popup};
pub(crate) use crate::tui::model::FileChange;
pub use crate::tui::model::StatusInfo;

use crate::protocol::{Op, RuleInfo, Todo};
use crate::tui::layers::session_picker::SessionPicker;
use crate::tui::model::approvals::Approvals;
use crate::tui::model::cell::{Cell, CellKind, Level};
use crate::tui::model::transcript::Transcript;
use crate::tui::theme::Theme;
use crate::tui::view::approval::ApprovalView;
use crate::tui::view::cell::RenderCtx;
use crate::tui::view::composer::Composer;
use crate::tui::view::conversation::Conversation;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Two Ctrl+C within this interval quit.
pub const DOUBLE_PRESS: Duration = Duration::from_secs(1);
/// An Esc this soon after an Esc that refused a question refuses and stops the turn (later
/// ones just refuse the next question: the person may be refusing them one by one).
pub const DOUBLE_ESC: Duration = Duration::from_millis(400);
/// When a modal appears while the person is typing a message, letters keep being ignored
/// until they pause this long: the keys were meant for the composer, not as an answer to a
/// question they have not read yet.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(500);
/// Spinner frame period.
pub const SPINNER_PERIOD: Duration = Duration::from_millis(100);

/// Something the run loop must do on the app's behalf.
#[derive(Clone, Debug)]
pub enum Effect {
    /// Send an operation to the agent.
    Op(Op),
    /// Append a sent message to the persisted input history.
    SaveHistory(String),
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// List the files under this directory for `@` completion.
    IndexFiles(PathBuf),
    /// Edit this text in `$EDITOR` (Ctrl+G) and hand the result to `App::edited`.
    EditInEditor(String),
    /// Suspend rein like a shell job (Ctrl+Z); the terminal is restored until it resumes.
    Suspend,
    /// Leave the app.
    Quit,
}

/// Cells of the model response being streamed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Response {
    pub(crate) reasoning: Option<usize>,
    pub(crate) text: Option<usize>,
}

/// The whole view state.
#[derive(Debug)]
pub struct App {
    pub(crate) theme: Theme,
    /// The conversation's cells (what is shown).
    pub(crate) transcript: Transcript,
    /// The conversation pane (how far it is scrolled, the cells' layouts).
    pub(crate) conversation: Conversation,
    pub(crate) composer: Composer,
    pub(crate) status: StatusInfo,
    pub(crate) home: Option<PathBuf>,
    pub(crate) todos: Vec<Todo>,
    pub(crate) todos_hidden: bool,
    pub(crate) approvals: Approvals,
    pub(crate) approval_view: ApprovalView,
    /// When Esc was pressed in a question: the refusal goes out [`DOUBLE_ESC`] later, unless a
    /// second Esc comes first and stops the turn. (Sending it at once would let the model be
    /// asked again before the second Esc could stop it.)
    pub(crate) esc_refusing: Option<Instant>,
    /// Since when the turn waits for an answer (its timer pauses meanwhile).
    pub(crate) waiting_since: Option<Instant>,
    /// Time this turn spent waiting for answers.
    pub(crate) waited: Duration,
    /// The turn that ended was planned in plan mode: offer to approve the plan.
    pub(crate) plan_offer: bool,
    /// The running turn is a `!cmd` (no plan to approve after it).
    pub(crate) shell_turn: bool,
    /// The rules `/permissions` listed last (numbers for `/permissions drop N`).
    pub(crate) permissions: Vec<RuleInfo>,
    /// The `/model` picker: `Some` while open (empty and loading until the list arrives).
    pub(crate) model_picker: Option<ModelPicker>,
    /// The transient "retrying…" line of the current request.
    pub(crate) retry_cell: Option<usize>,
    /// The modal appeared while a message was being typed: letters are ignored until a pause.
    pub(crate) approval_guard: bool,
    /// When the previous key was pressed.
    pub(crate) last_key: Option<Instant>,
    pub(crate) popup: Option<Popup>,
    /// The `/resume` picker, full screen while open.
    pub(crate) session_picker: Option<SessionPicker>,
    /// The `/rewind` dialog, while open.
    pub(crate) rewind: Option<crate::tui::view::rewind::RewindDialog>,
    /// When Esc was pressed on an empty, idle composer (a second press opens `/rewind`).
    pub(crate) last_esc: Option<Instant>,
    pub(crate) popup_dismissed: Option<String>,
    /// The custom slash commands the agent found (`Event::CommandsListed`).
    pub(crate) custom_commands: Vec<crate::protocol::CommandInfo>,
    pub(crate) queued: VecDeque<String>,
    pub(crate) busy: bool,
    pub(crate) interrupting: bool,
    pub(crate) turn_started: Option<Instant>,
    pub(crate) expand_all: bool,
    /// Per changed file, in order of first change (for `/diff`).
    pub(crate) file_changes: Vec<FileChange>,
    pub(crate) files: Option<Vec<String>>,
    pub(crate) files_requested: bool,
    pub(crate) response: Response,
    pub(crate) tool_cells: HashMap<String, usize>,
    pub(crate) last_answer: Option<String>,
    pub(crate) last_ctrl_c: Option<Instant>,
    epoch: Instant,
    pub(crate) now: Instant,
    effects: Vec<Effect>,
    dirty: bool,
    /// `Op::SessionShown` went out (after the first frame that showed the session).
    shown_sent: bool,
    quit: bool,
}

impl App {
    /// A new app. `history` is the persisted input history (oldest first); `home` shortens
    /// paths in the status line; `now` starts the clock.
    pub fn new(theme: Theme, history: Vec<String>, home: Option<PathBuf>, now: Instant) -> App {
        let mut composer = Composer::new(history);
        composer.set_theme(&theme);
        App {
            theme,
            transcript: Transcript::default(),
            conversation: Conversation::default(),
            composer,
            status: StatusInfo::default(),
            home,
            todos: Vec::new(),
            todos_hidden: false,
            approvals: Approvals::default(),
            approval_view: ApprovalView::default(),
            esc_refusing: None,
            waiting_since: None,
            waited: Duration::ZERO,
            plan_offer: false,
            shell_turn: false,
            permissions: Vec::new(),
            model_picker: None,
            retry_cell: None,
            approval_guard: false,
            last_key: None,
            popup: None,
            session_picker: None,
            rewind: None,
            last_esc: None,
            popup_dismissed: None,
            custom_commands: Vec::new(),
            queued: VecDeque::new(),
            busy: false,
            interrupting: false,
            turn_started: None,
            expand_all: false,
            file_changes: Vec::new(),
            files: None,
            files_requested: false,
            response: Response::default(),
            tool_cells: HashMap::new(),
            last_answer: None,
            last_ctrl_c: None,
            epoch: now,
            now,
            effects: Vec::new(),
            dirty: true,
            shown_sent: false,
            quit: false,
        }
    }

    /// Advances the clock (the run loop calls this before handling anything).
    pub fn set_now(&mut self, now: Instant) {
        self.now = now.max(self.epoch);
    }

    /// Takes the effects recorded since the last call.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Whether a frame should be drawn.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Marks the frame drawn; the first one that shows the session tells the agent, which
    /// starts the MCP servers only then.
    pub fn mark_drawn(&mut self) {
        self.dirty = false;
        if self.status.configured && !self.shown_sent {
            self.shown_sent = true;
            tracing::info!("tui: the session is on screen");
            self.send(Op::SessionShown);
        }
    }

    /// Requests a redraw.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Whether the app wants to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether a turn is running.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Messages waiting for the turn to finish.
    pub fn queued(&self) -> impl Iterator<Item = &str> {
        self.queued.iter().map(String::as_str)
    }

    /// The composer's current text.
    pub fn composer_text(&self) -> String {
        self.composer.text()
    }

    /// The conversation cells.
    pub fn cells(&self) -> &[Cell] {
        self.transcript.cells()
    }

    /// Whether the conversation view follows new output.
    pub fn is_following(&self) -> bool {
        self.conversation.is_following()
    }

    /// Cells added below while scrolled up (the `↓ N new` marker).
    pub fn new_below(&self) -> usize {
        self.conversation.new_below()
    }

    /// Shows conversation cell `i` at the top of the view.
    pub fn scroll_to_cell(&mut self, i: usize) {
        self.conversation.scroll_to_cell(i, self.transcript.len());
        self.dirty = true;
    }

    /// The open session picker (`/resume`), if any.
    pub fn session_picker(&self) -> Option<&SessionPicker> {
        self.session_picker.as_ref()
    }

    /// Whether the `/rewind` dialog is open.
    pub fn rewind_open(&self) -> bool {
        self.rewind.is_some()
    }

    /// Approval requests waiting for an answer.
    pub fn pending_approvals(&self) -> usize {
        self.approvals.len()
    }

    /// The status line facts.
    pub fn status(&self) -> &StatusInfo {
        &self.status
    }

    /// The file list for `@` completion arrived.
    pub fn set_files(&mut self, files: Vec<String>) {
        self.files = Some(files);
        self.update_popup();
        self.dirty = true;
    }

    /// When the run loop should wake up without input (spinner frames, the Ctrl+C hint
    /// expiring); `None` when idle.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        if let Some(t) = self.last_ctrl_c {
            let expiry = t + DOUBLE_PRESS;
            if expiry > self.now {
                next = Some(expiry);
            }
        }
        if let Some(t) = self.esc_refusing {
            let due = t + DOUBLE_ESC;
            next = Some(next.map_or(due, |n| n.min(due)));
        }
        if self.is_animating() {
            let period = SPINNER_PERIOD.as_millis();
            let since = self.now.saturating_duration_since(self.epoch).as_millis();
            let wait = period - since % period;
            let tick = self.now + Duration::from_millis(wait as u64);
            next = Some(next.map_or(tick, |n| n.min(tick)));
        }
        next
    }

    /// Whether something on screen moves by itself. Idle means no: no timer, no wake-ups.
    /// (The todo panel's spinner also only turns while a turn runs.)
    pub fn is_animating(&self) -> bool {
        self.busy
            || self
                .transcript
                .cells()
                .iter()
                .rev()
                .take(50)
                .any(Cell::is_live)
    }

    /// The time-dependent part of a frame: a wake-up with nothing else to do just redraws.
    pub fn on_tick(&mut self) {
        if self.is_animating() {
            self.dirty = true;
        }
        if self
            .esc_refusing
            .is_some_and(|t| self.now >= t + DOUBLE_ESC)
        {
            self.send_esc_refusal();
            self.dirty = true;
        }
        if self
            .last_ctrl_c
            .is_some_and(|t| self.now >= t + DOUBLE_PRESS)
        {
            self.last_ctrl_c = None;
            self.dirty = true;
        }
    }

    /// Rendering context for this frame, the pane and the cells it draws.
    pub(crate) fn render_parts(&mut self) -> (RenderCtx<'_>, &mut Conversation, &Transcript) {
        let spinner = (self.now.saturating_duration_since(self.epoch).as_millis()
            / SPINNER_PERIOD.as_millis()) as usize;
        let ctx = RenderCtx {
            theme: &self.theme,
            now: self.now,
            spinner,
            expand_all: self.expand_all,
        };
        (ctx, &mut self.conversation, &self.transcript)
    }

    pub(crate) fn spinner_index(&self) -> usize {
        (self.now.saturating_duration_since(self.epoch).as_millis() / SPINNER_PERIOD.as_millis())
            as usize
    }

    pub(crate) fn effect(&mut self, e: Effect) {
        self.effects.push(e);
    }

    pub(crate) fn send(&mut self, op: Op) {
        self.effects.push(Effect::Op(op));
    }

    pub(crate) fn push_cell(&mut self, kind: CellKind) -> usize {
        self.push(Cell::new(kind))
    }

    /// Appends a cell to the transcript and tells the pane (it counts cells added below).
    pub(crate) fn push(&mut self, cell: Cell) -> usize {
        self.conversation.added();
        self.transcript.push(cell)
    }

    pub(crate) fn notice(&mut self, text: impl Into<String>, level: Level) {
        self.push_cell(CellKind::Notice {
            text: text.into(),
            level,
        });
    }

    pub(crate) fn request_quit(&mut self) {
        if !self.quit {
            self.quit = true;
            self.effects.push(Effect::Quit);
        }
    }

    /// Sends a message now (idle) or queues it until the turn finishes (busy).
    pub(crate) fn submit_message(&mut self, text: String) {
        if self.busy {
            self.queued.push_back(text);
            return;
        }
        self.start_turn(text);
    }

    pub(crate) fn start_turn(&mut self, text: String) {
        self.push_cell(CellKind::User(text.clone()));
        self.begin_turn();
        self.shell_turn = text.trim_start().starts_with('!');
        match text.trim_start().strip_prefix('!') {
            Some(command) => self.send(Op::RunShell {
                command: command.trim().to_string(),
            }),
            None => self.send(Op::UserInput { text }),
        }
    }

    fn begin_turn(&mut self) {
        self.conversation.to_bottom();
        self.busy = true;
        self.interrupting = false;
        self.plan_offer = false;
        self.turn_started = Some(self.now);
        self.waited = Duration::ZERO;
        self.waiting_since = None;
    }

    /// How long the turn has run, not counting the time it waited for answers.
    pub(crate) fn run_time(&self) -> Duration {
        let Some(start) = self.turn_started else {
            return Duration::ZERO;
        };
        let waiting = self
            .waiting_since
            .map_or(Duration::ZERO, |w| self.now.saturating_duration_since(w));
        self.now
            .saturating_duration_since(start)
            .saturating_sub(self.waited + waiting)
    }

    pub(crate) fn interrupt(&mut self) {
        if self.busy && !self.interrupting {
            self.interrupting = true;
            self.send(Op::Interrupt);
        }
    }

    /// Removes a cell and keeps the index maps right.
    pub(crate) fn remove_cell(&mut self, i: usize) {
        self.transcript.remove(i);
        self.conversation.removed(i, self.transcript.len());
        let fix = |x: &mut usize| {
            if *x > i {
                *x -= 1;
            }
        };
        self.tool_cells.retain(|_, v| *v != i);
        self.tool_cells.values_mut().for_each(fix);
        for slot in [
            &mut self.response.reasoning,
            &mut self.response.text,
            &mut self.retry_cell,
        ] {
            match slot {
                Some(x) if *x == i => *slot = None,
                Some(x) => fix(x),
                None => {}
            }
        }
    }

    /// Shortens a path for display: `~` for the home directory, `…/a/b` when long.
    pub fn short_path(&self, path: &std::path::Path, max: usize) -> String {
        crate::tui::wrap::short_path(path, self.home.as_deref(), max)
    }
}

#[cfg(test)]
mod tests;
