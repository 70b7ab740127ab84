//! Waymo's lens model in the visibility stage (`visibility::distortion`): GPU = CPU on fresh
//! random Waymo-like cameras and boxes, and the CPU geometry against independent references.
//!
//! The lens projection and its adaptive tessellation run once, in f64, on the CPU; the CPU and
//! GPU paths differ from there on (z-buffer, per-object counts, modal boxes, label anchors), so
//! parity is asserted on those outputs, bit for bit, as `tests/it/gpu/kernels_zbuffer.rs` does for
//! pinhole cameras. The shared geometry is checked against what this file computes itself:
//! the corners against the camera model of `docs/formats.md` (§2.3, written in Waymo's
//! camera axes), and the rasterised silhouette and amodal box of single boxes against dense
//! samples of the box surface pushed through that formula.
//!
//! Random inputs are seeded from the clock (printed); `DRIVEGEN_TEST_SEED` replays one. A
//! missing adapter fails the GPU comparisons; `DRIVEGEN_GPU_TESTS=no` skips them, saying so.
//! The CPU reference checks always run.

use crate::common;

use common::gpu::gpu;
use common::random::{seed, Rng};
use common::raster::assert_same;
use drivegen::config::StageConfig;
use drivegen::geometry::{quat_wxyz, wxyz};
use drivegen::som::SomConfig;
use drivegen::store::Pose;
use drivegen::visibility::anchor::image_anchors;
use drivegen::visibility::distortion::Lens;
use drivegen::visibility::project::{camera, project_box, BoxGeom, Camera, Projection};
use drivegen::visibility::raster::{raster_cpu, CpuRasteriser, RasterJob, Rasteriser, Tri, EMPTY};
use drivegen::visibility::GpuRasteriser;
use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};

/// A Waymo-like camera up to `max_width` px wide: 3:2 (front) or ~2.17:1 (side) images, f ≈ 1.0–1.15 × width (Waymo's
/// 1920-px cameras have f ≈ 2000–2080 px), the principal point within 3 % of the centre,
/// and k1, k2, p1, p2, k3 within the ranges of Waymo's calibrations; looking along a random
/// yaw from a random ego pose, 1.5–2.2 m above the ground.
fn random_camera(rng: &mut Rng, max_width: f64) -> Camera {
    let width = rng.range(64.0, max_width).round() as u32;
    let aspect = if rng.chance(0.6) { 1.5 } else { 1920.0 / 886.0 };
    let height = (f64::from(width) / aspect).round() as u32;
    let (w, h) = (f64::from(width), f64::from(height));
    let f = w * rng.range(1.0, 1.15);
    let k = [
        f,
        f * rng.range(0.997, 1.003),
        w * rng.range(0.47, 0.53),
        h * rng.range(0.47, 0.53),
    ];
    // OpenCV camera → ego for a camera looking along ego +x, then a yaw about ego z.
    let forward = Rotation3::from_matrix_unchecked(Matrix3::new(
        0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0,
    ));
    let yaw = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), rng.range(-3.2, 3.2));
    let cam_q = yaw * UnitQuaternion::from_rotation_matrix(&forward);
    let cam = Pose {
        t: [
            rng.range(-1.0, 2.0),
            rng.range(-1.0, 1.0),
            rng.range(1.5, 2.2),
        ],
        q: wxyz(&cam_q),
    };
    let ego_q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), rng.range(-3.2, 3.2));
    let ego = Pose {
        t: [
            rng.range(-5e3, 5e3),
            rng.range(-5e3, 5e3),
            rng.range(-20.0, 20.0),
        ],
        q: wxyz(&ego_q),
    };
    let mut c = camera(width, height, k, cam, ego);
    c.lens = Some(Lens {
        k: [
            rng.range(-0.35, 0.1),
            rng.range(-0.1, 0.25),
            rng.range(-2e-3, 2e-3),
            rng.range(-2e-3, 2e-3),
            rng.range(-0.05, 0.05),
        ],
        chord_tolerance_px: rng.range(0.05, 1.0),
    });
    c
}

fn camera_to_global(c: &Camera) -> nalgebra::Isometry3<f64> {
    c.ego * c.cam
}

