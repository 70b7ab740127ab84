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

    /// A key no larger than any the triangle gives in a row at pixel offsets `da..=db`: the
    /// upper bound rounded up to an `f32` (whose bits order like the value) and keyed. A
    /// segment whose farthest key is below it is lost with one integer comparison.
    #[inline]
    fn key_floor(&self, row: [f64; 2], da: u32, db: u32) -> u32 {
        let upper = self.upper_over(row, da, db);
        let mut w = upper as f32;
        if f64::from(w) < upper {
            w = w.next_up();
        }
        u32::MAX - w.to_bits()
    }
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
            c.width,
            &mut c.keys[row.clone()],
            &mut c.ids[row],
            &mut c.far[r * c.segs..(r + 1) * c.segs],
        );
    }
}

/// Draws pixels `lo..=hi` of row `j` into a row `width` pixels wide, held in whole segments,
/// one segment at a time, skipping a segment where the triangle cannot come strictly nearer
/// than the farthest key already there.
#[inline(always)]
fn draw_span(
    s: &TriSetup,
    bound: &DepthBound,
    [j, lo, hi]: [u32; 3],
    width: u32,
    keys: &mut [u32],
    ids: &mut [u32],
    far: &mut [u32],
) {
    let dj = j - s.j0;
    let djf = dj as f32;
    // The same exact products rule 7 forms, so every sum below is bit for bit inv_depth's.
    let tj = [s.wj_hi * djf, s.wj_lo * djf];
    let row = bound.row(dj);
    // One bound for the whole span first, compared as an integer with each segment's key; a
    // span over several segments is bounded again per segment (tighter on a slanted
    // surface) only where that did not settle it. Over one segment the two are the same.
    let floor = bound.key_floor(row, lo - s.i0, hi - s.i0);
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
        let lost = farthest < floor || (several && bound.loses(row, a - s.i0, b - s.i0, farthest));
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
