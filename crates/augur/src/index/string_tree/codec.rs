//! The string tree's encoding (`docs/format/index.md`, "Kind 8"): nodes in pre-order, each
//! child's positions relative to its parent's base; decoding checks every invariant the
//! search relies on and lays the nodes out as a build does.

use super::{layout, Draft, StringTree, LEAF, MAX_DEPTH, MAX_TREE_KEYS};
use crate::coding::{put_u64, put_varint, Decoder};

impl StringTree {
    /// Decodes the body written after the header (see `docs/format/index.md`), checking
    /// every invariant the search relies on.
    pub(in crate::index) fn decode_body(body: &[u8]) -> std::result::Result<StringTree, String> {
        let mut d = Decoder::new(body);
        let (Some(run_limit), Some(delta), Some(n)) = (d.u32(), d.u32(), d.u64()) else {
            return Err("string tree: truncated parameters".into());
        };
        if run_limit == 0 || n > MAX_TREE_KEYS || delta > u32::MAX / 4 {
            return Err(format!(
                "string tree: run limit {run_limit}, error bound {delta}, {n} keys"
            ));
        }
        let mut drafts = Vec::new();
        decode_node(&mut d, &mut drafts, 0, 0, n as u32, true)?;
        if !d.is_empty() {
            return Err(format!("string tree: {} trailing bytes", d.remaining()));
        }
        Ok(layout(drafts, delta, run_limit))
    }

    /// Appends the encoding of node `id` (pre-order; children's positions relative to
    /// their parent's base).
    pub(super) fn encode_node(&self, out: &mut Vec<u8>, id: usize) {
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        if id != 0 {
            let extra = self.extra(id);
            put_varint(out, extra.len() as u64);
            out.extend_from_slice(extra);
        }
        if node.first_child == LEAF {
            out.push(0);
            let tail = if id == 0 { self.extra(0) } else { &[] };
            put_varint(out, tail.len() as u64);
            out.extend_from_slice(tail);
            return;
        }
        let segments = self.segment_range(id);
        if segments.is_empty() {
            out.push(2);
        } else {
            out.push(1);
            put_varint(out, segments.len() as u64);
            for s in segments {
                put_u64(out, self.seg_x[s]);
                put_varint(out, u64::from(self.seg_pos[s]));
                put_u64(out, self.seg_slope[s].to_bits());
            }
        }
        let children = self.children(node);
        put_varint(out, children.len() as u64);
        for c in children {
            let child = &self.nodes[c];
            put_u64(out, self.child_x[c]);
            put_varint(out, u64::from(child.base - node.base));
            put_varint(out, u64::from(child.len));
            self.encode_node(out, c);
        }
    }
}

/// Decodes a node covering positions `[base, base + len)` at tree level `level` into
/// `drafts` (pre-order); returns its index. The root carries no `extra` and may be empty;
/// every other node holds a key.
fn decode_node(
    d: &mut Decoder<'_>,
    drafts: &mut Vec<Draft>,
    level: usize,
    base: u32,
    len: u32,
    root: bool,
) -> std::result::Result<usize, String> {
    if level > MAX_DEPTH {
        return Err("string tree: too deep".into());
    }
    let extra = match root {
        true => &[][..],
        false => d.length_prefixed().ok_or("string tree: truncated prefix")?,
    };
    let too_large = || "string tree: too large".to_string();
    let id = drafts.len();
    let tag = d.u8().ok_or("string tree: truncated node")?;
    if tag == 0 {
        if len == 0 {
            return Err("string tree: an empty leaf".into());
        }
        let tail = d.length_prefixed().ok_or("string tree: truncated leaf")?;
        if !root && !tail.is_empty() {
            return Err("string tree: a leaf below the root with a tail".into());
        }
        let stored = if root { tail } else { extra };
        u32::try_from(stored.len()).map_err(|_| too_large())?;
        drafts.push(Draft {
            base,
            len,
            extra: stored.to_vec(),
            leaf: true,
            segments: Vec::new(),
            children: Vec::new(),
        });
        return Ok(id);
    }
    let segments = match tag {
        2 => Vec::new(),
        1 => {
            let count = d.varint().ok_or("string tree: truncated segments")?;
            // Each segment takes at least 17 bytes: a count beyond them is damage.
            if count == 0 || count > d.remaining() as u64 / 17 {
                return Err(format!("string tree: {count} segments"));
            }
            let mut segments: Vec<(u64, u32, f64)> = Vec::with_capacity(count as usize);
            for i in 0..count {
                let (Some(x), Some(pos), Some(bits)) = (d.u64(), d.varint(), d.u64()) else {
                    return Err("string tree: truncated segment".into());
                };
                let slope = f64::from_bits(bits);
                let ordered = segments
                    .last()
                    .map_or(pos == 0, |&(px, pp, _)| px < x && u64::from(pp) <= pos);
                if !ordered || pos > u64::from(len) {
                    return Err(format!("string tree: segment {i} out of order"));
                }
                if !(slope.is_finite() && slope >= 0.0) {
                    return Err(format!("string tree: segment {i} has slope {slope}"));
                }
                segments.push((x, pos as u32, slope));
            }
            segments
        }
        other => return Err(format!("string tree: node tag {other}")),
    };
    drafts.push(Draft {
        base,
        len,
        extra: extra.to_vec(),
        leaf: false,
        segments,
        children: Vec::new(),
    });
    let count = d.varint().ok_or("string tree: truncated redirects")?;
    if count > u64::from(len) {
        return Err(format!("string tree: {count} redirects in {len} keys"));
    }
    let end = u64::from(base) + u64::from(len);
    let mut next_free = u64::from(base);
    let mut last_x = None;
    for _ in 0..count {
        let (Some(x), Some(start), Some(child_len)) = (d.u64(), d.varint(), d.varint()) else {
            return Err("string tree: truncated redirect".into());
        };
        let child_base = u64::from(base).saturating_add(start);
        let child_end = child_base.saturating_add(child_len);
        if last_x.is_some_and(|l| l >= x)
            || child_base < next_free
            || child_end > end
            || child_len == 0
        {
            return Err("string tree: redirects out of order".into());
        }
        last_x = Some(x);
        next_free = child_end;
        // Both fit u32: they are within [base, base + len].
        let child = decode_node(
            d,
            drafts,
            level + 1,
            child_base as u32,
            child_len as u32,
            false,
        )?;
        drafts[id].children.push((x, child));
    }
    Ok(id)
}
