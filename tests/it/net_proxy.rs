//! The network allow-list through the real binary (`rein exec --yes` against the scripted
//! model, which asks for each attack as a bash call). Loopback only: an origin server on
//! 127.0.0.1 is allowed under the name `localhost`; the same server under the name `127.0.0.1`
//! is not on the list. `--yes` approves every command, so what is tested is the sandbox and
//! the proxy, not the approval. The oracle is the origin's own log: a request path it saw is a
//! request that got through.
#![cfg(target_os = "linux")]

use crate::support::rein::{World, assert_ok, last_result, run_with_timeout};
use crate::support::{Reply, ScriptedServer};
use rein::agent::AgentOptions;
use rein::agent::dispatch::Approver;
use rein::config::{Config, Flags, Inputs, SandboxMode};
use rein::protocol::{Decision, Event, Op, ToolDisplay};
use rein::sandbox::{Mechanism, Sandbox, SandboxStatus};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Whether namespaces (and so the allow-list) work here; a failure when they must
/// (`REIN_SANDBOX_TESTS_REQUIRED`), else the test is skipped.
fn ready() -> bool {
    let dir = std::env::temp_dir();
    let sb = Sandbox::new(SandboxMode::WorkspaceWrite, false, dir.clone(), dir);
    if sb.status() == &SandboxStatus::Enforced && sb.mechanism() == Mechanism::Namespaces {
        return true;
    }
    assert!(
        std::env::var_os("REIN_SANDBOX_TESTS_REQUIRED").is_none(),
        "the sandbox with namespaces is not available here: {:?}",
        sb.status()
    );
    eprintln!("SKIPPED: no sandbox with namespaces here");
    false
}

/// An HTTP origin on 127.0.0.1: answers every request with `origin-<token>` and records the
/// request lines it saw.
struct Origin {
    port: u16,
    token: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let token = format!(
            "origin-{:x}",
            std::process::id() as u64 * 7919 + port as u64
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, body) = (seen.clone(), token.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (log, body) = (log.clone(), body.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(&conn);
                    let mut line = String::new();
                    let _ = reader.read_line(&mut line);
                    log.lock().unwrap().push(line.trim().to_string());
                    // The rest of the head.
                    let mut h = String::new();
                    while reader.read_line(&mut h).is_ok_and(|n| n > 2) {
                        h.clear();
                    }
                    let _ = (&conn).write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                });
            }
        });
        Origin { port, token, seen }
    }

    /// Whether a request for `path` reached the origin.
    fn saw(&self, path: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|l| l.contains(path))
    }
}

/// The last line every attack script prints, to tell that it really ran.
const DONE: &str = "net-attack-done";

/// A bash call running `body` as a script file: the permission layer (which refuses `curl`
/// outright) is not under test here, the sandbox is.
fn bash(w: &World, body: &str) -> Reply {
    let dir = w.readable_dir("attacks");
    let n = std::fs::read_dir(&dir).unwrap().count();
    let path = dir.join(format!("{n}.sh"));
    std::fs::write(&path, format!("{body}\necho {DONE}\n")).unwrap();
    Reply::tool_call(
        "bash",
        json!({ "command": format!("bash {}", path.display()) }),
    )
}

/// Runs `rein exec --yes` with `commands` as the model's bash calls; returns the result of
/// each call, in order.
fn run(w: &World, s: &ScriptedServer, commands: &[String], env: &[(&str, &str)]) -> Vec<String> {
    for c in commands {
        s.push(bash(w, c));
    }
    s.push(Reply::text("done"));
    let mut c = w.cmd();
    c.envs(env.iter().copied()).args(["exec", "--yes", "go"]);
    let o = run_with_timeout(c, Duration::from_secs(120));
    assert_ok(&o);
    (1..=commands.len())
        .map(|i| {
            let r = last_result(&s.request(i)).content;
            assert!(r.contains(DONE), "the attack did not run: {r}");
            r
        })
        .collect()
}

