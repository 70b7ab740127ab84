//! Lens occlusions and sensor failures: Water Splash, Lens Obstacle, Camera Crash, Frame Lost.
//!
//! The random shapes (discs, ellipse) and the view choices are drawn on the host from the
//! counter-based generator and returned as metadata. Shapes are handed to the kernels in an
//! exact form (integer disc tests; the ellipse as one inside span per row, solved on the host)
//! so that the GPU and the CPU twin agree on every pixel of a shape's edge.

use image::RgbImage;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::blur::{gaussian_blur_f32, gaussian_blur_rows, gaussian_weights, round_row};
use super::config::CorruptConfig;
use super::rng::Key;
use super::sev_index;

/// Streams of the occlusion draws.
pub(crate) const VIEWS_COUNT: u32 = 0x0600;
pub(crate) const VIEWS_PICK: u32 = 0x0601;
pub(crate) const SPLASH_R: u32 = 0x0610;
pub(crate) const SPLASH_X: u32 = 0x0611;
pub(crate) const SPLASH_Y: u32 = 0x0612;
pub(crate) const LENS_CX: u32 = 0x0620;
pub(crate) const LENS_CY: u32 = 0x0621;
pub(crate) const LENS_A: u32 = 0x0622;
pub(crate) const LENS_B: u32 = 0x0623;
pub(crate) const LENS_ANGLE: u32 = 0x0624;
pub(crate) const CRASH_DRAW: u32 = 0x0630;
pub(crate) const LOST_DRAW: u32 = 0x0640;

/// The views of a frame that a view-selective corruption touches: the front view (index
/// `front`) and `extra` (uniform in [lo, hi], at most the other views) distinct others.
pub(crate) fn select_views(key: Key, n_views: usize, front: usize, extra: [u32; 2]) -> Vec<usize> {
    if n_views == 0 {
        return Vec::new();
    }
    let mut others: Vec<usize> = (0..n_views).filter(|v| *v != front).collect();
    let k = (key.int_incl(VIEWS_COUNT, 0, i64::from(extra[0]), i64::from(extra[1])) as usize)
        .min(others.len());
    // Partial Fisher–Yates, one draw per pick.
    for i in 0..k {
        let j = key.int_incl(VIEWS_PICK, i as u32, i as i64, others.len() as i64 - 1) as usize;
        others.swap(i, j);
    }
    let mut picked = vec![front];
    picked.extend_from_slice(&others[..k]);
    picked.sort_unstable();
    picked
}

/// The views Camera Crash blacks out: `draws` indices drawn with replacement, deduplicated.
pub(crate) fn crash_views(key: Key, n_views: usize, draws: u32) -> Vec<usize> {
    if n_views == 0 {
        return Vec::new();
    }
    let mut v: Vec<usize> = (0..draws)
        .map(|i| key.int_incl(CRASH_DRAW, i, 0, n_views as i64 - 1) as usize)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The views Frame Lost blacks out: each independently with probability `p`.
pub(crate) fn lost_views(key: Key, n_views: usize, p: f64) -> Vec<usize> {
    (0..n_views)
        .filter(|v| key.unit_f64(LOST_DRAW, *v as u32) < p)
        .collect()
}

/// One disc of Water Splash.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Disc {
    pub cx: i32,
    pub cy: i32,
    pub r: i32,
    #[serde(skip)]
    pub _pad: u32,
}

/// The uniform block of `corrupt_splash.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplashParams {
    pub width: u32,
    pub height: u32,
    pub n_discs: u32,
    pub alpha: f32,
}

/// One view's Water Splash: its discs (in drawing order) and the blur kernel.
#[derive(Debug, Clone)]
pub struct SplashPlan {
    pub params: SplashParams,
    pub discs: Vec<Disc>,
    pub kernel: u32,
    pub weights: Vec<f32>,
}

