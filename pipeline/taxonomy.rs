//! The unified class taxonomy (`configs/taxonomy.toml`): every source's category names map to
//! one small set of classes, so question families never see source-specific names.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The embedded default taxonomy.
pub(crate) const DEFAULT_TOML: &str = include_str!("../configs/taxonomy.toml");

/// Category → class maps per source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Taxonomy {
    pub classes: Vec<String>,
    pub fallback: String,
    #[serde(default)]
    pub nuscenes: BTreeMap<String, String>,
    #[serde(default)]
    pub waymo: BTreeMap<String, String>,
    #[serde(default)]
    pub carla: BTreeMap<String, String>,
}

impl crate::config::StageConfig for Taxonomy {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_NAME: &'static str = "configs/taxonomy.toml";
    const WHAT: &'static str = "configs/taxonomy.toml";

    fn validate(&self, file: &Path) -> Result<()> {
        let known = |c: &String| self.classes.contains(c);
        let fallback = "fallback".to_string();
        let bad = std::iter::once((&fallback, &self.fallback))
            .chain(self.nuscenes.iter())
            .chain(self.waymo.iter())
            .chain(self.carla.iter())
            .find(|(_, c)| !known(c));
        match bad {
            Some((k, c)) => Err(Error::Config {
                file: file.to_path_buf(),
                detail: format!("{k} maps to {c}, which is not in `classes`"),
            }),
            None => Ok(()),
        }
    }
}

impl Taxonomy {
    fn map(&self, table: &BTreeMap<String, String>, category: &str) -> (String, bool) {
        match table.get(category) {
            Some(c) => (c.clone(), true),
            None => (self.fallback.clone(), false),
        }
    }

    /// The class of a nuScenes category, and whether the category was known.
    pub fn nuscenes_class(&self, category: &str) -> (String, bool) {
        self.map(&self.nuscenes, category)
    }

    /// The class of a Waymo label type name (`TYPE_VEHICLE`, …).
    pub(crate) fn waymo_class(&self, type_name: &str) -> (String, bool) {
        self.map(&self.waymo, type_name)
    }

    /// The class of a CARLA box: by blueprint id, else `base_type.<b>`, else `class.<c>`.
    pub fn carla_class(
        &self,
        type_id: &str,
        base_type: Option<&str>,
        class: &str,
    ) -> (String, bool) {
        let keys = [
            Some(type_id.to_string()),
            base_type.map(|b| format!("base_type.{b}")),
            Some(format!("class.{class}")),
        ];
        keys.iter()
            .flatten()
            .find_map(|k| self.carla.get(k))
            .map_or_else(|| (self.fallback.clone(), false), |c| (c.clone(), true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StageConfig;

    #[test]
    fn default_covers_all_23_nuscenes_categories() {
        let t = Taxonomy::load(None).unwrap();
        assert_eq!(t.nuscenes.len(), 23);
        assert_eq!(t.nuscenes_class("vehicle.car"), ("car".into(), true));
        assert_eq!(
            t.nuscenes_class("human.pedestrian.child"),
            ("pedestrian".into(), true)
        );
        assert_eq!(
            t.nuscenes_class("vehicle.emergency.police"),
            ("emergency_vehicle".into(), true)
        );
        assert_eq!(
            t.nuscenes_class("vehicle.hovercraft"),
            ("other".into(), false)
        );
    }

    #[test]
    fn unknown_class_is_a_config_error() {
        let bad = DEFAULT_TOML.replace(
            "\"vehicle.car\" = \"car\"",
            "\"vehicle.car\" = \"automobile\"",
        );
        let t: Taxonomy = crate::config::parse_toml(&bad, Path::new("x.toml")).unwrap();
        let e = t
            .validate(Path::new("x.toml"))
            .unwrap_err()
            .report()
            .to_string();
        assert!(e.contains("automobile"), "{e}");
    }
}
