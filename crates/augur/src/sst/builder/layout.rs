//! How the builder chooses a table's slot layout (docs/format/sst.md "Choosing the layout"):
//! exactly, from every entry, when the whole table fits in the builder's sample; otherwise
//! from the sample and the caller's [`LayoutHints`], before the first block is written — then
//! each later entry is checked against the layout ([`Streaming::check`]) and refused if the
//! layout cannot store it, so a wrong hint is an error, never a corrupt file.

use super::pending::{Pending, PendingValue};
use super::BuilderOptions;
use crate::index::projection::common_prefix_len;
use crate::key::{SeqNo, ValueKind, MAX_KEY_LEN, MAX_SEQNO};
use crate::sst::slot::{self, SlotParams, POINTER_REF_BYTES};

/// What the caller of a [`super::Builder`] knows about the entries it will add, so the
/// builder can fix the slot layout before it has seen them all and write each block as soon
/// as it is full. Every field is optional and, when set, must be a sound bound over every
/// entry that will be added; the sample the builder holds widens it if needed. The default
/// knows nothing: the builder then chooses widths that store any entry (no stripped prefix, a
/// 2-byte length, an 8-byte trailer, a 20-byte reference) once a table outgrows its sample.
///
/// No lower bound of the keys is asked for: keys arrive sorted, so the first key added is the
/// exact lower bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayoutHints {
    /// An upper bound of the user keys (inclusive). Every key then shares the common prefix
    /// of the first key and this bound, which the file stores once.
    pub max_user_key: Option<Vec<u8>>,
    /// Bounds of the user keys' lengths: `(shortest, longest)`.
    pub key_len: Option<(usize, usize)>,
    /// Bounds of the seqnos: `(smallest, largest)`.
    pub seqnos: Option<(SeqNo, SeqNo)>,
    /// What kinds of values will be added (`None`: any).
    pub values: Option<ValueHints>,
}

/// The values a table will hold, for the width of the slots' reference field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueHints {
    /// Length of the longest inline value; `None` when no inline value will be added.
    pub max_inline_len: Option<u32>,
    /// Whether value pointers may be added.
    pub pointers: bool,
}

/// What the sample (the entries held when the layout is chosen) shows.
#[derive(Debug, Clone, Copy)]
struct Observed {
    shortest_key: usize,
    longest_key: usize,
    seqnos: (SeqNo, SeqNo),
    max_trailer: u64,
    inline: bool,
    pointers: bool,
    longest_inline: u64,
}

fn observe(pending: &Pending) -> Observed {
    let mut o = Observed {
        shortest_key: usize::MAX,
        longest_key: 0,
        seqnos: (SeqNo::MAX, 0),
        max_trailer: 0,
        inline: false,
        pointers: false,
        longest_inline: 0,
    };
    for e in &pending.entries {
        let len = pending.key(e).len();
        o.shortest_key = o.shortest_key.min(len);
        o.longest_key = o.longest_key.max(len);
        let seqno = e.trailer >> 8;
        o.seqnos = (o.seqnos.0.min(seqno), o.seqnos.1.max(seqno));
        o.max_trailer = o.max_trailer.max(e.trailer);
        match e.value {
            PendingValue::Inline { len, .. } => {
                o.inline = true;
                o.longest_inline = o.longest_inline.max(u64::from(len));
            }
            PendingValue::Pointer(_) => o.pointers = true,
            PendingValue::Tombstone => {}
        }
    }
    if pending.entries.is_empty() {
        o.shortest_key = 0;
        o.seqnos = (0, 0);
    }
    o
}

/// Width of the length field for rests in `[min_rest, max_rest]`.
fn len_bytes(min_rest: u32, max_rest: u32) -> u8 {
    if min_rest == max_rest {
        0
    } else if max_rest <= 255 {
        1
    } else {
        2
    }
}

/// The head width of a table whose keys' rests (past the file's prefix `prefix`) are
/// `rests` in `pending` (the table, or its sample), whether its blocks store their shared
/// prefixes, and what each slot then stores of each key. Block prefixes are used when the
/// options allow them and they let the head be narrower than the longest rest (`widest`):
/// otherwise every key fits its head without them, and they would save no byte while every
/// lookup paid for matching them. `max_rest` bounds the rests of keys not in `pending`.
fn head_and_block_prefixes(
    pending: &Pending,
    opts: &BuilderOptions,
    (prefix, block_records): (usize, u32),
    rests: Vec<u32>,
    max_rest: u32,
    widest: u32,
) -> (u32, bool, Vec<u32>) {
    let choose = |stored: &[u32]| match opts.head_bytes {
        Some(h) => h.min(widest),
        None => slot::choose_head_bounded(stored, max_rest, widest),
    };
    if opts.block_prefixes {
        let stored = pending.block_rest_lengths(prefix, block_records, true);
        let head = choose(&stored);
        if head < widest {
            return (head, true, stored);
        }
    }
    (choose(&rests), false, rests)
}

