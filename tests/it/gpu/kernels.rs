//! The WGSL kernels: every file is registered and validates, every kernel agrees with its
//! CPU twin on random inputs, and the twins agree with independent f64 references on cases
//! computed by hand.
//!
//! GPU tests need an adapter (lavapipe is enough: `mesa-vulkan-drivers libvulkan1`); a
//! missing one fails them unless `DRIVEGEN_GPU_TESTS=no`. Random inputs are seeded from the
//! clock; set `DRIVEGEN_TEST_SEED` to the seed printed by a failure to replay it.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::gpu::gpu;
use common::random::{seed, Rng};
use drivegen::cpu::project_points::{
    agreement_tolerance, project_points_f64, ProjectParams, Projected, IN_FRONT, IN_IMAGE,
};
use drivegen::geometry::pose;
use drivegen::gpu::{Gpu, KernelId, KERNELS};
use nalgebra::{Isometry3, Matrix4, Point3, Translation3, UnitQuaternion};
use wgpu::naga;

// ---------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------

/// A random camera somewhere in a nuScenes-sized map, looking anywhere.
struct Camera {
    params: ProjectParams,
    camera_to_global: Isometry3<f64>,
}

fn random_camera(rng: &mut Rng) -> Camera {
    let rotation = UnitQuaternion::from_euler_angles(
        rng.range(-3.2, 3.2),
        rng.range(-1.6, 1.6),
        rng.range(-3.2, 3.2),
    );
    // Global coordinates of the nuScenes maps reach ~2 km: cancellation against the
    // translation is the main source of f32 error, so it must be in the test.
    let t = Translation3::new(
        rng.range(-2000.0, 2000.0),
        rng.range(-2000.0, 2000.0),
        rng.range(-5.0, 5.0),
    );
    let camera_to_global = Isometry3::from_parts(t, rotation);
    let width = rng.range(320.0, 1920.0) as u32;
    let height = rng.range(240.0, 1200.0) as u32;
    let fx = rng.range(200.0, 2500.0);
    let intrinsics = [
        fx as f32,
        (fx * rng.range(0.9, 1.1)) as f32,
        (f64::from(width) * rng.range(0.3, 0.7)) as f32,
        (f64::from(height) * rng.range(0.3, 0.7)) as f32,
    ];
    let m = camera_to_global.inverse().to_homogeneous();
    let mut params = ProjectParams::from_matrix(&m, intrinsics, [width, height]);
    if rng.chance(0.5) {
        params = params.with_near(rng.range(0.01, 2.0) as f32);
    }
    Camera {
        params,
        camera_to_global,
    }
}

/// Whether GPU and CPU may legitimately disagree on the flags of a point: its CPU result
/// lies within the agreement tolerance of a boundary.
fn ambiguous(k: &ProjectParams, p: &[f32; 4], r: &Projected) -> bool {
    let [tu, tv, tz] = agreement_tolerance(k, p).map(f64::from);
    let near = |a: f32, b: f32, t: f64| (f64::from(a) - f64::from(b)).abs() <= t;
    near(r.depth, k.near, tz)
        || (r.flags & IN_FRONT != 0
            && (near(r.u, 0.0, tu)
                || near(r.u, k.width as f32, tu)
                || near(r.v, 0.0, tv)
                || near(r.v, k.height as f32, tv)))
}

/// `n` points around `cam`: in front and behind, in and out of the image, some close to the
/// near plane; none within the agreement tolerance of a flag boundary (those are covered by
/// the exact cases of `gpu_flags_exact_on_boundaries`).
fn random_points(rng: &mut Rng, cam: &Camera, n: usize) -> Vec<[f32; 4]> {
    let k = &cam.params;
    let (w, h) = (f64::from(k.width), f64::from(k.height));
    let mut points = Vec::with_capacity(n);
    while points.len() < n {
        let z = if rng.chance(0.1) {
            rng.range(-1.0, 3.0)
        } else {
            rng.range(-40.0, 150.0)
        };
        let u = rng.range(-0.5 * w, 1.5 * w);
        let v = rng.range(-0.5 * h, 1.5 * h);
        let x = (u - f64::from(k.cx)) * z.abs() / f64::from(k.fx);
        let y = (v - f64::from(k.cy)) * z.abs() / f64::from(k.fy);
        let g = cam.camera_to_global * Point3::new(x, y, z);
        let p = [
            g.x as f32,
            g.y as f32,
            g.z as f32,
            rng.range(-1.0, 1.0) as f32,
        ];
        let r = drivegen::cpu::project_points(k, &[p])[0];
        if !ambiguous(k, &p, &r) {
            points.push(p);
        }
    }
    points
}

