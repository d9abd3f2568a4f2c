//! The content-addressed blob store beside a session file: one file per distinct content,
//! named by its SHA-256, written once (temp file, then rename) and never changed.

use sha2::{Digest, Sha256};
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

    /// Stores `bytes` under their hash `h`; returns whether it was new.
    pub fn put(&self, h: &str, bytes: &[u8]) -> io::Result<bool> {
        let path = self
            .path(h)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a blob hash"))?;
        if path.is_file() {
            return Ok(false);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        private_dir(parent)?;
        let tmp = parent.join(format!(".{}.{}.tmp", &h[2..], rand::random::<u32>()));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let result = (|| {
            let mut f = opts.open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_data()?;
            fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map(|()| true)
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
}
