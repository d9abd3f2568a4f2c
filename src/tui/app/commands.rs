//! Slash commands. They run in the UI; only their effects reach the agent. An unknown command
//! is a notice and is never sent to the model.

use super::{App, Effect};
use crate::protocol::Op;
use crate::tui::layers::session_picker::SessionPicker;
use crate::tui::model::cell::FileEdit;
use crate::tui::model::cell::{CellKind, Level};
use crate::tui::model::cell::{InfoLine, Run, Tone};
use crate::tui::view::picker::PickerItem;

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
        about: "switch the model (no name: pick from the server's list)",
    },
    SlashCommand {
        name: "mode",
        args: "[MODE]",
        about: "ask, accept-edits or plan (shift+tab cycles)",
    },
    SlashCommand {
        name: "permissions",
        args: "[drop N]",
        about: "the permission rules in force; drop a session rule",
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
        name: "init",
        args: "",
        about: "write an AGENTS.md for this repository (shown as a diff first)",
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
        name: "hooks",
        args: "",
        about: "the hooks in force and where each comes from",
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
    ("shift+tab", "cycle the mode: ask → accept edits → plan"),
    ("!command", "run a command yourself; its output is context"),
    ("ctrl+g", "edit the message in $EDITOR"),
    ("ctrl+z", "suspend rein (fg resumes it)"),
    (
        "pgup pgdn · wheel · ctrl+home ctrl+end",
        "scroll (ctrl+home: the first message)",
    ),
    ("ctrl+o", "expand or fold every tool output and reasoning"),
    ("click a tool call", "expand or fold that one"),
    ("ctrl+t", "show or hide the todo list"),
    ("@", "complete a file path (inserts the path)"),
    ("//text", "send a message that starts with /"),
    ("shift+drag", "select text (the mouse wheel scrolls)"),
    (
        "in a question",
        "y yes · a always (the rule shown) · n/esc no, go on · ctrl+c or esc esc no, stop",
    ),
];

/// `/name ARGS`: how the popup and `/help` write a command.
pub(crate) fn usage(c: &SlashCommand) -> String {
    if c.args.is_empty() {
        format!("/{}", c.name)
    } else {
        format!("/{} {}", c.name, c.args)
    }
}

