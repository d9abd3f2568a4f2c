//! `rein policy check` on arguments that hide a write or a secret read: tree's own option
//! clusters (each value letter takes the next word), option values the shell splits into
//! words, and `/proc` paths that climb with `..` or go through links. Each is rated with the
//! sandbox on and off; where it is cheap the command itself is run to show what it does.

use std::path::Path;
use std::process::Command;

/// A workspace and a home for `rein policy check`, with or without the sandbox.
struct World {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            home: tempfile::tempdir().expect("temp home"),
            ws: tempfile::tempdir().expect("temp workspace"),
        };
        std::fs::create_dir_all(w.ws.path().join("src")).expect("src dir");
        w
    }

    /// The verdict's exit status (0 allow, 1 ask, 2 deny) and line, with the sandbox on or off.
    fn check(&self, command: &str, sandbox_off: bool) -> (i32, String) {
        let config = self.home.path().join("config/rein");
        std::fs::create_dir_all(&config).expect("config dir");
        let toml = if sandbox_off {
            "[sandbox]\nmode = \"off\"\n"
        } else {
            ""
        };
        std::fs::write(config.join("config.toml"), toml).expect("config");
        crate::support::rein::policy_check(self.ws.path(), self.home.path(), &[command])
    }

    /// Asserts `command` gets exit status `want` with the sandbox on and off.
    fn expect(&self, command: &str, want: i32) {
        for off in [false, true] {
            let (code, out) = self.check(command, off);
            assert_eq!(code, want, "sandbox off: {off}: {command}: {out}");
        }
    }
}

/// Whether `program` runs here.
fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `script` with bash in a fresh directory (holding `f`) and lists what it holds after.
fn run_in_fresh_dir(script: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("f"), "b\na\n").expect("input file");
    std::fs::create_dir_all(dir.path().join("a/b")).expect("dirs");
    let _ = Command::new("bash")
        .args(["-c", script])
        .current_dir(dir.path())
        .output();
    let mut names: Vec<String> = walk(dir.path(), dir.path());
    names.sort();
    names
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(root, &p));
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out
}

/// tree gives every value letter of a cluster the next word (`-Lo 2 out.txt` is
/// `-L 2 -o out.txt`), so an `-o` hidden in a cluster writes a file: it asks.
#[test]
fn tree_clusters_with_a_hidden_o_ask() {
    let w = World::new();
    for command in [
        "tree -Lo 2 out.txt",
        "tree -Io x out.txt",
        "tree -PoH x out.txt y",
        "tree -Lo 1 /tmp/rein-tree-probe",
        "tree -L2o out.txt",
        "tree -aLo 1 out.txt src",
        "tree -L 2 -R",
        "tree -RL 2",
        "tree -e",
    ] {
        w.expect(command, 1);
    }
    for command in [
        "tree -L 2",
        "tree -a src",
        "tree -L 2 -I node_modules --dirsfirst",
        "tree -aL 2 src",
        "tree --charset=utf8 -d",
        "tree -- -o",
    ] {
        w.expect(command, 0);
    }
    if !have("tree") {
        crate::support::skips::skip("tree oracle", "tree is not installed");
        return;
    }
    // The real tree: a hidden -o writes; -R with -L writes 00Tree.html into directories;
    // the allowed forms write nothing.
    assert!(run_in_fresh_dir("tree -Lo 1 out.txt").contains(&"out.txt".to_string()));
    assert!(run_in_fresh_dir("tree -PoH x out.txt y").contains(&"out.txt".to_string()));
    let written = run_in_fresh_dir("tree -RL 2");
    assert!(
        written.iter().any(|n| n.ends_with("00Tree.html")),
        "{written:?}"
    );
    for quiet in ["tree -L 2", "tree -a a", "tree -aL 2 a", "tree -- -o"] {
        assert_eq!(run_in_fresh_dir(quiet), ["f"], "{quiet}");
    }
}

