//! Snow: imagecorruptions' snow layer, in the four stages of the `kernels/corrupt_snow_*.wgsl`
//! kernels (noise, zoom, motion-blurred layer, composite).

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::{SNOW_ANGLE, SNOW_NOISE};
#[cfg(test)]
use crate::corrupt::blur::gather;
use crate::corrupt::blur::{add_shifted, motion_taps, Tap, ZoomLayer};
use crate::corrupt::config::CorruptConfig;
use crate::corrupt::rng::Key;
use crate::corrupt::{j32, sev_index, to_u8};

/// The uniform block of the snow kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SnowParams {
    pub k0: u32,
    pub k1: u32,
    pub width: u32,
    pub height: u32,
    /// The zoomed layer's size (scipy's round(crop · zoom)).
    pub zoom_w: u32,
    pub zoom_h: u32,
    pub n_taps: u32,
    pub mean: f32,
    pub std: f32,
    pub threshold: f32,
    pub blend: f32,
    pub whiten_scale: f32,
    pub whiten_offset: f32,
    pub gray_r: f32,
    pub gray_g: f32,
    pub gray_b: f32,
    pub zoom: ZoomLayer,
}

/// One image's Snow.
#[derive(Debug, Clone)]
pub struct SnowPlan {
    pub params: SnowParams,
    pub angle_deg: f64,
    pub taps: Vec<Tap>,
}

impl SnowPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let s = &cfg.snow;
        let i = sev_index(severity);
        let zoom = ZoomLayer::new(width, height, s.zoom[i]);
        // The reference zooms the crop, keeping the whole upsampled layer (≥ the image).
        let out = |n: u32| (f64::from(n) * s.zoom[i]).round_ties_even().max(1.0) as u32;
        let (zoom_w, zoom_h) = (out(zoom.crop_w).max(width), out(zoom.crop_h).max(height));
        let angle_deg = key.uniform(SNOW_ANGLE, 0, s.angle_deg[0], s.angle_deg[1]);
        let taps = motion_taps(s.radius[i], s.sigma[i], angle_deg, zoom_w, zoom_h);
        SnowPlan {
            params: SnowParams {
                k0: key.k0,
                k1: key.k1,
                width,
                height,
                zoom_w,
                zoom_h,
                n_taps: taps.len() as u32,
                mean: s.mean[i],
                std: s.std[i],
                threshold: s.threshold[i],
                blend: s.blend[i],
                whiten_scale: s.whiten_scale,
                whiten_offset: s.whiten_offset,
                gray_r: s.gray_weights[0],
                gray_g: s.gray_weights[1],
                gray_b: s.gray_weights[2],
                zoom,
            },
            angle_deg,
            taps,
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"angle_deg": self.angle_deg, "taps": self.taps.len(),
               "mean": j32(self.params.mean), "threshold": j32(self.params.threshold)})
    }
}

/// Snow stage 1 at crop cell `i`: mean + std · N(0, 1).
#[inline]
pub(crate) fn snow_noise(p: &SnowParams, i: u32) -> f32 {
    let key = Key { k0: p.k0, k1: p.k1 };
    p.mean + p.std * key.normal(SNOW_NOISE, i)
}

/// Snow stage 2 at zoomed (x, y): bilinear zoom of the noise, thresholded, clipped.
#[inline]
#[cfg(test)]
pub(crate) fn snow_zoomed(p: &SnowParams, noise: &[f32], x: u32, y: u32) -> f32 {
    let l = &p.zoom;
    let v = crate::corrupt::blur::zoom_sample(l, x, y, |sx, sy| {
        noise[((sy - l.top) * l.crop_w + (sx - l.left)) as usize]
    });
    if v < p.threshold {
        0.0
    } else {
        v.clamp(0.0, 1.0)
    }
}

