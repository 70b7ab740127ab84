//! Blurs: Motion Blur (one-sided half-Gaussian trail along a random angle), Zoom Blur (mean of
//! centred zooms) and the separable Gaussian that Water Splash and Lens Obstacle use.
//!
//! Tap offsets, weights and zoom mappings are computed on the host in f64 and handed to both
//! the kernels and these twins as f32, so both sides do the same f32 arithmetic per pixel.

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::config::CorruptConfig;
use super::rng::Key;
use super::{sev_index, to_u8};

/// Stream of the motion-blur angle.
pub(crate) const MOTION_ANGLE: u32 = 0x0200;

/// One tap of a 1-D directional gather: integer offset and weight.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tap {
    pub dx: i32,
    pub dy: i32,
    pub w: f32,
    pub _pad: u32,
}

/// The taps of imagecorruptions' `_motion_blur`: weights Gaussian(i; 0, sigma) normalised
/// over i = 0..2r, offsets (ceil(i·cosθ − ½), ceil(i·sinθ − ½)); the list stops at the first
/// offset as large as the image (`height`, `width`), as the reference does.
pub(crate) fn motion_taps(
    radius: u32,
    sigma: f64,
    angle_deg: f64,
    width: u32,
    height: u32,
) -> Vec<Tap> {
    let n = 2 * radius + 1;
    let g: Vec<f64> = (0..n)
        .map(|i| {
            let x = f64::from(i);
            (-(x * x) / (2.0 * sigma * sigma)).exp() / ((2.0 * std::f64::consts::PI).sqrt() * sigma)
        })
        .collect();
    let z: f64 = g.iter().sum();
    let (s, c) = angle_deg.to_radians().sin_cos();
    let mut taps = Vec::new();
    for (i, gi) in g.iter().enumerate() {
        let i = i as f64;
        let dy = (i * s - 0.5).ceil() as i64;
        let dx = (i * c - 0.5).ceil() as i64;
        if dy.unsigned_abs() >= u64::from(height) || dx.unsigned_abs() >= u64::from(width) {
            break;
        }
        taps.push(Tap {
            dx: dx as i32,
            dy: dy as i32,
            w: (gi / z) as f32,
            _pad: 0,
        });
    }
    taps
}

/// One image's Motion Blur: the angle drawn and the taps.
#[derive(Debug, Clone)]
pub struct MotionPlan {
    pub angle_deg: f64,
    pub taps: Vec<Tap>,
}

impl MotionPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let m = &cfg.motion_blur;
        let i = sev_index(severity);
        let angle_deg = key.uniform(MOTION_ANGLE, 0, m.angle_deg[0], m.angle_deg[1]);
        MotionPlan {
            angle_deg,
            taps: motion_taps(m.radius[i], m.sigma[i], angle_deg, width, height),
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"angle_deg": self.angle_deg, "taps": self.taps.len()})
    }
}

/// Sum of `taps` around (x, y) of an image of `w`×`h` with clamped coordinates, over the
/// values `get(x, y)` (f32, the same order as the kernel).
#[inline]
#[cfg(test)]
pub(crate) fn gather<F: Fn(usize) -> f32>(
    taps: &[Tap],
    x: i32,
    y: i32,
    w: i32,
    h: i32,
    get: F,
) -> f32 {
    let mut acc = 0.0f32;
    for t in taps {
        let sx = (x + t.dx).clamp(0, w - 1);
        let sy = (y + t.dy).clamp(0, h - 1);
        acc += t.w * get((sy * w + sx) as usize);
    }
    acc
}

