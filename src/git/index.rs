//! Reading a git index file by hand, for its gitlinks (mode 160000, submodules): the paths
//! where the person's `git status` goes into another repository and obeys its configuration.
//! Versions 2, 3 and 4 (prefix-compressed paths), SHA-1 and SHA-256, the split index's shared
//! file and the offset table git's threaded reader follows. Never panics: a file that does not
//! read as git would read it is an error, and the caller fails closed.

/// What one index file says about gitlinks.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexLinks {
    /// The gitlinks' paths (as git uses them: up to a NUL).
    pub(crate) links: Vec<Vec<u8>>,
    /// Every entry's path, when asked for (a shared index's, for entries that replace them).
    pub(crate) names: Vec<Vec<u8>>,
    /// A gitlink entry without a name (split index: it replaces an entry of the shared index).
    pub(crate) unnamed_link: bool,
    /// The shared indexes named by `link` extensions (hex), for a split index.
    pub(crate) shared: Vec<String>,
}

/// The smallest entry: stat data, a SHA-1, flags and a NUL.
const MIN_ENTRY: usize = 40 + 20 + 2 + 1;
const GITLINK: u32 = 0o160000;
const NAME_MASK: u16 = 0xfff;
const EXTENDED: u16 = 0x4000;
/// The extended flags git knows (intent-to-add, skip-worktree); any other bit makes it stop.
const KNOWN_EXTENDED: u16 = (1 << 13) | (1 << 14);

