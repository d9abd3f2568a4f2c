//! With the sandbox off nothing hides what lies outside the workspace, so an argument that
//! names a file there (written out, reached through `..`, or through a link the repository
//! planted) keeps its command from being allowed unasked. What counts as inside is the
//! sandbox's own allow-list: the workspace, the system's top-level directories
//! ([`SYSTEM_READABLE`]) and the toolchain places of home ([`DEFAULT_HOME_ALLOW`]). Paths
//! are followed on disk, links resolved, as the command would open them.

use super::Walker;
use super::words::{Tok, Word};
use crate::sandbox::home::DEFAULT_HOME_ALLOW;
use crate::sandbox::secrets::SYSTEM_READABLE;
use std::path::{Path, PathBuf};

/// Commands that never open their arguments: what these name is printed, not read.
const OPENS_NO_ARGUMENT: &[&str] = &["echo", "printf", "true", "false", "pwd", "which", "type"];

/// Most names a glob is expanded to before it counts as reaching too far to check.
const MAX_MATCHES: usize = 2_000;

impl Walker {
    /// With the sandbox off: why `w`, an argument of `name` (`""` for what bash itself opens,
    /// a redirection), may name a file outside the workspace, if it may.
    pub(super) fn outside_doubt(&self, name: &str, w: &Word) -> Option<String> {
        if !self.unconfined || OPENS_NO_ARGUMENT.contains(&super::commands::base_name(name)) {
            return None;
        }
        let places = self
            .places
            .get_or_init(|| Places::here(self.workspace.as_deref()));
        let Some(places) = places else {
            return Some("the sandbox is off, and the workspace cannot be found".into());
        };
        for v in w.substitute(&|name| self.vars.get(name).cloned()) {
            if let Some(why) = self.outside_one(places, &v) {
                return Some(why);
            }
        }
        None
    }

    /// With the sandbox off: why `name ARGS` may read files its arguments do not name (a
    /// recursion that follows links, a list of names read from a file), if it may. Options
    /// are read with the commands' own tables (`arg_options`).
    pub(super) fn indirect_doubt(&self, name: &str, args: &[Word]) -> Option<String> {
        use super::arg_options::{FILE, GREP, RG, SORT};
        if !self.unconfined {
            return None;
        }
        let follows = "follows links while it searches";
        let listed = "reads the names of its files from a file";
        let why = match super::commands::base_name(name) {
            "grep" | "egrep" | "fgrep" => GREP
                .parse(args, 0)
                .has(&["R", "dereference-recursive"])
                .then_some(follows),
            "rg" => RG.parse(args, 0).has(&["L", "follow"]).then_some(follows),
            "file" => FILE
                .parse(args, 0)
                .has(&["f", "files-from"])
                .then_some(listed),
            "sort" => SORT.parse(args, 0).has(&["files0-from"]).then_some(listed),
            // Others without a table here (`wc`, `du`): `--files0-from` or a prefix of it.
            _ => args
                .iter()
                .filter_map(Word::literal)
                .take_while(|t| t != "--")
                .any(|t| {
                    let option = t.split('=').next().unwrap_or_default();
                    super::args::abbreviates(option, &["--files0-from"], &[]).is_some()
                })
                .then_some(listed),
        }?;
        Some(format!(
            "the sandbox is off, and `{name}` {why}, which may lead outside the workspace"
        ))
    }

    fn outside_one(&self, places: &Places, w: &Word) -> Option<String> {
        let shown = w.text();
        let outside = || {
            Some(format!(
                "the sandbox is off, and `{shown}` is outside the workspace: it is not read \
                 unasked"
            ))
        };
        let Some(names) = path_of(w) else {
            return Some(format!(
                "the sandbox is off, and `{shown}` is only known when it runs (it may name a \
                 file outside the workspace)"
            ));
        };
        // Relative names also from every directory a `cd` in the line went to (each from
        // the workspace and from the one before).
        let mut bases = vec![places.workspace.clone()];
        let mut last = places.workspace.clone();
        for dir in &self.dirs {
            // A bare `cd` goes home.
            let home = Word {
                toks: vec![Tok::Char {
                    c: '~',
                    quoted: false,
                }],
            };
            let dir = if dir.text() == "~" { &home } else { dir };
            match path_of(dir).as_deref() {
                Some([d]) if !d.glob => {
                    bases.push(places.absolute(d.home, &d.text, &places.workspace));
                    last = places.absolute(d.home, &d.text, &last);
                    bases.push(last.clone());
                }
                _ => return outside(),
            }
        }
        for named in &names {
            for base in &bases {
                let start = places.absolute(named.home, &named.text, base);
                let reached = match named.glob {
                    true => match expand(&start) {
                        Some(found) => found,
                        None => return outside(),
                    },
                    false => vec![start],
                };
                if reached.iter().any(|p| !places.reads_harmlessly(p)) {
                    return outside();
                }
            }
        }
        None
    }
}

