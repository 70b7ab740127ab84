//! Value parsers shared by the commands: every number a flag takes is checked here, with the
//! flag named by clap, so no command sees a zero count, a NaN or a margin outside [0, 1].

use crate::formats::Format;
use crate::gpu::DeviceChoice;

/// A count flag that must be at least 1: zero would run and write nothing, with exit 0.
pub(crate) fn count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// [`count`] for 32-bit flags (image sizes, per-frame counts, shard counts).
pub(crate) fn count32(s: &str) -> Result<u32, String> {
    let n = count(s)?;
    u32::try_from(n).map_err(|_| format!("must be at most {}", u32::MAX))
}

fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|e| format!("not a number: {e}"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err("must be a finite number".into())
    }
}

/// A finite number above zero (a duration).
pub(crate) fn positive(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err("must be above 0".into())
    }
}

/// A finite fraction in [0, 1] (a margin of accuracy over chance).
pub(crate) fn fraction(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be between 0 and 1".into())
    }
}

/// A finite ratio of at least 1 (the most to the fewest answers of a question type).
pub(crate) fn ratio(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v >= 1.0 {
        Ok(v)
    } else {
        Err("must be at least 1".into())
    }
}

/// `--device auto|gpu|cpu`, parsed by the library's one [`DeviceChoice`].
pub(crate) fn device(s: &str) -> Result<DeviceChoice, String> {
    s.parse()
}

/// `--source` / `--format`: a dataset layout, parsed by the library's one [`Format`].
pub(crate) fn source_format(s: &str) -> Result<Format, String> {
    s.parse()
}
