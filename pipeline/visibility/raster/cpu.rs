//! The CPU rasteriser: rules 9–10 of [`super`] over bands of rows in parallel, each triangle
//! drawn as spans, and the merge of images rasterised in chunks.

use std::cell::RefCell;

use rayon::prelude::*;

use super::triangle::*;
use super::{ObjectStats, RasterJob, RasterOut, EMPTY};
use crate::{Error, Result};

/// Rows per band of the CPU z-buffer: bands are rasterised in parallel, each with its own
/// buffers, so a frame with many boxes uses every core.
const BAND_ROWS: u32 = 32;

/// Pixels per row segment of the early depth test: a span is tested against its segment's
/// farthest key once, then, only if it can win somewhere, the whole segment is z-tested with
/// the pixels outside the span masked off, so every pixel takes the vector path.
const SEG: u32 = 32;

/// Pixels per block of the visible-pixel scan.
const LANES: usize = 8;

thread_local! {
    /// This thread's band buffers, kept from band to band and image to image.
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch::new()) };
}

/// The buffers of one band: its depth keys and object ids (rows `stride` apart, the width
/// rounded up to whole segments), all [`EMPTY`] between bands, and its early-test bounds.
struct Scratch {
    keys: Vec<u32>,
    ids: Vec<u32>,
    /// Per row and segment, a key no nearer than the farthest one there.
    far: Vec<u32>,
    /// Per row, the pixels `lo..hi` any span reached: outside them every pixel is EMPTY, so
    /// only they are counted and cleared.
    touched: Vec<(u32, u32)>,
    /// Set while a band is drawn, so that rows a panicking band left behind are cleared
    /// before the next one uses them.
    dirty: bool,
}

impl Scratch {
    const fn new() -> Self {
        Scratch {
            keys: Vec::new(),
            ids: Vec::new(),
            far: Vec::new(),
            touched: Vec::new(),
            dirty: false,
        }
    }

    /// Readies the buffers of a band of `rows` rows of `stride` pixels and `segs` segments.
    fn start(&mut self, rows: usize, stride: usize, segs: usize) {
        if self.dirty {
            self.keys.fill(EMPTY);
            self.ids.fill(EMPTY);
        }
        if self.keys.len() < rows * stride {
            self.keys.resize(rows * stride, EMPTY);
            self.ids.resize(rows * stride, EMPTY);
        }
        self.far.clear();
        self.far.resize(rows * segs, EMPTY);
        self.touched.clear();
        self.touched.resize(rows, (u32::MAX, 0));
        self.dirty = true;
    }

    /// Leaves the touched pixels of the first `touched.len()` rows EMPTY again.
    fn finish(&mut self, stride: usize) {
        for (r, &(lo, hi)) in self.touched.iter().enumerate() {
            if lo < hi {
                let run = r * stride + lo as usize..r * stride + hi as usize;
                self.keys[run.clone()].fill(EMPTY);
                self.ids[run].fill(EMPTY);
            }
        }
        self.dirty = false;
    }
}

