//! Reading what a failed response or request says: error messages, Retry-After, causes.

use reqwest::header::HeaderMap;
use std::time::Duration;

/// The human message and the error code of an error body, in any of the usual shapes:
/// `{"error": {"message", "code"|"type"}}`, `{"error": "..."}`, `{"message": ...}`,
/// `{"detail": ...}`, or plain text.
pub(super) fn error_message(body: &str) -> (Option<String>, Option<String>) {
    let text = body.trim();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return ((!text.is_empty()).then(|| super::shorten(text, 1000)), None);
    };
    let err = v.get("error").unwrap_or(&v);
    let as_text = |x: &serde_json::Value| match x {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    };
    let message = match err {
        serde_json::Value::String(s) => Some(s.clone()),
        _ => err
            .get("message")
            .or_else(|| err.get("detail"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(as_text),
    };
    let code = err
        .get("code")
        .or_else(|| err.get("type"))
        .and_then(as_text);
    (
        Some(message.unwrap_or_else(|| super::shorten(text, 1000))),
        code,
    )
}

/// `retry-after-ms` (OpenAI, Anthropic) or `Retry-After` in seconds or as an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let from_secs =
        |s: f64| (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(1e6)));
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return from_secs(ms / 1000.0);
    }
    let v = get("retry-after")?;
    if let Ok(s) = v.parse::<f64>() {
        return from_secs(s);
    }
    let when = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(v)
        .ok()?;
    let wait = when.duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

/// The innermost cause of an error, which is the informative one for reqwest/hyper.
pub(super) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
