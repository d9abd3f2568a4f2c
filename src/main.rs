//! The `rein` command.

// Every byte printed outside the TUI goes through `cli` and the one sanitizer (clippy.toml).
#![deny(clippy::disallowed_macros, clippy::disallowed_methods)]

use clap::{Args, Parser, Subcommand};
use rein::agent::dispatch::Approver;
use rein::agent::journal::SessionStart;
use rein::cli::{StartupError, print_error, print_stdout};
use rein::config::{Config, ConfigError, Flags};
use rein::exec::ExecEnd;
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// rein: a terminal coding agent.
#[derive(Parser, Debug)]
#[command(name = "rein", version, about, long_about = None)]
// `rein --model m exec …` would otherwise drop the flag silently: it belongs after `exec`.
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    settings: SettingsFlags,
    /// Continue the newest session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_: bool,
    /// Resume a session: by id (a unique prefix is enough), or pick one from a list.
    #[arg(short = 'r', long, num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
    /// Run on the local model (no key): installed on first use, served while rein runs.
    #[arg(long, conflicts_with_all = LOCAL_CONFLICTS)]
    local: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

/// The flags that change the settings; only on the commands that use them.
#[derive(Args, Debug, Clone, Default)]
struct SettingsFlags {
    /// Wire format: openai (any OpenAI-compatible server), openai-responses or anthropic.
    #[arg(long)]
    provider: Option<String>,
    /// Base URL of the model server (OpenAI: including /v1).
    #[arg(long)]
    base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    model: Option<String>,
    /// Trust this project for this run: its .rein/config.toml may set where requests go.
    #[arg(long)]
    trust: bool,
    /// Approval mode to start in (Shift+Tab cycles it in the TUI): ask, accept-edits (edits
    /// run without asking) or plan (read-only).
    #[arg(long, value_parser = MODES)]
    mode: Option<String>,
}

/// What `--local` decides itself.
const LOCAL_CONFLICTS: [&str; 3] = ["provider", "base_url", "model"];

/// The spellings of `--mode`.
const MODES: [&str; 3] = ["ask", "accept-edits", "plan"];

