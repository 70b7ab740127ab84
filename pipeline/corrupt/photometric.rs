//! Per-pixel photometric corruptions: Brightness and Saturate (in HSV), Color Quantization,
//! and Dark (tone curve + Poisson shot noise + Gaussian read noise).
//!
//! All float work is f32 in the same order as `kernels/corrupt_pixel.wgsl` and
//! `kernels/corrupt_dark.wgsl`; results are truncated to u8 like the reference's `np.uint8`.

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::config::CorruptConfig;
use super::rng::Key;
use super::{j32, sev_index, to_u8};

/// RGB in [0, 1] to HSV in [0, 1]³ with skimage's conventions (hue 0 for greys, blue wins
/// ties over green over red).
#[inline]
pub fn rgb_to_hsv(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let v = r.max(g).max(b);
    let delta = v - r.min(g).min(b);
    let s = if delta == 0.0 { 0.0 } else { delta / v };
    let mut h = 0.0;
    if delta != 0.0 {
        if r == v {
            h = (g - b) / delta;
        }
        if g == v {
            h = 2.0 + (b - r) / delta;
        }
        if b == v {
            h = 4.0 + (r - g) / delta;
        }
        h /= 6.0;
        h -= h.floor();
    }
    (h, s, v)
}

/// HSV in [0, 1]³ back to RGB (skimage's sector formulas).
#[inline]
pub fn hsv_to_rgb(h: f32, s: f32, v: f32) -> (f32, f32, f32) {
    let h6 = h * 6.0;
    let fl = h6.floor();
    let f = h6 - fl;
    let i = (fl as i32).rem_euclid(6);
    let p = v * (1.0 - s);
    let q = v * (1.0 - f * s);
    let t = v * (1.0 - (1.0 - f) * s);
    match i {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    }
}

/// The uniform block of `corrupt_pixel.wgsl`: V += v_add, S = S * s_scale + s_offset, both
/// clipped to [0, 1]. Brightness leaves S alone (scale 1, offset 0), Saturate leaves V.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HsvParams {
    pub v_add: f32,
    pub s_scale: f32,
    pub s_offset: f32,
    /// 0: HSV adjustment; 1..=8: keep this many high bits (`bits + 1`); 9: all black.
    pub mode: u32,
}

/// Mode values of [`HsvParams::mode`] for the non-HSV per-pixel corruptions.
pub const MODE_HSV: u32 = 0;
pub const MODE_BLACK: u32 = 100;

impl HsvParams {
    pub fn brightness(cfg: &CorruptConfig, severity: u8) -> Self {
        HsvParams {
            v_add: cfg.brightness.delta_v[sev_index(severity)],
            s_scale: 1.0,
            s_offset: 0.0,
            mode: MODE_HSV,
        }
    }

    pub fn saturate(cfg: &CorruptConfig, severity: u8) -> Self {
        let i = sev_index(severity);
        HsvParams {
            v_add: 0.0,
            s_scale: cfg.saturate.scale[i],
            s_offset: cfg.saturate.offset[i],
            mode: MODE_HSV,
        }
    }

    /// Color Quantization: mode `bits + 1`.
    pub fn color_quant(cfg: &CorruptConfig, severity: u8) -> Self {
        HsvParams {
            v_add: 0.0,
            s_scale: 1.0,
            s_offset: 0.0,
            mode: u32::from(cfg.color_quant.bits[sev_index(severity)]) + 1,
        }
    }

