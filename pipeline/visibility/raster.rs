//! The z-buffer: the CPU reference rasteriser that the GPU kernel mirrors bit for bit.
//!
//! # Input
//!
//! Per camera image, a list of screen-space triangles ([`Tri`]): three vertices with `f32`
//! pixel coordinates (x right, y down, the image spans `[0, W] × [0, H]`, pixel `(i, j)` covers
//! `[i, i+1] × [j, j+1]`), the `f32` camera-frame depth `z` (m) of each vertex, and the index of
//! the object the triangle belongs to. The projection stage clips every triangle to the near
//! plane and to the image rectangle before it gets here.
//!
//! # Rules
//!
//! Everything that decides coverage or depth order is integer arithmetic or `f32` arithmetic
//! whose every product is exact, so the result does not depend on whether a compiler fuses a
//! multiply and an add (WGSL cannot forbid that) and needs no division. Triangle *setup*
//! ([`setup`]) runs once per triangle in `f64`/`i32` on the CPU; a GPU implementation uploads the
//! [`TriSetup`] records ([`bytemuck::Pod`]) and evaluates only the per-pixel rules below.
//!
//! 1. **Fixed point.** The image gets `S` sub-pixel bits ([`Grid::new`]): the largest
//!    `S ∈ 1..=8` with `(max(W, H) + 1) · 2^S ≤ 32767`, so 1600×900 uses `S = 4` (1/16 px).
//!    Images wider or taller than 16382 px are refused. A vertex coordinate `x` becomes
//!    `X = clamp(floor(x · 2^S + 0.5), 0, W · 2^S)` (an `f32` computation that is exact in this
//!    range), likewise `Y` with `H`. Non-finite coordinates, and depths outside `(0, 1e12]` m,
//!    drop the triangle; so does an object index `≥ num_objects`.
//! 2. **Orientation.** `A = (X1−X0)(Y2−Y0) − (Y1−Y0)(X2−X0)` (`i32`). `A = 0`: the triangle
//!    covers nothing. `A < 0`: vertices 1 and 2 are swapped, so `A > 0` afterwards.
//! 3. **Edge functions.** Edge `k` runs from vertex `a = (k+1) mod 3` to `b = (k+2) mod 3`;
//!    for a point `P`, `E_k(P) = (Xb−Xa)(Py−Ya) − (Yb−Ya)(Px−Xa)` in `i32` (never overflows:
//!    every coordinate and pixel centre lies in `[0, 32767]`).
//! 4. **Pixel centres.** Pixel `(i, j)` is sampled at its centre `(i + ½, j + ½)`, i.e.
//!    `Px = i·2^S + 2^(S−1)`, `Py = j·2^S + 2^(S−1)`.
//! 5. **Top-left fill rule.** Edge `k` with `dx = Xb−Xa`, `dy = Yb−Ya` is *top-left* when
//!    `dy < 0 || (dy == 0 && dx > 0)` (a left edge, or a horizontal top edge, in y-down pixel
//!    coordinates). Pixel `(i, j)` is covered when for all three edges `E_k > 0`, or `E_k == 0`
//!    and edge `k` is top-left. Two triangles sharing an edge (same fixed-point end points) never
//!    both cover a pixel centre on it, and one of them always does.
//! 6. **Bounding box.** Only pixels with
//!    `(minX + 2^(S−1) − 1) >> S ≤ i ≤ min(W−1, (maxX − 2^(S−1)) >> S)` (over the snapped
//!    vertices; arithmetic shifts) can be covered; likewise `j`. `(i0, j0)` is the low corner;
//!    a triangle whose range is empty covers nothing.
//! 7. **Depth.** Inverse depth `ω = 1/z` is affine in screen space, which is what
//!    perspective-correct interpolation of `1/z` with the barycentrics computes. Setup fits the
//!    plane through the three vertices as given, `(x_k, y_k, 1/z_k)`, in `f64` (the snapped ones
//!    only for a triangle too thin to fit a plane through): that is the surface's own plane, so
//!    rounding the vertices to the sub-pixel grid moves outlines by at most half a step but
//!    never the depth order of two surfaces (`tests/it/visibility_exact.rs` bounds what differs
//!    from ray casting to a few outline pixels per object). It evaluates it
//!    at the centre of pixel `(i0, j0)` (`w0`, rounded to `f32`; 0 if below `2^-100` in
//!    magnitude) and splits its per-pixel steps along i and j into high and low parts of at most
//!    10 significant bits each (`wi_hi`, `wi_lo`, `wj_hi`, `wj_lo`; parts below `2^-100` in
//!    magnitude become 0). At a covered pixel, with `di = f32(i − i0)` and `dj = f32(j − j0)`
//!    (both `< 2^14`, so every product below is exact in `f32`):
//!    `ω = (((w0 + wi_hi·di) + wj_hi·dj) + wi_lo·di) + wj_lo·dj`, four `f32` additions in exactly
//!    this order, each correctly rounded (IEEE; Vulkan requires it). No division, and fusing any
//!    multiply-add changes nothing because every product is exact. Every non-zero term is at
//!    least `2^-100` in magnitude, so no intermediate is subnormal (flushing them to zero, as
//!    GPUs may, changes nothing either).
//! 8. **Depth key.** `key = 0xFFFF_FFFF − bits(max(ω, f32::MIN_POSITIVE))`. Positive `f32` bit
//!    patterns order like the numbers, so a smaller key is a larger `ω`: a nearer surface.
//!    `0xFFFF_FFFF` ([`EMPTY`]) never occurs as a key and marks an empty pixel.
//! 9. **Z-test, pass 1.** Every pixel keeps the minimum key of all triangles covering it
//!    (`atomicMin` on `u32`).
//! 10. **Z-test, pass 2.** Every pixel keeps the smallest object index among the triangles that
//!     cover it with a key equal to the pixel's minimum (`atomicMin`): ties in depth go to the
//!     smaller object index. This is the instance-ID map; [`EMPTY`] where nothing is drawn.
//!     (A 64-bit `atomicMin` of `key << 32 | object` gives the same map in one pass.)
//!
//! # Per-object output
//!
//! * `projected_pixels`: pixels covered by at least one of the object's own triangles (the
//!   union, so a pixel under a front and a back face counts once), regardless of other objects.
//! * `visible_pixels`: pixels of the instance-ID map that hold the object.
//! * `modal`: `[x0, y0, x1, y1]` in pixel-edge coordinates of the visible pixels: `x0` the
//!   leftmost visible column, `x1` the rightmost plus one (likewise rows).
//! * `sum_i`, `sum_j`: sums of the visible pixels' column and row indices (for the centroid).

