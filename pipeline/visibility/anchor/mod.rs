//! Label anchors: an exact Euclidean distance transform (EDT) of the instance-ID map and its
//! argmax per object, on the CPU and on the GPU (`kernels/som_edt_cols.wgsl`,
//! `kernels/som_edt_rows.wgsl`, `kernels/som_anchor.wgsl`), plus the ring anchor of small
//! objects.
//!
//! # Definitions
//!
//! * **Label.** Pixel `(i, j)` (column `i`, row `j`, row-major) has label `ids[j·W + i]`,
//!   except that pixels within `border` pixels of the image border (`i < b`, `j < b`,
//!   `i ≥ W − b` or `j ≥ H − b`) and ids `≥ num_objects` get the label [`EMPTY`]. The *mask* of
//!   object `o` is the set of pixels labelled `o`. Lattice points outside the image belong to
//!   no mask.
//! * **Distance.** For a pixel of object `o`, `d²` is the exact squared Euclidean distance
//!   (between pixel centres, an integer) to the nearest lattice point not in the mask of `o`
//!   (a pixel of another label, the border band, or a point outside the image). [`EMPTY`]
//!   pixels get `d² = 0`. Every masked pixel has `d² ≥ 1`.
//! * **Interior anchor.** The pixel of the mask with the largest `d²`; ties go to the first in
//!   raster order (smallest `j`, then smallest `i`). `clearance_px = √d²`. An object whose mask
//!   is empty (e.g. entirely inside the border band) has none.
//!
//! # Algorithm (both sides, all integer)
//!
//! Separable exact EDT (Meijster, Roerdink & Hesselink 2000), adapted to many labels. Jump
//! flooding would be faster per pass on a GPU but is approximate (it can miss the true nearest
//! seed), and an approximate argmax could not match a CPU twin exactly; the separable EDT is
//! exact, integer-only and parallel per column and per row:
//!
//! 1. **Columns** (one GPU invocation per column): `g(i, j)` = distance along the column to
//!    the nearest pixel of a different label, or to a point outside the image: for `j` in the
//!    vertical run `[s, e]` of equal labels, `g = min(j − s + 1, e − j + 1)`.
//! 2. **Rows** (one GPU invocation per row): for a pixel of label `L`, only the pixels of its
//!    own horizontal run `[a, b]` can matter (any other pixel of `L` in the row lies behind a
//!    pixel of another label, which is nearer and contributes `0 + Δi²`), so
//!    `d²(i) = min over q ∈ [a−1, b+1] of (i − q)² + f(q)` with `f(q) = g(q, j)²` inside the run
//!    and `f = 0` at the two bounding points. That lower envelope of parabolas is computed with
//!    Meijster's integer `Sep` (floor division), in O(run length). Intermediates stay below
//!    `2^31` for sides up to [`MAX_SIDE`].
//! 3. **Argmax** (one GPU invocation per pixel, two dispatches): `atomicMax` of `d²` per
//!    object, then `atomicMin` of the raster index `j·W + i` over the pixels whose `d²` equals
//!    that maximum. A single packed `atomicMax` would need `d²` (18 bits at 1600×900) and the
//!    raster index (21 bits) in one word, and WGSL has no 64-bit atomics without an optional
//!    feature, so two 32-bit passes keep it exact at every image size the EDT accepts.
//!
//! # Small objects
//!
//! [`ring_anchor`]: the *ring* of a box `[x0, y0, x1, y1)` (pixel edges) is the box inflated by
//! `ring` pixels on every side minus the box itself, restricted to the image minus its border
//! band. The ring anchor is the interior anchor of the ring taken as a mask (same EDT, same
//! raster tie rule), which is MetaVQA's rule. Inside a straight band the distance is at most
//! `⌊ring/2⌋`, but in the corner squares the nearest non-ring point is the box's corner pixel
//! diagonally, so the corners reach farther (about 0.59 × ring): for a 20-px ring the
//! maximum is `d² = 144` at 12 px from both outer edges (`tests/it/families/som/anchors.rs` computes it by hand).
//! The first maximum in raster order is the top-left corner's, so the label (which grows right
//! and up from its anchor) sits above and left of the box's top-left corner. When the image
//! edge clips the ring, whatever part remains thickest wins. [`choose_anchor`] gives the
//! precedence between interior, ring and fallback anchors.
//!
//! What decides the anchors of a table (the `[anchor]` rules and the drawn box of the
//! Set-of-Mark config) is in `rules`.

mod rules;

