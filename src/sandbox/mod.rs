//! OS-level confinement for bash (Linux: Landlock, a seccomp network filter, private mount and
//! PID namespaces) and path checks for file tools.
//!
//! The confinement is applied in the child between fork and exec, so rein itself is never
//! confined and every process the command starts inherits it. Between rein and the command
//! sits a supervisor of rein's that makes sure nothing the command starts outlives it. See
//! `docs/sandbox.md`.

#[cfg(target_os = "linux")]
mod command;
mod explain;
pub(crate) use explain::refused_path;
pub mod git;
mod gitlinks;
#[cfg(target_os = "linux")]
mod gitview;
pub mod home;
mod hooks;
mod identity;
#[cfg(target_os = "linux")]
mod idmap;
#[cfg(target_os = "linux")]
mod linux;
mod madegit;
#[cfg(target_os = "linux")]
mod mounts;
pub mod nested;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod park;
pub mod paths;
mod private;
#[cfg(target_os = "linux")]
mod readable;
mod run;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod secrets;
#[cfg(target_os = "linux")]
mod slice;
#[cfg(target_os = "linux")]
mod spare;
mod spawn;
mod stamp;
#[cfg(target_os = "linux")]
mod supervise;
mod tripwire;
mod trusted;
#[cfg(target_os = "linux")]
pub mod zygote;

pub use run::{ChildIo, Finished, Stderr, Supervised, Supervision};

/// What a child runs before exec to confine itself.
#[cfg(target_os = "linux")]
type Confinement = linux::Confinement;
#[cfg(not(target_os = "linux"))]
type Confinement = ();
pub use secrets::{SecretSettings, Secrets, is_secret_env_name, may_hold_secret};
pub use trusted::trusted_program;

mod mode;
pub use mode::SandboxMode;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment variable that simulates a kernel without Landlock (for tests of the
/// unavailable path); read once, when a [`Sandbox`] is built.
pub const UNAVAILABLE_SWITCH: &str = "REIN_SANDBOX_UNAVAILABLE";

/// The environment variable that forces the fallback without namespaces (Landlock, seccomp and
/// the tripwire only), as on kernels that restrict user namespaces; read when a [`Sandbox`] is
/// built.
pub const FALLBACK_SWITCH: &str = "REIN_SANDBOX_FALLBACK";

/// Whether bash commands are really confined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxStatus {
    /// The kernel enforces the configured mode on every bash command.
    Enforced,
    /// The kernel cannot enforce the configured mode (the reason says why). rein must say so
    /// at start and ask before every bash command; commands still get whatever confinement
    /// the kernel does offer.
    Unavailable(String),
    /// The user turned the sandbox off (`sandbox = "off"`).
    Off,
}

impl SandboxStatus {
    /// What this status means for the permission policy's verdicts.
    pub fn confinement(&self) -> crate::policy::Confinement {
        match self {
            SandboxStatus::Enforced => crate::policy::Confinement::Sandboxed,
            SandboxStatus::Off => crate::policy::Confinement::Off,
            SandboxStatus::Unavailable(_) => crate::policy::Confinement::Unavailable,
        }
    }

    /// Whether the configured confinement is fully enforced.
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced)
    }
}

/// How the confinement is built on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Private mount and PID namespaces plus Landlock and seccomp.
    Namespaces,
    /// Landlock and seccomp only (no namespaces here, or forced): what mounts would protect in
    /// the workspace is checked and restored after each command instead.
    LandlockOnly,
}

/// What network a command gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkAccess {
    /// None at all.
    Off,
    /// Only hosts of `[sandbox.network] allow`, through rein's proxy, from a network namespace
    /// of its own.
    AllowList,
    /// The allow-list is configured but this machine has no network namespaces for it: no
    /// network at all (never a weaker, port-only rule).
    AllowListUnavailable,
    /// All of it (`network = true`).
    Full,
}

