//! Places whose contents are secrets (keys, tokens, rein's own settings, process
//! environments): a command that names one, or a glob that could match one, is never
//! allowed unasked. The sandbox hides them from bash too; this keeps the policy from calling
//! such a read harmless.
//!
//! Under the home directory the rule is the sandbox's own allow-list
//! (`sandbox::home::DEFAULT_HOME_ALLOW`): a path there outside it is never `allow` to read,
//! whatever its name. The sandbox's list of known secret places (`sandbox::secrets`) is a
//! second net that also catches them where home is not spelled out (`../../.ssh/id_rsa`).

use super::shell::words::{Tok, Word};

// The places themselves are the sandbox's list, the one source of what is secret.
use crate::sandbox::secrets::{
    HOME_SECRET_PLACES as HOME_SECRETS, PROC_SECRET_PLACES as PROC_SECRETS,
    SYSTEM_SECRET_PLACES as SYSTEM_SECRETS,
};

/// One path component of a word: known text, a glob, or only known at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Comp {
    Lit(String),
    Glob(String),
    Unknown,
}

/// A word read as a path.
struct PathShape {
    comps: Vec<Comp>,
    /// Starts at `/`.
    absolute: bool,
    /// Starts at the home directory (`~`, `$HOME`).
    home: bool,
}

fn shape(word: &Word) -> PathShape {
    let mut comps = Vec::new();
    let mut cur = String::new();
    let mut glob = false;
    let mut unknown = false;
    let mut home = false;
    let push = |cur: &mut String, glob: &mut bool, unknown: &mut bool, comps: &mut Vec<Comp>| {
        let c = if *unknown && cur.is_empty() {
            Comp::Unknown
        } else if *glob || *unknown {
            Comp::Glob(std::mem::take(cur))
        } else {
            Comp::Lit(std::mem::take(cur))
        };
        cur.clear();
        comps.push(c);
        *glob = false;
        *unknown = false;
    };
    for (i, t) in word.toks.iter().enumerate() {
        match t {
            Tok::Char { c: '/', .. } => push(&mut cur, &mut glob, &mut unknown, &mut comps),
            Tok::Char {
                c: '~',
                quoted: false,
            } if i == 0 => home = true,
            Tok::Char { c, quoted } => {
                let special = !quoted && matches!(c, '*' | '?' | '[' | ']');
                if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') && !special {
                    cur.push('\\');
                }
                glob |= special;
                cur.push(*c);
            }
            Tok::Dyn { src, .. } if i == 0 && matches!(src.as_str(), "$HOME" | "${HOME}") => {
                home = true
            }
            Tok::Dyn { .. } => {
                if !cur.is_empty() || glob {
                    cur.push('*');
                    glob = true;
                } else {
                    unknown = true;
                }
            }
        }
    }
    push(&mut cur, &mut glob, &mut unknown, &mut comps);
    let absolute = comps.first() == Some(&Comp::Lit(String::new())) && !home;
    comps.retain(|c| !matches!(c, Comp::Lit(s) if s.is_empty() || s == "."));
    PathShape {
        comps,
        absolute,
        home,
    }
}

/// Whether component `c` of a word could be the secret component `spec` (`*`: any).
fn comp_could_be(c: &Comp, spec: &str) -> bool {
    if spec == "*" {
        return true;
    }
    match c {
        Comp::Lit(s) => s == spec,
        // A glob only matches a dot-name when it starts with a dot itself.
        Comp::Glob(g) => {
            (g.starts_with('.') || !spec.starts_with('.'))
                && globset::GlobBuilder::new(g)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map(|g| g.compile_matcher().is_match(spec))
                    .unwrap_or(true)
        }
        Comp::Unknown => false,
    }
}

fn all_specs() -> impl Iterator<Item = &'static [&'static str]> {
    HOME_SECRETS
        .iter()
        .chain(PROC_SECRETS)
        .chain(SYSTEM_SECRETS)
        .copied()
}

/// The components of a word after the home directory (`~`, `$HOME`, `/home/*`, `/root`,
/// `/Users/*`), when it starts there.
fn under_home(s: &PathShape) -> Option<&[Comp]> {
    if s.home {
        return Some(&s.comps);
    }
    if !s.absolute {
        return None;
    }
    let first = s.comps.first()?;
    if comp_could_be(first, "root") {
        return Some(&s.comps[1..]);
    }
    if (comp_could_be(first, "home") || comp_could_be(first, "Users")) && s.comps.len() >= 2 {
        return Some(&s.comps[2..]);
    }
    None
}

