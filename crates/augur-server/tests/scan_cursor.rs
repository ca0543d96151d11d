//! `SCAN` cursors (issue 40, defect 6): a cursor resumes exactly where its scan stopped or is
//! refused with `ERR invalid cursor`; it never resumes another scan's position, not after a
//! restart, not when scans interleave, not after many other scans; a full scan returns every
//! key exactly once, whatever the keys' lengths and bytes.

mod common;

use augur_server::resp::{parse_reply, Reply};
use common::{encode, server, Raw, ServerProcess};
use std::collections::{BTreeMap, BTreeSet};

/// One `SCAN` reply: the next cursor and the keys, or the error text.
type Step = Result<(String, Vec<Vec<u8>>), String>;

fn parse_scan(raw: &[u8]) -> Step {
    match parse_reply(raw).expect("a reply").0 {
        Reply::Error(e) => Err(e),
        Reply::Array(Some(items)) => match items.as_slice() {
            [Reply::Bulk(Some(cursor)), Reply::Array(Some(keys))] => {
                let keys = keys
                    .iter()
                    .map(|k| match k {
                        Reply::Bulk(Some(k)) => k.clone(),
                        other => panic!("a key: {other:?}"),
                    })
                    .collect();
                Ok((String::from_utf8(cursor.clone()).unwrap(), keys))
            }
            other => panic!("not a SCAN reply: {other:?}"),
        },
        other => panic!("not a SCAN reply: {other:?}"),
    }
}

/// `SCAN cursor OPTIONS...`.
fn scan(c: &mut Raw, cursor: &str, options: &[&[u8]]) -> Step {
    let mut words: Vec<&[u8]> = vec![b"SCAN", cursor.as_bytes()];
    words.extend_from_slice(options);
    parse_scan(&c.cmd(&words))
}

/// Scans from `cursor` to the end, counting how often each key comes back.
fn scan_to_end(
    c: &mut Raw,
    mut cursor: String,
    options: &[&[u8]],
    seen: &mut BTreeMap<Vec<u8>, usize>,
) -> Result<(), String> {
    for _ in 0..1_000_000 {
        let (next, keys) = scan(c, &cursor, options)?;
        for k in keys {
            *seen.entry(k).or_default() += 1;
        }
        if next == "0" {
            return Ok(());
        }
        cursor = next;
    }
    panic!("the scan did not end");
}

/// Writes `keys` (value "v") with pipelined MSETs.
fn load(c: &mut Raw, keys: &[Vec<u8>]) {
    for chunk in keys.chunks(200) {
        let mut words: Vec<&[u8]> = vec![b"MSET"];
        for k in chunk {
            words.push(k);
            words.push(b"v");
        }
        assert_eq!(c.cmd(&words), b"+OK\r\n");
    }
}

/// Asserts that `seen` holds each of `want` exactly once and nothing else.
fn assert_exactly_once(seen: &BTreeMap<Vec<u8>, usize>, want: &BTreeSet<Vec<u8>>, what: &str) {
    let missing = want.iter().filter(|k| !seen.contains_key(*k)).count();
    let twice = seen.values().filter(|&&n| n > 1).count();
    let extra = seen.keys().filter(|k| !want.contains(*k)).count();
    assert!(
        missing == 0 && twice == 0 && extra == 0,
        "{what}: {missing} of {} keys missing, {twice} returned more than once, {extra} not \
         asked for",
        want.len()
    );
}

fn text_keys(format: impl Fn(usize) -> String, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format(i).into_bytes()).collect()
}

