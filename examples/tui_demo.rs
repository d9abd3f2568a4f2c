//! Runs the TUI against a scripted fake agent (no model): every message gets a streamed answer,
//! a tool call with live output and, for messages containing "edit", an edit approval.

use rein::protocol::{
    ApprovalRequest, EditDiff, Event, Op, SessionInfo, Todo, TodoStatus, ToolDisplay, ToolStatus,
    TurnOutcome,
};
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (op_tx, mut op_rx) = unbounded_channel::<Op>();
    let (ev_tx, ev_rx) = unbounded_channel::<Event>();
    let agent = tokio::spawn(async move {
        let info = SessionInfo {
            session_id: "demo-0001".into(),
            model: "demo-model".into(),
            provider: "openai".into(),
            cwd: std::env::current_dir().unwrap_or_default(),
            context_window: 128_000,
            approval_mode: "ask".into(),
            mode: Default::default(),
            sandbox_mode: "workspace-write".into(),
            history: Vec::new(),
            keep_view: false,
        };
        let _ = ev_tx.send(Event::SessionConfigured(info.clone()));
        let mut used = 1_000;
        while let Some(op) = op_rx.recv().await {
            match op {
                Op::UserInput { text } => {
                    let _ = ev_tx.send(Event::TurnStarted);
                    let answer = format!(
                        "You said **{text}**.\n\n- first point\n- second point\n\n```rust\nfn main() {{\n    println!(\"hi\");\n}}\n```\n"
                    );
                    for chunk in answer.split_inclusive(' ') {
                        let _ = ev_tx.send(Event::AssistantDelta { text: chunk.into() });
                        tokio::time::sleep(Duration::from_millis(15)).await;
                    }
                    let _ = ev_tx.send(Event::AssistantMessage { text: answer });
                    let _ = ev_tx.send(Event::TodosUpdated {
                        todos: vec![
                            Todo {
                                content: "Answer".into(),
                                active_form: "Answering".into(),
                                status: TodoStatus::Completed,
                            },
                            Todo {
                                content: "Run a tool".into(),
                                active_form: "Running a tool".into(),
                                status: TodoStatus::InProgress,
                            },
                        ],
                    });
                    let _ = ev_tx.send(Event::ToolCallStarted {
                        call_id: "c1".into(),
                        display: ToolDisplay::Exec {
                            command: "seq 1 30".into(),
                        },
                    });
                    for i in 1..=30 {
                        let _ = ev_tx.send(Event::ToolOutputDelta {
                            call_id: "c1".into(),
                            chunk: format!("{i}\n"),
                        });
                        tokio::time::sleep(Duration::from_millis(40)).await;
                    }
                    let out: String = (1..=30).map(|i| format!("{i}\n")).collect();
                    let _ = ev_tx.send(Event::ToolCallFinished {
                        call_id: "c1".into(),
                        status: ToolStatus::Ok,
                        output: out,
                        elapsed_ms: 1_200,
                        exit_code: None,
                    });
                    if text.contains("edit") {
                        let _ = ev_tx.send(Event::ApprovalRequested(ApprovalRequest {
                            id: "a1".into(),
                            call_id: "c2".into(),
                            display: ToolDisplay::Edit {
                                path: "hello.rs".into(),
                                diff: Some(EditDiff::between(None, "fn main() {}\n")),
                            },
                            cwd: std::env::current_dir().unwrap_or_default(),
                            part: "hello.rs".into(),
                            reason: "no rule matched (default ask)".into(),
                            subagent: None,
                            always: None,
                            no_always: None,
                        }));
                        continue;
                    }
                    used += 9_000;
                    let _ = ev_tx.send(Event::Usage {
                        used_tokens: used,
                        context_window: 128_000,
                    });
                    let _ = ev_tx.send(Event::TurnFinished {
                        outcome: TurnOutcome::Completed,
                    });
                }
                Op::Approval { decision, note, .. } => {
                    let _ = ev_tx.send(Event::notice(format!("approval: {decision:?} {note:?}")));
                    let _ = ev_tx.send(Event::TurnFinished {
                        outcome: TurnOutcome::Completed,
                    });
                }
                Op::Interrupt => {
                    let _ = ev_tx.send(Event::TurnFinished {
                        outcome: TurnOutcome::Interrupted,
                    });
                }
                Op::Clear => {
                    let _ = ev_tx.send(Event::SessionConfigured(info.clone()));
                }
                Op::Shutdown => break,
                other => {
                    let _ = ev_tx.send(Event::notice(format!("op: {other:?}")));
                }
            }
        }
    });
    let data = std::env::temp_dir().join("rein-tui-demo");
    let opts = rein::tui::UiOptions {
        theme: std::env::var("REIN_THEME").unwrap_or_else(|_| "dark".into()),
        notify: rein::tui::notify::NotifySettings::default(),
        workspace: data.clone(),
        config_dir: data.clone(),
        data_dir: data,
        notices: Vec::new(),
    };
    let result = rein::tui::run(opts, op_tx, ev_rx).await;
    let _ = agent.await;
    result.map(|_| ())
}
