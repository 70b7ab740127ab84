//! The codec corruptions, through the `ffmpeg` binary found at run time: H.265 Compression
//! (libx265 ABR at a fraction of the source bitrate) and Bit Error (the `noise` bitstream
//! filter on an MPEG-4 Part 2 stream, decoded with ffmpeg's error concealment).
//!
//! As in DriveBench, the source "video" is the image encoded as MPEG-4 Part 2 (what OpenCV's
//! `mp4v` writer produces) at 30 fps; its bitrate is the size of that one-frame stream over
//! its 1/30 s. Both corruptions are deterministic functions of the image (no seed). Odd
//! widths or heights are cropped to even for the codec, and the last row or column keeps its
//! original pixels.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use image::RgbImage;
use serde_json::{json, Value};

use super::config::CorruptConfig;
use super::{sev_index, Corruption};
use crate::{Error, Result};

/// Frame rate of the one-frame source stream (OpenCV's writer in the reference).
const FPS: u32 = 30;

/// The ffmpeg to run: `$DRIVEGEN_FFMPEG`, else `ffmpeg` on `PATH`.
pub fn find_ffmpeg() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("DRIVEGEN_FFMPEG") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(tool_error(format!(
            "DRIVEGEN_FFMPEG={} does not exist",
            p.display()
        )));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join("ffmpeg");
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(tool_error(
        "not found on PATH; install it (Debian: apt-get install ffmpeg, as scripts/setup.sh \
         does) or set DRIVEGEN_FFMPEG to its path — needed for bit_error and h265",
    ))
}

fn tool_error(detail: impl Into<String>) -> Error {
    Error::Tool {
        tool: "ffmpeg".into(),
        detail: detail.into(),
    }
}

/// A scratch folder removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "drivegen-codec-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        crate::store::cleanup::create_registered(&dir, || std::fs::create_dir_all(&dir))
            .map_err(|e| Error::io(&dir, e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        crate::store::cleanup::unregister(&self.0);
    }
}

/// Runs ffmpeg with `args`, `input` on its stdin (written from a second thread, so that
/// neither side waits on a full pipe); returns its stdout.
fn run(
    ffmpeg: &Path,
    image_id: &str,
    step: &str,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<Vec<u8>> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(ffmpeg)
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| tool_error(format!("{image_id}: cannot run {}: {e}", ffmpeg.display())))?;
    let stdin = child.stdin.take();
    let (out, fed) = std::thread::scope(|s| {
        let feeder = s.spawn(move || match (stdin, input) {
            (Some(mut pipe), Some(bytes)) => pipe.write_all(bytes),
            _ => Ok(()),
        });
        let out = child.wait_with_output();
        (out, feeder.join())
    });
    let out =
        out.map_err(|e| tool_error(format!("{image_id}: {step}: waiting for ffmpeg: {e}")))?;
    if !out.status.success() {
        return Err(tool_error(format!(
            "{image_id}: {step} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    match fed {
        Ok(Ok(())) => Ok(out.stdout),
        Ok(Err(e)) => Err(tool_error(format!(
            "{image_id}: {step}: writing the frame: {e}"
        ))),
        Err(_) => Err(Error::Internal("the ffmpeg feeder panicked".into())),
    }
}

/// The even crop of `img` that goes to the codec.
fn even_crop(img: &RgbImage, image_id: &str) -> Result<(u32, u32)> {
    let (w, h) = (img.width() & !1, img.height() & !1);
    if w == 0 || h == 0 {
        return Err(Error::input(
            image_id,
            "image",
            "too small for a codec (needs 2×2)",
        ));
    }
    Ok((w, h))
}

fn path_str(p: &Path) -> Result<String> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| tool_error(format!("{}: not a UTF-8 path", p.display())))
}

/// Decodes the first frame of `video` as RGB to the output `to` names; returns stdout.
fn first_frame(ffmpeg: &Path, image_id: &str, video: &Path, to: &[&str]) -> Result<Vec<u8>> {
    let video = path_str(video)?;
    let mut args = vec!["-i", &video, "-frames:v", "1", "-pix_fmt", "rgb24"];
    args.extend_from_slice(to);
    run(ffmpeg, image_id, "decode", &args, None)
}

