//! Packs: the blobs of one big batch in one file. A first scan of 10,000 files made 10,000
//! blob files, and creating them was most of its time (and 4 KB of disk each, however small
//! the file); every later session of the workspace then hard-linked them one by one.
//!
//! A pack never changes once in place: `<name>.pack` holds the contents end to end and
//! `<name>.idx` their hashes and places. Both are synced before they are renamed into place,
//! the pack first, so a pack counts (its index is there) only when it is whole.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The packs' directory inside a blob store.
pub(super) const DIR: &str = "packs";
/// The first bytes of an index (its format's version).
const MAGIC: &[u8; 8] = b"REINPK01";
/// An index's header: magic, the pack's length, the number of entries.
const HEADER: usize = 24;
/// One entry: hash, offset, length.
const ENTRY: usize = 48;

/// A blob's SHA-256 as bytes.
pub(super) type Key = [u8; 32];

/// The key of a hash of 64 lowercase hex digits (`None` for anything else).
pub(super) fn key(h: &str) -> Option<Key> {
    let b = h.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut k = [0u8; 32];
    for (i, out) in k.iter_mut().enumerate() {
        *out = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Some(k)
}

/// Where one blob is in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Place {
    pub offset: u64,
    pub len: u64,
}

/// One pack's index, sorted by key.
#[derive(Debug)]
pub(super) struct Index {
    pub name: String,
    entries: Vec<(Key, Place)>,
}

impl Index {
    /// Where blob `k` is in this pack.
    pub fn find(&self, k: &Key) -> Option<Place> {
        let i = self.entries.binary_search_by(|(e, _)| e.cmp(k)).ok()?;
        Some(self.entries[i].1)
    }

    /// Reads an index file's bytes; anything malformed is an error (the pack is then unused).
    fn parse(name: &str, bytes: &[u8]) -> io::Result<Index> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("pack index {name} is damaged"),
            )
        };
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        if bytes.get(..8) != Some(MAGIC.as_slice()) {
            return Err(bad());
        }
        let (pack_len, count) = (u64_at(8).ok_or_else(bad)?, u64_at(16).ok_or_else(bad)?);
        let count = usize::try_from(count).map_err(|_| bad())?;
        if count.checked_mul(ENTRY).and_then(|n| n.checked_add(HEADER)) != Some(bytes.len()) {
            return Err(bad());
        }
        let mut entries = Vec::with_capacity(count);
        for chunk in bytes[HEADER..].chunks_exact(ENTRY) {
            let mut k = [0u8; 32];
            k.copy_from_slice(&chunk[..32]);
            let at = |i: usize| u64::from_le_bytes(chunk[i..i + 8].try_into().unwrap_or([0; 8]));
            let place = Place {
                offset: at(32),
                len: at(40),
            };
            if place
                .offset
                .checked_add(place.len)
                .is_none_or(|end| end > pack_len)
            {
                return Err(bad());
            }
            entries.push((k, place));
        }
        entries.sort_unstable_by_key(|e| e.0);
        Ok(Index {
            name: name.to_string(),
            entries,
        })
    }

    fn encode(entries: &[(Key, Place)], pack_len: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + entries.len() * ENTRY);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&pack_len.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (k, place) in entries {
            out.extend_from_slice(k);
            out.extend_from_slice(&place.offset.to_le_bytes());
            out.extend_from_slice(&place.len.to_le_bytes());
        }
        out
    }
}

fn packs_dir(store: &Path) -> PathBuf {
    store.join(DIR)
}

/// Whether `name` could be a pack's name (it becomes part of a path).
fn valid_name(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|c| c.is_ascii_hexdigit())
}

/// The names of the packs in place in the store at `store` (those with an index).
pub(super) fn names(store: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(packs_dir(store)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name();
            let name = file.to_str()?.strip_suffix(".idx")?;
            valid_name(name).then(|| name.to_string())
        })
        .collect()
}

/// Reads pack `name`'s index.
pub(super) fn load(store: &Path, name: &str) -> io::Result<Index> {
    Index::parse(
        name,
        &fs::read(packs_dir(store).join(format!("{name}.idx")))?,
    )
}

/// Reads the blob at `place` in pack `name`.
pub(super) fn read(store: &Path, name: &str, place: Place) -> io::Result<Vec<u8>> {
    let file = fs::File::open(packs_dir(store).join(format!("{name}.pack")))?;
    // The index is checked against the pack's length it recorded; this checks the pack itself
    // before allocating what the index says.
    if place.offset.saturating_add(place.len) > file.metadata()?.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("checkpoint pack {name} is shorter than its index says"),
        ));
    }
    let mut bytes = vec![0; usize::try_from(place.len).map_err(io::Error::other)?];
    file.read_exact_at(&mut bytes, place.offset)?;
    Ok(bytes)
}

