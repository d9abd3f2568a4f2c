//! A small MCP server (stdio) that misbehaves on request, for rein's fault-injection tests.
//! Built on rmcp's server side; the tests start it as a configured MCP server.
//!
//! Tools: `echo {message}`, `crash {}` (exits mid-call), `hang {}` (never answers; writes
//! `cancelled` into `$FAULT_DIR/hang` when the client cancels), `huge {chars}`, `malformed {}`
//! (prints a line that is not JSON-RPC, then answers), `add_tool {}` (adds `extra` and sends
//! `tools/list_changed`), `getenv {name}` (whether it is set and its length, never the value).
//! Every call's tool name is appended to `$FAULT_DIR/calls`. Environment: `FAULT_DIR` (a start is counted in `$FAULT_DIR/starts`),
//! `FAULT_SLOW_START_MS` (sleep before serving).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone)]
struct Faulty {
    dir: Option<PathBuf>,
    extra: Arc<AtomicBool>,
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    let schema = json!({"type": "object", "properties": properties});
    let Value::Object(map) = schema else {
        unreachable!("a JSON object literal")
    };
    Tool::new(name, description, Arc::new(map))
}

fn text(s: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResponse::Complete(CallToolResult::success(vec![
        ContentBlock::text(s),
    ])))
}

impl Faulty {
    fn note(&self, file: &str, what: &str) {
        if let Some(dir) = &self.dir
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(file))
        {
            let _ = writeln!(f, "{what}");
        }
    }
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool(
                "echo",
                "Echoes the message.",
                json!({"message": {"type": "string"}}),
            ),
            tool("crash", "Exits in the middle of the call.", json!({})),
            tool("hang", "Never answers.", json!({})),
            tool(
                "huge",
                "Returns `chars` characters.",
                json!({"chars": {"type": "integer"}}),
            ),
            tool(
                "malformed",
                "Prints garbage on stdout, then answers.",
                json!({}),
            ),
            tool("add_tool", "Adds the tool `extra`.", json!({})),
            tool(
                "getenv",
                "Says whether a variable is set, and its length.",
                json!({"name": {"type": "string"}}),
            ),
        ];
        if self.extra.load(Ordering::SeqCst) {
            tools.push(tool("extra", "Appeared later.", json!({})));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.note("calls", &request.name);
        match request.name.as_ref() {
            "echo" => text(format!(
                "echo: {}",
                args.get("message").and_then(Value::as_str).unwrap_or("")
            )),
            "crash" => std::process::exit(3),
            "hang" => {
                context.ct.cancelled().await;
                self.note("hang", "cancelled");
                text("cancelled")
            }
            "huge" => {
                let n = args.get("chars").and_then(Value::as_u64).unwrap_or(100_000);
                text("z".repeat(n as usize))
            }
            "malformed" => {
                let mut out = std::io::stdout();
                let _ = out.write_all(b"this is not JSON-RPC {{{\n");
                let _ = out.flush();
                text("answered after garbage")
            }
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("added extra")
            }
            "extra" => text("extra works"),
            "getenv" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("");
                text(match std::env::var(name) {
                    Ok(v) => format!("{name} is set ({} chars)", v.len()),
                    Err(_) => format!("{name} is unset"),
                })
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main]
async fn main() {
    let dir = std::env::var_os("FAULT_DIR").map(PathBuf::from);
    let server = Faulty {
        dir,
        extra: Arc::default(),
    };
    server.note("starts", "start");
    if let Some(ms) = std::env::var("FAULT_SLOW_START_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("mcp_fault_server: {e}"),
    }
}
