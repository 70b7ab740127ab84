//! `drivegen bench corrupt`: images per second per corruption at one resolution, on the GPU
//! (kernels alone, and end to end with JPEG decode/encode through the overlapped path of
//! [`super::gpu::stream`]), on the CPU twins, for the codec corruptions through ffmpeg, and,
//! side by side, `imagecorruptions` for the corruptions it shares (via
//! `benches/reference/corrupt.py`). The device is the one every stage gets from
//! [`crate::gpu::Device::open`]; on the CPU twins the GPU columns are left empty.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use image::RgbImage;
use rayon::prelude::*;

use super::gpu::{StreamReport, StreamShape};
use super::photometric::HsvParams;
use super::run::encode_like;
use super::{apply_cpu, plan_frame, CorruptConfig, Corruption, Plan, View};
use crate::config::StageConfig;
use crate::gpu::{Device, Gpu};
use crate::{Error, Result};

/// The reference script, embedded so the binary runs it from anywhere.
pub(crate) const REFERENCE_PY: &str = include_str!("../../benches/reference/corrupt.py");

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub width: u32,
    pub height: u32,
    pub gpu_images: usize,
    pub cpu_images: usize,
    /// A python with `imagecorruptions` (None: skip the reference).
    pub python: Option<PathBuf>,
    pub cpu: bool,
    /// Where the GPU columns run ([`Device::open`]); the CPU twins leave them empty.
    pub device: Device,
}

/// A deterministic textured test image (gradients, edges and noise, like a road scene's
/// statistics matter little to these per-pixel costs).
pub fn test_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let n = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)).wrapping_mul(2_654_435_761) >> 26;
        image::Rgb([
            ((x * 255) / w.max(1)) as u8,
            ((y * 255) / h.max(1)) as u8,
            ((n as u8) / 2).wrapping_add(((x / 40 + y / 40) % 2 * 90) as u8),
        ])
    })
}

/// The plan of `c` at its default severity for the test image (sensor failures forced on).
fn bench_plan(cfg: &CorruptConfig, c: Corruption, img: &RgbImage) -> Result<Plan> {
    if matches!(c, Corruption::CameraCrash | Corruption::FrameLost) {
        return Ok(Plan::Pixel(HsvParams::black()));
    }
    let v = [View {
        image_id: "bench",
        camera: "CAM_FRONT",
        image: img,
    }];
    Ok(plan_frame(cfg, c, cfg.default_severity(c), 0, "bench", &v)?
        .remove(0)
        .plan)
}

fn rate(images: usize, seconds: f64) -> f64 {
    images as f64 / seconds.max(1e-9)
}

/// Runs the benchmark and returns a Markdown report.
pub fn run(opts: &BenchOptions) -> Result<String> {
    let cfg = CorruptConfig::default_config()?;
    let img = test_image(opts.width, opts.height);
    let gpu = opts.device.gpu();
    let jpeg = encode_like(&img, std::path::Path::new("x.jpg"), cfg.output.jpeg_quality)?;
    let reference = match &opts.python {
        Some(py) => reference_rates(py, opts.width, opts.height)?,
        None => serde_json::Value::Null,
    };
    let shape = StreamShape::default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# drivegen bench corrupt: {}×{}, default severities\n\nGPU: {}\n",
        opts.width,
        opts.height,
        gpu.map_or_else(
            || "none (device cpu: the GPU columns are empty)".to_string(),
            |g| g.info().to_string()
        )
    );
    let _ = writeln!(
        out,
        "| corruption | sev | GPU kernels img/s | GPU + JPEG img/s | CPU twin img/s | imagecorruptions img/s | GPU kernels ÷ imagecorruptions |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for c in Corruption::ALL {
        let sev = cfg.default_severity(c);
        let r = reference.get(c.name()).and_then(|v| v.as_f64());
        let refs = r.map(|v| format!("{v:.2}")).unwrap_or_else(|| "–".into());
        if c.is_codec() {
            let t = Instant::now();
            let done = super::codec::apply_codec(&cfg, c, sev, &img, "bench");
            let s = t.elapsed().as_secs_f64();
            let cell = match done {
                Ok(_) => format!("{:.2} (ffmpeg, CPU)", rate(1, s)),
                Err(e) => format!("failed: {}", e.report()),
            };
            let _ = writeln!(
                out,
                "| {} | {sev} | – | – | {cell} | {refs} | – |",
                c.name()
            );
            continue;
        }
        let plan = bench_plan(&cfg, c, &img)?;
        let (k, e2e) = match gpu {
            Some(g) => {
                let k = rate(
                    1,
                    super::gpu::time_kernels(g, &img, &plan, opts.gpu_images)?,
                );
                let (e2e, _) = gpu_codec_rate(g, &shape, &jpeg, &plan, opts.gpu_images, &cfg)?;
                (Some(k), Some(e2e))
            }
            None => (None, None),
        };
        let cpu = if opts.cpu {
            let t = Instant::now();
            (0..opts.cpu_images).into_par_iter().for_each(|_| {
                let _ = apply_cpu(&img, &plan);
            });
            format!("{:.2}", rate(opts.cpu_images, t.elapsed().as_secs_f64()))
        } else {
            "–".into()
        };
        let ratio = match (k, r) {
            (Some(k), Some(v)) => format!("{:.0}×", k / v),
            _ => "–".into(),
        };
        let cell = |v: Option<f64>| v.map_or_else(|| "–".into(), |v| format!("{v:.1}"));
        let _ = writeln!(
            out,
            "| {} | {sev} | {} | {} | {cpu} | {refs} | {ratio} |",
            c.name(),
            cell(k),
            cell(e2e)
        );
    }
    out.push_str(&codec_path(
        &cfg,
        gpu,
        &shape,
        &img,
        &jpeg,
        opts.cpu_images.max(8),
    )?);
    let _ = writeln!(
        out,
        "\nGPU kernels: the input already on the device, {} images, {} to a submission, on \
         buffers and bind groups kept across submissions, no read-back. GPU + JPEG: decode on {} \
         threads, upload, kernels and one read-back per batch of {} ({} batches in flight), \
         encode at quality {} on {} threads, all overlapped (queues of {} images). CPU twin: the \
         plain-Rust twins, one image per core. imagecorruptions: `imagecorruptions-imaug` 1.1.5, \
         one process, numpy defaults (benches/reference/corrupt.py).",
        opts.gpu_images,
        super::gpu::BATCH,
        shape.workers,
        shape.batch,
        shape.in_flight,
        cfg.output.jpeg_quality,
        shape.workers,
        shape.queue_depth()
    );
    Ok(out)
}

