//! Kernel file systems the file tools never open. `/proc` and `/sys` hold rein's own process
//! state (its environment, memory map and open descriptors are secrets: the key and the
//! person's tokens live there), and `/dev` holds devices, shared memory and more aliases of
//! descriptors (`/dev/fd`, `/dev/stdin`). Bash sees a fresh `/proc` of its own, so nothing
//! the model needs is lost.

use crate::sandbox::paths::ResolvedPath;
use crate::tools::ToolError;
use std::path::{Path, PathBuf};

/// Roots whose every path is refused.
const PROCESS_ROOTS: [&str; 2] = ["/proc", "/sys"];

/// The one path under `/dev` the file tools may name.
const DEV_NULL: &str = "/dev/null";

/// Refuses `raw` (as the model wrote it, made absolute against `workspace` or `home`) or its
/// resolved form when either lies in a kernel file system; the error says what to do instead.
pub(crate) fn refuse(
    workspace: &Path,
    home: Option<&Path>,
    raw: &str,
    resolved: Option<&ResolvedPath>,
) -> Result<(), ToolError> {
    let given = given_path(workspace, home, raw);
    // Both spellings: `/proc/self/cwd/..` resolves elsewhere, `ws/../../proc` only lexically.
    let mut candidates = vec![
        (given.clone(), false),
        (crate::sandbox::home::normalize(&given), false),
    ];
    if let Some(r) = resolved {
        candidates.push((r.path.clone(), r.inside_workspace));
    }
    for (path, inside) in candidates {
        if let Some(root) = PROCESS_ROOTS.iter().find(|r| path.starts_with(r)) {
            return Err(ToolError(format!(
                "{raw} is under {root}, which holds rein's own process state (environment, \
                 memory, open files): the file tools never open it. For system information \
                 use bash, e.g. `cat /proc/cpuinfo`."
            )));
        }
        // A workspace on a tmpfs under /dev/shm is still the workspace.
        let lexically_inside = path.starts_with(workspace);
        if path.starts_with("/dev") && path != Path::new(DEV_NULL) && !inside && !lexically_inside {
            return Err(ToolError(format!(
                "{raw} is under /dev (devices, descriptors, shared memory): the file tools never \
                 open it. Work with files in the workspace instead."
            )));
        }
    }
    Ok(())
}

/// `raw` made absolute the way `paths::resolve` starts, before any link is followed.
fn given_path(workspace: &Path, home: Option<&Path>, raw: &str) -> PathBuf {
    match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if raw == "~" => home.map(Path::to_path_buf).unwrap_or_default(),
        _ => workspace.join(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str) -> Result<(), ToolError> {
        refuse(Path::new("/work/ws"), Some(Path::new("/home/u")), raw, None)
    }

    #[test]
    fn process_files_are_refused_however_spelled() {
        for raw in [
            "/proc/self/environ",
            "/proc/thread-self/maps",
            "/proc/1/cmdline",
            "//proc/self/fd/3",
            "/proc/./self/cwd/x",
            "../../proc/self/environ",
            "/sys/kernel/notes",
            "/dev/fd/3",
            "/dev/stdin",
            "/dev/shm/x",
        ] {
            assert!(check(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn ordinary_paths_and_dev_null_pass() {
        for raw in [
            "src/lib.rs",
            "/etc/hosts",
            "~/proc",
            "/dev/null",
            "/procfs/x",
            "devx",
        ] {
            assert!(check(raw).is_ok(), "{raw}");
        }
    }

    #[test]
    fn a_workspace_under_dev_shm_is_usable() {
        let ws = Path::new("/dev/shm/ws");
        assert!(refuse(ws, None, "src/lib.rs", None).is_ok());
        assert!(refuse(ws, None, "../other", None).is_err());
    }

    #[test]
    fn a_resolved_path_under_proc_is_refused() {
        let resolved = ResolvedPath {
            path: PathBuf::from("/proc/42/environ"),
            display: "link".into(),
            inside_workspace: false,
            protected: false,
        };
        let r = refuse(Path::new("/work/ws"), None, "link", Some(&resolved));
        assert!(r.is_err());
    }
}
