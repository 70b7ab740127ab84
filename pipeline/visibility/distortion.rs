//! Lens distortion in the projection (Waymo's camera model, `docs/formats.md` §2.3),
//! for cameras whose store row carries `dist_k1..dist_k3`.
//!
//! * **Model.** On normalised coordinates `(x/z, y/z)` of the OpenCV camera frame (equal to
//!   Waymo's `(−y/x, −z/x)`): `r² = u² + v²`, radial factor `d = 1 + k1 r² + k2 r⁴ + k3 r⁶`,
//!   `u' = u d + 2 p1 u v + p2 (r² + 2u²)`, `v' = v d + p1 (r² + 2v²) + 2 p2 u v`, then
//!   `fx u' + cx`, `fy v' + cy`.
//! * **Validity.** Where `d ∉ [0.8, 1.2]` the model is invalid (Waymo reports such points as
//!   not projectable); a corner there gets no pixel. `d` depends on the radius `r` alone, so
//!   every face is first clipped to the disk around the axis where the model is valid (a
//!   256-sided cone inscribed in it): the surface up to that edge is drawn and nothing beyond.
//! * **Silhouettes.** A straight box edge images as a curve, so each near-clipped face triangle
//!   is split in four, recursively, until the image of every edge's midpoint lies within
//!   `projection.lens_chord_tolerance_px` of its chord's middle. The midpoint taken is the one
//!   perspective alone maps to the chord's middle (see `pinhole_midpoint`), so only the lens's
//!   bending counts and a face reaching the near plane is not cut to the depth limit. Pieces
//!   that cannot reach the image are dropped on the way, so boxes beside the camera cost
//!   little; the pieces' vertices are projected through the lens and the rasteriser (GPU or
//!   CPU) fills the curved outline to within that tolerance. Inverse depth is interpolated linearly on each piece (exact for
//!   pinhole, an approximation of second order in the piece size here).
//! * **Rolling shutter** is not modelled: every pixel is taken at the image's pose (the
//!   global-shutter chain of `docs/formats.md` §2.3). Against Waymo's own `projected_lidar_box`,
//!   computed with rolling shutter, expect a few pixels at speed (the tolerance is stated by
//!   `tests/it/ingest/ingest_waymo.rs` on global-shutter synthetic data).

use nalgebra::Vector3;

use super::project::{
    assemble, box_in_camera, clip_image, clip_near, BoxGeom, Camera, Projection, BOX_TRIANGLES,
};

/// Halvings of a face triangle at most (4^10 pieces), a guard for pathological lenses.
pub(crate) const MAX_DEPTH: u32 = 10;
/// Halvings spent looking for the valid part of a piece with a vertex where the model is
/// invalid. Faces are clipped to the valid disk first, so this only guards against a lens
/// whose invalid range is a ring too thin for `reach`'s scan to see.
pub(crate) const MAX_INVALID_DEPTH: u32 = 4;
/// The radial factor range where Waymo's model is valid.
pub(crate) const VALID_RADIAL: (f64, f64) = (0.8, 1.2);

/// A lens: `[k1, k2, p1, p2, k3]` and the tessellation tolerance (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lens {
    pub k: [f64; 5],
    pub chord_tolerance_px: f64,
}

impl Lens {
    /// The distorted normalised coordinates, `None` outside the valid range.
    pub(crate) fn distort(&self, u: f64, v: f64) -> Option<[f64; 2]> {
        let [k1, k2, p1, p2, k3] = self.k;
        let r2 = u * u + v * v;
        let d = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
        if !(VALID_RADIAL.0..=VALID_RADIAL.1).contains(&d) {
            return None;
        }
        Some([
            u * d + 2.0 * p1 * u * v + p2 * (r2 + 2.0 * u * u),
            v * d + p1 * (r2 + 2.0 * v * v) + 2.0 * p2 * u * v,
        ])
    }
}

/// The pixel of a camera-frame point (z > 0) through the camera's lens; `None` where the model
/// is invalid.
pub(crate) fn lens_pixel(cam: &Camera, lens: &Lens, p: &Vector3<f64>) -> Option<[f64; 2]> {
    let [u, v] = lens.distort(p.x / p.z, p.y / p.z)?;
    Some([cam.fx * u + cam.cx, cam.fy * v + cam.cy])
}

