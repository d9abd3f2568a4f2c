//! Custom slash commands: Markdown prompts the person runs as `/name args`.
//!
//! Searched, highest precedence first (the first command of a name wins; builtin commands are
//! never shadowed):
//! `<project>/.rein/commands/`, `<project>/.claude/commands/` (Claude Code's),
//! `<config dir>/commands/` (rein's user config dir), `~/.claude/commands/`,
//! `~/.codex/prompts/` (Codex's, top level only). `<project>` is the repository root (else the
//! working directory), as for skills. A subfolder is a namespace:
//! `.claude/commands/frontend/component.md` is `/frontend:component`.
//!
//! A file is a prompt with optional YAML front matter: `description` (the popup shows it; else
//! the first line of the body), `argument-hint`, and Claude Code's `model` and `allowed-tools`.
//! Those two change what runs, so a project command that sets them is a [`TrustItem`]: until the
//! person trusts the project they are ignored and the command is a plain prompt. The body is
//! only text the person chooses to send, so it needs no trust.

use crate::protocol::CommandInfo;
use crate::trust::{ProjectTrust, TrustItem};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod expand;
mod parse;
#[cfg(test)]
mod tests;

use expand::bash_patterns;
pub use expand::{init_prompt, split_args, substitute};
use parse::parse;

/// Names rein's front ends handle themselves: a custom command of such a name never runs.
pub const BUILTIN: &[&str] = &[
    "help",
    "clear",
    "compact",
    "model",
    "mode",
    "permissions",
    "resume",
    "rename",
    "fork",
    "rewind",
    "undo",
    "todos",
    "diff",
    "skills",
    "mcp",
    "memory",
    "copy",
    "quit",
    "exit",
    "init",
    "hooks",
];

/// Files larger than this are skipped (a prompt, not a data file).
const MAX_BYTES: u64 = 64 * 1024;
/// Folders deeper than this are not searched (namespaces are short).
const MAX_DEPTH: usize = 3;
/// Commands per catalog: the rest are skipped with a notice.
const MAX_COMMANDS: usize = 500;

/// Whose file a command is, which decides precedence and trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `<project>/.rein/commands/`.
    Project,
    /// `<project>/.claude/commands/`.
    ProjectClaude,
    /// `<config dir>/commands/`.
    User,
    /// `~/.claude/commands/`.
    UserClaude,
    /// `~/.codex/prompts/`.
    UserCodex,
}

impl Origin {
    /// Whether the repository supplied it (then `model` and `allowed-tools` need trust).
    pub fn is_project(self) -> bool {
        matches!(self, Origin::Project | Origin::ProjectClaude)
    }

    /// How the popup names it.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Project => "project",
            Origin::ProjectClaude => "project .claude",
            Origin::User => "user",
            Origin::UserClaude => "user ~/.claude",
            Origin::UserCodex => "user ~/.codex",
        }
    }
}

/// Whether a command's `model` / `allowed-tools` apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// It sets neither, or it is the person's own file.
    Open,
    /// A project command the person trusted.
    Trusted,
    /// A project command not trusted yet: it runs as a plain prompt.
    Untrusted(TrustItem),
}

/// One usable command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomCommand {
    /// The name after the slash (`review`, `frontend:component`).
    pub name: String,
    /// What it does (front matter `description`, else the body's first line).
    pub description: String,
    /// Front matter `argument-hint` (empty when none).
    pub argument_hint: String,
    /// Whose file it is.
    pub origin: Origin,
    /// The file.
    pub path: PathBuf,
    /// The prompt, front matter removed.
    pub body: String,
    /// Front matter `model`: the model for the turn it starts.
    pub model: Option<String>,
    /// Front matter `allowed-tools`, one entry each (`Bash(git add:*)`).
    pub allowed_tools: Vec<String>,
    /// Whether `model` and `allowed-tools` apply.
    pub gate: Gate,
}

/// A command file that was not used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedCommand {
    /// The file.
    pub path: PathBuf,
    /// Why, in words.
    pub reason: String,
    /// Whether the person should hear of it (a broken file); shadowed files are only logged.
    pub notice: bool,
}