/// Asserts GPU and CPU results agree: flags exactly, values within the tolerance. Returns
/// the largest difference as a fraction of its tolerance.
fn assert_agree(
    what: &str,
    k: &ProjectParams,
    points: &[[f32; 4]],
    gpu: &[Projected],
    cpu: &[Projected],
) -> f64 {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths differ");
    let mut worst = 0f64;
    for (i, ((p, g), c)) in points.iter().zip(gpu).zip(cpu).enumerate() {
        assert_eq!(
            g.flags, c.flags,
            "{what}: point {i} {p:?}: flags differ: gpu {g:?} cpu {c:?} params {k:?}"
        );
        let tol = agreement_tolerance(k, p);
        for (name, a, b, t) in [
            ("u", g.u, c.u, tol[0]),
            ("v", g.v, c.v, tol[1]),
            ("depth", g.depth, c.depth, tol[2]),
        ] {
            let d = (f64::from(a) - f64::from(b)).abs();
            assert!(
                d <= f64::from(t),
                "{what}: point {i} {p:?}: {name} gpu {a} cpu {b} differ by {d} > {t}; \
                 gpu {g:?} cpu {c:?} params {k:?}"
            );
            if t > 0.0 {
                worst = worst.max(d / f64::from(t));
            }
        }
    }
    worst
}

fn bits(r: &[Projected]) -> Vec<[u32; 4]> {
    r.iter()
        .map(|p| [p.u.to_bits(), p.v.to_bits(), p.depth.to_bits(), p.flags])
        .collect()
}

// ---------------------------------------------------------------------------------------
// Registry and validation
// ---------------------------------------------------------------------------------------

#[test]
fn every_kernel_file_is_registered() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let source = drivegen::gpu::KernelId::from_name(&stem)
                .map(drivegen::gpu::KernelId::source)
                .unwrap_or_else(|| panic!("{} is not listed in gpu::KERNELS", path.display()));
            // Kernels may be registered with shared `*.wgsl.inc` code prepended.
            assert!(
                source.ends_with(&std::fs::read_to_string(&path).unwrap()),
                "{stem}: embedded source is stale"
            );
            files.insert(stem);
        }
    }
    let registered: BTreeSet<String> = KERNELS.iter().map(|k| k.name.to_string()).collect();
    assert_eq!(files, registered, "gpu::KERNELS and kernels/*.wgsl differ");
    assert_eq!(
        registered.len(),
        KERNELS.len(),
        "duplicate names in gpu::KERNELS"
    );
}

#[test]
fn every_kernel_parses_and_validates() {
    for &drivegen::gpu::Shader { name, source, .. } in KERNELS {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        let compute: Vec<_> = module
            .entry_points
            .iter()
            .filter(|e| e.stage == naga::ShaderStage::Compute)
            .collect();
        assert_eq!(
            compute.len(),
            1,
            "{name}: expected one @compute entry point"
        );
        assert!(compute[0].workgroup_size[0] > 0, "{name}: workgroup size");
    }
}

// ---------------------------------------------------------------------------------------
// CPU twin against the f64 reference
// ---------------------------------------------------------------------------------------

const K_1000: [f32; 4] = [1000.0, 1000.0, 800.0, 450.0];
const SIZE_1600: [u32; 2] = [1600, 900];

/// Checks the twin and the f64 reference against hand-computed `(u, v, depth, flags)`.
fn check_hand_case(what: &str, k: &ProjectParams, p: [f32; 4], want: (f64, f64, f64, u32)) {
    let c = drivegen::cpu::project_points(k, &[p])[0];
    let r = project_points_f64(k, &[p])[0];
    let (u, v, depth, flags) = want;
    for (name, got, w) in [
        ("u cpu", f64::from(c.u), u),
        ("v cpu", f64::from(c.v), v),
        ("depth cpu", f64::from(c.depth), depth),
        ("u f64", r.u, u),
        ("v f64", r.v, v),
        ("depth f64", r.depth, depth),
    ] {
        assert!((got - w).abs() <= 1e-4, "{what}: {name} = {got}, want {w}");
    }
    assert_eq!(c.flags, flags, "{what}: cpu flags");
    assert_eq!(r.flags, flags, "{what}: f64 flags");
}

