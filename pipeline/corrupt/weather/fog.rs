//! Fog: the diamond-square plasma fractal of imagecorruptions, in the stages of the
//! `kernels/corrupt_fog_*.wgsl` kernels (one level per dispatch, the map's range, composite).

use image::RgbImage;
use rayon::prelude::*;
use serde_json::json;

use super::FOG_NODE;
use crate::corrupt::config::CorruptConfig;
use crate::corrupt::rng::Key;
use crate::corrupt::{j32, sev_index, to_u8};

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

    pub(crate) fn to_json(&self) -> serde_json::Value {
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
        let u = crate::corrupt::rng::unit24(Key::draw(stream, crate::corrupt::rng::mix32(idx)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corrupt::config::test_config as cfg;

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
}
