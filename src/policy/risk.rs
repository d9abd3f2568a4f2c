//! What makes an otherwise harmless command unsafe to run unasked: flags of read-only tools that
//! write files or run programs, environment assignments that change what runs, and secrets
//! under `/proc`.

/// Upper-case environment variables that only change output, logging or locale.
const HARMLESS_VARS: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_LOG_STYLE",
    "RUST_TEST_THREADS",
    "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
    "LINES",
    "LANG",
    "LANGUAGE",
    "TZ",
    "CI",
    "DEBUG",
    "VERBOSE",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "GIT_TERMINAL_PROMPT",
];

/// Why assigning the variable `name` (before a command, or on its own) can change what later
/// commands run or do, if it can. Lower-case names are shell-local by convention, except the
/// proxy variables that network tools read.
pub(crate) fn assignment(name: &str) -> Option<String> {
    let local = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with("_proxy");
    if local || HARMLESS_VARS.contains(&name) || name.starts_with("LC_") {
        None
    } else {
        Some(format!("setting {name} can change what commands run or do"))
    }
}

/// Why the normalised command `words` (name first) must not run unasked even if a rule allows
/// it, if so.
pub(crate) fn arguments(words: &[String]) -> Option<String> {
    let (name, args) = words.split_first()?;
    // After `--` everything is an operand, not a flag.
    let flags: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .collect();
    if args
        .iter()
        .any(|a| a.contains("proc/") && a.ends_with("/environ"))
    {
        return Some("reads a process environment, which can hold secrets".into());
    }
    let found = |msg: &str| Some(msg.to_string());
    match name.as_str() {
        "git" => git(&flags),
        "sort" => {
            let writes = flags.iter().any(|f| {
                long(f, "--output", 3)
                    || long(f, "--compress-program", 5)
                    || short_has(f, 'o', "ktST")
            });
            if writes {
                found("sort -o writes a file (and --compress-program runs one)")
            } else {
                None
            }
        }
        "uniq" => {
            // `uniq INPUT OUTPUT` writes OUTPUT.
            let mut operands = 0;
            let mut skip = false;
            for (i, a) in args.iter().enumerate() {
                if skip {
                    skip = false;
                } else if a == "--" {
                    operands += args.len() - i - 1;
                    break;
                } else if matches!(a.as_str(), "-f" | "-s" | "-w") {
                    skip = true;
                } else if !a.starts_with('-') || a == "-" {
                    operands += 1;
                }
            }
            if operands >= 2 {
                found("uniq writes its second file argument")
            } else {
                None
            }
        }
        "tree" => {
            let writes = flags.iter().any(|f| f.starts_with("-o") || *f == "-R");
            if writes {
                found("tree -o/-R writes files")
            } else {
                None
            }
        }
        "rg" => {
            let runs = flags
                .iter()
                .any(|f| long(f, "--pre", 5) || long(f, "--hostname-bin", 5));
            if runs {
                found("rg --pre runs a program on every file")
            } else {
                None
            }
        }
        "find" => {
            let writes = args
                .iter()
                .any(|a| matches!(a.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls"));
            if writes {
                found("find -fprint writes a file")
            } else {
                None
            }
        }
        "file" => {
            let writes = flags
                .iter()
                .any(|f| long(f, "--compile", 4) || short_has(f, 'C', "efFmP"));
            if writes {
                found("file -C writes a magic file")
            } else {
                None
            }
        }
        "pytest" | "py.test" => {
            if flags.iter().any(|f| long(f, "--basetemp", 5)) {
                found("pytest --basetemp deletes that directory if it exists")
            } else if flags.iter().any(|f| long(f, "--pastebin", 5)) {
                found("pytest --pastebin uploads the output")
            } else {
                None
            }
        }
        _ => None,
    }
}

fn git(flags: &[&str]) -> Option<String> {
    let (sub, rest) = flags.split_first()?;
    if sub.starts_with("difftool") {
        return Some("git difftool runs external programs".into());
    }
    for f in rest {
        if long(f, "--output", 4) {
            return Some("--output makes git write a file".into());
        }
        if long(f, "--ext-diff", 5) || long(f, "--textconv", 5) {
            return Some(format!("{f} makes git run programs from its configuration"));
        }
        if *sub == "grep" && (long(f, "--open-files-in-pager", 4) || f.starts_with("-O")) {
            return Some("git grep -O opens files in a program".into());
        }
    }
    None
}

/// Whether `arg` is the long option `full`, or an abbreviation of it at least `min` bytes long
/// (GNU getopt and git accept unambiguous prefixes).
fn long(arg: &str, full: &str, min: usize) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.starts_with("--") && name.len() >= min && full.starts_with(name)
}

/// Whether the short-option cluster `arg` (`-uo`) contains `opt`, given the options in
/// `with_value` whose value ends the cluster.
fn short_has(arg: &str, opt: char, with_value: &str) -> bool {
    let Some(cluster) = arg.strip_prefix('-') else {
        return false;
    };
    if cluster.starts_with('-') {
        return false;
    }
    for c in cluster.chars() {
        if c == opt {
            return true;
        }
        if with_value.contains(c) {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn flags_that_write_or_run_are_caught() {
        for cmd in [
            "sort -o out.txt in.txt",
            "sort -uo out.txt in.txt",
            "sort --out=x in",
            "uniq a.txt b.txt",
            "tree -o listing.txt",
            "rg --pre ./evil pattern",
            "find . -fprint out",
            "git diff --output=x",
            "git log --outp=x",
            "git show --ext-diff HEAD",
            "git difftool -x ./evil",
            "pytest --basetemp=docs",
            "cat /proc/self/environ",
            "file -C -m magic",
        ] {
            assert!(arguments(&words(cmd)).is_some(), "{cmd}");
        }
    }

    #[test]
    fn harmless_flags_pass() {
        for cmd in [
            "sort -k2 -t, data.csv",
            "sort -tone data",
            "uniq -c counts.txt",
            "uniq -f 1 a.txt",
            "git diff --output-indicator-new=+ HEAD",
            "git diff -- --output=x",
            "git log --oneline",
            "tree -L 2",
            "rg --pretty foo",
            "pytest -k basetemp",
            "find . -name *.rs",
        ] {
            assert_eq!(arguments(&words(cmd)), None, "{cmd}");
        }
    }

    #[test]
    fn assignments_that_change_what_runs_are_caught() {
        assert!(assignment("LD_PRELOAD").is_some());
        assert!(assignment("GIT_EXTERNAL_DIFF").is_some());
        assert!(assignment("PATH").is_some());
        assert!(assignment("https_proxy").is_some());
        assert_eq!(assignment("RUST_BACKTRACE"), None);
        assert_eq!(assignment("LC_ALL"), None);
        assert_eq!(assignment("f"), None);
    }
}