/// Snow stage 3 at image (x, y): the motion-blurred layer quantised to 0..255.
#[inline]
#[cfg(test)]
pub(crate) fn snow_layer(p: &SnowParams, taps: &[Tap], zoomed: &[f32], x: u32, y: u32) -> u32 {
    let v = gather(
        taps,
        x as i32,
        y as i32,
        p.zoom_w as i32,
        p.zoom_h as i32,
        |j| zoomed[j],
    );
    (v * 255.0).round_ties_even().clamp(0.0, 255.0) as u32
}

/// Snow stage 3 for the whole image: `snow_layer` (the per-pixel reference the tests compare with)
/// at every pixel, computed tap by tap over whole rows (each pixel gets the same additions in the
/// same order), rows in parallel.
pub(crate) fn snow_layer_rows(p: &SnowParams, taps: &[Tap], zoomed: &[f32]) -> Vec<u32> {
    let (w, zw, zh) = (p.width as usize, p.zoom_w as usize, p.zoom_h as i64);
    let mut layer = vec![0u32; w * p.height as usize];
    layer.par_chunks_mut(w).enumerate().for_each(|(y, out)| {
        let mut acc = vec![0.0f32; w];
        for t in taps {
            let sy = (y as i64 + i64::from(t.dy)).clamp(0, zh - 1) as usize;
            add_shifted(&mut acc, &zoomed[sy * zw..(sy + 1) * zw], 1, t.dx, t.w);
        }
        for (o, v) in out.iter_mut().zip(&acc) {
            *o = (v * 255.0).round_ties_even().clamp(0.0, 255.0) as u32;
        }
    });
    layer
}

/// Snow stage 4: whiten the pixel and add the layer and its 180° rotation.
#[inline]
pub(crate) fn snow_composite(p: &SnowParams, rgb: [u8; 3], l1: u32, l2: u32) -> [u8; 3] {
    let x = rgb.map(|v| f32::from(v) / 255.0);
    let gray = p.gray_r * x[0] + p.gray_g * x[1] + p.gray_b * x[2];
    let white = gray * p.whiten_scale + p.whiten_offset;
    let add = l1 as f32 / 255.0 + l2 as f32 / 255.0;
    x.map(|v| {
        let w = p.blend * v + (1.0 - p.blend) * v.max(white);
        to_u8((w + add).clamp(0.0, 1.0))
    })
}

/// The CPU twin of the four snow kernels, each stage one element per kernel invocation, the
/// elements of a stage in parallel.
pub(crate) fn snow_cpu(img: &RgbImage, plan: &SnowPlan) -> RgbImage {
    let p = &plan.params;
    let cells = p.zoom.crop_w * p.zoom.crop_h;
    let noise: Vec<f32> = (0..cells)
        .into_par_iter()
        .map(|i| snow_noise(p, i))
        .collect();
    let zoomed = snow_zoomed_rows(p, &noise);
    let (w, h) = (p.width as usize, p.height as usize);
    let layer = snow_layer_rows(p, &plan.taps, &zoomed);
    let mut out = img.clone();
    if w == 0 {
        return out;
    }
    out.par_chunks_mut(w * 3).enumerate().for_each(|(y, row)| {
        // The 180° rotation of row y is row h − 1 − y read backwards.
        let own = &layer[y * w..(y + 1) * w];
        let rot = &layer[(h - 1 - y) * w..(h - y) * w];
        for (x, px) in row.chunks_exact_mut(3).enumerate() {
            let v = snow_composite(p, [px[0], px[1], px[2]], own[x], rot[w - 1 - x]);
            px.copy_from_slice(&v);
        }
    });
    out
}

