//! A git configuration file read the way git reads it (`config.c`: sections, quoted
//! subsections, continuations, comments, escapes, a BOM, CRLF). The one reader of the policy
//! (what a read-only git command meets) and the sandbox (what a repository made in the
//! session holds); their allow-lists are in `allow.rs`. Where git would stop with an error,
//! or read a key rein cannot name (a NUL in a header), the file is an error and both fail
//! safe: git's configuration can start programs (`core.fsmonitor`, pagers, filters, includes).

/// One variable: its key as git names it (`section[.sub].name`; section and name lower case)
/// and its value (`None`: a bare boolean).
pub(crate) type Var = (Vec<u8>, Option<Vec<u8>>);

/// A key's section, subsection and name, split as git splits it (at the first and the last
/// dot: `[remote.o]` and `[remote "o"]` both hold `remote.o.url`); a key without a dot (set
/// before any section) is all name.
pub(crate) fn split_key(key: &[u8]) -> (&[u8], Option<&[u8]>, &[u8]) {
    let (Some(first), Some(last)) = (
        key.iter().position(|b| *b == b'.'),
        key.iter().rposition(|b| *b == b'.'),
    ) else {
        return (&[], None, key);
    };
    let sub = (first < last).then(|| &key[first + 1..last]);
    (&key[..first], sub, &key[last + 1..])
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
    // git takes `[ "x"]` (an empty section): its keys are on no allow-list.
    if ch != b'"' {
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
        // git keeps the byte, but its key ends there as a C string: `[core "fsmonitor\0"]`
        // sets `core.fsmonitor`. Never a key rein names; an error.
        if ch == 0 {
            return Err(());
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
            // git's value is a C string: it ends at a NUL.
            if let Some(nul) = out.iter().position(|b| *b == 0) {
                out.truncate(nul);
            }
            return Ok(out);
        }
        if comment {
            continue;
        }
        if space(ch) && !quote {
            if !out.is_empty() {
                trim.get_or_insert(out.len());
                // The space itself, as git keeps it (a tab stays a tab).
                out.push(ch);
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
    fn keys_are_read_as_git_reads_them() {
        assert_eq!(keys("[Core] FSMonitor = x\n").unwrap(), ["core.fsmonitor"]);
        // The reviewer's case: a policy that continued the comment missed `fsmonitor`.
        assert_eq!(
            keys("[core]\n\tbare = false # \\\n\tfsmonitor = touch PWNED; false #\n").unwrap(),
            ["core.bare", "core.fsmonitor"]
        );
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

    /// Texts where a hand-written reader is easily wrong: comments, quotes, escapes,
    /// continuations, headers, case, CRLF, a BOM, NULs, long lines.
    const TRICKY: &[&[u8]] = &[
        b"[core]\n\tbare = false # \\\n\tfsmonitor = touch PWNED; false #\n",
        b"[core]\n\tbare = false ; \\\n\tfsmonitor = x\n",
        b"[core] # \\\n\tpager = x\n",
        b"[core]\n# \\\n\tpager = x\n",
        b"[core]\n\tx = \"a # b ; c\" # d\n",
        b"[core]\n\tx = \"a\" # \"b\n",
        b"[core]\n\tx = a\\\\\n\ty = b\n",
        b"[core]\n\tx = a\\\\\\\n\ty = b\n",
        b"[core]\n\tx = a \\\n\tb\n",
        b"[core]\n\tx = \"a \\\n\tb\"\n",
        b"[core]\n\tx = \\n\\t\\b\\\"\\\\\n",
        b"[core]\n\tx = \\a\n",
        b"[core]\n\tx = a\\",
        b"[core]\n\tx = a\\\r\n\tb\n",
        b"[core]\n\tx = \"a\" \\\n\t\"b\"\n",
        b"[core]\n\tx = a\tb \t \n",
        b"[core]\n\tx =   \n",
        b"[core]\n\tx = \"\"\n",
        b"[core]\n\tx = \"unterminated\n",
        b"[core]\n\tx = a\rb\n",
        b"[core]\n\tx\n\ty=\n",
        b"[core]\n\tx # c\n",
        b"[core]\n\tx\\\n = 1\n",
        b"[core]\n\tX-y1 = 1\n",
        b"[core]\n\t1x = 1\n",
        b"[Core \"Sub\"]\n\tKey = 1\n",
        b"[core.SUB]\n\tKey = 1\n",
        b"[a.b \"c\"]\n\tx = 1\n",
        b"[a \"b\\\"c\\\\d\\e\"]\n\tx = 1\n",
        b"[a \"b.c\"]\n\tx = 1\n",
        b"[a \"b\n\"]\n\tx = 1\n",
        b"[a \"b\"c]\n",
        b"[a  \"b\"]\n\tx = 1\n",
        b"[a \"b\" ]\n\tx = 1\n",
        b"[a ]\n\tx = 1\n",
        b"[ \"b\"]\n\tx = 1\n",
        b"[.b]\n\tx = 1\n",
        b"[]\n\tx = 1\n",
        b"[a_b]\n\tx = 1\n",
        b"[a]x=1\n[b]y\n",
        b"x = 1\n",
        b"\xef\xbb\xbf[core]\r\n\tx = 1\r\n",
        b"[core]\n\xef\xbb\xbf\tx = 1\n",
        b"[core]\r\n\tx = \"a\r\n\"\r\n",
        b"[core]\n\tx = a\0b\n\ty = c\n",
        b"[core]\n\tx = 1 # \0\n\ty = 2\n",
        b"[core]\n\tx\0 = 1\n",
        b"[core]\n\tx = 1",
        b"[core]\n\tx",
        b"[core",
        b"",
        b"\n\n  \t\n",
        b"; only a comment \\\n# another\n",
        b"[core]\r[user]\r\n\tx = 1\r\n",
        b"[core]\n\tx\r = 1\n",
        b"[core]\n\tx = a\x0cb\x0b\n",
        b"\xef\xbb[core]\n",
        b"[core]\n\tx = \"a\"b\"c\" d\n",
        b"[a.B.c]\n\tx = 1\n",
        b"[a \"B\"]\n\tx = 1\n[A \"b\"]\n\tX = 2\n",
        b"[core]\n\tx = a\\\n# not a comment\n",
        b"[core]\n\tx = \"a\\\n;b\"\n",
        b"[core]\n\tx = a ;\"\n\ty = 1\n",
        b"[core]\n\tx = \xff\xfe\n",
    ];

    /// What `git config -f --list -z` reads from `text` (`None`: git refuses it).
    fn git_reads(dir: &std::path::Path, text: &[u8]) -> Option<Option<Vec<Var>>> {
        let file = dir.join("config");
        std::fs::write(&file, text).unwrap();
        let out = std::process::Command::new("git")
            .args(["config", "-f"])
            .arg(&file)
            .args(["--list", "-z"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .ok()?;
        if !out.status.success() {
            return Some(None);
        }
        let vars = out
            .stdout
            .split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| match e.iter().position(|b| *b == b'\n') {
                Some(n) => (e[..n].to_vec(), Some(e[n + 1..].to_vec())),
                None => (e.to_vec(), None),
            })
            .collect();
        Some(Some(vars))
    }

    #[test]
    fn the_reader_agrees_with_git() {
        let dir = tempfile::tempdir().unwrap();
        let long = [b"[core]\n\tx = ".as_slice(), &[b'a'; 300_000], b"\n"].concat();
        for text in TRICKY.iter().copied().chain([long.as_slice()]) {
            let Some(git) = git_reads(dir.path(), text) else {
                return;
            };
            let ours = parse(text).ok();
            assert_eq!(ours, git, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn a_nul_in_a_header_is_an_error_though_git_reads_it() {
        // git's key ends at the NUL: this sets `core.fsmonitor`.
        assert_eq!(parse(b"[core \"fsmonitor\0\"]\n\tx = y\n"), Err(()));
        assert_eq!(parse(b"[remote \"o\0\"]\n\turl = y\n"), Err(()));
    }

    #[test]
    fn keys_split_as_git_splits_them() {
        assert_eq!(split_key(b"core.bare"), (&b"core"[..], None, &b"bare"[..]));
        assert_eq!(
            split_key(b"remote.a.b.url"),
            (&b"remote"[..], Some(&b"a.b"[..]), &b"url"[..])
        );
        assert_eq!(split_key(b"bare"), (&b""[..], None, &b"bare"[..]));
    }
}
