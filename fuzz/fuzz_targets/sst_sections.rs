//! Shared by `sst_filter`, `sst_fence` and `sst_slots`: the table file their sections are
//! said to come from, how a section is sliced out of a whole `.sst` file (by its footer; the
//! sections' checksums are not checked, so that fuzzed section bytes reach the decoder), and
//! tables built from fuzzed entries with the engine's table builder (format 2: the slot
//! layout, the head width and the value chunks' compression chosen by the input).

use augur::fs::{FileSystem, MemFs};
use augur::key::{pack_trailer, SeqNo, ValueKind};
use augur::sst::{Builder, BuilderOptions, Footer, Properties, Section, FOOTER_LEN};
use augur::vlog::ValuePointer;
use augur::Compression;
use std::path::Path;

/// The file every decoded section claims to come from.
pub fn file() -> &'static Path {
    Path::new("/db/000011.sst")
}

/// A table's footer and properties, decoded from a whole file; `Err` when either is
/// rejected (the error must then be clean, which the caller checks).
pub fn footer_and_properties(table: &[u8]) -> Option<augur::Result<(Footer, Properties)>> {
    let footer_at = table.len().checked_sub(FOOTER_LEN)?;
    let footer_bytes = table.get(footer_at..)?;
    Some(
        Footer::decode(footer_bytes, file(), footer_at as u64).and_then(|footer| {
            let props = slice(table, &footer.properties);
            Properties::decode(props, footer.version, file(), footer.properties.offset)
                .map(|p| (footer, p))
        }),
    )
}

/// The bytes of `s` in `table` (a decoded footer's sections lie inside the file).
pub fn slice<'a>(table: &'a [u8], s: &Section) -> &'a [u8] {
    let start = usize::try_from(s.offset).unwrap_or(usize::MAX);
    let end = usize::try_from(s.end()).unwrap_or(usize::MAX);
    table.get(start..end).unwrap_or_default()
}

/// Most entries [`build_table`] puts in a table: 64 entries at 1-8 slots per block are up to
/// 64 blocks, plenty for the index's binary search. (It was 256: the engine's edges the
/// `sst_fence` corpus covers are the same with 64, and an execution costs time per entry.)
pub const MAX_ENTRIES: usize = 64;

/// One entry of a built table, in internal-key order.
pub struct Entry {
    pub key: Vec<u8>,
    pub trailer: u64,
    /// The inline value, the encoded value pointer, or empty (tombstone).
    pub value: Vec<u8>,
}

/// The builder options a table's two option bytes choose: `layout % 8 + 1` slots per block,
/// the value chunks' compression `layout / 8 % 3` (none, lz4, zstd:1), the slot head width
/// `layout / 24` (0: chosen per file, `h` ≥ 1: `h - 1` bytes, so 0..=9 — most keys overflow
/// into their block's suffix chunk), and `bits % 25` filter bits per key. A layout byte
/// below 8 is the builder's defaults besides the block size (what the seed corpora hold).
pub fn options(layout: u8, bits: u8) -> BuilderOptions {
    let compression = match layout / 8 % 3 {
        0 => Compression::None,
        1 => Compression::Lz4,
        _ => Compression::Zstd(1),
    };
    let head_bytes = match layout / 24 {
        0 => None,
        h => Some(u32::from(h) - 1),
    };
    BuilderOptions {
        block_records: usize::from(layout % 8) + 1,
        bloom_bits_per_key: u32::from(bits % 25),
        model: None,
        model_budget: None,
        compression,
        head_bytes,
        // Block prefixes (format 5) whenever the layout byte's parity allows them.
        block_prefixes: bits % 2 == 0,
        // Compressed blocks (format 6, with a codec) in three runs of four.
        compress_keys: bits % 4 != 3,
    }
}

