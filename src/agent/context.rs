//! What the model sees: token estimates, micro-compaction of old tool output, and the late
//! reminder appended to every request (never stored).

use crate::checkpoint::watch::{DirIndex, Dirty, Watch, parent_of};
use crate::llm::{AssistantPart, Message};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Rough token count of a text: bytes / 4, rounded up.
pub fn estimate_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Rough token count of one message, including a small per-message overhead.
pub fn estimate(msg: &Message) -> u64 {
    let body = match msg {
        Message::User { content } => estimate_text(content),
        Message::UserImage { image } => image.estimated_tokens(),
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

const PLACEHOLDER_HEAD: &str = "[Previous: used ";
const PLACEHOLDER_TAIL: &str =
    "]\n(Output omitted to save context; run the tool again if you need it.)";

/// What a micro-compacted result is sent as.
fn placeholder(name: &str) -> String {
    format!("{PLACEHOLDER_HEAD}{name}{PLACEHOLDER_TAIL}")
}

/// Whether `content` is [`placeholder`]`(name)` (without building it).
fn is_placeholder_of(content: &str, name: &str) -> bool {
    content.len() == PLACEHOLDER_HEAD.len() + name.len() + PLACEHOLDER_TAIL.len()
        && content.starts_with(PLACEHOLDER_HEAD)
        && content.ends_with(PLACEHOLDER_TAIL)
        && &content[PLACEHOLDER_HEAD.len()..content.len() - PLACEHOLDER_TAIL.len()] == name
}

/// Index of the first tool result that is kept in full (all results before it are old).
fn first_kept_result(history: &[Message], keep: usize) -> usize {
    let mut seen = 0;
    for (i, m) in history.iter().enumerate().rev() {
        if matches!(m, Message::ToolResult { .. }) {
            seen += 1;
            if seen > keep {
                return i + 1;
            }
        }
    }
    0
}

/// Whether the result at `i` is sent as a placeholder.
fn is_compacted(i: usize, content: &str, cutoff: usize, frozen: usize) -> bool {
    i >= frozen
        && i < cutoff
        // Cheap byte tests first: 100 chars take 100 to 400 bytes.
        && content.len() > MICRO_COMPACT_MIN_CHARS
        && (content.len() > 4 * MICRO_COMPACT_MIN_CHARS
            || content.chars().nth(MICRO_COMPACT_MIN_CHARS).is_some())
}

/// Tool results older than the most recent `keep` (and longer than 100 chars) are replaced by
/// a placeholder in what is sent. Messages at or before `frozen` (a compaction summary) are
/// left as they are. The stored history is not touched: this returns a copy.
pub fn micro_compact(history: &[Message], keep: usize, frozen: usize) -> Vec<Message> {
    let cutoff = first_kept_result(history, keep);
    history
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Message::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } if is_compacted(i, content, cutoff, frozen) => Message::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                content: placeholder(name),
                is_error: *is_error,
            },
            other => other.clone(),
        })
        .collect()
}

/// What [`micro_compact_into`] last established about its copy, so that the next call looks
/// only at what can have changed since: the messages appended and the results that became old.
#[derive(Clone, Copy, Debug, Default)]
pub struct Synced {
    /// `sent[..upto]` is what `history[..upto]` is sent as under `keep` and `frozen`.
    upto: usize,
    /// The first result kept in full then.
    cutoff: usize,
    keep: usize,
    frozen: usize,
}

impl Synced {
    /// The history may have changed other than by appending (a compaction replaced it): the
    /// next call compares every message again.
    pub fn reset(&mut self) {
        self.upto = 0;
    }
}

