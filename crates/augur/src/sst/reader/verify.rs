//! The full-file consistency walk behind [`Table::verify`].

use super::*;
use crate::key::compare;
use crate::vlog::ValuePointer;

/// Walks every slot in order, accumulating what must match the properties.
pub(super) struct Checker<'t> {
    table: &'t Table,
    previous: Option<(Vec<u8>, u64)>,
    counts: [u64; 3],
    raw_key_bytes: u64,
    raw_value_bytes: u64,
}

impl<'t> Checker<'t> {
    pub(super) fn new(table: &'t Table) -> Self {
        Checker {
            table,
            previous: None,
            counts: [0; 3],
            raw_key_bytes: 0,
            raw_value_bytes: 0,
        }
    }

    pub(super) fn check_block(&mut self, block: &LoadedBlock) -> Result<()> {
        let t = self.table;
        let meta = t.meta_of(block.block)?;
        let chunk = t.value_chunk(block.block, &meta, true)?;
        self.raw_value_bytes += chunk.len() as u64;
        let chunk_offset = t.value_chunk_offset(&meta);
        let suffixes = t.block_bytes(block).get(block.slots_len..).unwrap_or_default();
        let (mut next_value, mut next_suffix) = (0usize, 0usize);
        let head = t.layout.head_bytes();
        for pos in t.fence.block_positions(block.block) {
            let slot = t.slot(block, pos)?;
            let at = t.slot_file_offset(block, pos);
            let corrupt = |why: &str| Error::corruption(&t.path, at, why);
            let in_block = (pos - block.first_pos) as usize * t.layout.slot;
            let slot_bytes = t
                .block_bytes(block)
                .get(in_block..in_block + t.layout.slot)
                .unwrap_or_default();
            if t.layout.head_padding(slot_bytes, &slot.raw).iter().any(|&b| b != 0) {
                return Err(corrupt("non-zero key padding"));
            }
            if t.layout.params.suffix_bytes > 0 {
                if slot.raw.suffix_at != next_suffix {
                    return Err(corrupt("key suffixes do not tile the block's suffix chunk"));
                }
                next_suffix += slot.raw.rest_len.saturating_sub(head);
            }
            let key = t.key_of(block, &slot);
            let trailer = slot.trailer();
            if let Some((k, tr)) = &self.previous {
                if compare(k, *tr, &key, trailer) != Ordering::Less {
                    return Err(corrupt("entries are not in increasing order"));
                }
            } else if (&key[..], trailer) != (&t.smallest().user_key[..], t.smallest().trailer()) {
                return Err(corrupt("first entry differs from the smallest key"));
            }
            let (_, kind) = unpack_trailer(trailer).ok_or_else(|| corrupt("unknown value kind"))?;
            match kind {
                ValueKind::Value | ValueKind::ExpiringValue => {
                    let prev = t.prev_reference(block, pos)?;
                    let (offset, len) = t
                        .inline_ref(
                            slot.reference(),
                            prev.as_ref().map(super::PrevRef::bytes),
                            meta.values_start,
                        )
                        .ok_or_else(|| corrupt("malformed value reference"))?;
                    if offset != next_value {
                        return Err(corrupt("inline values do not tile the value chunk"));
                    }
                    let value = chunk
                        .get(offset..offset + len)
                        .ok_or_else(|| corrupt("value outside its chunk"))?;
                    if kind == ValueKind::ExpiringValue && crate::expiry::split(value).is_none() {
                        return Err(corrupt("expiring value shorter than its expiry time"));
                    }
                    if let Some(r) = t.layout.params.v1_refs.then(|| InlineRef::decode(slot.reference())).flatten() {
                        if crc(value) != r.crc {
                            return Err(corrupt("inline value checksum mismatch"));
                        }
                    }
                    next_value += len;
                }
                ValueKind::Pointer => {
                    ValuePointer::decode(slot.reference())
                        .ok_or_else(|| corrupt("malformed value pointer"))?;
                }
                ValueKind::Delete if t.layout.params.end_only_refs() => {
                    // Format 7: the field holds the end of the values before it.
                    let end = crate::sst::format::ChunkRef::decode_end(
                        slot.reference(),
                        None,
                        t.layout.params.value_field_bytes(),
                    );
                    if end.is_none_or(|r| r.len as usize != next_value) {
                        return Err(corrupt("tombstone's reference is not the values' end"));
                    }
                }
                ValueKind::Delete => {
                    if slot.reference().iter().any(|&b| b != 0) {
                        return Err(corrupt("tombstone with a non-zero reference"));
                    }
                }
            }
            // Expiring values are inline values in the properties' counts.
            let counted = if kind.is_inline() { ValueKind::Value } else { kind };
            self.counts[counted as usize] += 1;
            self.raw_key_bytes += key.len() as u64;
            self.previous = Some((key, trailer));
        }
        if next_value != chunk.len() {
            return Err(Error::corruption(
                &t.path,
                chunk_offset,
                "value chunk holds bytes no entry refers to",
            ));
        }
        if next_suffix != suffixes.len() {
            return Err(Error::corruption(
                &t.path,
                block.start,
                "suffix chunk holds bytes no key refers to",
            ));
        }
        let last = self.previous.as_ref().map(|(k, tr)| (&k[..], *tr));
        if last != t.fence.block_last_key(block.block) {
            return Err(Error::corruption(
                &t.path,
                t.footer.index.offset,
                format!(
                    "fence key of block {} differs from its last entry",
                    block.block
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn finish(self) -> Result<()> {
        let t = self.table;
        let p = &t.properties;
        let counts = [p.deletes, p.inline_values, p.pointers];
        if self.counts != counts
            || self.raw_key_bytes != p.raw_key_bytes
            || self.raw_value_bytes != p.raw_value_bytes
        {
            return Err(Error::corruption(
                &t.path,
                t.footer.properties.offset,
                "entry counts differ from the properties",
            ));
        }
        Ok(())
    }
}

impl Table {
    /// Reads and checks every checksum of the file and the consistency of every slot with
    /// the index and properties (used by `augur verify`). Ignores what was verified before.
    ///
    /// # Errors
    /// The first `Corruption` found.
    pub fn verify(&self) -> Result<()> {
        for (s, name) in [
            (&self.footer.filter, "filter"),
            (&self.footer.index, "fence index"),
            (&self.footer.model, "model"),
            (&self.footer.properties, "properties"),
        ] {
            let bytes = self.read(s.offset, s.len)?;
            if crc(&bytes) != s.crc {
                return Err(Error::corruption(
                    &self.path,
                    s.offset,
                    format!("{name} section checksum mismatch"),
                ));
            }
        }
        let mut checker = verify::Checker::new(self);
        for block_no in 0..self.fence.block_count() {
            let block = self.load_block(block_no, true)?;
            checker.check_block(&block)?;
        }
        checker.finish()
    }

}
