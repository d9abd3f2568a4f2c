//! How bash commands are confined: the mode the sandbox enforces, as config.toml spells it
//! (`[sandbox] mode`). It lives here, not in config, so the sandbox needs nothing of config.

use serde::Deserialize;

/// How bash commands are confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only to the workspace and the session temp dir.
    WorkspaceWrite,
    /// No writes at all (but temp).
    ReadOnly,
    /// No confinement.
    Off,
}

impl SandboxMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}
