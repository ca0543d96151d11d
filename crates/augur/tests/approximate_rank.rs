//! `Db::approximate_rank`: an estimate of the entries below a key, from indexes and memtable
//! ranges alone, close on tables and memtables, exact at the ends.

use augur::{Db, Options};

#[test]
fn the_rank_of_a_key_estimates_the_entries_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        background_threads: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    assert_eq!(db.approximate_rank("z"), 0);
    for i in 0..2000 {
        db.put(format!("a{i:05}"), "v").unwrap();
        db.put(format!("b{i:05}"), "v").unwrap();
    }
    let near = |got: u64, want: u64| got.abs_diff(want) <= want / 10 + 5;
    // In the memtable: a linear interpolation over its key range (rough), exact past it.
    let b = db.approximate_rank("b");
    assert!(b > 0 && b < 4000, "{b}");
    assert_eq!(db.approximate_rank("c"), 4000);
    db.flush().unwrap();
    for (key, want) in [
        ("", 0),
        ("a", 0),
        ("a01000", 1000),
        ("b", 2000),
        ("c", 4000),
    ] {
        let got = db.approximate_rank(key);
        assert!(near(got, want), "{key}: {got}, want about {want}");
    }
    assert_eq!(db.approximate_rank("c"), 4000);
    // Memtable and table together.
    for i in 0..500 {
        db.put(format!("c{i:05}"), "v").unwrap();
    }
    assert_eq!(db.approximate_rank("d"), 4500);
}