/// The point of segment `a`–`b` (both with z > 0) whose pinhole image is the middle of the
/// images of `a` and `b`: weights `z_b : z_a` put its normalised coordinates at their mean.
/// Symmetric in `a` and `b` to the bit, so triangles sharing an edge split it at one point.
fn pinhole_midpoint(a: &Vector3<f64>, b: &Vector3<f64>) -> Vector3<f64> {
    (a * b.z + b * a.z) / (a.z + b.z)
}

/// Splits a camera-frame triangle (in front of the near plane) until the images of its edges
/// are straight to within the lens's chord tolerance, and returns the pieces' screen vertices
/// `[u, v, 1/z]`. Pieces whose image cannot reach the image rectangle are dropped, as are
/// pieces with a vertex outside the model's valid range at the depth limit.
fn refine(
    cam: &Camera,
    lens: &Lens,
    tri: [Vector3<f64>; 3],
    depth: u32,
    out: &mut dyn FnMut([[f64; 3]; 3]),
) {
    let px = tri.map(|p| lens_pixel(cam, lens, &p));
    let mids = [0, 1, 2].map(|k| pinhole_midpoint(&tri[k], &tri[(k + 1) % 3]));
    let split = |out: &mut dyn FnMut([[f64; 3]; 3])| {
        let [a, b, c] = tri;
        let [ab, bc, ca] = mids;
        for t in [[a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca]] {
            refine(cam, lens, t, depth + 1, out);
        }
    };
    let (Some(pa), Some(pb), Some(pc)) = (px[0], px[1], px[2]) else {
        if depth < MAX_INVALID_DEPTH {
            split(out);
        }
        return;
    };
    let p = [pa, pb, pc];
    // The chord error: how far each edge's pinhole midpoint images from the middle of its
    // chord. Perspective maps that point to the chord's middle exactly, so what is left is the
    // lens's own bending; the edge's 3D midpoint would also count foreshortening, which no
    // splitting removes near the camera.
    let mut err = 0.0f64;
    for (k, m) in mids.iter().enumerate() {
        let (a, b) = (p[k], p[(k + 1) % 3]);
        err = err.max(match lens_pixel(cam, lens, m) {
            Some([u, v]) => {
                ((u - 0.5 * (a[0] + b[0])).powi(2) + (v - 0.5 * (a[1] + b[1])).powi(2)).sqrt()
            }
            None => f64::INFINITY,
        });
    }
    let margin = if err.is_finite() {
        2.0 * err + 1.0
    } else {
        f64::INFINITY
    };
    let (w, h) = (f64::from(cam.width), f64::from(cam.height));
    let lo = [
        p[0][0].min(p[1][0]).min(p[2][0]),
        p[0][1].min(p[1][1]).min(p[2][1]),
    ];
    let hi = [
        p[0][0].max(p[1][0]).max(p[2][0]),
        p[0][1].max(p[1][1]).max(p[2][1]),
    ];
    if hi[0] < -margin || hi[1] < -margin || lo[0] > w + margin || lo[1] > h + margin {
        return;
    }
    if err <= lens.chord_tolerance_px || depth >= MAX_DEPTH {
        out([0, 1, 2].map(|k| [p[k][0], p[k][1], 1.0 / tri[k].z]));
    } else {
        split(out);
    }
}