impl SettingsFlags {
    fn flags(&self) -> Flags {
        Flags {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            trust: self.trust,
            approved: Vec::new(),
            mode: self.mode.clone(),
            max_requests: None,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one prompt headless (scripts, CI) and exit.
    Exec {
        #[command(flatten)]
        settings: SettingsFlags,
        /// Print every event as a JSON line instead of plain text.
        #[arg(long)]
        json: bool,
        /// Approve everything that would ask (deny rules still apply).
        #[arg(long)]
        yes: bool,
        /// Continue the newest session of this directory.
        #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
        continue_: bool,
        /// Continue the session with this id (a unique prefix is enough).
        #[arg(short = 'r', long)]
        resume: Option<String>,
        /// Run on the local model (no key): installed on first use, served while rein runs.
        #[arg(long, conflicts_with_all = LOCAL_CONFLICTS)]
        local: bool,
        /// Most model requests for the message (default: max_requests from the config, else
        /// 1000); loop detection may stop it earlier.
        #[arg(long, value_name = "N")]
        max_requests: Option<u32>,
        /// Also write the final answer to FILE (as `codex exec -o`), with or without --json.
        #[arg(short = 'o', long, value_name = "FILE")]
        output_last_message: Option<std::path::PathBuf>,
        /// The prompt; `-` or nothing reads it from stdin.
        prompt: Option<String>,
    },
    /// Saved sessions: list, show, export, delete.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Run a command under the same sandbox bash gets, to see what it allows.
    Sandbox {
        /// The command and its arguments (after `--`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        argv: Vec<String>,
    },
    /// Print the effective settings and where each came from (the key is masked).
    Config {
        #[command(flatten)]
        settings: SettingsFlags,
    },
    /// Inspect the permission rules.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// MCP servers: list them with their tools, add or remove one in your config.
    Mcp {
        #[command(flatten)]
        settings: SettingsFlags,
        #[command(subcommand)]
        command: rein::mcp::cli::McpCommand,
    },
}

#[derive(Subcommand, Debug)]
enum SessionsCommand {
    /// This directory's sessions, newest first.
    List {
        /// Every session, from every directory.
        #[arg(long)]
        all: bool,
        /// A JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// A readable transcript.
    Show {
        /// Session id or unique prefix.
        id: String,
    },
    /// Export a session.
    Export {
        /// Session id or unique prefix.
        id: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "markdown")]
        format: rein::session_cli::Format,
    },
    /// Delete a session (asks first).
    Rm {
        /// Session id or unique prefix.
        id: String,
        /// Don't ask.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Print the verdict for a command line: allow, ask or deny, with the deciding rule.
    /// Exit status: 0 allow, 1 ask, 2 deny, 3 when the settings cannot be read.
    Check {
        /// Also print the rule a "don't ask again" answer would add, or why none can be made.
        #[arg(long)]
        always: bool,
        /// The command line, as one argument.
        command: String,
    },
}

/// Log lines waiting for the log file's writer thread.
const LOG_QUEUE_LINES: usize = 4096;

/// Logs go to `<data dir>/logs/`, never to the terminal.
fn init_logging(data_dir: &std::path::Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(&dir, "rein.log");
    // The default queue (128,000 lines) is allocated and written through at once: about a
    // third of `rein exec`'s start-up CPU and several MB resident, for a log of a few lines
    // a step. A line that finds this one full is dropped, as with the default.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .finish(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("REIN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

/// Exit codes, decided here only (README "Exit codes").
mod exit {
    /// Done.
    pub const OK: u8 = 0;
    /// Failed (the reason is on stderr).
    pub const FAILED: u8 = 1;
    /// Bad usage or settings: nothing ran.
    pub const STARTUP: u8 = 2;
    /// `rein exec` without `--yes`: every tool call the model made needed approval and was refused.
    pub const ALL_REFUSED: u8 = 3;
    /// Interrupted (Ctrl+C).
    pub const INTERRUPTED: u8 = 130;
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if let (Some(arg), None) = (args.next(), args.next())
        && arg == rein::sandbox::zygote::ZYGOTE_ARG
    {
        return ExitCode::from(rein::sandbox::zygote::serve() as u8);
    }
    // Before anything reads the key: no process of ours may read rein's memory or environment.
    rein::sandbox::protect_process();
    rein::sandbox::keep_inherited_descriptors_from_children();
    rein::cli::install_panic_hook();
    // Sandboxed commands start from a small process of rein's binary (see `sandbox::zygote`).
    if std::env::var_os(rein::sandbox::zygote::SWITCH).is_none_or(|v| v != "0") {
        rein::sandbox::zygote::enable("/proc/self/exe".into());
    }
    let result = run();
    let _ = rein::checkpoint::release_watches_at_exit();
    match result {
        Ok(code) => code,
        Err(e) => {
            let startup = e.downcast_ref::<StartupError>().is_some();
            let message = format!("{e:#}");
            if !message.is_empty() {
                print_error(&message);
            }
            ExitCode::from(if startup { exit::STARTUP } else { exit::FAILED })
        }
    }
}

/// Parses the command line and runs what it asks for.
fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            print_clap(&e);
            return Ok(ExitCode::from(if e.use_stderr() {
                exit::STARTUP
            } else {
                exit::OK
            }));
        }
    };
    match cli.command {
        None => run_tui(cli.settings.flags(), cli.local, cli.continue_, cli.resume),
        Some(Command::Exec {
            settings,
            json,
            yes,
            continue_,
            resume,
            local,
            max_requests,
            output_last_message,
            prompt,
        }) => {
            let flags = Flags {
                max_requests,
                ..settings.flags()
            };
            let output = ExecOutput {
                json,
                yes,
                last_message: output_last_message,
            };
            run_exec(flags, local, output, (continue_, resume), prompt)
        }
        Some(Command::Config { settings }) => show_config(settings.flags()),
        Some(Command::Policy {
            command: PolicyCommand::Check { command, always },
        }) => Ok(policy_check(&command, always)),
        Some(Command::Sessions { command }) => run_sessions(command),
        Some(Command::Sandbox { argv }) => run_sandbox(&argv),
        Some(Command::Mcp { settings, command }) => run_mcp(settings.flags(), command),
    }
}