#[test]
fn cpu_twin_matches_hand_computed_cases() {
    let identity = ProjectParams::from_matrix(&Matrix4::identity(), K_1000, SIZE_1600);
    // u = 1000·1/10 + 800, v = 1000·2/10 + 450.
    check_hand_case(
        "identity",
        &identity,
        [1.0, 2.0, 10.0, 0.0],
        (900.0, 650.0, 10.0, 3),
    );
    check_hand_case(
        "right of image",
        &identity,
        [100.0, 0.0, 10.0, 0.0],
        (10800.0, 450.0, 10.0, 1),
    );
    check_hand_case(
        "behind",
        &identity,
        [1.0, 2.0, -5.0, 0.0],
        (0.0, 0.0, -5.0, 0),
    );
    check_hand_case(
        "on the near plane",
        &identity,
        [0.0, 0.0, 0.1, 0.0],
        (0.0, 0.0, 0.1f32 as f64, 0),
    );

    // The devkit chain: ego at global (100, 200, 0) heading +y (yaw 90°), camera 1.5 m
    // ahead and 1.5 m up with the nuScenes front-camera rotation (camera z = ego x, camera
    // x = −ego y, camera y = −ego z; quaternion [0.5, −0.5, 0.5, −0.5]). So the camera sits
    // at global (100, 201.5, 1.5), looks along global +y, its x axis is global +x and its y
    // axis global −z. Global (103, 221.5, 0.5) is d = (3, 20, −1) from it: camera (3, 1, 20),
    // u = 1000·3/20 + 800 = 950, v = 1000·1/20 + 450 = 500.
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let ego = pose([100.0, 200.0, 0.0], [s, 0.0, 0.0, s]);
    let sensor = pose([1.5, 0.0, 1.5], [0.5, -0.5, 0.5, -0.5]);
    let global_to_camera = (ego * sensor).inverse().to_homogeneous();
    let rotated = ProjectParams::from_matrix(&global_to_camera, K_1000, SIZE_1600);
    check_hand_case(
        "rotated",
        &rotated,
        [103.0, 221.5, 0.5, 1.0],
        (950.0, 500.0, 20.0, 3),
    );
    // 30 m behind the camera along −y.
    check_hand_case(
        "rotated, behind",
        &rotated,
        [103.0, 171.5, 0.5, 1.0],
        (0.0, 0.0, -30.0, 0),
    );
    // Above the camera: camera y = −8.5, v = 1000·(−8.5)/20 + 450 = 25 (still inside).
    check_hand_case(
        "rotated, high",
        &rotated,
        [100.0, 221.5, 10.0, 1.0],
        (800.0, 25.0, 20.0, 3),
    );
}

#[test]
fn cpu_flag_boundaries_are_half_open() {
    // All arithmetic here is exact in f32, so the comparisons themselves are tested.
    let k = ProjectParams::from_matrix(
        &Matrix4::identity(),
        [1600.0, 900.0, 800.0, 450.0],
        SIZE_1600,
    )
    .with_near(0.5);
    let cases = [
        ([-1.0, 0.0, 2.0, 0.0], 0.0, 450.0, IN_FRONT | IN_IMAGE), // u = 0: inside
        ([1.0, 0.0, 2.0, 0.0], 1600.0, 450.0, IN_FRONT),          // u = width: outside
        ([0.0, -1.0, 2.0, 0.0], 800.0, 0.0, IN_FRONT | IN_IMAGE), // v = 0: inside
        ([0.0, 1.0, 2.0, 0.0], 800.0, 900.0, IN_FRONT),           // v = height: outside
        ([0.0, 0.0, 0.5, 0.0], 0.0, 0.0, 0),                      // z = near: not in front
        (
            [0.0, 0.0, 0.5000001, 0.0],
            800.0,
            450.0,
            IN_FRONT | IN_IMAGE,
        ),
    ];
    for (p, u, v, flags) in cases {
        let c = drivegen::cpu::project_points(&k, &[p])[0];
        assert_eq!((c.u, c.v, c.flags), (u, v, flags), "{p:?}");
        assert_eq!(project_points_f64(&k, &[p])[0].flags, flags, "f64 {p:?}");
    }
}

