//! What the agent lists for front ends: saved sessions and skills. The types live here, in
//! the protocol, so it needs nothing of the modules that find them (`session_store`,
//! `skills`); those fill them in.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One line of `rein sessions list` and of the resume picker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// The latest `/rename`, else the first prompt (shortened).
    pub title: String,
    /// Workspace it ran in.
    pub cwd: PathBuf,
    /// Model in use at the end.
    pub model: String,
    /// When it began (RFC 3339).
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    /// When it was last written (RFC 3339).
    #[serde(with = "rfc3339")]
    pub updated_at: Timestamp,
    /// User and assistant messages of the main conversation.
    pub message_count: u64,
    /// The session file.
    pub path: PathBuf,
    /// The session it was forked from.
    pub parent: Option<String>,
}

/// One usable skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    /// The name the model asks for (front matter `name`, else the folder name).
    pub name: String,
    /// When to use it (front matter `description`).
    pub description: String,
    /// The skill's folder (supporting files live here).
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub path: PathBuf,
}

/// A `SKILL.md` that was not used, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedSkill {
    /// The file.
    pub path: PathBuf,
    /// Why it was not used.
    pub reason: String,
}

/// The skills available in a session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillCatalog {
    /// Usable skills, sorted by name.
    pub skills: Vec<Skill>,
    /// Files left out (invalid, or shadowed by a skill of the same name), for `/skills`.
    pub skipped: Vec<SkippedSkill>,
}

/// RFC 3339 timestamps (`2026-11-30T05:12:44.123Z`) for serde.
pub mod rfc3339 {
    use jiff::Timestamp;
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    /// Writes the timestamp in UTC.
    pub fn serialize<S: Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(ts)
    }

    struct TsVisitor;

    impl Visitor<'_> for TsVisitor {
        type Value = Timestamp;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an RFC 3339 timestamp")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Timestamp, E> {
            v.parse().map_err(E::custom)
        }
    }

    /// Reads any RFC 3339 timestamp (with an offset or `Z`).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        d.deserialize_str(TsVisitor)
    }
}
