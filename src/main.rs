//! The `rein` command.

use clap::{Args, Parser, Subcommand};
use rein::config::{Config, ConfigError, Flags};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// rein: a terminal coding agent.
#[derive(Parser, Debug)]
#[command(name = "rein", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    model: ModelFlags,
    #[command(subcommand)]
    command: Option<Command>,
}

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
        /// The prompt; `-` or nothing reads it from stdin.
        prompt: Option<String>,
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
    let flags = cli.model.flags();
    match cli.command {
        Some(Command::Config) => match Config::load_lenient(flags) {
            Ok(c) => {
                print!("{}", c.describe());
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
        Some(Command::Exec { json, yes, prompt }) => {
            let config = match config_or_exit(flags) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let _guard = init_logging(&config.data_dir);
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
                rein::exec::ExecOptions { json, yes, prompt },
            ));
            // Don't wait for stray blocking work (e.g. a stdin reader) on the way out.
            rt.shutdown_timeout(std::time::Duration::from_millis(200));
            ExitCode::from(code as u8)
        }
        None => {
            eprintln!(
                "rein: the full-screen interface is not available in this build yet; use `rein exec PROMPT`."
            );
            ExitCode::from(2)
        }
    }
}
