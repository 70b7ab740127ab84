//! The boxes: faces clipped to a near plane, projected and rasterised with a per-pixel
//! depth buffer, and the id buffers that count what each box shows.

use nalgebra::Vector3;

use super::color::{class_hue, hsv, mix, SKY_HORIZON};
use super::{ObjectPixels, Solid, View, HAZE_HALF};
use crate::geometry::box_corners;

/// Faces are cut this far in front of the camera (m).
const NEAR: f64 = 0.05;

/// Draws the boxes over `rgb` (when given), nearest wins; returns the pixel counts when the
/// buffers count.
pub(super) fn draw_solids(
    view: &View,
    solids: &[Solid],
    mut rgb: Option<&mut [u8]>,
    buf: &mut Buffers,
) -> Vec<ObjectPixels> {
    let cam = view.pos;
    let mut silhouettes = vec![0u32; solids.len()];
    let rt = view.rot.transpose();
    for (si, solid) in solids.iter().enumerate() {
        let corners = box_corners(
            solid.center,
            solid.size,
            crate::geometry::quat_from_yaw(solid.yaw),
        );
        let to_cam = |p: &Vector3<f64>| rt * (p - cam);
        let cc: Vec<Vector3<f64>> = corners.iter().map(to_cam).collect();
        // Cheap reject: every corner behind the near plane.
        if cc.iter().all(|p| p.z <= NEAR) {
            continue;
        }
        let base = hsv(class_hue(solid.class), 0.82, 0.92);
        let dist = (Vector3::from(solid.center) - cam).norm();
        let haze = (dist / (dist + HAZE_HALF)) as f32;
        let (cy, sy) = (solid.yaw.cos(), solid.yaw.sin());
        // Faces as corner indices (devkit order) and outward normals in the global frame.
        let faces: [([usize; 4], [f64; 3]); 6] = [
            ([0, 1, 2, 3], [cy, sy, 0.0]),
            ([4, 7, 6, 5], [-cy, -sy, 0.0]),
            ([0, 3, 7, 4], [-sy, cy, 0.0]),
            ([1, 5, 6, 2], [sy, -cy, 0.0]),
            ([0, 4, 5, 1], [0.0, 0.0, 1.0]),
            ([3, 2, 6, 7], [0.0, 0.0, -1.0]),
        ];
        let tag = si as u32 + 1;
        for (idx, n) in faces {
            let ng = Vector3::new(n[0], n[1], n[2]);
            let fc = idx.iter().map(|&i| corners[i]).sum::<Vector3<f64>>() / 4.0;
            if ng.dot(&(cam - fc)) <= 0.0 {
                continue;
            }
            // Sun from the south-west and above: tops bright, sides by their orientation.
            let shade = if n[2] > 0.5 {
                1.0
            } else if n[2] < -0.5 {
                0.45
            } else {
                0.62 + 0.3 * (0.6 * n[0] + 0.8 * n[1]).max(0.0)
            } as f32;
            let col = mix(
                [base[0] * shade, base[1] * shade, base[2] * shade],
                SKY_HORIZON,
                haze,
            );
            let nc = rt * ng;
            let poly: Vec<Vector3<f64>> = idx.iter().map(|&i| cc[i]).collect();
            let face = Face {
                poly: &poly,
                normal: &nc,
                col,
                tag,
            };
            raster_face(view, &face, rgb.as_deref_mut(), buf, &mut silhouettes[si]);
        }
    }
    if !buf.count {
        return Vec::new();
    }
    let mut visible = vec![0u32; solids.len()];
    for &t in &buf.ids {
        if t > 0 {
            visible[t as usize - 1] += 1;
        }
    }
    solids
        .iter()
        .enumerate()
        .filter(|(i, _)| silhouettes[*i] > 0)
        .map(|(i, s)| ObjectPixels {
            id: s.id,
            visible: visible[i],
            silhouette: silhouettes[i],
        })
        .collect()
}

