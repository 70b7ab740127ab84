//! Source layouts: what each dataset's files look like on disk, independent of who reads or
//! writes them. The ingest reads these layouts, the synthetic corpus writes them and the image
//! reader finds camera images in them, so each layout's names, tables and coordinate rules live
//! here once and all three follow the data flow downwards from this floor.
//!
//! - [`nuscenes`]: the 13 v1.0 JSON tables as serde structs.
//! - [`waymo`]: the v2 component files' column names and typed column readers.
//! - [`carla`]: CARLA's left-handed frames and their conversion into the store's right-handed
//!   ones (Bench2Drive routes).
//!
//! [`Format`] names a layout; it is the one value the CLI (`ingest --source`, `synth
//! --format`) and the build's `[input]` parse.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub(crate) mod carla;
pub mod nuscenes;
pub(crate) mod waymo;

/// A source dataset layout.
///
/// The serde names (`nuscenes`, `waymo-v2`, `bench2drive`, `frenetix`) are the build config's
/// and enter checkpoint keys, so they never change; [`FromStr`] also accepts the ingest's
/// older short names `waymo` and `carla`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// nuScenes v1.0: 13 JSON tables, JPEG cameras, lidar sweeps.
    #[default]
    Nuscenes,
    /// Waymo Open Dataset v2: one Parquet file per component per segment.
    WaymoV2,
    /// CARLA Bench2Drive: a route folder per scene, gzipped JSON annotations, JPEG cameras.
    Bench2drive,
    /// Frenetix CSV logs: the ego vehicle only, no cameras.
    Frenetix,
}

impl Format {
    /// Every layout, in the order help lists them.
    pub const ALL: [Format; 4] = [
        Format::Nuscenes,
        Format::WaymoV2,
        Format::Bench2drive,
        Format::Frenetix,
    ];

    /// The name the config and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            Format::Nuscenes => "nuscenes",
            Format::WaymoV2 => "waymo-v2",
            Format::Bench2drive => "bench2drive",
            Format::Frenetix => "frenetix",
        }
    }

    /// Whether the layout has camera images (every stage past ego motion needs them).
    pub(crate) fn has_cameras(self) -> bool {
        self != Format::Frenetix
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        let alias = match s.as_str() {
            "waymo" => Some(Format::WaymoV2),
            "carla" => Some(Format::Bench2drive),
            _ => None,
        };
        alias
            .or_else(|| Format::ALL.into_iter().find(|f| f.name() == s))
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "`{s}` is not a source format; use one of {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_match_serde() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            let json = serde_json::to_string(&f).expect("serialises");
            assert_eq!(json, format!("\"{}\"", f.name()));
        }
        assert_eq!("Waymo".parse::<Format>(), Ok(Format::WaymoV2));
        assert_eq!("carla".parse::<Format>(), Ok(Format::Bench2drive));
        assert!("kitti".parse::<Format>().is_err());
    }
}