/// The case: client A's cursor, issued before a restart, must not resume where
/// client B's scan (after the restart) stopped. It resumes exactly or is refused.
#[test]
fn a_scan_across_a_restart_resumes_exactly_or_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut keys = text_keys(|i| format!("account:{i:08}"), 3000);
    keys.extend(text_keys(|i| format!("zone:{i:08}"), 500));
    let all: BTreeSet<Vec<u8>> = keys.iter().cloned().collect();
    let s = ServerProcess::start(&db, &[]);
    load(&mut s.raw(), &keys);
    let mut a = s.raw();
    let mut seen = BTreeMap::new();
    let (cursor, first) = scan(&mut a, "0", &[b"COUNT", b"1000"]).unwrap();
    assert_ne!(cursor, "0");
    for k in first {
        *seen.entry(k).or_default() += 1;
    }
    assert_eq!(s.terminate(), Some(0));
    let s = ServerProcess::start(&db, &[]);
    let mut b = s.raw();
    let (b_cursor, _) = scan(&mut b, "0", &[b"MATCH", b"z*", b"COUNT", b"10"]).unwrap();
    assert_ne!(b_cursor, "0");
    let mut a = s.raw();
    match scan_to_end(&mut a, cursor.clone(), &[b"COUNT", b"1000"], &mut seen) {
        Ok(()) => assert_exactly_once(&seen, &all, "the scan resumed after the restart"),
        Err(e) => assert_eq!(e, "ERR invalid cursor", "cursor {cursor}"),
    }
}

/// A cursor that stands for a short position (here "k1": the keys "k0999" and "k1000" part
/// there) is encoded in the number itself, so it resumes exactly after a restart.
#[test]
fn a_cursor_at_a_short_position_resumes_exactly_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let keys = text_keys(|i| format!("k{i:04}"), 3000);
    let all: BTreeSet<Vec<u8>> = keys.iter().cloned().collect();
    let s = ServerProcess::start(&db, &[]);
    load(&mut s.raw(), &keys);
    let mut seen = BTreeMap::new();
    let (cursor, first) = scan(&mut s.raw(), "0", &[b"COUNT", b"1000"]).unwrap();
    for k in first {
        *seen.entry(k).or_default() += 1;
    }
    assert_eq!(s.terminate(), Some(0));
    let s = ServerProcess::start(&db, &[]);
    for _ in 0..100 {
        scan(&mut s.raw(), "0", &[b"MATCH", b"k2*", b"COUNT", b"10"]).unwrap();
    }
    scan_to_end(&mut s.raw(), cursor, &[b"COUNT", b"1000"], &mut seen).unwrap();
    assert_exactly_once(&seen, &all, "resumed after a restart");
}

/// A cursor for a long position (keys sharing a long prefix) lives in the server's table,
/// which a restart empties: it is refused, and the refusal is not a fluke of the numbers (the
/// new process issues its own cursors first).
#[test]
fn a_cursor_at_a_long_position_is_refused_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let keys = text_keys(|i| format!("session:token:{i:012}"), 2000);
    let s = ServerProcess::start(&db, &[]);
    load(&mut s.raw(), &keys);
    let mut old = Vec::new();
    let mut c = s.raw();
    for count in [b"1".as_slice(), b"10", b"100", b"1000"] {
        old.push(scan(&mut c, "0", &[b"COUNT", count]).unwrap().0);
    }
    assert_eq!(s.terminate(), Some(0));
    let s = ServerProcess::start(&db, &[]);
    let mut c = s.raw();
    for count in [b"1".as_slice(), b"10", b"100", b"1000"] {
        scan(&mut c, "0", &[b"COUNT", count]).unwrap();
    }
    for cursor in old {
        assert_eq!(
            scan(&mut c, &cursor, &[b"COUNT", b"10"]),
            Err("ERR invalid cursor".to_string()),
            "cursor {cursor} from before the restart"
        );
    }
}

