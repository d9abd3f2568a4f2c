//! What runs with the full-screen mode left for a while: the person's `$EDITOR` on the
//! composer text (Ctrl+G), and stopping rein like a shell job (Ctrl+Z).
//!
//! The editor gets a scratch file in a fresh private directory outside the workspace and runs
//! there, so a hostile repository's editor settings (`.exrc`, `.editorconfig`,
//! `.dir-locals.el`, a workspace `.vscode`) are never read for it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Edits `text` in `editor` (a shell command line, e.g. `code -w`) and returns the result.
/// The scratch file and its directory are outside `workspace` and removed afterwards.
pub fn edit(text: &str, editor: &str, workspace: &Path) -> Result<String, String> {
    let dir = scratch_dir(workspace)?;
    let file = dir.join("message.md");
    let result = (|| {
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        // `$1` keeps the file name out of the command line's parsing.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("rein-editor")
            .arg(&file)
            .current_dir(&dir);
        // The API key never reaches a child process.
        for var in crate::agent::SECRET_ENV_VARS {
            cmd.env_remove(var);
        }
        let status = cmd
            .status()
            .map_err(|e| format!("cannot start {editor}: {e}"))?;
        if !status.success() {
            return Err(format!(
                "{editor} exited with {status}; the message is unchanged"
            ));
        }
        std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A new private directory for the scratch file: under the temp dir, else the home dir,
/// whichever is not inside the workspace.
fn scratch_dir(workspace: &Path) -> Result<PathBuf, String> {
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    let candidates = std::iter::once(std::env::temp_dir()).chain(home);
    for base in candidates {
        let Ok(base) = base.canonicalize() else {
            continue;
        };
        if base.starts_with(&workspace) {
            continue;
        }
        let dir = base.join(format!("rein-edit-{}", crate::agent::new_session_id()));
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        if builder.create(&dir).is_ok() {
            return Ok(dir);
        }
    }
    Err("there is no directory outside the workspace for the scratch file".into())
}

/// Stops rein as a shell job (SIGTSTP) and returns once it is continued. Without job
/// control (an orphaned process group) the kernel ignores the signal and this returns at once.
pub fn stop_self() {
    // SAFETY: raise only sends a signal to this process; it touches no memory.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_runs_outside_the_workspace_on_a_scratch_file() {
        let ws = tempfile::tempdir().unwrap();
        let log = ws.path().join("where.txt");
        // A stand-in editor: records its cwd and file, and appends a line.
        let editor = format!(
            "sh -c 'pwd > {log}; echo \"$0\" >> {log}; echo edited >> \"$0\"'",
            log = log.display()
        );
        let out = edit("draft\n", &editor, ws.path()).unwrap();
        assert_eq!(out, "draft\nedited\n");
        let seen = std::fs::read_to_string(&log).unwrap();
        let ws_real = ws.path().canonicalize().unwrap();
        for line in seen.lines() {
            assert!(
                !Path::new(line).starts_with(&ws_real),
                "{line} is inside the workspace"
            );
        }
        let file = seen.lines().nth(1).unwrap();
        assert!(!Path::new(file).exists(), "the scratch file is left behind");
    }

    #[test]
    fn a_failing_editor_keeps_the_message() {
        let ws = tempfile::tempdir().unwrap();
        let err = edit("draft", "false", ws.path()).unwrap_err();
        assert!(err.contains("unchanged"), "{err}");
    }
}
