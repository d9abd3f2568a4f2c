//! `Op::RunCommand`: a custom slash command or `/init`, expanded into the person's message.
//! The person sees `/name args`; the model gets the prompt. A command's `model` and
//! `allowed-tools` (when they apply: `commands::Gate`) last for the turn it starts only.

use crate::commands::{Expanded, init_prompt};
use crate::policy::{Action, Rule, RuleSource};
use crate::protocol::{Event, TurnOutcome};

impl super::Agent {
    /// Tells the front end which commands there are, and which files were skipped.
    pub(super) fn announce_commands(&self) {
        self.events.send(Event::CommandsListed {
            commands: self.commands.infos(),
        });
        for text in self.commands.notices() {
            self.events.send(Event::notice(text));
        }
    }

    /// Runs `/name args` as one turn.
    pub(super) async fn command_turn(&mut self, name: &str, args: &str) {
        let args = args.trim();
        let shown = if args.is_empty() {
            format!("/{name}")
        } else {
            format!("/{name} {args}")
        };
        let expanded = if name == "init" {
            Expanded {
                text: init_prompt(self.config.cwd.join("AGENTS.md").exists(), args),
                model: None,
                allow_bash: Vec::new(),
                notices: Vec::new(),
            }
        } else if let Some(cmd) = self.commands.get(name) {
            cmd.expand(args)
        } else {
            let known: Vec<String> = self
                .commands
                .commands
                .iter()
                .map(|c| format!("/{}", c.name))
                .collect();
            let reason = if known.is_empty() {
                format!("there is no command /{name} (start the prompt with // to send a slash)")
            } else {
                format!(
                    "there is no command /{name}; the custom commands are {} (start the prompt \
                     with // to send a slash)",
                    known.join(", ")
                )
            };
            self.events.send(Event::TurnFinished {
                outcome: TurnOutcome::Failed { reason },
            });
            return;
        };
        for text in &expanded.notices {
            self.events.send(Event::notice(text.clone()));
        }
        let previous_model = expanded.model.as_ref().map(|m| {
            let old = std::mem::replace(&mut *crate::sync::write(&self.model), m.clone());
            self.events.send(Event::notice(format!(
                "/{name} uses the model {m} for this turn."
            )));
            old
        });
        let added = self.allow_for_turn(&expanded.allow_bash);
        self.user_turn(expanded.text, Some(shown)).await;
        {
            let mut policy = crate::sync::write(&self.dispatcher.policy);
            for rule in &added {
                policy.remove_session_rule(rule);
            }
        }
        if let (Some(old), Some(m)) = (previous_model, expanded.model) {
            let mut current = crate::sync::write(&self.model);
            // Unless the person switched the model meanwhile.
            if *current == m {
                *current = old;
            }
        }
    }

    /// Adds allow rules for `patterns` for one turn; returns the ones it added (a rule the
    /// session had already stays after the turn). Deny rules still win over them.
    fn allow_for_turn(&self, patterns: &[String]) -> Vec<Rule> {
        let mut policy = crate::sync::write(&self.dispatcher.policy);
        let mut added = Vec::new();
        for p in patterns {
            match Rule::new("bash", p, Action::Allow, RuleSource::Session) {
                Ok(rule) if !policy.rules().any(|r| *r == rule) => {
                    policy.add_session_rule(rule.clone());
                    added.push(rule);
                }
                Ok(_) => {}
                Err(e) => self.events.send(Event::notice(format!(
                    "allowed-tools pattern {p:?} is not a valid rule: {e}"
                ))),
            }
        }
        added
    }
}
