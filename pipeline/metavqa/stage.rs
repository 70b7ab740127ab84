//! `drivegen metavqa`: scene graphs, questions, Set-of-Mark images and `metavqa_qa.arrow`.
//!
//! For every keyframe camera image with kept rows in the visibility table, the stage builds
//! the image's [`SceneGraph`] from the store (`frames.arrow` ego pose, `objects.arrow` boxes),
//! draws its questions ([`super::questions`]), caps them at `per_frame` by type weight, numbers
//! the labels of the question set (`docs/metavqa.md` §3.3) and writes the records. Three kinds of
//! image go with them, under `images/<scene_id>/<camera_frame_id>_…png`:
//!
//! * `_full.png`: every kept object labelled by its index 0..N−1, for the types that ask
//!   about all labels (identify_closest … backmost, describe_sector, describe_distance,
//!   describe_scenario);
//! * `_qa.png`: only the objects the image's other questions refer to, renumbered 0..k−1 in
//!   full-label order (the published code used set order, which is not reproducible);
//! * `_g<k>.png`: grounding question k, every object with a random label from
//!   0..`grounding_labels`, the target boxed in white.
//!
//! `embodied_distance` and `embodied_sideness` do not depend on the image; their `image` is
//! empty (the unmarked source image in `cameras`/`camera_frame_ids`). Output:
//! `OUT/metavqa_qa.arrow` (the common QA record plus `image`, one record batch per store
//! scene), `OUT/marked_images.arrow` (what each image draws, [`crate::som::recipe`]: the
//! release draws the published ones from it), `OUT/rollouts.json` (the rollout table and its
//! parameters) and, when asked for, the images. Same
//! inputs, config and seed give byte-identical files, with or without the GPU. A camera image
//! whose source is missing, undecodable or of the wrong size loses its questions (they would
//! show marks that cannot be drawn) and is recorded in `OUT/rejects.jsonl`; the rest go on.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::config::MetavqaConfig;
use super::graph::{ego_quad, Node, SceneGraph};
use super::input::{scene_kept, KeptRow};
use super::marks::{self, MarkSpec};
use super::questions::{generate, Draft, Labels, Skips};
use super::rollout::Rollouts;
use super::templates::{refs, render};
use super::types::QuestionType;
use crate::config::StageConfig;
use crate::gpu::Device;
use crate::images::ImageReader;
use crate::qa::record::{self, QaRecord, SplitMix64};
use crate::som::recipe::{self, MarkedImage};
use crate::som::SomConfig;
use crate::store::atomic::write_atomic;
use crate::store::rejects::{Reject, RejectLog, LOG_FILE};
use crate::store::{CameraRow, FrameRow, ObjectRow, SceneData, Store};
use crate::visibility::output::safe_name;
use crate::visibility::table::KeptScenes;
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "MetaVQA output";

/// The family name in the records.
pub(crate) const FAMILY: &str = crate::qa::Family::Metavqa.name();

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub store: PathBuf,
    pub visibility: PathBuf,
    pub out: PathBuf,
    pub config: MetavqaConfig,
    pub som: SomConfig,
    /// The device marks are drawn on; only used with `images`.
    pub device: Device,
    /// Write the marked images as PNG files (off: only `marked_images.arrow`, which the release
    /// draws from).
    pub images: bool,
    /// Only this scene.
    pub scene: Option<String>,
}

/// What [`run`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub out_file: PathBuf,
    pub config_hash: String,
    pub device: String,
    pub scenes: u64,
    pub keyframes: u64,
    /// Camera images with kept objects (question frames).
    pub camera_images: u64,
    pub questions: u64,
    pub by_type: BTreeMap<String, u64>,
    pub images_written: u64,
    pub overlapping_labels: u64,
    /// Images where identify_color had no coloured object.
    pub skipped_no_color: u64,
    /// Embodied configs whose rollouts tie.
    pub skipped_tied_rollouts: u64,
    /// Questions dropped by the per-frame cap.
    pub capped: u64,
    /// Camera images whose source image was unusable: no questions, see `rejects.jsonl`.
    pub rejected_images: u64,
    pub seconds: f64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "metavqa: {} scenes, {} keyframes, {} camera images → {} questions, {} images in {} ({} device, config {}, {:.1} s)",
            self.scenes,
            self.keyframes,
            self.camera_images,
            self.questions,
            self.images_written,
            self.out_file.display(),
            self.device,
            self.config_hash,
            self.seconds
        )?;
        let types: Vec<String> = self
            .by_type
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "  by type: {}", types.join(", "))?;
        writeln!(
            f,
            "  skipped: identify_color on {} images without colours, {} tied embodied configs; {} dropped by the per-frame cap",
            self.skipped_no_color, self.skipped_tied_rollouts, self.capped
        )?;
        if self.overlapping_labels > 0 {
            writeln!(f, "  {} labels overlap", self.overlapping_labels)?;
        }
        if self.rejected_images > 0 {
            writeln!(
                f,
                "  {} camera images with unusable source images skipped (see {})",
                self.rejected_images, LOG_FILE
            )?;
        }
        Ok(())
    }
}

