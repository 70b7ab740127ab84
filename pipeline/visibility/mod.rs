//! Box projection and z-buffer visibility: every annotated box projected into every keyframe
//! camera image of its frame, rasterised with a true z-buffer, measured and filtered.
//!
//! * [`project`]: the devkit's transform chain, near-plane clipping, amodal box, truncation.
//! * [`raster`]: the z-buffer rules and the CPU reference rasteriser behind the
//!   [`raster::Rasteriser`] seam (a GPU implementation plugs in there).
//! * [`filters`]: MetaVQA's selection thresholds; every row gets `kept` and the first failing
//!   `reject_reason`.
//! * [`output`]: the table (`schemas/visibility/visibility.json`) and the ID-map PNGs.
//!
//! `run` writes one Arrow IPC file with one record batch per store scene (in store order),
//! rows sorted by `frame_idx`, `camera`, `camera_frame_id`, then `annotation_id`. Only keyframe
//! camera images are used (the store annotates keyframes); sweeps are counted and skipped.
//! Camera images and boxes whose store rows are unusable (non-finite values, empty sizes, images
//! too large) are recorded in `<out>.rejects.jsonl` (the output's extension replaced) and
//! skipped. The anchor columns hold the Set-of-Mark label anchor ([`anchor`]) under the
//! anchor rules of the Set-of-Mark config the marks are drawn with ([`anchor::AnchorRules`],
//! recorded in the table's metadata; the built-in `configs/som.toml` by default), as
//! pixel-centre coordinates (`i + 0.5`, `j + 0.5`), and the rule that placed it: the visible
//! pixel farthest from its mask's boundary (exact EDT, 4-px image border excluded, first in
//! raster order on ties), or for objects under 1600 visible pixels the best point of the 20-px
//! ring outside their drawn box; null without visible pixels. The rasteriser computes it (the
//! GPU one on the device), identically on every path. This is the one place anchors are
//! computed: `drivegen som` and MetaVQA read them from the table.
//!
//! Scenes are streamed one at a time; within a scene, images are projected in parallel and
//! rasterised in batches of [`raster::Rasteriser::batch_size`], the next batch projected on the
//! CPU while the GPU rasterises this one, so at most two batches are in memory. An image's
//! triangles are rasterised in bounded chunks as they are made (`ImageWork`), so its memory
//! is its depth and id maps plus one chunk, whatever its box count (a face near a lens camera
//! alone can tessellate into millions of triangles). The output is byte-identical across runs
//! and thread counts.

pub mod anchor;
pub mod config;
pub mod distortion;
pub mod filters;
pub(crate) mod gpu;
pub(crate) mod output;
pub mod project;
pub mod raster;
pub mod table;

pub use gpu::GpuRasteriser;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use self::anchor::{AnchorRules, MarkAnchor};
use self::config::VisibilityConfig;
use self::filters::{FilterInput, RejectReason};
use self::output::VisRow;
use self::project::{project_box_into, BoxGeom, Camera, Projection};
use self::raster::{CpuRasteriser, Grid, RasterJob, RasterOut, Rasteriser, Tri, MAX_SIDE};
use crate::config::StageConfig;
use crate::store::rejects::{Reject, RejectLog};
use crate::store::{CameraRow, ObjectRow, SceneData, Store};
use crate::{Error, Result};

/// The stage name in reject logs.
pub(crate) const STAGE: &str = "visibility";

/// What [`run`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VisibilitySummary {
    pub out_file: PathBuf,
    pub rejects_file: PathBuf,
    pub config_hash: String,
    pub rasteriser: String,
    pub scenes: u64,
    /// Keyframe camera images processed.
    pub camera_images: u64,
    /// Non-keyframe images skipped.
    pub sweep_images: u64,
    pub rows: u64,
    pub kept: u64,
    /// Rows not kept, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// Store rows refused as unusable.
    pub invalid_cameras: u64,
    pub invalid_objects: u64,
}

