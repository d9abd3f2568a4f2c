//! Slash commands. They run in the UI; only their effects reach the agent. An unknown command
//! is a notice and is never sent to the model.

use super::{App, Effect};
use crate::protocol::Op;
use crate::tui::view::cell::{CellKind, Level};
use crate::tui::view::diff::FileDiff;
use crate::tui::view::session_picker::SessionPicker;
use crate::tui::wrap::RichLine;
use ratatui::style::Modifier;
use ratatui::text::Span;

/// A slash command: name, argument hint, description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlashCommand {
    /// Name without the slash.
    pub name: &'static str,
    /// Argument hint (`NAME`, `[focus]`), empty when none.
    pub args: &'static str,
    /// What it does.
    pub about: &'static str,
}

/// Every slash command, in the order the popup lists them.
pub const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        args: "",
        about: "show keys and commands",
    },
    SlashCommand {
        name: "clear",
        args: "",
        about: "start a new conversation",
    },
    SlashCommand {
        name: "compact",
        args: "[focus]",
        about: "summarise the conversation to free context",
    },
    SlashCommand {
        name: "model",
        args: "[NAME]",
        about: "switch the model (no name: show it)",
    },
    SlashCommand {
        name: "resume",
        args: "[ID]",
        about: "continue a saved session (no id: pick one)",
    },
    SlashCommand {
        name: "rename",
        args: "TITLE",
        about: "give this session a title",
    },
    SlashCommand {
        name: "fork",
        args: "",
        about: "continue in a copy of this session",
    },
    SlashCommand {
        name: "rewind",
        args: "",
        about: "go back to before a message: code, conversation or both (esc esc)",
    },
    SlashCommand {
        name: "undo",
        args: "",
        about: "restore the files the last turn changed",
    },
    SlashCommand {
        name: "todos",
        args: "",
        about: "show the todo list",
    },
    SlashCommand {
        name: "diff",
        args: "",
        about: "every file change of this session as one diff",
    },
    SlashCommand {
        name: "skills",
        args: "",
        about: "list the skills found (and the files skipped)",
    },
    SlashCommand {
        name: "mcp",
        args: "",
        about: "MCP servers: state, tools and their schema cost",
    },
    SlashCommand {
        name: "memory",
        args: "",
        about: "show the AGENTS.md files the model reads",
    },
    SlashCommand {
        name: "copy",
        args: "",
        about: "copy the last answer to the clipboard",
    },
    SlashCommand {
        name: "quit",
        args: "",
        about: "leave rein",
    },
];

/// Keys listed by `/help`.
const KEYS: &[(&str, &str)] = &[
    ("enter", "send (queued while a turn runs)"),
    ("shift+enter / alt+enter / ctrl+j", "new line"),
    ("↑ ↓ on an empty composer", "input history"),
    ("esc", "interrupt the turn (closes a dialog first)"),
    ("esc esc on an empty composer", "rewind (/rewind)"),
    ("ctrl+c", "clear the composer or interrupt; twice quits"),
    ("ctrl+d on an empty composer", "quit"),
    (
        "pgup pgdn · wheel · ctrl+home ctrl+end",
        "scroll (ctrl+home: the first message)",
    ),
    ("ctrl+o · click a tool call", "expand output and reasoning"),
    ("ctrl+t", "show or hide the todo list"),
    ("@", "complete a file path"),
    ("//text", "send a message that starts with /"),
    ("shift+drag", "select text natively"),
];

impl App {
    /// Commands whose name starts with (or contains) `prefix`, best first.
    pub(crate) fn matching_commands(prefix: &str) -> Vec<SlashCommand> {
        let mut starts: Vec<SlashCommand> = COMMANDS
            .iter()
            .copied()
            .filter(|c| c.name.starts_with(prefix))
            .collect();
        starts.extend(
            COMMANDS
                .iter()
                .copied()
                .filter(|c| !c.name.starts_with(prefix) && c.name.contains(prefix)),
        );
        starts
    }

