//! SIG (`docs/sigbench.md`): a 10×10 bird's-eye grid per kept keyframe camera image, built
//! from the 3D boxes the visibility table keeps, with directional and proximal relations and
//! questions (family `sig`). The SIG metrics (MLSM, SRGS, SRD) are in [`crate::score::sig`].
//!
//! `drivegen sig --store STORE --visibility FILE --out DIR` writes `DIR/sig_frames.arrow` (one
//! row per image: SIG JSON, objects, relations, grid settings) and `DIR/sig_qa.arrow`.

pub mod config;
pub mod frame;
pub mod grid;
pub mod output;
pub mod qa;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

pub use config::SigConfig;
pub use frame::{SigFrame, SigObject};

use crate::config::StageConfig;
use crate::store::{CameraRow, ObjectRow, SceneData, Store};
use crate::visibility::table::KeptScenes;
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "SIG output";

pub const FRAMES_FILE: &str = "sig_frames.arrow";
pub const QA_FILE: &str = "sig_qa.arrow";

#[derive(Debug, Clone)]
pub struct Options {
    pub store: PathBuf,
    pub visibility: PathBuf,
    pub out: PathBuf,
    pub config: SigConfig,
    pub seed: u64,
}

#[derive(Debug, Clone, Default)]
pub struct SigSummary {
    pub out_dir: PathBuf,
    pub config_hash: String,
    pub images: u64,
    pub vehicles: u64,
    pub outside_grid: u64,
    pub small_boxes: u64,
    pub relations: u64,
    pub questions: u64,
}

impl fmt::Display for SigSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The first line is the build's step detail: it says what the stage made.
        writeln!(
            f,
            "sig: {} questions on {} images in {}",
            self.questions,
            self.images,
            self.out_dir.display()
        )?;
        writeln!(
            f,
            "  {} images, {} vehicles on the grid ({} outside it, {} boxes too small), {} relations, {} questions; config {}",
            self.images, self.vehicles, self.outside_grid, self.small_boxes, self.relations, self.questions, self.config_hash
        )
    }
}

/// A kept row of the visibility table.
#[derive(Debug, Clone)]
struct Kept {
    frame_idx: u32,
    camera: String,
    camera_frame_id: String,
    annotation_id: String,
    /// `[x0, y0, x1, y1]`: modal box, else the amodal box.
    bbox: [f64; 4],
}

/// The kept rows of `scene_id` in the visibility table.
fn scene_kept(table: &mut KeptScenes, scene_id: &str) -> Result<Vec<Kept>> {
    Ok(table
        .scene(scene_id)?
        .into_iter()
        .map(|r| Kept {
            // A null in the (non-nullable) amodal box reads as 0, as the table's null slots do.
            bbox: r.modal.or(r.amodal).unwrap_or_default(),
            frame_idx: r.frame_idx,
            camera: r.camera,
            camera_frame_id: r.camera_frame_id,
            annotation_id: r.annotation_id,
        })
        .collect())
}

/// The box centre in the camera frame: (x right, z forward).
pub(crate) fn camera_ground(cam: &CameraRow, o: &ObjectRow) -> (f64, f64) {
    let p = nalgebra::Point3::new(o.center[0], o.center[1], o.center[2]);
    let in_ego = cam.ego.isometry().inverse_transform_point(&p);
    let c = cam.cam.isometry().inverse_transform_point(&in_ego);
    (c.x, c.z)
}

/// Builds the SIG of every kept keyframe camera image and writes both tables.
pub fn run(opts: &Options) -> Result<SigSummary> {
    let cfg = &opts.config;
    crate::store::paths::disjoint(&opts.store, "the store", &opts.out, "the output")?;
    crate::store::paths::disjoint(
        &opts.visibility,
        "the visibility table",
        &opts.out,
        "the output",
    )?;
    let store = Store::open(&opts.store)?;
    let mut kept = KeptScenes::open(&opts.visibility, None)?;
    let config_hash = cfg.hash()?;
    let mut summary = SigSummary {
        out_dir: opts.out.clone(),
        config_hash: config_hash.clone(),
        ..Default::default()
    };
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(&opts.out, OUTPUT)?;
    let _owned = crate::store::owner::Owned::claim(&opts.out, OUTPUT, "the scene-graph tables")?;
    let mut fw =
        crate::store::atomic::ipc_writer(&opts.out.join(FRAMES_FILE), &output::frames_schema())?;
    let mut qw = crate::store::atomic::ipc_writer(&opts.out.join(QA_FILE), &output::qa_schema())?;
    let mut tally = crate::qa::ipc::Tally::default();
    let grid = frame::grid_json(cfg).to_string();
    let pb = crate::progress::bar(store.meta().counts.scenes, "sig");
    for scene in store.scenes()? {
        let scene = scene?;
        let rows = scene_kept(&mut kept, &scene.scene.scene_id)?;
        let (frames, questions) =
            scene_rows(opts, &store, &rows, &config_hash, &scene, &mut summary)?;
        fw.write(&output::frames_batch(&frames, &grid)?)?;
        qw.write(&output::qa_batch(&questions)?)?;
        tally.add(questions.iter().map(|q| &q.record));
        pb.inc(1);
    }
    pb.finish_and_clear();
    fw.finish()?;
    fw.into_inner()?.commit()?;
    qw.finish()?;
    qw.into_inner()?.commit()?;
    tally.log(&opts.out.join(QA_FILE));
    Ok(summary)
}

