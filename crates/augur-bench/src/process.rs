//! Process resource usage for benchmark records: CPU time (user + system, all threads, so
//! background flush/compaction/learning count), peak resident set size, and bytes handed to
//! `write`-family system calls (every engine's WAL, table, value-log and blob writes, so
//! write amplification is measured the same way for Augur and its peers, on any file system
//! including tmpfs). Read from Linux's `/proc/self/stat`, `/proc/self/status` and
//! `/proc/self/io`; on other systems they are `None` and the records simply omit them.

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on every Linux ABI).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds (user + system) the process has used so far, at 10 ms resolution.
pub fn cpu_seconds() -> Option<f64> {
    parse_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// The process's peak resident set size in bytes (`VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    parse_peak_rss(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// Resets the peak resident set size to the current one (writes `5` to
/// `/proc/self/clear_refs`, Linux ≥ 4.0), so each configuration of a `--compare` run reports
/// its own peak rather than the largest of those before it. Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Bytes this process has handed to the OS to write so far: passed to `write`, `pwrite`
/// and similar calls (`wchar` of `/proc/self/io`; threads that exited count too), plus the
/// bytes Augur copied into files written through a mapping (its WAL), which `wchar` does
/// not see.
pub fn written_bytes() -> Option<u64> {
    let syscalls = parse_written(&std::fs::read_to_string("/proc/self/io").ok()?)?;
    Some(syscalls + augur::fs::mapped_bytes_written())
}

/// The `wchar: <n>` line of `/proc/<pid>/io`.
fn parse_written(io: &str) -> Option<u64> {
    let line = io.lines().find(|l| l.starts_with("wchar:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in seconds. The command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its closing parenthesis.
fn parse_cpu_seconds(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / TICKS_PER_SECOND)
}

/// The `VmHWM:  <n> kB` line of `/proc/<pid>/status`, in bytes.
fn parse_peak_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let stat = "1234 (a (weird) name) R 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 3 0";
        assert_eq!(parse_cpu_seconds(stat), Some(3.25));
        assert_eq!(parse_cpu_seconds("1234 (x) R 1 2"), None);
        let status = "Name:\taugur\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_peak_rss(status), Some(2048 * 1024));
        assert_eq!(parse_peak_rss("Name:\tx\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn parses_and_measures_written_bytes() {
        let io = "rchar: 10\nwchar: 12345\nsyscr: 1\nsyscw: 2\n";
        assert_eq!(parse_written(io), Some(12345));
        assert_eq!(parse_written("rchar: 10\n"), None);
        let before = written_bytes().expect("/proc/self/io");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 100_000]).unwrap();
        let after = written_bytes().expect("/proc/self/io");
        assert!(after - before >= 100_000, "{before} -> {after}");
    }

    #[test]
    fn peak_rss_can_be_reset() {
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        let peak = peak_rss_bytes().unwrap();
        drop(big);
        assert!(reset_peak_rss(), "/proc/self/clear_refs");
        assert!(
            peak_rss_bytes().unwrap() < peak,
            "the peak follows the drop"
        );
    }

    #[test]
    fn measures_this_process() {
        let before = cpu_seconds().expect("/proc/self/stat");
        // Burn CPU until 60 ms of it are counted (on a loaded machine that takes longer than
        // 60 ms of wall time), giving up after 10 s of wall time.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut x = 0u64;
        let mut after = before;
        while after - before < 0.06 && std::time::Instant::now() < give_up {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = cpu_seconds().expect("/proc/self/stat");
        }
        assert!(after - before >= 0.02, "{before} -> {after}");
        assert!(peak_rss_bytes().expect("/proc/self/status") > 1 << 20);
    }
}
