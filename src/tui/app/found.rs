//! Showing the agent's listings: the session picker's list, `/skills` and `/memory`.

use super::App;
use crate::protocol::Instructions;
use crate::protocol::SessionSummary;
use crate::skills::SkillCatalog;
use crate::tui::layers::session_picker::SessionPicker;
use crate::tui::model::cell::CellKind;
use crate::tui::model::cell::{InfoLine, Run, Tone};
use crate::tui::wrap::{one_line, sanitize};
use std::path::Path;

/// Lines of one `AGENTS.md` shown by `/memory` before the rest is summarised.
const MEMORY_LINES: usize = 60;

impl App {
    /// Fills the open session picker (`Event::SessionsListed`).
    pub(super) fn sessions_listed(
        &mut self,
        sessions: Vec<SessionSummary>,
        here: &[std::path::PathBuf],
        now: jiff::Timestamp,
    ) {
        // Closed while the list was read: nothing to show it in.
        if self.session_picker.is_some() {
            let current = Some(self.status.session_id.clone()).filter(|s| !s.is_empty());
            self.session_picker = Some(SessionPicker::new(
                sessions,
                here,
                now,
                self.home.clone(),
                current,
            ));
        }
    }

    /// Shows `/skills` (`Event::SkillsListed`).
    pub(super) fn skills_listed(&mut self, catalog: &SkillCatalog) {
        let lines = self.skills_lines(catalog);
        self.push_cell(CellKind::Info(lines));
        self.conversation.to_bottom();
    }

    /// Shows `/memory` (`Event::MemoryListed`).
    pub(super) fn memory_listed(&mut self, files: &[Instructions]) {
        let lines = self.memory_lines(files);
        self.push_cell(CellKind::Info(lines));
        self.conversation.to_bottom();
    }

    /// A path as the person knows it: relative to the workspace, else with `~`.
    fn display_path(&self, path: &Path) -> String {
        if !self.status.cwd.as_os_str().is_empty()
            && let Ok(rel) = path.strip_prefix(&self.status.cwd)
        {
            return one_line(&format!("./{}", rel.display()));
        }
        crate::tui::wrap::short_path(path, self.home.as_deref(), usize::MAX)
    }

    /// `text` with the workspace and home directories written as `./` and `~/`.
    fn shorten_paths_in(&self, text: &str) -> String {
        let mut out = text.to_string();
        if !self.status.cwd.as_os_str().is_empty() {
            out = out.replace(&format!("{}/", self.status.cwd.display()), "./");
        }
        if let Some(home) = &self.home {
            out = out.replace(&format!("{}/", home.display()), "~/");
        }
        out
    }

    fn skills_lines(&self, catalog: &SkillCatalog) -> Vec<InfoLine> {
        let mut lines = Vec::new();
        if catalog.skills.is_empty() {
            lines.push(InfoLine::new(vec![
                Run::new(Tone::Accent, "No skills found.").bold(),
            ]));
            lines.push(InfoLine::new(vec![Run::new(
                Tone::Dim,
                "A skill is a folder with a SKILL.md (front matter: name, description) in \
                 ~/.agents/skills/ or in the project's .agents/skills/ (.claude/skills/ is \
                 read too).",
            )]));
        } else {
            let n = catalog.skills.len();
            lines.push(InfoLine::new(vec![
                Run::new(Tone::Accent, format!("Skills ({n})")).bold(),
                Run::new(
                    Tone::Dim,
                    "  the model sees names and descriptions and reads a body with read_skill",
                ),
            ]));
        }
        let name_w = catalog
            .skills
            .iter()
            .map(|s| crate::tui::wrap::str_width(&one_line(&s.name)))
            .max()
            .unwrap_or(0)
            .min(24);
        let indent = " ".repeat(name_w + 4);
        for skill in &catalog.skills {
            let name = one_line(&skill.name);
            lines.push(
                InfoLine::new(vec![
                    Run::new(Tone::Accent, format!("  {name:<name_w$}  ")),
                    Run::new(Tone::Text, one_line(&skill.description)),
                ])
                .prefixed(vec![], vec![Run::plain(indent.clone())]),
            );
            lines.push(
                InfoLine::new(vec![Run::new(Tone::Dim, self.display_path(&skill.path))]).prefixed(
                    vec![Run::plain(indent.clone())],
                    vec![Run::plain(indent.clone())],
                ),
            );
        }
        if !catalog.skipped.is_empty() {
            lines.push(InfoLine::blank());
            lines.push(InfoLine::new(vec![
                Run::new(
                    Tone::Warning,
                    format!("Skipped ({})", catalog.skipped.len()),
                )
                .bold(),
            ]));
            for skipped in &catalog.skipped {
                lines.push(
                    InfoLine::new(vec![Run::new(
                        Tone::Warning,
                        self.display_path(&skipped.path),
                    )])
                    .prefixed(vec![Run::plain("  ")], vec![Run::plain("  ")]),
                );
                let reason = self.shorten_paths_in(&one_line(&skipped.reason));
                lines.push(
                    InfoLine::new(vec![Run::new(Tone::Dim, reason)])
                        .prefixed(vec![Run::plain("    ")], vec![Run::plain("    ")]),
                );
            }
        }
        lines
    }

    fn memory_lines(&self, files: &[Instructions]) -> Vec<InfoLine> {
        let mut lines = Vec::new();
        if files.is_empty() {
            lines.push(InfoLine::new(vec![
                Run::new(Tone::Accent, "No AGENTS.md in effect.").bold(),
            ]));
            lines.push(InfoLine::new(vec![Run::new(
                Tone::Dim,
                "rein reads ~/.agents/AGENTS.md, then every AGENTS.md from the repository root \
                 down to this directory, and gives them to the model in that order.",
            )]));
            return lines;
        }
        let n = files.len();
        lines.push(InfoLine::new(vec![
            Run::new(
                Tone::Accent,
                format!(
                    "Memory: {n} AGENTS.md file{}",
                    if n == 1 { "" } else { "s" }
                ),
            )
            .bold(),
            Run::new(Tone::Dim, "  given to the model in this order"),
        ]));
        let bar = Run::new(Tone::Border, "│ ");
        for file in files {
            let text = sanitize(&file.text);
            let text = text.trim_end();
            let count = text.lines().count();
            lines.push(InfoLine::new(vec![
                Run::new(Tone::Accent, self.display_path(&file.path)),
                Run::new(
                    Tone::Dim,
                    format!(" · {count} line{}", if count == 1 { "" } else { "s" }),
                ),
            ]));
            for line in text.lines().take(MEMORY_LINES) {
                lines.push(
                    InfoLine::new(vec![Run::new(Tone::Text, line.to_string())])
                        .prefixed(vec![bar.clone()], vec![bar.clone()]),
                );
            }
            if count > MEMORY_LINES {
                lines.push(
                    InfoLine::new(vec![Run::new(
                        Tone::Dim,
                        format!("… {} more lines in the file", count - MEMORY_LINES),
                    )])
                    .prefixed(vec![bar.clone()], vec![bar.clone()]),
                );
            }
        }
        lines
    }
}
