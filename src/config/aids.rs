//! `small_model`: the aids that make a small local model act instead of talk.

use super::ConfigError;

/// The aids `small_model` turns on (all off for hosted models unless set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelAids {
    /// The first request of each message must be a tool call (`tool_choice: required`).
    pub first_call: bool,
    /// A smaller tool set: no subagent, no examples in descriptions a model could copy.
    pub tools: bool,
    /// A short list of the workspace's files in the system prompt.
    pub files: bool,
    /// Next-step nudges: after a failing command, and after code shown instead of written.
    pub nudges: bool,
    /// Code shown in fenced blocks instead of written becomes the edits it describes.
    pub code_blocks: bool,
    /// The source files and documents the person's message names are read before the first
    /// request.
    pub read_named: bool,
}

/// The names `small_model` lists, in the order `rein config` shows them.
pub const AID_NAMES: &[&str] = &[
    "first_call",
    "tools",
    "files",
    "nudges",
    "code_blocks",
    "read_named",
];

impl ModelAids {
    /// Every aid on.
    pub const ALL: ModelAids = ModelAids {
        first_call: true,
        tools: true,
        files: true,
        nudges: true,
        code_blocks: true,
        read_named: true,
    };

    /// Whether any aid is on.
    pub fn any(&self) -> bool {
        *self != ModelAids::default()
    }

    /// `"auto"` (on for a loopback server), `"on"`, `"off"`, or aid names separated by commas.
    pub fn parse(value: &str, loopback: bool) -> Result<ModelAids, ConfigError> {
        match value.trim() {
            "auto" if loopback => return Ok(ModelAids::ALL),
            "auto" | "off" | "" => return Ok(ModelAids::default()),
            "on" => return Ok(ModelAids::ALL),
            _ => {}
        }
        let mut aids = ModelAids::default();
        for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let slot = match name {
                "first_call" => &mut aids.first_call,
                "tools" => &mut aids.tools,
                "files" => &mut aids.files,
                "nudges" => &mut aids.nudges,
                "code_blocks" => &mut aids.code_blocks,
                "read_named" => &mut aids.read_named,
                _ => {
                    return Err(ConfigError::Invalid(format!(
                        "small_model must be auto, on, off or a list of {}; \"{name}\" is none \
                         of them.",
                        AID_NAMES.join(", ")
                    )));
                }
            };
            *slot = true;
        }
        Ok(aids)
    }

    /// The aids on, for `rein config` ("off" when none).
    pub fn describe(&self) -> String {
        let on = [
            self.first_call,
            self.tools,
            self.files,
            self.nudges,
            self.code_blocks,
            self.read_named,
        ];
        let names: Vec<&str> = AID_NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        if names.is_empty() {
            "off".into()
        } else {
            names.join(",")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_on_for_loopback_only_and_lists_pick_aids() {
        assert_eq!(ModelAids::parse("auto", true).unwrap(), ModelAids::ALL);
        assert!(!ModelAids::parse("auto", false).unwrap().any());
        assert_eq!(ModelAids::parse("on", false).unwrap(), ModelAids::ALL);
        assert!(!ModelAids::parse("off", true).unwrap().any());
        let some = ModelAids::parse("first_call, nudges", false).unwrap();
        assert!(some.first_call && some.nudges && !some.tools && !some.files);
        assert_eq!(some.describe(), "first_call,nudges");
        let err = ModelAids::parse("first_call,magic", true).unwrap_err();
        assert!(err.to_string().contains("\"magic\""), "{err}");
    }
}
