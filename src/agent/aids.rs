//! What rein does for a small local model (`small_model`): the pieces that do not live in
//! the loop itself (examples cut from tool descriptions, the workspace's file list, nudges).

mod asked_names;
mod failed_test;
mod option_use;

pub use asked_names::{added_to, definitions_to_add, option_not_added, target_not_changed};
pub use option_use::option_not_used;

use crate::llm::ToolSpec;
use std::path::Path;

/// Files named in the system prompt at most; a longer list costs a small window too much.
const MAX_FILES: usize = 40;

/// The tool descriptions without their `Example: …` sentences: small models copied them
/// ("parse_header" in answers about `sum_to`).
pub fn without_examples(mut specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
    for spec in &mut specs {
        if let Some(at) = spec.description.find("Example:") {
            spec.description.truncate(at);
            let kept = spec.description.trim_end().len();
            spec.description.truncate(kept);
        }
    }
    specs
}

/// A short list of the workspace's files for the system prompt (ignored, hidden and
/// protected entries left out), or nothing for an empty workspace.
pub fn file_list(root: &Path) -> String {
    let walker = workspace_walk(root, 4);
    let mut files = Vec::new();
    let mut more = 0usize;
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(rel) = entry.path().strip_prefix(root).ok().and_then(Path::to_str) else {
            continue;
        };
        if files.len() < MAX_FILES {
            // A name is the repository's text: keep it to one visible line.
            files.push(crate::sanitize::visible_line(rel));
        } else {
            more += 1;
        }
    }
    if files.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n# Files in the workspace\n");
    for f in &files {
        s.push_str("- ");
        s.push_str(f);
        s.push('\n');
    }
    if more > 0 {
        s.push_str(&format!("- … and {more} more\n"));
    }
    s
}

/// A sorted walk of the workspace's files as a small model should see them: no hidden or
/// ignored entries, no `node_modules` or `target`, no links followed, `depth` levels deep.
pub fn workspace_walk(root: &Path, depth: usize) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(depth))
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some("node_modules" | "target")))
        .build()
}

/// What to tell the model after a command that failed: the next step, naming the file the
/// error points at when it names one.
pub fn after_failure(output: &str, exit_code: i32, workspace: &Path) -> String {
    let blamed = blamed_file(output, workspace);
    if let (Some((file, line)), Some((name, module))) = (&blamed, missing_import(output, workspace))
    {
        // A close name the module defines instead is most likely the new name
        // of a rename: the importing file is then the one to change (the 1.5B model, told to
        // fix the module, renamed the definition back and forth).
        if let Some(other) = similar_definition(workspace, &module, &name) {
            return format!(
                "[rein] The command failed (exit {exit_code}). {file} line {line} imports \
                 `{name}` from {module}, which defines `{other}` instead. If `{name}` was renamed \
                 to `{other}`, change the import and every use of `{name}` in {file} to \
                 `{other}` with str_replace; if not, define `{name}` in {module}. Then run the \
                 command again."
            );
        }
        // The frame is the importing line; what is missing is in the module it names.
        return format!(
            "[rein] The command failed (exit {exit_code}). {file} line {line} imports `{name}` \
             from {module}, which does not define it: read {module} with read_file, and define \
             or rename `{name}` there with str_replace (or change the import), then run the \
             command again."
        );
    }
    if let Some((file, line)) = &blamed
        && let Some((name, import, module)) = unimported_name(output, workspace, file)
    {
        // The 1.5B model added a test calling `mul` and left `from mathops import add, sub`
        // as it was; told only where the error is, it changed the test instead.
        return format!(
            "[rein] The command failed (exit {exit_code}). {file} line {line} uses `{name}`, \
             which {module} defines but {file} does not import: change the line `{import}` to \
             `{import}, {name}` with str_replace, then run the command again."
        );
    }
    if let Some((file, line)) = &blamed
        && let Some(note) = failed_test::failed_assertion(output, exit_code, workspace, file, *line)
    {
        return note;
    }
    match blamed {
        Some((file, line)) => format!(
            "[rein] The command failed (exit {exit_code}). The error points at {file} line \
             {line}: read that file with read_file, fix the cause with str_replace, then run \
             the command again."
        ),
        None => format!(
            "[rein] The command failed (exit {exit_code}). Read the error above, read the file \
             it is about with read_file, fix it, then run the command again."
        ),
    }
}

