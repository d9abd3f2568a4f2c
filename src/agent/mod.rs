//! The agent core: the op loop and the turn loop. Knows nothing about terminals.
//!
//! [`spawn`] starts the agent task and returns the two channel ends a front end needs. A small
//! router task reads ops so that interrupts and approvals are handled while a turn runs.

mod aids;
mod attach;
pub mod budget;
pub mod code_blocks;
mod commands;
pub mod compact;
pub mod context;
pub mod dispatch;
mod flow_ops;
mod hook_turn;
pub mod journal;
pub mod listing;
pub mod loop_guard;
mod mcp_tools;
pub mod mode;
mod net_ask;
mod private_temp;
pub mod prompt;
pub mod repair;
mod repeating;
mod rewind;
mod session_switch;
mod shell;
pub mod subagent;
pub mod turn;

use crate::config::Config;
use crate::llm::{Client, ClientOptions, Message};
use crate::policy::Policy;
use crate::protocol::EventSink;
use crate::protocol::{Event, Op, SessionInfo, Todo, TurnOutcome};
use crate::sandbox::Sandbox;
use crate::tools::{Registry, ToolCtx};
use dispatch::{Approver, Dispatcher, PendingApprovals};
use private_temp::PrivateTemp;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;
use turn::{LoopConfig, LoopEnd, TurnEnv};

/// How to start an agent.
pub struct AgentOptions {
    /// Effective settings.
    pub config: Config,
    /// How permission questions are answered.
    pub approver: Approver,
    /// The tools (normally [`Registry::builtin`]).
    pub registry: Registry,
    /// New, resumed or unsaved session.
    pub session: journal::SessionStart,
    /// Wait for MCP servers to start before a turn's first request (headless runs, where
    /// nobody would see the tools arrive later).
    pub mcp_wait: bool,
    /// Start MCP servers only once the front end sends [`Op::SessionShown`] (or a turn needs
    /// them), so the first frame never shares the CPU with their start (the TUI).
    pub servers_after_shown: bool,
}

impl AgentOptions {
    /// Options with the built-in tools.
    pub fn new(config: Config, approver: Approver) -> AgentOptions {
        AgentOptions {
            config,
            approver,
            registry: Registry::builtin(),
            session: journal::SessionStart::New,
            mcp_wait: false,
            servers_after_shown: false,
        }
    }
}

/// How long after the TUI's first frame MCP servers start (unless a turn needs them sooner).
const PAINT_SETTLE: std::time::Duration = std::time::Duration::from_millis(150);

/// The front end's ends of the two channels.
pub struct AgentHandle {
    /// Send operations here.
    pub ops: UnboundedSender<Op>,
    /// Receive events here.
    pub events: UnboundedReceiver<Event>,
}

/// A fresh session id: 12 random hex digits.
pub fn new_session_id() -> String {
    let n: u64 = rand::random();
    format!("{:012x}", n & 0xffff_ffff_ffff)
}

/// Starts the agent task (must be called inside a tokio runtime). Returns at once: the
/// agent is built off the async threads (HTTP client, sandbox probe, reading a resumed
/// session), so a front end can draw its first frame meanwhile. If it cannot be built, an
/// error notice (`Event::error`) saying why is sent and the event channel closes.
pub fn spawn(opts: AgentOptions) -> anyhow::Result<AgentHandle> {
    let (ops_tx, ops_rx) = unbounded_channel();
    let (ev_tx, ev_rx) = unbounded_channel();
    let events = EventSink::new(ev_tx);
    tokio::spawn(async move {
        let sink = events.clone();
        match tokio::task::spawn_blocking(move || Agent::new(opts, sink)).await {
            Ok(Ok(agent)) => agent.run(ops_rx).await,
            Ok(Err(e)) => events.send(Event::error(format!("cannot start: {e:#}"))),
            Err(e) => events.send(Event::error(format!("cannot start: {e}"))),
        }
    });
    Ok(AgentHandle {
        ops: ops_tx,
        events: ev_rx,
    })
}

