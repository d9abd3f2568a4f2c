//! The scripted model server: a real HTTP server on 127.0.0.1 playing [`Reply`]s in order.

use super::reply::{MALFORMED_EVENT, error_body, error_event};
use super::{Fault, Reply};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use rein::llm::ProviderKind;
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path (e.g. `/v1/chat/completions`).
    pub path: String,
    /// Headers, names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The body as text.
    pub body_text: String,
    /// When the request arrived.
    pub received: Instant,
    /// When the reply was completely sent, dropped or abandoned by the client.
    pub finished: Option<Instant>,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `input` array of a Responses body (empty when absent).
    pub fn input(&self) -> Vec<Value> {
        self.body["input"].as_array().cloned().unwrap_or_default()
    }

    /// The `messages` array of the body (empty when absent).
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// Lets a test hold a stream at a chosen point ([`Reply::pause_after`]) and release it.
#[derive(Clone, Debug)]
pub struct Gate {
    reached: Arc<watch::Sender<bool>>,
    released: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate {
            reached: Arc::new(watch::channel(false).0),
            released: Arc::new(watch::channel(false).0),
        }
    }

    /// Lets every stream waiting at this gate continue.
    pub fn release(&self) {
        self.released.send_replace(true);
    }

    /// Whether a stream has reached the gate.
    pub fn is_reached(&self) -> bool {
        *self.reached.borrow()
    }

    /// Blocks the calling thread until a stream reaches the gate; false on timeout.
    /// (In async tests use [`Gate::reached`] instead.)
    pub fn wait_reached(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while !self.is_reached() {
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Waits until a stream reaches the gate.
    pub async fn reached(&self) {
        let mut rx = self.reached.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    async fn pass(&self) {
        self.reached.send_replace(true);
        let mut rx = self.released.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }
}

struct Shared {
    format: ProviderKind,
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Requests to other paths (rein asking the server about itself, wrong URLs).
    others: Mutex<Vec<RecordedRequest>>,
    /// JSON answers for other paths ([`ScriptedServer::route`]); the rest get a 404.
    routes: Mutex<Vec<(String, Value)>>,
    /// Request bodies are kept (and parsed); see [`ScriptedServer::forget_bodies`].
    keep_bodies: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn finish(&self, index: usize) {
        if let Some(r) = self.requests.lock().unwrap().get_mut(index) {
            r.finished.get_or_insert_with(Instant::now);
        }
    }
}

/// A fake model server for one wire format. Dropping it stops it.
pub struct ScriptedServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedServer {
    /// A server speaking Chat Completions at `POST /v1/chat/completions`.
    pub fn openai() -> ScriptedServer {
        ScriptedServer::start(ProviderKind::OpenAi)
    }

    /// A server speaking OpenAI Responses at `POST /v1/responses`.
    pub fn responses() -> ScriptedServer {
        ScriptedServer::start(ProviderKind::OpenAiResponses)
    }

    /// A server speaking Anthropic Messages at `POST /v1/messages`.
    pub fn anthropic() -> ScriptedServer {
        ScriptedServer::start(ProviderKind::Anthropic)
    }

    /// A server for `format`; it runs on its own thread and tokio runtime, so it works from
    /// synchronous tests (which spawn the `rein` binary) and async tests alike.
    pub fn start(format: ProviderKind) -> ScriptedServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            format,
            replies: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            others: Mutex::new(Vec::new()),
            routes: Mutex::new(Vec::new()),
            keep_bodies: std::sync::atomic::AtomicBool::new(true),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scripted-model-server".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    let app = axum::Router::new().fallback(move |req: Request| {
                        let state = state.clone();
                        async move { handle(state, req).await }
                    });
                    tokio::select! {
                        r = axum::serve(listener, app) => r.unwrap(),
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime cancels streams that are still stalled or paused.
            })
            .unwrap();
        ScriptedServer {
            shared,
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The wire format.
    pub fn format(&self) -> ProviderKind {
        self.shared.format
    }

    /// What rein's base URL must be: `http://127.0.0.1:PORT/v1` (OpenAI) or
    /// `http://127.0.0.1:PORT` (Anthropic).
    pub fn base_url(&self) -> String {
        match self.shared.format {
            ProviderKind::OpenAi => format!("http://{}/v1", self.addr),
            ProviderKind::Anthropic => format!("http://{}", self.addr),
            ProviderKind::OpenAiResponses => format!("http://{}/v1", self.addr),
        }
    }

    /// Queues a reply; each request consumes the oldest one.
    pub fn push(&self, reply: Reply) -> &ScriptedServer {
        self.shared.replies.lock().unwrap().push_back(reply);
        self
    }

    /// Queues several replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) -> &ScriptedServer {
        self.shared.replies.lock().unwrap().extend(replies);
        self
    }

    /// Replies not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared.replies.lock().unwrap().len()
    }

    /// Answers requests to `path` (any method, not the model endpoint) with `body` as JSON,
    /// e.g. llama.cpp's `/props`.
    pub fn route(&self, path: &str, body: Value) -> &ScriptedServer {
        self.shared
            .routes
            .lock()
            .unwrap()
            .push((path.to_owned(), body));
        self
    }

    /// Requests to paths other than the model endpoint, in arrival order (they are not in
    /// [`ScriptedServer::requests`]).
    pub fn other_requests(&self) -> Vec<RecordedRequest> {
        self.shared.others.lock().unwrap().clone()
    }

    /// Every request to the model endpoint so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// From now on, requests are counted and their headers kept, but their bodies are neither
    /// parsed nor kept: for benches, where the server's own work on a client's (large) bodies
    /// would otherwise be counted as the client's wall time.
    pub fn forget_bodies(&self) {
        self.shared
            .keep_bodies
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Request number `i` (0-based); panics when there is none.
    pub fn request(&self, i: usize) -> RecordedRequest {
        self.requests()
            .get(i)
            .cloned()
            .unwrap_or_else(|| panic!("no request #{i}; only {} arrived", self.request_count()))
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// Blocks until at least `n` requests arrived; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while self.request_count() < n {
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One step of delivering a stream.
enum Step {
    Send(String),
    Sleep(Duration),
    Wait(Gate),
    Drop,
}

/// Marks the request finished when the body is done or dropped (client went away).
struct FinishGuard {
    shared: Arc<Shared>,
    index: usize,
}

impl Drop for FinishGuard {
    fn drop(&mut self) {
        self.shared.finish(self.index);
    }
}

async fn handle(shared: Arc<Shared>, req: Request) -> Response {
    let received = Instant::now();
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 256 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let keep = shared
        .keep_bodies
        .load(std::sync::atomic::Ordering::Relaxed);
    let body_text = if keep {
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        String::new()
    };
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: if keep {
            serde_json::from_str(&body_text).unwrap_or(Value::Null)
        } else {
            Value::Null
        },
        body_text,
        received,
        finished: None,
    };
    let format = shared.format;
    let expected = match format {
        ProviderKind::OpenAi => "/v1/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::OpenAiResponses => "/v1/responses",
    };
    if parts.method != axum::http::Method::POST || parts.uri.path() != expected {
        shared.others.lock().unwrap().push(recorded);
        let routed = shared
            .routes
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == parts.uri.path())
            .map(|(_, body)| body.clone());
        if let Some(body) = routed {
            return json_response(StatusCode::OK, body, None);
        }
        let msg = format!(
            "scripted server: unexpected {} {}; expected POST {expected}",
            parts.method,
            parts.uri.path()
        );
        return json_response(StatusCode::NOT_FOUND, error_body(format, 404, &msg), None);
    }
    let index = {
        let mut requests = shared.requests.lock().unwrap();
        requests.push(recorded);
        requests.len() - 1
    };
    let guard = FinishGuard {
        shared: shared.clone(),
        index,
    };
    let next = shared.replies.lock().unwrap().pop_front();
    let Some(reply) = next else {
        let msg =
            format!("scripted server: no reply left (request #{index} has no scripted answer)");
        return json_response(StatusCode::BAD_REQUEST, error_body(format, 400, &msg), None);
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some((code, message)) = &reply.status {
        let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = json_response(
            status,
            error_body(format, *code, message),
            reply.retry_after.as_deref(),
        );
        if let Some(v) = reply
            .location
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        return resp;
    }
    let steps = plan(&reply, format);
    let stream = futures::stream::unfold((steps, guard), |(mut steps, guard)| async move {
        loop {
            match steps.pop_front()? {
                Step::Send(s) => return Some((Ok(Bytes::from(s)), (steps, guard))),
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Wait(g) => g.pass().await,
                Step::Drop => {
                    // An error from the body makes hyper abort the connection without the
                    // final chunk, which the client sees as a broken stream.
                    let err =
                        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted drop");
                    return Some((Err(err), (VecDeque::new(), guard)));
                }
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// Turns a reply into delivery steps: its events with faults inserted.
fn plan(reply: &Reply, format: ProviderKind) -> VecDeque<Step> {
    let events = reply.events(format);
    let last = events.len().saturating_sub(1);
    let mut steps = VecDeque::new();
    let mut ended = false;
    for (i, ev) in events.into_iter().enumerate() {
        for fault in &reply.faults {
            let (after, step) = match fault {
                Fault::Drop { after } => (*after, Some(Step::Drop)),
                Fault::Malformed { after } => {
                    (*after, Some(Step::Send(MALFORMED_EVENT.to_owned())))
                }
                Fault::ErrorEvent {
                    after,
                    message,
                    retryable,
                } => (
                    *after,
                    Some(Step::Send(error_event(format, message, *retryable))),
                ),
                Fault::Stall { after, duration } => (*after, Some(Step::Sleep(*duration))),
                Fault::Pause { after, gate } => (*after, Some(Step::Wait(gate.clone()))),
            };
            if after.min(last) != i {
                continue;
            }
            let terminal = matches!(fault, Fault::Drop { .. } | Fault::ErrorEvent { .. });
            if matches!(fault, Fault::Drop { .. }) {
                // Let hyper flush what was sent, so the drop happens mid-stream rather than
                // before the response headers.
                steps.push_back(Step::Sleep(Duration::from_millis(30)));
            }
            steps.extend(step);
            if terminal {
                ended = true;
                break;
            }
        }
        if ended {
            break;
        }
        if i > 0 && !reply.chunk_delay.is_zero() {
            steps.push_back(Step::Sleep(reply.chunk_delay));
        }
        steps.push_back(Step::Send(ev));
    }
    steps
}

fn json_response(status: StatusCode, body: Value, retry_after: Option<&str>) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(v).ok()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
