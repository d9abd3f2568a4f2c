//! Colour themes: `themes/dark.toml` and `themes/light.toml` are built in; a user can drop
//! `<config dir>/themes/<name>.toml` to add one (or override a built-in name).

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

const DARK: &str = include_str!("../../themes/dark.toml");
const LIGHT: &str = include_str!("../../themes/light.toml");

/// The colours every view draws with, plus the syntect theme used for code.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    /// Theme name (file stem).
    pub name: String,
    /// syntect theme name for code blocks, diffs and shell commands.
    pub syntax_theme: String,
    /// Ordinary text.
    pub text: Color,
    /// Secondary text: hints, gutters, reasoning.
    pub dim: Color,
    /// Highlights: the assistant marker, selected items, the status model.
    pub accent: Color,
    /// The user's messages.
    pub user: Color,
    /// Successful tool calls, completed todos.
    pub success: Color,
    /// Retries, context nearly full.
    pub warning: Color,
    /// Errors, failed tool calls, denied and blocked lines.
    pub error: Color,
    /// Inline code and unhighlighted code blocks.
    pub code: Color,
    /// Links.
    pub link: Color,
    /// Markdown headings.
    pub heading: Color,
    /// Added diff lines.
    pub diff_add: Color,
    /// Removed diff lines.
    pub diff_del: Color,
    /// Background of added diff lines (`reset` for none).
    pub diff_add_bg: Color,
    /// Background of removed diff lines (`reset` for none).
    pub diff_del_bg: Color,
    /// Borders and rules.
    pub border: Color,
    /// Selected popup item foreground.
    pub selection_fg: Color,
    /// Selected popup item background.
    pub selection_bg: Color,
    /// Status line text.
    pub status_fg: Color,
}

#[derive(Deserialize, Default)]
struct ThemeFile {
    syntax_theme: Option<String>,
    #[serde(default)]
    colors: BTreeMap<String, String>,
}

impl Theme {
    /// The built-in dark theme.
    pub fn dark() -> Theme {
        // The built-in files are part of the binary and covered by tests, so parsing cannot
        // fail at run time; fall back to plain colours rather than panic all the same.
        Theme::parse("dark", DARK, None).map_or_else(|_| Theme::plain("dark"), |(t, _)| t)
    }

    /// The built-in light theme.
    pub fn light() -> Theme {
        Theme::parse("light", LIGHT, Some(&Theme::dark()))
            .map_or_else(|_| Theme::plain("light"), |(t, _)| t)
    }

    /// Loads theme `name`: `<config_dir>/themes/<name>.toml` when present, else a built-in.
    /// Returns the theme and a warning to show when something was wrong (the dark theme is
    /// used then).
    pub fn load(name: &str, config_dir: &Path) -> (Theme, Option<String>) {
        let file = config_dir.join("themes").join(format!("{name}.toml"));
        match std::fs::read_to_string(&file) {
            Ok(text) => match Theme::parse(name, &text, Some(&Theme::dark())) {
                Ok((theme, unknown)) => {
                    let warning = (!unknown.is_empty()).then(|| {
                        format!(
                            "theme {}: ignored unknown or invalid colours: {}",
                            file.display(),
                            unknown.join(", ")
                        )
                    });
                    (theme, warning)
                }
                Err(e) => (
                    Theme::dark(),
                    Some(format!(
                        "theme {} is not valid TOML ({e}); using the dark theme",
                        file.display()
                    )),
                ),
            },
            Err(_) => match name {
                "dark" | "" => (Theme::dark(), None),
                "light" => (Theme::light(), None),
                other => (
                    Theme::dark(),
                    Some(format!(
                        "unknown theme \"{other}\": use dark, light, or put {} in place",
                        file.display()
                    )),
                ),
            },
        }
    }

