//! Projection, z-buffer and filters of the visibility stage against hand-computed values and
//! independent references (a brute-force f64 point-in-polygon count on each box's convex
//! silhouette), never against the code's own earlier output.

use crate::common;

use std::path::Path;

use common::random::Rng;
use drivegen::config::StageConfig;
use drivegen::store::Pose;
use drivegen::visibility::config::VisibilityConfig;
use drivegen::visibility::filters::{evaluate, FilterInput, RejectReason};
use drivegen::visibility::project::{box_in_camera, camera, project_box, BoxGeom, Camera};
use drivegen::visibility::raster::{
    covers, edge, for_each_covered, raster_cpu, setup, Grid, RasterJob, RasterOut, Tri, EMPTY,
};

const IDENTITY: Pose = Pose {
    t: [0.0; 3],
    q: [1.0, 0.0, 0.0, 0.0],
};

/// 1600×900, f = 1000 px, principal point at the centre; camera = ego = global frame.
fn identity_camera() -> Camera {
    camera(
        1600,
        900,
        [1000.0, 1000.0, 800.0, 450.0],
        IDENTITY,
        IDENTITY,
    )
}

fn cube(center: [f64; 3], wlh: [f64; 3]) -> BoxGeom {
    BoxGeom {
        center,
        size_wlh: wlh,
        q: [1.0, 0.0, 0.0, 0.0],
    }
}

fn raster(w: u32, h: u32, n: u32, tris: &[Tri]) -> RasterOut {
    raster_cpu(&RasterJob {
        width: w,
        height: h,
        num_objects: n,
        tris,
        want_maps: true,
    })
    .unwrap()
}

fn tri(p: [[f32; 2]; 3], z: f32, obj: u32) -> Tri {
    Tri { p, z: [z; 3], obj }
}

/// Two triangles sharing the diagonal (x0, y0)–(x1, y1).
fn rect(x0: f32, y0: f32, x1: f32, y1: f32, z: f32, obj: [u32; 2]) -> [Tri; 2] {
    [
        tri([[x0, y0], [x1, y0], [x1, y1]], z, obj[0]),
        tri([[x0, y0], [x1, y1], [x0, y1]], z, obj[1]),
    ]
}

// ---------------------------------------------------------------------------------------------
// Projection

#[test]
fn unit_cube_ten_metres_ahead_projects_to_hand_computed_corners() {
    let cam = identity_camera();
    let p = project_box(&cam, &cube([0.0, 0.0, 10.0], [1.0, 1.0, 1.0]), 0.1).unwrap();
    // With identity poses the box axes are the camera axes: corner k has signs (sx, sy, sz) in
    // Box.corners() order and sits at (sx/2, sy/2, 10 + sz/2): u = 800 + 1000·(sx/2)/z.
    let signs = [
        [1.0, 1.0, 1.0],
        [1.0, -1.0, 1.0],
        [1.0, -1.0, -1.0],
        [1.0, 1.0, -1.0],
        [-1.0, 1.0, 1.0],
        [-1.0, -1.0, 1.0],
        [-1.0, -1.0, -1.0],
        [-1.0, 1.0, -1.0],
    ];
    let far = 500.0 / 10.5; // 47.619047…
    let near = 500.0 / 9.5; // 52.631578…
    for (k, s) in signs.iter().enumerate() {
        let d = if s[2] > 0.0 { far } else { near };
        let [u, v] = p.corners_px[k].unwrap();
        assert!((u - (800.0 + s[0] * d)).abs() < 1e-9, "corner {k}: u = {u}");
        assert!((v - (450.0 + s[1] * d)).abs() < 1e-9, "corner {k}: v = {v}");
    }
    for (got, want) in p
        .amodal
        .iter()
        .zip([800.0 - near, 450.0 - near, 800.0 + near, 450.0 + near])
    {
        assert!((got - want).abs() < 1e-9, "amodal {:?}", p.amodal);
    }
    assert_eq!(p.truncation, 1.0);
    assert!((p.depth_m - 10.0).abs() < 1e-12);
    // The BEV distance is measured in the global x–y plane, where this box sits at the origin.
    assert!(p.distance_m.abs() < 1e-12);
}