#[test]
fn cpu_twin_matches_f64_reference_on_random_inputs() {
    let seed = seed();
    let mut rng = Rng(seed);
    let mut worst = 0f64;
    for _ in 0..20 {
        let cam = random_camera(&mut rng);
        let k = &cam.params;
        let points = random_points(&mut rng, &cam, 2000);
        let cpu = drivegen::cpu::project_points(k, &points);
        let reference = project_points_f64(k, &points);
        for (i, ((p, c), r)) in points.iter().zip(&cpu).zip(&reference).enumerate() {
            let what = format!("seed {seed}: point {i} {p:?}: cpu {c:?} f64 {r:?} params {k:?}");
            assert_eq!(c.flags, r.flags, "{what}");
            // The tolerance bounds the gap between two f32 evaluations; the f64 one is
            // (nearly) exact, so it is at least as close.
            let tol = agreement_tolerance(k, p);
            for (a, b, t) in [
                (c.u, r.u, tol[0]),
                (c.v, r.v, tol[1]),
                (c.depth, r.depth, tol[2]),
            ] {
                let d = (f64::from(a) - b).abs();
                assert!(d <= f64::from(t), "{what}: |{a} - {b}| = {d} > {t}");
                if t > 0.0 {
                    worst = worst.max(d / f64::from(t));
                }
            }
        }
    }
    eprintln!("cpu vs f64 (seed {seed}): worst difference {worst:.3} of the tolerance");
}

/// The kernel as a conforming GPU may evaluate it, on the CPU: every multiply-add it could
/// contract fused (`swap` picks which product of the first sum is fused), and each quotient
/// `ulps` ULP away from the correctly rounded one (WGSL allows 2.5 ULP).
fn project_like_a_gpu(k: &ProjectParams, p: &[f32; 4], swap: bool, ulps: i32) -> Projected {
    let m = &k.global_to_camera;
    let dot = |r: usize| {
        let first = if swap {
            m[1][r].mul_add(p[1], m[0][r] * p[0])
        } else {
            m[0][r].mul_add(p[0], m[1][r] * p[1])
        };
        m[2][r].mul_add(p[2], first) + m[3][r]
    };
    let off = |mut q: f32| {
        for _ in 0..ulps.abs() {
            q = if ulps > 0 { q.next_up() } else { q.next_down() };
        }
        q
    };
    let (x, y, z) = (dot(0), dot(1), dot(2));
    let mut r = Projected {
        u: 0.0,
        v: 0.0,
        depth: z,
        flags: 0,
    };
    if z > k.near {
        r.u = k.fx.mul_add(off(x / z), k.cx);
        r.v = k.fy.mul_add(off(y / z), k.cy);
        r.flags = IN_FRONT;
        if r.u >= 0.0 && r.u < k.width as f32 && r.v >= 0.0 && r.v < k.height as f32 {
            r.flags |= IN_IMAGE;
        }
    }
    r
}

#[test]
fn tolerance_covers_fused_multiply_add_and_inexact_division() {
    // Lavapipe evaluates the kernel exactly like the twin; real GPUs fuse and approximate.
    // This checks the documented tolerance against the worst they are allowed to do.
    let seed = seed();
    let mut rng = Rng(seed);
    let mut worst = 0f64;
    for _ in 0..10 {
        let cam = random_camera(&mut rng);
        let k = &cam.params;
        let points = random_points(&mut rng, &cam, 2000);
        let cpu = drivegen::cpu::project_points(k, &points);
        for swap in [false, true] {
            for ulps in [-2, 0, 2] {
                let like: Vec<Projected> = points
                    .iter()
                    .map(|p| project_like_a_gpu(k, p, swap, ulps))
                    .collect();
                let what = format!("seed {seed}, swap {swap}, {ulps} ulp");
                worst = worst.max(assert_agree(&what, k, &points, &like, &cpu));
            }
        }
    }
    eprintln!("fused/inexact vs twin (seed {seed}): worst difference {worst:.3} of the tolerance");
}

