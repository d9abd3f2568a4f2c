//! Where the dispatcher asks the hooks: `PreToolUse` between the policy's verdict and the
//! question, `PostToolUse` once the call ran. A hook composes with the policy, never over it:
//! a deny from either wins (a denied call never reaches a hook), a hook's allow only skips a
//! question the policy would ask, and its ask makes an allowed call ask.

use super::Ended;
use crate::hooks::{HookEvent, Hooks, Permission};
use crate::policy::{Action, Verdict};
use crate::protocol::ToolStatus;
use crate::tools::{Effect, ToolCtx};
use serde_json::{Value, json};

/// Runs the `PreToolUse` hooks for a call the policy did not deny and applies their answer to
/// `verdict`. `Err`: a hook refused the call (the result for the model). `Ok`: context a hook
/// added, for the result.
pub(super) async fn pre_tool_use(
    hooks: &Hooks,
    tool: &str,
    input: Value,
    verdict: &mut Verdict,
    ctx: &ToolCtx,
) -> Result<Option<String>, Ended> {
    if !hooks.has(HookEvent::PreToolUse) {
        return Ok(None);
    }
    let answer = hooks
        .pre_tool_use(tool, input, &ctx.events, &ctx.cancel)
        .await;
    match answer.pre_tool_permission() {
        Some((Permission::Deny, why)) => {
            return Err(Ended::new(
                ToolStatus::Blocked,
                format!(
                    "Blocked by a PreToolUse hook: {why}\nThe call did not run. Do not retry it \
                     as it is; change it to meet the hook's objection or choose another way."
                ),
            ));
        }
        Some((Permission::Ask, why)) if verdict.action == Action::Allow => {
            verdict.action = Action::Ask;
            verdict.reason = if why.is_empty() {
                "a hook asks for your approval".into()
            } else {
                format!("a hook asks: {why}")
            };
        }
        // Only what the policy would ask: never a deny (those do not get here).
        Some((Permission::Allow, _)) if verdict.action == Action::Ask => {
            verdict.action = Action::Allow;
        }
        _ => {}
    }
    Ok(answer.context.map(|c| format!("[PreToolUse hook] {c}")))
}

/// Runs the `PostToolUse` hooks for a call that ran; what they say is added to its result (a
/// block is a reason for the model: the call already happened).
pub(super) async fn post_tool_use(
    hooks: &Hooks,
    tool: &str,
    input: Value,
    ended: &mut Ended,
    ctx: &ToolCtx,
) {
    if !hooks.has(HookEvent::PostToolUse) {
        return;
    }
    let exit_code = match ended.effect {
        Effect::Exited { code } => Some(code),
        _ => None,
    };
    let response = json!({
        "output": ctx.secrets.mask(&ended.output),
        "status": ended.status,
        "exit_code": exit_code,
    });
    let answer = hooks
        .post_tool_use(tool, input, response, &ctx.events, &ctx.cancel)
        .await;
    if let Some(why) = answer.block {
        ended.output = format!("{}\n\n[PostToolUse hook] {why}", ended.output);
    }
    if let Some(context) = answer.context {
        ended.output = format!("{}\n\n[PostToolUse hook] {context}", ended.output);
    }
}
