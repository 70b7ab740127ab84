//! drivegen's corruptions against the public reference, `imagecorruptions-imaug==1.1.5` in
//! the oracles venv (scripts/setup.sh), on the same image and severity:
//! - deterministic ones (Brightness, Saturate, Zoom Blur, and Motion Blur given drivegen's
//!   recorded angle) must match to ≤ 1 grey level mean absolute difference;
//! - random ones (Snow, Fog, and Motion Blur with its own angle) must match distribution
//!   statistics (per channel: mean, standard deviation, mean absolute change from the
//!   input), averaged over several seeds, within 5 %.
//!
//! Skipped with a message when the venv or the package is missing, unless
//! `DRIVEGEN_REQUIRE_ORACLES=1`, where that fails. The CPU twins are compared (the GPU
//! kernels equal them: tests/it/corrupt/corrupt_kernels.rs).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drivegen::config::StageConfig;
use drivegen::corrupt::{apply_cpu, plan_frame, CorruptConfig, Corruption, View};
use image::RgbImage;

fn python() -> Option<PathBuf> {
    let py = common::oracle::python("oracles")?;
    let ok = Command::new(&py)
        .args(["-c", "import imagecorruptions"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") {
        panic!(
            "{}: imagecorruptions is not installed: run scripts/setup.sh",
            py.display()
        );
    }
    eprintln!("skipped: imagecorruptions is not installed in the oracles venv (scripts/setup.sh)");
    None
}

/// A road-like scene: sky gradient, grey road with lane marks, coloured boxes, mild noise.
fn scene(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let n = ((x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)).wrapping_mul(2_654_435_761) >> 28)
            as i32
            - 8;
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let mut c = if fy < 0.45 {
            [90.0 + 120.0 * fy, 140.0 + 100.0 * fy, 230.0 - 40.0 * fy]
        } else {
            let lane = ((fx - 0.5).abs() < 0.01 + 0.02 * fy) && ((y / 6) % 3 != 0);
            if lane {
                [235.0, 235.0, 220.0]
            } else {
                [95.0, 95.0, 100.0]
            }
        };
        if (0.15..0.3).contains(&fx) && (0.35..0.6).contains(&fy) {
            c = [180.0, 30.0, 35.0];
        }
        if (0.65..0.78).contains(&fx) && (0.4..0.55).contains(&fy) {
            c = [20.0, 60.0, 40.0];
        }
        image::Rgb(c.map(|v| (v as i32 + n).clamp(0, 255) as u8))
    })
}

struct Job {
    name: &'static str,
    severity: u8,
    seed: u64,
    angle: Option<f64>,
}

fn reference(py: &Path, img: &Path, dir: &Path, jobs: &[Job]) -> Vec<RgbImage> {
    let spec: Vec<serde_json::Value> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            serde_json::json!({"name": j.name, "severity": j.severity, "seed": j.seed,
                               "angle": j.angle, "out": format!("ref_{i}.png")})
        })
        .collect();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/imagecorruptions_run.py");
    let out = Command::new(py)
        .arg(script)
        .arg(img)
        .arg(dir)
        .arg(serde_json::to_string(&spec).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (0..jobs.len())
        .map(|i| {
            image::open(dir.join(format!("ref_{i}.png")))
                .unwrap()
                .to_rgb8()
        })
        .collect()
}

fn ours(
    cfg: &CorruptConfig,
    img: &RgbImage,
    c: Corruption,
    sev: u8,
    seed: u64,
) -> (RgbImage, serde_json::Value) {
    let v = [View {
        image_id: "scene",
        camera: "CAM_FRONT",
        image: img,
    }];
    let p = plan_frame(cfg, c, sev, seed, "scene", &v)
        .unwrap()
        .remove(0);
    (apply_cpu(img, &p.plan), p.params)
}

fn mad(a: &RgbImage, b: &RgbImage) -> f64 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| f64::from(x.abs_diff(*y)))
        .sum::<f64>()
        / a.len() as f64
}

