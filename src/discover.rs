//! First run without a configured model: look for a local OpenAI-compatible server on the
//! usual loopback ports (Ollama 11434, llama.cpp 8080, vLLM 8000).

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
    crate::llm::client::ensure_tls_provider();
    let client = reqwest::Client::builder()
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
