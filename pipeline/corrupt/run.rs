//! `drivegen corrupt`: corrupts a folder of images or a store's keyframe images under the
//! chosen corruptions and severities, and writes the images, `corruptions.arrow` and the
//! corruption-recognition questions `corruption_qa.arrow`.
//!
//! Output layout: `OUT/<corruption>/<severity>/<the image's own relative path>`, in the input
//! image's format (PNG stays PNG; JPEG is re-encoded at `output.jpeg_quality`). Frames are
//! processed in a fixed order and every random draw is keyed by (seed, image or frame id,
//! corruption, severity), so the same inputs and seed give byte-identical output on a given
//! device, whatever the batching.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::progress::Bar as ProgressBar;
use image::RgbImage;
use rayon::prelude::*;
use serde_json::Value;

use super::frames::{frames_of, FrameIn, ViewIn};
use super::inflight::InFlight;
use super::output::CorruptionRow;
use super::qa::{frame_questions, ShownView};
use super::{apply_cpu, codec, plan_frame, CorruptConfig, Corruption, View};
use crate::gpu::Gpu;
use crate::images::ImageReader;
use crate::qa::QaRecord;
use crate::store::atomic::write_atomic;
use crate::store::rejects::{Reject, RejectLog, LOG_FILE};
use crate::{Error, Result};

/// What this stage's output folder is, as its ownership marker records it.
const OUTPUT: &str = "corruption output";

/// Where the images come from.
#[derive(Debug, Clone)]
pub enum Input {
    /// Every PNG/JPEG under a folder; each image is its own frame, its camera the name of its
    /// folder when that starts with `CAM_`.
    Images(PathBuf),
    /// The keyframe camera images of a scene store; the 6 views of a keyframe form a frame.
    Store(PathBuf),
}

/// `all` or a comma-separated list of corruption names.
pub fn parse_corruptions(s: &str) -> Result<Vec<Corruption>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Corruption::ALL.to_vec());
    }
    s.split(',').map(Corruption::parse).collect()
}

/// `all`, `default` or one severity 1–5.
pub fn parse_severities(s: &str) -> Result<Severities> {
    match s.trim().to_ascii_lowercase().as_str() {
        "all" => Ok(Severities::All),
        "default" => Ok(Severities::Default),
        k => {
            let v: u8 = k.parse().map_err(|_| {
                Error::invalid(
                    "severity",
                    format!("severity {s}: expected 1..5, all or default"),
                )
            })?;
            Ok(Severities::One(super::check_severity(v)?))
        }
    }
}

/// Which severities to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severities {
    /// Each corruption's `default_severity` (DriveBench's).
    Default,
    All,
    One(u8),
}

#[derive(Debug, Clone)]
pub struct Options {
    pub input: Input,
    pub out: PathBuf,
    pub corruptions: Vec<Corruption>,
    pub severities: Severities,
    pub seed: u64,
    pub config: CorruptConfig,
    /// The device the non-codec corruptions run on.
    pub device: crate::gpu::Device,
    /// Stop after this many frames (None: all).
    pub max_frames: Option<usize>,
    /// With a store input, only the first N keyframes of each scene (a per-scene limit keeps
    /// a sharded build's output independent of which scenes share its shard).
    pub frames_per_scene: Option<usize>,
    /// Write the corrupted images. Off, only codec corruptions (whose recorded parameters
    /// come from running the codec) are written; the release corrupts the published images
    /// from `corruptions.arrow` ([`super::recipe`]).
    pub images: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct CorruptSummary {
    pub frames: usize,
    pub images_in: usize,
    pub images_out: usize,
    /// Of those, the images written as files (the rest are drawn by the release).
    pub images_written: usize,
    pub questions: usize,
    /// Frames skipped because one of their images was unusable (see `rejects.jsonl`).
    pub rejected_frames: usize,
    pub device: String,
    pub seconds: f64,
    pub out: PathBuf,
}

impl fmt::Display for CorruptSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "corrupt: {} frames, {} images in, {} images out ({} written), {} questions on {} in {:.1} s",
            self.frames,
            self.images_in,
            self.images_out,
            self.images_written,
            self.questions,
            self.device,
            self.seconds
        )?;
        writeln!(f, "  {}", self.out.join("corruptions.arrow").display())?;
        writeln!(f, "  {}", self.out.join("corruption_qa.arrow").display())?;
        if self.rejected_frames > 0 {
            writeln!(
                f,
                "  {} frames with an unusable image skipped (see {})",
                self.rejected_frames,
                self.out.join(LOG_FILE).display()
            )?;
        }
        Ok(())
    }
}