/// How child processes of the bash tool are confined.
#[derive(Clone, Debug)]
pub struct Sandbox {
    /// Requested mode.
    pub mode: SandboxMode,
    /// Whether the network is allowed.
    pub network: bool,
    /// The workspace (writable in workspace-write mode).
    pub workspace: PathBuf,
    /// The session temp dir (always writable).
    pub temp_dir: PathBuf,
    /// More directories bash may write (see [`Sandbox::with_writable_dirs`]).
    extra_writable: Vec<PathBuf>,
    status: SandboxStatus,
    mechanism: Mechanism,
    /// Set by the test switch: behave as if the kernel had no Landlock.
    simulate_no_landlock: bool,
    /// The kernel refused the namespaces (not the test switch): commands get the fallback.
    namespaces_refused: bool,
    /// The network allow-list's proxy (`[sandbox.network]`), when configured.
    proxy: Option<Arc<crate::netproxy::NetProxy>>,
    secrets: Arc<Secrets>,
    /// rein's own directory for per-command views of `.git` (created on first use).
    private: Arc<private::PrivateDir>,
    /// The workspace's nested `.git` entries, found before the first command.
    nested_git: Arc<nested::NestedScan>,
    /// The gitlinks of the index files the check after each command read.
    gitlinks: Arc<gitlinks::IndexCache>,
    /// The home view as commands get it, built on the first command.
    #[cfg(target_os = "linux")]
    home: Arc<std::sync::OnceLock<Arc<command::CommandHome>>>,
    /// The Landlock ruleset built ahead for the next command.
    #[cfg(target_os = "linux")]
    spare: Arc<spare::SpareRuleset>,
    /// Programs found by [`Sandbox::program`]: the name and `PATH` looked up, and the result.
    programs: Arc<std::sync::Mutex<Vec<ProgramFound>>>,
    /// The last `PATH` given to a command and what it became (see [`Sandbox::visible_path`]).
    visible_path: Arc<std::sync::Mutex<Option<(OsString, OsString)>>>,
}

/// One program [`Sandbox::program`] found: its name, the `PATH` it was looked up in, where.
type ProgramFound = (String, Option<std::ffi::OsString>, PathBuf);

impl Sandbox {
    /// A sandbox for the given settings. Probes the kernel on first use in a process (one
    /// syscall and a few short forks), and reads [`UNAVAILABLE_SWITCH`] and
    /// [`FALLBACK_SWITCH`]. Secrets are those of the current user with default settings
    /// (see [`Sandbox::with_secrets`]).
    pub fn new(mode: SandboxMode, network: bool, workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        Sandbox::new_with_secrets(
            mode,
            network,
            workspace,
            temp_dir,
            Secrets::for_current_user(),
        )
    }

    /// [`Sandbox::new`] with these secrets (see [`Sandbox::with_secrets`]): the person's own
    /// settings are resolved once, instead of the defaults first (a few ms at start-up).
    pub fn new_with_secrets(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
        secrets: Secrets,
    ) -> Sandbox {
        let simulate = switch_is_set(std::env::var_os(UNAVAILABLE_SWITCH).as_deref());
        let fallback = switch_is_set(std::env::var_os(FALLBACK_SWITCH).as_deref());
        Sandbox::build(mode, network, workspace, temp_dir, simulate, fallback).with_secrets(secrets)
    }

    /// A sandbox that behaves as if the kernel lacked Landlock: what `REIN_SANDBOX_UNAVAILABLE=1`
    /// selects, without touching the environment (for tests).
    pub fn without_landlock(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
    ) -> Sandbox {
        Sandbox::build(mode, network, workspace, temp_dir, true, false)
            .with_secrets(Secrets::for_current_user())
    }

    /// A sandbox without namespaces even where the kernel has them: what
    /// `REIN_SANDBOX_FALLBACK=1` selects, without touching the environment (for tests).
    pub fn without_namespaces(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
    ) -> Sandbox {
        Sandbox::build(mode, network, workspace, temp_dir, false, true)
            .with_secrets(Secrets::for_current_user())
    }

    /// No confinement at all (tests of other parts, `sandbox = "off"`).
    pub fn off(workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        Sandbox::build(SandboxMode::Off, true, workspace, temp_dir, false, false)
            .with_secrets(Secrets::for_current_user())
    }

