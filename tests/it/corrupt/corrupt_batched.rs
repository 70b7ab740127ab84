//! The batched, overlapped GPU paths give the same bits as one image at a time: the decode →
//! GPU → encode stream, `apply_gpu` over several batches, and the corrupt stage, each against
//! every view run alone through a fresh runner (one submission, one wait: the path before
//! batching), and against the CPU twins within their documented tolerance. Batches do not
//! divide the images evenly, sizes are mixed within a batch, and some views are unchanged.
//!
//! Needs an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips. Random inputs are
//! seeded from the clock; `DRIVEGEN_TEST_SEED` replays a printed seed.

use std::sync::Mutex;

use super::corrupt_kernels::{exact, max_diff, random_image};
use crate::common;
use common::gpu::gpu;
use common::random::{seed, Rng};
use drivegen::config::StageConfig;
use drivegen::corrupt::gpu::{apply_gpu, stream, StreamShape};
use drivegen::corrupt::{apply_cpu, plan_frame, CorruptConfig, Corruption, Plan, View};
use image::RgbImage;

/// Eleven views of two sizes, each under another corruption and severity, two left unchanged.
fn jobs(rng: &mut Rng, s: u64) -> Vec<(RgbImage, Plan, Corruption)> {
    let cfg = CorruptConfig::default_config().unwrap();
    let kinds: Vec<Corruption> = Corruption::ALL
        .into_iter()
        .filter(|c| !c.is_codec())
        .collect();
    let sizes = [(53, 37), (96, 41)];
    (0..11)
        .map(|i| {
            let (w, h) = sizes[i % 2];
            let img = random_image(rng, w, h);
            let c = kinds[(i + rng.below(kinds.len() as u32) as usize) % kinds.len()];
            let plan = if i % 5 == 3 {
                Plan::Unchanged
            } else {
                let id = format!("v-{s}-{i}");
                let v = [View {
                    image_id: &id,
                    camera: "CAM_FRONT",
                    image: &img,
                }];
                let sev = 1 + rng.below(5) as u8;
                plan_frame(&cfg, c, sev, s, &id, &v).unwrap().remove(0).plan
            };
            (img, plan, c)
        })
        .collect()
}

#[test]
fn batched_runs_match_one_image_at_a_time() {
    let Some(gpu) = gpu() else { return };
    let s = seed();
    let mut rng = Rng(s ^ 3);
    let jobs = jobs(&mut rng, s);
    let alone: Vec<RgbImage> = jobs
        .iter()
        .map(|(img, plan, _)| apply_gpu(gpu, &[(img, plan)]).unwrap().remove(0))
        .collect();
    for ((img, plan, c), a) in jobs.iter().zip(&alone) {
        let (d, n) = max_diff(&apply_cpu(img, plan), a);
        let limit = if exact(*c) || matches!(plan, Plan::Unchanged) {
            0
        } else {
            1
        };
        assert!(
            d <= limit,
            "seed {s}: {} against its twin: {d} on {n} values",
            c.name()
        );
    }

    // `apply_gpu` over all of them: a full batch and a short one.
    let all: Vec<(&RgbImage, &Plan)> = jobs.iter().map(|(i, p, _)| (i, p)).collect();
    assert_eq!(apply_gpu(gpu, &all).unwrap(), alone, "seed {s}: apply_gpu");

    // The stream, in batches of 3 and 4 (11 = 3·3 + 2, 2·4 + 3), one or two in flight.
    for (batch, in_flight, workers) in [(3, 2, 2), (4, 1, 3), (4, 2, 1)] {
        let got: Mutex<Vec<Option<RgbImage>>> = Mutex::new(vec![None; jobs.len()]);
        let shape = StreamShape {
            batch,
            in_flight,
            workers,
        };
        let report = stream(
            gpu,
            jobs.len(),
            &shape,
            |i| Ok((jobs[i].0.clone(), jobs[i].1.clone())),
            |i, img| {
                got.lock().unwrap()[i] = Some(img);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(report.images, jobs.len());
        assert_eq!(report.batches, jobs.len().div_ceil(batch));
        let got: Vec<RgbImage> = got.into_inner().unwrap().into_iter().flatten().collect();
        assert_eq!(got, alone, "seed {s}: stream {shape:?}");
    }
}

#[test]
fn the_stream_reuses_its_buffers_and_stops_on_an_error() {
    let Some(gpu) = gpu() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let img = random_image(&mut Rng(seed() ^ 4), 40, 30);
    let v = [View {
        image_id: "b",
        camera: "CAM_FRONT",
        image: &img,
    }];
    let plan = plan_frame(&cfg, Corruption::Brightness, 3, 1, "b", &v)
        .unwrap()
        .remove(0)
        .plan;
    let shape = StreamShape {
        batch: 3,
        in_flight: 2,
        workers: 2,
    };
    let n = 12;
    let report = stream(
        gpu,
        n,
        &shape,
        |_| Ok((img.clone(), plan.clone())),
        |_, _| Ok(()),
    )
    .unwrap();
    // A brightness view needs its pixels, its parameters and its output: three buffers per
    // view of one batch, made once and reused by the other three batches.
    assert_eq!(report.batches, 4);
    assert_eq!(report.buffers_created, 3 * 3, "{report:?}");
    assert_eq!(report.buffers_used, 3 * n as u64, "{report:?}");

    let failed = stream(
        gpu,
        n,
        &shape,
        |i| {
            if i == 7 {
                Err(drivegen::Error::Internal("decoding view 7".into()))
            } else {
                Ok((img.clone(), plan.clone()))
            }
        },
        |_, _| Ok(()),
    );
    let msg = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("decoding view 7"), "{msg}");
    let failed = stream(
        gpu,
        n,
        &shape,
        |_| Ok((img.clone(), plan.clone())),
        |i, _| {
            if i == 5 {
                Err(drivegen::Error::Internal("encoding view 5".into()))
            } else {
                Ok(())
            }
        },
    );
    let msg = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("encoding view 5"), "{msg}");
}

