//! The agent's hook points around a turn: `SessionStart` when a session begins (its context
//! rides with the first message), `UserPromptSubmit` before the person's message reaches the
//! model (it may add context or block the message; the person sees why), and `Stop` when the
//! model is done (it may send the model back to work with a reason, at most
//! [`MAX_STOP_CONTINUES`] times a turn; the hook sees `stop_hook_active` from the second time).

use super::Agent;
use super::turn::LoopEnd;
use crate::hooks::{HookEvent, Hooks, MAX_STOP_CONTINUES};
use crate::llm::Message;
use crate::protocol::{Event, EventSink, TurnOutcome};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

impl Agent {
    /// Runs the `SessionStart` hooks once a session is announced (`source`: `startup`,
    /// `resume` or `clear`); what they add rides with the next message.
    pub(super) async fn session_start_hooks(&mut self, source: &str) {
        if !self.hooks.has(HookEvent::SessionStart) {
            return;
        }
        self.hooks.set_session(&self.session_id);
        // A new conversation starts without what was added for the old one.
        self.hook_context.clear();
        let cancel = CancellationToken::new();
        let answer = self
            .hooks
            .session_start(source, &self.events, &cancel)
            .await;
        if let Some(c) = answer.context {
            self.hook_context.push(format!("[SessionStart hook] {c}"));
        }
    }

    /// Runs the `UserPromptSubmit` hooks on `prompt`. `Ok`: the context to add to the message
    /// (with any `SessionStart` context still waiting). `Err`: a hook blocked it; the person
    /// was told why, and the turn ends with this outcome.
    pub(super) async fn prompt_hooks(
        &mut self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, TurnOutcome> {
        self.hooks.set_session(&self.session_id);
        let mut parts = std::mem::take(&mut self.hook_context);
        if self.hooks.has(HookEvent::UserPromptSubmit) {
            let answer = self
                .hooks
                .user_prompt_submit(prompt, &self.events, cancel)
                .await;
            // Both front ends show a failed turn's reason to the person.
            if let Some(why) = answer.block {
                return Err(TurnOutcome::Failed {
                    reason: format!(
                        "a UserPromptSubmit hook blocked your message, so it was not sent: {why}"
                    ),
                });
            }
            if let Some(c) = answer.context {
                parts.push(format!("[UserPromptSubmit hook] {c}"));
            }
        }
        Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
    }
}

/// The `Stop` hooks of one turn: whether to send the model back, and how often it was.
pub(super) struct StopHook<'a> {
    hooks: &'a Hooks,
    transcript: Option<PathBuf>,
    continued: u32,
}

impl<'a> StopHook<'a> {
    pub(super) fn new(hooks: &'a Hooks, transcript: Option<&Path>) -> StopHook<'a> {
        StopHook {
            hooks,
            transcript: transcript.map(Path::to_path_buf),
            continued: 0,
        }
    }

    /// When the loop completed and a Stop hook sends the model back: the message that does.
    pub(super) async fn continue_with(
        &mut self,
        end: &LoopEnd,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Option<Message> {
        if *end != LoopEnd::Completed || !self.hooks.has(HookEvent::Stop) {
            return None;
        }
        let active = self.continued > 0;
        let answer = self
            .hooks
            .stop(active, self.transcript.as_deref(), events, cancel)
            .await;
        let why = answer.block?;
        if self.continued >= MAX_STOP_CONTINUES {
            events.send(Event::notice(format!(
                "A Stop hook asked to continue again, but it already did {MAX_STOP_CONTINUES} \
                     times this turn; the turn ends here."
            )));
            return None;
        }
        self.continued += 1;
        events.send(Event::notice(format!(
            "A Stop hook sent the model back to work: {why}"
        )));
        Some(Message::User {
            content: format!("[Stop hook] Do not stop yet: {why}"),
        })
    }
}