/// [`micro_compact`] into `sent`, the copy made for the previous request: only what changed
/// since (new messages, results that became old) is copied, so a request's cost does not grow
/// with the history. Messages before `synced`'s mark are trusted unchanged (the caller resets
/// it when the history is rewritten); after it they are compared, and anything else that
/// differs (a compaction replaced the history) starts over. Returns how many leading messages
/// of `sent` it left as they were.
pub fn micro_compact_into(
    sent: &mut Vec<Message>,
    history: &[Message],
    keep: usize,
    frozen: usize,
    synced: &mut Synced,
) -> usize {
    let cutoff = first_kept_result(history, keep);
    let compacted = |i: usize| {
        matches!(&history[i], Message::ToolResult { content, .. }
            if is_compacted(i, content, cutoff, frozen))
    };
    let same_rules = synced.keep == keep && synced.frozen == frozen && synced.cutoff <= cutoff;
    let trusted = if same_rules {
        synced.upto.min(sent.len()).min(history.len())
    } else {
        0
    };
    let mut untouched = usize::MAX;
    // Trusted results that became old since: those between the last cutoff and this one.
    for i in synced.cutoff.min(trusted)..cutoff.min(trusted) {
        if compacted(i) {
            sent[i] = compacted_copy(&history[i]);
            untouched = untouched.min(i);
        }
    }
    let mut valid = sent.len().min(history.len());
    for i in trusted..valid {
        if sends_as(&sent[i], &history[i], compacted(i)) {
            continue;
        }
        // A result that just became old is replaced in place; anything else ends the reuse.
        if compacted(i) && same_call(&sent[i], &history[i]) {
            sent[i] = compacted_copy(&history[i]);
            untouched = untouched.min(i);
        } else {
            valid = i;
            break;
        }
    }
    sent.truncate(valid);
    sent.extend((valid..history.len()).map(|i| {
        if compacted(i) {
            compacted_copy(&history[i])
        } else {
            history[i].clone()
        }
    }));
    *synced = Synced {
        upto: history.len(),
        cutoff,
        keep,
        frozen,
    };
    untouched.min(valid)
}

/// Whether `sent` is what `original` is sent as.
fn sends_as(sent: &Message, original: &Message, compacted: bool) -> bool {
    if !compacted {
        return sent == original;
    }
    match sent {
        Message::ToolResult { content, name, .. } => {
            same_call(sent, original) && is_placeholder_of(content, name)
        }
        _ => false,
    }
}

/// Whether both are results of the same call (id, name and error flag).
fn same_call(a: &Message, b: &Message) -> bool {
    matches!((a, b), (
        Message::ToolResult { call_id, name, is_error, .. },
        Message::ToolResult { call_id: c, name: n, is_error: e, .. },
    ) if call_id == c && name == n && is_error == e)
}

/// The placeholder a (tool result) message is sent as.
fn compacted_copy(m: &Message) -> Message {
    match m {
        Message::ToolResult {
            call_id,
            name,
            is_error,
            ..
        } => Message::ToolResult {
            call_id: call_id.clone(),
            name: name.clone(),
            content: placeholder(name),
            is_error: *is_error,
        },
        other => other.clone(),
    }
}

/// Rough token count of `history` as it is sent: like [`estimate_all`] of
/// [`micro_compact`]`(history, keep, frozen)`, without building the copy. `keep = None` means
/// nothing is micro-compacted.
pub fn estimate_sent(history: &[Message], keep: Option<usize>, frozen: usize) -> u64 {
    let Some(keep) = keep else {
        return estimate_all(history);
    };
    let cutoff = first_kept_result(history, keep);
    history
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Message::ToolResult { name, content, .. }
                if is_compacted(i, content, cutoff, frozen) =>
            {
                // The placeholder's text is fixed apart from the name.
                let len = PLACEHOLDER_HEAD.len() + name.len() + PLACEHOLDER_TAIL.len();
                (len as u64).div_ceil(4) + 4
            }
            other => estimate(other),
        })
        .sum()
}

