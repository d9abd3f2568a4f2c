//! The entry lines of a session file (schema 1, see `docs/sessions.md`).
//!
//! Messages are stored with the provider-neutral types of [`crate::llm`] as they are, so a
//! session written with one wire format resumes with the other.

use crate::checkpoint::Change;
use crate::llm::{AssistantPart, Message};
use crate::protocol::{ApprovalMode, Decision, QuirkKind, Todo, ToolDisplay, ToolStatus};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The newest schema this rein writes and reads. Older schemas are read; newer ones are refused.
pub const SCHEMA: u32 = 1;

/// One line after the header. The `type` field names the variant; every entry has `ts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The person's message (`llm::Message::User`).
    User(UserEntry),
    /// A model answer with its reasoning and tool calls (`llm::Message::Assistant`).
    Assistant(AssistantEntry),
    /// The result of one tool call (`llm::Message::ToolResult`), full text.
    ToolResult(ToolResultEntry),
    /// The answer to an approval question.
    Approval(ApprovalEntry),
    /// The whole todo list after a change.
    Todos(TodosEntry),
    /// The history was compacted; `context` replaces the model context from here on.
    Compaction(CompactionEntry),
    /// Token usage reported by the provider for one request.
    Usage(UsageEntry),
    /// An error worth keeping in the transcript.
    Error(ErrorEntry),
    /// The person interrupted the turn.
    Interrupted(InterruptedEntry),
    /// The session got a title (`/rename`).
    Rename(RenameEntry),
    /// The model was switched for the following requests.
    ModelChange(ModelChangeEntry),
    /// An entry of a subagent's side chain; never part of the main context.
    Subagent(SubagentEntry),
    /// A file tool wrote a file: its contents before and after (for a resumed `/diff`).
    FileChange(FileChangeEntry),
    /// The approval mode was switched.
    ModeChange(ModeChangeEntry),
    /// The harness handled something the model got wrong (a recovered text call, an echo).
    ModelQuirk(ModelQuirkEntry),
    /// Files one tool call changed (the state before and after each).
    Checkpoint(CheckpointEntry),
    /// The person went back to before a user message (`/rewind`, `/undo`).
    Rewind(RewindEntry),
    /// An image attached to the user message before it: a reference and a hash, no bytes.
    Image(ImageEntry),
}

/// `{"type":"image"}`: an image sent with the user message before it (`llm::Message::UserImage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// Name, path, media type, size, dimensions and the sha256 of the bytes sent.
    #[serde(flatten)]
    pub image: crate::images::ImageRef,
}

/// `{"type":"file_change"}`: what a file tool wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChangeEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The file, as displayed (workspace-relative when inside).
    pub path: String,
    /// Content before (`None`: the file was created, or the contents were too large to keep).
    #[serde(default)]
    pub old: Option<String>,
    /// Content after (`None`: too large to keep).
    #[serde(default)]
    pub new: Option<String>,
}

/// `{"type":"mode_change"}`: the approval mode from here on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChangeEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The new mode.
    pub mode: ApprovalMode,
}

/// `{"type":"user"}`: a user-role message: the person's, or one rein wrote in their place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The text.
    pub content: String,
    /// Who wrote it when not the person (absent: the person, as in older files). Only the
    /// person's messages are points to rewind to, live and on resume alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<UserFrom>,
    /// The `/name args` the person typed when `content` is a command's expansion (the view
    /// shows this, the model reads `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Who wrote a user-role message the person did not type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserFrom {
    /// rein's turn loop (a nudge after an empty answer or a call written as text).
    Rein,
    /// The output of a `!command` the person ran, as context for their next message.
    Shell,
}

impl UserEntry {
    /// Whether the person typed it (a point to rewind to).
    pub fn by_person(&self) -> bool {
        self.from.is_none()
    }
}

/// `{"type":"assistant"}`: a model answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// Text, thinking and tool-call parts in the order the model produced them.
    pub parts: Vec<AssistantPart>,
}

/// `{"type":"tool_result"}`: the result of one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The call it answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The full text the model saw.
    pub content: String,
    /// Whether the model saw it as an error.
    pub is_error: bool,
    /// How the call ended, when known.
    #[serde(default)]
    pub status: Option<ToolStatus>,
    /// Wall time in milliseconds, when known.
    #[serde(default)]
    pub elapsed_ms: Option<u64>,
    /// How the call was shown (absent in files written before displays were recorded: the
    /// display is then rebuilt from the call's arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<ToolDisplay>,
    /// A command's exit code, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// `{"type":"approval"}`: the answer to an approval question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The tool call it was about.
    pub call_id: String,
    /// Yes / always / no.
    pub decision: Decision,
    /// The note sent to the model with the answer.
    #[serde(default)]
    pub note: Option<String>,
}

