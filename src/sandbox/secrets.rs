//! What bash must never see, and the one place that decides it: the home directory shows
//! only an allow-list ([`DirView`]), rein's own config and data dirs and the person's XDG
//! config, data and state dirs are hidden wherever they are, and child processes get an
//! allow-list of variables (`launch::env`). `tools::secrets` masks values that still show up.
//!
//! The sandbox (mounts and Landlock rules), the file tools (refusing to read what bash cannot
//! see) and the policy (through the same default allow-list) all take their answer from here.

use super::home::{DirView, normalize};
use std::path::{Path, PathBuf};

// The one list of secret names and places: the sandbox, the policy (`policy::secrets`,
// `policy::shell::checks`), the file tools and the masking (`tools::secrets`) all read these.

/// The variables rein reads the API key from (`config/raw.rs`, `config/endpoint.rs`).
pub const KEY_VARIABLES: [&str; 4] = [
    "REIN_API_KEY",
    "API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Variables that always hold a key, whatever their name looks like (besides
/// [`KEY_VARIABLES`]).
const SECRET_NAMES: [&str; 5] = ["APIKEY", "AUTH", "TOKEN", "PASSWORD", "SECRET"];

/// Name endings that mark a variable as secret (compared upper-case).
const SECRET_SUFFIXES: [&str; 11] = [
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_CREDENTIALS",
    "_PASSWD",
    "_PASS",
    "_PAT",
    "_DSN",
    "_AUTH",
    "_APIKEY",
    "_COOKIE",
];

/// Name parts that mark a variable as secret wherever they appear (compared upper-case).
const SECRET_PARTS: [&str; 8] = [
    "PASSWORD",
    "SECRET",
    "_TOKEN_",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "_PAT_",
    "WEBHOOK",
    "_AUTH_",
];

/// Name parts that make the policy wary of a variable (`$SESSION_ID` is not masked, but a
/// command that prints it is not harmless either); compared upper-case, anywhere in the name.
const WARY_PARTS: [&str; 12] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "CREDENTIAL",
    "PRIVATE",
    "ACCESS_KEY",
    "AUTH",
    "COOKIE",
    "SESSION",
];

/// Credential files of a cargo home (hidden in a `CARGO_HOME` outside home too).
pub const CARGO_CREDENTIALS: [&str; 2] = ["credentials", "credentials.toml"];

/// Places under the home directory known to hold secrets, as path components. Bash does not
/// see them (home outside the allow-list is hidden); the policy looks for them anywhere in a
/// word, where home may not be spelled out (`../../.ssh/id_rsa`).
pub const HOME_SECRET_PLACES: &[&[&str]] = &[
    &[".ssh"],
    &[".aws"],
    &[".gnupg"],
    &[".netrc"],
    &[".docker", "config.json"],
    &[".kube"],
    &[".config", "gh"],
    &[".config", "gcloud"],
    &[".config", "hub"],
    &[".config", "rein"],
    &[".local", "share", "rein"],
    &["Library", "Application Support", "rein"],
    &[".git-credentials"],
    &[".agents", "env"],
    &[".npmrc"],
    &[".pypirc"],
    &[".cargo", CARGO_CREDENTIALS[0]],
    &[".cargo", CARGO_CREDENTIALS[1]],
    &[".pgpass"],
    &[".vault-token"],
    &[".password-store"],
    &[".terraform.d"],
];

/// Secret files under `/proc/<pid>/` (`*` is any component).
pub const PROC_SECRET_PLACES: &[&[&str]] = &[
    &["proc", "*", "environ"],
    &["proc", "*", "task", "*", "environ"],
    &["proc", "*", "cmdline"],
    &["proc", "*", "mem"],
    &["proc", "*", "auxv"],
];

/// Other system files that hold secrets.
/// `run/user` holds every person's runtime directory (registry credentials, agent sockets):
/// the sandbox shows the person's own empty, and the policy never reads there unasked.
pub const SYSTEM_SECRET_PLACES: &[&[&str]] =
    &[&["etc", "shadow"], &["etc", "gshadow"], &["run", "user"]];

