//! Secrets at the tool layer: the file tools refuse the places where secrets live, and any
//! secret value that still reaches a tool result is masked before the result is stored or sent.
//!
//! What the file tools refuse is what bash cannot see: the answer comes from
//! `sandbox::Secrets` (the home view's allow-list and the places hidden everywhere), the same
//! value the sandbox builds its mounts and Landlock rules from.

use crate::protocol::ToolDisplay;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Values shorter than this are not masked: they would match ordinary text.
const MIN_MASKED_LEN: usize = 8;

/// What the tools keep away from the model.
#[derive(Debug, Default)]
pub struct Secrets {
    /// What bash cannot see (compared on physical paths, so a symlinked spelling matches too).
    hidden: crate::sandbox::Secrets,
    /// (where it came from, value), longest first so a value inside another is masked whole.
    values: Vec<(String, String)>,
}

impl Secrets {
    /// What bash cannot see (`Sandbox::secrets`), and the values of `api_key` and of the
    /// variables in `env` whose names look like secrets.
    pub fn new(
        hidden: &crate::sandbox::Secrets,
        api_key: Option<&str>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Secrets {
        let hidden = hidden.clone();
        // The configured key first: when a variable holds it too, the clearer name wins.
        let mut values: Vec<(String, String)> = api_key
            .filter(|k| k.len() >= MIN_MASKED_LEN)
            .map(|k| ("the API key".to_string(), k.to_string()))
            .into_iter()
            .collect();
        values.extend(env.into_iter().filter(|(name, value)| {
            crate::sandbox::is_secret_env_name(name) && value.len() >= MIN_MASKED_LEN
        }));
        values.sort_by_key(|v| std::cmp::Reverse(v.1.len()));
        values.dedup_by(|a, b| a.1 == b.1);
        Secrets { hidden, values }
    }

    /// Where `path` (physical) is hidden from bash, if it is: the hidden place it lies in, or
    /// the home directory when it lies outside what bash sees of home. The file tools refuse
    /// exactly these.
    pub fn location_of(&self, path: &Path) -> Option<PathBuf> {
        self.hidden
            .hidden_place(path)
            .or_else(|| self.hidden.hidden_place(&physical(path)))
    }

    /// Whether `bytes` hold a secret value (such content is never copied into rein's data).
    pub fn found_in(&self, bytes: &[u8]) -> bool {
        self.values.iter().any(|(_, v)| {
            let v = v.as_bytes();
            bytes.windows(v.len()).any(|w| w == v)
        })
    }

    /// `text` with every secret value replaced by `[redacted: NAME]`.
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for (name, value) in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[redacted: {name}]")));
            }
        }
        out
    }
}

impl Secrets {
    /// `display` with secret values masked in every text it holds (it is shown, and stored in
    /// the session file).
    pub fn mask_display(&self, display: ToolDisplay) -> ToolDisplay {
        if self.values.is_empty() {
            return display;
        }
        let m = |s: String| self.mask(&s).into_owned();
        match display {
            ToolDisplay::Exec { command } => ToolDisplay::Exec {
                command: m(command),
            },
            ToolDisplay::Edit { path, diff } => ToolDisplay::Edit {
                path: m(path),
                diff: diff.map(|mut d| {
                    for h in &mut d.hunks {
                        for line in &mut h.lines {
                            *line = m(std::mem::take(line));
                        }
                    }
                    d
                }),
            },
            ToolDisplay::Task { description } => ToolDisplay::Task {
                description: m(description),
            },
            ToolDisplay::Other { name, args } => ToolDisplay::Other {
                name,
                args: self.mask_value(args),
            },
            ToolDisplay::Mcp {
                name,
                server,
                tool,
                args,
            } => ToolDisplay::Mcp {
                name,
                server,
                tool,
                args: self.mask_value(args),
            },
            other => other,
        }
    }

    fn mask_value(&self, v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.mask(&s).into_owned()),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.mask_value(v)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| (k, self.mask_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// `p` with symlinks resolved as far as it exists (a secret place may not exist yet).
fn physical(p: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(p) {
        return real;
    }
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => physical(parent).join(name),
        _ => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_like_secrets() {
        let is_secret = crate::sandbox::is_secret_env_name;
        let cases = [
            ("OPENAI_API_KEY", true),
            ("GITHUB_TOKEN", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("AWS_SECRET", true),
            ("DB_PASSWORD", true),
            ("MYPASSWORDFILE", true),
            ("GOOGLE_APPLICATION_CREDENTIALS", true),
            ("github_token", true),
            ("PATH", false),
            ("HOME", false),
            ("KEYBOARD", false),
            ("TOKENIZERS_PARALLELISM", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_secret(name), want, "{name}");
        }
    }

    /// The key variables are secret names by the sandbox's rules too.
    #[test]
    fn the_key_variables_are_secret_names() {
        for name in crate::sandbox::secrets::KEY_VARIABLES {
            assert!(crate::sandbox::is_secret_env_name(name), "{name}");
        }
    }

    #[test]
    fn masks_every_secret_value_and_nothing_else() {
        let env = [
            ("GITHUB_TOKEN", "ghp_abcdefghijklmnop"),
            ("SHORT_TOKEN", "abc"),
            ("EDITOR", "vim-is-not-a-secret"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let s = Secrets::new(&Default::default(), Some("sk-test-1234567890"), env);
        let text = "key sk-test-1234567890 and ghp_abcdefghijklmnop twice ghp_abcdefghijklmnop; abc; vim-is-not-a-secret";
        assert_eq!(
            s.mask(text),
            "key [redacted: the API key] and [redacted: GITHUB_TOKEN] twice \
             [redacted: GITHUB_TOKEN]; abc; vim-is-not-a-secret"
        );
        assert!(matches!(s.mask("nothing here"), Cow::Borrowed(_)));
        let shown = s.mask_display(ToolDisplay::Exec {
            command: "curl -H 'token: ghp_abcdefghijklmnop'".into(),
        });
        assert_eq!(shown.subject(), "curl -H 'token: [redacted: GITHUB_TOKEN]'");
    }

    #[test]
    fn the_file_tools_refuse_what_bash_cannot_see() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join("real-cargo/bin")).unwrap();
        std::fs::create_dir_all(home.join("proj")).unwrap();
        std::os::unix::fs::symlink(home.join("real-cargo"), home.join(".cargo")).unwrap();
        let rein_data = home.join(".local/share/rein");
        let places = crate::sandbox::Secrets::resolve(
            Some(&home),
            Some(&home.join("proj")),
            &home.join(".config/rein"),
            &rein_data,
            &crate::sandbox::SecretSettings::default(),
        );
        let s = Secrets::new(&places, None, []);
        let cases = [
            (home.join("real-cargo/bin/cargo"), false),
            (home.join("real-cargo/credentials.toml"), true),
            (home.join(".aws/credentials"), true),
            (home.join(".config/git/credentials"), true),
            (home.join(".codex/auth.json"), true),
            (home.join(".env"), true),
            (rein_data.join("sessions/x.jsonl"), true),
            (home.join("proj/src/main.rs"), false),
            (PathBuf::from("/usr/include/stdio.h"), false),
        ];
        for (path, secret) in cases {
            assert_eq!(s.location_of(&path).is_some(), secret, "{}", path.display());
        }
    }
}