/// The CPU twin of `corrupt_motion.wgsl`: the gather on 0..255 values, clipped, truncated.
///
/// Each pixel adds its taps in the kernel's order (`gather`, the per-pixel reference the tests
/// compare with); the loops run tap by tap over whole rows instead of pixel by pixel, which gives
/// every pixel the same additions in the same order and lets the inner loop vectorise. Rows run in
/// parallel.
pub(crate) fn motion_cpu(img: &RgbImage, taps: &[Tap]) -> RgbImage {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let src: Vec<f32> = img.as_raw().iter().map(|&v| f32::from(v)).collect();
    let mut out = vec![0u8; w * h * 3];
    out.par_chunks_mut(w * 3).enumerate().for_each(|(y, row)| {
        let mut acc = vec![0.0f32; w * 3];
        for t in taps {
            let sy = (y as i64 + i64::from(t.dy)).clamp(0, h as i64 - 1) as usize;
            add_shifted(&mut acc, &src[sy * w * 3..(sy + 1) * w * 3], 3, t.dx, t.w);
        }
        for (o, a) in row.iter_mut().zip(&acc) {
            *o = a.clamp(0.0, 255.0) as u8;
        }
    });
    RgbImage::from_raw(img.width(), img.height(), out).unwrap_or_default()
}

/// `acc[x] += wt · row[clamp(x + dx)]` for every pixel x of a row of `ch` interleaved
/// channels; `row` may be longer than `acc` (its pixels beyond `acc` are read, not written),
/// and `x + dx` is clamped to the row's own ends.
pub(crate) fn add_shifted(acc: &mut [f32], row: &[f32], ch: usize, dx: i32, wt: f32) {
    let (w, n) = ((acc.len() / ch) as i64, (row.len() / ch) as i64);
    let dx = i64::from(dx);
    // Pixels whose source lies inside the row: 0 <= x + dx < n.
    let (x0, x1) = ((-dx).clamp(0, w) as usize, (n - dx).clamp(0, w) as usize);
    let (first, last) = (&row[..ch], &row[row.len() - ch..]);
    for px in acc[..ch * x0].chunks_exact_mut(ch) {
        for (a, v) in px.iter_mut().zip(first) {
            *a += wt * v;
        }
    }
    if x0 < x1 {
        let s0 = (x0 as i64 + dx) as usize;
        add_row(
            &mut acc[ch * x0..ch * x1],
            wt,
            &row[ch * s0..ch * (s0 + x1 - x0)],
        );
    }
    for px in acc[ch * x1.max(x0)..].chunks_exact_mut(ch) {
        for (a, v) in px.iter_mut().zip(last) {
            *a += wt * v;
        }
    }
}

/// numpy's `arange(start, stop, step)` length: ceil((stop − start) / step), at least 0.
pub(crate) fn arange_len(start: f64, stop: f64, step: f64) -> usize {
    let n = ((stop - start) / step).ceil();
    if n.is_finite() && n > 0.0 {
        n as usize
    } else {
        0
    }
}

/// One zoom layer of imagecorruptions' `clipped_zoom`: the centred ⌈H/z⌉×⌈W/z⌉ crop at
/// (top, left), upsampled by scipy's corner-aligned order-1 zoom with ratio (in−1)/(out−1)
/// per axis, of which the top-left H×W is kept.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ZoomLayer {
    pub top: u32,
    pub left: u32,
    pub crop_h: u32,
    pub crop_w: u32,
    pub ratio_y: f32,
    pub ratio_x: f32,
    pub _pad: [u32; 2],
}

/// scipy's output size of a zoom: Python's `round(n * z)` (half to even).
fn zoom_out(n: u32, z: f64) -> u32 {
    (f64::from(n) * z).round_ties_even().max(1.0) as u32
}

impl ZoomLayer {
    pub fn new(width: u32, height: u32, z: f64) -> Self {
        let ch = (f64::from(height) / z).ceil().max(1.0) as u32;
        let cw = (f64::from(width) / z).ceil().max(1.0) as u32;
        let ratio = |n: u32, out: u32| {
            if out > 1 {
                (f64::from(n - 1) / f64::from(out - 1)) as f32
            } else {
                0.0
            }
        };
        ZoomLayer {
            top: (height - ch.min(height)) / 2,
            left: (width - cw.min(width)) / 2,
            crop_h: ch,
            crop_w: cw,
            ratio_y: ratio(ch, zoom_out(ch, z)),
            ratio_x: ratio(cw, zoom_out(cw, z)),
            _pad: [0; 2],
        }
    }
}