/// An unquoted value the shell splits turns its later words into options:
/// `timeout -k $x 5 ls` with `x="1 5 touch PWN"` runs touch, `sort -k $x f` writes.
#[test]
fn option_values_that_split_into_words_ask() {
    let w = World::new();
    for command in [
        "x=\"1 5 touch PWN\"; timeout -k $x 5 ls",
        "x=\"1 -o out\"; sort -k $x f",
        "x=\"1 -o out\"; sort -k$x f",
        "x=\"1 -o out\"; sort --key=$x f",
        "x=\"b -o out\"; sort a$x f",
        "x=\"A touch PWN\"; env -u $x ls",
        "x=\"2 -o out\"; tree -L $x",
        "sort -k \"$@\" f",
    ] {
        w.expect(command, 1);
    }
    for command in [
        "sort -k 2 f",
        "x=2; sort -k \"$x\" f",
        "sort -t, -k2 f",
        "rg -g '*.rs' x",
    ] {
        w.expect(command, 0);
    }
    // What bash makes of them.
    let made = run_in_fresh_dir("x=\"1 5 touch PWN\"; timeout -k $x 5 ls >/dev/null");
    assert!(made.contains(&"PWN".to_string()), "{made:?}");
    let made = run_in_fresh_dir("x=\"1 -o out\"; sort -k $x f");
    assert!(made.contains(&"out".to_string()), "{made:?}");
}

/// Under /proc only a few plain files are read unasked: `..` after a link (`fd`, `self`,
/// `cwd`) or a link to /proc in the workspace reaches a process's environment.
#[test]
fn proc_paths_that_climb_or_follow_links_ask() {
    let w = World::new();
    // A process of this user with a secret in its environment, as an agent's own would be.
    let mut victim = Command::new("sleep")
        .arg("30")
        .env("REIN_PROBE_TOKEN", "sk-probe-secret")
        .spawn()
        .expect("sleep runs");
    let pid = victim.id();
    // The oracle: this spelling reaches the environment for real (once sleep has started:
    // until its exec the child still has the test's environment).
    let mut shown = String::new();
    for _ in 0..100 {
        let climbed = std::fs::read(format!("/proc/{pid}/fd/../environ")).unwrap_or_default();
        shown = String::from_utf8_lossy(&climbed).into_owned();
        if shown.contains("sk-probe-secret") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::os::unix::fs::symlink(format!("/proc/{pid}/environ"), w.ws.path().join("envl"))
        .expect("link");
    std::os::unix::fs::symlink(format!("/proc/{pid}"), w.ws.path().join("pl")).expect("link");
    let asks = [
        format!("cat /proc/{pid}/fd/../environ"),
        format!("cat /proc/{pid}/net/../environ"),
        format!("cat /proc/{pid}/map_files/../environ"),
        "cat /proc/self/../self/environ".into(),
        "cat /proc/self/cwd/../.ssh/id_rsa".into(),
        format!("cat /dev/fd/../../{pid}/environ"),
        format!("cat ../../../../../proc/{pid}/fd/../environ"),
        format!("grep x --file=/proc/{pid}/fd/../environ f"),
        "cat /proc/kcore".into(),
        "head /proc/self/maps".into(),
    ];
    for command in &asks {
        w.expect(command, 1);
    }
    // A link the repository planted: the sandbox gives bash its own /proc, so it only
    // matters with the sandbox off.
    for command in ["cat envl", "cat pl/fd/../environ", "cat pl/environ"] {
        let (code, out) = w.check(command, true);
        assert_eq!(code, 1, "sandbox off: {command}: {out}");
    }
    for command in [
        "cat /proc/cpuinfo",
        "cat /proc/meminfo /proc/loadavg /proc/version",
        "cat /proc/self/status",
        "ls /proc",
        "cat /dev/null",
    ] {
        w.expect(command, 0);
    }
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(shown.contains("sk-probe-secret"), "{shown}");
}
