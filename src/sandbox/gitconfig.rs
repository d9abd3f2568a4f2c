//! A git configuration file read the way git reads it (`config.c`: sections, quoted
//! subsections, continuations, comments, escapes), and the keys a repository made during the
//! session may set: what `git init`, `git clone`, `git config user.*`, `git remote add` and
//! branch tracking write. Anything else, and anything git would read differently or not at
//! all, is unsafe: git's configuration can start programs (`core.fsmonitor`, hooks paths,
//! pagers, filters, includes).

/// One variable: its key as git names it (`section[.sub].name`; section and name lower case)
/// and its value (`None`: a bare boolean).
pub(crate) type Var = (Vec<u8>, Option<Vec<u8>>);

/// Keys without a subsection a new repository may hold. `core.*`: what `git init` writes on
/// any platform (no `core.worktree`: it points git's work tree elsewhere; no hooks path,
/// fsmonitor or pager: those run programs); `user.*` names; the object and ref formats.
const PLAIN: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "extensions.objectformat",
    "extensions.refstorage",
];

/// Keys with a subsection (`section.name`): remotes as `clone` and `remote add` write them
/// (no `uploadpack`/`receivepack`, which run programs, no `promisor`, which fetches on its
/// own), branch tracking, and what `git submodule init` records (no `update`, which can name
/// a command).
const IN_SUBSECTION: &[&str] = &[
    "remote.url",
    "remote.pushurl",
    "remote.fetch",
    "remote.tagopt",
    "remote.mirror",
    "branch.remote",
    "branch.merge",
    "branch.rebase",
    "submodule.url",
    "submodule.active",
];

/// Whether `key` (as [`parse`] gives it) is on the allow-list.
pub(crate) fn allowed(key: &[u8]) -> bool {
    let Ok(key) = std::str::from_utf8(key) else {
        // Only a subsection can hold other bytes: judge by section and name.
        return allowed_parts(key);
    };
    PLAIN.contains(&key) || allowed_parts(key.as_bytes())
}

fn allowed_parts(key: &[u8]) -> bool {
    let (Some(first), Some(last)) = (
        key.iter().position(|b| *b == b'.'),
        key.iter().rposition(|b| *b == b'.'),
    ) else {
        return false;
    };
    if first == last {
        return false;
    }
    let mut short = key[..first].to_vec();
    short.extend_from_slice(&key[last..]);
    std::str::from_utf8(&short).is_ok_and(|k| IN_SUBSECTION.contains(&k))
}

/// A reader over the file's bytes that gives `\n` at the end (as git's `get_next_char`) and
/// reads `\r\n` as `\n`.
struct Chars<'a> {
    text: &'a [u8],
    at: usize,
    eof: bool,
}

impl Chars<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.text.get(self.at) else {
            self.eof = true;
            return b'\n';
        };
        self.at += 1;
        if c == b'\r' && self.text.get(self.at) == Some(&b'\n') {
            self.at += 1;
            return b'\n';
        }
        c
    }
}

/// git's `isspace`: space, tab, newline, carriage return.
fn space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn keychar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// Every variable of `text`, in order; `Err` where git would stop with an error.
pub(crate) fn parse(text: &[u8]) -> Result<Vec<Var>, ()> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    let mut c = Chars {
        text,
        at: 0,
        eof: false,
    };
    let mut vars = Vec::new();
    let mut base: Vec<u8> = Vec::new();
    let mut comment = false;
    loop {
        let ch = c.next();
        if ch == b'\n' {
            if c.eof {
                return Ok(vars);
            }
            comment = false;
            continue;
        }
        if comment || space(ch) {
            continue;
        }
        if ch == b'#' || ch == b';' {
            comment = true;
            continue;
        }
        if ch == b'[' {
            base = section(&mut c)?;
            base.push(b'.');
            continue;
        }
        if !ch.is_ascii_alphabetic() {
            return Err(());
        }
        let mut name = base.clone();
        name.push(ch.to_ascii_lowercase());
        vars.push(variable(&mut c, name)?);
    }
}

/// The rest of a `[section]` or `[section "sub"]` header.
fn section(c: &mut Chars) -> Result<Vec<u8>, ()> {
    let mut name = Vec::new();
    loop {
        let ch = c.next();
        if c.eof {
            return Err(());
        }
        if ch == b']' {
            return if name.is_empty() { Err(()) } else { Ok(name) };
        }
        if space(ch) {
            return subsection(c, name, ch);
        }
        if !keychar(ch) && ch != b'.' {
            return Err(());
        }
        name.push(ch.to_ascii_lowercase());
    }
}

