//! The proxy's connections: read one request head, decide its host, then tunnel (CONNECT) or
//! forward one plain HTTP request. Nothing is resolved before the host is allowed.

use super::allow::{check_name, parse_port};
use super::{CommandLog, NetProxy, Verdict};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// The longest request head the proxy reads (request line and headers).
const MAX_HEAD: usize = 32 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Connections served at once for one command; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 256;

/// Accepts connections until dropped; dropping it ends every connection (the `JoinSet`).
pub(super) async fn run(
    proxy: Arc<NetProxy>,
    listener: std::net::TcpListener,
    log: Arc<CommandLog>,
) {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("network proxy: cannot listen: {e}");
            return;
        }
    };
    let mut tasks = JoinSet::new();
    loop {
        while tasks.len() >= MAX_CONNECTIONS {
            let _ = tasks.join_next().await;
        }
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (proxy, log) = (proxy.clone(), log.clone());
                    tasks.spawn(async move {
                        if let Err(e) = handle(&proxy, stream, &log).await {
                            tracing::debug!("network proxy: connection ended: {e}");
                        }
                    });
                }
                Err(e) => {
                    tracing::debug!("network proxy: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// One parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// `CONNECT` or a plain HTTP method.
    pub(super) method: String,
    /// The host exactly as written (an IPv6 literal keeps its brackets).
    pub(super) host: String,
    pub(super) port: u16,
    /// For plain HTTP: the origin-form target (`/path?query`); empty for CONNECT.
    pub(super) path: String,
    pub(super) version: String,
    /// Header lines as sent (without the request line), for plain HTTP.
    pub(super) headers: Vec<String>,
}

/// Parses a request head (without the blank line); the error is the status line and body to
/// answer with.
pub(super) fn parse(head: &str) -> Result<Request, (u16, String)> {
    let bad = |why: &str| {
        (
            400,
            format!("rein's network proxy cannot use this request: {why}."),
        )
    };
    // Lines end in CRLF only: a bare CR or LF, another control character or a folded line
    // could make the origin read a header (a second `Host`) the proxy did not see.
    let stray = |c: char| c.is_control() && c != '\t';
    if head
        .split("\r\n")
        .any(|l| l.contains(stray) || l.starts_with([' ', '\t']))
    {
        return Err(bad("the head has control characters or folded lines"));
    }
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad("the request line is not `METHOD TARGET HTTP/1.x`"));
    };
    if !version.starts_with("HTTP/1.")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err(bad("only HTTP/1.x proxy requests are served"));
    }
    let headers: Vec<String> = lines.map(str::to_string).collect();
    let (authority, path) = if method == "CONNECT" {
        (target, String::new())
    } else {
        let lower = target.get(..7).map(str::to_ascii_lowercase);
        if lower.as_deref() != Some("http://") {
            return Err(bad(
                "a plain request needs an absolute http:// URL (HTTPS goes through CONNECT)",
            ));
        }
        let rest = &target[7..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let path = match &rest[end..] {
            "" => "/".to_string(),
            p if p.starts_with('/') => p.to_string(),
            p => format!("/{p}"),
        };
        (&rest[..end], path)
    };
    let (host, port) = split_authority(authority, method == "CONNECT").map_err(|w| bad(&w))?;
    Ok(Request {
        method: method.to_string(),
        host: host.to_string(),
        port,
        path,
        version: version.to_string(),
        headers,
    })
}

/// `host:port` (port required for CONNECT, 80 otherwise), `[v6]:port`; no user info.
fn split_authority(authority: &str, need_port: bool) -> Result<(&str, u16), String> {
    if authority.contains('@') {
        return Err("user info (`user@`) in the address is not accepted".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let end = rest.find(']').ok_or("an IPv6 address lacks its `]`")?;
            let host = &authority[..end + 2];
            match &authority[end + 2..] {
                "" => (host, None),
                p => (host, Some(p.strip_prefix(':').ok_or("text after `]`")?)),
            }
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    check_name(host)?;
    let port = match port {
        Some(p) => parse_port(p).ok_or("the port is not 1-65535")?,
        None if need_port => return Err("CONNECT needs `host:port`".into()),
        None => 80,
    };
    Ok((host, port))
}

/// Reads until the blank line that ends the head; returns the head and what came after it.
async fn read_head(stream: &mut TcpStream) -> io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before a request",
            ));
        }
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = memchr::memmem::find(&buf[searched_from..], b"\r\n\r\n") {
            let end = searched_from + i;
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            let head = String::from_utf8(buf)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "head is not UTF-8"))?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
}

/// Answers with a status and a plain-text body, then closes.
async fn answer(stream: &mut TcpStream, status: u16, body: &str) -> io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nX-Rein-Network: refused\r\n\r\n{body}\n",
        body.len() + 1
    );
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}

