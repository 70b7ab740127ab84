//! Drawing one triangle into a band of the CPU z-buffer (rules 7–10 of [`super`]): its row
//! spans, the early depth test that skips what it cannot win, and the vector z-test.

use super::triangle::{depth_key, Grid, Spans, TriSetup};
use super::EMPTY;

/// Pixels per row segment of the early depth test: a span is tested against its segment's
/// farthest key once, then, only if it can win somewhere, the whole segment is z-tested with
/// the pixels outside the span masked off, so every pixel takes the vector path.
pub(super) const SEG: u32 = 32;

/// Twice the relative rounding error of the four `f32` additions of rule 7 (4 · 2^-24).
const ROUNDING: f64 = 1.0 / (1u64 << 21) as f64;

/// What the early test needs to bound a triangle's inverse depth over part of a row from
/// above, so that it never skips a pixel the triangle would win.
pub(super) struct DepthBound {
    /// The stored plane in `f64`: `w0 + a·di + b·dj`, with `a = wi_hi + wi_lo` (exact).
    w0: f64,
    a: f64,
    b: f64,
    /// Absolute values of the terms, for the rounding error of the four `f32` additions.
    abs_w0: f64,
    abs_a: f64,
    abs_b: f64,
    /// An upper bound of `1/z` over the bounding box: draws nearer triangles first.
    pub(super) nearest: f64,
}

impl DepthBound {
    pub(super) fn new(s: &TriSetup) -> Self {
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

    /// The plane's value and its terms' magnitudes at row offset `dj`, for the bounds below.
    #[inline]
    fn row(&self, dj: u32) -> [f64; 2] {
        let dj = f64::from(dj);
        [self.w0 + self.b * dj, self.abs_w0 + self.abs_b * dj]
    }

    /// An upper bound of the inverse depth the triangle computes in a row (`row` from
    /// `DepthBound::row`) at pixel offsets `da..=db`, after the clamp of rule 8: the plane is
    /// affine, so its largest value is at an end.
    #[inline]
    fn upper_over(&self, [w_row, mag_row]: [f64; 2], da: u32, db: u32) -> f64 {
        let (da, db) = (f64::from(da), f64::from(db));
        let exact = w_row + self.a * da + (self.a * (db - da)).max(0.0);
        let upper = exact + (mag_row + self.abs_a * db) * ROUNDING;
        upper.max(f64::from(f32::MIN_POSITIVE))
    }

    /// Whether the triangle, in a row at pixel offsets `da..=db`, is strictly farther than
    /// every pixel of a segment whose farthest key is `farthest`.
    #[inline]
    fn loses(&self, row: [f64; 2], da: u32, db: u32, farthest: u32) -> bool {
        if farthest == EMPTY {
            return false;
        }
        let w_far = f64::from(f32::from_bits(u32::MAX - farthest));
        self.upper_over(row, da, db) < w_far
    }

    /// A key no larger than any the triangle gives in a row at pixel offsets `da..=db`. A
    /// segment whose farthest key is below it is lost with one integer comparison.
    #[inline]
    fn key_floor(&self, row: [f64; 2], da: u32, db: u32) -> u32 {
        key_above(self.upper_over(row, da, db))
    }

    /// A key no larger than any the triangle gives at row offsets `dja..=djb` and pixel
    /// offsets `0..=di_max`: the plane is affine, so its largest value is at a corner.
    #[inline]
    fn key_floor_box(&self, dja: u32, djb: u32, di_max: u32) -> u32 {
        let (dja, djb, di_max) = (f64::from(dja), f64::from(djb), f64::from(di_max));
        let upper = [(0.0, dja), (di_max, dja), (0.0, djb), (di_max, djb)]
            .iter()
            .map(|&(i, j)| self.upper(i, j, di_max, djb))
            .fold(f64::from(f32::MIN_POSITIVE), f64::max);
        key_above(upper)
    }
}

/// The key of the smallest `f32` not below `upper` (positive, at least the clamp of rule 8):
/// `f32` bits order like the values, so no inverse depth up to `upper` keys below it.
#[inline]
fn key_above(upper: f64) -> u32 {
    let mut w = upper as f32;
    if f64::from(w) < upper {
        w = w.next_up();
    }
    u32::MAX - w.to_bits()
}

/// A row span drawn in a band: row `r` of the band, pixels `lo..=hi`. The band keeps them so
/// that the projected-pixel count needs no second walk of the triangles' rows.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Run {
    pub(super) r: u32,
    pub(super) lo: u32,
    pub(super) hi: u32,
}

/// The buffers of one band a triangle is drawn into: rows `ja..=jb`, each `stride` pixels
/// (whole segments) of which the first `width` are the image's.
pub(super) struct Canvas<'a> {
    pub(super) ja: u32,
    pub(super) jb: u32,
    pub(super) width: u32,
    pub(super) stride: usize,
    pub(super) segs: usize,
    pub(super) keys: &'a mut [u32],
    pub(super) ids: &'a mut [u32],
    /// Per row and segment, a key no nearer than the farthest one there.
    pub(super) far: &'a mut [u32],
    /// Per row, the pixels `lo..hi` any span reached.
    pub(super) touched: &'a mut [(u32, u32)],
    pub(super) runs: &'a mut Vec<Run>,
}

