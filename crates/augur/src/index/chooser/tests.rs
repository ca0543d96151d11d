//! Tests of the model chooser (`chooser.rs`): choices stay within the budget and the window
//! contract, the fence path is kept where no model is predicted cheaper, keys told apart
//! deep inside get no colliding integer model, and the cost model sees window widths and
//! block crossings.

use super::*;
use rand::{Rng, SeedableRng};

fn uniform(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut keys: Vec<u64> = (0..n).map(|_| rng.gen()).collect();
    keys.sort_unstable();
    keys
}

/// Keys in short dense runs separated by random gaps: lines fit only a run at a time.
fn clustered(n: usize, run: u64, seed: u64) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(n);
    let mut x = 0u64;
    while keys.len() < n {
        x += rng.gen_range(1_000..1_000_000_000);
        for _ in 0..run {
            x += rng.gen_range(1..3);
            keys.push(x);
        }
    }
    keys.truncate(n);
    keys
}

fn config() -> IndexConfig {
    IndexConfig {
        error_bound: 8,
        ..IndexConfig::default()
    }
}

#[test]
fn linear_keys_get_a_line_model() {
    let keys: Vec<u64> = (0..100_000u64).map(|i| 5 + 3 * i).collect();
    let idx = choose(&keys, &config(), ModelBudget::FencePointers).unwrap();
    assert_ne!(idx.kind(), IndexKind::Fence);
    assert!(idx.segments() <= 2);
}

#[test]
fn choices_stay_within_the_budget_and_the_contract() {
    for keys in [
        uniform(50_000, 1),
        clustered(50_000, 5, 2),
        clustered(50_000, 40, 3),
    ] {
        let fence = build(&config(), IndexKind::Fence, 8, &keys).unwrap();
        for budget in [
            ModelBudget::FencePointers,
            ModelBudget::BytesPerKey(0.1),
            ModelBudget::Unlimited,
        ] {
            let idx = choose(&keys, &config(), budget).unwrap();
            let limit = budget_bytes(budget, keys.len(), fence.size_bytes());
            assert!(
                idx.size_bytes() <= limit || idx.kind() == IndexKind::Fence,
                "{budget}: {:?} of {} bytes over {limit}",
                idx.kind(),
                idx.size_bytes()
            );
            assert!(predicted_cost(idx.as_ref()) <= predicted_cost(fence.as_ref()));
            for (pos, &k) in keys.iter().enumerate().step_by(97) {
                let lb = keys.partition_point(|&x| x < k) as u64;
                assert!(idx.search(k).contains(lb), "{budget}: key {k} at {pos}");
                let lb1 = keys.partition_point(|&x| x < k + 1) as u64;
                assert!(idx.search(k + 1).contains(lb1));
            }
        }
    }
}

#[test]
fn short_segments_fall_back_to_fence_pointers_at_fence_memory() {
    // Runs of 5 keys: PLR at δ = 8 needs a segment per few runs, bigger than fence
    // pointers; the chooser must not pick a slower or larger structure.
    let keys = clustered(50_000, 5, 4);
    let fence = build(&config(), IndexKind::Fence, 8, &keys).unwrap();
    let idx = choose(&keys, &config(), ModelBudget::FencePointers).unwrap();
    assert!(idx.size_bytes() <= fence.size_bytes());
}