/// `rein mcp list|add|remove`. Project servers are listed; they start only if trusted.
fn run_mcp(flags: Flags, command: rein::mcp::cli::McpCommand) -> anyhow::Result<ExitCode> {
    let config = lenient_config(flags)?;
    let rt = runtime()?;
    let text = rt
        .block_on(rein::mcp::cli::run(command, &config))
        .map_err(anyhow::Error::msg)?;
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    print_stdout(&format!("{text}{newline}"))?;
    Ok(ExitCode::SUCCESS)
}

/// `rein policy check [--always] CMD`: the verdict line (and the "always" line), exit status
/// 0 allow, 1 ask, 2 deny, 3 when the settings cannot be read.
fn policy_check(command: &str, always: bool) -> ExitCode {
    use rein::policy::{Action, Policy, explain};
    let config = match Config::load_lenient(Flags::default()) {
        Ok(c) => c,
        Err(e) => {
            print_error(&e.to_string());
            return ExitCode::from(3);
        }
    };
    // The sandbox as configured; whether the kernel could enforce it is not probed here.
    let confinement = match config.sandbox {
        rein::config::SandboxMode::Off => rein::policy::Confinement::Off,
        _ => rein::policy::Confinement::Sandboxed,
    };
    let policy =
        Policy::new(config.rules.clone(), config.auto_approve_edits).with_confinement(confinement);
    let verdict = policy.check_bash(command);
    let mut out = format!("{}\n", explain(&verdict));
    if always {
        out.push_str(&match policy.always("bash", command) {
            Ok(a) => {
                let patterns: Vec<String> =
                    a.rules().map(|r| format!("\"{}\"", r.pattern)).collect();
                let noun = if patterns.len() == 1 { "rule" } else { "rules" };
                format!("always: {} ({noun} {})\n", a.shown, patterns.join(", "))
            }
            Err(why) => format!("always: none ({why})\n"),
        });
    }
    // The verdict quotes the command line: it is printed through the sanitizer like the rest.
    let _ = print_stdout(&out);
    ExitCode::from(match verdict.action {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    })
}

/// Prints a clap error, help or version. Help and version are rein's own text, coloured
/// when the stream is a terminal; an error quotes the command line, so it goes plain through
/// the sanitizer.
fn print_clap(e: &clap::Error) {
    use clap::error::ErrorKind;
    let to_stderr = e.use_stderr();
    let own = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let terminal = if to_stderr {
        rein::cli::stderr_is_terminal()
    } else {
        rein::cli::stdout_is_terminal()
    };
    let rendered = e.render();
    if own && terminal {
        rein::cli::print_own_styled(&rendered.ansi().to_string(), to_stderr);
    } else if to_stderr {
        rein::cli::print_stderr(&rendered.to_string());
    } else {
        let _ = print_stdout(&rendered.to_string());
    }
}

/// Settings for a run: a missing model or key is a startup error.
fn strict_config(flags: Flags) -> anyhow::Result<Config> {
    Config::load(flags).map_err(|e| StartupError(e.to_string()).into())
}

/// Settings for commands that don't talk to a model.
fn lenient_config(flags: Flags) -> anyhow::Result<Config> {
    Config::load_lenient(flags).map_err(|e| StartupError(e.to_string()).into())
}

fn show_config(flags: Flags) -> anyhow::Result<ExitCode> {
    let mut c = lenient_config(flags)?;
    // The window a server reports is part of the effective settings.
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        rt.block_on(rein::discover::use_server_window(&mut c));
    }
    // What the kernel really enforces, not just what is configured.
    let mut sandbox = rein::sandbox::Sandbox::new(
        c.sandbox,
        c.sandbox_network,
        c.cwd.clone(),
        std::env::temp_dir(),
    );
    if let Some(proxy) = rein::netproxy::NetProxy::from_config(&c) {
        sandbox = sandbox.with_network_proxy(proxy);
    }
    let note = sandbox
        .fallback_note()
        .map(|n| {
            format!(
                "{:<w$} {n}\n",
                "sandbox note",
                w = rein::config::NAME_COLUMN
            )
        })
        .unwrap_or_default();
    let text = format!(
        "{}{:<w$} {}\n{note}{:<w$} {}\n",
        c.describe(),
        "sandbox in force",
        sandbox.describe(),
        "local model",
        rein::local::status(),
        w = rein::config::NAME_COLUMN
    );
    print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// How `rein exec` reports: JSON lines or text, approving or not, and where the final answer