/// Snow stage 2 for the whole zoomed layer: `snow_zoomed` (the per-element reference the tests
/// compare with) at every element, with the column half of each bilinear sample worked out once per
/// column and the row half once per row (the same arithmetic in the same order), rows in parallel.
fn snow_zoomed_rows(p: &SnowParams, noise: &[f32]) -> Vec<f32> {
    let l = &p.zoom;
    let (zw, zh) = (p.zoom_w as usize, p.zoom_h as usize);
    let mut zoomed = vec![0.0f32; zw * zh];
    if zw == 0 || l.crop_w == 0 || l.crop_h == 0 {
        return zoomed;
    }
    let cols: Vec<(usize, usize, f32)> = (0..p.zoom_w)
        .map(|x| {
            let sx = x as f32 * l.ratio_x;
            let x0 = (sx.floor() as u32).min(l.crop_w - 1);
            let x1 = (x0 + 1).min(l.crop_w - 1);
            (x0 as usize, x1 as usize, sx - x0 as f32)
        })
        .collect();
    let cw = l.crop_w as usize;
    zoomed.par_chunks_mut(zw).enumerate().for_each(|(y, out)| {
        let sy = y as f32 * l.ratio_y;
        let y0 = (sy.floor() as u32).min(l.crop_h - 1);
        let y1 = (y0 + 1).min(l.crop_h - 1);
        let fy = sy - y0 as f32;
        let r0 = &noise[y0 as usize * cw..][..cw];
        let r1 = &noise[y1 as usize * cw..][..cw];
        for (o, &(x0, x1, fx)) in out.iter_mut().zip(&cols) {
            let (a, b, c, d) = (r0[x0], r0[x1], r1[x0], r1[x1]);
            let top = a + (b - a) * fx;
            let bot = c + (d - c) * fx;
            let v = top + (bot - top) * fy;
            *o = if v < p.threshold {
                0.0
            } else {
                v.clamp(0.0, 1.0)
            };
        }
    });
    zoomed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corrupt::config::test_config as cfg;

    /// Snow's noise and zoomed layer, element by element as the kernels compute them.
    fn snow_stages_by_element(plan: &SnowPlan) -> (Vec<f32>, Vec<f32>) {
        let p = &plan.params;
        let cells = p.zoom.crop_w * p.zoom.crop_h;
        let noise: Vec<f32> = (0..cells).map(|i| snow_noise(p, i)).collect();
        let zoomed = (0..p.zoom_w * p.zoom_h)
            .map(|i| snow_zoomed(p, &noise, i % p.zoom_w, i / p.zoom_w))
            .collect();
        (noise, zoomed)
    }

    #[test]
    fn the_row_wise_snow_zoom_equals_the_per_element_one() {
        for (sev, (w, h)) in [(1, (97, 61)), (3, (160, 90)), (5, (40, 200)), (2, (1, 3))] {
            let plan = SnowPlan::new(&cfg(), sev, Key::new(2, "z", 1, sev), w, h);
            let (noise, want) = snow_stages_by_element(&plan);
            let got = snow_zoomed_rows(&plan.params, &noise);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{w}×{h}"
            );
        }
    }

    #[test]
    fn the_row_wise_snow_layer_equals_the_per_pixel_one() {
        for (sev, (w, h)) in [(1, (97, 61)), (3, (160, 90)), (5, (40, 200))] {
            let plan = SnowPlan::new(&cfg(), sev, Key::new(0, "x", 1, sev), w, h);
            let p = &plan.params;
            let (_, zoomed) = snow_stages_by_element(&plan);
            let want: Vec<u32> = (0..w * h)
                .map(|i| snow_layer(p, &plan.taps, &zoomed, i % w, i / w))
                .collect();
            assert!(
                want.iter().any(|&v| v > 0),
                "severity {sev}: no snow to compare"
            );
            assert_eq!(
                snow_layer_rows(p, &plan.taps, &zoomed),
                want,
                "severity {sev}"
            );
        }
    }

    #[test]
    fn snow_whitens_and_adds_flakes() {
        let c = cfg();
        let plan = SnowPlan::new(&c, 4, Key::new(0, "s", 2, 4), 120, 80);
        assert!(plan.angle_deg >= -135.0 && plan.angle_deg < -45.0);
        assert_eq!(plan.taps.len(), 25);
        let img = RgbImage::from_pixel(120, 80, image::Rgb([0, 0, 0]));
        let out = snow_cpu(&img, &plan);
        // Black whitens to (1 − β)·0.5 = 0.175 → 44 (truncated), flakes add on top.
        assert!(out.pixels().all(|p| p.0[0] >= 44));
        assert!(out.pixels().any(|p| p.0[0] > 60));
    }
}