fn world(user: &str) -> (ScriptedServer, World) {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    w.user_config(&format!(
        "retry_backoff_ms = 20\nidle_timeout_secs = 3\n{user}"
    ));
    (s, w)
}

/// The same request every attack makes, once as allowed and once not: curl through the
/// proxy (plain HTTP, and CONNECT with `--proxytunnel`).
fn curl(host: &str, port: u16, path: &str, tunnel: bool) -> String {
    let t = if tunnel { "--proxytunnel " } else { "" };
    format!("curl -sS -i --max-time 20 {t}http://{host}:{port}{path}; echo \"curl-exit=$?\"")
}

#[test]
fn the_allowed_name_passes_and_the_same_server_under_another_name_does_not() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let (s, w) = world(&format!(
        "[sandbox.network]\nallow = [\"localhost:{}\"]\n",
        o.port
    ));
    let r = run(
        &w,
        &s,
        &[
            curl("localhost", o.port, "/allowed-plain", false),
            curl("localhost", o.port, "/allowed-tunnel", true),
            curl("127.0.0.1", o.port, "/refused-plain", false),
            curl("127.0.0.1", o.port, "/refused-tunnel", true),
            // The name is compared as written: a different spelling is a different name.
            curl("localhost.", o.port, "/refused-dot", false),
            // Python's urllib takes the proxy from the environment too.
            format!(
                "python3 -c \"import urllib.request as u; print(u.urlopen('http://localhost:{}/allowed-python', timeout=20).read().decode())\"",
                o.port
            ),
        ],
        &[],
    );
    assert!(
        r[0].contains(&o.token) && o.saw("/allowed-plain"),
        "{}",
        r[0]
    );
    assert!(
        r[1].contains(&o.token) && o.saw("/allowed-tunnel"),
        "{}",
        r[1]
    );
    assert!(
        r[5].contains(&o.token) && o.saw("/allowed-python"),
        "{}",
        r[5]
    );
    for (i, path) in [
        (2, "/refused-plain"),
        (3, "/refused-tunnel"),
        (4, "/refused-dot"),
    ] {
        assert!(!o.saw(path), "{path} reached the origin: {}", r[i]);
        assert!(!r[i].contains(&o.token), "{}", r[i]);
        assert!(r[i].contains("403"), "{}", r[i]);
    }
    // The model is told which host was refused and which key would allow it: in the proxy's
    // answer (plain HTTP shows it) and in the note the tool result ends with (curl hides a
    // refused CONNECT's body).
    let name = format!("127.0.0.1:{}", o.port);
    assert!(
        r[2].contains(&name) && r[2].contains("[sandbox.network] allow"),
        "{}",
        r[2]
    );
    assert!(
        r[3].contains("The network proxy refused") && r[3].contains(&name),
        "{}",
        r[3]
    );
}