/// The last workspace file a Python traceback or a compiler error points at (relative to the
/// workspace; library frames outside it are skipped).
fn blamed_file(output: &str, workspace: &Path) -> Option<(String, u32)> {
    let mut found = None;
    for line in output.lines() {
        let line = line.trim();
        let Some((file, n)) = python_frame(line).or_else(|| compiler_location(line)) else {
            continue;
        };
        let path = Path::new(file);
        let rel = if path.is_absolute() {
            path.strip_prefix(workspace).ok()
        } else {
            Some(path).filter(|_| !file.starts_with('<'))
        };
        if let Some(rel) = rel.and_then(Path::to_str).filter(|r| !r.is_empty()) {
            found = Some((crate::sanitize::visible_line(rel), n));
        }
    }
    found
}

/// Python's `ImportError: cannot import name 'x' from 'mod' (/ws/mod.py)` for a module in the
/// workspace: the name and the module's file (relative, printable).
fn missing_import(output: &str, workspace: &Path) -> Option<(String, String)> {
    output.lines().find_map(|line| {
        let rest = line.split_once("cannot import name '")?.1;
        let (name, rest) = rest.split_once('\'')?;
        let path = rest.split_once(" (")?.1.strip_suffix(')')?;
        let rel = Path::new(path).strip_prefix(workspace).ok()?.to_str()?;
        let plain = |s: &str| s.chars().all(|c| c.is_alphanumeric() || c == '_');
        (plain(name) && !rel.is_empty()).then(|| {
            (
                crate::sanitize::visible_line(name),
                crate::sanitize::visible_line(rel),
            )
        })
    })
}

/// Python's `NameError: name 'x' is not defined` raised in `file`, which imports names
/// from a workspace module that defines `x` at its top level (`from mathops import add`):
/// the name, that import line and the module's file.
fn unimported_name(output: &str, workspace: &Path, file: &str) -> Option<(String, String, String)> {
    let name = output.lines().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("NameError: name '")?;
        Some(rest.split_once('\'')?.0)
    })?;
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let (import, module) = import_defining(workspace, file, name)?;
    Some((crate::sanitize::visible_line(name), import, module))
}

/// The line of the workspace's Python `file` that imports from a workspace module defining
/// `name` at its top level (`from mathops import add`), and that module's file; both made
/// safe to show.
pub(super) fn import_defining(
    workspace: &Path,
    file: &str,
    name: &str,
) -> Option<(String, String)> {
    let text = read_module(workspace, file)?;
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    text.lines().find_map(|line| {
        let rest = line.trim_end().strip_prefix("from ")?;
        let (module, names) = rest.split_once(" import ")?;
        let plain = |s: &str| {
            s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        };
        if !plain(module) || module.starts_with('.') || !plain(&names.replace([',', ' '], "")) {
            return None;
        }
        let rel = format!("{}.py", module.replace('.', "/"));
        [dir.join(&rel), Path::new(&rel).to_path_buf()]
            .into_iter()
            .find(|m| {
                read_module(workspace, &m.to_string_lossy())
                    .is_some_and(|src| top_level_names(&src).any(|d| d == name))
            })
            .map(|m| {
                let shown = crate::sanitize::visible_line;
                (shown(line.trim_end()), shown(&m.to_string_lossy()))
            })
    })
}

/// Largest module read for its names.
const MAX_MODULE_BYTES: u64 = 256 * 1024;

