//! Dark: the tone curve, Poisson shot noise and Gaussian read noise of a low-light capture,
//! the CPU twin of `kernels/corrupt_dark.wgsl` (f32 in the kernel's order, truncated to u8 like
//! the reference's `np.uint8`; the Poisson tables are computed on the host in f64).

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use crate::corrupt::config::CorruptConfig;
use crate::corrupt::rng::Key;
use crate::corrupt::{j32, sev_index, to_u8};

/// Streams of the Dark noise: the Poisson draw uses `DARK_POISSON`, the Gaussian
/// `DARK_GAUSS`.
pub(crate) const DARK_POISSON: u32 = 0x0100;
pub(crate) const DARK_GAUSS: u32 = 0x0010;

/// One in units of the 24-bit uniforms the Poisson draw inverts.
const DARK_ONE: u32 = 1 << 24;
/// Poisson probabilities below this are left out of a table: their total stays far below
/// one step of a 24-bit uniform.
const DARK_TAIL: f64 = 1e-13;
/// A mean above this is drawn as this (no configurable tone curve reaches it; the bound keeps
/// every table shorter than `u16::MAX` entries).
const DARK_MAX_MEAN: f64 = 1e4;
/// Cells of the guide that starts the CPU's search: one per value of a uniform's top 8 bits.
const DARK_GUIDE: usize = 256;

/// The uniform block of `corrupt_dark.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DarkParams {
    pub k0: u32,
    pub k1: u32,
    pub inv_lambda: f32,
    pub sigma: f32,
}

/// Per input value: its Poisson table is `DarkPlan::cdf[offset..offset + len]`, whose first
/// entry stands for the count `first`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DarkEntry {
    pub offset: u32,
    pub len: u32,
    pub first: u32,
    pub _pad: u32,
}

/// Everything one image's Dark needs: the global min/max, the uniform block and, per input
/// value (u8, so at most 256 Poisson means per image), the cumulative distribution of its
/// Poisson draw in units of 2⁻²⁴. A channel value draws one 24-bit uniform `r` and takes the
/// first count whose cumulative probability exceeds `r` (inversion): one draw per value
/// instead of one per unit of the mean, and integer comparisons only, so the GPU and CPU
/// results are identical. The tables are computed on the host in f64.
#[derive(Debug, Clone)]
pub struct DarkPlan {
    pub min: u8,
    pub max: u8,
    pub params: DarkParams,
    pub table: Vec<DarkEntry>,
    pub cdf: Vec<u32>,
    /// Per input value and top 8 bits of `r`, the index in its table where the CPU's search
    /// starts (the first entry above the cell's smallest `r`).
    guide: Vec<u16>,
    pub c_max: f32,
    pub lambda: f32,
}

impl DarkPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, min: u8, max: u8) -> Self {
        let d = &cfg.dark;
        let i = sev_index(severity);
        let lambda = f64::from(d.lambda[i]);
        let mut table = Vec::with_capacity(256);
        let mut cdf = Vec::new();
        let mut guide = Vec::with_capacity(256 * DARK_GUIDE);
        for x in 0..=255u8 {
            let y = if max > min && x >= min {
                let t = f64::from(x - min) / f64::from(max - min);
                t.clamp(0.0, 1.0).powf(f64::from(d.gamma)) * f64::from(d.c_max[i])
            } else {
                0.0
            };
            let (first, steps) = poisson_table(y * lambda);
            guide.extend(guide_of(&steps));
            table.push(DarkEntry {
                offset: cdf.len() as u32,
                len: steps.len() as u32,
                first,
                _pad: 0,
            });
            cdf.extend(steps);
        }
        DarkPlan {
            min,
            max,
            params: DarkParams {
                k0: key.k0,
                k1: key.k1,
                inv_lambda: (1.0 / lambda) as f32,
                sigma: d.sigma[i],
            },
            table,
            cdf,
            guide,
            c_max: d.c_max[i],
            lambda: d.lambda[i],
        }
    }

    pub(crate) fn of_image(cfg: &CorruptConfig, severity: u8, key: Key, img: &RgbImage) -> Self {
        let (mut lo, mut hi) = (255u8, 0u8);
        for v in img.as_raw() {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
        if img.as_raw().is_empty() {
            lo = 0;
        }
        Self::new(cfg, severity, key, lo, hi)
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"min": self.min, "max": self.max, "c_max": j32(self.c_max),
               "lambda": j32(self.lambda), "sigma": j32(self.params.sigma)})
    }

    /// The Poisson count of input value `x` for the 24-bit uniform `r`: a binary search of its
    /// table, as the kernel does it.
    fn count(&self, x: u8, r: u32) -> u32 {
        let e = self.table[usize::from(x)];
        let steps = &self.cdf[e.offset as usize..(e.offset + e.len) as usize];
        e.first + steps.partition_point(|&c| c <= r) as u32
    }

    /// [`DarkPlan::count`] started from the guide: usually no step or one.
    #[inline(always)]
    fn count_guided(&self, x: u8, r: u32) -> u32 {
        let e = self.table[usize::from(x)];
        let mut i = usize::from(self.guide[usize::from(x) * DARK_GUIDE + (r >> 16) as usize]);
        let steps = &self.cdf[e.offset as usize..(e.offset + e.len) as usize];
        // The last entry is DARK_ONE, above every r, so the scan stops inside the table.
        while steps[i] <= r {
            i += 1;
        }
        e.first + i as u32
    }
}

