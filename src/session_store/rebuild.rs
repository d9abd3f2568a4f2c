//! Resuming: the model context (from the last compaction on, repaired so both APIs accept it)
//! and the whole visible conversation, from one pass over the loaded entries.

use super::SessionError;
use super::entry::{Entry, RewindEntry};
use super::header::Header;
use super::load::{LoadedSession, read_entries};
use crate::checkpoint::RewindLog;
use crate::llm::{AssistantPart, Message, Usage};
use crate::protocol::{ApprovalMode, HistoryItem, Todo, ToolStatus};
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
    /// The whole visible conversation from the first message, with a notice at each compaction.
    pub view: Vec<HistoryItem>,
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

fn file_change_item(e: super::entry::FileChangeEntry) -> HistoryItem {
    HistoryItem::FileChange {
        path: e.path,
        old: e.old,
        new: e.new,
    }
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
    view: Vec<HistoryItem>,
    /// Where each call's view item is, until its result arrives.
    open_calls: HashMap<String, usize>,
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
            if keep <= max && !matches!(m, Message::ToolResult { .. }) {
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
        let view = &mut self.view;
        match entry {
            Entry::User(e) => {
                // Only the person's messages are points to rewind to, as live.
                if e.by_person() {
                    if self.stop_at == Some(self.user_marks.len()) {
                        self.stopped = true;
                        return;
                    }
                    self.user_marks.push(view.len());
                    self.rewind
                        .user_message(e.command.as_deref().unwrap_or(&e.content));
                }
                view.push(match e.from {
                    Some(super::UserFrom::Rein) => HistoryItem::Notice {
                        text: format!("rein told the model: {}", nudge_gist(&e.content)),
                    },
                    _ => HistoryItem::User {
                        text: e.command.clone().unwrap_or_else(|| e.content.clone()),
                    },
                });
                self.push_message(Message::User { content: e.content });
            }
            Entry::Assistant(e) => {
                push_assistant_view(view, &mut self.open_calls, &e.parts, &self.registry);
                self.push_message(Message::Assistant { parts: e.parts });
            }
            Entry::ToolResult(e) => {
                self.push_message(Message::ToolResult {
                    call_id: e.call_id.clone(),
                    name: e.name.clone(),
                    content: e.content.clone(),
                    is_error: e.is_error,
                });
                let view = &mut self.view;
                // Files from before statuses were recorded: a refused call was "denied", not
                // "failed".
                let refused = self.refused.remove(&e.call_id);
                let status = e.status.unwrap_or(match (e.is_error, refused) {
                    (true, true) => ToolStatus::Denied,
                    (true, false) => ToolStatus::Error,
                    (false, _) => ToolStatus::Ok,
                });
                match self.open_calls.remove(&e.call_id) {
                    Some(at) => {
                        if let Some(HistoryItem::Tool {
                            status: s,
                            output,
                            display,
                            exit_code,
                            ..
                        }) = view.get_mut(at)
                        {
                            *s = Some(status);
                            *output = e.content;
                            *exit_code = e.exit_code;
                            // What the live view showed; older files keep the rebuilt one.
                            if let Some(d) = e.display {
                                *display = d;
                            }
                        }
                    }
                    None => view.push(HistoryItem::Tool {
                        call_id: e.call_id,
                        display: e
                            .display
                            .unwrap_or_else(|| self.registry.describe(&e.name, "")),
                        status: Some(status),
                        output: e.content,
                        exit_code: e.exit_code,
                    }),
                }
            }
            Entry::Todos(e) => {
                view.push(HistoryItem::Todos {
                    todos: e.todos.clone(),
                });
                self.todos = e.todos;
            }
            Entry::Compaction(e) => {
                view.push(HistoryItem::Notice {
                    text: format!(
                        "Conversation compacted ({} → {} tokens): the model continues from a \
                         summary; everything above stays here to read.",
                        e.before_tokens, e.after_tokens
                    ),
                });
                // Everything before is replaced: the usage reported for it no longer applies.
                self.bytes = e.context.iter().map(message_bytes).sum();
                self.messages = e.context;
                self.usage = None;
                // The summary carries the first prompt's goal from here on.
                self.first_prompt = None;
                self.trimmed = 0;
            }
            Entry::Usage(e) => {
                self.usage = Some(Usage {
                    input_tokens: e.input_tokens,
                    output_tokens: e.output_tokens,
                    ..Usage::default()
                });
            }
            Entry::Error(e) => view.push(HistoryItem::Notice {
                text: format!("Error: {}", e.message),
            }),
            Entry::Interrupted(e) => {
                // The cut-off answer was on screen: it comes back, marked by the notice.
                if let Some(text) = e.partial {
                    view.push(HistoryItem::Assistant {
                        text,
                        reasoning: None,
                    });
                }
                view.push(HistoryItem::Notice {
                    text: "Interrupted.".into(),
                });
            }
            Entry::Rename(e) => self.title = Some(e.title),
            Entry::ModelChange(e) => {
                view.push(HistoryItem::Notice {
                    text: format!("Model switched to {}.", e.model),
                });
                self.model = e.model;
            }
            Entry::FileChange(e) => view.push(file_change_item(e)),
            Entry::ModeChange(e) => self.mode = Some(e.mode),
            // A subagent's writes count for `/diff` too; the rest of its chain stays its own.
            Entry::Subagent(e) => {
                if let Entry::FileChange(change) = *e.entry {
                    view.push(file_change_item(change));
                }
            }
            Entry::Checkpoint(e) => self.rewind.record(e.changes),
            Entry::Rewind(e) => self.rewound(e),
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
                self.view.push(HistoryItem::Notice { text });
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
        for at in self.open_calls.into_values() {
            if let Some(HistoryItem::Tool { output, .. }) = self.view.get_mut(at) {
                *output = DANGLING_TOOL_RESULT.into();
            }
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

/// Adds the view items of one assistant message: text (with the reasoning before it) and one
/// tool item per call, waiting for its result.
fn push_assistant_view(
    view: &mut Vec<HistoryItem>,
    open_calls: &mut HashMap<String, usize>,
    parts: &[AssistantPart],
    registry: &Registry,
) {
    let mut reasoning: Option<String> = None;
    let mut text = String::new();
    let flush = |view: &mut Vec<HistoryItem>, text: &mut String, reasoning: &mut Option<String>| {
        if !text.is_empty() || reasoning.is_some() {
            view.push(HistoryItem::Assistant {
                text: std::mem::take(text),
                reasoning: reasoning.take(),
            });
        }
    };
    for part in parts {
        match part {
            AssistantPart::Thinking { text: t, .. } if !t.is_empty() => {
                if !text.is_empty() {
                    flush(view, &mut text, &mut reasoning);
                }
                let r = reasoning.get_or_insert_with(String::new);
                if !r.is_empty() {
                    r.push('\n');
                }
                r.push_str(t);
            }
            AssistantPart::Thinking { .. } | AssistantPart::RedactedThinking { .. } => {}
            AssistantPart::Text { text: t } => text.push_str(t),
            AssistantPart::ToolCall(call) => {
                flush(view, &mut text, &mut reasoning);
                open_calls.insert(call.id.clone(), view.len());
                view.push(HistoryItem::Tool {
                    call_id: call.id.clone(),
                    display: registry.describe(&call.name, &call.arguments),
                    status: None,
                    output: String::new(),
                    exit_code: None,
                });
            }
        }
    }
    flush(view, &mut text, &mut reasoning);
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
            Message::User { .. } => {
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

/// The first sentence of a nudge, without its `[rein]` mark.
fn nudge_gist(text: &str) -> &str {
    let text = text.trim_start_matches("[rein]").trim_start();
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}