    /// An all-black view (Camera Crash, Frame Lost).
    pub fn black() -> Self {
        HsvParams {
            v_add: 0.0,
            s_scale: 1.0,
            s_offset: 0.0,
            mode: MODE_BLACK,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self.mode {
            MODE_HSV => {
                json!({"v_add": j32(self.v_add), "s_scale": j32(self.s_scale), "s_offset": j32(self.s_offset)})
            }
            MODE_BLACK => json!({"black": true}),
            m => json!({"bits": m - 1}),
        }
    }
}

/// One pixel through [`HsvParams`].
#[inline]
pub fn pixel_op(p: &HsvParams, rgb: [u8; 3]) -> [u8; 3] {
    match p.mode {
        MODE_HSV => {
            let r = f32::from(rgb[0]) / 255.0;
            let g = f32::from(rgb[1]) / 255.0;
            let b = f32::from(rgb[2]) / 255.0;
            let (h, s, v) = rgb_to_hsv(r, g, b);
            let s = (s * p.s_scale + p.s_offset).clamp(0.0, 1.0);
            let v = (v + p.v_add).clamp(0.0, 1.0);
            let (r, g, b) = hsv_to_rgb(h, s, v);
            [to_u8(r), to_u8(g), to_u8(b)]
        }
        MODE_BLACK => [0, 0, 0],
        m => {
            let bits = (m - 1).min(8);
            let mask = ((0xff00u32 >> bits) & 0xff) as u8;
            [rgb[0] & mask, rgb[1] & mask, rgb[2] & mask]
        }
    }
}

/// The CPU twin of `corrupt_pixel.wgsl`, chunks of pixels in parallel.
pub fn pixel_cpu(img: &RgbImage, p: &HsvParams) -> RgbImage {
    let mut out = img.clone();
    out.par_chunks_mut(3 << 12).for_each(|chunk| {
        for px in chunk.chunks_exact_mut(3) {
            let v = pixel_op(p, [px[0], px[1], px[2]]);
            px.copy_from_slice(&v);
        }
    });
    out
}

/// Streams of the Dark noise: Poisson uniforms use `DARK_POISSON + j` for the j-th uniform
/// of a channel; the Gaussian uses `DARK_GAUSS`.
pub const DARK_POISSON: u32 = 0x0100;
pub const DARK_GAUSS: u32 = 0x0010;
/// At most this many uniforms per channel (the Poisson loop stops there).
pub const DARK_MAX_DRAWS: u32 = 1024;

/// The uniform block of `corrupt_dark.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DarkParams {
    pub k0: u32,
    pub k1: u32,
    pub inv_lambda: f32,
    pub sigma: f32,
}

/// Per input value: Knuth's threshold exp(-mean / pieces) and the number of pieces.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DarkEntry {
    pub threshold: f32,
    pub pieces: u32,
}

/// Everything one image's Dark needs: the global min/max, the uniform block and the
/// 256-entry table (input values are u8, so the tone curve and the Poisson means have at
/// most 256 values per image; computing them on the host keeps exp() out of the kernel and
/// the GPU and CPU results identical).
#[derive(Debug, Clone)]
pub struct DarkPlan {
    pub min: u8,
    pub max: u8,
    pub params: DarkParams,
    pub table: Vec<DarkEntry>,
    pub c_max: f32,
    pub lambda: f32,
}

impl DarkPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, min: u8, max: u8) -> Self {
        let d = &cfg.dark;
        let i = sev_index(severity);
        let lambda = f64::from(d.lambda[i]);
        let piece = f64::from(d.poisson_piece);
        let table = (0..=255u8)
            .map(|x| {
                let y = if max > min && x >= min {
                    let t = f64::from(x - min) / f64::from(max - min);
                    t.clamp(0.0, 1.0).powf(f64::from(d.gamma)) * f64::from(d.c_max[i])
                } else {
                    0.0
                };
                let mean = y * lambda;
                let pieces = (mean / piece).ceil().max(1.0);
                DarkEntry {
                    threshold: (-mean / pieces).exp() as f32,
                    pieces: pieces as u32,
                }
            })
            .collect();
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
            c_max: d.c_max[i],
            lambda: d.lambda[i],
        }
    }

    pub fn of_image(cfg: &CorruptConfig, severity: u8, key: Key, img: &RgbImage) -> Self {
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

    pub fn to_json(&self) -> serde_json::Value {
        json!({"min": self.min, "max": self.max, "c_max": j32(self.c_max),
               "lambda": j32(self.lambda), "sigma": j32(self.params.sigma)})
    }
}

/// Dark on one channel value `x` at flat channel index `counter`.
#[inline]
pub fn dark_value(plan: &DarkPlan, key: Key, x: u8, counter: u32) -> u8 {
    dark_from(plan, key, x, counter, |j| {
        key.unit(DARK_POISSON + j, counter)
    })
}

