//! Resuming: the model context (from the last compaction on, repaired so both APIs accept it)
//! and the whole visible conversation, replayed as the [`Event`]s that showed it, from one pass
//! over the loaded entries.

use super::SessionError;
use super::entry::{Entry, RewindEntry};
use super::header::Header;
use super::load::{LoadedSession, read_entries};
use crate::checkpoint::RewindLog;
use crate::llm::{AssistantPart, Message, Usage};
use crate::protocol::{ApprovalMode, Event, NoticeLevel, Todo, ToolStatus};
use crate::tools::Registry;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The result given to a tool call that has none in the file (rein was killed while it ran).
pub const DANGLING_TOOL_RESULT: &str =
    "(rein stopped before this tool finished; no result was recorded)";

/// A session ready to continue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumed {
    /// The session file (continue it with `SessionWriter::open_append`).
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// The model context: the last compaction's context (if any), then every message after it.
    pub messages: Vec<Message>,
    /// The whole visible conversation from the first message, as the events a front end
    /// replays to show it, with a notice at each compaction.
    pub view: Vec<Event>,
    /// The latest todo list.
    pub todos: Vec<Todo>,
    /// The latest title (`rename`), if any.
    pub title: Option<String>,
    /// The model in use at the end (header, then `model_change` entries).
    pub model: String,
    /// The last usage reported after the last compaction (what the context cost then).
    pub usage: Option<Usage>,
    /// What loading skipped and what was repaired, for the person.
    pub notices: Vec<String>,
    /// The approval mode at the end, when it was ever switched.
    pub mode: Option<ApprovalMode>,
    /// The user messages and file changes, for `/rewind`.
    pub rewind: RewindLog,
}

/// A notice of the replay.
fn notice(level: NoticeLevel, text: String) -> Event {
    Event::Notice { level, text }
}

/// Turns a loaded session into the model context and the view. Takes the session by value
/// so texts move instead of being copied. [`resume`] does the same straight from the file
/// without holding all entries at once.
pub fn rebuild(session: LoadedSession) -> Resumed {
    let LoadedSession {
        path,
        header,
        entries,
        notices,
    } = session;
    let mut r = Rebuilder::new(header);
    for entry in entries {
        r.push(entry);
    }
    r.finish(path, notices)
}

/// Reads a session file and rebuilds it in one streaming pass: each entry goes to the view and
/// the context as it is parsed, and each compaction drops the context before it, so memory
/// holds the view and the live context, never the whole file or every entry.
pub fn resume(path: &Path) -> Result<Resumed, SessionError> {
    resume_within(path, None)
}

/// Like [`resume`], but the model context keeps at most about `max_context_bytes` of the most
/// recent messages (plus the first prompt): older ones could never be sent or summarised within
/// the model's window, so holding them would only cost memory. The view keeps everything.
pub fn resume_within(
    path: &Path,
    max_context_bytes: Option<usize>,
) -> Result<Resumed, SessionError> {
    let mut rebuilder: Option<Rebuilder> = None;
    let (header, notices) = read_entries(path, |header, entry| {
        rebuilder
            .get_or_insert_with(|| Rebuilder::new(header.clone()).bounded(max_context_bytes))
            .push(entry);
    })?;
    let r = rebuilder.unwrap_or_else(|| Rebuilder::new(header));
    Ok(r.finish(path.to_path_buf(), notices))
}

/// The session as it was just before its user message number `ordinal` (counting the file's
/// `user` entries from 0): the model context, view and todos a conversation rewind goes back
/// to. Bounded like [`resume_within`].
pub fn resume_before(
    path: &Path,
    ordinal: usize,
    max_context_bytes: Option<usize>,
) -> Result<Resumed, SessionError> {
    let mut rebuilder: Option<Rebuilder> = None;
    let (header, notices) = read_entries(path, |header, entry| {
        let r = rebuilder.get_or_insert_with(|| {
            let mut r = Rebuilder::new(header.clone()).bounded(max_context_bytes);
            r.stop_at = Some(ordinal);
            r
        });
        r.push(entry);
    })?;
    let r = rebuilder.unwrap_or_else(|| Rebuilder::new(header));
    Ok(r.finish(path.to_path_buf(), notices))
}