pub use rules::{AnchorConfig, AnchorRules, BoxKind, RULES_KEY};

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Gpu, KernelId};
use crate::visibility::raster::{RasterOut, Rasteriser, EMPTY};
use crate::{Error, Result};
/// The largest width or height accepted (the rasteriser's limit; keeps the EDT in `i32`).
pub(crate) const MAX_SIDE: u32 = crate::visibility::raster::MAX_SIDE;

/// The uniform block of the three EDT/anchor kernels (keep in step with their `Params`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct EdtParams {
    pub width: u32,
    pub height: u32,
    pub border: u32,
    /// Ids `≥ num_objects` count as [`EMPTY`].
    pub num_objects: u32,
    /// `som_anchor` only: 0 = maximum distance, 1 = first pixel reaching it.
    pub pass: u32,
    pub _pad: [u32; 3],
}

impl EdtParams {
    /// Checks the image size (sides within `1..=MAX_SIDE`).
    pub fn new(width: u32, height: u32, border: u32, num_objects: u32) -> Result<Self> {
        if width == 0 || height == 0 || width.max(height) > MAX_SIDE {
            return Err(Error::invalid(
                "image size",
                format!(
                    "som: cannot take the distance transform of a {width}×{height} image: \
                     sides must be within 1..={MAX_SIDE}"
                ),
            ));
        }
        if border > 1024 {
            return Err(Error::invalid(
                "anchor.border",
                format!("som: border of {border} px is larger than 1024"),
            ));
        }
        Ok(Self {
            width,
            height,
            border,
            num_objects,
            pass: 0,
            _pad: [0; 3],
        })
    }

    fn pixels(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The label of pixel `(i, j)` whose id is `id` (see the module docs).
    #[inline]
    pub fn label(&self, id: u32, i: u32, j: u32) -> u32 {
        let b = self.border;
        if i < b || j < b || i + b >= self.width || j + b >= self.height || id >= self.num_objects {
            EMPTY
        } else {
            id
        }
    }
}

/// An anchor pixel and its squared distance to the nearest point outside its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Anchor {
    pub x: u32,
    pub y: u32,
    pub dist2: u32,
}

impl Anchor {
    /// The pixel's centre, `[x + 0.5, y + 0.5]` (the coordinates the tables use).
    pub fn centre(&self) -> [f64; 2] {
        [f64::from(self.x) + 0.5, f64::from(self.y) + 0.5]
    }
}

