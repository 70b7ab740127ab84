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

/// Encodes the even-cropped image as a one-frame MPEG-4 Part 2 stream; returns the crop. The
/// frame goes to ffmpeg as raw RGB on a pipe: the same pixels a PNG would carry, without
/// deflating and inflating them.
fn encode_source(ffmpeg: &Path, img: &RgbImage, image_id: &str, dir: &Path) -> Result<(u32, u32)> {
    let (w, h) = (img.width() & !1, img.height() & !1);
    if w == 0 || h == 0 {
        return Err(Error::input(
            image_id,
            "image",
            "too small for a codec (needs 2×2)",
        ));
    }
    let crop = image::imageops::crop_imm(img, 0, 0, w, h).to_image();
    let fps = FPS.to_string();
    let size = format!("{w}x{h}");
    run(
        ffmpeg,
        image_id,
        "mpeg4 encode",
        &[
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            &size,
            "-framerate",
            &fps,
            "-i",
            "pipe:0",
            "-c:v",
            "mpeg4",
            "-pix_fmt",
            "yuv420p",
            "-threads",
            "1",
            "-f",
            "mp4",
            &path_str(&dir.join("src.mp4"))?,
        ],
        Some(crop.as_raw()),
    )?;
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
        .to_rgb8())
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
    Source::encode(ffmpeg, img, image_id)?.apply(cfg, corruption, severity, img)
}

/// One image's source stream, encoded once and shared by every codec corruption and severity
/// of that image (each starts from the same one-frame MPEG-4 stream).
pub struct Source {
    ffmpeg: PathBuf,
    image_id: String,
    scratch: Scratch,
    crop: (u32, u32),
    bits_per_second: u64,
}

impl Source {
    /// Encodes `img` as the one-frame source stream.
    pub fn encode(ffmpeg: &Path, img: &RgbImage, image_id: &str) -> Result<Source> {
        let scratch = Scratch::new()?;
        let crop = encode_source(ffmpeg, img, image_id, &scratch.0)?;
        let src = scratch.0.join("src.mp4");
        let bytes = std::fs::metadata(&src)
            .map_err(|e| Error::io(&src, e))?
            .len();
        Ok(Source {
            ffmpeg: ffmpeg.to_path_buf(),
            image_id: image_id.to_string(),
            scratch,
            crop,
            bits_per_second: bytes * 8 * u64::from(FPS),
        })
    }

    /// `corruption` at `severity` on `img` (the image the stream was encoded from): the
    /// corrupted image and its metadata. Calls on one source may run side by side.
    pub fn apply(
        &self,
        cfg: &CorruptConfig,
        corruption: Corruption,
        severity: u8,
        img: &RgbImage,
    ) -> Result<(RgbImage, Value)> {
        let out = self.output(cfg, corruption, severity)?;
        run(
            &self.ffmpeg,
            &self.image_id,
            out.step,
            &out.args(&self.src()?),
            None,
        )?;
        let dec = decode(&self.ffmpeg, img, self.crop, &self.image_id, &out.path)?;
        Ok((dec, out.params))
    }

    /// Every `(corruption, severity)` of `jobs` on `img`, in that order: the same images and
    /// metadata as [`Source::apply`] one by one, from two ffmpeg runs (one writes every
    /// stream, one decodes them all) instead of two per job. Starting ffmpeg (loading and
    /// linking its libraries) costs more than coding one small frame.
    pub fn apply_all(
        &self,
        cfg: &CorruptConfig,
        jobs: &[(Corruption, u8)],
        img: &RgbImage,
    ) -> Result<Vec<(RgbImage, Value)>> {
        if jobs.len() == 1 {
            return Ok(vec![self.apply(cfg, jobs[0].0, jobs[0].1, img)?]);
        }
        let outs = jobs
            .iter()
            .map(|&(c, sev)| self.output(cfg, c, sev))
            .collect::<Result<Vec<_>>>()?;
        let src = self.src()?;
        let mut refs = vec!["-i", src.as_str()];
        for o in &outs {
            refs.extend(o.output_args());
        }
        run(&self.ffmpeg, &self.image_id, "encode", &refs, None)?;
        let paths: Vec<&Path> = outs.iter().map(|o| o.path.as_path()).collect();
        let decoded = self.decode_all(img, &paths)?;
        Ok(decoded
            .into_iter()
            .zip(outs)
            .map(|(d, o)| (d, o.params))
            .collect())
    }

    fn src(&self) -> Result<String> {
        path_str(&self.scratch.0.join("src.mp4"))
    }

    /// What ffmpeg writes for `corruption` at `severity`, and the metadata recorded with it.
    fn output(&self, cfg: &CorruptConfig, corruption: Corruption, severity: u8) -> Result<Output> {
        let dir = &self.scratch.0;
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
                    step: "libx265 encode",
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
                    step: "noise bitstream filter",
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

    /// The first frame of each of `videos`, pasted over a copy of `img`, from one ffmpeg run
    /// writing a raw frame per video; a video whose frame has another size, or a run that
    /// fails, falls back to [`decode`] for that video (or all of them), which reports the
    /// failure as it always did.
    fn decode_all(&self, img: &RgbImage, videos: &[&Path]) -> Result<Vec<RgbImage>> {
        let (w, h) = self.crop;
        let raws: Vec<PathBuf> = videos.iter().map(|v| v.with_extension("rgb")).collect();
        let mut args: Vec<String> = Vec::new();
        for v in videos {
            args.extend(["-i".into(), path_str(v)?]);
        }
        for (k, raw) in raws.iter().enumerate() {
            args.extend(
                [
                    "-map",
                    &format!("{k}:v:0"),
                    "-frames:v",
                    "1",
                    "-pix_fmt",
                    "rgb24",
                ]
                .map(str::to_string),
            );
            args.extend(["-f".into(), "rawvideo".into(), path_str(raw)?]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let together = run(&self.ffmpeg, &self.image_id, "decode", &refs, None).is_ok();
        let id = self.image_id.as_str();
        videos
            .iter()
            .zip(&raws)
            .map(|(v, raw)| {
                let frame = together
                    .then(|| std::fs::read(raw).ok())
                    .flatten()
                    .and_then(|b| RgbImage::from_raw(w, h, b));
                match frame {
                    Some(dec) => Ok(paste(img, &dec)),
                    None => decode(&self.ffmpeg, img, self.crop, id, v),
                }
            })
            .collect()
    }
}

/// One stream ffmpeg writes from the source: its options, its file and the metadata that goes
/// with the corrupted image.
struct Output {
    step: &'static str,
    options: Vec<String>,
    path: PathBuf,
    path_text: String,
    params: Value,
}

impl Output {
    /// The arguments of an ffmpeg run writing this stream alone from `src`.
    fn args<'a>(&'a self, src: &'a str) -> Vec<&'a str> {
        let mut a = vec!["-i", src];
        a.extend(self.output_args());
        a
    }

    /// This stream's options and file, as they follow the input in an ffmpeg run.
    fn output_args(&self) -> impl Iterator<Item = &str> {
        self.options
            .iter()
            .map(String::as_str)
            .chain([self.path_text.as_str()])
    }
}