/// Fingerprints of the repository's files, to tell the model what changed on disk between its
/// requests (the person may edit files while the agent waits).
///
/// Found by walking the repository (honouring `.gitignore`), not by running git: a repository's
/// configuration can make git start programs (`core.fsmonitor`, filters, …), and rein runs
/// nothing unconfined on the workspace. See `docs/sandbox.md`.
#[derive(Default)]
pub struct FileWatch {
    snapshot: Option<Snapshot>,
    /// rein's tools ran since the last snapshot: the next one is a new baseline.
    tools_ran: bool,
    /// The directories the last walk saw (inotify): the next look walks only those that
    /// changed.
    watch: Option<Watch>,
    /// The first walk, which has nothing to compare with: it runs beside the first request
    /// instead of before it (a 10,000-file repository takes ~50 ms to walk).
    first: Option<std::thread::JoinHandle<Walked>>,
}

/// A snapshot and the watch of the directories its walk saw.
type Walked = (Option<Snapshot>, Option<Watch>);

/// A repository with more files than this is not watched (the walk would cost too much per
/// request).
const WATCH_LIMIT: usize = 50_000;

/// Files above this size are fingerprinted by size and mtime only.
const HASH_LIMIT: u64 = 1 << 20;

/// What was seen of one file.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Seen {
    len: u64,
    modified: Option<std::time::SystemTime>,
    /// A content hash, taken while the mtime alone cannot be trusted (see `settled`).
    hash: Option<u64>,
    /// The mtime was well in the past when seen, so a later write would show in it (mtime
    /// granularity can be coarse: a write right after a look may keep the same mtime).
    settled: bool,
}

impl Seen {
    fn differs(&self, other: &Seen) -> bool {
        match (self.hash, other.hash) {
            (Some(a), Some(b)) => a != b,
            _ => (self.len, self.modified) != (other.len, other.modified),
        }
    }
}

/// Fingerprints keyed by path relative to the repository root.
struct Snapshot {
    root: PathBuf,
    files: HashMap<String, Seen>,
    /// The files by directory, made at the first look the watch can answer.
    index: Option<DirIndex>,
}

/// Fingerprints a file without following a link; only regular files are ever read.
fn fingerprint(path: &Path, meta: &std::fs::Metadata, before: Option<&Seen>) -> Seen {
    use std::hash::{Hash, Hasher};
    let (len, modified) = (meta.len(), meta.modified().ok());
    // Same size and mtime as a settled look: unchanged, without reading the file again.
    if let Some(b) = before
        && b.settled
        && b.len == len
        && b.modified == modified
    {
        return *b;
    }
    let settled = modified
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > std::time::Duration::from_secs(2));
    let need_hash = !settled || before.is_some_and(|b| !b.settled);
    let hash = (need_hash && meta.is_file() && len <= HASH_LIMIT).then(|| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::fs::read(path).ok().hash(&mut h);
        h.finish()
    });
    Seen {
        len,
        modified,
        hash,
        settled,
    }
}

/// Walks the repository at and below `from` (`depth` levels, or all) as the watch sees it:
/// `.gitignore` and git's excludes honoured, `.git` skipped, links not followed. `each` gets
/// every entry but `from` itself, and returns false to stop.
fn walk(
    root: &Path,
    from: &str,
    depth: Option<usize>,
    mut each: impl FnMut(String, &std::fs::Metadata, &Path) -> bool,
) {
    let walker = ignore::WalkBuilder::new(root.join(from))
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .max_depth(depth)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let (Ok(meta), Ok(rel)) = (entry.metadata(), entry.path().strip_prefix(root)) else {
            continue;
        };
        if !each(rel.to_string_lossy().into_owned(), &meta, entry.path()) {
            return;
        }
    }
}

