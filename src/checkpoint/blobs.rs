//! The content-addressed blob store beside a session file: one file per distinct content,
//! named by its SHA-256, written once (temp file, then rename) and never changed; a batch too
//! big for a file each goes into one pack (see [`super::pack`]).

use super::pack::{self, Index, Key, PackWriter, Place};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The blobs of one session (`<session>.checkpoints/blobs/`).
#[derive(Clone)]
pub struct BlobStore {
    dir: PathBuf,
    /// The indexes of its packs, read at first use; shared by the store's clones.
    packs: Arc<Mutex<Packs>>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore").field("dir", &self.dir).finish()
    }
}

/// The packs a store knows of.
#[derive(Default)]
struct Packs {
    /// The packs' directory was listed (at first use).
    listed: bool,
    indexes: Vec<Index>,
}

impl Packs {
    fn find(&self, k: &Key) -> Option<(String, Place)> {
        self.indexes
            .iter()
            .find_map(|i| Some((i.name.clone(), i.find(k)?)))
    }

    fn knows(&self, name: &str) -> bool {
        self.indexes.iter().any(|i| i.name == name)
    }

    /// Reads the indexes of packs in `dir` not known yet (a damaged one is left out).
    fn read_new(&mut self, dir: &Path) {
        for name in pack::names(dir) {
            if !self.knows(&name) {
                match pack::load(dir, &name) {
                    Ok(index) => self.indexes.push(index),
                    Err(e) => tracing::warn!("checkpoint: {e}"),
                }
            }
        }
        self.listed = true;
    }
}

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `h` is a hash this store could have written (it becomes a file name, and it may
/// come from a session file someone edited).
fn valid(h: &str) -> bool {
    pack::key(h).is_some()
}

/// Creates `dir` and its parents, private to the person.
pub(super) fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn not_a_hash() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a blob hash")
}

impl BlobStore {
    /// The store under `dir` (created at the first write).
    pub fn new(dir: impl Into<PathBuf>) -> BlobStore {
        BlobStore {
            dir: dir.into(),
            packs: Arc::default(),
        }
    }

