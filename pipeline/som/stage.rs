//! `drivegen som`: the marked camera images and the marks table.
//!
//! For every keyframe camera image with kept rows in the visibility table, the stage takes each
//! kept object's box, visible pixels and label anchor from the table (the visibility stage is
//! the one place anchors are computed, under the rules of this stage's config, which the table
//! records: [`crate::visibility::anchor::AnchorRules`]; a table made under other rules is
//! refused), numbers and places their labels ([`super::layout`]) and draws boxes and labels
//! into the source image ([`super::draw`], on the GPU when the device is one). It writes
//! `<out>/marks.arrow` (`schemas/som/marks.json`: one row per mark, one record batch per store
//! scene, rows in image then mark order), `<out>/marked_images.arrow` (what each marked image
//! draws, [`super::recipe`]) and, when asked for images, `<out>/<scene_id>/<camera_frame_id>.png`
//! (lossless RGB, atomically).
//!
//! A kept row must name a camera image of the store; otherwise the visibility table does not
//! belong to this store and the run stops with the row named. A missing or unreadable source
//! image, or one whose size differs from `cameras.arrow`, is skipped (no PNG, no marks) and
//! recorded with its path and the reason in `<out>/rejects.jsonl`; the other images go on.
//! Nothing is left half-written: PNGs, `marks.arrow` and the rejects log are written
//! atomically.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;

use super::config::SomConfig;
use super::draw::DrawMark;
use super::font::mark_colour;
use super::kept;
use super::layout::{layout, MarkIn};
use super::recipe::{self, MarkedImage};
use crate::config::StageConfig;
use crate::gpu::{Device, Gpu};
use crate::images::ImageReader;
use crate::store::atomic::write_atomic;
use crate::store::rejects::{Reject, RejectLog, LOG_FILE};
use crate::store::CameraRow;
use crate::store::Store;
use crate::visibility::anchor::{choose_anchor, AnchorRule};
use crate::visibility::output::safe_name;
use crate::visibility::table::KeptScenes;
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "Set-of-Mark output";

/// One row of `marks.arrow`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MarkRow {
    pub scene_id: String,
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub track_id: String,
    pub annotation_id: String,
    pub mark: u32,
    /// Pixel centre of the anchor pixel.
    pub anchor: [f64; 2],
    /// `interior`, `ring` or `fallback`.
    pub anchor_rule: String,
    /// Pixel edges `[x0, y0, x1, y1)`.
    pub label: [u32; 4],
    pub bbox: [u32; 4],
    /// `0xRRGGBB`.
    pub colour: u32,
}

/// The schema of `marks.arrow`.
pub fn marks_schema() -> SchemaRef {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    let mut v = vec![
        f("scene_id", DataType::Utf8),
        f("frame_idx", DataType::UInt32),
        f("camera", DataType::Utf8),
        f("camera_frame_id", DataType::Utf8),
        f("track_id", DataType::Utf8),
        f("annotation_id", DataType::Utf8),
        f("mark", DataType::UInt32),
        f("anchor_x", DataType::Float64),
        f("anchor_y", DataType::Float64),
        f("anchor_rule", DataType::Utf8),
    ];
    for c in ["x0", "y0", "x1", "y1"] {
        v.push(f(&format!("label_{c}"), DataType::UInt32));
    }
    for c in ["x0", "y0", "x1", "y1"] {
        v.push(f(&format!("box_{c}"), DataType::UInt32));
    }
    v.push(f("colour", DataType::UInt32));
    Arc::new(Schema::new(v))
}

fn to_batch(rows: &[MarkRow]) -> Result<RecordBatch> {
    let strs = |g: &dyn Fn(&MarkRow) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(g)))
    };
    let u32s = |g: &dyn Fn(&MarkRow) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(g)))
    };
    let f64s = |g: &dyn Fn(&MarkRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(g)))
    };
    let mut cols: Vec<ArrayRef> = vec![
        strs(&|r| &r.scene_id),
        u32s(&|r| r.frame_idx),
        strs(&|r| &r.camera),
        strs(&|r| &r.camera_frame_id),
        strs(&|r| &r.track_id),
        strs(&|r| &r.annotation_id),
        u32s(&|r| r.mark),
        f64s(&|r| r.anchor[0]),
        f64s(&|r| r.anchor[1]),
        strs(&|r| &r.anchor_rule),
    ];
    for k in 0..4 {
        cols.push(u32s(&|r| r.label[k]));
    }
    for k in 0..4 {
        cols.push(u32s(&|r| r.bbox[k]));
    }
    cols.push(u32s(&|r| r.colour));
    Ok(RecordBatch::try_new(marks_schema(), cols)?)
}