fn be32(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be16(data: &[u8], at: usize) -> Option<u16> {
    let b = data.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// Parses `data` (a whole index file) whose object names are `hash` bytes long; `names`: keep
/// every entry's path too.
pub(crate) fn parse(data: &[u8], hash: usize, names: bool) -> Result<IndexLinks, ()> {
    if data.len() < 12 + hash || data.get(..4) != Some(b"DIRC") {
        return Err(());
    }
    let version = be32(data, 4).ok_or(())?;
    if !(2..=4).contains(&version) {
        return Err(());
    }
    let count = be32(data, 8).ok_or(())? as usize;
    // Entries end where the trailing checksum starts at the latest.
    let end = data.len() - hash;
    if count > end / MIN_ENTRY {
        return Err(());
    }
    let mut out = IndexLinks::default();
    let entries_end = entries(data, end, 12, count, version, hash, names, &mut out)?;
    extensions(data, end, entries_end, hash, &mut out)?;
    // git's threaded reader (`index.threads`) reads the blocks the offset table names, each
    // without the previous name: those paths count too.
    if let Some(start) = eoie_offset(data, end, hash) {
        extensions(data, end, start, hash, &mut out)?;
        if let Some(blocks) = offset_table(data, end, start)? {
            for (offset, nr) in blocks {
                if nr > end / MIN_ENTRY {
                    return Err(());
                }
                entries(data, end, offset, nr, version, hash, false, &mut out)?;
            }
        }
    }
    out.links.sort();
    out.links.dedup();
    out.shared.sort();
    out.shared.dedup();
    Ok(out)
}

/// Reads `count` entries from `at` (as git's `create_from_disk` does); returns where they end.
#[allow(clippy::too_many_arguments)]
fn entries(
    data: &[u8],
    end: usize,
    mut at: usize,
    count: usize,
    version: u32,
    hash: usize,
    names: bool,
    out: &mut IndexLinks,
) -> Result<usize, ()> {
    let data = data.get(..end).ok_or(())?;
    let mut previous: Option<Vec<u8>> = None;
    for _ in 0..count {
        let mode = be32(data, at.checked_add(24).ok_or(())?).ok_or(())?;
        let flags_at = at + 40 + hash;
        let flags = be16(data, flags_at).ok_or(())?;
        let mut name_at = flags_at + 2;
        if flags & EXTENDED != 0 {
            let extended = be16(data, name_at).ok_or(())?;
            if extended & !KNOWN_EXTENDED != 0 {
                return Err(());
            }
            name_at += 2;
        }
        let (name, size) = match version {
            4 => name_v4(data, at, name_at, flags, previous.as_deref())?,
            _ => name_v2(data, at, name_at, flags)?,
        };
        // git's later uses treat the name as a C string.
        let path = name.split(|b| *b == 0).next().unwrap_or_default();
        if mode & 0o170000 == GITLINK {
            match path.is_empty() {
                true => out.unnamed_link = true,
                false => out.links.push(path.to_vec()),
            }
        }
        if names && !path.is_empty() {
            out.names.push(path.to_vec());
        }
        previous = Some(name);
        at = at.checked_add(size).ok_or(())?;
        if at > end {
            return Err(());
        }
    }
    Ok(at)
}

/// A version 2 or 3 entry's name and size (NUL padded to a multiple of 8).
fn name_v2(data: &[u8], at: usize, name_at: usize, flags: u16) -> Result<(Vec<u8>, usize), ()> {
    let rest = data.get(name_at..).ok_or(())?;
    let len = match flags & NAME_MASK {
        NAME_MASK => rest.iter().position(|b| *b == 0).ok_or(())?,
        n => usize::from(n),
    };
    // git copies the name and the byte after it.
    let name = rest.get(..len + 1).ok_or(())?;
    let fixed = name_at - at;
    let size = (fixed + len + 8) & !7;
    Ok((name[..len].to_vec(), size))
}

/// A version 4 entry's name (the previous one's, less a number of bytes at its end, plus
/// what follows) and size.
fn name_v4(
    data: &[u8],
    at: usize,
    name_at: usize,
    flags: u16,
    previous: Option<&[u8]>,
) -> Result<(Vec<u8>, usize), ()> {
    let (strip, used) = varint(data.get(name_at..).ok_or(())?)?;
    let copy = match previous {
        Some(p) => p.len().checked_sub(strip).ok_or(())?,
        None => 0,
    };
    let suffix_at = name_at + used;
    let rest = data.get(suffix_at..).ok_or(())?;
    let len = match flags & NAME_MASK {
        NAME_MASK => rest.iter().position(|b| *b == 0).ok_or(())? + copy,
        n => usize::from(n),
    };
    let suffix_len = len.checked_sub(copy).ok_or(())?;
    rest.get(..suffix_len + 1).ok_or(())?;
    let mut name = previous.map(|p| p[..copy].to_vec()).unwrap_or_default();
    name.extend_from_slice(&rest[..suffix_len]);
    Ok((name, suffix_at - at + suffix_len + 1))
}

/// git's offset varint; its overflow is an error here.
fn varint(buf: &[u8]) -> Result<(usize, usize), ()> {
    let mut i = 0;
    let mut c = *buf.first().ok_or(())?;
    let mut val = u64::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1).ok_or(())?;
        if val >> 57 != 0 {
            return Err(());
        }
        i += 1;
        c = *buf.get(i).ok_or(())?;
        val = (val << 7) + u64::from(c & 127);
    }
    Ok((usize::try_from(val).map_err(|_| ())?, i + 1))
}

/// Walks the extensions from `at` as git's loop does, noting each `link` (split index).
fn extensions(
    data: &[u8],
    end: usize,
    mut at: usize,
    hash: usize,
    out: &mut IndexLinks,
) -> Result<(), ()> {
    while end.checked_sub(8).is_some_and(|last| at <= last) {
        let size = be32(data, at + 4).ok_or(())? as usize;
        if data.get(at..at + 4) == Some(b"link") {
            let base = data.get(at + 8..at + 8 + hash).ok_or(())?;
            if size < hash {
                return Err(());
            }
            if base.iter().any(|b| *b != 0) {
                out.shared
                    .push(base.iter().map(|b| format!("{b:02x}")).collect());
            }
        }
        at = at.checked_add(8 + size).ok_or(())?;
    }
    Ok(())
}

/// Where the extensions start by the end-of-index-entries extension (`EOIE`), if there is one.
fn eoie_offset(data: &[u8], end: usize, hash: usize) -> Option<usize> {
    let at = end.checked_sub(8 + 4 + hash)?;
    if data.get(at..at + 4) != Some(b"EOIE") || be32(data, at + 4)? as usize != 4 + hash {
        return None;
    }
    let offset = be32(data, at + 8)? as usize;
    (12..at).contains(&offset).then_some(offset)
}

