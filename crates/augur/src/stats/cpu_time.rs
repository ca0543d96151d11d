//! CPU time of the calling thread: how much *work* a step did, as opposed to the wall time
//! it took, which on a busy machine also counts the time the thread waited for a core. At-build
//! training runs on a thread of its own beside the builder (`sst::builder`), so on 2 cores
//! its wall time is inflated by every other thread of the process; its CPU time is not.

use std::time::Instant;

/// Nanoseconds of CPU time the calling thread has used, where the platform has a per-thread
/// CPU clock (`CLOCK_THREAD_CPUTIME_ID` on Unix).
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let secs = u64::try_from(t.tv_sec).ok()?;
        let nanos = u64::try_from(t.tv_nsec).ok()?;
        secs.checked_mul(1_000_000_000)?.checked_add(nanos)
    }
    #[cfg(not(unix))]
    None
}

/// Measures the CPU time the calling thread spends from [`CpuStopwatch::start`] to
/// [`CpuStopwatch::elapsed_ns`] (call both on the same thread), or the wall time where there
/// is no per-thread CPU clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuStopwatch {
    cpu_ns: Option<u64>,
    wall: Instant,
}

impl CpuStopwatch {
    /// Starts measuring.
    pub(crate) fn start() -> CpuStopwatch {
        CpuStopwatch {
            cpu_ns: thread_cpu_ns(),
            wall: Instant::now(),
        }
    }

    /// CPU nanoseconds since `start` (wall nanoseconds without a per-thread clock).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        match (self.cpu_ns, thread_cpu_ns()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => u64::try_from(self.wall.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy work shows as CPU time; sleeping does not (on platforms with the clock).
    #[test]
    fn counts_work_not_waiting() {
        let Some(_) = thread_cpu_ns() else { return };
        let sleep = CpuStopwatch::start();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = sleep.elapsed_ns();
        let busy = CpuStopwatch::start();
        let mut x = 1u64;
        // Work until 50 ms of CPU time are counted (on a loaded machine that takes longer
        // than 50 ms of wall time), giving up after 10 s of wall time.
        let give_up = Instant::now() + std::time::Duration::from_secs(10);
        while busy.elapsed_ns() < 50_000_000 && Instant::now() < give_up {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let worked = busy.elapsed_ns();
        assert!(
            slept < 20_000_000,
            "sleeping counted {slept} ns of CPU time"
        );
        assert!(
            worked > 20_000_000,
            "50 ms of work counted only {worked} ns"
        );
    }
}
