//! The connection manager: starts the configured servers in the background, knows each one's
//! state, offers their tools, runs calls (restarting a crashed server on the next call), and
//! reports status for `/mcp` and `rein mcp list`.

use super::client::{CallError, Connection, ToolDef, connect};
use super::config::ServerConfig;
use super::result::{Converted, convert};
use super::schema::{sanitize, split_name, tool_name};
use crate::llm::ToolSpec;
use crate::protocol::{McpServerStatus, McpState};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Decides whether a server that needs the project's trust (`trust::needs_trust`) may start:
/// `Err(reason)` keeps it stopped.
pub type ProjectGate = Arc<dyn Fn(&ServerConfig) -> Result<(), String> + Send + Sync>;

/// Where one-line notices for the person go (a server failed to start, ...).
pub type Notify = Arc<dyn Fn(String) + Send + Sync>;

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedTool {
    /// `mcp__<server>__<tool>`.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// What the model is shown (schema sanitised).
    pub spec: ToolSpec,
}

struct Slot {
    config: ServerConfig,
    /// Approved to use the workspace (a project decision the project's trust allowed): then
    /// it starts in the workspace unless it names another `cwd`.
    in_project: bool,
    state: Mutex<McpState>,
    /// Held while (re)connecting, so calls wait for a start in progress.
    conn: Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>,
    /// The tools of the current connection.
    tools: Mutex<Vec<ToolDef>>,
}

struct Inner {
    slots: Vec<Slot>,
    workspace: PathBuf,
    notify: Notify,
    announced: Vec<String>,
    /// `start_all` has run (the front end's cue and a turn may both ask for it).
    started: std::sync::atomic::AtomicBool,
    /// Bumped whenever any server's tools change, so the offered list is rebuilt.
    generation: AtomicU64,
    offered: Mutex<(u64, Vec<OfferedTool>)>,
}

/// The MCP servers of one rein process. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

/// Everything needed to build a manager.
pub struct McpSetup {
    /// The configured servers (user and project).
    pub servers: Vec<ServerConfig>,
    /// Whether a server that needs the project's trust may start.
    pub gate: ProjectGate,
    /// The workspace: no stdio server starts in it or from it unless `gate` allowed that.
    pub workspace: PathBuf,
    /// Where notices go.
    pub notify: Notify,
    /// Servers whose refusal rein's startup notices already name (an untrusted project's):
    /// not announced a second time.
    pub announced: Vec<String>,
}

impl McpManager {
    /// A manager with every server in its initial state; nothing is started yet.
    pub fn new(setup: McpSetup) -> McpManager {
        let slots = setup
            .servers
            .into_iter()
            .map(|config| {
                let in_project = super::trust::needs_trust(&config, &setup.workspace).is_some();
                let state = if !config.enabled {
                    McpState::Disabled
                } else if in_project {
                    match (setup.gate)(&config) {
                        Ok(()) => McpState::Starting,
                        Err(reason) => McpState::NotApproved { reason },
                    }
                } else {
                    McpState::Starting
                };
                Slot {
                    config,
                    in_project,
                    state: Mutex::new(state),
                    conn: Arc::new(tokio::sync::Mutex::new(None)),
                    tools: Mutex::new(Vec::new()),
                }
            })
            .collect();
        McpManager {
            inner: Arc::new(Inner {
                slots,
                workspace: setup.workspace,
                notify: setup.notify,
                announced: setup.announced,
                started: std::sync::atomic::AtomicBool::new(false),
                generation: AtomicU64::new(1),
                offered: Mutex::new((0, Vec::new())),
            }),
        }
    }

    /// Whether any server is configured at all.
    pub fn is_empty(&self) -> bool {
        self.inner.slots.is_empty()
    }

