//! The conversation's cells in order: what `app/` builds from events and `view/` draws.

use super::cell::Cell;

/// The conversation's cells, oldest first.
#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Cell>,
}

impl Transcript {
    /// All cells.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Consumes the transcript, returning its cells.
    pub fn into_cells(self) -> Vec<Cell> {
        self.cells
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// A cell by index.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Cell> {
        self.cells.get_mut(i)
    }

    /// Every cell, newest last (finding one to change).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Cell> {
        self.cells.iter_mut()
    }

    /// Reserves room for `n` more cells (a resumed history).
    pub fn reserve(&mut self, n: usize) {
        self.cells.reserve(n);
    }

    /// Appends a cell, returning its index.
    pub fn push(&mut self, cell: Cell) -> usize {
        self.cells.push(cell);
        self.cells.len() - 1
    }

    /// Removes cell `i` (nothing when there is none).
    pub fn remove(&mut self, i: usize) {
        if i < self.cells.len() {
            self.cells.remove(i);
        }
    }

    /// Removes every cell.
    pub fn clear(&mut self) {
        self.cells.clear();
    }
}
