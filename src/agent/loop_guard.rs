//! Loop detection: ends a run of the loop whose model keeps doing the same thing, in place of
//! a hard cap on requests. One mechanism for every loop (main agent, subagents) and for every
//! way a call arrives (real tool calls and calls written as text, recovered by `repair`).
//!
//! A *step* is one answer's tool calls with their results. Two rules:
//! - **Repeats**: the same calls (tool and arguments) with the same results
//!   [`REPEAT_STOP`] steps in a row. At [`REPEAT_NUDGE`] the model is told in the result.
//! - **No progress**: [`IDLE_STOP`] steps in a row where every call either failed (an `Error`
//!   result: bad arguments, unknown tool, a tool that could not do it) or repeated, with the
//!   same result, a call of the last [`RECENT_STEPS`] steps, whose results the model still sees
//!   in full (older ones are micro-compacted, so calling them again is legitimate). This catches
//!   loops like A, B, A, B. A call that does something new (a new command, a new read, a
//!   write) is progress, whatever its exit code.

use super::dispatch::CallResult;
use crate::llm::ToolCall;
use crate::protocol::ToolStatus;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

/// Identical steps in a row after which the result tells the model it is repeating itself.
pub const REPEAT_NUDGE: u32 = 3;
/// Identical steps in a row that end the run.
pub const REPEAT_STOP: u32 = 4;
/// Steps in a row without progress that end the run.
pub const IDLE_STOP: u32 = 10;
/// How far back a repeat counts as no progress (the tool results sent in full by default).
pub const RECENT_STEPS: usize = 3;

/// What the loop should do after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Carry on.
    Go,
    /// Carry on, with this note appended to the step's last result.
    Nudge(String),
    /// End the run; the text says why (for the person and the session file).
    Stop(String),
}

/// The state of one run of the loop.
#[derive(Default)]
pub struct LoopGuard {
    /// Fingerprint of the previous step.
    last_step: Option<u64>,
    /// How many steps in a row had that fingerprint.
    same_in_a_row: u32,
    /// The calls (with their results) of the last [`RECENT_STEPS`] steps.
    recent: VecDeque<Vec<u64>>,
    /// Steps in a row without progress.
    idle: u32,
}

/// Arguments in a canonical form: parsed and re-serialised when they are JSON (key order and
/// spacing do not make a call different), as sent otherwise.
fn canonical_args(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => v.to_string(),
        Err(_) => raw.trim().to_string(),
    }
}

fn call_key(call: &ToolCall, result: &CallResult) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    call.name.hash(&mut h);
    canonical_args(&call.arguments).hash(&mut h);
    (result.status as u8).hash(&mut h);
    result.exit_code.hash(&mut h);
    result.output.hash(&mut h);
    h.finish()
}

fn ordinal(n: u32) -> &'static str {
    match n {
        2 => "2nd",
        3 => "3rd",
        4 => "4th",
        _ => "nth",
    }
}

