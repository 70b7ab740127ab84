//! `configs/sig.toml`: grid extent and binning, vehicle types, relation rules, questions and
//! metric weights.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

pub const DEFAULT_TOML: &str = include_str!("../../configs/sig.toml");
pub(crate) const DEFAULT_NAME: &str = "configs/sig.toml (built in)";

/// The SIG vehicle types.
pub(crate) const TYPES: [&str; 4] = ["car", "truck", "van", "bus"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binning {
    Linear,
    Sqrt,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub columns: u32,
    pub rows: u32,
    pub lateral_min_m: f64,
    pub lateral_max_m: f64,
    pub forward_max_m: f64,
    pub binning: Binning,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Objects {
    pub types: BTreeMap<String, String>,
    pub min_box_area_px: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relations {
    pub proximal_bins: [f64; 4],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Questions {
    pub max_per_frame: usize,
    pub mc_options: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    pub max_alpha: u32,
    pub omega_match: f64,
    pub lambda_node: f64,
    pub eta_node_del: f64,
    pub eta_node_ins: f64,
    pub lambda_edge: f64,
    pub eta_edge_del: f64,
    pub eta_edge_ins: f64,
    pub ws_gamma: f64,
    pub ws_beta: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigConfig {
    pub grid: Grid,
    pub objects: Objects,
    pub relations: Relations,
    pub questions: Questions,
    pub metrics: Metrics,
}

impl crate::config::StageConfig for SigConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "sig config";

    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| Error::Config {
            file: file.to_path_buf(),
            detail,
        };
        let g = &self.grid;
        if g.columns == 0 || g.rows == 0 || g.columns > 1000 || g.rows > 1000 {
            return Err(bad(format!(
                "grid.columns and grid.rows must be within 1..=1000, got {} × {}",
                g.columns, g.rows
            )));
        }
        if !(g.lateral_min_m.is_finite()
            && g.lateral_max_m.is_finite()
            && g.lateral_min_m < 0.0
            && g.lateral_max_m > 0.0)
        {
            return Err(bad(format!(
                "grid.lateral_min_m must be < 0 < grid.lateral_max_m, got {} and {}",
                g.lateral_min_m, g.lateral_max_m
            )));
        }
        if !(g.forward_max_m.is_finite() && g.forward_max_m > 0.0) {
            return Err(bad(format!(
                "grid.forward_max_m must be positive, got {}",
                g.forward_max_m
            )));
        }
        for (class, t) in &self.objects.types {
            if !TYPES.contains(&t.as_str()) {
                return Err(bad(format!(
                    "objects.types.{class} = {t:?}: not one of {TYPES:?}"
                )));
            }
        }
        if !(self.objects.min_box_area_px.is_finite() && self.objects.min_box_area_px >= 0.0) {
            return Err(bad(
                "objects.min_box_area_px must be a non-negative number".into()
            ));
        }
        let b = &self.relations.proximal_bins;
        if !(b[0] > 0.0 && b.windows(2).all(|w| w[0] < w[1]) && b[3].is_finite()) {
            return Err(bad(format!(
                "relations.proximal_bins must be positive and strictly increasing, got {b:?}"
            )));
        }
        if self.questions.max_per_frame == 0 {
            return Err(bad(
                "questions.max_per_frame must be at least 1: with 0 no frame gets a relation \
                 question"
                    .into(),
            ));
        }
        if self.questions.mc_options < 2 || self.questions.mc_options > 5 {
            return Err(bad(format!(
                "questions.mc_options must be within 2..=5, got {}",
                self.questions.mc_options
            )));
        }
        let m = &self.metrics;
        if m.max_alpha == 0 {
            return Err(bad("metrics.max_alpha must be at least 1".into()));
        }
        if !(m.omega_match > 0.0 && m.omega_match <= 1.0) {
            return Err(bad(format!(
                "metrics.omega_match must be within (0, 1], got {}",
                m.omega_match
            )));
        }
        for (k, v) in [
            ("lambda_node", m.lambda_node),
            ("eta_node_del", m.eta_node_del),
            ("eta_node_ins", m.eta_node_ins),
            ("lambda_edge", m.lambda_edge),
            ("eta_edge_del", m.eta_edge_del),
            ("eta_edge_ins", m.eta_edge_ins),
            ("ws_gamma", m.ws_gamma),
            ("ws_beta", m.ws_beta),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(format!(
                    "metrics.{k} must be a non-negative number, got {v}"
                )));
            }
        }
        if m.eta_node_del + m.eta_node_ins <= 0.0 || m.eta_edge_del + m.eta_edge_ins <= 0.0 {
            return Err(bad(
                "metrics: deletion plus insertion costs must be positive".into(),
            ));
        }
        Ok(())
    }
}