/// The text of the workspace's Python file `module` (relative), opened without following
/// links, and only if it is a small regular file.
fn read_module(workspace: &Path, module: &str) -> Option<String> {
    use std::io::Read;
    let rel = Path::new(module);
    if !rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    let file = crate::tools::files::anchor::open_file(&workspace.join(rel)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_MODULE_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_MODULE_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The top-level name the Python module `module` (relative to `workspace`) defines that is
/// closest to `name`, if one is close (`get_user` for `get_usr`; the same measure as
/// `str_replace`'s closest line). The module is opened without following links, and only if
/// it is a small regular file.
fn similar_definition(workspace: &Path, module: &str, name: &str) -> Option<String> {
    let text = read_module(workspace, module)?;
    let names: Vec<&str> = top_level_names(&text).filter(|d| *d != name).collect();
    let closest = similar::get_close_matches(name, &names, 1, 0.8);
    closest.first().map(|d| crate::sanitize::visible_line(d))
}

/// The names a Python module defines at its top level: functions, classes and assignments.
fn top_level_names(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let rest = line
            .strip_prefix("async def ")
            .or_else(|| line.strip_prefix("def "))
            .or_else(|| line.strip_prefix("class "))
            .unwrap_or(line);
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let defines = rest.len() < line.len()
            || rest[end..].trim_start().starts_with('=')
                && !rest[end..].trim_start().starts_with("==");
        (!name.is_empty() && defines && !name.starts_with(|c: char| c.is_ascii_digit()))
            .then_some(name)
    })
}

/// `File "calc.py", line 12, in sum_to`.
fn python_frame(line: &str) -> Option<(&str, u32)> {
    let rest = line.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once('"')?;
    let n = rest.strip_prefix(", line ")?;
    let n: String = n.chars().take_while(char::is_ascii_digit).collect();
    Some((file, n.parse().ok()?))
}

/// `--> src/main.rs:3:5` (rustc).
fn compiler_location(line: &str) -> Option<(&str, u32)> {
    let rest = line.strip_prefix("--> ")?;
    let mut parts = rest.split(':');
    let file = parts.next()?;
    let n = parts.next()?.parse().ok()?;
    Some((file, n))
}

/// Whether an answer shows code in a fenced block (of at least two lines) instead of
/// writing it: what small models do when asked for a change.
pub fn shows_code(text: &str) -> bool {
    let mut inside = false;
    let mut lines = 0;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            if inside && lines >= 2 {
                return true;
            }
            inside = !inside;
            lines = 0;
        } else if inside {
            lines += 1;
        }
    }
    false
}

/// The nudge after an answer that showed code and changed nothing (sent once per message).
pub const CODE_NOT_WRITTEN: &str = "[rein] Your answer shows code, but no file was changed. \
    If the task asks for a change, make it now: str_replace (or write_file for a new file), \
    then run the check with bash. If it asked only a question, give your answer again.";

/// The nudge after an answer that ends a task asking for a change with no file changed.
pub const CHANGE_NOT_MADE: &str = "[rein] No file was changed yet, but the task asks for a \
    change. Make it now with str_replace (or write_file for a new file), then check it with \
    bash. Do not say it is done before it is.";

/// Files named in the task, at most this many.
const NAMED_FILES: usize = 4;

