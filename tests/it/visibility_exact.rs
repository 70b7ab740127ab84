//! The z-buffer against an exact reference: at every pixel centre, the nearest box face a ray
//! from the camera hits (Möller–Trumbore in `f64` on the boxes' unsnapped faces), on random
//! scenes built to be hard: boxes that overlap on screen, some right behind others with gaps
//! down to a few centimetres, faces seen at grazing angles.
//!
//! The rasteriser snaps vertices to 1/2^S px (rule 1 of `visibility::raster`), so pixels whose
//! centre lies within half a sub-pixel step of an outline can differ; the depth order between
//! surfaces comes from the inverse-depth plane of each face through its unsnapped vertices,
//! which is the surface's own plane, so where two surfaces are close the nearer one still wins.
//! The bounds below are what that leaves: differing pixels are outline pixels, a few per object
//! ([`MAX_DIFF_PIXELS`] plus [`MAX_DIFF_PER_OUTLINE_PX`] of its outline length), and at most
//! [`MAX_DIFF_SHARE`] of all visible pixels, at 1600×900 (4 sub-pixel bits, the coarsest grid
//! nuScenes and Waymo images get).

use crate::common;

use drivegen::store::Pose;
use drivegen::visibility::project::{box_in_camera, camera, project_box, BoxGeom, Camera};
use drivegen::visibility::raster::{raster_cpu, RasterJob, EMPTY};
use nalgebra::Vector3;

use common::random::Rng;

const W: u32 = 1600;
const H: u32 = 900;
const NEAR: f64 = 0.1;

/// An object's pixels that differ from the exact reference (either way) are at most
/// `MAX_DIFF_PIXELS + MAX_DIFF_PER_OUTLINE_PX × outline`, its outline being the 4-neighbour
/// boundary of its reference region: only outline pixels may differ, and few of them (seen:
/// at most 0.03 per outline pixel on objects of a few hundred pixels, 2 of 7 on the smallest).
const MAX_DIFF_PER_OUTLINE_PX: f64 = 0.1;
const MAX_DIFF_PIXELS: f64 = 2.0;

/// Of all visible pixels, at most this share differs (seen: 0.012–0.020 %).
const MAX_DIFF_SHARE: f64 = 0.001;

/// The box faces as triangles, by corner index (the projection's own table is private; any
/// triangulation of the same faces hits the same points).
const FACES: [[usize; 4]; 6] = [
    [0, 1, 2, 3],
    [4, 5, 6, 7],
    [0, 1, 5, 4],
    [1, 2, 6, 5],
    [2, 3, 7, 6],
    [3, 0, 4, 7],
];