#[test]
fn box_straddling_the_camera_plane_is_clipped_not_dropped() {
    let cam = identity_camera();
    // l = 1 along camera x, w = 1 along y, h = 4 along z: z spans [-1, 3].
    let p = project_box(&cam, &cube([0.0, 0.0, 1.0], [1.0, 1.0, 4.0]), 0.1).expect("kept");
    for k in 0..8 {
        let behind = p.corners_cam[k].z < 0.0;
        assert_eq!(p.corners_px[k].is_none(), behind, "corner {k}");
    }
    // The near-plane cut (z = 0.1, x, y = ±0.5) bounds the amodal box: 800 ± 1000·0.5/0.1.
    let want = [
        800.0 - 5000.0,
        450.0 - 5000.0,
        800.0 + 5000.0,
        450.0 + 5000.0,
    ];
    for (got, w) in p.amodal.iter().zip(want) {
        assert!(
            got.is_finite() && (got - w).abs() < 1e-6,
            "amodal {:?}",
            p.amodal
        );
    }
    assert!((p.truncation - 1600.0 * 900.0 / 1e8).abs() < 1e-12);
    // From inside the box every pixel sees it.
    let tris: Vec<Tri> = p.raster_tris(0).collect();
    let out = raster(1600, 900, 1, &tris);
    assert_eq!(out.objects[0].projected_pixels, 1600 * 900);
    assert_eq!(out.objects[0].visible_pixels, 1600 * 900);
}

#[test]
fn box_half_out_of_the_image_has_truncation_one_half() {
    let cam = identity_camera();
    // A thin 2 m × 2 m plate 10 m ahead whose centre projects onto the left image border.
    let b = cube([-8.0, 0.0, 10.0], [2.0, 2.0, 0.01]);
    let p = project_box(&cam, &b, 0.1).unwrap();
    // Hand computation: the extreme u are at x = -9 (nearest face z = 9.995) and x = -7 (z = 10.005).
    let u_min = 800.0 + 1000.0 * -9.0 / 9.995;
    let u_max = 800.0 + 1000.0 * -7.0 / 10.005;
    let want = u_max / (u_max - u_min);
    assert!(
        (p.truncation - want).abs() < 1e-9,
        "{} vs {want}",
        p.truncation
    );
    assert!((p.truncation - 0.5).abs() < 0.01);
}

#[test]
fn boxes_behind_or_beside_the_camera_give_no_projection() {
    let cam = identity_camera();
    assert!(project_box(&cam, &cube([0.0, 0.0, -10.0], [1.0, 1.0, 1.0]), 0.1).is_none());
    assert!(project_box(&cam, &cube([100.0, 0.0, 10.0], [1.0, 1.0, 1.0]), 0.1).is_none());
    assert!(project_box(&cam, &cube([0.0, -60.0, 10.0], [1.0, 1.0, 1.0]), 0.1).is_none());
}