/// Makes the store at `to` hold pack `name` of the store at `from`: hard links (the pack,
/// then its index), a copy where linking fails. Nothing to do when it is there already.
pub(super) fn link(from: &Path, to: &Path, name: &str) -> io::Result<()> {
    let (src, dest) = (packs_dir(from), packs_dir(to));
    if dest.join(format!("{name}.idx")).is_file() {
        return Ok(());
    }
    super::blobs::private_dir(&dest)?;
    for ext in ["pack", "idx"] {
        let file = format!("{name}.{ext}");
        let (s, d) = (src.join(&file), dest.join(&file));
        match fs::hard_link(&s, &d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => {
                // Copied under a temp name, so that no half copy is ever taken as the pack.
                let tmp = dest.join(format!(".{file}.{}.tmp", rand::random::<u32>()));
                let copied = fs::copy(&s, &tmp)
                    .and_then(|_| fs::File::open(&tmp)?.sync_data())
                    .and_then(|()| fs::rename(&tmp, &d));
                if copied.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                copied?;
            }
        }
    }
    Ok(())
}

/// A pack being written: its temp file, and what is in it so far.
pub(super) struct PackWriter {
    dir: PathBuf,
    name: String,
    file: Option<BufWriter<fs::File>>,
    len: u64,
    entries: Vec<(Key, Place)>,
}

impl PackWriter {
    /// A new pack in the store at `store`.
    pub fn create(store: &Path) -> io::Result<PackWriter> {
        let dir = packs_dir(store);
        super::blobs::private_dir(&dir)?;
        let name = format!("{:016x}", rand::random::<u64>());
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let file = opts.open(dir.join(format!(".{name}.pack.tmp")))?;
        Ok(PackWriter {
            dir,
            name,
            file: Some(BufWriter::with_capacity(256 * 1024, file)),
            len: 0,
            entries: Vec::new(),
        })
    }

    fn temp(&self, ext: &str) -> PathBuf {
        self.dir.join(format!(".{}.{ext}.tmp", self.name))
    }

    /// Appends blob `k`.
    pub fn add(&mut self, k: Key, bytes: &[u8]) -> io::Result<()> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("pack closed"))?;
        file.write_all(bytes)?;
        let len = bytes.len() as u64;
        self.entries.push((
            k,
            Place {
                offset: self.len,
                len,
            },
        ));
        self.len += len;
        Ok(())
    }

    /// Syncs the pack and its index and puts both in place; returns the index.
    pub fn finish(mut self) -> io::Result<Index> {
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("pack closed"))?;
        file.into_inner().map_err(|e| e.into_error())?.sync_data()?;
        let index = Index::encode(&self.entries, self.len);
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut idx = opts.open(self.temp("idx"))?;
        idx.write_all(&index)?;
        idx.sync_data()?;
        let name = self.name.clone();
        fs::rename(self.temp("pack"), self.dir.join(format!("{name}.pack")))?;
        fs::rename(self.temp("idx"), self.dir.join(format!("{name}.idx")))?;
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by_key(|e| e.0);
        Ok(Index { name, entries })
    }
}

impl Drop for PackWriter {
    /// An unfinished pack (a scan that failed) leaves no temp files behind.
    fn drop(&mut self) {
        for ext in ["pack", "idx"] {
            let _ = fs::remove_file(self.temp(ext));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u8) -> Key {
        [n; 32]
    }

    #[test]
    fn a_finished_pack_reads_back_and_an_unfinished_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PackWriter::create(dir.path()).unwrap();
        w.add(k(2), b"two").unwrap();
        w.add(k(1), b"one!").unwrap();
        assert!(names(dir.path()).is_empty(), "not in place before finish");
        let index = w.finish().unwrap();
        assert_eq!(names(dir.path()), std::slice::from_ref(&index.name));
        let loaded = load(dir.path(), &index.name).unwrap();
        let place = loaded.find(&k(1)).unwrap();
        assert_eq!(read(dir.path(), &index.name, place).unwrap(), b"one!");
        assert_eq!(loaded.find(&k(3)), None);

        let mut w = PackWriter::create(dir.path()).unwrap();
        w.add(k(3), b"lost").unwrap();
        drop(w);
        let left: Vec<_> = fs::read_dir(dir.path().join(DIR))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 2, "only the finished pack and its index");
    }

    #[test]
    fn a_damaged_index_is_refused_not_trusted() {
        let mut good = Index::encode(&[(k(1), Place { offset: 0, len: 3 })], 3);
        assert!(Index::parse("x", &good).is_ok());
        // Past the pack's end, cut short, wrong magic.
        let past = Index::encode(
            &[(
                k(1),
                Place {
                    offset: 2,
                    len: u64::MAX,
                },
            )],
            3,
        );
        assert!(Index::parse("x", &past).is_err());
        assert!(Index::parse("x", &good[..good.len() - 1]).is_err());
        good[0] = b'X';
        assert!(Index::parse("x", &good).is_err());
    }

    #[test]
    fn keys_are_lowercase_hex_only() {
        let h = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        assert_eq!(key(h).unwrap()[0], 0x58);
        assert!(key(&h.to_uppercase()).is_none());
        assert!(key(&h[1..]).is_none());
        assert!(key("../../etc/passwd").is_none());
    }
}
