//! `BGSAVE` with `--checkpoint-dir`: a consistent, openable copy of the database appears
//! there (`checkpoint-<unix ms>`), holding every write acknowledged before the command, and
//! a later BGSAVE replaces it (the older one is removed once the new one is complete).

mod common;

use common::server;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The checkpoints in `dir`, sorted by name.
fn checkpoints(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("checkpoint-"))
    });
    out.sort();
    out
}

/// Sends BGSAVE and waits until INFO says it finished, successfully.
fn bgsave(c: &mut common::Raw) {
    assert_eq!(c.text(&["BGSAVE"]), "+Background saving started\r\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = c.text(&["INFO", "persistence"]);
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            return;
        }
        assert!(Instant::now() < deadline, "BGSAVE still running after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bgsave_writes_a_checkpoint_and_replaces_the_older_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("checkpoints");
    let (_db_tmp, s) = server(&["--checkpoint-dir", dir.to_str().unwrap()]);
    let mut c = s.raw();
    for i in 0..500 {
        c.text(&["SET", &format!("k{i}"), &format!("first{i}")]);
    }
    bgsave(&mut c);
    let first = checkpoints(&dir);
    assert_eq!(first.len(), 1, "{first:?}");
    // Later writes are not in it; the next BGSAVE's checkpoint has them.
    for i in 0..500 {
        c.text(&["SET", &format!("k{i}"), &format!("second{i}")]);
    }
    {
        let copy = augur::Db::open(&first[0], augur::Options::default()).unwrap();
        for i in [0, 250, 499] {
            let v = copy.get(format!("k{i}")).unwrap();
            assert_eq!(v.as_deref(), Some(format!("first{i}").as_bytes()), "k{i}");
        }
    }
    std::thread::sleep(Duration::from_millis(2));
    bgsave(&mut c);
    let second = checkpoints(&dir);
    assert_eq!(
        second.len(),
        1,
        "the older checkpoint is removed: {second:?}"
    );
    assert_ne!(second, first);
    let copy = augur::Db::open(&second[0], augur::Options::default()).unwrap();
    for i in 0..500 {
        let v = copy.get(format!("k{i}")).unwrap();
        assert_eq!(v.as_deref(), Some(format!("second{i}").as_bytes()), "k{i}");
    }
}
