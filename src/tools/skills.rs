//! `read_skill`: the body of a skill (without its front matter) and the folder it lives in.

use super::task::string_arg;
use super::{Access, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::llm::ToolSpec;
use crate::protocol::ToolDisplay;
use crate::skills::{Skill, split_front_matter};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const NAME: &str = "read_skill";

/// The `read_skill` tool.
pub struct ReadSkill;

/// A skill found in the catalog, to load.
struct Load {
    skill: Skill,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

/// Files listed with a skill, at most (deep skill folders are summarised, not dumped).
const MAX_FILES: usize = 50;

/// The skill folder's other files, relative to it (hidden ones left out), sorted.
fn supporting_files(dir: &Path) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    'walk: while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            // file_type does not follow symlinks, so a link loop cannot trap the walk.
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(_) => {
                    let rel = path.strip_prefix(dir).unwrap_or(&path);
                    if rel != Path::new("SKILL.md") {
                        if out.len() == MAX_FILES {
                            more = true;
                            break 'walk;
                        }
                        out.push(rel.display().to_string());
                    }
                }
                Err(_) => {}
            }
        }
    }
    out.sort();
    (out, more)
}

fn unknown(name: &str, ctx: &ToolCtx) -> ToolError {
    let names = ctx.skills.names();
    if names.is_empty() {
        ToolError::new(format!(
            "there is no skill named `{name}`: no skills are installed. Go on without one."
        ))
    } else {
        ToolError::new(format!(
            "there is no skill named `{name}`. Available skills: {}. Call read_skill with one of \
             these names.",
            names.join(", ")
        ))
    }
}

impl Tool for ReadSkill {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Load the instructions of a skill listed in the system prompt. Returns \
                them and the skill's folder (files they mention are relative to it; read them \
                with read_file). Example: {\"name\": \"pdf\"}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."}
                },
                "required": ["name"]
            }),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        match ctx.skills.get(&args.name) {
            Some(skill) => Ok(Box::new(Load {
                skill: skill.clone(),
            })),
            None => Err(unknown(&args.name, ctx)),
        }
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Skill {
            name: string_arg(args, "name"),
        }
    }
}

impl Prepared for Load {
    fn access(&self) -> &Access {
        &Access::None
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Skill {
            name: self.skill.name.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move {
            let skill = self.skill;
            let project =
                crate::repo::repo_root(&ctx.workspace).unwrap_or_else(|| ctx.workspace.clone());
            // Read anew, as discovery did: a link planted since must not lead elsewhere.
            let (path, root) = (skill.path.clone(), project.clone());
            let text = tokio::task::spawn_blocking(move || {
                crate::skills::read_skill_file(&root, &path)
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r)
            .map_err(|e| {
                ToolError::new(format!(
                    "cannot read {}: {e}. The skill may have been removed; go on without it.",
                    skill.path.display()
                ))
            })?;
            let body = match split_front_matter(&text) {
                Ok((_, body)) => body,
                // Edited since discovery into something without front matter: it is all body.
                Err(_) => text.as_str(),
            };
            let dir = skill.dir.clone();
            let (files, more) = tokio::task::spawn_blocking(move || {
                // A project skill's folder swapped for a link out of the project is not listed.
                let physical = crate::sandbox::paths::physical_path;
                let (real, root) = (physical(&dir), physical(&project));
                let inside = matches!((&real, &root), (Some(r), Some(p)) if r.starts_with(p));
                match dir.starts_with(&project) && !inside {
                    true => (Vec::new(), false),
                    false => supporting_files(&dir),
                }
            })
            .await
            .unwrap_or_default();
            let mut out = format!(
                "Skill `{}` (folder: {})\nPaths in these instructions are relative to that folder.\n\n{}",
                skill.name,
                skill.dir.display(),
                body.trim_end()
            );
            if !files.is_empty() {
                out.push_str("\n\nOther files in the skill's folder:\n");
                for f in &files {
                    out.push_str(&format!("- {f}\n"));
                }
                if more {
                    out.push_str(&format!("(only the first {MAX_FILES} are listed)\n"));
                }
            }
            Ok(ToolOutput::ok(out))
        })
    }
}