#[test]
fn devkit_chain_with_a_rotated_camera_and_ego() {
    // A nuScenes CAM_FRONT mount on an ego yawed by 30° at (100, 50): a box 20 m ahead of the
    // ego projects near the principal point, whatever the frames in between.
    let yaw = 30f64.to_radians();
    let ego = Pose {
        t: [100.0, 50.0, 0.0],
        q: [(yaw / 2.0).cos(), 0.0, 0.0, (yaw / 2.0).sin()],
    };
    let mount = Pose {
        t: [1.7, 0.0, 1.5],
        q: [0.5, -0.5, 0.5, -0.5],
    };
    let cam = camera(1600, 900, [1266.0, 1266.0, 816.0, 491.0], mount, ego);
    let ahead = [100.0 + 21.7 * yaw.cos(), 50.0 + 21.7 * yaw.sin(), 1.5];
    let b = BoxGeom {
        center: ahead,
        size_wlh: [2.0, 4.0, 1.5],
        q: ego.q,
    };
    let (c, corners) = box_in_camera(&cam, &b);
    assert!(
        (c - nalgebra::Vector3::new(0.0, 0.0, 20.0)).norm() < 1e-9,
        "{c}"
    );
    // Box x (length, forward) is the camera's z: corner 0 (+l/2, +w/2, +h/2) is 2 m farther,
    // 1 m to the ego's left (camera -x) and 0.75 m up (camera -y).
    assert!((corners[0] - nalgebra::Vector3::new(-1.0, -0.75, 22.0)).norm() < 1e-9);
    let p = project_box(&cam, &b, 0.1).unwrap();
    let [u, v] = p.corners_px[0].unwrap();
    assert!(
        (u - (816.0 - 1266.0 / 22.0)).abs() < 1e-9
            && (v - (491.0 - 1266.0 * 0.75 / 22.0)).abs() < 1e-9
    );
    assert!((p.distance_m - 21.7).abs() < 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Rasteriser

#[test]
fn rectangle_of_two_triangles_covers_exactly_its_pixels() {
    // Integer corners: pixel centres never lie on an edge.
    let out = raster(200, 100, 2, &rect(10.0, 20.0, 110.0, 70.0, 5.0, [0, 1]));
    let (a, b) = (out.objects[0], out.objects[1]);
    assert_eq!(
        a.projected_pixels + b.projected_pixels,
        100 * 50,
        "the diagonal is counted once"
    );
    assert_eq!(a.visible_pixels + b.visible_pixels, 100 * 50);
    for j in 0..100 {
        for i in 0..200 {
            let inside = (10..110).contains(&i) && (20..70).contains(&j);
            assert_eq!(out.ids[j * 200 + i] != EMPTY, inside, "pixel ({i}, {j})");
        }
    }
    // Edges through pixel centres: the left and top edges are in, the right and bottom out.
    let out = raster(200, 100, 1, &rect(10.5, 5.5, 20.5, 9.5, 5.0, [0, 0]));
    assert_eq!(out.objects[0].projected_pixels, 10 * 4);
    assert_eq!(out.objects[0].modal, Some([10, 5, 20, 9]));
    // Also with the diagonal running the other way and the vertices listed clockwise.
    let t = [
        tri([[10.5, 5.5], [10.5, 9.5], [20.5, 5.5]], 5.0, 0),
        tri([[20.5, 5.5], [10.5, 9.5], [20.5, 9.5]], 5.0, 1),
    ];
    let out = raster(200, 100, 2, &t);
    assert_eq!(
        out.objects[0].projected_pixels + out.objects[1].projected_pixels,
        40
    );
}

#[test]
fn nearer_rectangle_wins_the_overlap() {
    let mut tris = rect(100.0, 100.0, 300.0, 200.0, 10.0, [0, 0]).to_vec();
    tris.extend(rect(200.0, 150.0, 400.0, 250.0, 5.0, [1, 1]));
    let out = raster(640, 480, 2, &tris);
    let (far, near) = (out.objects[0], out.objects[1]);
    assert_eq!(far.projected_pixels, 200 * 100);
    assert_eq!(near.projected_pixels, 200 * 100);
    assert_eq!(near.visible_pixels, 200 * 100);
    assert_eq!(far.visible_pixels, 200 * 100 - 100 * 50);
    assert_eq!(far.modal, Some([100, 100, 300, 200]));
    assert!((far.visible_fraction() - 0.75).abs() < 1e-12);
    // Depths of the winners come back from the keys.
    let d = drivegen::visibility::raster::key_depth(out.depth_keys[160 * 640 + 250]).unwrap();
    assert!((d - 5.0).abs() < 1e-5);
    // Equal depth: the smaller object index wins.
    let mut tris = rect(100.0, 100.0, 300.0, 200.0, 7.0, [1, 1]).to_vec();
    tris.extend(rect(200.0, 150.0, 400.0, 250.0, 7.0, [0, 0]));
    let out = raster(640, 480, 2, &tris);
    assert_eq!(out.objects[0].visible_pixels, 200 * 100);
    assert_eq!(out.objects[1].visible_pixels, 200 * 100 - 100 * 50);
}

#[test]
fn perspective_correct_depth_picks_the_right_surface() {
    // A slanted plane A from z = 5 (left) to 15 (right) crosses a flat plane B at z = 7.5.
    // Interpolating 1/z, they meet at x = 50 (1/z falls linearly from 1/5 to 1/15); interpolating
    // z linearly would put the crossing at x = 25.
    let slanted = |z_left: f32, z_right: f32, obj: u32| {
        [
            Tri {
                p: [[0.0, 0.0], [100.0, 0.0], [100.0, 10.0]],
                z: [z_left, z_right, z_right],
                obj,
            },
            Tri {
                p: [[0.0, 0.0], [100.0, 10.0], [0.0, 10.0]],
                z: [z_left, z_right, z_left],
                obj,
            },
        ]
    };
    let mut tris = slanted(5.0, 15.0, 0).to_vec();
    tris.extend(slanted(7.5, 7.5, 1));
    let out = raster(100, 10, 2, &tris);
    assert_eq!(out.objects[0].visible_pixels, 500);
    assert_eq!(out.objects[1].visible_pixels, 500);
    assert_eq!(out.ids[49], 0);
    assert_eq!(out.ids[50], 1);
}

#[test]
fn random_mesh_tiling_a_region_covers_each_pixel_exactly_once() {
    let (w, h) = (640u32, 320u32);
    let (x0, y0, x1, y1) = (64.0f64, 32.0f64, 576.0f64, 288.0f64);
    let (nx, ny) = (9usize, 7usize);
    for seed in 1..=5u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        // A jittered grid: boundary vertices slide along the boundary only.
        let mut v = vec![[0f32; 2]; (nx + 1) * (ny + 1)];
        let (cw, ch) = ((x1 - x0) / nx as f64, (y1 - y0) / ny as f64);
        for gy in 0..=ny {
            for gx in 0..=nx {
                // Jitter of at most 0.2 cell keeps every quad convex, so either diagonal splits it.
                let x = match gx {
                    0 => x0,
                    _ if gx == nx => x1,
                    _ => x0 + (gx as f64 + rng.range(-0.2, 0.2)) * cw,
                };
                let y = match gy {
                    0 => y0,
                    _ if gy == ny => y1,
                    _ => y0 + (gy as f64 + rng.range(-0.2, 0.2)) * ch,
                };
                v[gy * (nx + 1) + gx] = [x as f32, y as f32];
            }
        }
        let mut tris = Vec::new();
        for gy in 0..ny {
            for gx in 0..nx {
                let a = v[gy * (nx + 1) + gx];
                let b = v[gy * (nx + 1) + gx + 1];
                let c = v[(gy + 1) * (nx + 1) + gx + 1];
                let d = v[(gy + 1) * (nx + 1) + gx];
                let n = tris.len() as u32;
                let z = |r: &mut Rng| {
                    [
                        r.range(2.0, 50.0) as f32,
                        r.range(2.0, 50.0) as f32,
                        r.range(2.0, 50.0) as f32,
                    ]
                };
                let (p, q) = if rng.unit() < 0.5 {
                    ([a, b, c], [a, c, d])
                } else {
                    ([a, b, d], [b, c, d])
                };
                tris.push(Tri {
                    p,
                    z: z(&mut rng),
                    obj: n,
                });
                tris.push(Tri {
                    p: q,
                    z: z(&mut rng),
                    obj: n + 1,
                });
            }
        }
        let out = raster(w, h, tris.len() as u32, &tris);
        let total: u32 = out.objects.iter().map(|o| o.projected_pixels).sum();
        assert_eq!(
            total as f64,
            (x1 - x0) * (y1 - y0),
            "seed {seed}: some pixel is covered twice or never"
        );
        let drawn = out.ids.iter().filter(|&&id| id != EMPTY).count();
        assert_eq!(drawn as f64, (x1 - x0) * (y1 - y0), "seed {seed}");
        // Each triangle alone wins all it covers; the incremental walk equals direct evaluation.
        let g = Grid::new(w, h).unwrap();
        for t in &tris {
            let Some(s) = setup(&g, t) else { continue };
            let mut walked = 0u32;
            for_each_covered(&g, &s, |i, j| {
                assert!(covers(&g, &s, i, j));
                walked += 1;
            });
            // Direct evaluation of the edge functions (rules 3-5) around the triangle, ignoring
            // the setup's bounding box.
            let lo = |v: f32| (v.floor() as i64 - 2).max(0) as u32;
            let (xs, ys) = (t.p.map(|q| q[0]), t.p.map(|q| q[1]));
            let (ia, ib) = (
                lo(xs.iter().cloned().fold(f32::MAX, f32::min)),
                (xs.iter().cloned().fold(0.0, f32::max) as u32 + 2).min(w - 1),
            );
            let (ja, jb) = (
                lo(ys.iter().cloned().fold(f32::MAX, f32::min)),
                (ys.iter().cloned().fold(0.0, f32::max) as u32 + 2).min(h - 1),
            );
            let mut direct = 0u32;
            for j in ja..=jb {
                for i in ia..=ib {
                    let inside = (0..3).all(|k| {
                        let e = edge(&s, k, g.centre(i), g.centre(j));
                        e > 0 || (e == 0 && (s.top_left >> k) & 1 == 1)
                    });
                    assert_eq!(inside, covers(&g, &s, i, j), "pixel ({i}, {j})");
                    direct += u32::from(inside);
                }
            }
            assert_eq!(walked, direct);
            assert_eq!(out.objects[t.obj as usize].projected_pixels, direct);
            assert_eq!(out.objects[t.obj as usize].visible_pixels, direct);
        }
    }
}

/// The convex hull (counter-clockwise in x-right/y-up terms, Andrew's monotone chain).
fn hull(mut pts: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    pts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    pts.dedup();
    let cross = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut lower: Vec<[f64; 2]> = Vec::new();
    for &p in &pts {
        while lower.len() >= 2 && cross(lower[lower.len() - 2], lower[lower.len() - 1], p) <= 0.0 {
            lower.pop();
        }
        lower.push(p);
    }
    let mut upper: Vec<[f64; 2]> = Vec::new();
    for &p in pts.iter().rev() {
        while upper.len() >= 2 && cross(upper[upper.len() - 2], upper[upper.len() - 1], p) <= 0.0 {
            upper.pop();
        }
        upper.push(p);
    }
    lower.pop();
    upper.pop();
    lower.extend(upper);
    lower
}

/// Pixel centres of a `w × h` image strictly inside a convex polygon.
fn brute_force_count(poly: &[[f64; 2]], w: u32, h: u32) -> (u32, f64) {
    let n = poly.len();
    let mut count = 0;
    for j in 0..h {
        for i in 0..w {
            let p = [i as f64 + 0.5, j as f64 + 0.5];
            let inside = (0..n).all(|k| {
                let (a, b) = (poly[k], poly[(k + 1) % n]);
                (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]) > 0.0
            });
            count += u32::from(inside);
        }
    }
    let perimeter: f64 = (0..n)
        .map(|k| {
            let (a, b) = (poly[k], poly[(k + 1) % n]);
            ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt()
        })
        .sum();
    (count, perimeter)
}

