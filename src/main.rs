//! The `rein` command.

use clap::{Args, Parser, Subcommand};
use rein::agent::dispatch::Approver;
use rein::agent::journal::SessionStart;
use rein::config::{Config, ConfigError, Flags};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// rein: a terminal coding agent.
#[derive(Parser, Debug)]
#[command(name = "rein", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    model: ModelFlags,
    /// Continue the newest session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_: bool,
    /// Resume a session: by id (a unique prefix is enough), or pick one from a list.
    #[arg(short = 'r', long, num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
    /// Approval mode to start in (Shift+Tab cycles it): ask, accept-edits or plan.
    #[arg(long, value_parser = MODES)]
    mode: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// The spellings of `--mode`.
const MODES: [&str; 3] = ["ask", "accept-edits", "plan"];

#[derive(Args, Debug, Clone, Default)]
struct ModelFlags {
    /// Wire format: openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, global = true)]
    provider: Option<String>,
    /// Base URL of the model server (OpenAI: including /v1).
    #[arg(long, global = true)]
    base_url: Option<String>,
    /// Model name.
    #[arg(long, global = true)]
    model: Option<String>,
}

impl ModelFlags {
    fn flags(&self) -> Flags {
        Flags {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            mode: None,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one prompt headless (scripts, CI) and exit.
    Exec {
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
        /// Approval mode: ask, accept-edits (edits run without --yes) or plan (read-only).
        #[arg(long, value_parser = MODES)]
        mode: Option<String>,
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
    Config,
    /// Inspect the permission rules.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
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
    Check {
        /// The command line, as one argument.
        command: String,
    },
}

/// Logs go to `<data dir>/logs/`, never to the terminal.
fn init_logging(data_dir: &std::path::Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(&dir, "rein.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
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

fn config_or_exit(flags: Flags) -> Result<Config, ExitCode> {
    match Config::load(flags) {
        Ok(c) => Ok(c),
        Err(ConfigError::Missing(msg)) => {
            eprintln!("rein: {msg}");
            Err(ExitCode::from(2))
        }
        Err(ConfigError::Invalid(msg)) => {
            eprintln!("rein: {msg}");
            Err(ExitCode::from(2))
        }
    }
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
        Some(id) if !id.is_empty() => rein::session_store::find(&config.data_dir, id)
            .map(SessionStart::Resume)
            .map_err(|e| e.to_string()),
        _ => Ok(SessionStart::New),
    }
}

fn lenient_config(flags: Flags) -> Result<Config, ExitCode> {
    Config::load_lenient(flags).map_err(|e| {
        eprintln!("rein: {e}");
        ExitCode::from(2)
    })
}

fn print_result(r: Result<String, String>) -> ExitCode {
    match r {
        Ok(text) => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rein: {e}");
            ExitCode::from(1)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("rein: cannot start the async runtime: {e}");
            ExitCode::from(1)
        })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut flags = cli.model.flags();
    flags.mode = cli.mode.clone();
    match cli.command {
        Some(Command::Config) => match Config::load_lenient(flags) {
            Ok(c) => {
                print!("{}", c.describe());
                // What the kernel really enforces, not just what is configured.
                let sandbox = rein::sandbox::Sandbox::new(
                    c.sandbox,
                    c.sandbox_network,
                    c.cwd.clone(),
                    std::env::temp_dir(),
                );
                println!("{:<22} {}", "sandbox in force", sandbox.describe());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("rein: {e}");
                ExitCode::from(2)
            }
        },
        Some(Command::Policy {
            command: PolicyCommand::Check { command },
        }) => {
            let config = match Config::load_lenient(flags) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("rein: {e}");
                    return ExitCode::from(2);
                }
            };
            let policy = rein::policy::Policy::new(config.rules.clone(), config.auto_approve_edits);
            let verdict = policy.check_bash(&command);
            println!("{}", rein::policy::explain(&verdict));
            ExitCode::SUCCESS
        }
        Some(Command::Exec {
            json,
            yes,
            continue_,
            resume,
            mode,
            prompt,
        }) => {
            flags.mode = mode;
            let config = match config_or_exit(flags) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let _guard = init_logging(&config.data_dir);
            let session = match session_start(&config, continue_, resume.as_deref()) {
                Ok(s) => s,
                Err(msg) => {
                    eprintln!("rein: {msg}");
                    return ExitCode::from(2);
                }
            };
            let prompt = match read_prompt(prompt) {
                Ok(p) => p,
                Err(msg) => {
                    eprintln!("rein: {msg}");
                    return ExitCode::from(2);
                }
            };
            let rt = match runtime() {
                Ok(rt) => rt,
                Err(code) => return code,
            };
            let code = rt.block_on(rein::exec::run(
                config,
                rein::exec::ExecOptions {
                    json,
                    yes,
                    prompt,
                    session,
                },
            ));
            // Don't wait for stray blocking work (e.g. a stdin reader) on the way out.
            rt.shutdown_timeout(std::time::Duration::from_millis(200));
            ExitCode::from(code as u8)
        }
        Some(Command::Sessions { command }) => {
            let config = match lenient_config(flags) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let data = &config.data_dir;
            match command {
                SessionsCommand::List { all, json } => {
                    print_result(Ok(rein::session_cli::list(data, &config.cwd, all, json)))
                }
                SessionsCommand::Show { id } => print_result(rein::session_cli::export(
                    data,
                    &id,
                    rein::session_cli::Format::Markdown,
                )),
                SessionsCommand::Export { id, format } => {
                    print_result(rein::session_cli::export(data, &id, format))
                }
                SessionsCommand::Rm { id, yes } => {
                    print_result(rein::session_cli::remove(data, &id, yes))
                }
            }
        }
        Some(Command::Sandbox { argv }) => {
            let config = match lenient_config(flags) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let temp = std::env::temp_dir()
                .join(format!("rein-sandbox-{}", rein::agent::new_session_id()));
            if let Err(e) = std::fs::create_dir_all(&temp) {
                eprintln!("rein: cannot create {}: {e}", temp.display());
                return ExitCode::from(1);
            }
            let sandbox = rein::sandbox::Sandbox::new(
                config.sandbox,
                config.sandbox_network,
                config.cwd.clone(),
                temp.clone(),
            );
            eprintln!("rein: sandbox {}", sandbox.describe());
            let code = match rein::sandbox::run_sandboxed(&sandbox, &argv) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!(
                        "rein: cannot run {}: {e}",
                        argv.first().map_or("", String::as_str)
                    );
                    127
                }
            };
            let _ = std::fs::remove_dir_all(&temp);
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        None => run_tui(flags, cli.continue_, cli.resume),
    }
}

