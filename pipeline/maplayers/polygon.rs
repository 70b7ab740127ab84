//! Polygons with holes and the even-odd point-in-polygon test.

/// A polygon of a map layer: an exterior ring and holes, global x/y in metres. Rings are
/// implicitly closed (the last vertex connects to the first).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Polygon {
    /// The layer record's token.
    pub token: String,
    pub exterior: Vec<[f64; 2]>,
    pub holes: Vec<Vec<[f64; 2]>>,
    /// Axis-aligned bounds `[xmin, ymin, xmax, ymax]`, to reject far points cheaply.
    pub bounds: [f64; 4],
}

impl Polygon {
    pub fn new(token: String, exterior: Vec<[f64; 2]>, holes: Vec<Vec<[f64; 2]>>) -> Self {
        let mut b = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for p in &exterior {
            b = [
                b[0].min(p[0]),
                b[1].min(p[1]),
                b[2].max(p[0]),
                b[3].max(p[1]),
            ];
        }
        Self {
            token,
            exterior,
            holes,
            bounds: b,
        }
    }

    /// Inside the exterior and in no hole. Points exactly on an edge follow the half-open
    /// crossing rule of [`point_in_ring`], so two polygons sharing an edge never both claim it.
    pub fn contains(&self, p: [f64; 2]) -> bool {
        let b = &self.bounds;
        if p[0] < b[0] || p[0] > b[2] || p[1] < b[1] || p[1] > b[3] {
            return false;
        }
        point_in_ring(&self.exterior, p) && !self.holes.iter().any(|h| point_in_ring(h, p))
    }

    /// The first exterior edge the segment `p0 → p1` crosses and where, as the fraction along
    /// the segment.
    pub(crate) fn first_crossing(
        &self,
        p0: [f64; 2],
        p1: [f64; 2],
    ) -> Option<(f64, [[f64; 2]; 2])> {
        let n = self.exterior.len();
        let mut best: Option<(f64, [[f64; 2]; 2])> = None;
        for i in 0..n {
            let (a, b) = (self.exterior[i], self.exterior[(i + 1) % n]);
            if let Some(t) = segment_hit(p0, p1, a, b) {
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, [a, b]));
                }
            }
        }
        best
    }
}

/// Even-odd test: a horizontal ray from `p` towards +x crosses the ring an odd number of times.
/// Each edge is half-open in y (`min ≤ y < max`), so vertices are never counted twice.
pub fn point_in_ring(ring: &[[f64; 2]], p: [f64; 2]) -> bool {
    let n = ring.len();
    if n < 3 {
        return false;
    }
    let mut inside = false;
    let mut j = n - 1;
    for i in 0..n {
        let (a, b) = (ring[i], ring[j]);
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
            if p[0] < x {
                inside = !inside;
            }
        }
        j = i;
    }
    inside
}

/// Where the segment `p0 → p1` crosses the segment `a → b`, as the fraction `t ∈ [0, 1]` along
/// `p0 → p1`; `None` when they do not cross (parallel segments never do).
pub fn segment_hit(p0: [f64; 2], p1: [f64; 2], a: [f64; 2], b: [f64; 2]) -> Option<f64> {
    let r = [p1[0] - p0[0], p1[1] - p0[1]];
    let s = [b[0] - a[0], b[1] - a[1]];
    let den = r[0] * s[1] - r[1] * s[0];
    if den == 0.0 {
        return None;
    }
    let q = [a[0] - p0[0], a[1] - p0[1]];
    let t = (q[0] * s[1] - q[1] * s[0]) / den;
    let u = (q[0] * r[1] - q[1] * r[0]) / den;
    ((0.0..=1.0).contains(&t) && (0.0..=1.0).contains(&u)).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x0: f64, y0: f64, x1: f64, y1: f64) -> Vec<[f64; 2]> {
        vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    }

    #[test]
    fn inside_outside_and_holes() {
        let p = Polygon::new(
            "a".into(),
            square(0.0, 0.0, 10.0, 10.0),
            vec![square(4.0, 4.0, 6.0, 6.0)],
        );
        assert!(p.contains([1.0, 1.0]));
        assert!(!p.contains([5.0, 5.0]));
        assert!(!p.contains([11.0, 5.0]));
        assert!(!p.contains([-0.5, 5.0]));
    }

    #[test]
    fn shared_edge_belongs_to_one_polygon() {
        let a = Polygon::new("a".into(), square(0.0, 0.0, 1.0, 1.0), vec![]);
        let b = Polygon::new("b".into(), square(1.0, 0.0, 2.0, 1.0), vec![]);
        let p = [1.0, 0.5];
        assert_eq!(u8::from(a.contains(p)) + u8::from(b.contains(p)), 1);
    }

    #[test]
    fn first_crossed_edge() {
        let p = Polygon::new("a".into(), square(0.0, 0.0, 10.0, 2.0), vec![]);
        // Leaves through the top (y = 2) edge before reaching x = 10.
        let e = p.first_crossing([5.0, 1.0], [12.0, 3.0]).map(|(_, e)| e);
        assert_eq!(e, Some([[10.0, 2.0], [0.0, 2.0]]));
        assert_eq!(
            segment_hit([0.0, 0.0], [2.0, 0.0], [1.0, -1.0], [1.0, 1.0]),
            Some(0.5)
        );
    }
}
