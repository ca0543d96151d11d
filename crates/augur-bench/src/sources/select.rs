//! From `augur bench`'s flags to the keys of the run: which source the flags choose
//! ([`key_set`]), how the records name it ([`source_name`]), and `--dump-keys`
//! ([`dump_keys`]). The checks of the flags that shape keys live here too: the prefix flags
//! (`--prefix_size`, `--keys_per_prefix`: db_bench numbers only), `--insert-order` (YCSB's
//! own key names: not with a key source), `--key_size` for u64 keys, `--load-order` and the
//! length of text keys.

use super::{
    cap, composite, generate, load_sosd, load_text, redis, strings, Distribution, KeySet, Prefixed,
    StringShape, MAX_TEXT_KEY_BYTES,
};
use crate::error::{io_err, BenchError};
use crate::BenchArgs;
use clap::ValueEnum;
use std::path::Path;

/// `--num` when neither it nor a key file says otherwise.
pub(crate) const DEFAULT_NUM: u64 = 200_000;

/// Whether the flags name a key source (`--keys`, `--keys-text`, `--distribution`) rather
/// than db_bench's key numbers.
pub(crate) fn has_source(a: &BenchArgs) -> bool {
    a.keys.is_some() || a.keys_text.is_some() || a.distribution.is_some()
}

/// The keys of the run (see `sources.rs`).
///
/// # Errors
/// The prefix flags apart from each other, with a key source, with a prefix not shorter
/// than `--key_size` or with more keys per prefix than `--num`; `--insert-order` with a key
/// source; `--key_size` below 8 for u64 keys; `--load-order` without a source or ycsb-load;
/// a source that fails to load or to generate; a text key longer than
/// [`MAX_TEXT_KEY_BYTES`].
pub(crate) fn key_set(a: &BenchArgs) -> Result<KeySet, BenchError> {
    let text_dist = a.distribution.is_some_and(Distribution::is_text);
    let u64_keys = a.keys.is_some() || (a.distribution.is_some() && !text_dist);
    let num = a.num.unwrap_or(DEFAULT_NUM);
    let prefixed = prefixed(a, num)?;
    if a.insert_order.is_some() && has_source(a) {
        return Err(BenchError::failed(
            "--insert-order names YCSB's own keys (user...); with a key source (--keys, \
             --keys-text, --distribution) YCSB's records are the source's keys",
        ));
    }
    if u64_keys && a.key_size < 8 {
        return Err(BenchError::failed(format!(
            "--key_size={} is too small for u64 keys (at least 8)",
            a.key_size
        )));
    }
    let ycsb_load = a.benchmarks.iter().any(|b| b.trim() == "ycsb-load");
    if a.load_order.is_some() && !has_source(a) && !ycsb_load {
        return Err(BenchError::failed(
            "--load-order needs a key source (--keys, --keys-text or --distribution) or ycsb-load",
        ));
    }
    let keys = if let Some(f) = &a.keys {
        KeySet::U64(cap(load_sosd(f)?, a.num))
    } else if let Some(f) = &a.keys_text {
        KeySet::Text(cap(load_text(f)?, a.num))
    } else if let Some(d) = a.distribution {
        match d {
            Distribution::Strings => KeySet::Text(strings(&string_shape(a), num, a.seed)?),
            Distribution::Composite => KeySet::Text(composite(num, a.seed)?),
            Distribution::Redis => KeySet::Text(redis(num)?),
            _ => KeySet::U64(generate(d, num, a.seed)),
        }
    } else if let Some(p) = prefixed {
        KeySet::Prefixed(p)
    } else {
        KeySet::Numbers(num)
    };
    if let KeySet::Text(list) = &keys {
        if let Some(long) = list.iter().find(|k| k.len() > MAX_TEXT_KEY_BYTES) {
            let start = String::from_utf8_lossy(long.get(..40).unwrap_or(long));
            return Err(BenchError::failed(format!(
                "a key of {} bytes (starting {start:?}) is longer than {MAX_TEXT_KEY_BYTES} \
                 bytes, the longest key Augur and fjall take",
                long.len()
            )));
        }
    }
    Ok(keys)
}