/// Brings `snap` up to date, in place, for the directories the watch marked (each walked one
/// level deep, a directory new to the watch in full) and returns the paths whose content
/// changed. `None` when only a full walk can tell (the watch cannot take a new directory, the
/// limit is passed); `snap` is then untouched. Costs what the marked directories hold, not
/// the repository's size.
fn rewalk(
    snap: &mut Snapshot,
    watch: &mut Watch,
    dirs: &std::collections::BTreeSet<String>,
) -> Option<Vec<String>> {
    let mut found: HashMap<String, Seen> = HashMap::new();
    let mut fresh = Vec::new();
    let walked: Vec<&String> = dirs.iter().filter(|d| watch.has(d)).collect();
    for dir in walked {
        walk(&snap.root, dir, Some(1), |rel, meta, path| {
            if meta.is_dir() {
                if !watch.has(&rel) {
                    fresh.push(rel);
                }
            } else {
                if meta.nlink() > 1 {
                    watch.linked(dir);
                }
                let seen = fingerprint(path, meta, snap.files.get(&rel));
                found.insert(rel, seen);
            }
            true
        });
    }
    let mut complete = true;
    for top in &fresh {
        complete &= watch.add(top);
        walk(&snap.root, top, None, |rel, meta, path| {
            if meta.is_dir() {
                complete &= watch.add(&rel);
            } else {
                if meta.nlink() > 1 {
                    watch.linked(parent_of(&rel));
                }
                let seen = fingerprint(path, meta, snap.files.get(&rel));
                found.insert(rel, seen);
            }
            complete
        });
    }
    let files = &mut snap.files;
    let index = snap.index.get_or_insert_with(|| DirIndex::of(files.keys()));
    // What the marked directories held and no longer hold.
    let gone: Vec<String> = dirs
        .iter()
        .flat_map(|d| index.in_dir(d))
        .filter(|rel| !found.contains_key(*rel))
        .cloned()
        .collect();
    let added = found.keys().filter(|rel| !files.contains_key(*rel)).count();
    if !complete || files.len() - gone.len() + added > WATCH_LIMIT {
        return None;
    }
    let mut changed = Vec::new();
    for rel in gone {
        files.remove(&rel);
        index.remove(&rel);
        changed.push(rel);
    }
    for (rel, seen) in found {
        if files.get(&rel).is_none_or(|old| old.differs(&seen)) {
            changed.push(rel.clone());
        }
        index.insert(&rel);
        files.insert(rel, seen);
    }
    Some(changed)
}

/// The paths whose content differs between two walks of the same repository.
fn differences(old: &HashMap<String, Seen>, new: &HashMap<String, Seen>) -> Vec<String> {
    let moved = new
        .iter()
        .filter(|(p, seen)| old.get(*p).is_none_or(|o| o.differs(seen)))
        .map(|(p, _)| p);
    let gone = old.keys().filter(|p| !new.contains_key(*p));
    moved.chain(gone).cloned().collect()
}

/// The repository now: `old` brought up to date by re-walking only the directories `watch`
/// marked, or a full walk when the watch cannot tell. The third part is what changed since
/// `old` (relative to the repository's root), when there was an `old` of the same root.
fn look(cwd: &Path, old: Option<Snapshot>, watch: Option<Watch>) -> Looked {
    let Some(root) = crate::repo::repo_root(cwd) else {
        return (None, None, None);
    };
    let mut old = old.filter(|s| s.root == root);
    if let (Some(snap), Some(mut watch)) = (old.as_mut(), watch)
        && watch.is_of(&root)
        && let Dirty::Dirs(dirs) = watch.take()
        && let Some(changed) = rewalk(snap, &mut watch, &dirs)
    {
        return (old, Some(watch), Some(changed));
    }
    let (files, watch) = walk_all(&root, old.as_ref());
    let Some(files) = files else {
        return (None, None, None);
    };
    let changed = old.map(|o| differences(&o.files, &files));
    let snap = Snapshot {
        root,
        files,
        index: None,
    };
    (Some(snap), watch, changed)
}

/// What [`look`] found: the snapshot, its watch, what changed since the last one.
type Looked = (Option<Snapshot>, Option<Watch>, Option<Vec<String>>);