    /// Where the store lives.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, h: &str) -> Option<PathBuf> {
        valid(h).then(|| self.dir.join(&h[..2]).join(&h[2..]))
    }

    /// The known packs, listed at first use.
    fn packs(&self) -> MutexGuard<'_, Packs> {
        let mut packs = self.packs.lock().unwrap_or_else(|e| e.into_inner());
        if !packs.listed {
            packs.read_new(&self.dir);
        }
        packs
    }

    /// Where blob `h` is in a pack; `fresh` looks for packs another store put here since they
    /// were listed (a hard link from `/fork`, another process) before saying no.
    fn in_pack(&self, h: &str, fresh: bool) -> Option<(String, Place)> {
        let k = pack::key(h)?;
        let mut packs = self.packs();
        if let Some(found) = packs.find(&k) {
            return Some(found);
        }
        if !fresh {
            return None;
        }
        packs.read_new(&self.dir);
        packs.find(&k)
    }

    /// Whether the blob is there.
    pub fn has(&self, h: &str) -> bool {
        self.in_pack(h, true).is_some() || self.path(h).is_some_and(|p| p.is_file())
    }

    /// [`BlobStore::has`] without looking for packs put here by others: a blob missed is
    /// only written again, so a scan asks this per file without listing the packs each time.
    fn has_known(&self, h: &str) -> bool {
        self.in_pack(h, false).is_some() || self.path(h).is_some_and(|p| p.is_file())
    }

    /// Takes a pack this store just finished (or had linked in) into its list.
    fn learn(&self, index: Index) {
        let mut packs = self.packs();
        if !packs.knows(&index.name) {
            packs.indexes.push(index);
        }
    }

    /// Stores `bytes` under their hash `h`, on disk before this returns; returns whether it
    /// was new.
    pub fn put(&self, h: &str, bytes: &[u8]) -> io::Result<bool> {
        let mut batch = self.batch();
        let new = batch.put(h, bytes)?;
        batch.finish()?;
        Ok(new)
    }

    /// A batch of writes made durable together by [`Batch::finish`] (a scan's).
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            store: self,
            staged: Vec::new(),
            hashes: HashSet::new(),
            pack: None,
        }
    }

    /// Writes `bytes` to a temp file beside blob `h`'s place.
    fn stage(&self, h: &str, bytes: &[u8]) -> io::Result<Staged> {
        let path = self.path(h).ok_or_else(not_a_hash)?;
        let parent = path.parent().unwrap_or(&self.dir);
        private_dir(parent)?;
        let tmp = parent.join(format!(".{}.{}.tmp", &h[2..], rand::random::<u32>()));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let written = opts.open(&tmp).and_then(|mut f| f.write_all(bytes));
        match written {
            Ok(()) => Ok(Staged {
                tmp,
                path,
                hash: h.to_string(),
            }),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Reads blob `h`, checking that its content still has that hash.
    pub fn get(&self, h: &str) -> io::Result<Vec<u8>> {
        let (bytes, whence) = match self.in_pack(h, true) {
            Some((name, place)) => (pack::read(&self.dir, &name, place)?, format!("pack {name}")),
            None => {
                let path = self.path(h).ok_or_else(not_a_hash)?;
                (fs::read(&path)?, path.display().to_string())
            }
        };
        if hash(&bytes) != h {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the checkpoint blob {h} in {whence} is damaged"),
            ));
        }
        Ok(bytes)
    }

    /// Makes `other` hold blob `h` too: a hard link where possible (of the whole pack when it
    /// is in one), else a copy.
    pub fn link_one(&self, h: &str, other: &BlobStore) -> io::Result<()> {
        if other.has_known(h) {
            return Ok(());
        }
        if let Some((name, _)) = self.in_pack(h, false) {
            return self.link_pack(&name, other);
        }
        let (Some(src), Some(dest)) = (self.path(h), other.path(h)) else {
            return Err(not_a_hash());
        };
        private_dir(dest.parent().unwrap_or(&other.dir))?;
        if fs::hard_link(&src, &dest).is_err() {
            fs::copy(&src, &dest)?;
        }
        Ok(())
    }

    /// Makes `other` hold pack `name` of this store.
    fn link_pack(&self, name: &str, other: &BlobStore) -> io::Result<()> {
        pack::link(&self.dir, &other.dir, name)?;
        other.learn(pack::load(&other.dir, name)?);
        Ok(())
    }

    /// Makes `other` hold every blob this store holds, for `/fork`.
    pub fn link_into(&self, other: &BlobStore) -> io::Result<()> {
        for name in pack::names(&self.dir) {
            self.link_pack(&name, other)?;
        }
        let Ok(fans) = fs::read_dir(&self.dir) else {
            return Ok(());
        };
        for fan in fans.flatten() {
            let Ok(files) = fs::read_dir(fan.path()) else {
                continue;
            };
            for f in files.flatten() {
                let name = format!(
                    "{}{}",
                    fan.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                // Temp files, packs and strays are not blobs.
                if valid(&name) {
                    self.link_one(&name, other)?;
                }
            }
        }
        Ok(())
    }
}

/// Blobs written only once their content is on disk: a blob under its final name is always
/// whole, so a crash never leaves a damaged one that later scans take as kept.
///
/// The first few are written each to a temp file, synced one by one and renamed into place by
/// [`Batch::finish`]; past [`LOOSE_MAX`] they all go into one pack, synced once: a first scan
/// of 10,000 files otherwise creates 10,000 files (and waited for 10,000 syncs, then for a
/// `syncfs` of everything else on the disk).
pub struct Batch<'a> {
    store: &'a BlobStore,
    staged: Vec<Staged>,
    /// The hashes of `staged` and of what is in `pack`.
    hashes: HashSet<String>,
    pack: Option<PackWriter>,
}

/// A blob written to its temp file, not yet synced or in place.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    hash: String,
}

/// Batches up to this size keep a file per blob (a command's scan: its few changed files stay
/// plain files, not packs of one).
const LOOSE_MAX: usize = 16;

