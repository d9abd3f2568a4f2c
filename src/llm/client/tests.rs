use super::errors::{error_message, retry_after};
use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn retry_after_in_seconds_ms_and_http_date() {
    assert_eq!(
        retry_after(&headers(&[("retry-after", "3")])),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
        Some(Duration::from_millis(250))
    );
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(30);
    let date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&later)
        .unwrap();
    let wait = retry_after(&headers(&[("retry-after", &date)])).unwrap();
    assert!(
        wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
    let past = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_eq!(
        retry_after(&headers(&[("retry-after", past)])),
        Some(Duration::ZERO)
    );
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
}

#[test]
fn error_messages_are_extracted_from_the_usual_shapes() {
    let m = |b: &str| error_message(b).0.unwrap();
    assert_eq!(
        m(r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
        "bad model"
    );
    assert_eq!(
        m(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#
        ),
        "max_tokens: too big"
    );
    assert_eq!(m(r#"{"error":"model not found"}"#), "model not found");
    assert_eq!(
        m(r#"{"object":"error","message":"vllm says no","code":400}"#),
        "vllm says no"
    );
    assert_eq!(m(r#"{"detail":"Not Found"}"#), "Not Found");
    assert_eq!(m("upstream exploded\n"), "upstream exploded");
    assert_eq!(error_message("").0, None);
    assert_eq!(
        error_message(r#"{"error":{"message":"x","code":"insufficient_quota"}}"#)
            .1
            .as_deref(),
        Some("insufficient_quota")
    );
}

#[test]
fn debug_output_masks_the_key() {
    let opts = ClientOptions::new(
        ProviderKind::OpenAi,
        "http://x/v1",
        Some("sk-secret-123".into()),
    );
    assert!(!format!("{opts:?}").contains("sk-secret-123"));
    let client = Client::new(opts).unwrap();
    assert!(!format!("{client:?}").contains("sk-secret-123"));
}

#[test]
fn urls_per_wire_format() {
    let c = |kind, base: &str| {
        Client::new(ClientOptions::new(kind, base, None)).map(|c| c.url().to_owned())
    };
    assert_eq!(
        c(ProviderKind::OpenAi, "http://127.0.0.1:8080/v1/").unwrap(),
        "http://127.0.0.1:8080/v1/chat/completions"
    );
    assert_eq!(
        c(ProviderKind::Anthropic, "https://api.anthropic.com").unwrap(),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(
        c(ProviderKind::Anthropic, "https://proxy.example/v1").unwrap(),
        "https://proxy.example/v1/messages"
    );
    assert!(c(ProviderKind::OpenAi, "localhost:8080").is_err());
    assert!(c(ProviderKind::OpenAi, "ftp://x").is_err());
}

#[test]
fn backoff_grows_is_capped_and_honours_retry_after() {
    let mut o = ClientOptions::new(ProviderKind::OpenAi, "http://x/v1", None);
    o.initial_backoff = Duration::from_millis(100);
    o.max_backoff = Duration::from_millis(1000);
    let c = Client::new(o).unwrap();
    for attempt in 1..=6 {
        let full =
            Duration::from_millis(100 * (1 << (attempt - 1))).min(Duration::from_millis(1000));
        let d = c.backoff(attempt, None);
        assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
    }
    assert_eq!(
        c.backoff(1, Some(Duration::from_millis(300))),
        Duration::from_millis(300)
    );
    assert_eq!(
        c.backoff(1, Some(Duration::from_secs(60))),
        Duration::from_millis(1000)
    );
}
