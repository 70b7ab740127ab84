//! The CPU rasteriser: rules 9–10 of [`super`] over bands of rows in parallel, each triangle
//! drawn as spans, and the merge of images rasterised in chunks.

use std::cell::RefCell;

use rayon::prelude::*;

use super::draw::{draw_tri, Canvas, DepthBound, Run, SEG};
use super::triangle::*;
use super::{ObjectStats, RasterJob, RasterOut, EMPTY};
use crate::{Error, Result};

/// Rows per band of the CPU z-buffer: bands are rasterised in parallel, each with its own
/// buffers, so a frame with many boxes uses every core.
const BAND_ROWS: u32 = 32;

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
    /// The spans drawn, triangle after triangle, and where each triangle's end.
    runs: Vec<Run>,
    ends: Vec<u32>,
    /// Per row, a bit per pixel covered by the object being counted (`words` words a row),
    /// and the words `lo..hi` of it that hold any: all zero between objects.
    bits: Vec<u64>,
    bit_reach: Vec<(u32, u32)>,
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
            runs: Vec::new(),
            ends: Vec::new(),
            bits: Vec::new(),
            bit_reach: Vec::new(),
            dirty: false,
        }
    }

    /// Readies the buffers of a band of `rows` rows of `stride` pixels, `segs` segments and
    /// `words` bit words.
    fn start(&mut self, rows: usize, stride: usize, segs: usize, words: usize) {
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
        self.runs.clear();
        self.ends.clear();
        self.bits.clear();
        self.bits.resize(rows * words, 0);
        self.bit_reach.clear();
        self.bit_reach.resize(rows, (u32::MAX, 0));
        self.dirty = true;
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
    // so many small triangles cost what they cover, not bands × triangles. Beside each, the
    // positions in it of its triangles in index order (so object by object, `setups` being
    // sorted by object), for the projected-pixel count; `slot` holds, per triangle and band it
    // reaches, its position there, from `first_slot[t]` on.
    let band_of = |s: &TriSetup| (s.j0 / BAND_ROWS) as usize..=(s.j1 / BAND_ROWS) as usize;
    let mut first_slot = Vec::with_capacity(setups.len());
    let mut slots = 0usize;
    for s in &setups {
        first_slot.push(slots);
        slots += band_of(s).count();
    }
    let nbands = job.height.div_ceil(BAND_ROWS) as usize;
    let mut bins: Vec<Vec<u32>> = vec![Vec::new(); nbands];
    let mut slot = vec![0u32; slots];
    for &t in &near_first {
        let range = band_of(&setups[t as usize]);
        let first = first_slot[t as usize];
        for (k, bin) in bins[range].iter_mut().enumerate() {
            slot[first + k] = bin.len() as u32;
            bin.push(t);
        }
    }
    drop(near_first);
    let mut by_index: Vec<Vec<u32>> = bins.iter().map(|b| Vec::with_capacity(b.len())).collect();
    for (t, s) in setups.iter().enumerate() {
        let range = band_of(s);
        for (k, order) in by_index[range].iter_mut().enumerate() {
            order.push(slot[first_slot[t] + k]);
        }
    }
    drop(slot);
    let tris = Tris {
        g: &g,
        setups: &setups,
        bounds: &bounds,
        bins: &bins,
        by_index: &by_index,
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

/// The triangles of one image, set up once and shared by the bands.
struct Tris<'a> {
    g: &'a Grid,
    /// Sorted by object.
    setups: &'a [TriSetup],
    bounds: &'a [DepthBound],
    /// Per band of [`BAND_ROWS`] rows, the indices into `setups` of the triangles that reach
    /// it, nearest first.
    bins: &'a [Vec<u32>],
    /// Per band, the positions in its bin of its triangles in index order.
    by_index: &'a [Vec<u32>],
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
        scratch.start(rows, stride, segs, w.div_ceil(64));
        let b = (ja / BAND_ROWS) as usize;
        let bin = &self.bins[b];
        let mut canvas = Canvas {
            ja,
            jb,
            width: self.g.width,
            stride,
            segs,
            keys: &mut scratch.keys,
            ids: &mut scratch.ids,
            far: &mut scratch.far,
            touched: &mut scratch.touched,
            runs: &mut scratch.runs,
        };
        for &t in bin {
            let (s, bound) = (&self.setups[t as usize], &self.bounds[t as usize]);
            draw_tri(self.g, s, bound, &mut canvas);
            scratch.ends.push(canvas.runs.len() as u32);
        }
        let mut objects = vec![ObjectStats::default(); self.num_objects];
        self.count_projected(b, scratch, &mut objects);
        let Scratch {
            keys, ids, touched, ..
        } = scratch;
        // Row by row, while a row is in the nearest cache: copied out, counted, and left
        // EMPTY again where anything was drawn.
        let mut out = out;
        for (r, &(lo, hi)) in touched.iter().enumerate() {
            if let Some((keys_out, ids_out)) = &mut out {
                let (row, own) = (r * w..(r + 1) * w, r * stride..r * stride + w);
                keys_out[row.clone()].copy_from_slice(&keys[own.clone()]);
                ids_out[row].copy_from_slice(&ids[own]);
            }
            if lo < hi {
                let run = r * stride + lo as usize..r * stride + hi as usize;
                add_visible_row(&ids[run.clone()], lo, ja + r as u32, &mut objects);
                keys[run.clone()].fill(EMPTY);
                ids[run].fill(EMPTY);
            }
        }
        scratch.dirty = false;
        objects
    }

    /// Each object's projected pixels in band `b`: the union of its triangles' row spans as
    /// drawn (`scratch.runs`), object by object, as bits set in a row's words and counted.
    fn count_projected(&self, b: usize, scratch: &mut Scratch, objects: &mut [ObjectStats]) {
        let (bin, order) = (&self.bins[b], &self.by_index[b]);
        let words = (self.g.width as usize).div_ceil(64);
        let Scratch {
            runs,
            ends,
            bits,
            bit_reach,
            ..
        } = scratch;
        let runs_of = |p: u32| {
            let p = p as usize;
            let start = if p == 0 { 0 } else { ends[p - 1] as usize };
            &runs[start..ends[p] as usize]
        };
        let obj = |p: u32| self.setups[bin[p as usize] as usize].obj;
        for group in order.chunk_by(|&a, &b| obj(a) == obj(b)) {
            let mut count = 0u32;
            if let [p] = group {
                // One triangle: one span per row, nothing to merge.
                count = runs_of(*p).iter().map(|r| r.hi - r.lo + 1).sum();
            } else {
                for &p in group {
                    for r in runs_of(p) {
                        let row = &mut bits[r.r as usize * words..(r.r as usize + 1) * words];
                        let (wa, wb) = ((r.lo / 64) as usize, (r.hi / 64) as usize);
                        let (first, last) = (!0u64 << (r.lo % 64), !0u64 >> (63 - r.hi % 64));
                        if wa == wb {
                            row[wa] |= first & last;
                        } else {
                            row[wa] |= first;
                            row[wa + 1..wb].fill(!0);
                            row[wb] |= last;
                        }
                        let reach = &mut bit_reach[r.r as usize];
                        *reach = (reach.0.min(wa as u32), reach.1.max(wb as u32 + 1));
                    }
                }
                for (r, reach) in bit_reach.iter_mut().enumerate() {
                    if reach.0 < reach.1 {
                        let set =
                            &mut bits[r * words + reach.0 as usize..r * words + reach.1 as usize];
                        count += set.iter().map(|v| v.count_ones()).sum::<u32>();
                        set.fill(0);
                        *reach = (u32::MAX, 0);
                    }
                }
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
