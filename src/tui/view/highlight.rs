//! Syntax highlighting with syntect. The syntax set is loaded on first use (the first code
//! block, diff or shell command), never before the first frame.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SynTheme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

/// Lines longer than this are not highlighted: regex engines get slow on minified files.
const MAX_LINE_LEN: usize = 2_000;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();

fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

fn theme(name: &str) -> Option<&'static SynTheme> {
    let set = themes();
    set.themes
        .get(name)
        .or_else(|| set.themes.get("base16-ocean.dark"))
}

/// Finds a syntax for a fence language (`rust`, `py`, `sh`, `c++`).
fn syntax_for_token(token: &str) -> Option<&'static SyntaxReference> {
    let token = token.trim().split([',', ' ', '{']).next().unwrap_or("");
    if token.is_empty() {
        return None;
    }
    let set = syntaxes();
    let lower = token.to_ascii_lowercase();
    let alias = match lower.as_str() {
        "shell" | "console" | "zsh" | "bash" => "sh",
        "ts" | "typescript" | "tsx" => "js",
        "jsonc" | "json5" => "json",
        "toml" => "toml",
        other => other,
    };
    set.find_syntax_by_token(alias)
}

/// Finds a syntax for a file path, by extension or well-known name.
fn syntax_for_path(path: &str) -> Option<&'static SyntaxReference> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rsplit_once('.') {
        Some((_, ext)) => ext,
        None => name,
    };
    let set = syntaxes();
    set.find_syntax_by_extension(ext)
        .or_else(|| set.find_syntax_by_token(ext))
}

/// Highlights `code` as language `lang` with syntect theme `theme_name`; one span list per
/// line. `None` when the language is unknown (the caller renders plain code).
pub fn highlight_code(code: &str, lang: &str, theme_name: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let syntax = syntax_for_token(lang)?;
    Some(highlight_with(syntax, code.lines(), theme_name))
}

/// Highlights lines of file `path` (chosen by its extension); `None` when the type is unknown.
pub fn highlight_path_lines<'a>(
    path: &str,
    lines: impl Iterator<Item = &'a str>,
    theme_name: &str,
) -> Option<Vec<Vec<Span<'static>>>> {
    let syntax = syntax_for_path(path)?;
    Some(highlight_with(syntax, lines, theme_name))
}

/// Highlights a shell command line.
pub fn highlight_shell(command: &str, theme_name: &str) -> Vec<Vec<Span<'static>>> {
    match syntax_for_token("sh") {
        Some(syntax) => highlight_with(syntax, command.lines(), theme_name),
        None => command
            .lines()
            .map(|l| vec![Span::raw(l.to_string())])
            .collect(),
    }
}

/// Loads the syntax and theme sets (called on a blocking thread after the first frame, so
/// the first code block does not stall the UI).
pub fn warm_up() {
    let _ = syntaxes();
    let _ = themes();
}

/// Whether the syntax set has been loaded yet (it must not be before the first frame).
pub fn is_loaded() -> bool {
    SYNTAXES.get().is_some()
}

fn highlight_with<'a>(
    syntax: &SyntaxReference,
    lines: impl Iterator<Item = &'a str>,
    theme_name: &str,
) -> Vec<Vec<Span<'static>>> {
    let Some(theme) = theme(theme_name) else {
        return lines.map(|l| vec![Span::raw(l.to_string())]).collect();
    };
    let set = syntaxes();
    let mut hl = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    let mut buf = String::new();
    for line in lines {
        if line.len() > MAX_LINE_LEN {
            out.push(vec![Span::raw(line.to_string())]);
            continue;
        }
        buf.clear();
        buf.push_str(line);
        buf.push('\n');
        match hl.highlight_line(&buf, set) {
            Ok(regions) => {
                let mut spans: Vec<Span<'static>> = Vec::with_capacity(regions.len());
                for (style, text) in regions {
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    if text.is_empty() {
                        continue;
                    }
                    crate::tui::wrap::push_span(&mut spans, text, convert(style));
                }
                out.push(spans);
            }
            Err(e) => {
                tracing::debug!("highlighting failed: {e}");
                out.push(vec![Span::raw(line.to_string())]);
            }
        }
    }
    out
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut s = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        s = s.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        s = s.add_modifier(Modifier::ITALIC);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_code_gets_several_colours() {
        let lines = highlight_code(
            "fn main() {\n    let x = 1;\n}",
            "rust",
            "base16-ocean.dark",
        )
        .expect("rust is known");
        assert_eq!(lines.len(), 3);
        let text: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "fn main() {");
        let colours: std::collections::HashSet<_> =
            lines[0].iter().filter_map(|s| s.style.fg).collect();
        assert!(colours.len() >= 2, "{lines:?}");
    }

    #[test]
    fn unknown_language_is_none_and_paths_pick_by_extension() {
        assert!(highlight_code("x", "no-such-lang", "base16-ocean.dark").is_none());
        assert!(highlight_path_lines("src/lib.rs", ["fn a() {}"].into_iter(), "x").is_some());
        assert!(highlight_path_lines("Makefile", ["all:"].into_iter(), "x").is_some());
        assert_eq!(highlight_shell("ls -la | wc -l", "InspiredGitHub").len(), 1);
    }
}