#[test]
fn tolerance_is_tight_for_typical_points() {
    // The tolerance must stay well below a pixel, or the comparisons prove little. Points
    // 20 m ahead; fx = 1000.
    let k_of = |cam: &Isometry3<f64>| {
        ProjectParams::from_matrix(&cam.inverse().to_homogeneous(), K_1000, SIZE_1600)
    };
    let tol_of = |cam: &Isometry3<f64>| {
        let g = cam * Point3::new(2.0, 1.0, 20.0);
        agreement_tolerance(&k_of(cam), &[g.x as f32, g.y as f32, g.z as f32, 0.0])
    };
    let rotation = UnitQuaternion::from_euler_angles(-1.5, 0.1, 0.7);
    // Camera near the origin (points in a local frame): a few thousandths of a pixel.
    let local = tol_of(&Isometry3::from_parts(
        Translation3::new(1.5, 0.0, 1.5),
        rotation,
    ));
    assert!(
        local[0] < 0.01 && local[1] < 0.01 && local[2] < 1e-4,
        "local {local:?}"
    );
    // Camera 1.4 km from the origin, as in nuScenes global coordinates: f32 resolves such
    // coordinates to ~0.1 mm, which bounds every f32 pipeline, GPU or CPU, to ~0.1 px here.
    let far = tol_of(&Isometry3::from_parts(
        Translation3::new(1200.0, -800.0, 1.5),
        rotation,
    ));
    assert!(
        far[0] < 0.2 && far[1] < 0.2 && far[2] < 5e-3,
        "global {far:?}"
    );
}

// ---------------------------------------------------------------------------------------
// GPU against the CPU twin
// ---------------------------------------------------------------------------------------

#[test]
fn gpu_matches_cpu_twin_on_100k_random_points() {
    let Some(gpu) = gpu() else { return };
    let seed = seed();
    let mut rng = Rng(seed);
    let (mut n, mut front, mut inside, mut identical) = (0, 0, 0, 0);
    let mut worst = 0f64;
    let mut gpu_time = std::time::Duration::ZERO;
    // 10 cameras × 10 000 points; one dispatch per camera.
    for cam_index in 0..10 {
        let cam = random_camera(&mut rng);
        let points = random_points(&mut rng, &cam, 10_000);
        let t = Instant::now();
        let g = drivegen::gpu::project_points(gpu, &cam.params, &points).unwrap();
        gpu_time += t.elapsed();
        let c = drivegen::cpu::project_points(&cam.params, &points);
        let what = format!("seed {seed}, camera {cam_index}");
        worst = worst.max(assert_agree(&what, &cam.params, &points, &g, &c));
        n += points.len();
        front += c.iter().filter(|r| r.flags & IN_FRONT != 0).count();
        inside += c.iter().filter(|r| r.flags & IN_IMAGE != 0).count();
        identical += bits(&g)
            .iter()
            .zip(bits(&c))
            .filter(|(a, b)| **a == *b)
            .count();
    }
    eprintln!(
        "gpu vs cpu (seed {seed}): {n} points, {front} in front, {inside} in the image, \
         {identical} bit-identical; worst difference {worst:.3} of the tolerance; \
         GPU time {gpu_time:?}"
    );
    // The generator must reach every class, or the flags were barely tested.
    assert!(
        front > n / 10 && front < n * 9 / 10,
        "seed {seed}: {front} of {n} in front"
    );
    assert!(
        inside > n / 20 && inside < front,
        "seed {seed}: {inside} of {n} inside"
    );
}