impl SplashPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let s = &cfg.water_splash;
        let i = sev_index(severity);
        let discs: Vec<Disc> = (0..s.drops[i])
            .map(|d| {
                let r = key.int_incl(
                    SPLASH_R,
                    d,
                    i64::from(s.radius_min[i]),
                    i64::from(s.radius_max[i]),
                );
                let cx = key.int_incl(
                    SPLASH_X,
                    d,
                    r.min(i64::from(width) - 1),
                    (i64::from(width) - r).max(0),
                );
                let cy = key.int_incl(
                    SPLASH_Y,
                    d,
                    r.min(i64::from(height) - 1),
                    (i64::from(height) - r).max(0),
                );
                Disc {
                    cx: cx as i32,
                    cy: cy as i32,
                    r: r as i32,
                    _pad: 0,
                }
            })
            .collect();
        SplashPlan {
            params: SplashParams {
                width,
                height,
                n_discs: discs.len() as u32,
                alpha: s.alpha,
            },
            discs,
            kernel: s.kernel[i],
            weights: gaussian_weights(s.kernel[i]),
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"discs": self.discs, "kernel": self.kernel, "alpha": super::j32(self.params.alpha)})
    }
}

/// The disc blend of one channel value at (x, y): each covering disc, in order, blends white
/// in at `alpha` and rounds (OpenCV's addWeighted into uint8).
#[cfg(test)]
#[inline]
pub(crate) fn splash_value(p: &SplashParams, discs: &[Disc], v: u8, x: i32, y: i32) -> u8 {
    let mut v = f32::from(v);
    for d in discs {
        let (dx, dy) = (x - d.cx, y - d.cy);
        if dx * dx + dy * dy <= d.r * d.r {
            v = (p.alpha * 255.0 + (1.0 - p.alpha) * v).round_ties_even();
        }
    }
    v as u8
}

/// The CPU twin of `corrupt_splash.wgsl` followed by the Gaussian passes. The discs are blended row
/// by row over the columns each covers (the x with dx² ≤ r² − dy², an integer square root away from
/// its centre), in disc order: per value the blends of `splash_value` (the scalar reference the
/// tests compare with), in its order, without testing every disc at every value.
pub(crate) fn splash_cpu(img: &RgbImage, plan: &SplashPlan) -> RgbImage {
    let w = img.width() as usize;
    let mut src: Vec<f32> = img.as_raw().iter().map(|&v| f32::from(v)).collect();
    if w > 0 {
        let alpha = plan.params.alpha;
        src.par_chunks_mut(w * 3).enumerate().for_each(|(y, row)| {
            for d in &plan.discs {
                let Some((x0, x1)) = disc_span(d, y as i64, w) else {
                    continue;
                };
                for v in &mut row[x0 * 3..(x1 + 1) * 3] {
                    *v = (alpha * 255.0 + (1.0 - alpha) * *v).round_ties_even();
                }
            }
        });
    }
    let blurred = gaussian_blur_f32(&src, img.width(), img.height(), &plan.weights);
    let mut out = img.clone();
    out.par_chunks_mut(1 << 15)
        .zip(blurred.par_chunks(1 << 15))
        .for_each(|(o, b)| round_row(o, b));
    out
}

/// The first and last column of a `w`-wide row `y` that disc `d` covers (dx² + dy² ≤ r², as
/// `splash_value` tests it), if any.
fn disc_span(d: &Disc, y: i64, w: usize) -> Option<(usize, usize)> {
    let dy = y - i64::from(d.cy);
    let rem = i64::from(d.r) * i64::from(d.r) - dy * dy;
    if d.r < 0 || rem < 0 {
        return None;
    }
    let k = rem.isqrt();
    let lo = (i64::from(d.cx) - k).max(0);
    let hi = (i64::from(d.cx) + k).min(w as i64 - 1);
    (lo <= hi).then_some((lo as usize, hi as usize))
}

/// One view's Lens Obstacle: the ellipse drawn, its inside span per row, the blur kernel.
#[derive(Debug, Clone)]
pub struct LensPlan {
    pub cx: i32,
    pub cy: i32,
    pub a: i32,
    pub b: i32,
    pub angle_deg: i32,
    /// Per row: the first and last inside column (first > last: none).
    pub spans: Vec<[i32; 2]>,
    pub kernel: u32,
    pub weights: Vec<f32>,
}

