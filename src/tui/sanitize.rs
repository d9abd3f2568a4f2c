//! Laying out drawn frames so terminals and ratatui agree on every cell. The text itself is
//! made safe by the one sanitizer, [`crate::sanitize`], re-exported here for the views.

pub use crate::sanitize::{one_line, sanitize};
use ratatui::buffer::{Buffer, CellWidth};
use unicode_width::UnicodeWidthChar;

/// Rewrites every cell of a drawn frame whose cluster a terminal would lay out differently
/// from ratatui. ratatui puts a cluster in one cell as wide as the cluster; a terminal that
/// draws characters one by one (most do) gives each its own cell. Where they disagree (`का`
/// and a flag's two letters fill two cells in the terminal, a mark with no letter before it
/// joins the cell to its left, `⚠️` is one cell or two), ratatui's next diff leaves cells of
/// the old frame on screen. The cluster is cut into pieces that both count alike and laid
/// out over the same cells, so nothing around it moves.
pub fn settle_cells(buf: &mut Buffer) {
    let area = buf.area;
    let width = usize::from(area.width);
    for (row, y) in (area.top()..area.bottom()).enumerate() {
        // Fast path: a cell of one byte (ASCII, or blank) is one cell wide for everyone, so a
        // row of them needs nothing, and the clusters to look at start at the first other one.
        let cells = buf
            .content
            .get(row * width..(row + 1) * width)
            .unwrap_or_default();
        let Some(first) = cells.iter().position(|c| c.symbol().len() > 1) else {
            continue;
        };
        let mut x = area.left() + first as u16;
        while x < area.right() {
            let symbol = buf[(x, y)].symbol();
            if symbol.len() <= 1 {
                x += 1;
                continue;
            }
            let width = symbol.cell_width().max(1);
            if !drawn_alike(symbol) {
                let cells = settled(symbol, usize::from(width));
                for (i, piece) in cells.iter().enumerate() {
                    let cx = x + i as u16;
                    if cx < area.right() {
                        buf[(cx, y)].set_symbol(piece);
                    }
                }
            }
            x = x.saturating_add(width);
        }
    }
}

/// `width` cells for a cluster: its pieces that both count alike, in order, a wide piece
/// followed by the blank its second cell holds, then blanks.
fn settled(g: &str, width: usize) -> Vec<String> {
    let mut cells: Vec<String> = Vec::with_capacity(width);
    for piece in pieces(g) {
        let piece = if drawn_alike(piece) {
            piece
        } else {
            match piece.char_indices().nth(1) {
                Some((end, _)) if drawn_alike(&piece[..end]) => &piece[..end],
                None if drawn_alike(piece) => piece,
                _ => continue,
            }
        };
        let w = usize::from(piece.cell_width());
        if cells.len() + w > width {
            break;
        }
        cells.push(piece.to_string());
        cells.extend((1..w).map(|_| " ".to_string()));
    }
    cells.resize(width, " ".to_string());
    cells
}

/// A cluster cut before each character that takes room, zero-width ones kept with the one
/// before them.
fn pieces(g: &str) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = g
        .char_indices()
        .filter(|(i, c)| *i == 0 || c.width().unwrap_or(0) > 0)
        .map(|(i, _)| i)
        .collect();
    starts.push(g.len());
    (0..starts.len() - 1).map(move |k| &g[starts[k]..starts[k + 1]])
}

/// Whether ratatui and a terminal drawing character by character give a cluster the same
/// cells: it starts with a character that takes room, no other one does, and ratatui counts
/// it as wide as that character.
fn drawn_alike(g: &str) -> bool {
    let mut chars = g.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    let first_w = first.width().unwrap_or(0);
    first_w > 0
        && chars.all(|c| c.width().unwrap_or(0) == 0)
        && usize::from(g.cell_width()) == first_w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(g: &str) -> Vec<String> {
        settled(g, usize::from(g.cell_width().max(1)))
    }

    #[test]
    fn clusters_terminals_lay_out_otherwise_are_cut_into_cells_both_agree_on() {
        // Two characters that take room: one cell each.
        assert_eq!(cells("\u{915}\u{93e}"), ["\u{915}", "\u{93e}"]);
        assert_eq!(cells("\u{1f1fa}\u{1f1f8}"), ["\u{1f1fa}", "\u{1f1f8}"]);
        // A mark with no letter before it is dropped; the letter keeps its cell.
        assert_eq!(cells("\u{301}\u{93e}"), ["\u{93e}"]);
        // Counted wider than its characters: the character, then a blank.
        assert_eq!(cells("\u{26a0}\u{fe0f}"), ["\u{26a0}", " "]);
        // Clusters everyone draws alike are left alone.
        for g in ["e\u{301}", "\u{1100}\u{1161}", "\u{8868}", "\u{2705}"] {
            assert!(drawn_alike(g), "{g:?}");
        }
        // Plain rows and rows with clusters after plain text alike.
        let mut buf = Buffer::with_lines(["plain ascii", "ab\u{26a0}\u{fe0f}c"]);
        settle_cells(&mut buf);
        let row: Vec<&str> = (0..6).map(|x| buf[(x, 1)].symbol()).collect();
        assert_eq!(row, ["a", "b", "\u{26a0}", " ", "c", " "]);
        assert_eq!(buf[(4, 0)].symbol(), "n");
        let mut buf = Buffer::with_lines(["a\u{915}\u{93e}b"]);
        settle_cells(&mut buf);
        let row: Vec<&str> = (0..4).map(|x| buf[(x, 0)].symbol()).collect();
        assert_eq!(row, ["a", "\u{915}", "\u{93e}", "b"]);
    }
}
