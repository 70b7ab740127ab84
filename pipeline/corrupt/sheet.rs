//! The contact sheet: one image under all 15 corruptions × 5 severities, for people to look at.
//!
//! Rows follow [`Corruption::ALL`] (DriveBench's order); the first column is the clean image,
//! then severities 1–5. Each cell is the corrupted full-resolution image scaled to `cell_w`
//! pixels wide; cells are separated by 4-pixel gaps, and the cell of each corruption's
//! default severity is framed in red. Rows and columns are labelled in a built-in 3×5 pixel
//! font, and a JSON legend (with every cell's recorded parameters) is written next to it.

use std::path::{Path, PathBuf};

use image::{imageops, Rgb, RgbImage};
use rayon::prelude::*;
use serde_json::{json, Value};

use super::run::{corrupt_frame, encode_like, load_rgb};
use super::{CorruptConfig, Corruption, View};
use crate::gpu::Gpu;
use crate::store::atomic::write_atomic;
use crate::{Error, Result};

const GAP: u32 = 4;

/// Draws the sheet of `image` into `out` (PNG) and `out` + `.json` (the legend).
pub(crate) fn contact_sheet(
    cfg: &CorruptConfig,
    image: &Path,
    out: &Path,
    seed: u64,
    gpu: Option<&Gpu>,
    cell_w: u32,
) -> Result<PathBuf> {
    crate::store::paths::disjoint(image, "the image", out, "the sheet")?;
    let img = load_rgb(image)?;
    crate::store::owner::file_output(out)?;
    crate::store::owner::file_output(&PathBuf::from(format!("{}.json", out.display())))?;
    let id = image
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let source = image.to_string_lossy();
    contact_sheet_of(cfg, &img, &id, &source, out, seed, gpu, cell_w)
}

/// The codec corruptions' cells of the sheet, in the order of `jobs`: each the image and its
/// metadata, or, where ffmpeg is missing or fails, the error that leaves the cell grey.
fn codec_cells(
    cfg: &CorruptConfig,
    img: &RgbImage,
    id: &str,
    jobs: &[(Corruption, u8)],
) -> Result<Vec<std::result::Result<(RgbImage, Value), String>>> {
    let done = super::codec::find_ffmpeg()
        .and_then(|ffmpeg| super::codec::apply_batches(&ffmpeg, cfg, jobs, &[(img, id)]));
    match done {
        Ok(mut per_image) => Ok(per_image
            .pop()
            .unwrap_or_default()
            .into_iter()
            .map(Ok)
            .collect()),
        Err(e @ Error::Tool { .. }) => {
            let why = e.report().to_string();
            Ok(jobs.iter().map(|_| Err(why.clone())).collect())
        }
        Err(e) => Err(e),
    }
}