/// Dark on `x` with `uniform(j)` the j-th Poisson uniform of its channel value.
#[inline(always)]
fn dark_from(plan: &DarkPlan, key: Key, x: u8, counter: u32, uniform: impl Fn(u32) -> f32) -> u8 {
    let e = plan.table[usize::from(x)];
    let mut count: u32 = 0;
    let mut j: u32 = 0;
    for _ in 0..e.pieces {
        let mut p: f32 = 1.0;
        while j < DARK_MAX_DRAWS {
            p *= uniform(j);
            j += 1;
            if p <= e.threshold {
                break;
            }
            count += 1;
        }
    }
    dark_finish(plan, key, count, counter)
}

/// The CPU twin of `corrupt_dark.wgsl`: [`dark_value`] at every channel value, with each
/// Poisson draw's stream part computed once per image instead of once per draw (the same
/// bits), chunks of the image in parallel.
pub fn dark_cpu(img: &RgbImage, plan: &DarkPlan, key: Key) -> RgbImage {
    let streams: Vec<u32> = (0..DARK_MAX_DRAWS)
        .map(|j| key.stream(DARK_POISSON + j))
        .collect();
    let mut out = img.clone();
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| dark_chunk(plan, key, &streams, chunk, (c * CHUNK) as u32));
    out
}

/// Channel values the Poisson loop of [`dark_chunk`] runs side by side.
const DARK_LANES: usize = 8;

/// [`dark_value`] over `vals` (flat indices from `base`), eight values at a time: every value
/// still in its loop takes one uniform per step, so they all take uniform j at step j, and
/// the eight loops run in lockstep as vector operations (integer hashing, one f32 product and
/// compare each; no fused multiply-add), with the same counts as one loop at a time.
fn dark_chunk(plan: &DarkPlan, key: Key, streams: &[u32], vals: &mut [u8], base: u32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU was just found to have AVX2.
        unsafe { dark_chunk_avx2(plan, key, streams, vals, base) };
        return;
    }
    dark_chunk_any(plan, key, streams, vals, base);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dark_chunk_avx2(plan: &DarkPlan, key: Key, streams: &[u32], vals: &mut [u8], base: u32) {
    dark_chunk_any(plan, key, streams, vals, base);
}

#[inline(always)]
fn dark_chunk_any(plan: &DarkPlan, key: Key, streams: &[u32], vals: &mut [u8], base: u32) {
    let mut groups = vals.chunks_exact_mut(DARK_LANES);
    let mut at = base;
    for g in &mut groups {
        let mut mixed = [0u32; DARK_LANES];
        let mut threshold = [0f32; DARK_LANES];
        let mut pieces = [0u32; DARK_LANES];
        for l in 0..DARK_LANES {
            let e = plan.table[usize::from(g[l])];
            mixed[l] = crate::corrupt::rng::mix32(at.wrapping_add(l as u32));
            threshold[l] = e.threshold;
            pieces[l] = e.pieces;
        }
        let counts = poisson_lanes(streams, &mixed, &threshold, pieces);
        // A separate loop, so the read noise's log, square root and cosine run as vectors.
        let mut out = [0u8; DARK_LANES];
        for l in 0..DARK_LANES {
            out[l] = dark_finish(plan, key, counts[l], at.wrapping_add(l as u32));
        }
        g.copy_from_slice(&out);
        at = at.wrapping_add(DARK_LANES as u32);
    }
    for (k, v) in groups.into_remainder().iter_mut().enumerate() {
        *v = dark_value_with(plan, key, streams, *v, at.wrapping_add(k as u32));
    }
}