    /// The sandbox without secrets yet (the constructors give it some).
    fn build(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
        simulate: bool,
        fallback: bool,
    ) -> Sandbox {
        let status = if mode == SandboxMode::Off {
            SandboxStatus::Off
        } else {
            match missing_support(network, simulate) {
                Some(reason) => SandboxStatus::Unavailable(reason),
                None => SandboxStatus::Enforced,
            }
        };
        // Off needs no mechanism: not probing the kernel spares every start three forks.
        let namespaces_refused = mode != SandboxMode::Off && !fallback && !namespaces_available();
        let mechanism = if mode == SandboxMode::Off || fallback || namespaces_refused {
            Mechanism::LandlockOnly
        } else {
            Mechanism::Namespaces
        };
        let private = Arc::new(private::PrivateDir::next_to(&temp_dir));
        Sandbox {
            mode,
            network,
            workspace,
            temp_dir,
            extra_writable: Vec::new(),
            status,
            mechanism,
            simulate_no_landlock: simulate,
            namespaces_refused,
            proxy: None,
            secrets: Arc::default(),
            private,
            nested_git: Arc::default(),
            gitlinks: Arc::default(),
            #[cfg(target_os = "linux")]
            home: Arc::default(),
            #[cfg(target_os = "linux")]
            spare: Arc::default(),
            programs: Arc::default(),
            visible_path: Arc::default(),
        }
    }

    /// Also lets bash write in `dirs` (created when missing), e.g. build caches such as
    /// `~/.cache/go-build` that tools insist on. Everything else stays as configured.
    pub fn with_writable_dirs(mut self, dirs: Vec<PathBuf>) -> Sandbox {
        self.extra_writable = dirs;
        // What is trusted depends on what commands may write.
        self.programs = Arc::default();
        let secrets = (*self.secrets).clone();
        self.with_secrets(secrets)
    }

    /// Uses these secrets (what commands cannot see, the variables they get besides the
    /// allow-list). The workspace and the dirs bash may write stay visible where they lie in
    /// home.
    pub fn with_secrets(mut self, mut secrets: Secrets) -> Sandbox {
        let places: Vec<PathBuf> = std::iter::once(&self.workspace)
            .chain(self.writable_dirs())
            .cloned()
            .chain(secrets.repository_places(&self.workspace))
            .collect();
        secrets.show_also(&places);
        self.secrets = Arc::new(secrets);
        #[cfg(target_os = "linux")]
        {
            self.home = Arc::default();
        }
        self
    }

    /// Limits the network to the allow-list `proxy` serves (when the network is not allowed
    /// as a whole): commands reach exactly the hosts it lets through.
    pub fn with_network_proxy(mut self, proxy: Arc<crate::netproxy::NetProxy>) -> Sandbox {
        self.proxy = Some(proxy);
        self
    }

    /// The network allow-list's proxy, when one is configured.
    pub fn network_proxy(&self) -> Option<&Arc<crate::netproxy::NetProxy>> {
        self.proxy.as_ref()
    }

    /// What network commands get here.
    pub fn network_access(&self) -> NetworkAccess {
        if self.network {
            return NetworkAccess::Full;
        }
        if self.proxy.is_none() {
            return NetworkAccess::Off;
        }
        if self.mechanism == Mechanism::Namespaces && network_namespaces_available() {
            NetworkAccess::AllowList
        } else {
            NetworkAccess::AllowListUnavailable
        }
    }

    /// The secrets this sandbox hides (for the file tools: refuse to read them, mask values).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Where to find a program rein starts itself (bash): on `PATH`, but never from a relative
    /// entry or a directory commands may write. Falls back to the bare name.
    pub fn program(&self, name: &str) -> PathBuf {
        let path = std::env::var_os("PATH");
        // Found once per name and `PATH` (the walk canonicalizes every entry on the way, a
        // good part of a call's preparation); a result that is no longer an executable file
        // is looked up again. The directories commands may write do not change.
        let mut found = crate::sync::lock(&self.programs);
        if let Some((_, _, p)) = found.iter().find(|(n, v, _)| n == name && *v == path)
            && trusted::is_executable(p)
        {
            return p.clone();
        }
        let untrusted: Vec<PathBuf> = std::iter::once(&self.workspace)
            .chain(self.writable_dirs())
            .cloned()
            .collect();
        let Some(program) = trusted_program(name, path.as_deref(), &untrusted) else {
            return PathBuf::from(name);
        };
        found.retain(|(n, v, _)| !(n == name && *v == path));
        found.push((name.to_string(), path, program.clone()));
        program
    }

