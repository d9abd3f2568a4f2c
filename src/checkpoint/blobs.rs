//! The content-addressed blob store beside a session file: one file per distinct content,
//! named by its SHA-256, written once (temp file, then rename) and never changed.

use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The blobs of one session (`<session>.checkpoints/blobs/`).
#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
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
    h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

impl BlobStore {
    /// The store under `dir` (created at the first write).
    pub fn new(dir: impl Into<PathBuf>) -> BlobStore {
        BlobStore { dir: dir.into() }
    }

    /// Where the store lives.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, h: &str) -> Option<PathBuf> {
        valid(h).then(|| self.dir.join(&h[..2]).join(&h[2..]))
    }

    /// Whether the blob is there.
    pub fn has(&self, h: &str) -> bool {
        self.path(h).is_some_and(|p| p.is_file())
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
        }
    }

    /// Writes `bytes` to a temp file beside blob `h`'s place; `None` when `h` is already kept.
    fn stage(&self, h: &str, bytes: &[u8]) -> io::Result<Option<Staged>> {
        let path = self
            .path(h)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a blob hash"))?;
        if path.is_file() {
            return Ok(None);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        private_dir(parent)?;
        let tmp = parent.join(format!(".{}.{}.tmp", &h[2..], rand::random::<u32>()));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let written = opts.open(&tmp).and_then(|mut f| f.write_all(bytes));
        match written {
            Ok(()) => Ok(Some(Staged { tmp, path })),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Reads blob `h`, checking that its content still has that hash.
    pub fn get(&self, h: &str) -> io::Result<Vec<u8>> {
        let path = self
            .path(h)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a blob hash"))?;
        let bytes = fs::read(&path)?;
        if hash(&bytes) != h {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the checkpoint blob {} is damaged", path.display()),
            ));
        }
        Ok(bytes)
    }

    /// Makes `other` hold blob `h` too: a hard link where possible, else a copy.
    pub fn link_one(&self, h: &str, other: &BlobStore) -> io::Result<()> {
        let (Some(src), Some(dest)) = (self.path(h), other.path(h)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a blob hash",
            ));
        };
        if dest.is_file() {
            return Ok(());
        }
        private_dir(dest.parent().unwrap_or(&other.dir))?;
        if fs::hard_link(&src, &dest).is_err() {
            fs::copy(&src, &dest)?;
        }
        Ok(())
    }

    /// Makes `other` hold every blob this store holds, for `/fork`.
    pub fn link_into(&self, other: &BlobStore) -> io::Result<()> {
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
                // Temp files and strays are not blobs.
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
/// Each is written to a temp file first; [`Batch::finish`] syncs them and renames them into
/// place. A few are synced one by one (as a single write always was); more share one
/// `syncfs`: a first scan of 10,000 files otherwise waits for 10,000 separate syncs
/// (about 1 ms each here).
pub struct Batch<'a> {
    store: &'a BlobStore,
    staged: Vec<Staged>,
    /// The hashes of `staged`.
    hashes: HashSet<String>,
}

/// A blob written to its temp file, not yet synced or in place.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

/// Batches up to this size sync file by file: one `syncfs` also waits for everything else
/// written to the filesystem (a build the command just ran), which a few files never should.
const SYNC_EACH_MAX: usize = 16;

impl Batch<'_> {
    /// Stages `bytes` under their hash `h`; returns whether it is new (not kept, nor staged
    /// in this batch).
    pub fn put(&mut self, h: &str, bytes: &[u8]) -> io::Result<bool> {
        // `stage` itself skips a blob already in place.
        if self.hashes.contains(h) {
            return Ok(false);
        }
        match self.store.stage(h, bytes)? {
            Some(staged) => {
                self.staged.push(staged);
                self.hashes.insert(h.to_string());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether blob `h` is kept or staged in this batch.
    pub fn has(&self, h: &str) -> bool {
        self.hashes.contains(h) || self.store.has(h)
    }

    /// Makes every staged blob durable and puts it in place; on an error none of those not
    /// yet in place is kept.
    pub fn finish(mut self) -> io::Result<()> {
        let staged = std::mem::take(&mut self.staged);
        let result = sync_all(&self.store.dir, &staged)
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
    /// A batch dropped unfinished (a scan that failed) leaves no temp files behind.
    fn drop(&mut self) {
        for s in &self.staged {
            let _ = fs::remove_file(&s.tmp);
        }
    }
}

/// Syncs the staged files' data: one by one when there are few, else the whole filesystem.
fn sync_all(dir: &Path, staged: &[Staged]) -> io::Result<()> {
    if staged.len() <= SYNC_EACH_MAX {
        return staged
            .iter()
            .try_for_each(|s| fs::File::open(&s.tmp)?.sync_data());
    }
    #[cfg(target_os = "linux")]
    {
        let fd = fs::File::open(dir)?;
        rustix::fs::syncfs(&fd).map_err(io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        staged
            .iter()
            .try_for_each(|s| fs::File::open(&s.tmp)?.sync_data())
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
        // Both ways of syncing: file by file, and past the limit one syncfs.
        for n in [3, SYNC_EACH_MAX + 5] {
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
}
