//! The GPU z-buffer (`kernels/zbuffer.wgsl`) against its CPU twin
//! (`visibility::raster::raster_cpu`): instance-ID maps, depth keys and per-object counts must
//! be identical, bit for bit, on fresh random scenes. The CPU twin itself is checked against
//! hand-computed coverage in `tests/it/visibility/visibility_units.rs`.
//!
//! Needs an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips. Random inputs are
//! seeded from the clock; `DRIVEGEN_TEST_SEED` replays a printed seed.

use crate::common;

use common::gpu::gpu;
use common::random::{seed, Rng};
use common::raster::assert_same;
use drivegen::visibility::raster::{raster_cpu, RasterJob, RasterOut, Rasteriser, Tri, EMPTY};
use drivegen::visibility::GpuRasteriser;

/// A random image: boxes as clusters of triangles (shared vertices, so the fill rule and the
/// union count matter), some huge, some slivers, some off-image, a few with exactly equal
/// depths (the tie rule) and a few with out-of-range object indices (must be ignored).
fn random_scene(rng: &mut Rng, width: u32, height: u32, objects: u32) -> Vec<Tri> {
    let (w, h) = (f64::from(width), f64::from(height));
    let mut tris = Vec::new();
    for obj in 0..objects + 1 {
        let obj = if obj == objects {
            objects + rng.below(3)
        } else {
            obj
        };
        let size = if rng.chance(0.1) {
            w.max(h) * 1.5
        } else {
            rng.range(1.0, w.min(h) / 3.0)
        };
        let cx = rng.range(-0.2 * w, 1.2 * w);
        let cy = rng.range(-0.2 * h, 1.2 * h);
        let flat_depth = rng
            .chance(0.2)
            .then(|| [5.0f32, 12.5, 40.0][rng.below(3) as usize]);
        // A fan of quads around the centre, sharing edges.
        let n = 3 + rng.below(6);
        let verts: Vec<[f32; 2]> = (0..n)
            .map(|k| {
                let a = std::f64::consts::TAU * f64::from(k) / f64::from(n) + rng.range(0.0, 0.5);
                let r = size * rng.range(0.3, 1.0);
                let x = (cx + r * a.cos()).clamp(0.0, w);
                let y = (cy + r * a.sin()).clamp(0.0, h);
                [x as f32, y as f32]
            })
            .collect();
        let centre = [cx.clamp(0.0, w) as f32, cy.clamp(0.0, h) as f32];
        let mut depth = || flat_depth.unwrap_or_else(|| rng.range(0.5, 120.0) as f32);
        let zc = depth();
        let zs: Vec<f32> = (0..n).map(|_| depth()).collect();
        for k in 0..n as usize {
            let k2 = (k + 1) % n as usize;
            tris.push(Tri {
                p: [centre, verts[k], verts[k2]],
                z: [zc, zs[k], zs[k2]],
                obj,
            });
        }
    }
    // Sprinkle in degenerate and invalid ones: zero area, NaN, depth 0.
    if rng.chance(0.5) {
        tris.push(Tri {
            p: [[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]],
            z: [3.0; 3],
            obj: 0,
        });
        tris.push(Tri {
            p: [[f32::NAN, 1.0], [5.0, 5.0], [9.0, 1.0]],
            z: [3.0; 3],
            obj: 0,
        });
        tris.push(Tri {
            p: [[1.0, 1.0], [50.0, 5.0], [9.0, 40.0]],
            z: [0.0, 3.0, 3.0],
            obj: 0,
        });
    }
    // Shuffle so draw order is not object order.
    for i in (1..tris.len()).rev() {
        let j = rng.below(i as u32 + 1) as usize;
        tris.swap(i, j);
    }
    tris
}