async fn handle(proxy: &NetProxy, mut client: TcpStream, log: &CommandLog) -> io::Result<()> {
    let (head, early) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(r) => r?,
        Err(_) => return Ok(()),
    };
    let req = match parse(&head) {
        Ok(r) => r,
        Err((status, body)) => return answer(&mut client, status, &body).await,
    };
    let exact = match proxy.decide(&req.host, req.port).await {
        Verdict::Allowed { exact } => exact,
        Verdict::Refused(why) => {
            log.refused(&req.host, req.port);
            return answer(&mut client, 403, &why).await;
        }
    };
    // The one place a name is resolved, and only once it is allowed.
    proxy.count_lookup();
    let mut upstream = match connect(&req.host, req.port, exact).await {
        Ok(s) => s,
        Err(why) => return answer(&mut client, 502, &why).await,
    };
    if req.method != "CONNECT" {
        return forward(client, upstream, &req, early).await;
    }
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    upstream.write_all(&early).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// One plain HTTP request: its head, exactly its body, then the answer. Nothing more of the
/// client's goes to the origin, so a second request pipelined behind the first (for another
/// `Host`, which a shared CDN address would route) never reaches it.
async fn forward(
    mut client: TcpStream,
    mut upstream: TcpStream,
    req: &Request,
    early: Vec<u8>,
) -> io::Result<()> {
    let Some(len) = body_length(&req.headers) else {
        return answer(
            &mut client,
            400,
            "rein's network proxy forwards plain HTTP requests with a Content-Length body only; \
             use HTTPS (CONNECT) for this one.",
        )
        .await;
    };
    upstream.write_all(forwarded_head(req).as_bytes()).await?;
    let first = early.len().min(usize::try_from(len).unwrap_or(usize::MAX));
    upstream.write_all(&early[..first]).await?;
    let rest = len.saturating_sub(first as u64);
    tokio::io::copy(&mut (&mut client).take(rest), &mut upstream).await?;
    tokio::io::copy(&mut upstream, &mut client).await?;
    client.shutdown().await
}

/// The body length a plain request declares (0 without one); `None` for a chunked or unclear
/// one (several lengths, `Transfer-Encoding`).
pub(super) fn body_length(headers: &[String]) -> Option<u64> {
    let mut len = None;
    for h in headers {
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        let name = name.trim().to_ascii_lowercase();
        if name == "transfer-encoding" {
            return None;
        }
        if name == "content-length" {
            let v: u64 = value.trim().parse().ok()?;
            if len.is_some_and(|l| l != v) {
                return None;
            }
            len = Some(v);
        }
    }
    Some(len.unwrap_or(0))
}

/// The head sent to the origin for a plain request: origin-form target, the proxy's own
/// headers dropped, one request per connection, and `Host` always the name that was allowed (a
/// client's own `Host` could name another site behind the same address).
pub(super) fn forwarded_head(req: &Request) -> String {
    const DROPPED: [&str; 5] = [
        "proxy-connection",
        "proxy-authorization",
        "connection",
        "keep-alive",
        "host",
    ];
    let mut out = format!("{} {} {}\r\n", req.method, req.path, req.version);
    match req.port {
        80 => out.push_str(&format!("Host: {}\r\n", req.host)),
        p => out.push_str(&format!("Host: {}:{p}\r\n", req.host)),
    }
    for h in &req.headers {
        let name = h.split(':').next().unwrap_or_default().trim();
        if DROPPED.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out
}

/// Resolves an allowed host and connects. A host allowed only by a wildcard may not lead to
/// loopback, private or link-local addresses: a name under someone else's domain could point
/// at the person's own machine or network.
pub(super) async fn connect(host: &str, port: u16, exact: bool) -> Result<TcpStream, String> {
    let name = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((name, port))).await {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => {
                return Err(format!(
                    "rein's network proxy could not resolve {host}: {e}."
                ));
            }
            Err(_) => return Err(format!("rein's network proxy timed out resolving {host}.")),
        };
    let usable: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| exact || !is_local(a.ip()))
        .collect();
    if usable.is_empty() {
        return Err(format!(
            "rein's network proxy refused {host}: it resolves only to local or private addresses, \
             which only an entry naming the host itself (not a wildcard) may reach."
        ));
    }
    let mut last = String::new();
    for addr in usable {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".into(),
        }
    }
    Err(format!(
        "rein's network proxy could not connect to {host}:{port}: {last}."
    ))
}

/// Loopback, private, link-local, shared, unspecified or multicast: the person's own machine
/// or network rather than the internet.
pub(super) fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_local(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}
