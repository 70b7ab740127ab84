//! Spatial relations of the scene graph (`docs/metavqa.md` §4), all in the ego's BEV
//! frame (x forward, y left), so the reference heading V of the box-extent rule is +x.
//!
//! * [`position`]: the box-extent sidedness rule: B is left of A when every vertex of B lies
//!   on or left of A's leftmost vertex, front when every vertex lies on or ahead of A's
//!   frontmost vertex, and so on; neither gives 0 on that axis ("next-to" when both are 0).
//! * [`heading_sector`]: a relative heading angle, clockwise degrees wrapped to [0, 360), in
//!   half-open sectors `[edge_k, edge_k+1)` (the published code's open bounds left exact edges
//!   without a sector).
//! * [`bin`]: half-open distance and speed bins `[a, b)`, so 0 m is "very close" and every
//!   value has exactly one bin.
//! * [`overlap`]: the separating-axis test of two convex polygons (touching counts).
//! * [`crash_still`], [`crash_dynamic`]: boxes swept along their headings in fixed steps.

use serde::Serialize;

/// A point or vector in the BEV plane.
pub(crate) type P2 = [f64; 2];

/// A BEV box: its 4 corners, counter-clockwise.
pub(crate) type Quad = [P2; 4];

/// The corners of a `length × width` box centred at `c` facing `yaw` (rad, from +x towards +y).
pub(crate) fn quad(c: P2, yaw: f64, length: f64, width: f64) -> Quad {
    let (s, co) = yaw.sin_cos();
    let (hl, hw) = (length / 2.0, width / 2.0);
    let f = [co * hl, s * hl];
    let l = [-s * hw, co * hw];
    [
        [c[0] + f[0] + l[0], c[1] + f[1] + l[1]],
        [c[0] - f[0] + l[0], c[1] - f[1] + l[1]],
        [c[0] - f[0] - l[0], c[1] - f[1] - l[1]],
        [c[0] + f[0] - l[0], c[1] + f[1] - l[1]],
    ]
}

/// `q` moved by `d`.
pub(crate) fn shifted(q: &Quad, d: P2) -> Quad {
    q.map(|p| [p[0] + d[0], p[1] + d[1]])
}

/// The 9 relative positions (side, front) of `docs/metavqa.md` §4.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Pos {
    L,
    Lb,
    Lf,
    B,
    F,
    R,
    Rb,
    Rf,
    M,
}

impl Pos {
    pub const ALL: [Pos; 9] = [
        Pos::Lf,
        Pos::Rf,
        Pos::Lb,
        Pos::Rb,
        Pos::F,
        Pos::B,
        Pos::L,
        Pos::R,
        Pos::M,
    ];

    /// From (side, front): side −1 left, +1 right; front +1 front, −1 back.
    pub(crate) fn from_axes(side: i8, front: i8) -> Pos {
        match (side, front) {
            (-1, 0) => Pos::L,
            (-1, -1) => Pos::Lb,
            (-1, 1) => Pos::Lf,
            (0, -1) => Pos::B,
            (0, 1) => Pos::F,
            (1, 0) => Pos::R,
            (1, -1) => Pos::Rb,
            (1, 1) => Pos::Rf,
            _ => Pos::M,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Pos::L => "l",
            Pos::Lb => "lb",
            Pos::Lf => "lf",
            Pos::B => "b",
            Pos::F => "f",
            Pos::R => "r",
            Pos::Rb => "rb",
            Pos::Rf => "rf",
            Pos::M => "m",
        }
    }

    pub(crate) fn from_code(s: &str) -> Option<Pos> {
        Pos::ALL.into_iter().find(|p| p.code() == s)
    }

    /// The option text (`POSITION2CHOICE`).
    pub fn text(self) -> &'static str {
        match self {
            Pos::L => "left",
            Pos::Lb => "left-back",
            Pos::Lf => "left-front",
            Pos::B => "back",
            Pos::F => "front",
            Pos::R => "right",
            Pos::Rb => "right-back",
            Pos::Rf => "right-front",
            Pos::M => "next-to",
        }
    }

    /// Diagonal sectors (two axes set).
    pub(crate) fn is_diagonal(self) -> bool {
        matches!(self, Pos::Lb | Pos::Lf | Pos::Rb | Pos::Rf)
    }
}

