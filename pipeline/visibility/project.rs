//! Projection of a 3D box into a camera image with the nuScenes devkit's transform chain
//! (`docs/formats.md` §1.4), in `f64`.
//!
//! * **Chain.** Box centre and rotation go global → ego at the image's timestamp (the camera
//!   row's own ego pose) → sensor, exactly as `NuScenes.get_sample_data` moves a `Box`; the eight
//!   corners are then built in the camera frame in `Box.corners()` order and projected as
//!   `view_points(…, K, normalize=True)` does: `u = (fx·x + cx·z)/z`, `v = (fy·y + cy·z)/z`.
//! * **Corners.** `corners_px[k]` is `None` when corner `k` is not in front of the near plane
//!   (`z < near_m`, or not a number); the devkit would return a mirrored or infinite point there.
//! * **Clipping.** Each of the box's 12 triangles (two per face) is clipped against the near plane
//!   `z ≥ near_m` (Sutherland–Hodgman), so a box crossing the camera plane keeps the part in
//!   front of it. A new vertex on an edge is always computed from the edge's inside end point,
//!   so the two triangles sharing an edge get bit-identical vertices (the rasteriser's fill rule
//!   then counts pixels on it once).
//! * **Amodal box.** `[x0, y0, x1, y1]`: the bounds (pixels, not clipped to the image) of the
//!   projected near-clipped geometry, i.e. of every corner in front of the near plane and every
//!   point where a box edge crosses it.
//! * **Truncation.** The share of the amodal box's area that lies inside the image rectangle
//!   `[0, W] × [0, H]`: `area(amodal ∩ image) / area(amodal)`, 1 for a box wholly in the image
//!   (MetaVQA's clamped/unclamped area ratio, with near-plane clipping added). 0 when the amodal
//!   box has no area.
//! * **Raster triangles.** The near-clipped triangles, projected and clipped to the image
//!   rectangle in screen space (inverse depth is affine there, so a new vertex's `1/z` is
//!   interpolated linearly), fanned into triangles.
//! * **Frustum.** A box yields no projection when nothing of it lies in front of the near
//!   plane, or when no part of its near-clipped projection overlaps the image with positive area.
//! * `depth_m` is the camera-frame z of the box centre; `distance_m` the BEV (x, y) distance from
//!   the ego position at the image's timestamp to the box centre, in the global frame.

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

use super::raster::Tri;
use crate::geometry::{box_corners_local, pose, quat_wxyz};
use crate::store::{CameraRow, ObjectRow, Pose};

/// The 12 triangles of a box, as corner indices in `Box.corners()` order (two per face:
/// front x+, back x−, left y+, right y−, top z+, bottom z−).
pub(crate) const BOX_TRIANGLES: [[usize; 3]; 12] = [
    [0, 1, 2],
    [0, 2, 3],
    [4, 6, 5],
    [4, 7, 6],
    [0, 3, 7],
    [0, 7, 4],
    [1, 5, 6],
    [1, 6, 2],
    [0, 4, 5],
    [0, 5, 1],
    [3, 2, 6],
    [3, 6, 7],
];

/// A pinhole camera image: intrinsics, size and the global → camera transform.
#[derive(Debug, Clone, PartialEq)]
pub struct Camera {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// Sensor → ego.
    pub cam: Isometry3<f64>,
    /// Ego → global at the image's timestamp.
    pub ego: Isometry3<f64>,
    /// Lens distortion, for rows that carry it (see [`super::distortion`]); `None` is pinhole.
    pub lens: Option<super::distortion::Lens>,
}

fn finite_pose(p: &Pose) -> bool {
    p.t.iter().chain(&p.q).all(|v| v.is_finite()) && p.q.iter().map(|v| v * v).sum::<f64>() > 1e-12
}

