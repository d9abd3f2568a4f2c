//! Recognising, in a failed command's output, that the sandbox blocked it, so the tool result
//! can say so (and how the user can allow it) instead of leaving the model to guess.
//!
//! Conservative on purpose: a note appears only when the command failed and the output holds
//! a typical message for a denied write to a path the sandbox keeps read-only, or (with the
//! network off) a typical network failure.

use super::Sandbox;
use super::SandboxMode;
use std::path::{Component, Path, PathBuf};

const WRITE_DENIED: [&str; 4] = [
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "EROFS",
];

/// Messages of resolvers, curl, git, cargo, pip, npm, Go and Python when there is no network.
const NETWORK_FAILED: [&str; 15] = [
    "Could not resolve host",
    "Couldn't resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "failed to lookup address",
    "No address associated with hostname",
    "getaddrinfo",
    "EAI_AGAIN",
    "Network is unreachable",
    "Connection refused",
    "Failed to connect to",
    "Couldn't connect to server",
    "Failed to establish a new connection",
    "socket: Permission denied",
    "socket: permission denied",
];

/// What a command reads when it looks for a place the sandbox hides with namespaces (it is
/// absent there). In the fallback the read rules answer "Permission denied", which a refused
/// write answers too: those lines go to the write checks.
const NOT_SEEN: &str = "No such file or directory";
const NOT_READABLE: &str = "Permission denied";
/// Words of the messages of a refused write (coreutils, shells, Python's `open(..., "w")`
/// says only "Permission denied" and is taken as a read).
const WRITING: [&str; 8] = [
    "cannot touch",
    "cannot create",
    "cannot remove",
    "cannot move",
    "cannot overwrite",
    "for writing",
    "cannot make",
    "cannot change",
];

enum Blocked {
    Network,
    Protected(String),
    Outside(String),
    ReadOnlyWorkspace(String),
    /// A place bash cannot see (by its absolute path; whether it exists is not looked at,
    /// so the note tells nothing about the person's files).
    Hidden(String),
}

/// Whether `raw`, an absolute path a command named, lies where the sandbox hides it.
fn hides(sb: &Sandbox, raw: &str) -> bool {
    let path = Path::new(raw);
    path.is_absolute() && sb.secrets.is_secret_path(&normalize(path))
}

pub(super) fn explain(sb: &Sandbox, output: &str, exit_code: Option<i32>) -> Option<String> {
    if sb.mode == SandboxMode::Off || exit_code == Some(0) {
        return None;
    }
    let roots = Roots::new(sb);
    let mut found = None;
    for line in output.lines() {
        if line.contains(NOT_SEEN)
            && let Some(p) = paths_in(line).into_iter().find(|p| hides(sb, p))
        {
            found = Some(Blocked::Hidden(p));
            break;
        }
        // A read Landlock refused in a hidden place (`cat: /srv/x: Permission denied`): the
        // place is hidden, which says more than "a write was blocked".
        if line.contains(NOT_READABLE)
            && !WRITING.iter().any(|w| line.contains(w))
            && let Some(p) = paths_in(line).into_iter().find(|p| hides(sb, p))
        {
            found = Some(Blocked::Hidden(p));
            break;
        }
        if WRITE_DENIED.iter().any(|m| line.contains(m)) {
            let erofs = line.contains("Read-only file system");
            if let Some(b) = paths_in(line)
                .into_iter()
                .find_map(|p| roots.classify(sb.mode, &p, erofs))
            {
                found = Some(b);
                break;
            }
            // Read-only mounts are how the sandbox refuses writes, so EROFS alone points at it.
            if erofs {
                found.get_or_insert(match sb.mode {
                    SandboxMode::ReadOnly => Blocked::ReadOnlyWorkspace("a file".into()),
                    _ => Blocked::Outside("a path outside the workspace".into()),
                });
            }
            // A socket refused by the network filter reads "Permission denied" without a path.
            if !sb.network && line.contains("Permission denied") && mentions_network(output) {
                found.get_or_insert(Blocked::Network);
            }
        }
        if !sb.network && NETWORK_FAILED.iter().any(|m| line.contains(m)) {
            found.get_or_insert(Blocked::Network);
        }
    }
    Some(match found? {
        Blocked::Network => network_note(sb),
        Blocked::Hidden(p) => format!(
            "[sandbox] {p} is hidden from bash: outside the workspace, bash reads the system \
             (/usr, /etc, /opt, ...), toolchains and build caches in home, and in /tmp, /var, \
             /run, /home, /srv, /mnt and the other top-level directories only the workspace and \
             $TMPDIR. Work without it, or ask the user to add the place to `[sandbox] read_allow` \
             in their config."
        ),
        Blocked::Protected(p) => format!(
            "[sandbox] {p} is read-only in the sandbox: git's configuration and hooks (everything in .git \
             but objects, refs, logs, the index, HEAD and git's other state files, nested repositories' .git, \
             the hook directories core.hooksPath names and the files git's configuration includes) and .rein/ \
             are protected. \
             Ask the user to make this change themselves."
        ),
        Blocked::Outside(p) => format!(
            "[sandbox] The sandbox blocked a write to {p}: bash may only write inside the workspace and $TMPDIR. \
             Write inside the workspace instead, or ask the user to set `sandbox = \"off\"` in config.toml if \
             this write is really needed."
        ),
        Blocked::ReadOnlyWorkspace(p) => format!(
            "[sandbox] The sandbox is read-only, so the write to {p} was blocked; bash may only write to $TMPDIR. \
             Ask the user to set `sandbox = \"workspace-write\"` in config.toml if files must change."
        ),
    })
}

