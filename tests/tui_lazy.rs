//! Syntax highlighting loads lazily: not for the first frame, only for the first code.
//! (Its own test binary, so no other test has loaded it already.)

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein::protocol::Event;
use rein::tui::app::App;
use rein::tui::theme::Theme;
use rein::tui::view::{self, highlight};
use std::time::Instant;

#[test]
fn syntaxes_load_on_the_first_code_block_not_before() {
    let mut app = App::new(Theme::dark(), Vec::new(), None, Instant::now());
    let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    app.on_agent_event(Event::AssistantMessage {
        text: "Plain **markdown** with `inline code` only.".into(),
    });
    term.draw(|f| view::draw(f, &mut app)).expect("draw");
    assert!(
        !highlight::is_loaded(),
        "the first frame needs no syntax set"
    );

    app.on_agent_event(Event::AssistantMessage {
        text: "```rust\nfn main() {}\n```".into(),
    });
    term.draw(|f| view::draw(f, &mut app)).expect("draw");
    assert!(highlight::is_loaded());
}