    /// Runs `/name args`.
    pub(crate) fn run_command(&mut self, line: &str) {
        let line = line.trim();
        let body = line.strip_prefix('/').unwrap_or(line);
        let (name, args) = match body.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (body, ""),
        };
        let touches_agent = matches!(name, "clear" | "compact" | "model" | "fork" | "resume")
            && !(name == "model" && args.is_empty());
        if touches_agent && self.busy {
            self.notice(
                format!("/{name} has to wait until the turn ends (esc interrupts it)"),
                Level::Warn,
            );
            return;
        }
        match name {
            "help" => self.help(),
            "clear" => {
                self.send(Op::Clear);
                self.conversation.clear();
                self.tool_cells.clear();
                self.response = Default::default();
                self.file_changes.clear();
                self.todos.clear();
                self.last_answer = None;
                self.queued.clear();
                self.status.used_tokens = 0;
            }
            "compact" => {
                let focus = (!args.is_empty()).then(|| args.to_string());
                self.send(Op::Compact { focus });
                self.notice("compacting the conversation…", Level::Info);
            }
            "model" if args.is_empty() => {
                let model = if self.status.model.is_empty() {
                    "unknown"
                } else {
                    &self.status.model
                };
                self.notice(
                    format!("model: {model} · /model NAME switches"),
                    Level::Info,
                );
            }
            "model" => self.send(Op::SetModel {
                model: args.to_string(),
            }),
            "resume" if args.is_empty() => {
                self.session_picker = Some(SessionPicker::loading());
                self.send(Op::ListSessions);
            }
            "resume" => self.send(Op::Resume {
                id: args.to_string(),
            }),
            "rename" if args.is_empty() => {
                self.notice("give the title too: /rename TITLE", Level::Info)
            }
            "rename" => self.send(Op::Rename {
                title: args.to_string(),
            }),
            "fork" => self.send(Op::Fork),
            "mcp" => self.send(Op::McpStatus),
            "rewind" => self.open_rewind(),
            "undo" => self.undo(),
            "skills" => self.send(Op::ListSkills),
            "memory" => self.send(Op::ListMemory),
            "todos" => {
                let todos = self.todos.clone();
                self.push_cell(CellKind::Todos(todos));
            }
            "diff" => self.diff(),
            "copy" => match self.last_answer.clone() {
                Some(text) => {
                    let n = text.chars().count();
                    self.effect(Effect::Copy(text));
                    self.notice(
                        format!("copied the last answer ({n} characters)"),
                        Level::Info,
                    );
                }
                None => self.notice("nothing to copy yet", Level::Info),
            },
            "quit" | "exit" => self.request_quit(),
            "" => self.notice(
                "type a command after the slash; /help lists them",
                Level::Info,
            ),
            other => self.notice(
                format!("unknown command /{other} · /help lists the commands"),
                Level::Warn,
            ),
        }
    }

    /// Whether `/name` needs its argument (the popup then waits for it instead of running).
    pub(crate) fn needs_args(name: &str) -> bool {
        COMMANDS
            .iter()
            .any(|c| c.name == name && c.args.starts_with(|ch: char| ch.is_ascii_uppercase()))
    }

    fn help(&mut self) {
        let t = &self.theme;
        let bold = t.fg(t.accent).add_modifier(Modifier::BOLD);
        let mut lines = vec![RichLine::new(vec![Span::styled("Commands", bold)])];
        for c in COMMANDS {
            let name = if c.args.is_empty() {
                format!("/{}", c.name)
            } else {
                format!("/{} {}", c.name, c.args)
            };
            lines.push(
                RichLine::new(vec![
                    Span::styled(format!("  {name:<18}"), t.fg(t.accent)),
                    Span::raw(c.about),
                ])
                .prefixed(vec![], vec![Span::raw(" ".repeat(20))]),
            );
        }
        lines.push(RichLine::blank());
        lines.push(RichLine::new(vec![Span::styled("Keys", bold)]));
        for (k, what) in KEYS {
            lines.push(RichLine::new(vec![
                Span::styled(format!("  {k}"), t.fg(t.accent)),
                Span::styled("  ", t.dim()),
                Span::raw(*what),
            ]));
        }
        self.push_cell(CellKind::Info(lines));
    }

    /// All changes of the session as one diff per file: first old content → last new content.
    fn diff(&mut self) {
        let diffs: Vec<FileDiff> = self
            .file_changes
            .iter()
            .map(|(path, old, new)| FileDiff::new(path, old.as_deref(), new, &self.theme))
            .collect();
        self.push_cell(CellKind::Diff(diffs));
    }
}
