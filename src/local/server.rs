//! The local model's server: llama.cpp through xllamacpp, on a free loopback port, stopped
//! when rein exits. On Linux the child also dies with rein (`PR_SET_PDEATHSIG`), so a crash or
//! a `kill -9` of rein leaves no server behind.

use super::install::Installed;
use super::{CONTEXT, MODEL_ALIAS, Progress};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The server program (the same file evals/local-model.sh starts).
const SERVE_MODEL: &str = include_str!("../../evals/serve_model.py");

/// Qwen2.5's chat template with one fix: earlier calls' arguments are rendered as the object
/// they hold, not as a JSON string (which the model then imitates). The GGUF's own template is
/// what `/props` shows; `POST /apply-template` shows what a history becomes.
const CHAT_TEMPLATE: &str = include_str!("../../evals/qwen2.5-coder-chat-template.jinja");

/// How long the model may take to load before rein gives up.
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// A running local server; killed when dropped.
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// The model name it serves.
    pub model: String,
    _dir: Option<crate::launch::NeutralDir>,
}

impl LocalServer {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // SIGKILL at once: xllamacpp's server does not exit on SIGTERM (llama.cpp's handlers
        // replace Python's; evals/local-model.sh waits 10 s before its kill -9), and it keeps
        // nothing worth flushing. Its own process group (see `start`): the signal reaches
        // anything it started too.
        let group = -(self.child.id() as libc::pid_t);
        // SAFETY: signals a process group this struct started and has not reaped.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Starts the server for `installed` and waits until it answers `/health`. Call it from the
/// main thread: the child's death signal follows the thread that started it.
pub fn start(
    installed: &Installed,
    workspace: &Path,
    progress: &mut dyn Progress,
) -> Result<LocalServer, String> {
    let cache = &installed.paths.cache;
    let script = cache.join("serve_model.py");
    let template = cache.join("chat-template.jinja");
    for (path, content) in [(&script, SERVE_MODEL), (&template, CHAT_TEMPLATE)] {
        if std::fs::read_to_string(path).ok().as_deref() != Some(content) {
            std::fs::write(path, content)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    let mut attempt = 1;
    loop {
        match spawn_on(
            free_port()?,
            installed,
            workspace,
            &script,
            &template,
            progress,
        ) {
            // Another program took the port between `free_port` and the server's bind.
            Err(Start::PortTaken(_)) if attempt < PORT_ATTEMPTS => attempt += 1,
            Err(Start::PortTaken(e) | Start::Failed(e)) => return Err(e),
            Ok(server) => return Ok(server),
        }
    }
}

/// How often rein picks a new port when another program took the one it picked.
const PORT_ATTEMPTS: u32 = 3;

/// Why a start failed: the port was taken (worth another port), or anything else.
enum Start {
    PortTaken(String),
    Failed(String),
}

impl From<String> for Start {
    fn from(e: String) -> Self {
        Start::Failed(e)
    }
}

/// Starts the server on `port` and waits until it answers `/health`.
fn spawn_on(
    port: u16,
    installed: &Installed,
    workspace: &Path,
    script: &Path,
    template: &Path,
    progress: &mut dyn Progress,
) -> Result<LocalServer, Start> {
    let cache = &installed.paths.cache;
    let python = installed.paths.python();
    let mut prepared = crate::launch::prepare(&crate::launch::Request {
        program: &python.to_string_lossy(),
        cwd: None,
        env: &[],
        workspace,
        in_project: false,
        purpose: crate::launch::Purpose::Server,
    })?;
    let dir = prepared.take_dir();
    let log_path = cache.join("server.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot write {}: {e}", log_path.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", log_path.display()))?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let mut cmd = prepared.command();
    cmd.arg("-I")
        .arg(script)
        .arg("--model")
        .arg(&installed.gguf)
        .args(["--port", &port.to_string()])
        .args(["--threads", &threads.to_string()])
        .args(["--ctx", &CONTEXT.to_string()])
        .args(["--alias", MODEL_ALIAS])
        .arg("--chat-template")
        .arg(template)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    die_with_parent(&mut cmd);
    progress.line(&format!(
        "local model: starting {MODEL_ALIAS} on 127.0.0.1:{port} (log: {})",
        log_path.display()
    ));
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    let mut server = LocalServer {
        child,
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: MODEL_ALIAS.into(),
        _dir: dir,
    };
    wait_healthy(&mut server, port, &log_path)?;
    Ok(server)
}

/// Its own process group (Ctrl+C in the terminal reaches rein, which stops it in order), and
/// killed when rein dies, however it dies.
fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // rein died before the signal was armed: nobody would stop this server.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("rein exited"));
                }
            }
            let _ = parent;
            Ok(())
        });
    }
}

/// Polls `/health` until the model is loaded (llama.cpp answers 503 while loading).
fn wait_healthy(server: &mut LocalServer, port: u16, log: &Path) -> Result<(), Start> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            let end = tail(log, 20);
            let error = format!(
                "the local model server exited ({status}); the end of {}:\n{end}",
                log.display()
            );
            return Err(if port_was_taken(&end) {
                Start::PortTaken(error)
            } else {
                Start::Failed(error)
            });
        }
        if http_status(port, "/health") == Some(200) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Start::Failed(format!(
                "the local model server did not become ready in {} s; see {}",
                START_TIMEOUT.as_secs(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether a server's last words say it could not bind its port (Python's `OSError` and
/// llama.cpp's own message).
fn port_was_taken(log_tail: &str) -> bool {
    let lower = log_tail.to_ascii_lowercase();
    lower.contains("address already in use") || lower.contains("couldn't bind http server socket")
}

/// A port nothing listens on now (the server binds it a moment later).
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

/// The status code of `GET path` on the loopback port, if anything answers.
pub(super) fn http_status(port: u16, path: &str) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 64];
    let mut got = 0;
    while got < 12 {
        let n = s.read(&mut head[got..]).ok()?;
        if n == 0 {
            break;
        }
        got += n;
    }
    let line = std::str::from_utf8(&head[..got]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The last `n` lines of a log file (empty when it cannot be read).
pub(super) fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
