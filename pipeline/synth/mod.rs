//! The built-in synthetic corpus, written in any source layout of [`crate::formats`] ([`write`](fn@write)),
//! by default the exact nuScenes v1.0 layout.
//!
//! `drivegen synth --out DIR --scenes N --seed S` calls [`write`](fn@write) ([`write_nuscenes`] for the
//! nuScenes layout); the result loads in the official `nuscenes-devkit` (`NuScenes(version='v1.0-mini', dataroot=DIR)`) and in our own
//! ingest. The pieces:
//!
//! * [`world`]: a format-free world per scene — roads with lanes and a junction, the ego's drive
//!   from a manoeuvre script, agents of all 13 unified classes (23 nuScenes categories);
//! * [`rig`]: the real nuScenes six-camera rig and top lidar;
//! * [`render`]: a CPU renderer (sky, road plane with markings, z-buffered boxes), whose
//!   frames [`crate::jpeg`] encodes;
//! * [`nuscenes`]: the tables, images and point clouds;
//! * [`tokens`]: deterministic tokens and random streams (same seed → byte-identical corpus).
//!
//! # Ego manoeuvres and the EgoDyn answer classes
//!
//! Scene k drives [`world::SCRIPTS`]`[k mod 4]` (scene k is named `scene-{k+1:04}`). EgoDyn cuts
//! a 3 s clip ending at every keyframe from 3.0 s on (34 clips per 20 s scene) and answers 14
//! questions on it. The first three scenes together produce every answer class of all 14
//! questions, each scalar class at least 10 % inside its thresholds; `tests/it/ingest/synth/egodyn.rs` checks
//! this by recomputing the answers from the written `ego_pose` table. What each scene produces
//! (it depends on the script only, not on the seed):
//!
//! | question | scene 0 `junction-stop-go-left` | scene 1 `arterial-lanechange-brake-right` | scene 2 `lowbrake-emergency-stop-creep-jerky` | scene 3 `merge-highway-lanechanges` |
//! |---|---|---|---|---|
//! | turn direction | left, straight | left (lane change), **right**, straight | left, straight | left, right (lane changes), straight |
//! | braking | emergency (−2.1 m/s²), low, none | emergency (−3.6), **moderate** (−1.25), low, none | emergency (−4.9), moderate, **low** (−0.54), none | low (−0.5), none |
//! | speed regime | **stopped**, slow, urban | urban, **highway** (16 m/s) | slow, urban | urban, highway (17 m/s) |
//! | smoothness | smooth, moderate | smooth, moderate, aggressive | smooth, **moderate** (jerky driver, 1.76 m/s³), **aggressive** | smooth |
//! | speed trend | accelerating, decelerating, steady | all three | all three | all three |
//! | mean speed < 5 m/s | yes, no | no | yes, no | no |
//! | heading change | yes, no | yes, no | yes, no | no |
//! | extreme manoeuvre | no | no | **yes** (−4.9 m/s²), no | no |
//! | dominant motion axis | longitudinal, lateral, **none** | longitudinal, lateral | longitudinal, lateral | longitudinal, lateral |
//! | high lateral accel | **yes** (3.6 m/s²), no | yes, no | no | yes, no |
//! | brake-then-turn | no | **yes**, no | no | no |
//! | speed peak half | first, second, **no peak** | first, second, no peak | first, second | second, no peak |
//! | stop-and-go | **yes**, no | no | yes, no | no |
//! | contrastive sequence | first, second, similar | first, second, similar | first, second, similar | first, second, similar |
//!
//! Scene k is at nuScenes' location k mod 4: scene 0 drives on the right (boston-seaport),
//! scenes 1–3 on the left (the Singapore ones); the scripts are written in yaw terms, so the
//! classes do not depend on the side. The seed moves and turns the
//! scene in the map and draws the agents.

pub(crate) mod map;
pub(crate) mod nuscenes;
pub mod render;
pub(crate) mod rig;
pub(crate) mod tokens;
pub mod world;

pub mod bench2drive;
pub mod frenetix;
pub mod parquet_table;
pub(crate) mod uniform;
pub mod waymo;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthOptions {
    /// Number of scenes.
    pub scenes: usize,
    /// Seed of the world and everything drawn from it.
    pub seed: u64,
    /// Version folder name under the dataroot (the devkit's `version`).
    pub version: String,
    /// Scene length (s).
    pub duration_s: f64,
    /// Keyframe (sample) rate (Hz).
    pub keyframe_hz: f64,
    /// Camera frame rate (Hz); keyframe images are the frames nearest each sample.
    pub camera_hz: f64,
    /// Write the non-keyframe camera frames under `sweeps/`.
    pub write_sweeps: bool,
    /// With `write_sweeps`, only these cameras' (None: every camera's).
    pub sweep_cameras: Option<Vec<String>>,
    pub image_width: u32,
    pub image_height: u32,
    /// JPEG quality, 1..=100.
    pub jpeg_quality: u8,
}