/// also goes.
struct ExecOutput {
    json: bool,
    yes: bool,
    last_message: Option<std::path::PathBuf>,
}

fn run_exec(
    mut flags: Flags,
    local: bool,
    output: ExecOutput,
    (continue_, resume): (bool, Option<String>),
    prompt: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut read = None;
    // Held to the end of the run: dropping it stops the server. Usage errors come first, not
    // after a download and a model load.
    let _local = if local {
        let config = lenient_config(flags.clone())?;
        session_start(&config, continue_, resume.as_deref()).map_err(StartupError)?;
        read = Some(read_prompt(prompt.clone()).map_err(StartupError)?);
        Some(start_local(&mut flags)?)
    } else {
        None
    };
    let mut config = strict_config(flags)?.for_exec();
    if local {
        config.attribute_to_flag("--local", &LOCAL_SETTINGS);
    }
    let _guard = init_logging(&config.data_dir);
    for notice in config.startup_notices() {
        print_error(&format!("warning: {notice}"));
    }
    let session = session_start(&config, continue_, resume.as_deref()).map_err(StartupError)?;
    let prompt = match read {
        Some(p) => p,
        None => read_prompt(prompt).map_err(StartupError)?,
    };
    let rt = runtime()?;
    let end = rt.block_on(rein::exec::run(
        config,
        rein::exec::ExecOptions {
            json: output.json,
            yes: output.yes,
            prompt,
            session,
            last_message_file: output.last_message,
        },
    ));
    // Don't wait for stray blocking work (e.g. a stdin reader) on the way out.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(ExitCode::from(match end {
        ExecEnd::Completed => exit::OK,
        ExecEnd::AllRefused => exit::ALL_REFUSED,
        ExecEnd::Failed => exit::FAILED,
        ExecEnd::Interrupted => exit::INTERRUPTED,
    }))
}

fn run_sessions(command: SessionsCommand) -> anyhow::Result<ExitCode> {
    let config = lenient_config(Flags::default())?;
    let data = &config.data_dir;
    let text = match command {
        SessionsCommand::List { all, json } => {
            rein::session_cli::list(data, &config.cwd, all, json)
        }
        SessionsCommand::Show { id } => {
            rein::session_cli::export(data, &id, rein::session_cli::Format::Markdown)
                .map_err(anyhow::Error::msg)?
        }
        SessionsCommand::Export { id, format } => {
            rein::session_cli::export(data, &id, format).map_err(anyhow::Error::msg)?
        }
        SessionsCommand::Rm { id, yes } => {
            rein::session_cli::remove(data, &id, yes).map_err(anyhow::Error::msg)?
        }
    };
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    print_stdout(&format!("{text}{newline}"))?;
    Ok(ExitCode::SUCCESS)
}