#[test]
fn gpu_zbuffer_equals_the_cpu_twin_on_random_scenes() {
    let Some(gpu) = gpu() else { return };
    let raster = GpuRasteriser::new(gpu).unwrap();
    let seed = seed();
    let mut rng = Rng(seed);
    let mut drawn = 0u64;
    for case in 0..24 {
        let width = 16 + rng.below(900);
        let height = 16 + rng.below(600);
        let objects = rng.below(40);
        let tris = random_scene(&mut rng, width, height, objects);
        let job = RasterJob {
            width,
            height,
            num_objects: objects,
            tris: &tris,
            want_maps: rng.chance(0.7),
        };
        let want = raster_cpu(&job).unwrap();
        let got = raster.raster(&job).unwrap();
        assert_same(
            &got,
            &want,
            &format!("seed {seed} case {case} ({width}x{height}, {objects} objects)"),
        );
        drawn += want
            .objects
            .iter()
            .map(|o| u64::from(o.visible_pixels))
            .sum::<u64>();
    }
    // The scenes must actually draw something, or the comparison proves nothing.
    assert!(
        drawn > 10_000,
        "seed {seed}: only {drawn} visible pixels in all cases"
    );
}

#[test]
fn batches_split_by_budget_give_the_same_results_as_single_images() {
    let Some(gpu) = gpu() else { return };
    let seed = seed() ^ 0x5EED;
    let mut rng = Rng(seed);
    let scenes: Vec<(u32, u32, u32, Vec<Tri>)> = (0..11)
        .map(|_| {
            let (w, h, n) = (8 + rng.below(400), 8 + rng.below(300), rng.below(20));
            (w, h, n, random_scene(&mut rng, w, h, n))
        })
        .collect();
    let jobs: Vec<RasterJob<'_>> = scenes
        .iter()
        .enumerate()
        .map(|(k, (w, h, n, t))| RasterJob {
            width: *w,
            height: *h,
            num_objects: *n,
            tris: t,
            want_maps: k % 3 != 1,
        })
        .collect();
    let want: Vec<RasterOut> = jobs.iter().map(|j| raster_cpu(j).unwrap()).collect();
    // A budget far below one batch forces splits (including images larger than the
    // pixel budget, which must still run alone).
    for (images, pixels) in [(64, 1 << 26), (3, 50_000), (1, 1)] {
        let raster = GpuRasteriser::new(gpu).unwrap().with_budget(images, pixels);
        let got = raster.raster_batch(&jobs).unwrap();
        assert_eq!(got.len(), jobs.len());
        for (k, (g, c)) in got.iter().zip(&want).enumerate() {
            assert_same(
                g,
                c,
                &format!("seed {seed} budget {images}/{pixels} image {k}"),
            );
        }
        // Buffers are reused between calls: a second run must not see the first's state.
        let again = raster.raster_batch(&jobs).unwrap();
        assert_eq!(
            again, got,
            "seed {seed}: second batch differs from the first"
        );
    }
}

#[test]
fn hand_computed_occlusion_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let raster = GpuRasteriser::new(gpu).unwrap();
    let rect = |x0: f32, y0: f32, x1: f32, y1: f32, z: f32, obj: u32| {
        [
            Tri {
                p: [[x0, y0], [x1, y0], [x1, y1]],
                z: [z; 3],
                obj,
            },
            Tri {
                p: [[x0, y0], [x1, y1], [x0, y1]],
                z: [z; 3],
                obj,
            },
        ]
    };
    // Object 0: 20×10 px at 10 m; object 1: 10×10 px at 5 m covering the right half of it.
    let mut tris = Vec::new();
    tris.extend(rect(10.0, 10.0, 30.0, 20.0, 10.0, 0));
    tris.extend(rect(20.0, 10.0, 30.0, 20.0, 5.0, 1));
    let out = raster
        .raster(&RasterJob {
            width: 64,
            height: 32,
            num_objects: 2,
            tris: &tris,
            want_maps: true,
        })
        .unwrap();
    assert_eq!(out.objects[0].projected_pixels, 200);
    assert_eq!(out.objects[0].visible_pixels, 100);
    assert_eq!(out.objects[0].modal, Some([10, 10, 20, 20]));
    assert_eq!(out.objects[1].projected_pixels, 100);
    assert_eq!(out.objects[1].visible_pixels, 100);
    assert_eq!(out.objects[1].modal, Some([20, 10, 30, 20]));
    // Column sums: object 0 sees columns 10..20 on 10 rows.
    assert_eq!(out.objects[0].sum_i, (10..20).sum::<u64>() * 10);
    assert_eq!(out.ids[15 * 64 + 15], 0);
    assert_eq!(out.ids[15 * 64 + 25], 1);
    assert_eq!(out.ids[5 * 64 + 5], EMPTY);
}