/// Where box `b` lies relative to box `a` (the box-extent rule along +x).
pub(crate) fn position(a: &Quad, b: &Quad) -> Pos {
    let (mut a_left, mut a_right) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut a_front, mut a_back) = (f64::NEG_INFINITY, f64::INFINITY);
    for p in a {
        a_left = a_left.max(p[1]);
        a_right = a_right.min(p[1]);
        a_front = a_front.max(p[0]);
        a_back = a_back.min(p[0]);
    }
    let side = if b.iter().all(|p| p[1] >= a_left) {
        -1
    } else if b.iter().all(|p| p[1] <= a_right) {
        1
    } else {
        0
    };
    let front = if b.iter().all(|p| p[0] >= a_front) {
        1
    } else if b.iter().all(|p| p[0] <= a_back) {
        -1
    } else {
        0
    };
    Pos::from_axes(side, front)
}

/// `a − b` in degrees wrapped to (−180, 180].
pub(crate) fn wrap_deg(d: f64) -> f64 {
    let w = d.rem_euclid(360.0);
    if w > 180.0 {
        w - 360.0
    } else {
        w
    }
}

/// Clockwise degrees in [0, 360) of a yaw (rad, counter-clockwise from our front).
pub(crate) fn clockwise_deg(yaw: f64) -> f64 {
    // Rounded to 1e-9° so that a heading given in whole degrees (15° through radians and
    // back is 14.999999999999998°) lands in the sector its degrees name.
    let d = ((-yaw.to_degrees()).rem_euclid(360.0) * 1e9).round() / 1e9;
    // rem_euclid and the rounding can reach exactly 360 for tiny negative inputs.
    if d >= 360.0 {
        0.0
    } else {
        d
    }
}

/// The heading sectors `[edge_k, edge_k+1)` for k = 0..7 of the 8 clockwise edges; the rest
/// (from the last edge round to the first) is [`Pos::F`].
pub(crate) const HEADING_SECTORS: [Pos; 7] =
    [Pos::Rf, Pos::R, Pos::Rb, Pos::B, Pos::Lb, Pos::L, Pos::Lf];

/// The heading sector of a relative heading `yaw` (rad) under the 8 clockwise `edges`.
pub(crate) fn heading_sector(yaw: f64, edges: &[f64]) -> Pos {
    let d = clockwise_deg(yaw);
    for (k, s) in HEADING_SECTORS.iter().enumerate() {
        if let (Some(lo), Some(hi)) = (edges.get(k), edges.get(k + 1)) {
            if d >= *lo && d < *hi {
                return *s;
            }
        }
    }
    Pos::F
}

/// The index of the half-open bin `[edge_{k−1}, edge_k)` holding `v`.
pub(crate) fn bin(v: f64, edges: &[f64]) -> usize {
    edges.iter().take_while(|e| v >= **e).count()
}

