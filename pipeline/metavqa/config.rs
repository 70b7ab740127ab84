//! `configs/metavqa.toml`: bins, rule thresholds, the ego box, display names, the rollout model
//! and the per-type weights.
//!
//! The file in the repository is embedded as the default. A user's file replaces it whole and
//! must name every key (unknown or missing keys are errors).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::types::QuestionType;
use crate::{Error, Result};

/// The embedded default config.
pub(crate) const DEFAULT_TOML: &str = include_str!("../../configs/metavqa.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/metavqa.toml (built in)";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetavqaConfig {
    pub seed: u64,
    /// Questions kept per camera image; 0 keeps them all (no cap).
    pub per_frame: u32,
    pub ego: EgoConfig,
    pub bins: BinsConfig,
    pub rules: RulesConfig,
    pub class_names: BTreeMap<String, String>,
    pub rollout: RolloutConfig,
    pub weights: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgoConfig {
    pub width_m: f64,
    pub length_m: f64,
    pub center_offset_m: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BinsConfig {
    pub distance_edges_m: Vec<f64>,
    pub distance_names: Vec<String>,
    pub distance_ranges: Vec<String>,
    pub speed_edges_mps: Vec<f64>,
    pub speed_names: Vec<String>,
    pub speed_ranges: Vec<String>,
    pub heading_edges_deg: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesConfig {
    pub same_distance_m: f64,
    pub same_heading_deg: f64,
    pub crash_steps: u32,
    pub crash_step_m: f64,
    pub order_min_gap_m: f64,
    pub classes_without_heading: Vec<String>,
    pub color_attribute_prefix: String,
    pub colors: Vec<String>,
    pub describe_sectors: Vec<String>,
    /// Embodied questions per image; 0 asks none (the way to leave the type out).
    pub embodied_per_image: u32,
    /// Grounding questions per image; 0 asks none.
    pub grounding_per_image: u32,
    pub grounding_labels: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutConfig {
    pub dt_s: f64,
    pub wheelbase_m: f64,
    pub max_steer_deg: f64,
    pub max_accel_mps2: f64,
    pub max_decel_mps2: f64,
    pub duration_steps: Vec<u32>,
    pub collision_substeps: u32,
    pub speeds_mps: Vec<Vec<f64>>,
    pub actions: Vec<ActionConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionConfig {
    pub name: String,
    pub steer: f64,
    pub throttle: f64,
}

impl MetavqaConfig {
    /// The weight of a question type (present for every type after validation).
    pub fn weight(&self, t: QuestionType) -> f64 {
        self.weights.get(t.name()).copied().unwrap_or(0.0)
    }

    /// The display name of a unified class (the class itself when unnamed).
    pub(crate) fn class_name<'a>(&'a self, class: &'a str) -> &'a str {
        self.class_names.get(class).map_or(class, String::as_str)
    }

    /// The scalar lengths, thresholds and rollout limits: positive, or at least finite and ≥ 0
    /// where zero is meaningful.
    fn check_numbers(&self) -> Check {
        for (name, v) in [
            ("ego.width_m", self.ego.width_m),
            ("ego.length_m", self.ego.length_m),
            ("rules.same_heading_deg", self.rules.same_heading_deg),
            ("rules.crash_step_m", self.rules.crash_step_m),
            ("rollout.dt_s", self.rollout.dt_s),
            ("rollout.wheelbase_m", self.rollout.wheelbase_m),
            ("rollout.max_steer_deg", self.rollout.max_steer_deg),
            ("rollout.max_accel_mps2", self.rollout.max_accel_mps2),
            ("rollout.max_decel_mps2", self.rollout.max_decel_mps2),
        ] {
            if !positive(v) {
                return Err(format!("{name} must be a positive number, got {v}"));
            }
        }
        for (name, v) in [
            ("ego.center_offset_m", self.ego.center_offset_m),
            ("rules.same_distance_m", self.rules.same_distance_m),
            ("rules.order_min_gap_m", self.rules.order_min_gap_m),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be a finite number ≥ 0, got {v}"));
            }
        }
        if self.rollout.max_steer_deg >= 90.0 {
            return Err("rollout.max_steer_deg must be below 90".into());
        }
        Ok(())
    }

    /// The distance, speed and heading bins: edges, and one name and range text per bin.
    fn check_bins(&self) -> Check {
        let b = &self.bins;
        for (name, edges, names, ranges) in [
            (
                "bins.distance",
                &b.distance_edges_m,
                &b.distance_names,
                &b.distance_ranges,
            ),
            (
                "bins.speed",
                &b.speed_edges_mps,
                &b.speed_names,
                &b.speed_ranges,
            ),
        ] {
            if edges.is_empty()
                || edges.iter().any(|e| !positive(*e))
                || edges.windows(2).any(|w| w[0] >= w[1])
            {
                return Err(format!(
                    "{name}_edges must be positive and strictly increasing"
                ));
            }
            if names.len() != edges.len() + 1 || ranges.len() != edges.len() + 1 {
                return Err(format!(
                    "{name}_names and {name}_ranges need {} entries (one more than the edges)",
                    edges.len() + 1
                ));
            }
            let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
            if distinct.len() != names.len() {
                return Err(format!("{name}_names must be distinct"));
            }
        }
        if b.distance_names.len() < 2 {
            return Err("bins.distance_names needs at least 2 bins".into());
        }
        let h = &b.heading_edges_deg;
        if h.len() != 8
            || h.iter().any(|e| !(e.is_finite() && *e > 0.0 && *e < 360.0))
            || h.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(
                "bins.heading_edges_deg must be 8 strictly increasing angles in (0, 360)".into(),
            );
        }
        Ok(())
    }

    /// The question rules' counts and vocabularies.
    fn check_rules(&self) -> Check {
        let r = &self.rules;
        if r.crash_steps == 0 || r.crash_steps > 10_000 {
            return Err(format!(
                "rules.crash_steps must be within 1..=10000, got {}",
                r.crash_steps
            ));
        }
        let colors: std::collections::BTreeSet<&String> = r.colors.iter().collect();
        if colors.len() != r.colors.len() || r.colors.len() < 4 {
            return Err("rules.colors must hold at least 4 distinct names".into());
        }
        for s in &r.describe_sectors {
            if super::relations::Pos::from_code(s).is_none() {
                return Err(format!(
                    "rules.describe_sectors: unknown sector {s:?} (l, r, f, b, lf, rf, lb, rb)"
                ));
            }
        }
        if !(4..=1000).contains(&r.grounding_labels) {
            return Err(format!(
                "rules.grounding_labels must be within 4..=1000, got {}",
                r.grounding_labels
            ));
        }
        if r.embodied_per_image > 100 || r.grounding_per_image > 100 {
            return Err("rules.embodied_per_image and grounding_per_image must be ≤ 100".into());
        }
        Ok(())
    }

    /// The rollout model: actions, durations, substeps and one speed list per speed bin.
    fn check_rollout(&self) -> Check {
        let ro = &self.rollout;
        if ro.actions.is_empty()
            || ro.actions.iter().any(|a| {
                a.name.is_empty()
                    || !a.steer.is_finite()
                    || !a.throttle.is_finite()
                    || a.steer.abs() > 1.0
                    || a.throttle.abs() > 1.0
            })
        {
            return Err(
                "rollout.actions: each needs a name and steer, throttle within [-1, 1]".into(),
            );
        }
        if ro.duration_steps.is_empty() || ro.duration_steps.iter().any(|&d| d == 0 || d > 1000) {
            return Err("rollout.duration_steps must be within 1..=1000".into());
        }
        if !(1..=100).contains(&ro.collision_substeps) {
            return Err("rollout.collision_substeps must be within 1..=100".into());
        }
        if ro.speeds_mps.len() != self.bins.speed_names.len()
            || ro
                .speeds_mps
                .iter()
                .any(|s| s.is_empty() || s.iter().any(|v| !(v.is_finite() && *v >= 0.0)))
        {
            return Err(format!(
                "rollout.speeds_mps needs one non-empty list of speeds ≥ 0 per speed bin ({})",
                self.bins.speed_names.len()
            ));
        }
        Ok(())
    }

    /// A weight ≥ 0 for every question type, and none for an unknown one.
    fn check_weights(&self) -> Check {
        for t in QuestionType::ALL {
            match self.weights.get(t.name()) {
                Some(w) if w.is_finite() && *w >= 0.0 => {}
                Some(w) => return Err(format!("weights.{}: must be ≥ 0, got {w}", t.name())),
                None => return Err(format!("weights.{} is missing", t.name())),
            }
        }
        if let Some(k) = self
            .weights
            .keys()
            .find(|k| QuestionType::parse(k).is_none())
        {
            return Err(format!("weights.{k}: not a MetaVQA question type"));
        }
        Ok(())
    }
}

impl crate::config::StageConfig for MetavqaConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "metavqa config";

    /// Fails with a message naming the bad key.
    fn validate(&self, file: &Path) -> Result<()> {
        self.check_numbers()
            .and_then(|()| self.check_bins())
            .and_then(|()| self.check_rules())
            .and_then(|()| self.check_rollout())
            .and_then(|()| self.check_weights())
            .map_err(|detail| Error::Config {
                file: file.to_path_buf(),
                detail,
            })
    }
}

/// One group of checks: the detail of the first failure.
type Check = std::result::Result<(), String>;

/// A finite number above zero.
fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn default_loads_and_bad_values_are_named() {
        let cfg = MetavqaConfig::default_config().unwrap();
        assert_eq!(cfg.bins.distance_edges_m, vec![2.0, 10.0, 30.0]);
        assert_eq!(cfg.rollout.actions.len(), 5);
        let text = DEFAULT_TOML.replace("crash_steps = 50", "crash_steps = 0");
        let e = MetavqaConfig::from_toml(&text, Path::new("x.toml")).unwrap_err();
        assert!(e.report().to_string().contains("rules.crash_steps"), "{e}");
        let text = DEFAULT_TOML.replace("grounding = 1.0", "grounding = -1.0");
        let e = MetavqaConfig::from_toml(&text, Path::new("x.toml")).unwrap_err();
        assert!(e.report().to_string().contains("weights.grounding"), "{e}");
        let text = DEFAULT_TOML.replace("grounding = 1.0", "groundling = 1.0");
        assert!(MetavqaConfig::from_toml(&text, Path::new("x.toml")).is_err());
    }
}