impl Batch<'_> {
    /// Stages `bytes` under their hash `h`; returns whether it is new (not kept, nor staged
    /// in this batch).
    pub fn put(&mut self, h: &str, bytes: &[u8]) -> io::Result<bool> {
        let k = pack::key(h).ok_or_else(not_a_hash)?;
        if self.hashes.contains(h) || self.store.has_known(h) {
            return Ok(false);
        }
        if self.pack.is_none() && self.staged.len() >= LOOSE_MAX {
            self.pack = Some(self.pack_staged()?);
        }
        match self.pack.as_mut() {
            Some(pack) => pack.add(k, bytes)?,
            None => {
                let staged = self.store.stage(h, bytes)?;
                self.staged.push(staged);
            }
        }
        self.hashes.insert(h.to_string());
        Ok(true)
    }

    /// Starts a pack with the blobs staged so far (their temp files go).
    fn pack_staged(&mut self) -> io::Result<PackWriter> {
        let mut pack = PackWriter::create(&self.store.dir)?;
        for s in &self.staged {
            let k = pack::key(&s.hash).ok_or_else(not_a_hash)?;
            pack.add(k, &fs::read(&s.tmp)?)?;
        }
        for s in std::mem::take(&mut self.staged) {
            let _ = fs::remove_file(&s.tmp);
        }
        Ok(pack)
    }

    /// Whether blob `h` is kept or staged in this batch.
    pub fn has(&self, h: &str) -> bool {
        self.hashes.contains(h) || self.store.has_known(h)
    }

    /// Makes every staged blob durable and puts it in place; on an error none of those not
    /// yet in place is kept.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(pack) = self.pack.take() {
            self.store.learn(pack.finish()?);
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        let result = staged
            .iter()
            .try_for_each(|s| fs::File::open(&s.tmp)?.sync_data())
            .and_then(|()| staged.iter().try_for_each(|s| fs::rename(&s.tmp, &s.path)));
        if result.is_err() {
            for s in &staged {
                let _ = fs::remove_file(&s.tmp);
            }
        }
        result
    }
}