struct Agent {
    config: Config,
    client: Client,
    model: Arc<RwLock<String>>,
    /// The approval mode; the router is its only writer.
    mode: mode::ModeSwitch,
    dispatcher: Arc<Dispatcher>,
    pending: PendingApprovals,
    history: Vec<Message>,
    /// The todo list; only write_todos results (through the turn hooks) and session switches
    /// change it.
    todos: Vec<Todo>,
    events: EventSink,
    session_id: String,
    temp_dir: PrivateTemp,
    sandbox: Arc<Sandbox>,
    cancel: Arc<Mutex<CancellationToken>>,
    system: String,
    instructions: String,
    context: budget::ContextState,
    subagents: Arc<subagent::Subagents>,
    skills: Arc<crate::skills::SkillCatalog>,
    /// The custom slash commands (`src/commands.rs`).
    commands: Arc<crate::commands::CommandCatalog>,
    /// The `AGENTS.md` files in the system prompt (for `/memory`).
    memory: Arc<Vec<prompt::Instructions>>,
    secrets: Arc<crate::tools::secrets::Secrets>,
    journal: journal::Journal,
    /// The past conversation to show when the session was resumed.
    resumed_view: Vec<Event>,
    /// Notices from loading a resumed session.
    resume_notices: Vec<String>,
    /// What each turn changed in the workspace, for `/rewind` and `/undo`.
    checkpoints: crate::checkpoint::Checkpoints,
    /// The MCP servers (started after the session is announced).
    mcp: crate::mcp::McpManager,
    mcp_wait: bool,
    /// MCP servers wait for [`Op::SessionShown`] or the first turn.
    servers_after_shown: bool,
    /// What the model read or wrote in this conversation (edits need it).
    reads: Arc<crate::tools::read_ledger::ReadLedger>,
    /// A saved session starts the checkpoints' first scan once it is announced.
    first_scan_pending: bool,
    /// The hooks in force (the dispatchers share them).
    hooks: Arc<crate::hooks::Hooks>,
    /// Context hooks added (`SessionStart`) that rides with the next user message.
    hook_context: Vec<String>,
    /// The model that answered an image with "not supported" (`attach.rs`): it gets none again.
    images_refused: Option<String>,
}

/// The session's sandbox; in an interactive session its network proxy asks the person about
/// hosts not on the list (headless runs have nobody to ask: such a host is refused).
fn sandbox_for(
    config: &Config,
    temp_dir: &std::path::Path,
    approver: Approver,
    events: &EventSink,
    pending: &PendingApprovals,
) -> Arc<Sandbox> {
    let mut sandbox = Sandbox::new_with_secrets(
        config.sandbox,
        config.sandbox_network,
        config.cwd.clone(),
        temp_dir.to_path_buf(),
        config.secrets(),
    );
    if let Some(proxy) = crate::netproxy::NetProxy::from_config(config) {
        sandbox = sandbox.with_network_proxy(proxy);
    }
    let sandbox = Arc::new(sandbox);
    if let (Approver::Interactive, Some(proxy)) = (approver, sandbox.network_proxy()) {
        proxy.set_asker(Arc::new(net_ask::NetAsker {
            events: events.clone(),
            pending: pending.clone(),
            cwd: config.cwd.clone(),
            config_file: config.config_dir.join("config.toml"),
            next: Default::default(),
        }));
    }
    sandbox
}

