//! `configs/som.toml`: the anchor rules, the drawing style and the label search.
//!
//! The file in the repository is embedded as the default. A user's file replaces it whole and
//! must name every key (unknown or missing keys are errors).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::visibility::anchor::{AnchorConfig, AnchorRules, BoxKind};
use crate::{Error, Result};

/// The embedded default config.
pub const DEFAULT_TOML: &str = include_str!("../../configs/som.toml");
/// The name errors give the embedded default.
pub(crate) const DEFAULT_NAME: &str = "configs/som.toml (built in)";

/// The whole Set-of-Mark config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SomConfig {
    pub anchor: AnchorConfig,
    pub draw: DrawConfig,
    pub layout: LayoutConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawConfig {
    #[serde(rename = "box")]
    pub box_kind: BoxKind,
    pub box_thickness_px: u32,
    /// Integer scale of the 7×11 digit bitmaps.
    pub glyph_scale: u32,
    pub label_padding_px: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutConfig {
    pub search_step_px: u32,
    pub search_rings: u32,
}

impl SomConfig {
    /// The rules that place the labels' anchors (what the visibility table must be made with).
    pub fn anchor_rules(&self) -> AnchorRules {
        AnchorRules {
            anchor: self.anchor.clone(),
            box_kind: self.draw.box_kind,
        }
    }
}

impl crate::config::StageConfig for SomConfig {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = DEFAULT_NAME;
    const WHAT: &'static str = "som config";

    /// Fails with a message naming the bad key.
    fn validate(&self, file: &Path) -> Result<()> {
        let bad = |detail: String| {
            Err(Error::Config {
                file: file.to_path_buf(),
                detail,
            })
        };
        let checks: [(&str, u32, u32, u32); 4] = [
            ("anchor.border_px", self.anchor.border_px, 0, 1024),
            ("anchor.ring_px", self.anchor.ring_px, 1, 1024),
            ("layout.search_step_px", self.layout.search_step_px, 1, 1024),
            ("layout.search_rings", self.layout.search_rings, 0, 4096),
        ];
        for (name, v, lo, hi) in checks {
            if !(lo..=hi).contains(&v) {
                return bad(format!("{name} must be within {lo}..={hi}, got {v}"));
            }
        }
        self.draw.check().or_else(bad)
    }
}

impl DrawConfig {
    /// Why these settings cannot be drawn with, naming the key, if they cannot (also checked
    /// where a marked-images table brings its own).
    pub fn check(&self) -> std::result::Result<(), String> {
        let checks: [(&str, u32, u32, u32); 3] = [
            ("draw.box_thickness_px", self.box_thickness_px, 1, 64),
            ("draw.glyph_scale", self.glyph_scale, 1, 16),
            ("draw.label_padding_px", self.label_padding_px, 0, 64),
        ];
        for (name, v, lo, hi) in checks {
            if !(lo..=hi).contains(&v) {
                return Err(format!("{name} must be within {lo}..={hi}, got {v}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn default_loads_and_bad_values_are_named() {
        let cfg = SomConfig::default_config().unwrap();
        assert_eq!(cfg.anchor.border_px, 4);
        assert_eq!(cfg.anchor.small_object_pixels, 1600);
        assert_eq!(cfg.anchor.ring_px, 20);
        assert_eq!(cfg.draw.box_kind, BoxKind::Modal);
        let text = DEFAULT_TOML.replace("glyph_scale = 2", "glyph_scale = 0");
        let e = SomConfig::from_toml(&text, Path::new("x.toml")).unwrap_err();
        assert!(e.report().to_string().contains("draw.glyph_scale"), "{e}");
        let text = DEFAULT_TOML.replace("box = \"modal\"", "box = \"mask\"");
        assert!(SomConfig::from_toml(&text, Path::new("x.toml")).is_err());
    }
}
