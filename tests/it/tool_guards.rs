//! Attacks on the file tools through the real `rein exec --yes` (so the tools, not the
//! approval, are what is tested): directories swapped for symlinks while writes run, and
//! secrets the model tries to read or that reach a tool result.

use crate::support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::rein::{TEST_KEY, World, assert_ok, tool_results};
use support::{Reply, ScriptedServer};

/// How long the real directory stays in place between two swaps, in turn.
const REAL_PHASES: [Duration; 5] = [
    Duration::from_micros(300),
    Duration::from_millis(1),
    Duration::from_millis(3),
    Duration::from_millis(10),
    Duration::from_millis(30),
];

/// Flips `ws/d` between a real directory and a symlink to `outside` until stopped, as fast
/// as it can; on stop, the real directory is back.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Swapper {
    fn start(ws: &Path, outside: &Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let (d, real, outside) = (ws.join("d"), ws.join("d.real"), outside.to_path_buf());
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut flips = 0;
            while !flag.load(Ordering::Relaxed) {
                if std::fs::rename(&d, &real).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, &d);
                    std::thread::sleep(Duration::from_micros(300));
                    let _ = std::fs::remove_file(&d);
                    let _ = std::fs::rename(&real, &d);
                    flips += 1;
                }
                // The real phase varies in length so that some whole writes fit inside one even
                // when CI is loaded and each write takes milliseconds; the short ones race.
                std::thread::sleep(REAL_PHASES[flips % REAL_PHASES.len()]);
            }
            flips
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    n.sort();
    n
}

#[test]
fn swapping_a_directory_for_a_symlink_never_lands_a_write_outside() {
    const ROUNDS: usize = 40;
    let s = ScriptedServer::openai();
    for i in 0..ROUNDS {
        // Alternate so every str_replace has something to find when the file is the real one.
        let (from, to) = if i % 2 == 0 {
            ("orig", "ORIG")
        } else {
            ("ORIG", "orig")
        };
        s.push(
            Reply::new()
                // Edits need a read first (the read races the swapper too).
                .call_with_id(&format!("r{i}"), "read_file", json!({"path": "d/f.txt"}))
                .call_with_id(
                    &format!("w{i}"),
                    "write_file",
                    json!({"path": format!("d/new{i}.txt"), "content": "payload"}),
                )
                .call_with_id(
                    &format!("e{i}"),
                    "str_replace",
                    json!({"path": "d/f.txt", "old_str": from, "new_str": to}),
                ),
        );
    }
    s.push(Reply::text("done"));
    let w = World::new(&s);
    w.write("d/f.txt", "orig\n");
    let outside: PathBuf = w.home.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("f.txt"), "orig\n").unwrap();

    let swapper = Swapper::start(&w.ws, &outside);
    let o = w.exec(&["--yes", "write in d"]);
    let flips = swapper.finish();
    assert_ok(&o);
    assert!(flips > 5, "the swapper barely ran ({flips} flips)");

    assert_eq!(
        names(&outside),
        ["f.txt"],
        "a write landed outside the workspace"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).unwrap(),
        "orig\n"
    );
    // The tools did run inside (the race was real, not every call refused).
    let written = names(&w.ws.join("d"))
        .iter()
        .filter(|n| n.starts_with("new"))
        .count();
    eprintln!("{flips} flips, {written} of {ROUNDS} writes landed");
    assert!(
        written > 0,
        "no write succeeded at all: {:?}",
        names(&w.ws.join("d"))
    );
    assert!(
        names(&w.ws.join("d")).iter().all(|n| !n.contains(".rein-")),
        "a temp file was left behind"
    );
}

#[test]
fn secret_places_are_refused_and_secret_values_are_masked() {
    let s = ScriptedServer::openai();
    s.push(
        Reply::new()
            .call_with_id("c1", "read_file", json!({"path": "~/.ssh/id_ed25519"}))
            .call_with_id("c2", "read_file", json!({"path": "~/.agents/env"}))
            .call_with_id(
                "c3",
                "read_file",
                json!({"path": "leak/.ssh-link/id_ed25519"}),
            )
            .call_with_id("c4", "read_file", json!({"path": "notes.txt"}))
            .call_with_id("c5", "bash", json!({"command": "cat notes.txt"}))
            // An edit of a file holding the key: the session keeps no copy of its contents.
            .call_with_id(
                "c6",
                "str_replace",
                json!({"path": "notes.txt", "old_str": "here", "new_str": "there"}),
            ),
    )
    .push(Reply::text("done"));
    let w = World::new(&s);
    // All five results in full in the next request.
    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nkeep_tool_results = 10\n");
    std::fs::create_dir_all(w.home.join(".ssh")).unwrap();
    std::fs::write(w.home.join(".ssh/id_ed25519"), "PRIVATE KEY MATERIAL").unwrap();
    std::fs::create_dir_all(w.home.join(".agents")).unwrap();
    std::fs::write(w.home.join(".agents/env"), "OTHER=PRIVATE KEY MATERIAL").unwrap();
    // A symlink inside the workspace to the secret directory is the same place.
    std::fs::create_dir_all(w.ws.join("leak")).unwrap();
    std::os::unix::fs::symlink(w.home.join(".ssh"), w.ws.join("leak/.ssh-link")).unwrap();
    w.write("notes.txt", &format!("the key is {TEST_KEY} here\n"));

    let o = w.exec(&["--yes", "look around"]);
    assert_ok(&o);
    let results = tool_results(&s.request(1));
    assert_eq!(results.len(), 6);
    for r in &results[..3] {
        assert!(
            r.content.contains("which bash cannot see either"),
            "{}: {}",
            r.id,
            r.content
        );
        assert!(!r.content.contains("PRIVATE KEY MATERIAL"), "{}", r.content);
    }
    for r in &results[3..5] {
        assert!(!r.content.contains(TEST_KEY), "{}: {}", r.id, r.content);
        assert!(
            r.content
                .contains("the key is [redacted: the API key] here"),
            "{}: {}",
            r.id,
            r.content
        );
    }
    for f in w.all_files() {
        if f.starts_with(&w.ws) || f.starts_with(&w.home) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(&f) {
            assert!(!text.contains(TEST_KEY), "key found in {}", f.display());
            assert!(
                !text.contains("PRIVATE KEY MATERIAL"),
                "secret in {}",
                f.display()
            );
        }
    }
}

