//! The CPU rasteriser: rules 9–10 of [`super`] over bands of rows in parallel, each triangle
//! drawn as spans, and the merge of images rasterised in chunks.

use rayon::prelude::*;

use super::triangle::*;
use super::{ObjectStats, RasterJob, RasterOut, EMPTY};
use crate::{Error, Result};

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