/// [`CHANGE_NOT_MADE`], naming the files the task names: one that does not exist yet is to
/// be created with write_file; those that do are listed. (The 1.5B model, told only "make the
/// change", edited the input file of a task that asked for a new script.)
pub fn change_not_made(task: &str, workspace: &std::path::Path) -> String {
    let named = named_files(task);
    let (present, missing): (Vec<&String>, Vec<&String>) =
        named.iter().partition(|f| workspace.join(f).exists());
    let list = |files: &[&String]| {
        files
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut nudge = CHANGE_NOT_MADE.to_string();
    if !missing.is_empty() {
        nudge.push_str(&format!(
            " The task names {}, which does not exist yet: create it with write_file, giving \
             its whole content.",
            list(&missing)
        ));
    }
    // Named is not always to be changed ("keep the tests in test_x.py passing"): a list only.
    if !present.is_empty() {
        nudge.push_str(&format!(
            " Files the task names: {}; read before you change one.",
            list(&present)
        ));
    }
    nudge
}

/// The file names a message mentions (`count_words.py`, `src/app.rs`; see
/// `code_blocks::path_tokens`) that look like files, not numbers or abbreviations (`1.5`,
/// `e.g`), in order, without repeats.
pub fn named_files(message: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in super::code_blocks::path_tokens(message) {
        let Some((stem, ext)) = word.rsplit_once('.') else {
            continue;
        };
        let is_file = !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
            && !["e.g", "i.e"].contains(&word.to_lowercase().as_str());
        if is_file && !out.contains(&word) && out.len() < NAMED_FILES {
            out.push(word);
        }
    }
    out
}

/// Programs whose command line, in backticks in a task, is a check the task asks to run.
const RUNNERS: &[&str] = &[
    "python", "python3", "pytest", "bash", "sh", "node", "npm", "npx", "cargo", "go", "make",
    "ruby", "perl", "deno", "bun", "uv",
];

/// The command a task names in backticks to run (`` `python3 app.py` must still work ``).
pub fn named_command(task: &str) -> Option<String> {
    task.split('`').skip(1).step_by(2).find_map(|span| {
        let first = span.split_whitespace().next()?;
        let runs = RUNNERS.contains(&first) && span.split_whitespace().count() > 1;
        (runs || first.starts_with("./")).then(|| crate::sanitize::visible_line(span.trim()))
    })
}

/// [`CHANGE_NOT_CHECKED`], naming the command the task gives, if it gives one.
pub fn change_not_checked(task: Option<&str>) -> String {
    match task.and_then(named_command) {
        Some(command) => format!(
            "[rein] You changed files and have not run `{command}` since, which the task names. \
             Run it now with bash and fix what fails. If nothing can be run, answer again."
        ),
        None => CHANGE_NOT_CHECKED.to_string(),
    }
}

/// The nudge after an answer that ends a run whose last change came after its last command
/// (the 1.5B model ran the tests, edited, never ran them again, and said they passed). Not
/// sent where no command ran at all: then there is no check to repeat.
pub const CHANGE_NOT_CHECKED: &str = "[rein] You changed files after the last command you \
    ran, so the change is not checked yet. Run the check now with bash (the tests, or the \
    script or program the task names) and fix what fails. If nothing can be run, answer again.";

/// Whether the person's message asks for a change to files (a small model's claim of "done"
/// without one is sent back); a message that says not to edit does not.
pub fn asks_for_change(message: &str) -> bool {
    let lower = message.to_lowercase();
    let refuses = [
        "do not edit",
        "don't edit",
        "do not change any",
        "don't change any",
    ];
    if refuses.iter().any(|r| lower.contains(r)) {
        return false;
    }
    const VERBS: &[&str] = &[
        "add",
        "fix",
        "write",
        "create",
        "change",
        "rename",
        "refactor",
        "implement",
        "update",
        "remove",
        "delete",
        "document",
        "replace",
        "edit",
        "make",
    ];
    lower
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| VERBS.contains(&w))
}

/// The nudge after an answer that gave up right after a failed call.
pub const GAVE_UP_AFTER_ERROR: &str = "[rein] Your last call failed, and the task is not \
    finished. Do what the error message says and call the tool again now.";

/// [`GAVE_UP_AFTER_ERROR`] at most this often in a run (again only after another failure):
/// the 1.5B model, after a second failed test run whose note named the function to fix,
/// answered with a sentence and the run ended with the test failing.
pub const MAX_AFTER_ERROR: u8 = 2;

/// Which end-of-run nudges were sent in this run of the loop.
#[derive(Default)]
pub struct Asked {
    /// [`CODE_NOT_WRITTEN`].
    pub code: bool,
    /// [`GAVE_UP_AFTER_ERROR`], up to [`MAX_AFTER_ERROR`].
    pub after_errors: u8,
    /// [`CHANGE_NOT_MADE`].
    pub change: bool,
    /// [`CHANGE_NOT_CHECKED`], since the last command ran.
    pub check: bool,
    /// [`CHANGE_NOT_CHECKED`] in the run.
    pub checks: u8,
    /// [`target_not_changed`].
    pub target: bool,
    /// [`option_not_added`].
    pub option: bool,
    /// [`option_not_used`].
    pub option_used: bool,
}

/// [`CHANGE_NOT_CHECKED`] at most this often in a run, and again only after a command ran:
/// a fix that follows a failed check is left unchecked as often as the first change (the
/// 1.5B model fixed report.py's import after `python3 app.py` failed, and stopped).
pub const MAX_CHECKS: u8 = 3;

