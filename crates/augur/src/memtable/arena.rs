//! The memtable skiplist's arenas: memory bump-allocated from blocks the arena owns and
//! frees all at once when it is dropped (nodes and values never go away one by one).
//!
//! Blocks are anonymous mappings of their own, not the global allocator's (see [`Block`]);
//! they double from [`FIRST_BLOCK_BYTES`] to [`MAX_BLOCK_BYTES`], and an allocation bigger
//! than a quarter of that gets a block to itself. A dropped arena's full-size blocks are kept
//! (up to 32 MiB process-wide) for the next arenas, so a new memtable does not fault in and
//! zero fresh pages.

use std::alloc::{self, Layout};
use std::ptr::{self, NonNull};

/// First arena block; later blocks double up to [`MAX_BLOCK_BYTES`].
const FIRST_BLOCK_BYTES: usize = 64 << 10;
/// Largest arena block, one transparent huge page (blocks ask for them: a search's cache
/// misses land all over the arena); an entry bigger than a quarter of it gets a block of
/// its own.
pub(super) const MAX_BLOCK_BYTES: usize = 2 << 20;

/// Alignment of every block and, when every allocation of an arena is a multiple of it, of
/// every allocation (the skiplist's nodes: their header's `u64`s and their links).
pub(super) const NODE_ALIGN: usize = 8;

/// One arena block: an anonymous memory mapping of its own, backed by transparent huge
/// pages where the kernel allows, its pages faulted in at once.
/// Not the global allocator's: its large-object pages kept about a fifth more memory
/// resident than the blocks held (a full 64 MiB memtable of 16 + 128-byte entries: 81.8 MB
/// resident under mimalloc with transparent huge pages, 69.1 MB as mappings;
/// docs/benchmarks/write-path.md), and a memtable's budget is meant to be its memory.
#[cfg(not(miri))]
struct Block(memmap2::MmapMut);

#[cfg(not(miri))]
impl Block {
    /// A block of `bytes` (more than 0), or the allocation-failure abort the global
    /// allocator would take.
    fn new(bytes: usize) -> Block {
        if bytes == MAX_BLOCK_BYTES {
            if let Some(block) = SPARE_BLOCKS.lock().ok().and_then(|mut spare| spare.pop()) {
                return block;
            }
        }
        let map = memmap2::MmapOptions::new()
            .len(bytes)
            .map_anon()
            .unwrap_or_else(|_| alloc::handle_alloc_error(Arena::layout(bytes)));
        let _ = map.advise(memmap2::Advice::HugePage);
        let _ = map.advise(memmap2::Advice::PopulateWrite);
        Block(map)
    }