    /// `path` without the entries the sandbox hides: a program found in a hidden directory
    /// could be looked at but not run (Landlock refuses it), and bash would stop there instead
    /// of looking further. Relative and empty entries go too (`node_modules/.bin`, `.`, `::`):
    /// they mean the command's directory, where a repository's own `rg` or `git` would stand in
    /// for the one an allowed command names (as `launch::child_path` does for rein's own
    /// children). Kept for the last `PATH` (it rarely changes).
    fn visible_path(&self, path: OsString) -> OsString {
        let mut last = crate::sync::lock(&self.visible_path);
        if let Some((from, to)) = last.as_ref()
            && *from == path
        {
            return to.clone();
        }
        let kept: Vec<PathBuf> = std::env::split_paths(&path)
            .filter(|entry| {
                if !entry.is_absolute() {
                    return false;
                }
                let real = paths::canonicalize(entry).unwrap_or_else(|_| entry.clone());
                !self.secrets.is_secret_path(&real)
            })
            .collect();
        // An empty `PATH` means the current directory too, and an unset one bash's default, which
        // ends in `.`: the system's directories instead.
        let kept = match kept.is_empty() {
            true => vec![PathBuf::from("/usr/bin"), PathBuf::from("/bin")],
            false => kept,
        };
        let to = std::env::join_paths(kept).unwrap_or_else(|_| OsString::from("/usr/bin:/bin"));
        *last = Some((path, to.clone()));
        to
    }

