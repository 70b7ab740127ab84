//! The codec corruptions through the real ffmpeg: H.265 (libx265 ABR) and Bit Error (noise
//! bitstream filter). Skipped with a message when ffmpeg is missing, unless
//! `DRIVEGEN_REQUIRE_ORACLES=1`.

use drivegen::config::StageConfig;
use drivegen::corrupt::codec::{apply_codec, apply_codec_with, find_ffmpeg};
use drivegen::corrupt::{CorruptConfig, Corruption};
use image::RgbImage;

fn have_ffmpeg() -> bool {
    match find_ffmpeg() {
        Ok(_) => true,
        Err(e) if std::env::var("DRIVEGEN_REQUIRE_ORACLES").is_ok_and(|v| v == "1") => {
            panic!("{e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// Textured enough that the encoders spend bits on it.
fn texture(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let n = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)).wrapping_mul(2_654_435_761) >> 24;
        image::Rgb([
            ((x * 255) / w) as u8,
            ((y * 255) / h) as u8,
            (n as u8 / 2).wrapping_add(((x / 16 + y / 16) % 2 * 100) as u8),
        ])
    })
}

fn mad(a: &RgbImage, b: &RgbImage) -> f64 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| f64::from(x.abs_diff(*y)))
        .sum::<f64>()
        / a.len() as f64
}

#[test]
fn h265_degrades_with_severity_and_is_deterministic() {
    if !have_ffmpeg() {
        return;
    }
    let cfg = CorruptConfig::default_config().unwrap();
    // Odd size: the last column and row keep their pixels.
    let img = texture(161, 91);
    let (s1, m1) = apply_codec(&cfg, Corruption::H265, 1, &img, "tex").unwrap();
    let (s5, m5) = apply_codec(&cfg, Corruption::H265, 5, &img, "tex").unwrap();
    let (again, _) = apply_codec(&cfg, Corruption::H265, 5, &img, "tex").unwrap();
    assert_eq!(s5.dimensions(), img.dimensions());
    assert_eq!(s5, again, "libx265 output must be deterministic");
    assert_eq!(s5.get_pixel(160, 90), img.get_pixel(160, 90));
    let (d1, d5) = (mad(&img, &s1), mad(&img, &s5));
    eprintln!("h265 MAD sev1 {d1:.2}, sev5 {d5:.2}; {m1} {m5}");
    assert!(d5 > d1 && d1 > 0.0, "{d1} {d5}");
    assert_eq!(m5["divisor"], 32);
}

#[test]
fn bit_error_runs_deterministically() {
    if !have_ffmpeg() {
        return;
    }
    let cfg = CorruptConfig::default_config().unwrap();
    let img = texture(320, 240);
    let (a, meta) = apply_codec(&cfg, Corruption::BitError, 5, &img, "tex").unwrap();
    let (b, _) = apply_codec(&cfg, Corruption::BitError, 5, &img, "tex").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.dimensions(), img.dimensions());
    assert_eq!(meta["noise"], 10000);
    eprintln!("bit_error MAD {:.2}, {meta}", mad(&img, &a));
}

#[test]
fn a_missing_ffmpeg_is_a_clear_error() {
    let cfg = CorruptConfig::default_config().unwrap();
    let bogus = std::path::Path::new("/nonexistent/ffmpeg");
    let err = apply_codec_with(bogus, &cfg, Corruption::H265, 4, &texture(8, 8), "img-7")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("ffmpeg") && err.contains("/nonexistent/ffmpeg") && err.contains("img-7"),
        "{err}"
    );
}

#[test]
fn every_job_of_a_batch_equals_each_job_alone() {
    if !have_ffmpeg() {
        return;
    }
    let cfg = CorruptConfig::default_config().unwrap();
    let img = texture(241, 135);
    let ffmpeg = find_ffmpeg().unwrap();
    let jobs: Vec<(Corruption, u8)> = [Corruption::H265, Corruption::BitError]
        .into_iter()
        .flat_map(|c| (1..=5).map(move |s| (c, s)))
        .collect();
    // Three images of different sizes (one odd, cropped to even) in one batch.
    let imgs = [img, texture(64, 48), texture(97, 33)];
    let ids = ["tex", "small", "odd"];
    let pairs: Vec<(&RgbImage, &str)> = imgs.iter().zip(ids).collect();
    let refs: Vec<&RgbImage> = imgs.iter().collect();
    let src = drivegen::corrupt::codec::Sources::encode(&ffmpeg, &pairs).unwrap();
    let together = src.apply_all(&cfg, &jobs, &refs).unwrap();
    assert_eq!(together.len(), imgs.len());
    for ((img, id), per_image) in imgs.iter().zip(ids).zip(&together) {
        assert_eq!(per_image.len(), jobs.len());
        for (&(c, s), (got, params)) in jobs.iter().zip(per_image) {
            let (want, want_params) = apply_codec(&cfg, c, s, img, id).unwrap();
            assert!(*got == want, "{id}: {c:?} severity {s}: the images differ");
            assert_eq!(*params, want_params, "{id}: {c:?} severity {s}");
        }
    }
}