impl Camera {
    /// A camera from a store row; `Err` says what is wrong with the row.
    pub fn from_row(r: &CameraRow) -> Result<Self, String> {
        if r.width == 0 || r.height == 0 {
            return Err(format!("image size {}×{} is empty", r.width, r.height));
        }
        if !(r.fx.is_finite() && r.fy.is_finite() && r.fx > 0.0 && r.fy > 0.0) {
            return Err(format!(
                "focal lengths fx={} fy={} are not positive",
                r.fx, r.fy
            ));
        }
        if !(r.cx.is_finite() && r.cy.is_finite()) {
            return Err(format!(
                "principal point ({}, {}) is not finite",
                r.cx, r.cy
            ));
        }
        if !finite_pose(&r.cam) {
            return Err("sensor pose is not finite or has a zero quaternion".into());
        }
        if !finite_pose(&r.ego) {
            return Err("ego pose is not finite or has a zero quaternion".into());
        }
        Ok(Self {
            width: r.width,
            height: r.height,
            fx: r.fx,
            fy: r.fy,
            cx: r.cx,
            cy: r.cy,
            cam: r.cam.isometry(),
            ego: r.ego.isometry(),
            lens: match r.distortion {
                Some(k) if k.iter().any(|v| !v.is_finite()) => {
                    return Err(format!("distortion {k:?} is not finite"));
                }
                Some(k) if k.iter().any(|v| *v != 0.0) => Some(super::distortion::Lens {
                    k,
                    chord_tolerance_px: super::config::default_lens_chord_tolerance_px(),
                }),
                _ => None,
            },
        })
    }

    /// Sets the tessellation tolerance of the camera's lens, if it has one.
    pub(crate) fn with_lens_tolerance(mut self, chord_tolerance_px: f64) -> Self {
        if let Some(l) = self.lens.as_mut() {
            l.chord_tolerance_px = chord_tolerance_px;
        }
        self
    }

    /// Pixel coordinates of a camera-frame point, as the devkit's `view_points` (through the
    /// lens when the camera has one; NaN where the lens model is invalid).
    pub fn pixel(&self, p: &Vector3<f64>) -> [f64; 2] {
        if let Some(lens) = &self.lens {
            return super::distortion::lens_pixel(self, lens, p).unwrap_or([f64::NAN; 2]);
        }
        [
            (self.fx * p.x + self.cx * p.z) / p.z,
            (self.fy * p.y + self.cy * p.z) / p.z,
        ]
    }
}

/// An oriented 3D box in the global frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxGeom {
    pub center: [f64; 3],
    /// `[w, l, h]`.
    pub size_wlh: [f64; 3],
    /// Box → global, `[w, x, y, z]`.
    pub q: [f64; 4],
}

impl BoxGeom {
    /// The box of a store row; `Err` says what is wrong with it.
    pub fn from_row(o: &ObjectRow) -> Result<Self, String> {
        if !o.center.iter().all(|v| v.is_finite()) {
            return Err(format!("centre {:?} is not finite", o.center));
        }
        if !o.size_wlh.iter().all(|v| v.is_finite() && *v > 0.0) {
            return Err(format!("size {:?} is not positive", o.size_wlh));
        }
        if !finite_pose(&Pose {
            t: [0.0; 3],
            q: o.q,
        }) {
            return Err(format!("rotation {:?} is not a usable quaternion", o.q));
        }
        Ok(Self {
            center: o.center,
            size_wlh: o.size_wlh,
            q: o.q,
        })
    }
}

/// One box seen by one camera.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The corners in the camera frame, `Box.corners()` order.
    pub corners_cam: [Vector3<f64>; 8],
    /// Their pixels; `None` behind the near plane.
    pub corners_px: [Option<[f64; 2]>; 8],
    /// `[x0, y0, x1, y1]` (pixels, unclipped).
    pub amodal: [f64; 4],
    pub truncation: f64,
    pub depth_m: f64,
    pub distance_m: f64,
    /// Screen-space triangles inside the image: `[u, v, z]` per vertex.
    pub tris: Vec<[[f64; 3]; 3]>,
}

impl Projection {
    /// The raster triangles of this box for object index `obj`.
    pub fn raster_tris(&self, obj: u32) -> impl Iterator<Item = Tri> + '_ {
        self.tris.iter().map(move |t| raster_tri(t, obj))
    }
}

/// The raster triangle of a screen-space triangle (`[u, v, z]` per vertex) for object `obj`.
pub(crate) fn raster_tri(t: &[[f64; 3]; 3], obj: u32) -> Tri {
    Tri {
        p: t.map(|v| [v[0] as f32, v[1] as f32]),
        z: t.map(|v| v[2] as f32),
        obj,
    }
}

