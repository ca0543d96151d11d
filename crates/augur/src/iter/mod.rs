//! Iterators: per-source cursors (memtable, table, level), the k-way merge, and the
//! user-facing [`DbIterator`] that applies snapshot visibility and resolves value pointers.

mod db_iter;
mod level;
pub(crate) mod merge;

pub use db_iter::DbIterator;
