//! Peak resident memory per build step, from Linux's `/proc/self`, without touching the
//! kernel's own peak: `/usr/bin/time` and `getrusage` keep reporting the whole run's true peak,
//! and the summary's largest step peak is that same figure. A step that raises the process's
//! peak (`VmHWM`) is given it exactly; a step that stays under an earlier step's peak is given
//! the largest resident size (`VmRSS`) a sampler saw while it ran, every few milliseconds. The
//! resident size at the start of a step is recorded too, after the memory earlier steps freed
//! is handed back to the system, so a step's own working set is its peak minus that. Elsewhere these are no-ops.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the sampler reads `VmRSS`: reading `/proc/self/status` costs tens of
/// microseconds, so this is well under 1 % of a core.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// Watches the resident memory of one step, from [`StepProbe::start`] to [`StepProbe::finish`].
pub(crate) struct StepProbe {
    start_hwm_kib: Option<u64>,
    start_rss_kib: Option<u64>,
    stop: Arc<AtomicBool>,
    max_kib: Arc<AtomicU64>,
    sampler: Option<JoinHandle<()>>,
}

/// Hands the memory the allocator keeps but no longer uses back to the system. glibc keeps
/// what each thread's arena freed for reuse, so without this every later step of a build
/// would carry the largest earlier step's working set as resident memory, and the build's
/// peak would be the sum of steps rather than the largest one.
pub(crate) fn return_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl StepProbe {
    /// Starts watching: hands freed memory back ([`return_freed`]), notes the process's peak
    /// and resident size and starts the sampler.
    pub(crate) fn start() -> Self {
        return_freed();
        let start_rss_kib = status_kib("VmRSS:");
        let stop = Arc::new(AtomicBool::new(false));
        let max_kib = Arc::new(AtomicU64::new(start_rss_kib.unwrap_or(0)));
        let sampler = start_rss_kib.and_then(|_| {
            let (stop, max_kib) = (stop.clone(), max_kib.clone());
            std::thread::Builder::new()
                .name("rss-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(k) = status_kib("VmRSS:") {
                            max_kib.fetch_max(k, Ordering::Relaxed);
                        }
                        std::thread::sleep(SAMPLE_EVERY);
                    }
                })
                .ok()
        });
        Self {
            start_hwm_kib: status_kib("VmHWM:"),
            start_rss_kib,
            stop,
            max_kib,
            sampler,
        }
    }

    /// Stops watching; returns the resident size at the start and the step's peak, in MiB.
    pub(crate) fn finish(mut self) -> (Option<f64>, Option<f64>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.sampler.take() {
            let _ = t.join();
        }
        let mib = |k: u64| k as f64 / 1024.0;
        let hwm = status_kib("VmHWM:");
        let peak = match (self.start_hwm_kib, hwm) {
            // The step set a new high: the kernel's figure is exact.
            (Some(before), Some(now)) if now > before => Some(now),
            _ => status_kib("VmRSS:").map(|now| now.max(self.max_kib.load(Ordering::Relaxed))),
        };
        (self.start_rss_kib.map(mib), peak.map(mib))
    }
}

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peak_mib() -> Option<f64> {
        status_kib("VmHWM:").map(|k| k as f64 / 1024.0)
    }

    /// A step that allocates past every earlier peak is given the kernel's exact peak, and a
    /// later, smaller step is given its own sampled peak, not the process's.
    #[test]
    fn a_step_gets_its_own_peak_and_the_process_keeps_its_true_one() {
        if status_kib("VmRSS:").is_none() {
            return; // not Linux: no figures to check
        }
        let touch = |mib: usize| {
            let v = vec![1u8; mib << 20];
            std::hint::black_box(&v);
            std::thread::sleep(Duration::from_millis(50));
            v.iter().map(|&b| u64::from(b)).sum::<u64>()
        };
        let probe = StepProbe::start();
        assert_eq!(touch(256), 256 << 20);
        let (start, big) = probe.finish();
        let (start, big) = (start.unwrap(), big.unwrap());
        assert!(
            big >= start + 200.0,
            "start {start:.0} MiB, peak {big:.0} MiB"
        );
        assert!(peak_mib().unwrap() >= big, "the process's peak was reset");

        let probe = StepProbe::start();
        assert_eq!(touch(64), 64 << 20);
        let (start2, small) = probe.finish();
        let (start2, small) = (start2.unwrap(), small.unwrap());
        assert!(
            small >= start2 + 48.0,
            "start {start2:.0} MiB, peak {small:.0} MiB"
        );
        assert!(
            small < big,
            "small step {small:.0} MiB, big step {big:.0} MiB"
        );
        assert!(peak_mib().unwrap() >= big);
    }
}