crate::cpu::avx2_clone! {
    /// Draws the triangle's spans in the canvas's rows and records them. One call per
    /// triangle and band, so the CPU feature is looked up that often, not per span.
    pub(super) fn draw_tri(g: &Grid, s: &TriSetup, bound: &DepthBound, c: &mut Canvas<'_>)
        = draw_tri_any;
}

#[inline(always)]
pub(super) fn draw_tri_any(g: &Grid, s: &TriSetup, bound: &DepthBound, c: &mut Canvas<'_>) {
    let (ra, rb) = (c.ja.max(s.j0), c.jb.min(s.j1));
    if ra > rb {
        return;
    }
    // Most triangles are wholly behind what nearer ones drew in a band (the frames are busy
    // with overlaps): one key bound over the triangle's box in the band, against the farthest
    // key of every segment there, settles them without a depth test per span. Their spans
    // are still recorded, for the projected count.
    let coarse = bound.key_floor_box(ra - s.j0, rb - s.j0, s.i1 - s.i0);
    let (ca, cb) = ((s.i0 / SEG) as usize, (s.i1 / SEG) as usize);
    let mut farthest = 0u32;
    for r in (ra - c.ja) as usize..=(rb - c.ja) as usize {
        let far = &c.far[r * c.segs..(r + 1) * c.segs];
        farthest = far[ca..=cb].iter().fold(farthest, |m, &k| m.max(k));
    }
    if farthest < coarse {
        for (j, lo, hi) in Spans::new(g, s, c.ja, c.jb) {
            c.runs.push(Run {
                r: j - c.ja,
                lo,
                hi,
            });
        }
        return;
    }
    for (j, lo, hi) in Spans::new(g, s, c.ja, c.jb) {
        let r = (j - c.ja) as usize;
        c.runs.push(Run {
            r: r as u32,
            lo,
            hi,
        });
        let reach = &mut c.touched[r];
        *reach = (reach.0.min(lo), reach.1.max(hi + 1));
        let row = r * c.stride..(r + 1) * c.stride;
        draw_span(
            s,
            bound,
            [j, lo, hi],
            coarse,
            c.width,
            &mut c.keys[row.clone()],
            &mut c.ids[row],
            &mut c.far[r * c.segs..(r + 1) * c.segs],
        );
    }
}

/// Draws pixels `lo..=hi` of row `j` into a row `width` pixels wide, held in whole segments,
/// one segment at a time, skipping a segment where the triangle cannot come strictly nearer
/// than the farthest key already there. `coarse` is a key no larger than any the triangle
/// gives in the band.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn draw_span(
    s: &TriSetup,
    bound: &DepthBound,
    [j, lo, hi]: [u32; 3],
    coarse: u32,
    width: u32,
    keys: &mut [u32],
    ids: &mut [u32],
    far: &mut [u32],
) {
    let dj = j - s.j0;
    let djf = dj as f32;
    // The same exact products rule 7 forms, so every sum below is bit for bit inv_depth's.
    let tj = [s.wj_hi * djf, s.wj_lo * djf];
    // Tighter bounds, tried in turn only where the one before did not settle a segment: the
    // triangle's in the band (an integer compare), the span's (computed once, when first
    // needed), and, for a span over several segments, the segment's own (tighter on a
    // slanted surface; over one segment it is the span's).
    let mut fine: Option<([f64; 2], u32)> = None;
    let several = lo / SEG != hi / SEG;
    let (keys, _) = keys.as_chunks_mut::<{ SEG as usize }>();
    let (ids, _) = ids.as_chunks_mut::<{ SEG as usize }>();
    let mut a = lo;
    while a <= hi {
        let seg = (a / SEG) as usize;
        let first = seg as u32 * SEG;
        let seg_end = (first + SEG).min(width) - 1;
        let b = hi.min(seg_end);
        let farthest = far[seg];
        let lost = farthest < coarse || {
            let (row, floor) = *fine.get_or_insert_with(|| {
                let row = bound.row(dj);
                (row, bound.key_floor(row, lo - s.i0, hi - s.i0))
            });
            farthest < floor || (several && bound.loses(row, a - s.i0, b - s.i0, farthest))
        };
        if !lost {
            let d0 = first as i32 - s.i0 as i32;
            // Keys only ever get smaller, and the z-test returns the largest of all the
            // segment's keys, drawn or not: the exact bound (EMPTY while any pixel is, as in a
            // last segment's padding, which only turns the test off there).
            far[seg] = draw_segment(
                s,
                d0,
                [a - first, b - first],
                tj,
                &mut keys[seg],
                &mut ids[seg],
            );
        }
        a = b + 1;
    }
}