    /// Starts every server that may start, each in its own task; returns at once. Refused
    /// project servers are announced once. Only the first call does anything.
    pub fn start_all(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        for (i, slot) in self.inner.slots.iter().enumerate() {
            match state_of(slot) {
                McpState::Starting => {
                    // Locked before this returns, so `wait_started` and calls wait for it.
                    let Ok(mut conn) = slot.conn.clone().try_lock_owned() else {
                        continue;
                    };
                    let me = self.clone();
                    tokio::spawn(async move {
                        if conn.is_none() {
                            *conn = me.connect_slot(i, true).await;
                        }
                    });
                }
                McpState::NotApproved { reason }
                    if !self.inner.announced.contains(&slot.config.name) =>
                {
                    (self.inner.notify)(format!(
                        "MCP server {} was not started: {reason}",
                        slot.config.name
                    ))
                }
                _ => {}
            }
        }
    }

    /// Waits until no server is starting any more (each is bounded by its startup timeout), or
    /// until `cancel`.
    pub async fn wait_started(&self, cancel: &CancellationToken) {
        for slot in &self.inner.slots {
            if matches!(state_of(slot), McpState::Starting) {
                tokio::select! {
                    _ = slot.conn.lock() => {}
                    _ = cancel.cancelled() => return,
                }
            }
        }
    }