/// Inside spans of the filled ellipse centred (cx, cy) with semi-axes (a, b) rotated by
/// `angle_deg` (clockwise on screen, y down, as OpenCV draws it), one per row of `height`,
/// clipped to `width`.
pub(crate) fn ellipse_spans(
    cx: i32,
    cy: i32,
    a: i32,
    b: i32,
    angle_deg: f64,
    width: u32,
    height: u32,
) -> Vec<[i32; 2]> {
    let none = [1, 0];
    if a <= 0 || b <= 0 {
        return vec![none; height as usize];
    }
    let (s, c) = angle_deg.to_radians().sin_cos();
    let (a2, b2) = (f64::from(a) * f64::from(a), f64::from(b) * f64::from(b));
    // u = dx c + dy s, v = −dx s + dy c; (u/a)² + (v/b)² ≤ 1 is A dx² + B dx + C ≤ 0.
    let qa = c * c / a2 + s * s / b2;
    (0..height as i32)
        .map(|y| {
            let dy = f64::from(y - cy);
            let qb = 2.0 * dy * (c * s / a2 - s * c / b2);
            let qc = dy * dy * (s * s / a2 + c * c / b2) - 1.0;
            let disc = qb * qb - 4.0 * qa * qc;
            if disc < 0.0 {
                return none;
            }
            let r = disc.sqrt();
            let x0 = (f64::from(cx) + (-qb - r) / (2.0 * qa)).ceil().max(0.0);
            let x1 = (f64::from(cx) + (-qb + r) / (2.0 * qa))
                .floor()
                .min(f64::from(width) - 1.0);
            if x0 > x1 {
                none
            } else {
                [x0 as i32, x1 as i32]
            }
        })
        .collect()
}

impl LensPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let l = &cfg.lens_obstacle;
        let i = sev_index(severity);
        let (wf, hf) = (f64::from(width), f64::from(height));
        let cx = (wf / 2.0 + l.centre_std[i] * wf * key.normal_f64(LENS_CX, 0)).clamp(0.0, wf - 1.0)
            as i32;
        let cy = (hf / 2.0 + l.centre_std[i] * hf * key.normal_f64(LENS_CY, 0)).clamp(0.0, hf - 1.0)
            as i32;
        let a = (key.uniform(LENS_A, 0, l.min_axis, l.max_axis[i]) * wf).floor() as i32;
        let b = (key.uniform(LENS_B, 0, l.min_axis, l.max_axis[i]) * hf).floor() as i32;
        let angle_deg = key.int_incl(LENS_ANGLE, 0, 0, 360) as i32;
        LensPlan {
            cx,
            cy,
            a,
            b,
            angle_deg,
            spans: ellipse_spans(cx, cy, a, b, f64::from(angle_deg), width, height),
            kernel: l.kernel[i],
            weights: gaussian_weights(l.kernel[i]),
        }
    }

    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({"cx": self.cx, "cy": self.cy, "a": self.a, "b": self.b,
               "angle_deg": self.angle_deg, "kernel": self.kernel})
    }
}