/// The context bound [`resume_within`] should get for a model window of `tokens`: about four
/// windows of raw text (4 bytes a token). Beyond that, history can never be sent, even with old
/// tool output micro-compacted, nor summarised.
pub fn context_bytes_for_window(tokens: u64) -> usize {
    usize::try_from(tokens.saturating_mul(16)).unwrap_or(usize::MAX)
}

/// Text bytes a message holds (what its memory and its token estimate grow with).
fn message_bytes(m: &Message) -> usize {
    match m {
        Message::User { content } | Message::ToolResult { content, .. } => content.len(),
        // What it costs in memory is its reference; the bytes are loaded later, once.
        Message::UserImage { image } => image.meta.name.len() + 64,
        Message::Assistant { parts } => parts
            .iter()
            .map(|p| match p {
                AssistantPart::Text { text } => text.len(),
                AssistantPart::Thinking { text, signature } => {
                    text.len() + signature.as_ref().map_or(0, String::len)
                }
                AssistantPart::RedactedThinking { data } => data.len(),
                AssistantPart::ToolCall(c) => c.arguments.len() + c.name.len(),
            })
            .sum(),
    }
}

/// The state of a rebuild in progress, fed one entry at a time.
struct Rebuilder {
    header: Header,
    registry: Registry,
    messages: Vec<Message>,
    view: Vec<Event>,
    /// Where each call's `ToolCallStarted` is, until its result arrives.
    open_calls: HashMap<String, usize>,
    /// The call a file change that follows belongs to (the last one started).
    last_call: Option<String>,
    todos: Vec<Todo>,
    title: Option<String>,
    model: String,
    usage: Option<Usage>,
    mode: Option<ApprovalMode>,
    /// Calls the person refused whose result has not come yet.
    refused: HashSet<String>,
    /// Bound on the context's text bytes (`None`: keep everything).
    max_bytes: Option<usize>,
    /// Text bytes in `messages`.
    bytes: usize,
    /// The session's first prompt, kept when older context is dropped.
    first_prompt: Option<Message>,
    /// Messages dropped from the front of the context.
    trimmed: usize,
    /// Points and changes for `/rewind`.
    rewind: RewindLog,
    /// Where each user entry (by ordinal) starts in the view.
    user_marks: Vec<usize>,
    /// Stop before the user entry with this ordinal (`resume_before`).
    stop_at: Option<usize>,
    stopped: bool,
}

impl Rebuilder {
    fn bounded(mut self, max_bytes: Option<usize>) -> Rebuilder {
        self.max_bytes = max_bytes;
        self
    }

    fn push_message(&mut self, msg: Message) {
        self.bytes += message_bytes(&msg);
        if self.first_prompt.is_none() && matches!(msg, Message::User { .. }) {
            self.first_prompt = Some(msg.clone());
        }
        self.messages.push(msg);
        if let Some(max) = self.max_bytes
            && self.bytes > max.saturating_mul(2)
        {
            self.trim(max);
        }
    }

    /// Drops the oldest messages until at most `max` bytes remain, cutting only before a user
    /// or assistant message so no tool result loses its call. Amortised: runs when the context
    /// has doubled past the bound.
    fn trim(&mut self, max: usize) {
        let mut keep = self.bytes;
        let mut cut = 0;
        for (i, m) in self.messages.iter().enumerate() {
            if keep <= max && !matches!(m, Message::ToolResult { .. } | Message::UserImage { .. }) {
                cut = i;
                break;
            }
            keep -= message_bytes(m);
            cut = i + 1;
        }
        // Never drop the message just pushed: that would leave nothing to continue from.
        let cut = cut.min(self.messages.len().saturating_sub(1));
        if cut == 0 {
            return;
        }
        let dropped: usize = self.messages[..cut].iter().map(message_bytes).sum();
        self.messages.drain(..cut);
        self.bytes -= dropped;
        self.trimmed += cut;
    }

    fn new(header: Header) -> Rebuilder {
        Rebuilder {
            title: header.title.clone(),
            model: header.model.clone(),
            header,
            registry: Registry::builtin(),
            messages: Vec::new(),
            view: Vec::new(),
            open_calls: HashMap::new(),
            last_call: None,
            todos: Vec::new(),
            usage: None,
            mode: None,
            refused: HashSet::new(),
            max_bytes: None,
            bytes: 0,
            first_prompt: None,
            trimmed: 0,
            rewind: RewindLog::default(),
            user_marks: Vec::new(),
            stop_at: None,
            stopped: false,
        }
    }