/// The subagents' runner: the session's client and model, at most 4 at once.
fn subagents_for(
    config: &Config,
    client: &Client,
    model: &Arc<RwLock<String>>,
    dispatcher: Arc<Dispatcher>,
    journal: &journal::Journal,
) -> Arc<subagent::Subagents> {
    let mut system = prompt::subagent_prompt(&config.cwd);
    // A small model's subagent guessed paths (`…/src`) it would have seen in the list.
    if config.small_model.files {
        system.push_str(&aids::file_list(&config.cwd));
    }
    Arc::new(subagent::Subagents {
        client: client.clone(),
        model: model.clone(),
        dispatcher,
        system,
        max_requests: config.subagent_max_requests,
        max_tokens: config.max_output_tokens,
        keep_tool_results: config.keep_tool_results,
        slots: Arc::new(tokio::sync::Semaphore::new(4)),
        journal: journal.clone(),
        aids: crate::config::ModelAids {
            first_call: config.small_model.first_call,
            tools: config.small_model.tools,
            ..Default::default()
        },
    })
}

/// The skills and the custom slash commands this session offers.
fn catalogs_for(
    config: &Config,
) -> (
    Arc<crate::skills::SkillCatalog>,
    Arc<crate::commands::CommandCatalog>,
) {
    let skills = crate::skills::discover(config.home_dir.as_deref(), &config.cwd);
    let commands = crate::commands::discover(
        config.home_dir.as_deref(),
        &config.config_dir,
        &config.cwd,
        &config.trust,
    );
    (Arc::new(skills), Arc::new(commands))
}

/// The hooks in force (`waiting`: how many hook settings wait for the project's trust).
fn hooks_for(config: &Config, sandbox: &Arc<Sandbox>) -> Arc<crate::hooks::Hooks> {
    let waiting = config
        .ignored
        .iter()
        .filter(|i| i.key.starts_with("hooks") && i.trust.is_some())
        .count();
    Arc::new(crate::hooks::Hooks::new(
        config.hooks.clone(),
        sandbox.clone(),
        waiting,
    ))
}

/// The secret values no result may carry, which the checkpoints also never keep.
fn secrets_for(
    config: &Config,
    sandbox: &Sandbox,
    checkpoints: &crate::checkpoint::Checkpoints,
) -> Arc<crate::tools::secrets::Secrets> {
    let secrets = Arc::new(crate::tools::secrets::Secrets::new(
        sandbox.secrets(),
        config.api_key.as_deref(),
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    ));
    let found = secrets.clone();
    checkpoints.withhold(crate::checkpoint::Withhold(Arc::new(move |b| {
        found.found_in(b)
    })));
    secrets
}

/// The system prompt (with the skills and, for a small model, the file list), the
/// `AGENTS.md` files and their rendering for the first message, and the context's fixed
/// overhead.
fn prompts_for(
    config: &Config,
    skills: &crate::skills::SkillCatalog,
    registry: &Registry,
) -> (
    String,
    Arc<Vec<prompt::Instructions>>,
    String,
    budget::ContextState,
) {
    let instructions = prompt::load_agents_md(&config.cwd, config.home_dir.as_deref());
    let mut system = prompt::system_prompt(&config.cwd, &instructions, &skills.prompt_block());
    if config.small_model.files {
        system.push_str(&aids::file_list(&config.cwd));
    }
    let tool_specs = serde_json::to_string(&registry.specs(None)).unwrap_or_default();
    let context_state = budget::ContextState {
        overhead: context::estimate_text(&system) + context::estimate_text(&tool_specs),
        ..Default::default()
    };
    let memory = Arc::new(instructions);
    let rendered = prompt::render_instructions(&memory);
    (system, memory, rendered, context_state)
}

/// What the main loop's and the subagents' dispatchers share: the rules, approvals, mode,
/// journal, checkpoints and hooks.
struct DispatchShared {
    policy: Arc<RwLock<Policy>>,
    approver: Approver,
    pending: PendingApprovals,
    journal: journal::Journal,
    mode: mode::ModeSwitch,
    checkpoints: crate::checkpoint::Checkpoints,
    hooks: Option<Arc<crate::hooks::Hooks>>,
}