/// A box seen by the camera: 1–60 m ahead, up to 1.6 × the depth to the side (past the
/// image edge and into the lens's invalid range), some straddling the near plane.
fn random_box(rng: &mut Rng, c: &Camera) -> BoxGeom {
    let depth = if rng.chance(0.1) {
        rng.range(-1.0, 2.0)
    } else {
        rng.range(1.0, 60.0)
    };
    let side = depth.abs().max(1.0) * rng.range(-1.6, 1.6);
    let up = rng.range(-0.5, 0.4) * depth.abs().max(1.0);
    let p = camera_to_global(c) * nalgebra::Point3::new(side, up, depth);
    let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), rng.range(-3.2, 3.2));
    BoxGeom {
        center: [p.x, p.y, p.z],
        size_wlh: [
            rng.range(0.4, 3.0),
            rng.range(0.4, 12.0),
            rng.range(0.8, 4.0),
        ],
        q: wxyz(&q),
    }
}

/// The camera model of `docs/formats.md` §2.3 on a point in the OpenCV camera frame, written
/// in Waymo's axes (x forward, y left, z up) as that section states it.
fn waymo_pixel(c: &Camera, k: [f64; 5], p: &Vector3<f64>) -> Option<[f64; 2]> {
    let (x, y, z) = (p.z, -p.x, -p.y);
    if x <= 0.0 {
        return None;
    }
    let (un, vn) = (-y / x, -z / x);
    let r2 = un * un + vn * vn;
    let rd = 1.0 + k[0] * r2 + k[1] * r2 * r2 + k[4] * r2 * r2 * r2;
    if !(0.8..=1.2).contains(&rd) {
        return None;
    }
    let und = un * rd + 2.0 * k[2] * un * vn + k[3] * (r2 + 2.0 * un * un);
    let vnd = vn * rd + k[2] * (r2 + 2.0 * vn * vn) + 2.0 * k[3] * un * vn;
    Some([c.fx * und + c.cx, c.fy * vnd + c.cy])
}

/// Box surface points in the camera frame: an `n`×`n` grid on each face.
fn surface_samples(c: &Camera, b: &BoxGeom, n: usize) -> Vec<Vector3<f64>> {
    let to_cam = camera_to_global(c).inverse();
    let r = quat_wxyz(b.q);
    let [w, l, h] = b.size_wlh;
    let half = [l / 2.0, w / 2.0, h / 2.0];
    let centre = Vector3::from(b.center);
    let mut out = Vec::new();
    for axis in 0..3 {
        for sign in [-1.0, 1.0] {
            for i in 0..=n {
                for j in 0..=n {
                    let (a, bb) = (i as f64 / n as f64, j as f64 / n as f64);
                    let mut v = [0.0; 3];
                    v[axis] = sign * half[axis];
                    v[(axis + 1) % 3] = (2.0 * a - 1.0) * half[(axis + 1) % 3];
                    v[(axis + 2) % 3] = (2.0 * bb - 1.0) * half[(axis + 2) % 3];
                    let g = r * Vector3::from(v) + centre;
                    out.push((to_cam * nalgebra::Point3::from(g)).coords);
                }
            }
        }
    }
    out
}

/// The projected boxes of one random image and their raster job's triangles.
fn random_image(rng: &mut Rng) -> (Camera, Vec<(BoxGeom, Projection)>, Vec<Tri>) {
    let mut c = random_camera(rng, 200.0);
    // lavapipe rasterises on the CPU, a few ms per triangle: coarser outlines keep the
    // triangle count (and the test) small; the tolerance does not change the code paths.
    if let Some(l) = c.lens.as_mut() {
        l.chord_tolerance_px = rng.range(0.3, 1.0);
    }
    let n = 1 + (rng.next_u64() % 8) as usize;
    let objects: Vec<(BoxGeom, Projection)> = (0..n)
        .map(|_| random_box(rng, &c))
        .filter_map(|b| project_box(&c, &b, 0.1).map(|p| (b, p)))
        .collect();
    let tris = objects
        .iter()
        .enumerate()
        .flat_map(|(k, (_, p))| p.raster_tris(k as u32))
        .collect();
    (c, objects, tris)
}

