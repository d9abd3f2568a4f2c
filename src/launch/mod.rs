//! One gate for every process rein starts (bash, MCP servers, hooks, editors, the local model,
//! any helper): it decides the child's environment (an allow-list, `env`), its working directory
//! (never the workspace unless the person chose that for this project) and its confinement.
//! docs/sandbox.md lists every caller and the rule each follows.
//!
//! The rule: no process resolves code or configuration from the workspace unless the person
//! said so for this project. Interpreters and package runners read their cwd (`python3 -m`
//! imports from it, `npx` prefers its `node_modules`, `uv` reads its `pyproject.toml`, npm its
//! `.npmrc`, deno its `deno.json`, `cargo run`/`go run` build it), so a child starts in a fresh,
//! private, empty directory outside the workspace; its program is found on the absolute `PATH`
//! entries outside the workspace, and its `PATH` keeps only those. A working directory in the
//! workspace, a relative program or one inside the workspace is a project decision
//! ([`project_decision`]): the caller starts it only once the project's trust approved it.

pub mod env;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a child is for; decides the variables it gets beyond the allow-list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// An MCP stdio server: the allow-list and its entry's own `env`, nothing else.
    Server,
    /// The person's editor on the terminal (Ctrl+G): also what reaches their display and
    /// terminal, which a graphical or terminal-aware editor needs.
    Editor,
    /// A hook of the person's own config that they run outside the sandbox: the allow-list
    /// and the project's path, nothing else.
    Hook,
    /// The person's `notify` program: like the editor, it needs their display and session bus.
    Notify,
}

/// Variables an editor also gets: how to reach the person's display, session bus and terminal
/// multiplexer, and their own editor settings. None holds a credential.
pub const EDITOR_PASS: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "VISUAL",
    "EDITOR",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "VSCODE_IPC_HOOK_CLI",
    "TMUX",
    "TMUX_PANE",
    "COLORFGBG",
    "VIMINIT",
    "EXINIT",
];

/// What a caller asks to start.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The program as configured (expanded): a bare name is looked up on `PATH`.
    pub program: &'a str,
    /// The working directory as configured (relative: to the workspace), if any.
    pub cwd: Option<&'a Path>,
    /// The child's own variables (the person's `env` for a server), on top of the allow-list.
    pub env: &'a [(String, String)],
    /// The workspace rein runs in.
    pub workspace: &'a Path,
    /// Whether the person approved this child's project decision for this project (trust).
    /// Then a relative program and the default working directory mean the workspace.
    pub in_project: bool,
    /// What it is for.
    pub purpose: Purpose,
}

/// Where a child runs and with what: built by [`prepare`].
#[derive(Debug)]
pub struct Prepared {
    /// The program, as an absolute path.
    pub program: PathBuf,
    /// The working directory.
    pub dir: PathBuf,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The neutral directory, when `dir` is one: removed when this is dropped.
    neutral: Option<NeutralDir>,
    /// Whether the child gets a session of its own (all but the editor, which needs the
    /// terminal).
    detach: bool,
}

impl Prepared {
    /// A command for the program with the environment and directory set (no arguments yet).
    pub fn command(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.program);
        cmd.env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(&self.dir);
        #[cfg(unix)]
        if self.detach {
            use std::os::unix::process::CommandExt;
            // A session of its own: no controlling terminal, so `/dev/tty` cannot reach the
            // person's screen or keys, and a process group of its own (the terminal's Ctrl+C
            // is rein's to handle). Callers must not set a process group as well.
            // SAFETY: setsid is async-signal-safe and touches only the child.
            unsafe {
                cmd.pre_exec(|| match libc::setsid() {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                })
            };
        }
        cmd
    }

    /// Keeps the neutral directory alive (the caller holds it as long as the child runs).
    pub fn take_dir(&mut self) -> Option<NeutralDir> {
        self.neutral.take()
    }
}

/// Why starting `program` in `cwd` would use the workspace, if it would: the person must
/// approve that for this project. `None` means it runs outside the workspace by construction.
pub fn project_decision(program: &str, cwd: Option<&Path>, workspace: &Path) -> Option<String> {
    let ws = canonical(workspace);
    if let Some(dir) = cwd {
        let dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            workspace.join(dir)
        };
        if inside(&dir, &ws) {
            return Some(format!(
                "its working directory {} is in this project",
                dir.display()
            ));
        }
    }
    let path = Path::new(program);
    if program.contains('/') && !path.is_absolute() {
        return Some(format!(
            "its command {program} is a path relative to this project"
        ));
    }
    if path.is_absolute() && inside(path, &ws) {
        return Some(format!("its command {program} is a file in this project"));
    }
    None
}

