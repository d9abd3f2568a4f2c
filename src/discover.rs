//! Asking local servers about themselves: on a first run without a configured model, look for
//! an OpenAI-compatible server on the usual loopback ports (Ollama 11434, llama.cpp 8080, vLLM
//! 8000); and ask the configured server for its context window.

use crate::config::{Config, Source};
use crate::llm::ProviderKind;
use serde_json::Value;
use std::time::Duration;

/// A server found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalServer {
    /// What usually listens on that port.
    pub name: &'static str,
    /// Base URL to use (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    /// Models it lists (`GET /v1/models`), first one is the suggestion.
    pub models: Vec<String>,
}

/// The ports probed, with the server that usually owns each.
pub const CANDIDATES: &[(&str, u16)] = &[("Ollama", 11434), ("llama.cpp", 8080), ("vLLM", 8000)];

/// Asks one base URL for its models; `None` when nothing answers like an OpenAI server.
pub async fn probe(base_url: &str, timeout: Duration) -> Option<Vec<String>> {
    let client = crate::llm::client::http_builder(base_url)
        .connect_timeout(timeout)
        .timeout(timeout * 2)
        .no_proxy()
        .build()
        .ok()?;
    let resp = client.get(format!("{base_url}/models")).send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body: serde_json::Value = resp.json().await.ok()?;
    let models = body
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_string))
        .collect::<Vec<_>>();
    Some(models)
}

/// Probes the usual ports concurrently.
pub async fn find_local_servers() -> Vec<LocalServer> {
    let probes = CANDIDATES.iter().map(|(name, port)| async move {
        let base_url = format!("http://127.0.0.1:{port}/v1");
        probe(&base_url, Duration::from_millis(300))
            .await
            .map(|models| LocalServer {
                name,
                base_url,
                models,
            })
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// A context window a server reported, and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerWindow {
    /// Tokens.
    pub tokens: u64,
    /// Where it came from, e.g. `llama.cpp /props n_ctx`.
    pub source: &'static str,
}

/// llama.cpp `GET /props`: the context of one slot (what a request can use).
fn llamacpp_window(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
}

/// vLLM `GET /v1/models`: `max_model_len` of the model (or of the only one listed).
fn vllm_window(models: &Value, model: &str) -> Option<u64> {
    let list = models.get("data")?.as_array()?;
    let entry = list
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (list.len() == 1).then(|| &list[0]))?;
    entry.get("max_model_len").and_then(Value::as_u64)
}

/// Ollama `POST /api/show`: the `num_ctx` it runs with, else the model's trained length.
fn ollama_window(show: &Value) -> Option<(u64, &'static str)> {
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse().ok())
                    .flatten()
            })
        });
    if let Some(n) = num_ctx {
        return Some((n, "Ollama /api/show num_ctx"));
    }
    let info = show.get("model_info")?.as_object()?;
    info.iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, v)| v.as_u64())
        .map(|n| (n, "Ollama /api/show context_length"))
}

/// Asks an OpenAI-compatible server (`base_url` with `/v1`) for its context window: llama.cpp's
/// `/props`, vLLM's `/v1/models` or Ollama's `/api/show`, whichever answers. `None` when none
/// says (hosted APIs don't).
pub async fn server_context_window(
    base_url: &str,
    model: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Option<ServerWindow> {
    let client = crate::llm::client::http_builder(base_url)
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .ok()?;
    let base = base_url.trim().trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let get_json = |req: reqwest::RequestBuilder| async move {
        let req = match api_key.filter(|k| !k.trim().is_empty()) {
            Some(k) => req.bearer_auth(k.trim()),
            None => req,
        };
        let resp = req.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        resp.json::<Value>().await.ok()
    };
    let (props, models, show) = futures::join!(
        get_json(client.get(format!("{root}/props"))),
        get_json(client.get(format!("{base}/models"))),
        get_json(
            client
                .post(format!("{root}/api/show"))
                .json(&serde_json::json!({"model": model, "name": model}))
        ),
    );
    if let Some(n) = props.as_ref().and_then(llamacpp_window) {
        return Some(ServerWindow {
            tokens: n,
            source: "llama.cpp /props n_ctx",
        });
    }
    if let Some(n) = models.as_ref().and_then(|m| vllm_window(m, model)) {
        return Some(ServerWindow {
            tokens: n,
            source: "vLLM /v1/models max_model_len",
        });
    }
    show.as_ref()
        .and_then(ollama_window)
        .map(|(tokens, source)| ServerWindow { tokens, source })
        .filter(|w| w.tokens > 0)
}

/// Takes the context window the server reported into `config`, unless one was configured
/// (or the provider is Anthropic, whose windows are known by model). The source shows in
/// `rein config`.
pub async fn use_server_window(config: &mut Config) {
    if let Some(asked) = ask_server_window(config) {
        apply_server_window(config, asked.await);
    }
}

/// The question [`use_server_window`] asks, owning what it needs (to run beside other work);
/// `None` when there is nothing to ask.
pub fn ask_server_window(
    config: &Config,
) -> Option<impl std::future::Future<Output = Option<ServerWindow>> + Send + 'static> {
    let configured = !matches!(
        config.source_of("context_window"),
        Source::Default | Source::Derived(_)
    );
    if config.provider != ProviderKind::OpenAi || configured {
        return None;
    }
    let (base, model, key) = (
        config.base_url.clone(),
        config.model.clone(),
        config.api_key.clone(),
    );
    Some(async move {
        server_context_window(&base, &model, key.as_deref(), Duration::from_secs(3)).await
    })
}

