//! The layout hints of a compaction's outputs ([`LayoutHints`]): every output entry is an
//! input entry, unchanged, so bounds over the inputs bound the outputs, and the builder can
//! fix each output's slot layout after its sample and write it block by block. Taken from the
//! inputs' metadata and properties (nothing read); the longest inline value is in the
//! properties from format 4 on, and read from an older input's slots when its value chunks
//! cannot bound it (`Table::longest_inline_value`).

use crate::error::Result;
use crate::key::{SeqNo, MAX_SEQNO};
use crate::sst::{LayoutHints, ValueHints};
use crate::version::TableFile;
use std::sync::Arc;

/// Hints for the outputs of merging `inputs` into tables of `block_records` entries per block;
/// `last_seqno` bounds every seqno of the database's tables (the version set's).
///
/// # Errors
/// `Corruption` or `Io` when reading an input's slots fails.
pub(super) fn output_hints(
    inputs: &[&Arc<TableFile>],
    block_records: usize,
    last_seqno: SeqNo,
) -> Result<LayoutHints> {
    let mut max_user_key: Option<&[u8]> = None;
    let mut key_len = (usize::MAX, 0usize);
    let mut seqnos = (SeqNo::MAX, 0);
    let (mut inline, mut pointers) = (false, false);
    for f in inputs {
        let p = f.table.properties();
        let largest = f.largest_key();
        max_user_key = Some(max_user_key.map_or(largest, |m| m.max(largest)));
        // Every key has the file's common prefix; with no length field, exactly that length.
        let shortest = if !p.slot.v1_refs && p.slot.len_bytes == 0 {
            p.slot.prefix_len + p.slot.fixed_rest_len
        } else {
            p.common_prefix_len
        };
        key_len = (
            key_len.0.min(shortest as usize),
            key_len.1.max(p.key_width as usize),
        );
        // The trailer field holds `trailer − trailer_base` in `trailer_bytes` bytes.
        let stored_max = match p.slot.trailer_bytes {
            w if w >= 8 => u64::MAX,
            w => (1u64 << (8 * u32::from(w))) - 1,
        };
        let highest = (p.slot.trailer_base.saturating_add(stored_max) >> 8).min(MAX_SEQNO);
        seqnos = (
            seqnos.0.min(p.slot.trailer_base >> 8),
            seqnos.1.max(highest),
        );
        inline |= p.inline_values > 0;
        pointers |= p.pointers > 0;
    }
    let seqnos = (seqnos.0, seqnos.1.min(last_seqno.max(seqnos.0)));
    // The reference field needs every inline value's length only when no input holds a
    // pointer (20-byte references then) and a block of inline values could pass 64 KiB.
    let max_inline_len = if !inline {
        None
    } else if pointers {
        Some(u32::MAX)
    } else {
        let cap = u64::from(u16::MAX) / block_records.max(1) as u64;
        let mut longest = 0u64;
        for f in inputs {
            longest = longest.max(f.table.longest_inline_value(cap)?);
        }
        Some(u32::try_from(longest).unwrap_or(u32::MAX))
    };
    Ok(LayoutHints {
        max_user_key: max_user_key.map(<[u8]>::to_vec),
        key_len: (key_len.0 <= key_len.1).then_some(key_len),
        seqnos: (seqnos.0 <= seqnos.1).then_some(seqnos),
        values: Some(ValueHints {
            max_inline_len,
            pointers,
        }),
    })
}
