//! What the loop does for a small local model (`small_model`): files read before the first
//! step, code shown instead of written made into calls, partial edits completed, and the nudges
//! that name the next step when an answer stops too early.

use super::*;
use crate::agent::{aids, code_blocks};

/// Steps forced to be calls after the nudge naming a file to add to, until it is changed.
const TARGET_STEPS: u8 = 2;

impl TurnEnv<'_> {
    /// A small model sees the source files the person's message names before its first step
    /// (`small_model` aid `read_named`): rein reads them with `read_file` calls of its own,
    /// rated and recorded like the model's, so the model starts from the code instead of a
    /// guess about it.
    pub(super) async fn read_named_files(
        &self,
        history: &mut Vec<Message>,
        st: &mut RunState,
        hooks: &mut dyn TurnHooks,
    ) -> Option<LoopEnd> {
        if !self.lc.aids.read_named || !matches!(history.last(), Some(Message::User { .. })) {
            return None;
        }
        let task = task_message(history)?;
        let ws = code_blocks::ToolWorkspace(&self.ctx);
        let calls: Vec<ToolCall> = code_blocks::named_files(task, &ws)
            .into_iter()
            .map(|path| ToolCall {
                id: crate::llm::openai::new_call_id(),
                name: "read_file".into(),
                arguments: serde_json::json!({ "path": path }).to_string(),
            })
            .collect();
        if calls.is_empty()
            || self
                .dispatcher
                .specs()
                .iter()
                .all(|t| t.name != "read_file")
        {
            return None;
        }
        let assistant = Message::Assistant {
            parts: calls.iter().cloned().map(AssistantPart::ToolCall).collect(),
        };
        history.push(assistant.clone());
        hooks.appended(&assistant);
        self.run_and_record(&calls, false, history, st, hooks).await
    }

    /// A small model's answer that shows code instead of writing it, to a message that asks
    /// for a change: its blocks become the calls they describe (`small_model` aid
    /// `code_blocks`), rated and approved like any other call.
    pub(super) fn apply_code_blocks(
        &self,
        repaired: &mut repair::Repaired,
        offered: &[&str],
        history: &[Message],
    ) {
        if !self.lc.aids.code_blocks {
            return;
        }
        let Some(task) = task_message(history).filter(|t| aids::asks_for_change(t)) else {
            return;
        };
        let ws = code_blocks::ToolWorkspace(&self.ctx);
        let proposals = code_blocks::proposals(&repaired.text(), task, &ws);
        let edits = proposals.iter().any(|p| p.tool != "bash");
        for p in proposals {
            // A command shown again after it ran, with nothing edited since, would run again
            // for nothing (a model repeating its answer repeats its "run the tests" block).
            let again = !edits && p.tool == "bash" && ran_this_message(history, &p.arguments);
            if !offered.contains(&p.tool) || again {
                continue;
            }
            let call = ToolCall {
                id: crate::llm::openai::new_call_id(),
                name: p.tool.into(),
                arguments: p.arguments.to_string(),
            };
            repaired.quirks.push(Quirk {
                kind: QuirkKind::AppliedCodeBlock,
                call_id: Some(call.id.clone()),
                detail: format!("{}: {}", call.name, p.what),
                text: p.what,
            });
            repaired.parts.push(AssistantPart::ToolCall(call.clone()));
            repaired.calls.push(call);
        }
    }

    /// A small model's edit that says what it means badly becomes the edit it stands for:
    /// a `write_file` holding only part of a file it read, the `str_replace` that merges that
    /// part in (see `code_blocks::partial_write`), or a line or two of a call the file makes,
    /// the one that adds them beside it (`code_blocks::beside_its_kind`); a `str_replace`
    /// quoting text the file does
    /// not hold to add definitions to it, the one that adds them where the quote's last line
    /// is (see `code_blocks::anchored_insert`). The call keeps its id and is rated and
    /// approved as the edit it now is.
    pub(super) fn complete_partial_edits(&self, repaired: &mut repair::Repaired) {
        for part in &mut repaired.parts {
            let AssistantPart::ToolCall(call) = part else {
                continue;
            };
            let Some((p, kind)) = self.partial_edit(call) else {
                continue;
            };
            call.name = p.tool.into();
            call.arguments = p.arguments.to_string();
            if let Some(listed) = repaired.calls.iter_mut().find(|c| c.id == call.id) {
                *listed = call.clone();
            }
            repaired.quirks.push(Quirk {
                kind,
                call_id: Some(call.id.clone()),
                detail: p.what.clone(),
                text: p.what,
            });
        }
    }

    /// The edit a `write_file` or `str_replace` call stands for, only over a file the model
    /// has read and that is unchanged since: the `old_str` it gets back shows nothing it has
    /// not seen. Read once, through the file tools' rules (inside the workspace, no protected
    /// place).
    fn partial_edit(&self, call: &ToolCall) -> Option<(code_blocks::Proposal, QuirkKind)> {
        if call.name != "write_file" && call.name != "str_replace" {
            return None;
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        let path = args["path"].as_str()?;
        // Both rewrites are for source files only: anything else is not read for them.
        code_blocks::Lang::of_path(path)?;
        use crate::tools::files::{Before, read_before, resolve};
        let resolved = resolve(&self.ctx, path)
            .ok()
            .filter(|r| r.inside_workspace && !r.protected)?;
        let Before::Present {
            fingerprint,
            text: Some(old),
        } = read_before(&resolved).ok()?
        else {
            return None;
        };
        self.ctx
            .reads
            .check(&resolved, &fingerprint, "write")
            .ok()?;
        if call.name == "write_file" {
            let content = args["content"].as_str()?;
            let p = code_blocks::partial_write(path, &old, content)
                .or_else(|| code_blocks::beside_its_kind(path, &old, content))?;
            return Some((p, QuirkKind::PartialWrite));
        }
        if args["replace_all"].as_bool() == Some(true) {
            return None;
        }
        let (old_str, new_str) = (args["old_str"].as_str()?, args["new_str"].as_str()?);
        let p = code_blocks::anchored_insert(path, &old, old_str, new_str)?;
        Some((p, QuirkKind::AnchoredInsert))
    }

    /// A small model gets the next step named after a command that failed, and the places
    /// a name it renamed still appears.
    pub(super) fn name_next_steps(&self, calls: &[ToolCall], results: &mut [CallResult]) {
        for (call, result) in calls.iter().zip(results.iter_mut()) {
            if let ("bash", Some(code)) = (call.name.as_str(), result.exit_code)
                && code != 0
            {
                let next = aids::after_failure(&result.output, code, &self.ctx.workspace);
                result.output = format!("{}\n\n{next}", result.output);
            } else if call.name == "str_replace"
                && !result.status.is_error()
                && let Some(note) = self.left_by_rename(&call.arguments)
            {
                result.output = format!("{}\n\n{note}", result.output);
            }
        }
    }

    /// Where a name a `str_replace` renamed still appears (see `code_blocks::left_by_rename`),
    /// looked for through the file tools' own rules.
    fn left_by_rename(&self, arguments: &str) -> Option<String> {
        let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
        let field = |k: &str| args.get(k).and_then(serde_json::Value::as_str);
        let ws = code_blocks::ToolWorkspace(&self.ctx);
        code_blocks::left_by_rename(field("path")?, field("old_str")?, field("new_str")?, &ws)
    }

    /// What to tell a small model whose answer ends the run too early (each once per run, the
    /// last once per command run): code shown but not written, giving up right after a failed
    /// call, a change asked for and none made, an option the task quotes that no source has,
    /// a change made after the last command and not checked, or a file the task asks to add
    /// to left unchanged.
    pub(super) fn unfinished_nudge(
        &self,
        history: &[Message],
        text: &str,
        st: &mut RunState,
    ) -> Option<String> {
        let (wrote, asked) = (st.wrote, &mut st.asked);
        // A failed command counts: the 1.5B model, told which import to extend after a
        // failed test run, said it had done so and stopped.
        let after_error = st.command_failed
            || matches!(
                history.iter().rev().nth(1),
                Some(Message::ToolResult { is_error: true, .. })
            );
        if !wrote && aids::shows_code(text) && !std::mem::replace(&mut asked.code, true) {
            return Some(aids::CODE_NOT_WRITTEN.into());
        }
        if after_error && asked.after_errors < aids::MAX_AFTER_ERROR {
            asked.after_errors += 1;
            // Sent again only after another failure, not for the answer to this one.
            st.command_failed = false;
            return Some(aids::GAVE_UP_AFTER_ERROR.into());
        }
        let task = task_message(history);
        if let Some(task) = task.filter(|t| !wrote && aids::asks_for_change(t))
            && !std::mem::replace(&mut asked.change, true)
        {
            return Some(self.change_not_made(task));
        }
        if let Some(task) = task.filter(|_| wrote && !asked.option)
            && let Some(nudge) = self.option_not_added(task)
        {
            asked.option = true;
            return Some(nudge);
        }
        if let Some(task) = task.filter(|_| wrote && !asked.option_used)
            && let Some(nudge) = self.option_not_used(task)
        {
            asked.option_used = true;
            return Some(nudge);
        }
        if st.unchecked
            && asked.checks < aids::MAX_CHECKS
            && !std::mem::replace(&mut asked.check, true)
        {
            asked.checks += 1;
            return Some(aids::change_not_checked(task));
        }
        let task = task?;
        if wrote && !asked.target {
            let named = aids::named_files(task);
            let left = aids::added_to(task, &named)
                .into_iter()
                .find(|f| !st.edited.iter().any(|e| same_path(e, f)))?;
            asked.target = true;
            let nudge = aids::target_not_changed(&left, self.lc.aids.code_blocks);
            st.target = Some((left, TARGET_STEPS));
            return Some(nudge);
        }
        None
    }

    /// After the nudge naming a file the task asks to add to, the next steps stay forced
    /// to be calls until that file is changed (at most [`TARGET_STEPS`]): the 1.5B model
    /// read the file it was sent to and stopped, claiming the change again.
    pub(super) fn keep_target_forced(&self, st: &mut RunState) {
        let Some((file, steps)) = &mut st.target else {
            return;
        };
        if *steps == 0 || st.edited.iter().any(|e| same_path(e, file)) {
            st.target = None;
            return;
        }
        *steps -= 1;
        st.force_next |= self.lc.aids.first_call;
    }

    /// The nudge for an option the task quotes that no source has (see
    /// `aids::option_not_added`), looked for through the file tools' own rules.
    fn option_not_added(&self, task: &str) -> Option<String> {
        let named = aids::named_files(task);
        aids::option_not_added(task, &named, &code_blocks::ToolWorkspace(&self.ctx))
    }

    /// The nudge for an option the task quotes that the source parses and never uses (see
    /// `aids::option_not_used`), read through the file tools' own rules.
    fn option_not_used(&self, task: &str) -> Option<String> {
        let named = aids::named_files(task);
        aids::option_not_used(task, &named, &code_blocks::ToolWorkspace(&self.ctx))
    }

    /// The nudge for a change not made, naming the files the task names and, for a function
    /// it quotes that no file defines, where it goes.
    fn change_not_made(&self, task: &str) -> String {
        let mut nudge = aids::change_not_made(task, &self.ctx.workspace);
        let named = aids::named_files(task);
        let ws = code_blocks::ToolWorkspace(&self.ctx);
        if let Some(add) = aids::definitions_to_add(task, &named, &ws, self.lc.aids.code_blocks) {
            nudge.push(' ');
            nudge.push_str(&add);
        }
        nudge
    }
}