use rayon::prelude::*;

use crate::{Error, Result};

/// The instance-ID map's and the depth-key buffer's "nothing here" value.
pub const EMPTY: u32 = u32::MAX;

/// The largest width or height the fixed-point grid allows.
pub const MAX_SIDE: u32 = 16382;

/// Largest fixed-point coordinate (see rule 1).
const MAX_FIXED: u32 = 32767;

/// Vertices deeper than this (m) drop their triangle (rule 1).
pub const MAX_DEPTH: f32 = 1e12;

/// One screen-space triangle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tri {
    /// `(x, y)` of each vertex, pixels.
    pub p: [[f32; 2]; 3],
    /// Camera-frame depth of each vertex (m, > 0).
    pub z: [f32; 3],
    /// The object's index in this image.
    pub obj: u32,
}

/// The fixed-point grid of one image size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub width: u32,
    pub height: u32,
    /// Sub-pixel bits `S`.
    pub sub_bits: u32,
}

impl Grid {
    /// The grid of a `width × height` image (rule 1).
    pub fn new(width: u32, height: u32) -> Result<Self> {
        let m = width.max(height);
        if width == 0 || height == 0 || m > MAX_SIDE {
            return Err(Error::invalid(
                "image size",
                format!(
                    "cannot rasterise a {width}×{height} image: sides must be within \
                     1..={MAX_SIDE}"
                ),
            ));
        }
        let mut s = 1;
        while s < 8 && (m + 1) << (s + 1) <= MAX_FIXED {
            s += 1;
        }
        Ok(Self {
            width,
            height,
            sub_bits: s,
        })
    }