/// Per-pixel state of the box pass: 1/depth of the nearest box, its tag (index + 1), and the
/// tag of the last box that covered the pixel at all (to count each silhouette pixel once).
/// The last two are kept only when `count`.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    pub(super) inv_z: Vec<f32>,
    pub(super) ids: Vec<u32>,
    pub(super) own: Vec<u32>,
    pub(super) count: bool,
}

/// One face to rasterise: its corners and normal in the camera frame, colour and box tag.
struct Face<'a> {
    poly: &'a [Vector3<f64>],
    normal: &'a Vector3<f64>,
    col: [f32; 3],
    tag: u32,
}

/// Clips a face (camera frame) to z ≥ NEAR; each output vertex says whether it lies on the cut.
fn clip_near(poly: &[Vector3<f64>]) -> Vec<(Vector3<f64>, bool)> {
    let mut out = Vec::with_capacity(poly.len() + 2);
    for i in 0..poly.len() {
        let a = poly[i];
        let b = poly[(i + 1) % poly.len()];
        let (ina, inb) = (a.z >= NEAR, b.z >= NEAR);
        if ina {
            out.push((a, false));
        }
        if ina != inb {
            let t = (NEAR - a.z) / (b.z - a.z);
            out.push((a + (b - a) * t, true));
        }
    }
    out
}

/// A face's edge line `a·u + b·v + c ≥ 0` inside, normalised so the value is a distance in
/// pixels, and whether the near-plane cut made it (no outline there).
type EdgeLine = (f64, f64, f64, bool);

/// The clipped face projected to pixels, with the sign of its winding; `None` when it has no
/// area on screen (seen edge-on).
fn screen_polygon(view: &View, clipped: &[(Vector3<f64>, bool)]) -> Option<(Vec<(f64, f64)>, f64)> {
    let pts: Vec<(f64, f64)> = clipped
        .iter()
        .map(|(p, _)| (view.fx * p.x / p.z + view.cx, view.fy * p.y / p.z + view.cy))
        .collect();
    let n = pts.len();
    let area: f64 = (0..n)
        .map(|i| {
            let (a, b) = (pts[i], pts[(i + 1) % n]);
            a.0 * b.1 - b.0 * a.1
        })
        .sum();
    if area.abs() < 1e-9 {
        return None;
    }
    Some((pts, area.signum()))
}

/// The inside half-planes of the projected polygon `pts` (winding `orient`), skipping
/// zero-length edges; `clipped` says which vertices the near-plane cut made.
fn edge_lines(pts: &[(f64, f64)], orient: f64, clipped: &[(Vector3<f64>, bool)]) -> Vec<EdgeLine> {
    let n = pts.len();
    let mut edges = Vec::with_capacity(n);
    for i in 0..n {
        let (p, q) = (pts[i], pts[(i + 1) % n]);
        let (ex, ey) = (q.0 - p.0, q.1 - p.1);
        let len = (ex * ex + ey * ey).sqrt();
        if len < 1e-12 {
            continue;
        }
        let a = -ey * orient / len;
        let b = ex * orient / len;
        let c = -(a * p.0 + b * p.1);
        // An edge made by the near-plane cut is not a box edge: no outline there.
        let cut = clipped[i].1 && clipped[(i + 1) % n].1;
        edges.push((a, b, c, cut));
    }
    edges
}

/// The pixel rectangle `(umin, umax, vmin, vmax)` that can hold the polygon `pts`, clipped to
/// the image; `None` when it misses the image.
fn pixel_bounds(pts: &[(f64, f64)], view: &View) -> Option<(i64, i64, i64, i64)> {
    let (w, h) = (view.width as i64, view.height as i64);
    let umin = pts
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .ceil()
        .max(0.0) as i64;
    let umax = (pts
        .iter()
        .map(|p| p.0)
        .fold(f64::NEG_INFINITY, f64::max)
        .floor() as i64)
        .min(w - 1);
    let vmin = pts
        .iter()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .ceil()
        .max(0.0) as i64;
    let vmax = (pts
        .iter()
        .map(|p| p.1)
        .fold(f64::NEG_INFINITY, f64::max)
        .floor() as i64)
        .min(h - 1);
    if umin > umax || vmin > vmax {
        return None;
    }
    Some((umin, umax, vmin, vmax))
}