/// The small tool set: no subagent (the 1.5B model picked `task` for everything), unless
/// the person's message names it.
pub fn small_tools(tools: Vec<ToolSpec>, message: &str) -> Vec<ToolSpec> {
    tools
        .into_iter()
        .filter(|t| t.name != "task" || names_tool(message, &t.name))
        .collect()
}

/// The tools of a forced first step: the ones that look (reading files, running commands)
/// and any tool the person's message names ("use the write_file tool" is an instruction);
/// all of them when none of those is offered.
pub fn look_tools(tools: Vec<ToolSpec>, message: &str) -> Vec<ToolSpec> {
    let look: Vec<ToolSpec> = tools
        .iter()
        .filter(|t| matches!(t.name.as_str(), "read_file" | "bash") || names_tool(message, &t.name))
        .cloned()
        .collect();
    if look.is_empty() { tools } else { look }
}

/// Whether `message` names the tool `name`: as a whole word when the name is an identifier
/// (`write_file`), and for a plain word (`task`, `bash`) only as `` `task` `` or "task tool",
/// since "the task" is ordinary English.
pub fn names_tool(message: &str, name: &str) -> bool {
    let lower = message.to_lowercase();
    if name.contains('_') {
        return lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name);
    }
    lower.contains(&format!("`{name}`")) || lower.contains(&format!("{name} tool"))
}

/// Whether a `write_todos` call's list has a step that is not completed.
pub(super) fn todos_left(arguments: &str) -> bool {
    let Ok(args) = serde_json::from_str::<serde_json::Value>(arguments) else {
        return false;
    };
    args.get("todos")
        .and_then(|t| t.as_array())
        .is_some_and(|todos| {
            todos
                .iter()
                .any(|t| t.get("status").and_then(|s| s.as_str()) != Some("completed"))
        })
}