/// The user's choices about secrets (`[sandbox]` in config.toml).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretSettings {
    /// More paths to hide (`~/` expands to the home directory).
    pub hide: Vec<String>,
    /// Older spelling of `home_allow` (user config only).
    pub unhide: Vec<String>,
    /// Variables child processes get besides the allow-list (user config only).
    pub pass_env: Vec<String>,
    /// More places under home bash may read (user config only).
    pub home_allow: Vec<String>,
    /// More places anywhere bash may read: in home (`~/x`) or in the hidden directories
    /// outside it (`/srv/data`); what `home_allow` does, under a name that says so (user
    /// config only).
    pub read_allow: Vec<String>,
}

impl SecretSettings {
    /// Every place the person shows: `home_allow`, `read_allow` and the older `unhide`.
    fn shown(&self) -> impl Iterator<Item = &String> {
        self.home_allow
            .iter()
            .chain(&self.read_allow)
            .chain(&self.unhide)
    }
}

/// What bash cannot see for one session, and the variables it gets besides the allow-list.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    /// The home directory as bash sees it.
    view: DirView,
    /// The shared temporary directories and the person's runtime directories as bash sees
    /// them: empty but for the workspace, the session's temp dir and rein's own places.
    shared: Vec<DirView>,
    /// The top-level directories outside [`SYSTEM_READABLE`] as bash sees them.
    system: Vec<DirView>,
    /// Hidden wherever they are (absolute, lexically normalised; each also canonicalised
    /// when it exists).
    paths: Vec<PathBuf>,
    pass_env: Vec<String>,
}

/// Whether a variable's value is masked in tool results when it shows up: its name looks like
/// it holds a secret (`*_KEY`, `*_TOKEN`, `*PASSWORD*`, `*_DSN`, `AUTH`, ...), or it is one of
/// the key variables rein reads. (Which variables commands get is an allow-list, not this.)
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    KEY_VARIABLES.contains(&upper.as_str())
        || SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || SECRET_PARTS.iter().any(|p| upper.contains(p))
        || (upper.ends_with("_URL") && upper.contains("DATABASE"))
}

/// Whether the policy should doubt that printing variable `name` is harmless: its value is
/// masked ([`is_secret_env_name`]) or its name suggests a credential or a session.
pub fn may_hold_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    is_secret_env_name(name) || WARY_PARTS.iter().any(|p| upper.contains(p))
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

/// Directories outside home where the person's own files lie beside everyone's or in private:
/// the shared temporary directories (a Kerberos ticket cache `/tmp/krb5cc_<uid>`, agents'
/// socket directories, other programs' scratch files) and the person's runtime directory
/// (podman's `containers/auth.json`, keyring and agent sockets). No list names what is secret
/// there, so bash sees them empty but for what it needs (the workspace, its temp dir, rein's
/// private places, the absolute places of `home_allow` there): of `candidates`, the canonical,
/// existing directories, none inside another or inside home (home's view covers those;
/// `home` is canonical).
fn shared_roots(home: Option<&Path>, candidates: &[PathBuf]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = candidates
        .iter()
        .filter_map(|c| std::fs::canonicalize(c).ok())
        .filter(|r| r.parent().is_some() && r.is_dir())
        .filter(|r| home.is_none_or(|h| !r.starts_with(h)))
        .collect();
    outermost_only(roots)
}

/// `dirs` without repeats and without any that lies inside another of them, sorted.
pub(crate) fn outermost_only(mut dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    dirs.sort();
    dirs.dedup();
    let all = dirs.clone();
    dirs.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    dirs
}

/// The shared temporary directories and where the person's runtime directory may be
/// (`/run/user/<uid>`, `$XDG_RUNTIME_DIR`).
fn shared_candidates() -> Vec<PathBuf> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut dirs = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from(format!("/run/user/{uid}")),
    ];
    dirs.extend(
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
    );
    dirs
}

/// The top-level directories bash reads as they are: the system's programs, libraries and
/// settings, and the kernel's own views. Every other directory at `/` (`/home`, `/srv`,
/// `/mnt`, `/media`, `/var`, `/run`, a container's `/run/secrets`, a data disk) is hidden
/// from bash but for what it needs there (see [`system_views`]): an allow-list, so a secret
/// in a place no list names stays out of reach. Landlock hides them (a file there cannot be
/// opened; names can still be listed), in every mode and at no cost per command.
pub const SYSTEM_READABLE: &[&str] = &[
    "bin", "dev", "etc", "gnu", "lib", "lib32", "lib64", "libx32", "nix", "opt", "proc", "sbin",
    "snap", "sys", "usr",
];