impl Drop for Batch<'_> {
    /// A batch dropped unfinished (a scan that failed) leaves no temp files behind (the
    /// pack's own drop removes its).
    fn drop(&mut self) {
        for s in &self.staged {
            let _ = fs::remove_file(&s.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_verify_and_refuse_odd_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"));
        let h = hash(b"hello\n");
        assert_eq!(
            h,
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert!(store.put(&h, b"hello\n").unwrap());
        assert!(!store.put(&h, b"hello\n").unwrap(), "written once");
        assert_eq!(store.get(&h).unwrap(), b"hello\n");
        assert!(store.put("../../etc/passwd", b"x").is_err());
        assert!(store.get(&"A".repeat(64)).is_err());
        // A damaged blob is an error, not wrong content.
        let p = store.path(&h).unwrap();
        fs::write(&p, b"tampered").unwrap();
        assert!(store.get(&h).is_err());
    }

    #[test]
    fn link_into_copies_every_blob() {
        let dir = tempfile::tempdir().unwrap();
        let a = BlobStore::new(dir.path().join("a"));
        let b = BlobStore::new(dir.path().join("b"));
        let (h1, h2) = (hash(b"one"), hash(b"two"));
        a.put(&h1, b"one").unwrap();
        a.put(&h2, b"two").unwrap();
        a.link_into(&b).unwrap();
        assert_eq!(b.get(&h1).unwrap(), b"one");
        assert_eq!(b.get(&h2).unwrap(), b"two");
    }

    /// Names of the files under the store (temp files start with a dot).
    fn files(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for fan in fs::read_dir(dir).into_iter().flatten().flatten() {
            for f in fs::read_dir(fan.path()).unwrap().flatten() {
                out.push(f.file_name().to_string_lossy().into_owned());
            }
        }
        out
    }

    #[test]
    fn a_batch_keeps_nothing_under_its_name_until_it_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"));
        // Both ways: a file per blob, and past the limit one pack.
        for n in [3, LOOSE_MAX + 5] {
            let contents: Vec<String> = (0..n).map(|i| format!("{n} file {i}\n")).collect();
            let mut batch = store.batch();
            for c in &contents {
                assert!(batch.put(&hash(c.as_bytes()), c.as_bytes()).unwrap());
                assert!(
                    !batch.put(&hash(c.as_bytes()), c.as_bytes()).unwrap(),
                    "staged once"
                );
                assert!(batch.has(&hash(c.as_bytes())));
                assert!(
                    !store.has(&hash(c.as_bytes())),
                    "not in place before finish"
                );
            }
            batch.finish().unwrap();
            for c in &contents {
                assert_eq!(store.get(&hash(c.as_bytes())).unwrap(), c.as_bytes());
            }
        }
        assert!(
            files(store.dir()).iter().all(|f| !f.starts_with('.')),
            "no temp files left"
        );
    }

    #[test]
    fn a_dropped_batch_leaves_no_blob_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"));
        let mut batch = store.batch();
        batch.put(&hash(b"lost"), b"lost").unwrap();
        drop(batch);
        assert!(!store.has(&hash(b"lost")));
        assert_eq!(files(store.dir()), Vec::<String>::new());
    }

    /// Keeps `n` distinct contents in `store` in one batch; returns them.
    fn kept_in_one_batch(store: &BlobStore, n: usize) -> Vec<String> {
        let contents: Vec<String> = (0..n).map(|i| format!("content {i}\n")).collect();
        let mut batch = store.batch();
        for c in &contents {
            assert!(batch.put(&hash(c.as_bytes()), c.as_bytes()).unwrap());
        }
        batch.finish().unwrap();
        contents
    }

    #[test]
    fn a_big_batch_is_one_pack_that_other_stores_and_forks_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("a"));
        let contents = kept_in_one_batch(&store, 1000);
        let loose: Vec<String> = files(store.dir())
            .into_iter()
            .filter(|f| !f.ends_with(".pack") && !f.ends_with(".idx"))
            .collect();
        assert_eq!(loose, Vec::<String>::new(), "no file per blob");
        assert_eq!(pack::names(store.dir()).len(), 1);
        // Another process's store of the same directory reads the pack.
        let again = BlobStore::new(dir.path().join("a"));
        for c in &contents {
            assert_eq!(again.get(&hash(c.as_bytes())).unwrap(), c.as_bytes());
        }
        // A second session links the pack, not a thousand blobs, and knows it at once.
        let b = BlobStore::new(dir.path().join("b"));
        assert!(!b.has(&hash(contents[0].as_bytes())));
        store.link_one(&hash(contents[7].as_bytes()), &b).unwrap();
        assert!(b.has_known(&hash(contents[999].as_bytes())));
        assert_eq!(pack::names(b.dir()).len(), 1);
        // A fork gets the pack too, and a store listed before the fork sees it when asked.
        let c = BlobStore::new(dir.path().join("c"));
        assert!(!c.has(&hash(contents[1].as_bytes())));
        store
            .link_into(&BlobStore::new(dir.path().join("c")))
            .unwrap();
        assert!(c.has(&hash(contents[1].as_bytes())));
        assert_eq!(
            c.get(&hash(contents[1].as_bytes())).unwrap(),
            contents[1].as_bytes()
        );
    }

    #[test]
    fn a_damaged_pack_is_an_error_not_wrong_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path().join("blobs"));
        let contents = kept_in_one_batch(&store, 40);
        let name = &pack::names(store.dir())[0];
        let path = store.dir().join(pack::DIR).join(format!("{name}.pack"));
        let mut bytes = fs::read(&path).unwrap();
        bytes[0] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(store.get(&hash(contents[0].as_bytes())).is_err());
        assert_eq!(
            store.get(&hash(contents[39].as_bytes())).unwrap(),
            contents[39].as_bytes()
        );
        fs::write(&path, b"short").unwrap();
        assert!(store.get(&hash(contents[39].as_bytes())).is_err());
    }
}