/// `{"type":"todos"}`: the whole todo list after a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodosEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The list.
    pub todos: Vec<Todo>,
}

/// `{"type":"compaction"}`: the model context was replaced by a summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The summary text.
    pub summary: String,
    /// Estimated context tokens before.
    pub before_tokens: u64,
    /// Estimated context tokens after.
    pub after_tokens: u64,
    /// The model context that replaces the whole history at this point.
    pub context: Vec<Message>,
}

/// `{"type":"usage"}`: tokens reported for one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// `{"type":"error"}`: an error worth keeping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The message.
    pub message: String,
}

/// `{"type":"interrupted"}`: the person stopped the turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptedEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The answer being streamed when it was stopped: shown on resume, marked interrupted;
    /// not part of the model's context (as live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

/// `{"type":"rename"}`: the session's title.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The new title.
    pub title: String,
}

/// `{"type":"model_change"}`: the model used from here on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChangeEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The new model.
    pub model: String,
}

/// `{"type":"model_quirk"}`: something the model got wrong and the harness handled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelQuirkEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// What it was.
    pub kind: QuirkKind,
    /// The tool call it concerns (a recovered call's id), if any.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Details: the text format of a recovered call, the tool named, the echoed text.
    pub detail: String,
}

/// `{"type":"subagent"}`: one entry of a subagent's own conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The `task` call id that started the subagent.
    pub task_id: String,
    /// The subagent's entry.
    pub entry: Box<Entry>,
}

/// `{"type":"checkpoint"}`: files changed by one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The tool call that made the changes, when known.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Each changed path with its state before and after.
    pub changes: Vec<Change>,
}

/// `{"type":"rewind"}`: code and/or conversation went back to before user message `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindEntry {
    /// When it was recorded.
    #[serde(with = "rfc3339")]
    pub ts: Timestamp,
    /// The user message, by its ordinal among the file's `user` entries (from 0).
    pub to: usize,
    /// The files restored: each with the state it had and the state it got back.
    #[serde(default)]
    pub changes: Vec<Change>,
    /// When the conversation was rewound: the model context from here on (like a
    /// compaction's).
    #[serde(default)]
    pub context: Option<Vec<Message>>,
    /// When the conversation was rewound: the todo list from here on.
    #[serde(default)]
    pub todos: Option<Vec<Todo>>,
}

impl Entry {
    /// The entry for a conversation message, stamped now.
    pub fn from_message(msg: &Message) -> Entry {
        let ts = Timestamp::now();
        match msg {
            // The person's messages are recorded by `Entry::user`; the loop appends only its
            // own (nudges).
            Message::User { content } => Entry::User(UserEntry {
                ts,
                content: content.clone(),
                from: Some(UserFrom::Rein),
                command: None,
            }),
            Message::UserImage { image } => Entry::Image(ImageEntry {
                ts,
                image: image.meta.clone(),
            }),
            Message::Assistant { parts } => Entry::Assistant(AssistantEntry {
                ts,
                parts: parts.clone(),
            }),
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => Entry::ToolResult(ToolResultEntry {
                ts,
                call_id: call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
                status: None,
                elapsed_ms: None,
                display: None,
                exit_code: None,
            }),
        }
    }

    /// A user message, stamped now.
    pub fn user(content: impl Into<String>) -> Entry {
        Entry::User(UserEntry {
            ts: Timestamp::now(),
            content: content.into(),
            from: None,
            command: None,
        })
    }

    /// A user message a custom command expanded from `command` (`/name args`), stamped now.
    pub fn user_command(content: impl Into<String>, command: impl Into<String>) -> Entry {
        Entry::User(UserEntry {
            ts: Timestamp::now(),
            content: content.into(),
            from: None,
            command: Some(command.into()),
        })
    }

    /// An image attached to the user message just recorded, stamped now.
    pub fn image(image: crate::images::ImageRef) -> Entry {
        Entry::Image(ImageEntry {
            ts: Timestamp::now(),
            image,
        })
    }

    /// What the model reads about a `!command` the person ran, stamped now.
    pub fn shell_context(content: impl Into<String>) -> Entry {
        Entry::User(UserEntry {
            ts: Timestamp::now(),
            content: content.into(),
            from: Some(UserFrom::Shell),
            command: None,
        })
    }

