//! Facts about the repository around a directory, read from the file system (no git process).

use std::path::{Path, PathBuf};

/// The nearest ancestor of `cwd` (or `cwd` itself) holding `.git`, if any.
pub fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}
