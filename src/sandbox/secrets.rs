//! What bash must never see: secret files and directories (hidden by the sandbox) and secret
//! environment variables (not passed to child processes). `tools::secrets` masks the values.
//!
//! One list, used by the sandbox (mounts and Landlock rules), by the environment filter for
//! child processes, and by the file tools (refusing to read a secret, masking values).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Secret locations under the home directory, hidden by default.
pub const DEFAULT_HOME_SECRETS: [&str; 19] = [
    ".agents/env",
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".docker/config.json",
    ".kube",
    ".config/gh",
    ".config/gcloud",
    ".git-credentials",
    ".config/rein",
    ".config/hub",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".vault-token",
    ".password-store",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// Variables that always hold a key, whatever their name looks like.
const SECRET_NAMES: [&str; 4] = [
    "API_KEY",
    "REIN_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Name endings that mark a variable as secret (compared upper-case).
const SECRET_SUFFIXES: [&str; 7] = [
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_CREDENTIALS",
    "_PASSWD",
    "_PASS",
    "_PAT",
];

/// Name parts that mark a variable as secret wherever they appear (compared upper-case).
const SECRET_PARTS: [&str; 5] = ["PASSWORD", "SECRET", "_TOKEN_", "PRIVATE_KEY", "ACCESS_KEY"];

/// The user's choices about secrets (`[sandbox]` in config.toml).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretSettings {
    /// More paths to hide (`~/` expands to the home directory).
    pub hide: Vec<String>,
    /// Default paths to show after all (user config only).
    pub unhide: Vec<String>,
    /// Secret-looking variables that child processes still get (user config only).
    pub pass_env: Vec<String>,
}

/// The resolved secret paths and the environment rules for one session.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    /// Absolute, lexically normalised; each also canonicalised when it exists.
    paths: Vec<PathBuf>,
    pass_env: Vec<String>,
}

/// Whether a variable name looks like it holds a secret (`*_KEY`, `*_TOKEN`, `*_SECRET`,
/// `*PASSWORD*`, `*_CREDENTIALS`, ...), or is one of the key variables rein reads.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || SECRET_PARTS.iter().any(|p| upper.contains(p))
        || matches!(upper.as_str(), "TOKEN" | "PASSWORD" | "SECRET")
}

/// `p` with `.` and `..` removed by name (no file system access).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Expands `~/` against `home`; relative paths without a home are dropped.
fn expand(raw: &str, home: Option<&Path>) -> Option<PathBuf> {
    let path = match raw.strip_prefix("~/") {
        Some(rest) => home?.join(rest),
        None if raw == "~" => home?.to_path_buf(),
        None => PathBuf::from(raw),
    };
    path.is_absolute().then(|| normalize(&path))
}

impl Secrets {
    /// The secret paths for a home directory, rein's own config and data dirs, and the user's
    /// settings: the defaults plus `hide`, minus `unhide`.
    pub fn resolve(
        home: Option<&Path>,
        config_dir: &Path,
        data_dir: &Path,
        settings: &SecretSettings,
    ) -> Secrets {
        let mut wanted: Vec<PathBuf> = DEFAULT_HOME_SECRETS
            .iter()
            .filter_map(|rel| home.map(|h| normalize(&h.join(rel))))
            .collect();
        wanted.extend([config_dir, data_dir].iter().map(|p| normalize(p)));
        wanted.extend(settings.hide.iter().filter_map(|raw| expand(raw, home)));
        let unhidden: Vec<PathBuf> = settings
            .unhide
            .iter()
            .filter_map(|raw| expand(raw, home))
            .collect();
        let mut paths = Vec::new();
        for p in wanted.into_iter().filter(|p| !unhidden.contains(p)) {
            // Both spellings: the one a command may use and the real one behind links.
            if let Ok(real) = std::fs::canonicalize(&p)
                && real != p
            {
                paths.push(real);
            }
            paths.push(p);
        }
        paths.sort();
        paths.dedup();
        Secrets {
            paths,
            pass_env: settings.pass_env.clone(),
        }
    }