/// The z-test of a whole segment, the first pixel at offset `d0` in the triangle's box, for
/// its pixels `lo..=hi` (the others keep their values), with row terms `tj`; returns the
/// farthest key left in it. A fixed-size loop, so that every step is a vector operation.
/// Offsets are below 2^14, so converting them through `i32` (which vector units have) gives
/// `f32(di)` exactly; the masked-off pixels' values are computed and dropped.
///
/// The comparisons are the signed ones vector units have: every key has its top bit set (the
/// bits of a positive `f32` are below 2^31, and EMPTY is all ones), so keys order alike as
/// `i32`; object ids are flipped at the top bit, which turns their order into the signed one.
#[inline(always)]
fn draw_segment(
    s: &TriSetup,
    d0: i32,
    [lo, hi]: [u32; 2],
    [tj_hi, tj_lo]: [f32; 2],
    keys: &mut [u32; SEG as usize],
    ids: &mut [u32; SEG as usize],
) -> u32 {
    const TOP: u32 = 1 << 31;
    let (lo, hi) = (lo as i32, hi as i32);
    let obj = (s.obj ^ TOP) as i32;
    let mut far = i32::MIN;
    for x in 0..SEG as i32 {
        let (key, id) = (keys[x as usize] as i32, ids[x as usize]);
        let di = (d0 + x) as f32;
        let w = s.w0 + s.wi_hi * di;
        let w = w + tj_hi;
        let w = w + s.wi_lo * di;
        let w = w + tj_lo;
        let new = depth_key(w) as i32;
        let nearer = new < key || (new == key && obj < (id ^ TOP) as i32);
        let take = (lo <= x) & (x <= hi) & nearer;
        ids[x as usize] = if take { s.obj } else { id };
        let kept = if take { new } else { key };
        keys[x as usize] = kept as u32;
        far = far.max(kept);
    }
    far as u32
}

#[cfg(test)]
mod tests {
    use super::super::triangle::setup;
    use super::super::Tri;
    use super::*;

    /// A band's buffers, owned.
    struct Band {
        keys: Vec<u32>,
        ids: Vec<u32>,
        far: Vec<u32>,
        touched: Vec<(u32, u32)>,
        runs: Vec<Run>,
    }

    impl Band {
        fn new(rows: usize, stride: usize, segs: usize) -> Self {
            Band {
                keys: vec![EMPTY; rows * stride],
                ids: vec![EMPTY; rows * stride],
                far: vec![EMPTY; rows * segs],
                touched: vec![(u32::MAX, 0); rows],
                runs: Vec::new(),
            }
        }

        fn canvas(&mut self, g: &Grid, ja: u32, jb: u32) -> Canvas<'_> {
            Canvas {
                ja,
                jb,
                width: g.width,
                stride: g.width.next_multiple_of(SEG) as usize,
                segs: g.width.div_ceil(SEG) as usize,
                keys: &mut self.keys,
                ids: &mut self.ids,
                far: &mut self.far,
                touched: &mut self.touched,
                runs: &mut self.runs,
            }
        }
    }

    /// The plain build of the drawing (what a CPU without AVX2 runs) leaves the same buffers
    /// as the one this CPU dispatches to, which the rasteriser's own tests hold to the rules.
    #[test]
    fn the_scalar_path_draws_what_the_dispatched_one_does() {
        let mut rng = crate::synth::tokens::Rng::new(0x6a09_e667, "scalar draw");
        let mut next = move || rng.below(1_000_000) as f32 / 1_000_000.0;
        for case in 0..60 {
            let (width, height) = (40 + (next() * 150.0) as u32, 8 + (next() * 40.0) as u32);
            let g = Grid::new(width, height).unwrap();
            let (ja, jb) = ((next() * 4.0) as u32, height - 1 - (next() * 4.0) as u32);
            let rows = (jb - ja + 1) as usize;
            let (stride, segs) = (
                width.next_multiple_of(SEG) as usize,
                width.div_ceil(SEG) as usize,
            );
            let (mut plain, mut dispatched) =
                (Band::new(rows, stride, segs), Band::new(rows, stride, segs));
            for t in 0..(next() * 80.0) as u32 {
                let (cx, cy) = (next() * width as f32, next() * height as f32);
                let size = 2.0 + next() * width as f32;
                let tri = Tri {
                    p: [0; 3].map(|_| {
                        [cx + (next() - 0.5) * size, cy + (next() - 0.5) * size].map(|v| v.max(0.0))
                    }),
                    z: [0; 3].map(|_| 1.0 + next() * 40.0),
                    obj: t % 7,
                };
                let Some(s) = setup(&g, &tri) else { continue };
                let bound = DepthBound::new(&s);
                draw_tri_any(&g, &s, &bound, &mut plain.canvas(&g, ja, jb));
                draw_tri(&g, &s, &bound, &mut dispatched.canvas(&g, ja, jb));
            }
            assert_eq!(plain.keys, dispatched.keys, "case {case}");
            assert_eq!(plain.ids, dispatched.ids, "case {case}");
            assert_eq!(plain.far, dispatched.far, "case {case}");
            assert_eq!(plain.touched, dispatched.touched, "case {case}");
            let runs = |b: &Band| b.runs.iter().map(|r| (r.r, r.lo, r.hi)).collect::<Vec<_>>();
            assert_eq!(runs(&plain), runs(&dispatched), "case {case}");
        }
    }
}
