//! JPEG encoding. Every JPEG drivegen writes goes through [`encode`]: the synthetic corpus's
//! frames, corrupted images, the release's black controls and the report's pictures.
//!
//! It is libjpeg-turbo (through the `turbojpeg` crate, built from the sources it bundles,
//! with its SIMD code, and linked statically so the binary needs no JPEG library at run
//! time): the encoder behind Pillow and OpenCV, whose writers the references use, so the
//! published bytes are what those tools write. Settings are theirs by default: baseline,
//! 4:2:0 chroma, the standard (Annex K) Huffman tables and the accurate integer DCT.
//! libjpeg-turbo writes the same bytes at every SIMD level, so output does not depend on the
//! machine. BENCHMARKS.md ("JPEG and PNG encoders") gives the measured speeds and the choice.

use std::cell::RefCell;

use crate::{Error, Result};

/// The longest side a baseline JPEG can hold.
pub(crate) const MAX_SIDE: u32 = 65535;

thread_local! {
    /// One compressor per thread: its setup is paid once, not per image.
    static COMPRESSOR: RefCell<Option<turbojpeg::Compressor>> = const { RefCell::new(None) };
}

/// Encodes row-major RGB8 pixels (`rgb.len() == 3·width·height`, both sides 1..=65535) as a
/// baseline JFIF JPEG with 4:2:0 chroma at `quality` (1..=100).
pub fn encode(rgb: &[u8], width: usize, height: usize, quality: u8) -> Result<Vec<u8>> {
    let fail = |detail: String| Error::Tool {
        tool: "libjpeg-turbo".into(),
        detail,
    };
    let side = MAX_SIDE as usize;
    if width == 0 || height == 0 || width > side || height > side {
        return Err(fail(format!(
            "cannot encode a {width}×{height} JPEG: sides must be 1 to {side}"
        )));
    }
    if rgb.len() != 3 * width * height {
        return Err(fail(format!(
            "{} bytes are no {width}×{height} RGB image",
            rgb.len()
        )));
    }
    let image = turbojpeg::Image {
        pixels: rgb,
        width,
        pitch: 3 * width,
        height,
        format: turbojpeg::PixelFormat::RGB,
    };
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(turbojpeg::Compressor::new().map_err(|e| fail(e.to_string()))?);
        }
        let c = cell
            .as_mut()
            .ok_or_else(|| Error::Internal("no JPEG compressor".into()))?;
        c.set_quality(i32::from(quality.clamp(1, 100)))
            .and_then(|()| c.set_subsamp(turbojpeg::Subsamp::Sub2x2))
            .and_then(|()| c.set_optimize(false))
            .map_err(|e| fail(e.to_string()))?;
        c.compress_to_vec(image).map_err(|e| fail(e.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn psnr(a: &[u8], b: &[u8]) -> f64 {
        let mse = a
            .iter()
            .zip(b)
            .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
            .sum::<f64>()
            / a.len() as f64;
        10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
    }

    #[test]
    fn decodes_back_to_the_picture() {
        // Smooth gradients, flat areas and hard edges, at a size that is not a multiple of 16.
        let (w, h) = (101, 67);
        let mut rgb = vec![0u8; w * h * 3];
        for yy in 0..h {
            for xx in 0..w {
                let i = 3 * (yy * w + xx);
                let inside = (30..70).contains(&xx) && (20..50).contains(&yy);
                rgb[i] = if inside { 200 } else { (xx * 2) as u8 };
                rgb[i + 1] = if inside { 40 } else { (yy * 3) as u8 };
                rgb[i + 2] = if inside { 60 } else { 128 };
            }
        }
        let jpeg = encode(&rgb, w, h, 95).unwrap();
        let img = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        assert_eq!((img.width() as usize, img.height() as usize), (w, h));
        let p = psnr(&rgb, img.as_raw());
        assert!(p > 30.0, "PSNR {p:.1} dB");
        // A flat interior pixel comes back nearly exact.
        let c = img.get_pixel(50, 35).0;
        assert!(
            c.iter()
                .zip([200u8, 40, 60])
                .all(|(a, b)| (i32::from(*a) - i32::from(b)).abs() <= 4),
            "{c:?}"
        );
        // Lower quality, smaller file; the same input, the same bytes.
        assert!(encode(&rgb, w, h, 50).unwrap().len() < jpeg.len());
        assert_eq!(encode(&rgb, w, h, 95).unwrap(), jpeg);
        // 4:2:0: the frame header gives luma 2×2 sampling and chroma 1×1.
        let sof = jpeg.windows(2).position(|m| m == [0xFF, 0xC0]).unwrap();
        assert_eq!(jpeg[sof + 9], 3, "three components");
        assert_eq!(
            [jpeg[sof + 11], jpeg[sof + 14], jpeg[sof + 17]],
            [0x22, 0x11, 0x11]
        );
    }

    #[test]
    fn refuses_what_it_cannot_encode() {
        assert!(encode(&[], 0, 4, 95).is_err());
        assert!(encode(&[0; 12], 2, 3, 95).is_err());
        assert!(encode(&[0; 3], 1, 1, 95).is_ok());
    }
}