    fn push(&mut self, entry: Entry) {
        if self.stopped {
            return;
        }
        match entry {
            Entry::User(e) => self.user(e),
            Entry::Assistant(e) => {
                self.assistant_view(&e.parts);
                self.push_message(Message::Assistant { parts: e.parts });
            }
            Entry::ToolResult(e) => self.tool_result(e),
            Entry::Todos(e) => {
                self.view.push(Event::TodosUpdated {
                    todos: e.todos.clone(),
                });
                self.todos = e.todos;
            }
            Entry::Compaction(e) => self.compaction(e),
            Entry::Usage(e) => {
                self.usage = Some(Usage {
                    input_tokens: e.input_tokens,
                    output_tokens: e.output_tokens,
                    ..Usage::default()
                });
            }
            Entry::Error(e) => self.error(e.message),
            Entry::Interrupted(e) => {
                // The cut-off answer was on screen: it comes back, marked by the notice.
                if let Some(text) = e.partial {
                    self.view.push(Event::AssistantMessage { text });
                }
                self.view
                    .push(notice(NoticeLevel::Warn, "Interrupted.".into()));
            }
            Entry::Rename(e) => self.title = Some(e.title),
            Entry::ModelChange(e) => {
                let text = format!("Model switched to {}.", e.model);
                self.view.push(notice(NoticeLevel::Info, text));
                self.model = e.model;
            }
            Entry::FileChange(e) => {
                let call_id = self.last_call.clone().unwrap_or_default();
                self.file_change(call_id, e);
            }
            Entry::ModeChange(e) => self.mode = Some(e.mode),
            // A subagent's writes count for `/diff` too, under its task; the rest of its chain
            // stays its own.
            Entry::Subagent(e) => {
                if let Entry::FileChange(change) = *e.entry {
                    self.file_change(e.task_id, change);
                }
            }
            Entry::Checkpoint(e) => self.rewind.record(e.changes),
            Entry::Rewind(e) => self.rewound(e),
            Entry::Image(e) => {
                // The person's cell shows it, as live: `[image shot.png 1280×720]`.
                let labels = vec![e.image.label()];
                match self.view.last() {
                    Some(Event::UserMessage { .. } | Event::ImagesAttached { .. }) => {
                        self.view.push(Event::ImagesAttached { labels })
                    }
                    _ => self.view.push(Event::UserMessage {
                        text: labels.join("\n"),
                    }),
                }
                if let Some(msg) = Entry::Image(e).to_message() {
                    self.push_message(msg);
                }
            }
            // Quirks are for the eval and the transcript; the repaired messages carry the state.
            Entry::ModelQuirk(_) => {}
            // Approvals show in the tool's status.
            Entry::Approval(e) => {
                if e.decision == crate::protocol::Decision::No {
                    self.refused.insert(e.call_id);
                }
            }
        }
    }

    /// A user entry: the person's message (a point to rewind to) or a nudge of rein's.
    fn user(&mut self, e: super::entry::UserEntry) {
        // Only the person's messages are points to rewind to, as live.
        if e.by_person() {
            if self.stop_at == Some(self.user_marks.len()) {
                self.stopped = true;
                return;
            }
            self.user_marks.push(self.view.len());
            self.rewind
                .user_message(e.command.as_deref().unwrap_or(&e.content));
        }
        self.view.push(match e.from {
            Some(super::UserFrom::Rein) => {
                notice(NoticeLevel::Info, crate::protocol::nudge_notice(&e.content))
            }
            _ => Event::UserMessage {
                text: e.command.clone().unwrap_or_else(|| e.content.clone()),
            },
        });
        self.push_message(Message::User { content: e.content });
    }

    /// A tool's result: its call ends, as shown live (or is shown whole when its call was not
    /// seen).
    fn tool_result(&mut self, e: super::entry::ToolResultEntry) {
        self.push_message(Message::ToolResult {
            call_id: e.call_id.clone(),
            name: e.name.clone(),
            content: e.content.clone(),
            is_error: e.is_error,
        });
        // Files from before statuses were recorded: a refused call was "denied", not "failed".
        let refused = self.refused.remove(&e.call_id);
        let status = e.status.unwrap_or(match (e.is_error, refused) {
            (true, true) => ToolStatus::Denied,
            (true, false) => ToolStatus::Error,
            (false, _) => ToolStatus::Ok,
        });
        match self.open_calls.remove(&e.call_id) {
            // What the live view showed; older files keep the rebuilt one.
            Some(at) => {
                if let (Some(Event::ToolCallStarted { display, .. }), Some(d)) =
                    (self.view.get_mut(at), e.display)
                {
                    *display = d;
                }
            }
            None => self.view.push(Event::ToolCallStarted {
                call_id: e.call_id.clone(),
                display: e
                    .display
                    .unwrap_or_else(|| self.registry.describe(&e.name, "")),
            }),
        }
        self.view.push(Event::ToolCallFinished {
            call_id: e.call_id,
            status,
            output: e.content,
            elapsed_ms: e.elapsed_ms.unwrap_or(0),
            exit_code: e.exit_code,
        });
    }