/// The path a word names (for `--opt=VALUE`, and `-xVALUE` with a slash, the value), whether
/// it starts at home, and whether it is a glob pattern (then quoted pattern characters are
/// escaped); `None` when part of it is only known when it runs.
fn path_of(w: &Word) -> Option<Vec<Named>> {
    let mut home = false;
    let (mut raw, mut pattern) = (String::new(), String::new());
    for (i, t) in w.toks.iter().enumerate() {
        match t {
            Tok::Char {
                c: '~',
                quoted: false,
            } if i == 0 => home = true,
            Tok::Char { c, quoted } => {
                if *quoted && matches!(c, '*' | '?' | '[' | '\\') {
                    pattern.push('\\');
                }
                pattern.push(*c);
                raw.push(*c);
            }
            Tok::Dyn { src, .. } if i == 0 && matches!(src.as_str(), "$HOME" | "${HOME}") => {
                home = true
            }
            Tok::Dyn { .. } => return None,
        }
    }
    let glob = w.has_glob();
    let text = if glob { pattern } else { raw };
    if home || !text.starts_with('-') {
        return Some(vec![Named { home, text, glob }]);
    }
    // An option: its value, when it has one that may be a path (`--file=V`; for `-xV` the
    // flags may be bundled, so both the value after the first flag and from the first `/`).
    // The word itself too: after `--` it is a name (a planted `-x` link).
    let mut values: Vec<&str> = vec![&text];
    match text.split_once('=') {
        Some((_, value)) if text.starts_with("--") => values.push(value),
        _ => {
            if let Some(slash) = text.find('/').filter(|_| !text.starts_with("--")) {
                let after_flag = text.char_indices().nth(2).map_or(slash, |(i, _)| i);
                values.push(&text[after_flag.min(slash)..]);
                values.push(&text[slash..]);
            }
        }
    }
    Some(
        values
            .into_iter()
            .map(|value| match value.strip_prefix('~') {
                Some(rest) => Named {
                    home: true,
                    text: rest.to_string(),
                    glob,
                },
                None => Named {
                    home: false,
                    text: value.to_string(),
                    glob,
                },
            })
            .collect(),
    )
}

/// A path as a word names it.
struct Named {
    /// It starts at the home directory (`~`, `$HOME`).
    home: bool,
    /// The rest as written (a glob pattern, escaped, when `glob`).
    text: String,
    glob: bool,
}

/// Where reading is harmless with the sandbox off.
pub(super) struct Places {
    workspace: PathBuf,
    home: Option<PathBuf>,
}

impl Places {
    fn here(workspace: Option<&Path>) -> Option<Places> {
        let dir = match workspace {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir().ok()?,
        };
        Some(Places {
            workspace: resolve(&dir),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .map(|h| resolve(&h)),
        })
    }

    /// `path` (from home, from `/`, or from `base`) as an absolute path.
    fn absolute(&self, from_home: bool, path: &str, base: &Path) -> PathBuf {
        match (from_home, &self.home) {
            (true, Some(home)) => home.join(path.trim_start_matches('/')),
            // Without a home directory `~` stays a name.
            (true, None) => base.join(format!("~{path}")),
            (false, _) => base.join(path),
        }
    }

    /// Whether reading `path` (absolute, as written) is harmless: it is one of the few plain
    /// files of `/proc` or harmless devices, spelled out, or it resolves to a place
    /// [`Places::holds`]. Anything else that resolves into `/proc` (`/proc/N/fd/../environ`,
    /// a repository's link to `/proc/1/environ`) is not: its links lead anywhere.
    fn reads_harmlessly(&self, path: &Path) -> bool {
        if crate::policy::secrets::is_plain_proc(path) || is_harmless_device(path) {
            return true;
        }
        let resolved = resolve(path);
        !resolved.starts_with("/proc") && self.holds(&resolved)
    }

    /// Whether the resolved path `p` lies where reading is harmless.
    fn holds(&self, p: &Path) -> bool {
        if p.starts_with(&self.workspace) {
            return true;
        }
        let system = p
            .components()
            .nth(1)
            .and_then(|c| c.as_os_str().to_str())
            .is_some_and(|top| SYSTEM_READABLE.contains(&top) && top != "dev");
        let device = is_harmless_device(p);
        let toolchain = self.home.as_ref().is_some_and(|home| {
            DEFAULT_HOME_ALLOW
                .iter()
                .any(|allowed| p.starts_with(home.join(allowed)))
        });
        system || device || toolchain
    }
}