/// Box centre and corners in the camera frame, following the devkit's `Box` moves.
pub fn box_in_camera(cam: &Camera, b: &BoxGeom) -> (Vector3<f64>, [Vector3<f64>; 8]) {
    let global_to_cam = cam.cam.inverse() * cam.ego.inverse();
    let c = (global_to_cam * Point3::from(Vector3::from(b.center))).coords;
    let rot: UnitQuaternion<f64> = global_to_cam.rotation * quat_wxyz(b.q);
    let corners =
        box_corners_local(b.size_wlh[0], b.size_wlh[1], b.size_wlh[2]).map(|v| rot * v + c);
    (c, corners)
}

/// Clips a polygon against `z ≥ near` (new vertices computed from the inside end point).
pub(crate) fn clip_near(poly: &[Vector3<f64>], near: f64) -> Vec<Vector3<f64>> {
    let mut out = Vec::with_capacity(poly.len() + 1);
    for k in 0..poly.len() {
        let (cur, next) = (poly[k], poly[(k + 1) % poly.len()]);
        let (cin, nin) = (cur.z >= near, next.z >= near);
        if cin {
            out.push(cur);
        }
        if cin != nin {
            let (a, b) = if cin { (cur, next) } else { (next, cur) };
            let t = (near - a.z) / (b.z - a.z);
            let mut p = a + (b - a) * t;
            p.z = near;
            out.push(p);
        }
    }
    out
}

/// A screen-space vertex: pixel `(u, v)` and inverse depth `w`.
pub(crate) type Sv = [f64; 3];

/// Clips a screen polygon against one side of the image rectangle: `axis` 0 = u, 1 = v;
/// keeps `coord ≥ bound` when `keep_above`, else `coord ≤ bound`.
fn clip_side(poly: &[Sv], axis: usize, bound: f64, keep_above: bool) -> Vec<Sv> {
    let dist = |p: &Sv| {
        if keep_above {
            p[axis] - bound
        } else {
            bound - p[axis]
        }
    };
    let mut out = Vec::with_capacity(poly.len() + 1);
    for k in 0..poly.len() {
        let (cur, next) = (poly[k], poly[(k + 1) % poly.len()]);
        let (dc, dn) = (dist(&cur), dist(&next));
        let (cin, nin) = (dc >= 0.0, dn >= 0.0);
        if cin {
            out.push(cur);
        }
        if cin != nin {
            let (a, b, da, db) = if cin {
                (cur, next, dc, dn)
            } else {
                (next, cur, dn, dc)
            };
            let t = da / (da - db);
            let mut p = [0.0; 3];
            for c in 0..3 {
                p[c] = a[c] + (b[c] - a[c]) * t;
            }
            p[axis] = bound;
            out.push(p);
        }
    }
    out
}

fn area2(a: &Sv, b: &Sv, c: &Sv) -> f64 {
    (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
}

/// Projects a box into a camera image (see the module docs); `None` when it is wholly behind
/// the near plane or outside the image.
pub fn project_box(cam: &Camera, b: &BoxGeom, near_m: f64) -> Option<Projection> {
    let mut tris = Vec::new();
    let p = project_box_into(cam, b, near_m, &mut |t| tris.push(t))?;
    Some(Projection { tris, ..p })
}

/// [`project_box`] handing each screen triangle to `sink` as it is made, in the order
/// `project_box` lists them, instead of gathering them: the returned projection's `tris` is
/// empty. A box through a lens can give millions of triangles (a face close to the camera is
/// refined to the depth limit), so the stage rasterises them as they come. When the result
/// is `None`, `sink` was given nothing.
pub(crate) fn project_box_into(
    cam: &Camera,
    b: &BoxGeom,
    near_m: f64,
    sink: &mut dyn FnMut([[f64; 3]; 3]),
) -> Option<Projection> {
    if let Some(lens) = &cam.lens {
        return super::distortion::project_box_lens_into(cam, lens, b, near_m, sink);
    }
    let (c, corners) = box_in_camera(cam, b);
    let corners_px = corners.map(|p| (p.z >= near_m).then(|| cam.pixel(&p)));
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
        let screen: Vec<Sv> = poly
            .iter()
            .map(|p| {
                let [u, v] = cam.pixel(p);
                [u, v, 1.0 / p.z]
            })
            .collect();
        for s in &screen {
            amodal[0] = amodal[0].min(s[0]);
            amodal[1] = amodal[1].min(s[1]);
            amodal[2] = amodal[2].max(s[0]);
            amodal[3] = amodal[3].max(s[1]);
        }
        tris.extend(clip_image(cam, screen));
    }
    let p = assemble(
        cam,
        b,
        c,
        corners,
        corners_px,
        amodal,
        !tris.is_empty(),
        any_front,
    )?;
    tris.into_iter().for_each(sink);
    Some(p)
}

