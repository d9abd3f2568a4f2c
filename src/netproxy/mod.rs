//! The network proxy for sandboxed commands: `[sandbox.network] allow = [...]`.
//!
//! A command whose network is limited to an allow-list runs in a network namespace of its own
//! that holds only `lo`; the one thing it can reach there is a listening socket the sandbox
//! made inside that namespace and handed to rein (`sandbox::netns`). rein serves HTTP proxy
//! requests on it (CONNECT for TLS, absolute URLs for plain HTTP): a host is reached only when
//! its name, exactly as the client wrote it, is on the list, or the person allows it when
//! asked. A refused name is never resolved. See docs/sandbox.md ("Network by domain").

pub mod allow;
mod serve;
pub mod store;

pub use allow::{AllowList, Entry};

use futures::future::BoxFuture;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

/// The port the proxy listens on inside a command's network namespace. The namespace is new
/// and empty for every command, so this port is always free there.
pub const PROXY_PORT: u16 = 3128;

/// The proxy URL commands get in `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and lowercase).
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// The person's answer to "allow network to HOST?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Allow this host and port for the rest of the session.
    Session,
    /// Allow it from now on: saved to the person's own config.
    Always,
    /// Refuse it (and do not ask again this session).
    No,
}

/// Asks the person about a host not on the list (the TUI does; headless has none).
pub trait Asker: Send + Sync {
    /// Asks once about `host` on `port`; `None` when the question could not be put or was
    /// withdrawn (the call ended): the host is refused this time.
    fn ask<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, Option<Answer>>;

    /// Tells the person what became of an answer (an "always" saved, or why it was not).
    fn tell(&self, text: String);
}

/// What the proxy decided for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Allowed; `exact` when by an entry naming the host itself (not a wildcard).
    Allowed {
        /// Whether an exact entry allowed it (only those may reach local addresses).
        exact: bool,
    },
    /// Refused; the sentence says why and what to do.
    Refused(String),
}

/// The session's proxy: the allow-list, the answers given so far, and who to ask.
pub struct NetProxy {
    list: RwLock<AllowList>,
    /// Hosts answered "no" this session (`host:port`, lowercase): not asked again.
    refused: Mutex<HashSet<String>>,
    asker: RwLock<Option<Arc<dyn Asker>>>,
    /// One question at a time: a second request for the same host waits for the first answer.
    asking: tokio::sync::Mutex<()>,
    /// The person's config file, where "always" answers are saved.
    config_file: Option<PathBuf>,
    /// Names resolved so far (all of them allowed ones): what the tests hold against the rule
    /// that a refused name is never resolved.
    lookups: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for NetProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetProxy")
            .field("list", &*crate::sync::read(&self.list))
            .finish_non_exhaustive()
    }
}

impl NetProxy {
    /// A proxy for `list`; "always" answers go to `config_file` (the person's own config).
    pub fn new(list: AllowList, config_file: Option<PathBuf>) -> NetProxy {
        NetProxy {
            list: RwLock::new(list),
            refused: Mutex::default(),
            asker: RwLock::new(None),
            asking: tokio::sync::Mutex::new(()),
            config_file,
            lookups: Default::default(),
        }
    }

    /// The session's proxy for `config`, when it limits the network to an allow-list; "always"
    /// answers go to the person's own config file.
    pub fn from_config(config: &crate::config::Config) -> Option<Arc<NetProxy>> {
        let list = config.sandbox_network_allow.clone()?;
        Some(Arc::new(NetProxy::new(
            list,
            Some(config.config_dir.join("config.toml")),
        )))
    }

    /// Who to ask about new hosts from now on (the TUI's approval dialog). Without one, a host
    /// not on the list is refused.
    pub fn set_asker(&self, asker: Arc<dyn Asker>) {
        *crate::sync::write(&self.asker) = Some(asker);
    }