impl DispatchShared {
    /// The main loop's dispatcher and the subagents', each with its tools and MCP servers.
    fn dispatchers(
        self,
        registry: Registry,
        skills: &crate::skills::SkillCatalog,
        mcp: &crate::mcp::McpManager,
    ) -> (Arc<Dispatcher>, Arc<Dispatcher>) {
        // read_skill is only offered when there is a skill to read.
        let offered = |names: Vec<&str>| -> Vec<String> {
            names
                .into_iter()
                .filter(|n| *n != "read_skill" || !skills.skills.is_empty())
                .map(str::to_string)
                .collect()
        };
        // A small model's requests leave `task` out unless the person names it (turn.rs).
        let main_tools = offered(registry.names());
        let sub_tools = offered(subagent::SUBAGENT_TOOLS.to_vec());
        let dispatcher_for = |registry: Registry, allow: Vec<String>, subagent: bool| Dispatcher {
            registry,
            allow: Some(allow),
            policy: self.policy.clone(),
            approver: self.approver,
            pending: self.pending.clone(),
            journal: self.journal.clone(),
            mode: self.mode.clone(),
            checkpoints: Some(self.checkpoints.clone()),
            extra: mcp_tools::source(mcp, subagent),
            hooks: self.hooks.clone(),
        };
        let main = Arc::new(dispatcher_for(registry.clone(), main_tools, false));
        let sub = Arc::new(dispatcher_for(registry, sub_tools, true));
        (main, sub)
    }
}

fn client_options(config: &Config) -> ClientOptions {
    ClientOptions {
        kind: config.provider,
        base_url: config.base_url.clone(),
        api_key: config.api_key.clone(),
        connect_timeout: config.connect_timeout,
        first_byte_timeout: config.first_byte_timeout,
        idle_timeout: config.idle_timeout,
        max_attempts: config.max_attempts,
        initial_backoff: config.retry_backoff,
        max_backoff: std::time::Duration::from_secs(30),
        reasoning: config.reasoning.clone(),
    }
}

/// The workspace's checkpoints, kept next to the session file of a saved session; rein's own
/// files are never part of them.
fn checkpoints_for(
    config: &Config,
    temp_dir: &std::path::Path,
    opened: &session_switch::Opened,
) -> crate::checkpoint::Checkpoints {
    let checkpoints = crate::checkpoint::Checkpoints::new(
        &config.cwd,
        vec![config.data_dir.clone(), temp_dir.to_path_buf()],
        crate::checkpoint::Caps::default(),
    );
    if let Some(path) = opened.journal.path() {
        checkpoints.switch(
            Some(crate::checkpoint::dir_for(&path)),
            opened.rewind.clone(),
        );
    }
    checkpoints
}

