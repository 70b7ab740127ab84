//! Weather: Snow (imagecorruptions' snow layer), Fog (diamond-square plasma fractal) and Rain
//! (DriveBench's streak rasteriser).
//!
//! Every stage here has a kernel of the same name in `kernels/corrupt_*.wgsl`; the f32
//! arithmetic is written in the same order on both sides.

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::blur::{add_shifted, gather, motion_taps, reflect101, Tap, ZoomLayer};
use super::config::CorruptConfig;
use super::rng::Key;
use super::{j32, sev_index, to_u8};

/// Streams of the weather draws.
pub const SNOW_NOISE: u32 = 0x0300;
pub const SNOW_ANGLE: u32 = 0x0301;
pub const FOG_NODE: u32 = 0x0400;
pub const RAIN_SLANT: u32 = 0x0500;
pub const RAIN_X: u32 = 0x0501;
pub const RAIN_Y: u32 = 0x0502;

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

    pub fn to_json(&self) -> serde_json::Value {
        json!({"angle_deg": self.angle_deg, "taps": self.taps.len(),
               "mean": j32(self.params.mean), "threshold": j32(self.params.threshold)})
    }
}

/// Snow stage 1 at crop cell `i`: mean + std · N(0, 1).
#[inline]
pub fn snow_noise(p: &SnowParams, i: u32) -> f32 {
    let key = Key { k0: p.k0, k1: p.k1 };
    p.mean + p.std * key.normal(SNOW_NOISE, i)
}