impl fmt::Display for VisibilitySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "visibility: {} scenes, {} camera images → {} rows ({} kept) in {} ({} rasteriser, config {})",
            self.scenes,
            self.camera_images,
            self.rows,
            self.kept,
            self.out_file.display(),
            self.rasteriser,
            self.config_hash
        )?;
        if self.sweep_images > 0 {
            writeln!(f, "  skipped {} non-keyframe images", self.sweep_images)?;
        }
        let rejected: u64 = self.rejected.values().sum();
        if rejected > 0 {
            let parts: Vec<String> = RejectReason::ALL
                .iter()
                .filter_map(|r| self.rejected.get(r.as_str()).map(|n| format!("{r} {n}")))
                .collect();
            writeln!(f, "  not kept: {rejected} ({})", parts.join(", "))?;
        }
        if self.invalid_cameras + self.invalid_objects > 0 {
            writeln!(
                f,
                "  unusable store rows: {} camera images, {} boxes (see {})",
                self.invalid_cameras,
                self.invalid_objects,
                self.rejects_file.display()
            )?;
        }
        Ok(())
    }
}

/// The z-buffer on `device`: the GPU rasteriser on its GPU, else the CPU twin.
pub(crate) fn rasteriser(device: &crate::gpu::Device) -> Result<Box<dyn Rasteriser>> {
    match device.arc() {
        Some(g) => Ok(Box::new(GpuRasteriser::new(g)?)),
        None => Ok(Box::new(CpuRasteriser)),
    }
}

/// Where the rejects of a run writing `out_file` go: `out_file` with extension `rejects.jsonl`.
pub fn rejects_path(out_file: &Path) -> PathBuf {
    out_file.with_extension("rejects.jsonl")
}

/// What a visibility run reads and writes, with which settings and on which rasteriser.
pub struct Options<'a> {
    /// The canonical store to read.
    pub store: PathBuf,
    /// The visibility table to write; its rejects go beside it ([`rejects_path`]).
    pub out: PathBuf,
    /// Projection, filters and thresholds.
    pub config: VisibilityConfig,
    /// The z-buffer: [`CpuRasteriser`] by default, or what [`rasteriser`] opens.
    pub rasteriser: &'a dyn Rasteriser,
    /// Also write every image's instance-ID map to `<id_maps>/<scene_id>/<camera_frame_id>.png`
    /// ([`output::write_id_png`]).
    pub id_maps: Option<PathBuf>,
    /// The rules the Set-of-Mark anchors are placed under: those of the Set-of-Mark config the
    /// marks will be drawn with (the built-in one by default).
    pub anchor: AnchorRules,
}

impl Options<'static> {
    /// The store at `store` into the table `out` on the CPU twin, with the config at `config`
    /// (the built-in `configs/visibility.toml` when `None`).
    pub fn new(
        store: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
        config: Option<&Path>,
    ) -> Result<Self> {
        Ok(Self {
            store: store.into(),
            out: out.into(),
            config: VisibilityConfig::load(config)?,
            rasteriser: &CpuRasteriser,
            id_maps: None,
            anchor: AnchorRules::built_in()?,
        })
    }
}

