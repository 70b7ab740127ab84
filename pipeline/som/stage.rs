//! `drivegen som`: the marked camera images and the marks table.
//!
//! For every keyframe camera image with kept rows in the visibility table, the stage
//! re-projects and re-rasterises the image exactly as [`crate::visibility`] does (so the
//! instance-ID map is the one the table was measured on), takes the anchors of the kept
//! objects under `configs/som.toml` ([`super::anchor`]), numbers and places their labels
//! ([`super::layout`]) and draws boxes and labels into the source image ([`super::draw`], on the
//! GPU when the rasteriser has one). It writes `<out>/marks.arrow` (`schemas/som/marks.json`:
//! one row per mark, one record batch per store scene, rows in image then mark order),
//! `<out>/marked_images.arrow` (what each marked image draws, [`super::recipe`]) and, when
//! asked for images, `<out>/<scene_id>/<camera_frame_id>.png` (lossless RGB, atomically).
//!
//! A kept row must name an object that projects into its image; otherwise the visibility
//! table does not belong to this store and the run stops with the row named. A missing or
//! unreadable source image, or one whose size differs from `cameras.arrow`, is skipped (no PNG,
//! no marks) and recorded with its path and the reason in `<out>/rejects.jsonl`; the other
//! images go on. Nothing is left half-written: PNGs, `marks.arrow` and the rejects log are
//! written atomically.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;

use super::config::{BoxKind, SomConfig};
use super::draw::DrawMark;
use super::font::mark_colour;
use super::layout::{layout, MarkIn};
use super::recipe::{self, MarkedImage};
use crate::config::StageConfig;
use crate::images::ImageReader;
use crate::store::atomic::write_atomic;
use crate::store::rejects::{Reject, RejectLog, LOG_FILE};
use crate::store::Store;
use crate::visibility::anchor::{choose_anchor, image_anchors};
use crate::visibility::config::VisibilityConfig;
use crate::visibility::output::safe_name;
use crate::visibility::raster::{RasterOut, Rasteriser};
use crate::visibility::{scene_images, ImageWork, VisibilitySummary};
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "Set-of-Mark output";

/// One row of `marks.arrow`.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkRow {
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
pub const STAGE: &str = "som";

/// What became of one image with kept rows.
enum Marked {
    Done(Vec<MarkRow>, MarkedImage, u64),
    /// Its source image is unusable.
    Skipped(Reject),
}

/// The kept rows of a visibility table: annotation ids by (scene, camera image), in row order.
type Kept = HashMap<(String, String), Vec<String>>;

fn read_kept(path: &Path) -> Result<Kept> {
    let mut kept = Kept::new();
    for r in crate::visibility::table::read_kept(path)? {
        kept.entry((r.scene_id, r.camera_frame_id))
            .or_default()
            .push(r.annotation_id);
    }
    Ok(kept)
}