/// The commands of a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandCatalog {
    /// Usable commands, sorted by name.
    pub commands: Vec<CustomCommand>,
    /// Files left out.
    pub skipped: Vec<SkippedCommand>,
}

/// A command ready to run: what the model gets and what the turn changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expanded {
    /// The prompt sent as the user message.
    pub text: String,
    /// The model for this turn, when the command sets one and may.
    pub model: Option<String>,
    /// Bash patterns allowed without asking during this turn (`git add *`).
    pub allow_bash: Vec<String>,
    /// Notices for the person (ignored settings).
    pub notices: Vec<String>,
}

/// The directories searched, highest precedence first, each with its origin.
fn search_dirs(home: Option<&Path>, config_dir: &Path, cwd: &Path) -> Vec<(PathBuf, Origin)> {
    let root = crate::repo::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs = vec![
        (root.join(".rein").join("commands"), Origin::Project),
        (root.join(".claude").join("commands"), Origin::ProjectClaude),
        (config_dir.join("commands"), Origin::User),
    ];
    if let Some(home) = home {
        dirs.push((home.join(".claude").join("commands"), Origin::UserClaude));
        dirs.push((home.join(".codex").join("prompts"), Origin::UserCodex));
    }
    // Started in the home directory, `.claude/commands` is both: search it once, as the user's.
    let key = |d: &Path| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf());
    let user_keys: Vec<PathBuf> = dirs
        .iter()
        .filter(|(_, o)| !o.is_project())
        .map(|(d, _)| key(d))
        .collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    dirs.retain(|(d, origin)| {
        let k = key(d);
        let also_users = origin.is_project() && user_keys.contains(&k);
        let fresh = !(seen.contains(&k) || also_users);
        if fresh {
            seen.push(k);
        }
        fresh
    });
    dirs
}