/// Keys of several shapes, sorted and deduplicated: path-like keys whose first 8 bytes
/// collide by the thousand, keys that share 40 bytes and differ only past them, composite
/// `table:id:field` keys, URL-like keys and big-endian numbers.
fn shapes() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut paths = Vec::new();
    for dir in [
        "usr/share/icons/hicolor/",
        "usr/share/doc/packages/",
        "var/lib/db/",
    ] {
        for i in 0..4000 {
            paths.push(format!("{dir}{:x}/file-{i:05}", i % 37).into_bytes());
        }
    }
    let deep: Vec<Vec<u8>> = (0..12_000)
        .map(|i| {
            let tail: u32 = rng.gen();
            format!("tenant-0000042/region-eu-west/objects/blob/{tail:08x}-{i}").into_bytes()
        })
        .collect();
    let composite: Vec<Vec<u8>> = (0..12_000)
        .map(|i| {
            let table = ["account", "order", "session", "user"][i % 4];
            let id = rng.gen_range(0..5000u32);
            let field = ["created", "email", "name", "status"][(i / 4) % 4];
            format!("{table}:{id}:{field}").into_bytes()
        })
        .collect();
    let urls: Vec<Vec<u8>> = (0..12_000)
        .map(|i| {
            let host = ["github.com/org", "example.org/docs", "pypi.org/project"][i % 3];
            format!("https://{host}/{:x}/page-{}", rng.gen::<u16>(), i).into_bytes()
        })
        .collect();
    let numbers: Vec<Vec<u8>> = (0..20_000u64)
        .map(|i| (i * 7919).to_be_bytes().to_vec())
        .collect();
    let mut out = vec![
        ("paths", paths),
        ("deep", deep),
        ("composite", composite),
        ("urls", urls),
        ("numbers", numbers),
    ];
    for (_, keys) in &mut out {
        keys.sort();
        keys.dedup();
    }
    out
}

/// The lower bound of `probe` in `keys`.
fn lower_bound(keys: &[&[u8]], probe: &[u8]) -> u64 {
    keys.partition_point(|k| *k < probe) as u64
}

/// On every shape and budget, the choice is predicted no slower than the table's fence
/// path (by the margin), fits its budget, keeps the configured kind's model unless
/// another is clearly cheaper, and its windows hold the lower bound of present and
/// absent keys (within a run's reach past the window for string trees, as the reader
/// gallops).
#[test]
fn auto_is_never_predicted_slower_than_the_fence_path() {
    for (name, owned) in shapes() {
        let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for budget in [
            ModelBudget::FencePointers,
            ModelBudget::BytesPerKey(0.5),
            ModelBudget::Unlimited,
        ] {
            let explained = explain_keys(&keys, &config(), budget, 64).unwrap();
            let fence_path = &explained[0];
            assert_eq!(fence_path.label, "fence path");
            let chosen: Vec<&Candidate> = explained.iter().filter(|c| c.chosen).collect();
            assert_eq!(chosen.len(), 1, "{name} {budget}: {explained:#?}");
            let chosen = chosen[0];
            // Every budget is a hard cap.
            assert!(chosen.fits, "{name} {budget}: {chosen}");
            assert!(
                chosen.cost <= fence_path.cost,
                "{name} {budget}: {chosen} slower than {fence_path}"
            );
            if !chosen.label.starts_with("fence path") {
                assert!(chosen.cost + FENCE_PATH_MARGIN <= fence_path.cost);
                let floor = &explained[1];
                assert!(floor.label.ends_with("(floor)"));
                if floor.fits && !chosen.label.ends_with("(floor)") {
                    assert!(chosen.cost + FLOOR_MARGIN <= floor.cost, "{name} {budget}");
                }
            }
            // Nothing that may be kept is predicted cheaper than the choice by the
            // margins.
            for c in explained.iter().filter(|c| c.fits) {
                assert!(
                    c.cost + FENCE_PATH_MARGIN + FLOOR_MARGIN >= chosen.cost,
                    "{name} {budget}: {c} against {chosen}"
                );
            }
            let Some(idx) = choose_keys(&keys, &config(), budget, 64).unwrap() else {
                assert_eq!(chosen.label, "fence path");
                continue;
            };
            assert_eq!(idx.size_bytes(), chosen.bytes);
            let chosen_kind = chosen.label.trim_end_matches(" (floor)");
            assert_eq!(label(idx.as_ref()), chosen_kind.split("/r").next().unwrap());
            // How far past its window a lower bound may lie: a run of keys sharing a
            // projection (integer models), or a run the tree's node keeps.
            let reach = match idx.kind() {
                IndexKind::StringTree => u64::from(config().tuning.string_run_limit) * 4,
                _ => longest_projection_run(&keys),
            };
            let mut probes: Vec<Vec<u8>> = Vec::new();
            for k in keys.iter().step_by(7) {
                probes.push(k.to_vec());
                let mut longer = k.to_vec();
                longer.push(0);
                probes.push(longer);
                probes.push(k[..k.len() / 2].to_vec());
                let mut bumped = k.to_vec();
                if let Some(last) = bumped.last_mut() {
                    *last = last.wrapping_add(1);
                }
                probes.push(bumped);
            }
            probes.push(Vec::new());
            probes.push(vec![0xff; 40]);
            for probe in &probes {
                let lb = lower_bound(&keys, probe);
                let w = idx.search_key(probe, b"");
                assert!(
                    w.lo <= lb && lb <= w.hi + reach,
                    "{name} {budget}: {probe:?} {w:?} lb {lb}"
                );
            }
        }
    }
}

