//! Reads `strace -ff -y -s 4096` logs (one file per process) into what each process ran,
//! wrote and opened.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// One successful `execve`.
#[derive(Clone, Debug)]
pub struct Exec {
    pub pid: u32,
    /// The program image that called `execve` (`bash`, `env`, ...): its base name.
    pub by: String,
    pub path: String,
    pub argv: Vec<String>,
}

/// A file access of interest.
#[derive(Clone, Debug)]
pub struct Access {
    pub pid: u32,
    /// The program image that made it (base name).
    pub by: String,
    pub path: PathBuf,
    pub write: bool,
    /// An open that does not follow a link in the last component (`O_NOFOLLOW`).
    pub nofollow: bool,
}

/// Everything the traced processes did that the oracle looks at.
#[derive(Debug, Default)]
pub struct Trace {
    pub execs: Vec<Exec>,
    pub accesses: Vec<Access>,
    /// Parent of each process.
    pub parent: HashMap<u32, u32>,
    /// Image of each process at its end.
    pub image: HashMap<u32, String>,
    /// Image of each process when it was forked (its parent's then).
    pub born_as: HashMap<u32, String>,
}

impl Trace {
    /// Reads every `PREFIX.PID` file in `dir`.
    pub fn read(dir: &Path, prefix: &str) -> Trace {
        let mut logs: HashMap<u32, Vec<String>> = HashMap::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(pid) = name
                .strip_prefix(prefix)
                .and_then(|s| s.strip_prefix('.'))
                .and_then(|s| s.parse().ok())
            {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                logs.insert(pid, text.lines().map(str::to_string).collect());
            }
        }
        // The first process is the one with the smallest pid that no clone created.
        let mut children: HashMap<u32, Vec<(usize, u32)>> = HashMap::new();
        for (pid, lines) in &logs {
            for (i, line) in lines.iter().enumerate() {
                if let Some(child) = clone_result(line) {
                    children.entry(*pid).or_default().push((i, child));
                }
            }
        }
        let created: Vec<u32> = children.values().flatten().map(|(_, c)| *c).collect();
        let mut trace = Trace::default();
        let roots: Vec<u32> = logs
            .keys()
            .copied()
            .filter(|p| !created.contains(p))
            .collect();
        let mut todo: Vec<(u32, String, PathBuf)> = roots
            .into_iter()
            .map(|p| (p, "strace".to_string(), PathBuf::from("/")))
            .collect();
        while let Some((pid, image, cwd)) = todo.pop() {
            trace.born_as.insert(pid, image.clone());
            let lines = logs.get(&pid).cloned().unwrap_or_default();
            let spawned = children.get(&pid).cloned().unwrap_or_default();
            let mut state = Proc { pid, image, cwd };
            for (i, line) in lines.iter().enumerate() {
                state.line(line, &mut trace);
                for (at, child) in &spawned {
                    if *at == i {
                        trace.parent.insert(*child, pid);
                        todo.push((*child, state.image.clone(), state.cwd.clone()));
                    }
                }
            }
            trace.image.insert(pid, state.image);
        }
        trace
    }

    /// Whether `pid` is `ancestor` or below it.
    pub fn descends(&self, mut pid: u32, ancestor: u32) -> bool {
        loop {
            if pid == ancestor {
                return true;
            }
            match self.parent.get(&pid) {
                Some(p) => pid = *p,
                None => return false,
            }
        }
    }

    /// The pids on the way from `pid` up, itself first.
    pub fn lineage(&self, mut pid: u32) -> Vec<u32> {
        let mut out = vec![pid];
        while let Some(p) = self.parent.get(&pid) {
            out.push(*p);
            pid = *p;
        }
        out
    }
}

/// A process being replayed: what it is and where it is.
struct Proc {
    pid: u32,
    image: String,
    cwd: PathBuf,
}