/// Projects, rasterises and filters every box of the store in every keyframe camera image and
/// writes the table.
pub fn run(opts: &Options) -> Result<VisibilitySummary> {
    let (store_dir, out_file, cfg, rasteriser) = (
        opts.store.as_path(),
        opts.out.as_path(),
        &opts.config,
        opts.rasteriser,
    );
    let id_map_dir = opts.id_maps.as_deref();
    crate::store::paths::disjoint(store_dir, "the store", out_file, "the output")?;
    if let Some(d) = id_map_dir {
        crate::store::paths::disjoint(store_dir, "the store", d, "the id-map folder")?;
    }
    let store = Store::open(store_dir)?;
    crate::store::owner::file_output(out_file)?;
    crate::store::owner::file_output(&rejects_path(out_file))?;
    let _id_maps = id_map_dir
        .map(|d| {
            // An earlier run's maps of frames this run no longer writes must not stay behind.
            crate::store::rerun::clear_earlier_run(d, "id-map folder")?;
            crate::store::owner::Owned::claim(d, "id-map folder", "instance-ID maps")
        })
        .transpose()?;
    let anchor_rules = &opts.anchor;
    let schema = output::schema_with_rules(anchor_rules);
    let mut writer = crate::store::atomic::ipc_writer(out_file, &schema)?;
    let mut log = RejectLog::new();
    let mut summary = VisibilitySummary {
        out_file: out_file.to_path_buf(),
        rejects_file: rejects_path(out_file),
        config_hash: cfg.hash()?,
        rasteriser: rasteriser.name().to_string(),
        ..Default::default()
    };
    let pb = crate::progress::bar(store.meta().counts.scenes, "visibility");
    for scene in store.scenes()? {
        let scene = scene?;
        let rows = scene_rows(
            &scene,
            cfg,
            anchor_rules,
            rasteriser,
            id_map_dir,
            &mut log,
            &mut summary,
        )?;
        for r in &rows {
            match r.reject_reason {
                None => summary.kept += 1,
                Some(why) => {
                    *summary
                        .rejected
                        .entry(why.as_str().to_string())
                        .or_default() += 1
                }
            }
        }
        summary.rows += rows.len() as u64;
        summary.scenes += 1;
        writer.write(&output::to_batch(&rows)?)?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    writer.finish()?;
    writer.into_inner()?.commit()?;
    log.write(&summary.rejects_file)?;
    Ok(summary)
}

fn reject(scene: &str, item: &str, file: &str, reason: String) -> Reject {
    Reject {
        stage: STAGE.into(),
        scene_id: Some(scene.to_string()),
        item: Some(item.to_string()),
        file: Some(file.to_string()),
        record: Some(item.to_string()),
        reason,
    }
}

/// Triangles an image gathers before they are rasterised as one chunk: with
/// [`CHUNK_BOX_PIXELS`], what bounds the memory of an image whatever its box count.
pub(crate) const CHUNK_TRIS: usize = 1 << 18;

/// Bounding-box pixels (summed over a chunk's triangles) after which the chunk is rasterised:
/// what the GPU's work items and a chunk's z-test stay within, whatever the boxes' sizes.
pub(crate) const CHUNK_BOX_PIXELS: u64 = 1 << 27;

/// One keyframe image with the boxes of its frame projected into it.
///
/// An image whose boxes give more than [`CHUNK_TRIS`] triangles (or [`CHUNK_BOX_PIXELS`]) is
/// rasterised in chunks of whole objects as it is projected, so its triangles never all exist
/// at once: each chunk's instance-ID map and depth keys are merged into the image's, pixel by
/// pixel (the smaller depth key, then the smaller object, which is rules 9 and 10 over all the
/// triangles), its objects' projected pixels kept (an object is never split), and the visible
/// pixels counted once on the merged map. The result is the one rasterising every triangle at
/// once gives.
pub(crate) struct ImageWork<'a> {
    pub cam: &'a CameraRow,
    /// In row order (by `annotation_id`); object `k` of the raster output. Their triangles
    /// (`Projection::tris`) have gone to the rasteriser and are empty here.
    pub objects: Vec<(&'a ObjectRow, Projection)>,
    /// The triangles of the last chunk, still to rasterise.
    pub tris: Vec<Tri>,
    /// What the earlier chunks gave.
    done: Option<RasterOut>,
    /// Objects whose triangles went to more than one chunk, with their projected pixels.
    split: Vec<(u32, u32)>,
}

impl<'a> ImageWork<'a> {
    /// Projects `boxes` into the image `cam` of `row`, rasterising full chunks on the way.
    fn project(
        row: &'a CameraRow,
        cam: &Camera,
        boxes: &[(&'a ObjectRow, BoxGeom)],
        near: f64,
        rasteriser: &dyn Rasteriser,
    ) -> Result<Self> {
        Self::project_in_chunks(
            row,
            cam,
            boxes,
            near,
            rasteriser,
            (CHUNK_TRIS, CHUNK_BOX_PIXELS),
        )
    }

    /// [`ImageWork::project`] with chunks of at most `limits` (triangles, box pixels).
    fn project_in_chunks(
        row: &'a CameraRow,
        cam: &Camera,
        boxes: &[(&'a ObjectRow, BoxGeom)],
        near: f64,
        rasteriser: &dyn Rasteriser,
        (chunk_tris, chunk_box_pixels): (usize, u64),
    ) -> Result<Self> {
        let mut w = ImageWork {
            cam: row,
            objects: Vec::new(),
            tris: Vec::new(),
            done: None,
            split: Vec::new(),
        };
        let mut box_pixels = 0u64;
        let mut cover: Option<Coverage> = None;
        for (o, b) in boxes {
            let k = w.objects.len() as u32;
            // Where object k's triangles start in the chunk held, and whether some of them
            // went with an earlier chunk.
            let (mut start, mut split) = (w.tris.len(), false);
            let mut failed = None;
            let p = project_box_into(cam, b, near, &mut |t| {
                if failed.is_some() {
                    return;
                }
                let pixels = bbox_pixels(&t, cam);
                if !w.tris.is_empty()
                    && (w.tris.len() >= chunk_tris || box_pixels + pixels > chunk_box_pixels)
                {
                    // Object k goes on in the next chunk: what it has in this one is counted
                    // towards its own union now.
                    split |= start < w.tris.len();
                    let flushed = Coverage::add_to(&mut cover, row, &w.tris[start..])
                        .and_then(|()| w.flush(rasteriser, k + 1));
                    if let Err(e) = flushed {
                        failed = Some(e);
                        return;
                    }
                    (start, box_pixels) = (0, 0);
                }
                box_pixels += pixels;
                w.tris.push(project::raster_tri(&t, k));
            });
            if let Some(e) = failed {
                return Err(e);
            }
            let Some(p) = p else {
                if split || w.tris.len() > start {
                    return Err(Error::Internal(format!(
                        "visibility: box {} gave triangles but no projection",
                        o.annotation_id
                    )));
                }
                continue;
            };
            if split {
                Coverage::add_to(&mut cover, row, &w.tris[start..])?;
                if let Some(c) = cover.as_mut() {
                    w.split.push((k, c.take()));
                }
            }
            w.objects.push((*o, p));
        }
        Ok(w)
    }

    /// The raster job of the triangles held, for objects `0..num_objects`.
    fn job_of(&self, num_objects: u32) -> RasterJob<'_> {
        RasterJob {
            width: self.cam.width,
            height: self.cam.height,
            num_objects,
            tris: &self.tris,
            // The anchors need the instance-ID maps (and chunks are merged through them).
            want_maps: true,
        }
    }

    /// The raster job of the triangles still held.
    fn job(&self) -> RasterJob<'_> {
        self.job_of(self.objects.len() as u32)
    }

    /// Rasterises the triangles held (of objects `0..num_objects`) as a chunk and merges the
    /// result into `done`.
    fn flush(&mut self, rasteriser: &dyn Rasteriser, num_objects: u32) -> Result<()> {
        let out = rasteriser.raster(&self.job_of(num_objects))?;
        self.tris.clear();
        self.done = Some(match self.done.take() {
            Some(done) => raster::merge_chunks(done, out)?,
            None => out,
        });
        Ok(())
    }

    /// The whole image's result from the last chunk's.
    fn finish(&mut self, last: RasterOut) -> Result<RasterOut> {
        let mut out = match self.done.take() {
            Some(done) => raster::merge_chunks(done, last)?,
            None => last,
        };
        // A split object's chunks each counted their own part; its union was counted here.
        for &(k, n) in &self.split {
            if let Some(o) = out.objects.get_mut(k as usize) {
                o.projected_pixels = n;
            }
        }
        Ok(out)
    }
}

/// The pixels an object's triangles cover, gathered across chunks (rules 1–6, the pixels
/// [`raster::for_each_span_in`] gives): a bit per pixel, counted as it is first set.
struct Coverage {
    grid: Grid,
    bits: Vec<u64>,
    count: u32,
}

impl Coverage {
    /// Adds `tris` to the coverage of the image of `row`, made when first needed.
    fn add_to(cover: &mut Option<Coverage>, row: &CameraRow, tris: &[Tri]) -> Result<()> {
        if cover.is_none() {
            let grid = Grid::new(row.width, row.height)?;
            let words = (row.width as usize * row.height as usize).div_ceil(64);
            *cover = Some(Coverage {
                grid,
                bits: vec![0; words],
                count: 0,
            });
        }
        if let Some(c) = cover.as_mut() {
            for t in tris {
                let Some(s) = raster::setup(&c.grid, t) else {
                    continue;
                };
                let (g, bits, count) = (&c.grid, &mut c.bits, &mut c.count);
                raster::for_each_span_in(g, &s, s.j0, s.j1, |j, lo, hi| {
                    let row = j as usize * g.width as usize;
                    for p in row + lo as usize..=row + hi as usize {
                        let (word, bit) = (p / 64, 1u64 << (p % 64));
                        *count += u32::from(bits[word] & bit == 0);
                        bits[word] |= bit;
                    }
                });
            }
        }
        Ok(())
    }

    /// The count so far; clears for the next object.
    fn take(&mut self) -> u32 {
        self.bits.fill(0);
        std::mem::take(&mut self.count)
    }
}

/// An upper bound of the pixels of a triangle's bounding box in the image (0 for a triangle
/// the rasteriser will drop as not finite).
fn bbox_pixels(t: &[[f64; 3]; 3], cam: &Camera) -> u64 {
    let side = |k: usize, n: u32| -> u64 {
        let (lo, hi) = t
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v[k]), hi.max(v[k]))
            });
        if !(lo.is_finite() && hi.is_finite()) {
            return 0;
        }
        let n = f64::from(n);
        (hi.clamp(0.0, n).ceil() - lo.clamp(0.0, n).floor()) as u64 + 1
    };
    side(0, cam.width) * side(1, cam.height)
}

