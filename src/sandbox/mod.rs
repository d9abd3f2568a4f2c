//! OS-level confinement for bash (Linux: Landlock, a seccomp network filter and a private
//! mount namespace) and path checks for file tools.
//!
//! The confinement is applied in the child between fork and exec, so rein itself is never
//! confined and every process the command starts inherits it. See `docs/sandbox.md`.

mod explain;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod mounts;
pub mod paths;
#[cfg(target_os = "linux")]
mod seccomp;

use crate::config::SandboxMode;
use std::path::PathBuf;

/// The environment variable that simulates a kernel without Landlock (for tests of the
/// fallback); read once, when a [`Sandbox`] is built.
pub const UNAVAILABLE_SWITCH: &str = "REIN_SANDBOX_UNAVAILABLE";

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
    /// Whether the configured confinement is fully enforced.
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced)
    }
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
    /// Set by the test switch: behave as if the kernel had no Landlock.
    simulate_no_landlock: bool,
}

impl Sandbox {
    /// A sandbox for the given settings. Probes the kernel on first use in a process (one
    /// syscall and a short fork), and reads [`UNAVAILABLE_SWITCH`].
    pub fn new(mode: SandboxMode, network: bool, workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        let simulate = switch_is_set(std::env::var_os(UNAVAILABLE_SWITCH).as_deref());
        Sandbox::build(mode, network, workspace, temp_dir, simulate)
    }

    /// A sandbox that behaves as if the kernel lacked Landlock: what `REIN_SANDBOX_UNAVAILABLE=1`
    /// selects, without touching the environment (for tests).
    pub fn without_landlock(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
    ) -> Sandbox {
        Sandbox::build(mode, network, workspace, temp_dir, true)
    }

    /// No confinement at all (tests of other parts, `sandbox = "off"`).
    pub fn off(workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        Sandbox::build(SandboxMode::Off, true, workspace, temp_dir, false)
    }

    fn build(
        mode: SandboxMode,
        network: bool,
        workspace: PathBuf,
        temp_dir: PathBuf,
        simulate: bool,
    ) -> Sandbox {
        let status = if mode == SandboxMode::Off {
            SandboxStatus::Off
        } else {
            match missing_support(mode, network, simulate) {
                Some(reason) => SandboxStatus::Unavailable(reason),
                None => SandboxStatus::Enforced,
            }
        };
        Sandbox {
            mode,
            network,
            workspace,
            temp_dir,
            extra_writable: Vec::new(),
            status,
            simulate_no_landlock: simulate,
        }
    }

    /// Also lets bash write in `dirs` (created when missing), e.g. build caches such as
    /// `~/.cache/go-build` that tools insist on. Everything else stays as configured.
    pub fn with_writable_dirs(mut self, dirs: Vec<PathBuf>) -> Sandbox {
        self.extra_writable = dirs;
        self
    }

    /// The directories bash may write besides the workspace: the temp dir and any added.
    pub fn writable_dirs(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.temp_dir).chain(&self.extra_writable)
    }

    /// Whether the confinement is enforced, unavailable (and why), or off.
    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// One line for the status bar and `rein config`, e.g. `workspace-write, no network`.
    pub fn describe(&self) -> String {
        let net = if self.network {
            "network allowed"
        } else {
            "no network"
        };
        match &self.status {
            SandboxStatus::Off => "off".into(),
            SandboxStatus::Enforced => format!("{}, {net}", self.mode.as_str()),
            SandboxStatus::Unavailable(why) => {
                format!("unavailable ({why}); every bash command needs approval")
            }
        }
    }

    /// Prepares `cmd` so that the child confines itself before exec. Call right before
    /// spawning; the work that allocates happens here, in rein.
    pub fn apply(&self, cmd: &mut tokio::process::Command) -> Result<(), String> {
        self.apply_std(cmd.as_std_mut())
    }

    /// [`Sandbox::apply`] for a `std::process::Command`.
    pub fn apply_std(&self, cmd: &mut std::process::Command) -> Result<(), String> {
        if self.mode == SandboxMode::Off {
            return Ok(());
        }
        self.apply_platform(cmd)
    }

    #[cfg(target_os = "linux")]
    fn apply_platform(&self, cmd: &mut std::process::Command) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let here = std::env::current_dir()
            .map_err(|e| format!("The sandbox cannot read the current directory: {e}."))?;
        let cwd = cmd
            .get_current_dir()
            .map_or_else(|| here.clone(), |d| here.join(d));
        let prepared = linux::Confinement::prepare(&linux::Request {
            mode: self.mode,
            network: self.network,
            workspace: &self.workspace,
            temp_dir: &self.temp_dir,
            extra_writable: &self.extra_writable,
            cwd: &cwd,
            use_landlock: !self.simulate_no_landlock,
        });
        let confinement = match prepared {
            Ok(c) => c,
            // Already reported as unavailable (and every command is asked for): run without.
            Err(e) if !self.status.is_enforced() => {
                tracing::warn!("sandbox: running without confinement: {e}");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        // SAFETY: `enter` only makes async-signal-safe system calls (no allocation, no locks).
        unsafe { cmd.pre_exec(move || confinement.enter()) };
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn apply_platform(&self, _cmd: &mut std::process::Command) -> Result<(), String> {
        // Reported as unavailable: every command is asked for, and runs unconfined.
        Ok(())
    }

    /// When a failed command's output shows that the sandbox blocked it (a write outside the
    /// workspace, a protected path, the network), a note to append to the tool result saying
    /// so and how the user can allow it. `None` when nothing points at the sandbox.
    pub fn explain_failure(&self, output: &str, exit_code: Option<i32>) -> Option<String> {
        explain::explain(self, output, exit_code)
    }
}

fn switch_is_set(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(target_os = "linux")]
fn missing_support(mode: SandboxMode, network: bool, simulate: bool) -> Option<String> {
    linux::missing_support(mode, network, simulate)
}

#[cfg(not(target_os = "linux"))]
fn missing_support(_mode: SandboxMode, _network: bool, _simulate: bool) -> Option<String> {
    Some("rein can only sandbox commands on Linux (Landlock)".into())
}

/// Runs `argv` under `sandbox` and waits for it (`rein sandbox -- CMD ARGS...`): stdio is
/// inherited, `TMPDIR` points at the sandbox's temp dir. Returns the exit code (128 + signal
/// when killed by a signal).
pub fn run_sandboxed(sandbox: &Sandbox, argv: &[String]) -> std::io::Result<i32> {
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "Give a command to run: rein sandbox -- CMD ARGS...",
        ));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env("TMPDIR", &sandbox.temp_dir);
    sandbox.apply_std(&mut cmd).map_err(std::io::Error::other)?;
    let status = cmd.status()?;
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Ok(128 + signal);
        }
    }
    Ok(status.code().unwrap_or(1))
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
