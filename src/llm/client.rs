//! HTTP transport shared by every wire format: request, SSE stream, retries with backoff.
//!
//! One call to [`Client::stream`] is one model request. Each attempt streams deltas to the
//! caller; when an attempt fails in a retryable way (connect error, timeout, 408/409/429/5xx,
//! a stream that breaks or stalls, an overloaded error inside the stream) the caller gets
//! [`StreamNotice::Retrying`], discards what it showed, and the whole request is sent again.
//! Only a completed stream produces a [`Response`], so a tool call from a broken stream is
//! never returned.

mod errors;

use super::sse::{SseEvent, SseParser};
use super::wire_cache::WireCache;
use super::{
    LlmError, ProviderKind, Reasoning, Request, Response, StreamNotice, anthropic, openai,
    responses,
};
use bytes::Bytes;
use errors::{error_message, retry_after, root_cause};
use reqwest::header::{self, HeaderMap, HeaderValue};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How to reach the model server.
#[derive(Clone)]
pub struct ClientOptions {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL (OpenAI: includes `/v1`; Anthropic: without `/v1`).
    pub base_url: String,
    /// API key, if any (never logged).
    pub api_key: Option<String>,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait from sending a request to the first bytes of the answer (an uncached
    /// prompt on a CPU server takes minutes before anything comes back).
    pub first_byte_timeout: Duration,
    /// Longest silence tolerated between two chunks of a stream once it has started.
    pub idle_timeout: Duration,
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// First backoff delay; doubles each retry, with jitter.
    pub initial_backoff: Duration,
    /// Upper bound for one backoff delay (also caps Retry-After).
    pub max_backoff: Duration,
    /// Reasoning effort and summaries (the Responses API only).
    pub reasoning: Reasoning,
}

impl ClientOptions {
    /// Options with fixed timeouts and retries, for library use and tests (rein itself takes
    /// them from the config: `connect_timeout_secs`, `idle_timeout_secs`, `max_retries`,
    /// `retry_backoff_ms`).
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, api_key: Option<String>) -> Self {
        ClientOptions {
            kind,
            base_url: base_url.into(),
            api_key,
            connect_timeout: Duration::from_secs(15),
            first_byte_timeout: Duration::from_secs(180),
            idle_timeout: Duration::from_secs(180),
            max_attempts: 5,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            reasoning: Reasoning::default(),
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Written by hand so the key can never reach a log line through `{:?}`.
        f.debug_struct("ClientOptions")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("reasoning", &self.reasoning)
            .finish()
    }
}

/// A model client for one provider.
#[derive(Clone, Debug)]
pub struct Client {
    opts: ClientOptions,
    http: reqwest::Client,
    url: String,
    /// api.openai.com wants `max_completion_tokens` instead of `max_tokens`.
    official_openai: bool,
    /// The serialised history of earlier requests, shared by the clones of this client.
    wire: Arc<Mutex<WireCache>>,
}

/// Why one attempt failed, and whether another one may succeed.
struct Failure {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
}

/// Whether an error may well go away by itself (load, limits, timeouts): those are retried
/// however often they repeat. Anything else that repeats word for word is the server's answer
/// to this request (llama.cpp's "Invalid diff: now finding less tool calls!" at temperature 0),
/// and a third attempt would only fail the same way.
fn passing(error: &LlmError) -> bool {
    let message = match error {
        LlmError::Http { status, message } => {
            if *status != 500 {
                return true;
            }
            message
        }
        LlmError::Provider { message, .. } => message,
        LlmError::Malformed(_) => return false,
        LlmError::Network(_) | LlmError::Cancelled => return true,
    };
    let m = message.to_ascii_lowercase();
    [
        "overload",
        "rate limit",
        "rate_limit",
        "capacity",
        "busy",
        "try again",
        "timeout",
        "timed out",
        "unavailable",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// The error of a second identical failure, saying why rein stopped retrying.
fn repeated(error: LlmError) -> LlmError {
    const NOTE: &str = " (the same error twice in a row, so rein did not retry again)";
    match error {
        LlmError::Http { status, message } => LlmError::Http {
            status,
            message: format!("{message}{NOTE}"),
        },
        LlmError::Provider { message, .. } => LlmError::Provider {
            message: format!("{message}{NOTE}"),
            retryable: false,
        },
        LlmError::Malformed(m) => LlmError::Malformed(format!("{m}{NOTE}")),
        other => other,
    }
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Failure {
        let retryable = match &error {
            LlmError::Http { status, .. } => retryable_status(*status),
            LlmError::Provider { retryable, .. } => *retryable,
            // A broken, stalled or garbled stream is a glitch of this attempt.
            LlmError::Network(_) | LlmError::Malformed(_) => true,
            LlmError::Cancelled => false,
        };
        Failure {
            error,
            retryable,
            retry_after: None,
        }
    }
}

/// HTTP statuses worth retrying: timeouts, conflicts, rate limits, server errors.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// The assembler for the configured wire format.
enum Assembler {
    OpenAi(openai::Assembler),
    Anthropic(anthropic::Assembler),
    Responses(responses::Assembler),
}

impl Assembler {
    fn push(&mut self, ev: &SseEvent, on: &mut dyn FnMut(StreamNotice)) -> Result<(), LlmError> {
        match self {
            Assembler::OpenAi(a) => a.push(ev, on),
            Assembler::Anthropic(a) => a.push(ev, on),
            Assembler::Responses(a) => a.push(ev, on),
        }
    }
    fn is_done(&self) -> bool {
        match self {
            Assembler::OpenAi(a) => a.is_done(),
            Assembler::Anthropic(a) => a.is_done(),
            Assembler::Responses(a) => a.is_done(),
        }
    }
    fn finish(self) -> Result<Response, LlmError> {
        match self {
            Assembler::OpenAi(a) => a.finish(),
            Assembler::Anthropic(a) => a.finish(),
            Assembler::Responses(a) => a.finish(),
        }
    }
}

/// Installs rustls' crypto provider (ring) for the process, once; every HTTP client needs it.
pub fn ensure_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only when a provider is installed already, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An HTTP client builder for talking to `base_url`: the TLS provider installed, redirects
/// never followed, no proxy from the environment for a loopback server, and no certificate
/// roots loaded for a plain-HTTP one (reading the system's, ~280 files under /etc/ssl/certs
/// here, was the largest part of startup against a local server).
pub fn http_builder(base_url: &str) -> reqwest::ClientBuilder {
    ensure_tls_provider();
    // A redirect would carry the key (reqwest keeps custom headers such as `x-api-key` across
    // hosts) and, for a 307/308, the whole conversation to a server nobody configured.
    let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    if crate::config::is_loopback_url(base_url) {
        // A local server must not be reached through a proxy from the environment.
        builder = builder.no_proxy();
    }
    let plain = base_url.trim().get(..7);
    if plain.is_some_and(|p| p.eq_ignore_ascii_case("http://")) {
        builder = builder.tls_certs_only([]);
    }
    builder
}

impl Client {
    /// Builds a client; fails only on an unusable base URL.
    pub fn new(opts: ClientOptions) -> Result<Client, LlmError> {
        let base = opts.base_url.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(base)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                LlmError::Network(format!(
                    "the base URL {base:?} is not a valid http(s) URL; set it like \
                     http://localhost:8080/v1"
                ))
            })?;
        let url = match opts.kind {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            // Tolerate a base URL that already ends in /v1.
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
            ProviderKind::OpenAiResponses => format!("{base}/responses"),
        };
        let host = parsed.host_str().unwrap_or_default();
        let builder = http_builder(base)
            .connect_timeout(opts.connect_timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")));
        let http = builder
            .build()
            .map_err(|e| LlmError::Network(format!("could not set up HTTP: {}", root_cause(&e))))?;
        Ok(Client {
            official_openai: opts.kind == ProviderKind::OpenAi && host == "api.openai.com",
            wire: Arc::default(),
            opts,
            http,
            url,
        })
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// The endpoint requests are sent to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON text of the body sent for `req` (the provider's `build_body`), serialising
    /// only the part of the history that earlier requests did not send already.
    pub fn body_text(&self, req: &Request) -> String {
        let mut wire = crate::sync::lock(&self.wire);
        match self.opts.kind {
            ProviderKind::OpenAi => openai::build_body_text(req, &mut wire, self.official_openai),
            ProviderKind::Anthropic => anthropic::build_body_text(req, &mut wire),
            ProviderKind::OpenAiResponses => {
                responses::build_body_text(req, &self.opts.reasoning, &mut wire)
            }
        }
    }

    /// Sends `req`, streams notices to `on`, returns the assembled response.
    pub async fn stream(
        &self,
        req: &Request,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(StreamNotice) + Send),
    ) -> Result<Response, LlmError> {
        let text = self.body_text(req);
        let body = Bytes::from_owner(crate::sync::lock(&self.wire).spare().wrap(text));
        let images = req
            .messages
            .iter()
            .any(|m| matches!(m, super::Message::UserImage { image } if image.bytes().is_some()));
        let max_attempts = self.opts.max_attempts.max(1);
        let mut attempt = 1;
        let mut previous: Option<LlmError> = None;
        loop {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            let failure = match self.attempt(body.clone(), cancel, on).await {
                Ok(resp) => return Ok(resp),
                Err(f) => f,
            };
            let error = self.redact(failure.error);
            let error = match images_refused(error, images) {
                Ok(refused) => return Err(refused),
                Err(error) => error,
            };
            if previous.as_ref() == Some(&error) && !passing(&error) {
                let error = repeated(error);
                tracing::warn!(attempt, %error, "model request failed the same way twice");
                return Err(error);
            }
            if error == LlmError::Cancelled || !failure.retryable || attempt >= max_attempts {
                if error != LlmError::Cancelled {
                    tracing::warn!(attempt, %error, "model request failed");
                }
                return Err(error);
            }
            previous = Some(error.clone());
            let delay = self.backoff(attempt, failure.retry_after);
            attempt += 1;
            let reason = error.to_string();
            tracing::warn!(attempt, max_attempts, ?delay, %reason, "model request failed; retrying");
            on(StreamNotice::Retrying {
                attempt,
                max_attempts,
                delay,
                reason,
            });
            tokio::select! {
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// The model ids the server lists (`GET …/models`, OpenAI and Anthropic alike), sorted; an
    /// error says why in one line (redacted).
    pub async fn list_models(&self) -> Result<Vec<String>, String> {
        let base = self
            .url
            .strip_suffix("/chat/completions")
            .or_else(|| self.url.strip_suffix("/messages"))
            .or_else(|| self.url.strip_suffix("/responses"))
            .unwrap_or(&self.url);
        let mut headers = self.headers();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let resp = self
            .http
            .get(format!("{base}/models"))
            .headers(headers)
            .timeout(Duration::from_secs(15))
            .send()
            .await
            .map_err(|e| self.redact(LlmError::Network(root_cause(&e))).to_string())?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("the server answered {status} to GET {base}/models"));
        }
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| format!("the model list was not JSON: {}", root_cause(&e)))?;
        let mut ids: Vec<String> = body
            .get("data")
            .and_then(|d| d.as_array())
            .map(|list| {
                list.iter()
                    .filter_map(|m| m.get("id")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The wait before the retry that follows failed attempt number `attempt`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let max = self.opts.max_backoff;
        if let Some(wait) = retry_after {
            return wait.min(max);
        }
        let factor = 1u32 << (attempt.saturating_sub(1)).min(16);
        let base = self.opts.initial_backoff.saturating_mul(factor).min(max);
        // Between half and all of the delay, so clients that failed together spread out.
        base.mul_f64(rand::random_range(0.5..=1.0))
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let key = self
            .opts
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty());
        match self.opts.kind {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                if let Some(mut v) =
                    key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok())
                {
                    v.set_sensitive(true);
                    h.insert(header::AUTHORIZATION, v);
                }
            }
            ProviderKind::Anthropic => {
                if let Some(mut v) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
                    v.set_sensitive(true);
                    h.insert("x-api-key", v);
                }
                h.insert(
                    "anthropic-version",
                    HeaderValue::from_static(anthropic::API_VERSION),
                );
            }
        }
        h
    }

    /// One try of a request: sends `body` and assembles the answer as it streams in.
    async fn attempt(
        &self,
        body: Bytes,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(StreamNotice) + Send),
    ) -> Result<Response, Failure> {
        // Until the first bytes of the body, the whole wait counts against `first_byte`.
        let deadline = tokio::time::Instant::now() + self.first_byte_timeout();
        let resp = self.send(body, cancel, deadline).await?;
        if resp.status().is_redirection() {
            return Err(redirected(&resp).into());
        }
        if !resp.status().is_success() {
            return Err(self.http_failure(resp, cancel).await);
        }
        let asm = match self.opts.kind {
            ProviderKind::OpenAi => Assembler::OpenAi(openai::Assembler::new()),
            ProviderKind::Anthropic => Assembler::Anthropic(anthropic::Assembler::new()),
            ProviderKind::OpenAiResponses => Assembler::Responses(responses::Assembler::new()),
        };
        let json_body = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if json_body {
            return self.json_document(resp, asm, cancel, on).await;
        }
        self.read_stream(resp, asm, cancel, deadline, on).await
    }

