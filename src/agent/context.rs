//! What the model sees: token estimates, micro-compaction of old tool output, and the late
//! reminder appended to every request (never stored).

use crate::llm::{AssistantPart, Message};

/// Rough token count of a text: bytes / 4, rounded up.
pub fn estimate_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Rough token count of one message, including a small per-message overhead.
pub fn estimate(msg: &Message) -> u64 {
    let body = match msg {
        Message::User { content } => estimate_text(content),
        Message::ToolResult { content, .. } => estimate_text(content),
        Message::Assistant { parts } => parts
            .iter()
            .map(|p| match p {
                AssistantPart::Text { text } => estimate_text(text),
                AssistantPart::Thinking { text, signature } => {
                    estimate_text(text) + signature.as_deref().map_or(0, estimate_text)
                }
                AssistantPart::RedactedThinking { data } => estimate_text(data),
                AssistantPart::ToolCall(c) => {
                    estimate_text(&c.arguments) + estimate_text(&c.name) + 4
                }
            })
            .sum(),
    };
    body + 4
}

/// Rough token count of a list of messages.
pub fn estimate_all(msgs: &[Message]) -> u64 {
    msgs.iter().map(estimate).sum()
}

/// Results no longer than this are always sent in full.
const MICRO_COMPACT_MIN_CHARS: usize = 100;

/// Tool results older than the most recent `keep` (and longer than 100 chars) are replaced by
/// a placeholder in what is sent. Messages at or before `frozen` (a compaction summary) are
/// left as they are. The stored history is not touched: this returns a copy.
pub fn micro_compact(history: &[Message], keep: usize, frozen: usize) -> Vec<Message> {
    let result_positions: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::ToolResult { .. }))
        .map(|(i, _)| i)
        .collect();
    let cutoff = result_positions.len().saturating_sub(keep);
    let old: std::collections::HashSet<usize> =
        result_positions[..cutoff].iter().copied().collect();
    history
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } if i >= frozen && old.contains(&i) && content.chars().count() > MICRO_COMPACT_MIN_CHARS => {
                Message::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: format!(
                        "[Previous: used {name}]\n(Output omitted to save context; run the tool again if you need it.)"
                    ),
                    is_error: *is_error,
                }
            }
            other => other.clone(),
        })
        .collect()
}

/// The current git branch of the repository holding `cwd`, read from `.git/HEAD`.
pub fn git_branch(cwd: &std::path::Path) -> Option<String> {
    let root = super::prompt::repo_root(cwd)?;
    let git = root.join(".git");
    // A worktree or submodule has a `.git` file pointing at the real git dir.
    let git_dir = if git.is_file() {
        let text = std::fs::read_to_string(&git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    } else {
        git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => format!("detached at {}", head.get(..12).unwrap_or(head)),
    })
}

/// Content fingerprints of the files git reports as changed, to tell the model what changed on
/// disk between its requests (the person may edit files while the agent waits).
#[derive(Default)]
pub struct FileWatch {
    snapshot: Option<std::collections::HashMap<String, u64>>,
}

/// At most this many changed files are fingerprinted.
const WATCH_LIMIT: usize = 500;

fn fingerprint(path: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match std::fs::metadata(path) {
        // Big files: size and mtime are enough, and cheap.
        Ok(m) if m.len() > 1 << 20 => {
            m.len().hash(&mut h);
            m.modified().ok().hash(&mut h);
        }
        Ok(_) => std::fs::read(path).ok().hash(&mut h),
        Err(_) => 0u8.hash(&mut h),
    }
    h.finish()
}

impl FileWatch {
    fn take(cwd: &std::path::Path) -> Option<std::collections::HashMap<String, u64>> {
        let out = std::process::Command::new("git")
            .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut map = std::collections::HashMap::new();
        let mut entries = text.split('\0');
        while let Some(entry) = entries.next() {
            if entry.len() < 4 {
                continue;
            }
            let (status, path) = entry.split_at(3);
            // Renames carry the old path as the next NUL-separated field.
            if status.starts_with('R') || status.starts_with('C') {
                entries.next();
            }
            if map.len() >= WATCH_LIMIT {
                break;
            }
            map.insert(path.to_string(), fingerprint(&cwd.join(path)));
        }
        Some(map)
    }