/// The Poisson counts of [`dark_from`]'s loop for eight values at once.
#[inline(always)]
fn poisson_lanes(
    streams: &[u32],
    mixed: &[u32; DARK_LANES],
    threshold: &[f32; DARK_LANES],
    mut pieces: [u32; DARK_LANES],
) -> [u32; DARK_LANES] {
    let mut p = [1f32; DARK_LANES];
    let mut count = [0u32; DARK_LANES];
    for &s in streams {
        if pieces.iter().all(|&n| n == 0) {
            break;
        }
        for l in 0..DARK_LANES {
            let u = crate::corrupt::rng::unit24(Key::draw(s, mixed[l]));
            let next = p[l] * u;
            let live = pieces[l] > 0;
            let ends = next <= threshold[l];
            count[l] += u32::from(live && !ends);
            pieces[l] -= u32::from(live && ends);
            p[l] = if !live {
                p[l]
            } else if ends {
                1.0
            } else {
                next
            };
        }
    }
    count
}

/// The end of [`dark_from`]: the count scaled, the read noise added, as u8.
#[inline(always)]
fn dark_finish(plan: &DarkPlan, key: Key, count: u32, counter: u32) -> u8 {
    let v = (count as f32 * plan.params.inv_lambda).clamp(0.0, 1.0);
    let v = v + plan.params.sigma * key.normal_poly(DARK_GAUSS, counter);
    to_u8(v)
}

/// [`dark_value`] with the Poisson streams' parts precomputed.
#[inline]
fn dark_value_with(plan: &DarkPlan, key: Key, streams: &[u32], x: u8, counter: u32) -> u8 {
    let mixed = crate::corrupt::rng::mix32(counter);
    dark_from(plan, key, x, counter, |j| {
        crate::corrupt::rng::unit24(Key::draw(streams[j as usize], mixed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> CorruptConfig {
        CorruptConfig::default_config().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn hsv_round_trip_and_known_values() {
        // Pure red: h 0, s 1, v 1. (0.2, 0.4, 0.8): v .8, s .75, h = (4 + (.2-.4)/.6)/6.
        assert_eq!(rgb_to_hsv(1.0, 0.0, 0.0), (0.0, 1.0, 1.0));
        let (h, s, v) = rgb_to_hsv(0.2, 0.4, 0.8);
        assert!((h - (4.0 - 1.0 / 3.0) / 6.0).abs() < 1e-6);
        assert!((s - 0.75).abs() < 1e-6 && (v - 0.8).abs() < 1e-6);
        let (r, g, b) = hsv_to_rgb(h, s, v);
        assert!((r - 0.2).abs() < 1e-6 && (g - 0.4).abs() < 1e-6 && (b - 0.8).abs() < 1e-6);
    }

    #[test]
    fn brightness_by_hand() {
        let p = HsvParams::brightness(&cfg(), 4);
        // Grey 100: s 0, v = 100/255 + 0.4 → 202.0 → 202 (truncated, float error below).
        let [r, g, b] = pixel_op(&p, [100, 100, 100]);
        assert!(r == g && g == b && (201..=202).contains(&r), "{r}");
        // (51, 102, 204): v .8 → 1.0 keeps h and s: (63.75, 127.5, 255) → (63, 127, 255).
        assert_eq!(pixel_op(&p, [51, 102, 204]), [63, 127, 255]);
        // White stays white.
        assert_eq!(pixel_op(&p, [255, 255, 255]), [255, 255, 255]);
    }

    #[test]
    fn saturate_by_hand() {
        let p = HsvParams::saturate(&cfg(), 5);
        // Any non-grey pixel saturates fully: s = min(20 s + .2, 1) = 1.
        assert_eq!(pixel_op(&p, [200, 100, 100]), [200, 0, 0]);
        // A grey pixel gets s = .2 with h = 0 (red): (v, .8v, .8v).
        assert_eq!(pixel_op(&p, [100, 100, 100]), [100, 80, 80]);
    }

    #[test]
    fn quantization_levels() {
        let c = cfg();
        let levels = |sev: u8| {
            let p = HsvParams::color_quant(&c, sev);
            let mut s: Vec<u8> = (0..=255u8).map(|v| pixel_op(&p, [v, v, v])[0]).collect();
            s.dedup();
            s
        };
        assert_eq!(levels(4), vec![0, 128]);
        assert_eq!(levels(3), vec![0, 64, 128, 192]);
        assert_eq!(levels(1).len(), 16);
        assert_eq!(levels(5), vec![0]);
    }

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