/// The rest of a `[section "sub"]` header after `name` and the space `ch`.
fn subsection(c: &mut Chars, mut name: Vec<u8>, mut ch: u8) -> Result<Vec<u8>, ()> {
    while space(ch) {
        if ch == b'\n' {
            return Err(());
        }
        ch = c.next();
    }
    if ch != b'"' || name.is_empty() {
        return Err(());
    }
    name.push(b'.');
    loop {
        let mut ch = c.next();
        if ch == b'\n' {
            return Err(());
        }
        if ch == b'"' {
            break;
        }
        if ch == b'\\' {
            ch = c.next();
            if ch == b'\n' {
                return Err(());
            }
        }
        name.push(ch);
    }
    match c.next() {
        b']' => Ok(name),
        _ => Err(()),
    }
}

/// The rest of a variable whose name starts `name`, and its value.
fn variable(c: &mut Chars, mut name: Vec<u8>) -> Result<Var, ()> {
    let mut ch;
    loop {
        ch = c.next();
        if c.eof || !keychar(ch) {
            break;
        }
        name.push(ch.to_ascii_lowercase());
    }
    while ch == b' ' || ch == b'\t' {
        ch = c.next();
    }
    if ch == b'\n' {
        return Ok((name, None));
    }
    if ch != b'=' {
        return Err(());
    }
    Ok((name, Some(value(c)?)))
}

/// A value up to the end of its line (continuations, quotes, escapes, comments).
fn value(c: &mut Chars) -> Result<Vec<u8>, ()> {
    let (mut quote, mut comment) = (false, false);
    let mut out = Vec::new();
    let mut trim: Option<usize> = None;
    loop {
        let ch = c.next();
        if ch == b'\n' {
            if quote {
                return Err(());
            }
            out.truncate(trim.unwrap_or(out.len()));
            return Ok(out);
        }
        if comment {
            continue;
        }
        if space(ch) && !quote {
            if !out.is_empty() {
                trim.get_or_insert(out.len());
                out.push(b' ');
            }
            continue;
        }
        if !quote && (ch == b';' || ch == b'#') {
            comment = true;
            continue;
        }
        trim = None;
        if ch == b'\\' {
            let escaped = match c.next() {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 8,
                b'n' => b'\n',
                e @ (b'\\' | b'"') => e,
                _ => return Err(()),
            };
            out.push(escaped);
            continue;
        }
        if ch == b'"' {
            quote = !quote;
            continue;
        }
        out.push(ch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Result<Vec<String>, ()> {
        parse(text.as_bytes()).map(|v| {
            v.into_iter()
                .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
                .collect()
        })
    }

    #[test]
    fn what_init_and_clone_write_is_allowed() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                    \tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = A\n";
        let vars = parse(text.as_bytes()).unwrap();
        assert_eq!(vars.len(), 9);
        assert!(vars.iter().all(|(k, _)| allowed(k)), "{vars:?}");
    }

    #[test]
    fn keys_are_read_as_git_reads_them() {
        assert_eq!(keys("[Core] FSMonitor = x\n").unwrap(), ["core.fsmonitor"]);
        // A trailing backslash in a comment continues nothing: the next line is a key.
        assert_eq!(
            keys("[user]\n\tname = a # c \\\n[core]\n\tpager = x\n").unwrap(),
            ["user.name", "core.pager"]
        );
        // One inside a value does: what follows is the value.
        assert_eq!(
            keys("[user]\n\tname = a \\\n fsmonitor = x\n").unwrap(),
            ["user.name"]
        );
        assert_eq!(
            keys("[remote \"a.b\"]\n\turl = x\n[Remote.O]\nuploadpack = y\n").unwrap(),
            ["remote.a.b.url", "remote.o.uploadpack"]
        );
        assert_eq!(keys("\u{feff}[core]\r\n\tbare\r\n").unwrap(), ["core.bare"]);
        assert_eq!(
            parse(b"[core]\n\tsymlinks = \"a b\" ; c\n").unwrap()[0]
                .1
                .as_deref(),
            Some(&b"a b"[..])
        );
    }

    #[test]
    fn keys_that_run_programs_are_not_allowed() {
        for key in [
            "core.fsmonitor",
            "core.hookspath",
            "core.worktree",
            "core.pager",
            "include.path",
            "includeif.gitdir:/x.path",
            "remote.o.uploadpack",
            "remote.o.promisor",
            "submodule.s.update",
            "filter.lfs.clean",
            "alias.st",
            "core",
            "remote.url",
        ] {
            assert!(!allowed(key.as_bytes()), "{key}");
        }
        assert!(allowed(b"remote.\xff.url"));
    }

    #[test]
    fn what_git_refuses_is_an_error() {
        for text in [
            "[core\n\tbare = x\n",
            "[core]\n\t!x = y\n",
            "[core]\n\tx = \"open\n",
            "[core]\n\tx = \\q\n",
            "[core \"a\"x]\n",
            "[]\n",
            "[core]\n\tname # comment\n",
        ] {
            assert_eq!(parse(text.as_bytes()), Err(()), "{text:?}");
        }
    }
}
