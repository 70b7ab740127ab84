//! The contact sheet: one image under all 15 corruptions × 5 severities, for people to look at.
//!
//! Rows follow [`Corruption::ALL`] (DriveBench's order); the first column is the clean image,
//! then severities 1–5. Each cell is the corrupted full-resolution image scaled to `cell_w`
//! pixels wide; cells are separated by 4-pixel gaps, and the cell of each corruption's
//! default severity is framed in red. A JSON legend is written next to the sheet.

use std::path::{Path, PathBuf};

use image::{imageops, Rgb, RgbImage};
use serde_json::json;

use super::run::{corrupt_frame, encode_like, load_rgb, open_device, Device};
use super::{CorruptConfig, Corruption, View};
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

const GAP: u32 = 4;

/// Draws the sheet of `image` into `out` (PNG) and `out` + `.json` (the legend).
pub fn contact_sheet(
    cfg: &CorruptConfig,
    image: &Path,
    out: &Path,
    seed: u64,
    device: Device,
    cell_w: u32,
) -> Result<PathBuf> {
    let img = load_rgb(image)?;
    let gpu = open_device(device)?;
    let cell_w = cell_w.max(8);
    let cell_h = ((u64::from(img.height()) * u64::from(cell_w)) / u64::from(img.width().max(1)))
        .max(1) as u32;
    let rows = Corruption::ALL.len() as u32;
    let (w, h) = (6 * (cell_w + GAP) + GAP, rows * (cell_h + GAP) + GAP);
    let mut sheet = RgbImage::from_pixel(w, h, Rgb([255, 255, 255]));
    let id = image
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let thumb = |i: &RgbImage| imageops::resize(i, cell_w, cell_h, imageops::FilterType::Triangle);
    let clean = thumb(&img);
    let mut legend = Vec::new();
    for (r, c) in Corruption::ALL.into_iter().enumerate() {
        let y = GAP + r as u32 * (cell_h + GAP);
        imageops::replace(&mut sheet, &clean, i64::from(GAP), i64::from(y));
        let mut notes = Vec::new();
        for sev in 1..=5u8 {
            let x = GAP + u32::from(sev) * (cell_w + GAP);
            let view = [View {
                image_id: &id,
                camera: "CAM_FRONT",
                image: &img,
            }];
            match corrupt_frame(cfg, gpu.as_ref(), c, sev, seed, &id, &view) {
                Ok(mut v) => {
                    let (out_img, _, params) = v.remove(0);
                    imageops::replace(&mut sheet, &thumb(&out_img), i64::from(x), i64::from(y));
                    notes.push(params);
                }
                // A missing ffmpeg greys out the codec rows instead of losing the sheet.
                Err(e @ Error::Tool { .. }) => {
                    eprintln!("drivegen: contact sheet: {} left grey: {e}", c.name());
                    let grey = RgbImage::from_pixel(cell_w, cell_h, Rgb([128, 128, 128]));
                    imageops::replace(&mut sheet, &grey, i64::from(x), i64::from(y));
                    notes.push(json!({"error": e.to_string()}));
                }
                Err(e) => return Err(e),
            }
            if sev == cfg.default_severity(c) {
                frame_cell(&mut sheet, x, y, cell_w, cell_h);
            }
        }
        legend.push(
            json!({"row": r, "corruption": c.name(), "name": c.display_name(),
                           "default_severity": cfg.default_severity(c), "params": notes}),
        );
    }
    let bytes = encode_like(&sheet, Path::new("sheet.png"), 100)?;
    write_atomic(out, &bytes)?;
    let legend_path = PathBuf::from(format!("{}.json", out.display()));
    let doc = json!({"image": image.to_string_lossy(), "seed": seed,
                     "columns": ["clean", "1", "2", "3", "4", "5"], "rows": legend});
    write_atomic(
        &legend_path,
        serde_json::to_string_pretty(&doc)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(legend_path)
}

/// A 2-pixel red frame just outside a cell.
fn frame_cell(sheet: &mut RgbImage, x: u32, y: u32, w: u32, h: u32) {
    let red = Rgb([220, 0, 0]);
    let (x0, y0) = (x.saturating_sub(2), y.saturating_sub(2));
    let (x1, y1) = (
        (x + w + 1).min(sheet.width() - 1),
        (y + h + 1).min(sheet.height() - 1),
    );
    for xx in x0..=x1 {
        for t in 0..2 {
            sheet.put_pixel(xx, y0 + t, red);
            sheet.put_pixel(xx, y1 - t, red);
        }
    }
    for yy in y0..=y1 {
        for t in 0..2 {
            sheet.put_pixel(x0 + t, yy, red);
            sheet.put_pixel(x1 - t, yy, red);
        }
    }
}