/// Snow stage 2 at zoomed (x, y): bilinear zoom of the noise, thresholded, clipped.
#[inline]
pub fn snow_zoomed(p: &SnowParams, noise: &[f32], x: u32, y: u32) -> f32 {
    let l = &p.zoom;
    let v = super::blur::zoom_sample(l, x, y, |sx, sy| {
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
pub fn snow_layer(p: &SnowParams, taps: &[Tap], zoomed: &[f32], x: u32, y: u32) -> u32 {
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

/// Snow stage 3 for the whole image: [`snow_layer`] at every pixel, computed tap by tap over
/// whole rows (each pixel gets the same additions in the same order), rows in parallel.
pub fn snow_layer_rows(p: &SnowParams, taps: &[Tap], zoomed: &[f32]) -> Vec<u32> {
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
pub fn snow_composite(p: &SnowParams, rgb: [u8; 3], l1: u32, l2: u32) -> [u8; 3] {
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
pub fn snow_cpu(img: &RgbImage, plan: &SnowPlan) -> RgbImage {
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

/// Snow stage 2 for the whole zoomed layer: [`snow_zoomed`] at every element, with the
/// column half of each bilinear sample worked out once per column and the row half once per
/// row (the same arithmetic in the same order), rows in parallel.
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

/// The uniform block of the fog level kernel.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FogLevel {
    pub k0: u32,
    pub k1: u32,
    /// Side of the square map (a power of two).
    pub size: u32,
    pub step: u32,
    pub wibble: f32,
    /// 0: squares step; 1: diamonds step.
    pub phase: u32,
    pub _pad: [u32; 2],
}

/// One image's Fog: the map size, the per-level amplitudes and the strength.
#[derive(Debug, Clone)]
pub struct FogPlan {
    pub size: u32,
    pub levels: Vec<FogLevel>,
    pub strength: f32,
    pub decay: f64,
}

impl FogPlan {
    pub fn new(cfg: &CorruptConfig, severity: u8, key: Key, width: u32, height: u32) -> Self {
        let f = &cfg.fog;
        let i = sev_index(severity);
        let size = width.max(height).max(3).next_power_of_two();
        let mut levels = Vec::new();
        let (mut step, mut w) = (size, f.initial_wibble);
        while step >= 2 {
            for phase in 0..2 {
                levels.push(FogLevel {
                    k0: key.k0,
                    k1: key.k1,
                    size,
                    step,
                    wibble: w as f32,
                    phase,
                    _pad: [0; 2],
                });
            }
            step /= 2;
            w /= f.decay[i];
        }
        FogPlan {
            size,
            levels,
            strength: f.strength[i],
            decay: f.decay[i],
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({"map_size": self.size, "strength": j32(self.strength), "decay": self.decay})
    }
}

/// The node noise w · U(−w, w) at flat map index `idx`.
#[inline]
fn fog_noise(l: &FogLevel, idx: u32) -> f32 {
    let key = Key { k0: l.k0, k1: l.k1 };
    let u = key.unit(FOG_NODE, idx);
    l.wibble * (l.wibble * (2.0 * u - 1.0))
}

/// One fog dispatch element: element `t` of the squares (phase 0) or diamonds (phase 1)
/// step; writes one node (squares) or two (diamonds) of `map`.
pub fn fog_level_element(l: &FogLevel, map: &mut [f32], t: u32) {
    let n = l.size / l.step;
    let (i, j) = (t / n, t % n);
    let (s, h) = (l.step, l.step / 2);
    let at = |y: u32, x: u32| (y * l.size + x) as usize;
    if l.phase == 0 {
        let (i1, j1) = ((i + 1) % n, (j + 1) % n);
        let sum = (map[at(i * s, j * s)] + map[at(i1 * s, j * s)])
            + (map[at(i * s, j1 * s)] + map[at(i1 * s, j1 * s)]);
        let idx = at(i * s + h, j * s + h);
        map[idx] = sum / 4.0 + fog_noise(l, idx as u32);
    } else {
        let (ip, jp) = ((i + n - 1) % n, (j + n - 1) % n);
        let (i1, j1) = ((i + 1) % n, (j + 1) % n);
        let dr = |a: u32, b: u32| map[at(a * s + h, b * s + h)];
        let ul = |a: u32, b: u32| map[at(a * s, b * s)];
        let top = (dr(i, j) + dr(ip, j)) + (ul(i, j) + ul(i, j1));
        let left = (dr(i, j) + dr(i, jp)) + (ul(i, j) + ul(i1, j));
        let a = at(i * s, j * s + h);
        let b = at(i * s + h, j * s);
        map[a] = top / 4.0 + fog_noise(l, a as u32);
        map[b] = left / 4.0 + fog_noise(l, b as u32);
    }
}

/// The plasma fractal of `plan` (before normalisation) and its (min, max): every node the
/// value [`fog_level_element`] gives it. A step's squares write the centre nodes from the
/// corner nodes; its diamonds write the other midpoints from the centre and corner nodes, and
/// no diamond reads another. So a centre row's squares and diamonds need only the corner rows
/// on either side and run as one pass, and a corner row's diamonds need only the centre rows
/// on either side: two passes per step, each over rows in parallel, with the values of the
/// element-by-element order. The last step (stride 2) finishes every row it passes over, so
/// it takes the range there, while the row is still in cache.
pub fn fog_map_cpu(plan: &FogPlan) -> (Vec<f32>, (f32, f32)) {
    let mut map = vec![0.0f32; (plan.size * plan.size) as usize];
    let mut range = EMPTY_RANGE;
    for step in plan.levels.chunks(2) {
        range = fog_step_rows(step, &mut map);
    }
    (map, range)
}

const EMPTY_RANGE: (f32, f32) = (f32::INFINITY, f32::NEG_INFINITY);

/// `r` widened by the values of `v`, in eight lanes (one long chain of `min`s would wait on
/// each comparison in turn; min and max give the same result in any order).
fn widen(r: (f32, f32), v: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([r.0; 8], [r.1; 8]);
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            lo[k] = lo[k].min(c[k]);
            hi[k] = hi[k].max(c[k]);
        }
    }
    let r = chunks
        .remainder()
        .iter()
        .fold(r, |(l, h), &x| (l.min(x), h.max(x)));
    (0..8).fold(r, |(l, h), k| (l.min(lo[k]), h.max(hi[k])))
}

fn join(a: (f32, f32), b: (f32, f32)) -> (f32, f32) {
    (a.0.min(b.0), a.1.max(b.1))
}

/// One step of [`fog_map_cpu`]: its squares level and its diamonds level. At stride 2 it
/// returns the range of the finished map ([`EMPTY_RANGE`] at other strides).
fn fog_step_rows(levels: &[FogLevel], map: &mut [f32]) -> (f32, f32) {
    let Some(l) = levels.first() else {
        return EMPTY_RANGE;
    };
    debug_assert!(levels.iter().enumerate().all(|(p, x)| x.phase as usize == p
        && (x.k0, x.k1, x.step, x.wibble.to_bits()) == (l.k0, l.k1, l.step, l.wibble.to_bits())));
    let size = l.size as usize;
    let (s, h) = (l.step as usize, l.step as usize / 2);
    if size == 0 || h == 0 {
        return EMPTY_RANGE;
    }
    let last = s == 2 && levels.len() > 1;
    let n = size / s;
    let (mut corners, mut centres): (Vec<&mut [f32]>, Vec<&mut [f32]>) = (Vec::new(), Vec::new());
    for (y, row) in map.chunks_mut(size).enumerate() {
        if y % s == 0 {
            corners.push(row);
        } else if y % s == h {
            centres.push(row);
        }
    }
    // fog_noise with the stream's part of the hash computed once per step, a row's draws
    // into a buffer first (a loop the compiler vectorises), then the row's sums. The loops
    // gather what they read at stride `s` into short buffers, so the sums run over plain
    // slices with no wrap test or bounds check per node; the additions keep the element's
    // order, so the bits are the same.
    let noise = Noise {
        stream: Key { k0: l.k0, k1: l.k1 }.stream(FOG_NODE),
        wibble: l.wibble,
        size,
    };
    let diamonds = levels.len() > 1;
    let centre_range = {
        let corners: Vec<&[f32]> = corners.iter().map(|r| &**r).collect();
        centres
            .par_iter_mut()
            .enumerate()
            .map_init(FogRowBufs::default, |b, (i, row)| {
                // Every node of the row at stride h: the diamonds at even k, the squares
                // at odd k.
                noise.row(&mut b.noise, i * s + h, 0, h, 2 * n);
                b.pairs.clear();
                b.pairs.extend(
                    corners[i]
                        .chunks_exact(s)
                        .zip(corners[(i + 1) % n].chunks_exact(s))
                        .map(|(a, c)| a[0] + c[0]),
                );
                let next = b.pairs[1..].iter().chain(&b.pairs[..1]);
                let odd = b.noise.iter().skip(1).step_by(2);
                for (((cell, &p0), &p1), &w) in
                    row.chunks_exact_mut(s).zip(&b.pairs).zip(next).zip(odd)
                {
                    cell[h] = (p0 + p1) / 4.0 + w;
                }
                if !diamonds {
                    return EMPTY_RANGE;
                }
                let mut prev = row[(n - 1) * s + h];
                let even = b.noise.iter().step_by(2);
                for ((cell, &p), &w) in row.chunks_exact_mut(s).zip(&b.pairs).zip(even) {
                    let m = cell[h];
                    cell[0] = ((m + prev) + p) / 4.0 + w;
                    prev = m;
                }
                if last {
                    widen(EMPTY_RANGE, row)
                } else {
                    EMPTY_RANGE
                }
            })
            .reduce(|| EMPTY_RANGE, join)
    };
    if !diamonds {
        return EMPTY_RANGE;
    }
    let centres: Vec<&[f32]> = centres.iter().map(|r| &**r).collect();
    let corner_range = corners
        .par_iter_mut()
        .enumerate()
        .map_init(FogRowBufs::default, |b, (i, row)| {
            noise.row(&mut b.noise, i * s, h, s, n);
            let ip = if i == 0 { n - 1 } else { i - 1 };
            b.pairs.clear();
            b.pairs.extend(
                centres[i]
                    .chunks_exact(s)
                    .zip(centres[ip].chunks_exact(s))
                    .map(|(a, c)| a[h] + c[h]),
            );
            b.nodes.clear();
            b.nodes.extend(row.chunks_exact(s).map(|c| c[0]));
            let next = b.nodes[1..].iter().chain(&b.nodes[..1]);
            for ((((cell, &m), &c0), &c1), &w) in row
                .chunks_exact_mut(s)
                .zip(&b.pairs)
                .zip(&b.nodes)
                .zip(next)
                .zip(&b.noise)
            {
                cell[h] = (m + (c0 + c1)) / 4.0 + w;
            }
            if last {
                widen(EMPTY_RANGE, row)
            } else {
                EMPTY_RANGE
            }
        })
        .reduce(|| EMPTY_RANGE, join);
    join(centre_range, corner_range)
}

/// One step's node noise: [`fog_noise`] with the stream's part of the hash done once.
#[derive(Clone, Copy)]
struct Noise {
    stream: u32,
    wibble: f32,
    size: usize,
}

impl Noise {
    /// The noise of `count` nodes of row `y` from column `x0` at stride `step`.
    fn row(self, buf: &mut Vec<f32>, y: usize, x0: usize, step: usize, count: usize) {
        buf.resize(count, 0.0);
        let base = (y * self.size + x0) as u32;
        fog_noise_row(buf, self.stream, self.wibble, base, step as u32);
    }
}

/// A worker's row buffers for [`fog_step_rows`]: the row's noise, its pair sums across
/// rows and the nodes it reads from itself.
#[derive(Default)]
struct FogRowBufs {
    noise: Vec<f32>,
    pairs: Vec<f32>,
    nodes: Vec<f32>,
}

crate::cpu::avx2_clone! {
    /// The node noise of [`fog_noise`] at flat indices `base + k·step` into `buf[k]`, from the
    /// stream part of the hash ([`Key::stream`]`(FOG_NODE)`). Integer hashing and the same f32
    /// operations in the same order, so wider vector instructions, where the CPU has them, give
    /// the same bits (no fused multiply-add is enabled).
    fn fog_noise_row(
        buf: &mut [f32],
        stream: u32,
        wibble: f32,
        base: u32,
        step: u32,
    ) = fog_noise_row_any;
}

#[inline(always)]
fn fog_noise_row_any(buf: &mut [f32], stream: u32, wibble: f32, base: u32, step: u32) {
    for (k, b) in buf.iter_mut().enumerate() {
        let idx = base.wrapping_add((k as u32).wrapping_mul(step));
        let u = super::rng::unit24(Key::draw(stream, super::rng::mix32(idx)));
        *b = wibble * (wibble * (2.0 * u - 1.0));
    }
}

/// The composite of one channel: (x + a·F)·M/(M + a), clipped and truncated.
#[inline]
pub fn fog_value(x: u8, f: f32, fmin: f32, fmax: f32, max: u8, a: f32) -> u8 {
    fog_value_norm(x, (f - fmin) / (fmax - fmin), max, a)
}

/// [`fog_value`] from the normalised map value (the same for the three channels of a pixel).
#[inline]
fn fog_value_norm(x: u8, fnorm: f32, max: u8, a: f32) -> u8 {
    let x = f32::from(x) / 255.0;
    let m = f32::from(max) / 255.0;
    let t = x + a * fnorm;
    to_u8((t * m / (m + a)).clamp(0.0, 1.0))
}

/// The CPU twin of the fog kernels: the map, its range, then the composite row by row.
pub fn fog_cpu(img: &RgbImage, plan: &FogPlan) -> RgbImage {
    let (map, (fmin, fmax)) = fog_map_cpu(plan);
    let max = img.as_raw().iter().copied().max().unwrap_or(0);
    let (w, size) = (img.width() as usize, plan.size as usize);
    let mut out = img.clone();
    if w == 0 {
        return out;
    }
    let c = Composite {
        fmin,
        span: fmax - fmin,
        max,
        a: plan.strength,
    };
    out.par_chunks_mut(w * 3)
        .enumerate()
        .for_each_init(Vec::new, |buf, (y, row)| {
            fog_composite_row(row, &map[y * size..y * size + w], buf, c);
        });
    out
}

/// What the composite of every row shares: the map's range (min, max − min), the image's
/// maximum and the strength.
#[derive(Clone, Copy)]
struct Composite {
    fmin: f32,
    span: f32,
    max: u8,
    a: f32,
}

crate::cpu::avx2_clone! {
    /// The composite of one image row from its map row, with [`fog_value_norm`]'s operations:
    /// the normalised map value is spread over its pixel's three channels first, so the loop is
    /// one operation per channel that vector instructions take eight at a time where the CPU has
    /// them (the same bits: no fused multiply-add is enabled).
    fn fog_composite_row(
        row: &mut [u8],
        map: &[f32],
        buf: &mut Vec<f32>,
        c: Composite,
    ) = fog_composite_row_any;
}

#[inline(always)]
fn fog_composite_row_any(row: &mut [u8], map: &[f32], buf: &mut Vec<f32>, c: Composite) {
    buf.clear();
    buf.extend(map.iter().flat_map(|&f| {
        let v = (f - c.fmin) / c.span;
        [v, v, v]
    }));
    for (v, &fnorm) in row.iter_mut().zip(buf.iter()) {
        *v = fog_value_norm(*v, fnorm, c.max, c.a);
    }
}

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

    pub fn to_json(&self) -> serde_json::Value {
        let p = &self.params;
        json!({"slant": p.slant, "drops": p.drops, "length": p.length, "contrast": j32(p.contrast)})
    }
}

/// Rasterises drop `d` (8-connected Bresenham, clipped to the image) into `put(x, y)`.
pub fn rain_drop(p: &RainParams, d: u32, mut put: impl FnMut(u32, u32)) {
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
pub fn rain_streak(v: u8, r: u32, mean_term: f32) -> u32 {
    if r == 0 {
        return u32::from(v);
    }
    let x = f32::from(v);
    let add = r as f32 * (1.0 - x / 255.0) * mean_term;
    ((x + add) as u32).min(255)
}

/// 1 − mean/255 from a u64 sum of `n` channel values split into (hi, lo) words.
#[inline]
pub fn mean_term(hi: u32, lo: u32, n: u32) -> f32 {
    let s = hi as f32 * 4_294_967_296.0 + lo as f32;
    1.0 - s / (n as f32 * 255.0)
}

/// The final contrast step on a blend value b255 = blend·255² (an integer).
#[inline]
pub fn rain_final(b255: u32, mu: f32, k: f32) -> u8 {
    let v = b255 as f32 / 65025.0;
    to_u8(((v - mu) * k + mu).clamp(0.0, 1.0))
}

/// Mean of a channel from its u64 sum of blend·255² values over `n` pixels.
#[inline]
pub fn rain_mu(hi: u32, lo: u32, n: u32) -> f32 {
    let s = hi as f32 * 4_294_967_296.0 + lo as f32;
    s / (n as f32 * 65025.0)
}

/// The CPU twin of the rain kernels. The 3×3 box sum of the streak layer is taken as a row
/// pass and a column pass (integer sums, so the same values as nine taps per pixel), rows in
/// parallel.
pub fn rain_cpu(img: &RgbImage, plan: &RainPlan) -> RgbImage {
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
    use crate::config::StageConfig;

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

    fn cfg() -> CorruptConfig {
        CorruptConfig::default_config().unwrap_or_else(|e| panic!("{e}"))
    }

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
    fn fog_rows_equal_the_elements_in_dispatch_order() {
        for (sev, w, h) in [(5, 50, 30), (1, 7, 300), (3, 129, 64), (4, 1, 1)] {
            let plan = FogPlan::new(&cfg(), sev, Key::new(9, "f", 1, 2), w, h);
            let mut want = vec![0.0f32; (plan.size * plan.size) as usize];
            for l in &plan.levels {
                let n = plan.size / l.step;
                for t in 0..n * n {
                    fog_level_element(l, &mut want, t);
                }
            }
            let (got, range) = fog_map_cpu(&plan);
            assert_eq!(range, widen(EMPTY_RANGE, &want), "{w}×{h}");
            assert!(
                want.iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{w}×{h}"
            );
        }
    }

    #[test]
    fn the_row_composite_equals_fog_value_per_channel() {
        let plan = FogPlan::new(&cfg(), 3, Key::new(4, "c", 2, 3), 61, 37);
        let img = RgbImage::from_fn(61, 37, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 6) as u8, ((x * y) % 251) as u8])
        });
        let (map, (fmin, fmax)) = fog_map_cpu(&plan);
        let max = img.as_raw().iter().copied().max().unwrap_or(0);
        let got = fog_cpu(&img, &plan);
        for (x, y, p) in got.enumerate_pixels() {
            let f = map[(y * plan.size + x) as usize];
            for c in 0..3 {
                let want = fog_value(img.get_pixel(x, y)[c], f, fmin, fmax, max, plan.strength);
                assert_eq!(p[c], want, "({x}, {y}) channel {c}");
            }
        }
    }

    #[test]
    fn fog_fills_every_node_and_normalises() {
        let plan = FogPlan::new(&cfg(), 5, Key::new(0, "x", 3, 5), 50, 30);
        assert_eq!(plan.size, 64);
        assert_eq!(plan.levels.len(), 12);
        let (map, _) = fog_map_cpu(&plan);
        // Node 0 is the only one never written; every other node got noise.
        assert!(map.iter().skip(1).all(|v| *v != 0.0));
        let img = RgbImage::from_pixel(50, 30, image::Rgb([200, 100, 0]));
        let out = fog_cpu(&img, &plan);
        // Fog lifts dark values and compresses by M / (M + a): red ≤ 200, blue > 0 somewhere.
        assert!(out.pixels().all(|p| p.0[0] <= 200));
        assert!(out.pixels().any(|p| p.0[2] > 0));
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
