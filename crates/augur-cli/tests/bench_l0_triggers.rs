//! db_bench's L0 trigger flags in `augur bench`: they reach Augur and RocksDB, each record's
//! config shows the triggers the engine ran with, and LevelDB and fjall, which cannot take
//! them, are refused rather than run with their own.

mod common;

use common::{augur, bench_json_with, fails_with_error, record};

const TRIGGERS: [&str; 3] = [
    "--level0_file_num_compaction_trigger=6",
    "--level0_slowdown_writes_trigger=10",
    "--level0_stop_writes_trigger=20",
];

#[test]
fn the_triggers_reach_augur_and_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["--num=500", "--benchmarks=fillrandom"];
    args.extend(TRIGGERS);
    let r = bench_json_with(
        &tmp.path().join("given"),
        &[],
        "--value-separation-threshold=1024",
        &args,
    );
    let given = &record(&r, "fillrandom")["config"]["level0_triggers"];
    assert_eq!(given["compaction"], 6, "{given}");
    assert_eq!(given["slowdown"], 10, "{given}");
    assert_eq!(given["stop"], 20, "{given}");
    let r = bench_json_with(
        &tmp.path().join("default"),
        &[],
        "--value-separation-threshold=1024",
        &["--num=500", "--benchmarks=fillrandom"],
    );
    let default = &record(&r, "fillrandom")["config"]["level0_triggers"];
    let engine = ::augur::Options::default();
    assert_eq!(
        default["compaction"], engine.l0_compaction_trigger,
        "{default}"
    );
    assert_eq!(default["stop"], engine.l0_stop_trigger, "{default}");
}

/// LevelDB and fjall are refused the triggers when built in (and, when not, with the error
/// that names the feature to build them with).
#[test]
fn engines_without_settable_triggers_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    for (engine, built) in [
        ("leveldb", cfg!(feature = "leveldb")),
        ("fjall", cfg!(feature = "fjall")),
    ] {
        let flag = format!("--engine={engine}");
        let mut all = vec!["--db", db.to_str().unwrap(), "bench", "--num=10"];
        all.extend(["--benchmarks=fillseq", flag.as_str(), TRIGGERS[0]]);
        let e = fails_with_error(augur(&all));
        if built {
            assert!(
                e.contains(&format!("{engine} cannot set its L0 triggers"))
                    && e.contains("augur, rocksdb"),
                "{e}"
            );
        } else {
            assert!(e.contains(&format!("the cargo feature `{engine}`")), "{e}");
        }
    }
}

/// RocksDB runs with the given triggers: its own OPTIONS file says so.
#[cfg(feature = "rocksdb")]
#[test]
fn the_triggers_reach_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut all = vec!["--db", db.to_str().unwrap(), "bench", "--engine=rocksdb"];
    all.extend(["--num=500", "--benchmarks=fillrandom"]);
    all.extend(TRIGGERS);
    common::ok(augur(&all));
    let options = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .last()
        .expect("RocksDB wrote an OPTIONS file");
    for line in [
        "level0_file_num_compaction_trigger=6",
        "level0_slowdown_writes_trigger=10",
        "level0_stop_writes_trigger=20",
    ] {
        assert!(options.contains(line), "{line} missing from:\n{options}");
    }
}