/// Every `.md` file under `dir` (subfolders to [`MAX_DEPTH`] when `nested`), with the name
/// parts it would have (`["frontend", "component"]`), sorted.
fn markdown_files(dir: &Path, nested: bool) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), Vec::<String>::new())];
    while let Some((at, parts)) = stack.pop() {
        let read = match std::fs::read_dir(&at) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && at == dir => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(format!("cannot read {}: {e}", at.display())),
        };
        for entry in read.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            // Symlinked folders are not followed (no loops); symlinked files are.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                if nested && parts.len() + 1 < MAX_DEPTH {
                    let mut inner = parts.clone();
                    inner.push(name);
                    stack.push((path, inner));
                }
                continue;
            }
            if let Some(stem) = name.strip_suffix(".md") {
                let mut full = parts.clone();
                full.push(stem.to_string());
                found.push((path, full));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `part` may be (part of) a command name.
fn valid_part(part: &str) -> bool {
    !part.is_empty()
        && part
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Whether `name` looks like a command name (`review`, `frontend:component`): what `rein exec`
/// treats as a command after a leading slash.
pub fn is_command_name(name: &str) -> bool {
    name.split(':').all(valid_part)
}

/// Finds the commands for a session started in `cwd`.
pub fn discover(
    home: Option<&Path>,
    config_dir: &Path,
    cwd: &Path,
    trust: &ProjectTrust,
) -> CommandCatalog {
    discover_in(search_dirs(home, config_dir, cwd), trust)
}

/// The commands in `dirs`, highest precedence first.
fn discover_in(dirs: Vec<(PathBuf, Origin)>, trust: &ProjectTrust) -> CommandCatalog {
    let mut catalog = CommandCatalog::default();
    let mut winners: HashMap<String, (PathBuf, Origin)> = HashMap::new();
    for (dir, origin) in dirs {
        if origin.is_project()
            && let Err(reason) = inside_project(&dir)
        {
            catalog.skipped.push(SkippedCommand {
                path: dir,
                reason,
                notice: true,
            });
            continue;
        }
        let files = match markdown_files(&dir, origin != Origin::UserCodex) {
            Ok(f) => f,
            Err(reason) => {
                catalog.skipped.push(SkippedCommand {
                    path: dir,
                    reason,
                    notice: true,
                });
                continue;
            }
        };
        for (path, parts) in files {
            let name = parts.join(":");
            let skip = |reason: String, notice: bool| SkippedCommand {
                path: path.clone(),
                reason,
                notice,
            };
            if !parts.iter().all(|p| valid_part(p)) {
                let reason = format!(
                    "its name /{name} may hold only letters, digits, `-`, `_` and `.` (rename it)"
                );
                catalog.skipped.push(skip(reason, true));
                continue;
            }
            if BUILTIN.contains(&name.as_str()) {
                let reason = format!("the builtin /{name} takes precedence (rename the file)");
                catalog.skipped.push(skip(reason, true));
                continue;
            }
            if let Some((winner, by)) = winners.get(&name) {
                // A repository's command of the same name would be sent as the person's own
                // when they type their usual `/name`: they hear of it.
                let replaces_yours = by.is_project() && !origin.is_project();
                let reason = if replaces_yours {
                    format!(
                        "the project's /{name} ({}) replaces yours; rename one of them to use yours",
                        winner.display()
                    )
                } else {
                    format!("/{name} in {} takes precedence", winner.display())
                };
                catalog.skipped.push(skip(reason, replaces_yours));
                continue;
            }
            if catalog.commands.len() >= MAX_COMMANDS {
                let reason = format!("there are more than {MAX_COMMANDS} commands");
                catalog.skipped.push(skip(reason, true));
                continue;
            }
            match load(&path, &name, origin, trust) {
                Ok(cmd) => {
                    winners.insert(name, (path.clone(), origin));
                    catalog.commands.push(cmd);
                }
                Err(reason) => catalog.skipped.push(skip(reason, true)),
            }
        }
    }
    for s in &catalog.skipped {
        tracing::debug!("command file {} skipped: {}", s.path.display(), s.reason);
    }
    catalog.commands.sort_by(|a, b| a.name.cmp(&b.name));
    catalog
}

/// The project commands whose `model` / `allowed-tools` wait for the person's trust, with
/// their files (for the one trust prompt at start).
pub fn waiting_for_trust(
    home: Option<&Path>,
    cwd: &Path,
    trust: &ProjectTrust,
) -> Vec<(PathBuf, TrustItem)> {
    // Only the project's folders matter here; the user's never need trust.
    // The home is needed to tell `~/.claude/commands` apart when started in the home directory.
    let mut dirs = search_dirs(home, Path::new(""), cwd);
    dirs.retain(|(_, origin)| origin.is_project());
    discover_in(dirs, trust)
        .commands
        .into_iter()
        .filter_map(|c| match c.gate {
            Gate::Untrusted(item) => Some((c.path, item)),
            _ => None,
        })
        .collect()
}

/// A project's commands folder (`<root>/.rein/commands`) must lie inside the project: a
/// repository could point a symbolic link at the person's files and have them sent as a prompt.
fn inside_project(dir: &Path) -> Result<(), String> {
    let Ok(real) = std::fs::canonicalize(dir) else {
        // Missing: nothing to read.
        return Ok(());
    };
    let root = dir.parent().and_then(Path::parent).unwrap_or(dir);
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if real.starts_with(&root) {
        Ok(())
    } else {
        Err(format!(
            "it leads outside the project (to {}); a project's commands must live in it",
            real.display()
        ))
    }
}

/// Reads a command file through one open handle (what is checked is what is read). A
/// project's file must be the file itself (`nofollow`): a symbolic link could point at the
/// person's secrets and send them as a prompt. A pipe or device is refused without blocking.
fn read_file(path: &Path, nofollow: bool) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = libc::O_NONBLOCK | if nofollow { libc::O_NOFOLLOW } else { 0 };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => {
                "it is a symbolic link (a project's command files must be plain files)".to_string()
            }
            _ => format!("cannot read it: {e}"),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "it is {} bytes; a command file may have at most {MAX_BYTES}",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    // Read at most one byte past the cap, in case it grew since.
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "it is over {MAX_BYTES} bytes, the most a command file may have"
        ));
    }
    Ok(bytes)
}