/// The stage name in reject logs.
pub(crate) const STAGE: &str = "metavqa";

/// What became of one camera image's questions.
enum ImageDone {
    /// The questions, the marked images they show, the images written and their
    /// overlapping labels.
    Asked(ImageQuestions, Vec<MarkedImage>, u64, u64),
    /// Its source image is unusable.
    Skipped(Reject),
}

/// The schema of `metavqa_qa.arrow`: the common record plus `image`.
pub fn qa_schema() -> SchemaRef {
    let mut fields = record::qa_fields();
    fields.push(Field::new("image", DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// A record batch of [`qa_schema`].
pub fn to_batch(rows: &[QaRecord], images: &[String]) -> Result<RecordBatch> {
    let mut cols = record::columns(rows);
    cols.push(Arc::new(StringArray::from_iter_values(images)) as ArrayRef);
    Ok(RecordBatch::try_new(qa_schema(), cols)?)
}

/// The seed of one image's draws.
pub(crate) fn image_seed(seed: u64, scene_id: &str, camera_frame_id: &str) -> u64 {
    let d = Sha256::digest(format!(
        "metavqa\u{0}{seed}\u{0}{scene_id}\u{0}{camera_frame_id}"
    ));
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// An image a question set needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Render {
    Full,
    /// The referenced nodes, ascending; node `nodes[k]` is labelled `k`.
    Qa(Vec<usize>),
    Grounding {
        k: String,
        labels: Vec<u32>,
        target: usize,
    },
}

impl Render {
    /// Path under the output folder.
    pub fn path(&self, g: &SceneGraph) -> String {
        let suffix = match self {
            Render::Full => "full".to_string(),
            Render::Qa(_) => "qa".to_string(),
            Render::Grounding { k, .. } => format!("g{k}"),
        };
        format!(
            "images/{}/{}_{suffix}.png",
            safe_name(&g.scene_id),
            safe_name(&g.camera_frame_id)
        )
    }

    /// What is drawn: labels, and the node boxed in white.
    fn specs(&self, g: &SceneGraph) -> (Vec<MarkSpec>, Option<usize>) {
        match self {
            Render::Full => (
                (0..g.nodes.len())
                    .map(|i| MarkSpec {
                        node: i,
                        number: i as u32,
                        boxed: true,
                    })
                    .collect(),
                None,
            ),
            Render::Qa(nodes) => (
                nodes
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| MarkSpec {
                        node: i,
                        number: k as u32,
                        boxed: true,
                    })
                    .collect(),
                None,
            ),
            Render::Grounding { labels, target, .. } => (
                labels
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| MarkSpec {
                        node: i,
                        number: l,
                        boxed: false,
                    })
                    .collect(),
                Some(*target),
            ),
        }
    }
}

/// The questions of one image, ready to write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImageQuestions {
    pub records: Vec<QaRecord>,
    /// Per record: its image's path under the output folder ("" when unmarked).
    pub images: Vec<String>,
    pub renders: Vec<Render>,
    pub skips: Skips,
    pub capped: u64,
}