/// Draws the sheet of a decoded image: `id` keys the random draws, `source` is where the
/// legend says the image came from.
#[allow(clippy::too_many_arguments)]
pub(crate) fn contact_sheet_of(
    cfg: &CorruptConfig,
    img: &RgbImage,
    id: &str,
    source: &str,
    out: &Path,
    seed: u64,
    gpu: Option<&Gpu>,
    cell_w: u32,
) -> Result<PathBuf> {
    let cell_w = cell_w.max(8);
    let cell_h = ((u64::from(img.height()) * u64::from(cell_w)) / u64::from(img.width().max(1)))
        .max(1) as u32;
    let rows = Corruption::ALL.len() as u32;
    let (left, top, scale) = margins(cell_w);
    let (w, h) = (
        left + 6 * (cell_w + GAP) + GAP,
        top + rows * (cell_h + GAP) + GAP,
    );
    let mut sheet = RgbImage::from_pixel(w, h, Rgb([255, 255, 255]));
    for (col, label) in ["CLEAN", "1", "2", "3", "4", "5"].iter().enumerate() {
        let x = left + GAP + col as u32 * (cell_w + GAP);
        text(&mut sheet, x, GAP, scale, label);
    }
    let thumb = |i: &RgbImage| imageops::resize(i, cell_w, cell_h, imageops::FilterType::Triangle);
    let clean = thumb(img);
    // Every cell is drawn first, side by side (only its thumbnail is kept), then laid out in
    // order.
    let jobs: Vec<(Corruption, u8)> = Corruption::ALL
        .into_iter()
        .flat_map(|c| (1..=5u8).map(move |sev| (c, sev)))
        .collect();
    let view = [View {
        image_id: id,
        camera: "CAM_FRONT",
        image: img,
    }];
    // The codec cells are one batch of ffmpeg runs (a source stream shared by ten streams),
    // drawn beside the others.
    let codec_jobs: Vec<(Corruption, u8)> =
        jobs.iter().copied().filter(|(c, _)| c.is_codec()).collect();
    let (codec_cells, other_cells) = rayon::join(
        || {
            codec_cells(cfg, img, id, &codec_jobs).map(|cells| {
                (cells.into_iter())
                    .map(|r| r.map(|(out_img, params)| (thumb(&out_img), params)))
                    .collect::<Vec<_>>()
            })
        },
        || {
            jobs.par_iter()
                .filter(|(c, _)| !c.is_codec())
                .map(|&(c, sev)| {
                    let mut v = corrupt_frame(cfg, gpu, c, sev, seed, id, &view)?;
                    let (out_img, _, params) = v.remove(0);
                    Ok((thumb(&out_img), params))
                })
                .collect::<Result<Vec<_>>>()
        },
    );
    let (mut codec_cells, mut other_cells) = (codec_cells?.into_iter(), other_cells?.into_iter());
    let mut cells = jobs.iter().map(|(c, _)| {
        if c.is_codec() {
            codec_cells.next()
        } else {
            other_cells.next().map(Ok)
        }
    });
    let mut legend = Vec::new();
    for (r, c) in Corruption::ALL.into_iter().enumerate() {
        let y = top + GAP + r as u32 * (cell_h + GAP);
        text(
            &mut sheet,
            GAP,
            y + GAP,
            scale,
            &c.display_name().to_ascii_uppercase(),
        );
        imageops::replace(&mut sheet, &clean, i64::from(left + GAP), i64::from(y));
        let mut notes = Vec::new();
        for sev in 1..=5u8 {
            let x = left + GAP + u32::from(sev) * (cell_w + GAP);
            match cells.next().flatten() {
                Some(Ok((cell, params))) => {
                    imageops::replace(&mut sheet, &cell, i64::from(x), i64::from(y));
                    notes.push(params);
                }
                // A missing ffmpeg greys out the codec rows instead of losing the sheet.
                Some(Err(why)) => {
                    eprintln!("drivegen: contact sheet: {why} left grey: {}", c.name());
                    let grey = RgbImage::from_pixel(cell_w, cell_h, Rgb([128, 128, 128]));
                    imageops::replace(&mut sheet, &grey, i64::from(x), i64::from(y));
                    notes.push(json!({"error": why}));
                }
                None => return Err(Error::Internal("a contact-sheet cell is missing".into())),
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
    let doc = json!({"image": source, "seed": seed,
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

/// Left label column width, header height and font scale for cells `cell_w` wide.
pub fn margins(cell_w: u32) -> (u32, u32, u32) {
    let scale = (cell_w / 80).max(1);
    let longest = Corruption::ALL
        .iter()
        .map(|c| c.display_name().len() as u32)
        .max()
        .unwrap_or(0);
    (longest * 4 * scale + 2 * GAP, 5 * scale + 2 * GAP, scale)
}

/// The 3×5 glyph of `ch` (rows top to bottom, bit 2 = left column); unknown characters are
/// blank.
fn glyph(ch: char) -> [u8; 5] {
    match ch {
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'Z' => [7, 1, 2, 4, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [6, 1, 2, 4, 7],
        '3' => [6, 1, 2, 1, 6],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 6, 1, 6],
        '6' => [3, 4, 7, 5, 7],
        '.' => [0, 0, 0, 0, 2],
        _ => [0; 5],
    }
}

/// Draws `s` in black with its top-left corner at (x, y), each font pixel `scale`² pixels.
fn text(img: &mut RgbImage, x: u32, y: u32, scale: u32, s: &str) {
    for (i, ch) in s.chars().enumerate() {
        let g = glyph(ch);
        let gx = x + i as u32 * 4 * scale;
        for (row, bits) in g.iter().enumerate() {
            for col in 0..3u32 {
                if bits & (4 >> col) == 0 {
                    continue;
                }
                for dy in 0..scale {
                    for dx in 0..scale {
                        let (px, py) = (gx + col * scale + dx, y + row as u32 * scale + dy);
                        if px < img.width() && py < img.height() {
                            img.put_pixel(px, py, Rgb([0, 0, 0]));
                        }
                    }
                }
            }
        }
    }
}
