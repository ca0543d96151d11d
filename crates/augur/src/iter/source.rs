//! [`Source`]: one input of a merge — a memtable, one table (an L0 file or a compaction
//! input) or a sorted level — behind one cursor interface, dispatched by `match` (STYLE.md §9:
//! enum dispatch on the merge path, no virtual call per entry).
//!
//! Every source yields internal entries in internal order (or its reverse), borrowing the
//! current key and value bytes until the next move.

use super::level::LevelCursor;
use crate::error::Result;
use crate::memtable::MemtableCursor;
use crate::sst::TableCursor;

/// One input of a merge.
pub(crate) enum Source {
    /// A memtable.
    Mem(MemtableCursor),
    /// One table.
    Table(TableCursor),
    /// A sorted level.
    Level(LevelCursor),
}

impl Source {
    /// Positions at the first entry in the source's direction.
    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        match self {
            Source::Mem(c) => {
                c.seek_to_first();
                Ok(())
            }
            Source::Table(c) => c.seek_to_first(),
            Source::Level(c) => c.seek_to_first(),
        }
    }

    /// Forward: positions at the first entry `>= (user_key, trailer)`; backward: at the last
    /// entry `< (user_key, trailer)`.
    pub(crate) fn seek(&mut self, user_key: &[u8], trailer: u64) -> Result<()> {
        match self {
            Source::Mem(c) => {
                c.seek(user_key, trailer);
                Ok(())
            }
            Source::Table(c) => c.seek(user_key, trailer),
            Source::Level(c) => c.seek(user_key, trailer),
        }
    }

    /// True when positioned at an entry.
    #[inline]
    pub(crate) fn valid(&self) -> bool {
        match self {
            Source::Mem(c) => c.valid(),
            Source::Table(c) => c.valid(),
            Source::Level(c) => c.valid(),
        }
    }

    /// Moves one entry. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn advance(&mut self) -> Result<()> {
        match self {
            Source::Mem(c) => {
                c.advance();
                Ok(())
            }
            Source::Table(c) => c.advance(),
            Source::Level(c) => c.advance(),
        }
    }

    /// The current user key. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        match self {
            Source::Mem(c) => c.key(),
            Source::Table(c) => c.key(),
            Source::Level(c) => c.current().map_or(&[], TableCursor::key),
        }
    }

    /// The current trailer. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn trailer(&self) -> u64 {
        match self {
            Source::Mem(c) => c.trailer(),
            Source::Table(c) => c.trailer(),
            Source::Level(c) => c.current().map_or(0, TableCursor::trailer),
        }
    }

    /// The current value bytes: inline value, encoded pointer, or empty. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        match self {
            Source::Mem(c) => c.value(),
            Source::Table(c) => c.value(),
            Source::Level(c) => c.current().map_or(&[], TableCursor::value),
        }
    }
}