#[test]
fn the_stage_on_the_gpu_matches_each_view_drawn_alone() {
    if gpu().is_none() {
        return;
    }
    let device = drivegen::gpu::Device::open(drivegen::gpu::DeviceChoice::Gpu).unwrap();
    let g = device.gpu().unwrap();
    let s = seed();
    let mut rng = Rng(s ^ 5);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    // Five one-view frames of two sizes: 13 corruptions give 65 views, batches of 8 and 1.
    for (i, (w, h)) in [(70, 50), (45, 61), (70, 50), (45, 61), (70, 50)]
        .into_iter()
        .enumerate()
    {
        random_image(&mut rng, w, h)
            .save(input.join(format!("img{i}.png")))
            .unwrap();
    }
    let out = dir.path().join("out");
    let cfg = CorruptConfig::default_config().unwrap();
    let kinds: Vec<Corruption> = Corruption::ALL
        .into_iter()
        .filter(|c| !c.is_codec())
        .collect();
    drivegen::corrupt::run(&drivegen::corrupt::Options {
        input: drivegen::corrupt::run::Input::Images(input.clone()),
        out: out.clone(),
        corruptions: kinds.clone(),
        severities: drivegen::corrupt::run::Severities::One(1 + rng.below(5) as u8),
        seed: s,
        config: cfg.clone(),
        device: device.clone(),
        max_frames: None,
        frames_per_scene: None,
        images: true,
    })
    .unwrap();
    let file = out.join("corruptions.arrow");
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&file).unwrap(), None).unwrap();
    let mut compared = 0;
    for batch in reader {
        for row in drivegen::corrupt::recipe::from_batch(&file, &batch.unwrap()).unwrap() {
            let source = image::open(&row.source_path).unwrap().to_rgb8();
            let written = image::open(out.join(&row.output_path)).unwrap().to_rgb8();
            let alone = drivegen::corrupt::recipe::apply(&cfg, &row, &source, Some(g)).unwrap();
            assert!(
                written == alone,
                "seed {s}: {} differs from the view drawn alone",
                row.output_path
            );
            let c = Corruption::parse(&row.corruption).unwrap();
            let twin = drivegen::corrupt::recipe::apply(&cfg, &row, &source, None).unwrap();
            let (d, n) = max_diff(&twin, &written);
            let limit = u8::from(!exact(c) && row.applied);
            assert!(
                d <= limit,
                "seed {s}: {}: {d} on {n} values",
                row.output_path
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 5 * kinds.len());
}