/// The silhouette of a box cut by the plane z = near, built independently of the stage: the
/// corners in front of the plane plus every box edge's crossing of it, projected and hulled.
fn clipped_silhouette(
    cam: &Camera,
    corners: &[nalgebra::Vector3<f64>; 8],
    near: f64,
) -> Vec<[f64; 2]> {
    let px = |p: nalgebra::Vector3<f64>| [cam.fx * p.x / p.z + cam.cx, cam.fy * p.y / p.z + cam.cy];
    let mut pts: Vec<[f64; 2]> = corners
        .iter()
        .filter(|c| c.z >= near)
        .map(|c| px(*c))
        .collect();
    for [a, b] in common::BOX_EDGES {
        let (pa, pb) = (corners[a], corners[b]);
        if (pa.z >= near) != (pb.z >= near) {
            let t = (near - pa.z) / (pb.z - pa.z);
            let mut q = pa + (pb - pa) * t;
            q.z = near;
            pts.push(px(q));
        }
    }
    hull(pts)
}

#[test]
fn projected_pixels_agree_with_a_brute_force_silhouette_count() {
    let (w, h) = (480u32, 270u32);
    let cam = camera(w, h, [300.0, 300.0, 240.0, 135.0], IDENTITY, IDENTITY);
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut checked = 0;
    let mut straddling = 0;
    for n in 0..240 {
        // The last 90 boxes sit around the camera plane, so most are cut by the near plane.
        let (zr, big) = if n < 150 {
            ((-1.0, 30.0), 1.0)
        } else {
            ((-2.0, 3.0), 2.0)
        };
        let yaw = rng.range(-3.2, 3.2);
        let pitch = rng.range(-0.6, 0.6);
        let roll = rng.range(-0.6, 0.6);
        let q = nalgebra::UnitQuaternion::from_euler_angles(roll, pitch, yaw);
        let center = [
            rng.range(-12.0, 12.0) / big,
            rng.range(-6.0, 6.0) / big,
            rng.range(zr.0, zr.1),
        ];
        let b = BoxGeom {
            center,
            size_wlh: [
                rng.range(0.3, 4.0) * big,
                rng.range(0.3, 8.0) * big,
                rng.range(0.3, 4.0) * big,
            ],
            q: [q.w, q.i, q.j, q.k],
        };
        let Some(p) = project_box(&cam, &b, 0.1) else {
            continue;
        };
        let tris: Vec<Tri> = p.raster_tris(0).collect();
        let out = raster(w, h, 1, &tris);
        let poly = clipped_silhouette(&cam, &p.corners_cam, 0.1);
        let (want, perimeter) = brute_force_count(&poly, w, h);
        let got = out.objects[0].projected_pixels;
        // Vertices snap to 1/64 px here; only centres within a hair of the outline may differ.
        let tol = 0.02 * perimeter.min(4.0 * (w + h) as f64) + 3.0;
        assert!(
            (f64::from(got) - f64::from(want)).abs() <= tol,
            "box {b:?}: raster {got} vs brute force {want} (tolerance {tol})"
        );
        assert_eq!(
            out.objects[0].visible_pixels, got,
            "a lone box sees all of itself"
        );
        checked += u32::from(want > 0);
        straddling += u32::from(want > 0 && p.corners_px.iter().any(Option::is_none));
    }
    assert!(
        checked > 100 && straddling > 20,
        "only {checked} boxes landed in the image, {straddling} cut by the near plane"
    );
}

