//! `!cmd`: a command the person runs themselves. It goes through the same dispatcher as the
//! model's bash calls (deny rules, the sandbox, the live output), and what it printed joins
//! the conversation as context for the next message.

use super::Agent;
use super::dispatch::CallResult;
use crate::llm::{Message, ToolCall};
use crate::protocol::{Event, ToolStatus, TurnOutcome};
use crate::session_store::Entry;

impl Agent {
    /// Runs `command` for the person and keeps its output for the model.
    pub(super) async fn run_shell(&mut self, command: String) {
        let cancel = self.fresh_cancel_token();
        self.events.send(Event::TurnStarted);
        let call = ToolCall {
            id: format!("shell-{}", super::new_session_id()),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        };
        let mut ctx = self.tool_ctx(cancel);
        ctx.call_id = call.id.clone();
        let result = self.dispatcher.dispatch_for_person(&call, &ctx).await;
        let text = shell_context(&command, &result);
        self.journal.record(Entry::shell_context(text.clone()));
        self.history.push(Message::User { content: text });
        self.journal.sync();
        self.events.send(Event::Usage {
            used_tokens: self.used_tokens(),
            context_window: self.config.context_window,
        });
        let outcome = match result.status {
            ToolStatus::Interrupted => TurnOutcome::Interrupted,
            _ => TurnOutcome::Completed,
        };
        self.events.send(Event::TurnFinished { outcome });
    }
}

/// What the model reads about a command the person ran.
pub(crate) fn shell_context(command: &str, result: &CallResult) -> String {
    let how = match (result.status, result.exit_code) {
        (ToolStatus::Ok, Some(0) | None) => "it succeeded".to_string(),
        (ToolStatus::Ok, Some(code)) => format!("it exited with status {code}"),
        (ToolStatus::Blocked, _) => "a deny rule blocked it".to_string(),
        (ToolStatus::Interrupted, _) => "it was interrupted".to_string(),
        _ => "it failed".to_string(),
    };
    let output = result.output.trim_end();
    let output = if output.is_empty() {
        "(no output)"
    } else {
        output
    };
    format!(
        "I ran a command myself in the workspace ({how}); here is its output, as context for \
         my next message.\n$ {command}\n```\n{output}\n```"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolDisplay;

    #[test]
    fn the_context_names_the_command_how_it_ended_and_its_output() {
        let result = CallResult {
            status: ToolStatus::Ok,
            output: "test result: ok\n".into(),
            display: ToolDisplay::Exec {
                command: "cargo test".into(),
            },
            elapsed_ms: 5,
            exit_code: Some(101),
            todos: None,
            changed_files: false,
        };
        let text = shell_context("cargo test", &result);
        assert!(text.contains("$ cargo test\n"), "{text}");
        assert!(text.contains("exited with status 101"), "{text}");
        assert!(text.contains("```\ntest result: ok\n```"), "{text}");
    }
}