/// ln(n!) in f64: exact sums up to 20, Stirling's series (error below 1e-16 relative) above.
fn ln_factorial(n: f64) -> f64 {
    if n < 21.0 {
        return (2..=n as u32).map(|k| f64::from(k).ln()).sum();
    }
    let inv = 1.0 / n;
    let inv2 = inv * inv;
    n * n.ln() - n
        + 0.5 * (std::f64::consts::TAU * n).ln()
        + inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 / 1260.0))
}

/// The cumulative distribution of Poisson(`mean`) in units of 2⁻²⁴, rounded: entry i is
/// P(N ≤ first + i) · 2²⁴; entries that round to 0 (never drawn) are left out before it and
/// the table ends at the first entry that reaches 2²⁴. Returns (first, entries).
fn poisson_table(mean: f64) -> (u32, Vec<u32>) {
    // NaN and non-positive means draw 0.
    if mean.is_nan() || mean <= 0.0 {
        return (0, vec![DARK_ONE]);
    }
    let mean = mean.min(DARK_MAX_MEAN);
    // Probabilities walked out from the mode, where they are largest, in both directions.
    let mode = mean.floor();
    let p_mode = (mode * mean.ln() - mean - ln_factorial(mode)).exp();
    let mut below = Vec::new();
    let (mut p, mut k) = (p_mode, mode);
    while k > 0.0 {
        p *= k / mean;
        k -= 1.0;
        if p < DARK_TAIL {
            break;
        }
        below.push(p);
    }
    let lo = mode - below.len() as f64;
    let mut pmf: Vec<f64> = below.into_iter().rev().collect();
    pmf.push(p_mode);
    let (mut p, mut k) = (p_mode, mode);
    loop {
        k += 1.0;
        p *= mean / k;
        if p < DARK_TAIL {
            break;
        }
        pmf.push(p);
    }
    let total: f64 = pmf.iter().sum();
    let mut first = lo as u32;
    let mut steps = Vec::with_capacity(pmf.len());
    let mut acc = 0.0;
    for p in pmf {
        acc += p;
        let c = ((acc / total) * f64::from(DARK_ONE))
            .round()
            .min(f64::from(DARK_ONE)) as u32;
        if c == 0 {
            first += 1;
            continue;
        }
        steps.push(c);
        if c == DARK_ONE {
            break;
        }
    }
    match steps.last_mut() {
        Some(c) => *c = DARK_ONE,
        None => steps.push(DARK_ONE),
    }
    (first, steps)
}

/// Per top-8-bit cell of a 24-bit uniform, the index of the first entry of `steps` above the
/// cell's smallest value.
fn guide_of(steps: &[u32]) -> impl Iterator<Item = u16> + '_ {
    let mut i = 0usize;
    (0..DARK_GUIDE as u32).map(move |g| {
        while steps[i] <= g << 16 {
            i += 1;
        }
        i as u16
    })
}

/// Dark on one channel value `x` at flat channel index `counter`.
#[inline]
pub(crate) fn dark_value(plan: &DarkPlan, key: Key, x: u8, counter: u32) -> u8 {
    let r = key.u32(DARK_POISSON, counter) >> 8;
    dark_finish(plan, key, plan.count(x, r), counter)
}