/// db_bench's prefixed keys from `--prefix_size` and `--keys_per_prefix` over `num` key
/// numbers (`None` when both are 0, db_bench's default).
///
/// # Errors
/// One flag without the other (either alone changes no key), either with a key source, a
/// prefix not shorter than `--key_size` (no byte left for the key number; db_bench itself
/// refuses only a longer one), more keys per prefix than `--num` (no whole group; db_bench
/// would divide by zero).
fn prefixed(a: &BenchArgs, num: u64) -> Result<Option<Prefixed>, BenchError> {
    let (p, k) = (a.prefix_size, a.keys_per_prefix);
    if p == 0 && k == 0 {
        return Ok(None);
    }
    if p == 0 {
        return Err(BenchError::failed(format!(
            "--keys_per_prefix={k} needs --prefix_size (the bytes of the prefix its keys share)"
        )));
    }
    if k == 0 {
        return Err(BenchError::failed(format!(
            "--prefix_size={p} needs --keys_per_prefix (how many keys share a prefix); alone it \
             changes no key (db_bench uses it alone for RocksDB's prefix extractor, which \
             augur bench does not set)"
        )));
    }
    if has_source(a) {
        return Err(BenchError::failed(
            "--prefix_size and --keys_per_prefix shape db_bench's numbered keys; they do not \
             apply to a key source (--keys, --keys-text, --distribution)",
        ));
    }
    if p >= a.key_size {
        return Err(BenchError::failed(format!(
            "--prefix_size={p} must be less than --key_size={} (the key number needs at least \
             one byte after the prefix)",
            a.key_size
        )));
    }
    if k > num {
        return Err(BenchError::failed(format!(
            "--keys_per_prefix={k} is more than --num={num}: not one prefix would get its keys"
        )));
    }
    Ok(Some(Prefixed {
        num,
        prefix_bytes: p,
        keys_per_prefix: k,
    }))
}

/// The shape of `--distribution=strings` keys from the flags.
pub(crate) fn string_shape(a: &BenchArgs) -> StringShape {
    StringShape {
        min_len: a.string_min_len,
        max_len: a.string_max_len,
        prefix_len: a.string_prefix_len,
    }
}

/// How the key source is named in reports.
pub(crate) fn source_name(a: &BenchArgs) -> String {
    if let Some(f) = &a.keys {
        format!("sosd:{}", f.display())
    } else if let Some(f) = &a.keys_text {
        format!("text:{}", f.display())
    } else if let Some(d) = a.distribution {
        format!(
            "distribution:{}",
            d.to_possible_value()
                .map_or("?".into(), |v| v.get_name().to_string())
        )
    } else {
        "db_bench".to_string()
    }
}