/// Appends a message of rein's to the history as the user's.
/// The arguments of the last `write_todos` call in the history.
pub(super) fn last_todos(history: &[Message]) -> Option<&str> {
    history.iter().rev().find_map(|m| match m {
        Message::Assistant { parts } => parts.iter().rev().find_map(|p| match p {
            AssistantPart::ToolCall(c) if c.name == "write_todos" => Some(c.arguments.as_str()),
            _ => None,
        }),
        _ => None,
    })
}

/// The path a file tool's call names (`write_file`, `str_replace`).
pub(super) fn edited_path(call: &ToolCall) -> Option<String> {
    if !matches!(call.name.as_str(), "write_file" | "str_replace") {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args["path"].as_str().map(str::to_string)
}

/// Whether two workspace-relative paths a model wrote name the same file (`./a.py`, `a.py`).
fn same_path(a: &str, b: &str) -> bool {
    let plain = |p: &str| p.trim_start_matches("./").to_string();
    plain(a) == plain(b)
}

/// Whether a bash call with these arguments' command already ran since the person's last
/// message.
fn ran_this_message(history: &[Message], arguments: &serde_json::Value) -> bool {
    let command = &arguments["command"];
    history
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User { content } if !content.starts_with("[rein]")))
        .filter_map(|m| match m {
            Message::Assistant { parts } => Some(parts),
            _ => None,
        })
        .flatten()
        .any(|part| match part {
            AssistantPart::ToolCall(c) if c.name == "bash" => {
                serde_json::from_str::<serde_json::Value>(&c.arguments)
                    .is_ok_and(|a| a["command"] == *command)
            }
            _ => false,
        })
}
