//! `drivegen bench corrupt`: images per second per corruption at one resolution, on the GPU
//! (kernels alone, and end to end with JPEG decode/encode), on the CPU twins, for the codec
//! corruptions through ffmpeg, and, side by side, `imagecorruptions` for the corruptions it
//! shares (via `benches/reference/corrupt.py`).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use image::RgbImage;
use rayon::prelude::*;

use super::photometric::HsvParams;
use super::run::encode_like;
use super::{apply_cpu, plan_frame, CorruptConfig, Corruption, Plan, View};
use crate::config::StageConfig;
use crate::gpu::Gpu;
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
    let gpu = Gpu::open()?;
    let jpeg = encode_like(&img, std::path::Path::new("x.jpg"), cfg.output.jpeg_quality)?;
    let reference = match &opts.python {
        Some(py) => reference_rates(py, opts.width, opts.height)?,
        None => serde_json::Value::Null,
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# drivegen bench corrupt: {}×{}, default severities\n\nGPU: {}\n",
        opts.width,
        opts.height,
        gpu.info()
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
        let k = rate(
            1,
            super::gpu::time_kernels(&gpu, &img, &plan, opts.gpu_images)?,
        );
        // End to end: decode the JPEGs, corrupt, encode.
        let t = Instant::now();
        let decoded: Vec<RgbImage> = (0..opts.gpu_images)
            .into_par_iter()
            .map(|_| {
                image::load_from_memory(&jpeg)
                    .map(|i| i.to_rgb8())
                    .map_err(|e| Error::Internal(format!("bench: decoding the test JPEG: {e}")))
            })
            .collect::<Result<_>>()?;
        let jobs: Vec<_> = decoded.iter().map(|i| (i, &plan)).collect();
        let outs = super::gpu::apply_gpu(&gpu, &jobs)?;
        outs.par_iter().try_for_each(|o| {
            encode_like(o, std::path::Path::new("x.jpg"), cfg.output.jpeg_quality).map(|_| ())
        })?;
        let e2e = rate(opts.gpu_images, t.elapsed().as_secs_f64());
        let cpu = if opts.cpu {
            let t = Instant::now();
            (0..opts.cpu_images).into_par_iter().for_each(|_| {
                let _ = apply_cpu(&img, &plan);
            });
            format!("{:.2}", rate(opts.cpu_images, t.elapsed().as_secs_f64()))
        } else {
            "–".into()
        };
        let ratio = r
            .map(|v| format!("{:.0}×", k / v))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            out,
            "| {} | {sev} | {k:.1} | {e2e:.1} | {cpu} | {refs} | {ratio} |",
            c.name()
        );
    }
    out.push_str(&codec_path(
        &cfg,
        &gpu,
        &img,
        &jpeg,
        opts.cpu_images.max(8),
    )?);
    let _ = writeln!(
        out,
        "\nGPU kernels: the input already on the device, {} images in one submission, scratch \
         buffers allocated per image, no read-back. GPU + JPEG: decode, upload, kernels, read-back \
         and encode at quality {}, JPEG work on all CPU cores. CPU twin: the plain-Rust twins, one \
         image per core. imagecorruptions: `imagecorruptions-imaug` 1.1.5, one process, numpy \
         defaults (benches/reference/corrupt.py).",
        opts.gpu_images, cfg.output.jpeg_quality
    );
    Ok(out)
}

/// The codec path: how close a corrupt run comes to the JPEG codec's own speed on the same
/// cores. (a) decode + encode alone, (b) decode, the CPU twin and encode, (c) decode, the GPU
/// kernels and encode; each over `n` copies of the same JPEG, every core busy, for a cheap
/// per-pixel corruption and the cheapest one.
fn codec_path(
    cfg: &CorruptConfig,
    gpu: &Gpu,
    img: &RgbImage,
    jpeg: &[u8],
    n: usize,
) -> Result<String> {
    let q = cfg.output.jpeg_quality;
    let decode = || {
        crate::images::decode_checked(jpeg, None)
            .map_err(|why| Error::Internal(format!("bench: decoding the test JPEG: {why}")))
    };
    let encode = |i: &RgbImage| encode_like(i, std::path::Path::new("x.jpg"), q).map(|_| ());
    let timed = |f: &dyn Fn() -> Result<()>| -> Result<f64> {
        let t = Instant::now();
        f()?;
        Ok(rate(n, t.elapsed().as_secs_f64()))
    };
    let codec = timed(&|| {
        (0..n)
            .into_par_iter()
            .try_for_each(|_| decode().and_then(|i| encode(&i)))
    })?;
    let mut out = format!(
        "\nThe codec path ({n} images, {} threads; goal: a corrupt run at ≥ 80 % of the codec \
         alone):\n\n| corruption | (a) JPEG decode + encode img/s | (b) decode + CPU twin + encode \
         img/s | (b) ÷ (a) | (c) decode + GPU + encode img/s | (c) ÷ (a) |\n|---|---:|---:|---:|---:|---:|\n",
        rayon::current_num_threads()
    );
    for c in [Corruption::Brightness, Corruption::FrameLost] {
        let plan = bench_plan(cfg, c, img)?;
        let twin = timed(&|| {
            (0..n)
                .into_par_iter()
                .try_for_each(|_| decode().and_then(|i| encode(&apply_cpu(&i, &plan))))
        })?;
        let on_gpu = timed(&|| {
            let decoded: Vec<RgbImage> = (0..n)
                .into_par_iter()
                .map(|_| decode())
                .collect::<Result<_>>()?;
            let jobs: Vec<_> = decoded.iter().map(|i| (i, &plan)).collect();
            let outs = super::gpu::apply_gpu(gpu, &jobs)?;
            outs.par_iter().try_for_each(encode)
        })?;
        let _ = writeln!(
            out,
            "| {} | {codec:.1} | {twin:.1} | {:.0} % | {on_gpu:.1} | {:.0} % |",
            c.name(),
            100.0 * twin / codec,
            100.0 * on_gpu / codec
        );
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