    /// `2^S`.
    pub fn scale(&self) -> i32 {
        1 << self.sub_bits
    }

    /// The fixed-point coordinate of the centre of pixel column (or row) `i`.
    pub fn centre(&self, i: u32) -> i32 {
        ((i as i32) << self.sub_bits) + (1 << (self.sub_bits - 1))
    }

    /// Rule 1: `clamp(floor(v · 2^S + 0.5), 0, max_px · 2^S)`.
    pub fn snap(&self, v: f32, max_px: u32) -> i32 {
        let hi = (max_px << self.sub_bits) as f32;
        let s = (v * self.scale() as f32 + 0.5).floor();
        s.clamp(0.0, hi) as i32
    }
}

/// A triangle after setup: what a GPU kernel receives (72 bytes, `u32`/`i32`/`f32` only).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TriSetup {
    /// Fixed-point vertices, oriented so that the doubled area is positive.
    pub x: [i32; 3],
    pub y: [i32; 3],
    /// Inclusive pixel bounding box (rule 6).
    pub i0: u32,
    pub j0: u32,
    pub i1: u32,
    pub j1: u32,
    /// `1/z` at the centre of pixel `(i0, j0)`.
    pub w0: f32,
    /// Its per-pixel step along i (high and low parts) and along j.
    pub wi_hi: f32,
    pub wi_lo: f32,
    pub wj_hi: f32,
    pub wj_lo: f32,
    pub obj: u32,
    /// Bit k set: edge k is top-left.
    pub top_left: u32,
    pub _pad: u32,
}

/// Rounds to at most 10 significant bits (ties away from zero); magnitudes below 2^-100 → 0.
fn round10(v: f64) -> f64 {
    if !v.is_finite() || v.abs() < 2f64.powi(-100) {
        return 0.0;
    }
    let e = v.abs().log2().floor() as i32;
    // Guard against log2 rounding at exact powers of two: fix e so that 2^e ≤ |v| < 2^(e+1).
    let e = if 2f64.powi(e) > v.abs() {
        e - 1
    } else if 2f64.powi(e + 1) <= v.abs() {
        e + 1
    } else {
        e
    };
    let q = 2f64.powi(e - 9);
    (v / q).round() * q
}

/// Splits `v` into `(hi, lo)`, each with at most 10 significant bits, `hi + lo ≈ v`.
fn split(v: f64) -> (f32, f32) {
    let hi = round10(v);
    let lo = round10(v - hi);
    (hi as f32, lo as f32)
}