impl Agent {
    fn new(opts: AgentOptions, events: EventSink) -> anyhow::Result<Agent> {
        let mut config = opts.config;
        // The server's window is asked beside the setup that does not need it. Built on a
        // blocking thread of the runtime (see `spawn`), so it may wait for the answer here.
        let rt = tokio::runtime::Handle::try_current().ok();
        let window = rt
            .as_ref()
            .zip(crate::discover::ask_server_window(&config))
            .map(|(rt, ask)| rt.spawn(ask));
        let temp_dir = PrivateTemp::create_in(&std::env::temp_dir())?;
        private_temp::sweep_abandoned(&std::env::temp_dir());
        let pending: PendingApprovals = Arc::default();
        let sandbox = sandbox_for(&config, &temp_dir, opts.approver, &events, &pending);
        let (skills, commands) = catalogs_for(&config);
        if let (Some(rt), Some(window)) = (&rt, window) {
            let answer = rt.block_on(window).ok().flatten();
            crate::discover::apply_server_window(&mut config, answer);
        }
        let client = Client::new(client_options(&config))?;
        let saved = !matches!(opts.session, journal::SessionStart::Ephemeral);
        let opened = session_switch::open(&config, opts.session, events.clone())?;
        let journal = opened.journal.clone();
        let checkpoints = checkpoints_for(&config, &temp_dir, &opened);
        // A resumed session never starts more permissive than the config says.
        let mode =
            mode::ModeSwitch::new(opened.mode.map_or(config.mode, |m| m.at_most(config.mode)));
        let hooks = hooks_for(&config, &sandbox);
        let mcp = mcp_tools::manager(&config, events.clone());
        let shared = DispatchShared {
            // Edits inside the workspace are allowed by the accept-edits mode, not the policy.
            policy: Arc::new(RwLock::new(
                Policy::new(config.rules.clone(), false)
                    .with_confinement(sandbox.status().confinement())
                    .with_workspace(config.cwd.clone()),
            )),
            approver: opts.approver,
            pending: pending.clone(),
            journal: journal.clone(),
            mode: mode.clone(),
            checkpoints: checkpoints.clone(),
            hooks: (!config.hooks.is_empty()).then(|| hooks.clone()),
        };
        let (dispatcher, sub_dispatcher) = shared.dispatchers(opts.registry, &skills, &mcp);
        let (system, memory, instructions, context_state) =
            prompts_for(&config, &skills, &dispatcher.registry);
        let model = Arc::new(RwLock::new(config.model.clone()));
        let subagents = subagents_for(&config, &client, &model, sub_dispatcher, &journal);
        let secrets = secrets_for(&config, &sandbox, &checkpoints);
        Ok(Agent {
            first_scan_pending: saved,
            model,
            mode,
            memory,
            secrets,
            subagents,
            skills,
            commands,
            client,
            dispatcher,
            pending,
            history: opened.messages,
            todos: opened.todos,
            events,
            session_id: opened.id,
            journal,
            resumed_view: opened.view,
            resume_notices: opened.notices,
            checkpoints,
            temp_dir,
            sandbox,
            cancel: Arc::new(Mutex::new(CancellationToken::new())),
            system,
            instructions,
            context: context_state,
            config,
            mcp,
            mcp_wait: opts.mcp_wait,
            servers_after_shown: opts.servers_after_shown,
            images_refused: None,
            reads: Arc::default(),
            hooks,
            hook_context: Vec::new(),
        })
    }

    fn session_info(&mut self) -> SessionInfo {
        SessionInfo {
            session_id: self.session_id.clone(),
            model: self.current_model(),
            provider: self.config.provider.as_str().into(),
            cwd: self.config.cwd.clone(),
            context_window: self.config.context_window,
            approval_mode: match self.dispatcher.approver {
                Approver::Interactive => "ask".into(),
                Approver::RefuseAll => "never (headless)".into(),
                Approver::ApproveAll => "yes (headless)".into(),
            },
            sandbox_mode: self.sandbox.describe(),
            mode: self.mode.get(),
            history: std::mem::take(&mut self.resumed_view),
            keep_view: false,
        }
    }

    fn current_model(&self) -> String {
        crate::sync::read(&self.model).clone()
    }