/// Whether the home-relative components `rest` lie provably in the sandbox's view of home:
/// beneath an allowed place (or, unless `whole`, on the way to one), spelled literally.
fn in_home_view(rest: &[Comp], whole: bool) -> bool {
    if rest.iter().any(|c| !matches!(c, Comp::Lit(l) if l != "..")) {
        return false;
    }
    let lit = |c: &Comp| match c {
        Comp::Lit(l) => l.clone(),
        _ => String::new(),
    };
    crate::sandbox::home::DEFAULT_HOME_ALLOW
        .iter()
        .any(|allowed| {
            let a: Vec<&str> = allowed.split('/').collect();
            let n = a.len().min(rest.len());
            let prefix = rest[..n].iter().zip(&a).all(|(c, p)| lit(c) == *p);
            prefix && (rest.len() >= a.len() || !whole)
        })
}

/// Why a word that starts at home reads outside the sandbox's view of it, if it does.
fn outside_home_view(word: &Word, s: &PathShape, whole: bool) -> Option<String> {
    let rest = under_home(s)?;
    (!in_home_view(rest, whole)).then(|| {
        format!(
            "`{}` is in the home directory outside what bash may see there (toolchains and \
             build caches), where secrets live; it is never read unasked",
            word.text()
        )
    })
}

/// The files under `/proc` a command may read unasked. `/proc` is full of links (`self`,
/// `N/cwd`, `N/root`, `N/fd/*`) that lead to other places, and `..` after one goes up
/// from where it leads; so rather than list what is secret there, only these plain files,
/// spelled out, count as harmless.
const PROC_PLAIN: &[&[&str]] = &[
    // The processors' model and features.
    &["cpuinfo"],
    // Memory totals.
    &["meminfo"],
    // The kernel's version string.
    &["version"],
    // Load averages and run-queue counts.
    &["loadavg"],
    // Seconds since boot.
    &["uptime"],
    // CPU time counters, boot time and process counts.
    &["stat"],
    // The reading program's own ids, limits and capabilities (the question of "am I
    // sandboxed"); a pid it shows opens nothing, as nothing else under /proc is read unasked.
    &["self", "status"],
];

/// Whether absolute `path` is `/proc` itself or one of its [`PROC_PLAIN`] files, spelled
/// out (no `..`, no link but `self`), for the check that follows links with the sandbox off.
pub(crate) fn is_plain_proc(path: &std::path::Path) -> bool {
    use std::path::Component;
    let mut comps = path.components();
    if comps.next() != Some(Component::RootDir)
        || comps.next() != Some(Component::Normal("proc".as_ref()))
    {
        return false;
    }
    let rest: Vec<Component> = comps.collect();
    rest.is_empty()
        || PROC_PLAIN.iter().any(|p| {
            p.len() == rest.len()
                && rest
                    .iter()
                    .zip(*p)
                    .all(|(c, n)| *c == Component::Normal(n.as_ref()))
        })
}

/// Why `word` reaches `/proc` (from `/`, from an option's `=` or a climb above where it
/// starts; `/dev/fd` leads to `/proc/self/fd`) other than at a file of [`PROC_PLAIN`] or
/// `/proc` itself, if it does.
fn proc_doubt(word: &Word, s: &PathShape) -> Option<String> {
    let comps = &s.comps;
    // The value of `--opt=/proc/..` or `-f/proc/..` starts at the first `/`.
    let option = !s.absolute
        && !s.home
        && matches!(comps.first(), Some(Comp::Lit(l)) if l.starts_with('-') || l.contains('='));
    let from_root = s.absolute || option;
    let mut depth: i64 = 0;
    for (k, c) in comps.iter().enumerate().skip(usize::from(option)) {
        // At `/` for certain, or above the start (which may be anywhere).
        let at_root = if from_root { depth <= 0 } else { depth < 0 };
        if at_root && procfs_plain(c, &comps[k + 1..]) == Some(false) {
            return Some(format!(
                "`{}` is under /proc, where only a few plain files (cpuinfo, meminfo, \
                 version, ...) are read unasked: the rest leads to processes' \
                 environments, memory and files",
                word.text()
            ));
        }
        depth += if *c == Comp::Lit("..".into()) { -1 } else { 1 };
        if from_root {
            depth = depth.max(0);
        }
    }
    None
}

/// When root-level `c` followed by `rest` may be in procfs, whether the rest is harmless:
/// nothing, a file of [`PROC_PLAIN`], or (after `/dev/fd`) one descriptor, which the device
/// check rates.
fn procfs_plain(c: &Comp, rest: &[Comp]) -> Option<bool> {
    let could = |c: &Comp, name: &str| *c == Comp::Unknown || comp_could_be(c, name);
    let lit = |c: &Comp| matches!(c, Comp::Lit(l) if l != "..");
    if could(c, "proc") {
        let listed = PROC_PLAIN.iter().any(|p| {
            p.len() == rest.len()
                && rest
                    .iter()
                    .zip(*p)
                    .all(|(r, n)| *r == Comp::Lit(n.to_string()))
        });
        return Some(rest.is_empty() || listed);
    }
    if !could(c, "dev") {
        return None;
    }
    // `/dev/fd` is `/proc/self/fd`; `/dev/stdin` and the like are links into it.
    let first = rest.first()?;
    if could(first, "fd") {
        return Some(rest.len() == 1 || (rest.len() == 2 && lit(&rest[1])));
    }
    ["stdin", "stdout", "stderr"]
        .iter()
        .any(|n| could(first, n))
        .then_some(rest.len() == 1)
}