    /// Posts `body`; the answer's headers must arrive before `deadline`.
    async fn send(
        &self,
        body: Bytes,
        cancel: &CancellationToken,
        deadline: tokio::time::Instant,
    ) -> Result<reqwest::Response, Failure> {
        let send = self
            .http
            .post(&self.url)
            .headers(self.headers())
            .body(body)
            .send();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(LlmError::Cancelled.into()),
            r = tokio::time::timeout_at(deadline, send) => match r {
                Err(_) => Err(LlmError::Network(format!(
                    "the model server sent no response within {} (first_byte_timeout_secs)",
                    secs(self.first_byte_timeout())
                )).into()),
                Ok(Err(e)) => Err(self.request_failure(&e)),
                Ok(Ok(resp)) => Ok(resp),
            },
        }
    }

    /// The longest wait for the first bytes (never shorter than the idle timeout).
    fn first_byte_timeout(&self) -> Duration {
        self.opts.first_byte_timeout.max(self.opts.idle_timeout)
    }

    /// An answer that came as one JSON document: a server that ignored `stream: true`.
    async fn json_document(
        &self,
        resp: reqwest::Response,
        mut asm: Assembler,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(StreamNotice) + Send),
    ) -> Result<Response, Failure> {
        let text = read_body(resp, cancel, self.opts.idle_timeout, usize::MAX).await?;
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && v.get("type").and_then(|t| t.as_str()) == Some("error")
        {
            return Err(anthropic::error_of(v.get("error")).into());
        }
        if self.opts.kind != ProviderKind::OpenAi {
            return Err(LlmError::Malformed(
                "expected an event stream but got a JSON document".into(),
            )
            .into());
        }
        let ev = SseEvent {
            event: String::new(),
            data: text,
        };
        asm.push(&ev, on)?;
        let done = SseEvent {
            event: String::new(),
            data: "[DONE]".into(),
        };
        asm.push(&done, on)?;
        Ok(asm.finish()?)
    }

    /// Reads the event stream into `asm` until its terminator or end: the first bytes by
    /// `deadline`, then never silent for longer than the idle timeout.
    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        mut asm: Assembler,
        cancel: &CancellationToken,
        deadline: tokio::time::Instant,
        on: &mut (dyn FnMut(StreamNotice) + Send),
    ) -> Result<Response, Failure> {
        let idle = self.opts.idle_timeout;
        let mut parser = SseParser::new();
        let mut started = false;
        loop {
            let wait_until = if started {
                tokio::time::Instant::now() + idle
            } else {
                deadline
            };
            let chunk = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(LlmError::Cancelled.into()),
                r = tokio::time::timeout_at(wait_until, resp.chunk()) => r,
            };
            let ended = matches!(chunk, Ok(Ok(None)));
            match chunk {
                Err(_) if !started => {
                    return Err(LlmError::Network(format!(
                        "the model server sent nothing within {} (first_byte_timeout_secs)",
                        secs(self.first_byte_timeout())
                    ))
                    .into());
                }
                Err(_) => {
                    return Err(LlmError::Network(format!(
                        "the stream stalled: no data for {} (idle_timeout_secs)",
                        secs(idle)
                    ))
                    .into());
                }
                Ok(Err(e)) => {
                    return Err(LlmError::Network(format!(
                        "the stream broke off: {}",
                        root_cause(&e)
                    ))
                    .into());
                }
                Ok(Ok(None)) => parser.end(),
                Ok(Ok(Some(bytes))) => {
                    started = true;
                    parser
                        .feed(&bytes)
                        .map_err(|e| LlmError::Malformed(e.to_string()))?
                }
            }
            while let Some(ev) = parser.next_event() {
                asm.push(ev, on)?;
                if asm.is_done() {
                    break;
                }
            }
            // Stop at the terminator: some servers keep the connection open after it.
            if asm.is_done() || ended {
                break;
            }
        }
        Ok(asm.finish()?)
    }

    fn request_failure(&self, e: &reqwest::Error) -> Failure {
        let cause = root_cause(e);
        let (message, retryable) = if e.is_connect() {
            (
                format!(
                    "could not connect to the model server at {}: {cause}",
                    self.url
                ),
                true,
            )
        } else if e.is_timeout() {
            (format!("connecting to {} timed out", self.url), true)
        } else if e.is_builder() {
            (format!("could not build the request: {cause}"), false)
        } else {
            (format!("the request to {} failed: {cause}", self.url), true)
        };
        Failure {
            error: LlmError::Network(message),
            retryable,
            retry_after: None,
        }
    }

    async fn http_failure(&self, resp: reqwest::Response, cancel: &CancellationToken) -> Failure {
        let status = resp.status();
        let retry_after = retry_after(resp.headers());
        let text = match read_body(resp, cancel, self.opts.idle_timeout, 64 * 1024).await {
            Ok(t) => t,
            Err(f) if f.error == LlmError::Cancelled => return f,
            Err(_) => String::new(),
        };
        let (message, code) = error_message(&text);
        let message =
            message.unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_owned());
        // A 429 for an exhausted quota will not clear up by waiting.
        let quota = code
            .as_deref()
            .is_some_and(|c| c.contains("insufficient_quota"));
        Failure {
            error: LlmError::Http {
                status: status.as_u16(),
                message,
            },
            retryable: retryable_status(status.as_u16()) && !quota,
            retry_after,
        }
    }

    /// Removes the API key from anything that could reach the user or a log.
    fn redact(&self, e: LlmError) -> LlmError {
        let Some(key) = self
            .opts
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| k.len() >= 4)
        else {
            return e;
        };
        let clean = |s: String| s.replace(key, "[redacted]");
        match e {
            LlmError::Http { status, message } => LlmError::Http {
                status,
                message: clean(message),
            },
            LlmError::Provider { message, retryable } => LlmError::Provider {
                message: clean(message),
                retryable,
            },
            LlmError::Network(m) => LlmError::Network(clean(m)),
            LlmError::Malformed(m) => LlmError::Malformed(clean(m)),
            LlmError::Cancelled => LlmError::Cancelled,
        }
    }
}