/// Decides where and how `req` runs. Errors are one sentence for the person.
pub fn prepare(req: &Request) -> Result<Prepared, String> {
    if !req.in_project
        && let Some(why) = project_decision(req.program, req.cwd, req.workspace)
    {
        return Err(format!(
            "not started: {why}, which this project's trust has not approved"
        ));
    }
    let (dir, neutral) = match req.cwd {
        Some(d) if d.is_absolute() => (d.to_path_buf(), None),
        Some(d) => (req.workspace.join(d), None),
        None if req.in_project => (req.workspace.to_path_buf(), None),
        None => {
            let n = NeutralDir::create(req.workspace)?;
            (n.path().to_path_buf(), Some(n))
        }
    };
    let path_var = child_path(std::env::var_os("PATH"), req.workspace);
    let program = resolve_program(req, &dir, &path_var)?;
    let pass: &[&str] = match req.purpose {
        Purpose::Server | Purpose::Hook => &[],
        Purpose::Editor | Purpose::Notify => EDITOR_PASS,
    };
    let pass: Vec<String> = pass.iter().map(|s| s.to_string()).collect();
    let mut env: Vec<(OsString, OsString)> = env::filter(std::env::vars_os(), &pass)
        .into_iter()
        .filter(|(k, _)| k != "PATH")
        .collect();
    env.push(("PATH".into(), path_var));
    for (k, v) in req.env {
        env.retain(|(name, _)| name != k.as_str());
        env.push((k.into(), v.into()));
    }
    Ok(Prepared {
        program,
        dir,
        env,
        neutral,
        detach: req.purpose != Purpose::Editor,
    })
}

/// The program as an absolute path: a bare name from the trusted `PATH` entries, a path
/// relative to `dir` only for an approved project decision (checked by the caller).
fn resolve_program(req: &Request, dir: &Path, path_var: &OsString) -> Result<PathBuf, String> {
    let program = if req.program.contains('/') {
        let p = Path::new(req.program);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    } else {
        let untrusted = [req.workspace.to_path_buf()];
        crate::sandbox::trusted_program(req.program, Some(path_var), &untrusted).ok_or_else(
            || {
                format!(
                    "cannot find {} on PATH (directories inside the project and relative \
                     entries are not searched); give its absolute path",
                    req.program
                )
            },
        )?
    };
    // A link from outside into the workspace is still the workspace's code.
    if !req.in_project && inside(&program, &canonical(req.workspace)) {
        return Err(format!(
            "not started: {} leads into this project, which this project's trust has not \
             approved",
            program.display()
        ));
    }
    Ok(program)
}

/// rein's `PATH` without relative entries (they mean the child's cwd) and without directories
/// inside the workspace, so what the child starts by name is not the repository's either.
pub fn child_path(path: Option<OsString>, workspace: &Path) -> OsString {
    let ws = canonical(workspace);
    let kept: Vec<PathBuf> = path
        .as_deref()
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .filter(|d| d.is_absolute() && !inside(d, &ws))
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// Whether `path` (resolved through links where it exists) is `ws` or under it.
fn inside(path: &Path, ws: &Path) -> bool {
    canonical_lenient(path).starts_with(ws) || path.starts_with(ws)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The canonical form of the longest existing ancestor, with the rest appended (a working
/// directory that does not exist yet is still judged by where it would be).
fn canonical_lenient(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&cur) {
            return rest.iter().rev().fold(c, |acc, part| acc.join(part));
        }
        match (cur.file_name().map(|f| f.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// A fresh, private (0700), empty directory outside the workspace, removed when dropped.
#[derive(Debug)]
pub struct NeutralDir {
    path: PathBuf,
}

impl NeutralDir {
    /// Creates one under the first of the person's runtime dir, rein's cache dir and the temp
    /// dir that is not inside `workspace`. Under the person's own directories first: a shared
    /// `/tmp` may hold another user's `pyproject.toml` or `.npmrc`, which tools look for in
    /// parent directories too.
    pub fn create(workspace: &Path) -> Result<NeutralDir, String> {
        let ws = canonical(workspace);
        let base = directories::BaseDirs::new();
        let candidates = base
            .as_ref()
            .and_then(|b| b.runtime_dir().map(|d| d.join("rein")))
            .into_iter()
            .chain(
                base.as_ref()
                    .map(|b| b.cache_dir().join("rein").join("run")),
            )
            .chain(std::iter::once(std::env::temp_dir()));
        for dir in candidates.filter(|d| d.is_absolute()) {
            if private_dir_all(&dir).is_err() {
                continue;
            }
            let dir = canonical(&dir);
            if dir.starts_with(&ws) {
                continue;
            }
            let path = dir.join(format!("rein-run-{}", crate::agent::new_session_id()));
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            if builder.create(&path).is_ok() {
                return Ok(NeutralDir { path });
            }
        }
        Err("there is no directory outside the project to start it in".into())
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for NeutralDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Creates `dir` and its missing parents, the last one only its owner can enter.
fn private_dir_all(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