/// The CPU twin of the lens kernels: blurred inside the ellipse, the original outside.
pub(crate) fn lens_cpu(img: &RgbImage, plan: &LensPlan) -> RgbImage {
    let src: Vec<f32> = img.as_raw().iter().map(|v| f32::from(*v)).collect();
    // Only the rows the ellipse crosses are blurred: the rest of the image is kept as it is.
    let mut inside = plan.spans.iter().enumerate().filter(|(_, [a, b])| a <= b);
    let first = inside.next().map_or(0, |(y, _)| y as u32);
    let last = inside.next_back().map_or(first + 1, |(y, _)| y as u32 + 1);
    let blurred = gaussian_blur_rows(&src, img.width(), img.height(), &plan.weights, first..last);
    let w = img.width() as i32;
    let stride = img.width() as usize * 3;
    let mut out = img.clone();
    if stride == 0 {
        return out;
    }
    // Row by row, the span's columns (clipped to the image) take the blurred values.
    for (y, row) in out.chunks_exact_mut(stride).enumerate() {
        let [x0, x1] = plan.spans[y];
        let (a, b) = (x0.max(0), x1.min(w - 1));
        if a > b {
            continue;
        }
        let cols = a as usize * 3..(b as usize + 1) * 3;
        let from = &blurred[y * stride..][..stride];
        round_row(&mut row[cols.clone()], &from[cols]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_choices() {
        for s in 0..200u64 {
            let key = Key::new(s, "frame", 5, 4);
            let v = select_views(key, 6, 0, [1, 5]);
            assert!(v.contains(&0) && (2..=6).contains(&v.len()));
            let mut d = v.clone();
            d.dedup();
            assert_eq!(d, v);
            let c = crash_views(key, 6, 4);
            assert!((1..=4).contains(&c.len()) && c.iter().all(|i| *i < 6));
        }
        assert!(lost_views(Key::new(0, "f", 8, 5), 6, 1.0).len() == 6);
        assert!(lost_views(Key::new(0, "f", 8, 5), 6, 0.0).is_empty());
    }

    #[test]
    fn lens_takes_the_blur_exactly_on_the_ellipse() {
        let cfg = crate::corrupt::config::test_config();
        let (w, h) = (61u32, 40u32);
        let img = RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x * 5) as u8, (y * 9) as u8, ((x * y) % 251) as u8])
        });
        for s in 0..30u64 {
            let sev = 1 + (s % 5) as u8;
            let plan = LensPlan::new(&cfg, sev, Key::new(s, "lens", 9, sev), w, h);
            let src: Vec<f32> = img.as_raw().iter().map(|v| f32::from(*v)).collect();
            let blurred = gaussian_blur_rows(&src, w, h, &plan.weights, 0..h);
            let out = lens_cpu(&img, &plan);
            for (i, (o, x)) in out.as_raw().iter().zip(img.as_raw()).enumerate() {
                let px = (i / 3) as i32;
                let [x0, x1] = plan.spans[(px / w as i32) as usize];
                let inside = (x0..=x1).contains(&(px % w as i32));
                let want = if inside {
                    crate::corrupt::blur::round_u8(blurred[i])
                } else {
                    *x
                };
                assert_eq!(*o, want, "seed {s}, value {i}");
            }
        }
    }

    #[test]
    fn the_row_spans_of_the_discs_equal_the_per_value_test() {
        let (w, h) = (37u32, 23u32);
        let img = RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x * 7) as u8, (y * 11) as u8, 200])
        });
        let mut state = 12345u32;
        let mut next = |m: i32| {
            state = crate::corrupt::rng::mix32(state.wrapping_add(0x9e37_79b9));
            (state % m as u32) as i32
        };
        for round in 0..50 {
            let discs: Vec<Disc> = (0..1 + round % 7)
                .map(|_| Disc {
                    cx: next(60) - 10,
                    cy: next(45) - 10,
                    r: next(30),
                    _pad: 0,
                })
                .collect();
            let params = SplashParams {
                width: w,
                height: h,
                n_discs: discs.len() as u32,
                alpha: (1 + next(99)) as f32 / 100.0,
            };
            let plan = SplashPlan {
                params,
                discs: discs.clone(),
                kernel: 1,
                weights: vec![1.0],
            };
            let got = splash_cpu(&img, &plan);
            let want: Vec<u8> = img
                .as_raw()
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let px = (i / 3) as i32;
                    splash_value(&params, &discs, v, px % w as i32, px / w as i32)
                })
                .collect();
            assert_eq!(got.as_raw(), &want, "round {round}");
        }
    }

    #[test]
    fn ellipse_spans_by_hand() {
        // Axis-aligned circle of radius 3 at (5, 5): row 5 spans 2..8, row 2 is the single 5.
        let s = ellipse_spans(5, 5, 3, 3, 0.0, 20, 12);
        assert_eq!(s[5], [2, 8]);
        assert_eq!(s[2], [5, 5]);
        assert!(s[1][0] > s[1][1]);
        // Rotating a circle changes nothing; a 90° ellipse swaps its axes.
        assert_eq!(ellipse_spans(5, 5, 3, 3, 37.0, 20, 12)[5], [2, 8]);
        assert_eq!(ellipse_spans(10, 6, 1, 4, 90.0, 20, 12)[6], [6, 14]);
    }

    #[test]
    fn splash_blend_by_hand() {
        let p = SplashParams {
            width: 10,
            height: 10,
            n_discs: 2,
            alpha: 0.2,
        };
        let d = Disc {
            cx: 5,
            cy: 5,
            r: 2,
            _pad: 0,
        };
        // 0 → 51 → round(0.8·51 + 51) = round(91.8) = 92.
        assert_eq!(splash_value(&p, &[d, d], 0, 5, 5), 92);
        assert_eq!(splash_value(&p, &[d, d], 0, 0, 0), 0);
    }
}
