//! A real [`ToolCtx`] over temp dirs for the tools' unit tests.

use crate::protocol::Event;
use crate::protocol::EventSink;
use crate::sandbox::Sandbox;
use crate::tools::{Prepared, Tool, ToolCtx, ToolError, ToolOutput};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

/// A tool context whose workspace, home and temp dir live in one temp dir.
pub(crate) struct TestCtx {
    /// The context handed to tools.
    pub ctx: ToolCtx,
    /// Events the tools sent.
    pub events: UnboundedReceiver<Event>,
    /// The workspace (canonical, exists).
    pub ws: PathBuf,
    /// Keeps the temp dir alive.
    pub _dir: tempfile::TempDir,
}

impl TestCtx {
    /// A fresh context; the temp dir for bash is not created yet (the tool must create it).
    pub(crate) fn new() -> TestCtx {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonicalize");
        let ws = base.join("ws");
        let home = base.join("home");
        std::fs::create_dir_all(&ws).expect("mkdir ws");
        std::fs::create_dir_all(&home).expect("mkdir home");
        let temp_dir = base.join("session-tmp");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ToolCtx {
            workspace: ws.clone(),
            home: Some(home),
            temp_dir: temp_dir.clone(),
            call_id: "call_1".into(),
            events: EventSink::new(tx),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(Sandbox::off(ws.clone(), temp_dir)),
            bash_timeout_secs: 60,
            env_remove: vec!["API_KEY".into()],
            subagents: None,
            skills: Default::default(),
            secrets: Default::default(),
            reads: Default::default(),
            may_read: None,
            refuse_fragments: false,
        };
        TestCtx {
            ctx,
            events: rx,
            ws,
            _dir: dir,
        }
    }

    /// Prepares a call as the dispatcher does.
    pub(crate) fn prepare(
        &self,
        tool: &dyn Tool,
        args: Value,
    ) -> Result<Box<dyn Prepared>, ToolError> {
        tool.prepare(args, &self.ctx)
    }

    /// Prepares and runs a call at once (nobody is asked in between).
    pub(crate) async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        self.prepare(tool, args)?.run(&self.ctx).await
    }

    /// Writes a file in the workspace (creating parents) and returns its path.
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.ws.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    /// Writes a file the model has seen (as if it had read it): edits may go ahead.
    pub(crate) fn write_seen(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.write(rel, content.as_ref());
        let fp = crate::tools::files::Fingerprint::of(content.as_ref());
        self.ctx.reads.saw(&p, Some(fp));
        p
    }

    /// Reads a workspace file as a string.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws.join(rel)).expect("read")
    }
}
