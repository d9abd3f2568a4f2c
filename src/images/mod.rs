//! Images attached to a user message (`@shot.png`, a pasted path): what is sent, how it is
//! recorded, and the limits every provider shares.
//!
//! An image travels as a [`crate::llm::Message::UserImage`] right after the user message that
//! mentioned it. In memory it holds the bytes sent; serialised (session file, compaction and
//! rewind contexts) it is only an [`ImageRef`]: name, path, media type, size, dimensions and the
//! sha256 of the bytes sent. Resuming reads the bytes again ([`store`]) and checks that hash.

pub mod mention;
mod shrink;
pub mod store;
pub mod support;

pub use shrink::{MAX_BYTES, MAX_FILE_BYTES, MAX_IMAGES, MAX_REQUEST_BYTES, MAX_SIDE, prepare};
pub use support::ImagesSetting;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;

/// The formats every supported provider accepts (and the only ones rein sends).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MediaType {
    /// `image/png`.
    #[serde(rename = "image/png")]
    Png,
    /// `image/jpeg`.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// `image/gif`.
    #[serde(rename = "image/gif")]
    Gif,
    /// `image/webp`.
    #[serde(rename = "image/webp")]
    Webp,
}

impl MediaType {
    /// The MIME type, as the wire formats spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaType::Png => "image/png",
            MediaType::Jpeg => "image/jpeg",
            MediaType::Gif => "image/gif",
            MediaType::Webp => "image/webp",
        }
    }

    /// The file extension used for stored copies.
    pub fn extension(self) -> &'static str {
        match self {
            MediaType::Png => "png",
            MediaType::Jpeg => "jpg",
            MediaType::Gif => "gif",
            MediaType::Webp => "webp",
        }
    }
}

/// What a session records about an attached image (never the bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageRef {
    /// The file name as shown: one visible line, controls made visible.
    pub name: String,
    /// The resolved path of the file it came from, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The media type of the bytes sent.
    pub media_type: MediaType,
    /// Width of the image sent, in pixels.
    pub width: u32,
    /// Height of the image sent, in pixels.
    pub height: u32,
    /// Size of the bytes sent.
    pub bytes: u64,
    /// sha256 (hex) of the bytes sent.
    pub sha256: String,
    /// The bytes sent are not the file's (downscaled or converted): they are kept once in
    /// rein's data dir under their hash, and the original's size in pixels is recorded here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<Original>,
}

/// The file an image was made from, when what is sent differs from it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Original {
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// Its size in bytes.
    pub bytes: u64,
}

impl ImageRef {
    /// How the transcript shows it: `[image shot.png 1280×720]`.
    pub fn label(&self) -> String {
        format!("[image {} {}×{}]", self.name, self.width, self.height)
    }

    /// Whether the bytes sent live only in rein's store (no file holds them).
    pub fn stored(&self) -> bool {
        self.original.is_some() || self.path.is_none()
    }
}

/// The bytes of an image, or why they are not there.
#[derive(Clone, Default)]
pub enum Payload {
    /// The bytes to send.
    Bytes(Arc<[u8]>),
    /// Not available: the model gets a short note instead.
    Missing(String),
    /// Read from a session and not loaded yet.
    #[default]
    NotLoaded,
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Payload::Missing(why) => write!(f, "Missing({why:?})"),
            Payload::NotLoaded => f.write_str("NotLoaded"),
        }
    }
}

/// An attached image: its reference and, in memory, its bytes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Image {
    /// What is recorded.
    #[serde(flatten)]
    pub meta: ImageRef,
    /// What is sent (never serialised).
    #[serde(skip)]
    pub payload: Payload,
}

// Identity is the reference and whether the bytes are there: the bytes are named by their
// hash, so hashing them again for every request (the wire cache keys) would only cost time.
impl PartialEq for Image {
    fn eq(&self, other: &Self) -> bool {
        self.meta == other.meta && self.payload_key() == other.payload_key()
    }
}

impl Eq for Image {}

impl std::hash::Hash for Image {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.meta.hash(state);
        self.payload_key().hash(state);
    }
}

impl Image {
    /// An image whose bytes are `bytes` (already within the limits).
    pub fn new(meta: ImageRef, bytes: Arc<[u8]>) -> Image {
        Image {
            meta,
            payload: Payload::Bytes(bytes),
        }
    }

    fn payload_key(&self) -> (u8, &str) {
        match &self.payload {
            Payload::Bytes(_) => (0, ""),
            Payload::Missing(why) => (1, why),
            Payload::NotLoaded => (2, ""),
        }
    }

    /// The bytes, when they are there.
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.payload {
            Payload::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The bytes as base64 (standard alphabet, padded), when they are there.
    pub fn base64(&self) -> Option<String> {
        self.bytes()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
    }

    /// The bytes as a `data:` URL (OpenAI's formats), when they are there.
    pub fn data_url(&self) -> Option<String> {
        self.base64()
            .map(|b| format!("data:{};base64,{b}", self.meta.media_type.as_str()))
    }

    /// What the model reads instead of an image it cannot get.
    pub fn note(&self) -> String {
        let why = match &self.payload {
            Payload::Missing(why) => why.as_str(),
            _ => "its bytes were not loaded",
        };
        format!(
            "{} was attached here but is not sent again: {why}.",
            self.meta.label()
        )
    }

    /// Marks the image as not sent, with the reason the model reads.
    pub fn drop_bytes(&mut self, why: impl Into<String>) {
        self.payload = Payload::Missing(why.into());
    }

    /// A rough token count: Anthropic's documented w×h/750 (OpenAI's tiles come out near it),
    /// at most what a 2000 px image costs.
    pub fn estimated_tokens(&self) -> u64 {
        if self.bytes().is_none() {
            return (self.note().len() / 4) as u64;
        }
        let pixels = u64::from(self.meta.width) * u64::from(self.meta.height);
        (pixels / 750).clamp(85, 5_400)
    }
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A file name for the transcript: the last path component, one visible line, at most 80
/// characters (a hostile name cannot move the cursor or fake more lines).
pub fn display_name(path: &std::path::Path) -> String {
    let raw = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned());
    let shown = crate::sanitize::visible_line(&raw);
    crate::text::headline(&shown, 80)
}

/// An error about one image, worded for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImageError(pub String);

#[cfg(test)]
mod tests;
