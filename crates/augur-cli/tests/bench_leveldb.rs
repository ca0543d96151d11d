//! End-to-end tests of `augur bench --engine=leveldb`: without the cargo feature `leveldb`
//! the peer is refused with a clear error; with it, fills, reads, scans, deletes, flush,
//! compaction and YCSB run on LevelDB and find exactly what Augur finds on the same key
//! stream, and a fresh fill refuses a directory holding a file that is not LevelDB's;
//! `--use_direct_reads` is refused (LevelDB has none), hotspot reads find what Augur's find,
//! and every benchmark runs on text keys (YCSB's included) as on Augur.

mod common;

#[cfg(feature = "leveldb")]
use common::peers::{
    field, fillseq_reads_find_what_was_written, fresh_fill_refuses_foreign_file,
    hotspot_reads_find_what_augur_finds, nth, refuses_direct_reads,
    text_keys_find_what_augur_finds,
};
#[cfg(feature = "leveldb")]
use common::{bench_json_on, peer_and_augur, record};
#[cfg(feature = "leveldb")]
use std::path::Path;

#[cfg(not(feature = "leveldb"))]
#[test]
fn leveldb_without_the_feature_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    common::peers::refused_without_feature(
        &["--db", dir.to_str().unwrap()],
        "leveldb",
        &["libleveldb-dev"],
    );
}

