//! The network allow-list: which host names (and ports) commands may reach through the proxy.
//!
//! Names are compared exactly as the client wrote them in the CONNECT line or the absolute
//! URL, ASCII case-insensitively, and never after resolving: `127.0.0.1` is not `localhost`,
//! `example.org.` is not `example.org`. Resolving a name before deciding would already leak it
//! (DNS is a channel out), and comparing addresses would let any name that happens to resolve
//! to an allowed address through.

use std::fmt;

/// The ports a bare entry (`pypi.org`) allows: HTTPS and HTTP. An entry names any other port
/// itself (`localhost:8080`, or `host:*` for every port), so allowing a registry does not open
/// its SSH or mail ports.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// The opt-in presets (`[sandbox.network] presets = ["python", "rust", "npm"]`): the hosts
/// their package managers download from, HTTPS only.
pub const PRESETS: &[(&str, &[&str])] = &[
    ("python", &["pypi.org:443", "files.pythonhosted.org:443"]),
    (
        "rust",
        &[
            "crates.io:443",
            "index.crates.io:443",
            "static.crates.io:443",
            "static.rust-lang.org:443",
        ],
    ),
    (
        "npm",
        &["registry.npmjs.org:443", "registry.yarnpkg.com:443"],
    ),
];

/// Which names an entry covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Name {
    /// Exactly this name (lowercase).
    Exact(String),
    /// Any name that ends in `.<suffix>` (lowercase, without the dot); not the suffix itself.
    Below(String),
}

/// Which ports an entry covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ports {
    /// [`DEFAULT_PORTS`].
    Web,
    /// Exactly this one.
    One(u16),
    /// Every port (`host:*`).
    Any,
}

/// One entry of the allow-list, as parsed from `host`, `*.suffix`, `host:port` or `host:*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    name: Name,
    ports: Ports,
}

impl Entry {
    /// Parses an entry; the error says what is wrong in one sentence.
    pub fn parse(text: &str) -> Result<Entry, String> {
        let bad = |why: &str| format!("{text:?} is not a valid network allow entry: {why}.");
        let (host, ports) = split_port(text).map_err(|why| bad(&why))?;
        let ports = match ports {
            None => Ports::Web,
            Some("*") => Ports::Any,
            Some(p) => Ports::One(parse_port(p).ok_or_else(|| bad("the port is not 1-65535"))?),
        };
        let name = match host.strip_prefix("*.") {
            Some(suffix) => {
                check_name(suffix).map_err(|why| bad(&why))?;
                if !suffix.contains('.') {
                    return Err(bad(
                        "a wildcard needs at least two labels (`*.example.org`, not `*.org`)",
                    ));
                }
                Name::Below(suffix.to_ascii_lowercase())
            }
            None => {
                check_name(host).map_err(|why| bad(&why))?;
                Name::Exact(host.to_ascii_lowercase())
            }
        };
        Ok(Entry { name, ports })
    }

    /// The entry for exactly `host` and `port`, as a "yes" or "always" answer adds it: never
    /// more than what the person was shown.
    pub fn exact(host: &str, port: u16) -> Entry {
        Entry {
            name: Name::Exact(host.to_ascii_lowercase()),
            ports: Ports::One(port),
        }
    }

    /// Whether this entry allows `host` (as written by the client) on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.ports {
            Ports::Web => DEFAULT_PORTS.contains(&port),
            Ports::One(p) => p == port,
            Ports::Any => true,
        };
        let host = host.to_ascii_lowercase();
        let name_ok = match &self.name {
            Name::Exact(n) => *n == host,
            Name::Below(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        };
        port_ok && name_ok
    }

    /// Whether the entry names one host exactly (not a wildcard): only such entries may lead
    /// to loopback or private addresses (see `connect`).
    pub fn is_exact(&self) -> bool {
        matches!(self.name, Name::Exact(_))
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Name::Exact(n) => write!(f, "{n}")?,
            Name::Below(s) => write!(f, "*.{s}")?,
        }
        match self.ports {
            Ports::Web => Ok(()),
            Ports::One(p) => write!(f, ":{p}"),
            Ports::Any => write!(f, ":*"),
        }
    }
}

/// Splits `host[:port]`, `[v6][:port]`.
fn split_port(text: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = text.strip_prefix('[') {
        let end = rest.find(']').ok_or("an IPv6 address lacks its `]`")?;
        let (host, after) = text.split_at(end + 2);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, Some(p))),
                None => Err("unexpected text after `]`".into()),
            },
        };
    }
    Ok(match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    })
}

/// A port number 1-65535 written in decimal digits only.
pub(crate) fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|p| *p != 0)
}