/// Two clients' scans, interleaved call by call with different patterns and counts, each
/// return exactly their own keys.
#[test]
fn interleaved_scans_of_two_clients_never_cross() {
    let (_tmp, s) = server(&[]);
    let mut keys = text_keys(|i| format!("user:{i:06}"), 1500);
    keys.extend(text_keys(|i| format!("item:{i:06}"), 1500));
    keys.extend(text_keys(|i| format!("{i:03}"), 300));
    load(&mut s.raw(), &keys);
    let users: BTreeSet<Vec<u8>> = keys
        .iter()
        .filter(|k| k.starts_with(b"user:"))
        .cloned()
        .collect();
    let all: BTreeSet<Vec<u8>> = keys.iter().cloned().collect();
    let (mut a, mut b) = (s.raw(), s.raw());
    let a_opts: [&[u8]; 2] = [b"COUNT", b"7"];
    let b_opts: [&[u8]; 4] = [b"MATCH", b"user:*", b"COUNT", b"5"];
    let (mut a_cursor, mut b_cursor) = ("0".to_string(), "0".to_string());
    let (mut a_seen, mut b_seen) = (BTreeMap::new(), BTreeMap::new());
    let (mut a_done, mut b_done) = (false, false);
    while !(a_done && b_done) {
        for (c, cursor, opts, seen, done) in [
            (&mut a, &mut a_cursor, &a_opts[..], &mut a_seen, &mut a_done),
            (&mut b, &mut b_cursor, &b_opts[..], &mut b_seen, &mut b_done),
        ] {
            if *done {
                continue;
            }
            let (next, got) = scan(c, cursor, opts).unwrap();
            for k in got {
                *seen.entry(k).or_default() += 1;
            }
            *done = next == "0";
            *cursor = next;
        }
    }
    assert_exactly_once(&a_seen, &all, "client A");
    assert_exactly_once(&b_seen, &users, "client B");
}

/// A cursor stays valid while 70,000 other scans (more than the old table's 65,536
/// entries) run, both kinds: a short position (in the number) and a long one (in the table).
#[test]
fn a_cursor_outlives_seventy_thousand_other_scans() {
    let (_tmp, s) = server(&[]);
    let mut keys = text_keys(|i| format!("a{i:04}"), 2000);
    keys.extend(text_keys(|i| format!("long:prefix:shared:{i:08}"), 2000));
    load(&mut s.raw(), &keys);
    let short: BTreeSet<Vec<u8>> = keys.iter().filter(|k| k[0] == b'a').cloned().collect();
    let long: BTreeSet<Vec<u8>> = keys.iter().filter(|k| k[0] == b'l').cloned().collect();
    let mut a = s.raw();
    let short_opts: [&[u8]; 4] = [b"MATCH", b"a*", b"COUNT", b"1000"];
    let long_opts: [&[u8]; 4] = [b"MATCH", b"long:*", b"COUNT", b"100"];
    let (mut short_seen, mut long_seen) = (BTreeMap::new(), BTreeMap::new());
    let (short_cursor, got) = scan(&mut a, "0", &short_opts).unwrap();
    for k in got {
        *short_seen.entry(k).or_default() += 1;
    }
    let (long_cursor, got) = scan(&mut a, "0", &long_opts).unwrap();
    for k in got {
        *long_seen.entry(k).or_default() += 1;
    }
    // Other scans, pipelined 1,000 at a time, each stopping at a long position.
    let mut b = s.raw();
    let one = encode(&[b"SCAN", b"0", b"MATCH", b"long:*", b"COUNT", b"3"]);
    for _ in 0..70 {
        b.send(&one.repeat(1000));
        for _ in 0..1000 {
            let reply = b.reply().expect("a reply");
            assert!(parse_scan(&reply).is_ok());
        }
    }
    scan_to_end(&mut a, short_cursor, &short_opts, &mut short_seen).unwrap();
    scan_to_end(&mut a, long_cursor, &long_opts, &mut long_seen).unwrap();
    assert_exactly_once(&short_seen, &short, "the short position");
    assert_exactly_once(&long_seen, &long, "the long position");
}