fn run_sandbox(argv: &[String]) -> anyhow::Result<ExitCode> {
    let config = lenient_config(Flags::default())?;
    let temp = std::env::temp_dir().join(format!("rein-sandbox-{}", rein::agent::new_session_id()));
    let mut dir = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
    dir.create(&temp)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", temp.display()))?;
    let sandbox = rein::sandbox::Sandbox::new_with_secrets(
        config.sandbox,
        config.sandbox_network,
        config.cwd.clone(),
        temp.clone(),
        config.secrets(),
    );
    let sandbox = match rein::netproxy::NetProxy::from_config(&config) {
        Some(proxy) => sandbox.with_network_proxy(proxy),
        None => sandbox,
    };
    print_error(&format!("sandbox {}", sandbox.describe()));
    let code = match rein::sandbox::run_sandboxed(&sandbox, argv) {
        Ok((code, notes)) => {
            for note in notes {
                print_error(&note);
            }
            code
        }
        Err(e) => {
            print_error(&format!(
                "cannot run {}: {e}",
                argv.first().map_or("", String::as_str)
            ));
            127
        }
    };
    let _ = std::fs::remove_dir_all(&temp);
    // The command's own exit code, as `env` and `timeout` do.
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn read_prompt(arg: Option<String>) -> Result<String, String> {
    let from_stdin = match &arg {
        Some(p) if p != "-" => return Ok(p.clone()),
        Some(_) => true,
        None => !std::io::stdin().is_terminal(),
    };
    if !from_stdin {
        return Err("no prompt given: pass it as an argument, or `-` to read it from stdin".into());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    if text.trim().is_empty() {
        return Err("the prompt read from stdin is empty".into());
    }
    Ok(text)
}

/// Which session `--continue` / `--resume ID` mean, as a start for the agent.
fn session_start(
    config: &Config,
    continue_: bool,
    resume: Option<&str>,
) -> Result<SessionStart, String> {
    if continue_ {
        return rein::session_store::newest_for_cwd(&config.data_dir, &config.cwd)
            .map(|s| SessionStart::Resume(s.path))
            .ok_or_else(|| {
                format!(
                    "there is no saved session for {} to continue; start one without --continue",
                    config.cwd.display()
                )
            });
    }
    match resume {
        Some(id) if id.trim().is_empty() => Err(
            "--resume needs a session id (see `rein sessions list`); to start a new session, \
             leave --resume out"
                .into(),
        ),
        Some(id) => rein::session_store::find(&config.data_dir, id.trim())
            .map(SessionStart::Resume)
            .map_err(|e| e.to_string()),
        None => Ok(SessionStart::New),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))
}

/// The settings `--local` makes.
const LOCAL_SETTINGS: [&str; 3] = ["provider", "base_url", "model"];

/// `--local`: installs the local model if needed (progress on stderr), starts its server on
/// the main thread (its death signal follows this thread) and points the flags at it.
fn start_local(flags: &mut Flags) -> anyhow::Result<rein::local::LocalServer> {
    let cwd = std::env::current_dir()
        .map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))?;
    let mut progress = rein::cli::StderrProgress::new();
    let installed = rein::local::install(&cwd, &mut progress)
        .map_err(|e| anyhow::anyhow!("rein --local: {e}"))?;
    let server = rein::local::start(&installed, &cwd, &mut progress)
        .map_err(|e| anyhow::anyhow!("rein --local: {e}"))?;
    flags.provider = Some("openai".into());
    flags.base_url = Some(server.base_url.clone());
    flags.model = Some(server.model.clone());
    Ok(server)
}

/// Loads the settings for a `--local` run (the flags point at its server).
fn local_config(flags: Flags) -> anyhow::Result<Config> {
    let mut config = strict_config(flags)?;
    config.attribute_to_flag("--local", &LOCAL_SETTINGS);
    Ok(config)
}

/// No model configured: offer a local OpenAI-compatible server if one answers, else say what
/// to set (or, on L, run the local model).
fn first_run(
    flags: &Flags,
    missing: String,
) -> anyhow::Result<(Config, Option<rein::local::LocalServer>)> {
    let found = runtime()?.block_on(rein::discover::find_local_servers());
    if let Some(server) = found.iter().find(|s| !s.models.is_empty()) {
        let model = server.models[0].clone();
        let question = format!(
            "No model is configured, but {} answers at {} with the model \"{model}\".\n\n\
             Use it for this session? (To make it permanent, put BASE_URL={} and MODEL={model} \
             in ~/.agents/env.)",
            server.name, server.base_url, server.base_url
        );
        if rein::tui::confirm("Local model found", &question).unwrap_or(false) {
            let mut flags = flags.clone();
            flags.base_url = Some(server.base_url.clone());
            flags.model = Some(model);
            return Ok((strict_config(flags)?, None));
        }
    }
    setup_screen(flags, "rein needs a model", missing)
}

