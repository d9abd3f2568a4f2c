//! One live connection to one MCP server, on the official SDK (`rmcp`): start (stdio child or
//! streamable HTTP), list tools, keep the list fresh on `tools/list_changed`, call a tool with a
//! timeout and cancellation.

use super::config::{ServerConfig, Transport, env_lookup, expand};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Lines of a stdio server's stderr kept to explain a failure.
const STDERR_LINES: usize = 12;

/// A tool as the server describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// The server's name for it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its JSON Schema, as sent.
    pub input_schema: Value,
}

/// The tool list, shared with the notification handler that refreshes it.
pub(super) type SharedTools = Arc<RwLock<Vec<ToolDef>>>;

/// Receives the server's notifications.
#[derive(Clone)]
struct Handler {
    tools: SharedTools,
    on_change: Arc<dyn Fn() + Send + Sync>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("rein", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Runs in its own task (rmcp spawns notification handlers), so asking back is safe.
        match context.peer.list_all_tools().await {
            Ok(list) => {
                let defs = list.iter().filter_map(tool_def).collect();
                if let Ok(mut tools) = self.tools.write() {
                    *tools = defs;
                }
                (self.on_change)();
            }
            Err(e) => tracing::warn!("could not refresh an MCP server's tools: {e}"),
        }
    }
}

fn tool_def(tool: &rmcp::model::Tool) -> Option<ToolDef> {
    let v = serde_json::to_value(tool).ok()?;
    Some(ToolDef {
        name: v.get("name")?.as_str()?.to_string(),
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        input_schema: v.get("inputSchema").cloned().unwrap_or(Value::Null),
    })
}

/// A started server.
pub(super) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// Its current tools.
    pub tools: SharedTools,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// A stdio server's neutral working directory, removed once the connection is gone.
    _dir: Option<crate::launch::NeutralDir>,
}

/// How a call ended when it did not return a result.
#[derive(Debug)]
pub(super) enum CallError {
    /// It took longer than the server's `tool_timeout_secs`.
    Timeout(Duration),
    /// Interrupted (Esc).
    Cancelled,
    /// The connection went away (crash, exit, network).
    Closed(String),
    /// The server answered with a protocol error.
    Protocol(String),
}

impl Connection {
    /// Whether the connection is gone (a crashed stdio server, a closed HTTP session).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        stderr_tail(&self.stderr)
    }

    /// Calls `tool` with `args`. A timeout or `cancel` drops the request, which makes rmcp send
    /// `notifications/cancelled` to the server.
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(args);
        let peer = self.service.peer().clone();
        let call = peer.call_tool(params);
        let outcome = tokio::select! {
            r = tokio::time::timeout(timeout, call) => r,
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match outcome {
            Err(_) => Err(CallError::Timeout(timeout)),
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| CallError::Protocol(format!("unreadable result: {e}"))),
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                Err(CallError::Protocol(e.message.to_string()))
            }
            Ok(Err(e)) if self.is_closed() => Err(CallError::Closed(e.to_string())),
            Ok(Err(rmcp::ServiceError::TransportClosed)) => {
                Err(CallError::Closed("the connection closed".into()))
            }
            Ok(Err(e)) => Err(CallError::Protocol(e.to_string())),
        }
    }

    /// Closes the connection (a stdio child is asked to exit, then killed).
    pub async fn close(mut self) {
        let _ = self
            .service
            .close_with_timeout(Duration::from_secs(2))
            .await;
    }
}

fn stderr_tail(lines: &Mutex<VecDeque<String>>) -> Vec<String> {
    lines
        .lock()
        .map(|l| l.iter().cloned().collect())
        .unwrap_or_default()
}