/// The most keys sharing one projection.
fn longest_projection_run(keys: &[&[u8]]) -> u64 {
    let project = |k: &[u8]| super::super::projection::project(k, 0);
    let (mut longest, mut run) = (1u64, 1u64);
    for w in keys.windows(2) {
        run = if project(w[0]) == project(w[1]) {
            run + 1
        } else {
            1
        };
        longest = longest.max(run);
    }
    longest
}

/// Keys that differ only deep inside (40 shared bytes): the fence path's compares are
/// long, and the choice (a string tree, or the fence path) is predicted no slower; an
/// integer model over their projections, which all collide, is never kept.
#[test]
fn deep_distinguishing_bytes_never_get_a_colliding_integer_model() {
    let shapes = shapes();
    let (_, owned) = shapes.iter().find(|(n, _)| *n == "deep").unwrap();
    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let explained = explain_keys(&keys, &config(), ModelBudget::FencePointers, 64).unwrap();
    let chosen = explained.iter().find(|c| c.chosen).unwrap();
    assert!(chosen.cost <= explained[0].cost);
    assert!(
        chosen.label.starts_with("string") || chosen.label == "fence path",
        "{chosen}"
    );
    if let Some(idx) = choose_keys(&keys, &config(), ModelBudget::FencePointers, 64).unwrap() {
        assert_eq!(idx.kind(), IndexKind::StringTree);
        // Within the budget: fence pointers that tell the keys apart.
        assert!(idx.size_bytes() <= string_fence_bytes(&keys, 17));
    }
}

