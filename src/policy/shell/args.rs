//! Arguments of allowed commands that write, delete, run programs or read secrets, from each
//! tool's real option table: short clusters, `--opt=value` and `--opt value`, and GNU
//! abbreviations (any prefix of a dangerous long option counts as it). A word only known at
//! run time that could become such an option (a glob or `"$x"` that may start with `-`) counts
//! too, for commands that have dangerous options; for the others it is data.

use super::arg_options::*;
use super::getopt::Parsed;
use super::words::Word;
use crate::policy::secrets;

/// Why the arguments `args` of command `name` are not harmless, if they are not. `moved` says
/// an earlier `cd` left the workspace, so relative paths may be anywhere.
pub(super) fn check(name: &str, args: &[Word], moved: bool) -> Option<String> {
    match name {
        "grep" | "egrep" | "fgrep" => grep(args, moved),
        "rg" => rg(args, moved),
        "find" => find(args, moved),
        "sort" => sort(args),
        "tree" => tree(args),
        "git" => super::git::check(args),
        "pytest" | "py.test" => pytest(args),
        "cargo" => cargo(args),
        "file" => file(args),
        "uniq" => uniq(args),
        "test" | "[" => test(args),
        _ => None,
    }
}

/// The first word that may become an option once it runs, as a reason.
fn may_become_option(name: &str, args: &[Word], p: &Parsed) -> Option<String> {
    p.dynamic.first().map(|&i| {
        format!(
            "`{}` may become an option of {name} when it runs (a file named like one, or a \
             value split into words)",
            args[i].text()
        )
    })
}

/// The dangerous long option `name` (`--na`, without `=value`) is or abbreviates, if any.
/// Parsers take an exact name first: a name in `exact` (every real option that starts like
/// a dangerous one) is that option; any other prefix counts as every option it could start.
pub(super) fn abbreviates(
    name: &str,
    dangerous: &[&'static str],
    exact: &[&str],
) -> Option<&'static str> {
    if let Some(d) = dangerous.iter().find(|d| **d == name) {
        return Some(d);
    }
    if !name.starts_with("--") || name.len() <= 3 || exact.contains(&name) {
        return None;
    }
    dangerous.iter().find(|d| d.starts_with(name)).copied()
}

/// Whether any option given is (an abbreviation of) one of `dangerous`.
fn given(p: &Parsed, dangerous: &[&str]) -> Option<String> {
    p.opts
        .iter()
        .map(|(n, _)| n.as_str())
        .find(|n| dangerous.contains(n))
        .map(|n| {
            if n.len() == 1 {
                format!("-{n}")
            } else {
                format!("--{n}")
            }
        })
}

fn sort(args: &[Word]) -> Option<String> {
    let p = SORT.parse(args, 0);
    if let Some(o) = given(&p, &["o", "output", "T", "temporary-directory"]) {
        return Some(format!("sort {o} writes files"));
    }
    if given(&p, &["compress-program"]).is_some() {
        return Some("sort --compress-program runs a program".into());
    }
    may_become_option("sort", args, &p)
}

/// tree writes with `-o FILE` and, with `-L`, `-R` writes `00Tree.html` into every
/// directory. Its clusters are read its way (`-Lo 2 f` is `-L 2 -o f`), and an option it may
/// not know asks: a newer tree may have one that writes.
fn tree(args: &[Word]) -> Option<String> {
    let p = TREE.parse(args, 0);
    if let Some(o) = given(&p, &["o", "R"]) {
        return Some(format!("tree {o} writes files"));
    }
    if let Some(u) = p.unknown.first() {
        return Some(format!("`{u}` is a tree option rein does not know"));
    }
    may_become_option("tree", args, &p)
}

/// Whether the options make a search recursive.
fn recursive(p: &Parsed) -> bool {
    p.has(&["r", "R", "recursive", "dereference-recursive"])
        || p.values(&["d", "directories"])
            .any(|v| v.text().ends_with("recurse"))
}

