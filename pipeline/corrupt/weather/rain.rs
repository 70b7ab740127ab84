//! Rain: DriveBench's streak rasteriser, in the stages of the `kernels/corrupt_rain_*.wgsl`
//! kernels (drops, streak, 3×3 blend, final contrast).

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::{RAIN_SLANT, RAIN_X, RAIN_Y};
use crate::corrupt::blur::reflect101;
use crate::corrupt::config::CorruptConfig;
use crate::corrupt::rng::Key;
use crate::corrupt::{j32, sev_index, to_u8};

/// The uniform block of the rain kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RainParams {
    pub k0: u32,
    pub k1: u32,
    pub width: u32,
    pub height: u32,
    pub drops: u32,
    pub length: u32,
    pub slant: i32,
    pub drop_value: u32,
    /// Drop starts: x in [x_lo, x_lo + x_span), y in [0, y_span).
    pub x_lo: i32,
    pub x_span: u32,
    pub y_span: u32,
    pub contrast: f32,
}

/// One image's Rain.
#[derive(Debug, Clone)]
pub struct RainPlan {
    pub params: RainParams,
}

impl RainPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let r = &cfg.rain;
        let i = sev_index(severity);
        let slant =
            key.int_incl(RAIN_SLANT, 0, i64::from(r.slant[0]), i64::from(r.slant[1])) as i32;
        let drops = ((u64::from(width) * u64::from(height)) / u64::from(r.area_per_drop[i])) as u32;
        let (x_lo, x_hi) = if slant < 0 {
            (slant, width as i32)
        } else {
            (0, width as i32 - slant)
        };
        RainPlan {
            params: RainParams {
                k0: key.k0,
                k1: key.k1,
                width,
                height,
                drops,
                length: r.length[i],
                slant,
                drop_value: u32::from(r.drop_value),
                x_lo,
                x_span: (x_hi - x_lo).max(1) as u32,
                y_span: (height as i64 - i64::from(r.length[i])).max(1) as u32,
                contrast: r.contrast[i],
            },
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        let p = &self.params;
        json!({"slant": p.slant, "drops": p.drops, "length": p.length, "contrast": j32(p.contrast)})
    }
}