    /// The directories bash may write besides the workspace: the temp dir and any added.
    pub fn writable_dirs(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.temp_dir).chain(&self.extra_writable)
    }

    /// Whether the confinement is enforced, unavailable (and why), or off.
    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// How the confinement is built here.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// One line for the status bar, `rein config` and `rein sandbox`, e.g.
    /// `workspace-write, no network`.
    pub fn describe(&self) -> String {
        let net = match self.network_access() {
            NetworkAccess::Full => "network allowed".to_string(),
            NetworkAccess::Off => "no network".to_string(),
            NetworkAccess::AllowList => {
                let hosts = self.proxy.as_ref().map(|p| p.entries()).unwrap_or_default();
                match hosts.len() {
                    0 => "network: allow-list (empty; new hosts are asked for)".to_string(),
                    n if n <= 4 => format!("network: only {}", hosts.join(", ")),
                    n => format!("network: only {} and {} more", hosts[..3].join(", "), n - 3),
                }
            }
            NetworkAccess::AllowListUnavailable => "no network (the network allow-list needs \
                 network namespaces, which this machine does not offer)"
                .to_string(),
        };
        let how = match self.mechanism {
            Mechanism::Namespaces => "",
            Mechanism::LandlockOnly => {
                " (Landlock only; .git and .rein checked after each command)"
            }
        };
        match &self.status {
            SandboxStatus::Off => "off".into(),
            SandboxStatus::Enforced => format!("{}{how}, {net}", self.mode.as_str()),
            SandboxStatus::Unavailable(why) => {
                format!("unavailable ({why}); every bash command needs approval")
            }
        }
    }

    /// What the person can do when the kernel refused the namespaces for a reason they can
    /// lift: Ubuntu's AppArmor restriction of user namespaces (24.04 and later), which a
    /// profile for rein lifts. Shown at start and by `rein config`.
    pub fn fallback_note(&self) -> Option<String> {
        self.fallback_note_with(Path::new(APPARMOR_USERNS_SYSCTL))
    }

    /// [`Sandbox::fallback_note`] with AppArmor's switch read from `sysctl`.
    fn fallback_note_with(&self, sysctl: &Path) -> Option<String> {
        (self.namespaces_refused
            && self.status == SandboxStatus::Enforced
            && apparmor_restricts_userns(sysctl))
        .then(|| {
            "AppArmor restricts user namespaces here (Ubuntu 24.04 and later), so commands get \
             the weaker sandbox without namespaces. An AppArmor profile for rein lifts it: see \
             \"Ubuntu\" in docs/sandbox.md."
                .to_string()
        })
    }

    /// Prepares `cmd` so that the child confines itself before exec, and returns what rein
    /// needs afterwards. The child's environment becomes the allow-list (`launch::env`, plus
    /// `[sandbox] pass_env`) and what the caller set on `cmd`; with the sandbox on, git finds
    /// only the person's identity. Call right before spawning; the work that allocates
    /// happens here, in rein.
    pub fn prepare(&self, cmd: &mut std::process::Command) -> Result<Supervision, String> {
        let (supervision, confinement) = self.confinement_for(cmd)?;
        spawn::confine_on_fork(cmd, confinement);
        Ok(supervision)
    }

    /// Sets `cmd`'s environment (see [`Sandbox::prepare`]) and prepares its confinement.
    fn confinement_for(
        &self,
        cmd: &mut std::process::Command,
    ) -> Result<(Supervision, Confinement), String> {
        let own: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(std::ffi::OsStr::to_owned)))
            .collect();
        crate::launch::env::apply(cmd, self.secrets.pass_env());
        for (k, v) in own {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if self.mode != SandboxMode::Off
            && let Some(path) = cmd
                .get_envs()
                .find(|(k, _)| *k == "PATH")
                .and_then(|(_, v)| v.map(std::ffi::OsStr::to_owned))
        {
            cmd.env("PATH", self.visible_path(path));
        }
        #[cfg(target_os = "linux")]
        if self.mode != SandboxMode::Off
            && let Some(identity) = &self.command_home().gitconfig
        {
            cmd.env("GIT_CONFIG_GLOBAL", identity);
        }
        if self.mode != SandboxMode::Off
            && self.status.is_enforced()
            && self.network_access() == NetworkAccess::AllowList
        {
            // Every common client's way to find a proxy: curl, pip, git, Python (`ALL_PROXY`
            // and the lowercase names included), cargo and npm their own names too.
            for name in PROXY_VARIABLES {
                cmd.env(name, crate::netproxy::PROXY_URL);
            }
            cmd.env_remove("NO_PROXY").env_remove("no_proxy");
        }
        self.prepare_platform(cmd)
    }

    /// Spawns `cmd` confined, in a process group of its own, with a pipe for its stdout and
    /// the other streams as `io` says. Only its program, arguments, environment and directory
    /// are used when the zygote starts it (see `zygote`); otherwise it is forked from rein.
    /// Needs a tokio runtime.
    pub fn spawn(
        &self,
        cmd: &mut std::process::Command,
        io: ChildIo,
    ) -> Result<Supervised, SpawnError> {
        let (mut supervision, confinement) =
            self.confinement_for(cmd).map_err(SpawnError::Sandbox)?;
        let streams = run::Streams::new(io).map_err(SpawnError::Start)?;
        #[cfg(target_os = "linux")]
        let launched = spawn::via_zygote(cmd, &confinement, &streams);
        #[cfg(not(target_os = "linux"))]
        let launched = None;
        let pid = match launched {
            Some(started) => started.map_err(SpawnError::Start)?,
            None => spawn::by_fork(cmd, confinement, &streams).map_err(SpawnError::Start)?,
        };
        supervision.start_proxy(false);
        Supervised::new(pid, streams, supervision).map_err(SpawnError::Start)
    }

    #[cfg(target_os = "linux")]
    fn prepare_platform(
        &self,
        cmd: &mut std::process::Command,
    ) -> Result<(Supervision, Confinement), String> {
        let (mut supervision, report) = Supervision::with_pipe()
            .map_err(|e| format!("The sandbox cannot make a pipe: {e}."))?;
        if self.mode != SandboxMode::Off
            && self.status.is_enforced()
            && self.network_access() == NetworkAccess::AllowList
            && let Some(proxy) = &self.proxy
        {
            supervision.net = Some(
                run::NetRun::new(proxy.clone())
                    .map_err(|e| format!("The sandbox cannot make the proxy's channel: {e}."))?,
            );
        }
        let confinement = if self.mode == SandboxMode::Off {
            linux::Confinement::unconfined(report)
        } else {
            let _one = paths::OnePreparation::start();
            match self.confine(cmd, report, &mut supervision) {
                Ok(c) => {
                    supervision.gitlinks = self.gitlink_check();
                    c
                }
                // Already reported as unavailable (and every command is asked for): run without.
                Err(e) if !self.status.is_enforced() => {
                    tracing::warn!("sandbox: running without confinement: {e}");
                    linux::Confinement::unconfined(report)
                }
                Err(e) => return Err(e),
            }
        };
        Ok((supervision, confinement))
    }

    /// The check after a command that may write the workspace: repositories it made where the
    /// person's git would go (see `gitlinks`).
    #[cfg(target_os = "linux")]
    fn gitlink_check(&self) -> Option<gitlinks::GitlinkCheck> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return None;
        }
        let ws = paths::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        // Found before this command ran (`confine` waited for the walk).
        self.nested_git.entries(&ws).ok()?;
        Some(gitlinks::GitlinkCheck {
            ws,
            found: self.nested_git.identities(),
            writable: self.writable_dirs().cloned().collect(),
            cache: self.gitlinks.clone(),
            made: self.nested_git.repo_watch(),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn prepare_platform(
        &self,
        _cmd: &mut std::process::Command,
    ) -> Result<(Supervision, Confinement), String> {
        // Reported as unavailable: every command is asked for, and runs unconfined.
        Ok((Supervision::default(), ()))
    }

    /// When a failed command's output shows that the sandbox blocked it (a write outside the
    /// workspace, a protected path, the network), a note to append to the tool result saying
    /// so and how the user can allow it. `None` when nothing points at the sandbox.
    pub fn explain_failure(&self, output: &str, exit_code: Option<i32>) -> Option<String> {
        explain::explain(self, output, exit_code)
    }
}

/// Why a sandboxed command could not be started.
#[derive(Debug)]
pub enum SpawnError {
    /// The sandbox could not be set up (the message says why).
    Sandbox(String),
    /// Starting the process failed.
    Start(std::io::Error),
}

/// Makes rein's own process unreadable by the commands it starts: not dumpable, so another
/// process of the same user cannot read its memory or `/proc/<pid>/environ` (where the key
/// may be) or attach a debugger. Call once at start.
pub fn protect_process() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain prctl.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Keeps the descriptors rein inherited (beyond its three streams) from every process it
/// starts: a wrapper's log file or another terminal left open must not reach a command, an
/// MCP server or a hook. Call once at start, before any thread or child exists.
pub fn keep_inherited_descriptors_from_children() {
    #[cfg(target_os = "linux")]
    if let Err(e) = linux::close_on_exec_from(3) {
        tracing::warn!("cannot mark inherited descriptors close-on-exec: {e}");
    }
}

fn switch_is_set(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(target_os = "linux")]
fn missing_support(network: bool, simulate: bool) -> Option<String> {
    linux::missing_support(network, simulate)
}

#[cfg(not(target_os = "linux"))]
fn missing_support(_network: bool, _simulate: bool) -> Option<String> {
    Some("rein can only sandbox commands on Linux (Landlock)".into())
}

#[cfg(target_os = "linux")]
fn namespaces_available() -> bool {
    linux::kernel().ns.any()
}

#[cfg(not(target_os = "linux"))]
fn namespaces_available() -> bool {
    false
}

/// Ubuntu's switch for its AppArmor restriction of unprivileged user namespaces.
const APPARMOR_USERNS_SYSCTL: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

/// Whether the sysctl at `path` says AppArmor restricts unprivileged user namespaces.
fn apparmor_restricts_userns(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|v| v.trim() == "1")
}