/// Shows what to set full screen (L there runs the local model), or returns the message to
/// print when there is no terminal to show it on.
fn setup_screen(
    flags: &Flags,
    title: &str,
    missing: String,
) -> anyhow::Result<(Config, Option<rein::local::LocalServer>)> {
    match rein::tui::show_setup_error(title, &missing) {
        Ok(true) => {
            let mut flags = flags.clone();
            let server = start_local(&mut flags)?;
            Ok((local_config(flags)?, Some(server)))
        }
        // Shown full-screen already; exit 2 without printing it again.
        Ok(false) => Err(StartupError(String::new()).into()),
        // No terminal to show it on: the caller prints it.
        Err(_) => Err(StartupError(missing).into()),
    }
}

/// Asks the person to trust what the project's config asks for, when it asks for anything that
/// needs trust. Returns notices for the session (e.g. the approval could not be saved).
fn settle_trust(flags: &mut Flags) -> anyhow::Result<Vec<String>> {
    let config = lenient_config(flags.clone())?;
    let items = config.untrusted_items();
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let project = config.trust.project.clone();
    if !rein::tui::ask_trust(&project, &items)? {
        return Ok(Vec::new());
    }
    let mut notices = Vec::new();
    let store = rein::trust::TrustStore::in_data_dir(&config.data_dir);
    if let Err(e) = store.approve(&project, &items) {
        notices.push(format!(
            "Could not save the trust in {} ({e}): trusted for this run only.",
            store.path().display()
        ));
    }
    flags.approved = items;
    Ok(notices)
}

fn run_tui(
    mut flags: Flags,
    local: bool,
    continue_: bool,
    resume: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut notices = settle_trust(&mut flags)?;
    // Held to the end of the run: dropping it stops the server.
    let (config, _local) = if local {
        let server = start_local(&mut flags)?;
        (local_config(flags)?, Some(server))
    } else {
        match Config::load(flags.clone()) {
            Ok(c) => (c, None),
            Err(ConfigError::Missing(msg)) => first_run(&flags, msg)?,
            Err(ConfigError::MissingKey(msg)) => {
                setup_screen(&flags, "rein needs an API key", msg)?
            }
            Err(ConfigError::Invalid(msg)) => return Err(StartupError(msg).into()),
        }
    };
    notices.extend(config.startup_notices());
    let _guard = init_logging(&config.data_dir);
    let session = if resume.as_deref() == Some("") {
        // `--resume` without an id: pick one full-screen; Esc leaves without starting.
        let sessions = rein::session_store::list(&config.data_dir, None);
        let here = rein::session_store::here_dirs(&config.cwd);
        match rein::tui::pick_session(sessions, &here)? {
            Some(path) => SessionStart::Resume(path),
            None => return Ok(ExitCode::SUCCESS),
        }
    } else {
        session_start(&config, continue_, resume.as_deref()).map_err(StartupError)?
    };
    let rt = runtime()?;
    let opts = rein::tui::UiOptions {
        theme: config.theme.clone(),
        notify: rein::tui::notify::NotifySettings {
            method: rein::tui::notify::NotifyMethod::parse(&config.notify)
                .unwrap_or(rein::tui::notify::NotifyMethod::Auto),
            command: config.notify_command.clone(),
        },
        workspace: config.cwd.clone(),
        config_dir: config.config_dir.clone(),
        data_dir: config.data_dir.clone(),
        notices,
    };
    let data_dir = config.data_dir.clone();
    let result = rt.block_on(async move {
        let mut agent_opts = rein::agent::AgentOptions::new(config, Approver::Interactive);
        agent_opts.session = session;
        agent_opts.servers_after_shown = true;
        let handle = rein::agent::spawn(agent_opts)?;
        rein::tui::run(opts, handle.ops, handle.events).await
    });
    // Let the agent finish writing the session before reading its totals.
    rt.shutdown_timeout(std::time::Duration::from_millis(300));
    let ui = result?;
    if let Some(summary) = rein::cli::exit_summary(&data_dir, &ui.session_id) {
        print_stdout(&summary)?;
    }
    Ok(ExitCode::SUCCESS)
}
