//! The rules that place Set-of-Mark anchors ([`AnchorRules`]): the `[anchor]` section and the
//! drawn box kind of the Set-of-Mark config, recorded in the visibility table's metadata so the
//! stages that read the anchors can refuse a table made under other rules.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Where Set-of-Mark labels are anchored: the `[anchor]` section of `configs/som.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorConfig {
    /// Pixels within this distance of the image border count as outside every mask.
    pub border_px: u32,
    /// Objects with fewer visible pixels get a ring anchor outside their box.
    pub small_object_pixels: u32,
    /// Thickness of that ring (px).
    pub ring_px: u32,
}

/// Which rectangle of an object is drawn, and ringed for small objects (`[draw] box` of
/// `configs/som.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoxKind {
    /// The tight box of the visible pixels (`modal_*` of the visibility table).
    Modal,
    /// The projected box clamped to the image (`amodal_*`).
    Amodal,
}

/// Everything that decides where a label is anchored: the `[anchor]` section and the box kind
/// of the effective Set-of-Mark config. The visibility stage anchors every object under these
/// rules and records them in its table's metadata ([`RULES_KEY`]); the Set-of-Mark and MetaVQA
/// stages read the anchors from the table through [`crate::visibility::table::KeptScenes`],
/// which refuses one made under other rules, so both always mark the same pixel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnchorRules {
    pub anchor: AnchorConfig,
    #[serde(rename = "box")]
    pub box_kind: BoxKind,
}

/// The visibility table's metadata key holding the [`AnchorRules`] (JSON) of its anchors.
pub const RULES_KEY: &str = "drivegen:anchor_rules";

impl AnchorRules {
    /// The rules of the built-in `configs/som.toml`.
    pub fn built_in() -> Result<AnchorRules> {
        #[derive(Deserialize)]
        struct Draw {
            #[serde(rename = "box")]
            box_kind: BoxKind,
        }
        #[derive(Deserialize)]
        struct File {
            anchor: AnchorConfig,
            draw: Draw,
        }
        let text = include_str!("../../../configs/som.toml");
        toml::from_str::<File>(text)
            .map(|f| AnchorRules {
                anchor: f.anchor,
                box_kind: f.draw.box_kind,
            })
            .map_err(|e| Error::Config {
                file: "configs/som.toml (built in)".into(),
                detail: e.to_string(),
            })
    }

    /// The rules as the table's metadata records them.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Refuses the visibility table at `path` (its `schema`) when its anchors were placed under
    /// other rules than `self`, naming both and the way out.
    pub(crate) fn check_table(
        &self,
        path: &std::path::Path,
        schema: &arrow::datatypes::Schema,
    ) -> Result<()> {
        if schema.column_with_name("anchor_x").is_none() {
            return Err(Error::input(
                path,
                "column anchor_x",
                "missing: not a visibility table",
            ));
        }
        let Some(text) = schema.metadata().get(RULES_KEY) else {
            return Err(Error::input(
                path,
                "visibility table",
                "it records no anchor rules (made by an older drivegen): run `drivegen \
                 visibility` again",
            ));
        };
        let theirs: AnchorRules = serde_json::from_str(text)
            .map_err(|e| Error::input(path, "visibility table", format!("{RULES_KEY}: {e}")))?;
        if &theirs != self {
            return Err(Error::input(
                path,
                "visibility table",
                format!(
                    "its anchors were placed under {}, this Set-of-Mark config asks for {}: run \
                     `drivegen visibility --som-config` with the same config",
                    theirs.to_json(),
                    self.to_json()
                ),
            ));
        }
        Ok(())
    }

    /// The box of an object that is drawn and ringed, pixel edges inside the image: the modal
    /// box (the amodal one when nothing is visible) or the amodal box clamped to the image.
    pub(crate) fn object_box(
        &self,
        amodal: [f64; 4],
        modal: Option<[u32; 4]>,
        width: u32,
        height: u32,
    ) -> [u32; 4] {
        let clamped = || {
            let clamp = |v: f64, n: u32| v.clamp(0.0, f64::from(n));
            [
                clamp(amodal[0].floor(), width) as u32,
                clamp(amodal[1].floor(), height) as u32,
                clamp(amodal[2].ceil(), width) as u32,
                clamp(amodal[3].ceil(), height) as u32,
            ]
        };
        match self.box_kind {
            BoxKind::Modal => modal.unwrap_or_else(clamped),
            BoxKind::Amodal => clamped(),
        }
    }
}
