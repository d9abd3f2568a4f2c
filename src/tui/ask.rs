//! The yes/no questions asked full-screen before the app starts (trust a project, use a local
//! model). The message scrolls under the pinned question and keys, and a yes counts only once
//! all of the message has been on screen: no one approves what they could not see.

use crate::tui::theme::Theme;
use crate::tui::view::{Dialog, DialogScroll, draw_dialog};
use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Clear, Widget};

/// Rows one turn of the mouse wheel scrolls (at most a page, so it skips nothing).
const WHEEL_ROWS: i64 = 3;

/// A yes/no question.
#[derive(Clone, Debug, Default)]
pub struct Question {
    /// On the dialog's border.
    pub title: String,
    /// What the question is about; it scrolls when it does not fit.
    pub message: String,
    /// The question itself and its keys, pinned under the message.
    pub keys: String,
    /// Whether Enter answers yes (it never does for trust: a reflex must not approve).
    pub enter_is_yes: bool,
    /// Said when yes comes before the whole message has been on screen.
    pub unseen: String,
}

/// A question being asked: where its message is scrolled, and whether a yes came too early.
#[derive(Clone, Debug)]
pub struct Asking {
    question: Question,
    scroll: DialogScroll,
    early_yes: bool,
}

impl Asking {
    /// Starts asking `question`, scrolled to the top.
    pub fn new(question: Question) -> Asking {
        Asking {
            question,
            scroll: DialogScroll::default(),
            early_yes: false,
        }
    }

    /// Draws the question over `area`; what it shows counts as seen.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let noted = self.draw(area, buf, theme);
        if noted && self.scroll.all_seen() {
            // This very frame showed the rest: the note no longer holds, so it goes at once.
            Clear.render(area, buf);
            self.draw(area, buf, theme);
        }
    }

    /// Draws the dialog once; whether it carried the "scroll first" note.
    fn draw(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) -> bool {
        let note = (self.early_yes && !self.scroll.all_seen()).then_some(&self.question.unseen);
        let noted = note.is_some();
        let dialog = Dialog {
            title: &self.question.title,
            message: &self.question.message,
            footer: Some(&self.question.keys),
            note: note.map(String::as_str),
        };
        draw_dialog(area, buf, &dialog, &mut self.scroll, theme);
        noted
    }

    /// The answer `ev` gives: yes, no, or `None` while the question stays (a scroll, or a
    /// yes before everything was on screen, which says so instead).
    pub fn on_event(&mut self, ev: &Event) -> Option<bool> {
        let Event::Key(k) = ev else {
            scroll_event(&mut self.scroll, ev);
            return None;
        };
        if k.kind == KeyEventKind::Release {
            return None;
        }
        let yes = match k.code {
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                return Some(false);
            }
            KeyCode::Char('y' | 'Y') => true,
            KeyCode::Enter => self.question.enter_is_yes,
            KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => return Some(false),
            _ => false,
        };
        if !yes {
            scroll_event(&mut self.scroll, ev);
            return None;
        }
        if self.scroll.all_seen() {
            return Some(true);
        }
        self.early_yes = true;
        None
    }

    /// Where the message is scrolled to.
    pub fn scroll(&self) -> &DialogScroll {
        &self.scroll
    }
}

/// Scrolls `scroll` when `ev` is a scrolling key (↑↓ j k, PgUp PgDn space, Home) or the
/// mouse wheel; whether it was one. There is no End: a jump would skip rows unread.
pub fn scroll_event(scroll: &mut DialogScroll, ev: &Event) -> bool {
    let page = scroll.page();
    let by = match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => match k.code {
            KeyCode::Up | KeyCode::Char('k') => -1,
            KeyCode::Down | KeyCode::Char('j') => 1,
            KeyCode::PageUp => -page,
            KeyCode::PageDown | KeyCode::Char(' ') => page,
            KeyCode::Home => i64::MIN / 2,
            _ => return false,
        },
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => -WHEEL_ROWS.min(page),
            MouseEventKind::ScrollDown => WHEEL_ROWS.min(page),
            _ => return false,
        },
        _ => return false,
    };
    scroll.scroll_by(by);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEvent;

    fn key(code: KeyCode) -> Event {
        Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn question(items: usize, enter_is_yes: bool) -> Question {
        let mut message = String::from("The project asks for:\n");
        for i in 1..=items {
            message.push_str(&format!("\n  • item {i}"));
        }
        Question {
            title: "Trust this project?".into(),
            message,
            keys: "[y] trust   [n] ignore".into(),
            enter_is_yes,
            unseen: "Scroll through all items first.".into(),
        }
    }

    fn frame(a: &mut Asking, w: u16, h: u16) -> String {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        a.render(area, &mut buf, &Theme::dark());
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>() + "\n")
            .collect()
    }

    #[test]
    fn yes_counts_only_once_every_item_was_on_screen() {
        let mut a = Asking::new(question(50, false));
        let screen = frame(&mut a, 80, 20);
        assert!(screen.contains("more lines"), "{screen}");
        assert_eq!(a.on_event(&key(KeyCode::Char('y'))), None);
        let screen = frame(&mut a, 80, 20);
        assert!(
            screen.contains("Scroll through all items first."),
            "{screen}"
        );
        assert!(
            !screen.contains("item 50"),
            "a yes does not scroll: {screen}"
        );
        let mut screen = String::new();
        while a.scroll().hidden_below() > 0 {
            assert_eq!(a.on_event(&key(KeyCode::PageDown)), None);
            screen = frame(&mut a, 80, 20);
        }
        assert!(screen.contains("item 50"), "{screen}");
        assert!(
            !screen.contains("Scroll through"),
            "the note goes with the frame that shows the end: {screen}"
        );
        assert_eq!(a.on_event(&key(KeyCode::Char('y'))), Some(true));
    }

    #[test]
    fn a_short_question_takes_yes_at_once_and_no_always() {
        let mut a = Asking::new(question(2, true));
        assert_eq!(
            a.on_event(&key(KeyCode::Char('y'))),
            None,
            "nothing was drawn yet"
        );
        frame(&mut a, 80, 20);
        assert_eq!(a.on_event(&key(KeyCode::Enter)), Some(true));
        let mut a = Asking::new(question(50, false));
        frame(&mut a, 80, 20);
        assert_eq!(a.on_event(&key(KeyCode::Enter)), None);
        assert_eq!(a.on_event(&key(KeyCode::Esc)), Some(false));
        let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(a.on_event(&ctrl_c), Some(false));
    }

    #[test]
    fn the_wheel_and_j_k_scroll_one_step_at_a_time() {
        let mut a = Asking::new(question(50, false));
        frame(&mut a, 80, 20);
        a.on_event(&key(KeyCode::Char('j')));
        assert_eq!(a.scroll().view.offset, 1);
        a.on_event(&key(KeyCode::Char('k')));
        let wheel = Event::Mouse(crossterm::event::MouseEvent {
            kind: MouseEventKind::ScrollDown,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        });
        a.on_event(&wheel);
        assert_eq!(a.scroll().view.offset, WHEEL_ROWS as usize);
    }
}
