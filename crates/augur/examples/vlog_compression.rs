//! Value-log compression: one value per compressed record (what Augur does, as BlobDB and
//! Titan do per blob) against batches of consecutive values compressed together. Measures,
//! on db_bench's compressible values, the bytes stored and the cost a point read pays
//! (decompressing its record, or its whole batch), for LZ4 and zstd.
//!
//! `cargo run --release -p augur --example vlog_compression [-- VALUES]`
//! (docs/benchmarks/format-v2.md, "Value log: per value or per batch").

use augur::Compression;
use std::hint::black_box;
use std::time::Instant;

/// db_bench's compressible value source (`RandomGenerator` with `--compression_ratio`):
/// 100-byte pieces each repeating `ratio × 100` random printable bytes.
fn db_bench_values(ratio: f64, total: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let raw = ((100.0 * ratio) as usize).clamp(1, 100);
    let mut data = Vec::with_capacity(total + 100);
    while data.len() < total {
        let piece: Vec<u8> = (0..raw).map(|_| b' ' + (next() % 95) as u8).collect();
        data.extend(piece.iter().cycle().take(100));
    }
    data
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    println!(
        "| value bytes | codec | grouping | stored / raw | compress ns/value | point read ns |"
    );
    println!("|---|---|---|---|---|---|");
    for value_len in [100usize, 1024] {
        let data = db_bench_values(0.5, count * value_len + (1 << 20), 301);
        // Values are slices at a moving offset, as db_bench takes them.
        let values: Vec<&[u8]> = (0..count)
            .map(|i| &data[(i * value_len) % (1 << 20)..][..value_len])
            .collect();
        for codec in [Compression::Lz4, Compression::Zstd(3)] {
            for batch in [1usize, 16, 64] {
                let (stored, compress_ns, read_ns) = measure(&values, codec, batch);
                let grouping = if batch == 1 {
                    "per value".to_string()
                } else {
                    format!("batch of {batch}")
                };
                println!(
                    "| {value_len} | {codec} | {grouping} | {:.3} | {compress_ns:.0} | {read_ns:.0} |",
                    stored as f64 / (count * value_len) as f64
                );
            }
        }
    }
}

/// Compresses `values` in groups of `batch` and returns the stored bytes (incompressible
/// groups stored raw), the compression time per value and the time of a point read (the
/// decompression of one value's group), averaged over random reads.
fn measure(values: &[&[u8]], codec: Compression, batch: usize) -> (usize, f64, f64) {
    let started = Instant::now();
    let mut groups = Vec::new();
    let mut out = Vec::new();
    let mut stored = 0;
    for chunk in values.chunks(batch) {
        let raw: Vec<u8> = chunk.concat();
        let c = codec.compress(&raw, &mut out);
        let body = if c == 0 { raw.clone() } else { out.clone() };
        stored += body.len() + 4;
        groups.push((c, body, raw.len() as u32));
    }
    let compress_ns = started.elapsed().as_nanos() as f64 / values.len() as f64;
    let reads = 20_000;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let started = Instant::now();
    for _ in 0..reads {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (c, body, raw_len) = &groups[(x % groups.len() as u64) as usize];
        let got = augur_decompress(*c, body, *raw_len);
        black_box(got);
    }
    let read_ns = started.elapsed().as_nanos() as f64 / reads as f64;
    (stored, compress_ns, read_ns)
}

/// Decompresses one group as the engine's readers do.
fn augur_decompress(codec: u8, body: &[u8], raw_len: u32) -> usize {
    match codec {
        0 => body.len(),
        1 => {
            let mut out = vec![0u8; raw_len as usize];
            lz4_flex::block::decompress_into(body, &mut out).unwrap_or(0)
        }
        _ => {
            let mut out = vec![0u8; raw_len as usize];
            zstd::bulk::decompress_to_buffer(body, &mut out).unwrap_or(0)
        }
    }
}
