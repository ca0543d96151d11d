//! [`LevelCursor`]: a sorted run of a level >= 1 (a whole level when leveled, one run of a
//! fragmented level under FLSM) as one cursor — the concatenation of its files, each opened
//! only when the cursor reaches it. A seek finds the one file that can hold the
//! target by binary search over the files' largest keys (8-byte prefixes as integers), then
//! seeks inside it through the file's learned index.

use crate::error::Result;
use crate::sst::TableCursor;
use crate::version::Version;
use std::sync::Arc;

/// A cursor over the files of one sorted run of a version, in one direction.
pub(crate) struct LevelCursor {
    version: Arc<Version>,
    /// Index into `version.runs`.
    run: usize,
    forward: bool,
    /// Index of the file `cursor` is in.
    file: usize,
    cursor: Option<TableCursor>,
}

impl LevelCursor {
    /// An unpositioned cursor over run `run` of `version`.
    pub(crate) fn new(version: Arc<Version>, run: usize, forward: bool) -> Self {
        LevelCursor {
            version,
            run,
            forward,
            file: 0,
            cursor: None,
        }
    }

    /// The run this cursor reads (an index into `version.runs`).
    pub(crate) fn run(&self) -> usize {
        self.run
    }

    fn file_count(&self) -> usize {
        self.version.runs.get(self.run).map_or(0, |r| r.files.len())
    }

    /// Opens file `i` (unpositioned); `None` when out of range.
    fn open(&mut self, i: usize) -> Option<&mut TableCursor> {
        let file = self.version.runs.get(self.run)?.files.get(i)?;
        self.file = i;
        let table = file.table.clone();
        self.cursor = Some(TableCursor::new(table, self.forward));
        self.cursor.as_mut()
    }

    /// Positions at the first entry in the cursor's direction.
    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        let first = if self.forward {
            0
        } else {
            self.file_count().wrapping_sub(1)
        };
        match self.open(first) {
            Some(c) => c.seek_to_first()?,
            None => self.cursor = None,
        }
        self.skip_exhausted()
    }

    /// Forward: positions at the first entry `>= (user_key, trailer)`; backward: at the last
    /// entry `< (user_key, trailer)`.
    pub(crate) fn seek(&mut self, user_key: &[u8], trailer: u64) -> Result<()> {
        let i = if self.forward {
            self.version.file_index(self.run, user_key)
        } else {
            // The last file whose smallest key is <= user_key.
            let files = self
                .version
                .runs
                .get(self.run)
                .map_or(&[][..], |r| &r.files[..]);
            files
                .partition_point(|f| f.smallest_key() <= user_key)
                .wrapping_sub(1)
        };
        match self.open(i) {
            Some(c) => c.seek(user_key, trailer)?,
            None => self.cursor = None,
        }
        self.skip_exhausted()
    }

    /// While the current file is exhausted, moves to the next file in the direction.
    fn skip_exhausted(&mut self) -> Result<()> {
        while let Some(c) = &self.cursor {
            if c.valid() {
                return Ok(());
            }
            let next = if self.forward {
                self.file + 1
            } else {
                self.file.wrapping_sub(1)
            };
            match self.open(next) {
                Some(c) => c.seek_to_first()?,
                None => self.cursor = None,
            }
        }
        Ok(())
    }

    /// True when positioned at an entry.
    #[inline]
    pub(crate) fn valid(&self) -> bool {
        self.cursor.as_ref().is_some_and(TableCursor::valid)
    }

    /// Moves one entry. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn advance(&mut self) -> Result<()> {
        if let Some(c) = self.cursor.as_mut() {
            c.advance()?;
            if !c.valid() {
                return self.skip_exhausted();
            }
        }
        Ok(())
    }

    /// The current table cursor. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn current(&self) -> Option<&TableCursor> {
        self.cursor.as_ref()
    }
}