/// Why searching the operands recursively would reach a secret, if it would.
fn recursive_secret(args: &[Word], operands: &[usize], moved: bool) -> Option<String> {
    if moved && (operands.is_empty() || operands.iter().any(|&i| relative(&args[i]))) {
        return Some(
            "after a cd out of the workspace a recursive read may reach secret files".into(),
        );
    }
    operands
        .iter()
        .find_map(|&i| secrets::contains_secret(&args[i]))
}

fn relative(w: &Word) -> bool {
    !w.text().starts_with(['/', '~', '$'])
}

fn grep(args: &[Word], moved: bool) -> Option<String> {
    let p = GREP.parse(args, 0);
    if recursive(&p) {
        let skip = usize::from(!p.has(&["e", "f", "regexp", "file"]));
        let files: Vec<usize> = p.operands.iter().skip(skip).copied().collect();
        return recursive_secret(args, &files, moved);
    }
    None
}

fn rg(args: &[Word], moved: bool) -> Option<String> {
    let p = RG.parse(args, 0);
    if let Some(o) = given(&p, &["pre", "hostname-bin"]) {
        return Some(format!("rg {o} runs a program"));
    }
    if let Some(o) = given(&p, &["z", "search-zip"]) {
        return Some(format!("rg {o} runs decompression programs"));
    }
    may_become_option("rg", args, &p).or_else(|| {
        // The first operand is the pattern unless -e/-f gave one.
        let skip = usize::from(!p.has(&["e", "f", "regexp", "file"]));
        let paths: Vec<usize> = p.operands.iter().skip(skip).copied().collect();
        recursive_secret(args, &paths, moved)
    })
}

/// `find` primaries and how many words each takes (`-exec` runs to `;` or `+`).
const FIND_PRIMARIES: &[(&str, usize)] = &[
    ("-name", 1),
    ("-iname", 1),
    ("-path", 1),
    ("-ipath", 1),
    ("-wholename", 1),
    ("-iwholename", 1),
    ("-regex", 1),
    ("-iregex", 1),
    ("-regextype", 1),
    ("-lname", 1),
    ("-ilname", 1),
    ("-type", 1),
    ("-xtype", 1),
    ("-size", 1),
    ("-perm", 1),
    ("-user", 1),
    ("-group", 1),
    ("-uid", 1),
    ("-gid", 1),
    ("-links", 1),
    ("-inum", 1),
    ("-samefile", 1),
    ("-newer", 1),
    ("-anewer", 1),
    ("-cnewer", 1),
    ("-mtime", 1),
    ("-atime", 1),
    ("-ctime", 1),
    ("-mmin", 1),
    ("-amin", 1),
    ("-cmin", 1),
    ("-used", 1),
    ("-maxdepth", 1),
    ("-mindepth", 1),
    ("-fstype", 1),
    ("-context", 1),
    ("-printf", 1),
    ("-files0-from", 1),
    ("-empty", 0),
    ("-executable", 0),
    ("-readable", 0),
    ("-writable", 0),
    ("-nouser", 0),
    ("-nogroup", 0),
    ("-true", 0),
    ("-false", 0),
    ("-print", 0),
    ("-print0", 0),
    ("-ls", 0),
    ("-prune", 0),
    ("-quit", 0),
    ("-depth", 0),
    ("-d", 0),
    ("-mount", 0),
    ("-xdev", 0),
    ("-noleaf", 0),
    ("-daystart", 0),
    ("-follow", 0),
    ("-ignore_readdir_race", 0),
    ("-noignore_readdir_race", 0),
    ("-warn", 0),
    ("-nowarn", 0),
    ("-help", 0),
    ("-version", 0),
    ("-not", 0),
    ("-a", 0),
    ("-and", 0),
    ("-o", 0),
    ("-or", 0),
    ("!", 0),
    ("(", 0),
    (")", 0),
    (",", 0),
    ("-H", 0),
    ("-L", 0),
    ("-P", 0),
    ("-D", 1),
    ("-O0", 0),
    ("-O1", 0),
    ("-O2", 0),
    ("-O3", 0),
];

