//! HTTP transport shared by both wire formats: request, SSE stream, retries with backoff.

use super::{LlmError, ProviderKind, Request, Response, StreamNotice};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How to reach the model server.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL (OpenAI: includes `/v1`; Anthropic: without `/v1`).
    pub base_url: String,
    /// API key, if any (never logged).
    pub api_key: Option<String>,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Longest silence tolerated while waiting for the next bytes of a stream.
    pub idle_timeout: Duration,
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// First backoff delay; doubles each retry, with jitter.
    pub initial_backoff: Duration,
    /// Upper bound for one backoff delay (also caps Retry-After).
    pub max_backoff: Duration,
}

/// A model client for one provider.
#[derive(Clone, Debug)]
pub struct Client {
    opts: ClientOptions,
}

impl Client {
    /// Builds a client; fails only on an unusable base URL.
    pub fn new(opts: ClientOptions) -> Result<Client, LlmError> {
        Ok(Client { opts })
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// Sends `req`, streams notices to `on`, returns the assembled response.
    pub async fn stream(
        &self,
        _req: &Request,
        _cancel: &CancellationToken,
        _on: &mut (dyn FnMut(StreamNotice) + Send),
    ) -> Result<Response, LlmError> {
        Err(LlmError::Malformed("client not implemented yet".into()))
    }
}
