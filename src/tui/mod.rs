//! The full-screen terminal front end.
//!
//! It consumes the agent's `Event`s and sends `Op`s; it never touches HTTP or tools. `run`
//! owns the terminal: one `select!` loop over terminal input, agent events, file listings,
//! signals and a frame timer that fires only when something changed (≤ 60 frames a second,
//! no wake-ups at all while idle).

pub mod app;
pub mod ask;
pub mod files;
pub mod history;
pub mod layers;
pub mod model;
pub mod notify;
pub mod outside;
pub mod sanitize;
pub mod terminal;
pub mod theme;
pub mod view;
pub mod wrap;

use crate::protocol::{Event, NoticeLevel, Op, SessionSummary};
use anyhow::Context;
use app::{App, Effect};
use crossterm::event::{EventStream, KeyEventKind};
use crossterm::{execute, queue};
use futures::StreamExt;
use layers::Layer;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{BufWriter, Stdout};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Minimum time between two frames (60 fps).
const FRAME: Duration = Duration::from_millis(16);
/// Agent events applied per loop turn before the loop looks at keys and the clock again.
const EVENT_BATCH: usize = 512;

/// What the TUI needs from the configuration.
#[derive(Clone, Debug, Default)]
pub struct UiOptions {
    /// Theme name: `dark`, `light`, or `<config_dir>/themes/<name>.toml`.
    pub theme: String,
    /// How to tell the person rein waits for them.
    pub notify: notify::NotifySettings,
    /// The workspace (the notify program runs outside it).
    pub workspace: PathBuf,
    /// The user config directory (for themes).
    pub config_dir: PathBuf,
    /// The data directory (the input history file lives here).
    pub data_dir: PathBuf,
    /// Shown as warnings before anything else (project settings ignored, old key names).
    pub notices: Vec<String>,
}

/// What the app knew when it closed.
#[derive(Clone, Debug, Default)]
pub struct UiExit {
    /// The session on screen at the end (empty when none was configured).
    pub session_id: String,
}

type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Runs the full-screen app until the person quits. Sends `Op::Shutdown` on the way out and
/// restores the terminal on every path.
#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
pub async fn run(
    opts: UiOptions,
    ops: UnboundedSender<Op>,
    mut events: UnboundedReceiver<Event>,
) -> anyhow::Result<UiExit> {
    let (theme, warning) = theme::Theme::load(&opts.theme, &opts.config_dir);
    let history_path = opts.data_dir.join("history.jsonl");
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    let mut app = App::new(theme, history::load(&history_path), home, Instant::now());
    if let Some(w) = warning {
        app.warn(w);
    }
    for notice in &opts.notices {
        app.warn(notice.clone());
    }
    let guard = terminal::enter().context("could not set up the terminal")?;
    let backend = CrosstermBackend::new(BufWriter::with_capacity(1 << 16, std::io::stdout()));
    let result = match Terminal::new(backend) {
        Ok(mut term) => {
            let paths = Paths {
                history: &history_path,
            };
            let mut notifier = notify::Notifier::new(opts.notify.clone(), opts.workspace.clone());
            let io = Io {
                ops: &ops,
                events: &mut events,
                notifier: &mut notifier,
            };
            event_loop(&mut app, &mut term, io, paths).await
        }
        Err(e) => Err(e.into()),
    };
    let _ = ops.send(Op::Shutdown);
    drop(guard);
    result.map(|()| UiExit {
        session_id: app.status.session_id.clone(),
    })
}

/// Where the run loop reads and writes.
#[derive(Clone, Copy)]
struct Paths<'a> {
    /// The input history file.
    history: &'a Path,
}

/// The loop's channels to the agent, and the notifier that watches them.
struct Io<'a> {
    ops: &'a UnboundedSender<Op>,
    events: &'a mut UnboundedReceiver<Event>,
    notifier: &'a mut notify::Notifier,
}

