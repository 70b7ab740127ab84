//! `drivegen bench codecs`: JPEG and PNG encoding of 1600×900 pictures by drivegen beside
//! Pillow (libjpeg-turbo, zlib) on the same pixels in the same run, one thread each, plus
//! drivegen's JPEG rate on every core.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use image::RgbImage;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The Pillow side (`benches/reference/codecs.py`).
pub(crate) const REFERENCE_PY: &str = include_str!("../../benches/reference/codecs.py");

pub(crate) struct CodecBench {
    pub width: u32,
    pub height: u32,
    pub quality: u8,
    /// A python with Pillow (None: drivegen only).
    pub python: Option<PathBuf>,
}

/// A flat-shaded picture like the synthetic corpus's: sky and road gradients, solid boxes.
pub(crate) fn flat_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let horizon = h / 2;
        let boxed = (0..6u32).any(|k| {
            let (bx, by) = (k * w / 6 + w / 24, horizon + (k % 3) * h / 20);
            (bx..bx + w / 10).contains(&x) && (by..by + h / 8).contains(&y)
        });
        if boxed {
            image::Rgb([40 + (x % 7) as u8 * 20, 90, 160])
        } else if y < horizon {
            image::Rgb([120, 160, 200u8.saturating_add((y * 50 / h.max(1)) as u8)])
        } else {
            image::Rgb([90 + (y * 40 / h.max(1)) as u8, 90, 95])
        }
    })
}

/// Images per second of `f` over at least `seconds` (and 3 calls).
fn rate(seconds: f64, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let (t0, mut n) = (Instant::now(), 0u32);
    while n < 3 || (t0.elapsed().as_secs_f64() < seconds && n < 500) {
        f()?;
        n += 1;
    }
    Ok(f64::from(n) / t0.elapsed().as_secs_f64())
}

struct Row {
    name: &'static str,
    jpeg_1: f64,
    jpeg_all: f64,
    jpeg_bytes: usize,
    jpeg_sha: String,
    png: f64,
    png_bytes: usize,
}

fn measure(name: &'static str, img: &RgbImage, quality: u8) -> Result<Row> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let jpeg = crate::jpeg::encode(img.as_raw(), w, h, quality)?;
    let png = crate::store::atomic::encode_png(&name, img.clone())?;
    let jpeg_1 = rate(2.0, || {
        crate::jpeg::encode(img.as_raw(), w, h, quality).map(drop)
    })?;
    let batch = rayon::current_num_threads() * 4;
    let jpeg_all = rate(2.0, || {
        (0..batch)
            .into_par_iter()
            .try_for_each(|_| crate::jpeg::encode(img.as_raw(), w, h, quality).map(drop))
    })? * batch as f64;
    let png_rate = rate(1.0, || {
        crate::store::atomic::encode_png(&name, img.clone()).map(drop)
    })?;
    Ok(Row {
        name,
        jpeg_1,
        jpeg_all,
        jpeg_bytes: jpeg.len(),
        jpeg_sha: format!("{:x}", Sha256::digest(&jpeg)),
        png: png_rate,
        png_bytes: png.len(),
    })
}

/// Runs Pillow on the raw images; returns its JSON object keyed by file.
fn reference(b: &CodecBench, python: &Path, files: &[PathBuf]) -> Result<serde_json::Value> {
    let tool = || python.display().to_string();
    let out = Command::new(python)
        .args(["-c", REFERENCE_PY])
        .args([b.width, b.height, u32::from(b.quality)].map(|v| v.to_string()))
        .args(files)
        .output()
        .map_err(|e| Error::Tool {
            tool: tool(),
            detail: format!("cannot run the Pillow benchmark: {e}"),
        })?;
    if !out.status.success() {
        return Err(Error::Tool {
            tool: tool(),
            detail: format!(
                "benches/reference/codecs.py failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Tool {
        tool: tool(),
        detail: format!("benches/reference/codecs.py printed no JSON: {e}"),
    })
}

/// Runs the benchmark and returns a Markdown report.
pub fn run(b: &CodecBench) -> Result<String> {
    let images = [
        ("flat", flat_image(b.width, b.height)),
        (
            "textured",
            crate::corrupt::bench::test_image(b.width, b.height),
        ),
    ];
    let rows = images
        .iter()
        .map(|(n, img)| measure(n, img, b.quality))
        .collect::<Result<Vec<_>>>()?;
    let reference = match &b.python {
        Some(py) => {
            let dir =
                std::env::temp_dir().join(format!("drivegen-bench-codecs-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let files: Vec<PathBuf> = images
                .iter()
                .map(|(n, _)| dir.join(format!("{n}.rgb")))
                .collect();
            for ((_, img), f) in images.iter().zip(&files) {
                std::fs::write(f, img.as_raw()).map_err(|e| Error::io(f, e))?;
            }
            let r = reference(b, py, &files);
            let _ = std::fs::remove_dir_all(&dir);
            Some((r?, files))
        }
        None => None,
    };
    let mut out = format!(
        "{}×{} RGB, JPEG quality {} with 4:2:0 chroma; drivegen's PNG is the `image` crate's \
         (fdeflate, adaptive filters), Pillow's is zlib level 6. Rates are images/s on one \
         thread unless marked; drivegen's \"all threads\" uses {} threads.\n\n",
        b.width,
        b.height,
        b.quality,
        rayon::current_num_threads()
    );
    out.push_str(
        "| picture | drivegen JPEG | drivegen JPEG, all threads | Pillow JPEG | drivegen ÷ Pillow \
         | JPEG bytes (drivegen / Pillow) | same bytes | drivegen PNG | Pillow PNG | PNG bytes \
         (drivegen / Pillow) |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n",
    );
    let mut version = None;
    for (k, r) in rows.iter().enumerate() {
        let p = reference
            .as_ref()
            .and_then(|(j, files)| j.get(files[k].to_string_lossy().as_ref()));
        let num = |key: &str| p.and_then(|p| p.get(key)).and_then(|v| v.as_f64());
        if let Some(v) = p
            .and_then(|p| p.get("libjpeg_turbo"))
            .and_then(|v| v.as_str())
        {
            version = Some(v.to_string());
        }
        let same = p
            .and_then(|p| p.get("jpeg_sha256"))
            .and_then(|v| v.as_str())
            .map_or("–", |s| if s == r.jpeg_sha { "yes" } else { "no" });
        let f = |v: Option<f64>, d: usize| v.map_or("–".to_string(), |v| format!("{v:.d$}"));
        out.push_str(&format!(
            "| {} | {:.1} | {:.1} | {} | {} | {} / {} | {} | {:.1} | {} | {} / {} |\n",
            r.name,
            r.jpeg_1,
            r.jpeg_all,
            f(num("jpeg"), 1),
            f(num("jpeg").map(|v| r.jpeg_1 / v), 2),
            r.jpeg_bytes,
            f(num("jpeg_bytes"), 0),
            same,
            r.png,
            f(num("png"), 1),
            r.png_bytes,
            f(num("png_bytes"), 0),
        ));
    }
    if let Some(v) = version {
        out.push_str(&format!("\nPillow's libjpeg-turbo: {v}.\n"));
    }
    Ok(out)
}