impl Proc {
    fn line(&mut self, line: &str, trace: &mut Trace) {
        let Some((name, args, ret)) = split_call(line) else {
            return;
        };
        let ok = ret.trim_start().starts_with('0')
            || ret
                .trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit());
        for a in &args {
            if let Some(dir) = a
                .strip_prefix("AT_FDCWD<")
                .and_then(|s| s.strip_suffix('>'))
            {
                self.cwd = PathBuf::from(dir);
            }
        }
        let s = |i: usize| args.get(i).map(|a| unquote(a)).unwrap_or_default();
        let at = |i: usize| {
            args.get(i)
                .map(|a| self.dir_of(a))
                .unwrap_or(self.cwd.clone())
        };
        let nofollow = args.iter().any(|a| a.contains("O_NOFOLLOW"));
        let write = |dir: PathBuf, path: String, w: bool, trace: &mut Trace| {
            trace.accesses.push(Access {
                pid: self.pid,
                by: self.image.clone(),
                path: resolve(&dir, &path),
                write: w,
                nofollow,
            });
        };
        match name {
            "execve" | "execveat" if ok => {
                let (p, v) = if name == "execve" { (0, 1) } else { (1, 2) };
                let exec = Exec {
                    pid: self.pid,
                    by: self.image.clone(),
                    path: s(p),
                    argv: args.get(v).map(|a| list(a)).unwrap_or_default(),
                };
                self.image = base(&exec.path);
                trace.execs.push(exec);
            }
            "chdir" if ok => self.cwd = resolve(&self.cwd, &s(0)),
            "fchdir" if ok => {
                if let Some(d) = args.first().and_then(|a| fd_path(a)) {
                    self.cwd = PathBuf::from(d);
                }
            }
            "openat" => {
                let w = args.get(2).is_some_and(|f| writes(f));
                write(at(0), s(1), w, trace);
            }
            "open" => {
                let w = args.get(1).is_some_and(|f| writes(f));
                write(self.cwd.clone(), s(0), w, trace);
            }
            "creat" | "unlink" | "rmdir" | "mkdir" | "truncate" | "chmod" | "chown" | "lchown" => {
                write(self.cwd.clone(), s(0), true, trace)
            }
            "unlinkat" | "mkdirat" | "fchmodat" | "fchownat" => write(at(0), s(1), true, trace),
            "rename" => {
                write(self.cwd.clone(), s(0), true, trace);
                write(self.cwd.clone(), s(1), true, trace);
            }
            "renameat" | "renameat2" => {
                write(at(0), s(1), true, trace);
                write(at(2), s(3), true, trace);
            }
            "link" | "symlink" => write(self.cwd.clone(), s(1), true, trace),
            "symlinkat" => write(at(1), s(2), true, trace),
            "linkat" => write(at(2), s(3), true, trace),
            _ => {}
        }
    }

    /// The directory a dirfd argument names (`AT_FDCWD</x>`, `3</x>`).
    fn dir_of(&self, arg: &str) -> PathBuf {
        fd_path(arg).map_or(self.cwd.clone(), PathBuf::from)
    }
}

fn fd_path(arg: &str) -> Option<&str> {
    let (_, rest) = arg.split_once('<')?;
    rest.strip_suffix('>')
}

/// Whether open flags can write.
fn writes(flags: &str) -> bool {
    ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
        .iter()
        .any(|f| flags.contains(f))
}

fn base(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// `name(args) = ret`, split into the name, top-level arguments and the result.
fn split_call(line: &str) -> Option<(&str, Vec<String>, &str)> {
    let open = line.find('(')?;
    let name = line[..open].trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let (args, rest) = top_level(&line[open + 1..]);
    let ret = rest.split_once('=').map_or("", |(_, r)| r);
    Some((name, args, ret))
}

/// Splits text after `(` at top-level commas until the matching `)`.
fn top_level(text: &str) -> (Vec<String>, &str) {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut quote = false;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote => {
                cur.push(c);
                if let Some((_, n)) = chars.next() {
                    cur.push(n);
                }
                continue;
            }
            '"' => quote = !quote,
            '(' | '[' | '{' | '<' if !quote => depth += 1,
            ')' | ']' | '}' | '>' if !quote && depth > 0 => depth -= 1,
            ')' if !quote => {
                if !cur.trim().is_empty() {
                    args.push(cur.trim().to_string());
                }
                return (args, &text[i + 1..]);
            }
            ',' if !quote && depth == 0 => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    (args, "")
}

/// A C string as strace prints it, decoded.
pub fn unquote(arg: &str) -> String {
    let inner = arg.trim();
    let inner = inner.strip_suffix("...").unwrap_or(inner);
    let Some(inner) = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return inner.to_string();
    };
    let mut out = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            let e = bytes[i + 1];
            let (b, used) = match e {
                b'n' => (b'\n', 2),
                b't' => (b'\t', 2),
                b'r' => (b'\r', 2),
                b'v' => (0x0b, 2),
                b'f' => (0x0c, 2),
                b'x' => (
                    u8::from_str_radix(inner.get(i + 2..i + 4).unwrap_or("0"), 16).unwrap_or(0),
                    4,
                ),
                b'0'..=b'7' => {
                    let digits: String = inner[i + 1..]
                        .chars()
                        .take(3)
                        .take_while(|c| c.is_digit(8))
                        .collect();
                    (
                        u8::from_str_radix(&digits, 8).unwrap_or(0),
                        1 + digits.len(),
                    )
                }
                other => (other, 2),
            };
            out.push(b);
            i += used;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `["a", "b"]` as strings.
fn list(arg: &str) -> Vec<String> {
    let inner = arg.trim().trim_start_matches('[').trim_end_matches(']');
    let (items, _) = top_level(&format!("{inner})"));
    items.iter().map(|a| unquote(a)).collect()
}

/// `clone(...) = 123`, `vfork() = 123`: the new pid.
fn clone_result(line: &str) -> Option<u32> {
    let (name, _, ret) = split_call(line)?;
    if !matches!(name, "clone" | "clone3" | "fork" | "vfork") {
        return None;
    }
    // Inside the sandbox's PID namespace the return value is the namespace's pid; with
    // `--pidns-translation` strace adds ours: `= 2 /* 3800 in strace's PID NS */`.
    let ours = ret
        .split_once("/* ")
        .and_then(|(_, c)| c.split_whitespace().next())
        .and_then(|p| p.parse().ok());
    ours.or_else(|| ret.split_whitespace().next()?.parse().ok())
}

/// `path` from `dir`, `..` and `.` resolved as text.
pub fn resolve(dir: &Path, path: &str) -> PathBuf {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        dir.join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}
