//! The full-file consistency walk behind [`Table::verify`].

use super::*;
use crate::vlog::ValuePointer;

/// Walks every slot in order, accumulating what must match the properties.
pub(super) struct Checker<'t> {
    table: &'t Table,
    previous: Option<(Vec<u8>, u64)>,
    counts: [u64; 3],
    raw_key_bytes: u64,
}

impl<'t> Checker<'t> {
    pub(super) fn new(table: &'t Table) -> Self {
        Checker {
            table,
            previous: None,
            counts: [0; 3],
            raw_key_bytes: 0,
        }
    }

    pub(super) fn check_block(&mut self, block: &LoadedBlock) -> Result<()> {
        let t = self.table;
        let meta = t.fence.meta(block.block).copied().ok_or_else(|| {
            Error::corruption(&t.path, t.footer.index.offset, "missing fence record")
        })?;
        let chunk_offset = t.footer.values.offset + meta.values_start;
        let chunk = t.read(chunk_offset, meta.values_end - meta.values_start)?;
        if crc(&chunk) != meta.values_crc {
            return Err(Error::corruption(
                &t.path,
                chunk_offset,
                format!("value chunk of block {} checksum mismatch", block.block),
            ));
        }
        let mut next_value = meta.values_start;
        for pos in t.fence.block_positions(block.block) {
            let slot = t.slot(block, pos)?;
            let at = t.footer.data.offset + pos * t.slot_bytes as u64;
            let corrupt = |why: &str| Error::corruption(&t.path, at, why);
            let padding = t.block_bytes(block).get(
                (pos - block.first_pos) as usize * t.slot_bytes + slot.key.len()
                    ..(pos - block.first_pos) as usize * t.slot_bytes + t.key_width,
            );
            if padding.is_none_or(|p| p.iter().any(|&b| b != 0)) {
                return Err(corrupt("non-zero key padding"));
            }
            if let Some((k, tr)) = &self.previous {
                if compare(k, *tr, slot.key, slot.trailer) != Ordering::Less {
                    return Err(corrupt("entries are not in increasing order"));
                }
            } else if (slot.key, slot.trailer)
                != (&t.smallest().user_key[..], t.smallest().trailer())
            {
                return Err(corrupt("first entry differs from the smallest key"));
            }
            let (_, kind) =
                unpack_trailer(slot.trailer).ok_or_else(|| corrupt("unknown value kind"))?;
            match kind {
                ValueKind::Value => {
                    let r = InlineRef::decode(slot.reference)
                        .ok_or_else(|| corrupt("malformed value reference"))?;
                    if r.offset != next_value {
                        return Err(corrupt("inline values do not tile the value section"));
                    }
                    let start = (r.offset - meta.values_start) as usize;
                    let value = chunk
                        .get(start..start + r.len as usize)
                        .ok_or_else(|| corrupt("value outside its chunk"))?;
                    if crc(value) != r.crc {
                        return Err(corrupt("inline value checksum mismatch"));
                    }
                    next_value = r.end();
                }
                ValueKind::Pointer => {
                    ValuePointer::decode(slot.reference)
                        .ok_or_else(|| corrupt("malformed value pointer"))?;
                }
                ValueKind::Delete => {
                    if slot.reference != [0u8; REF_BYTES] {
                        return Err(corrupt("tombstone with a non-zero reference"));
                    }
                }
            }
            self.counts[kind as usize] += 1;
            self.raw_key_bytes += slot.key.len() as u64;
            self.previous = Some((slot.key.to_vec(), slot.trailer));
        }
        if next_value != meta.values_end {
            return Err(Error::corruption(
                &t.path,
                chunk_offset,
                "value chunk holds bytes no entry refers to",
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
        if self.counts != counts || self.raw_key_bytes != p.raw_key_bytes {
            return Err(Error::corruption(
                &t.path,
                t.footer.properties.offset,
                "entry counts differ from the properties",
            ));
        }
        Ok(())
    }
}