    /// The entries in force, for `rein config` and the status line.
    pub fn entries(&self) -> Vec<String> {
        crate::sync::read(&self.list)
            .entries()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Decides `host` (as the client wrote it) on `port`; asks the person when there is
    /// someone to ask. Nothing here resolves the name.
    pub(crate) async fn decide(&self, host: &str, port: u16) -> Verdict {
        if let Some(v) = self.known(host, port) {
            return v;
        }
        let asker = crate::sync::read(&self.asker).clone();
        let Some(asker) = asker else {
            return Verdict::Refused(not_listed(host, port));
        };
        let _one = self.asking.lock().await;
        // Answered while this request waited for its turn.
        if let Some(v) = self.known(host, port) {
            return v;
        }
        match asker.ask(host, port).await {
            Some(Answer::Session) => self.grant(host, port),
            Some(Answer::Always) => {
                let v = self.grant(host, port);
                asker.tell(self.save_always(host, port));
                v
            }
            Some(Answer::No) => {
                crate::sync::lock(&self.refused).insert(key(host, port));
                Verdict::Refused(format!(
                    "The user refused network access to {host}:{port} for this session. Do not \
                     try other ways to reach it; go on without it or ask the user."
                ))
            }
            None => Verdict::Refused(not_listed(host, port)),
        }
    }

    fn count_lookup(&self) {
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many names the proxy resolved (each one allowed first).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The verdict without asking, when one is known.
    fn known(&self, host: &str, port: u16) -> Option<Verdict> {
        if let Some(e) = crate::sync::read(&self.list).find(host, port) {
            return Some(Verdict::Allowed {
                exact: e.is_exact(),
            });
        }
        crate::sync::lock(&self.refused)
            .contains(&key(host, port))
            .then(|| {
                Verdict::Refused(format!(
                    "The user refused network access to {host}:{port} earlier in this session; \
                     go on without it or ask the user."
                ))
            })
    }

    fn grant(&self, host: &str, port: u16) -> Verdict {
        crate::sync::write(&self.list).push(Entry::exact(host, port));
        Verdict::Allowed { exact: true }
    }

    /// Saves an "always" answer; the sentence for the person says where, or why not.
    fn save_always(&self, host: &str, port: u16) -> String {
        let entry = Entry::exact(host, port);
        let Some(path) = &self.config_file else {
            return format!(
                "Network to {entry} allowed for this session (no config file to save it to)."
            );
        };
        match store::add_to_config(path, &entry) {
            Ok(()) => format!(
                "Network to {entry} allowed; saved to [sandbox.network] allow in {}.",
                path.display()
            ),
            Err(e) => {
                tracing::warn!("network: could not save {entry} to {}: {e}", path.display());
                format!("Network to {entry} allowed for this session only: {e}.")
            }
        }
    }
}

fn key(host: &str, port: u16) -> String {
    format!("{}:{port}", host.to_ascii_lowercase())
}

/// The refusal for a host that is not on the list (headless, or nobody could be asked).
fn not_listed(host: &str, port: u16) -> String {
    format!(
        "rein's sandbox refused network access to {host}:{port}: it is not in [sandbox.network] \
         allow. Do not try other ways to reach it; if the command needs it, ask the user to add \
         \"{host}\" (or \"{host}:{port}\") to [sandbox.network] allow in their own config.toml."
    )
}

/// What one command's proxy saw: the hosts it refused, for the tool result.
#[derive(Debug, Default)]
pub struct CommandLog {
    refused: Mutex<Vec<String>>,
}

impl CommandLog {
    fn refused(&self, host: &str, port: u16) {
        let mut list = crate::sync::lock(&self.refused);
        let k = key(host, port);
        if !list.contains(&k) && list.len() < 20 {
            list.push(k);
        }
    }

    /// The note for the tool result when hosts were refused, if any were.
    pub fn note(&self) -> Option<String> {
        let list = crate::sync::lock(&self.refused);
        (!list.is_empty()).then(|| {
            format!(
                "[sandbox] The network proxy refused {}: not in [sandbox.network] allow (names \
                 are compared as written, never resolved). Do not try to get around it; if the \
                 command really needs a host, ask the user to add it to [sandbox.network] allow \
                 in their own config.toml.",
                list.join(", ")
            )
        })
    }
}

/// Serves proxy requests on `listener` (the socket in the command's network namespace) until
/// the returned future is dropped; every connection it started ends with it.
pub async fn serve(proxy: Arc<NetProxy>, listener: std::net::TcpListener, log: Arc<CommandLog>) {
    serve::run(proxy, listener, log).await;
}

#[cfg(test)]
mod tests;