/// What to tell the model about a network failure, by what network the sandbox gives.
fn network_note(sb: &Sandbox) -> String {
    match sb.network_access() {
        super::NetworkAccess::AllowList => "[sandbox] Bash reaches the network only through rein's proxy \
             (HTTP_PROXY/HTTPS_PROXY are set), and only the hosts in [sandbox.network] allow; a tool that \
             ignores the proxy variables, or a host not on the list, gets no connection. Do not try to get \
             around it; if a host is really needed, ask the user to add it to [sandbox.network] allow in \
             their config.toml."
            .to_string(),
        super::NetworkAccess::AllowListUnavailable => "[sandbox] This command seems to need the network. \
             The user's network allow-list needs network namespaces, which this machine does not offer, \
             so bash has no network at all. Do not try to get around it; tell the user."
            .to_string(),
        _ => "[sandbox] This command seems to need the network, which the sandbox blocks for bash. \
             Do not try to get around it; if the network is really needed, ask the user to allow it with \
             `network = true` under `[sandbox]` in config.toml."
            .to_string(),
    }
}

fn mentions_network(output: &str) -> bool {
    let lower = output.to_lowercase();
    ["socket", "connect", "http", "urlopen"]
        .iter()
        .any(|w| lower.contains(w))
}

/// The path a line of output says was refused: the word just before its "Permission denied"
/// (or another denial), when that word is a path (`bash: line 1: out.txt: Permission denied`).
pub(crate) fn refused_path(line: &str) -> Option<&str> {
    let at = WRITE_DENIED.iter().filter_map(|m| line.find(m)).min()?;
    let before = line[..at].trim_end().trim_end_matches(':');
    let word = before.rsplit([' ', '\t']).next().unwrap_or("");
    let word = word.trim_matches(|c: char| "'\"‘’`".contains(c));
    let path_like = |c: char| c.is_alphanumeric() || "._-/~+@".contains(c);
    (!word.is_empty() && word.chars().all(path_like)).then_some(word)
}

/// Candidate paths in one line of output: the word just before the error when it is one
/// (`bash: line 1: out.txt: Permission denied`; then only it: the words before it name the
/// program, as in `/usr/bin/bash: line 1: ./hello.sh: Permission denied`, where a script
/// that is not executable was refused), else quoted strings and words that contain a `/`.
fn paths_in(line: &str) -> Vec<String> {
    if let Some(word) = refused_path(line) {
        return vec![word.to_string()];
    }
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = &after[..end];
            if !quoted.is_empty() && !quoted.contains(char::is_whitespace) {
                out.push(quoted.to_string());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c: char| "'\"‘’`:,;()[]".contains(c));
        if word.contains('/') && !word.contains("://") {
            out.push(word.to_string());
        }
    }
    out
}