    /// An assistant message, stamped now.
    pub fn assistant(parts: Vec<AssistantPart>) -> Entry {
        Entry::Assistant(AssistantEntry {
            ts: Timestamp::now(),
            parts,
        })
    }

    /// A tool result with its status and duration, stamped now.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        status: ToolStatus,
        elapsed_ms: Option<u64>,
    ) -> Entry {
        Entry::ToolResult(ToolResultEntry {
            ts: Timestamp::now(),
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: status.is_error(),
            status: Some(status),
            elapsed_ms,
            display: None,
            exit_code: None,
        })
    }

    /// The same tool result, with how the call was shown and a command's exit code.
    pub fn shown_as(mut self, display: ToolDisplay, exit_code: Option<i32>) -> Entry {
        if let Entry::ToolResult(e) = &mut self {
            e.display = Some(display);
            e.exit_code = exit_code;
        }
        self
    }

    /// An approval answer, stamped now.
    pub fn approval(call_id: impl Into<String>, decision: Decision, note: Option<String>) -> Entry {
        Entry::Approval(ApprovalEntry {
            ts: Timestamp::now(),
            call_id: call_id.into(),
            decision,
            note,
        })
    }

    /// The whole todo list, stamped now.
    pub fn todos(todos: Vec<Todo>) -> Entry {
        Entry::Todos(TodosEntry {
            ts: Timestamp::now(),
            todos,
        })
    }

    /// A compaction whose `context` replaces the model context, stamped now.
    pub fn compaction(
        summary: impl Into<String>,
        before_tokens: u64,
        after_tokens: u64,
        context: Vec<Message>,
    ) -> Entry {
        Entry::Compaction(CompactionEntry {
            ts: Timestamp::now(),
            summary: summary.into(),
            before_tokens,
            after_tokens,
            context,
        })
    }

    /// Token usage of one request, stamped now.
    pub fn usage(input_tokens: u64, output_tokens: u64) -> Entry {
        Entry::Usage(UsageEntry {
            ts: Timestamp::now(),
            input_tokens,
            output_tokens,
        })
    }

    /// A model quirk the harness handled, stamped now.
    pub fn model_quirk(
        kind: QuirkKind,
        call_id: Option<String>,
        detail: impl Into<String>,
    ) -> Entry {
        Entry::ModelQuirk(ModelQuirkEntry {
            ts: Timestamp::now(),
            kind,
            call_id,
            detail: detail.into(),
        })
    }

    /// An error worth keeping, stamped now.
    pub fn error(message: impl Into<String>) -> Entry {
        Entry::Error(ErrorEntry {
            ts: Timestamp::now(),
            message: message.into(),
        })
    }

    /// An interruption, stamped now.
    pub fn interrupted() -> Entry {
        Entry::interrupted_with(None)
    }

    /// An interruption, stamped now, with the answer it cut off (if any).
    pub fn interrupted_with(partial: Option<String>) -> Entry {
        Entry::Interrupted(InterruptedEntry {
            ts: Timestamp::now(),
            partial: partial.filter(|p| !p.trim().is_empty()),
        })
    }

    /// A new title, stamped now.
    pub fn rename(title: impl Into<String>) -> Entry {
        Entry::Rename(RenameEntry {
            ts: Timestamp::now(),
            title: title.into(),
        })
    }

    /// A model switch, stamped now.
    pub fn model_change(model: impl Into<String>) -> Entry {
        Entry::ModelChange(ModelChangeEntry {
            ts: Timestamp::now(),
            model: model.into(),
        })
    }

    /// A written file, stamped now (`old` and `new` left out when too large).
    pub fn file_change(path: impl Into<String>, old: Option<String>, new: Option<String>) -> Entry {
        Entry::FileChange(FileChangeEntry {
            ts: Timestamp::now(),
            path: path.into(),
            old,
            new,
        })
    }

    /// An approval mode switch, stamped now.
    pub fn mode_change(mode: ApprovalMode) -> Entry {
        Entry::ModeChange(ModeChangeEntry {
            ts: Timestamp::now(),
            mode,
        })
    }

    /// Wraps `entry` as part of subagent `task_id`'s side chain, stamped now.
    pub fn subagent(task_id: impl Into<String>, entry: Entry) -> Entry {
        Entry::Subagent(SubagentEntry {
            ts: Timestamp::now(),
            task_id: task_id.into(),
            entry: Box::new(entry),
        })
    }

    /// The changes one tool call made, stamped now.
    pub fn checkpoint(call_id: Option<String>, changes: Vec<Change>) -> Entry {
        Entry::Checkpoint(CheckpointEntry {
            ts: Timestamp::now(),
            call_id,
            changes,
        })
    }

    /// A rewind to before user message `to`, stamped now.
    pub fn rewind(
        to: usize,
        changes: Vec<Change>,
        conversation: Option<(Vec<Message>, Vec<Todo>)>,
    ) -> Entry {
        let (context, todos) = match conversation {
            Some((c, t)) => (Some(c), Some(t)),
            None => (None, None),
        };
        Entry::Rewind(RewindEntry {
            ts: Timestamp::now(),
            to,
            changes,
            context,
            todos,
        })
    }

    /// When the entry was recorded.
    pub fn ts(&self) -> Timestamp {
        match self {
            Entry::User(e) => e.ts,
            Entry::Assistant(e) => e.ts,
            Entry::ToolResult(e) => e.ts,
            Entry::Approval(e) => e.ts,
            Entry::Todos(e) => e.ts,
            Entry::Compaction(e) => e.ts,
            Entry::Usage(e) => e.ts,
            Entry::Error(e) => e.ts,
            Entry::Interrupted(e) => e.ts,
            Entry::Rename(e) => e.ts,
            Entry::ModelChange(e) => e.ts,
            Entry::Subagent(e) => e.ts,
            Entry::FileChange(e) => e.ts,
            Entry::ModeChange(e) => e.ts,
            Entry::ModelQuirk(e) => e.ts,
            Entry::Checkpoint(e) => e.ts,
            Entry::Rewind(e) => e.ts,
            Entry::Image(e) => e.ts,
        }
    }

    /// The `type` written for this entry.
    pub fn type_name(&self) -> &'static str {
        match self {
            Entry::User(_) => "user",
            Entry::Assistant(_) => "assistant",
            Entry::ToolResult(_) => "tool_result",
            Entry::Approval(_) => "approval",
            Entry::Todos(_) => "todos",
            Entry::Compaction(_) => "compaction",
            Entry::Usage(_) => "usage",
            Entry::Error(_) => "error",
            Entry::Interrupted(_) => "interrupted",
            Entry::Rename(_) => "rename",
            Entry::ModelChange(_) => "model_change",
            Entry::Subagent(_) => "subagent",
            Entry::FileChange(_) => "file_change",
            Entry::ModeChange(_) => "mode_change",
            Entry::ModelQuirk(_) => "model_quirk",
            Entry::Checkpoint(_) => "checkpoint",
            Entry::Rewind(_) => "rewind",
            Entry::Image(_) => "image",
        }
    }

    /// The conversation message this entry holds, if it is one.
    pub fn to_message(&self) -> Option<Message> {
        match self {
            Entry::User(e) => Some(Message::User {
                content: e.content.clone(),
            }),
            Entry::Assistant(e) => Some(Message::Assistant {
                parts: e.parts.clone(),
            }),
            Entry::Image(e) => Some(Message::UserImage {
                image: crate::images::Image {
                    meta: e.image.clone(),
                    payload: crate::images::Payload::NotLoaded,
                },
            }),
            Entry::ToolResult(e) => Some(Message::ToolResult {
                call_id: e.call_id.clone(),
                name: e.name.clone(),
                content: e.content.clone(),
                is_error: e.is_error,
            }),
            _ => None,
        }
    }
}