/// Bilinear sample of the crop of `layer` at output (x, y), values from `get(x, y)`.
#[inline]
#[cfg(test)]
pub(crate) fn zoom_sample<F: Fn(u32, u32) -> f32>(l: &ZoomLayer, x: u32, y: u32, get: F) -> f32 {
    let sy = y as f32 * l.ratio_y;
    let sx = x as f32 * l.ratio_x;
    let y0 = (sy.floor() as u32).min(l.crop_h - 1);
    let x0 = (sx.floor() as u32).min(l.crop_w - 1);
    let fy = sy - y0 as f32;
    let fx = sx - x0 as f32;
    let y1 = (y0 + 1).min(l.crop_h - 1);
    let x1 = (x0 + 1).min(l.crop_w - 1);
    let a = get(l.left + x0, l.top + y0);
    let b = get(l.left + x1, l.top + y0);
    let c = get(l.left + x0, l.top + y1);
    let d = get(l.left + x1, l.top + y1);
    let top = a + (b - a) * fx;
    let bot = c + (d - c) * fx;
    top + (bot - top) * fy
}

/// The zoom factors of one severity and their layers for a `width`×`height` image.
#[derive(Debug, Clone)]
pub struct ZoomPlan {
    pub factors: Vec<f64>,
    pub layers: Vec<ZoomLayer>,
}

impl ZoomPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, width: u32, height: u32) -> Self {
        let z = &cfg.zoom_blur;
        let i = sev_index(severity);
        let n = arange_len(z.start[i], z.stop[i], z.step[i]);
        let factors: Vec<f64> = (0..n).map(|k| z.start[i] + k as f64 * z.step[i]).collect();
        let layers = factors
            .iter()
            .map(|f| ZoomLayer::new(width, height, *f))
            .collect();
        ZoomPlan { factors, layers }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"factors": self.factors})
    }
}

/// The CPU twin of `corrupt_zoom.wgsl`: (x + Σ layers) / (n + 1) on [0, 1] values.
///
/// Every pixel computes what `zoom_sample` (the per-pixel reference the tests compare with)
/// computes, layer after layer in the kernel's order, split in its two halves: a block of output
/// rows first takes the row half (`top` and `bot`, the lerp along x) of every source row it reads,
/// once, then each output row lerps two of those rows along y, which runs over contiguous memory.
/// The same operations in the same order as one sample at a time, so the same bits. Blocks run in
/// parallel.
pub(crate) fn zoom_cpu(img: &RgbImage, layers: &[ZoomLayer]) -> RgbImage {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let src: Vec<f32> = img.as_raw().iter().map(|&v| f32::from(v) / 255.0).collect();
    let inv = 1.0f32 / (layers.len() as f32 + 1.0);
    // Per layer and output column: the two source columns and the weight (zoom_sample's x half).
    let cols: Vec<Vec<(usize, usize, f32)>> = layers
        .iter()
        .map(|l| {
            (0..w as u32)
                .map(|x| {
                    let sx = x as f32 * l.ratio_x;
                    let x0 = (sx.floor() as u32).min(l.crop_w - 1);
                    let x1 = (x0 + 1).min(l.crop_w - 1);
                    let fx = sx - x0 as f32;
                    (3 * (l.left + x0) as usize, 3 * (l.left + x1) as usize, fx)
                })
                .collect()
        })
        .collect();
    let mut out = vec![0u8; w * h * 3];
    const BLOCK_ROWS: usize = 64;
    let stride = w * 3;
    if stride == 0 {
        return RgbImage::from_raw(img.width(), img.height(), out).unwrap_or_default();
    }
    out.par_chunks_mut(BLOCK_ROWS * stride)
        .enumerate()
        .for_each(|(b, block)| {
            let ya = b * BLOCK_ROWS;
            let rows = block.len() / stride;
            let mut acc = vec![0.0f32; rows * stride];
            let mut lerped = Vec::new();
            for (l, cols) in layers.iter().zip(&cols) {
                let src_row = |y: usize| {
                    let sy = y as f32 * l.ratio_y;
                    let y0 = (sy.floor() as u32).min(l.crop_h - 1);
                    let y1 = (y0 + 1).min(l.crop_h - 1);
                    (y0 as usize, y1 as usize, sy - y0 as f32)
                };
                // Source rows ya's sample reads up to the last row's, both inclusive.
                let first = src_row(ya).0;
                let last = src_row(ya + rows - 1).1;
                lerped.resize((last - first + 1) * stride, 0.0);
                for (k, dst) in lerped.chunks_exact_mut(stride).enumerate() {
                    let r = &src[(l.top as usize + first + k) * stride..][..stride];
                    zoom_across(dst, r, cols);
                }
                for (r, acc_row) in acc.chunks_exact_mut(stride).enumerate() {
                    let (y0, y1, fy) = src_row(ya + r);
                    let top = &lerped[(y0 - first) * stride..][..stride];
                    let bot = &lerped[(y1 - first) * stride..][..stride];
                    zoom_down(acc_row, top, bot, fy);
                }
            }
            let own = &src[ya * stride..(ya + rows) * stride];
            zoom_finish(block, &acc, own, inv);
        });
    RgbImage::from_raw(img.width(), img.height(), out).unwrap_or_default()
}