/// Why `word` names (or could name) a secret location, if it does: a place in home outside
/// the sandbox's view of it, a place under `/proc` other than a few plain files, or a known
/// secret place, whose components are looked for anywhere in the word (so
/// `../../.ssh/id_rsa` and `x=~/.aws` count too).
pub(crate) fn names_secret(word: &Word) -> Option<String> {
    let s = shape(word);
    if let Some(why) = outside_home_view(word, &s, false) {
        return Some(why);
    }
    if let Some(why) = proc_doubt(word, &s) {
        return Some(why);
    }
    let hit = all_specs().find(|spec| {
        s.comps.len() >= spec.len()
            && s.comps
                .windows(spec.len())
                .any(|w| w.iter().zip(spec.iter()).all(|(c, p)| comp_could_be(c, p)))
    })?;
    Some(format!(
        "`{}` may be a secret ({}), which is never read unasked",
        word.text(),
        hit.join("/")
    ))
}

/// Why reading `word` recursively (`grep -r`, `rg`) would reach a secret location, if it
/// would: it names one, or a directory above one (`~`, `/`, `/home/me`, `..`).
pub(crate) fn contains_secret(word: &Word) -> Option<String> {
    if let Some(why) = names_secret(word) {
        return Some(why);
    }
    let s = shape(word);
    if let Some(why) = outside_home_view(word, &s, true) {
        return Some(why);
    }
    let up = s.comps.iter().any(|c| *c == Comp::Lit("..".into()));
    let above = |spec: &[&str], comps: &[Comp]| {
        comps.len() < spec.len() && comps.iter().zip(spec).all(|(c, p)| comp_could_be(c, p))
    };
    let homes: [&[&str]; 3] = [&["home", "*"], &["root"], &["Users", "*"]];
    let reaches = if s.home {
        HOME_SECRETS.iter().any(|spec| above(spec, &s.comps))
    } else if s.absolute {
        let mut roots: Vec<Vec<&str>> = PROC_SECRETS
            .iter()
            .chain(SYSTEM_SECRETS)
            .map(|s| s.to_vec())
            .collect();
        for h in homes {
            for spec in HOME_SECRETS {
                roots.push(h.iter().chain(spec.iter()).copied().collect());
            }
        }
        roots.iter().any(|spec| above(spec, &s.comps))
    } else {
        false
    };
    (up || reaches).then(|| {
        format!(
            "reading `{}` recursively would reach secret files, which are never read unasked",
            word.text()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(s: &str) -> Word {
        let mut w = Word::default();
        w.push_unquoted(s);
        w
    }

    #[test]
    fn home_outside_the_sandboxs_view_is_a_secret_whatever_its_name() {
        let name = format!(".x{:08x}", rand::random::<u32>());
        for path in [
            format!("~/{name}/creds"),
            format!("/home/me/{name}"),
            format!("/root/{name}/a"),
            "~/.config/git/credentials".into(),
            "~/.codex/auth.json".into(),
            "~/.claude/.credentials.json".into(),
            "~/.env".into(),
            "~/.bash_history".into(),
            "~/.cargo/credentials.toml".into(),
            "~/.cargo/bin/../../.ssh/id_rsa".into(),
            "~/.c*/bin/x".into(),
            "~/notes.txt".into(),
        ] {
            assert!(names_secret(&word(&path)).is_some(), "{path}");
        }
        for path in [
            "~/.cargo/bin/cargo",
            "~/.rustup/toolchains",
            "/root/.cargo/registry/src/x/lib.rs",
            "~/.cargo",
            "~",
            "/home/me",
        ] {
            assert!(names_secret(&word(path)).is_none(), "{path}");
        }
        // A recursive read must stay beneath an allowed place.
        assert!(contains_secret(&word("~/.cargo")).is_some());
        assert!(contains_secret(&word("~/.cargo/registry")).is_none());
        for place in crate::sandbox::home::DEFAULT_HOME_ALLOW {
            assert!(
                names_secret(&word(&format!("~/{place}/f"))).is_none(),
                "{place}"
            );
        }
    }

    /// Every known secret place under home is one bash does not see either, and one the policy
    /// never reads unasked: one list for both.
    #[test]
    fn known_secret_places_are_hidden_from_bash_and_never_read_unasked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().canonicalize().expect("canonical tempdir");
        let allowed: Vec<String> = crate::sandbox::home::DEFAULT_HOME_ALLOW
            .iter()
            .map(|s| s.to_string())
            .collect();
        let view = crate::sandbox::home::DirView::new(Some(&home), None, &allowed);
        for place in HOME_SECRETS {
            let rel = place.join("/");
            assert!(view.hides(&home.join(&rel)), "{rel}");
            assert!(
                names_secret(&word(&format!("../../{rel}"))).is_some(),
                "{rel}"
            );
        }
    }

    #[test]
    fn secret_locations_are_recognised() {
        let cases = [
            ("~/.agents/env", true),
            ("/proc/self/envir?n", true),
            ("/proc/1234/environ", true),
            ("/proc/*/environ", true),
            ("~/.ssh/id_rsa", true),
            ("../../.ssh/id_rsa", true),
            ("/home/me/.aws/credentials", true),
            ("--file=~/.netrc", true),
            ("~/.config/gh/hosts.yml", true),
            ("~/.docker/config.json", true),
            ("~/.s?h/id_rsa", true),
            ("~/.*/id_rsa", true),
            // Home outside the sandbox's view, whatever the name.
            ("~/*/id_rsa", true),
            ("~/.agents/skills/x/SKILL.md", false),
            ("src/main.rs", false),
            ("/proc/cpuinfo", false),
            ("ssh/config", false),
        ];
        for (path, secret) in cases {
            assert_eq!(names_secret(&word(path)).is_some(), secret, "{path}");
        }
        let mut home = Word::unknown("$HOME", super::super::shell::words::DynKind::Var);
        home.toks
            .extend(Word::lit("/.ssh/id_rsa").toks.iter().cloned());
        assert!(names_secret(&home).is_some());
    }

    #[test]
    fn directories_above_secrets_are_recognised() {
        let cases = [
            ("~", true),
            ("/", true),
            ("/home/me", true),
            ("/root", true),
            ("~/.config", true),
            ("..", true),
            ("/proc", true),
            ("src", false),
            (".", false),
            ("/usr/include", false),
            ("~/projects", true),
            ("~/.cargo/registry/src", false),
        ];
        for (path, reaches) in cases {
            assert_eq!(contains_secret(&word(path)).is_some(), reaches, "{path}");
        }
    }
    /// Under /proc only the plain files of `PROC_PLAIN`, spelled out, are not secret: `..`
    /// after one of its links goes where the link leads.
    #[test]
    fn under_proc_only_a_few_plain_files_are_harmless() {
        for path in [
            "/proc/1234/fd/../environ",
            "/proc/self/../self/environ",
            "/proc/1/net/../environ",
            "/proc/1/map_files/../environ",
            "/proc/self/cwd/../x",
            "/proc/self/root/etc/hostname",
            "/proc/self",
            "/proc/kcore",
            "/proc/*info",
            "/proc/$x",
            "/proc/cpuinfo/..",
            "/usr/../proc/1/fd/../environ",
            "../../../proc/1/fd/../environ",
            "--file=/proc/1/fd/../environ",
            "-f/proc/self/fd/../environ",
            "/dev/fd/../../1/environ",
            "/dev/fd/3/x",
            "/dev/stdin/../environ",
        ] {
            assert!(names_secret(&word(path)).is_some(), "{path}");
        }
        for path in [
            "/proc",
            "/proc/cpuinfo",
            "/proc/./meminfo",
            "//proc/version",
            "/proc/self/status",
            "/dev/fd/0",
            "/dev/stdin",
            "src/proc/1/fd/../environ",
            "proc/cpuinfo",
            "../x/proc/kcore",
        ] {
            assert!(names_secret(&word(path)).is_none(), "{path}");
        }
        // `/$x/1/environ`: the unknown top directory may be /proc.
        let mut dynamic = Word::lit("/");
        dynamic.toks.extend(
            Word::unknown("$x", super::super::shell::words::DynKind::Var)
                .toks
                .iter()
                .cloned(),
        );
        dynamic
            .toks
            .extend(Word::lit("/1/environ").toks.iter().cloned());
        assert!(names_secret(&dynamic).is_some());
        use std::path::Path;
        assert!(is_plain_proc(Path::new("/proc/self/status")));
        assert!(is_plain_proc(Path::new("/proc")));
        assert!(!is_plain_proc(Path::new("/proc/self/../self/status")));
        assert!(!is_plain_proc(Path::new("/proc/1/status")));
        assert!(!is_plain_proc(Path::new("/etc/cpuinfo")));
    }
}