/// The stage name in reject logs.
pub(crate) const STAGE: &str = "corrupt";

/// A decoded frame: its views' images, or why it is skipped.
type Decoded = std::result::Result<Vec<RgbImage>, Reject>;

/// The severities to run for `c`.
fn severities(opts: &Options, c: Corruption) -> Vec<u8> {
    match opts.severities {
        Severities::Default => vec![opts.config.default_severity(c)],
        Severities::All => (1..=5).collect(),
        Severities::One(s) => vec![s],
    }
}

/// Reads an image as RGB8.
pub(crate) fn load_rgb(path: &Path) -> Result<RgbImage> {
    let bytes = crate::store::input::read(path, crate::store::input::IMAGE)?;
    crate::images::decode_checked(&bytes, None).map_err(|why| Error::input(path, "image", why))
}

/// Encodes `img` in the format `like`'s extension names (PNG, or JPEG at `quality`).
pub(crate) fn encode_like(img: &RgbImage, like: &Path, quality: u8) -> Result<Vec<u8>> {
    let ext = like
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "jpg" || ext == "jpeg" {
        let (w, h) = img.dimensions();
        if w > crate::jpeg::MAX_SIDE || h > crate::jpeg::MAX_SIDE {
            return Err(Error::input(
                like,
                "image",
                format!("cannot encode a {w}×{h} JPEG: sides must be at most 65535"),
            ));
        }
        return crate::jpeg::encode(img.as_raw(), w as usize, h as usize, quality);
    }
    let mut buf = Vec::new();
    img.write_with_encoder(image::codecs::png::PngEncoder::new(&mut buf))
        .map_err(|e| Error::input(like, "image", format!("cannot encode: {e}")))?;
    Ok(buf)
}

