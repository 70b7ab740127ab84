//! Triangle setup and the per-pixel rules 1–8 of [`super`]: the fixed-point grid, the setup
//! record a GPU kernel receives, coverage and inverse depth; the CPU rasteriser and the GPU
//! kernel both evaluate exactly these.

use super::{Tri, EMPTY, MAX_DEPTH, MAX_FIXED, MAX_SIDE};
use crate::{Error, Result};

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
    for (j, lo, hi) in Spans::new(g, s, ja, jb) {
        f(j, lo, hi);
    }
}

/// The spans `for_each_span_in` visits, as `(j, lo, hi)` items: a loop over them keeps its
/// body in the caller, where an AVX2 clone vectorises it (a closure would be compiled apart).
pub(crate) struct Spans {
    bounds: [Bound; 3],
    i0: u32,
    width: i64,
    j: u32,
    rows_left: u32,
}

impl Spans {
    #[inline]
    pub(crate) fn new(g: &Grid, s: &TriSetup, ja: u32, jb: u32) -> Self {
        let (ja, jb) = (ja.max(s.j0), jb.min(s.j1));
        let mut spans = Spans {
            bounds: [Bound::default(); 3],
            i0: s.i0,
            width: i64::from(s.i1 - s.i0),
            j: ja,
            rows_left: 0,
        };
        if ja > jb {
            return spans;
        }
        spans.rows_left = jb - ja + 1;
        let sb = g.sub_bits;
        let px0 = g.centre(s.i0);
        let py0 = g.centre(ja);
        // Pixel i0 + n passes edge k when e0 − n·step > 0, with e0 the edge function at the
        // row's first pixel plus the top-left bias. Along a row that bounds n from above
        // (step > 0: n ≤ ⌊(e0 − 1)/step⌋) or from below (step < 0: n ≥ ⌊−e0/|step|⌋ + 1);
        // outside the triangle's side the bound just empties the span. From row to row e0
        // grows by a constant, so each bound's quotient and remainder are carried along
        // instead of divided afresh.
        for (k, b) in spans.bounds.iter_mut().enumerate() {
            let (a, bb) = ((k + 1) % 3, (k + 2) % 3);
            let step = i64::from(s.y[bb] - s.y[a]) << sb;
            let e0 = i64::from(edge(s, k, px0, py0)) + i64::from(s.top_left >> k & 1);
            let grow = i64::from(s.x[bb] - s.x[a]) << sb;
            *b = if step == 0 {
                // Parallel to the rows: the same e0 sign all along a row.
                Bound::flat(e0, grow)
            } else if step > 0 {
                Bound::new(Side::Upper, e0 - 1, grow, step)
            } else {
                Bound::new(Side::Lower, -e0, -grow, -step)
            };
        }
        spans
    }
}

impl Iterator for Spans {
    type Item = (u32, u32, u32);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.rows_left > 0 {
            let (mut lo, mut hi) = (0i64, self.width);
            for b in &mut self.bounds {
                match b.side {
                    Side::Upper => hi = hi.min(b.q),
                    Side::Lower => lo = lo.max(b.q + 1),
                    Side::Flat => {
                        if b.q <= 0 {
                            hi = -1;
                        }
                    }
                }
                b.advance();
            }
            let j = self.j;
            self.j += 1;
            self.rows_left -= 1;
            if lo <= hi {
                return Some((j, self.i0 + lo as u32, self.i0 + hi as u32));
            }
        }
        None
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Side {
    /// `n ≤ q`.
    #[default]
    Upper,
    /// `n ≥ q + 1`.
    Lower,
    /// Edge parallel to the rows: `q` is e0 itself, no pixel of the row passes if `q ≤ 0`.
    Flat,
}

/// `q = ⌊num/d⌋` and `r = num − q·d` (`d > 0`) of a numerator that grows by `grow` a row,
/// kept exact with `grow = gq·d + gr`, `0 ≤ gr < d`.
#[derive(Debug, Clone, Copy, Default)]
struct Bound {
    side: Side,
    q: i64,
    r: i64,
    d: i64,
    gq: i64,
    gr: i64,
}

impl Bound {
    fn new(side: Side, num: i64, grow: i64, d: i64) -> Self {
        Bound {
            side,
            q: num.div_euclid(d),
            r: num.rem_euclid(d),
            d,
            gq: grow.div_euclid(d),
            gr: grow.rem_euclid(d),
        }
    }

    fn flat(e0: i64, grow: i64) -> Self {
        Bound {
            side: Side::Flat,
            q: e0,
            gq: grow,
            // Never reached by the remainder, which stays 0: the carry never fires.
            d: i64::MAX,
            ..Bound::default()
        }
    }

    /// To the next row.
    #[inline]
    fn advance(&mut self) {
        self.q += self.gq;
        self.r += self.gr;
        if self.r >= self.d {
            self.r -= self.d;
            self.q += 1;
        }
    }
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
}