crate::cpu::avx2_clone! {
    /// One row of a zoom layer's horizontal lerp: per output pixel, its two source columns
    /// (offsets into `row`) and the weight of the second.
    fn zoom_across(dst: &mut [f32], row: &[f32], cols: &[(usize, usize, f32)]) = zoom_across_any;
}

#[inline(always)]
fn zoom_across_any(dst: &mut [f32], row: &[f32], cols: &[(usize, usize, f32)]) {
    for (px, &(c0, c1, fx)) in dst.chunks_exact_mut(3).zip(cols) {
        for c in 0..3 {
            let (a, b) = (row[c0 + c], row[c1 + c]);
            px[c] = a + (b - a) * fx;
        }
    }
}

crate::cpu::avx2_clone! {
    /// Adds one zoom layer's vertical lerp of two lerped rows to a row of the sum.
    fn zoom_down(acc: &mut [f32], top: &[f32], bot: &[f32], fy: f32) = zoom_down_any;
}

#[inline(always)]
fn zoom_down_any(acc: &mut [f32], top: &[f32], bot: &[f32], fy: f32) {
    for ((a, &t), &bt) in acc.iter_mut().zip(top).zip(bot) {
        *a += t + (bt - t) * fy;
    }
}

crate::cpu::avx2_clone! {
    /// The mean of the image and its layers, as u8.
    fn zoom_finish(out: &mut [u8], acc: &[f32], own: &[f32], inv: f32) = zoom_finish_any;
}

#[inline(always)]
fn zoom_finish_any(out: &mut [u8], acc: &[f32], own: &[f32], inv: f32) {
    for ((o, a), v) in out.iter_mut().zip(acc).zip(own) {
        *o = to_u8((v + a) * inv);
    }
}

/// OpenCV's Gaussian: sigma = 0.3·((k − 1)/2 − 1) + 0.8 for sigma 0, weights normalised.
pub(crate) fn gaussian_weights(k: u32) -> Vec<f32> {
    let sigma = 0.3 * ((f64::from(k) - 1.0) * 0.5 - 1.0) + 0.8;
    let r = f64::from(k / 2);
    let g: Vec<f64> = (0..k)
        .map(|i| {
            let x = f64::from(i) - r;
            (-(x * x) / (2.0 * sigma * sigma)).exp()
        })
        .collect();
    let s: f64 = g.iter().sum();
    g.iter().map(|v| (v / s) as f32).collect()
}

/// OpenCV's BORDER_REFLECT_101 index (`gfedcb|abcdefgh|gfedcba`), any distance out.
#[inline]
pub(crate) fn reflect101(i: i32, n: i32) -> i32 {
    if n <= 1 {
        return 0;
    }
    let period = 2 * (n - 1);
    let m = i.rem_euclid(period);
    if m >= n {
        period - m
    } else {
        m
    }
}