/// The rows of one scene.
fn scene_rows(
    scene: &SceneData,
    cfg: &VisibilityConfig,
    rules: &AnchorRules,
    rasteriser: &dyn Rasteriser,
    id_map_dir: Option<&Path>,
    log: &mut RejectLog,
    summary: &mut VisibilitySummary,
) -> Result<Vec<VisRow>> {
    let sid = &scene.scene.scene_id;
    let mut rows = Vec::new();
    scene_images(scene, cfg, rasteriser, log, summary, |work, outs| {
        let anchors: Vec<Vec<Option<MarkAnchor>>> = work
            .par_iter()
            .zip(outs)
            .map(|(w, out)| {
                // Objects with no visible pixel get no anchor (`image_anchors`), whatever box.
                let boxes: Vec<Option<[u32; 4]>> = w
                    .objects
                    .iter()
                    .zip(&out.objects)
                    .map(|((_, p), st)| {
                        st.modal?;
                        Some(rules.object_box(p.amodal, st.modal, out.width, out.height))
                    })
                    .collect();
                anchor::image_anchors(rasteriser, out, &boxes, &rules.anchor)
            })
            .collect::<Result<_>>()?;
        for ((w, out), anchors) in work.iter().zip(outs).zip(&anchors) {
            if let Some(dir) = id_map_dir {
                let path = dir
                    .join(output::safe_name(sid))
                    .join(format!("{}.png", output::safe_name(&w.cam.camera_frame_id)));
                output::write_id_png(&path, out)?;
            }
            image_rows(w, out, anchors, cfg, &mut rows)?;
        }
        Ok(())
    })?;
    Ok(rows)
}

