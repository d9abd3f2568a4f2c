use super::serve::{body_length, forwarded_head, is_local, parse};
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn list(entries: &[&str]) -> AllowList {
    let e: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
    AllowList::parse(&e, &[]).unwrap()
}

#[test]
fn request_heads_parse_as_written() {
    let r = parse("CONNECT LocalHost:8443 HTTP/1.1\r\nHost: x").unwrap();
    assert_eq!(
        (r.method.as_str(), r.host.as_str(), r.port),
        ("CONNECT", "LocalHost", 8443)
    );
    let r = parse("GET http://127.0.0.1:8080/a?b HTTP/1.1").unwrap();
    assert_eq!(
        (r.host.as_str(), r.port, r.path.as_str()),
        ("127.0.0.1", 8080, "/a?b")
    );
    let r = parse("GET HTTP://example.org HTTP/1.0").unwrap();
    assert_eq!(
        (r.host.as_str(), r.port, r.path.as_str()),
        ("example.org", 80, "/")
    );
    let r = parse("CONNECT [::1]:443 HTTP/1.1").unwrap();
    assert_eq!(r.host, "[::1]");
    for bad in [
        "CONNECT example.org HTTP/1.1",
        "GET /path HTTP/1.1",
        "GET https://example.org/ HTTP/1.1",
        "GET http://user@example.org/ HTTP/1.1",
        "CONNECT exa%6dple.org:443 HTTP/1.1",
        "CONNECT example.org:443 HTTP/2",
        "CONNECT  example.org:443 HTTP/1.1",
        "CONNECT example.org:0 HTTP/1.1",
        "GET http://a.org/ HTTP/1.1\r\nAccept: x\nHost: evil.example",
        "GET http://a.org/ HTTP/1.1\r\nAccept: x\rHost: evil.example",
        "GET http://a.org/ HTTP/1.1\r\nAccept: x\r\n Host: evil.example",
        "get http://a.org/ HTTP/1.1",
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn plain_requests_lose_the_proxy_headers_keep_alive_and_a_foreign_host() {
    let r = parse(
        "GET http://a.org:8080/x HTTP/1.1\r\nProxy-Authorization: Basic e30=\r\n\
         Host: evil.example\r\nProxy-Connection: keep-alive\r\nAccept: */*",
    )
    .unwrap();
    assert_eq!(
        forwarded_head(&r),
        "GET /x HTTP/1.1\r\nHost: a.org:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let r = parse("GET http://a.org/ HTTP/1.1").unwrap();
    assert!(forwarded_head(&r).starts_with("GET / HTTP/1.1\r\nHost: a.org\r\n"));
    let h = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert_eq!(body_length(&h(&[])), Some(0));
    assert_eq!(body_length(&h(&["Content-Length: 12"])), Some(12));
    assert_eq!(
        body_length(&h(&["Content-Length: 1", "content-length: 2"])),
        None
    );
    assert_eq!(body_length(&h(&["Transfer-Encoding: chunked"])), None);
    assert_eq!(body_length(&h(&["Content-Length: -1"])), None);
}

#[test]
fn local_addresses_are_recognised() {
    for local in [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "100.64.0.1",
        "0.0.0.0",
    ] {
        assert!(is_local(local.parse().unwrap()), "{local}");
    }
    for public in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
        assert!(!is_local(public.parse().unwrap()), "{public}");
    }
}

/// Answers every question the same way and counts them.
struct Fixed(Option<Answer>, AtomicUsize);

impl Asker for Fixed {
    fn ask<'a>(&'a self, _host: &'a str, _port: u16) -> BoxFuture<'a, Option<Answer>> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { self.0 })
    }

    fn tell(&self, _text: String) {}
}

