//! Per-pixel photometric corruptions: Brightness and Saturate (in HSV), Color Quantization and
//! the black views (Camera Crash, Frame Lost), the CPU twin of `kernels/corrupt_pixel.wgsl`;
//! Dark (tone curve + Poisson shot noise + Gaussian read noise), the twin of
//! `kernels/corrupt_dark.wgsl`, is in [`dark`].
//!
//! All float work is f32 in the same order as the kernel; results are truncated to u8 like the
//! reference's `np.uint8`.

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

mod dark;

pub(crate) use dark::dark_cpu;
#[cfg(test)]
pub(crate) use dark::DarkParams;
pub use dark::{DarkEntry, DarkPlan};

use super::config::CorruptConfig;
use super::{j32, sev_index, to_u8};

/// RGB in [0, 1] to HSV in [0, 1]³ with skimage's conventions (hue 0 for greys, blue wins
/// ties over green over red).
#[inline]
pub(crate) fn rgb_to_hsv(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
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
pub(crate) fn hsv_to_rgb(h: f32, s: f32, v: f32) -> (f32, f32, f32) {
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
pub(crate) const MODE_HSV: u32 = 0;
pub(crate) const MODE_BLACK: u32 = 100;

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

    pub fn to_json(self) -> serde_json::Value {
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
pub(crate) fn pixel_op(p: &HsvParams, rgb: [u8; 3]) -> [u8; 3] {
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
pub(crate) fn pixel_cpu(img: &RgbImage, p: &HsvParams) -> RgbImage {
    let mut out = img.clone();
    out.par_chunks_mut(3 << 12).for_each(|chunk| {
        if p.mode == MODE_HSV {
            hsv_chunk(p, chunk);
            return;
        }
        for px in chunk.chunks_exact_mut(3) {
            let v = pixel_op(p, [px[0], px[1], px[2]]);
            px.copy_from_slice(&v);
        }
    });
    out
}

/// Pixels [`hsv_chunk`] converts per block: planes of bytes and of f32 on the stack (15 KiB),
/// so that every step between splitting the pixels apart and putting them back together runs
/// over contiguous lanes.
const HSV_BLOCK: usize = 1024;

crate::cpu::avx2_clone! {
    /// [`pixel_op`]'s HSV adjustment over a chunk of RGB pixels, a block of planes at a time.
    fn hsv_chunk(p: &HsvParams, chunk: &mut [u8]) = hsv_chunk_any;
}

#[inline(always)]
fn hsv_chunk_any(p: &HsvParams, chunk: &mut [u8]) {
    let mut bytes = [[0u8; HSV_BLOCK]; 3];
    let mut planes = [[0f32; HSV_BLOCK]; 3];
    for block in chunk.chunks_mut(3 * HSV_BLOCK) {
        let n = block.len() / 3;
        {
            let [r, g, b] = &mut bytes;
            let (r, g, b) = (&mut r[..n], &mut g[..n], &mut b[..n]);
            for (i, px) in block.chunks_exact(3).enumerate() {
                (r[i], g[i], b[i]) = (px[0], px[1], px[2]);
            }
        }
        for (unit, byte) in planes.iter_mut().zip(&bytes) {
            for (u, &x) in unit[..n].iter_mut().zip(&byte[..n]) {
                *u = f32::from(x) / 255.0;
            }
        }
        {
            let [r, g, b] = &mut planes;
            let (r, g, b) = (&mut r[..n], &mut g[..n], &mut b[..n]);
            for i in 0..n {
                [r[i], g[i], b[i]] = hsv_lane(p, r[i], g[i], b[i]);
            }
        }
        for (byte, unit) in bytes.iter_mut().zip(&planes) {
            for (x, &u) in byte[..n].iter_mut().zip(&unit[..n]) {
                *x = to_u8(u);
            }
        }
        let [r, g, b] = &bytes;
        for (i, px) in block.chunks_exact_mut(3).enumerate() {
            px.copy_from_slice(&[r[i], g[i], b[i]]);
        }
    }
}

/// The larger of two numbers that are not NaN, as one vector instruction (`f32::max` also
/// handles NaN, which costs a comparison and a blend per lane).
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The smaller of two numbers that are not NaN (see [`larger`]).
#[inline(always)]
fn smaller(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// [`rgb_to_hsv`], the adjustment and [`hsv_to_rgb`] for one pixel with every branch turned
/// into a selection, so a loop over planes runs as vector operations. The same operations in
/// the same order give the same bits; the rewrites are exact: channels in [0, 1] hold no NaN
/// and no −0, so [`larger`] and [`smaller`] are `max` and `min` (a NaN parameter clamps to
/// the same bound either way); the hue's numerator is chosen before the one division (the
/// branches not taken were discarded anyway); the red sector's offset is added as `0 + x`,
/// which only turns a hue of −0 into +0, the same after `h − floor(h)`; and only the one of
/// `q` and `t` that a sector uses is computed. Checked against [`pixel_op`] on every one of
/// the 2²⁴ colours.
#[inline(always)]
fn hsv_lane(p: &HsvParams, r: f32, g: f32, b: f32) -> [f32; 3] {
    let v = larger(larger(r, g), b);
    let delta = v - smaller(smaller(r, g), b);
    let grey = delta == 0.0;
    let s = if grey { 0.0 } else { delta / v };
    let (b_max, g_max) = (b == v, g == v);
    let x = if b_max {
        r
    } else if g_max {
        b
    } else {
        g
    };
    let y = if b_max {
        g
    } else if g_max {
        r
    } else {
        b
    };
    let offset = if b_max {
        4.0
    } else if g_max {
        2.0
    } else {
        0.0
    };
    let h = (offset + (x - y) / delta) / 6.0;
    let h = h - h.floor();
    let h = if grey { 0.0 } else { h };
    let s = smaller(larger(s * p.s_scale + p.s_offset, 0.0), 1.0);
    let v = smaller(larger(v + p.v_add, 0.0), 1.0);

    let h6 = h * 6.0;
    let fl = h6.floor();
    let f = h6 - fl;
    // SAFETY: h − floor(h) is in [0, 1] (1 only by rounding), so fl is a whole number in
    // [0, 6].
    let i = unsafe { fl.to_int_unchecked::<i32>() };
    let i = if i >= 6 { i - 6 } else { i };
    let low = v * (1.0 - s);
    // The odd sectors fall (q = v(1 − fs)), the even ones rise (t = v(1 − (1 − f)s)).
    let part = if i & 1 == 1 { f } else { 1.0 - f };
    let mid = v * (1.0 - part * s);
    let red = if i == 0 || i == 5 {
        v
    } else if i == 1 || i == 4 {
        mid
    } else {
        low
    };
    let green = if i == 1 || i == 2 {
        v
    } else if i == 0 || i == 3 {
        mid
    } else {
        low
    };
    let blue = if i == 3 || i == 4 {
        v
    } else if i == 2 || i == 5 {
        mid
    } else {
        low
    };
    [red, green, blue]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corrupt::config::test_config as cfg;

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
    fn hsv_chunk_is_pixel_op_on_every_colour() {
        let c = cfg();
        let params = [
            HsvParams::brightness(&c, 1),
            HsvParams::brightness(&c, 5),
            HsvParams::saturate(&c, 1),
            HsvParams::saturate(&c, 5),
        ];
        // One red value at a time (65,536 colours), in two chunks whose lengths are not whole
        // blocks, as the chunks of an image are not.
        for red in 0..=255u8 {
            let mut px: Vec<u8> = Vec::with_capacity(3 << 16);
            for g in 0..=255u8 {
                for b in 0..=255u8 {
                    px.extend([red, g, b]);
                }
            }
            for p in &params {
                let mut got = px.clone();
                let (head, tail) = got.split_at_mut(3 * 1000);
                hsv_chunk(p, head);
                hsv_chunk(p, tail);
                for (colour, got) in px.chunks_exact(3).zip(got.chunks_exact(3)) {
                    let want = pixel_op(p, [colour[0], colour[1], colour[2]]);
                    assert_eq!(got, &want[..], "{colour:?} under {p:?}");
                }
            }
        }
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
}