/// Triangle setup (rules 1, 2, 5, 6, 7). `None` when the triangle covers no pixel centre or
/// its data is invalid.
pub fn setup(g: &Grid, t: &Tri) -> Option<TriSetup> {
    for k in 0..3 {
        let [x, y] = t.p[k];
        if !(x.is_finite() && y.is_finite() && t.z[k] > 0.0 && t.z[k] <= MAX_DEPTH) {
            return None;
        }
    }
    let mut xs = [0i32; 3];
    let mut ys = [0i32; 3];
    let mut ws = [0f64; 3];
    let mut exact = [[0f64; 2]; 3];
    for k in 0..3 {
        xs[k] = g.snap(t.p[k][0], g.width);
        ys[k] = g.snap(t.p[k][1], g.height);
        ws[k] = 1.0 / f64::from(t.z[k]);
        exact[k] = [f64::from(t.p[k][0]), f64::from(t.p[k][1])];
    }
    let area = (xs[1] - xs[0]) * (ys[2] - ys[0]) - (ys[1] - ys[0]) * (xs[2] - xs[0]);
    if area == 0 {
        return None;
    }
    if area < 0 {
        xs.swap(1, 2);
        ys.swap(1, 2);
        ws.swap(1, 2);
        exact.swap(1, 2);
    }
    let half = 1i32 << (g.sub_bits - 1);
    let (min_x, max_x) = (xs.iter().min()?, xs.iter().max()?);
    let (min_y, max_y) = (ys.iter().min()?, ys.iter().max()?);
    let i0 = (min_x + half - 1) >> g.sub_bits;
    let i1 = ((max_x - half) >> g.sub_bits).min(g.width as i32 - 1);
    let j0 = (min_y + half - 1) >> g.sub_bits;
    let j1 = ((max_y - half) >> g.sub_bits).min(g.height as i32 - 1);
    if i1 < i0 || j1 < j0 {
        return None;
    }
    let mut top_left = 0u32;
    for k in 0..3 {
        let (a, b) = ((k + 1) % 3, (k + 2) % 3);
        let (dx, dy) = (xs[b] - xs[a], ys[b] - ys[a]);
        if dy < 0 || (dy == 0 && dx > 0) {
            top_left |= 1 << k;
        }
    }
    // The inverse-depth plane through the vertices as given, not as snapped: it is the
    // surface's own plane, so the depth order of two close surfaces does not depend on how
    // their vertices happen to round to the sub-pixel grid (on a small or thin triangle a
    // snapped vertex tilts the plane). A triangle too thin to fit a plane through falls back
    // to the snapped vertices, whose area is not zero.
    let sc = f64::from(g.scale());
    let mut px = exact.map(|v| v[0]);
    let mut py = exact.map(|v| v[1]);
    let area_exact = (px[1] - px[0]) * (py[2] - py[0]) - (py[1] - py[0]) * (px[2] - px[0]);
    if area_exact.abs() < 1e-6 {
        px = xs.map(|v| f64::from(v) / sc);
        py = ys.map(|v| f64::from(v) / sc);
    }
    let (dx1, dy1, dw1) = (px[1] - px[0], py[1] - py[0], ws[1] - ws[0]);
    let (dx2, dy2, dw2) = (px[2] - px[0], py[2] - py[0], ws[2] - ws[0]);
    let d = dx1 * dy2 - dx2 * dy1;
    let alpha = (dw1 * dy2 - dw2 * dy1) / d;
    let beta = (dx1 * dw2 - dx2 * dw1) / d;
    let w0 = ws[0] + alpha * (f64::from(i0) + 0.5 - px[0]) + beta * (f64::from(j0) + 0.5 - py[0]);
    let (wi_hi, wi_lo) = split(alpha);
    let (wj_hi, wj_lo) = split(beta);
    let w0 = if w0.abs() < 2f64.powi(-100) {
        0.0
    } else {
        w0 as f32
    };
    if ![w0, wi_hi, wi_lo, wj_hi, wj_lo]
        .iter()
        .all(|v| v.is_finite())
    {
        return None;
    }
    Some(TriSetup {
        x: xs,
        y: ys,
        i0: i0 as u32,
        j0: j0 as u32,
        i1: i1 as u32,
        j1: j1 as u32,
        w0,
        wi_hi,
        wi_lo,
        wj_hi,
        wj_lo,
        obj: t.obj,
        top_left,
        _pad: 0,
    })
}

/// Edge function `E_k` at the fixed-point point `(px, py)` (rule 3).
#[inline]
pub fn edge(s: &TriSetup, k: usize, px: i32, py: i32) -> i32 {
    let (a, b) = ((k + 1) % 3, (k + 2) % 3);
    (s.x[b] - s.x[a]) * (py - s.y[a]) - (s.y[b] - s.y[a]) * (px - s.x[a])
}

/// Whether the triangle covers pixel `(i, j)` (rules 4, 5).
pub fn covers(g: &Grid, s: &TriSetup, i: u32, j: u32) -> bool {
    if i < s.i0 || i > s.i1 || j < s.j0 || j > s.j1 {
        return false;
    }
    let (px, py) = (g.centre(i), g.centre(j));
    (0..3).all(|k| {
        let e = edge(s, k, px, py);
        e > 0 || (e == 0 && s.top_left >> k & 1 == 1)
    })
}

/// `1/z` at pixel `(i, j)` of the triangle's bounding box (rule 7).
#[inline]
pub fn inv_depth(s: &TriSetup, i: u32, j: u32) -> f32 {
    let di = (i - s.i0) as f32;
    let dj = (j - s.j0) as f32;
    let w = s.w0 + s.wi_hi * di;
    let w = w + s.wj_hi * dj;
    let w = w + s.wi_lo * di;
    w + s.wj_lo * dj
}

