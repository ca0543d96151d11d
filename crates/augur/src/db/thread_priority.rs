//! CPU priority of background threads: the compaction thread lowers its own priority
//! (`Options::compaction_nice`) so that, on a machine with fewer cores than busy threads,
//! writers and the flush thread run first and compaction takes the CPU they leave.
//!
//! Linux keeps a nice value per thread, and a thread inherits its creator's, so the
//! sub-compaction threads a compaction spawns run at the compaction thread's priority.
//! Elsewhere (where the nice value is the whole process's) this does nothing.

/// Adds `nice` (clamped to the nice range's top, 19) to the calling thread's nice value on
/// Linux; nothing for `nice <= 0` or on other systems. Best effort: a refusal leaves the
/// thread at its priority, which changes speed, never results.
pub(crate) fn lower_current_thread(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        let tid = rustix::thread::gettid();
        if let Ok(current) = rustix::process::getpriority_process(Some(tid)) {
            let target = current.saturating_add(nice).min(19);
            let _ = rustix::process::setpriority_process(Some(tid), target);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[test]
    fn lowers_only_the_calling_thread_and_its_children() {
        let before = own_nice();
        let (lowered, child) = std::thread::spawn(|| {
            lower_current_thread(3);
            let child = std::thread::spawn(own_nice).join().unwrap();
            (own_nice(), child)
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + 3).min(19));
        assert_eq!(child, lowered, "a spawned thread inherits the nice value");
        assert_eq!(own_nice(), before, "other threads keep theirs");
    }

    #[test]
    fn zero_changes_nothing_and_the_top_is_19() {
        let (zero, top) = std::thread::spawn(|| {
            let start = own_nice();
            lower_current_thread(0);
            let zero = own_nice() - start;
            lower_current_thread(100);
            (zero, own_nice())
        })
        .join()
        .unwrap();
        assert_eq!(zero, 0);
        assert_eq!(top, 19);
    }
}