/// The layout that stores the entries of `pending` — every entry of the table — in the fewest
/// bytes (or with the head width the options ask for), and whether its blocks store their
/// shared prefixes.
pub(super) fn exact(
    pending: &Pending,
    opts: &BuilderOptions,
    block_records: u32,
) -> (SlotParams, bool) {
    let o = observe(pending);
    let (first, last) = pending.first_and_last_key();
    let prefix = common_prefix_len(first, last);
    let rests = pending.rest_lengths(prefix);
    let longest = rests.iter().copied().max().unwrap_or(0);
    let shortest = rests.iter().copied().min().unwrap_or(0);
    // What the slots store: each key past its block's prefix (format 5) when that pays.
    let (head, block_prefixes, stored) = head_and_block_prefixes(
        pending,
        opts,
        (prefix, block_records),
        rests,
        longest,
        longest,
    );
    let len_bytes = len_bytes(shortest, longest);
    let mut max_suffix_chunk = 0u64;
    let mut max_value_chunk = 0u64;
    for (chunk, block_rests) in pending
        .entries
        .chunks(block_records as usize)
        .zip(stored.chunks(block_records as usize))
    {
        let overflow: u64 = block_rests
            .iter()
            .map(|&r| u64::from(r.saturating_sub(head)))
            .sum();
        max_suffix_chunk = max_suffix_chunk.max(overflow);
        max_value_chunk = max_value_chunk.max(Pending::values_of(chunk).len() as u64);
    }
    let suffix_bytes = match max_suffix_chunk {
        0 => 0,
        n if n <= u64::from(u16::MAX) => 2,
        _ => 4,
    };
    let trailer_base = o.seqnos.0 << 8;
    // Format 7's end references: one field of 2 or 4 bytes.
    let ref_bytes = if o.pointers {
        POINTER_REF_BYTES as u8
    } else if !o.inline {
        0
    } else if max_value_chunk <= u64::from(u16::MAX) {
        2
    } else {
        4
    };
    let params = SlotParams {
        prefix_len: prefix as u32,
        head_bytes: head,
        len_bytes,
        fixed_rest_len: if len_bytes == 0 { longest } else { 0 },
        suffix_bytes,
        trailer_bytes: slot::width_of(o.max_trailer - trailer_base),
        trailer_base,
        ref_bytes,
        v1_refs: false,
        end_refs: true,
    };
    (params, block_prefixes)
}

/// The layout of a table written block by block, chosen from the sample and the hints, and
/// the limits each later entry is checked against.
#[derive(Debug, Clone)]
pub(super) struct Streaming {
    pub(super) params: SlotParams,
    /// The stripped prefix's bytes.
    pub(super) prefix: Vec<u8>,
    /// Whether blocks store their shared key prefix once (format 5).
    pub(super) block_prefixes: bool,
    /// Longest key the length field (or the fixed length) allows, after the prefix.
    max_rest: u32,
    /// Overflow bytes one block's suffix chunk may hold (0 when nothing may overflow).
    suffix_limit: u64,
    /// Inline-value bytes one block's value chunk may hold (0 when no inline value may).
    value_chunk_limit: u64,
    /// Largest `trailer − trailer_base` the trailer field holds.
    max_stored_trailer: u64,
}

/// Largest value a little-endian field of `width` bytes holds.
fn field_max(width: u8) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * u32::from(width))) - 1
    }
}

