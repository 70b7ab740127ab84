//! Lens distortion in the projection (Waymo's camera model, `shared/spec/formats.md` §2.3),
//! for cameras whose store row carries `dist_k1..dist_k3`.
//!
//! * **Model.** On normalised coordinates `(x/z, y/z)` of the OpenCV camera frame (equal to
//!   Waymo's `(−y/x, −z/x)`): `r² = u² + v²`, radial factor `d = 1 + k1 r² + k2 r⁴ + k3 r⁶`,
//!   `u' = u d + 2 p1 u v + p2 (r² + 2u²)`, `v' = v d + p1 (r² + 2v²) + 2 p2 u v`, then
//!   `fx u' + cx`, `fy v' + cy`.
//! * **Validity.** Where `d ∉ [0.8, 1.2]` the model is invalid (Waymo reports such points as
//!   not projectable); a corner there gets no pixel, and geometry there is left out.
//! * **Silhouettes.** A straight box edge images as a curve, so each near-clipped face triangle
//!   is split in four, recursively, until the image of every edge's midpoint lies within
//!   `projection.lens_chord_tolerance_px` of its chord (pieces that cannot reach the image are
//!   dropped on the way, so boxes beside the camera cost little); the pieces' vertices are
//!   projected through the lens and the rasteriser (GPU or CPU) fills the curved outline to
//!   within that tolerance. Inverse depth is interpolated linearly on each piece (exact for
//!   pinhole, an approximation of second order in the piece size here).
//! * **Rolling shutter** is not modelled: every pixel is taken at the image's pose (the
//!   global-shutter chain the spec recommends). Against Waymo's own `projected_lidar_box`,
//!   computed with rolling shutter, expect a few pixels at speed (the tolerance is stated by
//!   `tests/ingest_waymo.rs` on global-shutter synthetic data).

use nalgebra::Vector3;

use super::project::{
    assemble, box_in_camera, clip_image, clip_near, BoxGeom, Camera, Projection, BOX_TRIANGLES,
};

/// Halvings of a face triangle at most (4^10 pieces), a guard for pathological lenses.
pub const MAX_DEPTH: u32 = 10;
/// Halvings spent looking for the valid part of a piece with a vertex where the model is
/// invalid (only at the edge of the reach of very strong lenses).
pub const MAX_INVALID_DEPTH: u32 = 4;
/// The radial factor range where Waymo's model is valid.
pub const VALID_RADIAL: (f64, f64) = (0.8, 1.2);

/// A lens: `[k1, k2, p1, p2, k3]` and the tessellation tolerance (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lens {
    pub k: [f64; 5],
    pub chord_tolerance_px: f64,
}

impl Lens {
    /// The distorted normalised coordinates, `None` outside the valid range.
    pub fn distort(&self, u: f64, v: f64) -> Option<[f64; 2]> {
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
pub fn lens_pixel(cam: &Camera, lens: &Lens, p: &Vector3<f64>) -> Option<[f64; 2]> {
    let [u, v] = lens.distort(p.x / p.z, p.y / p.z)?;
    Some([cam.fx * u + cam.cx, cam.fy * v + cam.cy])
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
    out: &mut Vec<[[f64; 3]; 3]>,
) {
    let px = tri.map(|p| lens_pixel(cam, lens, &p));
    let mids = [0, 1, 2].map(|k| (tri[k] + tri[(k + 1) % 3]) * 0.5);
    let split = |out: &mut Vec<[[f64; 3]; 3]>| {
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
    // The chord error: how far each edge's midpoint images from the middle of its chord.
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
        out.push([0, 1, 2].map(|k| [p[k][0], p[k][1], 1.0 / tri[k].z]));
    } else {
        split(out);
    }
}

/// The normalised radius beyond which no point can image near the picture: where the lens
/// model turns invalid (scanned outwards in steps of 0.01), and at most four times the radius
/// that reaches the image's farthest corner at the model's strongest valid compression (0.8).
fn reach(cam: &Camera, lens: &Lens) -> f64 {
    let (w, h) = (f64::from(cam.width), f64::from(cam.height));
    let corner = [(0.0, 0.0), (w, 0.0), (0.0, h), (w, h)]
        .iter()
        .map(|&(u, v)| ((u - cam.cx) / cam.fx).hypot((v - cam.cy) / cam.fy))
        .fold(0.0, f64::max);
    let cap = 4.0 * corner / VALID_RADIAL.0;
    let mut r: f64 = 0.0;
    while r < cap && lens.distort(r, 0.0).is_some() {
        r += 0.01;
    }
    r.min(cap)
}

/// Clips a camera-frame polygon (z > 0) to the pyramid `|x| ≤ a z`, `|y| ≤ a z`.
fn clip_pyramid(poly: &[Vector3<f64>], a: f64) -> Vec<Vector3<f64>> {
    let planes = [(0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)];
    let mut cur = poly.to_vec();
    for (axis, sign) in planes {
        if cur.len() < 3 {
            return Vec::new();
        }
        // Inside where a z − sign·p[axis] ≥ 0.
        let dist = |p: &Vector3<f64>| a * p.z - sign * p[axis];
        let mut out = Vec::with_capacity(cur.len() + 1);
        for k in 0..cur.len() {
            let (c, n) = (cur[k], cur[(k + 1) % cur.len()]);
            let (dc, dn) = (dist(&c), dist(&n));
            if dc >= 0.0 {
                out.push(c);
            }
            if (dc >= 0.0) != (dn >= 0.0) {
                let (p, q, dp, dq) = if dc >= 0.0 {
                    (c, n, dc, dn)
                } else {
                    (n, c, dn, dc)
                };
                out.push(p + (q - p) * (dp / (dp - dq)));
            }
        }
        cur = out;
    }
    cur
}

/// [`super::project::project_box`] through a lens.
pub fn project_box_lens(cam: &Camera, lens: &Lens, b: &BoxGeom, near_m: f64) -> Option<Projection> {
    let (c, corners) = box_in_camera(cam, b);
    let corners_px = corners.map(|p| (p.z >= near_m).then(|| lens_pixel(cam, lens, &p)).flatten());
    let mut amodal = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut tris = Vec::new();
    let mut any_front = false;
    for t in BOX_TRIANGLES {
        let poly = clip_near(&[corners[t[0]], corners[t[1]], corners[t[2]]], near_m);
        if poly.len() < 3 {
            continue;
        }
        any_front = true;
        // Only the part that can image near the picture is refined (see `reach`).
        let poly = clip_pyramid(&poly, reach(cam, lens));
        for k in 1..poly.len().saturating_sub(1) {
            let mut pieces = Vec::new();
            refine(cam, lens, [poly[0], poly[k], poly[k + 1]], 0, &mut pieces);
            for screen in pieces {
                for s in &screen {
                    amodal = [
                        amodal[0].min(s[0]),
                        amodal[1].min(s[1]),
                        amodal[2].max(s[0]),
                        amodal[3].max(s[1]),
                    ];
                }
                tris.extend(clip_image(cam, screen.to_vec()));
            }
        }
    }
    assemble(cam, b, c, corners, corners_px, amodal, tris, any_front)
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
}