#[tokio::test]
async fn a_new_host_is_asked_once_and_the_answer_holds() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[sandbox.network]\nallow = []\n").unwrap();
    let proxy = NetProxy::new(list(&[]), Some(config.clone()));
    // Nobody to ask (headless): refused, and the sentence names the key.
    match proxy.decide("example.org", 443).await {
        Verdict::Refused(why) => assert!(why.contains("[sandbox.network] allow"), "{why}"),
        v => panic!("{v:?}"),
    }
    let asker = Arc::new(Fixed(Some(Answer::Session), AtomicUsize::new(0)));
    proxy.set_asker(asker.clone());
    assert_eq!(
        proxy.decide("example.org", 443).await,
        Verdict::Allowed { exact: true }
    );
    assert_eq!(
        proxy.decide("EXAMPLE.org", 443).await,
        Verdict::Allowed { exact: true }
    );
    // Another port is another question.
    assert_eq!(
        proxy.decide("example.org", 22).await,
        Verdict::Allowed { exact: true }
    );
    assert_eq!(asker.1.load(Ordering::SeqCst), 2);
    assert!(
        !std::fs::read_to_string(&config)
            .unwrap()
            .contains("example.org")
    );

    let no = Arc::new(Fixed(Some(Answer::No), AtomicUsize::new(0)));
    proxy.set_asker(no.clone());
    assert!(matches!(
        proxy.decide("evil.org", 443).await,
        Verdict::Refused(_)
    ));
    assert!(matches!(
        proxy.decide("evil.org", 443).await,
        Verdict::Refused(_)
    ));
    assert_eq!(no.1.load(Ordering::SeqCst), 1);

    proxy.set_asker(Arc::new(Fixed(Some(Answer::Always), AtomicUsize::new(0))));
    assert_eq!(
        proxy.decide("saved.org", 443).await,
        Verdict::Allowed { exact: true }
    );
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("\"saved.org:443\"")
    );
}

/// An HTTP server on 127.0.0.1 that answers `hello`, counts connections and keeps every byte
/// it was sent (a pipelined second request included).
async fn origin() -> (u16, Arc<AtomicUsize>, Arc<std::sync::Mutex<String>>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let got = Arc::new(std::sync::Mutex::new(String::new()));
    let (c, g) = (count.clone(), got.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            let g = g.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                g.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
                let _ = s.shutdown().await;
                // Whatever else comes is what a proxy let through behind the first request.
                while let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await
                {
                    if n == 0 {
                        break;
                    }
                    g.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
    });
    (port, count, got)
}

async fn through(proxy_port: u16, request: String) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", proxy_port))
        .await
        .unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn the_proxy_reaches_allowed_names_and_refuses_the_rest_unresolved() {
    let (port, hits, got) = origin().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    let proxy = Arc::new(NetProxy::new(list(&["localhost:*"]), None));
    let log = Arc::new(CommandLog::default());
    let proxy_ref = proxy.clone();
    let task = tokio::spawn(serve(proxy, listener, log.clone()));

    let ok = through(
        proxy_port,
        format!("GET http://localhost:{port}/ HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(ok.ends_with("hello"), "{ok}");
    // A second request pipelined behind an allowed one never reaches the origin.
    let piped = through(
        proxy_port,
        format!(
            "GET http://localhost:{port}/ HTTP/1.1\r\n\r\n\
             GET http://127.0.0.1:{port}/second HTTP/1.1\r\nHost: other\r\n\r\n"
        ),
    )
    .await;
    assert!(piped.ends_with("hello"), "{piped}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        !got.lock().unwrap().contains("/second"),
        "{}",
        got.lock().unwrap()
    );
    let refused = through(
        proxy_port,
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("127.0.0.1:") && refused.contains("[sandbox.network] allow"));
    let tunnel = through(
        proxy_port,
        format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(tunnel.starts_with("HTTP/1.1 200 Connection established") && tunnel.ends_with("hello"));
    // A host allowed by a wildcard may not lead to a loopback address (a name under someone
    // else's domain could point at the person's machine); an exact entry may.
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let wild = super::serve::connect("localhost", port, false)
        .await
        .unwrap_err();
    assert!(wild.contains("local or private"), "{wild}");
    assert!(super::serve::connect("localhost", port, true).await.is_ok());
    // Three requests were allowed (plain, pipelined, tunnel), so three names were resolved;
    // the refused ones were not.
    assert_eq!(proxy_ref.lookups(), 3);
    for name in ["refused-never-resolved.invalid", "LOCALHOST.", "[::1]"] {
        let r = through(proxy_port, format!("CONNECT {name}:443 HTTP/1.1\r\n\r\n")).await;
        assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    }
    assert_eq!(proxy_ref.lookups(), 3);
    let note = log.note().unwrap();
    assert!(note.contains(&format!("127.0.0.1:{port}")), "{note}");
    task.abort();
}