/// The error for a 3xx answer: redirects are not followed (see `http_builder`), so the person
/// must point base_url at the final address. Not retried: the server would answer the same.
fn redirected(resp: &reqwest::Response) -> LlmError {
    let target = resp
        .headers()
        .get(header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .filter(|v| !v.trim().is_empty());
    let to = match target {
        // The header comes from the server: shown, never obeyed, and kept short.
        Some(t) => format!(
            " to {}",
            shorten(&crate::sanitize::visible_line(t.trim()), 200)
        ),
        None => String::new(),
    };
    LlmError::Http {
        status: resp.status().as_u16(),
        message: format!(
            "a redirect{to}; rein does not follow redirects: set base_url to the final address"
        ),
    }
}

/// A request with images that the server refused for holding them, worded so the person (and
/// the agent, which stops sending images to this model) can tell: `Ok` with that error, `Err`
/// with any other error unchanged. Not retried: the same images would be refused again.
fn images_refused(error: LlmError, images: bool) -> Result<LlmError, LlmError> {
    match error {
        LlmError::Http { status, message }
            if images && crate::images::support::is_refusal(status, &message) =>
        {
            Ok(LlmError::Http {
                status,
                message: format!(
                    "{}: {message} (rein keeps your message and sends no more images to this \
                     model in this session; send again to go on without them)",
                    crate::images::support::REFUSED
                ),
            })
        }
        other => Err(other),
    }
}

/// Reads a whole body (up to `limit` bytes), honouring the idle timeout and cancellation.
async fn read_body(
    mut resp: reqwest::Response,
    cancel: &CancellationToken,
    idle: Duration,
    limit: usize,
) -> Result<String, Failure> {
    let mut buf = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(LlmError::Cancelled.into()),
            r = tokio::time::timeout(idle, resp.chunk()) => r,
        };
        match chunk {
            Err(_) => {
                return Err(LlmError::Network(format!(
                    "the response stalled: no data for {}",
                    secs(idle)
                ))
                .into());
            }
            Ok(Err(e)) => {
                return Err(LlmError::Network(format!(
                    "the response broke off: {}",
                    root_cause(&e)
                ))
                .into());
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(b))) => {
                buf.extend_from_slice(&b);
                if buf.len() >= limit {
                    buf.truncate(limit);
                    break;
                }
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// A server's text cut to `max` bytes for an error message.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    match crate::text::cut(s, max, crate::text::Unit::Bytes) {
        Some(head) => format!("{head}..."),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests;