fn check_len(p: &EdtParams, ids: &[u32]) -> Result<()> {
    if ids.len() != p.pixels() {
        return Err(Error::Internal(format!(
            "som: an ID map of {} pixels for a {}×{} image",
            ids.len(),
            p.width,
            p.height
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// CPU twin (loop for loop what the kernels do)
// ---------------------------------------------------------------------------------------

/// Pass 1 for every column (kernel `som_edt_cols`, one invocation per column). Each column's
/// steps are the kernel's, but all columns advance together row by row, so memory is read
/// in order instead of one stride-`width` walk per column.
fn edt_columns(p: &EdtParams, ids: &[u32], g: &mut [u32]) {
    let (w, h) = (p.width as usize, p.height);
    if w == 0 || h == 0 {
        return;
    }
    let mut s = vec![0u32; w];
    let mut prev = vec![EMPTY; w];
    for j in 0..h {
        let row = j as usize * w;
        for i in 0..w {
            let l = p.label(ids[row + i], i as u32, j);
            if j > 0 && l != prev[i] {
                s[i] = j;
            }
            prev[i] = l;
            g[row + i] = j - s[i] + 1;
        }
    }
    let mut e = vec![h - 1; w];
    let mut next = vec![EMPTY; w];
    for j in (0..h).rev() {
        let row = j as usize * w;
        for i in 0..w {
            let l = p.label(ids[row + i], i as u32, j);
            if j + 1 < h && l != next[i] {
                e[i] = j;
            }
            next[i] = l;
            g[row + i] = if l == EMPTY {
                0
            } else {
                g[row + i].min(e[i] - j + 1)
            };
        }
    }
}

/// `⌊a / b⌋` for `b > 0`.
#[inline]
fn floor_div(a: i32, b: i32) -> i32 {
    let q = a / b;
    if a % b != 0 && a < 0 {
        q - 1
    } else {
        q
    }
}

/// Pass 2 over the run `[a, b]` of row `g_row` (kernel `som_edt_rows`, `run_envelope`).
/// Local index `k ∈ [0, m)` stands for column `a − 1 + k`; `k = 0` and `k = m − 1` are the
/// bounding points with `f = 0`.
fn run_envelope(g_row: &[u32], a: u32, b: u32, out: &mut [u32], s: &mut [i32], t: &mut [i32]) {
    let m = (b - a + 3) as i32;
    let f = |k: i32| -> i32 {
        if k == 0 || k == m - 1 {
            0
        } else {
            let v = g_row[(a as i32 + k - 1) as usize] as i32;
            v * v
        }
    };
    let mut q: i32 = 0;
    s[0] = 0;
    t[0] = 0;
    for u in 1..m {
        let fu = f(u);
        while q >= 0 {
            let (sq, tq) = (s[q as usize], t[q as usize]);
            if (tq - sq) * (tq - sq) + f(sq) > (tq - u) * (tq - u) + fu {
                q -= 1;
            } else {
                break;
            }
        }
        if q < 0 {
            q = 0;
            s[0] = u;
        } else {
            let sq = s[q as usize];
            let w = 1 + floor_div(u * u - sq * sq + fu - f(sq), 2 * (u - sq));
            if w < m {
                q += 1;
                s[q as usize] = u;
                t[q as usize] = w;
            }
        }
    }
    for u in (0..m).rev() {
        let sq = s[q as usize];
        if u >= 1 && u <= m - 2 {
            out[(a as i32 + u - 1) as usize] = ((u - sq) * (u - sq) + f(sq)) as u32;
        }
        if u == t[q as usize] {
            q -= 1;
        }
    }
}

/// Pass 2 for row `j` (kernel `som_edt_rows`).
fn edt_row(p: &EdtParams, ids: &[u32], g: &[u32], d2: &mut [u32], j: u32, scratch: &mut [i32]) {
    let w = p.width;
    let row = j as usize * w as usize;
    let g_row = &g[row..row + w as usize];
    let out = &mut d2[row..row + w as usize];
    let (s, t) = scratch.split_at_mut(w as usize + 2);
    let mut a = 0u32;
    while a < w {
        let l = p.label(ids[row + a as usize], a, j);
        let mut b = a;
        while b + 1 < w && p.label(ids[row + b as usize + 1], b + 1, j) == l {
            b += 1;
        }
        if l == EMPTY {
            out[a as usize..=b as usize].fill(0);
        } else {
            run_envelope(g_row, a, b, out, s, t);
        }
        a = b + 1;
    }
}

/// The exact squared distance `d²` of every pixel (row-major; 0 on [`EMPTY`] pixels).
pub fn edt_cpu(p: &EdtParams, ids: &[u32]) -> Result<Vec<u32>> {
    check_len(p, ids)?;
    let mut g = vec![0u32; p.pixels()];
    edt_columns(p, ids, &mut g);
    let mut d2 = vec![0u32; p.pixels()];
    let mut scratch = vec![0i32; 2 * (p.width as usize + 2)];
    for j in 0..p.height {
        edt_row(p, ids, &g, &mut d2, j, &mut scratch);
    }
    Ok(d2)
}

/// The interior anchor of every object `0..num_objects` from `d²` (kernel `som_anchor`).
pub fn argmax_cpu(p: &EdtParams, ids: &[u32], d2: &[u32]) -> Vec<Option<Anchor>> {
    let mut best: Vec<Option<Anchor>> = vec![None; p.num_objects as usize];
    for j in 0..p.height {
        for i in 0..p.width {
            let k = j as usize * p.width as usize + i as usize;
            let l = p.label(ids[k], i, j);
            if l == EMPTY {
                continue;
            }
            let slot = &mut best[l as usize];
            // Strictly greater: the first pixel in raster order keeps a tie.
            if slot.is_none_or(|a| d2[k] > a.dist2) {
                *slot = Some(Anchor {
                    x: i,
                    y: j,
                    dist2: d2[k],
                });
            }
        }
    }
    best
}

/// The interior anchors of every object `0..num_objects` of an ID map, on the CPU: the same
/// anchors as [`edt_cpu`] and [`argmax_cpu`] over the whole image, computed object by object
/// over the bounding box of its mask. Every lattice point outside that box is outside the mask,
/// so the box's transform, taken with its outside as non-mask, gives the mask's pixels the
/// same `d²`; and the box's raster order is the image's, so ties go the same way. Objects
/// cover a small part of a camera image, so this reads a few percent of the pixels the
/// whole-image transform does.
pub fn interior_anchors_cpu(p: &EdtParams, ids: &[u32]) -> Result<Vec<Option<Anchor>>> {
    check_len(p, ids)?;
    let boxes = mask_boxes(p, ids);
    let w = p.width as usize;
    let mut out = vec![None; boxes.len()];
    let mut mask = Vec::new();
    for (o, b) in boxes.iter().enumerate() {
        let Some([x0, y0, x1, y1]) = *b else { continue };
        let (cw, ch) = (x1 - x0 + 1, y1 - y0 + 1);
        mask.clear();
        for j in y0..=y1 {
            let row = &ids[j as usize * w..][..w];
            mask.extend((x0..=x1).map(|i| {
                if p.label(row[i as usize], i, j) == o as u32 {
                    0
                } else {
                    EMPTY
                }
            }));
        }
        out[o] = mask_anchor(cw, ch, &mask, (x0, y0))?;
    }
    Ok(out)
}

/// The interior anchor of a `cw × ch` crop whose mask pixels are 0 and the rest [`EMPTY`]
/// (outside the crop is outside the mask), in the image coordinates of a crop at `origin`.
fn mask_anchor(cw: u32, ch: u32, mask: &[u32], origin: (u32, u32)) -> Result<Option<Anchor>> {
    let p = EdtParams::new(cw, ch, 0, 1)?;
    let d2 = edt_cpu(&p, mask)?;
    Ok(argmax_cpu(&p, mask, &d2)[0].map(|a| Anchor {
        x: a.x + origin.0,
        y: a.y + origin.1,
        ..a
    }))
}

/// Per object, the inclusive box `[x0, y0, x1, y1]` of the pixels labelled with it (None for
/// an empty mask).
fn mask_boxes(p: &EdtParams, ids: &[u32]) -> Vec<Option<[u32; 4]>> {
    let mut boxes: Vec<Option<[u32; 4]>> = vec![None; p.num_objects as usize];
    let (w, h, b) = (p.width, p.height, p.border);
    // Only the image minus its border band can hold a label.
    for j in b..h.saturating_sub(b) {
        let row = &ids[j as usize * w as usize..][..w as usize];
        for i in b..w.saturating_sub(b) {
            let id = row[i as usize];
            if id >= p.num_objects {
                continue;
            }
            let bx = boxes[id as usize].get_or_insert([i, j, i, j]);
            bx[0] = bx[0].min(i);
            bx[2] = bx[2].max(i);
            bx[3] = j;
        }
    }
    boxes
}

// ---------------------------------------------------------------------------------------
// GPU
// ---------------------------------------------------------------------------------------

/// `d²` (when asked for) and the anchors, from the GPU.
type GpuEdt = (Option<Vec<u32>>, Vec<Option<Anchor>>);

/// Runs the EDT and the argmax on the GPU; returns `d²` too when asked.
fn run_gpu(gpu: &Gpu, p: &EdtParams, ids: &[u32], want_d2: bool) -> Result<GpuEdt> {
    check_len(p, ids)?;
    let n = p.pixels();
    let objects = p.num_objects as usize;
    if objects == 0 && !want_d2 {
        return Ok((None, Vec::new()));
    }
    let pass0 = gpu.uniform_buffer("som_edt.params", &EdtParams { pass: 0, ..*p })?;
    let pass1 = gpu.uniform_buffer("som_edt.params", &EdtParams { pass: 1, ..*p })?;
    let ids_buf = gpu.storage_buffer("som_edt.ids", ids)?;
    let g = gpu.output_buffer("som_edt.g", (n * 4) as u64)?;
    let scratch = gpu.output_buffer(
        "som_edt.scratch",
        (2 * (p.width as usize + 2) * p.height as usize * 4) as u64,
    )?;
    let d2 = gpu.output_buffer("som_edt.d2", (n * 4) as u64)?;
    gpu.dispatch(
        KernelId::SomEdtCols,
        &[&pass0, &ids_buf, &g],
        p.width as usize,
    )?;
    gpu.dispatch(
        KernelId::SomEdtRows,
        &[&pass0, &ids_buf, &g, &scratch, &d2],
        p.height as usize,
    )?;
    let mut anchors = Vec::new();
    if objects > 0 {
        let best = gpu.storage_buffer("som_anchor.best", &vec![0u32; objects])?;
        let first = gpu.storage_buffer("som_anchor.first", &vec![u32::MAX; objects])?;
        for params in [&pass0, &pass1] {
            gpu.dispatch(
                KernelId::SomAnchor,
                &[params, &ids_buf, &d2, &best, &first],
                n,
            )?;
        }
        let best: Vec<u32> = gpu.read_back(&best)?;
        let first: Vec<u32> = gpu.read_back(&first)?;
        anchors = best
            .iter()
            .zip(&first)
            .map(|(&dist2, &k)| {
                (k != u32::MAX).then_some(Anchor {
                    x: k % p.width,
                    y: k / p.width,
                    dist2,
                })
            })
            .collect();
    }
    let d2 = if want_d2 {
        Some(gpu.read_back(&d2)?)
    } else {
        None
    };
    Ok((d2, anchors))
}

/// [`edt_cpu`] on the GPU: identical output.
pub fn edt_gpu(gpu: &Gpu, p: &EdtParams, ids: &[u32]) -> Result<Vec<u32>> {
    run_gpu(gpu, p, ids, true)?.0.ok_or_else(|| Error::Gpu {
        kernel: "som_edt_rows".into(),
        detail: "no distances read back".into(),
    })
}

/// [`interior_anchors_cpu`] on the GPU: identical output.
pub fn interior_anchors_gpu(gpu: &Gpu, p: &EdtParams, ids: &[u32]) -> Result<Vec<Option<Anchor>>> {
    Ok(run_gpu(gpu, p, ids, false)?.1)
}

// ---------------------------------------------------------------------------------------
// Ring anchors and the choice between the rules
// ---------------------------------------------------------------------------------------

/// The ring anchor of the box `[x0, y0, x1, y1)` (pixel edges) in a `width × height` image:
/// the interior anchor of the ring taken as a mask (see the module docs). `None` when the ring
/// lies entirely outside the image minus its border band.
pub fn ring_anchor(
    width: u32,
    height: u32,
    border: u32,
    ring: u32,
    bbox: [u32; 4],
) -> Option<Anchor> {
    let (w, h, b, r) = (
        i64::from(width),
        i64::from(height),
        i64::from(border),
        i64::from(ring),
    );
    let [x0, y0, x1, y1] = bbox.map(i64::from);
    let cx0 = (x0 - r).max(b);
    let cy0 = (y0 - r).max(b);
    let cx1 = (x1 + r).min(w - b);
    let cy1 = (y1 + r).min(h - b);
    if cx1 <= cx0 || cy1 <= cy0 {
        return None;
    }
    let (cw, ch) = ((cx1 - cx0) as u32, (cy1 - cy0) as u32);
    let mut ids = vec![0u32; cw as usize * ch as usize];
    for j in 0..ch {
        let y = cy0 + i64::from(j);
        if y < y0 || y >= y1 {
            continue;
        }
        for i in 0..cw {
            let x = cx0 + i64::from(i);
            if x >= x0 && x < x1 {
                ids[j as usize * cw as usize + i as usize] = EMPTY;
            }
        }
    }
    // Outside the crop is outside the ring: the EDT treats off-image points as non-mask.
    mask_anchor(cw, ch, &ids, (cx0 as u32, cy0 as u32))
        .ok()
        .flatten()
}

/// Where an anchor came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorRule {
    /// The argmax of the object's own distance transform.
    Interior,
    /// The argmax over the ring outside its box.
    Ring,
    /// Neither exists: the box's top-left pixel clamped into the image minus its border band
    /// (into the image when that is empty), clearance 0.
    Fallback,
}

impl AnchorRule {
    pub const ALL: [AnchorRule; 3] = [AnchorRule::Interior, AnchorRule::Ring, AnchorRule::Fallback];

    pub fn as_str(self) -> &'static str {
        match self {
            AnchorRule::Interior => "interior",
            AnchorRule::Ring => "ring",
            AnchorRule::Fallback => "fallback",
        }
    }

    /// The rule a table names, or `None` for a name it does not know.
    pub fn parse(name: &str) -> Option<AnchorRule> {
        AnchorRule::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// A mark's anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkAnchor {
    pub anchor: Anchor,
    pub rule: AnchorRule,
}

/// The anchor of one object: for a small object (`visible_pixels < small_object_pixels`) the
/// ring anchor, else the interior anchor; when the preferred one does not exist, the other;
/// when neither does, the fallback (see [`AnchorRule`]).
pub fn choose_anchor(
    interior: Option<Anchor>,
    visible_pixels: u32,
    bbox: [u32; 4],
    width: u32,
    height: u32,
    cfg: &AnchorConfig,
) -> MarkAnchor {
    let ring = || {
        ring_anchor(width, height, cfg.border_px, cfg.ring_px, bbox).map(|anchor| MarkAnchor {
            anchor,
            rule: AnchorRule::Ring,
        })
    };
    let inner = interior.map(|anchor| MarkAnchor {
        anchor,
        rule: AnchorRule::Interior,
    });
    let chosen = if visible_pixels < cfg.small_object_pixels {
        ring().or(inner)
    } else {
        inner.or_else(ring)
    };
    chosen.unwrap_or_else(|| {
        let b = cfg.border_px;
        let clamp = |v: u32, n: u32| {
            if n > 2 * b {
                v.clamp(b, n - 1 - b)
            } else {
                v.min(n.saturating_sub(1))
            }
        };
        MarkAnchor {
            anchor: Anchor {
                x: clamp(bbox[0], width),
                y: clamp(bbox[1], height),
                dist2: 0,
            },
            rule: AnchorRule::Fallback,
        }
    })
}

/// The anchor of every object of one rasterised image: objects without visible pixels get
/// none; the others [`choose_anchor`] with `boxes[k]` (pixel edges) as the box a small object
/// is ringed around. The interior anchors come from `rasteriser` (CPU or GPU, identical).
pub fn image_anchors(
    rasteriser: &dyn Rasteriser,
    out: &RasterOut,
    boxes: &[Option<[u32; 4]>],
    cfg: &AnchorConfig,
) -> Result<Vec<Option<MarkAnchor>>> {
    let n = out.objects.len();
    if boxes.len() != n {
        return Err(Error::Internal(format!(
            "som: {} boxes for {n} objects",
            boxes.len()
        )));
    }
    if out.objects.iter().all(|o| o.visible_pixels == 0) {
        return Ok(vec![None; n]);
    }
    let p = EdtParams::new(out.width, out.height, cfg.border_px, n as u32)?;
    // The same exact transform on the rasteriser's device, so the z-buffer's output stays there.
    let interior = match rasteriser.gpu() {
        Some(gpu) => interior_anchors_gpu(gpu, &p, &out.ids)?,
        None => interior_anchors_cpu(&p, &out.ids)?,
    };
    if interior.len() != n {
        return Err(Error::Gpu {
            kernel: "som_anchor".into(),
            detail: format!("returned {} anchors for {n} objects", interior.len()),
        });
    }
    Ok(out
        .objects
        .iter()
        .zip(interior)
        .zip(boxes)
        .map(|((st, a), b)| {
            let b = b.filter(|_| st.visible_pixels > 0)?;
            Some(choose_anchor(
                a,
                st.visible_pixels,
                b,
                out.width,
                out.height,
                cfg,
            ))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_div_rounds_down() {
        assert_eq!(floor_div(7, 2), 3);
        assert_eq!(floor_div(-7, 2), -4);
        assert_eq!(floor_div(-8, 2), -4);
        assert_eq!(floor_div(0, 5), 0);
    }

    #[test]
    fn single_pixel_and_bad_sizes() {
        let p = EdtParams::new(3, 3, 0, 1).unwrap();
        let mut ids = vec![EMPTY; 9];
        ids[4] = 0;
        assert_eq!(edt_cpu(&p, &ids).unwrap()[4], 1);
        assert!(edt_cpu(&p, &ids[..8]).is_err());
        assert!(EdtParams::new(0, 3, 0, 1).is_err());
        assert!(EdtParams::new(MAX_SIDE + 1, 3, 0, 1).is_err());
    }

    #[test]
    fn object_boxes_give_the_whole_image_anchors() {
        // A fixed xorshift: blobs of a few labels over empty ground, borders of 0..4.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        for case in 0..200 {
            let (w, h) = (1 + next(40), 1 + next(30));
            let objects = next(6);
            let mut ids = vec![EMPTY; (w * h) as usize];
            for _ in 0..next(8) {
                let id = if objects == 0 {
                    EMPTY
                } else {
                    next(objects + 1)
                };
                let (x0, y0) = (next(w), next(h));
                let (x1, y1) = ((x0 + 1 + next(12)).min(w), (y0 + 1 + next(10)).min(h));
                for j in y0..y1 {
                    for i in x0..x1 {
                        ids[(j * w + i) as usize] = id;
                    }
                }
            }
            let p = EdtParams::new(w, h, next(4), objects).unwrap();
            let whole = argmax_cpu(&p, &ids, &edt_cpu(&p, &ids).unwrap());
            assert_eq!(
                interior_anchors_cpu(&p, &ids).unwrap(),
                whole,
                "case {case}"
            );
        }
    }
}
