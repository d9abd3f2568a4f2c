//! Markdown (pulldown-cmark) to width-independent blocks, and blocks to lines for a width.
//!
//! Headings, emphasis, lists (nested, numbered, task lists), links, block quotes, tables,
//! inline code and fenced code (highlighted by the fence's language).

use super::highlight;
pub use super::table::Table;
use crate::tui::theme::Theme;
use crate::tui::wrap::{RichLine, Wrap, push_span, spans_width, str_width};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// A rendered piece of markdown that still has to be fitted to a width.
#[derive(Clone, Debug, PartialEq)]
pub enum MdBlock {
    /// A line that wraps.
    Line(RichLine),
    /// A horizontal rule, full width after its prefix.
    Rule(Vec<Span<'static>>),
    /// A table; column widths depend on the width.
    Table(Table),
}

enum Container {
    Quote,
    Item { marker: String, used: bool },
}

struct Renderer<'t> {
    theme: &'t Theme,
    blocks: Vec<MdBlock>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    lists: Vec<Option<u64>>,
    need_blank: bool,
    code: Option<(String, String)>,
    table: Option<Table>,
    row: Vec<Vec<Span<'static>>>,
    links: Vec<(String, usize)>,
}

/// Renders markdown source to blocks.
pub fn render(source: &str, theme: &Theme) -> Vec<MdBlock> {
    let mut r = Renderer {
        theme,
        blocks: Vec::new(),
        inline: Vec::new(),
        styles: vec![theme.text()],
        containers: Vec::new(),
        lists: Vec::new(),
        need_blank: false,
        code: None,
        table: None,
        row: Vec::new(),
        links: Vec::new(),
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    r.blocks
}

/// Fits blocks to `width` columns.
pub fn layout(blocks: &[MdBlock], width: usize, theme: &Theme, out: &mut Vec<Line<'static>>) {
    for block in blocks {
        match block {
            MdBlock::Line(line) => line.layout(width, out),
            MdBlock::Rule(prefix) => {
                let mut spans = prefix.clone();
                let n = width.saturating_sub(spans_width(prefix));
                spans.push(Span::styled("─".repeat(n), theme.fg(theme.border)));
                out.push(Line::from(spans));
            }
            MdBlock::Table(table) => table.layout(width, theme, out),
        }
    }
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let bar = self.theme.fg(self.theme.border);
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", bar));
                    rest.push(Span::styled("│ ", bar));
                }
                Container::Item { marker, used } => {
                    let pad = " ".repeat(str_width(marker));
                    if *used {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(
                            marker.clone(),
                            self.theme.fg(self.theme.accent),
                        ));
                        *used = true;
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    fn blank_line(&mut self) {
        let bar = self.theme.fg(self.theme.border);
        let spans: Vec<Span<'static>> = self
            .containers
            .iter()
            .filter(|c| matches!(c, Container::Quote))
            .map(|_| Span::styled("│", bar))
            .collect();
        self.blocks.push(MdBlock::Line(
            RichLine::new(Vec::new()).prefixed(spans, Vec::new()),
        ));
    }

    fn start_block(&mut self) {
        self.flush();
        if self.need_blank {
            self.blank_line();
            self.need_blank = false;
        }
    }

    /// Emits pending inline text as a line.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        self.blocks.push(MdBlock::Line(
            RichLine::new(spans)
                .prefixed(first, rest)
                .wrapped(Wrap::Word),
        ));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        let style = self.style();
        push_span(&mut self.inline, text, style);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let style = self.style().patch(self.theme.fg(self.theme.code));
                push_span(&mut self.inline, &t, style);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let style = self.style().patch(self.theme.fg(self.theme.code));
                push_span(&mut self.inline, &t, style);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let style = self.theme.dim();
                for (i, line) in t.split('\n').enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    push_span(&mut self.inline, line, style);
                }
            }
            Event::FootnoteReference(t) => self.text(&format!("[^{t}]")),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.start_block();
                let (first, _) = self.prefixes();
                self.blocks.push(MdBlock::Rule(first));
                self.need_blank = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, style) = if done {
                    ("☑ ", self.theme.fg(self.theme.success))
                } else {
                    ("☐ ", self.theme.dim())
                };
                push_span(&mut self.inline, mark, style);
            }
        }
    }

    /// A list item: its marker (the next number, or a bullet by depth) waits for its text.
    fn start_item(&mut self) {
        self.flush();
        let depth = self.lists.len();
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let m = format!("{n}. ");
                *n += 1;
                m
            }
            _ => match depth {
                0 | 1 => "• ".to_string(),
                2 => "◦ ".to_string(),
                _ => "▪ ".to_string(),
            },
        };
        self.containers.push(Container::Item {
            marker,
            used: false,
        });
    }

    /// A table: rows are kept until it ends, then laid out in columns.
    fn start_table(&mut self, aligns: Vec<Alignment>) {
        self.start_block();
        let (first, _) = self.prefixes();
        self.table = Some(Table {
            prefix: first,
            aligns,
            header: Vec::new(),
            rows: Vec::new(),
        });
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let theme = self.theme;
                // Each level looks its own: H1 bold and underlined, H2 bold, H3 and deeper
                // italic, all in the heading colour.
                self.push_style(|s| {
                    let s = s.patch(theme.fg(theme.heading));
                    match level {
                        HeadingLevel::H1 => s.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                        HeadingLevel::H2 => s.add_modifier(Modifier::BOLD),
                        _ => s.add_modifier(Modifier::ITALIC),
                    }
                });
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.start_block();
                self.lists.push(start);
            }
            Tag::Item => self.start_item(),
            Tag::Table(aligns) => self.start_table(aligns),
            Tag::TableHead | Tag::TableRow => self.row.clear(),
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.push_style(|s| s),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.inline.len()));
                let theme = self.theme;
                self.push_style(|s| {
                    s.patch(theme.fg(theme.link))
                        .add_modifier(Modifier::UNDERLINED)
                });
            }
            Tag::Image { .. } => {
                let dim = self.theme.dim();
                push_span(&mut self.inline, "[image: ", dim);
                self.push_style(|_| dim);
            }
            Tag::FootnoteDefinition(label) => {
                self.start_block();
                self.text(&format!("[^{label}]: "));
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.start_block()
            }
            Tag::MetadataBlock(_) => self.start_block(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.flush();
                self.need_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
                self.need_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.pop_style();
                self.need_blank = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.need_blank = true;
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.blocks.push(MdBlock::Table(table));
                }
                self.need_blank = true;
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header = std::mem::take(&mut self.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(std::mem::take(&mut self.row));
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                self.row.push(cell);
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                if let Some((url, start)) = self.links.pop() {
                    let text: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    let bare = url.trim_start_matches("mailto:");
                    if !url.is_empty() && !url.starts_with('#') && text != bare {
                        let dim = self.theme.dim();
                        push_span(&mut self.inline, &format!(" ({url})"), dim);
                    }
                }
            }
            TagEnd::Image => {
                self.pop_style();
                let dim = self.theme.dim();
                push_span(&mut self.inline, "]", dim);
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush();
                self.need_blank = true;
            }
        }
    }

    fn end_code(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        let highlighted = if lang.trim().is_empty() {
            None
        } else {
            highlight::highlight_code(&code, &lang, &self.theme.syntax_theme)
        };
        let lines: Vec<Vec<Span<'static>>> = match highlighted {
            Some(lines) => lines,
            None => {
                let style = self.theme.fg(self.theme.code);
                code.lines()
                    .map(|l| vec![Span::styled(l.to_string(), style)])
                    .collect()
            }
        };
        for spans in lines {
            let (mut first, mut rest) = self.prefixes();
            first.push(Span::raw("  "));
            rest.push(Span::raw("  "));
            self.blocks.push(MdBlock::Line(
                RichLine::new(spans)
                    .prefixed(first, rest)
                    .wrapped(Wrap::Char),
            ));
        }
        self.need_blank = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(md: &str, width: usize) -> Vec<String> {
        let theme = Theme::dark();
        let mut out = Vec::new();
        layout(&render(md, &theme), width, &theme, &mut out);
        out.iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn lists_nest_and_number() {
        let md = "Steps:\n\n1. first\n2. second\n   - inner a\n   - inner b\n3. third\n";
        assert_eq!(
            plain(md, 40),
            vec![
                "Steps:",
                "",
                "1. first",
                "2. second",
                "   ◦ inner a",
                "   ◦ inner b",
                "3. third"
            ]
        );
    }

    #[test]
    fn quotes_headings_rules_and_links() {
        let md =
            "# Title\n\n> quoted *text*\n\n---\n\nsee [docs](https://x.dev) and <https://y.dev>";
        assert_eq!(
            plain(md, 40),
            vec![
                "Title",
                "",
                "│ quoted text",
                "",
                "────────────────────────────────────────",
                "",
                "see docs (https://x.dev) and",
                "https://y.dev"
            ]
        );
    }

    #[test]
    fn heading_levels_look_different() {
        let theme = Theme::dark();
        let style_of = |md: &str| {
            let blocks = render(md, &theme);
            let mut out = Vec::new();
            layout(&blocks, 40, &theme, &mut out);
            out[0].spans[0].style
        };
        let (h1, h2, h3) = (style_of("# A"), style_of("## A"), style_of("### A"));
        assert_ne!(h1, h2);
        assert_ne!(h2, h3);
        assert_ne!(h1, h3);
        assert_eq!(style_of("#### A"), h3);
    }

    #[test]
    fn code_blocks_keep_indentation_and_get_colour() {
        let theme = Theme::dark();
        let blocks = render("```rust\nfn main() {\n    run();\n}\n```\n", &theme);
        let mut out = Vec::new();
        layout(&blocks, 40, &theme, &mut out);
        let text: Vec<String> = out
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, vec!["  fn main() {", "      run();", "  }"]);
        let colours: std::collections::HashSet<_> =
            out[0].spans.iter().filter_map(|s| s.style.fg).collect();
        assert!(colours.len() >= 2, "highlighted: {:?}", out[0]);
    }

    #[test]
    fn tables_align_and_shrink_to_fit() {
        let md = "| name | n |\n|------|--:|\n| alpha | 1 |\n| b | 200 |\n";
        assert_eq!(
            plain(md, 40),
            vec!["name  │   n", "──────┼────", "alpha │   1", "b     │ 200"]
        );
        let wide = "| a | b |\n|---|---|\n| one two three four five | six seven eight nine |\n";
        for line in plain(wide, 20) {
            assert!(str_width(&line) <= 20, "{line:?}");
        }
    }

    #[test]
    fn task_lists_inline_code_and_emphasis_styles() {
        let theme = Theme::dark();
        let blocks = render("- [x] done `code` **bold**\n- [ ] todo", &theme);
        let mut out = Vec::new();
        layout(&blocks, 40, &theme, &mut out);
        let first = &out[0];
        let text: String = first.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "• ☑ done code bold");
        let code = first
            .spans
            .iter()
            .find(|s| s.content == "code")
            .expect("code span");
        assert_eq!(code.style.fg, Some(theme.code));
        let bold = first
            .spans
            .iter()
            .find(|s| s.content == "bold")
            .expect("bold span");
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
    }
}
