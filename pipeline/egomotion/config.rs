//! `configs/egodyn.toml`: every constant of clip extraction, kinematics, validation, the oracle
//! and the prompts.
//!
//! The file in the repository is embedded as the default. A user's file replaces it whole and
//! must name every key (unknown or missing keys are errors), so a recalibrated or α-scaled config
//! written by [`crate::egomotion::calibrate`] is always complete and self-describing.
//!
//! The config is the bottom of the EgoDyn modules and depends on none of the others but
//! `savgol`: the rules its questions name (`rule`), the inputs those read (`inputs`) and the
//! checks that make a bad question fail at load (`questions`) are its own submodules. The
//! oracle compiles from it, and the prompts show what the oracle compiled.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(super) mod inputs;
pub(super) mod questions;
pub(super) mod rule;

pub(super) use self::inputs::FEATURES;
pub(super) use self::questions::{checked, Checked, Parsed};
pub(super) use self::rule::Rule;
use super::savgol::{EdgeMode, SavGol};
use crate::{Error, Result};

/// The embedded default config.
pub(crate) const DEFAULT_TOML: &str = include_str!("../../configs/egodyn.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/egodyn.toml (built in)";

/// The whole EgoDyn config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgodynConfig {
    /// Scales every α-scalable threshold (the paper's sensitivity study); 1.0 is nominal.
    pub alpha: f64,
    pub clips: ClipConfig,
    pub kinematics: KinematicsConfig,
    pub validation: ValidationConfig,
    pub prompt: PromptConfig,
    pub qa: QaConfig,
    /// The questions, in the order their records are written.
    pub questions: Vec<QuestionConfig>,
}

/// How clips are cut from a scene.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchoring {
    /// One clip per keyframe, looking back `duration_s` (nuScenes).
    KeyframeBackward,
    /// Windows of `window_samples` poses every `stride` samples (uniform logs: CARLA, Waymo).
    Sliding,
}

/// Where the ego poses of a clip come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoseSource {
    /// The ego pose at each image of `camera` (nuScenes: the `ego_pose` of each CAM_FRONT
    /// sample_data), as the released benchmark used.
    Camera,
    /// The `ego_poses` table (every pose the source logged).
    EgoPoses,
    /// The keyframes' ego poses.
    Frames,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipConfig {
    pub anchoring: Anchoring,
    pub pose_source: PoseSource,
    /// The camera whose images are shown (and, with `pose_source = "camera"`, whose poses are used).
    pub camera: String,
    /// Other names of `camera` in other sources (Waymo calls the front camera `FRONT`): a scene
    /// with no `camera` image uses the first of these it has.
    #[serde(default)]
    pub camera_aliases: Vec<String>,
    /// Clip length (s); the grid spans exactly this long for keyframe clips.
    pub duration_s: f64,
    /// Resampling rate (Hz); the grid has ceil(duration·rate) + 1 samples.
    pub sampling_hz: f64,
    /// Keyframe clips with fewer raw poses in the window are rejected.
    pub min_frames: usize,
    /// Keyframe clips whose raw poses span less than this fraction of `duration_s` are rejected.
    pub min_span_fraction: f64,
    /// Sliding windows: raw samples per window (31 at 10 Hz for 3 s).
    pub window_samples: usize,
    /// Sliding windows: start-to-start distance in samples (30: the boundary sample is shared).
    pub stride: usize,
}

