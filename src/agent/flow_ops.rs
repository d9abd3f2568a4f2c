//! The pair-programming ops the router answers at once, also while a turn runs: the approval
//! mode (Shift+Tab), the rules in force and dropping a session rule (`/permissions`), and the
//! server's model list (the `/model` picker).

use super::journal::Journal;
use super::mode::ModeSwitch;
use crate::llm::Client;
use crate::policy::{Policy, RuleSource};
use crate::protocol::{Event, EventSink, Op, RuleInfo};
use crate::session_store::Entry;
use std::sync::{Arc, RwLock};

/// What these answers need.
pub(super) struct FlowOps {
    /// The mode in force (the router is its one writer).
    pub mode: ModeSwitch,
    /// The rules the dispatchers consult.
    pub policy: Arc<RwLock<Policy>>,
    /// Asks the server for its models.
    pub client: Client,
    /// Records mode switches.
    pub journal: Journal,
    /// Where the answers go.
    pub events: EventSink,
}

impl FlowOps {
    /// Answers `op` if it is one of these; returns whether it was.
    pub(super) fn answer(&self, op: &Op) -> bool {
        match op {
            Op::SetMode { mode } => {
                if self.mode.get() != *mode {
                    self.mode.set(*mode);
                    self.journal.record(Entry::mode_change(*mode));
                }
                self.events.send(Event::ModeChanged { mode: *mode });
            }
            Op::ListPermissions => self.events.send(Event::Permissions {
                rules: self.rules_in_force(),
            }),
            Op::DropSessionRule { tool, pattern } => self.drop_session_rule(tool, pattern),
            Op::ListModels => {
                let (client, events) = (self.client.clone(), self.events.clone());
                tokio::spawn(async move {
                    let (models, error) = match client.list_models().await {
                        Ok(models) => (models, None),
                        Err(e) => (Vec::new(), Some(e)),
                    };
                    events.send(Event::Models { models, error });
                });
            }
            _ => return false,
        }
        true
    }

    /// The rules in force, in the order they are consulted, as `/permissions` lists them.
    fn rules_in_force(&self) -> Vec<RuleInfo> {
        crate::sync::read(&self.policy)
            .rules()
            .map(|r| RuleInfo {
                tool: r.tool.clone(),
                pattern: r.pattern.clone(),
                action: r.action.as_str().to_string(),
                source: r.source.to_string(),
                session: r.source == RuleSource::Session,
            })
            .collect()
    }

    /// Drops a session rule and says what happened.
    fn drop_session_rule(&self, tool: &str, pattern: &str) {
        let dropped = {
            let mut p = crate::sync::write(&self.policy);
            let rule = p
                .rules()
                .find(|r| r.source == RuleSource::Session && r.tool == tool && r.pattern == pattern)
                .cloned();
            rule.is_some_and(|r| p.remove_session_rule(&r))
        };
        self.events.send(Event::notice(if dropped {
            format!("Dropped the session rule {tool}({pattern}): it asks again.")
        } else {
            format!("There is no session rule {tool}({pattern}); /permissions lists them.")
        }));
    }
}