/// `find` primaries that write files (`-delete` and `-exec` become parts of their own).
const FIND_WRITES: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];
const FIND_RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

fn find(args: &[Word], moved: bool) -> Option<String> {
    // A glob or expansion anywhere (a value's glob spills into later words) may become an
    // action when it runs: a repository file named `-delete` turns `find . -delet?` into one.
    let actions = || FIND_WRITES.iter().chain(FIND_RUNS).chain(&["-delete"]);
    for w in args.iter().filter(|w| w.literal().is_none()) {
        if let Some(d) = actions().find(|d| w.could_be(d)) {
            return Some(format!(
                "`{}` may become the find action {d} when it runs (a file named like it)",
                w.text()
            ));
        }
    }
    let mut i = 0;
    let mut runs = false;
    let mut starts = Vec::new();
    while let Some(w) = args.get(i) {
        let Some(t) = w.literal() else {
            i += 1;
            continue;
        };
        if FIND_WRITES.contains(&t.as_str()) {
            return Some(format!("find {t} writes a file"));
        }
        if FIND_RUNS.contains(&t.as_str()) {
            runs = true;
            i += 1;
            while let Some(e) = args.get(i) {
                let end = e.literal();
                i += 1;
                if end.as_deref() == Some(";")
                    || (end.as_deref() == Some("+")
                        && args[i - 2].literal().is_some_and(|t| t.contains("{}")))
                {
                    break;
                }
            }
            continue;
        }
        if t == "-delete" {
            i += 1;
            continue;
        }
        match FIND_PRIMARIES.iter().find(|(p, _)| *p == t) {
            Some((_, n)) => i += 1 + n,
            None if t.starts_with('-') && t.len() > 1 => {
                return Some(format!("`{t}` is a find option rein does not know"));
            }
            None => {
                starts.push(w);
                i += 1;
            }
        }
    }
    // What -exec (or `| xargs`) reads are the files found: not under a secret.
    if moved && (runs || starts.is_empty() || starts.iter().any(|w| relative(w))) {
        return Some("after a cd out of the workspace find may list secret files".into());
    }
    starts.iter().find_map(|w| secrets::contains_secret(w))
}

/// pytest options that write or delete files, upload, or load code (prefixes count: pytest
/// accepts abbreviations).
const PYTEST_DANGEROUS: &[&str] = &[
    "--junitxml",
    "--junit-xml",
    "--resultlog",
    "--result-log",
    "--basetemp",
    "--pastebin",
    "--debug",
    "--report-log",
    "--html",
    "--json-report-file",
    "--cov-report",
    "--override-ini",
    "--rootdir",
    "--pdbcls",
    "--confcutdir",
    "--config-file",
    "--inifile",
    "--cache-dir",
    "--log-file",
];

/// Options whose exact names are prefixes of a dangerous one (or start like one) but are
/// harmless themselves: argparse, like git and getopt, takes an exact name first.
const PYTEST_SAFE: &[&str] = &[
    "--co",
    "--cov",
    "--pdb",
    "--log-file-level",
    "--log-file-format",
    "--log-file-date-format",
    "--debug-mode",
    "--durations",
    "--doctest-modules",
    "--deselect",
    "--disable-warnings",
];