/// Separable Gaussian blur, reflect-101 borders, of the interleaved RGB values `src`
/// (0..255 as f32) — horizontal pass into f32, vertical pass back; the twin of the two
/// passes of `corrupt_gauss_h.wgsl` / `corrupt_gauss_v.wgsl` (before their final step).
pub(crate) fn gaussian_blur_f32(src: &[f32], w: u32, h: u32, weights: &[f32]) -> Vec<f32> {
    gaussian_blur_rows(src, w, h, weights, 0..h)
}

/// [`gaussian_blur_f32`] for the output rows `rows` only (the others are 0): each value is
/// still the sum of its taps in kernel order, as the kernels add them, so the bytes match.
/// Rows run in parallel, and each tap is one pass over a padded row, which vectorises.
pub(crate) fn gaussian_blur_rows(
    src: &[f32],
    w: u32,
    h: u32,
    weights: &[f32],
    rows: std::ops::Range<u32>,
) -> Vec<f32> {
    let (wi, hi) = (w as i32, h as i32);
    let stride = w as usize * 3;
    let r = (weights.len() / 2) as i32;
    let rows = rows.start.min(h)..rows.end.min(h);
    let mut needed = vec![false; h as usize];
    for y in rows.clone() {
        for k in 0..weights.len() as i32 {
            needed[reflect101(y as i32 + k - r, hi) as usize] = true;
        }
    }
    let mut tmp = vec![0.0f32; src.len()];
    if stride == 0 {
        return tmp;
    }
    tmp.par_chunks_mut(stride)
        .zip(src.par_chunks(stride))
        .zip(needed.par_iter())
        .filter(|(_, need)| **need)
        .for_each(|((out, row), _)| {
            let mut padded: Vec<f32> = Vec::with_capacity(stride + 6 * r as usize);
            let reflected = |xs: std::ops::Range<i32>, padded: &mut Vec<f32>| {
                for x in xs {
                    let sx = reflect101(x, wi) as usize * 3;
                    padded.extend_from_slice(&row[sx..sx + 3]);
                }
            };
            reflected(-r..0, &mut padded);
            padded.extend_from_slice(row);
            reflected(wi..wi + r, &mut padded);
            let taps: Vec<(f32, &[f32])> = weights
                .iter()
                .enumerate()
                .map(|(k, wk)| (*wk, &padded[k * 3..k * 3 + stride]))
                .collect();
            sum_taps(out, &taps);
        });
    let mut out = vec![0.0f32; src.len()];
    out.par_chunks_mut(stride)
        .enumerate()
        .filter(|(y, _)| rows.contains(&(*y as u32)))
        .for_each(|(y, o)| {
            let taps: Vec<(f32, &[f32])> = weights
                .iter()
                .enumerate()
                .map(|(k, wk)| {
                    let sy = reflect101(y as i32 + k as i32 - r, hi) as usize;
                    (*wk, &tmp[sy * stride..(sy + 1) * stride])
                })
                .collect();
            sum_taps(o, &taps);
        });
    out
}

crate::cpu::avx2_clone! {
    /// `out += w · row` for each (w, row) of `taps` in turn, the order the kernels add them.
    /// A block of `out` stays in registers while every tap is added to it, so each tap costs
    /// one load per value instead of a load and a store of `out` too.
    fn sum_taps(out: &mut [f32], taps: &[(f32, &[f32])]) = sum_taps_any;
}

#[inline(always)]
fn sum_taps_any(out: &mut [f32], taps: &[(f32, &[f32])]) {
    const BLOCK: usize = 16;
    let n = out.len();
    let mut i = 0;
    while i + BLOCK <= n {
        let mut acc = [0f32; BLOCK];
        acc.copy_from_slice(&out[i..i + BLOCK]);
        for &(w, row) in taps {
            let r = &row[i..i + BLOCK];
            for l in 0..BLOCK {
                acc[l] += w * r[l];
            }
        }
        out[i..i + BLOCK].copy_from_slice(&acc);
        i += BLOCK;
    }
    for &(w, row) in taps {
        for (o, v) in out[i..].iter_mut().zip(&row[i..n]) {
            *o += w * v;
        }
    }
}