/// The depth key of an inverse depth (rule 8).
#[inline]
pub fn depth_key(w: f32) -> u32 {
    u32::MAX - w.max(f32::MIN_POSITIVE).to_bits()
}

/// The depth (m) a key stands for; `None` for [`EMPTY`].
pub fn key_depth(key: u32) -> Option<f32> {
    (key != EMPTY).then(|| 1.0 / f32::from_bits(u32::MAX - key))
}

/// Calls `f(i, j)` for every pixel the triangle covers, row by row. Edge functions are stepped
/// incrementally, which in integers gives exactly the values of [`edge`].
pub fn for_each_covered(g: &Grid, s: &TriSetup, f: impl FnMut(u32, u32)) {
    for_each_covered_in(g, s, s.j0, s.j1, f);
}

/// [`for_each_covered`] over rows `ja..=jb` only. Each row visits just the span its three edge
/// functions allow, found in integers from where each edge crosses zero, so the pixels are
/// exactly those [`covers`] accepts and none of the bounding box outside the triangle is
/// walked.
pub fn for_each_covered_in(g: &Grid, s: &TriSetup, ja: u32, jb: u32, mut f: impl FnMut(u32, u32)) {
    let (ja, jb) = (ja.max(s.j0), jb.min(s.j1));
    if ja > jb {
        return;
    }
    let sb = g.sub_bits;
    let mut step = [0i64; 3];
    let mut bias = [0i64; 3];
    for k in 0..3 {
        let (a, b) = ((k + 1) % 3, (k + 2) % 3);
        step[k] = i64::from(s.y[b] - s.y[a]) << sb;
        bias[k] = i64::from(s.top_left >> k & 1);
    }
    let px0 = g.centre(s.i0);
    let width = i64::from(s.i1 - s.i0);
    for j in ja..=jb {
        let py = g.centre(j);
        // Pixel i0 + n passes edge k when e0 - n·step > 0.
        let (mut lo, mut hi) = (0i64, width);
        for k in 0..3 {
            let e0 = i64::from(edge(s, k, px0, py)) + bias[k];
            let st = step[k];
            if st == 0 {
                if e0 <= 0 {
                    hi = -1;
                }
            } else if st > 0 {
                // n < e0 / st: the last n is ceil(e0 / st) - 1.
                let last = if e0 <= 0 { -1 } else { (e0 - 1).div_euclid(st) };
                hi = hi.min(last);
            } else {
                // n > -e0 / |st|: the first n is floor(-e0 / |st|) + 1, or 0.
                let first = if e0 > 0 { 0 } else { (-e0).div_euclid(-st) + 1 };
                lo = lo.max(first);
            }
        }
        for n in lo..=hi {
            f(s.i0 + n as u32, j);
        }
    }
}

/// Per-object results of one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObjectStats {
    pub projected_pixels: u32,
    pub visible_pixels: u32,
    /// `[x0, y0, x1, y1]`, pixel edges; `None` without visible pixels.
    pub modal: Option<[u32; 4]>,
    pub sum_i: u64,
    pub sum_j: u64,
}

impl ObjectStats {
    /// Centroid of the visible pixels' centres (pixels).
    pub fn centroid(&self) -> Option<[f64; 2]> {
        (self.visible_pixels > 0).then(|| {
            let n = f64::from(self.visible_pixels);
            [self.sum_i as f64 / n + 0.5, self.sum_j as f64 / n + 0.5]
        })
    }

    /// `visible / projected`, 0 when nothing projects.
    pub fn visible_fraction(&self) -> f64 {
        if self.projected_pixels == 0 {
            0.0
        } else {
            f64::from(self.visible_pixels) / f64::from(self.projected_pixels)
        }
    }
}

/// What rasterising one image gives.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RasterOut {
    pub width: u32,
    pub height: u32,
    /// Instance-ID map, row-major (`j * width + i`), [`EMPTY`] where nothing is drawn. Empty
    /// unless the job asked for maps.
    pub ids: Vec<u32>,
    /// The minimum depth key per pixel (rule 8), same layout; empty unless asked for.
    pub depth_keys: Vec<u32>,
    /// Indexed by object.
    pub objects: Vec<ObjectStats>,
}