    /// The secrets of the running process's user: `$HOME` and the platform config and data
    /// dirs, with default settings.
    pub fn for_current_user() -> Secrets {
        match directories::BaseDirs::new() {
            Some(b) => Secrets::resolve(
                Some(b.home_dir()),
                &b.config_dir().join("rein"),
                &b.data_dir().join("rein"),
                &SecretSettings::default(),
            ),
            None => Secrets::default(),
        }
    }

    /// The secret paths (absolute; existing ones also in their canonical spelling).
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Whether `path` (absolute; resolve links first for a reliable answer) is a secret or lies
    /// inside one.
    pub fn is_secret_path(&self, path: &Path) -> bool {
        let path = normalize(path);
        self.paths.iter().any(|s| path.starts_with(s))
    }

    /// Whether child processes must not get the variable `name`: it looks secret and the user
    /// did not list it in `pass_env`.
    pub fn hides_env(&self, name: &str) -> bool {
        is_secret_env_name(name) && !self.pass_env.iter().any(|p| p == name)
    }

    /// The variables of this process's environment that child processes must not get.
    pub fn env_to_remove(&self) -> Vec<OsString> {
        std::env::vars_os()
            .filter(|(k, _)| k.to_str().is_none_or(|k| self.hides_env(k)))
            .map(|(k, _)| k)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_follow_the_patterns() {
        for name in [
            "API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "DB_PASSWORD",
            "MYSQL_PWD_PASSWORD_FILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "npm_token",
            "CLIENT_SECRET",
            "SSH_PRIVATE_KEY_PATH",
            "TOKEN",
            "HF_TOKEN_PATH",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "KEYMAP",
            "MONKEY",
            "SSH_AUTH_SOCK",
            "LANG",
            "TOKENIZERS_PARALLELISM",
            "CARGO_TARGET_DIR",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    #[test]
    fn default_paths_user_additions_and_removals() {
        let home = Path::new("/home/u");
        let settings = SecretSettings {
            hide: vec![
                "~/.config/op".into(),
                "/srv/keys/../vault".into(),
                "rel".into(),
            ],
            unhide: vec!["~/.kube".into()],
            pass_env: vec![],
        };
        let s = Secrets::resolve(
            Some(home),
            Path::new("/home/u/.config/rein"),
            Path::new("/home/u/.local/share/rein"),
            &settings,
        );
        for p in [
            "/home/u/.ssh",
            "/home/u/.ssh/id_ed25519",
            "/home/u/.agents/env",
            "/home/u/.docker/config.json",
            "/home/u/.local/share/rein/sessions/x.jsonl",
            "/home/u/.config/rein/config.toml",
            "/home/u/.config/op/token",
            "/srv/vault",
            "/home/u/x/../.aws/credentials",
        ] {
            assert!(s.is_secret_path(Path::new(p)), "{p}");
        }
        for p in [
            "/home/u/.kube/config",
            "/home/u/.agents/skills/x/SKILL.md",
            "/home/u/.docker/other.json",
            "/home/u/.sshx",
            "/home/u/proj",
            "/srv/keys/vault",
            "rel",
        ] {
            assert!(!s.is_secret_path(Path::new(p)), "{p}");
        }
        // No home: only what is absolute.
        let s = Secrets::resolve(
            None,
            Path::new("/c/rein"),
            Path::new("/d/rein"),
            &SecretSettings::default(),
        );
        assert_eq!(
            s.paths(),
            [PathBuf::from("/c/rein"), PathBuf::from("/d/rein")]
        );
    }

    #[test]
    fn links_to_secrets_are_found_by_their_real_path() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join("vault/ssh")).unwrap();
        std::os::unix::fs::symlink(home.join("vault/ssh"), home.join(".ssh")).unwrap();
        let s = Secrets::resolve(
            Some(&home),
            &home.join("c"),
            &home.join("d"),
            &SecretSettings::default(),
        );
        assert!(s.is_secret_path(&home.join("vault/ssh/id_rsa")));
        assert!(s.is_secret_path(&home.join(".ssh/id_rsa")));
    }

    #[test]
    fn pass_env_lets_a_listed_variable_through() {
        let s = Secrets {
            paths: vec![],
            pass_env: vec!["NPM_TOKEN".into()],
        };
        assert!(!s.hides_env("NPM_TOKEN"));
        assert!(s.hides_env("GITHUB_TOKEN"));
        assert!(!s.hides_env("PATH"));
    }
}
