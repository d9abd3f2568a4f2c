//! Subagents for the `task` tool: the same turn loop with another [`LoopConfig`] (fresh
//! messages, read-only tools, a request cap, no nested `task`). Only the final text returns.

use super::dispatch::Dispatcher;
use super::journal::Journal;
use super::turn::{LoopConfig, LoopEnd, TurnEnv, TurnHooks};
use crate::llm::{Client, Message};
use crate::protocol::Event;
use crate::session_store::Entry;
use crate::tools::ToolCtx;
use crate::tools::task::SubagentRunner;
use futures::future::BoxFuture;
use std::sync::{Arc, RwLock};
use tokio::sync::Semaphore;

/// Tools a subagent may call.
pub const SUBAGENT_TOOLS: &[&str] = &["bash", "read_file", "read_skill"];

/// Longest answer handed back to the parent, in characters.
pub const ANSWER_CAP: usize = 20_000;

/// Runs subagents on behalf of the main agent.
pub struct Subagents {
    /// Model client (shared with the parent).
    pub client: Client,
    /// Current model (shared with the parent).
    pub model: Arc<RwLock<String>>,
    /// A dispatcher restricted to [`SUBAGENT_TOOLS`], sharing the parent's policy and approvals.
    pub dispatcher: Arc<Dispatcher>,
    /// The subagent system prompt.
    pub system: String,
    /// Request cap.
    pub max_requests: u32,
    /// Output token cap per request.
    pub max_tokens: u32,
    /// Tool results kept in full.
    pub keep_tool_results: usize,
    /// At most this many subagents run at once.
    pub slots: Arc<Semaphore>,
    /// Where the side chain is recorded (the session file).
    pub journal: Journal,
    /// The small-model aids a subagent's loop gets: a forced first look and the small tool
    /// set (its tools cannot write, so the change nudges and code blocks are not for it).
    pub aids: crate::config::ModelAids,
}

struct SideChainHooks {
    task_id: String,
    journal: Journal,
}

impl TurnHooks for SideChainHooks {
    fn appended(&mut self, msg: &Message) {
        self.journal
            .record(Entry::subagent(&self.task_id, Entry::from_message(msg)));
    }

    fn quirk(&mut self, q: &super::repair::Quirk) {
        let entry = Entry::model_quirk(q.kind, q.call_id.clone(), q.detail.clone());
        self.journal.record(Entry::subagent(&self.task_id, entry));
    }
}

fn cap(text: &str) -> String {
    match crate::text::cut(text, ANSWER_CAP, crate::text::Unit::Chars) {
        Some(head) => format!("{head}\n\n[answer cut at {ANSWER_CAP} characters]"),
        None => text.to_string(),
    }
}

fn last_text(history: &[Message]) -> String {
    history
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }) && !m.text().trim().is_empty())
        .map(Message::text)
        .unwrap_or_default()
}

impl Subagents {
    /// Runs the loop for one task and turns how it ended into the parent's result.
    async fn answer(
        &self,
        task_id: &str,
        description: String,
        ctx: &ToolCtx,
    ) -> Result<String, String> {
        let _slot = tokio::select! {
            s = self.slots.acquire() => s.map_err(|_| "the subagent pool is closed".to_string())?,
            _ = ctx.cancel.cancelled() => return Err("interrupted by the user".into()),
        };
        let mut sub_ctx = ctx.clone();
        sub_ctx.events = ctx.events.for_subagent(task_id);
        sub_ctx.subagents = None;
        // What the subagent reads never reaches the parent's context.
        sub_ctx.reads = Arc::default();
        let lc = LoopConfig {
            system: self.system.clone(),
            max_requests: Some(self.max_requests),
            keep_tool_results: Some(self.keep_tool_results),
            max_tokens: self.max_tokens,
            aids: self.aids,
        };
        let env = TurnEnv {
            client: &self.client,
            model: &self.model,
            dispatcher: &self.dispatcher,
            ctx: sub_ctx,
            lc: &lc,
        };
        let first = Message::User {
            content: description,
        };
        let mut hooks = SideChainHooks {
            task_id: task_id.to_string(),
            journal: self.journal.clone(),
        };
        hooks.appended(&first);
        let mut history = vec![first];
        let end = env.run(&mut history, &mut hooks).await;
        let text = last_text(&history);
        match end {
            LoopEnd::Completed if text.trim().is_empty() => Ok(
                "The subagent finished without writing an answer. Ask again with a more precise \
                 question, or look yourself."
                    .into(),
            ),
            LoopEnd::Completed => Ok(cap(&text)),
            LoopEnd::RequestCap => Ok(cap(&format!(
                "[The subagent stopped after {} model requests without finishing; its partial findings \
                 follow.]\n\n{}",
                self.max_requests,
                if text.trim().is_empty() {
                    "(no findings were written)"
                } else {
                    text.as_str()
                }
            ))),
            LoopEnd::Looped(reason) => Ok(cap(&format!(
                "[The subagent {reason}; its partial findings follow.]\n\n{}",
                if text.trim().is_empty() {
                    "(no findings were written)"
                } else {
                    text.as_str()
                }
            ))),
            LoopEnd::Interrupted => Err("interrupted by the user".to_string()),
            LoopEnd::Failed(reason) => Err(reason),
        }
    }
}

impl SubagentRunner for Subagents {
    fn run<'a>(
        &'a self,
        description: String,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let task_id = ctx.call_id.clone();
            ctx.events.send(Event::SubagentStarted {
                task_id: task_id.clone(),
                description: description.clone(),
            });
            let result = self.answer(&task_id, description, ctx).await;
            // Every start gets a finish, also when it never got a slot.
            ctx.events.send(Event::SubagentFinished {
                task_id,
                ok: result.is_ok(),
            });
            result
        })
    }
}
