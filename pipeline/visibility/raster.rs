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
//!    never the depth order of two surfaces (`tests/it/visibility/visibility_exact.rs` checks that every pixel
//!    that differs from ray casting lies within snapping reach of an outline). It evaluates it
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
    // `v` is normal here, so its biased exponent field gives the `e` with
    // 2^e ≤ |v| < 2^(e+1) exactly, and 2^(e−9) is a normal power of two: dividing by it and
    // multiplying back are exact, as in the log2 form (`round10_reference`) this replaces.
    let e = ((v.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    let q = f64::from_bits(((e - 9 + 1023) as u64) << 52);
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

/// [`for_each_covered`] over rows `ja..=jb` only.
pub fn for_each_covered_in(g: &Grid, s: &TriSetup, ja: u32, jb: u32, mut f: impl FnMut(u32, u32)) {
    for_each_span_in(g, s, ja, jb, |j, lo, hi| {
        for i in lo..=hi {
            f(i, j);
        }
    });
}

/// Calls `f(j, lo, hi)` for every row `j` in `ja..=jb` where the triangle covers pixels
/// `lo..=hi`. Each row's span is found in integers from where each edge function crosses zero,
/// so the pixels are exactly those [`covers`] accepts and none of the bounding box outside the
/// triangle is walked.
pub fn for_each_span_in(
    g: &Grid,
    s: &TriSetup,
    ja: u32,
    jb: u32,
    mut f: impl FnMut(u32, u32, u32),
) {
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
        if lo <= hi {
            f(j, s.i0 + lo as u32, s.i0 + hi as u32);
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
/// buffers, so a frame with many boxes uses every core.
const BAND_ROWS: u32 = 32;

/// Pixels per row segment of the early depth test: a span is tested against its segment's
/// farthest key once, then drawn pixel by pixel only if it can win somewhere.
const SEG: u32 = 32;

/// The CPU z-buffer (rules 1–10).
///
/// A pixel keeps the smallest `(depth key, object)` pair covering it: the nearest surface and,
/// among equally near ones, the lowest object, which is what the two passes of rules 9 and 10
/// give. That minimum does not depend on the order triangles are drawn in, so each band draws
/// them nearest first and skips a row segment whose every pixel already holds something
/// strictly nearer than anything the triangle can reach there ([`DepthBound`]). Projected
/// pixels (the union of an object's own triangles) are counted from row spans, never per
/// pixel, so skipping changes no count.
pub fn raster_cpu(job: &RasterJob<'_>) -> Result<RasterOut> {
    let g = Grid::new(job.width, job.height)?;
    let n = job.num_objects as usize;
    let mut setups: Vec<TriSetup> = job
        .tris
        .iter()
        .filter(|t| t.obj < job.num_objects)
        .filter_map(|t| setup(&g, t))
        .collect();
    setups.sort_by_key(|s| s.obj);
    let bounds: Vec<DepthBound> = setups.iter().map(DepthBound::new).collect();
    let mut near_first: Vec<u32> = (0..setups.len() as u32).collect();
    near_first.sort_by(|&a, &b| {
        bounds[b as usize]
            .nearest
            .total_cmp(&bounds[a as usize].nearest)
            .then(a.cmp(&b))
    });
    // Each band's triangles, nearest first: a band visits only the triangles that reach it,
    // so many small triangles cost what they cover, not bands × triangles.
    let mut bins: Vec<Vec<u32>> = vec![Vec::new(); job.height.div_ceil(BAND_ROWS) as usize];
    for &t in &near_first {
        let s = &setups[t as usize];
        for bin in &mut bins[(s.j0 / BAND_ROWS) as usize..=(s.j1 / BAND_ROWS) as usize] {
            bin.push(t);
        }
    }
    drop(near_first);
    let tris = Tris {
        g: &g,
        setups: &setups,
        bounds: &bounds,
        bins: &bins,
        num_objects: n,
    };
    // Bands draw straight into their rows of the image's buffers (Grid::new refused an empty
    // image, so a band holds at least one pixel).
    let len = job.width as usize * job.height as usize;
    let band_len = BAND_ROWS as usize * job.width as usize;
    let mut depth_keys = vec![EMPTY; len];
    let mut ids = vec![EMPTY; len];
    let bands: Vec<Vec<ObjectStats>> = depth_keys
        .par_chunks_mut(band_len)
        .zip(ids.par_chunks_mut(band_len))
        .enumerate()
        .map(|(b, (keys, ids))| {
            let ja = b as u32 * BAND_ROWS;
            let jb = (ja + BAND_ROWS).min(job.height) - 1;
            tris.band(ja, jb, keys, ids)
        })
        .collect();
    let mut objects = vec![ObjectStats::default(); n];
    for band in bands {
        for (o, add) in objects.iter_mut().zip(&band) {
            o.merge(add);
        }
    }
    if !job.want_maps {
        (ids, depth_keys) = (Vec::new(), Vec::new());
    }
    Ok(RasterOut {
        width: job.width,
        height: job.height,
        ids,
        depth_keys,
        objects,
    })
}

/// The result of rasterising two chunks of one image's triangles together, from each chunk's
/// own: `a` rasterised the triangles of some objects, `b` those of later ones (an object's
/// triangles all in one chunk; `b` may number more objects). Each pixel keeps the smaller
/// `(depth key, object)` of the two, which is the minimum over all the triangles (rules 9 and
/// 10); projected pixels are each object's own and add up; the visible-pixel statistics are
/// taken afresh from the merged instance-ID map. Both must carry their maps.
pub fn merge_chunks(mut a: RasterOut, b: RasterOut) -> Result<RasterOut> {
    let len = a.width as usize * a.height as usize;
    if (a.width, a.height) != (b.width, b.height)
        || [
            a.ids.len(),
            a.depth_keys.len(),
            b.ids.len(),
            b.depth_keys.len(),
        ] != [len; 4]
        || a.objects.len() > b.objects.len()
    {
        return Err(Error::Gpu {
            kernel: "zbuffer".into(),
            detail: format!(
                "chunks of one image do not match: {}×{} with {} ids and {} objects against \
                 {}×{} with {} ids and {} objects",
                a.width,
                a.height,
                a.ids.len(),
                a.objects.len(),
                b.width,
                b.height,
                b.ids.len(),
                b.objects.len()
            ),
        });
    }
    let pixels = a.depth_keys.iter_mut().zip(a.ids.iter_mut());
    for ((key, id), (&bk, &bi)) in pixels.zip(b.depth_keys.iter().zip(&b.ids)) {
        if (bk, bi) < (*key, *id) {
            (*key, *id) = (bk, bi);
        }
    }
    let mut objects: Vec<ObjectStats> = b
        .objects
        .iter()
        .map(|o| ObjectStats {
            projected_pixels: o.projected_pixels,
            ..ObjectStats::default()
        })
        .collect();
    for (o, earlier) in objects.iter_mut().zip(&a.objects) {
        o.projected_pixels += earlier.projected_pixels;
    }
    add_visible(&a.ids, a.width as usize, 0, &mut objects);
    a.objects = objects;
    Ok(a)
}

impl ObjectStats {
    /// Adds another band's results for the same object.
    fn merge(&mut self, other: &ObjectStats) {
        self.projected_pixels += other.projected_pixels;
        self.visible_pixels += other.visible_pixels;
        self.sum_i += other.sum_i;
        self.sum_j += other.sum_j;
        self.modal = match (self.modal, other.modal) {
            (None, m) | (m, None) => m,
            (Some([a0, b0, a1, b1]), Some([c0, d0, c1, d1])) => {
                Some([a0.min(c0), b0.min(d0), a1.max(c1), b1.max(d1)])
            }
        };
    }
}

/// Twice the relative rounding error of the four `f32` additions of rule 7 (4 · 2^-24).
const ROUNDING: f64 = 1.0 / (1u64 << 21) as f64;

/// What [`DepthBound::min_key`] needs to bound a triangle's inverse depth over a row segment
/// from above, so the early test never skips a pixel the triangle would win.
struct DepthBound {
    /// The stored plane in `f64`: `w0 + a·di + b·dj`, with `a = wi_hi + wi_lo` (exact).
    w0: f64,
    a: f64,
    b: f64,
    /// Absolute values of the terms, for the rounding error of the four `f32` additions.
    abs_w0: f64,
    abs_a: f64,
    abs_b: f64,
    /// An upper bound of `1/z` over the bounding box: draws nearer triangles first.
    nearest: f64,
}

impl DepthBound {
    fn new(s: &TriSetup) -> Self {
        let (di, dj) = (f64::from(s.i1 - s.i0), f64::from(s.j1 - s.j0));
        let mut d = DepthBound {
            w0: f64::from(s.w0),
            a: f64::from(s.wi_hi) + f64::from(s.wi_lo),
            b: f64::from(s.wj_hi) + f64::from(s.wj_lo),
            abs_w0: f64::from(s.w0).abs(),
            abs_a: f64::from(s.wi_hi).abs() + f64::from(s.wi_lo).abs(),
            abs_b: f64::from(s.wj_hi).abs() + f64::from(s.wj_lo).abs(),
            nearest: 0.0,
        };
        d.nearest = [(0.0, 0.0), (di, 0.0), (0.0, dj), (di, dj)]
            .iter()
            .map(|&(i, j)| d.upper(i, j, di, dj))
            .fold(f64::MIN, f64::max);
        d
    }

    /// An upper bound of the `f32` value rule 7 computes at `(di, dj)`: the exact plane plus
    /// twice the worst rounding error of its four additions (each at most 2^-24 of a partial
    /// sum, which is at most the sum of the terms' magnitudes at `(di_max, dj)`).
    fn upper(&self, di: f64, dj: f64, di_max: f64, dj_max: f64) -> f64 {
        let exact = self.w0 + self.a * di + self.b * dj;
        let mag = self.abs_w0 + self.abs_a * di_max + self.abs_b * dj_max;
        exact + mag * ROUNDING
    }

    /// A key no larger than any key the triangle gives in row offset `dj`, pixel offsets
    /// `da..=db` (the plane is affine, so its largest value is at an end of the segment).
    #[inline]
    fn min_key(&self, da: u32, db: u32, dj: u32) -> u32 {
        let (da, db, dj) = (f64::from(da), f64::from(db), f64::from(dj));
        let exact = self.w0 + self.b * dj + self.a * da + (self.a * (db - da)).max(0.0);
        let mag = self.abs_w0 + self.abs_a * db + self.abs_b * dj;
        depth_key(((exact + mag * ROUNDING) as f32).next_up())
    }
}

/// The triangles of one image, set up once and shared by the bands.
struct Tris<'a> {
    g: &'a Grid,
    /// Sorted by object.
    setups: &'a [TriSetup],
    bounds: &'a [DepthBound],
    /// Per band of [`BAND_ROWS`] rows, the indices into `setups` of the triangles that reach
    /// it, nearest first.
    bins: &'a [Vec<u32>],
    num_objects: usize,
}

impl Tris<'_> {
    /// Rasterises rows `ja..=jb` into their depth keys and object ids (row-major, all
    /// [`EMPTY`] on entry); returns each object's counts in them.
    fn band(&self, ja: u32, jb: u32, keys: &mut [u32], ids: &mut [u32]) -> Vec<ObjectStats> {
        let w = self.g.width as usize;
        let rows = (jb - ja + 1) as usize;
        let segs = self.g.width.div_ceil(SEG) as usize;
        let mut far = vec![EMPTY; rows * segs];
        let bin = &self.bins[(ja / BAND_ROWS) as usize];
        for &t in bin {
            let (s, bound) = (&self.setups[t as usize], &self.bounds[t as usize]);
            for_each_span_in(self.g, s, ja, jb, |j, lo, hi| {
                let r = (j - ja) as usize;
                let row = r * w..(r + 1) * w;
                let far = &mut far[r * segs..(r + 1) * segs];
                let span = Span { j, lo, hi };
                draw_span(s, bound, span, &mut keys[row.clone()], &mut ids[row], far);
            });
        }
        let mut objects = vec![ObjectStats::default(); self.num_objects];
        self.count_projected(ja, jb, bin, &mut objects);
        add_visible(ids, w, ja, &mut objects);
        objects
    }

    /// Each object's projected pixels in rows `ja..=jb`: the union of its triangles' row spans,
    /// gathered row by row. `bin` holds the band's triangles; in index order they come object
    /// by object (`setups` is sorted by object).
    fn count_projected(&self, ja: u32, jb: u32, bin: &[u32], objects: &mut [ObjectStats]) {
        let mut rows: Vec<Vec<(u32, u32)>> = vec![Vec::new(); (jb - ja + 1) as usize];
        let mut order = bin.to_vec();
        order.sort_unstable();
        let obj = |t: u32| self.setups[t as usize].obj;
        for group in order.chunk_by(|&a, &b| obj(a) == obj(b)) {
            rows.iter_mut().for_each(Vec::clear);
            for s in group.iter().map(|&t| &self.setups[t as usize]) {
                for_each_span_in(self.g, s, ja, jb, |j, lo, hi| {
                    rows[(j - ja) as usize].push((lo, hi));
                });
            }
            let mut count = 0u32;
            for spans in rows.iter_mut().filter(|r| !r.is_empty()) {
                spans.sort_unstable();
                let (mut lo, mut hi) = spans[0];
                for &(a, b) in &spans[1..] {
                    if a <= hi + 1 {
                        hi = hi.max(b);
                    } else {
                        count += hi - lo + 1;
                        (lo, hi) = (a, b);
                    }
                }
                count += hi - lo + 1;
            }
            if let Some(&first) = group.first() {
                objects[obj(first) as usize].projected_pixels += count;
            }
        }
    }
}

/// Adds each pixel of a band (rows from `ja`) to the stats of the object it shows, one run
/// of equal pixels at a time.
fn add_visible(ids: &[u32], w: usize, ja: u32, objects: &mut [ObjectStats]) {
    for (r, row) in ids.chunks(w).enumerate() {
        let j = ja + r as u32;
        let mut i = 0;
        while i < row.len() {
            let id = row[i];
            let run = row[i..].iter().take_while(|&&v| v == id).count();
            if id != EMPTY {
                let (a, b) = (i as u32, (i + run) as u32);
                let o = &mut objects[id as usize];
                o.visible_pixels += b - a;
                // The sum of a..b: (a + b - 1) · n / 2, one of the two factors is even.
                o.sum_i += (u64::from(a) + u64::from(b) - 1) * u64::from(b - a) / 2;
                o.sum_j += u64::from(j) * u64::from(b - a);
                o.modal = Some(match o.modal {
                    None => [a, j, b, j + 1],
                    Some([x0, y0, x1, y1]) => [x0.min(a), y0.min(j), x1.max(b), y1.max(j + 1)],
                });
            }
            i += run;
        }
    }
}

/// Pixels `lo..=hi` of row `j`.
#[derive(Clone, Copy)]
struct Span {
    j: u32,
    lo: u32,
    hi: u32,
}

/// Draws a span (rules 7–10), one segment at a time, skipping a segment where the triangle
/// cannot come strictly nearer than the farthest key already there.
fn draw_span(
    s: &TriSetup,
    bound: &DepthBound,
    span: Span,
    keys: &mut [u32],
    ids: &mut [u32],
    far: &mut [u32],
) {
    let dj = span.j - s.j0;
    let djf = dj as f32;
    // The same exact products rule 7 forms, so every sum below is bit for bit inv_depth's.
    let (tj_hi, tj_lo) = (s.wj_hi * djf, s.wj_lo * djf);
    let width = keys.len() as u32;
    let mut a = span.lo;
    while a <= span.hi {
        let seg = a / SEG;
        let seg_end = ((seg + 1) * SEG).min(width) - 1;
        let b = span.hi.min(seg_end);
        let farthest = far[seg as usize];
        if farthest != EMPTY && bound.min_key(a - s.i0, b - s.i0, dj) > farthest {
            a = b + 1;
            continue;
        }
        let range = a as usize..b as usize + 1;
        let seg_far = draw_run(
            s,
            a - s.i0,
            (tj_hi, tj_lo),
            &mut keys[range.clone()],
            &mut ids[range],
        );
        // Keys only ever get smaller, so an old farthest key stays a valid bound; a span that
        // covers the whole segment gives the exact one.
        if a == seg * SEG && b == seg_end {
            far[seg as usize] = seg_far;
        }
        a = b + 1;
    }
}

/// The z-test of consecutive pixels from offset `di0` in the triangle's box; returns the
/// farthest key left. Written as a straight loop over slices so that it vectorises.
fn draw_run(
    s: &TriSetup,
    di0: u32,
    (tj_hi, tj_lo): (f32, f32),
    keys: &mut [u32],
    ids: &mut [u32],
) -> u32 {
    let mut far = 0u32;
    for (k, (key, id)) in keys.iter_mut().zip(ids.iter_mut()).enumerate() {
        let di = (di0 + k as u32) as f32;
        let w = s.w0 + s.wi_hi * di;
        let w = w + tj_hi;
        let w = w + s.wi_lo * di;
        let w = w + tj_lo;
        let new = depth_key(w);
        let take = new < *key || (new == *key && s.obj < *id);
        *id = if take { s.obj } else { *id };
        *key = if take { new } else { *key };
        far = far.max(*key);
    }
    far
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

    /// `round10` as it was first written, with `log2` and `powi`.
    fn round10_reference(v: f64) -> f64 {
        if !v.is_finite() || v.abs() < 2f64.powi(-100) {
            return 0.0;
        }
        let e = v.abs().log2().floor() as i32;
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

    #[test]
    fn round10_equals_its_log2_form() {
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut values = vec![
            1.0,
            -1.0,
            2f64.powi(-100),
            -(2f64.powi(-99)),
            1023.5,
            1024.5,
        ];
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Any finite f64 from the bits, and magnitudes around the plane steps' range.
            let v = f64::from_bits(state);
            values.push(v);
            values.push(v.clamp(-1e6, 1e6) * 1e-12);
            values.push(f64::from(state as u32) / f64::from(u32::MAX) - 0.5);
        }
        for v in values {
            let (a, b) = (round10(v), round10_reference(v));
            assert!(a.to_bits() == b.to_bits(), "{v:e}: {a:e} against {b:e}");
        }
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

    /// Rules 1–10 applied literally: every pixel of every bounding box is tested with
    /// [`covers`] and [`inv_depth`], one pixel at a time, no spans, no skipping.
    fn brute_force(job: &RasterJob<'_>) -> RasterOut {
        let g = Grid::new(job.width, job.height).unwrap();
        let (w, h) = (job.width as usize, job.height as usize);
        let mut keys = vec![EMPTY; w * h];
        let mut ids = vec![EMPTY; w * h];
        let mut own = vec![std::collections::BTreeSet::new(); job.num_objects as usize];
        for t in job.tris.iter().filter(|t| t.obj < job.num_objects) {
            let Some(s) = setup(&g, t) else { continue };
            for j in s.j0..=s.j1 {
                for i in s.i0..=s.i1 {
                    if !covers(&g, &s, i, j) {
                        continue;
                    }
                    let p = j as usize * w + i as usize;
                    let key = depth_key(inv_depth(&s, i, j));
                    if key < keys[p] || (key == keys[p] && s.obj < ids[p]) {
                        keys[p] = key;
                        ids[p] = s.obj;
                    }
                    own[s.obj as usize].insert(p);
                }
            }
        }
        let mut objects = vec![ObjectStats::default(); job.num_objects as usize];
        for (o, px) in objects.iter_mut().zip(&own) {
            o.projected_pixels = px.len() as u32;
        }
        for (p, &id) in ids.iter().enumerate() {
            if id == EMPTY {
                continue;
            }
            let (i, j) = ((p % w) as u32, (p / w) as u32);
            let o = &mut objects[id as usize];
            o.visible_pixels += 1;
            o.sum_i += u64::from(i);
            o.sum_j += u64::from(j);
            o.modal = Some(match o.modal {
                None => [i, j, i + 1, j + 1],
                Some([x0, y0, x1, y1]) => [x0.min(i), y0.min(j), x1.max(i + 1), y1.max(j + 1)],
            });
        }
        RasterOut {
            width: job.width,
            height: job.height,
            ids,
            depth_keys: keys,
            objects,
        }
    }

    #[test]
    fn the_z_buffer_equals_the_rules_applied_pixel_by_pixel() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 1_000_000) as f32 / 1_000_000.0
        };
        for case in 0..40 {
            let (width, height) = (40 + (next() * 120.0) as u32, 30 + (next() * 90.0) as u32);
            let num_objects = 1 + (next() * 12.0) as u32;
            let mut tris = Vec::new();
            for _ in 0..(next() * 60.0) as usize {
                let obj = (next() * (num_objects + 1) as f32) as u32;
                let (cx, cy) = (next() * width as f32, next() * height as f32);
                let size = 2.0 + next() * width as f32;
                let t = Tri {
                    p: [0; 3].map(|_| {
                        [cx + (next() - 0.5) * size, cy + (next() - 0.5) * size].map(|v| v.max(0.0))
                    }),
                    z: [0; 3].map(|_| 1.0 + next() * 40.0),
                    obj,
                };
                tris.push(t);
                // Exact ties: the same triangle for another object, and a coplanar neighbour.
                if next() < 0.2 {
                    tris.push(Tri {
                        obj: (obj + 1) % num_objects,
                        ..t
                    });
                }
                if next() < 0.1 {
                    tris.push(Tri {
                        p: [t.p[0], t.p[2], [t.p[0][0] + 5.0, t.p[0][1] + 7.0]],
                        z: [t.z[0], t.z[2], t.z[1]],
                        obj: (obj + 2) % num_objects,
                    });
                }
            }
            let job = RasterJob {
                width,
                height,
                num_objects,
                tris: &tris,
                want_maps: true,
            };
            assert_eq!(raster_cpu(&job).unwrap(), brute_force(&job), "case {case}");
            let no_maps = raster_cpu(&RasterJob {
                want_maps: false,
                ..job
            })
            .unwrap();
            assert_eq!(no_maps.objects, brute_force(&job).objects, "case {case}");
        }
    }

    #[test]
    fn keys_order_like_depth() {
        assert!(depth_key(1.0 / 5.0) < depth_key(1.0 / 10.0));
        assert_ne!(depth_key(0.0), EMPTY);
        assert!((key_depth(depth_key(0.25)).unwrap() - 4.0).abs() < 1e-6);
    }
}
