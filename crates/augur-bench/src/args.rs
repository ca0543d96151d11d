//! `augur bench`'s flags ([`BenchArgs`], db_bench's names where db_bench has the flag) and
//! their value parsers.

use super::*;

/// Parses a gflags-style boolean (`--flag`, `--flag=1`, `--flag=true`, `--flag=0`, ...).
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("expected true/false or 1/0, got {s:?}")),
    }
}

/// Parses a fraction in `[0, 1]`.
fn parse_ops_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("expected a fraction between 0 and 1, got {s:?}")),
    }
}

/// Parses a fraction in `(0, 1]`.
fn parse_data_fraction(s: &str) -> Result<f64, String> {
    match parse_ops_fraction(s) {
        Ok(f) if f > 0.0 => Ok(f),
        _ => Err(format!(
            "expected a fraction above 0 and at most 1, got {s:?}"
        )),
    }
}

/// Arguments of `bench` (db_bench names; hyphenated spellings are accepted too).
#[derive(Args, Debug)]
#[command(
    after_help = "Benchmarks: fillseq fillrandom overwrite readrandom readmissing readseq \
readreverse seekrandom deleteseq deleterandom flush compact waitforcompaction waitforlearning learn \
stats train ycsb-load ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f ycsb-b-hot.\n\
YCSB: keys user<fnv64(n)>, or user<n zero-padded to 19 digits> with --insert-order=ordered \
(--key_size and the prefix flags do not apply); with a key source, record n is the n-th source \
key in key order and inserted records (D, E) get new keys: the source key at fnv64(n) mod num, \
then '#' and n in decimal. ycsb-load inserts --num records (in record order, or \
shuffled with --load-order=random), ycsb-a..f run --reads operations (A 50/50 read/update, B 95/5 \
read/update, C read, D 95/5 read/insert latest, E 95/5 scan/insert, F 50/50 \
read/read-modify-write; zipfian unless noted or --request-distribution is given); ycsb-b-hot is \
B' of the lazy-learning study: 95/5 read/update, 90% of the operations on the first 1% of the \
records, zipfian within each part (--hotspot-data-fraction, --hotspot-ops-fraction).\n\
waitforlearning: waits until Augur's background learner has nothing pending.\n\
train: builds --index over the projected keys (no database) and reports ns/key, segments and \
bytes/key.\n\
Key sources: --keys=FILE (SOSD u64: 8 bytes big-endian + '0' padding to --key_size >= 8), \
--keys-text=FILE (one key per line, as-is), --distribution=NAME (synthetic u64, by --seed), \
--distribution=strings (synthetic printable string keys, not db_bench's: a shared prefix of \
--string-prefix-len bytes, then random bytes, total length uniform in [--string-min-len, \
--string-max-len], by --seed), --distribution=composite (<table>:<id>:<field>: 5 tables, 4 \
fields, ids zipfian over 1..=num in plain decimal, by --seed), --distribution=redis \
(key:<n zero-padded to 12 digits> for n in 0..num, the server benchmark's keys). With a source \
(every benchmark takes one, YCSB's included), --num defaults to all keys of a file (a smaller \
--num keeps evenly spaced keys), fills write each key once (fillseq ascending, fillrandom \
shuffled; --load-order overrides), reads draw source keys, and readmissing reads a source key plus \
one byte ('0', or 0x00 for text keys; string keys are text keys).\n\
Keys are db_bench's: the key number as 8 big-endian bytes, padded with ASCII '0' to --key_size. \
With --prefix_size=P --keys_per_prefix=K (db_bench's), key number n starts with the prefix \
n mod (num/K) as min(P, 8) big-endian bytes '0'-padded to P, then n as above in the rest: in key \
order the keys come in groups of K sharing their first P bytes when K divides --num (fillseq \
writes by key number, as db_bench).\n\
Values are random bytes (compressible with --compression_ratio).\n\
fillrandom/overwrite/readrandom draw key numbers uniformly from [0, num) with repeats, as db_bench.\n\
Write amplification of a fill = bytes written to WAL, value log and SSTables during the fill / \
user bytes, right after its last write (pending flushes and compactions not included).\n\
Without --value-separation-threshold the benchmarks run twice: values inline, then separated."
)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order (default fillrandom,flush,readrandom,readseq,stats).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub benchmarks: Vec<String>,
    /// Number of key numbers (and of writes in fills); default 200000, or every key of
    /// --keys/--keys-text (a smaller value keeps evenly spaced keys of the file).
    #[arg(long)]
    pub num: Option<u64>,
    /// Keys from an SOSD binary file (little-endian u64 count, then the u64 keys).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["keys_text", "distribution"])]
    pub keys: Option<PathBuf>,
    /// Keys from a text file, one key per line, used as-is.
    #[arg(
        long = "keys-text",
        alias = "keys_text",
        value_name = "FILE",
        conflicts_with = "distribution"
    )]
    pub keys_text: Option<PathBuf>,
    /// Synthetic keys of this distribution (--num of them, deterministic by --seed): u64
    /// keys; or text keys: `strings` (printable, with a shared prefix; see --string-*-len),
    /// `composite` (`<table>:<id>:<field>`, zipfian ids), `redis` (key:%012d, the numbers
    /// 0..num).
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// --distribution=strings: shortest key in bytes.
    #[arg(long = "string-min-len", alias = "string_min_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.min_len)]
    pub string_min_len: usize,
    /// --distribution=strings: longest key in bytes.
    #[arg(long = "string-max-len", alias = "string_max_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.max_len)]
    pub string_max_len: usize,
    /// --distribution=strings: bytes of the prefix every key shares (a key shorter than the
    /// prefix plus 8 bytes keeps 8 random bytes and shares only the prefix's start).
    #[arg(long = "string-prefix-len", alias = "string_prefix_len", value_name = "BYTES",
          default_value_t = sources::StringShape::DEFAULT.prefix_len)]
    pub string_prefix_len: usize,
    /// Write the keys of the text key source (--keys-text, or --distribution=strings,
    /// composite or redis) to FILE, one per line in sorted order, and run no benchmark: the
    /// same keys can then be given to another build with --keys-text=FILE.
    #[arg(long = "dump-keys", alias = "dump_keys", value_name = "FILE")]
    pub dump_keys: Option<PathBuf>,
    /// Order in which fills write the keys of a source (default: fillseq sequential,
    /// fillrandom random), and in which ycsb-load inserts its records (default sequential:
    /// record order, as YCSB).
    #[arg(long = "load-order", alias = "load_order", value_enum)]
    pub load_order: Option<LoadOrder>,
    /// Number of reads (negative: --num); also the operations of readrandomwriterandom.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,
    /// readrandomwriterandom: percentage of operations that are reads (db_bench's flag).
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub readwritepercent: u32,
    /// Key size in bytes.
    #[arg(long = "key_size", alias = "key-size", default_value_t = 16)]
    pub key_size: usize,
    /// db_bench's --prefix_size: bytes of the prefix that --keys_per_prefix keys share (db_bench
    /// numbers only; less than --key_size; 0: no prefix).
    #[arg(
        long = "prefix_size",
        alias = "prefix-size",
        value_name = "BYTES",
        default_value_t = 0
    )]
    pub prefix_size: usize,
    /// db_bench's --keys_per_prefix: key numbers sharing each prefix (with --prefix_size; key
    /// number n takes prefix n mod (num / K), so in key order the first --prefix_size bytes
    /// repeat in groups of K when K divides --num; 0: no prefix).
    #[arg(
        long = "keys_per_prefix",
        alias = "keys-per-prefix",
        value_name = "K",
        default_value_t = 0
    )]
    pub keys_per_prefix: u64,
    /// Value size in bytes.
    #[arg(long = "value_size", alias = "value-size", default_value_t = 64)]
    pub value_size: usize,
    /// Make values compressible to about this fraction of their size, in (0, 1], generated
    /// exactly as db_bench's `--compression_ratio` (100-byte pieces each repeating a random
    /// printable fragment of ratio × 100 bytes). Without it values are random bytes.
    #[arg(long = "compression_ratio", alias = "compression-ratio", value_name = "R",
          value_parser = compression_ratio)]
    pub compression_ratio: Option<f64>,
    /// Write the results as a JSON array to FILE (or, without FILE, print it on stdout
    /// instead of the text report).
    #[arg(long, num_args = 0..=1, value_name = "FILE")]
    pub json: Option<Option<PathBuf>>,
    /// Reuse the database in --db; fills are skipped.
    #[arg(long = "use_existing_db", alias = "use-existing-db", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,
    /// Record per-operation latencies and print p50/p99/p99.9/max.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,
    /// Sync every write.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool)]
    pub sync: bool,
    /// Threads (db_bench's --threads): readrandom / readmissing run N readers, each doing
    /// --reads lookups; fills, overwrite and deletes split their --num writes among N
    /// writers (each key once for fillseq, deleteseq and key-source fills).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: u64,
    /// seekrandom: entries read after each seek (db_bench's flag).
    #[arg(long = "seek_nexts", alias = "seek-nexts", default_value_t = 0)]
    pub seek_nexts: usize,
    /// scanparallel: threads scanning each range (the caller's included).
    #[arg(long = "scan-threads", alias = "scan_threads", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub scan_threads: u64,
    /// scanparallel: how each range is cut into partitions: balanced (equal entry counts
    /// from the learned indexes) or keyspace (equal key intervals).
    #[arg(long = "scan-split", alias = "scan_split", default_value = "balanced",
          value_parser = parse_split)]
    pub scan_split: augur::Split,
    /// scanparallel: partitions per range (0: one per thread; more let early threads take
    /// more work).
    #[arg(long = "scan-partitions", alias = "scan_partitions", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub scan_partitions: u64,
    /// scanparallel: source keys per range (the range from the i-th to the (i+N)-th key).
    #[arg(
        long = "scan-range-keys",
        alias = "scan_range_keys",
        default_value_t = 65536
    )]
    pub scan_range_keys: u64,
    /// --use_direct_reads, --cache_size, --statistics (see memory.rs).
    #[command(flatten)]
    pub memory: memory::MemoryArgs,
    /// Random seed; benchmark i of a run uses seed + i.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Memtable size in bytes (db_bench's name; overrides --memtable-mb).
    #[arg(
        long = "write_buffer_size",
        alias = "write-buffer-size",
        value_name = "BYTES"
    )]
    pub write_buffer_size: Option<usize>,
    /// Compression of every engine in the run (db_bench's flag): none, snappy, lz4 or zstd
    /// (zstd at the engine's default level, 3 for Augur and RocksDB). Augur: the engine flag
    /// --compression CODEC wins over this one when given. An engine without the codec is
    /// refused: Augur has none, lz4, zstd; RocksDB all four; LevelDB none, snappy; fjall
    /// none, lz4.
    #[arg(
        long = "compression_type",
        alias = "compression-type",
        value_enum,
        value_name = "CODEC",
        default_value_t = Codec::None
    )]
    pub compression_type: Codec,
    /// YCSB: request distribution of every ycsb-a..f workload (default: the workload's own).
    #[arg(
        long = "request-distribution",
        alias = "request_distribution",
        value_enum
    )]
    pub request_distribution: Option<ycsb::RequestDist>,
    /// YCSB: how record numbers become keys (YCSB's insertorder): hashed (user + FNV hash of
    /// the number, the default) or ordered (user + the number zero-padded to 19 digits, so
    /// a range of records is a range of keys). Not with a key source, whose keys YCSB's
    /// records are.
    #[arg(
        long = "insert-order",
        alias = "insert_order",
        alias = "insertorder",
        value_enum
    )]
    pub insert_order: Option<ycsb::KeyOrder>,
    /// Key chooser of readrandom, readmissing and seekrandom over the keys in sorted order
    /// (default: uniform, db_bench's): a --request-distribution value; hotspot sends
    /// --hotspot-ops-fraction of the lookups to the first --hotspot-data-fraction of the keys.
    #[arg(long = "read_distribution", alias = "read-distribution", value_enum)]
    pub read_distribution: Option<ycsb::RequestDist>,
    /// Hotspot distributions (YCSB's and --read_distribution's): fraction of the records in
    /// the hot set, in (0, 1] (default 0.2 for hotspot, 0.01 for hotspot-zipfian, ycsb-b-hot).
    #[arg(long = "hotspot-data-fraction", alias = "hotspot_data_fraction",
          alias = "hotspotdatafraction", value_parser = parse_data_fraction)]
    pub hotspot_data_fraction: Option<f64>,
    /// Hotspot distributions: fraction of the operations on the hot set, in [0, 1]
    /// (default 0.8 for hotspot, 0.9 for hotspot-zipfian and ycsb-b-hot).
    #[arg(long = "hotspot-ops-fraction", alias = "hotspot_ops_fraction",
          alias = "hotspot_opn_fraction", alias = "hotspotopnfraction",
          value_parser = parse_ops_fraction)]
    pub hotspot_ops_fraction: Option<f64>,
    /// YCSB workload E: scans read uniformly 1..=N entries.
    #[arg(long = "scan-length", alias = "scan_length", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub scan_length: u64,
    /// Engine benchmarked (default augur). The peers rocksdb, leveldb and fjall need builds
    /// with the cargo feature of the same name; they run the same key and value streams with
    /// comparable settings (see engine/mod.rs).
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Run Augur's baseline path, its learned path and every peer compiled in on the same
    /// workload, and print a side-by-side table (see `run_configs`).
    #[arg(long)]
    pub compare: bool,
}

fn parse_split(s: &str) -> Result<augur::Split, String> {
    augur::Split::from_name(s).ok_or_else(|| format!("unknown split `{s}` (keyspace or balanced)"))
}