#[test]
fn gpu_flags_exact_on_boundaries() {
    let Some(gpu) = gpu() else { return };
    // Exact arithmetic (see cpu_flag_boundaries_are_half_open): FMA or division accuracy
    // cannot matter, so GPU and CPU must agree bit for bit, boundaries included.
    let k = ProjectParams::from_matrix(
        &Matrix4::identity(),
        [1600.0, 900.0, 800.0, 450.0],
        SIZE_1600,
    )
    .with_near(0.5);
    let points = [
        [-1.0, 0.0, 2.0, 0.0],
        [1.0, 0.0, 2.0, 0.0],
        [0.0, -1.0, 2.0, 0.0],
        [0.0, 1.0, 2.0, 0.0],
        [0.0, 0.0, 0.5, 0.0],
        [0.0, 0.0, 0.5000001, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [3.0, -4.0, -2.0, 7.0],
        [-2.0, -1.0, 4.0, 0.0],
    ];
    let g = drivegen::gpu::project_points(gpu, &k, &points).unwrap();
    let c = drivegen::cpu::project_points(&k, &points);
    assert_eq!(bits(&g), bits(&c), "gpu {g:?}\ncpu {c:?}");
}

#[test]
fn gpu_handles_any_n() {
    let Some(gpu) = gpu() else { return };
    let seed = seed();
    let mut rng = Rng(seed);
    let cam = random_camera(&mut rng);
    assert!(drivegen::gpu::project_points(gpu, &cam.params, &[])
        .unwrap()
        .is_empty());
    // Around the workgroup size of 64 and not multiples of it.
    for n in [1, 2, 63, 64, 65, 127, 129, 1000, 4097] {
        let points = random_points(&mut rng, &cam, n);
        let g = drivegen::gpu::project_points(gpu, &cam.params, &points).unwrap();
        let c = drivegen::cpu::project_points(&cam.params, &points);
        assert_agree(
            &format!("seed {seed}, n = {n}"),
            &cam.params,
            &points,
            &g,
            &c,
        );
    }
}

#[test]
fn gpu_chunked_dispatch_matches_single_dispatch() {
    let Some(shared) = gpu() else { return };
    // A device of its own: the chunk cap would otherwise leak into the other tests.
    let chunked = Gpu::open().unwrap();
    chunked.set_max_chunk(Some(100));
    let seed = seed();
    let mut rng = Rng(seed);
    let cam = random_camera(&mut rng);
    let points = random_points(&mut rng, &cam, 1037);
    let whole = drivegen::gpu::project_points(shared, &cam.params, &points).unwrap();
    let parts = drivegen::gpu::project_points(&chunked, &cam.params, &points).unwrap();
    assert_eq!(bits(&whole), bits(&parts), "seed {seed}");
}

#[test]
fn gpu_caches_pipelines_and_knows_kernels_by_name() {
    let Some(gpu) = gpu() else { return };
    let a = gpu.kernel(KernelId::ProjectPoints).unwrap();
    let b = gpu.kernel(KernelId::ProjectPoints).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "the pipeline was compiled twice");
    assert!(gpu.compiled_kernels().contains(&"project_points"));
    assert_eq!(a.workgroup_size, [64, 1, 1]);
    // Stages name kernels by id; only file stems read from outside need a lookup.
    assert_eq!(
        KernelId::from_name("project_points"),
        Some(KernelId::ProjectPoints)
    );
    assert_eq!(KernelId::from_name("no_such_kernel"), None);
}

#[test]
fn gpu_low_level_helpers_match_map_elements() {
    let Some(gpu) = gpu() else { return };
    let seed = seed();
    let mut rng = Rng(seed);
    let cam = random_camera(&mut rng);
    let points = random_points(&mut rng, &cam, 300);
    let params = gpu.uniform_buffer("params", &cam.params).unwrap();
    let input = gpu.storage_buffer("points", &points).unwrap();
    let output = gpu
        .output_buffer("projected", (points.len() * size_of::<Projected>()) as u64)
        .unwrap();
    let bindings = [&params, &input, &output];
    gpu.dispatch(KernelId::ProjectPoints, &bindings, 0).unwrap();
    gpu.dispatch(KernelId::ProjectPoints, &bindings, points.len())
        .unwrap();
    let low: Vec<Projected> = gpu.read_back(&output).unwrap();
    let high = drivegen::gpu::project_points(gpu, &cam.params, &points).unwrap();
    assert_eq!(bits(&low), bits(&high), "seed {seed}");
    // Too large for one binding: a clear error, not a wgpu panic.
    let err = gpu
        .output_buffer("huge", u64::MAX / 2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("huge") && err.contains("limit"), "{err}");
}

#[test]
fn adapter_report_lists_the_choice() {
    if gpu().is_none() {
        return;
    }
    let report = drivegen::gpu::adapter_report().unwrap();
    eprintln!("{report}");
    assert!(report.contains("drivegen would use"), "{report}");
    assert!(
        report.contains("max_storage_buffer_binding_size"),
        "{report}"
    );
}