/// Starts `server` and lists its tools, within its startup timeout. `on_change` is called
/// whenever the server changes its tool list later. `in_project`: the project's trust approved
/// its use of the workspace. Errors are one line for the person.
pub(super) async fn connect(
    server: &ServerConfig,
    workspace: &Path,
    in_project: bool,
    on_change: Arc<dyn Fn() + Send + Sync>,
) -> Result<Connection, String> {
    let stderr: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let tools: SharedTools = Arc::default();
    let handler = Handler {
        tools: tools.clone(),
        on_change,
    };
    let mut dir = None;
    let start = async {
        let service = match &server.transport {
            Transport::Stdio { .. } => {
                let (transport, neutral) =
                    spawn_child(server, workspace, in_project, stderr.clone())?;
                dir = neutral;
                handler.clone().serve(transport).await
            }
            Transport::Http { url, headers } => {
                let transport = http_transport(url, headers)?;
                handler.clone().serve(transport).await
            }
        }
        .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        let list = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        if let Ok(mut t) = tools.write() {
            *t = list.iter().filter_map(tool_def).collect();
        }
        Ok::<_, String>(service)
    };
    let result = match tokio::time::timeout(server.startup_timeout, start).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "it did not start within {}s (startup_timeout_secs)",
            server.startup_timeout.as_secs()
        )),
    };
    match result {
        Ok(service) => Ok(Connection {
            service,
            tools,
            stderr,
            _dir: dir,
        }),
        Err(e) => {
            // Give the stderr reader a moment to catch the server's last words.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(match stderr_tail(&stderr).last() {
                Some(line) => format!("{e} (stderr: {line})"),
                None => e,
            })
        }
    }
}

/// Starts a stdio server through the launch gate (`crate::launch`): a neutral directory unless
/// its `cwd` or an approved project decision says otherwise, the environment allow-list plus
/// its own `env`, its program from the trusted `PATH`, a process group of its own.
fn spawn_child(
    server: &ServerConfig,
    workspace: &Path,
    in_project: bool,
    stderr_lines: Arc<Mutex<VecDeque<String>>>,
) -> Result<ChildAndDir, String> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.transport
    else {
        return Err("not a stdio server".into());
    };
    let lookup = |v: &str| env_lookup(v);
    let program = expand(command, &lookup)?;
    let env = env
        .iter()
        .map(|(k, v)| Ok((k.clone(), expand(v, &lookup)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let mut prepared = crate::launch::prepare(&crate::launch::Request {
        program: &program,
        cwd: cwd.as_deref(),
        env: &env,
        workspace,
        in_project,
        purpose: crate::launch::Purpose::Server,
    })?;
    let mut cmd = tokio::process::Command::from(prepared.command());
    for arg in args {
        cmd.arg(expand(arg, &lookup)?);
    }
    // Its own session and process group come from the launch gate.
    let (child, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {program:?}: {e}"))?;
    if let Some(stderr) = stderr {
        tokio::spawn(keep_stderr(stderr, stderr_lines));
    }
    Ok((child, prepared.take_dir()))
}

/// A started stdio child and the neutral directory it runs in (if it does).
type ChildAndDir = (
    rmcp::transport::TokioChildProcess,
    Option<crate::launch::NeutralDir>,
);

/// Keeps the last lines of a server's stderr (never shown on the terminal, never logged: a
/// server may print what it was given).
async fn keep_stderr(stderr: tokio::process::ChildStderr, lines: Arc<Mutex<VecDeque<String>>>) {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = reader.next_line().await {
        let line: String = line.chars().take(300).collect();
        if line.trim().is_empty() {
            continue;
        }
        if let Ok(mut l) = lines.lock() {
            if l.len() == STDERR_LINES {
                l.pop_front();
            }
            l.push_back(line);
        }
    }
}

fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let lookup = |v: &str| env_lookup(v);
    let url = expand(url, &lookup)?;
    let mut custom = std::collections::HashMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("{k:?} is not a valid header name"))?;
        let value = HeaderValue::from_str(&expand(v, &lookup)?)
            .map_err(|_| format!("the value of header {k} is not valid"))?;
        custom.insert(name, value);
    }
    let client = crate::llm::client::http_builder(&url)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, config,
    ))
}
