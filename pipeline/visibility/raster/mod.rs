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

//!
//! The rooms: `triangle` (fixed point, setup and the per-pixel rules, shared with the GPU
//! driver), `cpu` (the CPU rasteriser, banded and span-based, and its chunk merge) and `draw`
//! (one triangle's spans into a band: the early depth test and the vector z-test).

mod cpu;
mod draw;
mod triangle;

pub use cpu::{merge_chunks, raster_cpu};
pub use triangle::{
    covers, depth_key, edge, for_each_covered, for_each_covered_in, for_each_span_in, inv_depth,
    key_depth, setup, Grid, TriSetup,
};

use rayon::prelude::*;

use crate::Result;

/// The instance-ID map's and the depth-key buffer's "nothing here" value.
pub const EMPTY: u32 = u32::MAX;

/// The largest width or height the fixed-point grid allows.
pub(crate) const MAX_SIDE: u32 = 16382;

/// Largest fixed-point coordinate (see rule 1).
const MAX_FIXED: u32 = 32767;

/// Vertices deeper than this (m) drop their triangle (rule 1).
pub(crate) const MAX_DEPTH: f32 = 1e12;

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
