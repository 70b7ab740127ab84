//! The corruption kernels (`kernels/corrupt_*.wgsl`) against their CPU twins
//! (`corrupt::apply_cpu`) on fresh random images: every non-codec corruption × severity 1–5.
//! Integer corruptions must agree exactly; the others within one grey level (f32 rounding of
//! log/cos/division may differ between the GPU and the CPU).
//!
//! Needs an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips. Random inputs are
//! seeded from the clock; `DRIVEGEN_TEST_SEED` replays a printed seed.

use crate::common;

use common::gpu::gpu;
use common::random::{seed, Rng};
use drivegen::config::StageConfig;
use drivegen::corrupt::gpu::apply_gpu;
use drivegen::corrupt::{apply_cpu, plan_frame, CorruptConfig, Corruption, View};
use image::RgbImage;

/// A random image: smooth gradients with noise, flat patches and saturated corners, so
/// HSV edge cases (greys, ties, black, white) all occur.
pub(super) fn random_image(rng: &mut Rng, w: u32, h: u32) -> RgbImage {
    let base = [rng.below(256), rng.below(256), rng.below(256)];
    let grad = [rng.below(5), rng.below(5), rng.below(5)];
    let noise = 1 + rng.below(60);
    let mut img = RgbImage::new(w, h);
    for (x, y, p) in img.enumerate_pixels_mut() {
        let flat = (x / 8 + y / 8) % 5 == 0;
        for c in 0..3 {
            let v = if flat {
                [0u32, 255, 128][((x / 8) as usize + c) % 3]
            } else {
                base[c] + grad[c] * (x + y) + rng.below(noise)
            };
            p.0[c] = (v % 256) as u8;
        }
    }
    img
}

const CAMS: [&str; 6] = drivegen::corrupt::CAMERA_ORDER;

pub(super) fn max_diff(a: &RgbImage, b: &RgbImage) -> (u8, usize) {
    let mut worst = 0u8;
    let mut count = 0;
    for (x, y) in a.iter().zip(b.iter()) {
        let d = x.abs_diff(*y);
        worst = worst.max(d);
        count += usize::from(d > 0);
    }
    (worst, count)
}

pub(super) fn exact(c: Corruption) -> bool {
    matches!(
        c,
        Corruption::ColorQuant | Corruption::CameraCrash | Corruption::FrameLost
    )
}

#[test]
fn gpu_matches_cpu_for_every_corruption_and_severity() {
    let Some(gpu) = gpu() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let s = seed();
    let mut rng = Rng(s);
    let mut failures = Vec::new();
    for c in Corruption::ALL.into_iter().filter(|c| !c.is_codec()) {
        // Frame-level corruptions see a 6-view frame; the others two views of odd sizes.
        let n_views = if matches!(
            c,
            Corruption::CameraCrash
                | Corruption::FrameLost
                | Corruption::WaterSplash
                | Corruption::LensObstacle
        ) {
            6
        } else {
            2
        };
        let images: Vec<RgbImage> = (0..n_views)
            .map(|_| {
                let w = 40 + rng.below(120);
                let h = 30 + rng.below(90);
                random_image(&mut rng, w, h)
            })
            .collect();
        let ids: Vec<String> = (0..n_views).map(|i| format!("img-{s}-{i}")).collect();
        let views: Vec<View<'_>> = images
            .iter()
            .zip(&ids)
            .zip(CAMS)
            .map(|((image, id), camera)| View {
                image_id: id,
                camera,
                image,
            })
            .collect();
        let mut plans = Vec::new();
        for sev in 1..=5u8 {
            plans.extend(
                plan_frame(&cfg, c, sev, s, "frame", &views)
                    .unwrap()
                    .into_iter()
                    .zip(images.iter())
                    .map(|(p, img)| (sev, img, p)),
            );
        }
        let jobs: Vec<(&RgbImage, &drivegen::corrupt::Plan)> =
            plans.iter().map(|(_, img, p)| (*img, &p.plan)).collect();
        let t = std::time::Instant::now();
        let got = apply_gpu(gpu, &jobs).unwrap();
        let gpu_s = t.elapsed().as_secs_f64();
        let mut worst = 0;
        for ((sev, img, p), g) in plans.iter().zip(&got) {
            let want = apply_cpu(img, &p.plan);
            let (d, n) = max_diff(&want, g);
            worst = worst.max(d);
            let limit = if exact(c) { 0 } else { 1 };
            if d > limit {
                failures.push(format!(
                    "{} severity {sev} ({}x{}): max diff {d} on {n} values",
                    c.name(),
                    img.width(),
                    img.height()
                ));
            }
        }
        eprintln!(
            "{:>14}: {} views, worst diff {worst}, gpu {gpu_s:.2} s",
            c.name(),
            jobs.len()
        );
    }
    assert!(failures.is_empty(), "seed {s}:\n{}", failures.join("\n"));
}

#[test]
fn gpu_output_does_not_depend_on_the_batch() {
    let Some(gpu) = gpu() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let s = seed();
    let mut rng = Rng(s ^ 1);
    let images: Vec<RgbImage> = (0..3).map(|_| random_image(&mut rng, 64, 48)).collect();
    let ids = ["a", "b", "c"];
    for c in [
        Corruption::Snow,
        Corruption::Rain,
        Corruption::Dark,
        Corruption::Fog,
    ] {
        let plans: Vec<_> = images
            .iter()
            .zip(ids)
            .map(|(img, id)| {
                let v = [View {
                    image_id: id,
                    camera: "CAM_FRONT",
                    image: img,
                }];
                plan_frame(&cfg, c, 3, 7, id, &v).unwrap().remove(0)
            })
            .collect();
        let all: Vec<_> = images
            .iter()
            .zip(&plans)
            .map(|(i, p)| (i, &p.plan))
            .collect();
        let together = apply_gpu(gpu, &all).unwrap();
        let reversed: Vec<_> = all.iter().rev().copied().collect();
        let mut apart = apply_gpu(gpu, &reversed).unwrap();
        apart.reverse();
        let alone = apply_gpu(gpu, &all[1..2]).unwrap();
        assert_eq!(together, apart, "{}: order changes the output", c.name());
        assert_eq!(
            together[1],
            alone[0],
            "{}: batching changes the output",
            c.name()
        );
    }
}

#[test]
fn tiny_images_work_on_both_sides() {
    let Some(gpu) = gpu() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let mut rng = Rng(seed() ^ 2);
    for (w, h) in [(1, 1), (2, 3), (5, 2), (7, 7)] {
        let img = random_image(&mut rng, w, h);
        for c in Corruption::ALL.into_iter().filter(|c| !c.is_codec()) {
            for sev in [1u8, 5] {
                let v = [View {
                    image_id: "t",
                    camera: "CAM_FRONT",
                    image: &img,
                }];
                let p = plan_frame(&cfg, c, sev, 1, "t", &v).unwrap().remove(0);
                let want = apply_cpu(&img, &p.plan);
                let got = apply_gpu(gpu, &[(&img, &p.plan)]).unwrap().remove(0);
                let (d, _) = max_diff(&want, &got);
                assert!(d <= 1, "{} severity {sev} at {w}x{h}: diff {d}", c.name());
            }
        }
    }
}