/// The window rule the reader follows: a window just wider than the linear scan costs
/// more than one just under it (a bisection and often a second block), and a gallop
/// through a run and across blocks costs more than a window holding the key.
#[test]
fn bisected_and_block_crossing_windows_cost_more() {
    let n = 1 << 20;
    let narrow = Window { lo: 1000, hi: 1017 };
    let wide = Window { lo: 1000, hi: 1033 };
    assert!(locate_cost(wide, 1016, n, 64) > locate_cost(narrow, 1008, n, 64) + 1.0);
    let inside = locate_cost(narrow, 1010, n, 64);
    assert!(locate_cost(narrow, 1200, n, 64) > inside + BLOCK_SWITCH);
    // The same scan (six slots down from the middle) inside one block and across the
    // block boundary at 1024.
    let crossing = Window { lo: 1020, hi: 1037 };
    let within = locate_cost(narrow, 1002, n, 64);
    assert!(locate_cost(crossing, 1022, n, 64) >= within + BLOCK_SWITCH);
    // A scan that stays on its side of the boundary pays no switch.
    assert_eq!(
        locate_cost(crossing, 1030, n, 64),
        locate_cost(narrow, 1010, n, 64)
    );
    // Larger models and more blocks cost more.
    assert!(model_misses(4 << 20) > model_misses(256 << 10));
    assert_eq!(model_misses(1000), 0.0);
    let keys: Vec<Vec<u8>> = (0..100_000u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    assert!(fence_path_cost(&keys, 64) > fence_path_cost(&keys[..1000], 64));
    assert_eq!(fence_path_cost(&[], 64), 0.0);
}

/// The fence path is chosen where nothing may use memory, and a tiny budget keeps it.
#[test]
fn no_memory_keeps_the_fence_path() {
    for (name, owned) in shapes() {
        let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let idx = choose_keys(&keys, &config(), ModelBudget::BytesPerKey(0.0), 64).unwrap();
        assert!(idx.is_none(), "{name}: {:?}", idx.map(|i| i.kind()));
    }
}

/// Over numbers told apart by their first bytes, the choice over keys is the choice over
/// projections or the fence path.
#[test]
fn keys_told_apart_early_keep_the_integer_choice() {
    let numbers: Vec<Vec<u8>> = (0..20_000u64)
        .map(|i| (i * 7919).to_be_bytes().to_vec())
        .collect();
    let keys: Vec<&[u8]> = numbers.iter().map(Vec::as_slice).collect();
    let projected: Vec<u64> = keys
        .iter()
        .map(|k| super::super::projection::project(k, 0))
        .collect();
    let by_projections = choose(&projected, &config(), ModelBudget::FencePointers).unwrap();
    if let Some(by_keys) = choose_keys(&keys, &config(), ModelBudget::FencePointers, 64).unwrap() {
        assert_ne!(by_keys.kind(), IndexKind::StringTree);
        if by_keys.kind() == by_projections.kind() {
            assert_eq!(by_keys.segments(), by_projections.segments());
        }
    }
}

#[test]
fn budget_parsing_names_the_option() {
    assert_eq!(
        ModelBudget::parse("fence").unwrap(),
        ModelBudget::FencePointers
    );
    assert_eq!(
        ModelBudget::parse("unlimited").unwrap(),
        ModelBudget::Unlimited
    );
    assert_eq!(
        ModelBudget::parse("0.25").unwrap(),
        ModelBudget::BytesPerKey(0.25)
    );
    for bad in ["-1", "NaN", "inf", "lots"] {
        let e = ModelBudget::parse(bad).unwrap_err().to_string();
        assert!(e.contains("model_memory_budget"), "{e}");
    }
}

/// Every budget is a hard cap, the default (`fence`) too: where the configured kind's
/// model (here `--index plr`'s string tree) is larger than fence pointers that tell the keys
/// apart — short keys over a small alphabet, as reversed domain names — it is not kept
/// under that budget, however cheap it is predicted; `unlimited` may keep it.
#[test]
fn the_configured_model_does_not_pass_the_fence_budget() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(37);
    let tlds = ["com", "net", "org", "de", "uk"];
    let word = |rng: &mut rand::rngs::StdRng| -> String {
        let len = rng.gen_range(3..10);
        (0..len)
            .map(|_| char::from(b'a' + rng.gen_range(0..26u8)))
            .collect()
    };
    // Reversed names: a few hundred sites, each with its own hosts.
    let sites: Vec<String> = (0..400)
        .map(|_| format!("{}.{}", tlds[rng.gen_range(0..tlds.len())], word(&mut rng)))
        .collect();
    let mut owned: Vec<Vec<u8>> = (0..20_000)
        .map(|_| {
            let site = &sites[rng.gen_range(0..sites.len())];
            format!("{site}.{}", word(&mut rng)).into_bytes()
        })
        .collect();
    owned.sort();
    owned.dedup();
    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let budget = string_fence_bytes(&keys, 2 * config().error_bound as usize + 1);
    let explained = explain_keys(&keys, &config(), ModelBudget::FencePointers, 64).unwrap();
    let floor = &explained[1];
    assert!(floor.label.ends_with("(floor)"), "{explained:#?}");
    assert!(
        floor.bytes > budget && !floor.fits,
        "the premise: the configured model is larger than the budget ({budget} B): {floor}"
    );
    assert!(!floor.chosen, "{floor}");
    if let Some(idx) = choose_keys(&keys, &config(), ModelBudget::FencePointers, 64).unwrap() {
        assert!(idx.size_bytes() <= budget, "{} B", idx.size_bytes());
    }
    let unlimited = explain_keys(&keys, &config(), ModelBudget::Unlimited, 64).unwrap();
    assert!(unlimited.iter().all(|c| c.fits), "{unlimited:#?}");
}
