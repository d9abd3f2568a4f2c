//! The gitlinks (submodules) a git index lists: `git status` and `git diff` run git again in
//! each populated one, which obeys that submodule's configuration and hooks. Read as bytes,
//! never by running git; anything not plainly an index is a reason to ask.

use std::path::Path;

/// The largest index read; a larger one makes git commands ask.
const MAX_INDEX: u64 = 512 << 20;

/// The mode bits of a gitlink entry.
const GITLINK: u32 = 0o160000;

/// The paths of the gitlinks in the index file at `path` (and in the shared index a split
/// index names, in `git_dir`); none when there is no index. `hash` is the object id length.
pub(crate) fn gitlinks(path: &Path, git_dir: &Path, hash: usize) -> Result<Vec<Vec<u8>>, String> {
    let bytes = match read(path)? {
        Some(b) => b,
        None => return Ok(Vec::new()),
    };
    let unreadable = || format!("the git index {} cannot be read plainly", path.display());
    let (mut links, shared) = parse(&bytes, hash).ok_or_else(unreadable)?;
    if let Some(oid) = shared {
        // A split index keeps most entries in `sharedindex.<oid>`.
        let base = git_dir.join(format!("sharedindex.{oid}"));
        let bytes = read(&base)?.ok_or_else(unreadable)?;
        links.extend(parse(&bytes, hash).ok_or_else(unreadable)?.0);
    }
    Ok(links)
}

/// The file's bytes; `None` when there is none.
fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(format!("{} cannot be read", path.display())),
    };
    if !meta.is_file() || meta.len() > MAX_INDEX {
        return Err(format!(
            "the git index {} is not a plain file rein reads",
            path.display()
        ));
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|_| format!("{} cannot be read", path.display()))
}

/// The gitlink paths of an index, and the shared index it names (hex), if any.
fn parse(b: &[u8], hash: usize) -> Option<(Vec<Vec<u8>>, Option<String>)> {
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(b, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(b, 8)?;
    let mut at = 12;
    let mut links = Vec::new();
    let mut path = Vec::new();
    for _ in 0..count {
        let mode = be32(b, at + 24)?;
        let flags = u16::from_be_bytes(b.get(at + 40 + hash..at + 42 + hash)?.try_into().ok()?);
        let extended = flags & 0x4000 != 0;
        if extended && version < 3 {
            return None;
        }
        let head = 42 + hash + if extended { 2 } else { 0 };
        let name_at = at + head;
        if version == 4 {
            // The path drops `strip` bytes of the previous one and adds a NUL-ended suffix.
            let (strip, used) = varint(b, name_at)?;
            path.truncate(path.len().checked_sub(usize::try_from(strip).ok()?)?);
            let suffix = nul_ended(b, name_at + used)?;
            path.extend_from_slice(suffix);
            at = name_at + used + suffix.len() + 1;
        } else {
            let name = nul_ended(b, name_at)?;
            path = name.to_vec();
            // Entries are padded with NULs to a multiple of eight bytes.
            at += (head + name.len() + 8) & !7;
        }
        if mode & 0o170000 == GITLINK {
            links.push(path.clone());
        }
    }
    Some((links, shared_index(b, at, hash)?))
}

/// The shared index a `link` extension names, reading the extensions from `at` on.
fn shared_index(b: &[u8], mut at: usize, hash: usize) -> Option<Option<String>> {
    // What is left after the extensions is the checksum.
    while b.len().checked_sub(at)? > hash {
        let sig = b.get(at..at + 4)?;
        let size = usize::try_from(be32(b, at + 4)?).ok()?;
        let data = b.get(at + 8..at.checked_add(8)?.checked_add(size)?)?;
        if sig == b"link" {
            let oid = data.get(..hash)?;
            let hex: String = oid.iter().map(|x| format!("{x:02x}")).collect();
            // An all-zero id means the split index names no shared index yet.
            return Some(oid.iter().any(|x| *x != 0).then_some(hex));
        }
        at += 8 + size;
    }
    Some(None)
}

/// A big-endian `u32` at `at`.
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The bytes from `at` up to the next NUL.
fn nul_ended(b: &[u8], at: usize) -> Option<&[u8]> {
    let rest = b.get(at..)?;
    rest.iter().position(|x| *x == 0).map(|n| &rest[..n])
}

/// git's offset varint (`decode_varint`) at `at`: its value and length.
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut used = 0;
    let mut c = *b.get(at)?;
    let mut val = u64::from(c & 127);
    while c & 128 != 0 {
        used += 1;
        c = *b.get(at + used)?;
        val = val
            .checked_add(1)?
            .checked_mul(128)?
            .checked_add(u64::from(c & 127))?;
    }
    Some((val, used + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// An index git itself wrote, in each version, with a submodule among files.
    #[test]
    fn gitlinks_are_found_in_every_index_version() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(r)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", r)
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(r.join("dir")).unwrap();
        std::fs::write(r.join("dir/a.txt"), "a").unwrap();
        std::fs::write(r.join("b.txt"), "b").unwrap();
        git(&["add", "."]);
        let oid = "0123456789012345678901234567890123456789";
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{oid},dir/sm"),
        ]);
        for v in ["2", "3", "4"] {
            git(&["update-index", "--index-version", v]);
            let links = gitlinks(&r.join(".git/index"), &r.join(".git"), 20).unwrap();
            assert_eq!(links, vec![b"dir/sm".to_vec()], "version {v}");
        }
        // A split index keeps the entries in `sharedindex.<id>`, which is read too.
        git(&["update-index", "--index-version", "2"]);
        git(&["update-index", "--split-index"]);
        let links = gitlinks(&r.join(".git/index"), &r.join(".git"), 20).unwrap();
        assert_eq!(links, vec![b"dir/sm".to_vec()], "split index");
        let shared = std::fs::read_dir(r.join(".git"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."));
        assert!(shared, "git wrote no shared index");
        // Not an index at all: a reason to ask.
        std::fs::write(r.join(".git/index"), "DIRC junk").unwrap();
        assert!(gitlinks(&r.join(".git/index"), &r.join(".git"), 20).is_err());
    }
}