    /// A compaction: a notice in the view; the context starts again from its summary.
    fn compaction(&mut self, e: super::entry::CompactionEntry) {
        let text = format!(
            "Conversation compacted ({} → {} tokens): the model continues from a summary; \
             everything above stays here to read.",
            e.before_tokens, e.after_tokens
        );
        self.view.push(notice(NoticeLevel::Info, text));
        // Everything before is replaced: the usage reported for it no longer applies.
        self.bytes = e.context.iter().map(message_bytes).sum();
        self.messages = e.context;
        self.usage = None;
        // The summary carries the first prompt's goal from here on.
        self.first_prompt = None;
        self.trimmed = 0;
    }

    /// A request that failed.
    fn error(&mut self, message: String) {
        // The model refused images: the ones before are not sent to it again.
        if message.contains(crate::images::support::REFUSED) {
            for msg in &mut self.messages {
                if let Message::UserImage { image } = msg {
                    image.drop_bytes("the model refused images");
                }
            }
        }
        self.view
            .push(notice(NoticeLevel::Error, format!("Error: {message}")));
    }

    /// A file written by the call `call_id`, for `/diff`.
    fn file_change(&mut self, call_id: String, e: super::entry::FileChangeEntry) {
        self.view.push(Event::FileChanged {
            call_id,
            path: e.path,
            old: e.old,
            new: e.new,
        });
    }

    /// The events of one assistant message: text (with the reasoning before it) and the start
    /// of each call, waiting for its result.
    fn assistant_view(&mut self, parts: &[AssistantPart]) {
        let mut reasoning = String::new();
        let mut text = String::new();
        for part in parts {
            match part {
                AssistantPart::Thinking { text: t, .. } if !t.is_empty() => {
                    if !text.is_empty() {
                        answer(&mut self.view, &mut text, &mut reasoning);
                    }
                    if !reasoning.is_empty() {
                        reasoning.push('\n');
                    }
                    reasoning.push_str(t);
                }
                AssistantPart::Thinking { .. } | AssistantPart::RedactedThinking { .. } => {}
                AssistantPart::Text { text: t } => text.push_str(t),
                AssistantPart::ToolCall(call) => {
                    answer(&mut self.view, &mut text, &mut reasoning);
                    self.open_calls.insert(call.id.clone(), self.view.len());
                    self.last_call = Some(call.id.clone());
                    self.view.push(Event::ToolCallStarted {
                        call_id: call.id.clone(),
                        display: self.registry.describe(&call.name, &call.arguments),
                    });
                }
            }
        }
        answer(&mut self.view, &mut text, &mut reasoning);
    }

    /// A rewind: the restored files join the log; a conversation rewind cuts the view back to
    /// before its message and replaces the context, like a compaction.
    fn rewound(&mut self, e: RewindEntry) {
        if let Some(context) = e.context {
            if let (Some(&mark), Some(point)) =
                (self.user_marks.get(e.to), self.rewind.points().get(e.to))
            {
                let text = format!(
                    "Rewound the conversation to before “{}”.",
                    super::short_title(&point.text)
                );
                self.view.truncate(mark);
                self.view.push(notice(NoticeLevel::Info, text));
            }
            self.rewind.conversation_rewound(e.to);
            self.open_calls.clear();
            self.bytes = context.iter().map(message_bytes).sum();
            self.first_prompt = context
                .iter()
                .find(|m| matches!(m, Message::User { .. }))
                .cloned();
            self.messages = context;
            self.usage = None;
            self.trimmed = 0;
            self.todos = e.todos.unwrap_or_default();
        }
        self.rewind.restored(e.to, e.changes);
    }