    fn start(&mut self) -> NonNull<u8> {
        NonNull::new(self.0.as_mut_ptr()).unwrap_or_else(|| {
            alloc::handle_alloc_error(Arena::layout(self.0.len()))
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Full-size blocks of dropped arenas, kept for the next memtables (at most
/// [`SPARE_BLOCKS_MAX`]): a new block is a fresh mapping whose pages the kernel must fault in
/// and zero (6% of an `INCR` server's worker thread, `clear_page_erms`), where a recycled one
/// is already resident. Its old bytes do not matter: every node and value is written whole
/// before it is linked.
#[cfg(not(miri))]
static SPARE_BLOCKS: std::sync::Mutex<Vec<Block>> = std::sync::Mutex::new(Vec::new());

/// The most spare blocks kept process-wide (32 MiB): half a default memtable.
#[cfg(not(miri))]
const SPARE_BLOCKS_MAX: usize = 16;

/// Keeps the full-size ones of `blocks` as spares (up to [`SPARE_BLOCKS_MAX`]); unmaps the
/// rest.
#[cfg(not(miri))]
fn recycle(blocks: Vec<Block>) {
    let Ok(mut spare) = SPARE_BLOCKS.lock() else {
        return;
    };
    for block in blocks {
        if block.0.len() == MAX_BLOCK_BYTES && spare.len() < SPARE_BLOCKS_MAX {
            spare.push(block);
        }
    }
}

/// Under Miri, blocks are freed, not kept.
#[cfg(miri)]
fn recycle(blocks: Vec<Block>) {
    drop(blocks);
}

/// Under Miri, which cannot map memory, a block is a heap allocation.
#[cfg(miri)]
struct Block(NonNull<u8>, Layout);

#[cfg(miri)]
impl Block {
    fn new(bytes: usize) -> Block {
        let layout = Arena::layout(bytes);
        #[expect(unsafe_code, reason = "Miri: an arena block from the global allocator")]
        // SAFETY: the layout has a non-zero size (at least NODE_ALIGN bytes).
        let block = unsafe { alloc::alloc(layout) };
        Block(
            NonNull::new(block).unwrap_or_else(|| alloc::handle_alloc_error(layout)),
            layout,
        )
    }

    fn start(&mut self) -> NonNull<u8> {
        self.0
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.1.size()
    }
}

#[cfg(miri)]
impl Drop for Block {
    fn drop(&mut self) {
        #[expect(unsafe_code, reason = "Miri: an arena block freed with its layout")]
        // SAFETY: allocated by `Block::new` with exactly this layout, freed once, here; the
        // list that handed out references into it is gone (the arena drops it).
        unsafe {
            alloc::dealloc(self.0.as_ptr(), self.1)
        };
    }
}

/// The blocks nodes are bump-allocated from; given back when the list is dropped (full-size
/// ones kept as spares for the next arenas, the rest unmapped).
pub(super) struct Arena {
    blocks: Vec<Block>,
    /// The next free byte of the current block, and how many are left in it.
    cursor: *mut u8,
    left: usize,
    next_block_bytes: usize,
}

impl Drop for Arena {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.blocks));
    }
}

impl Arena {
    pub(super) fn new() -> Self {
        Arena {
            blocks: Vec::new(),
            cursor: ptr::null_mut(),
            left: 0,
            next_block_bytes: FIRST_BLOCK_BYTES,
        }
    }

    /// `bytes` of uninitialised memory, valid until the arena is dropped; aligned to
    /// [`NODE_ALIGN`] when every allocation of this arena is a multiple of it (the node
    /// arena's are; the value arena needs no alignment).
    pub(super) fn alloc(&mut self, bytes: usize) -> NonNull<u8> {
        if bytes > MAX_BLOCK_BYTES / 4 {
            return self.new_block(bytes);
        }
        if bytes > self.left {
            let size = self.next_block_bytes.max(bytes);
            self.next_block_bytes = (self.next_block_bytes * 2).min(MAX_BLOCK_BYTES);
            self.cursor = self.new_block(size).as_ptr();
            self.left = size;
        }
        let at = self.cursor;
        // `cursor` points into the current block with `left >= bytes` bytes after it.
        self.cursor = at.wrapping_add(bytes);
        self.left -= bytes;
        NonNull::new(at).unwrap_or_else(|| alloc::handle_alloc_error(Self::layout(bytes)))
    }

    fn layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes.max(NODE_ALIGN), NODE_ALIGN)
            .unwrap_or_else(|_| Layout::new::<u64>())
    }

    /// A new block of `bytes` (at least [`NODE_ALIGN`]); page-aligned, so aligned to
    /// [`NODE_ALIGN`]. Its memory does not move when the block does.
    fn new_block(&mut self, bytes: usize) -> NonNull<u8> {
        let mut block = Block::new(bytes.max(NODE_ALIGN));
        let start = block.start();
        self.blocks.push(block);
        start
    }

    /// Bytes of the blocks allocated.
    #[cfg(test)]
    pub(super) fn allocated_bytes(&self) -> usize {
        self.blocks.iter().map(Block::len).sum()
    }
}


#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    /// A dropped arena's full-size blocks become spares, never more than the cap, and a new
    /// arena draws on them (whole blocks, distinct addresses). (The skiplist's own tests
    /// write and read back every node in arenas built on such blocks.)
    #[test]
    fn dropped_blocks_are_kept_up_to_the_cap_and_reused() {
        let mut arena = Arena::new();
        for _ in 0..(SPARE_BLOCKS_MAX + 4) {
            arena.new_block(MAX_BLOCK_BYTES);
        }
        drop(arena);
        let spares = SPARE_BLOCKS.lock().map(|s| s.len()).unwrap_or(0);
        assert!(spares <= SPARE_BLOCKS_MAX, "{spares} spare blocks");

        let mut arena = Arena::new();
        let starts: std::collections::BTreeSet<usize> = (0..4)
            .map(|_| arena.new_block(MAX_BLOCK_BYTES).as_ptr() as usize)
            .collect();
        assert_eq!(starts.len(), 4);
        assert!(starts.iter().all(|s| s % NODE_ALIGN == 0));
        assert_eq!(arena.allocated_bytes(), 4 * MAX_BLOCK_BYTES);
    }
}