/// Keeps at most `cap` drafts, drawn without replacement with probability proportional to
/// their type weight (Efraimidis–Spirakis keys); the kept ones stay in draft order.
fn cap_drafts(drafts: Vec<Draft>, cap: usize, cfg: &MetavqaConfig, seed: u64) -> (Vec<Draft>, u64) {
    if cap == 0 || drafts.len() <= cap {
        return (drafts, 0);
    }
    let mut rng = SplitMix64::new(seed ^ 0x6361_7073_6361_7073);
    let mut keyed: Vec<(f64, usize)> = drafts
        .iter()
        .enumerate()
        .map(|(k, d)| {
            let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            (u.powf(1.0 / cfg.weight(d.qtype)), k)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<usize> = keyed.iter().take(cap).map(|e| e.1).collect();
    keep.sort_unstable();
    let dropped = (drafts.len() - cap) as u64;
    let mut it = keep.into_iter().peekable();
    let kept = drafts
        .into_iter()
        .enumerate()
        .filter(|(k, _)| {
            if it.peek() == Some(k) {
                it.next();
                true
            } else {
                false
            }
        })
        .map(|(_, d)| d)
        .collect();
    (kept, dropped)
}

fn marks_json(pairs: impl Iterator<Item = (u32, String)>) -> String {
    let mut v: Vec<(u32, String)> = pairs.collect();
    v.sort();
    let parts: Vec<String> = v
        .iter()
        .map(|(l, t)| {
            format!(
                "\"{l}\":{}",
                serde_json::to_string(t).unwrap_or_else(|_| "\"\"".into())
            )
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Draws, caps, numbers and renders the questions of one image.
pub fn image_questions(
    g: &SceneGraph,
    cfg: &MetavqaConfig,
    ro: &Rollouts,
) -> Result<ImageQuestions> {
    let seed = image_seed(cfg.seed, &g.scene_id, &g.camera_frame_id);
    let (drafts, skips) = generate(g, cfg, ro, seed);
    let (drafts, capped) = cap_drafts(drafts, cfg.per_frame as usize, cfg, seed);
    let qa_nodes = qa_nodes(&drafts);
    let qa_label: HashMap<usize, u32> = qa_nodes
        .iter()
        .enumerate()
        .map(|(k, &i)| (i, k as u32))
        .collect();
    let full_json = marks_json(
        g.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (i as u32, n.track_id.clone())),
    );
    let qa_json = marks_json(
        qa_nodes
            .iter()
            .enumerate()
            .map(|(k, &i)| (k as u32, g.nodes[i].track_id.clone())),
    );
    let mut out = ImageQuestions {
        skips,
        capped,
        ..Default::default()
    };
    let mut need_full = false;
    for d in &drafts {
        let (label, marks_str, image): (Box<dyn Fn(usize) -> u32>, String, String) = match &d.labels
        {
            Labels::Full => {
                need_full = true;
                (
                    Box::new(|i| i as u32),
                    full_json.clone(),
                    Render::Full.path(g),
                )
            }
            Labels::Qa => (
                Box::new(|i| qa_label.get(&i).copied().unwrap_or(u32::MAX)),
                qa_json.clone(),
                Render::Qa(Vec::new()).path(g),
            ),
            Labels::Random { labels, target } => {
                let r = Render::Grounding {
                    k: d.variant.clone(),
                    labels: labels.clone(),
                    target: *target,
                };
                let path = r.path(g);
                out.renders.push(r);
                let ls = labels.clone();
                (
                    Box::new(move |i| ls.get(i).copied().unwrap_or(u32::MAX)),
                    marks_json(
                        labels
                            .iter()
                            .zip(&g.nodes)
                            .map(|(l, n)| (*l, n.track_id.clone())),
                    ),
                    path,
                )
            }
            Labels::Unmarked => (Box::new(|i| i as u32), "{}".to_string(), String::new()),
        };
        out.records
            .push(draft_record(g, cfg.seed, d, &*label, marks_str)?);
        out.images.push(image);
    }
    if !qa_nodes.is_empty() {
        out.renders.insert(0, Render::Qa(qa_nodes));
    }
    if need_full {
        out.renders.insert(0, Render::Full);
    }
    Ok(out)
}

/// The objects the `Qa`-labelled drafts refer to (in text, options or `objects`), ascending:
/// their position is their label on the `_qa` image.
fn qa_nodes(drafts: &[Draft]) -> Vec<usize> {
    let mut qa_nodes: Vec<usize> = drafts
        .iter()
        .filter(|d| d.labels == Labels::Qa)
        .flat_map(|d| {
            refs(&d.stem)
                .chain(d.options.iter().flat_map(refs))
                .chain(d.objects.iter().copied())
                .collect::<Vec<_>>()
        })
        .collect();
    qa_nodes.sort_unstable();
    qa_nodes.dedup();
    qa_nodes
}

/// The record of one draft, its object references rendered with `label` (the numbers its
/// image shows) and `marks` the JSON of that image's labels.
fn draft_record(
    g: &SceneGraph,
    seed: u64,
    d: &Draft,
    label: &dyn Fn(usize) -> u32,
    marks: String,
) -> Result<QaRecord> {
    let stem = render(&d.stem, label);
    let canonical: Vec<String> = d.options.iter().map(|o| render(o, label)).collect();
    let tracks: Vec<String> = d
        .objects
        .iter()
        .map(|&i| g.nodes[i].track_id.clone())
        .collect();
    let frame = g.frame_idx.to_string();
    let mut refs_v: Vec<&str> = vec![
        &g.source,
        &g.scene_id,
        &frame,
        &g.camera_frame_id,
        &d.variant,
    ];
    refs_v.extend(tracks.iter().map(String::as_str));
    let mut r = QaRecord {
        qa_id: record::qa_id(FAMILY, d.qtype.name(), &refs_v, None, seed),
        family: FAMILY.into(),
        question_type: d.qtype.name().into(),
        source: g.source.clone(),
        scene_id: g.scene_id.clone(),
        frame_idx: Some(g.frame_idx),
        clip_id: None,
        cameras: vec![g.camera.clone()],
        camera_frame_ids: vec![g.camera_frame_id.clone()],
        objects: tracks,
        marks,
        corruption: None,
        severity: None,
        rule: d.rule.into(),
        params: d.params.to_string(),
        evidence: d.evidence.to_string(),
        seed,
        ..Default::default()
    };
    record::set_answer(&mut r, &canonical, d.correct, true)?;
    r.prompt = d.prompt(stem);
    Ok(r)
}

/// Builds the scene graphs of one scene: one per keyframe camera image with kept rows, in
/// table order. `vis` names the visibility table in errors.
pub fn scene_graphs(
    data: &SceneData,
    kept: &[KeptRow],
    cfg: &MetavqaConfig,
    vis: &Path,
) -> Result<Vec<SceneGraph>> {
    let sid = &data.scene.scene_id;
    let frames: HashMap<u32, &FrameRow> = data.frames.iter().map(|f| (f.frame_idx, f)).collect();
    let objects: HashMap<(u32, &str), &ObjectRow> = data
        .objects
        .iter()
        .map(|o| ((o.frame_idx, o.annotation_id.as_str()), o))
        .collect();
    let cameras: HashMap<&str, &CameraRow> = data
        .cameras
        .iter()
        .map(|c| (c.camera_frame_id.as_str(), c))
        .collect();
    let ego = ego_quad(cfg);
    let mut graphs: Vec<SceneGraph> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for row in kept {
        let record = || format!("{sid}/{}/{}", row.camera_frame_id, row.mark.annotation_id);
        let k = match index.get(row.camera_frame_id.as_str()) {
            Some(&k) => k,
            None => {
                let cam = cameras.get(row.camera_frame_id.as_str()).ok_or_else(|| {
                    Error::input(
                        vis,
                        record(),
                        "no such camera image in the store (wrong --store?)",
                    )
                })?;
                if !frames.contains_key(&row.frame_idx) {
                    return Err(Error::input(vis, record(), "no such keyframe in the store"));
                }
                graphs.push(SceneGraph {
                    source: data.scene.source.clone(),
                    scene_id: sid.clone(),
                    frame_idx: row.frame_idx,
                    camera: row.camera.clone(),
                    camera_frame_id: row.camera_frame_id.clone(),
                    width: cam.width,
                    height: cam.height,
                    ego,
                    nodes: Vec::new(),
                });
                index.insert(row.camera_frame_id.as_str(), graphs.len() - 1);
                graphs.len() - 1
            }
        };
        let g = &mut graphs[k];
        if g.frame_idx != row.frame_idx {
            return Err(Error::input(
                vis,
                record(),
                "rows of one image name two keyframes",
            ));
        }
        let frame = frames
            .get(&row.frame_idx)
            .ok_or_else(|| Error::input(vis, record(), "no such keyframe in the store"))?;
        let obj = objects
            .get(&(row.frame_idx, row.mark.annotation_id.as_str()))
            .ok_or_else(|| {
                Error::input(
                    vis,
                    record(),
                    "no such object in the store (wrong --store?)",
                )
            })?;
        let finite = obj
            .center
            .iter()
            .chain(&obj.size_wlh)
            .all(|v| v.is_finite())
            && obj.yaw.is_finite();
        if !finite {
            return Err(Error::input(
                vis,
                record(),
                "the store's box has non-finite values",
            ));
        }
        g.nodes.push(Node::new(obj, frame, row.mark.clone(), cfg));
    }
    Ok(graphs)
}

/// Runs the stage (see the module docs).
pub fn run(opts: &Options) -> Result<Summary> {
    let start = Instant::now();
    let cfg = &opts.config;
    crate::store::paths::disjoint(&opts.store, "the store", &opts.out, "the output")?;
    crate::store::paths::disjoint(
        &opts.visibility,
        "the visibility table",
        &opts.out,
        "the output",
    )?;
    let store = Store::open(&opts.store)?;
    let mut kept = KeptScenes::open(&opts.visibility, Some(&opts.som.anchor_rules()))?;
    let images = ImageReader::new(&store, None);
    let gpu = if opts.images { opts.device.arc() } else { None };
    let ro = Rollouts::new(cfg);
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(&opts.out, OUTPUT)?;
    let _owned =
        crate::store::owner::Owned::claim(&opts.out, OUTPUT, "questions, rollouts and images")?;
    write_rollouts(&opts.out, cfg, &ro)?;
    let out_file = opts.out.join("metavqa_qa.arrow");
    let mut writer = crate::store::atomic::ipc_writer(&out_file, &qa_schema())?;
    let mut asked = crate::qa::ipc::Tally::default();
    let mut recipe_writer = recipe::Writer::create(&opts.out.join(recipe::FILE), &opts.som.draw)?;
    let mut s = Summary {
        out_file: out_file.clone(),
        config_hash: cfg.hash()?,
        device: if !opts.images {
            "none".into()
        } else if gpu.is_some() {
            "gpu".into()
        } else {
            "cpu".into()
        },
        ..Default::default()
    };
    let mut found = false;
    let mut rejects = RejectLog::new();
    let pb = crate::progress::bar(store.meta().counts.scenes, "metavqa");
    for data in store.scenes()? {
        let data = data?;
        let sid = data.scene.scene_id.clone();
        if opts.scene.as_ref().is_some_and(|x| *x != sid) {
            continue;
        }
        found = true;
        let rows = scene_kept(&mut kept, &sid)?;
        let graphs = scene_graphs(&data, &rows, cfg, &opts.visibility)?;
        let done: Vec<ImageDone> = graphs
            .par_iter()
            .map(|g| ask_and_draw(g, &data, &images, opts, gpu.as_deref(), &ro))
            .collect::<Result<_>>()?;
        let mut marked = Vec::new();
        let (records, paths) = tally(&mut s, &mut rejects, &graphs, done, &mut marked);
        writer.write(&to_batch(&records, &paths)?)?;
        asked.add(&records);
        recipe_writer.write(&marked)?;
        s.scenes += 1;
        pb.inc(1);
    }
    if let Some(x) = opts.scene.as_ref().filter(|_| !found) {
        return Err(Error::not_found(&opts.store, format!("scene {x}")));
    }
    pb.finish_and_clear();
    writer.finish()?;
    writer.into_inner()?.commit()?;
    asked.log(&out_file);
    recipe_writer.finish()?;
    rejects.write(&opts.out.join(LOG_FILE))?;
    for t in QuestionType::ALL {
        s.by_type.entry(t.name().to_string()).or_default();
    }
    s.seconds = start.elapsed().as_secs_f64();
    Ok(s)
}

/// Writes `rollouts.json`: the rollout table with the model parameters it was computed from,
/// so the embodied answers can be checked without rerunning the stage.
fn write_rollouts(out: &Path, cfg: &MetavqaConfig, ro: &Rollouts) -> Result<()> {
    let ro_json = serde_json::to_vec(&serde_json::json!({
        "model": "kinematic bicycle, rear-axle reference (see drivegen::metavqa::rollout)",
        "parameters": cfg.rollout,
        "ego": cfg.ego,
        "distance_edges_m": cfg.bins.distance_edges_m,
        "table": ro,
    }))
    .map_err(|e| Error::Internal(format!("rollouts.json: {e}")))?;
    write_atomic(&out.join("rollouts.json"), &ro_json)
}

/// One camera image's questions and the marked images they show (drawn and written with
/// `opts.images`). An unusable source image skips the image, as its questions would show
/// marks that cannot be drawn; any other error fails the run.
fn ask_and_draw(
    g: &SceneGraph,
    data: &SceneData,
    images: &ImageReader,
    opts: &Options,
    gpu: Option<&crate::gpu::Gpu>,
    ro: &Rollouts,
) -> Result<ImageDone> {
    let q = image_questions(g, &opts.config, ro)?;
    let (mut written, mut overlaps) = (0, 0);
    let mut marked = Vec::with_capacity(q.renders.len());
    if !q.renders.is_empty() {
        let cam = data
            .cameras
            .iter()
            .find(|c| c.camera_frame_id == g.camera_frame_id)
            .ok_or_else(|| Error::Internal(format!("no camera image {}", g.camera_frame_id)))?;
        // Decoded even when the release draws the images: a source it cannot read rejects the
        // image's questions here, with the stage's record, rather than at publication.
        let base = match images.rgb_checked(cam) {
            Ok(base) => base,
            Err(e) => {
                return Reject::bad_image(STAGE, &data.scene.scene_id, &g.camera_frame_id, &e)
                    .map(ImageDone::Skipped)
                    .ok_or(e)
            }
        };
        for r in &q.renders {
            let (specs, white) = r.specs(g);
            let (marks, o) = marks::plan(g, &specs, white, &opts.som)?;
            let m = MarkedImage {
                path: r.path(g),
                scene_id: g.scene_id.clone(),
                camera_frame_id: g.camera_frame_id.clone(),
                width: g.width,
                height: g.height,
                marks,
            };
            if opts.images {
                let bytes = recipe::render(&m, &base, &opts.som.draw, gpu)?;
                write_atomic(&opts.out.join(&m.path), &bytes)?;
                written += 1;
            }
            overlaps += o;
            marked.push(m);
        }
    }
    Ok(ImageDone::Asked(q, marked, written, overlaps))
}

/// Adds one scene's images to the summary and the reject log, and returns its records with
/// their image paths, in graph order: the scene's record batch.
fn tally(
    s: &mut Summary,
    rejects: &mut RejectLog,
    graphs: &[SceneGraph],
    done: Vec<ImageDone>,
    marked: &mut Vec<MarkedImage>,
) -> (Vec<QaRecord>, Vec<String>) {
    let mut records = Vec::new();
    let mut images = Vec::new();
    let mut keyframes = std::collections::BTreeSet::new();
    for (g, d) in graphs.iter().zip(done) {
        let (q, written, overlaps) = match d {
            ImageDone::Asked(q, m, written, overlaps) => {
                marked.extend(m);
                (q, written, overlaps)
            }
            ImageDone::Skipped(r) => {
                s.rejected_images += 1;
                rejects.push(r);
                continue;
            }
        };
        keyframes.insert(g.frame_idx);
        s.camera_images += 1;
        s.images_written += written;
        s.overlapping_labels += overlaps;
        s.skipped_no_color += q.skips.no_color;
        s.skipped_tied_rollouts += q.skips.tied_rollouts;
        s.capped += q.capped;
        for r in &q.records {
            *s.by_type.entry(r.question_type.clone()).or_default() += 1;
        }
        // The release shows the marked image (relative to this stage's folder, drawn from
        // `marked_images.arrow` unless the file is there) instead of the store's; unmarked
        // questions show the store's.
        for (mut r, image) in q.records.into_iter().zip(q.images) {
            if !image.is_empty() {
                r.image_paths = vec![image.clone()];
            }
            records.push(r);
            images.push(image);
        }
    }
    s.keyframes += keyframes.len() as u64;
    s.questions += records.len() as u64;
    (records, images)
}