impl Default for SynthOptions {
    fn default() -> Self {
        Self {
            scenes: 3,
            seed: 0,
            version: "v1.0-mini".into(),
            duration_s: 20.0,
            keyframe_hz: 2.0,
            camera_hz: 12.0,
            write_sweeps: true,
            sweep_cameras: None,
            image_width: rig::NATIVE_WIDTH,
            image_height: rig::NATIVE_HEIGHT,
            jpeg_quality: 88,
        }
    }
}

impl SynthOptions {
    /// Rejects option combinations that cannot make a valid dataset.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid("synth", m));
        if self.scenes == 0 {
            return bad("synth: --scenes must be at least 1".into());
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0 && self.duration_s <= 600.0) {
            return bad(format!(
                "synth: scene duration must be in (0, 600] s, got {}",
                self.duration_s
            ));
        }
        if !(self.keyframe_hz.is_finite() && self.keyframe_hz > 0.0) {
            return bad(format!(
                "synth: keyframe rate must be positive, got {}",
                self.keyframe_hz
            ));
        }
        if !(self.camera_hz.is_finite()
            && self.camera_hz >= self.keyframe_hz
            && self.camera_hz <= 100.0)
        {
            return bad(format!(
                "synth: camera rate must be between the keyframe rate ({}) and 100 Hz, got {}",
                self.keyframe_hz, self.camera_hz
            ));
        }
        if self.image_width < 16
            || self.image_height < 16
            || self.image_width > 8192
            || self.image_height > 8192
        {
            return bad(format!(
                "synth: image size {}x{} is out of range (16..8192)",
                self.image_width, self.image_height
            ));
        }
        if self.jpeg_quality == 0 || self.jpeg_quality > 100 {
            return bad(format!(
                "synth: JPEG quality must be in 1..=100, got {}",
                self.jpeg_quality
            ));
        }
        if self.version.is_empty()
            || self.version.contains(['/', '\\'])
            || self.version == "."
            || self.version == ".."
        {
            return bad(format!(
                "synth: invalid version folder name {:?}",
                self.version
            ));
        }
        Ok(())
    }
}

/// What [`write_nuscenes`] wrote.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SynthSummary {
    pub out: PathBuf,
    pub version: String,
    pub scenes: usize,
    pub samples: usize,
    pub sample_data: usize,
    pub ego_poses: usize,
    pub instances: usize,
    pub annotations: usize,
    /// Camera JPEGs written.
    pub images: usize,
    /// LIDAR_TOP `.pcd.bin` files written.
    pub lidar_files: usize,
    /// Mean wall time to render, encode and write one image, per worker thread (ms).
    pub render_ms_per_image: f64,
    pub elapsed_s: f64,
}

impl fmt::Display for SynthSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "wrote {} synthetic scenes ({}) to {}: {} samples, {} sample_data, {} ego poses, {} annotations of {} instances",
            self.scenes,
            self.version,
            self.out.display(),
            self.samples,
            self.sample_data,
            self.ego_poses,
            self.annotations,
            self.instances
        )?;
        write!(
            f,
            "{} camera images ({:.1} ms each per thread), {} lidar sweeps, in {:.1} s",
            self.images, self.render_ms_per_image, self.lidar_files, self.elapsed_s
        )
    }
}

/// Writes the synthetic corpus as a nuScenes dataroot at `out` (created; files already there
/// with the same names are replaced, each one atomically).
pub fn write_nuscenes(out: &Path, opts: &SynthOptions) -> Result<SynthSummary> {
    nuscenes::write(out, opts)
}

/// Writes the synthetic corpus at `out` in `format` (the one dispatch the CLI and the build
/// share) and says what it wrote. The nuScenes version folder and sweeps come from `opts`;
/// Waymo cameras get the default lens distortion.
pub(crate) fn write(
    format: crate::formats::Format,
    out: &Path,
    opts: &SynthOptions,
) -> Result<String> {
    use crate::formats::Format;
    Ok(match format {
        Format::Nuscenes => nuscenes::write(out, opts)?.to_string(),
        Format::WaymoV2 => waymo::write(
            out,
            &waymo::WaymoSynthOptions {
                base: opts.clone(),
                ..Default::default()
            },
        )?
        .to_string(),
        Format::Bench2drive => bench2drive::write(out, opts)?.to_string(),
        Format::Frenetix => frenetix::write(out, opts)?.to_string(),
    })
}
