//! End-to-end tests of `augur bench --engine=fjall`: without the cargo feature `fjall` the peer
//! is refused with an error naming the feature; with it, fjall runs the db_bench reads, flush,
//! compact, deletes and YCSB A–F on the same key streams as Augur and finds exactly what Augur
//! finds, and a fresh fill never deletes a directory holding foreign files; `--use_direct_reads`
//! is refused (fjall 2 has none), hotspot reads find what Augur's find, and every benchmark
//! runs on text keys (YCSB's included) as on Augur.

mod common;

#[cfg(feature = "fjall")]
use common::peers::{
    field, fresh_fill_refuses_foreign_file, hotspot_reads_find_what_augur_finds,
    refuses_direct_reads, text_keys_find_what_augur_finds,
};
#[cfg(feature = "fjall")]
use common::{bench_json_on, peer_and_augur, record};
#[cfg(feature = "fjall")]
use serde_json::Value;

#[cfg(not(feature = "fjall"))]
#[test]
fn fjall_without_the_feature_is_a_clear_error() {
    common::peers::refused_without_feature(&[], "fjall", &["--features fjall"]);
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_reads_find_what_augur_finds_on_the_same_key_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let (fjall, ours) = peer_and_augur(
        tmp.path(),
        "fjall",
        &[
            "--num=2000",
            "--reads=2500",
            "--benchmarks=fillrandom,readrandom,readmissing,seekrandom,readseq,readreverse,\
             flush,readrandom,compact,readrandom,readseq,readreverse",
        ],
    );
    assert_eq!(field(&fjall, "fillrandom", "ops"), 2000);
    // fillrandom draws with repeats: some keys are missing, most are there.
    let found = field(&fjall, "readrandom", "found");
    assert!(found > 1000 && found < 2500, "{found}");
    assert_eq!(field(&fjall, "readmissing", "found"), 0);
    // Both engines saw the same writes: every read (each run draws its own keys) finds as
    // many as Augur's, before and after the flush and the compaction, and both scan the
    // same number of distinct keys.
    for (name, key) in [
        ("readrandom", "found"),
        ("readmissing", "found"),
        ("seekrandom", "found"),
        ("readseq", "ops"),
        ("readreverse", "ops"),
    ] {
        let pick = |r: &[Value]| -> Vec<u64> {
            r.iter()
                .filter(|x| x["benchmark"] == name)
                .map(|x| x[key].as_u64().unwrap())
                .collect()
        };
        assert_eq!(pick(&fjall), pick(&ours), "{name} {key}");
    }
    // Fewer distinct keys than draws, all of them scanned in both directions.
    let distinct = field(&fjall, "readseq", "ops");
    assert!(distinct > 1000 && distinct < 2000, "{distinct}");
    assert_eq!(field(&fjall, "readreverse", "ops"), distinct);
    for name in ["flush", "compact"] {
        assert_eq!(field(&fjall, name, "ops"), 1, "{name}");
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_deletes_are_not_found_again() {
    let tmp = tempfile::tempdir().unwrap();
    // Random deletes: what stays is what Augur keeps, in the memtable and after compaction.
    let (fjall, ours) = peer_and_augur(
        tmp.path(),
        "fjall",
        &[
            "--num=1000",
            "--reads=600",
            "--benchmarks=fillseq,deleterandom,readrandom,compact,readseq",
        ],
    );
    let left = field(&fjall, "readrandom", "found");
    assert!(left > 0 && left < 600, "{left}");
    assert_eq!(left, field(&ours, "readrandom", "found"));
    assert_eq!(
        field(&fjall, "readseq", "ops"),
        field(&ours, "readseq", "ops")
    );
    // Deleting every key leaves nothing to find, before and after the tombstones are flushed
    // and compacted.
    let all = bench_json_on(
        &tmp.path().join("all"),
        "fjall",
        &[
            "--num=500",
            "--reads=500",
            "--benchmarks=fillseq,flush,deleteseq,readrandom,readseq,compact,readrandom,readseq",
        ],
    );
    for r in &all {
        match r["benchmark"].as_str().unwrap() {
            "readrandom" => assert_eq!(r["found"], 0, "{r}"),
            "readseq" => assert_eq!(r["ops"], 0, "{r}"),
            _ => {}
        }
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_runs_ycsb_load_and_every_workload_like_augur() {
    let tmp = tempfile::tempdir().unwrap();
    let (fjall, ours) = peer_and_augur(
        tmp.path(),
        "fjall",
        &[
            "--num=300",
            "--reads=400",
            "--scan-length=5",
            "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f,readseq",
        ],
    );
    assert_eq!(field(&fjall, "ycsb-load", "ops"), 300);
    let mut inserted = 0;
    for name in ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"] {
        assert_eq!(field(&fjall, name, "ops"), 400, "{name}");
        for kind in [
            "reads",
            "updates",
            "inserts",
            "scans",
            "read_modify_writes",
            "found",
        ] {
            // (`found` is null for workload E, which only scans and inserts.)
            assert_eq!(
                record(&fjall, name)[kind],
                record(&ours, name)[kind],
                "{name} {kind}"
            );
        }
        if name != "ycsb-e" {
            // Every read is of a loaded or inserted record, so every one is found.
            let gets = field(&fjall, name, "reads") + field(&fjall, name, "read_modify_writes");
            assert_eq!(field(&fjall, name, "found"), gets, "{name}");
        }
        inserted += field(&fjall, name, "inserts");
    }
    assert!(inserted > 0 && inserted < 100, "{inserted}");
    // The keyspace holds the loaded records plus the inserted ones.
    assert_eq!(field(&fjall, "readseq", "ops"), 300 + inserted);
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_fresh_fill_replaces_its_own_files_and_refuses_foreign_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fjall");
    let first = bench_json_on(&dir, "fjall", &["--num=300", "--benchmarks=fillseq,flush"]);
    assert_eq!(field(&first, "fillseq", "ops"), 300);
    // A second fresh fill deletes fjall's files and directories and starts over.
    let again = bench_json_on(&dir, "fjall", &["--num=50", "--benchmarks=fillseq,readseq"]);
    assert_eq!(field(&again, "readseq", "ops"), 50);
    // A foreign file stops the fill before anything is deleted.
    fresh_fill_refuses_foreign_file(&dir, "fjall");
    for own in ["version", "journals", "partitions"] {
        assert!(dir.join(own).exists(), "{own} was deleted");
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_refuses_direct_reads_and_takes_the_cache_size() {
    let tmp = tempfile::tempdir().unwrap();
    refuses_direct_reads(&tmp.path().join("fjall"), "fjall");
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_hotspot_reads_find_what_augurs_find() {
    let tmp = tempfile::tempdir().unwrap();
    hotspot_reads_find_what_augur_finds(tmp.path(), "fjall");
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_runs_every_benchmark_on_text_keys_like_augur() {
    let tmp = tempfile::tempdir().unwrap();
    text_keys_find_what_augur_finds(tmp.path(), "fjall");
}