#[cfg(target_os = "linux")]
fn network_namespaces_available() -> bool {
    netns::available()
}

#[cfg(not(target_os = "linux"))]
fn network_namespaces_available() -> bool {
    false
}

/// The variables that point commands at the proxy (the network allow-list).
const PROXY_VARIABLES: [&str; 9] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "CARGO_HTTP_PROXY",
    "npm_config_proxy",
    "npm_config_https_proxy",
];

/// Runs `argv` under `sandbox` and waits for it (`rein sandbox -- CMD ARGS...`): stdio is
/// inherited, `TMPDIR` points at the sandbox's temp dir. Returns the exit code (128 + signal
/// when killed by a signal) and what the sandbox has to say afterwards (processes killed,
/// changes dropped).
pub fn run_sandboxed(sandbox: &Sandbox, argv: &[String]) -> std::io::Result<(i32, Vec<String>)> {
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "Give a command to run: rein sandbox -- CMD ARGS...",
        ));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env("TMPDIR", &sandbox.temp_dir);
    let mut supervision = sandbox.prepare(&mut cmd).map_err(std::io::Error::other)?;
    let mut child = cmd.spawn()?;
    #[cfg(target_os = "linux")]
    forward_stop_signals(child.id());
    // This thread blocks in `wait` below: the proxy must not need it.
    supervision.start_proxy(true);
    let status = child.wait()?;
    let done = supervision.finish(status);
    if let Some(e) = &done.setup_error {
        return Err(std::io::Error::other(format!(
            "the sandbox could not be set up: {e}"
        )));
    }
    let notes: Vec<String> = done.killed_note().into_iter().chain(done.notes).collect();
    use std::os::unix::process::ExitStatusExt;
    let code = match done.status.signal() {
        Some(signal) => 128 + signal,
        None => done.status.code().unwrap_or(1),
    };
    Ok((code, notes))
}