// ---------------------------------------------------------------------------------------------
// Filters and config

fn passing() -> FilterInput<'static> {
    FilterInput {
        category: "vehicle.car",
        visibility_bin: Some(4),
        num_lidar_pts: 5,
        distance_m: 75.0,
        truncation: 0.5,
        visible_pixels: 1200,
        visible_fraction: 0.5,
    }
}

#[test]
fn every_reject_reason_is_triggered_and_the_first_failure_wins() {
    let defaults = VisibilityConfig::default_config().unwrap().filters;
    // The default lets sources without bins (Waymo, CARLA) through the bin test; the strict
    // setting is what makes a missing bin a failure.
    assert!(defaults.allow_missing_visibility);
    let mut cfg = defaults;
    cfg.allow_missing_visibility = false;
    assert_eq!(
        evaluate(&cfg, &passing()),
        None,
        "the thresholds themselves pass"
    );
    let cases: Vec<(FilterInput<'static>, RejectReason)> = vec![
        (
            FilterInput {
                category: "movable_object.debris",
                ..passing()
            },
            RejectReason::IgnoredCategory,
        ),
        (
            FilterInput {
                category: "flat.driveable_surface",
                ..passing()
            },
            RejectReason::IgnoredCategory,
        ),
        (
            FilterInput {
                category: "static_object.bicycle_rack",
                ..passing()
            },
            RejectReason::IgnoredCategory,
        ),
        (
            FilterInput {
                visibility_bin: Some(2),
                ..passing()
            },
            RejectReason::LowVisibilityBin,
        ),
        (
            FilterInput {
                visibility_bin: None,
                ..passing()
            },
            RejectReason::LowVisibilityBin,
        ),
        (
            FilterInput {
                num_lidar_pts: 4,
                ..passing()
            },
            RejectReason::TooFewLidarPoints,
        ),
        (
            FilterInput {
                distance_m: 75.01,
                ..passing()
            },
            RejectReason::TooFar,
        ),
        (
            FilterInput {
                distance_m: f64::NAN,
                ..passing()
            },
            RejectReason::TooFar,
        ),
        (
            FilterInput {
                truncation: 0.49,
                ..passing()
            },
            RejectReason::Truncated,
        ),
        (
            FilterInput {
                visible_pixels: 1199,
                ..passing()
            },
            RejectReason::TooFewVisiblePixels,
        ),
        (
            FilterInput {
                visible_fraction: 0.499,
                ..passing()
            },
            RejectReason::Occluded,
        ),
        // Several failures: the earliest in the documented order.
        (
            FilterInput {
                num_lidar_pts: 0,
                visible_pixels: 0,
                visible_fraction: 0.0,
                ..passing()
            },
            RejectReason::TooFewLidarPoints,
        ),
        (
            FilterInput {
                category: "noise",
                visibility_bin: Some(1),
                ..passing()
            },
            RejectReason::IgnoredCategory,
        ),
        (
            FilterInput {
                truncation: 0.1,
                visible_fraction: 0.1,
                ..passing()
            },
            RejectReason::Truncated,
        ),
    ];
    for (x, want) in &cases {
        assert_eq!(evaluate(&cfg, x), Some(*want), "{x:?}");
    }
    for r in RejectReason::ALL {
        assert!(cases.iter().any(|c| c.1 == r), "{r} never triggered");
    }
    let names: Vec<&str> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "ignored_category",
            "low_visibility_bin",
            "too_few_lidar_points",
            "too_far",
            "truncated",
            "too_few_visible_pixels",
            "occluded"
        ]
    );
    let mut lenient = cfg.clone();
    lenient.allow_missing_visibility = true;
    assert_eq!(
        evaluate(
            &lenient,
            &FilterInput {
                visibility_bin: None,
                ..passing()
            }
        ),
        None
    );
}

#[test]
fn config_defaults_follow_the_spec_and_bad_values_are_refused() {
    let cfg = VisibilityConfig::default_config().unwrap();
    let f = &cfg.filters;
    assert_eq!(cfg.projection.near_m, 0.1);
    assert_eq!(f.visibility_bins, [3, 4]);
    assert_eq!(
        (f.min_lidar_points, f.max_distance_m, f.min_truncation),
        (5, 75.0, 0.5)
    );
    assert_eq!((f.min_visible_pixels, f.min_visible_fraction), (1200, 0.5));
    let text = drivegen::visibility::config::DEFAULT_TOML;
    let name = Path::new("test.toml");
    assert!(VisibilityConfig::from_toml(text, name).is_ok());
    for (from, to) in [
        ("min_truncation = 0.5", "min_truncation = 1.5"),
        ("near_m = 0.1", "near_m = -1.0"),
        ("min_lidar_points = 5", "min_lidar_point = 5"),
        ("\"flat.*\",", "\"*\","),
    ] {
        assert!(text.contains(from));
        let err = VisibilityConfig::from_toml(&text.replace(from, to), name).unwrap_err();
        assert!(err.to_string().contains("test.toml"), "{err}");
    }
}