fn ray_triangle(
    d: &Vector3<f64>,
    a: &Vector3<f64>,
    b: &Vector3<f64>,
    c: &Vector3<f64>,
) -> Option<f64> {
    let (e1, e2) = (b - a, c - a);
    let p = d.cross(&e2);
    let det = e1.dot(&p);
    if det.abs() < 1e-15 {
        return None;
    }
    let inv = 1.0 / det;
    let s = -a;
    let u = s.dot(&p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let v = d.dot(&q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (t > 0.0).then_some(t)
}

/// The exact instance map: the nearest face hit at each pixel centre.
fn reference(cam: &Camera, boxes: &[BoxGeom]) -> Vec<u32> {
    let corners: Vec<[Vector3<f64>; 8]> = boxes.iter().map(|b| box_in_camera(cam, b).1).collect();
    let mut ids = vec![EMPTY; (W * H) as usize];
    for j in 0..H {
        for i in 0..W {
            let d = Vector3::new(
                (f64::from(i) + 0.5 - cam.cx) / cam.fx,
                (f64::from(j) + 0.5 - cam.cy) / cam.fy,
                1.0,
            );
            let mut best = (f64::INFINITY, EMPTY);
            for (k, c) in corners.iter().enumerate() {
                for f in FACES {
                    for tri in [[f[0], f[1], f[2]], [f[0], f[2], f[3]]] {
                        if let Some(t) = ray_triangle(&d, &c[tri[0]], &c[tri[1]], &c[tri[2]]) {
                            // The ray's z is t (d.z = 1); the projection clips at the near plane.
                            if t >= NEAR && t < best.0 {
                                best = (t, k as u32);
                            }
                        }
                    }
                }
            }
            ids[(j * W + i) as usize] = best.1;
        }
    }
    ids
}

/// A scene of `n` boxes ahead of the camera, a third of them placed just behind another.
fn scene(rng: &mut Rng, n: usize) -> Vec<BoxGeom> {
    let mut boxes: Vec<BoxGeom> = Vec::new();
    while boxes.len() < n {
        let size = [
            rng.range(0.8, 3.0),
            rng.range(1.5, 6.0),
            rng.range(0.8, 3.0),
        ];
        let yaw = rng.range(-3.1, 3.1);
        let tilt = rng.range(-0.3, 0.3);
        // Rotation about the camera's y (down) axis, then a little about x.
        let q = nalgebra::UnitQuaternion::from_euler_angles(tilt, yaw, 0.0);
        let q = [q.w, q.i, q.j, q.k];
        let center = if !boxes.is_empty() && rng.below(3) == 0 {
            // Right behind an earlier box, seen past its side: a gap of centimetres to a metre.
            let b = boxes[rng.below(boxes.len() as u32) as usize];
            let gap = [0.02, 0.05, 0.2, 1.0][rng.below(4) as usize];
            let reach = b.size_wlh.iter().cloned().fold(0.0, f64::max) / 2.0
                + size.iter().cloned().fold(0.0, f64::max) / 2.0;
            [
                b.center[0] + rng.range(-1.5, 1.5),
                b.center[1] + rng.range(-0.5, 0.5),
                b.center[2] + reach + gap,
            ]
        } else {
            [
                rng.range(-8.0, 8.0),
                rng.range(-1.5, 1.5),
                rng.range(5.0, 35.0),
            ]
        };
        let b = BoxGeom {
            center,
            size_wlh: size,
            q,
        };
        // Boxes must not intersect (real ones do not); test by separating their centres.
        let clear = boxes.iter().all(|o| {
            let d: f64 = (0..3)
                .map(|k| (o.center[k] - b.center[k]).powi(2))
                .sum::<f64>();
            let r = |x: &BoxGeom| x.size_wlh.iter().map(|v| v * v).sum::<f64>().sqrt() / 2.0;
            d.sqrt() > r(o) + r(&b) + 0.01
        });
        if clear || rng.below(4) == 0 {
            boxes.push(b);
        }
    }
    boxes
}

#[test]
fn visible_pixels_match_ray_casting_up_to_outline_pixels() {
    let seed = common::random::seed();
    let mut rng = Rng(seed);
    let identity = Pose {
        t: [0.0; 3],
        q: [1.0, 0.0, 0.0, 0.0],
    };
    let cam = camera(W, H, [1266.0, 1266.0, 816.0, 491.0], identity, identity);
    let (mut differing, mut total, mut worst) = (0usize, 0usize, (0.0f64, String::new()));
    for s in 0..4 {
        let boxes = scene(&mut rng, 10);
        let mut tris = Vec::new();
        for (k, b) in boxes.iter().enumerate() {
            if let Some(p) = project_box(&cam, b, NEAR) {
                tris.extend(p.raster_tris(k as u32));
            }
        }
        let out = raster_cpu(&RasterJob {
            width: W,
            height: H,
            num_objects: boxes.len() as u32,
            tris: &tris,
            want_maps: true,
        })
        .unwrap();
        let exact = reference(&cam, &boxes);
        for (k, _) in boxes.iter().enumerate() {
            let k = k as u32;
            let region = |i: i64, j: i64| {
                i >= 0
                    && j >= 0
                    && i < i64::from(W)
                    && j < i64::from(H)
                    && exact[(j as u32 * W + i as u32) as usize] == k
            };
            let (mut outline, mut diff, mut count) = (0usize, 0usize, 0usize);
            for j in 0..i64::from(H) {
                for i in 0..i64::from(W) {
                    let at = (j as u32 * W + i as u32) as usize;
                    let (a, b) = (out.ids[at] == k, exact[at] == k);
                    if b {
                        count += 1;
                        if !(region(i - 1, j)
                            && region(i + 1, j)
                            && region(i, j - 1)
                            && region(i, j + 1))
                        {
                            outline += 1;
                        }
                    }
                    if a != b {
                        diff += 1;
                    }
                }
            }
            differing += diff;
            total += count;
            let share = diff as f64 / outline.max(1) as f64;
            if share > worst.0 {
                worst = (
                    share,
                    format!(
                        "scene {s} object {k}: {diff} pixels differ of {count} ({} outline), raster {}",
                        outline, out.objects[k as usize].visible_pixels
                    ),
                );
            }
            assert!(
                diff as f64 <= MAX_DIFF_PIXELS + MAX_DIFF_PER_OUTLINE_PX * outline as f64,
                "seed {seed} scene {s} object {k}: {diff} pixels differ from ray casting, {count} \
                 visible, outline {outline}"
            );
        }
    }
    let share = differing as f64 / total.max(1) as f64;
    eprintln!(
        "{differing} of {total} visible pixels differ from ray casting ({:.3} %); worst: {}",
        100.0 * share,
        worst.1
    );
    assert!(
        share <= MAX_DIFF_SHARE,
        "seed {seed}: {:.3} % of pixels differ",
        100.0 * share
    );
}