/// What only its owner or group may read in `/etc` (whole) and `/opt` (three levels down),
/// for root's commands without namespaces: root keeps its file rights there, so these are left
/// out of the read rules by their mode, whatever their names (ssh host keys,
/// `/etc/ssl/private`, `sudoers`, a service's credentials). Found once per rein; with
/// namespaces root's commands run as `nobody`, whom the modes keep out already.
pub(crate) fn closed_system_places() -> &'static [PathBuf] {
    static FOUND: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let mut out = Vec::new();
        let mut budget = 20_000;
        closed_within(Path::new("/etc"), usize::MAX, &mut budget, &mut out);
        closed_within(Path::new("/opt"), 3, &mut budget, &mut out);
        out
    })
}

/// Adds the entries of `dir` (down to `depth` levels) that others may not read, or, for a
/// directory, not enter; not looking inside those. Stops after `budget` entries.
fn closed_within(dir: &Path, depth: usize, budget: &mut usize, out: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let mode = meta.permissions().mode();
        let kind = meta.file_type();
        if kind.is_symlink() {
            continue;
        }
        let others = if kind.is_dir() { 0o005 } else { 0o004 };
        if mode & others != others {
            out.push(entry.path());
        } else if kind.is_dir() && depth > 1 {
            closed_within(&entry.path(), depth - 1, budget, out);
        }
    }
}

/// Whether `/name` is one of the [`SYSTEM_READABLE`] directories.
pub(crate) fn is_system_dir(name: &std::ffi::OsStr) -> bool {
    SYSTEM_READABLE
        .iter()
        .any(|k| std::ffi::OsStr::new(k) == name)
}

/// Places in the hidden top-level directories that programs read: the package databases,
/// system-wide toolchains that live there (Debian's gems, Guix profiles, Homebrew on Linux,
/// NixOS's system profile), certificate bundles and font caches, and the resolver's
/// configuration (`/etc/resolv.conf` is often a link into `/run`; its target is shown too).
pub const SYSTEM_SHOWN: &[&str] = &[
    "/var/lib/gems",
    "/var/guix",
    "/home/linuxbrew/.linuxbrew",
    "/run/current-system",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/rpm",
    "/var/lib/ca-certificates",
    "/var/lib/dbus/machine-id",
    "/var/cache/apt",
    "/var/cache/fontconfig",
    "/var/cache/ldconfig",
    "/run/systemd/resolve",
    "/run/resolvconf",
    "/run/NetworkManager/resolv.conf",
    "/run/netconfig",
];

/// The directories at `/` outside [`SYSTEM_READABLE`] (canonical, existing directories; a
/// link to a readable one, like `/bin` on merged systems, is not one).
/// Those in or equal to home (its own view applies) or equal to one of `shared` (a shared
/// directory's view) are left to those views.
fn system_roots(home: Option<&Path>, shared: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/") else {
        return Vec::new();
    };
    let in_system = |r: &PathBuf| {
        r.components()
            .nth(1)
            .is_some_and(|top| is_system_dir(top.as_os_str()))
    };
    let roots = entries
        .flatten()
        .filter_map(|e| std::fs::canonicalize(e.path()).ok())
        .filter(|r| r.parent().is_some() && r.is_dir() && !in_system(r))
        .filter(|r| home.is_none_or(|h| !r.starts_with(h)) && !shared.contains(r));
    outermost_only(roots.collect())
}

/// The views of the hidden top-level directories ([`SYSTEM_READABLE`]): each shows the
/// workspace, [`SYSTEM_SHOWN`], the absolute places of `shown` in it, and (where home lies in
/// it) home, whose own view then applies; one that lies in the workspace is left as it is.
fn system_views(
    home_real: Option<&Path>,
    shared: &[PathBuf],
    workspace: Option<&Path>,
    shown: &[String],
) -> Vec<DirView> {
    let mut places = absolute_places(shown);
    places.extend(SYSTEM_SHOWN.iter().map(|s| s.to_string()));
    if let Ok(resolver) = std::fs::canonicalize("/etc/resolv.conf") {
        places.push(resolver.to_string_lossy().into_owned());
    }
    let roots = system_roots(home_real, shared);
    views_of(roots, home_real, workspace, &places)
}

/// The absolute entries of `shown` (`~/x` means a place in home, never one elsewhere).
fn absolute_places(shown: &[String]) -> Vec<String> {
    shown
        .iter()
        .filter(|raw| Path::new(raw.trim()).is_absolute())
        .cloned()
        .collect()
}