#[test]
fn nothing_gets_around_the_proxy() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let (s, w) = world(&format!(
        "[sandbox.network]\nallow = [\"localhost:{}\"]\n",
        o.port
    ));
    let p = o.port;
    let r = run(
        &w,
        &s,
        &[
            // Straight to the server, ignoring the proxy variables.
            format!("curl -sS --max-time 5 --noproxy '*' http://localhost:{p}/direct-curl; echo \"curl-exit=$?\""),
            format!("exec 3<>/dev/tcp/127.0.0.1/{p} && printf 'GET /direct-devtcp HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; echo \"devtcp-exit=$?\""),
            format!(
                "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {p}), timeout=5); s.sendall(b'GET /direct-python HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100))\"; echo \"py-exit=$?\""
            ),
            // UDP (and so DNS of its own) is closed.
            format!(
                "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'udp-escape', ('127.0.0.1', {udp_port}))\"; echo \"udp-exit=$?\""
            ),
            // Raw and unix sockets (a resolver's or Docker's socket is a path, which no
            // network namespace separates).
            "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\"; echo \"raw-exit=$?\"; python3 -c \"import socket; socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\"; echo \"unix-exit=$?\"".to_string(),
            // The command's own resolver finds nothing either.
            "getent hosts localhost.localdomain example.com; echo \"getent-exit=$?\"; python3 -c \"import socket; print(socket.getaddrinfo('example.com', 443))\"; echo \"gai-exit=$?\"".to_string(),
        ],
        &[],
    );
    for path in ["/direct-curl", "/direct-devtcp", "/direct-python"] {
        assert!(!o.saw(path), "{path} reached the origin: {r:?}");
    }
    assert!(
        !r[0].contains(&o.token) && !r[0].contains("curl-exit=0"),
        "{}",
        r[0]
    );
    assert!(
        !r[1].contains(&o.token) && !r[1].contains("devtcp-exit=0"),
        "{}",
        r[1]
    );
    assert!(
        !r[2].contains(&o.token) && !r[2].contains("py-exit=0"),
        "{}",
        r[2]
    );
    let mut buf = [0u8; 64];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram got out: {}",
        r[3]
    );
    assert!(
        r[3].contains("PermissionError") && !r[3].contains("udp-exit=0"),
        "{}",
        r[3]
    );
    assert!(
        !r[4].contains("raw-exit=0") && !r[4].contains("unix-exit=0"),
        "{}",
        r[4]
    );
    assert!(
        !r[5].contains("gai-exit=0") && !r[5].contains("93.184"),
        "{}",
        r[5]
    );
    // The proxy itself still works in the same session.
    assert!(
        o.seen.lock().unwrap().is_empty(),
        "{:?}",
        o.seen.lock().unwrap()
    );
}

#[test]
fn a_project_cannot_add_hosts_even_when_trusted() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let p = o.port;
    // The person allows one name; the repository tries to add the other, the whole network,
    // and every port of every host below a suffix.
    let (s, w) = world(&format!("[sandbox.network]\nallow = [\"localhost:{p}\"]\n"));
    w.write(
        ".rein/config.toml",
        &format!("[sandbox.network]\nallow = [\"127.0.0.1:{p}\", \"127.0.0.1:*\"]\npresets = [\"python\"]\n"),
    );
    let r = run(
        &w,
        &s,
        &[
            curl("127.0.0.1", p, "/project-added", false),
            curl("localhost", p, "/person-allowed", false),
        ],
        &[],
    );
    assert!(!o.saw("/project-added") && r[0].contains("403"), "{}", r[0]);
    assert!(o.saw("/person-allowed"), "{}", r[1]);

    // Trusted (`--trust`), and with the person's config saying nothing about the network: the
    // project's table still opens nothing (no network at all).
    let (s, w) = world("");
    w.write(
        ".rein/config.toml",
        &format!("[sandbox.network]\nallow = [\"localhost:{p}\", \"127.0.0.1:*\"]\n"),
    );
    s.push(bash(&w, &curl("localhost", p, "/trusted-project", false)));
    s.push(Reply::text("done"));
    let mut c = w.cmd();
    c.args(["exec", "--yes", "--trust", "go"]);
    let out = run_with_timeout(c, Duration::from_secs(120));
    assert_ok(&out);
    let r = last_result(&s.request(1)).content;
    assert!(r.contains(DONE), "the attack did not run: {r}");
    assert!(!o.saw("/trusted-project") && !r.contains(&o.token), "{r}");
}

#[test]
fn without_namespaces_the_allow_list_fails_closed() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let (s, w) = world(&format!(
        "[sandbox.network]\nallow = [\"localhost:{}\"]\n",
        o.port
    ));
    let r = run(
        &w,
        &s,
        &[curl("localhost", o.port, "/fallback", false)],
        &[("REIN_SANDBOX_FALLBACK", "1")],
    );
    assert!(!o.saw("/fallback") && !r[0].contains(&o.token), "{}", r[0]);
    // `rein sandbox` says why there is no network.
    let mut c = w.cmd();
    c.env("REIN_SANDBOX_FALLBACK", "1")
        .args(["sandbox", "--", "true"]);
    let out = run_with_timeout(c, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("needs network namespaces"), "{text}");
}