/// The first step of a `write_todos` call's list that is not completed (one visible line).
pub(super) fn next_todo(arguments: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let step = args
        .get("todos")?
        .as_array()?
        .iter()
        .find(|t| t.get("status").and_then(|s| s.as_str()) != Some("completed"))?;
    let content = step.get("content")?.as_str()?.trim();
    (!content.is_empty()).then(|| crate::sanitize::visible_line(content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_todo_list_has_steps_left_unless_every_one_is_completed() {
        let list = |statuses: &[&str]| {
            let todos: Vec<_> = statuses
                .iter()
                .map(|s| serde_json::json!({"content": "step", "status": s}))
                .collect();
            serde_json::json!({ "todos": todos }).to_string()
        };
        assert!(todos_left(&list(&["completed", "pending"])));
        assert!(todos_left(&list(&["in_progress"])));
        assert!(!todos_left(&list(&["completed", "completed"])));
        assert!(!todos_left(&list(&[])));
        assert!(!todos_left("{\"todos\": "));
        let two = serde_json::json!({"todos": [
            {"content": "Add the option", "status": "completed"},
            {"content": "Add its test", "status": "pending"},
        ]});
        assert_eq!(next_todo(&two.to_string()).as_deref(), Some("Add its test"));
        assert_eq!(next_todo(&list(&["completed"])), None);
    }

    #[test]
    fn the_command_a_task_names_is_found() {
        let task = "Rename `get_usr` to `get_user`. The program `python3 app.py` must still work.";
        assert_eq!(named_command(task).as_deref(), Some("python3 app.py"));
        assert_eq!(named_command("Fix `./run.sh`").as_deref(), Some("./run.sh"));
        assert_eq!(named_command("Use `python` here, and `bash` there."), None);
        assert!(change_not_checked(Some(task)).contains("have not run `python3 app.py` since"));
        assert_eq!(change_not_checked(Some("Fix calc.py")), CHANGE_NOT_CHECKED);
    }

    #[test]
    fn a_missing_import_points_at_the_module_that_lacks_the_name() {
        let ws = Path::new("/w/ws");
        let out = "Traceback (most recent call last):\n  File \"/w/ws/app.py\", line 2, in <module>\n    \
                   from users import get_user\nImportError: cannot import name 'get_user' from \
                   'users' (/w/ws/users.py)\n";
        let note = after_failure(out, 1, ws);
        assert!(
            note.contains("app.py line 2 imports `get_user` from users.py, which does not define it: read users.py"),
            "{note}"
        );
        // A library's module is not the workspace's to fix: the frame stands.
        let lib = out.replace("(/w/ws/users.py)", "(/usr/lib/python3/users.py)");
        assert!(after_failure(&lib, 1, ws).contains("points at app.py line 2"));
    }

    #[test]
    fn a_name_used_but_not_imported_names_the_import_to_extend() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(
            ws.join("mathops.py"),
            "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        )
        .unwrap();
        let tests = "import unittest\n\nfrom mathops import add\n\n\nclass T(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
        std::fs::write(ws.join("test_mathops.py"), tests).unwrap();
        let out = format!(
            "E\n======\nERROR: test_mul (__main__.T.test_mul)\n------\nTraceback (most recent call \
             last):\n  File \"{}/test_mathops.py\", line 8, in test_mul\n    \
             self.assertEqual(mul(2, 3), 6)\n                     ^^^\nNameError: name 'mul' is \
             not defined\n",
            ws.display()
        );
        let note = after_failure(&out, 1, &ws);
        assert!(
            note.contains("test_mathops.py line 8 uses `mul`, which mathops.py defines but test_mathops.py does not import: change the line `from mathops import add` to `from mathops import add, mul`"),
            "{note}"
        );
        // A name no imported module defines: only the place of the error.
        let other = out.replace("'mul'", "'div'");
        assert!(after_failure(&other, 1, &ws).contains("points at test_mathops.py line 8"));
        // An imported module reached through a link is not read.
        std::fs::rename(ws.join("mathops.py"), ws.join("real.py")).unwrap();
        std::os::unix::fs::symlink(ws.join("real.py"), ws.join("mathops.py")).unwrap();
        assert!(after_failure(&out, 1, &ws).contains("points at test_mathops.py line 8"));
    }

    #[test]
    fn a_name_the_module_defines_instead_is_named_as_the_likely_rename() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let users = "USERS = {1: 'ada'}\n\n\ndef get_user(uid):\n    return USERS.get(uid)\n\n\nclass Store:\n    def get_usr_x(self):\n        pass\n";
        std::fs::write(ws.join("users.py"), users).unwrap();
        let out = format!(
            "Traceback (most recent call last):\n  File \"{0}/report.py\", line 1, in <module>\n    \
             from users import get_usr\nImportError: cannot import name 'get_usr' from 'users' \
             ({0}/users.py)\n",
            ws.display()
        );
        let note = after_failure(&out, 1, &ws);
        assert!(
            note.contains("report.py line 1 imports `get_usr` from users.py, which defines `get_user` instead. If `get_usr` was renamed to `get_user`, change the import and every use of `get_usr` in report.py"),
            "{note}"
        );
        // Nothing close: the module is the place to look.
        let far = out.replace("get_usr", "fetch_all");
        assert!(after_failure(&far, 1, &ws).contains("which does not define it"));
        // A module reached through a link is not read.
        std::fs::rename(ws.join("users.py"), ws.join("real.py")).unwrap();
        std::os::unix::fs::symlink(ws.join("real.py"), ws.join("users.py")).unwrap();
        assert!(after_failure(&out, 1, &ws).contains("which does not define it"));
    }

    #[test]
    fn top_level_names_are_definitions_and_assignments() {
        let text = "import os\nX = 1\nY == 2\ndef f(a):\n    inner = 3\nasync def g():\n    pass\nclass K(Base):\n    pass\nif X:\n    pass\n";
        assert_eq!(
            top_level_names(text).collect::<Vec<_>>(),
            ["X", "f", "g", "K"]
        );
    }

    #[test]
    fn the_files_a_task_names_are_found() {
        let task = "Write a Python script count_words.py that prints the words in notes.txt. \
                    Edit `src/app.rs` (and src/app.rs again), see https://x.io/a.html, \
                    not /etc/passwd.x or ../up.py, version 1.5 or e.g. or 3.14.";
        assert_eq!(
            named_files(task),
            ["count_words.py", "notes.txt", "src/app.rs"]
        );
    }

    #[test]
    fn the_nudge_for_a_change_not_made_says_which_file_to_create_and_which_to_edit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "a b\n").unwrap();
        let nudge = change_not_made(
            "Write a script count_words.py that counts the words in notes.txt.",
            dir.path(),
        );
        assert!(nudge.starts_with(CHANGE_NOT_MADE), "{nudge}");
        assert!(
            nudge.contains("`count_words.py`, which does not exist yet: create it with write_file"),
            "{nudge}"
        );
        assert!(
            nudge.contains("Files the task names: `notes.txt`;"),
            "{nudge}"
        );
        assert_eq!(change_not_made("Fix the bug.", dir.path()), CHANGE_NOT_MADE);
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        }
    }

    fn names(specs: &[ToolSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn a_tool_the_person_names_is_offered() {
        let all = || {
            ["read_file", "write_file", "str_replace", "bash", "task"]
                .map(spec)
                .to_vec()
        };
        let first = look_tools(all(), "Use the write_file tool to create hello.txt");
        assert_eq!(names(&first), ["read_file", "write_file", "bash"]);
        assert_eq!(
            names(&look_tools(all(), "Fix calc.py")),
            ["read_file", "bash"]
        );
        let small = small_tools(all(), "Fix the task list in todo.py");
        assert!(!names(&small).contains(&"task"), "{:?}", names(&small));
        let small = small_tools(all(), "Use the task tool to find parse_header");
        assert!(names(&small).contains(&"task"));
        assert!(!names_tool("rewrite_files please", "write_file"));
    }

    #[test]
    fn a_traceback_names_the_last_workspace_frame() {
        let out = "Traceback (most recent call last):\n  File \"test_calc.py\", line 5, in \
                   test_sum\n  File \"calc.py\", line 12, in sum_to\n  File \
                   \"/usr/lib/python3.11/x.py\", line 1, in f\nValueError: no";
        let ws = Path::new("/w");
        let nudge = after_failure(out, 1, ws);
        assert!(nudge.contains("calc.py line 12"), "{nudge}");
        let abs = "  File \"/w/pkg/m.py\", line 3, in <module>\n";
        assert!(after_failure(abs, 1, ws).contains("pkg/m.py line 3"));
        let rust = "error[E0308]: mismatched types\n --> src/lib.rs:7:9\n";
        assert!(after_failure(rust, 101, ws).contains("src/lib.rs line 7"));
        assert!(after_failure("make: *** [all] Error 2", 2, ws).contains("exit 2"));
    }

    #[test]
    fn code_in_a_fence_counts_but_one_line_or_inline_code_does_not() {
        assert!(shows_code(
            "Here:\n```python\ndef f():\n    return 1\n```\n"
        ));
        assert!(!shows_code("Run `pytest`.\n```\npytest -q\n```"));
        assert!(!shows_code("No code here."));
    }

    #[test]
    fn a_change_request_is_told_from_a_question() {
        assert!(asks_for_change("Fix the bug in calc.py."));
        assert!(asks_for_change("Write a script count_words.py and run it"));
        assert!(!asks_for_change(
            "Which port does it use? Read the code; do not edit any file."
        ));
        assert!(!asks_for_change("What does this function return?"));
    }

    #[test]
    fn examples_are_cut_from_descriptions() {
        let spec = ToolSpec {
            name: "task".into(),
            description: "Runs a subagent. Example: {\"description\": \"parse_header\"}".into(),
            parameters: serde_json::json!({}),
        };
        let out = without_examples(vec![spec]);
        assert_eq!(out[0].description, "Runs a subagent.");
    }

    #[test]
    fn the_file_list_leaves_out_hidden_and_ignored_files_and_caps_its_length() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("calc.py"), "").unwrap();
        std::fs::write(dir.path().join(".env"), "SECRET=1").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        std::fs::write(dir.path().join("node_modules/x.js"), "").unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i:02}.txt")), "").unwrap();
        }
        let list = file_list(dir.path());
        assert!(list.contains("- calc.py\n"), "{list}");
        assert!(
            !list.contains(".env") && !list.contains("node_modules"),
            "{list}"
        );
        assert!(list.contains("and 11 more"), "{list}");
        assert!(file_list(tempfile::tempdir().unwrap().path()).is_empty());
    }
}