#[test]
fn lens_images_agree_between_gpu_and_cpu() {
    let Some(gpu) = gpu() else { return };
    let raster = GpuRasteriser::new(gpu).unwrap();
    let anchor_cfg = SomConfig::default_config().unwrap().anchor;
    let seed = seed();
    let mut rng = Rng(seed);
    let (mut drawn, mut curved) = (0u64, 0usize);
    let mut cases = 0;
    for case in 0..200 {
        if cases == 16 {
            break;
        }
        let (c, objects, tris) = random_image(&mut rng);
        if tris.is_empty() || tris.len() > 1500 {
            continue;
        }
        cases += 1;
        let job = RasterJob {
            width: c.width,
            height: c.height,
            num_objects: objects.len() as u32,
            tris: &tris,
            want_maps: true,
        };
        let what = format!(
            "seed {seed} case {case} ({}x{}, lens {:?}, {} boxes)",
            c.width,
            c.height,
            c.lens.map(|l| l.k),
            objects.len()
        );
        let want = raster_cpu(&job).unwrap();
        let got = raster.raster(&job).unwrap();
        assert_same(&got, &want, &what);
        // The label anchors come from the rasteriser too (the GPU's EDT kernels).
        let boxes: Vec<Option<[u32; 4]>> = want.objects.iter().map(|o| o.modal).collect();
        let a_cpu = image_anchors(&CpuRasteriser, &want, &boxes, &anchor_cfg).unwrap();
        let a_gpu = image_anchors(&raster, &got, &boxes, &anchor_cfg).unwrap();
        assert_eq!(a_gpu, a_cpu, "{what}: anchors");
        drawn += want
            .objects
            .iter()
            .map(|o| u64::from(o.visible_pixels))
            .sum::<u64>();
        // Tessellated boxes have many more than the 12 faces' worth of triangles.
        curved += objects.iter().filter(|(_, p)| p.tris.len() > 40).count();
    }
    assert_eq!(cases, 16, "seed {seed}: too few small enough images");
    assert!(drawn > 5_000, "seed {seed}: only {drawn} visible pixels");
    assert!(curved > 5, "seed {seed}: only {curved} tessellated boxes");
}

#[test]
fn lens_geometry_matches_the_spec_formula() {
    let seed = seed() ^ 0x1E45;
    let mut rng = Rng(seed);
    let (mut corners, mut silhouettes, mut samples_checked) = (0, 0, 0usize);
    for case in 0..400 {
        let c = random_camera(&mut rng, 480.0);
        let lens = c.lens.unwrap();
        let b = random_box(&mut rng, &c);
        let what = format!("seed {seed} case {case} lens {:?}", lens.k);
        let Some(p) = project_box(&c, &b, 0.1) else {
            continue;
        };
        // Corners: where in front of the near plane, the `docs/formats.md` §2.3 formula's pixel (or none where
        // the model is invalid).
        for (cam, px) in p.corners_cam.iter().zip(&p.corners_px) {
            if cam.z < 0.1 {
                assert!(
                    px.is_none(),
                    "{what}: a corner behind the near plane has a pixel"
                );
                continue;
            }
            let want = waymo_pixel(&c, lens.k, cam);
            match (px, want) {
                (Some(a), Some(b)) => {
                    assert!(
                        (a[0] - b[0]).abs() < 1e-6 && (a[1] - b[1]).abs() < 1e-6,
                        "{what}: corner {a:?} vs {b:?}"
                    );
                    corners += 1;
                }
                (None, None) => {}
                _ => panic!("{what}: corner {px:?} vs the formula's {want:?}"),
            }
        }
        // Silhouette: one box alone. Every sampled surface point that images inside the
        // picture (1 px from its edges) has a covered pixel within two pixels of it (the
        // tessellation's chord error is below the tolerance, at most 1 px here); and when
        // the whole box images inside, the amodal box is the samples' extent to within the
        // tolerance plus the sampling gap.
        let samples = surface_samples(&c, &b, 24);
        let tris: Vec<Tri> = p.raster_tris(0).collect();
        let out = raster_cpu(&RasterJob {
            width: c.width,
            height: c.height,
            num_objects: 1,
            tris: &tris,
            want_maps: true,
        })
        .unwrap();
        let covered = |i: i64, j: i64| {
            i >= 0
                && j >= 0
                && i < i64::from(c.width)
                && j < i64::from(c.height)
                && out.ids[(j * i64::from(c.width) + i) as usize] != EMPTY
        };
        let (w, h) = (f64::from(c.width), f64::from(c.height));
        let mut ext = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut all_inside = true;
        for s in &samples {
            // In front of the near plane only (the stage clips there), and where the model is
            // valid: a box reaching the invalid range must still be drawn up to its edge.
            if s.z < 0.1 {
                all_inside = false;
                continue;
            }
            let Some([u, v]) = waymo_pixel(&c, lens.k, s) else {
                all_inside = false;
                continue;
            };
            ext = [ext[0].min(u), ext[1].min(v), ext[2].max(u), ext[3].max(v)];
            if !(u > 1.0 && v > 1.0 && u < w - 1.0 && v < h - 1.0) {
                all_inside = false;
                continue;
            }
            let (i, j) = (u.floor() as i64, v.floor() as i64);
            let near = (-2..=2).any(|di| (-2..=2).any(|dj| covered(i + di, j + dj)));
            assert!(
                near,
                "{what}: surface point images at ({u:.2}, {v:.2}), nothing drawn near it; \
                 {}x{} f {:.1} c ({:.1}, {:.1}); box {b:?}",
                c.width, c.height, c.fx, c.cx, c.cy
            );
            samples_checked += 1;
        }
        if all_inside {
            // The samples lie on the surface, so their extent is inside the true one; the
            // chord tolerance bounds how far the tessellated outline strays outside it.
            let slack = lens.chord_tolerance_px + 0.5;
            for k in 0..4 {
                assert!(
                    (p.amodal[k] - ext[k]).abs() <= slack,
                    "{what}: amodal {:?} vs sampled extent {ext:?}",
                    p.amodal
                );
            }
            silhouettes += 1;
        }
    }
    assert!(corners > 40, "seed {seed}: only {corners} corners checked");
    assert!(
        samples_checked > 500,
        "seed {seed}: only {samples_checked} samples checked"
    );
    assert!(
        silhouettes > 3,
        "seed {seed}: only {silhouettes} whole boxes checked"
    );
}

