//! `@` file completion: listing the workspace (respecting .gitignore) and fuzzy matching.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::path::Path;

/// At most this many files are listed (huge trees stay responsive).
pub const MAX_FILES: usize = 100_000;

/// Lists files under `root` as `/`-separated relative paths, honouring .gitignore, .ignore
/// and hidden-file rules. Runs on a blocking thread: it reads the disk.
pub fn index(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .build();
    for entry in walker {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !rel.is_empty() {
            files.push(rel);
        }
        if files.len() >= MAX_FILES {
            break;
        }
    }
    files.sort();
    files
}

/// The best `limit` matches of `query` among `files`, with the matched char indices.
/// An empty query lists the shortest paths first.
pub fn fuzzy(files: &[String], query: &str, limit: usize) -> Vec<(String, Vec<u32>)> {
    if query.is_empty() {
        let mut all: Vec<&String> = files.iter().collect();
        all.sort_by_key(|f| (f.matches('/').count(), f.len()));
        return all
            .into_iter()
            .take(limit)
            .map(|f| (f.clone(), Vec::new()))
            .collect();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut buf = Vec::new();
    let mut scored: Vec<(u32, &String)> = files
        .iter()
        .filter_map(|f| {
            pattern
                .score(Utf32Str::new(f, &mut buf), &mut matcher)
                .map(|s| (s, f))
        })
        .collect();
    // Higher score first; among equals, shorter paths.
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.len().cmp(&b.1.len())));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, f)| {
            let mut idx = Vec::new();
            pattern.indices(Utf32Str::new(f, &mut buf), &mut matcher, &mut idx);
            idx.sort_unstable();
            idx.dedup();
            (f.clone(), idx)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_respects_gitignore_and_hidden_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(root.join("target/debug")).expect("mkdir");
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        std::fs::write(root.join("src/main.rs"), "").expect("write");
        std::fs::write(root.join("Cargo.toml"), "").expect("write");
        std::fs::write(root.join("target/debug/out"), "").expect("write");
        std::fs::write(root.join(".secret"), "").expect("write");
        assert_eq!(index(root), vec!["Cargo.toml", "src/main.rs"]);
    }

    #[test]
    fn fuzzy_ranks_the_closest_match_first() {
        let files: Vec<String> = [
            "src/tui/app.rs",
            "src/main.rs",
            "docs/mainframe.md",
            "README.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let hits = fuzzy(&files, "main", 10);
        assert_eq!(hits[0].0, "src/main.rs");
        assert!(
            hits.iter()
                .all(|(f, _)| f != "README.md" && f != "src/tui/app.rs")
        );
        assert_eq!(hits[0].1, vec![4, 5, 6, 7]);
        assert_eq!(fuzzy(&files, "", 2)[0].0, "README.md");
    }
}
