//! Image bytes no file holds (a downscaled copy), kept once under rein's data dir and named by
//! their sha256, so a session file records only the hash.

use super::{ImageRef, sha256_hex};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory of stored images under the data dir.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("images")
}

/// Where the bytes of `meta` are stored.
pub fn path_of(data_dir: &Path, meta: &ImageRef) -> PathBuf {
    dir(data_dir).join(format!("{}.{}", meta.sha256, meta.media_type.extension()))
}

/// Stores `bytes` for `meta` (once: an existing copy of the same hash is kept), written to a
/// temp file and renamed so a reader never sees half of it.
pub fn put(data_dir: &Path, meta: &ImageRef, bytes: &[u8]) -> std::io::Result<()> {
    let target = path_of(data_dir, meta);
    if target.is_file() {
        return Ok(());
    }
    let dir = dir(data_dir);
    std::fs::create_dir_all(&dir)?;
    let mut tmp = tempfile_in(&dir)?;
    tmp.1.write_all(bytes)?;
    tmp.1.sync_all()?;
    std::fs::rename(&tmp.0, &target)
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    for n in 0..100u32 {
        let path = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no free temp name for a stored image",
    ))
}

/// The stored bytes of `meta`, checked against its hash; the error says why not, for the
/// note the model reads.
pub fn get(data_dir: &Path, meta: &ImageRef) -> Result<Vec<u8>, String> {
    // The name comes from a session file: only a hash may name a file here (no `../`).
    let is_hash = meta.sha256.len() == 64 && meta.sha256.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hash {
        return Err("its recorded hash is not a sha256".into());
    }
    let path = path_of(data_dir, meta);
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "rein's stored copy of it is gone".to_owned(),
        _ => format!("rein's stored copy cannot be read ({e})"),
    })?;
    if sha256_hex(&bytes) != meta.sha256 {
        return Err("rein's stored copy of it changed".into());
    }
    Ok(bytes)
}