/// The LevelDB table files (`*.ldb`) in `dir`.
#[cfg(feature = "leveldb")]
fn table_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ldb"))
        .collect()
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_reads_find_exactly_what_fillseq_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let r = fillseq_reads_find_what_was_written(
        &tmp.path().join("level"),
        "leveldb",
        "fillseq,readrandom,readmissing,seekrandom,readseq,readreverse",
    );
    // readreverse, like readseq, reads up to --reads entries of the 500 present.
    assert_eq!(record(&r, "readreverse")["ops"], 200);
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_and_augur_find_the_same_keys_after_fillrandom() {
    let tmp = tempfile::tempdir().unwrap();
    // --reads above the number of distinct keys: readseq / readreverse visit every entry.
    let (level, ours) = peer_and_augur(
        tmp.path(),
        "leveldb",
        &[
            "--num=2000",
            "--reads=3000",
            "--benchmarks=fillrandom,readrandom,readmissing,seekrandom,readseq,readreverse",
        ],
    );
    // fillrandom draws with repeats: some keys are missing, most are present.
    let hits = field(&level, "readrandom", "found");
    assert!(hits > 0 && hits < 3000, "{hits}");
    for name in ["readrandom", "readmissing", "seekrandom"] {
        assert_eq!(
            field(&level, name, "found"),
            field(&ours, name, "found"),
            "{name}"
        );
    }
    assert_eq!(field(&level, "readmissing", "found"), 0);
    let distinct = field(&level, "readseq", "ops");
    assert!(distinct > 0 && distinct < 2000, "{distinct}");
    assert_eq!(distinct, field(&ours, "readseq", "ops"));
    assert_eq!(field(&level, "readreverse", "ops"), distinct);
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_flush_writes_the_memtable_to_a_table_file() {
    let tmp = tempfile::tempdir().unwrap();
    // 300 small entries stay in the 64 MiB memtable: without a flush only the log holds them.
    let unflushed = tmp.path().join("unflushed");
    bench_json_on(
        &unflushed,
        "leveldb",
        &["--num=300", "--benchmarks=fillseq"],
    );
    assert_eq!(table_files(&unflushed), Vec::<String>::new());
    let flushed = tmp.path().join("flushed");
    let r = bench_json_on(
        &flushed,
        "leveldb",
        &["--num=300", "--benchmarks=fillseq,flush,readrandom"],
    );
    assert_eq!(
        table_files(&flushed).len(),
        1,
        "{:?}",
        table_files(&flushed)
    );
    assert_eq!(record(&r, "readrandom")["found"], 300);
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_compaction_keeps_every_key() {
    let tmp = tempfile::tempdir().unwrap();
    // A small write buffer (LevelDB's minimum, 64 KiB) makes several table files to compact.
    // --reads above the number of distinct keys: readseq visits every entry.
    let (level, ours) = peer_and_augur(
        tmp.path(),
        "leveldb",
        &[
            "--num=20000",
            "--reads=30000",
            "--write_buffer_size=65536",
            "--benchmarks=fillrandom,overwrite,readseq,compact,readseq,readrandom",
        ],
    );
    assert_eq!(record(&level, "compact")["ops"], 1);
    let before = nth(&level, "readseq", 0, "ops").as_u64().unwrap();
    assert!(before > 0 && before < 20000, "{before}");
    assert_eq!(nth(&level, "readseq", 1, "ops").as_u64(), Some(before));
    assert_eq!(nth(&ours, "readseq", 1, "ops").as_u64(), Some(before));
    let found = field(&level, "readrandom", "found");
    assert!(found > 0 && found < 30000, "{found}");
    assert_eq!(found, field(&ours, "readrandom", "found"));
    assert!(!table_files(&tmp.path().join("leveldb")).is_empty());
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_deleted_keys_are_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let (level, ours) = peer_and_augur(
        tmp.path(),
        "leveldb",
        &[
            "--num=1000",
            "--reads=1000",
            "--benchmarks=fillseq,deleterandom,readrandom,readseq",
        ],
    );
    // Every key was present; deleterandom removes about 63% of them.
    let found = field(&level, "readrandom", "found");
    assert!(found > 0 && found < 700, "{found}");
    assert_eq!(found, field(&ours, "readrandom", "found"));
    let left = field(&level, "readseq", "ops");
    assert!(left > 0 && left < 700, "{left}");
    assert_eq!(left, field(&ours, "readseq", "ops"));
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_runs_ycsb_load_and_every_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let (level, ours) = peer_and_augur(
        tmp.path(),
        "leveldb",
        &[
            "--num=1000",
            "--reads=500",
            "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
        ],
    );
    assert_eq!(record(&level, "ycsb-load")["ops"], 1000);
    for w in ["a", "b", "c", "d", "e", "f"] {
        let name = format!("ycsb-{w}");
        let (l, o) = (record(&level, &name), record(&ours, &name));
        assert_eq!(l["ops"], 500, "{name}");
        // The same operation stream on both engines, with the same outcome.
        for field in ["reads", "updates", "inserts", "scans"] {
            assert!(l[field].is_u64(), "{name} {field}: {l}");
        }
        for field in ["found", "reads", "updates", "inserts", "scans"] {
            assert_eq!(l[field], o[field], "{name} {field}");
        }
    }
    // Workload C only reads loaded records: every one is found.
    let c = record(&level, "ycsb-c");
    assert_eq!(c["found"], c["ops"]);
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_fresh_fill_refuses_a_directory_with_foreign_files() {
    let tmp = tempfile::tempdir().unwrap();
    fresh_fill_refuses_foreign_file(&tmp.path().join("level"), "leveldb");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_fresh_fill_replaces_an_earlier_leveldb_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("level");
    // Flush, then reopen (LOG.old appears): every file kind LevelDB leaves behind.
    bench_json_on(
        &dir,
        "leveldb",
        &["--num=300", "--benchmarks=fillseq,flush"],
    );
    bench_json_on(
        &dir,
        "leveldb",
        &["--num=300", "--use_existing_db", "--benchmarks=readseq"],
    );
    assert!(dir.join("LOG.old").exists());
    let again = bench_json_on(
        &dir,
        "leveldb",
        &["--num=50", "--benchmarks=fillseq,readseq"],
    );
    assert_eq!(record(&again, "readseq")["ops"], 50);
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_refuses_direct_reads_and_takes_the_cache_size() {
    let tmp = tempfile::tempdir().unwrap();
    refuses_direct_reads(&tmp.path().join("level"), "leveldb");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_hotspot_reads_find_what_augurs_find() {
    let tmp = tempfile::tempdir().unwrap();
    hotspot_reads_find_what_augur_finds(tmp.path(), "leveldb");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_runs_every_benchmark_on_text_keys_like_augur() {
    let tmp = tempfile::tempdir().unwrap();
    text_keys_find_what_augur_finds(tmp.path(), "leveldb");
}