/// Reads one command file.
fn load(
    path: &Path,
    name: &str,
    origin: Origin,
    trust: &ProjectTrust,
) -> Result<CustomCommand, String> {
    let bytes = read_file(path, origin.is_project())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    let parsed = parse(&text)?;
    let mut cmd = CustomCommand {
        name: name.to_string(),
        description: parsed
            .description
            .unwrap_or_else(|| first_line(&parsed.body)),
        argument_hint: parsed.argument_hint.unwrap_or_default(),
        origin,
        path: path.to_path_buf(),
        body: parsed.body,
        model: parsed.model,
        allowed_tools: parsed.allowed_tools,
        gate: Gate::Open,
    };
    if origin.is_project() && (cmd.model.is_some() || !cmd.allowed_tools.is_empty()) {
        let item = trust_item(&cmd);
        cmd.gate = if trust.allows(&item) {
            Gate::Trusted
        } else {
            Gate::Untrusted(item)
        };
    }
    Ok(cmd)
}

/// The trust item of a project command that sets `model` or `allowed-tools`: what it would
/// change, shown, and fingerprinted whole.
fn trust_item(cmd: &CustomCommand) -> TrustItem {
    let mut changes = Vec::new();
    if let Some(m) = &cmd.model {
        changes.push(format!("model = {}", crate::sanitize::visible_line(m)));
    }
    if !cmd.allowed_tools.is_empty() {
        changes.push(format!(
            "allowed-tools = {}",
            crate::sanitize::visible_line(&cmd.allowed_tools.join(", "))
        ));
    }
    let file = cmd
        .path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let value = format!(
        "command-v1\0{}\0{}\0{}",
        cmd.name,
        cmd.model.as_deref().unwrap_or(""),
        cmd.allowed_tools.join("\0")
    );
    TrustItem::new(
        format!("command.{}", cmd.name),
        format!(
            "command /{} (from {file}) sets {}",
            crate::sanitize::visible_line(&cmd.name),
            changes.join(", ")
        ),
        &value,
    )
}

/// The body's first non-empty line, cut short, as a description.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    crate::text::headline(line, 80)
}

impl CommandCatalog {
    /// The command called `name`.
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// What front ends list.
    pub fn infos(&self) -> Vec<CommandInfo> {
        self.commands.iter().map(CustomCommand::info).collect()
    }

    /// Notices about broken files and the person's commands a project's replace, one each.
    pub fn notices(&self) -> Vec<String> {
        self.skipped
            .iter()
            .filter(|s| s.notice)
            .map(|s| format!("Command file {} skipped: {}.", s.path.display(), s.reason))
            .collect()
    }
}

impl CustomCommand {
    /// How front ends list it.
    pub fn info(&self) -> CommandInfo {
        CommandInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            argument_hint: self.argument_hint.clone(),
            origin: self.origin.label().to_string(),
            untrusted: matches!(self.gate, Gate::Untrusted(_)),
        }
    }

    /// The command run with `args`.
    pub fn expand(&self, args: &str) -> Expanded {
        let text = substitute(&self.body, args, self.origin == Origin::UserCodex)
            .trim_end()
            .to_string();
        let mut out = Expanded {
            text,
            model: None,
            allow_bash: Vec::new(),
            notices: Vec::new(),
        };
        if let Gate::Untrusted(item) = &self.gate {
            out.notices.push(format!(
                "/{} ran as a plain prompt: its {} not apply because this project is not \
                 trusted (restart rein here and trust it when asked, or run with --trust).",
                self.name,
                match (&self.model, self.allowed_tools.is_empty()) {
                    (Some(_), false) => "model and allowed-tools do",
                    (Some(_), true) => "model does",
                    _ => "allowed-tools do",
                }
            ));
            tracing::debug!("{} waits for trust", item.id);
            return out;
        }
        out.model = self.model.clone();
        let (patterns, other) = bash_patterns(&self.allowed_tools);
        out.allow_bash = patterns;
        if !other.is_empty() {
            out.notices.push(format!(
                "/{}: allowed-tools {} do nothing in rein (only Bash(…) entries are rules; the \
                 mode decides edits).",
                self.name,
                crate::sanitize::visible_line(&other.join(", "))
            ));
        }
        out
    }
}