/// Applies one corruption at one severity to a frame's decoded views: the images and their
/// recorded plans (`applied`, params JSON), plus the frame-level record.
pub(crate) fn corrupt_frame(
    cfg: &CorruptConfig,
    gpu: Option<&Gpu>,
    c: Corruption,
    severity: u8,
    seed: u64,
    frame_id: &str,
    views: &[View<'_>],
) -> Result<Vec<(RgbImage, bool, Value)>> {
    if c.is_codec() {
        let pairs: Vec<(&RgbImage, &str)> = views.iter().map(|v| (v.image, v.image_id)).collect();
        let done = codec::apply_batches(&codec::find_ffmpeg()?, cfg, &[(c, severity)], &pairs)?;
        return done
            .into_iter()
            .map(|mut jobs| {
                let (img, p) = jobs
                    .pop()
                    .ok_or_else(|| Error::Internal("codec: a view lost its job".into()))?;
                Ok((img, true, p))
            })
            .collect();
    }
    let plans = plan_frame(cfg, c, severity, seed, frame_id, views)?;
    let images = match gpu {
        Some(g) => {
            let jobs: Vec<_> = views
                .iter()
                .zip(&plans)
                .map(|(v, p)| (v.image, &p.plan))
                .collect();
            super::gpu::apply_gpu(g, &jobs)?
        }
        None => views
            .par_iter()
            .zip(&plans)
            .map(|(v, p)| apply_cpu(v.image, &p.plan))
            .collect(),
    };
    Ok(images
        .into_iter()
        .zip(plans)
        .map(|(img, p)| (img, p.applied, p.params))
        .collect())
}

/// Runs the stage.
pub fn run(opts: &Options) -> Result<CorruptSummary> {
    match &opts.input {
        Input::Images(d) => crate::store::paths::disjoint(d, "--images", &opts.out, "--out")?,
        Input::Store(s) => crate::store::paths::disjoint(s, "--store", &opts.out, "--out")?,
    }
    let t0 = Instant::now();
    let gpu = if opts.corruptions.iter().all(|c| c.is_codec()) {
        None
    } else {
        opts.device.arc()
    };
    let (mut frames, images) = frames_of(&opts.input, opts.frames_per_scene)?;
    // An earlier run's files would otherwise stay beside this one's.
    crate::store::rerun::clear_earlier_run(&opts.out, OUTPUT)?;
    let _owned =
        crate::store::owner::Owned::claim(&opts.out, OUTPUT, "corrupted images and their table")?;
    if let Some(m) = opts.max_frames {
        frames.truncate(m);
    }
    let mut acc = Gathered {
        summary: CorruptSummary {
            device: gpu
                .as_ref()
                .map(|g| g.info().to_string())
                .unwrap_or_else(|| "cpu".into()),
            out: opts.out.clone(),
            ..Default::default()
        },
        rows: Vec::new(),
        questions: Vec::new(),
        rejects: RejectLog::new(),
    };
    let pb = crate::progress::bar(frames.len() as u64, "corrupt");
    run_stages(
        opts,
        gpu.as_deref(),
        &frames,
        images.as_ref(),
        &pb,
        &mut acc,
    )?;
    pb.finish_and_clear();
    let Gathered {
        mut summary,
        rows,
        questions,
        rejects,
    } = acc;
    super::recipe::write(&opts.out.join("corruptions.arrow"), &rows, &opts.config)?;
    summary.questions = questions.len();
    write_table(
        &opts.out.join("corruption_qa.arrow"),
        &crate::qa::to_batch(&questions)?,
    )?;
    let mut tally = crate::qa::ipc::Tally::default();
    tally.add(&questions);
    tally.log(&opts.out.join("corruption_qa.arrow"));
    rejects.write(&opts.out.join(LOG_FILE))?;
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// A decoded frame on its way from the decoder to the corruption stage.
type FrameMsg = Result<(usize, Decoded)>;

/// Corrupted images on their way to the writer, by output path.
type WriteBatch = Vec<(PathBuf, RgbImage)>;

/// What the corruption stage gathers for the tables written at the end.
struct Gathered {
    summary: CorruptSummary,
    rows: Vec<CorruptionRow>,
    questions: Vec<QaRecord>,
    rejects: RejectLog,
}

/// Runs the three stages, joined by bounded queues so that decoding the next frame and
/// encoding the last one overlap the corruption of this one, and at most a few frames are in
/// memory at once.
fn run_stages(
    opts: &Options,
    gpu: Option<&Gpu>,
    frames: &[FrameIn],
    reader: Option<&ImageReader>,
    pb: &ProgressBar,
    acc: &mut Gathered,
) -> Result<()> {
    let (frame_tx, frame_rx) = crossbeam_channel::bounded::<FrameMsg>(2);
    let (write_tx, write_rx) = crossbeam_channel::bounded::<WriteBatch>(4);
    std::thread::scope(|scope| -> Result<()> {
        let decoder = scope.spawn(move || decode_frames(frames, reader, &frame_tx));
        let out_dir = &opts.out;
        let quality = opts.config.output.jpeg_quality;
        let writer = scope.spawn(move || write_images(&write_rx, out_dir, quality));
        let corrupted = corrupt_frames(opts, gpu, frames, &frame_rx, &write_tx, pb, acc);
        drop(write_tx);
        drop(frame_rx);
        let written = writer
            .join()
            .map_err(|_| Error::Internal("the image writer panicked".into()))?;
        decoder
            .join()
            .map_err(|_| Error::Internal("the image decoder panicked".into()))?;
        corrupted.and(written)
    })
}

/// The decoder stage: decodes each frame's views in order and sends them on, until the
/// corruption stage hangs up or a failure that is not a rejected image.
fn decode_frames(
    frames: &[FrameIn],
    reader: Option<&ImageReader>,
    frame_tx: &crossbeam_channel::Sender<FrameMsg>,
) {
    for (i, f) in frames.iter().enumerate() {
        let decoded: Vec<Result<RgbImage>> = f
            .views
            .par_iter()
            .map(|v| match (&v.cam, reader) {
                (Some(cam), Some(r)) => r.rgb_checked(cam),
                _ => load_rgb(&v.path),
            })
            .collect();
        // A frame with an unusable image is skipped and recorded (its corruptions treat the
        // views together); any other failure stops the run.
        let all: std::result::Result<Vec<RgbImage>, _> = decoded
            .into_iter()
            .zip(&f.views)
            .map(|(d, v)| d.map_err(|e| (v, e)))
            .collect();
        let msg = match all {
            Ok(images) => Ok((i, Ok(images))),
            Err((v, e)) => match Reject::bad_image(STAGE, &f.frame.scene_id, &v.image_id, &e) {
                Some(r) => Ok((i, Err(r))),
                None => Err(e),
            },
        };
        let failed = msg.is_err();
        if frame_tx.send(msg).is_err() || failed {
            break;
        }
    }
}

/// The writer stage: encodes and writes each batch under `out_dir`, stopping at the first
/// error.
fn write_images(
    write_rx: &crossbeam_channel::Receiver<WriteBatch>,
    out_dir: &Path,
    quality: u8,
) -> Result<()> {
    for batch in write_rx {
        batch.par_iter().try_for_each(|(rel, img)| {
            let bytes = encode_like(img, rel, quality)?;
            write_atomic(&out_dir.join(rel), &bytes)
        })?;
    }
    Ok(())
}

/// The corruption stage: runs every chosen corruption and severity on each decoded frame,
/// records rows and questions in `acc` and hands the images to the writer. On the GPU the
/// units go through [`InFlight`], so several frames' work shares a submission and the stage
/// waits once per batch.
fn corrupt_frames(
    opts: &Options,
    gpu: Option<&Gpu>,
    frames: &[FrameIn],
    frame_rx: &crossbeam_channel::Receiver<FrameMsg>,
    write_tx: &crossbeam_channel::Sender<WriteBatch>,
    pb: &ProgressBar,
    acc: &mut Gathered,
) -> Result<()> {
    // Codec corruptions run over several frames at once: an ffmpeg run costs more to start
    // than to code a frame, so frames wait here until a group holds enough images.
    let group_images = if codec_jobs(opts).is_empty() {
        1
    } else {
        CODEC_GROUP_IMAGES
    };
    let mut flight = InFlight::new(if opts.images { gpu } else { None });
    let mut group: Vec<(usize, Decoded)> = Vec::new();
    let mut held = 0;
    for msg in frame_rx.iter() {
        let (i, images) = msg?;
        if let Ok(views) = &images {
            held += views.len();
        }
        // A rejected frame waits its turn too, so the rejects keep the frames' order.
        group.push((i, images));
        if held >= group_images {
            held = 0;
            let group = std::mem::take(&mut group);
            if !corrupt_group(opts, frames, &group, &mut flight, write_tx, pb, acc)? {
                return Ok(());
            }
        }
    }
    if corrupt_group(opts, frames, &group, &mut flight, write_tx, pb, acc)? {
        send_done(opts, frames, &mut flight, true, write_tx, acc)?;
    }
    Ok(())
}

/// How many camera images the codec corruptions take in one go (one ffmpeg run per worker
/// for each of encode, corrupt and decode): four frames of six cameras. At 1600×900 the group
/// and its corrupted copies hold about 200 MB (the demo's corrupt step peaked at 436 MiB);
/// 48 took as long and peaked at 754 MiB.
const CODEC_GROUP_IMAGES: usize = 24;

/// Runs [`corrupt_frames`]' work on a group of decoded frames; false once the writer stopped.
fn corrupt_group(
    opts: &Options,
    frames: &[FrameIn],
    group: &[(usize, Decoded)],
    flight: &mut InFlight<'_>,
    write_tx: &crossbeam_channel::Sender<WriteBatch>,
    pb: &ProgressBar,
    acc: &mut Gathered,
) -> Result<bool> {
    fn views_of<'a>(f: &'a FrameIn, images: &'a [RgbImage]) -> Vec<View<'a>> {
        f.views
            .iter()
            .zip(images)
            .map(|(v, image)| View {
                image_id: &v.image_id,
                camera: &v.camera,
                image,
            })
            .collect()
    }
    let all_views: Vec<View<'_>> = group
        .iter()
        .filter_map(|(i, d)| d.as_ref().ok().map(|images| views_of(&frames[*i], images)))
        .flatten()
        .collect();
    let mut codec_done = codec_views(opts, &all_views)?.into_iter();
    for (i, images) in group {
        let images = match images {
            Ok(images) => images,
            Err(r) => {
                acc.summary.rejected_frames += 1;
                acc.rejects.push(r.clone());
                pb.inc(1);
                continue;
            }
        };
        let f = &frames[*i];
        let views = views_of(f, images);
        acc.summary.frames += 1;
        acc.summary.images_in += views.len();
        let mut frame_codec: Vec<_> = (&mut codec_done).take(views.len()).collect();
        for &c in &opts.corruptions {
            for sev in severities(opts, c) {
                if c.is_codec() {
                    let done = frame_codec
                        .iter_mut()
                        .map(|jobs| {
                            jobs.next().ok_or_else(|| {
                                Error::Internal("a codec corruption is missing".into())
                            })
                        })
                        .collect::<Result<Vec<_>>>()?
                        .into_iter()
                        .map(|(img, p)| (Some(img), true, p))
                        .collect();
                    flight.push_done(*i, c, sev, done);
                    continue;
                }
                let plans = plan_frame(&opts.config, c, sev, opts.seed, &f.frame.frame_id, &views)?;
                if opts.images {
                    flight.push_planned(*i, c, sev, &views, plans)?;
                } else {
                    let done = plans
                        .into_iter()
                        .map(|p| (None, p.applied, p.params))
                        .collect();
                    flight.push_done(*i, c, sev, done);
                }
                if !send_done(opts, frames, flight, false, write_tx, acc)? {
                    return Ok(false);
                }
            }
        }
        pb.inc(1);
    }
    Ok(true)
}

/// Records the units [`InFlight::take_done`] gives back and hands their images to the
/// writer; false once the writer stopped.
fn send_done(
    opts: &Options,
    frames: &[FrameIn],
    flight: &mut InFlight<'_>,
    all: bool,
    write_tx: &crossbeam_channel::Sender<WriteBatch>,
    acc: &mut Gathered,
) -> Result<bool> {
    for (unit, done) in flight.take_done(all)? {
        let f = &frames[unit.frame];
        let batch = acc.record(opts.seed, f, unit.corruption, unit.severity, done)?;
        acc.summary.images_written += batch.len();
        if write_tx.send(batch).is_err() {
            // The writer stopped on an error, which its join reports.
            return Ok(false);
        }
    }
    Ok(true)
}

/// The codec corruptions and severities `opts` asks for, in its order.
fn codec_jobs(opts: &Options) -> Vec<(Corruption, u8)> {
    opts.corruptions
        .iter()
        .filter(|c| c.is_codec())
        .flat_map(|&c| severities(opts, c).into_iter().map(move |s| (c, s)))
        .collect()
}

/// Every codec job ([`codec_jobs`]) of each view, in view order, run side by side; each
/// view's source stream is encoded once for all of them.
fn codec_views(
    opts: &Options,
    views: &[View<'_>],
) -> Result<Vec<std::vec::IntoIter<(RgbImage, Value)>>> {
    let jobs = codec_jobs(opts);
    if jobs.is_empty() || views.is_empty() {
        return Ok(vec![Vec::new().into_iter(); views.len()]);
    }
    let pairs: Vec<(&RgbImage, &str)> = views.iter().map(|v| (v.image, v.image_id)).collect();
    let per_view = codec::apply_batches(&codec::find_ffmpeg()?, &opts.config, &jobs, &pairs)?;
    if per_view.len() != views.len() || per_view.iter().any(|v| v.len() != jobs.len()) {
        return Err(Error::Internal(
            "codec: an image lost one of its jobs".into(),
        ));
    }
    Ok(per_view.into_iter().map(Vec::into_iter).collect())
}

impl Gathered {
    /// Records the rows and questions of frame `f` under corruption `c` at severity `sev`,
    /// and returns its images with the paths they are written to.
    fn record(
        &mut self,
        seed: u64,
        f: &FrameIn,
        c: Corruption,
        sev: u8,
        done: Vec<(Option<RgbImage>, bool, Value)>,
    ) -> Result<WriteBatch> {
        let outs: Vec<(PathBuf, &ViewIn)> = f
            .views
            .iter()
            .map(|v| (Path::new(c.name()).join(sev.to_string()).join(&v.rel), v))
            .collect();
        let mut evidence = Value::Null;
        for ((rel, v), (_, applied, params)) in outs.iter().zip(&done) {
            if let Some(fr) = params.get("frame") {
                evidence = fr.clone();
            }
            self.rows.push(CorruptionRow {
                scene_id: f.frame.scene_id.clone(),
                image_id: v.image_id.clone(),
                camera: v.camera.clone(),
                frame_id: f.frame.frame_id.clone(),
                corruption: c.name().into(),
                severity: sev,
                seed,
                applied: *applied,
                params: params.to_string(),
                source_path: v.path.to_string_lossy().into_owned(),
                output_path: rel.to_string_lossy().replace('\\', "/"),
            });
        }
        self.summary.images_out += outs.len();
        let shown: Vec<ShownView> = f
            .views
            .iter()
            .zip(&done)
            .map(|(v, (_, applied, _))| ShownView {
                camera: v.camera.clone(),
                camera_frame_id: v.image_id.clone(),
                applied: *applied,
            })
            .collect();
        if evidence.is_null() {
            evidence = serde_json::json!({"views": shown.iter().filter(|s| s.applied).map(|s| s.camera.clone()).collect::<Vec<_>>()});
        }
        let written: BTreeMap<&str, String> = outs
            .iter()
            .map(|(rel, v)| {
                (
                    v.image_id.as_str(),
                    rel.to_string_lossy().replace('\\', "/"),
                )
            })
            .collect();
        for mut q in frame_questions(&f.frame, c, sev, seed, &shown, &evidence)? {
            // The release shows the corrupted files, not the store's originals.
            q.image_paths = q
                .camera_frame_ids
                .iter()
                .map(|id| written.get(id.as_str()).cloned().unwrap_or_default())
                .collect();
            self.questions.push(q);
        }
        Ok(outs
            .iter()
            .zip(done)
            .filter_map(|((rel, _), (img, _, _))| img.map(|img| (rel.clone(), img)))
            .collect())
    }
}

fn write_table(path: &Path, batch: &arrow::array::RecordBatch) -> Result<()> {
    let mut w = crate::store::atomic::ipc_writer(path, &batch.schema())?;
    w.write(batch)?;
    w.finish()?;
    let file = w.into_inner()?;
    file.commit()
}