async fn event_loop(
    app: &mut App,
    term: &mut Term,
    io: Io<'_>,
    paths: Paths<'_>,
) -> anyhow::Result<()> {
    let Io {
        ops,
        events,
        notifier,
    } = io;
    let mut keys = EventStream::new();
    let (files_tx, mut files_rx) = unbounded_channel::<Vec<String>>();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut last_draw: Option<Instant> = None;
    let mut last_error: Option<String> = None;
    loop {
        if !terminal::is_active() {
            // A panic somewhere (another task) restored the terminal: drawing on would garble
            // the person's shell.
            anyhow::bail!("rein stopped after an internal error; see the log for details");
        }
        let now = Instant::now();
        app.set_now(now);
        let deadline = next_deadline(app, last_draw, now);
        let sleep_target = deadline.unwrap_or(now + Duration::from_secs(3600));
        tokio::select! {
            ev = keys.next() => match ev {
                Some(Ok(ev)) => {
                    app.set_now(Instant::now());
                    // A key press after a frame-free gap is drawn at once: typing feels instant.
                    if matches!(&ev, crossterm::event::Event::Key(k) if k.kind == KeyEventKind::Press) {
                        app.mark_dirty();
                    }
                    notifier.on_terminal_event(&ev);
                    app.on_terminal_event(ev);
                }
                Some(Err(e)) => return Err(anyhow::Error::new(e).context("reading the terminal failed")),
                None => return Ok(()),
            },
            ev = events.recv() => match ev {
                Some(ev) => apply_agent_events(app, term, notifier, events, ev, &mut last_error),
                // The agent could not start (or died): say why on the restored terminal.
                None => match last_error {
                    Some(message) => anyhow::bail!("{message}"),
                    None => anyhow::bail!("the agent stopped unexpectedly; see the log for why"),
                },
            },
            Some(files) = files_rx.recv() => app.set_files(files),
            _ = sigterm.recv() => return Ok(()),
            _ = sighup.recv() => return Ok(()),
            _ = sigint.recv() => return Ok(()),
            _ = tokio::time::sleep_until(sleep_target.into()), if deadline.is_some() => {
                on_wakeup(app, term, &mut last_draw)?;
            }
        }
        let looper = Looper {
            ops,
            files_tx: &files_tx,
            paths,
        };
        if run_effects(app, term, looper)? {
            return Ok(());
        }
    }
}

/// When the loop must wake up without input: the next frame (at most one per [`FRAME`]) if
/// something changed, or the app's own timer; `None` when idle.
fn next_deadline(app: &App, last_draw: Option<Instant>, now: Instant) -> Option<Instant> {
    let draw_at = app
        .is_dirty()
        .then(|| last_draw.map_or(now, |t| (t + FRAME).max(now)));
    match (draw_at, app.next_wakeup()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The timer fired: the app's clock moves on, and a frame is drawn if one is due.
fn on_wakeup(
    app: &mut App,
    term: &mut Term,
    last_draw: &mut Option<Instant>,
) -> anyhow::Result<()> {
    let now = Instant::now();
    app.set_now(now);
    app.on_tick();
    if app.is_dirty() && last_draw.is_none_or(|t| now >= t + FRAME) {
        draw(term, app)?;
        if last_draw.is_none() {
            // The first frame is on screen: load syntax highlighting off-thread.
            tokio::task::spawn_blocking(view::highlight::warm_up);
        }
        *last_draw = Some(now);
    }
    Ok(())
}

/// Applies `first` and the agent events already waiting behind it (at most [`EVENT_BATCH`]),
/// with the notifier's bell or OSC sequence for each; `last_error` keeps the last error
/// reported (why the agent stopped, if it does).
fn apply_agent_events(
    app: &mut App,
    term: &mut Term,
    notifier: &mut notify::Notifier,
    events: &mut UnboundedReceiver<Event>,
    first: Event,
    last_error: &mut Option<String>,
) {
    app.set_now(Instant::now());
    let mut next = Some(first);
    for _ in 0..=EVENT_BATCH {
        let Some(ev) = next.take().or_else(|| events.try_recv().ok()) else {
            break;
        };
        if let Event::Notice {
            level: NoticeLevel::Error,
            text,
        } = &ev
        {
            *last_error = Some(text.clone());
        }
        notify(term, notifier, &ev);
        app.on_agent_event(ev);
    }
}

/// What carrying out the app's effects needs from the loop.
struct Looper<'a> {
    ops: &'a UnboundedSender<Op>,
    files_tx: &'a UnboundedSender<Vec<String>>,
    paths: Paths<'a>,
}

/// Carries out what the app asked for since the last turn of the loop; true when it asked to
/// quit.
fn run_effects(app: &mut App, term: &mut Term, looper: Looper<'_>) -> anyhow::Result<bool> {
    let Looper {
        ops,
        files_tx,
        paths,
    } = looper;
    for effect in app.take_effects() {
        match effect {
            Effect::Op(op) => {
                if ops.send(op).is_err() {
                    anyhow::bail!("the agent stopped unexpectedly; see the log for why");
                }
            }
            Effect::SaveHistory(text) => {
                if let Err(e) = history::append(paths.history, &text) {
                    tracing::warn!("could not save the input history: {e}");
                }
            }
            Effect::Copy(text) => {
                // Written between frames; the terminal takes it as a clipboard request.
                if let Err(e) = terminal::copy_osc52(&text) {
                    tracing::warn!("clipboard write failed: {e}");
                }
            }
            Effect::IndexFiles(root) => {
                let tx = files_tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(files::index(&root));
                });
            }
            Effect::EditInEditor(text) => {
                let editor = outside::editor_command();
                let workspace = app.workspace();
                let result = outside_tui(term, || outside::edit(&text, &editor, &workspace))?;
                app.edited(result);
            }
            Effect::Suspend => {
                outside_tui(term, outside::stop_self)?;
                app.mark_dirty();
            }
            Effect::Quit => return Ok(true),
        }
    }
    Ok(false)
}