/// Per channel: mean, standard deviation, mean absolute change from `src`.
fn stats(img: &RgbImage, src: &RgbImage) -> [[f64; 3]; 3] {
    let n = f64::from(img.width() * img.height());
    let mut out = [[0.0; 3]; 3];
    for (c, o) in out.iter_mut().enumerate() {
        let vals: Vec<f64> = img.pixels().map(|p| f64::from(p.0[c])).collect();
        let m = vals.iter().sum::<f64>() / n;
        let sd = (vals.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
        let ch = img
            .pixels()
            .zip(src.pixels())
            .map(|(a, b)| f64::from(a.0[c].abs_diff(b.0[c])))
            .sum::<f64>()
            / n;
        *o = [m, sd, ch];
    }
    out
}

fn mean_stats(v: &[[[f64; 3]; 3]]) -> [[f64; 3]; 3] {
    let mut out = [[0.0; 3]; 3];
    for s in v {
        for c in 0..3 {
            for k in 0..3 {
                out[c][k] += s[c][k] / v.len() as f64;
            }
        }
    }
    out
}

#[test]
fn deterministic_corruptions_match_imagecorruptions() {
    let Some(py) = python() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = scene(320, 180);
    let path = dir.path().join("scene.png");
    img.save(&path).unwrap();
    let mut jobs = Vec::new();
    let mut mine = Vec::new();
    for (c, name) in [
        (Corruption::Brightness, "brightness"),
        (Corruption::Saturate, "saturate"),
        (Corruption::ZoomBlur, "zoom_blur"),
        (Corruption::MotionBlur, "motion_blur"),
    ] {
        for sev in 1..=5u8 {
            let (out, params) = ours(&cfg, &img, c, sev, 11);
            let angle = params.get("angle_deg").and_then(|a| a.as_f64());
            jobs.push(Job {
                name,
                severity: sev,
                seed: 0,
                angle,
            });
            mine.push(out);
        }
    }
    let refs = reference(&py, &path, dir.path(), &jobs);
    let mut failures = Vec::new();
    for ((j, a), b) in jobs.iter().zip(&mine).zip(&refs) {
        let d = mad(a, b);
        eprintln!("{:>12} severity {}: MAD {d:.4}", j.name, j.severity);
        if d > 1.0 {
            failures.push(format!(
                "{} severity {}: MAD {d:.3} > 1",
                j.name, j.severity
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn random_corruptions_match_imagecorruptions_statistics() {
    let Some(py) = python() else { return };
    let cfg = CorruptConfig::default_config().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // 240×135 keeps the fog map at 256² so that many draws stay cheap.
    let img = scene(240, 135);
    let path = dir.path().join("scene.png");
    img.save(&path).unwrap();
    let mut failures = Vec::new();
    // Seeds per side: the fog fractal's low frequencies and the blur angle move one image's
    // statistics a lot, so those need more draws for the means to settle.
    for (c, name, seeds) in [
        (Corruption::Snow, "snow", 8u64),
        (Corruption::Fog, "fog", 192),
        (Corruption::MotionBlur, "motion_blur", 48),
    ] {
        for sev in 1..=5u8 {
            let jobs: Vec<Job> = (0..seeds)
                .map(|s| Job {
                    name,
                    severity: sev,
                    seed: s,
                    angle: None,
                })
                .collect();
            let refs = reference(&py, &path, dir.path(), &jobs);
            let r = mean_stats(&refs.iter().map(|x| stats(x, &img)).collect::<Vec<_>>());
            let m = mean_stats(
                &(0..seeds)
                    .map(|s| stats(&ours(&cfg, &img, c, sev, 1000 + s).0, &img))
                    .collect::<Vec<_>>(),
            );
            for ch in 0..3 {
                for (k, what) in ["mean", "std", "mean |change|"].iter().enumerate() {
                    let (a, b) = (m[ch][k], r[ch][k]);
                    let rel = (a - b).abs() / b.abs().max(1.0);
                    if rel > 0.05 {
                        failures.push(format!(
                            "{name} severity {sev} channel {ch} {what}: drivegen {a:.2} vs imagecorruptions {b:.2} ({:.1} %)",
                            rel * 100.0
                        ));
                    }
                }
            }
            eprintln!(
                "{name:>12} severity {sev}: drivegen {m:.1?}\n{:>25}imagecorruptions {r:.1?}",
                ""
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
