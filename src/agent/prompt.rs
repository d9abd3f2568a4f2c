//! The system prompts and the project instructions (`AGENTS.md`) they carry.

pub use crate::protocol::Instructions;
use crate::repo::repo_root;
use std::path::{Path, PathBuf};

const SYSTEM: &str = include_str!("../../assets/system.md");
const SUBAGENT: &str = include_str!("../../assets/subagent.md");

/// `~/.agents/AGENTS.md`, then every `AGENTS.md` from the repo root down to `cwd`, in that order.
pub fn load_agents_md(cwd: &Path, home: Option<&Path>) -> Vec<Instructions> {
    let mut out = Vec::new();
    let top = repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut read = |path: PathBuf, project: bool| {
        let text = match project {
            true => crate::repo::read_project_text(&top, &path),
            false => std::fs::read_to_string(&path),
        };
        match text {
            Ok(text) if !text.trim().is_empty() => out.push(Instructions { path, text }),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot read {}: {e}", path.display()),
        }
    };
    if let Some(home) = home {
        read(home.join(".agents").join("AGENTS.md"), false);
    }
    // Directories from the top down to cwd.
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .collect();
    dirs.reverse();
    for dir in dirs {
        let path = dir.join("AGENTS.md");
        if home.is_some_and(|h| path == h.join(".agents").join("AGENTS.md")) {
            continue;
        }
        read(path, true);
    }
    out
}

/// Renders the instructions as one block for the system prompt (empty when there are none).
pub fn render_instructions(files: &[Instructions]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n# Project instructions (AGENTS.md)\nFollow these instructions from the user and the \
         project; deeper directories take precedence.\n",
    );
    for f in files {
        s.push_str(&format!(
            "\n## {}\n{}\n",
            f.path.display(),
            f.text.trim_end()
        ));
    }
    s
}

fn os_name() -> String {
    format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH)
}

fn today() -> String {
    local_now().strftime("%Y-%m-%d (%A)").to_string()
}

/// The local time zone, looked up once: `/etc/localtime` read as TZif when `TZ` is unset.
/// (jiff's own lookup lists the whole zoneinfo tree first, ~1 ms on every start.)
fn local_zone() -> &'static jiff::tz::TimeZone {
    static ZONE: std::sync::OnceLock<jiff::tz::TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        let path = std::path::Path::new("/etc/localtime");
        let from_file = || {
            let name = std::fs::read_link(path).ok().and_then(|t| {
                let t = t.to_string_lossy().into_owned();
                t.split_once("zoneinfo/").map(|(_, name)| name.to_string())
            });
            let bytes = std::fs::read(path).ok()?;
            jiff::tz::TimeZone::tzif(name.as_deref().unwrap_or("Local"), &bytes).ok()
        };
        match std::env::var_os("TZ").filter(|v| !v.is_empty()) {
            Some(_) => jiff::tz::TimeZone::system(),
            None => from_file().unwrap_or_else(jiff::tz::TimeZone::system),
        }
    })
}

/// Now, in the local time zone.
pub(crate) fn local_now() -> jiff::ZonedDateTime {
    jiff::Timestamp::now().to_zoned_datetime(local_zone().clone())
}

/// The main agent's system prompt.
pub fn system_prompt(cwd: &Path, instructions: &[Instructions], skills_block: &str) -> String {
    SYSTEM
        .replace("{cwd}", &cwd.display().to_string())
        .replace("{os}", &os_name())
        .replace("{date}", &today())
        .replace("{skills}", skills_block)
        .replace("{agents_md}", &render_instructions(instructions))
}

/// A subagent's system prompt.
pub fn subagent_prompt(cwd: &Path) -> String {
    SUBAGENT
        .replace("{cwd}", &cwd.display().to_string())
        .replace("{os}", &os_name())
        .replace("{date}", &today())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_time_is_the_systems() {
        let now = jiff::Timestamp::now();
        let ours = local_zone().to_offset(now);
        assert_eq!(ours, jiff::tz::TimeZone::system().to_offset(now));
    }

    #[test]
    fn agents_md_from_home_then_root_down_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        let sub = repo.join("a").join("b");
        std::fs::create_dir_all(home.join(".agents")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(home.join(".agents/AGENTS.md"), "home rules").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "deep rules").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "outside the repo").unwrap();
        let found = load_agents_md(&sub, Some(&home));
        let texts: Vec<&str> = found.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(texts, ["home rules", "root rules", "deep rules"]);
        let prompt = system_prompt(&sub, &found, "");
        let (h, r, d) = (
            prompt.find("home rules").unwrap(),
            prompt.find("root rules").unwrap(),
            prompt.find("deep rules").unwrap(),
        );
        assert!(h < r && r < d);
        assert!(prompt.contains(&sub.display().to_string()));
        assert!(!prompt.contains("{date}"));
    }
}