    /// Takes a new snapshot without reporting anything (after rein's own tools ran).
    pub fn rebase(&mut self, cwd: &std::path::Path) {
        self.snapshot = FileWatch::take(cwd);
    }

    /// Files whose content changed since the last snapshot; takes a new one.
    pub fn changed(&mut self, cwd: &std::path::Path) -> Vec<String> {
        let now = FileWatch::take(cwd);
        let mut changed = Vec::new();
        if let (Some(old), Some(new)) = (&self.snapshot, &now) {
            for (path, hash) in new {
                if old.get(path) != Some(hash) {
                    changed.push(path.clone());
                }
            }
            for path in old.keys() {
                if !new.contains_key(path) {
                    changed.push(path.clone());
                }
            }
        }
        changed.sort();
        self.snapshot = now;
        changed
    }
}

/// The late reminder: built fresh for every request, never stored.
pub fn reminder(
    cwd: &std::path::Path,
    todos: &[crate::protocol::Todo],
    changed: &[String],
) -> String {
    let mut s = String::from("<system-reminder>\n");
    s.push_str(&format!(
        "Current time: {}.",
        jiff::ZonedDateTime::now().strftime("%Y-%m-%d %H:%M %Z")
    ));
    if let Some(branch) = git_branch(cwd) {
        s.push_str(&format!(" Git branch: {branch}."));
    }
    s.push('\n');
    if !todos.is_empty() {
        s.push_str("Your todo list (keep it current with write_todos):\n");
        s.push_str(&crate::tools::todos::render(todos));
        s.push('\n');
    }
    if !changed.is_empty() {
        s.push_str(
            "These files changed on disk since your last request (not by your tools); read them \
             again before editing them:\n",
        );
        for path in changed.iter().take(50) {
            s.push_str(&format!("- {path}\n"));
        }
    }
    s.push_str("</system-reminder>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(i: usize, len: usize) -> Message {
        Message::ToolResult {
            call_id: format!("c{i}"),
            name: "bash".into(),
            content: "x".repeat(len),
            is_error: i == 0,
        }
    }

    #[test]
    fn file_watch_reports_outside_edits_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        run(&["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), "one").unwrap();
        let mut w = FileWatch::default();
        w.rebase(dir.path());
        assert!(w.changed(dir.path()).is_empty());
        std::fs::write(dir.path().join("a.txt"), "two").unwrap();
        std::fs::write(dir.path().join("b.txt"), "new").unwrap();
        assert_eq!(w.changed(dir.path()), ["a.txt", "b.txt"]);
        assert!(w.changed(dir.path()).is_empty());
        let r = reminder(dir.path(), &[], &["a.txt".into()]);
        assert!(r.contains("a.txt") && r.contains("read them"));
    }

    #[test]
    fn keeps_recent_and_short_results() {
        let mut h = vec![Message::User {
            content: "hi".into(),
        }];
        for i in 0..6 {
            h.push(result(i, 500));
        }
        h.push(result(6, 50));
        let out = micro_compact(&h, 3, 0);
        let full: Vec<bool> = out
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult { content, .. } => Some(!content.starts_with("[Previous")),
                _ => None,
            })
            .collect();
        assert_eq!(full, [false, false, false, false, true, true, true]);
        // The error flag survives compaction.
        assert!(matches!(
            &out[1],
            Message::ToolResult { is_error: true, .. }
        ));
        // Frozen prefix is untouched.
        let out = micro_compact(&h, 3, 3);
        assert!(matches!(&out[1], Message::ToolResult { content, .. } if content.len() == 500));
        assert!(
            matches!(&out[3], Message::ToolResult { content, .. } if content.starts_with("[Previous"))
        );
    }
}