/// Leaves the full-screen mode, runs `f` with the terminal as the shell had it, and comes
/// back with a full redraw.
///
/// The key reader is kept, and it reads nothing meanwhile: `f` runs for a key the reader has
/// just returned, and its thread only reads the terminal again when the stream is next
/// polled. Replacing it lost keys: dropping a reader wakes crossterm's poller, and a key that
/// arrived before that wake-up was taken came in the same (edge-triggered) batch, which
/// crossterm abandons on a wake-up; the key then sat unread until the next one.
fn outside_tui<R>(term: &mut Term, f: impl FnOnce() -> R) -> anyhow::Result<R> {
    terminal::suspend();
    let result = f();
    terminal::resume().context("could not set up the terminal again")?;
    // The screen is cleared, and so is what ratatui believes is on it (a blank frame), so the
    // next frame is drawn whole. `Terminal::clear` would ask the terminal for the cursor
    // position, which some terminals never answer.
    execute!(
        term.backend_mut(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
    term.draw(|f| f.render_widget(ratatui::widgets::Clear, f.area()))?;
    Ok(result)
}

/// Draws one frame as a synchronized update, so the terminal shows it all at once.
/// Writes the notifier's bell or OSC sequence for `ev`, if any (rein's own fixed bytes).
fn notify(term: &mut Term, notifier: &mut notify::Notifier, ev: &Event) {
    use std::io::Write;
    let seq = notifier.on_agent_event(ev);
    if !seq.is_empty() {
        let out = term.backend_mut();
        let _ = out.write_all(seq.as_bytes()).and_then(|()| out.flush());
    }
}

fn draw(term: &mut Term, app: &mut App) -> anyhow::Result<()> {
    queue!(
        term.backend_mut(),
        crossterm::terminal::BeginSynchronizedUpdate
    )?;
    term.draw(|f| view::draw(f, app))?;
    execute!(
        term.backend_mut(),
        crossterm::terminal::EndSynchronizedUpdate
    )?;
    app.mark_drawn();
    Ok(())
}

/// The full-screen session picker of `rein --resume` (before the agent starts) over
/// `sessions`, those of the `here` directories first. Returns the chosen session file, or
/// `None` when the person leaves with Esc.
#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
pub fn pick_session(
    sessions: Vec<SessionSummary>,
    here: &[PathBuf],
) -> anyhow::Result<Option<PathBuf>> {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    let mut picker = layers::session_picker::SessionPicker::new(
        sessions,
        here,
        jiff::Timestamp::now(),
        home,
        None,
    );
    let guard = terminal::enter().context("could not set up the terminal")?;
    let result = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .map_err(anyhow::Error::from)
        .and_then(|mut term| {
            run_picker(&mut term, &mut picker, &theme::Theme::dark(), || {
                crossterm::event::read()
            })
        });
    drop(guard);
    result
}

/// Runs a session picker on `term` with events from `next` until the person opens a
/// session (its file) or leaves (`None`).
pub fn run_picker<B>(
    term: &mut Terminal<B>,
    picker: &mut layers::session_picker::SessionPicker,
    theme: &theme::Theme,
    mut next: impl FnMut() -> std::io::Result<crossterm::event::Event>,
) -> anyhow::Result<Option<PathBuf>>
where
    B: ratatui::backend::Backend,
    B::Error: Send + Sync + 'static,
{
    loop {
        term.draw(|f| {
            let area = f.area();
            picker.render(area, f.buffer_mut(), theme);
        })?;
        match picker.on_event(next()?) {
            layers::session_picker::PickerAction::Open(s) => return Ok(Some(s.path)),
            layers::session_picker::PickerAction::Close => return Ok(None),
            layers::session_picker::PickerAction::None => {}
        }
    }
}

/// Asks a yes/no question full-screen (first run: "use the local server found at …?").
/// `y` or Enter answer yes; `n`, Esc or `q` answer no.
pub fn confirm(title: &str, message: &str) -> anyhow::Result<bool> {
    ask_yes_no(ask::Question {
        title: title.to_string(),
        message: message.to_string(),
        keys: "[y] yes   [n] no".to_string(),
        enter_is_yes: true,
        unseen: "Scroll to the end first (↓, PgDn): then answer.".to_string(),
    })
}

/// Asks whether to trust the project at `project` with `items` (before the agent starts).
/// Only `y` trusts: Enter does not, so a reflex can't approve it.
pub fn ask_trust(project: &Path, items: &[crate::trust::TrustItem]) -> anyhow::Result<bool> {
    ask_yes_no(trust_question(project, items))
}

/// The trust question for `project` and `items`: the items scroll, the question and its keys
/// stay pinned under them, and `y` counts only after every item was on screen.
pub fn trust_question(project: &Path, items: &[crate::trust::TrustItem]) -> ask::Question {
    let mut text = format!(
        "{} asks for settings that decide where your requests and API key go, or programs \
         rein would start:\n",
        project.display()
    );
    for item in items {
        text.push_str(&format!("\n  • {}", item.summary));
    }
    text.push_str(
        "\n\nYes uses them from now on (you are asked again if they change). No ignores them \
         this time.",
    );
    let n = items.len();
    ask::Question {
        title: "Trust this project?".to_string(),
        message: text,
        keys: "Trust this project?   [y] trust and use them   [n] ignore them".to_string(),
        enter_is_yes: false,
        unseen: format!("Not trusted yet: scroll through all {n} items first (↓ PgDn)."),
    }
}

#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
fn ask_yes_no(question: ask::Question) -> anyhow::Result<bool> {
    let guard = terminal::enter().context("could not set up the terminal")?;
    let theme = theme::Theme::dark();
    let mut asking = ask::Asking::new(question);
    let result = (|| -> anyhow::Result<bool> {
        let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        loop {
            // Drawn before every key: a yes is judged by what the screen showed.
            term.draw(|f| {
                let area = f.area();
                asking.render(area, f.buffer_mut(), &theme);
            })?;
            if let Some(answer) = asking.on_event(&crossterm::event::read()?) {
                return Ok(answer);
            }
        }
    })();
    drop(guard);
    result
}

/// Shows a full-screen "what to set" message (no model configured) and returns when the
/// person presses a key: `true` for L (run the local model, `rein --local`), else `false`.
/// A message taller than the screen scrolls with the arrow and page keys.
#[allow(clippy::disallowed_methods)] // The TUI's own backend: sanitized cells, its own escapes.
pub fn show_setup_error(title: &str, message: &str) -> anyhow::Result<bool> {
    let guard = terminal::enter().context("could not set up the terminal")?;
    let theme = theme::Theme::dark();
    let mut scroll = view::DialogScroll::default();
    let result = (|| -> anyhow::Result<bool> {
        let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        loop {
            term.draw(|f| {
                let area = f.area();
                view::draw_setup_dialog(area, f.buffer_mut(), title, message, &mut scroll, &theme);
            })?;
            let ev = crossterm::event::read()?;
            // Only a message that does not fit takes scroll keys; otherwise any key answers.
            if scroll.overflows() && ask::scroll_event(&mut scroll, &ev) {
                continue;
            }
            match ev {
                crossterm::event::Event::Key(k) if k.kind != KeyEventKind::Release => {
                    let local = matches!(k.code, crossterm::event::KeyCode::Char('l' | 'L'));
                    return Ok(local);
                }
                crossterm::event::Event::Mouse(m)
                    if matches!(m.kind, crossterm::event::MouseEventKind::Down(_)) =>
                {
                    return Ok(false);
                }
                _ => {}
            }
        }
    })();
    drop(guard);
    result
}

#[cfg(test)]
mod layering_tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }

    /// The code of `dir` (test modules left out: they may name anything) that names one of
    /// `forbidden`, as `file: line`.
    fn naming(dir: &str, forbidden: &[&str]) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/tui")
            .join(dir);
        let mut files = Vec::new();
        sources(&root, &mut files);
        let mut found = Vec::new();
        for (path, text) in files {
            if path.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code
                .lines()
                .filter(|l| forbidden.iter().any(|f| l.contains(f)))
            {
                found.push(format!("{}: {}", path.display(), line.trim()));
            }
        }
        found
    }

    /// The rule docs/DESIGN.md states for the TUI's layers: they only point down, and the TUI
    /// speaks the protocol only.
    #[test]
    fn the_tui_layers_only_point_down() {
        let core = ["crate::agent", "crate::session_store", "crate::checkpoint"];
        assert_eq!(naming("", &core), Vec::<String>::new());
        let app = ["app::", "super::app", "crate::tui::app"];
        for dir in ["view", "layers", "model"] {
            assert_eq!(naming(dir, &app), Vec::<String>::new(), "{dir}");
        }
        for dir in ["view", "model"] {
            assert_eq!(naming(dir, &["layers::"]), Vec::<String>::new(), "{dir}");
        }
        assert_eq!(
            naming("model", &["ratatui", "crate::tui::view"]),
            Vec::<String>::new()
        );
    }
}
