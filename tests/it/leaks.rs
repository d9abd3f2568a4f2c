//! What must never leave rein, through the real `rein exec` binary: the key and the
//! conversation go only to the configured server (redirects are not followed).

use crate::support;

use rein::llm::ProviderKind;
use support::rein::{TEST_KEY, World, stderr};
use support::{Reply, ScriptedServer};

all_formats!(a_redirect_is_not_followed);

/// The address of `server`'s model endpoint.
fn endpoint(server: &ScriptedServer) -> String {
    let path = match server.format() {
        ProviderKind::OpenAi => "/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::OpenAiResponses => "/responses",
    };
    format!("{}{path}", server.base_url())
}

/// The configured server answers with a redirect to another server: that one receives
/// nothing (neither the key, which reqwest would keep in `x-api-key`, nor the conversation a
/// 307 re-sends), and rein stops with an error that says what to change.
fn a_redirect_is_not_followed(kind: ProviderKind) {
    for code in [307, 302] {
        let s = ScriptedServer::start(kind);
        let elsewhere = ScriptedServer::start(kind);
        let to = endpoint(&elsewhere);
        for _ in 0..3 {
            s.push(Reply::redirect(code, &to));
        }
        let w = World::new(&s);
        let o = w.exec(&["--yes", "the plan is PLAN-b2-secret"]);
        let reached = elsewhere.requests().len() + elsewhere.other_requests().len();
        assert_eq!(reached, 0, "{code}: the redirect was followed");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{code}: {err}");
        assert!(
            err.contains(&format!("HTTP {code}: a redirect to {to}"))
                && err
                    .contains("rein does not follow redirects: set base_url to the final address"),
            "{code}: {err}"
        );
        assert!(!err.contains(TEST_KEY), "{err}");
        // Not retried as a passing fault: the server would redirect again.
        assert_eq!(s.request_count(), 1, "{code}");
    }
}
