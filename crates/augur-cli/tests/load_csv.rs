//! `load --csv` stops at the first entry it cannot load, names its line, and commits every
//! entry before it, so the user knows where to resume (issue 40, item 8a): a line that does
//! not parse (tested in cli.rs) and an entry the engine refuses (a key over 65,535 bytes).

mod common;

use common::{augur_db as augur, fails, ok};

#[test]
fn an_entry_the_engine_refuses_names_its_line_and_keeps_the_lines_before_it() {
    let t = tempfile::tempdir().unwrap();
    let csv = t.path().join("in.csv");
    // The refused key sits in the middle of the second batch of 1000 entries, after an
    // empty line (line numbers count every line).
    let mut text = String::new();
    for i in 0..1500 {
        text.push_str(&format!("k{i:04},v{i}\n"));
    }
    text.push('\n');
    text.push_str(&format!("{},too long\n", "x".repeat(70_000)));
    for i in 1500..1600 {
        text.push_str(&format!("k{i:04},v{i}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    for (name, sync) in [("plain", None), ("synced", Some("--sync"))] {
        let db = t.path().join(name);
        let mut args = vec!["load", "--csv", csv.to_str().unwrap()];
        args.extend(sync);
        let err = fails(augur(&db, &args));
        let want = format!(
            "line 1502: invalid argument: key of 70000 bytes exceeds the maximum of 65535; \
             the 1500 entries before it were loaded and committed{}",
            if sync.is_some() { " (synced)" } else { "" }
        );
        assert!(err.contains(&want), "{err}");
        let scan = ok(augur(&db, &["scan"]));
        assert_eq!(scan.lines().count(), 1500, "{name}");
        assert!(scan.ends_with("k1499\tv1499\n"), "{name}");
    }
    // The same with --hex: the refused line is the first of its batch.
    let hex_csv = t.path().join("hex.csv");
    let long_key = "ab".repeat(65_536);
    std::fs::write(&hex_csv, format!("6b31,7631\n{long_key},00\n6b32,7632\n")).unwrap();
    let db = t.path().join("hex");
    let err = fails(augur(
        &db,
        &["--hex", "load", "--csv", hex_csv.to_str().unwrap()],
    ));
    assert!(
        err.contains("hex.csv line 2: invalid argument: key of 65536 bytes")
            && err.contains("the 1 entry before it was loaded"),
        "{err}"
    );
    assert_eq!(ok(augur(&db, &["scan"])), "k1\tv1\n");
}