/// What [`run`] marks, where, and with what.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The scene store (its source root holds the camera images).
    pub store: &'a Path,
    /// The store's visibility table: which objects each image keeps.
    pub visibility: &'a Path,
    /// The output folder (`marks.arrow`, `<scene>/<camera_frame_id>.png`).
    pub out: &'a Path,
    pub config: &'a SomConfig,
    /// The config the visibility table was made with: its projection settings decide the ID
    /// maps the anchors come from.
    pub visibility_config: &'a VisibilityConfig,
    /// The z-buffer, and with it the device the distance transform and drawing run on.
    pub rasteriser: &'a dyn Rasteriser,
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
        visibility_config: vis_cfg,
        rasteriser,
        scene,
        images: images_out,
    } = *opts;
    crate::store::paths::disjoint(store_dir, "the store", out_dir, "the output")?;
    crate::store::paths::disjoint(vis_file, "the visibility table", out_dir, "the output")?;
    let store = Store::open(store_dir)?;
    let kept = read_kept(vis_file)?;
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
        device: if rasteriser.gpu().is_some() {
            "gpu".into()
        } else {
            "cpu".into()
        },
        ..Default::default()
    };
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
        let mut rows: Vec<MarkRow> = Vec::new();
        let mut recipes: Vec<MarkedImage> = Vec::new();
        // The visibility stage's own bookkeeping; its rejects were reported by that stage.
        let (mut log, mut vis_summary) = (RejectLog::new(), VisibilitySummary::default());
        scene_images(
            &data,
            vis_cfg,
            rasteriser,
            &mut log,
            &mut vis_summary,
            |work, outs| {
                let done: Vec<Option<Marked>> = work
                    .par_iter()
                    .zip(outs)
                    .map(|(w, out)| {
                        let id = &w.cam.camera_frame_id;
                        let Some(anns) = kept.get(&(sid.clone(), id.clone())) else {
                            return Ok(None);
                        };
                        if anns.is_empty() {
                            return Ok(None);
                        }
                        // One unusable image is skipped and recorded; the others go on.
                        let img = match images.rgb_checked(w.cam) {
                            Ok(img) => img,
                            Err(e) => {
                                return Reject::bad_image(STAGE, &sid, id, &e)
                                    .map(|r| Some(Marked::Skipped(r)))
                                    .ok_or(e)
                            }
                        };
                        let files = images_out.then_some(out_dir);
                        let (r, m, overlapping) =
                            mark_image(w, out, anns, img, cfg, rasteriser, files)?;
                        Ok(Some(Marked::Done(r, m, overlapping)))
                    })
                    .collect::<Result<_>>()?;
                for m in done.into_iter().flatten() {
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
                Ok(())
            },
        )?;
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

/// The box of object `k` that is drawn and ringed, pixel edges inside the image.
fn object_box(w: &ImageWork<'_>, out: &RasterOut, k: usize, kind: BoxKind) -> [u32; 4] {
    let amodal = || {
        let a = w.objects[k].1.amodal;
        let clamp = |v: f64, n: u32| v.clamp(0.0, f64::from(n));
        [
            clamp(a[0].floor(), out.width) as u32,
            clamp(a[1].floor(), out.height) as u32,
            clamp(a[2].ceil(), out.width) as u32,
            clamp(a[3].ceil(), out.height) as u32,
        ]
    };
    match kind {
        BoxKind::Modal => out.objects[k].modal.unwrap_or_else(amodal),
        BoxKind::Amodal => amodal(),
    }
}

/// Marks one image: anchors, layout, and (given a folder) the drawn PNG. Returns its rows,
/// its recipe and the number of labels that overlap.
fn mark_image(
    w: &ImageWork<'_>,
    out: &RasterOut,
    anns: &[String],
    img: image::RgbImage,
    cfg: &SomConfig,
    rasteriser: &dyn Rasteriser,
    out_dir: Option<&Path>,
) -> Result<(Vec<MarkRow>, MarkedImage, u64)> {
    let cam = w.cam;
    let objs = kept_objects(w, anns)?;
    let boxes: Vec<Option<[u32; 4]>> = (0..w.objects.len())
        .map(|k| Some(object_box(w, out, k, cfg.draw.box_kind)))
        .collect();
    let anchors = image_anchors(rasteriser, out, &boxes, &cfg.anchor)?;
    let chosen: Vec<_> = objs
        .iter()
        .map(|&k| {
            let st = &out.objects[k];
            let b = object_box(w, out, k, cfg.draw.box_kind);
            anchors[k].unwrap_or_else(|| {
                choose_anchor(
                    None,
                    st.visible_pixels,
                    b,
                    out.width,
                    out.height,
                    &cfg.anchor,
                )
            })
        })
        .collect();
    let ins: Vec<MarkIn> = objs
        .iter()
        .zip(&chosen)
        .map(|(&k, a)| MarkIn {
            anchor: [a.anchor.x, a.anchor.y],
            visible_pixels: out.objects[k].visible_pixels,
        })
        .collect();
    let labels = layout(out.width, out.height, &ins, &cfg.draw, &cfg.layout)?;
    let draws: Vec<DrawMark> = objs
        .iter()
        .zip(&labels)
        .map(|(&k, l)| {
            DrawMark::new(
                object_box(w, out, k, cfg.draw.box_kind),
                l.rect,
                l.mark,
                mark_colour(l.mark),
            )
        })
        .collect();
    let marked = MarkedImage {
        path: format!(
            "{}/{}.png",
            safe_name(&cam.scene_id),
            safe_name(&cam.camera_frame_id)
        ),
        scene_id: cam.scene_id.clone(),
        camera_frame_id: cam.camera_frame_id.clone(),
        width: out.width,
        height: out.height,
        marks: draws,
    };
    if let Some(dir) = out_dir {
        let bytes = recipe::render(&marked, &img, &cfg.draw, rasteriser.gpu())?;
        write_atomic(&dir.join(&marked.path), &bytes)?;
    }
    let overlapping = labels.iter().filter(|l| l.overlaps).count() as u64;
    let rows = objs
        .iter()
        .zip(&chosen)
        .zip(labels.iter().zip(&marked.marks))
        .map(|((&k, a), (l, d))| {
            let o = w.objects[k].0;
            MarkRow {
                scene_id: cam.scene_id.clone(),
                frame_idx: cam.frame_idx,
                camera: cam.camera.clone(),
                camera_frame_id: cam.camera_frame_id.clone(),
                track_id: o.track_id.clone(),
                annotation_id: o.annotation_id.clone(),
                mark: l.mark,
                anchor: a.anchor.centre(),
                anchor_rule: a.rule.as_str().to_string(),
                label: l.rect,
                bbox: d.bbox,
                colour: mark_colour(l.mark),
            }
        })
        .collect();
    Ok((rows, marked, overlapping))
}

/// Indices (into `w.objects`) of the objects the visibility table keeps in this image, in
/// table order.
fn kept_objects(w: &ImageWork<'_>, anns: &[String]) -> Result<Vec<usize>> {
    let index: HashMap<&str, usize> = w
        .objects
        .iter()
        .enumerate()
        .map(|(k, (o, _))| (o.annotation_id.as_str(), k))
        .collect();
    anns.iter()
        .map(|a| {
            index.get(a.as_str()).copied().ok_or_else(|| {
                Error::invalid(
                    "--visibility",
                    format!(
                        "visibility table: kept row {a} in image {} does not project into it in \
                         this store (wrong --store or --visibility?)",
                        w.cam.camera_frame_id
                    ),
                )
            })
        })
        .collect()
}