/// What parsing one entry line gave.
pub(crate) enum Parsed {
    /// A known entry.
    Entry(Entry),
    /// A well-formed line of a type this rein does not know (written by a newer one).
    Unknown(String),
}

/// The `type` of a line as rein writes it (`{"type":"...",`), without parsing the rest.
pub(crate) fn peek_type(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("{\"type\":\"")?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

#[derive(Deserialize)]
struct TypeProbe {
    #[serde(rename = "type")]
    ty: String,
}

/// Parses one entry line. Lines written by rein put `type` first, so the payload struct is
/// parsed directly (serde's internally tagged path buffers the whole line first, which is
/// several times slower on a 100,000-line file); anything else takes the general path.
pub(crate) fn parse_entry(line: &str) -> Result<Parsed, serde_json::Error> {
    use serde_json::from_str;
    let fast = match peek_type(line) {
        Some("user") => Some(from_str(line).map(Entry::User)),
        Some("assistant") => Some(from_str(line).map(Entry::Assistant)),
        Some("tool_result") => Some(from_str(line).map(Entry::ToolResult)),
        Some("approval") => Some(from_str(line).map(Entry::Approval)),
        Some("todos") => Some(from_str(line).map(Entry::Todos)),
        Some("compaction") => Some(from_str(line).map(Entry::Compaction)),
        Some("usage") => Some(from_str(line).map(Entry::Usage)),
        Some("error") => Some(from_str(line).map(Entry::Error)),
        Some("interrupted") => Some(from_str(line).map(Entry::Interrupted)),
        Some("rename") => Some(from_str(line).map(Entry::Rename)),
        Some("model_change") => Some(from_str(line).map(Entry::ModelChange)),
        Some("subagent") => Some(from_str(line).map(Entry::Subagent)),
        Some("checkpoint") => Some(from_str(line).map(Entry::Checkpoint)),
        Some("rewind") => Some(from_str(line).map(Entry::Rewind)),
        Some("image") => Some(from_str(line).map(Entry::Image)),
        _ => None,
    };
    match fast {
        Some(Ok(entry)) => Ok(Parsed::Entry(entry)),
        Some(Err(e)) => Err(e),
        None => match from_str::<Entry>(line) {
            Ok(entry) => Ok(Parsed::Entry(entry)),
            Err(e) => match from_str::<TypeProbe>(line) {
                Ok(probe) if !KNOWN_TYPES.contains(&probe.ty.as_str()) => {
                    Ok(Parsed::Unknown(probe.ty))
                }
                _ => Err(e),
            },
        },
    }
}

/// Every entry `type` of schema 1.
pub const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "tool_result",
    "approval",
    "todos",
    "compaction",
    "usage",
    "error",
    "interrupted",
    "rename",
    "model_change",
    "subagent",
    "checkpoint",
    "rewind",
    "image",
];