/// The blocks (offset, entries) of the index-entry offset table (`IEOT`) among the
/// extensions from `at`.
fn offset_table(data: &[u8], end: usize, mut at: usize) -> Result<Option<Vec<(usize, usize)>>, ()> {
    while end.checked_sub(8).is_some_and(|last| at <= last) {
        let size = be32(data, at + 4).ok_or(())? as usize;
        if data.get(at..at + 4) == Some(b"IEOT") {
            let body = data.get(at + 8..at + 8 + size).ok_or(())?;
            if be32(body, 0) != Some(1) || size < 4 || !(size - 4).is_multiple_of(8) {
                return Ok(None);
            }
            let blocks = body[4..]
                .chunks_exact(8)
                .map(|c| {
                    (
                        be32(c, 0).unwrap_or(0) as usize,
                        be32(c, 4).unwrap_or(0) as usize,
                    )
                })
                .collect();
            return Ok(Some(blocks));
        }
        at = at.checked_add(8 + size).ok_or(())?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One entry of a version 2/3 index.
    fn entry_v2(mode: u32, name: &[u8], extended: bool) -> Vec<u8> {
        let mut e = vec![0u8; 24];
        e.extend_from_slice(&mode.to_be_bytes());
        e.extend_from_slice(&[0u8; 12]);
        e.extend_from_slice(&[0xab; 20]);
        let mut flags = name.len().min(0xfff) as u16;
        if extended {
            flags |= EXTENDED;
        }
        e.extend_from_slice(&flags.to_be_bytes());
        if extended {
            e.extend_from_slice(&(1u16 << 14).to_be_bytes());
        }
        let fixed = e.len();
        e.extend_from_slice(name);
        let size = (fixed + name.len() + 8) & !7;
        e.resize(size, 0);
        e
    }

    /// One entry of a version 4 index: strip `strip` bytes of the previous name, add `suffix`.
    fn entry_v4(mode: u32, full_len: usize, strip: u8, suffix: &[u8]) -> Vec<u8> {
        let mut e = vec![0u8; 24];
        e.extend_from_slice(&mode.to_be_bytes());
        e.extend_from_slice(&[0u8; 12]);
        e.extend_from_slice(&[0xab; 20]);
        e.extend_from_slice(&(full_len.min(0xfff) as u16).to_be_bytes());
        e.push(strip);
        e.extend_from_slice(suffix);
        e.push(0);
        e
    }

    fn index(version: u32, entries: &[Vec<u8>], ext: &[u8]) -> Vec<u8> {
        let mut d = b"DIRC".to_vec();
        d.extend_from_slice(&version.to_be_bytes());
        d.extend_from_slice(&(entries.len() as u32).to_be_bytes());
        for e in entries {
            d.extend_from_slice(e);
        }
        d.extend_from_slice(ext);
        d.extend_from_slice(&[0u8; 20]);
        d
    }

    #[test]
    fn gitlinks_are_found_in_every_version() {
        let v2 = index(
            2,
            &[
                entry_v2(0o100644, b"README", false),
                entry_v2(GITLINK, b"vendor/lib", false),
            ],
            b"",
        );
        assert_eq!(
            parse(&v2, 20, false).unwrap().links,
            [b"vendor/lib".to_vec()]
        );
        let v3 = index(
            3,
            &[
                entry_v2(GITLINK, b"a", true),
                entry_v2(0o100644, b"b", false),
            ],
            b"",
        );
        assert_eq!(parse(&v3, 20, false).unwrap().links, [b"a".to_vec()]);
        // v4: "vendor/a" then "vendor/lib" (strip 1, add "lib").
        let v4 = index(
            4,
            &[
                entry_v4(0o100644, 8, 0, b"vendor/a"),
                entry_v4(GITLINK, 10, 1, b"lib"),
            ],
            b"",
        );
        assert_eq!(
            parse(&v4, 20, false).unwrap().links,
            [b"vendor/lib".to_vec()]
        );
    }

    #[test]
    fn what_git_itself_writes_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=a", "-c", "user.email=a@b"])
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", dir.path())
                .output()
                .map(|o| o.status.success());
            ok.unwrap_or(false)
        };
        if !git(&["init", "-q", "."]) {
            return;
        }
        std::fs::create_dir_all(dir.path().join("deep/er")).unwrap();
        std::fs::write(dir.path().join("deep/er/f"), "x").unwrap();
        assert!(git(&["add", "deep/er/f"]));
        let commit = "0123456789012345678901234567890123456789";
        for (n, path) in ["sub/one", "sub/two"].iter().enumerate() {
            let spec = format!("160000,{commit},{path}");
            assert!(git(&["update-index", "--add", "--cacheinfo", &spec]), "{n}");
        }
        let want = [b"sub/one".to_vec(), b"sub/two".to_vec()];
        for version in ["2", "3", "4"] {
            assert!(git(&["update-index", "--index-version", version]));
            let data = std::fs::read(dir.path().join(".git/index")).unwrap();
            assert_eq!(parse(&data, 20, false).unwrap().links, want, "v{version}");
        }
        // A split index: the gitlinks may sit in the shared file.
        assert!(git(&["update-index", "--split-index"]));
        let data = std::fs::read(dir.path().join(".git/index")).unwrap();
        let main = parse(&data, 20, false).unwrap();
        assert_eq!(main.shared.len(), 1);
        let shared_path = dir
            .path()
            .join(format!(".git/sharedindex.{}", main.shared[0]));
        let shared = parse(&std::fs::read(shared_path).unwrap(), 20, true).unwrap();
        assert_eq!(shared.links, want);
        assert!(shared.names.contains(&b"deep/er/f".to_vec()));
    }

    #[test]
    fn torn_and_hostile_files_are_errors_never_panics() {
        let good = index(
            4,
            &[
                entry_v4(0o100644, 8, 0, b"vendor/a"),
                entry_v4(GITLINK, 10, 1, b"lib"),
            ],
            b"",
        );
        for cut in 0..good.len() {
            let _ = parse(&good[..cut], 20, true);
        }
        let mut flipped = good.clone();
        for i in 0..flipped.len() {
            for bit in [0x01, 0x80, 0xff] {
                flipped[i] ^= bit;
                let _ = parse(&flipped, 20, true);
                flipped[i] ^= bit;
            }
        }
        // More stripped than the previous name had.
        let bad = index(
            4,
            &[
                entry_v4(0o100644, 1, 0, b"a"),
                entry_v4(GITLINK, 3, 9, b"bc"),
            ],
            b"",
        );
        assert_eq!(parse(&bad, 20, false), Err(()));
        // A count larger than the file holds.
        let mut big = good.clone();
        big[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(parse(&big, 20, false), Err(()));
        assert_eq!(parse(b"DIRC\0\0\0\x05\0\0\0\0", 20, false), Err(()));
    }

    #[test]
    fn the_threaded_readers_blocks_count_too() {
        // Sequentially the second entry is "vendor/alib"; read as a block of its own (no
        // previous name), it is "lib".
        let e1 = entry_v4(0o100644, 8, 0, b"vendor/a");
        let e2 = entry_v4(GITLINK, 0xfff, 0, b"lib");
        let second_at = 12 + e1.len();
        let mut ieot = b"IEOT".to_vec();
        ieot.extend_from_slice(&(4u32 + 8).to_be_bytes());
        ieot.extend_from_slice(&1u32.to_be_bytes());
        ieot.extend_from_slice(&(second_at as u32).to_be_bytes());
        ieot.extend_from_slice(&1u32.to_be_bytes());
        let ext_at = 12 + e1.len() + e2.len();
        let mut ext = ieot;
        ext.extend_from_slice(b"EOIE");
        ext.extend_from_slice(&24u32.to_be_bytes());
        ext.extend_from_slice(&(ext_at as u32).to_be_bytes());
        ext.extend_from_slice(&[0u8; 20]);
        let data = index(4, &[e1, e2], &ext);
        let links = parse(&data, 20, false).unwrap().links;
        assert_eq!(links, [b"lib".to_vec(), b"vendor/alib".to_vec()]);
    }
}
