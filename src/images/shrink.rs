//! Checking an image file and bringing it within the limits every provider accepts.

use super::{Image, ImageError, ImageRef, MediaType, Original, sha256_hex};
use image::{DynamicImage, ImageFormat, ImageReader, Limits, imageops::FilterType};
use std::io::Cursor;
use std::path::PathBuf;

/// Longest side sent, in pixels. Anthropic refuses more than 2000 px once a request holds many
/// images (and scales anything past 1568 px down itself); OpenAI scales to fit 2048 px.
pub const MAX_SIDE: u32 = 2000;

/// Largest image sent, in bytes: Anthropic's 5 MiB limit applies to the base64 text, which is
/// 4/3 of the bytes. OpenAI's 50 MB per request leaves room for a dozen of these.
pub const MAX_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

/// Images one request carries at most: the newest; older ones become notes. Anthropic lowers
/// its size limit past 20 images a request, and every image is sent again with each request.
pub const MAX_IMAGES: usize = 20;

/// Image bytes one request carries at most (about 27 MiB as base64): under Anthropic's 32 MB
/// request limit and OpenAI's 50 MB, with room for the text.
pub const MAX_REQUEST_BYTES: u64 = 20 * 1024 * 1024;

/// Largest file rein reads as an image at all: decoding more is slow and no screenshot is.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Decoder limits: a crafted header (a "decompression bomb") fails instead of allocating.
const MAX_DECODE_SIDE: u32 = 20_000;
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;

/// Sides tried when shrinking a large image further, after [`MAX_SIDE`].
const SMALLEST_SIDE: u32 = 256;

/// JPEG quality for photos and for screenshots too large as PNG.
const JPEG_QUALITY: u8 = 85;

/// Checks `data` (the contents of the file `name`), decodes it fully (a corrupt file fails
/// here, not at the provider) and returns the image to send: the bytes as they are when they
/// fit, else a downscaled copy (PNG, or JPEG for photos and when PNG stays too large).
pub fn prepare(data: &[u8], name: &str, path: Option<PathBuf>) -> Result<Image, ImageError> {
    let media = media_type(data, name)?;
    let decoded = decode(data, name, media)?;
    let (width, height) = (decoded.width(), decoded.height());
    // A GIF may be animated, which OpenAI refuses: its first frame goes as a PNG.
    let fits = width.max(height) <= MAX_SIDE && data.len() <= MAX_BYTES && media != MediaType::Gif;
    if fits {
        let meta = ImageRef {
            name: name.to_owned(),
            path,
            media_type: media,
            width,
            height,
            bytes: data.len() as u64,
            sha256: sha256_hex(data),
            original: None,
        };
        return Ok(Image::new(meta, data.into()));
    }
    let (bytes, sent_media, w, h) = shrink(&decoded, media, name)?;
    let meta = ImageRef {
        name: name.to_owned(),
        path,
        media_type: sent_media,
        width: w,
        height: h,
        bytes: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
        original: Some(Original {
            width,
            height,
            bytes: data.len() as u64,
        }),
    };
    Ok(Image::new(meta, bytes.into()))
}

/// The format, from the bytes (never the name): only the four every provider takes.
fn media_type(data: &[u8], name: &str) -> Result<MediaType, ImageError> {
    let format = image::guess_format(data).map_err(|_| {
        ImageError(format!(
            "{name} is not an image rein can send (PNG, JPEG, GIF or WebP): its contents are \
             not in any of those formats"
        ))
    })?;
    match format {
        ImageFormat::Png => Ok(MediaType::Png),
        ImageFormat::Jpeg => Ok(MediaType::Jpeg),
        ImageFormat::Gif => Ok(MediaType::Gif),
        ImageFormat::WebP => Ok(MediaType::Webp),
        other => Err(ImageError(format!(
            "{name} is a {} image; rein sends PNG, JPEG, GIF and WebP (convert it first)",
            other
                .extensions_str()
                .first()
                .unwrap_or(&"other")
                .to_uppercase()
        ))),
    }
}

fn decode(data: &[u8], name: &str, media: MediaType) -> Result<DynamicImage, ImageError> {
    let format = match media {
        MediaType::Png => ImageFormat::Png,
        MediaType::Jpeg => ImageFormat::Jpeg,
        MediaType::Gif => ImageFormat::Gif,
        MediaType::Webp => ImageFormat::WebP,
    };
    let mut reader = ImageReader::with_format(Cursor::new(data), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DECODE_SIDE);
    limits.max_image_height = Some(MAX_DECODE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    reader.decode().map_err(|e| {
        ImageError(format!(
            "{name} cannot be read as {} (corrupt, truncated or too large): {e}",
            media.as_str()
        ))
    })
}

/// Downscales until the encoded image fits [`MAX_BYTES`]: first to [`MAX_SIDE`], then by a
/// quarter at a time.
fn shrink(
    img: &DynamicImage,
    source: MediaType,
    name: &str,
) -> Result<(Vec<u8>, MediaType, u32, u32), ImageError> {
    let mut side = MAX_SIDE.min(img.width().max(img.height()));
    loop {
        let scaled = if img.width().max(img.height()) > side {
            img.resize(side, side, FilterType::Triangle)
        } else {
            img.clone()
        };
        // Screenshots stay PNG (sharp text); photos go as JPEG, as they came.
        if source != MediaType::Jpeg {
            let png = encode(&scaled, ImageFormat::Png, name)?;
            if png.len() <= MAX_BYTES {
                return Ok((png, MediaType::Png, scaled.width(), scaled.height()));
            }
        }
        let rgb = DynamicImage::ImageRgb8(scaled.to_rgb8());
        let jpeg = encode(&rgb, ImageFormat::Jpeg, name)?;
        if jpeg.len() <= MAX_BYTES {
            return Ok((jpeg, MediaType::Jpeg, rgb.width(), rgb.height()));
        }
        if side <= SMALLEST_SIDE {
            return Err(ImageError(format!(
                "{name} stays over {} MB even at {side} px; attach a smaller image",
                MAX_BYTES / (1024 * 1024)
            )));
        }
        side = (side * 3 / 4).max(SMALLEST_SIDE);
    }
}

fn encode(img: &DynamicImage, format: ImageFormat, name: &str) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    let result = if format == ImageFormat::Jpeg {
        let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        img.write_with_encoder(enc)
    } else {
        img.write_to(&mut Cursor::new(&mut out), format)
    };
    result.map_err(|e| ImageError(format!("cannot downscale {name}: {e}")))?;
    Ok(out)
}