/// RFC 3339 timestamps for serde (they belong to the protocol: listings carry them).
pub use crate::protocol::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_writes_type_first_and_parses_back() {
        let entries = vec![
            Entry::user("hi"),
            Entry::assistant(vec![AssistantPart::Text { text: "x".into() }]),
            Entry::tool_result("c1", "bash", "out", ToolStatus::Ok, Some(3)).shown_as(
                ToolDisplay::Exec {
                    command: "ls".into(),
                },
                Some(1),
            ),
            Entry::approval("c1", Decision::Always, None),
            Entry::todos(vec![]),
            Entry::compaction("s", 10, 2, vec![]),
            Entry::usage(1, 2),
            Entry::error("e"),
            Entry::interrupted(),
            Entry::rename("t"),
            Entry::model_change("m"),
            Entry::subagent("task", Entry::user("sub")),
            Entry::checkpoint(
                Some("c1".into()),
                vec![Change {
                    path: "a.txt".into(),
                    before: crate::checkpoint::FileState::Absent,
                    after: crate::checkpoint::FileState::File {
                        size: 3,
                        mode: 0o644,
                        hash: Some("ab".repeat(32)),
                        kept: true,
                    },
                }],
            ),
            Entry::rewind(
                2,
                vec![],
                Some((
                    vec![Message::User {
                        content: "x".into(),
                    }],
                    vec![],
                )),
            ),
            Entry::image(crate::images::ImageRef {
                name: "shot.png".into(),
                path: Some("/w/shot.png".into()),
                media_type: crate::images::MediaType::Png,
                width: 1280,
                height: 720,
                bytes: 9,
                sha256: "ab".repeat(32),
                original: None,
            }),
        ];
        assert_eq!(entries.len(), KNOWN_TYPES.len());
        for e in entries {
            let line = serde_json::to_string(&e).unwrap();
            assert_eq!(peek_type(&line), Some(e.type_name()), "{line}");
            match parse_entry(&line).unwrap() {
                Parsed::Entry(back) => assert_eq!(back, e),
                Parsed::Unknown(t) => panic!("unknown {t}"),
            }
            // The general (tagged) path agrees with the fast one.
            assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), e);
        }
    }

    #[test]
    fn type_not_first_and_unknown_types() {
        let line = r#"{"ts":"2026-01-02T03:04:05Z","content":"x","type":"user"}"#;
        assert!(matches!(
            parse_entry(line),
            Ok(Parsed::Entry(Entry::User(_)))
        ));
        let line = r#"{"type":"hologram","ts":"2026-01-02T03:04:05Z"}"#;
        assert!(matches!(parse_entry(line), Ok(Parsed::Unknown(t)) if t == "hologram"));
        let line = r#"{"type":"user","ts":"2026-01-02T03:04:05Z"}"#;
        assert!(
            parse_entry(line).is_err(),
            "a known type with missing fields is damage"
        );
    }
}