/// The places the sandbox treats differently, resolved once per explanation.
struct Roots {
    workspace: PathBuf,
    /// The temp dir and any other writable directories.
    writable: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Roots {
    fn new(sb: &Sandbox) -> Roots {
        let real = |p: &Path| super::paths::canonicalize(p).unwrap_or_else(|_| normalize(p));
        Roots {
            workspace: real(&sb.workspace),
            writable: sb.writable_dirs().map(|d| real(d)).collect(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// What blocked a write to `raw`, if the sandbox did. `erofs`: the error was "Read-only
    /// file system", which inside the workspace only the sandbox's read-only mounts produce.
    fn classify(&self, mode: SandboxMode, raw: &str, erofs: bool) -> Option<Blocked> {
        let path = if let Some(rest) = raw.strip_prefix("~/") {
            self.home.as_ref()?.join(rest)
        } else {
            // Relative paths are taken relative to the workspace, where commands start.
            self.workspace.join(raw)
        };
        let path = normalize(&path);
        // Special files the sandbox leaves writable are not its doing.
        if path.starts_with("/dev")
            || path.starts_with("/proc")
            || self.writable.iter().any(|d| path.starts_with(d))
        {
            return None;
        }
        if path.starts_with(&self.workspace) {
            // Inside the workspace only the sandbox's read-only binds answer EROFS: in .git
            // everything but the data and state files git writes, .rein, nested repositories,
            // hook directories and included configuration files.
            return match mode {
                SandboxMode::ReadOnly => Some(Blocked::ReadOnlyWorkspace(raw.to_string())),
                _ if erofs => Some(Blocked::Protected(raw.to_string())),
                _ => None,
            };
        }
        // Outside: only if rein itself could have written there (otherwise plain file
        // permissions refused it, sandbox or not).
        writable_by_rein(&path).then(|| Blocked::Outside(raw.to_string()))
    }
}

/// Whether rein (unconfined) may write `path`, or create it in its nearest existing parent.
fn writable_by_rein(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(existing) = path.ancestors().find(|p| p.symlink_metadata().is_ok()) else {
        return false;
    };
    let Ok(c) = std::ffi::CString::new(existing.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Removes `.` and `..` lexically (the path may not exist).
pub(super) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace `proj` with a look-alike sibling and a home next to it, all writable.
    struct Layout {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["proj", "proj-evil", "home", "tmp"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        Layout { _dir: dir, root }
    }

    impl Layout {
        fn sandbox(&self, mode: SandboxMode, network: bool) -> Sandbox {
            Sandbox::without_landlock(mode, network, self.root.join("proj"), self.root.join("tmp"))
        }
    }

    #[test]
    fn a_denied_write_outside_names_the_path_and_the_config_key() {
        let l = layout();
        let sb = l.sandbox(SandboxMode::WorkspaceWrite, false);
        let r = l.root.display();
        for out in [
            format!("touch: cannot touch '{r}/home/evil': Permission denied"),
            format!("bash: {r}/home/x: Read-only file system"),
            format!("mkdir: cannot create directory ‘{r}/proj-evil/x’: Permission denied"),
            "sh: 1: cannot create ../proj-evil/a: Permission denied".to_string(),
        ] {
            let note = sb
                .explain_failure(&out, Some(1))
                .unwrap_or_else(|| panic!("no note for {out}"));
            assert!(
                note.contains("sandbox = \"off\"") && note.contains("blocked a write to"),
                "{note}"
            );
        }
        // A bare "Permission denied" on a place the sandbox hides (this layout lies in `/tmp`)
        // reads as a refused read: the note names the hidden place.
        let out = format!("PermissionError: [Errno 13] Permission denied: '{r}/home/.bashrc'");
        let note = sb.explain_failure(&out, Some(1)).unwrap();
        assert!(
            note.contains("hidden from bash") && note.contains("read_allow"),
            "{note}"
        );
    }

    #[test]
    fn a_place_bash_cannot_see_is_named_with_the_config_key() {
        let l = layout();
        let sb = l.sandbox(SandboxMode::WorkspaceWrite, false).with_secrets(
            crate::sandbox::Secrets::resolve(
                Some(&l.root.join("home")),
                Some(&l.root.join("proj")),
                &l.root.join("home/.config/rein"),
                &l.root.join("home/.local/share/rein"),
                &Default::default(),
            ),
        );
        let r = l.root.display();
        for out in [
            format!("cat: {r}/home/.netrc: No such file or directory"),
            format!(
                "python3: can't open file '{r}/proj-evil/x.py': [Errno 2] No such file or directory"
            ),
        ] {
            let note = sb
                .explain_failure(&out, Some(1))
                .unwrap_or_else(|| panic!("no note for {out}"));
            assert!(
                note.contains("hidden from bash") && note.contains("read_allow"),
                "{note}"
            );
        }
        // A missing file in the workspace is not the sandbox's doing.
        let out = format!("cat: {r}/proj/missing.txt: No such file or directory");
        assert!(sb.explain_failure(&out, Some(1)).is_none());
        assert!(
            sb.explain_failure("cat: nope.txt: No such file or directory", Some(1))
                .is_none()
        );
    }

    #[test]
    fn a_script_refused_for_want_of_its_execute_bit_is_not_the_sandbox() {
        let l = layout();
        let sb = l.sandbox(SandboxMode::WorkspaceWrite, false);
        let r = l.root.display();
        // The program's own path comes first on the line; the file refused is the workspace's.
        for out in [
            "/usr/bin/bash: line 1: ./hello.sh: Permission denied".to_string(),
            format!("{r}/home/bin/bash: line 1: ./hello.sh: Permission denied"),
        ] {
            assert_eq!(sb.explain_failure(&out, Some(126)), None, "{out}");
        }
    }

    #[test]
    fn protected_paths_get_their_own_note() {
        let sb = layout().sandbox(SandboxMode::WorkspaceWrite, false);
        let out = "error: could not lock config file .git/config: Read-only file system";
        assert!(
            sb.explain_failure(out, Some(255))
                .unwrap()
                .contains("protected")
        );
        for out in [
            "bash: line 1: .git/hooks/pre-commit: Read-only file system",
            "bash: line 1: .githooks/pre-commit: Read-only file system",
            "error: could not lock config file vendor/lib/.git/config: Read-only file system",
        ] {
            let note = sb.explain_failure(out, Some(1)).unwrap();
            assert!(
                note.contains("protected") && !note.contains("outside"),
                "{note}"
            );
        }
    }

    #[test]
    fn read_only_mode_mentions_workspace_write() {
        let sb = layout().sandbox(SandboxMode::ReadOnly, false);
        for out in [
            "touch: cannot touch 'src/new.rs': Read-only file system",
            "bash: line 1: new: Read-only file system",
        ] {
            let note = sb.explain_failure(out, Some(1)).unwrap();
            assert!(note.contains("workspace-write"), "{note}");
        }
    }

    #[test]
    fn network_failures_are_explained_only_with_the_network_off() {
        let l = layout();
        let off = l.sandbox(SandboxMode::WorkspaceWrite, false);
        let on = l.sandbox(SandboxMode::WorkspaceWrite, true);
        for out in [
            "curl: (6) Could not resolve host: example.com",
            "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            "PermissionError: [Errno 13] Permission denied\n  in socket.create_connection",
            "bash: socket: Permission denied",
        ] {
            assert!(
                off.explain_failure(out, Some(1))
                    .unwrap()
                    .contains("network = true"),
                "{out}"
            );
            assert_eq!(on.explain_failure(out, Some(1)), None, "{out}");
        }
    }

    #[test]
    fn with_an_allow_list_the_note_names_the_list_not_the_whole_network() {
        let l = layout();
        let list = crate::netproxy::AllowList::parse(&["pypi.org".into()], &[]).unwrap();
        let proxy = std::sync::Arc::new(crate::netproxy::NetProxy::new(list, None));
        let sb = l
            .sandbox(SandboxMode::WorkspaceWrite, false)
            .with_network_proxy(proxy);
        let note = sb
            .explain_failure("curl: (6) Could not resolve host: example.com", Some(6))
            .unwrap();
        assert!(
            note.contains("allow-list") || note.contains("[sandbox.network] allow"),
            "{note}"
        );
        assert!(!note.contains("network = true"), "{note}");
    }

    #[test]
    fn stays_quiet_when_nothing_points_at_the_sandbox() {
        let l = layout();
        let sb = l.sandbox(SandboxMode::WorkspaceWrite, false);
        let tmp = l.root.join("tmp/x");
        // Succeeded; not allowed to run (inside the workspace); temp; unrelated errors.
        assert_eq!(
            sb.explain_failure("curl: (6) Could not resolve host: x", Some(0)),
            None
        );
        assert_eq!(
            sb.explain_failure("bash: ./run.sh: Permission denied", Some(126)),
            None
        );
        assert_eq!(
            sb.explain_failure("bash: .git/hooks/x: Permission denied", Some(1)),
            None
        );
        let out = format!("cp: cannot create '{}': Permission denied", tmp.display());
        assert_eq!(sb.explain_failure(&out, Some(1)), None);
        assert_eq!(
            sb.explain_failure(
                "error[E0425]: cannot find value `x` in src/main.rs",
                Some(101)
            ),
            None
        );
        let off = Sandbox::off(l.root.join("proj"), l.root.join("tmp"));
        let out = format!(
            "touch: cannot touch '{}/home/x': Permission denied",
            l.root.display()
        );
        assert_eq!(off.explain_failure(&out, Some(1)), None);
    }
}