    fn finish(mut self, path: PathBuf, mut notices: Vec<String>) -> Resumed {
        // Calls without a result end here, in the order they started.
        let mut open: Vec<(usize, String)> =
            self.open_calls.drain().map(|(id, at)| (at, id)).collect();
        open.sort_unstable();
        for (_, call_id) in open {
            self.view.push(Event::ToolCallFinished {
                call_id,
                status: ToolStatus::Interrupted,
                output: DANGLING_TOOL_RESULT.into(),
                elapsed_ms: 0,
                exit_code: None,
            });
        }
        if self.trimmed > 0 {
            let first = self.first_prompt.take();
            if let Some(first) = first
                && self.messages.first() != Some(&first)
            {
                self.messages.insert(0, first);
            }
            notices.push(format!(
                "The {} oldest messages are too far back for the model's context window; they \
                 stay on screen, and the model continues from the first prompt and the most \
                 recent turns (/compact summarises them).",
                self.trimmed
            ));
        }
        notices.extend(repair(&mut self.messages));
        Resumed {
            path,
            header: self.header,
            messages: self.messages,
            view: self.view,
            todos: self.todos,
            title: self.title,
            model: self.model,
            usage: self.usage,
            notices,
            mode: self.mode,
            rewind: self.rewind,
        }
    }
}

/// The events of an answer's text and the reasoning before it, as streamed live (taken, so
/// the next part starts empty).
fn answer(view: &mut Vec<Event>, text: &mut String, reasoning: &mut String) {
    if text.is_empty() && reasoning.is_empty() {
        return;
    }
    if !reasoning.trim().is_empty() {
        view.push(Event::ReasoningDelta {
            text: std::mem::take(reasoning),
        });
    }
    reasoning.clear();
    view.push(Event::AssistantMessage {
        text: std::mem::take(text),
    });
}

/// Makes the context valid for both APIs: every tool call gets a result right after its
/// message's other results (the dangling ones get [`DANGLING_TOOL_RESULT`]), and results that
/// answer no call of the preceding assistant message are dropped. Returns notices.
pub(crate) fn repair(messages: &mut Vec<Message>) -> Vec<String> {
    let mut out = Vec::with_capacity(messages.len());
    let mut waiting: Vec<(String, String)> = Vec::new();
    let mut dangling = 0usize;
    let mut dropped = 0usize;
    let close = |out: &mut Vec<Message>, waiting: &mut Vec<(String, String)>, n: &mut usize| {
        for (call_id, name) in waiting.drain(..) {
            *n += 1;
            out.push(Message::ToolResult {
                call_id,
                name,
                content: DANGLING_TOOL_RESULT.into(),
                is_error: true,
            });
        }
    };
    for msg in messages.drain(..) {
        match msg {
            Message::ToolResult { ref call_id, .. } => {
                match waiting.iter().position(|(id, _)| id == call_id) {
                    Some(at) => {
                        waiting.remove(at);
                        out.push(msg);
                    }
                    None => dropped += 1,
                }
            }
            Message::Assistant { ref parts } => {
                close(&mut out, &mut waiting, &mut dangling);
                let mut seen = HashSet::new();
                waiting.extend(parts.iter().filter_map(|p| match p {
                    AssistantPart::ToolCall(c) if seen.insert(c.id.clone()) => {
                        Some((c.id.clone(), c.name.clone()))
                    }
                    _ => None,
                }));
                out.push(msg);
            }
            Message::User { .. } | Message::UserImage { .. } => {
                close(&mut out, &mut waiting, &mut dangling);
                out.push(msg);
            }
        }
    }
    close(&mut out, &mut waiting, &mut dangling);
    *messages = out;
    let mut notices = Vec::new();
    if dangling > 0 {
        tracing::warn!("repaired {dangling} tool calls without a result");
        notices.push(format!(
            "{dangling} tool call{} had no recorded result (rein was stopped while {} ran); \
             {} marked as such for the model.",
            if dangling == 1 { "" } else { "s" },
            if dangling == 1 { "it" } else { "they" },
            if dangling == 1 { "it is" } else { "they are" },
        ));
    }
    if dropped > 0 {
        tracing::warn!("dropped {dropped} tool results that answer no call");
        notices.push(format!(
            "{dropped} tool result{} answered no preceding tool call and {} left out of the \
             model context.",
            if dropped == 1 { "" } else { "s" },
            if dropped == 1 { "was" } else { "were" },
        ));
    }
    notices
}
