//! Facts about the repository around a directory, read from the file system (no git process).

use std::path::{Path, PathBuf};

/// The nearest ancestor of `cwd` (or `cwd` itself) holding `.git`, if any.
pub fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The largest project file (instructions, a skill) rein reads into a prompt.
pub const MAX_PROJECT_TEXT: u64 = 256 << 10;

/// Reads a Markdown file the project provides (`AGENTS.md`, a skill's `SKILL.md`) into rein's
/// prompt only where it may: links are followed, but the file they lead to must be a regular
/// Markdown file inside `root`, and it is opened without following a link swapped in since. A
/// clone can carry `AGENTS.md -> ~/.ssh/id_rsa` or `-> /proc/self/environ` (rein's own
/// environment); neither may reach the model.
pub fn read_project_text(root: &Path, path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let refused = |why: &str| Error::new(ErrorKind::PermissionDenied, why.to_string());
    let physical = |p: &Path| {
        std::path::absolute(p)
            .ok()
            .and_then(|p| crate::sandbox::paths::physical_path(&p))
            .ok_or_else(|| refused("its path cannot be resolved"))
    };
    let (root, real) = (physical(root)?, physical(path)?);
    if !real.starts_with(&root) {
        return Err(refused("it leads outside the project"));
    }
    let markdown = real
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
    if !markdown {
        return Err(refused("it leads to a file that is not Markdown"));
    }
    let file = crate::tools::files::anchor::open_file(&real)?;
    if !file.metadata()?.is_file() {
        return Err(refused("it is not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_PROJECT_TEXT).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_text_never_leads_outside_or_to_anything_but_markdown() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let (root, outside) = (base.join("repo"), base.join("home"));
        std::fs::create_dir_all(root.join("docs/dir.md")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "be brief").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=1").unwrap();
        std::fs::write(outside.join("notes.md"), "private").unwrap();
        let link = |to: &Path, name: &str| {
            let _ = std::fs::remove_file(root.join(name));
            std::os::unix::fs::symlink(to, root.join(name)).unwrap();
            read_project_text(&root, &root.join(name))
        };
        // A link inside the project, as `AGENTS.md -> CLAUDE.md` often is: read.
        assert_eq!(
            link(Path::new("CLAUDE.md"), "AGENTS.md").unwrap(),
            "be brief"
        );
        for (to, why) in [
            (outside.join("notes.md"), "outside"),
            (PathBuf::from("/proc/self/environ"), "outside"),
            (PathBuf::from(".env"), "not Markdown"),
            (PathBuf::from("docs/dir.md"), "not a regular file"),
        ] {
            let e = link(&to, "AGENTS.md").unwrap_err().to_string();
            assert!(e.contains(why), "{}: {e}", to.display());
        }
        std::fs::write(
            root.join("docs/big.md"),
            "x".repeat(MAX_PROJECT_TEXT as usize + 10),
        )
        .unwrap();
        let big = read_project_text(&root, &root.join("docs/big.md")).unwrap();
        assert_eq!(big.len() as u64, MAX_PROJECT_TEXT);
    }
}