/// Decodes the first frame of `video` (`w`×`h`, raw RGB on ffmpeg's stdout) and pastes it
/// over a copy of `img`.
fn decode(
    ffmpeg: &Path,
    img: &RgbImage,
    (w, h): (u32, u32),
    image_id: &str,
    video: &Path,
) -> Result<RgbImage> {
    let raw = first_frame(ffmpeg, image_id, video, &["-f", "rawvideo", "pipe:1"])?;
    let dec = match RgbImage::from_raw(w, h, raw) {
        Some(d) => d,
        // A damaged stream can decode to another frame size: read it through a PNG, which
        // carries its size, and paste what there is.
        None => decode_png(ffmpeg, image_id, video)?,
    };
    Ok(paste(img, &dec))
}

/// A copy of `img` with the decoded (even-cropped) frame `dec` over its top-left corner.
fn paste(img: &RgbImage, dec: &RgbImage) -> RgbImage {
    let mut out = img.clone();
    image::imageops::replace(&mut out, dec, 0, 0);
    out
}

/// The first frame of `video`, whatever its size, through a PNG beside it.
fn decode_png(ffmpeg: &Path, image_id: &str, video: &Path) -> Result<RgbImage> {
    let png = video.with_extension("png");
    first_frame(ffmpeg, image_id, video, &[&path_str(&png)?])?;
    Ok(image::open(&png)
        .map_err(|e| tool_error(format!("{image_id}: decoded frame unreadable: {e}")))?
        .into_rgb8())
}

/// Applies a codec corruption to one image; returns the image and its metadata.
pub fn apply_codec(
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    img: &RgbImage,
    image_id: &str,
) -> Result<(RgbImage, Value)> {
    apply_codec_with(&find_ffmpeg()?, cfg, corruption, severity, img, image_id)
}

/// [`apply_codec`] with a given ffmpeg binary.
pub fn apply_codec_with(
    ffmpeg: &Path,
    cfg: &CorruptConfig,
    corruption: Corruption,
    severity: u8,
    img: &RgbImage,
    image_id: &str,
) -> Result<(RgbImage, Value)> {
    let mut all = Sources::encode(ffmpeg, &[(img, image_id)])?.apply_all(
        cfg,
        &[(corruption, severity)],
        &[img],
    )?;
    all.pop()
        .and_then(|mut jobs| jobs.pop())
        .ok_or_else(|| Error::Internal("codec: the job's image is missing".into()))
}

