//! `configs/visibility.toml`: the near plane, the image-size limit and every filter threshold.
//!
//! The file in the repository is embedded as the default. A user's file replaces it whole and
//! must name every key (unknown or missing keys are errors).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The embedded default config.
pub const DEFAULT_TOML: &str = include_str!("../../configs/visibility.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/visibility.toml (built in)";

/// The whole visibility config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisibilityConfig {
    pub projection: ProjectionConfig,
    pub raster: RasterConfig,
    pub filters: FilterConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectionConfig {
    /// Near plane (m, camera-frame z): geometry in front of it is kept, the rest clipped away.
    pub near_m: f64,
    /// Cameras with lens distortion: face triangles are split until the images of their edges
    /// are straight to within this (px), so silhouettes follow the curved images of box edges.
    #[serde(default = "default_lens_chord_tolerance_px")]
    pub lens_chord_tolerance_px: f64,
}

/// The built-in tessellation tolerance (kept equal to `configs/visibility.toml`).
pub(crate) fn default_lens_chord_tolerance_px() -> f64 {
    0.05
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RasterConfig {
    /// Camera images with more pixels are rejected.
    pub max_image_pixels: u64,
}

/// The selection thresholds (`docs/metavqa.md` §2.1); see [`super::filters`] for their order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Exact category names, or `prefix.*` patterns.
    pub ignored_categories: Vec<String>,
    pub visibility_bins: Vec<u8>,
    pub allow_missing_visibility: bool,
    pub min_lidar_points: u32,
    pub max_distance_m: f64,
    pub min_truncation: f64,
    pub min_visible_pixels: u32,
    pub min_visible_fraction: f64,
}

impl crate::config::StageConfig for VisibilityConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "visibility config";

    /// Fails with a message naming the bad key.
    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| Error::Config {
            file: file.to_path_buf(),
            detail,
        };
        let near = self.projection.near_m;
        if !(near.is_finite() && (1e-3..=100.0).contains(&near)) {
            return Err(bad(format!(
                "projection.near_m must be within [0.001, 100] m, got {near}"
            )));
        }
        let tol = self.projection.lens_chord_tolerance_px;
        if !(tol.is_finite() && (0.001..=100.0).contains(&tol)) {
            return Err(bad(format!(
                "projection.lens_chord_tolerance_px must be within [0.001, 100] px, got {tol}"
            )));
        }
        if self.raster.max_image_pixels == 0 {
            return Err(bad("raster.max_image_pixels must be positive".into()));
        }
        let f = &self.filters;
        for c in &f.ignored_categories {
            let stem = c.strip_suffix(".*").unwrap_or(c);
            if stem.is_empty() || stem.contains('*') {
                return Err(bad(format!(
                    "filters.ignored_categories: {c:?} is neither a category nor a `prefix.*` pattern"
                )));
            }
        }
        if !(f.max_distance_m.is_finite() && f.max_distance_m >= 0.0) {
            return Err(bad(format!(
                "filters.max_distance_m must be a non-negative number, got {}",
                f.max_distance_m
            )));
        }
        for (name, v) in [
            ("min_truncation", f.min_truncation),
            ("min_visible_fraction", f.min_visible_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(bad(format!(
                    "filters.{name} must be within [0, 1], got {v}"
                )));
            }
        }
        Ok(())
    }
}
