//! Which models take images: the `images` setting, names known to be text-only, and a
//! server's refusal recognised for what it is.

use serde::{Deserialize, Deserializer};

/// `images = "auto" | true | false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImagesSetting {
    /// Send images unless the model is known to be text-only (a server's refusal is caught).
    #[default]
    Auto,
    /// Always send them (a model rein thinks is text-only but is not).
    On,
    /// Never: an attached image is an error before anything is sent.
    Off,
}

impl ImagesSetting {
    /// Reads `auto`, `on`/`true`, `off`/`false`.
    pub fn parse(s: &str) -> Option<ImagesSetting> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(ImagesSetting::Auto),
            "on" | "true" | "yes" => Some(ImagesSetting::On),
            "off" | "false" | "no" => Some(ImagesSetting::Off),
            _ => None,
        }
    }

    /// How `rein config` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            ImagesSetting::Auto => "auto",
            ImagesSetting::On => "true",
            ImagesSetting::Off => "false",
        }
    }
}

impl<'de> Deserialize<'de> for ImagesSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bool(true) => Ok(ImagesSetting::On),
            Raw::Bool(false) => Ok(ImagesSetting::Off),
            Raw::Text(s) => ImagesSetting::parse(&s).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "images must be \"auto\", true or false; it is \"{s}\""
                ))
            }),
        }
    }
}

/// Families that take no images, by the start of the model name (after any `vendor/`).
/// Everything else is tried: new models mostly take images, and a refusal is caught.
const TEXT_ONLY: &[&str] = &[
    "gpt-3.5",
    "gpt-4-0613",
    "gpt-4-32k",
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-oss",
    "claude-2",
    "claude-instant",
    "deepseek-chat",
    "deepseek-coder",
    "deepseek-reasoner",
    "deepseek-r1",
    "deepseek-v3",
    "qwen2.5-coder",
    "qwen3-coder",
    "codestral",
    "codellama",
    "starcoder",
    "mixtral",
];

/// Why `model` cannot get images under `setting`, or `None` when they may be sent.
pub fn refusal(setting: ImagesSetting, model: &str) -> Option<String> {
    match setting {
        ImagesSetting::On => None,
        ImagesSetting::Off => Some(
            "images are turned off (`images = false` in the config); your message was not sent"
                .into(),
        ),
        ImagesSetting::Auto => text_only(model).then(|| {
            format!(
                "the model {model} does not accept images (it is a text-only model); your \
                 message was not sent. Switch to a model that reads images (/model), or set \
                 `images = true` if this one does"
            )
        }),
    }
}

/// Whether `model` is of a family known to take no images.
pub fn text_only(model: &str) -> bool {
    let name = model.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name);
    name == "gpt-4" || TEXT_ONLY.iter().any(|p| name.starts_with(p))
}

/// What rein puts at the start of a request error that was a model refusing images, so the
/// agent can tell (`LlmError` reaches it as text).
pub const REFUSED: &str = "the model does not accept images";

/// Whether a failed request's status and message say the model takes no images (OpenAI:
/// "does not support image input", vLLM/llama.cpp: "image input is not supported", "mmproj",
/// Anthropic-compatible relays: "image content is not supported").
pub fn is_refusal(status: u16, message: &str) -> bool {
    if !matches!(status, 400 | 404 | 415 | 422 | 500 | 501) {
        return false;
    }
    let m = message.to_ascii_lowercase();
    let about_images = m.contains("image")
        || m.contains("vision")
        || m.contains("multimodal")
        || m.contains("multi-modal");
    let refused = [
        "support",
        "not allowed",
        "not enabled",
        "unknown variant",
        "only text",
        "text-only",
        "text only",
        "mmproj",
    ]
    .iter()
    .any(|w| m.contains(w));
    about_images && refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_words_and_booleans() {
        let read = |t: &str| {
            #[derive(Deserialize)]
            struct F {
                images: ImagesSetting,
            }
            toml::from_str::<F>(t).map(|f| f.images)
        };
        assert_eq!(read("images = true").ok(), Some(ImagesSetting::On));
        assert_eq!(read("images = false").ok(), Some(ImagesSetting::Off));
        assert_eq!(read("images = \"auto\"").ok(), Some(ImagesSetting::Auto));
        assert!(read("images = \"maybe\"").is_err());
    }

    #[test]
    fn text_only_families_are_refused_in_auto_only() {
        assert!(refusal(ImagesSetting::Auto, "gpt-3.5-turbo").is_some());
        assert!(refusal(ImagesSetting::Auto, "openrouter/deepseek-chat").is_some());
        assert!(refusal(ImagesSetting::Auto, "gpt-4").is_some());
        assert!(refusal(ImagesSetting::Auto, "gpt-4o").is_none());
        assert!(refusal(ImagesSetting::Auto, "claude-sonnet-4-5").is_none());
        assert!(refusal(ImagesSetting::On, "gpt-3.5-turbo").is_none());
        assert!(refusal(ImagesSetting::Off, "gpt-4o").is_some());
    }

    #[test]
    fn refusals_are_told_from_other_errors() {
        assert!(is_refusal(400, "This model does not support image input."));
        assert!(is_refusal(
            500,
            "image input is not supported - hint: you may need to provide the mmproj"
        ));
        assert!(!is_refusal(400, "max_tokens is too large"));
        assert!(!is_refusal(
            429,
            "image rate limit: not supported right now"
        ));
        assert!(!is_refusal(400, "image exceeds 5 MB maximum"));
    }
}