/// The whole stage on a synthetic Waymo corpus with distortion: the GPU rasteriser's table
/// is byte-identical to the CPU one's.
#[test]
fn distorted_waymo_corpus_gpu_table_equals_cpu() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let opts = drivegen::synth::waymo::WaymoSynthOptions {
        base: drivegen::synth::SynthOptions {
            scenes: 1,
            duration_s: 1.0,
            image_width: 160,
            image_height: 90,
            write_sweeps: false,
            ..Default::default()
        },
        distortion: [-0.2, 0.08, 1e-3, -1e-3, 0.01],
    };
    drivegen::synth::waymo::write(&d.join("waymo"), &opts).unwrap();
    drivegen::ingest::waymo::run(&drivegen::ingest::waymo::Options {
        root: d.join("waymo"),
        out: d.join("store"),
        taxonomy: drivegen::taxonomy::Taxonomy::load(None).unwrap(),
        config: drivegen::ingest::sources::SourcesConfig::load(None).unwrap(),
        links: Default::default(),
    })
    .unwrap();
    let mut cfg = drivegen::visibility::config::VisibilityConfig::load(None).unwrap();
    // Coarser outlines than the built-in 0.05 px keep lavapipe's share short.
    cfg.projection.lens_chord_tolerance_px = 0.5;
    // 1/100 of the pixels of 1600×900, 1/100 of the threshold.
    cfg.filters.min_visible_pixels = 12;
    // Waymo has no visibility bins; keep rows on geometry so the kept path runs too.
    cfg.filters.allow_missing_visibility = true;
    cfg.filters.min_lidar_points = 0;
    let cpu = d.join("cpu.arrow");
    let gpu_out = d.join("gpu.arrow");
    let raster = GpuRasteriser::new(gpu).unwrap();
    let s_cpu = drivegen::visibility::run(&drivegen::visibility::Options {
        store: (&d.join("store")).into(),
        out: (&cpu).into(),
        config: cfg.clone(),
        rasteriser: &CpuRasteriser,
        id_maps: None,
        anchor: drivegen::visibility::anchor::AnchorRules::built_in().unwrap(),
    })
    .unwrap();
    drivegen::visibility::run(&drivegen::visibility::Options {
        store: (&d.join("store")).into(),
        out: (&gpu_out).into(),
        config: cfg.clone(),
        rasteriser: &raster,
        id_maps: None,
        anchor: drivegen::visibility::anchor::AnchorRules::built_in().unwrap(),
    })
    .unwrap();
    assert!(s_cpu.rows > 50 && s_cpu.kept > 0, "{s_cpu}");
    assert_eq!(
        std::fs::read(&gpu_out).unwrap(),
        std::fs::read(&cpu).unwrap(),
        "visibility table, GPU vs CPU"
    );
}