/// Every file of the repository at `root` and a new watch of its directories; no files when
/// there are more than [`WATCH_LIMIT`].
fn walk_all(root: &Path, old: Option<&Snapshot>) -> (Option<HashMap<String, Seen>>, Option<Watch>) {
    // Started before the walk: what changes while it reads is an event for the next look.
    let mut watch = Watch::new(root).and_then(|mut w| w.add("").then_some(w));
    let mut files = HashMap::new();
    let mut over = false;
    walk(root, "", None, |rel, meta, path| {
        if meta.is_dir() {
            if watch.as_mut().is_some_and(|w| !w.add(&rel)) {
                watch = None;
            }
            return true;
        }
        if let (true, Some(w)) = (meta.nlink() > 1, watch.as_mut()) {
            w.linked(parent_of(&rel));
        }
        over = files.len() >= WATCH_LIMIT;
        let before = old.and_then(|o| o.files.get(&rel));
        files.insert(rel, fingerprint(path, meta, before));
        !over
    });
    if over {
        tracing::debug!(
            "file watch: more than {WATCH_LIMIT} files in {}",
            root.display()
        );
        return (None, None);
    }
    (Some(files), watch)
}

impl FileWatch {
    /// Takes a new snapshot (see [`look`]), waiting for the first walk if it still runs;
    /// returns what changed since the last one, when that can be told.
    fn take(&mut self, cwd: &Path) -> Option<Vec<String>> {
        if let Some(first) = self.first.take() {
            (self.snapshot, self.watch) = first.join().unwrap_or((None, None));
        }
        let changed;
        (self.snapshot, self.watch, changed) = look(cwd, self.snapshot.take(), self.watch.take());
        changed
    }

    /// Takes a new snapshot without reporting anything.
    pub fn rebase(&mut self, cwd: &Path) {
        self.tools_ran = false;
        self.take(cwd);
    }

    /// rein's own tools ran: what changed until the next snapshot is theirs, not news. (The
    /// next request follows at once, so one snapshot then serves as the new baseline; that
    /// saves a walk per tool round.)
    pub fn tools_ran(&mut self) {
        self.tools_ran = true;
    }

    /// Files whose content changed since the last snapshot (relative to `cwd` when inside it);
    /// takes a new one.
    pub fn changed(&mut self, cwd: &Path) -> Vec<String> {
        if self.tools_ran {
            self.rebase(cwd);
            return Vec::new();
        }
        // The first look has nothing to compare with: it walks in the background.
        if self.snapshot.is_none() && self.first.is_none() && self.watch.is_none() {
            let cwd = cwd.to_path_buf();
            let spawned = std::thread::Builder::new()
                .name("rein-first-look".into())
                .spawn(move || {
                    let (snapshot, watch, _) = look(&cwd, None, None);
                    (snapshot, watch)
                });
            match spawned {
                Ok(handle) => {
                    self.first = Some(handle);
                    return Vec::new();
                }
                Err(e) => tracing::debug!("file watch: no thread for the first walk: {e}"),
            }
        }
        let changed = self.take(cwd).unwrap_or_default();
        let Some(root) = self.snapshot.as_ref().map(|s| &s.root) else {
            return Vec::new();
        };
        let mut changed: Vec<String> = changed
            .iter()
            .map(|p| {
                let abs = root.join(p);
                match abs.strip_prefix(cwd) {
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => abs.display().to_string(),
                }
            })
            .collect();
        changed.sort();
        changed
    }
}