/// Columns the usage column takes in the popup and in `/help`.
pub(crate) fn usage_width() -> usize {
    COMMANDS
        .iter()
        .map(|c| crate::tui::wrap::str_width(&usage(c)))
        .max()
        .unwrap_or(0)
}

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
            && !(name == "model" && args.is_empty())
            || (name == "permissions" && !args.is_empty());
        if touches_agent && self.busy {
            self.notice(
                format!("/{name} has to wait until the turn ends (esc interrupts it)"),
                Level::Warn,
            );
            return;
        }
        match name {
            "help" => self.help(),
            "clear" => self.clear(),
            "compact" => {
                // The agent says "Compacting…" itself, then how much it freed.
                let focus = (!args.is_empty()).then(|| args.to_string());
                self.send(Op::Compact { focus });
            }
            "model" if args.is_empty() => self.open_model_picker(),
            "mode" => self.mode_command(args),
            "permissions" => self.permissions_command(args),
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
            "hooks" => self.send(Op::ListHooks),
            "todos" => {
                let todos = self.todos.clone();
                self.push_cell(CellKind::Todos(todos));
            }
            "diff" => self.diff(),
            "copy" => self.copy_last_answer(),
            "quit" | "exit" => self.request_quit(),
            "init" => self.run_custom("init", args),
            other if self.custom_commands.iter().any(|c| c.name == other) => {
                self.run_custom(other, args)
            }
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

    /// `/clear`: the agent starts a new conversation; so does the screen.
    fn clear(&mut self) {
        self.send(Op::Clear);
        self.transcript.clear();
        self.conversation.clear();
        self.tool_cells.clear();
        self.response = Default::default();
        self.file_changes.clear();
        self.todos.clear();
        self.last_answer = None;
        self.queued.clear();
        self.status.used_tokens = 0;
    }

    /// `/copy`: the last answer goes to the clipboard.
    fn copy_last_answer(&mut self) {
        match self.last_answer.clone() {
            Some(text) => {
                let text = crate::sanitize::for_clipboard(&text).into_owned();
                let n = text.chars().count();
                self.effect(Effect::Copy(text));
                self.notice(
                    format!("copied the last answer ({n} characters)"),
                    Level::Info,
                );
            }
            None => self.notice("nothing to copy yet", Level::Info),
        }
    }

    /// The workspace directory (the agent's, once configured).
    pub(crate) fn workspace(&self) -> std::path::PathBuf {
        if self.status.cwd.as_os_str().is_empty() {
            std::path::PathBuf::from(".")
        } else {
            self.status.cwd.clone()
        }
    }

    /// Whether `/name` needs its argument (the popup then waits for it instead of running): a
    /// builtin's upper-case hint, any custom command's hint.
    pub(crate) fn needs_args(&self, name: &str) -> bool {
        COMMANDS
            .iter()
            .any(|c| c.name == name && c.args.starts_with(|ch: char| ch.is_ascii_uppercase()))
            || self
                .custom(name)
                .is_some_and(|c| !c.argument_hint.is_empty())
    }

    /// Whether `/name` takes arguments at all.
    pub(crate) fn takes_args(&self, name: &str) -> bool {
        COMMANDS
            .iter()
            .any(|c| c.name == name && !c.args.is_empty())
            || self.needs_args(name)
    }

    fn custom(&self, name: &str) -> Option<&crate::protocol::CommandInfo> {
        self.custom_commands.iter().find(|c| c.name == name)
    }

    /// The popup's rows for `/prefix`: builtins first, then custom commands (with where each
    /// comes from).
    pub(crate) fn command_items(&self, prefix: &str) -> Vec<PickerItem> {
        let mut items: Vec<PickerItem> = Self::matching_commands(prefix)
            .into_iter()
            .map(|c| PickerItem::new(usage(&c), c.about))
            .collect();
        let custom = |starts: bool| {
            self.custom_commands.iter().filter(move |c| {
                c.name.starts_with(prefix) == starts && (starts || c.name.contains(prefix))
            })
        };
        for c in custom(true).chain(custom(false)) {
            let label = if c.argument_hint.is_empty() {
                format!("/{}", c.name)
            } else {
                format!("/{} {}", c.name, c.argument_hint)
            };
            let trust = if c.untrusted { ", untrusted" } else { "" };
            // From files: one line each, through the sanitizer (/help prints them too).
            let detail = format!("{} ({}{trust})", c.description, c.origin);
            items.push(PickerItem::new(
                crate::sanitize::one_line(&label),
                crate::sanitize::one_line(&detail),
            ));
        }
        items
    }

    /// Sends `/name args` to the agent, which expands it; the transcript shows what was typed.
    fn run_custom(&mut self, name: &str, args: &str) {
        if self.busy {
            self.notice(
                format!("/{name} has to wait until the turn ends (esc interrupts it)"),
                Level::Warn,
            );
            return;
        }
        let shown = if args.is_empty() {
            format!("/{name}")
        } else {
            format!("/{name} {args}")
        };
        self.push_cell(CellKind::User(shown));
        self.begin_turn();
        self.send(Op::RunCommand {
            name: name.to_string(),
            args: args.to_string(),
        });
    }

    fn help(&mut self) {
        let mut lines = vec![InfoLine::new(vec![
            Run::new(Tone::Accent, "Commands").bold(),
        ])];
        let w = usage_width();
        for c in COMMANDS {
            let name = usage(c);
            lines.push(
                InfoLine::new(vec![
                    Run::new(Tone::Accent, format!("  {name:<w$}  ")),
                    Run::plain(c.about),
                ])
                .prefixed(vec![], vec![Run::plain(" ".repeat(w + 4))]),
            );
        }
        if !self.custom_commands.is_empty() {
            lines.push(InfoLine::blank());
            lines.push(InfoLine::new(vec![
                Run::new(Tone::Accent, "Custom commands (docs/commands.md)").bold(),
            ]));
            for item in self.command_items("").into_iter().skip(COMMANDS.len()) {
                let cw = w.max(crate::tui::wrap::str_width(&item.label));
                lines.push(
                    InfoLine::new(vec![
                        Run::new(Tone::Accent, format!("  {:<cw$}  ", item.label)),
                        Run::plain(item.detail),
                    ])
                    .prefixed(vec![], vec![Run::plain(" ".repeat(w + 4))]),
                );
            }
        }
        lines.push(InfoLine::blank());
        lines.push(InfoLine::new(vec![Run::new(Tone::Accent, "Keys").bold()]));
        // Long key names get their own width; the rest line up with the commands.
        for (k, what) in KEYS {
            let kw = w.max(crate::tui::wrap::str_width(k));
            lines.push(
                InfoLine::new(vec![
                    Run::new(Tone::Accent, format!("  {k:<kw$}  ")),
                    Run::plain(*what),
                ])
                .prefixed(vec![], vec![Run::plain(" ".repeat(w + 4))]),
            );
        }
        self.push_cell(CellKind::Info(lines));
    }

    /// All changes of the session as one diff per file: first old content → last new content.
    fn diff(&mut self) {
        let mut too_large = Vec::new();
        let mut diffs = Vec::new();
        for c in &self.file_changes {
            match (&c.new, c.complete) {
                (Some(new), true) => {
                    let mut d = FileEdit::between(&c.path, c.old.as_deref(), new);
                    d.origins = c.origins.clone();
                    diffs.push(d)
                }
                _ => too_large.push(c.path.clone()),
            }
        }
        if diffs.is_empty() && too_large.is_empty() {
            self.push_cell(CellKind::Diff(diffs));
            return;
        }
        if !diffs.is_empty() {
            self.push_cell(CellKind::Diff(diffs));
        }
        if !too_large.is_empty() {
            self.notice(
                format!(
                    "also changed, too large to keep for /diff: {}",
                    too_large.join(", ")
                ),
                Level::Info,
            );
        }
    }
}