crate::cpu::avx2_clone! {
    /// `out[i] += w · row[i]`, with AVX2 where the CPU has it (no fused multiply-add, so the same
    /// bits as without).
    pub(crate) fn add_row(out: &mut [f32], w: f32, row: &[f32]) = add_row_any;
}

#[inline(always)]
fn add_row_any(out: &mut [f32], w: f32, row: &[f32]) {
    for (o, v) in out.iter_mut().zip(row) {
        *o += w * v;
    }
}

/// Rounds a blurred 0..255 value to u8 as OpenCV's saturate_cast does (half to even).
#[inline]
pub(crate) fn round_u8(v: f32) -> u8 {
    v.round_ties_even().clamp(0.0, 255.0) as u8
}

crate::cpu::avx2_clone! {
    /// [`round_u8`] over a slice (with AVX2 the rounding is one instruction, not a call).
    pub(crate) fn round_row(out: &mut [u8], from: &[f32]) = round_row_any;
}

#[inline(always)]
fn round_row_any(out: &mut [u8], from: &[f32]) {
    for (o, v) in out.iter_mut().zip(from) {
        *o = round_u8(*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_image(w: u32, h: u32, seed: u64) -> RgbImage {
        let mut state = seed | 1;
        RgbImage::from_fn(w, h, |_, _| {
            image::Rgb([0; 3].map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            }))
        })
    }

    /// The row-parallel blur against the per-pixel sum it replaced (each tap looked up through
    /// reflect-101 and added in kernel order): the same bits, also for kernels wider than the
    /// image and for a band of rows.
    #[test]
    fn gaussian_blur_equals_the_per_pixel_sum() {
        fn per_pixel(src: &[f32], w: i32, h: i32, wt: &[f32], horizontal: bool) -> Vec<f32> {
            let r = (wt.len() / 2) as i32;
            let mut out = vec![0.0f32; src.len()];
            for y in 0..h {
                for x in 0..w {
                    for c in 0..3 {
                        let mut acc = 0.0f32;
                        for (k, wk) in wt.iter().enumerate() {
                            let (sx, sy) = if horizontal {
                                (reflect101(x + k as i32 - r, w), y)
                            } else {
                                (x, reflect101(y + k as i32 - r, h))
                            };
                            acc += wk * src[((sy * w + sx) * 3 + c) as usize];
                        }
                        out[((y * w + x) * 3 + c) as usize] = acc;
                    }
                }
            }
            out
        }
        for (n, (w, h, k)) in [
            (97, 61, 7),
            (160, 90, 25),
            (5, 40, 13),
            (40, 3, 9),
            (1, 1, 5),
        ]
        .into_iter()
        .enumerate()
        {
            let img = random_image(w, h, 0x51_7cc1 + n as u64);
            let src: Vec<f32> = img.as_raw().iter().map(|v| f32::from(*v)).collect();
            let wt = gaussian_weights(k);
            let (wi, hi) = (w as i32, h as i32);
            let want = per_pixel(&per_pixel(&src, wi, hi, &wt, true), wi, hi, &wt, false);
            let got = gaussian_blur_f32(&src, w, h, &wt);
            assert!(want
                .iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            let band = h / 3..h / 2 + 1;
            let part = gaussian_blur_rows(&src, w, h, &wt, band.clone());
            for (y, (a, b)) in want
                .chunks(w as usize * 3)
                .zip(part.chunks(w as usize * 3))
                .enumerate()
            {
                if band.contains(&(y as u32)) {
                    assert!(
                        a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "row {y}"
                    );
                } else {
                    assert!(b.iter().all(|v| *v == 0.0), "row {y} outside the band");
                }
            }
        }
    }

    /// Motion and Zoom Blur by the kernels' per-pixel recipe ([`gather`], [`zoom_sample`]):
    /// the row-wise twins must give the same bytes.
    #[test]
    fn row_wise_blurs_equal_the_per_pixel_recipe() {
        let c = crate::corrupt::config::test_config();
        for (k, (w, h)) in [(97, 61), (160, 90), (7, 300), (300, 5)]
            .into_iter()
            .enumerate()
        {
            let img = random_image(w, h, 0x9e37_79b9 + k as u64);
            let src = img.as_raw();
            for (sev, angle) in [(1, -45.0), (3, 10.0), (5, 135.0), (4, -170.0)] {
                let m = &c.motion_blur;
                let taps = motion_taps(m.radius[sev - 1], m.sigma[sev - 1], angle, w, h);
                let want = RgbImage::from_fn(w, h, |x, y| {
                    image::Rgb([0, 1, 2].map(|ch| {
                        let get = |j: usize| f32::from(src[j * 3 + ch]);
                        let v = gather(&taps, x as i32, y as i32, w as i32, h as i32, get);
                        v.clamp(0.0, 255.0) as u8
                    }))
                });
                assert_eq!(motion_cpu(&img, &taps), want, "motion {w}×{h} sev {sev}");
                let layers = ZoomPlan::new(&c, sev as u8, w, h).layers;
                let inv = 1.0f32 / (layers.len() as f32 + 1.0);
                let want = RgbImage::from_fn(w, h, |x, y| {
                    image::Rgb([0, 1, 2].map(|ch| {
                        let get = |sx: u32, sy: u32| {
                            f32::from(src[((sy * w + sx) * 3) as usize + ch]) / 255.0
                        };
                        let mut acc = 0.0f32;
                        for l in &layers {
                            acc += zoom_sample(l, x, y, get);
                        }
                        to_u8((get(x, y) + acc) * inv)
                    }))
                });
                assert_eq!(zoom_cpu(&img, &layers), want, "zoom {w}×{h} sev {sev}");
            }
        }
    }

    #[test]
    fn zoom_factor_counts_follow_numpy() {
        let c = crate::corrupt::config::test_config();
        let counts: Vec<usize> = (1..=5)
            .map(|s| ZoomPlan::new(&c, s, 160, 90).factors.len())
            .collect();
        assert_eq!(counts, vec![12, 16, 11, 13, 11]);
    }

    #[test]
    fn motion_taps_by_hand() {
        // Angle 0: offsets (i, 0); radius 1, sigma 1: weights ∝ 1, e^-½, e^-2.
        let t = motion_taps(1, 1.0, 0.0, 100, 100);
        let g = [1.0f64, (-0.5f64).exp(), (-2.0f64).exp()];
        let s: f64 = g.iter().sum();
        for (i, tap) in t.iter().enumerate() {
            assert_eq!((tap.dx, tap.dy), (i as i32, 0));
            assert!((f64::from(tap.w) - g[i] / s).abs() < 1e-7);
        }
        // 45°: i·cos = i·sin = 0.707 i → ceil(0.707 − .5) = 1, ceil(1.414 − .5) = 1.
        let t = motion_taps(1, 1.0, 45.0, 100, 100);
        assert_eq!(
            t.iter().map(|t| (t.dx, t.dy)).collect::<Vec<_>>(),
            vec![(0, 0), (1, 1), (1, 1)]
        );
        // A constant image stays constant (while all taps fit: the reference drops the rest).
        let img = RgbImage::from_pixel(100, 60, image::Rgb([77, 0, 255]));
        let out = motion_cpu(&img, &motion_taps(15, 12.0, 30.0, 100, 60));
        assert!(out
            .pixels()
            .all(|p| p.0[1] == 0 && (76..=77).contains(&p.0[0]) && p.0[2] >= 254));
    }

    #[test]
    fn reflect101_and_gaussian() {
        let got: Vec<i32> = (-3..8).map(|i| reflect101(i, 5)).collect();
        assert_eq!(got, vec![3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1]);
        let w = gaussian_weights(31);
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // sigma for k = 31 is 5.0: w[15 ± 5] / w[15] = e^-½.
        assert!((f64::from(w[20] / w[15]) - (-0.5f64).exp()).abs() < 1e-5);
    }

    #[test]
    fn zoom_identity_at_one() {
        let l = ZoomLayer::new(40, 30, 1.0);
        assert_eq!((l.top, l.left, l.crop_h, l.crop_w), (0, 0, 30, 40));
        assert_eq!((l.ratio_x, l.ratio_y), (1.0, 1.0));
    }
}