/// A screen polygon clipped to the image rectangle and fanned into `[u, v, z]` triangles.
pub(crate) fn clip_image(cam: &Camera, screen: Vec<Sv>) -> Vec<[[f64; 3]; 3]> {
    let (w, h) = (f64::from(cam.width), f64::from(cam.height));
    let mut inside = screen;
    for (axis, bound, above) in [(0, 0.0, true), (0, w, false), (1, 0.0, true), (1, h, false)] {
        if inside.len() < 3 {
            break;
        }
        inside = clip_side(&inside, axis, bound, above);
    }
    let mut tris = Vec::new();
    for k in 1..inside.len().saturating_sub(1) {
        let (a, b2, c2) = (inside[0], inside[k], inside[k + 1]);
        if area2(&a, &b2, &c2) != 0.0 {
            tris.push([a, b2, c2].map(|v| [v[0], v[1], 1.0 / v[2]]));
        }
    }
    tris
}

/// The projection of a box from its projected geometry: amodal box, truncation, distances.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assemble(
    cam: &Camera,
    b: &BoxGeom,
    c: Vector3<f64>,
    corners: [Vector3<f64>; 8],
    corners_px: [Option<[f64; 2]>; 8],
    amodal: [f64; 4],
    any_tris: bool,
    any_front: bool,
) -> Option<Projection> {
    let (w, h) = (f64::from(cam.width), f64::from(cam.height));
    if !any_front || !any_tris || !amodal.iter().all(|v| v.is_finite()) {
        return None;
    }
    let area = (amodal[2] - amodal[0]) * (amodal[3] - amodal[1]);
    let ix = (amodal[2].min(w) - amodal[0].max(0.0)).max(0.0);
    let iy = (amodal[3].min(h) - amodal[1].max(0.0)).max(0.0);
    let truncation = if area > 0.0 {
        (ix * iy / area).min(1.0)
    } else {
        0.0
    };
    let ego = cam.ego.translation.vector;
    let distance_m = ((b.center[0] - ego.x).powi(2) + (b.center[1] - ego.y).powi(2)).sqrt();
    Some(Projection {
        corners_cam: corners,
        corners_px,
        amodal,
        truncation,
        depth_m: c.z,
        distance_m,
        tris: Vec::new(),
    })
}

/// A camera from intrinsics `[fx, fy, cx, cy]` and poses (tests and tools).
pub fn camera(width: u32, height: u32, k: [f64; 4], cam: Pose, ego: Pose) -> Camera {
    Camera {
        width,
        height,
        fx: k[0],
        fy: k[1],
        cx: k[2],
        cy: k[3],
        cam: pose(cam.t, cam.q),
        ego: pose(ego.t, ego.q),
        lens: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_edges_clip_to_identical_points() {
        let a = Vector3::new(0.3, -0.2, 2.0);
        let b = Vector3::new(-0.7, 0.4, -1.0);
        let p = clip_near(&[a, b, Vector3::new(1.0, 1.0, 3.0)], 0.1);
        let q = clip_near(&[b, a, Vector3::new(-1.0, 2.0, 5.0)], 0.1);
        // The only point both polygons share is where edge a–b crosses the plane.
        assert_eq!(p.iter().filter(|v| v.z == 0.1 && q.contains(v)).count(), 1);
    }
}