/// A view of each of `roots` showing `workspace`, the absolute `places` in it and home
/// (`home_real`, canonical; its own view then applies); one that lies in the workspace is
/// left out.
fn views_of(
    roots: Vec<PathBuf>,
    home_real: Option<&Path>,
    workspace: Option<&Path>,
    places: &[String],
) -> Vec<DirView> {
    let home: Option<PathBuf> = home_real.map(Path::to_path_buf);
    roots
        .into_iter()
        .map(|root| {
            let mut view = DirView::new(Some(&root), workspace, places);
            view.also(home.as_slice());
            view
        })
        .filter(|v| v.root().is_some() && !v.in_workspace())
        .collect()
}

/// The person's XDG config, data, state and cache dirs when they are set outside home (inside,
/// the view hides them already), and the credential files of a cargo home outside home.
fn outside_home_places(home: Option<&Path>) -> Vec<PathBuf> {
    outside_home_places_in(home, |var| std::env::var_os(var))
}

/// [`outside_home_places`] with the environment read through `env`. The cache dir counts too:
/// rein keeps its local model and its run dir there, and other programs their tokens.
fn outside_home_places_in(
    home: Option<&Path>,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for var in [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ] {
        if let Some(v) = env(var).map(PathBuf::from)
            && v.is_absolute()
            && home.is_none_or(|h| !normalize(&v).starts_with(h))
        {
            out.push(normalize(&v));
        }
    }
    if let Some(cargo) = env("CARGO_HOME").map(PathBuf::from)
        && cargo.is_absolute()
    {
        out.extend(CARGO_CREDENTIALS.iter().map(|name| cargo.join(name)));
    }
    out
}

