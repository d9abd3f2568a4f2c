//! Finding the programs rein itself starts (bash) where a command cannot have planted them.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The first executable `name` in the directories of `path_var` (a `PATH` value), skipping
/// relative entries (they mean the workspace, where rein runs) and directories inside
/// `untrusted` (the workspace and every other directory commands may write).
pub fn trusted_program(
    name: &str,
    path_var: Option<&OsStr>,
    untrusted: &[PathBuf],
) -> Option<PathBuf> {
    let untrusted: Vec<PathBuf> = untrusted
        .iter()
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
        .collect();
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .filter(|dir| !untrusted.iter().any(|u| dir.starts_with(u)))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// Whether `p` is an executable regular file.
pub(crate) fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_writable_path_entries_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, sys) = (root.join("ws"), root.join("sys"));
        for d in [ws.join("bin"), sys.clone()] {
            std::fs::create_dir_all(&d).unwrap();
            let p = d.join("tool");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(root.join("plain"), "").unwrap();
        let path = std::env::join_paths([
            PathBuf::from("bin"),
            ws.join("bin"),
            root.join("missing"),
            sys.clone(),
        ])
        .unwrap();
        let found = trusted_program("tool", Some(&path), std::slice::from_ref(&ws));
        assert_eq!(found, Some(sys.join("tool")));
        assert_eq!(
            trusted_program("tool", Some(&path), std::slice::from_ref(&root)),
            None
        );
        assert_eq!(trusted_program("tool", None, &[]), None);
        let only_plain = std::env::join_paths([root.clone()]).unwrap();
        assert_eq!(trusted_program("plain", Some(&only_plain), &[]), None);
    }
}