fn project(q: &Quad, axis: P2) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in q {
        let v = p[0] * axis[0] + p[1] * axis[1];
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

/// Whether two convex quads share a point (separating-axis test over both quads' edge normals).
pub(crate) fn overlap(a: &Quad, b: &Quad) -> bool {
    for q in [a, b] {
        for k in 0..4 {
            let (p0, p1) = (q[k], q[(k + 1) % 4]);
            let axis = [p0[1] - p1[1], p1[0] - p0[0]];
            let (a0, a1) = project(a, axis);
            let (b0, b1) = project(b, axis);
            if a1 < b0 || b1 < a0 {
                return false;
            }
        }
    }
    true
}

/// Unit vector of `yaw`.
pub(crate) fn unit(yaw: f64) -> P2 {
    let (s, c) = yaw.sin_cos();
    [c, s]
}

/// The first step `k` in `0..steps` at which `a` moved `k · step` along `heading` overlaps the
/// still box `b`.
pub(crate) fn crash_still(a: &Quad, heading: f64, b: &Quad, steps: u32, step: f64) -> Option<u32> {
    let u = unit(heading);
    (0..steps).find(|&k| {
        let d = f64::from(k) * step;
        overlap(&shifted(a, [u[0] * d, u[1] * d]), b)
    })
}

/// The first step at which `a` and `b`, both moved `k · step` along their headings, overlap.
pub(crate) fn crash_dynamic(
    a: &Quad,
    ha: f64,
    b: &Quad,
    hb: f64,
    steps: u32,
    step: f64,
) -> Option<u32> {
    let (ua, ub) = (unit(ha), unit(hb));
    (0..steps).find(|&k| {
        let d = f64::from(k) * step;
        overlap(
            &shifted(a, [ua[0] * d, ua[1] * d]),
            &shifted(b, [ub[0] * d, ub[1] * d]),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis_box(x0: f64, y0: f64, x1: f64, y1: f64) -> Quad {
        [[x1, y1], [x0, y1], [x0, y0], [x1, y0]]
    }

    #[test]
    fn sidedness_by_hand() {
        let ego = axis_box(-2.0, -1.0, 2.0, 1.0);
        assert_eq!(position(&ego, &axis_box(5.0, -0.5, 7.0, 0.5)), Pos::F);
        assert_eq!(position(&ego, &axis_box(5.0, 1.0, 7.0, 3.0)), Pos::Lf);
        assert_eq!(position(&ego, &axis_box(-1.0, -4.0, 1.0, -2.0)), Pos::R);
        assert_eq!(position(&ego, &axis_box(-9.0, -4.0, -3.0, -1.5)), Pos::Rb);
        // Straddling our right edge: neither right nor centred, so only the axis that is clear.
        assert_eq!(position(&ego, &axis_box(5.0, -1.5, 7.0, -0.5)), Pos::F);
        assert_eq!(position(&ego, &axis_box(-1.0, -0.5, 1.0, 0.5)), Pos::M);
    }

    #[test]
    fn sectors_and_bins_are_half_open() {
        let e = [15.0, 75.0, 105.0, 165.0, 195.0, 255.0, 285.0, 345.0];
        let at = |deg_cw: f64| heading_sector(-deg_cw.to_radians(), &e);
        assert_eq!(at(0.0), Pos::F);
        assert_eq!(at(14.9), Pos::F);
        assert_eq!(at(15.0), Pos::Rf);
        assert_eq!(at(90.0), Pos::R);
        assert_eq!(at(180.0), Pos::B);
        assert_eq!(at(270.0), Pos::L);
        assert_eq!(at(345.0), Pos::F);
        assert_eq!(at(344.0), Pos::Lf);
        let d = [2.0, 10.0, 30.0];
        assert_eq!(bin(0.0, &d), 0);
        assert_eq!(bin(2.0, &d), 1);
        assert_eq!(bin(29.99, &d), 2);
        assert_eq!(bin(30.0, &d), 3);
        assert_eq!(wrap_deg(194.0), -166.0);
        assert_eq!(wrap_deg(-180.0), 180.0);
    }

    #[test]
    fn separating_axes() {
        let a = axis_box(0.0, 0.0, 2.0, 2.0);
        assert!(overlap(&a, &axis_box(1.0, 1.0, 3.0, 3.0)));
        assert!(!overlap(&a, &axis_box(2.1, 0.0, 3.0, 2.0)));
        // A diamond whose bounding box overlaps but whose edges do not.
        let d = quad([3.2, 3.2], std::f64::consts::FRAC_PI_4, 2.0, 2.0);
        assert!(!overlap(&a, &d));
        assert_eq!(
            crash_still(&a, 0.0, &axis_box(10.0, 0.5, 11.0, 1.5), 50, 1.0),
            Some(8)
        );
    }
}