impl Secrets {
    /// What bash cannot see: home outside the default allow-list and `home_allow` (the
    /// `workspace` stays visible when it lies there), rein's own config and data dirs, the
    /// person's XDG dirs outside home, and `hide`.
    pub fn resolve(
        home: Option<&Path>,
        workspace: Option<&Path>,
        config_dir: &Path,
        data_dir: &Path,
        settings: &SecretSettings,
    ) -> Secrets {
        let allowed: Vec<String> = super::home::DEFAULT_HOME_ALLOW
            .iter()
            .map(|s| s.to_string())
            .chain(settings.shown().cloned())
            .collect();
        let view = DirView::new(home, workspace, &allowed);
        let shown_anywhere: Vec<String> = settings.shown().cloned().collect();
        // The shared directories' views, then the top-level ones, which leave those out.
        let home_real = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| normalize(h)));
        let shared_dirs = shared_roots(home_real.as_deref(), &shared_candidates());
        let places = absolute_places(&shown_anywhere);
        let shared = views_of(
            shared_dirs.clone(),
            home_real.as_deref(),
            workspace,
            &places,
        );
        let system = system_views(
            home_real.as_deref(),
            &shared_dirs,
            workspace,
            &shown_anywhere,
        );
        let mut wanted: Vec<PathBuf> = [config_dir, data_dir]
            .iter()
            .map(|p| normalize(p))
            .collect();
        wanted.extend(outside_home_places(home));
        wanted.extend(settings.hide.iter().filter_map(|raw| expand(raw, home)));
        let shown: Vec<PathBuf> = settings
            .shown()
            .filter_map(|raw| expand(raw, home))
            .collect();
        let mut paths = Vec::new();
        for p in wanted.into_iter().filter(|p| !shown.contains(p)) {
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
            view,
            shared,
            system,
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
                None,
                &b.config_dir().join("rein"),
                &b.data_dir().join("rein"),
                &SecretSettings::default(),
            ),
            None => Secrets::default(),
        }
    }

    /// Also shows these places (the workspace, the session's temp dir, dirs bash may write)
    /// where they lie in home.
    pub fn show_also(&mut self, places: &[PathBuf]) {
        self.view.also(places);
        for view in self.shared.iter_mut().chain(&mut self.system) {
            view.also(places);
        }
    }

    /// The repository around the workspace, shown to commands (read-only, like anything
    /// outside the workspace) so git and builds work: its root when rein started in a
    /// subdirectory of it, and a linked worktree's git directories (see
    /// [`worktree_git_dirs`](super::git::worktree_git_dirs)). Never home or a directory
    /// holding it (a dotfiles repository would show all of home), nor `/`.
    pub fn repository_places(&self, workspace: &Path) -> Vec<PathBuf> {
        let Ok(ws) = std::fs::canonicalize(workspace) else {
            return Vec::new();
        };
        let Some(root) = crate::repo::repo_root(&ws) else {
            return Vec::new();
        };
        let mut places = super::git::worktree_git_dirs(&root);
        if root != ws {
            places.push(root);
        }
        let home = self.view.root();
        places.retain(|p| p.parent().is_some() && home.is_none_or(|h| !h.starts_with(p)));
        places
    }

    /// The shared temporary and the person's runtime directories as bash sees them.
    pub(crate) fn shared_views(&self) -> &[DirView] {
        &self.shared
    }

    /// The top-level directories outside [`SYSTEM_READABLE`] as bash sees them.
    pub(crate) fn system_views(&self) -> &[DirView] {
        &self.system
    }

    /// The home directory as bash sees it.
    pub fn view(&self) -> &DirView {
        &self.view
    }

    /// The places hidden wherever they are (absolute; existing ones also in their canonical
    /// spelling). Home outside the view is hidden besides these.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The variables commands get besides the allow-list (`[sandbox] pass_env`).
    pub fn pass_env(&self) -> &[String] {
        &self.pass_env
    }

    /// Where `path` (absolute; resolve links first for a reliable answer) is hidden from
    /// bash, if it is: the hidden place it lies in, or the home directory when it lies
    /// outside the view.
    pub fn hidden_place(&self, path: &Path) -> Option<PathBuf> {
        let path = normalize(path);
        if let Some(p) = self.paths.iter().find(|s| path.starts_with(s)) {
            return Some(p.clone());
        }
        if let Some(view) = self
            .shared
            .iter()
            .chain(&self.system)
            .find(|v| v.hides(&path))
        {
            return view.root().map(Path::to_path_buf);
        }
        let home = self.view.root()?;
        self.view.hides(&path).then(|| home.to_path_buf())
    }

    /// Whether bash cannot see `path` (see [`Secrets::hidden_place`]).
    pub fn is_secret_path(&self, path: &Path) -> bool {
        self.hidden_place(path).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_directories_are_covered_once_and_never_inside_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in ["home/run", "run/user/7/inner", "elsewhere"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("file"), "x").unwrap();
        let candidates = [
            root.join("run/user/7"),
            root.join("run/user/7/inner"),
            root.join("home/run"),
            root.join("missing"),
            root.join("file"),
            root.join("elsewhere/../run/user/7"),
        ];
        assert_eq!(
            shared_roots(Some(&home), &candidates),
            [root.join("run/user/7")],
            "inside home, inside another, missing, not a directory, or a second spelling"
        );
        assert_eq!(
            shared_roots(None, &[PathBuf::from("/")]),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn the_enclosing_repository_is_shown_but_never_one_holding_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in [
            "home/.git",
            "home/proj/sub",
            "repo/.git",
            "repo/sub/deeper",
            "solo/.git",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let s = Secrets::resolve(
            Some(&home),
            None,
            &root.join("cfg"),
            &root.join("data"),
            &SecretSettings::default(),
        );
        let of = |ws: &str| s.repository_places(&root.join(ws));
        assert_eq!(of("repo/sub/deeper"), [root.join("repo")]);
        assert!(of("solo").is_empty(), "the workspace is the repository");
        assert!(
            of("home/proj/sub").is_empty(),
            "a dotfiles repository in home"
        );
    }

    #[test]
    fn what_others_may_not_read_is_found_by_its_mode_down_to_the_depth() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        for d in ["closed/inner", "open/deeper/deepest"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, m) in [
            ("key", 0o600),
            ("public", 0o644),
            ("open/group", 0o640),
            ("open/deeper/deepest/far", 0o600),
        ] {
            std::fs::write(root.join(f), "x").unwrap();
            mode(&root.join(f), m);
        }
        mode(&root.join("closed"), 0o700);
        let (mut out, mut budget) = (Vec::new(), 100);
        closed_within(root, 2, &mut budget, &mut out);
        out.sort();
        assert_eq!(
            out,
            [
                root.join("closed"),
                root.join("key"),
                root.join("open/group")
            ],
            "not inside a closed directory, not past the depth"
        );
    }

    #[test]
    fn only_the_systems_top_level_directories_are_left_readable() {
        let roots = system_roots(Some(Path::new("/root")), &[PathBuf::from("/tmp")]);
        let readable = |r: &PathBuf| {
            SYSTEM_READABLE
                .iter()
                .any(|k| r.starts_with(Path::new("/").join(k)))
        };
        assert!(!roots.iter().any(readable), "{roots:?}");
        assert!(
            !roots
                .iter()
                .any(|r| r == Path::new("/tmp") || r.starts_with("/root")),
            "home and the shared directories have views of their own: {roots:?}"
        );
        for hidden in ["/var", "/run", "/srv", "/mnt"] {
            if Path::new(hidden).is_dir() && !Path::new(hidden).is_symlink() {
                assert!(
                    roots.contains(&PathBuf::from(hidden)),
                    "{hidden}: {roots:?}"
                );
            }
        }
        assert_eq!(roots, outermost_only(roots.clone()));
    }

    #[test]
    fn secret_names_follow_the_patterns() {
        for name in [
            "API_KEY",
            "APIKEY",
            "AUTH",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "GITHUB_PAT_X",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "npm_token",
            "NPM_CONFIG__AUTH",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "DATABASE_URL",
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
            "LANG",
            "TOKENIZERS_PARALLELISM",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    /// The person's XDG dirs set outside home are hidden, the cache dir (rein's local model and
    /// run dir) as well as config, data and state; inside home, or relative, they are left to
    /// the home view.
    #[test]
    fn xdg_dirs_outside_home_are_hidden_the_cache_too() {
        let home = Path::new("/home/p");
        let env = |var: &str| -> Option<std::ffi::OsString> {
            match var {
                "XDG_CONFIG_HOME" => Some("/srv/p/config".into()),
                "XDG_DATA_HOME" => Some("/home/p/.data".into()),
                "XDG_STATE_HOME" => Some("rel/state".into()),
                "XDG_CACHE_HOME" => Some("/opt/cache/../p-cache".into()),
                _ => None,
            }
        };
        let places = outside_home_places_in(Some(home), env);
        assert_eq!(
            places,
            [
                PathBuf::from("/srv/p/config"),
                PathBuf::from("/opt/p-cache")
            ]
        );
        let cache_only = |var: &str| (var == "XDG_CACHE_HOME").then(|| "/var/cache/p".into());
        assert_eq!(
            outside_home_places_in(Some(home), cache_only),
            [PathBuf::from("/var/cache/p")]
        );
        assert_eq!(
            outside_home_places_in(None, cache_only),
            [PathBuf::from("/var/cache/p")]
        );
    }

    #[test]
    fn home_outside_the_list_rein_dirs_and_hide_are_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in [".cargo/bin", ".kube", "proj", ".config/op"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        let settings = SecretSettings {
            hide: vec![
                "~/proj/keys".into(),
                "/srv/keys/../vault".into(),
                "rel".into(),
            ],
            home_allow: vec!["~/.kube".into()],
            ..SecretSettings::default()
        };
        let ws = home.join("proj");
        let s = Secrets::resolve(
            Some(&home),
            Some(&ws),
            &root.join("cfg/rein"),
            &root.join("data/rein"),
            &settings,
        );
        for p in [
            home.join(".ssh/id_ed25519"),
            home.join(".config/op/token"),
            home.join(".env"),
            home.join("proj/keys/k"),
            root.join("cfg/rein/config.toml"),
            root.join("data/rein/sessions/x.jsonl"),
            PathBuf::from("/srv/vault"),
        ] {
            assert!(s.is_secret_path(&p), "{p:?}");
        }
        for p in [
            home.join(".kube/config"),
            home.join(".cargo/bin/cargo"),
            home.join("proj/src/a.rs"),
            PathBuf::from("/usr/bin/ls"),
            PathBuf::from("rel"),
        ] {
            assert!(!s.is_secret_path(&p), "{p:?}");
        }
        assert_eq!(s.hidden_place(&home.join(".ssh/x")), Some(home.clone()));
        // No home: only what is absolute.
        let s = Secrets::resolve(
            None,
            None,
            Path::new("/c/rein"),
            Path::new("/d/rein"),
            &SecretSettings::default(),
        );
        assert!(
            s.paths().contains(&PathBuf::from("/c/rein"))
                && s.paths().contains(&PathBuf::from("/d/rein"))
        );
        assert!(!s.is_secret_path(Path::new("/usr/lib/x")));
    }
}
