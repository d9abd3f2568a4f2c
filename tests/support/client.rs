//! Helpers for tests that drive `rein::llm::Client` directly against a scripted server.

use super::ScriptedServer;
use rein::llm::{
    Client, ClientOptions, LlmError, Message, ProviderKind, Request, Response, StreamNotice,
    ToolSpec,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The API key every helper client sends.
pub const KEY: &str = "sk-scripted-secret-4242";
/// Both wire formats, for tests that run once per format.
pub const FORMATS: [ProviderKind; 2] = [ProviderKind::OpenAi, ProviderKind::Anthropic];
/// Every wire format, the Responses API included.
pub const ALL_FORMATS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::OpenAiResponses,
];

/// A scripted server for `kind`.
pub fn server(kind: ProviderKind) -> ScriptedServer {
    ScriptedServer::start(kind)
}

/// Client options for `server` with short timeouts and backoffs, and [`KEY`].
pub fn options(server: &ScriptedServer) -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(3),
        max_attempts: 4,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_secs(2),
        ..ClientOptions::new(server.format(), server.base_url(), Some(KEY.into()))
    }
}

/// A client built from [`options`].
pub fn client(server: &ScriptedServer) -> Client {
    Client::new(options(server)).unwrap()
}

/// A small request with one user message and a `bash` tool.
pub fn request() -> Request {
    Request {
        model: "scripted-model".into(),
        system: "You are terse.".into(),
        messages: vec![Message::User {
            content: "list the files".into(),
        }],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run a shell command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        }],
        max_tokens: 1024,
        reminder: None,
        force_tool: false,
        mark: None,
    }
}

/// The outcome of one `Client::stream` call.
pub struct Run {
    /// What `stream` returned.
    pub result: Result<Response, LlmError>,
    /// Every notice, in order.
    pub notices: Vec<StreamNotice>,
    /// Wall time of the call.
    pub elapsed: Duration,
}

impl Run {
    /// (attempt, delay, reason) of each Retrying notice.
    pub fn retries(&self) -> Vec<(u32, Duration, String)> {
        self.notices
            .iter()
            .filter_map(|n| match n {
                StreamNotice::Retrying {
                    attempt,
                    delay,
                    reason,
                    ..
                } => Some((*attempt, *delay, reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The response; panics when the request failed.
    pub fn response(&self) -> &Response {
        self.result.as_ref().expect("the request should succeed")
    }
}

/// Runs one request on a spawned task (which also proves the future is `Send`).
pub async fn run(client: &Client, cancel: CancellationToken) -> Run {
    let client = client.clone();
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = notices.clone();
    let start = Instant::now();
    let result = tokio::spawn(async move {
        let mut on = move |n: StreamNotice| sink.lock().unwrap().push(n);
        client.stream(&request(), &cancel, &mut on).await
    })
    .await
    .unwrap();
    let notices = notices.lock().unwrap().clone();
    Run {
        result,
        notices,
        elapsed: start.elapsed(),
    }
}

/// [`run`] without cancellation.
pub async fn run_once(client: &Client) -> Run {
    run(client, CancellationToken::new()).await
}
