//! The engine's read paths side by side on one key set (not a test): one database per
//! candidate (the baseline fence path, fixed index kinds and error bounds, `auto`), each
//! filled in a shuffled order and compacted, then point lookups and seeks reading eleven entries (the bench's seekrandom with ten nexts) on
//! every database in turn, round after round, so a busy machine's drift hits them all alike.
//! Prints per candidate the median ns per lookup and per seek (wall time, and the thread's
//! CPU time, which leaves out the waits for a core on a shared machine), their ratio to the
//! baseline path, the models the files got, the engine's sampled lookup steps per candidate
//! (`Stats::lookup_breakdown`: where the search and the locate differ), and the chooser's
//! predicted costs for one file's worth of the keys (`FILES`) with the shape of two string
//! trees over them (depth, redirects, segment steps) and their search time alone.
//!
//! Run: `cargo run --release -p augur --example read_paths_bench KEYS.txt` (one key per line).
//! Knobs (environment): `CANDIDATES` (default `never fence pgm plr s8 s16 s32 auto`; `sD/R`
//! is the string tree at error bound D and run limit R, `sD` the same at run limit 2D,
//! `plrD` PLR at error bound D, `autoD` auto at D), `ROUNDS` (7), `GETS` (200000), `SEEKS`
//! (50000), `DIR` (`/tmp/augur-read-paths`), `FILES` (1: the files a level of the set holds,
//! for the chooser's view of one), `PREDICT_ONLY` (print the chooser's view and stop),
//! `HOT_KEYS` (the probe keys in one buffer in probe order: no cache miss fetching them).

use augur::index::chooser::{self, ModelBudget};
use augur::index::{Index, IndexConfig, IndexKind};
use augur::{Compression, Db, LearningPolicy, Options};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The options of candidate `name`.
fn options(name: &str) -> Options {
    let mut o = Options {
        value_separation_threshold: 1024,
        compression: Compression::None,
        ..Options::default()
    };
    let num = |s: &str| s.parse::<u32>().expect("a number in the candidate's name");
    match name {
        "never" => o.learning = LearningPolicy::Never,
        "fence" => o.index = IndexKind::Fence,
        "pgm" => o.index = IndexKind::Pgm,
        "plr" => o.index = IndexKind::Plr,
        "auto" => o.auto_index = true,
        "auto-unlimited" => {
            o.auto_index = true;
            o.model_memory_budget = ModelBudget::Unlimited;
        }
        _ if name.starts_with("auto") => {
            o.auto_index = true;
            o.error_bound = num(&name[4..]);
        }
        _ if name.starts_with("plr") => o.error_bound = num(&name[3..]),
        _ if name.starts_with('s') => {
            o.index = IndexKind::StringTree;
            let (d, r) = match name[1..].split_once('/') {
                Some((d, r)) => (num(d), num(r)),
                None => (num(&name[1..]), 2 * num(&name[1..])),
            };
            o.error_bound = d;
            o.index_tuning.string_run_limit = r;
        }
        _ => panic!("unknown candidate {name}"),
    }
    o
}

