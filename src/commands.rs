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

#[cfg(test)]
mod tests;

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

/// The `/init` prompt.
const INIT_PROMPT: &str = include_str!("../assets/init.md");

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

/// The directories searched, highest precedence first, each with its origin and whether
/// subfolders count.
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
    let mut winners: HashMap<String, PathBuf> = HashMap::new();
    for (dir, origin) in dirs {
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
            if let Some(winner) = winners.get(&name) {
                let reason = format!("/{name} in {} takes precedence", winner.display());
                catalog.skipped.push(skip(reason, false));
                continue;
            }
            if catalog.commands.len() >= MAX_COMMANDS {
                let reason = format!("there are more than {MAX_COMMANDS} commands");
                catalog.skipped.push(skip(reason, true));
                continue;
            }
            match load(&path, &name, origin, trust) {
                Ok(cmd) => {
                    winners.insert(name, path.clone());
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

/// Reads one command file.
fn load(
    path: &Path,
    name: &str,
    origin: Origin,
    trust: &ProjectTrust,
) -> Result<CustomCommand, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if size > MAX_BYTES {
        return Err(format!(
            "it is {size} bytes; a command file may have at most {MAX_BYTES}"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
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
        changes.push(format!("model = {}", visible(m)));
    }
    if !cmd.allowed_tools.is_empty() {
        changes.push(format!(
            "allowed-tools = {}",
            visible(&cmd.allowed_tools.join(", "))
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
            visible(&cmd.name),
            changes.join(", ")
        ),
        &value,
    )
}

/// `text` with control characters escaped, so a crafted file cannot hide part of what it asks.
fn visible(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let out: Vec<char> = if c.is_control() {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            out
        })
        .collect()
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

/// A command file's parts.
#[derive(Debug, Default, PartialEq, Eq)]
struct Parsed {
    description: Option<String>,
    argument_hint: Option<String>,
    model: Option<String>,
    allowed_tools: Vec<String>,
    body: String,
}

/// Splits off and reads the front matter (none is fine: the whole file is the prompt).
fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.lines().next().map(str::trim_end) != Some("---") {
        return Ok(Parsed {
            body: text.to_string(),
            ..Parsed::default()
        });
    }
    let (yaml, body) = crate::skills::split_front_matter(text)?;
    let map = front_matter(yaml)?;
    let field = |key: &str| map.get(key).cloned();
    let scalar = |key: &str| -> Result<Option<String>, String> {
        match field(key) {
            None => Ok(None),
            Some(Field::Text(t)) => Ok(Some(t).filter(|t| !t.is_empty())),
            // `argument-hint: [message]` is YAML for a list; Claude Code shows it as written.
            Some(Field::List(items)) if key == "argument-hint" => Ok(Some(
                items
                    .iter()
                    .map(|i| format!("[{i}]"))
                    .collect::<Vec<_>>()
                    .join(" "),
            )),
            Some(Field::List(_)) => Err(format!("its `{key}` is a list, not one value")),
        }
    };
    let allowed_tools = match field("allowed-tools") {
        None => Vec::new(),
        Some(Field::List(items)) => items,
        Some(Field::Text(t)) => split_tools(&t),
    };
    Ok(Parsed {
        description: scalar("description")?,
        argument_hint: scalar("argument-hint")?,
        model: scalar("model")?,
        allowed_tools,
        body: body.to_string(),
    })
}

/// A front matter value rein reads.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Text(String),
    List(Vec<String>),
}

/// The front matter's keys. Valid YAML is read as YAML; Claude Code accepts lines YAML does
/// not (`argument-hint: [pr] [priority]`), so a file YAML refuses is read line by line as
/// `key: value`, and only a file neither way can read is refused.
fn front_matter(yaml: &str) -> Result<HashMap<String, Field>, String> {
    match serde_norway::from_str::<serde_norway::Value>(yaml) {
        Ok(serde_norway::Value::Mapping(map)) => {
            let mut out = HashMap::new();
            for (k, v) in map {
                let Some(key) = k.as_str() else { continue };
                if let Some(field) = yaml_field(&v) {
                    out.insert(key.to_string(), field);
                }
            }
            Ok(out)
        }
        Ok(serde_norway::Value::Null) => Ok(HashMap::new()),
        Ok(_) => Err("its front matter is not a list of `key: value` lines".into()),
        Err(e) => lenient_front_matter(yaml)
            .ok_or_else(|| format!("its front matter is not valid YAML: {e}")),
    }
}

fn yaml_field(v: &serde_norway::Value) -> Option<Field> {
    use serde_norway::Value;
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match v {
        Value::Sequence(items) => Some(Field::List(items.iter().filter_map(scalar).collect())),
        Value::Null => None,
        other => scalar(other).map(Field::Text),
    }
}

/// `key: value` lines, values as written; `None` when a line is neither that nor blank or a
/// comment.
fn lenient_front_matter(yaml: &str) -> Option<HashMap<String, Field>> {
    let mut out = HashMap::new();
    for line in yaml.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (key, value) = t.split_once(':')?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        out.insert(key.to_string(), Field::Text(value.to_string()));
    }
    Some(out)
}

/// `Bash(git add:*), Bash(git status:*) Read` → one entry each (commas or spaces between,
/// none inside parentheses).
fn split_tools(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Splits arguments like a shell would for words: spaces separate, quotes group.
pub fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Fills in `$ARGUMENTS` (the whole argument text), `$1`…`$9` (the words) and `$NAME` (from
/// `NAME=value` words, Codex's named arguments; a `$NAME` no word names stays as written, so a
/// shell snippet's `$HOME` survives). `$$` is a literal `$` in Codex prompts (`codex`). When the
/// body has no placeholder at all, the arguments are appended (`ARGUMENTS: …`, as Claude Code
/// does), so they never get lost.
pub fn substitute(body: &str, args: &str, codex: bool) -> String {
    let args = args.trim();
    let words = split_args(args);
    let named: HashMap<&str, &str> = words
        .iter()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| is_placeholder_name(k))
        .collect();
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if codex && after.starts_with('$') {
            out.push('$');
            rest = &after[1..];
            continue;
        }
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
            continue;
        }
        let mut chars = after.chars();
        if let Some(d) = chars
            .next()
            .and_then(|c| c.to_digit(10))
            .filter(|d| *d >= 1)
        {
            out.push_str(words.get(d as usize - 1).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
            continue;
        }
        let len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        let key = &after[..len];
        if let Some(value) = named.get(key).filter(|_| is_placeholder_name(key)) {
            out.push_str(value);
            used = true;
            rest = &after[len..];
            continue;
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

/// `FILE`, `TICKET_ID`: an upper-case placeholder name.
fn is_placeholder_name(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `allowed-tools` entries as bash patterns rein's policy understands: `Bash(git add:*)` is
/// `git add *`, `Bash(npm test)` is `npm test`. Other entries (rein asks for file tools by
/// path and the mode decides edits) are returned apart so the person hears they do nothing.
fn bash_patterns(tools: &[String]) -> (Vec<String>, Vec<String>) {
    let mut patterns = Vec::new();
    let mut other = Vec::new();
    for t in tools {
        let inner = t
            .strip_prefix("Bash(")
            .and_then(|r| r.strip_suffix(')'))
            .map(str::trim);
        match inner {
            Some(p) if !p.is_empty() && p != "*" && p != ":*" => {
                let p = match p.strip_suffix(":*") {
                    Some(prefix) => format!("{} *", prefix.trim_end()),
                    None => p.to_string(),
                };
                patterns.push(p);
            }
            _ => other.push(t.clone()),
        }
    }
    (patterns, other)
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

    /// Notices about broken files, one each.
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
                visible(&other.join(", "))
            ));
        }
        out
    }
}

/// The `/init` prompt; `existing` when the workspace has an `AGENTS.md` already.
pub fn init_prompt(existing: bool, args: &str) -> String {
    let mut text = INIT_PROMPT.trim_end().to_string();
    if existing {
        text.push_str(
            "\n\nAGENTS.md exists already: read it first, keep what is still right, and improve \
             it with str_replace (or write_file for the whole file) rather than starting over.",
        );
    } else {
        text.push_str("\n\nThere is no AGENTS.md yet: create it with write_file.");
    }
    if !args.trim().is_empty() {
        text.push_str(&format!("\n\nAlso: {}", args.trim()));
    }
    text
}