/// The CPU twin of `corrupt_dark.wgsl`: [`dark_value`] at every channel value, with the
/// Poisson stream's part computed once per image and the search started from the plan's
/// guide (the same counts), chunks of the image in parallel.
pub(crate) fn dark_cpu(img: &RgbImage, plan: &DarkPlan, key: Key) -> RgbImage {
    let stream = key.stream(DARK_POISSON);
    let mut out = img.clone();
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| dark_chunk(plan, key, stream, chunk, (c * CHUNK) as u32));
    out
}

/// Channel values whose uniforms and read noise are computed side by side.
const DARK_LANES: usize = 8;

crate::cpu::avx2_clone! {
    /// [`dark_value`] over `vals` (flat indices from `base`), eight at a time, so the hashing
    /// of the uniforms and the read noise's log, square root and cosine run as vectors.
    fn dark_chunk(
        plan: &DarkPlan,
        key: Key,
        stream: u32,
        vals: &mut [u8],
        base: u32,
    ) = dark_chunk_any;
}

#[inline(always)]
fn dark_chunk_any(plan: &DarkPlan, key: Key, stream: u32, vals: &mut [u8], base: u32) {
    let mut groups = vals.chunks_exact_mut(DARK_LANES);
    let mut at = base;
    for g in &mut groups {
        let mut r = [0u32; DARK_LANES];
        for (l, r) in r.iter_mut().enumerate() {
            let mixed = crate::corrupt::rng::mix32(at.wrapping_add(l as u32));
            *r = Key::draw(stream, mixed) >> 8;
        }
        let mut counts = [0u32; DARK_LANES];
        for l in 0..DARK_LANES {
            counts[l] = plan.count_guided(g[l], r[l]);
        }
        let mut out = [0u8; DARK_LANES];
        for l in 0..DARK_LANES {
            out[l] = dark_finish(plan, key, counts[l], at.wrapping_add(l as u32));
        }
        g.copy_from_slice(&out);
        at = at.wrapping_add(DARK_LANES as u32);
    }
    for (k, v) in groups.into_remainder().iter_mut().enumerate() {
        *v = dark_value(plan, key, *v, at.wrapping_add(k as u32));
    }
}