/// Whether `p` is a device reading which is harmless (bash's input is `/dev/null`).
fn is_harmless_device(p: &Path) -> bool {
    matches!(
        p.to_str(),
        Some("/dev/null" | "/dev/zero" | "/dev/stdin" | "/dev/stdout" | "/dev/stderr")
    )
}

/// `path` with every link resolved and `..` taken as the kernel takes it, as far as it
/// exists (the file tools' own walk); a link loop leads nowhere harmless.
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    crate::sandbox::paths::physical_path(&absolute).unwrap_or_else(|| PathBuf::from("/\u{0}loop"))
}

/// The names a glob matches on disk (links not followed while matching; each name is
/// resolved after); `None` when there are too many to check.
fn expand(pattern: &Path) -> Option<Vec<PathBuf>> {
    let mut found = vec![PathBuf::from("/")];
    for comp in pattern.components().skip(1) {
        let c = comp.as_os_str().to_string_lossy();
        if !c.contains(['*', '?', '[']) {
            let lit = unescape(&c);
            found.iter_mut().for_each(|p| p.push(&lit));
            continue;
        }
        let matcher = globset::GlobBuilder::new(&c)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .ok()?
            .compile_matcher();
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                // `*` does not match a leading dot, as in bash.
                let hidden = name.to_string_lossy().starts_with('.') && !c.starts_with('.');
                if !hidden && matcher.is_match(&name) {
                    next.push(dir.join(name));
                    if next.len() > MAX_MATCHES {
                        return None;
                    }
                }
            }
        }
        found = next;
    }
    Some(found)
}

/// A pattern's literal component with its escapes removed.
fn unescape(c: &str) -> String {
    let mut out = String::new();
    let mut chars = c.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => out.extend(chars.next()),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_parents_resolve_as_the_kernel_walks_them() {
        let t = tempfile::tempdir().unwrap();
        let root = resolve(t.path());
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("docs")).unwrap();
        std::fs::create_dir_all(root.join("secret/deep")).unwrap();
        std::os::unix::fs::symlink(root.join("secret/deep"), ws.join("docs/link")).unwrap();
        std::os::unix::fs::symlink("../docs", ws.join("docs/up")).unwrap();
        assert_eq!(
            resolve(&ws.join("docs/link/key")),
            root.join("secret/deep/key")
        );
        // `..` after a link goes up from where the link leads.
        assert_eq!(resolve(&ws.join("docs/link/../x")), root.join("secret/x"));
        assert_eq!(resolve(&ws.join("docs/up/a")), ws.join("docs/a"));
        std::os::unix::fs::symlink("loop", ws.join("loop")).unwrap();
        assert!(!resolve(&ws.join("loop")).starts_with(&ws));
    }

    #[test]
    fn a_glob_expands_to_the_names_it_matches() {
        let t = tempfile::tempdir().unwrap();
        let root = resolve(t.path());
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        for f in ["a/x.rs", "a/y.txt", "a/.hidden.rs", "a/b/z.rs"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let mut got = expand(&root.join("a/*.rs")).unwrap();
        got.sort();
        assert_eq!(got, [root.join("a/x.rs")]);
        let got = expand(&root.join("*/b/*.rs")).unwrap();
        assert_eq!(got, [root.join("a/b/z.rs")]);
    }
    /// With the sandbox off, /proc is read unasked only at its few plain files spelled out:
    /// not through `..`, not through a link the repository planted.
    #[test]
    fn proc_is_harmless_only_at_its_plain_files() {
        let t = tempfile::tempdir().unwrap();
        let ws = resolve(t.path());
        std::os::unix::fs::symlink("/proc/1/environ", ws.join("envl")).unwrap();
        std::os::unix::fs::symlink("/proc/self", ws.join("me")).unwrap();
        let places = Places::here(Some(&ws)).unwrap();
        for p in [
            "/proc/cpuinfo",
            "/proc/self/status",
            "/proc",
            "/dev/stdin",
            "/dev/null",
        ] {
            assert!(places.reads_harmlessly(Path::new(p)), "{p}");
        }
        for p in [
            ws.join("envl"),
            ws.join("me/status"),
            ws.join("me/fd/../environ"),
            PathBuf::from("/proc/self/environ"),
            PathBuf::from("/proc/1/fd/../environ"),
            PathBuf::from("/proc/self/../self/status"),
            PathBuf::from("/dev/fd/../../1/environ"),
        ] {
            assert!(!places.reads_harmlessly(&p), "{}", p.display());
        }
        assert!(places.reads_harmlessly(&ws.join("src/x.rs")));
    }
}