/// `read_file` refuses what bash cannot see, decided by the same allow-list: files under
/// random names in home are refused by both, an allow-listed toolchain file is readable by
/// both.
#[test]
fn read_file_refuses_exactly_what_bash_cannot_see() {
    let r = || format!("{:016x}", rand::random::<u64>());
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let hidden = [
        format!(".{}/{}", r(), r()),
        r(),
        ".config/git/credentials".to_string(),
    ];
    let shown = format!(".cargo/bin/{}", r());
    let mut secrets = Vec::new();
    for rel in &hidden {
        let p = w.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let secret = format!("HIDDEN-{}", r());
        std::fs::write(&p, &secret).unwrap();
        secrets.push(secret);
    }
    let visible = format!("VISIBLE-{}", r());
    std::fs::create_dir_all(w.home.join(".cargo/bin")).unwrap();
    std::fs::write(w.home.join(&shown), &visible).unwrap();
    let mut reply = Reply::new();
    for (i, rel) in hidden.iter().chain([&shown]).enumerate() {
        reply = reply
            .call_with_id(
                &format!("r{i}"),
                "read_file",
                json!({"path": format!("~/{rel}")}),
            )
            .call_with_id(
                &format!("b{i}"),
                "bash",
                json!({"command": format!("cat ~/{rel}")}),
            );
    }
    s.push(reply).push(Reply::text("done"));
    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nkeep_tool_results = 10\n");
    let o = w.exec(&["--yes", "look around"]);
    assert_ok(&o);
    let results = tool_results(&s.request(1));
    assert_eq!(results.len(), 8);
    for r in &results[..6] {
        for secret in &secrets {
            assert!(!r.content.contains(secret), "{}: {}", r.id, r.content);
        }
        if r.id.starts_with('r') {
            assert!(
                r.content.contains("which bash cannot see either"),
                "{}: {}",
                r.id,
                r.content
            );
        }
    }
    for r in &results[6..] {
        assert!(r.content.contains(&visible), "{}: {}", r.id, r.content);
    }
}

/// A new script the model writes is executable (`chmod` is denied by default), a plain file is
/// not, and nothing written into `.git/` or a hook directory the person's git uses is, even
/// approved: there it could be a hook.
#[test]
fn new_scripts_are_executable_but_never_in_git() {
    use std::os::unix::fs::PermissionsExt;
    let s = ScriptedServer::start(rein::llm::ProviderKind::OpenAi);
    let script = "#!/bin/sh\necho hi\n";
    for (path, content) in [
        ("hello.sh", script),
        ("notes.txt", "plain\n"),
        (".git/hooks/pre-commit", script),
        (".githooks/pre-commit", script),
    ] {
        s.push(Reply::tool_call(
            "write_file",
            json!({"path": path, "content": content}),
        ));
    }
    s.push(Reply::text("Done."));
    let w = World::new(&s);
    std::fs::create_dir_all(w.ws.join(".git/hooks")).unwrap();
    // The person's git takes its hooks from `.githooks` (`core.hooksPath`).
    std::fs::write(
        w.ws.join(".git/config"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    assert_ok(&w.exec(&["--yes", "write them"]));
    let exec_bits = |p: &str| {
        std::fs::metadata(w.ws.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
    };
    assert_ne!(exec_bits("hello.sh"), 0, "a new script runs");
    assert_eq!(exec_bits("notes.txt"), 0);
    assert_eq!(
        exec_bits(".git/hooks/pre-commit"),
        0,
        "no executable hook, approved or not"
    );
    assert_eq!(
        exec_bits(".githooks/pre-commit"),
        0,
        "no executable hook where core.hooksPath points either"
    );
}