/// The end of [`dark_value`]: the count scaled, the read noise added, as u8.
#[inline(always)]
fn dark_finish(plan: &DarkPlan, key: Key, count: u32, counter: u32) -> u8 {
    let v = (count as f32 * plan.params.inv_lambda).clamp(0.0, 1.0);
    let v = v + plan.params.sigma * key.normal_poly(DARK_GAUSS, counter);
    to_u8(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corrupt::config::test_config as cfg;

    #[test]
    fn dark_cpu_is_dark_value_at_every_element() {
        let c = cfg();
        let img = RgbImage::from_fn(203, 97, |x, y| {
            image::Rgb([
                (x * 5 % 256) as u8,
                (y * 7 % 256) as u8,
                ((x ^ y) % 256) as u8,
            ])
        });
        for sev in 1..=5 {
            let key = Key::new(3, "img", 2, sev);
            let plan = DarkPlan::of_image(&c, sev, key, &img);
            let out = dark_cpu(&img, &plan, key);
            for (i, (o, x)) in out.iter().zip(img.iter()).enumerate() {
                assert_eq!(
                    *o,
                    dark_value(&plan, key, *x, i as u32),
                    "severity {sev}, {i}"
                );
            }
        }
    }

    /// Poisson(mean) probabilities from k = 0 up, summed in log space term by term: the
    /// reference the tables are checked against.
    fn poisson_pmf(mean: f64, k: u32) -> f64 {
        let ln_fact: f64 = (2..=k).map(|i| f64::from(i).ln()).sum();
        (f64::from(k) * mean.ln() - mean - ln_fact).exp()
    }

    #[test]
    fn poisson_tables_match_the_distribution() {
        let unit = 1.0 / f64::from(DARK_ONE);
        for mean in [1e-6, 0.3, 1.0, 4.5, 17.0, 30.0, 62.5, 125.0, 999.9, 1e4] {
            let (first, steps) = poisson_table(mean);
            assert_eq!(*steps.last().unwrap(), DARK_ONE, "{mean}");
            assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{mean}");
            assert!(steps.len() < usize::from(u16::MAX), "{mean}");
            // Every count's probability within one rounding step of each neighbouring entry.
            let mut prev = 0u32;
            for (i, &c) in steps.iter().enumerate() {
                let k = first + i as u32;
                let got = f64::from(c - prev) * unit;
                let want = poisson_pmf(mean, k);
                assert!(
                    (got - want).abs() <= 1.01 * unit,
                    "mean {mean}, k {k}: {got} vs {want}"
                );
                prev = c;
            }
            // What the table leaves out on either side is below one step too.
            let left: f64 = (0..first).map(|k| poisson_pmf(mean, k)).sum();
            assert!(left <= 0.51 * unit, "mean {mean}: {left} below {first}");
            let end = first + steps.len() as u32;
            let right: f64 = (end..end + 2000).map(|k| poisson_pmf(mean, k)).sum();
            assert!(right <= 1.01 * unit, "mean {mean}: {right} above {end}");
        }
        assert_eq!(poisson_table(0.0), (0, vec![DARK_ONE]));
        assert_eq!(poisson_table(f64::NAN), (0, vec![DARK_ONE]));
    }

    #[test]
    fn guided_counts_are_the_binary_search() {
        let c = cfg();
        for sev in 1..=5 {
            let key = Key::new(9, "g", 2, sev);
            let plan = DarkPlan::new(&c, sev, key, 13, 240);
            for x in [0u8, 13, 14, 60, 128, 200, 239, 240, 255] {
                for r in (0..DARK_ONE)
                    .step_by(4099)
                    .chain([DARK_ONE - 1, 65535, 65536])
                {
                    assert_eq!(plan.count_guided(x, r), plan.count(x, r), "{sev} {x} {r}");
                }
            }
        }
    }

    #[test]
    fn dark_counts_have_the_poisson_mean_and_variance() {
        let c = cfg();
        let key = Key::new(5, "m", 2, 1);
        let plan = DarkPlan::new(&c, 1, key, 0, 255);
        let e = plan.table[255];
        let mean = 0.5 * 250.0;
        let n = 200_000u32;
        let counts: Vec<f64> = (0..n)
            .map(|i| f64::from(plan.count(255, key.u32(DARK_POISSON, i) >> 8)))
            .collect();
        assert!(e.first > 0 && e.len > 50);
        let m = counts.iter().sum::<f64>() / f64::from(n);
        let var = counts.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / f64::from(n - 1);
        // Standard errors: sqrt(mean / n) for the mean, about mean·sqrt(2 / n) for the variance.
        assert!((m - mean).abs() < 4.0 * (mean / f64::from(n)).sqrt(), "{m}");
        assert!(
            (var - mean).abs() < 4.0 * mean * (2.0 / f64::from(n)).sqrt(),
            "{var}"
        );
    }

    #[test]
    fn dark_is_dark_and_noisy() {
        let c = cfg();
        let img = RgbImage::from_fn(64, 64, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 4) as u8, 200])
        });
        let key = Key::new(1, "a", 1, 4);
        let plan = DarkPlan::of_image(&c, 4, key, &img);
        assert_eq!((plan.min, plan.max), (0, 252));
        let out = dark_cpu(&img, &plan, key);
        let mean_in: f64 = img.iter().map(|v| f64::from(*v)).sum::<f64>() / img.len() as f64;
        let mean_out: f64 = out.iter().map(|v| f64::from(*v)).sum::<f64>() / out.len() as f64;
        // Expected mean of the tone curve: E[t²]·0.2·255 over this image ≈ 0.2·255·0.45.
        assert!(mean_out < mean_in * 0.35, "{mean_in} {mean_out}");
        assert!(mean_out > 5.0, "{mean_out}");
        // Blue is constant 200: its output varies (noise) around 255·0.2·(200/252)².
        let blues: Vec<f64> = out.pixels().map(|p| f64::from(p.0[2])).collect();
        let m = blues.iter().sum::<f64>() / blues.len() as f64;
        let expect = 255.0 * 0.2 * (200.0f64 / 252.0).powi(2);
        assert!((m - expect).abs() < 2.0, "{m} {expect}");
        assert!(blues.iter().any(|b| (*b - m).abs() > 5.0));
    }
}