/// Writes the keys of a text key set to `file`, one per line (`--dump-keys`).
///
/// # Errors
/// A key set that is not text (db_bench numbers or u64 keys), or a key holding a newline
/// (it would not read back as one line); a failed write.
pub(crate) fn dump_keys(keys: &KeySet, file: &Path) -> Result<(), BenchError> {
    let KeySet::Text(list) = keys else {
        return Err(BenchError::failed(
            "--dump-keys writes text keys only (--keys-text, or --distribution=strings, \
             composite or redis)",
        ));
    };
    let mut out = Vec::with_capacity(list.iter().map(|k| k.len() + 1).sum());
    for k in list {
        if k.contains(&b'\n') {
            return Err(BenchError::failed(
                "--dump-keys: a key holds a newline and cannot be written one per line",
            ));
        }
        out.extend_from_slice(k);
        out.push(b'\n');
    }
    std::fs::write(file, out).map_err(io_err(format!("writing {}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `augur bench`'s arguments alone, as the CLI flattens them.
    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn args(flags: &[&str]) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("bench").chain(flags.iter().copied()))
            .unwrap()
            .bench
    }

    fn refused(flags: &[&str]) -> String {
        key_set(&args(flags)).unwrap_err().to_string()
    }

    #[test]
    fn strings_is_a_text_key_source_with_the_flags_shape() {
        let a = args(&[
            "--distribution=strings",
            "--num=500",
            "--string-min-len=20",
            "--string-max-len=30",
            "--string-prefix-len=10",
        ]);
        let KeySet::Text(k) = key_set(&a).unwrap() else {
            panic!("not text keys");
        };
        assert_eq!(k.len(), 500);
        assert!(k
            .iter()
            .all(|x| (20..=30).contains(&x.len()) && x[..10] == k[0][..10]));
        assert_eq!(source_name(&a), "distribution:strings");
        let d = args(&["--distribution=strings"]);
        assert_eq!(string_shape(&d), StringShape::DEFAULT);
        // --key_size does not apply to string keys (no u64 minimum), --load-order does.
        let a = args(&[
            "--distribution=strings",
            "--num=50",
            "--key_size=4",
            "--load-order=sequential",
        ]);
        assert_eq!(key_set(&a).unwrap().len(), 50);
        // --dump-keys writes them one per line, and --keys-text reads the same set back.
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("keys.txt");
        let keys = key_set(&a).unwrap();
        dump_keys(&keys, &file).unwrap();
        assert_eq!(KeySet::Text(load_text(&file).unwrap()), keys);
        assert!(dump_keys(&KeySet::Numbers(3), &file).is_err());
    }

    #[test]
    fn composite_and_redis_are_text_sources_of_num_keys() {
        for (name, first) in [("composite", "account:"), ("redis", "key:000000000000")] {
            let a = args(&[
                &format!("--distribution={name}"),
                "--num=300",
                "--key_size=4",
            ]);
            let KeySet::Text(k) = key_set(&a).unwrap() else {
                panic!("{name}: not text keys");
            };
            assert_eq!(k.len(), 300, "{name}");
            assert!(k[0].starts_with(first.as_bytes()), "{name}");
            assert_eq!(source_name(&a), format!("distribution:{name}"));
        }
    }

    #[test]
    fn prefix_flags_make_db_bench_prefixed_numbers() {
        let a = args(&["--prefix_size=4", "--keys_per_prefix=10", "--num=100"]);
        let want = Prefixed {
            num: 100,
            prefix_bytes: 4,
            keys_per_prefix: 10,
        };
        assert_eq!(key_set(&a).unwrap(), KeySet::Prefixed(want));
        // The hyphenated spellings, and db_bench's explicit "no prefix".
        let a = args(&["--prefix-size=4", "--keys-per-prefix=10", "--num=100"]);
        assert_eq!(key_set(&a).unwrap(), KeySet::Prefixed(want));
        let a = args(&["--prefix_size=0", "--keys_per_prefix=0", "--num=100"]);
        assert_eq!(key_set(&a).unwrap(), KeySet::Numbers(100));
    }

    #[test]
    fn bad_prefix_flags_are_refused_with_the_reason() {
        let e = refused(&["--keys_per_prefix=10", "--num=100"]);
        assert!(
            e.contains("--keys_per_prefix=10 needs --prefix_size"),
            "{e}"
        );
        let e = refused(&["--prefix_size=4", "--num=100"]);
        assert!(e.contains("--prefix_size=4 needs --keys_per_prefix"), "{e}");
        for size in ["16", "20"] {
            let e = refused(&[
                &format!("--prefix_size={size}"),
                "--keys_per_prefix=10",
                "--key_size=16",
            ]);
            assert!(e.contains("must be less than --key_size=16"), "{e}");
        }
        let e = refused(&["--prefix_size=4", "--keys_per_prefix=101", "--num=100"]);
        assert!(
            e.contains("--keys_per_prefix=101 is more than --num=100"),
            "{e}"
        );
        for source in ["--distribution=linear", "--distribution=redis"] {
            let e = refused(&[source, "--prefix_size=4", "--keys_per_prefix=10"]);
            assert!(e.contains("do not apply to a key source"), "{e}");
        }
    }

    #[test]
    fn insert_order_names_ycsb_keys_only() {
        let e = refused(&["--distribution=redis", "--num=10", "--insert-order=ordered"]);
        assert!(e.contains("--insert-order names YCSB's own keys"), "{e}");
        assert!(key_set(&args(&["--num=10", "--insert-order=ordered"])).is_ok());
    }

    #[test]
    fn text_keys_longer_than_the_engines_take_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("long.txt");
        let line = "k".repeat(MAX_TEXT_KEY_BYTES);
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let flag = format!("--keys-text={}", file.display());
        assert_eq!(key_set(&args(&[&flag])).unwrap().len(), 1);
        std::fs::write(&file, format!("a\n{line}k\n")).unwrap();
        let e = refused(&[&flag]);
        assert!(e.contains("a key of 65536 bytes"), "{e}");
    }
}