/// Images per second of decoding `n` copies of `jpeg`, corrupting them under `plan` on the
/// GPU and encoding them, through the overlapped path ([`super::gpu::stream`]).
fn gpu_codec_rate(
    gpu: &Gpu,
    shape: &StreamShape,
    jpeg: &[u8],
    plan: &Plan,
    n: usize,
    cfg: &CorruptConfig,
) -> Result<(f64, StreamReport)> {
    let q = cfg.output.jpeg_quality;
    let t = Instant::now();
    let report = super::gpu::stream(
        gpu,
        n,
        shape,
        |_| decode_test(jpeg).map(|i| (i, plan.clone())),
        |_, i| encode_like(&i, std::path::Path::new("x.jpg"), q).map(|_| ()),
    )?;
    Ok((rate(n, t.elapsed().as_secs_f64()), report))
}

fn decode_test(jpeg: &[u8]) -> Result<RgbImage> {
    crate::images::decode_checked(jpeg, None)
        .map_err(|why| Error::Internal(format!("bench: decoding the test JPEG: {why}")))
}

/// The codec path: how close a corrupt run comes to the JPEG codec's own speed on the same
/// cores, measured in one run on the same images. (a) decode + encode alone, (b) decode, the
/// CPU twin and encode, (c) decode, the GPU kernels and encode, overlapped
/// ([`super::gpu::stream`]); each over `n` copies of the same JPEG, every core busy, for a
/// cheap per-pixel corruption and the cheapest one.
fn codec_path(
    cfg: &CorruptConfig,
    gpu: Option<&Gpu>,
    shape: &StreamShape,
    img: &RgbImage,
    jpeg: &[u8],
    n: usize,
) -> Result<String> {
    let q = cfg.output.jpeg_quality;
    let encode = |i: &RgbImage| encode_like(i, std::path::Path::new("x.jpg"), q).map(|_| ());
    let timed = |f: &dyn Fn() -> Result<()>| -> Result<f64> {
        let t = Instant::now();
        f()?;
        Ok(rate(n, t.elapsed().as_secs_f64()))
    };
    let codec = timed(&|| {
        (0..n)
            .into_par_iter()
            .try_for_each(|_| decode_test(jpeg).and_then(|i| encode(&i)))
    })?;
    let mut out = format!(
        "\nThe codec path ({n} images, {} threads; goal: a corrupt run at ≥ 80 % of the codec \
         alone):\n\n| corruption | (a) JPEG decode + encode img/s | (b) decode + CPU twin + encode \
         img/s | (b) ÷ (a) | (c) decode + GPU + encode img/s | (c) ÷ (a) |\n|---|---:|---:|---:|---:|---:|\n",
        rayon::current_num_threads()
    );
    let mut notes = Vec::new();
    for c in [Corruption::Brightness, Corruption::FrameLost] {
        let plan = bench_plan(cfg, c, img)?;
        let twin = timed(&|| {
            (0..n)
                .into_par_iter()
                .try_for_each(|_| decode_test(jpeg).and_then(|i| encode(&apply_cpu(&i, &plan))))
        })?;
        let on_gpu = match gpu {
            Some(g) => {
                let (r, report) = gpu_codec_rate(g, shape, jpeg, &plan, n, cfg)?;
                notes.push(format!(
                    "{}: {} images in {} batches used {} device buffers, {} of them created \
                     (the rest reused); the GPU thread waited {:.2} s for decoded images and \
                     {:.2} s for the device",
                    c.name(),
                    report.images,
                    report.batches,
                    report.buffers_used,
                    report.buffers_created,
                    report.waited_for_input_s,
                    report.waited_for_device_s
                ));
                Some(r)
            }
            None => None,
        };
        let (c_rate, c_ratio) = match on_gpu {
            Some(r) => (format!("{r:.1}"), format!("{:.0} %", 100.0 * r / codec)),
            None => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            out,
            "| {} | {codec:.1} | {twin:.1} | {:.0} % | {c_rate} | {c_ratio} |",
            c.name(),
            100.0 * twin / codec,
        );
    }
    for note in notes {
        let _ = writeln!(out, "\n(c) {note}.");
    }
    Ok(out)
}

/// Runs the reference script; returns `{name: images/s}`.
fn reference_rates(python: &std::path::Path, w: u32, h: u32) -> Result<serde_json::Value> {
    let out = Command::new(python)
        .args(["-c", REFERENCE_PY, &w.to_string(), &h.to_string()])
        .output()
        .map_err(|e| Error::Tool {
            tool: python.display().to_string(),
            detail: format!("cannot run the imagecorruptions benchmark: {e}"),
        })?;
    if !out.status.success() {
        return Err(Error::Tool {
            tool: python.display().to_string(),
            detail: format!(
                "benches/reference/corrupt.py failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Tool {
        tool: python.display().to_string(),
        detail: format!("benches/reference/corrupt.py printed no JSON: {e}"),
    })
}
