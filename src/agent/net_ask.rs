//! Asking the person about a host that is not on the network allow-list, through the same
//! approval dialog and `Op::Approval` answers as tool calls: "yes" allows the host for the
//! session, "always" also saves it to their own config, "no" refuses it for the session.

use super::dispatch::PendingApprovals;
use crate::netproxy::{Answer, Asker};
use crate::protocol::{ApprovalRequest, Decision, Event, EventSink, ToolDisplay};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;

/// Puts network questions to the person (the TUI); headless runs have none.
pub(super) struct NetAsker {
    pub(super) events: EventSink,
    pub(super) pending: PendingApprovals,
    pub(super) cwd: PathBuf,
    /// Where "always" is saved, as shown in the dialog.
    pub(super) config_file: PathBuf,
    pub(super) next: AtomicU64,
}

/// Withdraws a question nobody answered when its command ended (the proxy task stopped).
struct Open<'a> {
    asker: &'a NetAsker,
    id: String,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if crate::sync::lock(&self.asker.pending)
            .remove(&self.id)
            .is_some()
        {
            self.asker.events.send(Event::ApprovalWithdrawn {
                id: self.id.clone(),
            });
        }
    }
}

impl Asker for NetAsker {
    fn ask<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let id = format!("network-{}", self.next.fetch_add(1, Ordering::Relaxed));
            let (tx, rx) = oneshot::channel();
            crate::sync::lock(&self.pending).insert(id.clone(), tx);
            let _open = Open {
                asker: self,
                id: id.clone(),
            };
            self.events.send(Event::ApprovalRequested(ApprovalRequest {
                id,
                call_id: String::new(),
                display: ToolDisplay::Network {
                    host: host.to_string(),
                    port,
                },
                cwd: self.cwd.clone(),
                part: format!("{host}:{port}"),
                reason: format!(
                    "a command asks to reach {host}:{port}, which is not in [sandbox.network] allow"
                ),
                subagent: None,
                always: Some(format!(
                    "[sandbox.network] allow in {}",
                    self.config_file.display()
                )),
                no_always: None,
            }));
            let (decision, _note) = rx.await.ok()?;
            let (answer, text) = match decision {
                Decision::Yes => (Answer::Session, Some("allowed for this session")),
                // The proxy says where it was saved (`tell`).
                Decision::Always => (Answer::Always, None),
                Decision::No => (Answer::No, Some("refused for this session")),
            };
            if let Some(text) = text {
                self.tell(format!("Network to {host}:{port} {text}."));
            }
            Some(answer)
        })
    }

    fn tell(&self, text: String) {
        self.events.send(Event::notice(text));
    }
}
