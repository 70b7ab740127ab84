//! Peak resident memory per build step, from Linux's `/proc/self`: the peak is reset before a
//! step (`clear_refs`) and read after it (`VmHWM`), so the summary shows which step needs the
//! memory and whether it grows with the number of scenes. The resident size at the start of a
//! step is recorded too: the allocator keeps memory earlier steps freed, so a step's own working
//! set is its peak minus that. Elsewhere these are no-ops. Resetting the peak also resets what
//! `getrusage` (and `/usr/bin/time`) report for the process, so the process's peak is the
//! largest step peak.

/// Starts a new peak at the current resident size.
pub(crate) fn reset_peak() {
    // "5" resets the peak RSS (Linux ≥ 4.0); failure only loses the figure.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident size since the last reset, in MiB.
pub(crate) fn peak_mib() -> Option<f64> {
    status_mib("VmHWM:")
}

/// The resident size now, in MiB.
pub(crate) fn current_mib() -> Option<f64> {
    status_mib("VmRSS:")
}

fn status_mib(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