/// A table written by the engine's builder from `input`: the first byte picks the layout
/// and the second the filter's bits per key ([`options`]); then entries, each a byte `b`
/// (key length `b % 24`, kind `b / 24 % 3`: value, delete, pointer) and the key. Keys are
/// sorted; repeated keys become versions with descending seqnos. At most [`MAX_ENTRIES`]
/// entries are read (the checks per entry are what an execution costs). Returns the file and
/// its entries, or `None` when the input holds no entry.
pub fn build_table(input: &[u8]) -> Option<(Vec<u8>, Vec<Entry>)> {
    let (&[layout, bits], mut rest) = input.split_first_chunk::<2>()?;
    let mut raw: Vec<(Vec<u8>, u8)> = Vec::new();
    while let Some((&b, tail)) = rest.split_first().filter(|_| raw.len() < MAX_ENTRIES) {
        let len = usize::from(b % 24).min(tail.len());
        raw.push((tail[..len].to_vec(), b / 24 % 3));
        rest = &tail[len..];
    }
    if raw.is_empty() {
        return None;
    }
    // Stable: versions of one key keep their input order, newest (highest seqno) first. By
    // the key's bytewise order, compared as three big-endian words (zero-padded) then the
    // length: the same order for keys of at most 24 bytes, without the `memcmp` calls that
    // libFuzzer intercepts (costly).
    raw.sort_by_cached_key(|(key, _)| words(key));
    let entries = raw
        .into_iter()
        .enumerate()
        .map(|(i, (key, kind))| match kind {
            0 => (key, ValueKind::Value, vec![b'v'; i % 7]),
            1 => (key, ValueKind::Delete, Vec::new()),
            _ => (key, ValueKind::Pointer, pointer(i)),
        })
        .collect::<Vec<_>>();
    let n = entries.len() as u64;
    let bytes = write_table(options(layout, bits), entries, |i| n - i as u64);
    Some(bytes)
}

/// The encoded value pointer of the `i`-th entry of a built table.
pub fn pointer(i: usize) -> Vec<u8> {
    let p = ValuePointer {
        segment: 3,
        offset: i as u64 * 64,
        len: 40,
    };
    p.encode().to_vec()
}

/// Writes `entries` (user key, kind, value; sorted by key, versions of a key in the order
/// they are to be stored) with the engine's builder under `opts`, entry `i` at seqno
/// `seqno(i)` (strictly decreasing within a key, at least 1); returns the file and the
/// entries with their trailers.
pub fn write_table(
    opts: BuilderOptions,
    entries: Vec<(Vec<u8>, ValueKind, Vec<u8>)>,
    seqno: impl Fn(usize) -> SeqNo,
) -> (Vec<u8>, Vec<Entry>) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).expect("mkdir");
    let mut builder = Builder::new(
        fs.create(file()).expect("create"),
        file().to_path_buf(),
        opts,
    );
    let mut written = Vec::with_capacity(entries.len());
    for (i, (key, kind, value)) in entries.into_iter().enumerate() {
        let seqno = seqno(i);
        builder
            .add(&key, seqno, kind, &value)
            .expect("entries in internal-key order are accepted");
        written.push(Entry {
            trailer: pack_trailer(seqno, kind),
            key,
            value,
        });
    }
    builder
        .finish()
        .expect("a table of valid entries is written");
    let bytes = fs.read_all(file()).expect("read the table back");
    (bytes, written)
}

/// A key of at most 24 bytes as three big-endian words (zero-padded) and its length; these
/// tuples order like the keys' bytes (zero padding makes a key equal to its extensions by
/// zero bytes, which the length then puts after it).
fn words(key: &[u8]) -> (u64, u64, u64, usize) {
    let mut w = [0u64; 3];
    for (word, chunk) in w.iter_mut().zip(key.chunks(8)) {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_be_bytes(bytes);
    }
    (w[0], w[1], w[2], key.len())
}

/// Applies `edits` to `bytes`: 3-byte edits (position u16 LE, xor mask); a last odd byte cuts
/// that many bytes off the end.
pub fn damage(bytes: &mut Vec<u8>, edits: &[u8]) {
    for e in edits.chunks_exact(3) {
        let pos = usize::from(u16::from_le_bytes([e[0], e[1]]));
        if let Some(b) = bytes.get_mut(pos) {
            *b ^= e[2];
        }
    }
    if edits.len() % 3 != 0 {
        let cut = usize::from(edits[edits.len() - 1]);
        bytes.truncate(bytes.len().saturating_sub(cut));
    }
}