/// The frame rows and questions of one scene, one SIG per kept image, in (frame, camera)
/// order; counts what it builds in `summary`.
fn scene_rows(
    opts: &Options,
    store: &Store,
    kept: &[Kept],
    config_hash: &str,
    scene: &SceneData,
    summary: &mut SigSummary,
) -> Result<(Vec<output::FrameRow>, Vec<qa::SigQuestion>)> {
    let cfg = &opts.config;
    let sid = scene.scene.scene_id.clone();
    let source = if scene.scene.source.is_empty() {
        store.meta().source.clone()
    } else {
        scene.scene.source.clone()
    };
    let objects: HashMap<&str, &ObjectRow> = scene
        .objects
        .iter()
        .map(|o| (o.annotation_id.as_str(), o))
        .collect();
    let cams: HashMap<&str, &CameraRow> = scene
        .cameras
        .iter()
        .map(|c| (c.camera_frame_id.as_str(), c))
        .collect();
    // Images in (frame, camera) order; rows of an image in table order.
    let mut images: Vec<(u32, String, String)> = Vec::new();
    let mut rows_of: HashMap<String, Vec<&Kept>> = HashMap::new();
    for k in kept {
        let e = rows_of.entry(k.camera_frame_id.clone()).or_default();
        if e.is_empty() {
            images.push((k.frame_idx, k.camera.clone(), k.camera_frame_id.clone()));
        }
        e.push(k);
    }
    images.sort();
    let mut frames = Vec::new();
    let mut questions = Vec::new();
    for (frame_idx, camera, image) in images {
        let Some(cam) = cams.get(image.as_str()) else {
            return Err(Error::input(
                &opts.visibility,
                format!("image {image}"),
                format!("not a camera image of scene {sid} in this store (wrong --store?)"),
            ));
        };
        let cands = candidates(opts, &sid, cam, &rows_of[&image], &objects, summary)?;
        let sig = frame::build(cfg, &cands);
        summary.images += 1;
        summary.vehicles += sig.objects.len() as u64;
        summary.outside_grid += u64::from(sig.outside);
        summary.relations += sig.relations.len() as u64;
        let img = qa::ImageRef {
            source: &source,
            scene_id: &sid,
            frame_idx,
            camera: &camera,
            camera_frame_id: &image,
        };
        let qs = qa::frame_questions(cfg, &img, &sig, opts.seed, config_hash)?;
        summary.questions += qs.len() as u64;
        questions.extend(qs);
        frames.push(output::FrameRow {
            scene_id: sid.clone(),
            frame_idx,
            camera,
            camera_frame_id: image,
            source: source.clone(),
            sig,
        });
    }
    Ok((frames, questions))
}

/// The objects of one image (`rows`, its kept rows) placed in the camera frame, leaving out
/// those whose box clipped to the image is under the configured area; the ones left out of a
/// configured type are counted in `summary.small_boxes`.
fn candidates(
    opts: &Options,
    sid: &str,
    cam: &CameraRow,
    rows: &[&Kept],
    objects: &HashMap<&str, &ObjectRow>,
    summary: &mut SigSummary,
) -> Result<Vec<frame::Candidate>> {
    let cfg = &opts.config;
    let mut cands = Vec::new();
    for k in rows {
        let Some(o) = objects.get(k.annotation_id.as_str()) else {
            return Err(Error::input(
                &opts.visibility,
                format!("annotation {}", k.annotation_id),
                format!("not an object of scene {sid} in this store"),
            ));
        };
        let b = k.bbox;
        let (x0, x1) = (b[0].max(0.0), b[2].min(f64::from(cam.width)));
        let (y0, y1) = (b[1].max(0.0), b[3].min(f64::from(cam.height)));
        if (x1 - x0).max(0.0) * (y1 - y0).max(0.0) < cfg.objects.min_box_area_px {
            if cfg.objects.types.contains_key(&o.class) {
                summary.small_boxes += 1;
            }
            continue;
        }
        let (lateral, forward) = camera_ground(cam, o);
        cands.push(frame::Candidate {
            track_id: o.track_id.clone(),
            class: o.class.clone(),
            colour: None,
            lateral_m: lateral,
            forward_m: forward,
            u: 0.5 * (x0 + x1),
        });
    }
    Ok(cands)
}