/// The agent as the TUI drives it (`Approver::Interactive`) with an empty allow-list: each
/// bash command is approved; each network question is answered from `answers` in order.
/// Returns the network questions asked (host:port) and each call's result.
async fn interactive(
    config: &str,
    commands: &[&str],
    mut answers: Vec<Decision>,
    dir: &std::path::Path,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let s = ScriptedServer::openai();
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/config.toml"), config).unwrap();
    // A place of home commands may read (beside the workspace is hidden from them).
    let scripts = dir.join("home/.local/bin/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    for (i, c) in commands.iter().enumerate() {
        let path = scripts.join(format!("{i}.sh"));
        std::fs::write(&path, format!("{c}\necho {DONE}\n")).unwrap();
        s.push(Reply::tool_call(
            "bash",
            json!({ "command": format!("bash {}", path.display()) }),
        ));
    }
    s.push(Reply::text("done"));
    let inputs = Inputs {
        flags: Flags::default(),
        env: [
            ("BASE_URL", s.base_url()),
            ("MODEL", "scripted-model".into()),
            ("REIN_PROVIDER", s.format().as_str().into()),
            ("REIN_SMALL_MODEL", "off".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        home_dir: Some(dir.join("home")),
        config_dir: dir.join("config"),
        data_dir: dir.join("data"),
        cwd: ws,
    };
    let config = Config::from_inputs(&inputs).unwrap();
    let mut h = rein::agent::spawn(AgentOptions::new(config, Approver::Interactive)).unwrap();
    h.ops.send(Op::UserInput { text: "go".into() }).unwrap();
    let mut asked = Vec::new();
    let mut notices = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let ev = tokio::time::timeout_at(deadline, h.events.recv())
            .await
            .expect("timed out")
            .expect("agent ended");
        match ev {
            Event::ApprovalRequested(req) => {
                let decision = match &req.display {
                    ToolDisplay::Network { host, port } => {
                        asked.push(format!("{host}:{port}"));
                        answers.remove(0)
                    }
                    _ => Decision::Yes,
                };
                h.ops
                    .send(Op::Approval {
                        id: req.id,
                        decision,
                        note: None,
                    })
                    .unwrap();
            }
            Event::Notice { text, .. } => notices.push(text),
            Event::TurnFinished { .. } => break,
            _ => {}
        }
    }
    let results = (1..=commands.len())
        .map(|i| last_result(&s.request(i)).content)
        .collect();
    (asked, results, notices)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_tui_a_new_host_is_asked_once_and_the_answer_holds() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let p = o.port;
    // Not in /tmp: the commands run scripts from the world's home.
    let dir = crate::support::rein::world_dir();
    let root = dir.path().canonicalize().unwrap();
    let (asked, r, _) = interactive(
        "retry_backoff_ms = 10\n[sandbox.network]\nallow = []\n",
        &[
            &curl("localhost", p, "/session-1", false),
            &curl("localhost", p, "/session-2", true),
            &curl("127.0.0.1", p, "/said-no-1", false),
            &curl("127.0.0.1", p, "/said-no-2", false),
            &curl("localhost", p, "/ok-3", false),
        ],
        vec![Decision::Yes, Decision::No],
        &root,
    )
    .await;
    // One question per host, whatever the number of requests.
    assert_eq!(
        asked,
        vec![format!("localhost:{p}"), format!("127.0.0.1:{p}")]
    );
    assert!(
        o.saw("/session-1") && o.saw("/session-2") && o.saw("/ok-3"),
        "{r:?}"
    );
    assert!(!o.saw("/said-no-1") && !o.saw("/said-no-2"), "{r:?}");
    assert!(r[2].contains("refused") && r[3].contains("403"), "{r:?}");
    // "Yes" is for this session: nothing was saved.
    let saved = std::fs::read_to_string(root.join("config/config.toml")).unwrap();
    assert!(!saved.contains("localhost:"), "{saved}");

    // "Always" saves the exact host and port to the person's own config; the next session
    // (a new agent reading that file) is not asked.
    let o2 = Origin::start();
    let dir2 = crate::support::rein::world_dir();
    let root2 = dir2.path().canonicalize().unwrap();
    let config = "retry_backoff_ms = 10\n[sandbox.network]\nallow = []\n";
    let (asked, _, notices) = interactive(
        config,
        &[&curl("localhost", o2.port, "/always-1", false)],
        vec![Decision::Always],
        &root2,
    )
    .await;
    assert_eq!(asked.len(), 1);
    assert!(
        notices
            .iter()
            .any(|n| n.contains("saved to [sandbox.network] allow")),
        "{notices:?}"
    );
    let saved = std::fs::read_to_string(root2.join("config/config.toml")).unwrap();
    assert!(
        saved.contains(&format!("\"localhost:{}\"", o2.port)),
        "{saved}"
    );
    let (asked, r, _) = interactive(
        &saved,
        &[&curl("localhost", o2.port, "/always-2", false)],
        vec![],
        &root2,
    )
    .await;
    assert!(asked.is_empty() && o2.saw("/always-2"), "{asked:?} {r:?}");
}

/// The same question in the real binary's TUI (a pseudo-terminal): the approval dialog names
/// the host, `a` answers "always", the request goes through and the host is saved to the
/// person's own config.
#[test]
fn the_tui_asks_in_its_approval_dialog_and_always_is_saved() {
    use crate::support::pty::{idle, wait_until};
    if !ready() {
        return;
    }
    const WAIT: Duration = Duration::from_secs(30);
    let o = Origin::start();
    let (s, w) = world("[sandbox.network]\nallow = []\n");
    s.push(bash(&w, &curl("localhost", o.port, "/pty-always", false)))
        .push(Reply::text("fetched it"));
    let mut t = w.spawn_tui(120, 30);
    t.ready(WAIT);
    t.type_line("go");
    t.expect(
        "the command's approval",
        |s| s.contains("Allow bash?"),
        WAIT,
    );
    t.send_keys("y");
    let modal = t.expect(
        "the network question",
        |s| s.contains("Allow network to localhost?"),
        WAIT,
    );
    assert!(
        modal.contains(&format!("connect to localhost:{}", o.port))
            && modal.contains("for this session")
            && modal.contains("always, saved to"),
        "{modal}"
    );
    assert!(
        !o.saw("/pty-always"),
        "the request went out before the answer"
    );
    t.send_keys("a");
    t.expect(
        "the final answer",
        |s| s.contains("fetched it") && idle(s),
        WAIT,
    );
    wait_until("the request at the origin", WAIT, || o.saw("/pty-always"));
    let saved = std::fs::read_to_string(w.config_home.join("rein/config.toml")).unwrap();
    assert!(
        saved.contains(&format!("\"localhost:{}\"", o.port)),
        "{saved}"
    );
    t.quit_app(WAIT);
}

/// `rein sandbox -- CMD` (no agent, rein blocks while the command runs) serves the same list.
#[test]
fn rein_sandbox_serves_the_allow_list_too() {
    if !ready() {
        return;
    }
    let o = Origin::start();
    let (_s, w) = world(&format!(
        "[sandbox.network]\nallow = [\"localhost:{}\"]\n",
        o.port
    ));
    let mut c = w.cmd();
    c.args(["sandbox", "--", "bash", "-c"]).arg(format!(
        "{}; {}",
        curl("localhost", o.port, "/cli-allowed", false),
        curl("127.0.0.1", o.port, "/cli-refused", false)
    ));
    let out = run_with_timeout(c, Duration::from_secs(60));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(o.saw("/cli-allowed") && text.contains(&o.token), "{text}");
    assert!(!o.saw("/cli-refused") && text.contains("403"), "{text}");
    assert!(
        text.contains(&format!("network: only localhost:{}", o.port)),
        "{text}"
    );
}
