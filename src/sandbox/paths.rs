//! Path checks for the file tools: resolve against the workspace, follow symlinks, compare by
//! components.

use std::path::PathBuf;

/// A path the model named, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute path with `..` and symlinks resolved (for a file that does not exist yet, its
    /// deepest existing ancestor is resolved and the rest appended).
    pub path: PathBuf,
    /// How to show it: relative to the workspace when inside, else absolute.
    pub display: String,
    /// Whether it lies inside the workspace (compared by components).
    pub inside_workspace: bool,
    /// Whether it is a protected path inside the workspace (`.git/` internals, `.rein/`).
    pub protected: bool,
}