    /// Reads ops; interrupts, approvals and model switches are handled at once, the rest is
    /// forwarded to the main loop in order.
    fn spawn_router(&self, mut ops: UnboundedReceiver<Op>) -> UnboundedReceiver<Op> {
        let (tx, rx) = unbounded_channel();
        let cancel = self.cancel.clone();
        let pending = self.pending.clone();
        let model = self.model.clone();
        let events = self.events.clone();
        let journal = self.journal.clone();
        let hooks = self.hooks.clone();
        let mcp = self.mcp.clone();
        let flow = flow_ops::FlowOps {
            mode: self.mode.clone(),
            policy: self.dispatcher.policy.clone(),
            client: self.client.clone(),
            journal: self.journal.clone(),
            events: self.events.clone(),
        };
        let listings = listing::Listings {
            skills: self.skills.clone(),
            memory: self.memory.clone(),
            data_dir: self.config.data_dir.clone(),
            cwd: self.config.cwd.clone(),
            events: self.events.clone(),
            mcp: self.mcp.clone(),
        };
        let cancel_current = move || {
            crate::sync::lock(&cancel).cancel();
        };
        tokio::spawn(async move {
            while let Some(op) = ops.recv().await {
                if listings.answer(&op) || flow.answer(&op) {
                    continue;
                }
                match op {
                    Op::Interrupt => cancel_current(),
                    Op::SessionShown => {
                        // The terminal paints the frame meanwhile: a server's start (node takes
                        // ~150 ms of CPU) would otherwise slow the very frame it waited for.
                        let mcp = mcp.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(PAINT_SETTLE).await;
                            mcp.start_all();
                        });
                    }
                    Op::ListHooks => events.send(Event::notice(hooks.describe())),
                    Op::Approval { id, decision, note } => {
                        let waiter = crate::sync::lock(&pending).remove(&id);
                        match waiter {
                            Some(w) => {
                                let _ = w.send((decision, note));
                            }
                            None => tracing::debug!("approval {id} has no waiting call"),
                        }
                    }
                    Op::SetModel { model: name } => {
                        *crate::sync::write(&model) = name.clone();
                        journal.record(crate::session_store::Entry::model_change(name.clone()));
                        events.send(Event::ModelChanged { model: name });
                    }
                    Op::Shutdown => {
                        cancel_current();
                        let _ = tx.send(Op::Shutdown);
                        return;
                    }
                    other => {
                        let _ = tx.send(other);
                    }
                }
            }
            // The front end is gone: stop whatever runs and end.
            cancel_current();
            let _ = tx.send(Op::Shutdown);
        });
        rx
    }

    async fn run(mut self, ops: UnboundedReceiver<Op>) {
        let mut ops = self.spawn_router(ops);
        let info = self.session_info();
        self.events.send(Event::SessionConfigured(info));
        if let Some(note) = self.sandbox.fallback_note() {
            self.events.send(Event::notice(note));
        }
        // After the session is announced, so its first event stays `session_configured`.
        if self.first_scan_pending {
            rewind::start_first_scan(&self.checkpoints, &self.config.data_dir, &self.events);
        }
        self.announce_resumed();
        self.announce_commands();
        // After the session is announced; a front end that draws asks for them once it has
        // (`Op::SessionShown`), so the first frame never shares the CPU with their start.
        if !self.servers_after_shown {
            self.mcp.start_all();
        }
        let source = if self.history.is_empty() {
            "startup"
        } else {
            "resume"
        };
        self.session_start_hooks(source).await;
        while let Some(op) = ops.recv().await {
            match op {
                Op::UserInput { text } => self.user_turn(text, None).await,
                Op::RunCommand { name, args } => self.command_turn(&name, &args).await,
                Op::Clear => {
                    self.clear();
                    self.session_start_hooks("clear").await;
                }
                Op::Rename { title } => self.rename(&title),
                Op::Fork => self.fork(),
                Op::Resume { id } => {
                    let before = self.session_id.clone();
                    self.switch_to(&id);
                    if self.session_id != before {
                        self.session_start_hooks("resume").await;
                    }
                }
                Op::Compact { focus } => self.compact_now(focus).await,
                Op::RunShell { command } => self.run_shell(command).await,
                Op::ListRewindPoints => self.rewind_points(),
                Op::Rewind {
                    to,
                    code,
                    conversation,
                    confirm,
                    overwrite_changed,
                } => {
                    self.rewind(to, code, conversation, confirm, overwrite_changed)
                        .await
                }
                Op::Undo => self.undo().await,
                Op::Shutdown => break,
                // Handled by the router as they arrive.
                Op::Interrupt
                | Op::Approval { .. }
                | Op::SetModel { .. }
                | Op::SetMode { .. }
                | Op::ListPermissions
                | Op::DropSessionRule { .. }
                | Op::ListModels
                | Op::ListSessions
                | Op::ListSkills
                | Op::ListMemory
                | Op::ListHooks
                | Op::McpStatus
                | Op::SessionShown => {}
            }
        }
        self.journal.close();
        self.mcp.shutdown().await;
        self.temp_dir.remove();
    }

    fn fresh_cancel_token(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *crate::sync::lock(&self.cancel) = token.clone();
        token
    }

    fn tool_ctx(&self, cancel: CancellationToken) -> ToolCtx {
        ToolCtx {
            workspace: self.config.cwd.clone(),
            home: self.config.home_dir.clone(),
            temp_dir: self.temp_dir.clone(),
            call_id: String::new(),
            events: self.events.clone(),
            cancel,
            sandbox: self.sandbox.clone(),
            bash_timeout_secs: self.config.bash_timeout_secs,
            // The variables the key is read from never reach tools' child processes.
            env_remove: crate::sandbox::secrets::KEY_VARIABLES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            subagents: Some(self.subagents.clone()),
            skills: self.skills.clone(),
            secrets: self.secrets.clone(),
            reads: self.reads.clone(),
            may_read: Some({
                let policy = self.dispatcher.policy.clone();
                Arc::new(move |path| {
                    crate::sync::read(&policy)
                        .check_path("read_file", false, path)
                        .action
                        == crate::policy::Action::Allow
                })
            }),
            refuse_fragments: self.config.small_model.code_blocks,
        }
    }

    fn used_tokens(&self) -> u64 {
        self.context.used(&self.history)
    }

    fn compactor(&self, cancel: CancellationToken) -> budget::Compactor {
        budget::Compactor {
            client: self.client.clone(),
            model: self.model.clone(),
            events: self.events.clone(),
            window: self.config.context_window,
            threshold: self.config.compact_threshold,
            auto: self.config.auto_compact,
            instructions: self.instructions.clone(),
            cancel,
        }
    }

    async fn compact_now(&mut self, focus: Option<String>) {
        if self.history.is_empty() {
            self.events.send(Event::notice("Nothing to compact yet."));
            return;
        }
        let cancel = self.fresh_cancel_token();
        let done = self
            .compactor(cancel)
            .compact(
                &mut self.history,
                &mut self.context,
                &self.todos,
                focus.as_deref(),
            )
            .await;
        if let Some(c) = done {
            self.journal.record(crate::session_store::Entry::compaction(
                c.summary,
                c.before,
                c.after,
                self.history.clone(),
            ));
            self.journal.sync();
        }
        self.events.send(Event::Usage {
            used_tokens: self.used_tokens(),
            context_window: self.config.context_window,
        });
    }

    /// A turn rein ended itself (a loop, the request cap): the person is told why and how to
    /// go on; the reason goes to the session file as the turn's error.
    fn stopped(&self, reason: String) -> TurnOutcome {
        let mut chars = reason.chars();
        let first = chars.next().map(|c| c.to_uppercase().to_string());
        self.events.send(Event::notice(format!(
            "{}{}. Send another message to let it continue.",
            first.unwrap_or_default(),
            chars.as_str()
        )));
        TurnOutcome::Failed { reason }
    }

    /// One turn for the person's message `text`; `shown` is the `/name args` it was expanded
    /// from, for the session file.
    async fn user_turn(&mut self, text: String, shown: Option<String>) {
        let cancel = self.fresh_cancel_token();
        // A message typed before the front end said it was shown still gets the servers.
        self.mcp.start_all();
        if self.mcp_wait {
            self.mcp.wait_started(&cancel).await;
        }
        self.events.send(Event::TurnStarted);
        // Images first: a message that cannot go as written comes back before anything runs.
        let images = match shown {
            Some(_) => Vec::new(),
            None => match self.images_for(&text) {
                Ok(images) => images,
                Err(reason) => return self.refuse_prompt(text, reason),
            },
        };
        self.reload_images();
        let context = match self.prompt_hooks(&text, &cancel).await {
            Ok(context) => context,
            Err(outcome) => {
                self.events.send(Event::TurnFinished { outcome });
                return;
            }
        };
        self.accept_message(text, shown, context, images);
        let lc = LoopConfig {
            system: self.system.clone(),
            max_requests: self.config.max_requests,
            keep_tool_results: Some(self.config.keep_tool_results),
            max_tokens: self.config.max_output_tokens,
            aids: self.config.small_model,
        };
        let env = TurnEnv {
            client: &self.client,
            model: &self.model,
            dispatcher: &self.dispatcher,
            ctx: self.tool_ctx(cancel),
            lc: &lc,
        };
        let compactor = self.compactor(env.ctx.cancel.clone());
        let journal = self.journal.clone();
        let mut record = move |r: budget::Record<'_>| session_switch::record(&journal, r);
        let mut hooks = budget::MainHooks {
            compactor,
            state: &mut self.context,
            todos: &mut self.todos,
            cwd: self.config.cwd.clone(),
            mode: self.mode.clone(),
            record: &mut record,
            interrupted_answer: None,
        };
        let transcript = self.journal.path();
        let mut stop_hook = hook_turn::StopHook::new(&self.hooks, transcript.as_deref());
        let end = loop {
            let end = env.run(&mut self.history, &mut hooks).await;
            match stop_hook
                .continue_with(&end, &self.events, &env.ctx.cancel)
                .await
            {
                Some(msg) => {
                    turn::TurnHooks::appended(&mut hooks, &msg);
                    self.history.push(msg);
                }
                None => break end,
            }
        };
        let partial = hooks.interrupted_answer.take();
        self.finish_turn(end, partial).await;
    }

    /// The message goes into the session file, the checkpoints (a point to rewind to) and the
    /// history, with the context hooks added and its images after it.
    fn accept_message(
        &mut self,
        text: String,
        shown: Option<String>,
        context: Option<String>,
        images: Vec<crate::images::Image>,
    ) {
        self.journal.record(match &shown {
            Some(line) => crate::session_store::Entry::user_command(text.clone(), line.clone()),
            None => crate::session_store::Entry::user(text.clone()),
        });
        if let Some(path) = self.journal.path() {
            self.checkpoints.attach(crate::checkpoint::dir_for(&path));
        }
        // A command's point is what the person typed: /rewind lists it and gives it back.
        self.checkpoints
            .user_message(shown.as_deref().unwrap_or(&text));
        let content = match context {
            Some(c) => format!("{text}\n\n{c}"),
            None => text,
        };
        self.history.push(Message::User { content });
        self.add_images(images);
        self.images_for_model();
    }

    /// How the turn ended, for the person, the session file and the checkpoints.
    async fn finish_turn(&mut self, end: LoopEnd, partial: Option<String>) {
        let outcome = match end {
            LoopEnd::Completed => TurnOutcome::Completed,
            LoopEnd::Interrupted => TurnOutcome::Interrupted,
            LoopEnd::Failed(reason) => TurnOutcome::Failed { reason },
            LoopEnd::RequestCap => {
                let cap = self.config.max_requests.unwrap_or_default();
                self.stopped(format!(
                    "reached the cap of {cap} model requests for one message (max_requests)"
                ))
            }
            LoopEnd::Looped(reason) => self.stopped(reason),
        };
        self.events.send(Event::Usage {
            used_tokens: self.used_tokens(),
            context_window: self.config.context_window,
        });
        match &outcome {
            TurnOutcome::Failed { reason } => {
                tracing::warn!("turn failed: {reason}");
                self.journal
                    .record(crate::session_store::Entry::error(reason.clone()));
            }
            TurnOutcome::Interrupted => self
                .journal
                .record(crate::session_store::Entry::interrupted_with(partial)),
            TurnOutcome::Completed => {}
        }
        self.after_image_refusal(&outcome);
        self.journal.sync();
        let checkpoints = self.checkpoints.clone();
        let _ = tokio::task::spawn_blocking(move || checkpoints.end_turn()).await;
        self.events.send(Event::TurnFinished { outcome });
    }
}