/// Every `(corruption, severity)` of `jobs` on each of `views` (`(image, image_id)`): per
/// view, per job, the corrupted image and its metadata. The views go in one [`Sources`]
/// batch per worker, run side by side (an ffmpeg run codes its streams one after another).
pub(crate) fn apply_batches(
    ffmpeg: &Path,
    cfg: &CorruptConfig,
    jobs: &[(Corruption, u8)],
    views: &[(&RgbImage, &str)],
) -> Result<Vec<Vec<(RgbImage, Value)>>> {
    use rayon::prelude::*;
    if views.is_empty() {
        return Ok(Vec::new());
    }
    let per_batch = views.len().div_ceil(rayon::current_num_threads().max(1));
    Ok(views
        .par_chunks(per_batch)
        .map(|batch| {
            let imgs: Vec<&RgbImage> = batch.iter().map(|v| v.0).collect();
            Sources::encode(ffmpeg, batch)?.apply_all(cfg, jobs, &imgs)
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// Images' source streams, encoded once and shared by every codec corruption and severity of
/// each image (each starts from its image's one-frame MPEG-4 stream). Starting ffmpeg (loading
/// and linking its libraries, about 0.1 s of CPU) costs more than coding one small frame, so
/// a batch of images goes through three ffmpeg runs in all: one writes every source stream,
/// one every corrupted stream, one decodes them all. The streams are the ones each image alone
/// gives: every output of a run is coded on its own.
pub struct Sources {
    ffmpeg: PathBuf,
    /// Holds the streams until the batch is dropped.
    _scratch: Scratch,
    items: Vec<Item>,
}

/// One image of [`Sources`]: its stream is `k/src.mp4` in the scratch folder.
struct Item {
    image_id: String,
    dir: PathBuf,
    crop: (u32, u32),
    bits_per_second: u64,
}

impl Sources {
    /// Encodes each `(image, image_id)` as its one-frame source stream. The frames go to ffmpeg
    /// as raw RGB files: the same pixels a PNG would carry, without deflating and inflating
    /// them.
    pub fn encode(ffmpeg: &Path, imgs: &[(&RgbImage, &str)]) -> Result<Sources> {
        let scratch = Scratch::new()?;
        let mut items = Vec::with_capacity(imgs.len());
        let mut args: Vec<String> = Vec::new();
        for (k, &(img, id)) in imgs.iter().enumerate() {
            let (w, h) = even_crop(img, id)?;
            let dir = scratch.0.join(k.to_string());
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let raw = dir.join("src.rgb");
            let crop = image::imageops::crop_imm(img, 0, 0, w, h).to_image();
            std::fs::write(&raw, crop.as_raw()).map_err(|e| Error::io(&raw, e))?;
            args.extend(["-f", "rawvideo", "-pix_fmt", "rgb24"].map(str::to_string));
            args.extend(["-s".into(), format!("{w}x{h}")]);
            args.extend([
                "-framerate".into(),
                FPS.to_string(),
                "-i".into(),
                path_str(&raw)?,
            ]);
            items.push(Item {
                image_id: id.to_string(),
                dir,
                crop: (w, h),
                bits_per_second: 0,
            });
        }
        for (k, item) in items.iter().enumerate() {
            args.extend(["-map".into(), format!("{k}:v:0")]);
            args.extend(
                [
                    "-c:v", "mpeg4", "-pix_fmt", "yuv420p", "-threads", "1", "-f", "mp4",
                ]
                .map(str::to_string),
            );
            args.push(path_str(&item.dir.join("src.mp4"))?);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Err(e) = run(ffmpeg, &batch_id(&items), "mpeg4 encode", &refs, None) {
            // Again image by image, so the error names the image it comes from.
            if imgs.len() > 1 {
                for &one in imgs {
                    Sources::encode(ffmpeg, &[one])?;
                }
            }
            return Err(e);
        }
        for item in &mut items {
            let src = item.dir.join("src.mp4");
            let bytes = std::fs::metadata(&src)
                .map_err(|e| Error::io(&src, e))?
                .len();
            item.bits_per_second = bytes * 8 * u64::from(FPS);
            let raw = item.dir.join("src.rgb");
            std::fs::remove_file(&raw).map_err(|e| Error::io(&raw, e))?;
        }
        Ok(Sources {
            ffmpeg: ffmpeg.to_path_buf(),
            _scratch: scratch,
            items,
        })
    }

    /// Every `(corruption, severity)` of `jobs` on each of `imgs` (the images the streams were
    /// encoded from, in the same order): per image, per job, the corrupted image and its
    /// metadata. A failed run of the batch is run again image by image, so the error names
    /// the image it comes from.
    pub fn apply_all(
        &self,
        cfg: &CorruptConfig,
        jobs: &[(Corruption, u8)],
        imgs: &[&RgbImage],
    ) -> Result<Vec<Vec<(RgbImage, Value)>>> {
        if imgs.len() != self.items.len() {
            return Err(Error::Internal(
                "codec: images and source streams differ in number".into(),
            ));
        }
        let outs = self
            .items
            .iter()
            .map(|item| {
                jobs.iter()
                    .map(|&(c, sev)| item.output(cfg, c, sev))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let mut args: Vec<String> = Vec::new();
        for item in &self.items {
            args.extend(["-i".into(), path_str(&item.dir.join("src.mp4"))?]);
        }
        for (k, per_item) in outs.iter().enumerate() {
            for o in per_item {
                args.extend(["-map".into(), format!("{k}:v:0")]);
                args.extend(o.output_args().map(str::to_string));
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let step = match jobs {
            [(c, _)] => Item::step(*c),
            _ => "encode",
        };
        if let Err(e) = run(&self.ffmpeg, &batch_id(&self.items), step, &refs, None) {
            if self.items.len() == 1 {
                return Err(e);
            }
            return self.apply_one_by_one(cfg, jobs, imgs);
        }
        let videos: Vec<(usize, &Path)> = outs
            .iter()
            .enumerate()
            .flat_map(|(k, per_item)| per_item.iter().map(move |o| (k, o.path.as_path())))
            .collect();
        let mut decoded = self.decode_all(imgs, &videos)?.into_iter();
        Ok(outs
            .into_iter()
            .map(|per_item| {
                per_item
                    .into_iter()
                    .zip(decoded.by_ref())
                    .map(|(o, d)| (d, o.params))
                    .collect()
            })
            .collect())
    }

    /// The first frame of each `(image k, video)`, pasted over a copy of `imgs[k]`, from one
    /// ffmpeg run writing a raw frame per video; a video whose frame has another size, or a
    /// run that fails, falls back to [`decode`] for that video (or all of them), which reports
    /// the failure as it always did.
    fn decode_all(&self, imgs: &[&RgbImage], videos: &[(usize, &Path)]) -> Result<Vec<RgbImage>> {
        let raws: Vec<PathBuf> = videos
            .iter()
            .map(|(_, v)| v.with_extension("rgb"))
            .collect();
        let mut args: Vec<String> = Vec::new();
        for (_, v) in videos {
            args.extend(["-i".into(), path_str(v)?]);
        }
        for (k, raw) in raws.iter().enumerate() {
            args.extend(["-map".into(), format!("{k}:v:0")]);
            args.extend(
                ["-frames:v", "1", "-pix_fmt", "rgb24", "-f", "rawvideo"].map(str::to_string),
            );
            args.push(path_str(raw)?);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let together = run(&self.ffmpeg, &batch_id(&self.items), "decode", &refs, None).is_ok();
        videos
            .iter()
            .zip(&raws)
            .map(|(&(k, v), raw)| {
                let (item, img) = (&self.items[k], imgs[k]);
                let (w, h) = item.crop;
                let frame = together
                    .then(|| std::fs::read(raw).ok())
                    .flatten()
                    .and_then(|b| RgbImage::from_raw(w, h, b));
                match frame {
                    Some(dec) => Ok(paste(img, &dec)),
                    None => decode(&self.ffmpeg, img, item.crop, &item.image_id, v),
                }
            })
            .collect()
    }

    /// [`Sources::apply_all`] with each image in a batch of its own.
    fn apply_one_by_one(
        &self,
        cfg: &CorruptConfig,
        jobs: &[(Corruption, u8)],
        imgs: &[&RgbImage],
    ) -> Result<Vec<Vec<(RgbImage, Value)>>> {
        self.items
            .iter()
            .zip(imgs)
            .map(|(item, img)| {
                let one = Sources::encode(&self.ffmpeg, &[(img, &item.image_id)])?;
                Ok(one.apply_all(cfg, jobs, &[img])?.remove(0))
            })
            .collect()
    }
}

/// The image ids of a batch, for its errors.
fn batch_id(items: &[Item]) -> String {
    items
        .iter()
        .map(|i| i.image_id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Item {
    /// The name of the run that writes `corruption`'s stream, for its errors.
    fn step(corruption: Corruption) -> &'static str {
        match corruption {
            Corruption::H265 => "libx265 encode",
            _ => "noise bitstream filter",
        }
    }

    /// What ffmpeg writes for `corruption` at `severity`, and the metadata recorded with it.
    fn output(&self, cfg: &CorruptConfig, corruption: Corruption, severity: u8) -> Result<Output> {
        let dir = &self.dir;
        let source_bps = self.bits_per_second;
        let i = sev_index(severity);
        match corruption {
            Corruption::H265 => {
                let d = cfg.h265.bitrate_divisor[i];
                let target = (source_bps / u64::from(d)).max(1000);
                let rate = target.to_string();
                let path = dir.join(format!("h265-{severity}.mp4"));
                let mut options = vec!["-c:v".into(), "libx265".into()];
                for flag in ["-b:v", "-maxrate", "-bufsize"] {
                    options.extend([flag.to_string(), rate.clone()]);
                }
                options.extend([
                    "-x265-params".into(),
                    "log-level=error:pools=1:frame-threads=1".into(),
                ]);
                Ok(Output {
                    options,
                    path_text: path_str(&path)?,
                    path,
                    params: json!({"source_bitrate": source_bps, "divisor": d, "target_bitrate": target}),
                })
            }
            Corruption::BitError => {
                let n = cfg.bit_error.noise[i];
                let path = dir.join(format!("noisy-{severity}.mp4"));
                Ok(Output {
                    options: vec![
                        "-c".into(),
                        "copy".into(),
                        "-bsf:v".into(),
                        format!("noise=amount={n}"),
                    ],
                    path_text: path_str(&path)?,
                    path,
                    params: json!({"source_bitrate": source_bps, "noise": n}),
                })
            }
            other => Err(Error::invalid(other.name(), "is not a codec corruption")),
        }
    }
}

/// One stream ffmpeg writes from the source: its options, its file and the metadata that goes
/// with the corrupted image.
struct Output {
    options: Vec<String>,
    path: PathBuf,
    path_text: String,
    params: Value,
}

impl Output {
    /// This stream's options and file, as they follow its `-map` in an ffmpeg run.
    fn output_args(&self) -> impl Iterator<Item = &str> {
        self.options
            .iter()
            .map(String::as_str)
            .chain([self.path_text.as_str()])
    }
}
