//! The environment a child process gets: an allow-list of what programs and builds need,
//! never rein's whole environment. A variable not named here (or by the person's
//! `[sandbox] pass_env`) is absent, so a secret under a name no list knows never leaks.
//! Left out on purpose: proxies (`HTTPS_PROXY` may carry a password), `SSH_AUTH_SOCK` and
//! other agents' sockets, `GOPROXY`/registry URLs, `BASH_ENV`/`ENV` (they would run a file
//! in every shell), and anything whose value could be a credential.

use std::ffi::{OsStr, OsString};

/// Variables every child may get: identity, locale, terminal type, time zone, temp dir, and
/// the roots of toolchains and caches that builds need. None of them holds a credential.
pub const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    // Toolchain and cache roots.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "JAVA_HOME",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "NVM_DIR",
    "NVM_BIN",
    "PNPM_HOME",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "UV_CACHE_DIR",
    "PIP_CACHE_DIR",
    "npm_config_cache",
    "RBENV_ROOT",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "SDKMAN_DIR",
    "GEM_HOME",
    "GEM_PATH",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    // Build knobs the person set for their machine.
    "CC",
    "CXX",
    "AR",
    "LD",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKEFLAGS",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WRAPPER",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "CI",
    "RUST_BACKTRACE",
    "SOURCE_DATE_EPOCH",
    // Where the machine's CA certificates are (paths, not keys).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// Name prefixes allowed as a family (the locale's `LC_*`).
const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// Whether `name` may reach a child by the allow-list alone.
pub fn is_allowed(name: &str) -> bool {
    ALLOWED.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The allowed part of `vars` (rein's environment, usually), plus the variables `pass` names.
pub fn filter<I>(vars: I, pass: &[String]) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    vars.into_iter()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| is_allowed(k) || pass.iter().any(|p| p == k))
        })
        .collect()
}

/// Replaces `cmd`'s environment with the allowed part of rein's own plus `pass`.
pub fn apply(cmd: &mut std::process::Command, pass: &[String]) {
    cmd.env_clear();
    for (k, v) in filter(std::env::vars_os(), pass) {
        cmd.env(k, v);
    }
}

/// The value `name` has in what `apply` gives a child, if any.
pub fn allowed_value(name: &str, pass: &[String]) -> Option<OsString> {
    (is_allowed(name) || pass.iter().any(|p| p == name))
        .then(|| std::env::var_os(OsStr::new(name)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(k: &str, v: &str) -> (OsString, OsString) {
        (k.into(), v.into())
    }

    #[test]
    fn only_named_variables_pass() {
        let vars = vec![
            os("PATH", "/bin"),
            os("LC_ALL", "C"),
            os("DATABASE_URL", "postgres://u:pw@h/db"),
            os("SENTRY_DSN", "https://k@o.example/1"),
            os("AUTH", "x"),
            os("CARGO_REGISTRIES_X_TOKEN", "t"),
            os("MY_OWN", "ok"),
        ];
        let names: Vec<String> = filter(vars, &["MY_OWN".into()])
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "LC_ALL", "MY_OWN"]);
    }

    #[test]
    fn no_allowed_name_looks_like_it_holds_a_secret() {
        for name in ALLOWED {
            assert!(!crate::sandbox::is_secret_env_name(name), "{name}");
            assert!(!name.contains("PROXY") && !name.contains("SOCK"), "{name}");
        }
    }
}