impl Streaming {
    /// The layout for a table whose first entries are `pending` (at least one) and whose
    /// other entries satisfy `hints`: every field is as narrow as the sample and the hints
    /// allow (docs/format/sst.md "Choosing the layout").
    pub(super) fn choose(
        pending: &Pending,
        hints: &LayoutHints,
        opts: &BuilderOptions,
        block_records: u32,
    ) -> Streaming {
        let o = observe(pending);
        let (first, last) = pending.first_and_last_key();
        // Later keys lie in [last, max_user_key]: they share that range's common prefix, a
        // prefix of `last`, as the sample's keys share the prefix of `first` and `last`.
        let prefix = match &hints.max_user_key {
            Some(hi) => common_prefix_len(first, last).min(common_prefix_len(last, hi)),
            None => 0,
        };
        let (shortest, longest) = match hints.key_len {
            Some((lo, hi)) => (lo.min(o.shortest_key), hi.max(o.longest_key)),
            None => (0, MAX_KEY_LEN),
        };
        let min_rest = (shortest.max(prefix) - prefix) as u32;
        let max_rest = (longest.min(MAX_KEY_LEN).max(prefix) - prefix) as u32;
        let rests = pending.rest_lengths(prefix);
        let sample_longest = rests.iter().copied().max().unwrap_or(0);
        // What the slots store: each key past its block's prefix (format 5) when that pays.
        let (head, block_prefixes, _) = head_and_block_prefixes(
            pending,
            opts,
            (prefix, block_records),
            rests,
            max_rest,
            sample_longest,
        );
        let len_bytes = len_bytes(min_rest, max_rest);
        let (suffix_bytes, suffix_limit) = if max_rest <= head {
            (0, 0)
        } else if u64::from(block_records) * u64::from(max_rest - head) <= u64::from(u16::MAX) {
            (2, u64::from(u16::MAX))
        } else {
            (4, u64::from(u32::MAX))
        };
        let (min_seqno, max_seqno) = match hints.seqnos {
            Some((lo, hi)) => (lo.min(o.seqnos.0), hi.max(o.seqnos.1).min(MAX_SEQNO)),
            None => (0, MAX_SEQNO),
        };
        let trailer_base = min_seqno << 8;
        // The kind byte never widens the field: only the seqno span does.
        let trailer_bytes = slot::width_of(((max_seqno - min_seqno) << 8) | 0xff);
        let (pointers, longest_inline) = match hints.values {
            Some(v) => (
                v.pointers || o.pointers,
                // `None` (no inline value) sorts below any length.
                v.max_inline_len
                    .map(u64::from)
                    .max(o.inline.then_some(o.longest_inline)),
            ),
            None => (true, Some(u64::from(u32::MAX))),
        };
        let (ref_bytes, value_chunk_limit) = match longest_inline {
            _ if pointers => (POINTER_REF_BYTES as u8, u64::from(u32::MAX)),
            None => (0, 0),
            Some(len) if u64::from(block_records) * len <= u64::from(u16::MAX) => {
                (2, u64::from(u16::MAX))
            }
            Some(_) => (4, u64::from(u32::MAX)),
        };
        let params = SlotParams {
            prefix_len: prefix as u32,
            head_bytes: head,
            len_bytes,
            fixed_rest_len: if len_bytes == 0 { max_rest } else { 0 },
            suffix_bytes,
            trailer_bytes,
            trailer_base,
            ref_bytes,
            v1_refs: false,
            end_refs: true,
        };
        Streaming {
            params,
            prefix: first.get(..prefix).unwrap_or_default().to_vec(),
            block_prefixes,
            max_rest: match len_bytes {
                0 => max_rest,
                1 => 255,
                _ => u32::from(u16::MAX),
            },
            suffix_limit,
            value_chunk_limit,
            max_stored_trailer: field_max(trailer_bytes),
        }
    }

    /// Longest key after the file's prefix this layout stores.
    pub(super) fn max_rest(&self) -> u32 {
        self.max_rest
    }

    /// Why an entry (`user_key`, `trailer`, `kind` and `value_len` bytes of inline value)
    /// cannot be stored in this layout, given the overflow and inline-value bytes its block
    /// holds already; `None` when it can.
    pub(super) fn check(
        &self,
        user_key: &[u8],
        trailer: u64,
        kind: ValueKind,
        value_len: usize,
        block_overflow: u64,
        block_values: u64,
    ) -> Option<String> {
        let p = &self.params;
        let Some(rest) = user_key.strip_prefix(self.prefix.as_slice()) else {
            return Some(format!(
                "key {user_key:?} lacks the prefix {:?} the layout strips",
                self.prefix
            ));
        };
        let rest_len = rest.len() as u64;
        if (p.len_bytes == 0 && rest_len != u64::from(p.fixed_rest_len))
            || rest_len > u64::from(self.max_rest)
        {
            return Some(format!(
                "key of {} bytes does not fit the layout's key lengths",
                user_key.len()
            ));
        }
        let overflow = rest_len.saturating_sub(u64::from(p.head_bytes));
        if overflow > 0 && block_overflow + overflow > self.suffix_limit {
            return Some(format!(
                "key of {} bytes overflows the layout's key suffixes",
                user_key.len()
            ));
        }
        let stored = trailer.checked_sub(p.trailer_base);
        if stored.is_none_or(|s| s > self.max_stored_trailer) {
            return Some(format!(
                "seqno {} is outside the layout's seqno range",
                trailer >> 8
            ));
        }
        let fits = match kind {
            ValueKind::Delete => true,
            ValueKind::Pointer => usize::from(p.ref_bytes) == POINTER_REF_BYTES,
            ValueKind::Value | ValueKind::ExpiringValue => {
                block_values + value_len as u64 <= self.value_chunk_limit
            }
        };
        if !fits {
            return Some(format!(
                "a {kind:?} entry does not fit the layout's {}-byte references",
                p.ref_bytes
            ));
        }
        None
    }
}