/// One image to rasterise.
#[derive(Debug, Clone, Copy)]
pub struct RasterJob<'a> {
    pub width: u32,
    pub height: u32,
    /// Objects are `0..num_objects`; triangles of other indices are ignored.
    pub num_objects: u32,
    pub tris: &'a [Tri],
    /// Return the instance-ID map and depth keys (otherwise only per-object stats).
    pub want_maps: bool,
}

/// The seam between the visibility stage and a z-buffer implementation (CPU or GPU). Every
/// implementation must follow the rules of this module exactly.
pub trait Rasteriser: Sync {
    /// A short name for logs and summaries.
    fn name(&self) -> &str;

    /// Rasterises one image.
    fn raster(&self, job: &RasterJob<'_>) -> Result<RasterOut>;

    /// Rasterises several images (a GPU implementation batches them into few dispatches).
    fn raster_batch(&self, jobs: &[RasterJob<'_>]) -> Result<Vec<RasterOut>> {
        jobs.par_iter().map(|j| self.raster(j)).collect()
    }

    /// How many images the stage hands to [`Rasteriser::raster_batch`] at once.
    fn batch_size(&self) -> usize {
        2 * rayon::current_num_threads()
    }

    /// The device a GPU implementation runs on, for the stages that draw after it.
    fn gpu(&self) -> Option<&crate::gpu::Gpu> {
        None
    }
}

/// The plain-Rust reference.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuRasteriser;

impl Rasteriser for CpuRasteriser {
    fn name(&self) -> &str {
        "cpu"
    }

    fn raster(&self, job: &RasterJob<'_>) -> Result<RasterOut> {
        raster_cpu(job)
    }
}

/// Rows per band of the CPU z-buffer: bands are rasterised in parallel, each with its own
/// slice of the buffers, so a frame with many boxes uses every core.
const BAND_ROWS: usize = 32;

/// The CPU z-buffer (rules 1–10).
///
/// One pass per band: a pixel keeps the smallest `(depth key, object)` pair covering it, which
/// is the nearest surface and, among equally near ones, the lowest object (rule 9), the same
/// result as finding the nearest key first and the lowest object at it second. Setups are
/// grouped by object so that counting each object's projected pixels needs one stamp per
/// pixel.
pub fn raster_cpu(job: &RasterJob<'_>) -> Result<RasterOut> {
    let g = Grid::new(job.width, job.height)?;
    let (w, h) = (job.width as usize, job.height as usize);
    let n = job.num_objects as usize;
    let mut setups: Vec<TriSetup> = job
        .tris
        .iter()
        .filter(|t| t.obj < job.num_objects)
        .filter_map(|t| setup(&g, t))
        .collect();
    setups.sort_by_key(|s| s.obj);
    let mut keys = vec![EMPTY; w * h];
    let mut ids = vec![EMPTY; w * h];
    let projected: Vec<Vec<(u32, u32)>> = keys
        .par_chunks_mut(BAND_ROWS * w)
        .zip(ids.par_chunks_mut(BAND_ROWS * w))
        .enumerate()
        .map(|(b, (keys, ids))| {
            let ja = (b * BAND_ROWS) as u32;
            let jb = ja + (keys.len() / w) as u32 - 1;
            raster_band(&g, &setups, w, ja, jb, keys, ids)
        })
        .collect();
    let mut objects = vec![ObjectStats::default(); n];
    for (obj, count) in projected.into_iter().flatten() {
        objects[obj as usize].projected_pixels += count;
    }
    for j in 0..h {
        for (i, &id) in ids[j * w..(j + 1) * w].iter().enumerate() {
            if id == EMPTY {
                continue;
            }
            let o = &mut objects[id as usize];
            let (iu, ju) = (i as u32, j as u32);
            o.visible_pixels += 1;
            o.sum_i += i as u64;
            o.sum_j += j as u64;
            o.modal = Some(match o.modal {
                None => [iu, ju, iu + 1, ju + 1],
                Some([x0, y0, x1, y1]) => [x0.min(iu), y0.min(ju), x1.max(iu + 1), y1.max(ju + 1)],
            });
        }
    }
    let (ids, depth_keys) = if job.want_maps {
        (ids, keys)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(RasterOut {
        width: job.width,
        height: job.height,
        ids,
        depth_keys,
        objects,
    })
}

/// Rasterises rows `ja..=jb` (the band's slices of the buffers) and returns each object's
/// projected pixels in the band.
fn raster_band(
    g: &Grid,
    setups: &[TriSetup],
    w: usize,
    ja: u32,
    jb: u32,
    keys: &mut [u32],
    ids: &mut [u32],
) -> Vec<(u32, u32)> {
    let mut stamp = vec![EMPTY; keys.len()];
    let mut projected: Vec<(u32, u32)> = Vec::new();
    for s in setups.iter().filter(|s| s.j0 <= jb && s.j1 >= ja) {
        let mut count = 0u32;
        for_each_covered_in(g, s, ja, jb, |i, j| {
            let p = (j - ja) as usize * w + i as usize;
            let key = depth_key(inv_depth(s, i, j));
            if key < keys[p] || (key == keys[p] && s.obj < ids[p]) {
                keys[p] = key;
                ids[p] = s.obj;
            }
            if stamp[p] != s.obj {
                stamp[p] = s.obj;
                count += 1;
            }
        });
        match projected.last_mut() {
            Some((o, c)) if *o == s.obj => *c += count,
            _ if count > 0 => projected.push((s.obj, count)),
            _ => {}
        }
    }
    projected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_bits_follow_the_image_size() {
        assert_eq!(Grid::new(1600, 900).unwrap().sub_bits, 4);
        assert_eq!(Grid::new(800, 450).unwrap().sub_bits, 5);
        assert_eq!(Grid::new(16, 16).unwrap().sub_bits, 8);
        assert_eq!(Grid::new(16382, 10).unwrap().sub_bits, 1);
        assert!(Grid::new(16383, 10).is_err());
        assert!(Grid::new(0, 10).is_err());
    }

    #[test]
    fn split_parts_have_ten_bits() {
        for v in [1.0, -3.7e-3, 123456.789, 2f64.powi(-90), 0.1] {
            let (hi, lo) = split(v);
            for p in [hi, lo] {
                let m = p.to_bits() & 0x7f_ffff;
                assert_eq!(m & 0x3fff, 0, "{v}: {p} has more than 10 significant bits");
            }
            assert!(((f64::from(hi) + f64::from(lo)) - v).abs() <= v.abs() * 2f64.powi(-19));
        }
        assert_eq!(split(1e-40), (0.0, 0.0));
    }

    #[test]
    fn spans_cover_exactly_what_the_edge_test_accepts() {
        let g = Grid::new(64, 48).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 10_000) as f32 / 10_000.0
        };
        for t in 0..2000 {
            let tri = Tri {
                p: [0; 3].map(|_| [next() * 80.0 - 8.0, next() * 60.0 - 6.0]),
                z: [1.0 + next(), 2.0, 3.0],
                obj: 0,
            };
            let Some(s) = setup(&g, &tri) else { continue };
            let mut got = Vec::new();
            for_each_covered(&g, &s, |i, j| got.push((i, j)));
            let want: Vec<(u32, u32)> = (0..48)
                .flat_map(|j| (0..64).map(move |i| (i, j)))
                .filter(|&(i, j)| covers(&g, &s, i, j))
                .collect();
            let mut got_sorted = got.clone();
            got_sorted.sort_by_key(|&(i, j)| (j, i));
            assert_eq!(got_sorted, want, "triangle {t}: {tri:?}");
        }
    }

    #[test]
    fn keys_order_like_depth() {
        assert!(depth_key(1.0 / 5.0) < depth_key(1.0 / 10.0));
        assert_ne!(depth_key(0.0), EMPTY);
        assert!((key_depth(depth_key(0.25)).unwrap() - 4.0).abs() < 1e-6);
    }
}