/// How derivatives are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DerivativeScheme {
    /// `numpy.gradient`-style differences (central inside, one-sided at the ends), each stage's
    /// output smoothed by Savitzky–Golay before the next: what the released benchmark did.
    Gradient,
    /// Savitzky–Golay first derivative of the previous stage (positions, speed, accel, yaw).
    Savgol,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavgolConfig {
    pub window: usize,
    pub polyorder: usize,
    pub mode: EdgeMode,
    /// Fill value for `mode = "constant"`.
    pub cval: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KinematicsConfig {
    pub derivative: DerivativeScheme,
    pub savgol: SavgolConfig,
    /// Speed floor (m/s) of the curvature feature κ = ω / max(v, floor); not used by the oracle.
    pub curvature_speed_floor: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationConfig {
    /// Samples every clip's arrays must have (31).
    pub samples: usize,
    /// |grid duration − clips.duration_s| must not exceed this (s).
    pub duration_tolerance_s: f64,
    /// |first relative timestamp| must not exceed this (s).
    pub start_tolerance_s: f64,
    /// Plausibility filter: reject a clip whose peak |accel| or peak lateral accel exceeds this
    /// many g. 0 disables it (the CARLA extraction used 1.0).
    pub max_accel_g: f64,
    /// Standard gravity (m/s²) for `max_accel_g`.
    pub gravity: f64,
}

/// One trajectory encoding of `docs/egodyn.md` §6.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinatesFrame {
    /// Zero-centred on the first sample, global axes (what the benchmark showed).
    Global,
    /// Zero-centred and rotated into the first sample's heading (x forward, y left).
    Ego,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    /// Frames shown with each question, chosen evenly over the clip's images.
    pub frames: usize,
    /// Points of the time-series and coordinate encodings.
    pub trajectory_points: usize,
    pub coordinates_frame: CoordinatesFrame,
    /// The line after the options.
    pub answer_instruction: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QaConfig {
    /// Seed of the option shuffling (recorded in every QA row).
    pub seed: u64,
    /// Shuffle each question's options; off shows them in the config's order, as the paper lists them.
    pub shuffle_choices: bool,
}

/// Where a question's thresholds come from; `calibrate` rewrites only `percentile` ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Calibration {
    /// Physical limits (ISO/AASHTO, noise floors): platform independent.
    Physics,
    /// Fixed by meaning (speed limits, values quoted in the question text).
    Semantic,
    /// Percentiles of the pool: recomputed per platform.
    Percentile,
    /// Marked PLACEHOLDER in the reference; kept.
    Placeholder,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionConfig {
    /// snake_case question type (`turn_direction`, …).
    pub id: String,
    /// The question id in the reference implementation, for traceability.
    pub reference_id: String,
    /// Table 6 category.
    pub category: String,
    /// Counted in the temporal group.
    pub temporal: bool,
    /// Question text; `{name}`, `{name_kmh}`, `{name_deg}` insert a rule parameter.
    pub text: String,
    /// Answer options in their canonical order; the rule's class k is `choices[k]`.
    pub choices: Vec<String>,
    pub calibration: Calibration,
    /// For `percentile` questions: the percentiles (0–100) that become the thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Vec<f64>>,
    pub rule: Rule,
}

impl EgodynConfig {
    /// The config as TOML (what `calibrate` writes).
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string_pretty(self).map_err(|e| Error::Config {
            file: PathBuf::from("egodyn config"),
            detail: e.to_string(),
        })
    }

    /// The number of grid samples for a clip of `duration` seconds: ceil(duration·rate) + 1,
    /// where a product within 1e-9 of an integer counts as that integer (so float noise in the
    /// duration cannot add a sample).
    pub(crate) fn grid_samples(&self, duration: f64) -> usize {
        grid_samples(duration, self.clips.sampling_hz)
    }
}

impl crate::config::StageConfig for EgodynConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "egodyn config";
    const HASH_FORM: crate::config::HashForm = crate::config::HashForm::PrettyToml;

    /// Fails with a message naming the bad key.
    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| Error::Config {
            file: file.to_path_buf(),
            detail,
        };
        let c = &self.clips;
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(bad(format!("alpha must be positive, got {}", self.alpha)));
        }
        // A gravity of zero or below turns the plausibility limit into zero or a negative
        // number: every clip would be rejected, with exit 0.
        let (g, max_g) = (self.validation.gravity, self.validation.max_accel_g);
        if !(g.is_finite() && g > 0.0) {
            return Err(bad(format!(
                "validation.gravity must be positive (m/s², 9.80665 on Earth), got {g}"
            )));
        }
        if !(max_g.is_finite() && max_g >= 0.0) {
            return Err(bad(format!(
                "validation.max_accel_g must be ≥ 0 (0 turns the filter off), got {max_g}"
            )));
        }
        if !(c.duration_s.is_finite() && c.duration_s > 0.0) {
            return Err(bad(format!(
                "clips.duration_s must be positive, got {}",
                c.duration_s
            )));
        }
        if !(c.sampling_hz.is_finite() && c.sampling_hz > 0.0) {
            return Err(bad(format!(
                "clips.sampling_hz must be positive, got {}",
                c.sampling_hz
            )));
        }
        if !(0.0..=1.0).contains(&c.min_span_fraction) {
            return Err(bad("clips.min_span_fraction must be within [0, 1]".into()));
        }
        if c.min_frames < 2 {
            return Err(bad("clips.min_frames must be at least 2".into()));
        }
        if c.window_samples < 2 || c.stride == 0 {
            return Err(bad(
                "clips.window_samples must be ≥ 2 and clips.stride ≥ 1".into()
            ));
        }
        let s = &self.kinematics.savgol;
        SavGol::new(s.window, s.polyorder, 0, 1.0, s.mode, s.cval)
            .map_err(|e| bad(format!("kinematics.savgol: {}", e.report())))?;
        if self.kinematics.curvature_speed_floor <= 0.0 {
            return Err(bad(
                "kinematics.curvature_speed_floor must be positive".into()
            ));
        }
        let v = &self.validation;
        if v.samples < 2 {
            return Err(bad("validation.samples must be at least 2".into()));
        }
        if v.duration_tolerance_s < 0.0 || v.start_tolerance_s < 0.0 || v.max_accel_g < 0.0 {
            return Err(bad("validation tolerances must not be negative".into()));
        }
        if self.prompt.frames == 0 || self.prompt.trajectory_points == 0 {
            return Err(bad(
                "prompt.frames and prompt.trajectory_points must be positive".into(),
            ));
        }
        let mut ids = std::collections::BTreeSet::new();
        for q in &self.questions {
            if !ids.insert(q.id.as_str()) {
                return Err(bad(format!("question id {} appears twice", q.id)));
            }
            if q.id.is_empty()
                || !q
                    .id
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
            {
                return Err(bad(format!("question id {:?} is not snake_case", q.id)));
            }
            let distinct: std::collections::BTreeSet<_> = q.choices.iter().collect();
            if distinct.len() != q.choices.len() || q.choices.len() < 2 {
                return Err(bad(format!(
                    "question {}: choices must be ≥ 2 distinct options",
                    q.id
                )));
            }
            if q.calibration == Calibration::Percentile {
                let Some(p) = &q.percentiles else {
                    return Err(bad(format!(
                        "question {}: a percentile question needs `percentiles`",
                        q.id
                    )));
                };
                if p.iter().any(|x| !(0.0..=100.0).contains(x))
                    || p.windows(2).any(|w| w[0] >= w[1])
                {
                    return Err(bad(format!(
                        "question {}: percentiles must be ascending within [0, 100]",
                        q.id
                    )));
                }
            }
        }
        // Every rule (inputs, class counts, threshold order) and every text template, as the
        // oracle will compile them.
        for q in &self.questions {
            checked(q, self.alpha).map_err(bad)?;
        }
        Ok(())
    }
}

/// ceil(duration·rate) + 1, tolerant of float noise (see [`EgodynConfig::grid_samples`]).
pub(crate) fn grid_samples(duration: f64, rate: f64) -> usize {
    let x = duration * rate;
    if !(x.is_finite() && x >= 0.0) {
        return 0;
    }
    let r = x.round();
    let k = if (x - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        x.ceil()
    };
    k as usize + 1
}