/// The late reminder: built fresh for every request, never stored. Its first line says it is
/// not part of the conversation (small models answered it, or repeated it as their answer).
/// `last` is a closing paragraph (the plan-mode instructions).
pub fn reminder_with(
    cwd: &Path,
    todos: &[crate::protocol::Todo],
    changed: &[String],
    last: Option<&str>,
) -> String {
    use super::repair::{REMINDER_CLOSE, REMINDER_NOTE, REMINDER_OPEN};
    let mut s = format!("{REMINDER_OPEN}\n{REMINDER_NOTE}\n");
    s.push_str(&format!(
        "Current time: {}.",
        super::prompt::local_now().strftime("%Y-%m-%d %H:%M %Z")
    ));
    if let Some(branch) = crate::sandbox::git::current_branch(cwd) {
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
    if let Some(last) = last {
        s.push_str(last);
        s.push('\n');
    }
    s.push_str(REMINDER_CLOSE);
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

    /// Oracle: the incremental copy equals a fresh one, request after request, while the
    /// history grows, results age, `keep` and `frozen` move and a compaction replaces it all.
    #[test]
    fn micro_compact_into_equals_a_fresh_copy() {
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            (state >> 33) % n
        };
        let mut sent = Vec::new();
        let mut synced = Synced::default();
        let (mut keep, mut frozen) = (2, 0);
        let mut history = Vec::new();
        for step in 0..400 {
            let i = history.len();
            match next(4) {
                0 => history.push(Message::User {
                    content: "u".repeat(next(300) as usize),
                }),
                1 => history.push(Message::Assistant { parts: Vec::new() }),
                _ => history.push(result(i, next(400) as usize)),
            }
            if next(50) == 0 {
                // A compaction: the history is replaced by a summary and the last messages.
                let tail = history.split_off(history.len().saturating_sub(3));
                history = std::iter::once(Message::User {
                    content: "summary".into(),
                })
                .chain(tail)
                .collect();
                synced.reset();
            }
            // The rules change now and then (most requests trust what the last one synced).
            if next(20) == 0 {
                keep = 1 + next(4) as usize;
            }
            if next(30) == 0 {
                frozen = next(3) as usize;
            }
            let before = sent.clone();
            let untouched = micro_compact_into(&mut sent, &history, keep, frozen, &mut synced);
            assert_eq!(sent, micro_compact(&history, keep, frozen), "step {step}");
            // What it says it left alone, it did (the wire cache trusts it).
            assert!(untouched <= before.len(), "step {step}");
            assert_eq!(sent[..untouched], before[..untouched], "step {step}");
        }
    }

    #[test]
    fn file_watch_sees_an_edit_through_a_second_name_outside_the_repository() {
        // A write through another name raises no event in the repository's directories, so
        // the watch alone cannot vouch for a directory holding a linked file.
        let dir = tempfile::tempdir().unwrap();
        let (repo, outside) = (dir.path().join("repo"), dir.path().join("outside"));
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(repo.join("src/a.txt"), "one").unwrap();
        std::fs::hard_link(repo.join("src/a.txt"), outside.join("a.txt")).unwrap();
        let mut w = FileWatch::default();
        w.rebase(&repo);
        assert!(w.changed(&repo).is_empty());
        std::fs::write(outside.join("a.txt"), "two").unwrap();
        assert_eq!(w.changed(&repo), ["src/a.txt"]);
    }

    #[test]
    fn a_watched_look_reports_what_a_full_walk_reports() {
        use std::fs;
        let dir = tempfile::tempdir().unwrap();
        let (repo, outside) = (dir.path().join("repo"), dir.path().join("outside"));
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let dirs = ["", "src", "src/deep", "src/deep/er", "build", "new/sub"];
        let (mut watched, mut full) = (FileWatch::default(), FileWatch::default());
        watched.rebase(&repo);
        full.rebase(&repo);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for step in 0..200 {
            let d = repo.join(dirs[below(dirs.len())]);
            let f = d.join(["a.rs", "b.txt", "c.log"][below(3)]);
            let op = below(9);
            match op {
                0..=2 => {
                    fs::create_dir_all(&d).unwrap();
                    fs::write(&f, format!("{step:04}")).unwrap();
                }
                3 => drop(fs::remove_file(&f)),
                4 if d != repo => drop(fs::remove_dir_all(&d)),
                5 if d != repo => {
                    let base = [&repo, &outside][below(2)];
                    let to = base.join(format!("moved{}", below(2)));
                    let _ = fs::remove_dir_all(&to);
                    let _ = fs::rename(&d, to);
                }
                6 => {
                    fs::create_dir_all(&d).unwrap();
                    let rule = ["*.log\n", "deep/\n", "*.txt\n"][below(3)];
                    fs::write(d.join(".gitignore"), rule).unwrap();
                }
                7 => {
                    if fs::write(&f, "linked").is_ok() {
                        let _ = fs::hard_link(&f, outside.join(format!("l{step}")));
                    }
                }
                _ => {
                    // Only through the second name: no event reaches the repository.
                    for e in fs::read_dir(&outside).unwrap().flatten() {
                        let _ = fs::write(e.path(), format!("via {step}"));
                    }
                }
            }
            full.watch = None;
            assert_eq!(
                watched.changed(&repo),
                full.changed(&repo),
                "step {step}: op {op} on {}",
                f.display()
            );
        }
    }

    #[test]
    fn the_first_look_walks_beside_the_request_and_later_looks_compare_with_it() {
        let dir = tempfile::tempdir().unwrap();
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        std::fs::write(dir.path().join("a.txt"), "one").unwrap();
        let mut w = FileWatch::default();
        assert!(
            w.changed(dir.path()).is_empty(),
            "the first look has no baseline"
        );
        assert!(w.first.is_some(), "it walks in the background");
        assert!(w.changed(dir.path()).is_empty());
        assert!(w.first.is_none() && w.snapshot.is_some());
        std::fs::write(dir.path().join("a.txt"), "two").unwrap();
        assert_eq!(w.changed(dir.path()), ["a.txt"]);
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
        let r = reminder_with(dir.path(), &[], &["a.txt".into()], None);
        assert!(r.contains("a.txt") && r.contains("read them"));
    }

    fn git(dir: &Path, args: &[&str]) {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
    }

    #[test]
    fn file_watch_from_a_subdirectory_and_after_commits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let sub = root.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        git(&root, &["init", "-q"]);
        std::fs::write(root.join("top.txt"), "1").unwrap();
        std::fs::write(sub.join("inner.txt"), "1").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-q", "-m", "init"]);
        let mut w = FileWatch::default();
        w.rebase(&sub);
        std::fs::write(root.join("top.txt"), "2").unwrap();
        std::fs::write(sub.join("inner.txt"), "2").unwrap();
        // Paths git prints relative to the repository root are found and shown relative to
        // the workspace when inside it.
        let top = root.join("top.txt").display().to_string();
        assert_eq!(w.changed(&sub), [top, "inner.txt".to_string()]);
        // Committing changes no content: nothing to report.
        git(&root, &["commit", "-q", "-am", "two"]);
        assert!(w.changed(&sub).is_empty());
        // Changes while rein's tools ran are theirs.
        std::fs::write(sub.join("inner.txt"), "by a tool").unwrap();
        w.tools_ran();
        assert!(w.changed(&sub).is_empty());
        assert!(w.changed(&sub).is_empty());
        // Same size, same second: still seen (content hash, not just size and mtime).
        std::fs::write(sub.join("inner.txt"), "3").unwrap();
        w.rebase(&sub);
        std::fs::write(sub.join("inner.txt"), "4").unwrap();
        assert_eq!(w.changed(&sub), ["inner.txt"]);
        // Outside a repository there is nothing to compare.
        let plain = tempfile::tempdir().unwrap();
        let mut w = FileWatch::default();
        w.rebase(plain.path());
        std::fs::write(plain.path().join("x"), "1").unwrap();
        assert!(w.changed(plain.path()).is_empty());
    }

    #[test]
    fn estimate_sent_matches_the_compacted_copy() {
        let mut h = vec![Message::User {
            content: "hi".into(),
        }];
        for i in 0..40 {
            h.push(Message::Assistant {
                parts: vec![AssistantPart::ToolCall(crate::llm::ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                })],
            });
            h.push(Message::ToolResult {
                call_id: format!("c{i}"),
                name: "read_file".into(),
                content: "é".repeat(i * 7),
                is_error: false,
            });
        }
        for (keep, frozen) in [(3, 0), (0, 0), (5, 20), (100, 0)] {
            assert_eq!(
                estimate_sent(&h, Some(keep), frozen),
                estimate_all(&micro_compact(&h, keep, frozen)),
                "keep {keep} frozen {frozen}"
            );
        }
        assert_eq!(estimate_sent(&h, None, 0), estimate_all(&h));
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