/// What [`run`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SomSummary {
    pub out_dir: PathBuf,
    pub config_hash: String,
    pub device: String,
    pub scenes: u64,
    pub images: u64,
    /// Of those, the images written as PNG files.
    pub images_written: u64,
    pub marks: u64,
    /// Labels that found no free place (see [`super::layout`]); 0 in practice.
    pub overlapping_labels: u64,
    /// Source images that could not be read or decoded, or whose size differs from
    /// `cameras.arrow`: skipped and listed in `rejects.jsonl`.
    pub rejected_images: u64,
}

impl fmt::Display for SomSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "som: {} scenes, {} marked images ({} written), {} marks in {} ({} device, config {})",
            self.scenes,
            self.images,
            self.images_written,
            self.marks,
            self.out_dir.display(),
            self.device,
            self.config_hash
        )?;
        if self.overlapping_labels > 0 {
            writeln!(
                f,
                "  {} labels found no free place and overlap",
                self.overlapping_labels
            )?;
        }
        if self.rejected_images > 0 {
            writeln!(
                f,
                "  {} unusable source images skipped (see {})",
                self.rejected_images,
                self.out_dir.join(LOG_FILE).display()
            )?;
        }
        Ok(())
    }
}

/// The stage name in reject logs.
pub(crate) const STAGE: &str = "som";

/// What became of one image with kept rows.
enum Marked {
    Done(Vec<MarkRow>, MarkedImage, u64),
    /// Its source image is unusable.
    Skipped(Reject),
}

/// What [`run`] marks, where, and with what.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The scene store (its source root holds the camera images).
    pub store: &'a Path,
    /// The store's visibility table: which objects each image keeps, their boxes and anchors.
    pub visibility: &'a Path,
    /// The output folder (`marks.arrow`, `<scene>/<camera_frame_id>.png`).
    pub out: &'a Path,
    pub config: &'a SomConfig,
    /// Where the marks are drawn (only with `images`).
    pub device: &'a Device,
    /// Only this scene.
    pub scene: Option<&'a str>,
    /// Also write the marked PNGs (the build leaves them to the release, which draws the
    /// published ones from `marked_images.arrow`).
    pub images: bool,
}

/// Marks every keyframe image with kept rows in the visibility table (see the module docs).
pub fn run(opts: &Options<'_>) -> Result<SomSummary> {
    let Options {
        store: store_dir,
        visibility: vis_file,
        out: out_dir,
        config: cfg,
        device,
        scene,
        images: images_out,
    } = *opts;
    crate::store::paths::disjoint(store_dir, "the store", out_dir, "the output")?;
    crate::store::paths::disjoint(vis_file, "the visibility table", out_dir, "the output")?;
    let store = Store::open(store_dir)?;
    let mut kept = KeptScenes::open(vis_file, Some(&cfg.anchor_rules()))?;
    let images = ImageReader::new(&store, None);
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(out_dir, OUTPUT)?;
    let _owned =
        crate::store::owner::Owned::claim(out_dir, OUTPUT, "marks.arrow and marked images")?;
    let marks_path = out_dir.join("marks.arrow");
    let mut writer = crate::store::atomic::ipc_writer(&marks_path, &marks_schema())?;
    let mut recipe_writer = recipe::Writer::create(&out_dir.join(recipe::FILE), &cfg.draw)?;
    let mut summary = SomSummary {
        out_dir: out_dir.to_path_buf(),
        config_hash: cfg.hash()?,
        device: device.name().into(),
        ..Default::default()
    };
    let gpu = device.gpu().filter(|_| images_out);
    let mut found_scene = false;
    let mut rejects = RejectLog::new();
    let pb = crate::progress::bar(store.meta().counts.scenes, "som");
    for data in store.scenes()? {
        let data = data?;
        let sid = data.scene.scene_id.clone();
        if scene.is_some_and(|s| s != sid) {
            pb.inc(1);
            continue;
        }
        found_scene = true;
        let cams: HashMap<&str, &CameraRow> = data
            .cameras
            .iter()
            .map(|c| (c.camera_frame_id.as_str(), c))
            .collect();
        let scene_images = kept::scene(&mut kept, &sid)?;
        let done: Vec<Marked> = scene_images
            .par_iter()
            .map(|image| {
                let id = &image.camera_frame_id;
                let cam = cams.get(id.as_str()).copied().ok_or_else(|| {
                    Error::invalid(
                        "--visibility",
                        format!(
                            "visibility table: kept rows of image {id} in scene {sid}, which \
                             this store does not have (wrong --store or --visibility?)"
                        ),
                    )
                })?;
                // One unusable image is skipped and recorded; the others go on.
                let img = match images.rgb_checked(cam) {
                    Ok(img) => img,
                    Err(e) => {
                        return Reject::bad_image(STAGE, &sid, id, &e)
                            .map(Marked::Skipped)
                            .ok_or(e)
                    }
                };
                let files = images_out.then_some(out_dir);
                let (r, m, overlapping) = mark_image(cam, &image.rows, img, cfg, gpu, files)?;
                Ok(Marked::Done(r, m, overlapping))
            })
            .collect::<Result<_>>()?;
        let mut rows: Vec<MarkRow> = Vec::new();
        let mut recipes: Vec<MarkedImage> = Vec::new();
        for m in done {
            match m {
                Marked::Done(r, m, overlapping) => {
                    summary.images += 1;
                    summary.images_written += u64::from(images_out);
                    recipes.push(m);
                    summary.marks += r.len() as u64;
                    summary.overlapping_labels += overlapping;
                    rows.extend(r);
                }
                Marked::Skipped(r) => {
                    summary.rejected_images += 1;
                    rejects.push(r);
                }
            }
        }
        writer.write(&to_batch(&rows)?)?;
        recipe_writer.write(&recipes)?;
        summary.scenes += 1;
        pb.inc(1);
    }
    pb.finish_and_clear();
    if let Some(s) = scene.filter(|_| !found_scene) {
        return Err(Error::not_found(store_dir, format!("scene {s}")));
    }
    writer.finish()?;
    writer.into_inner()?.commit()?;
    recipe_writer.finish()?;
    rejects.write(&out_dir.join(LOG_FILE))?;
    Ok(summary)
}