/// The command [`run_sandboxed`] waits for, for the signal handler.
#[cfg(target_os = "linux")]
static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Passes Ctrl+C, `SIGTERM` and `SIGHUP` on to the command `pid` instead of letting them end
/// rein at once: rein then waits for it and runs every check after it (dying first would
/// leave the command running unsupervised and unchecked).
#[cfg(target_os = "linux")]
fn forward_stop_signals(pid: u32) {
    extern "C" fn forward(signal: libc::c_int) {
        let pid = FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill is async-signal-safe; the pid is the child rein has not reaped.
            unsafe { libc::kill(pid, signal) };
        }
    }
    FORWARD_TO.store(pid as i32, std::sync::atomic::Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only loads an atomic and calls kill.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_switch_is_read_from_its_value() {
        assert!(!switch_is_set(None));
        assert!(!switch_is_set(Some("".as_ref())));
        assert!(!switch_is_set(Some("0".as_ref())));
        assert!(switch_is_set(Some("1".as_ref())));
        assert!(switch_is_set(Some("yes".as_ref())));
    }

    /// On Ubuntu 24.04, where AppArmor refuses rein the namespaces, the person is told how to
    /// lift it; never when the fallback was asked for, the sandbox is off, or AppArmor is not
    /// the reason.
    #[test]
    fn a_fallback_that_apparmor_caused_says_how_to_lift_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (on, off) = (dir.path().join("on"), dir.path().join("off"));
        std::fs::write(&on, "1\n").expect("write");
        std::fs::write(&off, "0\n").expect("write");
        let tmp = std::env::temp_dir();
        let mut refused =
            Sandbox::without_namespaces(SandboxMode::WorkspaceWrite, false, tmp.clone(), tmp);
        assert_eq!(refused.fallback_note_with(&on), None, "asked for");
        refused.namespaces_refused = true;
        let note = refused.fallback_note_with(&on).expect("a note");
        assert!(
            note.contains("AppArmor") && note.contains("docs/sandbox.md"),
            "{note}"
        );
        assert_eq!(refused.fallback_note_with(&off), None);
        assert_eq!(
            refused.fallback_note_with(&dir.path().join("missing")),
            None
        );
        let mut off_mode = Sandbox::off("/tmp".into(), "/tmp".into());
        off_mode.namespaces_refused = true;
        assert_eq!(off_mode.fallback_note_with(&on), None);
    }

    /// Relative and empty `PATH` entries mean the command's directory: never passed on.
    #[test]
    fn relative_and_empty_path_entries_are_dropped() {
        let tmp = std::env::temp_dir();
        let s = Sandbox::without_namespaces(SandboxMode::WorkspaceWrite, false, tmp.clone(), tmp);
        let path = OsString::from("node_modules/.bin::.:/usr/bin:bin:/bin:");
        assert_eq!(s.visible_path(path), OsString::from("/usr/bin:/bin"));
        assert_eq!(
            s.visible_path(OsString::from(":.")),
            OsString::from("/usr/bin:/bin")
        );
    }

    #[test]
    fn off_is_off_and_describes_itself() {
        let s = Sandbox::off("/tmp".into(), "/tmp".into());
        assert_eq!(s.status(), &SandboxStatus::Off);
        assert_eq!(s.describe(), "off");
    }

    #[test]
    fn the_simulated_kernel_is_reported_unavailable() {
        let s = Sandbox::without_landlock(
            SandboxMode::WorkspaceWrite,
            false,
            "/tmp".into(),
            "/tmp".into(),
        );
        match s.status() {
            SandboxStatus::Unavailable(why) => assert!(why.contains("REIN_SANDBOX_UNAVAILABLE")),
            other => panic!("expected unavailable, got {other:?}"),
        }
        assert!(s.describe().contains("needs approval"));
    }

    #[test]
    fn run_sandboxed_needs_a_command() {
        let s = Sandbox::off("/tmp".into(), "/tmp".into());
        assert_eq!(
            run_sandboxed(&s, &[]).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    }
}
