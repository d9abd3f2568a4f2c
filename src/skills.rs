//! Skills: folders with a `SKILL.md` (YAML front matter `name`, `description`, then
//! instructions). Only names and descriptions go in the system prompt; the model loads a body
//! on demand with `read_skill`.
//!
//! Searched, highest precedence first (the first skill of a name wins):
//! `~/.agents/skills/*/`, `~/.claude/skills/*/`, `<repo root>/.agents/skills/*/`,
//! `<repo root>/.claude/skills/*/`. The person's own skills come first (as in Claude Code): a
//! repository's skill of the same name cannot replace the instructions they wrote. The front matter is parsed with `serde_norway` (a maintained fork of
//! `serde_yaml`), so any valid YAML works, block scalars included.

use serde::Deserialize;
use std::path::{Path, PathBuf};

pub use crate::protocol::{Skill, SkillCatalog, SkippedSkill};

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Splits a `SKILL.md` into its front matter (YAML text) and its body.
pub fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("it does not start with a `---` front matter line".into());
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[start..at];
            let body = &text[at + line.len()..];
            return Ok((yaml, body.trim_start_matches(['\n', '\r'])));
        }
        at += line.len();
    }
    Err("its front matter has no closing `---` line".into())
}

/// Reads the name and description of a `SKILL.md` (`folder` is the default name).
fn parse_skill(text: &str, folder: &str) -> Result<(String, String), String> {
    let (yaml, _) = split_front_matter(text)?;
    if yaml.trim().is_empty() {
        return Err("its front matter is empty (it needs a `description`)".into());
    }
    let fm: FrontMatter = serde_norway::from_str(yaml)
        .map_err(|e| format!("its front matter is not valid YAML: {e}"))?;
    let name = match fm.name.map(|n| n.trim().to_string()) {
        Some(n) if n.is_empty() => return Err("its `name` is empty".into()),
        Some(n) if n.contains(char::is_whitespace) => {
            return Err(format!("its name {n:?} contains whitespace"));
        }
        Some(n) => n,
        None => folder.to_string(),
    };
    let description = fm
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or("its front matter has no `description`")?;
    Ok((name, description))
}

/// A skill's `SKILL.md`: the project's own only inside the project (see
/// [`crate::repo::read_project_text`]), the person's as it is.
pub fn read_skill_file(project: &Path, path: &Path) -> std::io::Result<String> {
    match path.starts_with(project) {
        true => crate::repo::read_project_text(project, path),
        false => std::fs::read_to_string(path),
    }
}

/// The directories searched, highest precedence first.
fn search_dirs(home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let root = crate::repo::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push(home.join(".agents").join("skills"));
        dirs.push(home.join(".claude").join("skills"));
    }
    dirs.push(root.join(".agents").join("skills"));
    dirs.push(root.join(".claude").join("skills"));
    // Started in the home directory, the project dirs are the user dirs: search them once.
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let key = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    dirs
}

/// Finds the skills for a session started in `cwd`.
pub fn discover(home: Option<&Path>, cwd: &Path) -> SkillCatalog {
    let mut catalog = SkillCatalog::default();
    let project = crate::repo::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    for base in search_dirs(home, cwd) {
        let mut folders: Vec<PathBuf> = match std::fs::read_dir(&base) {
            Ok(read) => read
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                tracing::warn!("cannot read skills in {}: {e}", base.display());
                continue;
            }
        };
        folders.sort();
        for dir in folders {
            let path = dir.join("SKILL.md");
            if !path.is_file() {
                continue;
            }
            let folder = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let parsed = read_skill_file(&project, &path)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|text| parse_skill(&text, &folder));
            match parsed {
                Ok((name, description)) => {
                    if let Some(winner) = catalog.skills.iter().find(|s| s.name == name) {
                        tracing::debug!("skill {name} at {} is shadowed", path.display());
                        catalog.skipped.push(SkippedSkill {
                            reason: format!(
                                "the skill `{name}` in {} takes precedence",
                                winner.path.display()
                            ),
                            path,
                        });
                        continue;
                    }
                    catalog.skills.push(Skill {
                        name,
                        description,
                        dir,
                        path,
                    });
                }
                Err(reason) => {
                    tracing::warn!("skipping skill {}: {reason}", path.display());
                    catalog.skipped.push(SkippedSkill { path, reason });
                }
            }
        }
    }
    catalog.skills.sort_by(|a, b| a.name.cmp(&b.name));
    catalog
}

impl SkillCatalog {
    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skill names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    /// The system-prompt section listing the skills (names and descriptions only); empty when
    /// there are none.
    pub fn prompt_block(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "\n# Skills\nSkills are instructions for particular kinds of task, kept in folders. \
             When a task matches a skill's description, call read_skill with its name before \
             you start, and follow it.\n",
        );
        for skill in &self.skills {
            let description = skill
                .description
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            s.push_str(&format!("- {}: {description}\n", skill.name));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_split_handles_crlf_bom_and_dots() {
        let (yaml, body) =
            split_front_matter("\u{feff}---\r\nname: a\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(yaml, "name: a\r\n");
        assert_eq!(body, "Body\r\n");
        let (yaml, body) = split_front_matter("---\ndescription: d\n...\nrest").unwrap();
        assert_eq!((yaml, body), ("description: d\n", "rest"));
        assert!(split_front_matter("# no front matter\n").is_err());
        assert!(split_front_matter("---\nname: a\n").is_err());
    }

    #[test]
    fn names_and_descriptions_are_validated() {
        assert_eq!(
            parse_skill("---\ndescription: 'Quoted: yes'\n---\n", "folder").unwrap(),
            ("folder".to_string(), "Quoted: yes".to_string())
        );
        assert!(
            parse_skill("---\nname: two words\ndescription: d\n---\n", "f")
                .unwrap_err()
                .contains("whitespace")
        );
        assert!(
            parse_skill("---\nname: x\n---\n", "f")
                .unwrap_err()
                .contains("description")
        );
        assert!(
            parse_skill("---\n---\n", "f")
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            parse_skill("---\ndescription: [unclosed\n---\n", "f")
                .unwrap_err()
                .contains("YAML")
        );
    }
}