/// The CPU z-buffer (rules 1–10).
///
/// A pixel keeps the smallest `(depth key, object)` pair covering it: the nearest surface and,
/// among equally near ones, the lowest object, which is what the two passes of rules 9 and 10
/// give. That minimum does not depend on the order triangles are drawn in, so each band draws
/// them nearest first and skips a row segment whose every pixel already holds something
/// strictly nearer than anything the triangle can reach there (`DepthBound`). Projected
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
    // Each band is drawn in its thread's buffers, which stay in cache and are handed back
    // all EMPTY, so a frame neither allocates nor clears a full-size buffer unless it keeps
    // its maps, and then each band's rows are copied out whole (Grid::new refused an empty
    // image, so a band holds at least one pixel).
    let draw = |b: usize, out: Option<(&mut [u32], &mut [u32])>| {
        let ja = b as u32 * BAND_ROWS;
        let jb = (ja + BAND_ROWS).min(job.height) - 1;
        SCRATCH.with(|scratch| tris.band(ja, jb, &mut scratch.borrow_mut(), out))
    };
    let (ids, depth_keys, bands): (Vec<u32>, Vec<u32>, Vec<Vec<ObjectStats>>) = if job.want_maps {
        let len = job.width as usize * job.height as usize;
        let band_len = BAND_ROWS as usize * job.width as usize;
        // Zeroed pages cost nothing until the bands write every pixel.
        let mut depth_keys = vec![0u32; len];
        let mut ids = vec![0u32; len];
        let bands = depth_keys
            .par_chunks_mut(band_len)
            .zip(ids.par_chunks_mut(band_len))
            .enumerate()
            .map(|(b, out)| draw(b, Some(out)))
            .collect();
        (ids, depth_keys, bands)
    } else {
        let bands = (0..bins.len())
            .into_par_iter()
            .map(|b| draw(b, None))
            .collect();
        (Vec::new(), Vec::new(), bands)
    };
    let mut objects = vec![ObjectStats::default(); n];
    for band in bands {
        for (o, add) in objects.iter_mut().zip(&band) {
            o.merge(add);
        }
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

/// What [`DepthBound::loses`] needs to bound a triangle's inverse depth over a row segment
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

    /// The plane's value and its terms' magnitudes at row offset `dj`, for
    /// [`DepthBound::loses`].
    #[inline]
    fn row(&self, dj: u32) -> [f64; 2] {
        let dj = f64::from(dj);
        [self.w0 + self.b * dj, self.abs_w0 + self.abs_b * dj]
    }

    /// Whether the triangle, in a row (`row` from [`DepthBound::row`]) at pixel offsets
    /// `da..=db`, is strictly farther than every pixel of a segment whose farthest key is
    /// `farthest`: the bound of the inverse depth it computes there (the plane is affine, so
    /// its largest value is at an end of the segment) is below the farthest pixel's, and so is
    /// the clamp of rule 8, which could otherwise give an equal key.
    #[inline]
    fn loses(&self, [w_row, mag_row]: [f64; 2], da: u32, db: u32, farthest: u32) -> bool {
        if farthest == EMPTY {
            return false;
        }
        let (da, db) = (f64::from(da), f64::from(db));
        let exact = w_row + self.a * da + (self.a * (db - da)).max(0.0);
        let upper = exact + (mag_row + self.abs_a * db) * ROUNDING;
        let w_far = f64::from(f32::from_bits(u32::MAX - farthest));
        upper.max(f64::from(f32::MIN_POSITIVE)) < w_far
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
    /// Rasterises rows `ja..=jb` in `scratch` and returns each object's counts in them; with
    /// `out`, also writes the rows' depth keys and object ids there (row-major, `width` apart).
    fn band(
        &self,
        ja: u32,
        jb: u32,
        scratch: &mut Scratch,
        out: Option<(&mut [u32], &mut [u32])>,
    ) -> Vec<ObjectStats> {
        let w = self.g.width as usize;
        let stride = w.next_multiple_of(SEG as usize);
        let rows = (jb - ja + 1) as usize;
        let segs = self.g.width.div_ceil(SEG) as usize;
        scratch.start(rows, stride, segs);
        let Scratch {
            keys,
            ids,
            far,
            touched,
            ..
        } = scratch;
        let bin = &self.bins[(ja / BAND_ROWS) as usize];
        for &t in bin {
            let (s, bound) = (&self.setups[t as usize], &self.bounds[t as usize]);
            for_each_span_in(self.g, s, ja, jb, |j, lo, hi| {
                let r = (j - ja) as usize;
                let reach = &mut touched[r];
                *reach = (reach.0.min(lo), reach.1.max(hi + 1));
                let row = r * stride..(r + 1) * stride;
                let far = &mut far[r * segs..(r + 1) * segs];
                let span = Span { j, lo, hi };
                draw_span(
                    s,
                    bound,
                    span,
                    w as u32,
                    &mut keys[row.clone()],
                    &mut ids[row],
                    far,
                );
            });
        }
        let mut objects = vec![ObjectStats::default(); self.num_objects];
        self.count_projected(ja, jb, bin, &mut objects);
        for (r, &(lo, hi)) in touched.iter().enumerate() {
            if lo < hi {
                let run = r * stride + lo as usize..r * stride + hi as usize;
                add_visible_row(&ids[run], lo, ja + r as u32, &mut objects);
            }
        }
        if let Some((keys_out, ids_out)) = out {
            for r in 0..rows {
                let (row, own) = (r * w..(r + 1) * w, r * stride..r * stride + w);
                keys_out[row.clone()].copy_from_slice(&keys[own.clone()]);
                ids_out[row].copy_from_slice(&ids[own]);
            }
        }
        scratch.finish(stride);
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

/// Adds each pixel of a band (rows from `ja`) to the stats of the object it shows.
fn add_visible(ids: &[u32], w: usize, ja: u32, objects: &mut [ObjectStats]) {
    for (r, row) in ids.chunks(w).enumerate() {
        add_visible_row(row, 0, ja + r as u32, objects);
    }
}

/// Adds the pixels of row `j` from column `i0` on to the stats of the objects they show, one
/// run of equal pixels at a time.
fn add_visible_row(row: &[u32], i0: u32, j: u32, objects: &mut [ObjectStats]) {
    let mut i = 0;
    while i < row.len() {
        let id = row[i];
        let run = run_len(&row[i..], id);
        if id != EMPTY {
            let (a, b) = (i0 + i as u32, i0 + (i + run) as u32);
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

/// How many pixels from the start of `row` equal `id`, a block at a time while whole blocks do.
fn run_len(row: &[u32], id: u32) -> usize {
    let (blocks, _) = row.as_chunks::<LANES>();
    let same = blocks
        .iter()
        .take_while(|b| b.iter().fold(0, |d, &v| d | (v ^ id)) == 0)
        .count()
        * LANES;
    same + row[same..].iter().take_while(|&&v| v == id).count()
}

/// Pixels `lo..=hi` of row `j`.
#[derive(Clone, Copy)]
struct Span {
    j: u32,
    lo: u32,
    hi: u32,
}

crate::cpu::avx2_clone! {
    /// Draws a span (rules 7–10) into a row `width` pixels wide, held in whole segments, one
    /// segment at a time, skipping a segment where the triangle cannot come strictly nearer
    /// than the farthest key already there.
    fn draw_span(
        s: &TriSetup,
        bound: &DepthBound,
        span: Span,
        width: u32,
        keys: &mut [u32],
        ids: &mut [u32],
        far: &mut [u32],
    ) = draw_span_any;
}

#[inline(always)]
fn draw_span_any(
    s: &TriSetup,
    bound: &DepthBound,
    span: Span,
    width: u32,
    keys: &mut [u32],
    ids: &mut [u32],
    far: &mut [u32],
) {
    let dj = span.j - s.j0;
    let djf = dj as f32;
    // The same exact products rule 7 forms, so every sum below is bit for bit inv_depth's.
    let tj = [s.wj_hi * djf, s.wj_lo * djf];
    let row = bound.row(dj);
    let (keys, _) = keys.as_chunks_mut::<{ SEG as usize }>();
    let (ids, _) = ids.as_chunks_mut::<{ SEG as usize }>();
    let mut a = span.lo;
    while a <= span.hi {
        let seg = a / SEG;
        let first = seg * SEG;
        let seg_end = (first + SEG).min(width) - 1;
        let b = span.hi.min(seg_end);
        if !bound.loses(row, a - s.i0, b - s.i0, far[seg as usize]) {
            let d0 = first as i32 - s.i0 as i32;
            let (k, i) = (&mut keys[seg as usize], &mut ids[seg as usize]);
            let seg_far = draw_segment(s, d0, [a - first, b - first], tj, k, i);
            // Keys only ever get smaller, so an old farthest key stays a valid bound; a span
            // that covers the whole segment gives the exact one (or EMPTY, from a last
            // segment's padding, which only turns the test off there).
            if a == first && b == seg_end {
                far[seg as usize] = seg_far;
            }
        }
        a = b + 1;
    }
}

/// The z-test of a whole segment, the first pixel at offset `d0` in the triangle's box, for
/// its pixels `lo..=hi` (the others keep their values), with row terms `tj`; returns the
/// farthest key left in it. A fixed-size loop, so that every step is a vector operation.
/// Offsets are below 2^14, so converting them through `i32` (which vector units have) gives
/// `f32(di)` exactly; the masked-off pixels' values are computed and dropped.
#[inline(always)]
fn draw_segment(
    s: &TriSetup,
    d0: i32,
    [lo, hi]: [u32; 2],
    [tj_hi, tj_lo]: [f32; 2],
    keys: &mut [u32; SEG as usize],
    ids: &mut [u32; SEG as usize],
) -> u32 {
    let mut far = 0u32;
    for x in 0..SEG {
        let (key, id) = (keys[x as usize], ids[x as usize]);
        let di = (d0 + x as i32) as f32;
        let w = s.w0 + s.wi_hi * di;
        let w = w + tj_hi;
        let w = w + s.wi_lo * di;
        let w = w + tj_lo;
        let new = depth_key(w);
        let nearer = new < key || (new == key && s.obj < id);
        let take = (lo <= x) & (x <= hi) & nearer;
        ids[x as usize] = if take { s.obj } else { id };
        keys[x as usize] = if take { new } else { key };
        far = far.max(keys[x as usize]);
    }
    far
}

#[cfg(test)]
mod tests {
    use super::super::Tri;
    use super::*;

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