/// Keys of every length from 0 to 300 bytes, binary (NUL, 0xff, CR LF), with long shared
/// prefixes and prefixes of one another: full scans at several counts, and with patterns,
/// return each key exactly once.
#[test]
fn a_full_scan_returns_every_key_exactly_once() {
    use rand::{Rng, SeedableRng};
    let (_tmp, s) = server(&[]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(40);
    let mut all: BTreeSet<Vec<u8>> = BTreeSet::new();
    all.insert(Vec::new());
    for len in 0..=300usize {
        for _ in 0..4 {
            all.insert((0..len).map(|_| rng.gen::<u8>()).collect());
        }
    }
    let long_prefix = vec![0xabu8; 40];
    for i in 0..400u32 {
        let mut k = long_prefix.clone();
        k.extend_from_slice(&i.to_be_bytes());
        all.insert(k.clone());
        k.truncate(40 + (i as usize % 4));
        all.insert(k);
    }
    for k in ["\0", "\0\0", "\u{ff}", "a\r\nb", "p", "pp", "ppp", "pq"] {
        all.insert(k.as_bytes().to_vec());
    }
    for i in 0..300 {
        all.insert(format!("p:{i}").into_bytes());
    }
    let keys: Vec<Vec<u8>> = all.iter().cloned().collect();
    load(&mut s.raw(), &keys);
    let mut c = s.raw();
    for count in ["1", "3", "10", "97", "1000", "100000"] {
        let mut seen = BTreeMap::new();
        scan_to_end(&mut c, "0".into(), &[b"COUNT", count.as_bytes()], &mut seen).unwrap();
        assert_exactly_once(&seen, &all, &format!("COUNT {count}"));
        let mut seen = BTreeMap::new();
        let opts: [&[u8]; 6] = [
            b"MATCH",
            b"p*",
            b"COUNT",
            count.as_bytes(),
            b"TYPE",
            b"string",
        ];
        scan_to_end(&mut c, "0".into(), &opts, &mut seen).unwrap();
        let want = all
            .iter()
            .filter(|k| k.starts_with(b"p"))
            .cloned()
            .collect();
        assert_exactly_once(&seen, &want, &format!("MATCH p* COUNT {count}"));
        let mut seen = BTreeMap::new();
        let opts: [&[u8]; 4] = [b"MATCH", b"*:1*", b"COUNT", count.as_bytes()];
        scan_to_end(&mut c, "0".into(), &opts, &mut seen).unwrap();
        let want = all
            .iter()
            .filter(|k| k.windows(2).any(|w| w == b":1"))
            .cloned()
            .collect();
        assert_exactly_once(&seen, &want, &format!("MATCH *:1* COUNT {count}"));
    }
    // No hash among them: a scan of hashes visits every key and returns none.
    let mut seen = BTreeMap::new();
    scan_to_end(&mut c, "0".into(), &[b"TYPE", b"hash"], &mut seen).unwrap();
    assert!(seen.is_empty(), "{seen:?}");
}

/// Numbers the server never issued are refused with Redis's text, including the numbers the
/// old table handed out (from 1048576) while scans are running.
#[test]
fn a_made_up_cursor_is_refused() {
    let (_tmp, s) = server(&[]);
    let keys = text_keys(|i| format!("some:long:key:{i:08}"), 500);
    load(&mut s.raw(), &keys);
    let mut c = s.raw();
    for _ in 0..10 {
        let (cursor, _) = scan(&mut c, "0", &[b"COUNT", b"10"]).unwrap();
        assert_ne!(cursor, "0");
    }
    for made_up in [
        "1",
        "2",
        "12345",
        "1048576",
        "1048577",
        "1048585",
        "4294967296",
        "9007199254740991",
        "4503599627370496",
        "9223372036854775807",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "x",
        "",
    ] {
        assert_eq!(
            scan(&mut c, made_up, &[]),
            Err("ERR invalid cursor".to_string()),
            "cursor {made_up:?}"
        );
    }
}
