//! What runs with the full-screen mode left for a while: the person's `$EDITOR` on the
//! composer text (Ctrl+G), and stopping rein like a shell job (Ctrl+Z).
//!
//! The editor gets a scratch file in a fresh private directory outside the workspace and runs
//! there, so a hostile repository's editor settings (`.exrc`, `.editorconfig`,
//! `.dir-locals.el`, a workspace `.vscode`) are never read for it; it does not get rein's
//! secrets either (the launch gate's allow-list).

use std::path::Path;

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Edits `text` in `editor` (a shell command line, e.g. `code -w`) and returns the result.
/// Started through the launch gate (`crate::launch`): in a neutral directory outside
/// `workspace` (removed afterwards) that holds only the scratch file, with the environment
/// allow-list plus what reaches the person's display, `sh` from a trusted `PATH` entry.
pub fn edit(text: &str, editor: &str, workspace: &Path) -> Result<String, String> {
    let mut prepared = crate::launch::prepare(&crate::launch::Request {
        program: "sh",
        cwd: None,
        env: &[],
        workspace,
        in_project: false,
        purpose: crate::launch::Purpose::Editor,
    })
    .map_err(|e| format!("cannot start {editor}: {e}"))?;
    // Dropped (and removed) when this returns.
    let _dir = prepared.take_dir();
    let file = prepared.dir.join("message.md");
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    // `$1` keeps the file name out of the command line's parsing.
    let mut cmd = prepared.command();
    cmd.arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("rein-editor")
        .arg(&file);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {editor}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{editor} exited with {status}; the message is unchanged"
        ));
    }
    std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))
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
    fn the_editor_gets_the_allow_list_and_display_variables_only() {
        let ws = tempfile::tempdir().unwrap();
        let log = ws.path().join("env.txt");
        // The test process's environment is full of names no allow-list knows (CARGO_*, ...).
        let editor = format!("sh -c 'env > {}'", log.display());
        edit("x", &editor, ws.path()).unwrap();
        let seen = std::fs::read_to_string(&log).unwrap();
        // What sh itself sets.
        let shell = ["PWD", "OLDPWD", "SHLVL", "_"];
        for name in seen
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, _)| k)
        {
            assert!(
                crate::launch::env::is_allowed(name)
                    || crate::launch::EDITOR_PASS.contains(&name)
                    || shell.contains(&name),
                "{name} reached the editor"
            );
        }
        assert!(seen.contains("PATH="), "{seen}");
    }

    #[test]
    fn a_failing_editor_keeps_the_message() {
        let ws = tempfile::tempdir().unwrap();
        let err = edit("draft", "false", ws.path()).unwrap_err();
        assert!(err.contains("unchanged"), "{err}");
    }
}