fn pytest(args: &[Word]) -> Option<String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        if w.literal().as_deref() == Some("--") {
            break;
        }
        if w.may_be_option() && w.literal().is_none() && !w.literal_prefix().starts_with("--") {
            return Some(format!(
                "`{}` may become an option of pytest when it runs",
                w.text()
            ));
        }
        let prefix = w.literal_prefix();
        let name = prefix.split('=').next().unwrap_or_default();
        if let Some(d) = abbreviates(name, PYTEST_DANGEROUS, PYTEST_SAFE) {
            return Some(format!("pytest {d} writes files, uploads or loads code"));
        }
        let short = (!name.starts_with("--"))
            .then(|| name.strip_prefix('-'))
            .flatten();
        if let Some(cluster) = short {
            for (k, c) in cluster.char_indices() {
                match c {
                    'p' => {
                        let value = match &cluster[k + 1..] {
                            "" => args.get(i).map(Word::text).unwrap_or_default(),
                            rest => rest.to_string(),
                        };
                        if !value.starts_with("no:") {
                            return Some(format!("pytest -p {value} loads a plugin"));
                        }
                        break;
                    }
                    'o' | 'c' => return Some(format!("pytest -{c} changes its configuration")),
                    // These take the rest of the cluster or the next word as a value.
                    'k' | 'm' | 'W' | 'r' => break,
                    _ => {}
                }
            }
        }
    }
    None
}

/// cargo options that change what runs or where it writes; after `--`, libtest's.
const CARGO_DANGEROUS: &[&str] = &[
    "--config",
    "--manifest-path",
    "--target-dir",
    "--artifact-dir",
    "--out-dir",
    "--lockfile-path",
];

/// cargo options whose exact names are prefixes of a dangerous one (`--target` of
/// `--target-dir`).
const CARGO_SAFE: &[&str] = &["--target"];

fn cargo(args: &[Word]) -> Option<String> {
    let mut after_dashes = false;
    for w in args {
        if w.literal().as_deref() == Some("--") {
            after_dashes = true;
            continue;
        }
        if w.may_be_option() && w.literal().is_none() {
            return Some(format!(
                "`{}` may become an option of cargo when it runs",
                w.text()
            ));
        }
        let prefix = w.literal_prefix();
        let name = prefix.split('=').next().unwrap_or_default();
        if after_dashes {
            if name.starts_with("--") && name.len() > 3 && "--logfile".starts_with(name) {
                return Some("the test binary's --logfile writes a file".into());
            }
            if name.starts_with("-Z") {
                return Some("-Z enables unstable options".into());
            }
            continue;
        }
        if name.starts_with("-Z")
            || name == "-C"
            || (name.starts_with("-C") && !name.starts_with("--"))
        {
            return Some(format!("cargo {name} changes what cargo does"));
        }
        if let Some(d) = abbreviates(name, CARGO_DANGEROUS, CARGO_SAFE) {
            return Some(format!("cargo {d} changes what runs or where it writes"));
        }
    }
    None
}

fn file(args: &[Word]) -> Option<String> {
    let p = FILE.parse(args, 0);
    if given(&p, &["C", "compile"]).is_some() {
        return Some("file -C writes a magic file".into());
    }
    if let Some(o) = given(&p, &["z", "Z", "uncompress", "uncompress-noreport"]) {
        return Some(format!("file {o} runs decompression programs"));
    }
    may_become_option("file", args, &p)
}

fn uniq(args: &[Word]) -> Option<String> {
    let p = UNIQ.parse(args, 0);
    // `uniq INPUT OUTPUT` writes OUTPUT; a glob or split word may make a second operand.
    let split = p.operands.iter().find(|&&i| args[i].may_split());
    if p.operands.len() >= 2 || split.is_some() {
        return Some("uniq writes its second file argument".into());
    }
    may_become_option("uniq", args, &p)
}

/// `test -v NAME` evaluates a subscript in NAME as arithmetic, which can run code.
fn test(args: &[Word]) -> Option<String> {
    args.windows(2).find_map(|pair| {
        let op = pair[0].literal();
        let plain = pair[1]
            .literal()
            .is_some_and(|t| t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        (matches!(op.as_deref(), Some("-v" | "-R")) && !plain).then(|| {
            format!(
                "test {} `{}` evaluates it as arithmetic, which can run code",
                op.unwrap_or_default(),
                pair[1].text()
            )
        })
    })
}
