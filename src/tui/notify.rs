//! Telling the person that rein waits for them (an approval, a finished turn) while they look
//! elsewhere: a terminal bell, a desktop notification through OSC 9 or OSC 777, and/or the
//! person's own `notify` command (Codex's habit). Only when the terminal reported that it lost
//! focus, unless the person chose a method explicitly (then also where the terminal never says).

use crate::protocol::Event;
use std::path::PathBuf;

/// How rein notifies (config `notify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyMethod {
    /// OSC 9 on terminals known to show it, else the bell; only after a focus-lost report.
    Auto,
    /// The terminal bell (BEL).
    Bell,
    /// OSC 9 (iTerm2, WezTerm, Ghostty, kitty, Windows Terminal's toast).
    Osc9,
    /// OSC 777 (rxvt-unicode, foot, Konsole).
    Osc777,
    /// Never.
    Off,
}

impl NotifyMethod {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<NotifyMethod> {
        Some(match s {
            "auto" => NotifyMethod::Auto,
            "bell" => NotifyMethod::Bell,
            "osc9" => NotifyMethod::Osc9,
            "osc777" => NotifyMethod::Osc777,
            "off" => NotifyMethod::Off,
            _ => return None,
        })
    }
}

/// What the person gets told and when.
#[derive(Clone, Debug)]
pub struct NotifySettings {
    /// The terminal's way.
    pub method: NotifyMethod,
    /// A program run with one JSON argument (`{"type": …, "message": …}`), from the person's own
    /// config only; empty for none.
    pub command: Vec<String>,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            method: NotifyMethod::Auto,
            command: Vec::new(),
        }
    }
}

/// Watches focus and agent events; says what to write to the terminal.
pub struct Notifier {
    settings: NotifySettings,
    /// `None` until the terminal reports focus at all.
    focused: Option<bool>,
    /// `TERM_PROGRAM`, for `auto`.
    term_program: String,
    /// The workspace (the notify program never runs in it).
    workspace: PathBuf,
}

impl Notifier {
    /// A notifier for these settings.
    pub fn new(settings: NotifySettings, workspace: PathBuf) -> Notifier {
        Notifier {
            settings,
            workspace,
            focused: None,
            term_program: std::env::var("TERM_PROGRAM").unwrap_or_default(),
        }
    }

    /// Follows the terminal's focus reports.
    pub fn on_terminal_event(&mut self, ev: &crossterm::event::Event) {
        match ev {
            crossterm::event::Event::FocusGained => self.focused = Some(true),
            crossterm::event::Event::FocusLost => self.focused = Some(false),
            _ => {}
        }
    }

    /// The bytes to write to the terminal for `ev` (empty for none), and starts the `notify`
    /// command when one is set.
    pub fn on_agent_event(&mut self, ev: &Event) -> String {
        let (kind, message) = match ev {
            Event::ApprovalRequested { .. } => ("approval-requested", "rein needs your approval"),
            Event::TurnFinished { .. } => ("turn-finished", "rein finished its turn"),
            _ => return String::new(),
        };
        if !self.wanted() {
            return String::new();
        }
        self.run_command(kind, message);
        self.sequence(message)
    }

    fn wanted(&self) -> bool {
        match self.settings.method {
            NotifyMethod::Off => false,
            NotifyMethod::Auto => self.focused == Some(false),
            _ => self.focused != Some(true),
        }
    }

    fn sequence(&self, message: &str) -> String {
        // The message is rein's own fixed text: no control character can reach the terminal.
        let method = match self.settings.method {
            NotifyMethod::Auto
                if matches!(
                    self.term_program.as_str(),
                    "iTerm.app" | "WezTerm" | "ghostty" | "kitty"
                ) =>
            {
                NotifyMethod::Osc9
            }
            NotifyMethod::Auto => NotifyMethod::Bell,
            m => m,
        };
        match method {
            NotifyMethod::Bell => "\x07".to_string(),
            NotifyMethod::Osc9 => format!("\x1b]9;{message}\x07"),
            NotifyMethod::Osc777 => format!("\x1b]777;notify;rein;{message}\x07"),
            NotifyMethod::Auto | NotifyMethod::Off => String::new(),
        }
    }

    /// Starts the person's `notify` program through the launch gate (outside the workspace,
    /// the environment allow-list) and does not wait for it.
    fn run_command(&self, kind: &str, message: &str) {
        let Some((program, args)) = self.settings.command.split_first() else {
            return;
        };
        let prepared = crate::launch::prepare(&crate::launch::Request {
            program,
            cwd: None,
            env: &[],
            workspace: &self.workspace,
            in_project: false,
            purpose: crate::launch::Purpose::Notify,
        });
        let mut prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(%e, "the notify command was not started");
                return;
            }
        };
        let dir = prepared.take_dir();
        let payload = serde_json::json!({"type": kind, "message": message}).to_string();
        let mut cmd = prepared.command();
        cmd.args(args)
            .arg(payload)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        match cmd.spawn() {
            // Reaped in the background so no zombie stays; its private dir goes after it.
            Ok(mut child) => {
                std::thread::spawn(move || {
                    let _ = child.wait();
                    drop(dir);
                });
            }
            Err(e) => tracing::warn!(%e, "the notify command could not start"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TurnOutcome;
    use crossterm::event::Event as Term;

    fn finished() -> Event {
        Event::TurnFinished {
            outcome: TurnOutcome::Completed,
        }
    }

    fn notifier(method: NotifyMethod) -> Notifier {
        let mut n = Notifier::new(
            NotifySettings {
                method,
                command: Vec::new(),
            },
            PathBuf::from("/nonexistent"),
        );
        n.term_program = String::new();
        n
    }

    #[test]
    fn auto_notifies_only_after_the_terminal_lost_focus() {
        let mut n = notifier(NotifyMethod::Auto);
        assert_eq!(n.on_agent_event(&finished()), "", "focus never reported");
        n.on_terminal_event(&Term::FocusLost);
        assert_eq!(n.on_agent_event(&finished()), "\x07");
        n.on_terminal_event(&Term::FocusGained);
        assert_eq!(n.on_agent_event(&finished()), "");
        n.term_program = "WezTerm".into();
        n.on_terminal_event(&Term::FocusLost);
        assert_eq!(
            n.on_agent_event(&finished()),
            "\x1b]9;rein finished its turn\x07"
        );
    }

    #[test]
    fn an_explicit_method_also_works_where_focus_is_never_reported() {
        let mut n = notifier(NotifyMethod::Osc777);
        assert_eq!(
            n.on_agent_event(&finished()),
            "\x1b]777;notify;rein;rein finished its turn\x07"
        );
        n.on_terminal_event(&Term::FocusGained);
        assert_eq!(n.on_agent_event(&finished()), "");
        let mut off = notifier(NotifyMethod::Off);
        off.on_terminal_event(&Term::FocusLost);
        assert_eq!(off.on_agent_event(&finished()), "");
    }

    #[test]
    fn other_events_notify_nothing() {
        let mut n = notifier(NotifyMethod::Bell);
        let ev = Event::AssistantDelta { text: "x".into() };
        assert_eq!(n.on_agent_event(&ev), "");
    }
}