/// Takes the answer of [`ask_server_window`] into `config`.
pub fn apply_server_window(config: &mut Config, answer: Option<ServerWindow>) {
    let Some(w) = answer.filter(|w| w.tokens > 0) else {
        return;
    };
    tracing::info!(
        tokens = w.tokens,
        source = w.source,
        "context window from the server"
    );
    config.apply_server_context_window(w.tokens, w.source);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Serves one canned HTTP response per connection on a random loopback port.
    fn serve(body: &'static str, status: &'static str) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten().take(4) {
                let mut stream = stream;
                let mut buf = [0u8; 2048];
                let _ = stream.read(&mut buf);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn a_server_listing_models_is_found() {
        let url = serve(
            r#"{"object":"list","data":[{"id":"qwen2.5-coder:14b"},{"id":"llama3"}]}"#,
            "200 OK",
        );
        let models = probe(&url, Duration::from_secs(2)).await;
        assert_eq!(
            models,
            Some(vec!["qwen2.5-coder:14b".to_string(), "llama3".to_string()])
        );
    }

    /// Serves canned JSON bodies by path (anything else is a 404) on a random loopback port.
    fn serve_paths(routes: &'static [(&'static str, &'static str)]) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("");
                let (status, body) = routes
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map_or(("404 Not Found", "{}"), |(_, b)| ("200 OK", *b));
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        format!("http://{addr}/v1")
    }

    async fn window(routes: &'static [(&'static str, &'static str)]) -> Option<ServerWindow> {
        let url = serve_paths(routes);
        server_context_window(&url, "m", None, Duration::from_secs(5)).await
    }

    #[tokio::test]
    async fn each_local_server_reports_its_window_where_it_keeps_it() {
        // llama.cpp, as xllamacpp 0.2.12 answers (trimmed); its /v1/models only has n_ctx_train.
        let llamacpp = window(&[
            (
                "/props",
                r#"{"default_generation_settings":{"n_ctx":32768},"total_slots":1}"#,
            ),
            (
                "/v1/models",
                r#"{"data":[{"id":"m","meta":{"n_ctx_train":131072}}]}"#,
            ),
        ])
        .await;
        assert_eq!(
            llamacpp,
            Some(ServerWindow {
                tokens: 32768,
                source: "llama.cpp /props n_ctx"
            })
        );
        let vllm = window(&[(
            "/v1/models",
            r#"{"data":[{"id":"other","max_model_len":4096},{"id":"m","max_model_len":16384}]}"#,
        )])
        .await;
        assert_eq!(vllm.map(|w| w.tokens), Some(16384));
        let ollama = window(&[(
            "/api/show",
            r#"{"parameters":"stop \"<|im_end|>\"\nnum_ctx 8192","model_info":{"qwen2.context_length":32768}}"#,
        )])
        .await;
        assert_eq!(
            ollama,
            Some(ServerWindow {
                tokens: 8192,
                source: "Ollama /api/show num_ctx"
            })
        );
        let trained = window(&[(
            "/api/show",
            r#"{"model_info":{"qwen2.context_length":32768}}"#,
        )])
        .await;
        assert_eq!(trained.map(|w| w.tokens), Some(32768));
        // A hosted API lists models without a window: no answer, the configured default holds.
        assert_eq!(
            window(&[("/v1/models", r#"{"data":[{"id":"m"}]}"#)]).await,
            None
        );
    }

    #[tokio::test]
    async fn errors_and_non_openai_answers_are_not_servers() {
        let url = serve("nope", "404 Not Found");
        assert_eq!(probe(&url, Duration::from_secs(2)).await, None);
        let url = serve(r#"{"hello":"world"}"#, "200 OK");
        assert_eq!(probe(&url, Duration::from_secs(2)).await, None);
        // Nothing listens on port 9 (discard) on loopback.
        assert_eq!(
            probe("http://127.0.0.1:9/v1", Duration::from_millis(300)).await,
            None
        );
    }
}