impl LoopGuard {
    /// Judges one step: `calls` and their `results`, in order.
    pub fn step(&mut self, calls: &[ToolCall], results: &[CallResult]) -> Verdict {
        let keys: Vec<u64> = calls
            .iter()
            .zip(results)
            .map(|(c, r)| call_key(c, r))
            .collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        keys.hash(&mut h);
        let step = h.finish();
        if self.last_step == Some(step) {
            self.same_in_a_row += 1;
        } else {
            self.last_step = Some(step);
            self.same_in_a_row = 1;
        }
        let idle = keys.iter().zip(results).all(|(k, r)| {
            r.status == ToolStatus::Error || self.recent.iter().any(|s| s.contains(k))
        });
        if self.recent.len() == RECENT_STEPS {
            self.recent.pop_front();
        }
        self.recent.push_back(keys);
        self.idle = if idle { self.idle + 1 } else { 0 };
        let what = match calls {
            [one] => format!("the same `{}` call", one.name),
            _ => "the same tool calls".to_string(),
        };
        if self.same_in_a_row >= REPEAT_STOP {
            return Verdict::Stop(format!(
                "stopped a loop: the model made {what} with the same result {} times in a row",
                self.same_in_a_row
            ));
        }
        if self.idle >= IDLE_STOP {
            return Verdict::Stop(format!(
                "stopped a loop: {} steps in a row made no progress (every call failed or \
                 repeated an earlier call with the same result)",
                self.idle
            ));
        }
        if self.same_in_a_row == REPEAT_NUDGE {
            return Verdict::Nudge(format!(
                "[rein] This is the {} time in a row that this call returned exactly this \
                 result; repeating it will not change it. Do something different, or stop and \
                 say what blocks you.",
                ordinal(REPEAT_NUDGE)
            ));
        }
        Verdict::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolDisplay;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn result(status: ToolStatus, output: &str) -> CallResult {
        CallResult {
            status,
            output: output.into(),
            display: ToolDisplay::Other {
                name: "t".into(),
                args: serde_json::Value::Null,
            },
            elapsed_ms: 0,
            exit_code: None,
            todos: None,
            changed_files: false,
        }
    }

    #[test]
    fn the_same_call_with_the_same_result_is_nudged_then_stopped() {
        let mut g = LoopGuard::default();
        let c = [call("bash", r#"{"command":"ls"}"#)];
        let r = [result(ToolStatus::Ok, "a b")];
        assert_eq!(g.step(&c, &r), Verdict::Go);
        // Key order and spacing do not make it another call.
        let c2 = [call("bash", r#"{ "command" : "ls" }"#)];
        assert_eq!(g.step(&c2, &r), Verdict::Go);
        assert!(matches!(g.step(&c, &r), Verdict::Nudge(n) if n.contains("3rd time")));
        assert!(matches!(g.step(&c, &r), Verdict::Stop(s) if s.contains("4 times in a row")));
    }

    #[test]
    fn a_changed_result_or_call_resets_the_count() {
        let mut g = LoopGuard::default();
        let c = [call("bash", r#"{"command":"make"}"#)];
        for i in 0..20 {
            // The same command, a different result each time (a build that progresses).
            let r = [result(ToolStatus::Ok, &format!("step {i}"))];
            assert_eq!(g.step(&c, &r), Verdict::Go, "step {i}");
        }
        let ok = [result(ToolStatus::Ok, "same")];
        g.step(&c, &ok);
        g.step(&c, &ok);
        g.step(&[call("read_file", r#"{"path":"a"}"#)], &ok);
        assert_eq!(g.step(&c, &ok), Verdict::Go);
    }

    #[test]
    fn alternating_repeats_and_failures_are_no_progress() {
        let mut g = LoopGuard::default();
        let a = [call("bash", r#"{"command":"a"}"#)];
        let b = [call("bash", r#"{"command":"b"}"#)];
        let r = [result(ToolStatus::Ok, "x")];
        assert_eq!(g.step(&a, &r), Verdict::Go);
        assert_eq!(g.step(&b, &r), Verdict::Go);
        // From here on every step repeats an earlier call, or fails.
        let mut last = Verdict::Go;
        for i in 0..IDLE_STOP {
            last = match i % 3 {
                0 => g.step(&a, &r),
                1 => g.step(&b, &r),
                _ => {
                    let bad = [call("bash", &format!("{{\"command\": {i}"))];
                    g.step(
                        &bad,
                        &[result(ToolStatus::Error, &format!("Error: bad {i}"))],
                    )
                }
            };
            if i + 1 < IDLE_STOP {
                assert!(!matches!(last, Verdict::Stop(_)), "step {i}: {last:?}");
            }
        }
        assert!(matches!(last, Verdict::Stop(s) if s.contains("no progress")));
    }

    #[test]
    fn reading_files_again_after_they_left_the_window_is_progress() {
        // Older results are micro-compacted: the model is told to run the tool again.
        let mut g = LoopGuard::default();
        for i in 0..200 {
            let c = [call("read_file", &format!("{{\"path\":\"f{}\"}}", i % 10))];
            let r = [result(ToolStatus::Ok, &format!("content {}", i % 10))];
            assert_eq!(g.step(&c, &r), Verdict::Go, "step {i}");
        }
    }

    #[test]
    fn new_calls_are_progress_whatever_they_return() {
        let mut g = LoopGuard::default();
        for i in 0..200 {
            let c = [call("bash", &format!("{{\"command\":\"grep x{i}\"}}"))];
            let mut r = result(ToolStatus::Ok, "");
            r.exit_code = Some(1);
            assert_eq!(g.step(&c, &[r]), Verdict::Go);
        }
    }
}