/// Rasterises drop `d` (8-connected Bresenham, clipped to the image) into `put(x, y)`.
pub(crate) fn rain_drop(p: &RainParams, d: u32, mut put: impl FnMut(u32, u32)) {
    let key = Key { k0: p.k0, k1: p.k1 };
    let x0 = p.x_lo + (key.u32(RAIN_X, d) % p.x_span) as i32;
    let y0 = (key.u32(RAIN_Y, d) % p.y_span) as i32;
    let (x1, y1) = (x0 + p.slant, y0 + p.length as i32);
    let dx = (x1 - x0).abs();
    let dy = -(y1 - y0).abs();
    let sx = if x0 < x1 { 1 } else { -1 };
    let sy = if y0 < y1 { 1 } else { -1 };
    let (mut x, mut y, mut err) = (x0, y0, dx + dy);
    // At most dx + |dy| + 1 points; the bound keeps the kernel's loop finite.
    for _ in 0..=(dx - dy) {
        if x >= 0 && y >= 0 && (x as u32) < p.width && (y as u32) < p.height {
            put(x as u32, y as u32);
        }
        if x == x1 && y == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

/// The streak step: I + R·(1 − I/255)·(1 − mean), truncated (a uint8 add in the reference).
#[inline]
pub(crate) fn rain_streak(v: u8, r: u32, mean_term: f32) -> u32 {
    if r == 0 {
        return u32::from(v);
    }
    let x = f32::from(v);
    let add = r as f32 * (1.0 - x / 255.0) * mean_term;
    ((x + add) as u32).min(255)
}

/// 1 − mean/255 from a u64 sum of `n` channel values split into (hi, lo) words.
#[inline]
pub(crate) fn mean_term(hi: u32, lo: u32, n: u32) -> f32 {
    let s = hi as f32 * 4_294_967_296.0 + lo as f32;
    1.0 - s / (n as f32 * 255.0)
}

/// The final contrast step on a blend value b255 = blend·255² (an integer).
#[inline]
pub(crate) fn rain_final(b255: u32, mu: f32, k: f32) -> u8 {
    let v = b255 as f32 / 65025.0;
    to_u8(((v - mu) * k + mu).clamp(0.0, 1.0))
}

/// Mean of a channel from its u64 sum of blend·255² values over `n` pixels.
#[inline]
pub(crate) fn rain_mu(hi: u32, lo: u32, n: u32) -> f32 {
    let s = hi as f32 * 4_294_967_296.0 + lo as f32;
    s / (n as f32 * 65025.0)
}

/// The CPU twin of the rain kernels. The 3×3 box sum of the streak layer is taken as a row
/// pass and a column pass (integer sums, so the same values as nine taps per pixel), rows in
/// parallel.
pub(crate) fn rain_cpu(img: &RgbImage, plan: &RainPlan) -> RgbImage {
    let p = &plan.params;
    let (w, h) = (p.width as usize, p.height as usize);
    let n = w * h;
    let mut mask = vec![0u32; n];
    for d in 0..p.drops {
        rain_drop(p, d, |x, y| {
            mask[y as usize * w + x as usize] = p.drop_value
        });
    }
    let src = img.as_raw();
    let total: u64 = src.iter().map(|v| u64::from(*v)).sum();
    let mt = mean_term((total >> 32) as u32, total as u32, (w * h * 3) as u32);
    let stride = w * 3;
    let mut streak = vec![0u32; n * 3];
    streak
        .par_chunks_mut(stride)
        .enumerate()
        .for_each(|(y, row)| {
            rain_streak_row(
                row,
                &src[y * stride..(y + 1) * stride],
                &mask[y * w..(y + 1) * w],
                mt,
            );
        });
    // Row pass: each element plus its left and right neighbours (reflected at the edges).
    let mut across = vec![0u32; n * 3];
    across
        .par_chunks_mut(stride)
        .zip(streak.par_chunks(stride))
        .for_each(|(out, row)| rain_across_row(out, row));
    drop(streak);
    let mut blend = vec![0u32; n * 3];
    let sums: Vec<[u64; 3]> = blend
        .par_chunks_mut(stride)
        .enumerate()
        .map(|(y, out)| {
            let up = reflect101(y as i32 - 1, h as i32) as usize;
            let down = reflect101(y as i32 + 1, h as i32) as usize;
            let rows = [up, y, down].map(|r| &across[r * stride..(r + 1) * stride]);
            rain_blend_row(
                out,
                rows,
                &mask[y * w..(y + 1) * w],
                &src[y * stride..(y + 1) * stride],
            )
        })
        .collect();
    let sums = sums
        .iter()
        .fold([0u64; 3], |a, s| [a[0] + s[0], a[1] + s[1], a[2] + s[2]]);
    let mu = sums.map(|s| rain_mu((s >> 32) as u32, s as u32, (w * h) as u32));
    let mut out = img.clone();
    out.par_chunks_mut(stride)
        .zip(blend.par_chunks(stride))
        .for_each(|(o, b)| rain_final_row(o, b, mu, p.contrast));
    out
}

crate::cpu::avx2_clone! {
    /// [`rain_streak`] over one row: `src` its channel values, `mask` its drop values.
    fn rain_streak_row(out: &mut [u32], src: &[u8], mask: &[u32], mt: f32) = rain_streak_row_any;
}

#[inline(always)]
fn rain_streak_row_any(out: &mut [u32], src: &[u8], mask: &[u32], mt: f32) {
    for ((o, s), &r) in out.chunks_exact_mut(3).zip(src.chunks_exact(3)).zip(mask) {
        for c in 0..3 {
            o[c] = rain_streak(s[c], r, mt);
        }
    }
}

crate::cpu::avx2_clone! {
    /// Each value of an interleaved RGB row plus the same channel of its left and right
    /// neighbours, reflected at the ends.
    fn rain_across_row(out: &mut [u32], row: &[u32]) = rain_across_row_any;
}

#[inline(always)]
fn rain_across_row_any(out: &mut [u32], row: &[u32]) {
    let w = row.len() / 3;
    if w < 3 {
        for x in 0..w {
            let l = reflect101(x as i32 - 1, w as i32) as usize;
            let r = reflect101(x as i32 + 1, w as i32) as usize;
            for c in 0..3 {
                out[x * 3 + c] = row[l * 3 + c] + row[x * 3 + c] + row[r * 3 + c];
            }
        }
        return;
    }
    let n = row.len();
    for c in 0..3 {
        out[c] = row[3 + c] + row[c] + row[3 + c];
        out[n - 3 + c] = row[n - 6 + c] + row[n - 3 + c] + row[n - 6 + c];
    }
    for (((o, l), m), r) in out[3..n - 3]
        .iter_mut()
        .zip(&row[..n - 6])
        .zip(&row[3..n - 3])
        .zip(&row[6..])
    {
        *o = l + m + r;
    }
}

crate::cpu::avx2_clone! {
    /// One row of the blend: the 3×3 box mean of the streak layer (`rows`: the row sums of the
    /// rows above, at and below) mixed with the source by the drop mask, in units of 1/255²;
    /// returns the row's per-channel sums.
    fn rain_blend_row(
        out: &mut [u32],
        rows: [&[u32]; 3],
        mask: &[u32],
        src: &[u8],
    ) -> [u64; 3] = rain_blend_row_any;
}

#[inline(always)]
fn rain_blend_row_any(out: &mut [u32], rows: [&[u32]; 3], mask: &[u32], src: &[u8]) -> [u64; 3] {
    let mut sums = [0u64; 3];
    let parts = out
        .chunks_exact_mut(3)
        .zip(rows[0].chunks_exact(3))
        .zip(rows[1].chunks_exact(3))
        .zip(rows[2].chunks_exact(3))
        .zip(src.chunks_exact(3))
        .zip(mask);
    for (((((o, a), b), c), s), &r) in parts {
        for k in 0..3 {
            let box_mean = (a[k] + b[k] + c[k] + 4) / 9;
            let v = box_mean * r + u32::from(s[k]) * (255 - r);
            o[k] = v;
            sums[k] += u64::from(v);
        }
    }
    sums
}

crate::cpu::avx2_clone! {
    /// [`rain_final`] over one row.
    fn rain_final_row(
        out: &mut [u8],
        blend: &[u32],
        mu: [f32; 3],
        contrast: f32,
    ) = rain_final_row_any;
}

#[inline(always)]
fn rain_final_row_any(out: &mut [u8], blend: &[u32], mu: [f32; 3], contrast: f32) {
    for (o, b) in out.chunks_exact_mut(3).zip(blend.chunks_exact(3)) {
        for c in 0..3 {
            o[c] = rain_final(b[c], mu[c], contrast);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corrupt::config::test_config as cfg;

    /// The rain twin as first written: nine taps per pixel, one pixel at a time.
    fn rain_per_pixel(img: &RgbImage, plan: &RainPlan) -> RgbImage {
        let p = &plan.params;
        let (w, h) = (p.width, p.height);
        let n = (w * h) as usize;
        let mut mask = vec![0u32; n];
        for d in 0..p.drops {
            rain_drop(p, d, |x, y| mask[(y * w + x) as usize] = p.drop_value);
        }
        let src = img.as_raw();
        let total: u64 = src.iter().map(|v| u64::from(*v)).sum();
        let mt = mean_term((total >> 32) as u32, total as u32, w * h * 3);
        let streak: Vec<u32> = (0..n * 3)
            .map(|i| rain_streak(src[i], mask[i / 3], mt))
            .collect();
        let mut blend = vec![0u32; n * 3];
        let mut sums = [0u64; 3];
        for y in 0..h as i32 {
            for x in 0..w as i32 {
                let i = (y as u32 * w + x as u32) as usize;
                for c in 0..3 {
                    let mut s = 0u32;
                    for oy in -1..=1 {
                        for ox in -1..=1 {
                            let sx = reflect101(x + ox, w as i32) as u32;
                            let sy = reflect101(y + oy, h as i32) as u32;
                            s += streak[((sy * w + sx) * 3) as usize + c];
                        }
                    }
                    let b = (s + 4) / 9;
                    let r = mask[i];
                    let v = b * r + u32::from(src[i * 3 + c]) * (255 - r);
                    blend[i * 3 + c] = v;
                    sums[c] += u64::from(v);
                }
            }
        }
        let mu = sums.map(|s| rain_mu((s >> 32) as u32, s as u32, w * h));
        let mut out = img.clone();
        for (i, v) in out.iter_mut().enumerate() {
            *v = rain_final(blend[i], mu[i % 3], p.contrast);
        }
        out
    }

    #[test]
    fn the_separable_rain_equals_nine_taps_per_pixel() {
        for (sev, (w, h)) in [
            (1, (97, 61)),
            (3, (160, 90)),
            (5, (40, 200)),
            (2, (1, 7)),
            (4, (2, 9)),
            (4, (3, 5)),
        ] {
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([
                    (x * 9 % 256) as u8,
                    (y * 5 % 256) as u8,
                    ((x * y) % 256) as u8,
                ])
            });
            let plan = RainPlan::new(&cfg(), sev, Key::new(4, "r", 9, sev), w, h);
            assert!(
                rain_cpu(&img, &plan) == rain_per_pixel(&img, &plan),
                "{w}×{h}"
            );
        }
    }

    #[test]
    fn rain_lines_are_connected_and_counted() {
        let c = cfg();
        let plan = RainPlan::new(&c, 5, Key::new(0, "r", 4, 5), 400, 300);
        assert_eq!(plan.params.drops, 400 * 300 / 400);
        let mut pts = Vec::new();
        rain_drop(&plan.params, 0, |x, y| pts.push((x as i32, y as i32)));
        // Length 80 with |slant| ≤ 10: y is the major axis, 81 points, 8-connected.
        assert_eq!(pts.len(), 81);
        for w in pts.windows(2) {
            assert!((w[1].0 - w[0].0).abs() <= 1 && w[1].1 - w[0].1 == 1);
        }
        // A black image under rain: streak pixels brighten, contrast around the mean.
        let img = RgbImage::from_pixel(400, 300, image::Rgb([0, 0, 0]));
        let out = rain_cpu(&img, &plan);
        assert!(out.pixels().any(|p| p.0[0] > 50));
    }
}