    /// Connects slot `i`, recording the outcome; the caller holds its `conn` lock.
    async fn connect_slot(&self, i: usize, first: bool) -> Option<Arc<Connection>> {
        let slot = &self.inner.slots[i];
        set_state(slot, McpState::Starting);
        tracing::info!(server = %slot.config.name, "mcp: starting the server");
        // Weak: the connection's handler must not keep the manager (and so itself) alive.
        let weak = Arc::downgrade(&self.inner);
        let on_change: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            if let Some(inner) = weak.upgrade() {
                McpManager { inner }.tools_changed(i);
            }
        });
        match connect(
            &slot.config,
            &self.inner.workspace,
            slot.in_project,
            on_change,
        )
        .await
        {
            Ok(conn) => {
                let conn = Arc::new(conn);
                set_state(slot, McpState::Ready);
                self.store_tools(i, &conn);
                Some(conn)
            }
            Err(error) => {
                tracing::warn!("MCP server {} failed to start", slot.config.name);
                if first {
                    (self.inner.notify)(format!(
                        "MCP server {} failed to start: {error}",
                        slot.config.name
                    ));
                }
                set_state(slot, McpState::Failed { error });
                self.bump();
                None
            }
        }
    }

    fn tools_changed(&self, i: usize) {
        let slot = &self.inner.slots[i];
        if let Ok(conn) = slot.conn.try_lock()
            && let Some(conn) = conn.as_ref()
        {
            self.store_tools(i, conn);
        } else {
            // A (re)connect is in progress and will store the fresh list itself.
            self.bump();
        }
    }

    fn store_tools(&self, i: usize, conn: &Connection) {
        let defs = conn.tools.read().map(|t| t.clone()).unwrap_or_default();
        if let Ok(mut tools) = self.inner.slots[i].tools.lock() {
            *tools = defs;
        }
        self.bump();
    }

    fn bump(&self) {
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The tools offered now; `subagent` keeps only servers configured with `subagents = true`.
    pub fn offered(&self, subagent: bool) -> Vec<OfferedTool> {
        let generation = self.inner.generation.load(Ordering::SeqCst);
        let all = {
            let mut cache = match self.inner.offered.lock() {
                Ok(c) => c,
                Err(p) => p.into_inner(),
            };
            if cache.0 != generation {
                *cache = (generation, self.build_offered());
            }
            cache.1.clone()
        };
        all.into_iter()
            .filter(|t| !subagent || self.server_for_subagents(&t.server))
            .collect()
    }

    fn build_offered(&self) -> Vec<OfferedTool> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            if state_of(slot) != McpState::Ready {
                continue;
            }
            let server = &slot.config.name;
            let defs = slot.tools.lock().map(|t| t.clone()).unwrap_or_default();
            for def in defs.iter().filter(|d| slot.config.offers(&d.name)) {
                let name = tool_name(server, &def.name);
                if out.iter().any(|t: &OfferedTool| t.name == name) {
                    continue;
                }
                let description = if def.description.trim().is_empty() {
                    format!("The {} tool of the MCP server {server}.", def.name)
                } else {
                    def.description.clone()
                };
                out.push(OfferedTool {
                    spec: ToolSpec {
                        name: name.clone(),
                        description,
                        parameters: sanitize(&def.input_schema),
                    },
                    name,
                    server: server.clone(),
                    tool: def.name.clone(),
                });
            }
        }
        out
    }

    fn slot(&self, server: &str) -> Option<&Slot> {
        self.inner.slots.iter().find(|s| s.config.name == server)
    }

    fn slot_index(&self, server: &str) -> Option<usize> {
        self.inner
            .slots
            .iter()
            .position(|s| s.config.name == server)
    }

    /// Whether `name` belongs to a configured server (its tools may not be listed yet).
    pub fn knows(&self, name: &str) -> bool {
        split_name(name).is_some_and(|(server, _)| self.slot(server).is_some())
    }

    /// Why a call to `name` cannot run now, if it cannot (checked before anyone is asked).
    pub fn unavailable(&self, name: &str) -> Option<String> {
        let (server, _) = split_name(name)?;
        let slot = self.slot(server)?;
        match state_of(slot) {
            McpState::Disabled => Some(format!(
                "the MCP server {server} is disabled in the config. Do not call its tools."
            )),
            McpState::NotApproved { reason } => Some(format!(
                "the MCP server {server} is not approved to run ({reason}). Do not call its tools."
            )),
            McpState::Ready if self.server_tool(self.slot_index(server)?, name).is_none() => {
                Some(self.missing_tool(server, name))
            }
            _ => None,
        }
    }

    /// Whether subagents get the tools of `server`.
    pub fn server_for_subagents(&self, server: &str) -> bool {
        self.slot(server).is_some_and(|s| s.config.subagents)
    }

    fn missing_tool(&self, server: &str, name: &str) -> String {
        let names: Vec<String> = self
            .offered(false)
            .into_iter()
            .filter(|t| t.server == server)
            .map(|t| t.name)
            .collect();
        format!(
            "the MCP server {server} has no tool {name}. Its tools: {}.",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )
    }

    /// Runs one call of the model-facing tool `name`. Errors are short sentences for the
    /// model; `Ok` carries the converted result (which may itself be an error result).
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        cancel: &CancellationToken,
        temp_dir: &std::path::Path,
        call_id: &str,
    ) -> Result<Converted, String> {
        let (server, _) = split_name(name).ok_or_else(|| format!("{name} is not an MCP tool."))?;
        let i = self
            .slot_index(server)
            .ok_or_else(|| format!("there is no MCP server named {server}."))?;
        if let Some(why) = self.unavailable(name) {
            return Err(why);
        }
        let conn = self.connection(i, cancel).await?;
        let slot = &self.inner.slots[i];
        let tool = self
            .server_tool(i, name)
            .ok_or_else(|| self.missing_tool(server, name))?;
        let args = match args {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        match conn
            .call(&tool, args, slot.config.tool_timeout, cancel)
            .await
        {
            Ok(result) => Ok(convert(&result, temp_dir, call_id)),
            Err(CallError::Cancelled) => Err(crate::agent::dispatch::INTERRUPTED.into()),
            Err(CallError::Timeout(t)) => Err(format!(
                "the MCP tool {name} did not answer within {}s (tool_timeout_secs) and was \
                 cancelled. Try a smaller request or another way.",
                t.as_secs()
            )),
            Err(CallError::Protocol(e)) => {
                Err(format!("the MCP server {server} refused the call: {e}."))
            }
            Err(CallError::Closed(e)) => {
                self.forget(i, &conn, &e).await;
                Err(format!(
                    "the MCP server {server} stopped during the call ({e}); it may or may not \
                     have acted. It will be restarted on the next call."
                ))
            }
        }
    }

    /// The live connection of slot `i`, reconnecting a closed one.
    async fn connection(
        &self,
        i: usize,
        cancel: &CancellationToken,
    ) -> Result<Arc<Connection>, String> {
        let slot = &self.inner.slots[i];
        let mut guard = tokio::select! {
            g = slot.conn.lock() => g,
            _ = cancel.cancelled() => return Err(crate::agent::dispatch::INTERRUPTED.into()),
        };
        if let Some(c) = guard.as_ref()
            && !c.is_closed()
        {
            return Ok(c.clone());
        }
        let reconnect = self.connect_slot(i, false);
        let conn = tokio::select! {
            c = reconnect => c,
            _ = cancel.cancelled() => return Err(crate::agent::dispatch::INTERRUPTED.into()),
        };
        *guard = conn.clone();
        conn.ok_or_else(|| {
            let error = match state_of(slot) {
                McpState::Failed { error } => error,
                _ => "unknown error".into(),
            };
            format!(
                "the MCP server {} is not running: {error}. Do not call its tools again unless \
                 the user fixes it.",
                slot.config.name
            )
        })
    }

    /// Drops a dead connection so the next call starts the server again.
    async fn forget(&self, i: usize, dead: &Arc<Connection>, why: &str) {
        let slot = &self.inner.slots[i];
        let mut guard = slot.conn.lock().await;
        if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, dead)) {
            *guard = None;
            let tail = dead.stderr_tail();
            let error = match tail.last() {
                Some(line) => format!("stopped: {why} (stderr: {line})"),
                None => format!("stopped: {why}"),
            };
            set_state(slot, McpState::Failed { error });
            self.bump();
        }
    }

    fn server_tool(&self, i: usize, name: &str) -> Option<String> {
        let slot = &self.inner.slots[i];
        let tools = slot.tools.lock().ok()?;
        tools
            .iter()
            .find(|d| slot.config.offers(&d.name) && tool_name(&slot.config.name, &d.name) == name)
            .map(|d| d.name.clone())
    }

    /// One status line per server.
    pub fn status(&self) -> Vec<McpServerStatus> {
        let offered = self.offered(false);
        self.inner
            .slots
            .iter()
            .map(|slot| {
                let mine: Vec<&OfferedTool> = offered
                    .iter()
                    .filter(|t| t.server == slot.config.name)
                    .collect();
                let schema_text =
                    serde_json::to_string(&mine.iter().map(|t| &t.spec).collect::<Vec<_>>())
                        .unwrap_or_default();
                McpServerStatus {
                    name: slot.config.name.clone(),
                    origin: match &slot.config.origin {
                        super::config::Origin::User(_) => "user".into(),
                        super::config::Origin::Project(p) => {
                            format!("project ({})", p.display())
                        }
                    },
                    target: slot.config.describe(),
                    state: state_of(slot),
                    tools: mine.iter().map(|t| t.name.clone()).collect(),
                    schema_tokens: if mine.is_empty() {
                        0
                    } else {
                        crate::agent::context::estimate_text(&schema_text)
                    },
                }
            })
            .collect()
    }

    /// Closes every connection (stdio servers are asked to exit, then killed).
    pub async fn shutdown(&self) {
        for slot in &self.inner.slots {
            let conn = slot.conn.lock().await.take();
            if let Some(conn) = conn.and_then(|c| Arc::try_unwrap(c).ok()) {
                conn.close().await;
            }
        }
    }
}

fn state_of(slot: &Slot) -> McpState {
    match slot.state.lock() {
        Ok(s) => s.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

fn set_state(slot: &Slot, state: McpState) {
    match slot.state.lock() {
        Ok(mut s) => *s = state,
        Err(p) => *p.into_inner() = state,
    }
}