/// The models of `db`'s files, as `kind/wWINDOW BYTES x FILES`.
fn models(db: &Db) -> String {
    let mut parts = Vec::new();
    for level in db.stats().levels {
        for m in level.models_by_kind {
            parts.push(format!(
                "{}/w{} {} B x{}",
                m.kind.name(),
                m.max_window,
                m.bytes,
                m.files
            ));
        }
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The calling thread's CPU time in ns: on a machine shared with other jobs, the time the
/// lookups ran, without the time the thread waited for a core.
fn thread_cpu_ns() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let file = std::env::args()
        .nth(1)
        .expect("usage: read_paths_bench KEYS.txt");
    let text = std::fs::read(&file).expect("read the key file");
    let mut keys: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let candidates: Vec<String> = env_or("CANDIDATES", "never fence pgm plr s8 s16 s32 auto")
        .split_whitespace()
        .map(String::from)
        .collect();
    let (rounds, gets, seeks) = (
        env_num("ROUNDS", 7),
        env_num("GETS", 200_000),
        env_num("SEEKS", 50_000),
    );
    let dir = std::path::PathBuf::from(env_or("DIR", "/tmp/augur-read-paths"));

    // The chooser's view of the whole set (one file's worth when the set fits one file).
    // `FILES=k`: the chooser's view of one file of k (the middle one), as a level of k
    // files holds the set.
    let files = env_num("FILES", 1).max(1);
    let per_file = keys.len().div_ceil(files);
    let part = &keys[per_file * (files / 2)..(per_file * (files / 2 + 1)).min(keys.len())];
    let common = part[0]
        .iter()
        .zip(part[part.len() - 1])
        .take_while(|(a, b)| a == b)
        .count();
    let rests: Vec<&[u8]> = part.iter().map(|k| &k[common..]).collect();
    let config = IndexConfig {
        error_bound: 8,
        fence_stride: 17,
        ..IndexConfig::default()
    };
    println!(
        "{file}: {} keys; the chooser on {} of them (common prefix {common} B):",
        keys.len(),
        rests.len()
    );
    for c in chooser::explain_keys(&rests, &config, ModelBudget::FencePointers, 64)
        .expect("the chooser's candidates")
    {
        println!("  predicted {c}");
    }
    for (delta, run_limit) in [(8, 16), (16, 32)] {
        let tree = augur::index::string_tree::StringTree::build(&rests, delta, run_limit)
            .expect("a string tree");
        let s = tree.stats();
        // The tree's own search, alone: its ns per key over random keys of the file.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let probes: Vec<&[u8]> = (0..1_000_000)
            .map(|_| rests[rng.gen_range(0..rests.len())])
            .collect();
        let t = Instant::now();
        let mut sum = 0u64;
        for p in &probes {
            sum = sum.wrapping_add(tree.search_rest(p).lo);
        }
        black_box(sum);
        let search_ns = t.elapsed().as_nanos() as f64 / probes.len() as f64;
        println!(
            "  tree d{delta}/r{run_limit}: depth {:.2}, redirect checks {:.2}, segment steps \
             {:.2}, {} nodes, {} with models, {} B, search {search_ns:.1} ns",
            s.mean_depth,
            s.mean_redirect_checks,
            s.mean_segment_steps,
            s.nodes,
            s.models,
            tree.size_bytes(),
        );
    }
    if std::env::var("PREDICT_ONLY").is_ok() {
        return;
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.shuffle(&mut rng);
    let value = vec![b'v'; 100];
    let mut dbs = Vec::new();
    for name in &candidates {
        let path = dir.join(name.replace('/', "-"));
        let _ = std::fs::remove_dir_all(&path);
        let db = Db::open(&path, options(name)).expect("open");
        for chunk in order.chunks(1000) {
            let mut batch = augur::WriteBatch::default();
            for &i in chunk {
                batch.put(keys[i], &value);
            }
            db.write(batch).expect("write");
        }
        db.flush().expect("flush");
        db.compact_range(None, None).expect("compact");
        db.wait_for_compactions().expect("settle");
        println!("  {name:>14}: {}", models(&db));
        dbs.push(db);
    }

    let mut probes: Vec<&[u8]> = (0..gets.max(seeks))
        .map(|_| keys[rng.gen_range(0..keys.len())])
        .collect();
    // `HOT_KEYS=1`: the probe keys copied in probe order into one buffer, so fetching the
    // key to look up streams from memory instead of missing the cache (a server has the
    // key in hand); by default each probe points into the key file, a miss per lookup.
    let hot: Vec<u8> = if std::env::var("HOT_KEYS").is_ok() {
        probes.concat()
    } else {
        Vec::new()
    };
    if !hot.is_empty() {
        let mut at = 0;
        for p in probes.iter_mut() {
            let len = p.len();
            *p = &hot[at..at + len];
            at += len;
        }
    }
    let mut get_ns = vec![Vec::new(); dbs.len()];
    let mut seek_ns = vec![Vec::new(); dbs.len()];
    let mut get_cpu = vec![Vec::new(); dbs.len()];
    let mut seek_cpu = vec![Vec::new(); dbs.len()];
    for round in 0..rounds {
        // Rotated each round, so no candidate always runs right after the same one.
        for k in 0..dbs.len() {
            let c = (k + round) % dbs.len();
            let db = &dbs[c];
            let (t, cpu) = (Instant::now(), thread_cpu_ns());
            let mut found = 0usize;
            for key in &probes[..gets] {
                found += usize::from(db.get(key).expect("get").is_some());
            }
            assert_eq!(found, gets);
            get_ns[c].push(t.elapsed().as_nanos() as f64 / gets as f64);
            get_cpu[c].push((thread_cpu_ns() - cpu) / gets as f64);
            let (t, cpu) = (Instant::now(), thread_cpu_ns());
            let mut read = 0usize;
            for key in &probes[..seeks] {
                let mut scan = db.scan(*key..);
                for _ in 0..11 {
                    match scan.next().expect("next") {
                        Some((k, _)) => read += k.len(),
                        None => break,
                    }
                }
            }
            black_box(read);
            seek_ns[c].push(t.elapsed().as_nanos() as f64 / seeks as f64);
            seek_cpu[c].push((thread_cpu_ns() - cpu) / seeks as f64);
        }
    }
    let base = candidates.iter().position(|c| c == "never");
    let mid = |xs: &[Vec<f64>], c: usize| median(&mut xs[c].clone());
    let ratio = |xs: &[Vec<f64>], c: usize| base.map_or(f64::NAN, |b| mid(xs, b) / mid(xs, c));
    println!(
        "  sampled lookup steps (ns): {}",
        augur::stats::breakdown::STEP_NAMES.join(" / ")
    );
    for (c, name) in candidates.iter().enumerate() {
        let b = dbs[c].stats().lookup_breakdown;
        let steps: Vec<String> = b.avg_step_ns.iter().map(|ns| format!("{ns:.0}")).collect();
        println!(
            "  {name:>14}: total {:.0} = {}",
            b.avg_total_ns,
            steps.join(" / ")
        );
    }
    println!(
        "  candidate | get ns | seek+10 ns | get: never/it | seek: never/it \
         | get cpu ns | seek cpu ns | cpu get: never/it | cpu seek: never/it"
    );
    for (c, name) in candidates.iter().enumerate() {
        println!(
            "  {name:>14} | {:7.0} | {:7.0} | {:.3}x | {:.3}x | {:7.0} | {:7.0} | {:.3}x | {:.3}x",
            mid(&get_ns, c),
            mid(&seek_ns, c),
            ratio(&get_ns, c),
            ratio(&seek_ns, c),
            mid(&get_cpu, c),
            mid(&seek_cpu, c),
            ratio(&get_cpu, c),
            ratio(&seek_cpu, c),
        );
    }
}