/// 1/z as a linear function `za·u + zb·v + zc` of the pixel, over the plane through `q` with
/// normal `normal` (camera frame): 1/z = n·r(u, v) / (n·q), r = ((u−cx)/fx, (v−cy)/fy, 1).
/// `None` when the plane passes through the camera.
fn inv_depth_plane(view: &View, normal: &Vector3<f64>, q: &Vector3<f64>) -> Option<[f64; 3]> {
    let nq = normal.dot(q);
    if nq.abs() < 1e-12 {
        return None;
    }
    let za = normal.x / view.fx / nq;
    let zb = normal.y / view.fy / nq;
    let zc = (normal.z - normal.x * view.cx / view.fx - normal.y * view.cy / view.fy) / nq;
    Some([za, zb, zc])
}

/// The first and last pixel of row `vf` inside every edge, within `[umin, umax]`; `None` when
/// the row misses the face.
fn row_span(edges: &[EdgeLine], vf: f64, umin: i64, umax: i64) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (umin as f64, umax as f64);
    for &(a, b, c, _) in edges {
        let k = b * vf + c;
        if a.abs() < 1e-12 {
            if k < 0.0 {
                lo = f64::INFINITY;
            }
        } else if a > 0.0 {
            lo = lo.max(-k / a);
        } else {
            hi = hi.min(-k / a);
        }
    }
    if lo > hi {
        return None;
    }
    Some((lo.ceil() as i64, hi.floor() as i64))
}

/// Distance (pixels) from `(uf, vf)` to the nearest box edge of the face, for the outline.
fn outline_dist(edges: &[EdgeLine], uf: f64, vf: f64) -> f64 {
    edges
        .iter()
        .filter(|e| !e.3)
        .map(|&(a, b, c, _)| a * uf + b * vf + c)
        .fold(f64::INFINITY, f64::min)
}

/// Rasterises one face into the depth (and, when counting, id) buffers, and into `rgb` when
/// given, nearest wins; counts the face's pixels not yet in the box's silhouette.
fn raster_face(
    view: &View,
    face: &Face,
    mut rgb: Option<&mut [u8]>,
    buf: &mut Buffers,
    silhouette: &mut u32,
) {
    let Face {
        poly,
        normal,
        col,
        tag,
    } = *face;
    let clipped = clip_near(poly);
    if clipped.len() < 3 {
        return;
    }
    let Some((pts, orient)) = screen_polygon(view, &clipped) else {
        return;
    };
    let edges = edge_lines(&pts, orient, &clipped);
    let w = view.width as i64;
    let Some((umin, umax, vmin, vmax)) = pixel_bounds(&pts, view) else {
        return;
    };
    let Some([za, zb, zc]) = inv_depth_plane(view, normal, &clipped[0].0) else {
        return;
    };
    let dark = [col[0] * 0.4, col[1] * 0.4, col[2] * 0.4];
    for v in vmin..=vmax {
        let vf = v as f64;
        let Some((u0, u1)) = row_span(&edges, vf, umin, umax) else {
            continue;
        };
        let row = (v * w) as usize;
        for u in u0.max(0)..=u1.min(w - 1) {
            let i = row + u as usize;
            if buf.count && buf.own[i] != tag {
                buf.own[i] = tag;
                *silhouette += 1;
            }
            let uf = u as f64;
            let iz = (za * uf + zb * vf + zc) as f32;
            if iz <= buf.inv_z[i] {
                continue;
            }
            buf.inv_z[i] = iz;
            if buf.count {
                buf.ids[i] = tag;
            }
            let Some(rgb) = rgb.as_deref_mut() else {
                continue;
            };
            let c = if outline_dist(&edges, uf, vf) < 1.0 {
                dark
            } else {
                col
            };
            rgb[3 * i] = c[0] as u8;
            rgb[3 * i + 1] = c[1] as u8;
            rgb[3 * i + 2] = c[2] as u8;
        }
    }
}