/// Whether `name` is a plain host name (letters, digits, `-`, `_`, `.`, no empty label) or a
/// bracketed IPv6 literal. Anything else (`@`, `%`, spaces, `*` inside) is refused, so an
/// entry and a request can only be compared as the simple strings they are.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 253 {
        return Err("the host name is empty or too long".into());
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return match !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            true => Ok(()),
            false => {
                Err("the IPv6 address has characters other than hex digits, `:` and `.`".into())
            }
        };
    }
    let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.';
    if !name.bytes().all(ok) {
        return Err("a host name has only letters, digits, `-`, `_` and `.`".into());
    }
    if name.starts_with('.') || name.contains("..") {
        return Err("a host name has no empty label".into());
    }
    Ok(())
}

/// The allow-list in force: the person's entries and presets, the hosts answered "always"
/// (they are in the person's config by then) and, at run time, those answered for the session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    /// Parses entries and expands presets; the error names the first bad one.
    pub fn parse(entries: &[String], presets: &[String]) -> Result<AllowList, String> {
        let mut list = AllowList::default();
        for p in presets {
            let Some((_, hosts)) = PRESETS.iter().find(|(name, _)| name == p) else {
                let known: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "{p:?} is not a network preset; the presets are {}.",
                    known.join(", ")
                ));
            };
            for h in *hosts {
                list.push(Entry::parse(h)?);
            }
        }
        for e in entries {
            list.push(Entry::parse(e)?);
        }
        Ok(list)
    }

    /// Adds an entry (once).
    pub fn push(&mut self, entry: Entry) {
        if !self.entries.contains(&entry) {
            self.entries.push(entry);
        }
    }

    /// The first entry that allows `host` on `port`, preferring an exact one.
    pub fn find(&self, host: &str, port: u16) -> Option<&Entry> {
        let mut matching = self.entries.iter().filter(|e| e.allows(host, port));
        let first = matching.next()?;
        if first.is_exact() {
            return Some(first);
        }
        Some(matching.find(|e| e.is_exact()).unwrap_or(first))
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> AllowList {
        let e: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        AllowList::parse(&e, &[]).unwrap()
    }

    #[test]
    fn names_match_exactly_as_written_never_as_addresses() {
        let l = list(&["localhost:*", "Example.org"]);
        assert!(l.find("localhost", 8080).is_some());
        assert!(l.find("LOCALHOST", 8080).is_some());
        assert!(l.find("127.0.0.1", 8080).is_none());
        assert!(l.find("[::1]", 8080).is_none());
        assert!(l.find("localhost.", 8080).is_none());
        assert!(l.find("example.org", 443).is_some());
        assert!(l.find("www.example.org", 443).is_none());
        assert!(l.find("example.org.evil.com", 443).is_none());
    }

    #[test]
    fn a_wildcard_covers_names_below_not_the_suffix_itself() {
        let l = list(&["*.example.org"]);
        assert!(l.find("a.example.org", 443).is_some());
        assert!(l.find("a.b.example.org", 80).is_some());
        assert!(l.find("example.org", 443).is_none());
        assert!(l.find("badexample.org", 443).is_none());
        assert!(l.find(".example.org", 443).is_none());
        assert!(!l.find("a.example.org", 443).unwrap().is_exact());
    }

    #[test]
    fn bare_entries_allow_web_ports_only() {
        let l = list(&["pypi.org", "db.local:5432"]);
        assert!(l.find("pypi.org", 443).is_some());
        assert!(l.find("pypi.org", 80).is_some());
        assert!(l.find("pypi.org", 22).is_none());
        assert!(l.find("db.local", 5432).is_some());
        assert!(l.find("db.local", 443).is_none());
    }

    #[test]
    fn bad_entries_and_presets_are_refused_with_a_reason() {
        for bad in [
            "",
            "*.org",
            "a b",
            "user@host",
            "host:0",
            "host:70000",
            "h:x",
            "*",
            "a..b",
            "[zz]",
        ] {
            assert!(Entry::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Entry::parse("[::1]:8080").is_ok());
        let err = AllowList::parse(&[], &["ruby".into()]).unwrap_err();
        assert!(err.contains("python, rust, npm"), "{err}");
        let p = AllowList::parse(&[], &["python".into()]).unwrap();
        assert!(p.find("pypi.org", 443).is_some());
        assert!(p.find("pypi.org", 80).is_none());
    }

    #[test]
    fn entries_print_as_they_parse() {
        for text in ["a.org", "*.a.org", "a.org:8080", "a.org:*", "[::1]:1"] {
            assert_eq!(Entry::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Entry::exact("A.org", 443).to_string(), "a.org:443");
    }
}