/// The normalised radius of the cone the faces are clipped to before refinement: the largest
/// radius within which the lens model is valid everywhere (scanned outwards in steps of 0.01,
/// the crossing then bisected), and at most four times the radius that reaches the image's
/// farthest corner at the model's strongest valid compression (0.8), beyond which nothing can
/// image near the picture.
///
/// Validity depends on the radius alone, so the valid region around the axis is a disk. Some
/// lenses turn valid again farther out, but there the image folds back over itself; the model
/// means nothing there, and such points image far outside the picture.
fn reach(cam: &Camera, lens: &Lens) -> f64 {
    let (w, h) = (f64::from(cam.width), f64::from(cam.height));
    let corner = [(0.0, 0.0), (w, 0.0), (0.0, h), (w, h)]
        .iter()
        .map(|&(u, v)| ((u - cam.cx) / cam.fx).hypot((v - cam.cy) / cam.fy))
        .fold(0.0, f64::max);
    let cap = 4.0 * corner / VALID_RADIAL.0;
    let valid = |r: f64| lens.distort(r, 0.0).is_some();
    let mut r: f64 = 0.0;
    loop {
        let next = r + 0.01;
        if next >= cap {
            return cap;
        }
        if !valid(next) {
            let (mut lo, mut hi) = (r, next);
            for _ in 0..48 {
                let mid = 0.5 * (lo + hi);
                if valid(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            // A hair inside, so the vertices a clip puts on the edge stay valid after
            // round-off.
            return lo * (1.0 - 1e-9);
        }
        r = next;
    }
}

/// Sides of the polygon inscribed in the circle of `reach` that stands in for it: at 256
/// the polygon's edges come within 0.008 % of the radius of the circle.
pub(crate) const CONE_SIDES: usize = 256;

/// Clips a camera-frame convex polygon (z > 0) to the half-space `n · p ≥ 0`.
fn clip_plane(poly: Vec<Vector3<f64>>, n: Vector3<f64>) -> Vec<Vector3<f64>> {
    if poly.iter().all(|p| n.dot(p) >= 0.0) {
        return poly;
    }
    let mut out = Vec::with_capacity(poly.len() + 1);
    for k in 0..poly.len() {
        let (c, q) = (poly[k], poly[(k + 1) % poly.len()]);
        let (dc, dq) = (n.dot(&c), n.dot(&q));
        if dc >= 0.0 {
            out.push(c);
        }
        if (dc >= 0.0) != (dq >= 0.0) {
            // Interpolated from the inside end, so the result does not depend on direction.
            let (p, o, dp, dox) = if dc >= 0.0 {
                (c, q, dc, dq)
            } else {
                (q, c, dq, dc)
            };
            out.push(p + (o - p) * (dp / (dp - dox)));
        }
    }
    out
}

/// Clips a camera-frame polygon (z > 0) to the cone of normalised radius `radius` around the
/// optical axis, as the [`CONE_SIDES`]-sided pyramid inscribed in it, so every point kept is
/// within `radius` (and inside the lens's valid range when `radius` comes from [`reach`]).
fn clip_cone(poly: &[Vector3<f64>], radius: f64) -> Vec<Vector3<f64>> {
    let apothem = radius * (std::f64::consts::PI / CONE_SIDES as f64).cos();
    let mut cur = poly.to_vec();
    for k in 0..CONE_SIDES {
        if cur.len() < 3 {
            return Vec::new();
        }
        let (s, c) = (std::f64::consts::TAU * k as f64 / CONE_SIDES as f64).sin_cos();
        cur = clip_plane(cur, Vector3::new(-c, -s, apothem));
    }
    cur
}

/// [`super::project::project_box`] through a lens, handing each triangle to `sink` as it is
/// made (see [`super::project::project_box_into`]).
pub(crate) fn project_box_lens_into(
    cam: &Camera,
    lens: &Lens,
    b: &BoxGeom,
    near_m: f64,
    sink: &mut dyn FnMut([[f64; 3]; 3]),
) -> Option<Projection> {
    let (c, corners) = box_in_camera(cam, b);
    let corners_px = corners.map(|p| (p.z >= near_m).then(|| lens_pixel(cam, lens, &p)).flatten());
    let mut amodal = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut any_tris = false;
    let mut any_front = false;
    let radius = reach(cam, lens);
    for t in BOX_TRIANGLES {
        let poly = clip_near(&[corners[t[0]], corners[t[1]], corners[t[2]]], near_m);
        if poly.len() < 3 {
            continue;
        }
        any_front = true;
        // Only the part where the model is valid and that can image near the picture is
        // refined (see `reach`).
        let poly = clip_cone(&poly, radius);
        for k in 1..poly.len().saturating_sub(1) {
            let mut piece = |screen: [[f64; 3]; 3]| {
                for s in &screen {
                    amodal = [
                        amodal[0].min(s[0]),
                        amodal[1].min(s[1]),
                        amodal[2].max(s[0]),
                        amodal[3].max(s[1]),
                    ];
                }
                for t in clip_image(cam, screen.to_vec()) {
                    any_tris = true;
                    sink(t);
                }
            };
            refine(cam, lens, [poly[0], poly[k], poly[k + 1]], 0, &mut piece);
        }
    }
    assemble(cam, b, c, corners, corners_px, amodal, any_tris, any_front)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lens_matches_the_formula_and_refuses_outside_its_range() {
        let lens = Lens {
            k: [-0.1, 0.01, 0.001, -0.002, 0.0005],
            chord_tolerance_px: 0.05,
        };
        let (u, v) = (0.3, -0.2);
        let r2: f64 = 0.13;
        let d = 1.0 - 0.1 * r2 + 0.01 * r2 * r2 + 0.0005 * r2 * r2 * r2;
        let want = [
            u * d + 2.0 * 0.001 * u * v - 0.002 * (r2 + 2.0 * u * u),
            v * d + 0.001 * (r2 + 2.0 * v * v) + 2.0 * -0.002 * u * v,
        ];
        let got = lens.distort(u, v).unwrap();
        assert!((got[0] - want[0]).abs() < 1e-15 && (got[1] - want[1]).abs() < 1e-15);
        // r² = 2.5: d = 1 − 0.25 + 0.0625 + 0.0078 ≈ 0.82, valid; r² = 4: d ≈ 0.79, not.
        assert!(lens.distort(2.5f64.sqrt(), 0.0).is_some());
        assert!(lens.distort(2.0, 0.0).is_none());
    }

    fn identity_camera(width: u32, height: u32, f: f64) -> Camera {
        let pose = crate::store::Pose {
            t: [0.0; 3],
            q: [1.0, 0.0, 0.0, 0.0],
        };
        let k = [f, f, f64::from(width) / 2.0, f64::from(height) / 2.0];
        super::super::project::camera(width, height, k, pose, pose)
    }

    #[test]
    fn faces_are_clipped_to_the_disk_where_the_lens_is_valid() {
        // d = 1 − 0.3 r² leaves [0.8, 1.2] at r = √(2/3); the picture's corner is at r = 0.36,
        // so the cap (4 × 0.36 / 0.8 = 1.8) does not bind.
        let lens = Lens {
            k: [-0.3, 0.0, 0.0, 0.0, 0.0],
            chord_tolerance_px: 0.5,
        };
        let cam = identity_camera(600, 400, 1000.0);
        let r = reach(&cam, &lens);
        assert!((r - (2.0f64 / 3.0).sqrt()).abs() < 1e-8, "reach {r}");
        // A 4 × 4 square at z = 2 around the axis: what is left is the disk of radius 2r,
        // every vertex on or inside it, its area that of the disk to within the polygon's gap.
        let sq = [(-2.0, -2.0), (2.0, -2.0), (2.0, 2.0), (-2.0, 2.0)]
            .map(|(x, y)| Vector3::new(x, y, 2.0));
        let cut = clip_cone(&sq, r);
        assert!(cut.len() >= CONE_SIDES);
        for p in &cut {
            assert!((p.x / p.z).hypot(p.y / p.z) <= r + 1e-12);
            assert!(lens.distort(p.x / p.z, p.y / p.z).is_some());
        }
        let area: f64 = (0..cut.len())
            .map(|k| {
                let (a, b) = (cut[k], cut[(k + 1) % cut.len()]);
                0.5 * (a.x * b.y - b.x * a.y)
            })
            .sum();
        let disk = std::f64::consts::PI * (2.0 * r).powi(2);
        assert!((area / disk - 1.0).abs() < 2e-4, "area {area} vs {disk}");
        // A face inside the disk is left as it is.
        let small = sq.map(|p| Vector3::new(p.x * 0.1, p.y * 0.1, p.z));
        assert_eq!(clip_cone(&small, r), small.to_vec());
    }
}
