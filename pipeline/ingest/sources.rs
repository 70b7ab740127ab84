//! Ingest rules of the Waymo v2, CARLA (Bench2Drive) and Frenetix sources
//! (`configs/sources.toml`), loaded like every other config: embedded default, `--config FILE`
//! override, validated, hashed.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The embedded default.
pub(crate) const DEFAULT_TOML: &str = include_str!("../../configs/sources.toml");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcesConfig {
    pub waymo: WaymoRules,
    pub carla: CarlaRules,
    pub frenetix: FrenetixRules,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaymoRules {
    pub rotation_tolerance: f64,
    pub check_images: bool,
    pub image_batch_rows: usize,
    pub batch_rows: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarlaRules {
    pub frame_rate_hz: f64,
    pub cameras: Vec<String>,
    pub image_folders: Vec<String>,
    pub object_classes: Vec<String>,
    pub rotation_tolerance: f64,
    pub check_images: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrenetixRules {
    pub dt_s: f64,
    pub delimiter: String,
    pub x_column: String,
    pub y_column: String,
    pub theta_column: String,
    pub velocity_column: String,
}

impl crate::config::StageConfig for SourcesConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = "configs/sources.toml";
    const WHAT: &'static str = "configs/sources.toml";
    /// A short hash of the effective rules (first 8 bytes of SHA-256 of their JSON form).
    const HASH_FORM: crate::config::HashForm = crate::config::HashForm::Json;

    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| {
            Err(Error::Config {
                file: file.to_path_buf(),
                detail,
            })
        };
        let tol_ok = |t: f64| t.is_finite() && t > 0.0 && t < 0.5;
        if !tol_ok(self.waymo.rotation_tolerance) || !tol_ok(self.carla.rotation_tolerance) {
            return bad("rotation_tolerance must be in (0, 0.5)".into());
        }
        if self.waymo.image_batch_rows == 0 || self.waymo.batch_rows == 0 {
            return bad("waymo.image_batch_rows and waymo.batch_rows must be at least 1".into());
        }
        if !(self.carla.frame_rate_hz.is_finite() && self.carla.frame_rate_hz > 0.0) {
            return bad(format!(
                "carla.frame_rate_hz must be positive, got {}",
                self.carla.frame_rate_hz
            ));
        }
        if self.carla.cameras.len() != self.carla.image_folders.len() {
            return bad("carla.cameras and carla.image_folders must have the same length".into());
        }
        if !(self.frenetix.dt_s.is_finite() && self.frenetix.dt_s > 0.0) {
            return bad(format!(
                "frenetix.dt_s must be positive, got {}",
                self.frenetix.dt_s
            ));
        }
        if self.frenetix.delimiter.chars().count() != 1 || self.frenetix.delimiter == "," {
            return bad("frenetix.delimiter must be one character other than ','".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn default_loads_and_bad_values_are_refused() {
        let c = SourcesConfig::load(None).unwrap();
        assert_eq!(c.carla.cameras.len(), 6);
        assert!((c.frenetix.dt_s - 0.1).abs() < 1e-12);
        let text = DEFAULT_TOML.replace("frame_rate_hz = 10.0", "frame_rate_hz = -1.0");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        let e = SourcesConfig::load(Some(&p))
            .unwrap_err()
            .report()
            .to_string();
        assert!(e.contains("frame_rate_hz"), "{e}");
    }
}