/// Projects every usable box of `scene` into every usable keyframe camera image (sorted by
/// frame, camera, image id) and rasterises them, ID maps included, in batches of
/// [`Rasteriser::batch_size`]; `each` gets every batch. Unusable store rows are logged and
/// counted in `summary`, which also counts the images.
fn scene_images(
    scene: &SceneData,
    cfg: &VisibilityConfig,
    rasteriser: &dyn Rasteriser,
    log: &mut RejectLog,
    summary: &mut VisibilitySummary,
    mut each: impl FnMut(&[ImageWork<'_>], &[RasterOut]) -> Result<()>,
) -> Result<()> {
    let sid = &scene.scene.scene_id;
    // Usable boxes by frame, sorted by annotation id (ties keep store order).
    let mut by_frame: BTreeMap<u32, Vec<(&ObjectRow, BoxGeom)>> = BTreeMap::new();
    for o in &scene.objects {
        match BoxGeom::from_row(o) {
            Ok(b) => by_frame.entry(o.frame_idx).or_default().push((o, b)),
            Err(why) => {
                summary.invalid_objects += 1;
                log.push(reject(
                    sid,
                    &o.annotation_id,
                    "objects.arrow",
                    format!("unusable box: {why}"),
                ));
            }
        }
    }
    for v in by_frame.values_mut() {
        v.sort_by(|a, b| a.0.annotation_id.cmp(&b.0.annotation_id));
    }
    let mut cams: Vec<(&CameraRow, Camera)> = Vec::new();
    for c in &scene.cameras {
        if !c.is_keyframe {
            summary.sweep_images += 1;
            continue;
        }
        let pixels = u64::from(c.width) * u64::from(c.height);
        let checked = if c.width.max(c.height) > MAX_SIDE || pixels > cfg.raster.max_image_pixels {
            Err(format!(
                "image size {}×{} exceeds the limits ({MAX_SIDE} px a side, {} pixels)",
                c.width, c.height, cfg.raster.max_image_pixels
            ))
        } else {
            Camera::from_row(c)
                .map(|m| m.with_lens_tolerance(cfg.projection.lens_chord_tolerance_px))
        };
        match checked {
            Ok(m) => cams.push((c, m)),
            Err(why) => {
                summary.invalid_cameras += 1;
                log.push(reject(
                    sid,
                    &c.camera_frame_id,
                    "cameras.arrow",
                    format!("unusable camera image: {why}"),
                ));
            }
        }
    }
    cams.sort_by(|a, b| {
        (a.0.frame_idx, &a.0.camera, &a.0.camera_frame_id).cmp(&(
            b.0.frame_idx,
            &b.0.camera,
            &b.0.camera_frame_id,
        ))
    });
    summary.camera_images += cams.len() as u64;
    let near = cfg.projection.near_m;
    let project = |chunk| project_batch(chunk, &by_frame, near, rasteriser);
    let raster = |work: &[ImageWork<'_>]| -> Result<Vec<RasterOut>> {
        let jobs: Vec<RasterJob<'_>> = work.iter().map(ImageWork::job).collect();
        let outs = rasteriser.raster_batch(&jobs)?;
        if outs.len() != work.len() {
            return Err(Error::Gpu {
                kernel: rasteriser.name().to_string(),
                detail: format!("returned {} results for {} images", outs.len(), work.len()),
            });
        }
        Ok(outs)
    };
    // Two batches in flight: the next batch is projected on the CPU pool while this one is
    // rasterised (on the GPU where there is one), and only then handed to `each`, in order.
    let mut chunks = cams.chunks(rasteriser.batch_size().max(1));
    let mut next = chunks.next().map(project).transpose()?;
    while let Some(mut work) = next.take() {
        let (outs, ahead) = rayon::join(|| raster(&work), || chunks.next().map(project));
        next = ahead.transpose()?;
        let outs = work
            .iter_mut()
            .zip(outs?)
            .map(|(w, out)| w.finish(out))
            .collect::<Result<Vec<_>>>()?;
        // The triangles are done with; only the objects and the maps go on.
        for w in &mut work {
            w.tris = Vec::new();
        }
        each(&work, &outs)?;
    }
    Ok(())
}

/// The boxes of their frames projected into a batch of camera images, in parallel (images
/// with many triangles rasterised in part on the way, see [`ImageWork`]).
fn project_batch<'a>(
    chunk: &[(&'a CameraRow, Camera)],
    by_frame: &BTreeMap<u32, Vec<(&'a ObjectRow, BoxGeom)>>,
    near: f64,
    rasteriser: &dyn Rasteriser,
) -> Result<Vec<ImageWork<'a>>> {
    chunk
        .par_iter()
        .map(|(row, cam)| {
            let boxes = by_frame.get(&row.frame_idx).map_or(&[][..], Vec::as_slice);
            ImageWork::project(row, cam, boxes, near, rasteriser)
        })
        .collect()
}

/// Appends the rows of one image.
fn image_rows(
    w: &ImageWork<'_>,
    out: &RasterOut,
    anchors: &[Option<MarkAnchor>],
    cfg: &VisibilityConfig,
    rows: &mut Vec<VisRow>,
) -> Result<()> {
    if out.objects.len() != w.objects.len() {
        return Err(Error::Gpu {
            kernel: "raster".into(),
            detail: format!(
                "returned {} object stats for {} objects",
                out.objects.len(),
                w.objects.len()
            ),
        });
    }
    if anchors.len() != w.objects.len() {
        return Err(Error::Gpu {
            kernel: "som_anchor".into(),
            detail: format!(
                "returned {} anchors for {} objects",
                anchors.len(),
                w.objects.len()
            ),
        });
    }
    for (((o, p), st), anchor) in w.objects.iter().zip(&out.objects).zip(anchors) {
        let visible_fraction = st.visible_fraction();
        let reason = filters::evaluate(
            &cfg.filters,
            &FilterInput {
                category: &o.category,
                visibility_bin: o.visibility_bin,
                num_lidar_pts: o.num_lidar_pts,
                distance_m: p.distance_m,
                truncation: p.truncation,
                visible_pixels: st.visible_pixels,
                visible_fraction,
            },
        );
        rows.push(VisRow {
            scene_id: w.cam.scene_id.clone(),
            frame_idx: w.cam.frame_idx,
            camera: w.cam.camera.clone(),
            camera_frame_id: w.cam.camera_frame_id.clone(),
            track_id: o.track_id.clone(),
            annotation_id: o.annotation_id.clone(),
            corners_px: p.corners_px,
            amodal: p.amodal,
            truncation: p.truncation,
            projected_pixels: st.projected_pixels,
            visible_pixels: st.visible_pixels,
            visible_fraction,
            modal: st.modal.map(|m| m.map(f64::from)),
            depth_m: p.depth_m,
            distance_m: p.distance_m,
            anchor: anchor.map(|a| a.anchor.centre()),
            anchor_rule: anchor.map(|a| a.rule),
            kept: reason.is_none(),
            reject_reason: reason,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks of any size, split objects included, give what one pass over all the triangles
    /// gives: boxes around a lens camera (some through its near plane, so they tessellate
    /// finely), cut into chunks of a few triangles up to all of them.
    #[test]
    fn chunked_images_equal_one_pass() {
        let row = CameraRow {
            width: 160,
            height: 90,
            fx: 126.6,
            fy: 126.6,
            cx: 81.6,
            cy: 49.1,
            cam: crate::store::Pose {
                t: [1.7, 0.0, 1.5],
                q: [0.5, -0.5, 0.5, -0.5],
            },
            ego: crate::store::Pose {
                t: [100.0, 200.0, 0.0],
                q: [1.0, 0.0, 0.0, 0.0],
            },
            distortion: Some(crate::synth::waymo::DEFAULT_DISTORTION),
            ..Default::default()
        };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 1_000_000) as f64 / 1_000_000.0
        };
        let rows: Vec<ObjectRow> = (0..40)
            .map(|k| ObjectRow {
                annotation_id: format!("b{k:02}"),
                center: [
                    100.0 + next() * 30.0 - 2.0,
                    200.0 + next() * 16.0 - 8.0,
                    0.9,
                ],
                size_wlh: [0.5 + next() * 2.0, 0.5 + next() * 5.0, 0.5 + next() * 2.0],
                q: crate::geometry::quat_from_yaw(next() * 6.0),
                ..Default::default()
            })
            .collect();
        let boxes: Vec<(&ObjectRow, BoxGeom)> = rows
            .iter()
            .map(|o| (o, BoxGeom::from_row(o).unwrap()))
            .collect();
        for with_lens in [true, false] {
            let row = CameraRow {
                distortion: row.distortion.filter(|_| with_lens),
                ..row.clone()
            };
            let cam = Camera::from_row(&row).unwrap();
            let r = CpuRasteriser;
            let whole =
                ImageWork::project_in_chunks(&row, &cam, &boxes, 0.1, &r, (usize::MAX, u64::MAX))
                    .unwrap();
            assert!(whole.done.is_none());
            let want = r.raster(&whole.job()).unwrap();
            assert!(want.objects.iter().filter(|o| o.visible_pixels > 0).count() > 5);
            let mut splits = 0;
            let n = whole.tris.len();
            for limits in [
                (n / 3 + 1, u64::MAX),
                (n / 40 + 1, u64::MAX),
                (n / 40 + 1, 20_000),
            ] {
                let mut w =
                    ImageWork::project_in_chunks(&row, &cam, &boxes, 0.1, &r, limits).unwrap();
                assert!(w.done.is_some(), "{limits:?}: no chunks");
                splits += w.split.len();
                let last = r.raster(&w.job()).unwrap();
                let got = w.finish(last).unwrap();
                assert_eq!(got, want, "lens {with_lens}, chunks of {limits:?}");
                assert_eq!(w.objects.len(), whole.objects.len());
            }
            assert!(splits > 0, "no object was split");
        }
    }
}