/// Marks one image: layout, and (given a folder) the drawn PNG. Returns its rows, its recipe
/// and the number of labels that overlap.
fn mark_image(
    cam: &CameraRow,
    kept: &[kept::Kept],
    img: image::RgbImage,
    cfg: &SomConfig,
    gpu: Option<&Gpu>,
    out_dir: Option<&Path>,
) -> Result<(Vec<MarkRow>, MarkedImage, u64)> {
    let (width, height) = (cam.width, cam.height);
    let rules = cfg.anchor_rules();
    let boxes: Vec<[u32; 4]> = kept
        .iter()
        .map(|k| rules.object_box(k.amodal, k.modal, width, height))
        .collect();
    // The table's anchor; the fallback rule for an object it has none for (nothing visible).
    let chosen: Vec<([u32; 2], AnchorRule)> = kept
        .iter()
        .zip(&boxes)
        .map(|(k, &b)| {
            k.anchor.unwrap_or_else(|| {
                let a = choose_anchor(None, k.visible_pixels, b, width, height, &cfg.anchor);
                ([a.anchor.x, a.anchor.y], a.rule)
            })
        })
        .collect();
    let ins: Vec<MarkIn> = kept
        .iter()
        .zip(&chosen)
        .map(|(k, (a, _))| MarkIn {
            anchor: *a,
            visible_pixels: k.visible_pixels,
        })
        .collect();
    let labels = layout(width, height, &ins, &cfg.draw, &cfg.layout)?;
    let draws: Vec<DrawMark> = boxes
        .iter()
        .zip(&labels)
        .map(|(&b, l)| DrawMark::new(b, l.rect, l.mark, mark_colour(l.mark)))
        .collect();
    let marked = MarkedImage {
        path: format!(
            "{}/{}.png",
            safe_name(&cam.scene_id),
            safe_name(&cam.camera_frame_id)
        ),
        scene_id: cam.scene_id.clone(),
        camera_frame_id: cam.camera_frame_id.clone(),
        width,
        height,
        marks: draws,
    };
    if let Some(dir) = out_dir {
        let bytes = recipe::render(&marked, &img, &cfg.draw, gpu)?;
        write_atomic(&dir.join(&marked.path), &bytes)?;
    }
    let overlapping = labels.iter().filter(|l| l.overlaps).count() as u64;
    let rows = kept
        .iter()
        .zip(&chosen)
        .zip(labels.iter().zip(&marked.marks))
        .map(|((k, (a, rule)), (l, d))| MarkRow {
            scene_id: cam.scene_id.clone(),
            frame_idx: cam.frame_idx,
            camera: cam.camera.clone(),
            camera_frame_id: cam.camera_frame_id.clone(),
            track_id: k.track_id.clone(),
            annotation_id: k.annotation_id.clone(),
            mark: l.mark,
            anchor: [f64::from(a[0]) + 0.5, f64::from(a[1]) + 0.5],
            anchor_rule: rule.as_str().to_string(),
            label: l.rect,
            bbox: d.bbox,
            colour: mark_colour(l.mark),
        })
        .collect();
    Ok((rows, marked, overlapping))
}