/// No model configured: offer a local OpenAI-compatible server if one answers, else say what
/// to set. Returns the settings to use, or the exit code.
fn first_run(flags: &Flags, missing: String) -> Result<Config, ExitCode> {
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
            return Config::load(flags).map_err(|e| {
                eprintln!("rein: {e}");
                ExitCode::from(2)
            });
        }
    }
    if let Err(e) = rein::tui::show_setup_error(&missing) {
        eprintln!("rein: {missing}\n({e})");
    }
    Err(ExitCode::from(2))
}

fn run_tui(flags: Flags, continue_: bool, resume: Option<String>) -> ExitCode {
    let config = match Config::load(flags.clone()) {
        Ok(c) => c,
        Err(ConfigError::Missing(msg)) => match first_run(&flags, msg) {
            Ok(c) => c,
            Err(code) => return code,
        },
        Err(ConfigError::Invalid(msg)) => {
            eprintln!("rein: {msg}");
            return ExitCode::from(2);
        }
    };
    let _guard = init_logging(&config.data_dir);
    let session = if resume.as_deref() == Some("") {
        // `--resume` without an id: pick one full-screen; Esc leaves without starting.
        match rein::tui::pick_session(&config.data_dir, &config.cwd) {
            Ok(Some(path)) => SessionStart::Resume(path),
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rein: {e:#}");
                return ExitCode::from(1);
            }
        }
    } else {
        match session_start(&config, continue_, resume.as_deref()) {
            Ok(s) => s,
            Err(msg) => {
                eprintln!("rein: {msg}");
                return ExitCode::from(2);
            }
        }
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let opts = rein::tui::UiOptions {
        theme: config.theme.clone(),
        config_dir: config.config_dir.clone(),
        data_dir: config.data_dir.clone(),
    };
    let result = rt.block_on(async move {
        let mut agent_opts = rein::agent::AgentOptions::new(config, Approver::Interactive);
        agent_opts.session = session;
        let handle = rein::agent::spawn(agent_opts)?;
        rein::tui::run(opts, handle.ops, handle.events).await
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(300));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rein: {e:#}");
            ExitCode::from(1)
        }
    }
}