/// Entries of written blocks over which [`LayoutDrift`] compares the file's head width with
/// the one a fresh sample would choose: as many as a sample holds.
pub(super) const DRIFT_WINDOW_ENTRIES: usize = super::SAMPLE_ENTRIES;

/// The share of a window's bytes (slots, key overflows and inline values) a fresh layout
/// must save for the layout to count as drifted: 1/16.
const DRIFT_WASTE_DIVISOR: u64 = 16;

/// Watches whether a streamed table's layout, chosen from its first entries, still fits the
/// keys written since: a table's keys can change shape across its key range (file paths of
/// one package, then of another), and a head chosen for the first region can cost each key
/// of the next twice its bytes. Over each window of [`DRIFT_WINDOW_ENTRIES`] written entries
/// it prices the keys in the file's head width and in the width
/// [`slot::choose_head_bounded`] would choose from that window as a fresh sample, and
/// reports [`Self::drifted`] once a window would be stored in at least
/// 1/[`DRIFT_WASTE_DIVISOR`] fewer bytes. The compaction then ends its output at the next
/// user key, so the next file chooses its layout from keys of the new shape. Only the head
/// and the suffix-offset field are priced: the other fields do not depend on the keys'
/// shape.
#[derive(Debug, Clone)]
pub(super) struct LayoutDrift {
    /// The file's head width and suffix-offset field width.
    head: u32,
    suffix_bytes: u32,
    /// Longest key after the file's prefix the layout stores.
    max_rest: u32,
    /// What a fresh layout would store of each key of the window (past its block's prefix).
    fresh_rests: Vec<u32>,
    /// Head and overflow bytes the file's layout spent on the window's keys.
    spent: u64,
    /// Bytes of the window's blocks (slots, overflows, inline values).
    window_bytes: u64,
    drifted: bool,
}

impl LayoutDrift {
    /// A watch over the blocks of a table in the layout `params`, whose keys are at most
    /// `max_rest` long after the file's prefix.
    pub(super) fn new(params: &SlotParams, max_rest: u32) -> LayoutDrift {
        LayoutDrift {
            head: params.head_bytes,
            suffix_bytes: u32::from(params.suffix_bytes),
            max_rest,
            fresh_rests: Vec::new(),
            spent: 0,
            window_bytes: 0,
            drifted: false,
        }
    }

    /// Notes a written block: what its slots store of each key (`stored`, past the block's
    /// prefix in the file's layout), what a fresh layout would store (`fresh`, past the
    /// prefix all its keys share), and the block's bytes.
    pub(super) fn observe_block(
        &mut self,
        stored: impl Iterator<Item = u32>,
        fresh: impl Iterator<Item = u32>,
        block_bytes: u64,
    ) {
        let per_slot = u64::from(self.head + self.suffix_bytes);
        for r in stored {
            self.spent += per_slot + u64::from(r.saturating_sub(self.head));
        }
        self.fresh_rests.extend(fresh);
        self.window_bytes += block_bytes;
        if self.fresh_rests.len() >= DRIFT_WINDOW_ENTRIES {
            self.drifted |= self.window_drifted();
            self.fresh_rests.clear();
            self.spent = 0;
            self.window_bytes = 0;
        }
    }

    /// Whether the window's keys would take at least 1/[`DRIFT_WASTE_DIVISOR`] of its bytes
    /// fewer in the head width a fresh sample of them would choose.
    fn window_drifted(&self) -> bool {
        let rests = &self.fresh_rests;
        let widest = rests.iter().copied().max().unwrap_or(0);
        let max_rest = self.max_rest.max(widest);
        let head = slot::choose_head_bounded(rests, max_rest, widest);
        let suffix_field = if head < max_rest { 2 } else { 0 };
        let fresh: u64 = rests
            .iter()
            .map(|&r| u64::from(head + suffix_field + r.saturating_sub(head)))
            .sum();
        self.spent.saturating_sub(fresh) * DRIFT_WASTE_DIVISOR >= self.window_bytes.max(1)
    }

    /// Whether some window of the blocks written so far was stored in markedly more bytes
    /// than a fresh layout would have needed.
    pub(super) fn drifted(&self) -> bool {
        self.drifted
    }
}