    /// Parses a theme file; colours it does not set come from `base` (or stay plain).
    /// Returns the names of colours that were unknown or unparsable.
    fn parse(
        name: &str,
        text: &str,
        base: Option<&Theme>,
    ) -> Result<(Theme, Vec<String>), toml::de::Error> {
        let file: ThemeFile = toml::from_str(text)?;
        let mut theme = base.cloned().unwrap_or_else(|| Theme::plain(name));
        theme.name = name.to_string();
        if let Some(s) = file.syntax_theme {
            theme.syntax_theme = s;
        }
        let mut bad = Vec::new();
        for (key, value) in &file.colors {
            let Ok(color) = Color::from_str(value) else {
                bad.push(key.clone());
                continue;
            };
            let slot = match key.as_str() {
                "text" => &mut theme.text,
                "dim" => &mut theme.dim,
                "accent" => &mut theme.accent,
                "user" => &mut theme.user,
                "success" => &mut theme.success,
                "warning" => &mut theme.warning,
                "error" => &mut theme.error,
                "code" => &mut theme.code,
                "link" => &mut theme.link,
                "heading" => &mut theme.heading,
                "diff_add" => &mut theme.diff_add,
                "diff_del" => &mut theme.diff_del,
                "diff_add_bg" => &mut theme.diff_add_bg,
                "diff_del_bg" => &mut theme.diff_del_bg,
                "border" => &mut theme.border,
                "selection_fg" => &mut theme.selection_fg,
                "selection_bg" => &mut theme.selection_bg,
                "status_fg" => &mut theme.status_fg,
                _ => {
                    bad.push(key.clone());
                    continue;
                }
            };
            *slot = color;
        }
        Ok((theme, bad))
    }

    fn plain(name: &str) -> Theme {
        Theme {
            name: name.to_string(),
            syntax_theme: "base16-ocean.dark".to_string(),
            text: Color::Reset,
            dim: Color::DarkGray,
            accent: Color::Cyan,
            user: Color::Magenta,
            success: Color::Green,
            warning: Color::Yellow,
            error: Color::Red,
            code: Color::Cyan,
            link: Color::Blue,
            heading: Color::Cyan,
            diff_add: Color::Green,
            diff_del: Color::Red,
            diff_add_bg: Color::Reset,
            diff_del_bg: Color::Reset,
            border: Color::DarkGray,
            selection_fg: Color::Black,
            selection_bg: Color::Cyan,
            status_fg: Color::Gray,
        }
    }

    /// Style for ordinary text.
    pub fn text(&self) -> Style {
        Style::new().fg(self.text)
    }

    /// Style for secondary text.
    pub fn dim(&self) -> Style {
        Style::new().fg(self.dim)
    }

    /// Style of `color` as foreground.
    pub fn fg(&self, color: Color) -> Style {
        Style::new().fg(color)
    }

    /// Style for a selected list row.
    pub fn selected(&self) -> Style {
        Style::new()
            .fg(self.selection_fg)
            .bg(self.selection_bg)
            .add_modifier(Modifier::BOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse_completely() {
        for (name, text) in [("dark", DARK), ("light", LIGHT)] {
            let (theme, bad) = Theme::parse(name, text, None).expect("valid toml");
            assert!(bad.is_empty(), "{name}: {bad:?}");
            assert_eq!(theme.name, name);
        }
        assert_ne!(Theme::dark(), Theme::light());
        assert_eq!(Theme::light().syntax_theme, "InspiredGitHub");
    }

    #[test]
    fn user_theme_file_overrides_and_reports_bad_colours() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("themes")).expect("mkdir");
        std::fs::write(
            dir.path().join("themes/mine.toml"),
            "syntax_theme = \"Solarized (dark)\"\n[colors]\naccent = \"#ff0000\"\nbogus = \"red\"\nerror = \"not-a-colour\"\n",
        )
        .expect("write");
        let (theme, warning) = Theme::load("mine", dir.path());
        assert_eq!(theme.accent, Color::Rgb(255, 0, 0));
        assert_eq!(theme.syntax_theme, "Solarized (dark)");
        // Unset colours come from the dark theme.
        assert_eq!(theme.user, Theme::dark().user);
        let warning = warning.expect("warning");
        assert!(
            warning.contains("bogus") && warning.contains("error"),
            "{warning}"
        );
    }

    #[test]
    fn unknown_theme_falls_back_to_dark_with_a_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (theme, warning) = Theme::load("nope", dir.path());
        assert_eq!(theme, Theme::dark());
        assert!(warning.expect("warning").contains("nope.toml"));
        assert_eq!(Theme::load("light", dir.path()).0, Theme::light());
    }
}
