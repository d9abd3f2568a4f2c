//! Finding the real MCP servers (installed by `.ci/setup-mcp.sh`) and the fault-injection
//! server (`examples/mcp_fault_server.rs`), and building managers for them.

use rein::mcp::config::{Origin, ServerEntry};
use rein::mcp::{McpManager, McpSetup, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where the pinned npm servers are: `REIN_MCP_SERVERS`, else the cache `.ci/setup-mcp.sh`
/// fills, installed there on first use (as the local model is) when npm is on `PATH`. `None`
/// only where that is impossible: the test then skips and the run's last line says why, unless
/// `REIN_MCP_TESTS_REQUIRED=1`, as in CI, where it fails.
pub fn npm_servers() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    match FOUND.get_or_init(find_or_install) {
        Ok(dir) => Some(dir.clone()),
        Err(why) => {
            assert!(
                std::env::var("REIN_MCP_TESTS_REQUIRED").as_deref() != Ok("1"),
                "the MCP test servers are missing ({why}): run `bash .ci/setup-mcp.sh` and \
                 export REIN_MCP_SERVERS to the directory it prints"
            );
            super::skips::skip("MCP servers (npm)", why);
            None
        }
    }
}

fn installed(dir: &Path) -> bool {
    dir.join("node_modules/.bin/mcp-server-everything").exists()
}

fn find_or_install() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("REIN_MCP_SERVERS").map(PathBuf::from) {
        return if installed(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "REIN_MCP_SERVERS={} holds no servers",
                dir.display()
            ))
        };
    }
    let out = std::process::Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/setup-mcp.sh"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("bash: {e}"))?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && installed(&dir) {
        Ok(dir)
    } else {
        Err("installing them with npm failed (is npm on PATH and the registry reachable?)".into())
    }
}

/// The path of an npm server's executable.
pub fn bin(dir: &Path, name: &str) -> String {
    dir.join("node_modules/.bin")
        .join(name)
        .display()
        .to_string()
}

/// The fault-injection server, built (once per test process) with the profile of the running
/// test or bench: `cargo test --test X` does not build examples by itself.
pub fn fault_server() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // target/<profile>/deps/<test> -> target/<profile>/examples/mcp_fault_server
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let path = profile_dir.join("examples").join("mcp_fault_server");
            if path.exists() {
                return path;
            }
            let release = profile_dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = std::process::Command::new(cargo);
            build
                .args(["build", "--example", "mcp_fault_server"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap());
            if release {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(
                status.success(),
                "building examples/mcp_fault_server failed"
            );
            assert!(
                path.exists(),
                "{} is missing after the build",
                path.display()
            );
            path
        })
        .clone()
}

/// A user server definition from TOML (`command = ..` or `url = ..`).
pub fn server(name: &str, toml_text: &str) -> ServerConfig {
    let entry: ServerEntry = toml::from_str(toml_text).unwrap();
    entry
        .resolve(name, Origin::User(PathBuf::from("/test/config.toml")))
        .unwrap()
}

/// A manager for `servers` (project servers refused) and the notices it gave.
pub fn manager(
    servers: Vec<ServerConfig>,
    workspace: &Path,
) -> (McpManager, Arc<Mutex<Vec<String>>>) {
    let notices: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = notices.clone();
    let m = McpManager::new(McpSetup {
        servers,
        gate: Arc::new(|_| Err("project servers are refused in these tests".into())),
        workspace: workspace.to_path_buf(),
        notify: Arc::new(move |n| sink.lock().unwrap().push(n)),
        announced: Vec::new(),
    });
    (m, notices)
}

/// TOML string literal.
pub fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// [`manager`], started, once every server is up or has failed.
pub async fn started(
    servers: Vec<ServerConfig>,
    workspace: &Path,
) -> (McpManager, Arc<Mutex<Vec<String>>>) {
    let (m, notices) = manager(servers, workspace);
    m.start_all();
    m.wait_started(&Default::default()).await;
    (m, notices)
}
