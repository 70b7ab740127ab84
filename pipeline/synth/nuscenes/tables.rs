//! The 13 tables: the rows that do not depend on the scenes, the rows in memory, and the
//! streams that write them to the JSON files a chunk at a time.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::super::tokens::token;
use super::super::world::KINDS;
use super::{channel_name, LIDAR};
use crate::formats::nuscenes::*;
use crate::{Error, Result};

/// The eight nuScenes attributes, described in our own words.
const ATTRIBUTES: [(&str, &str); 8] = [
    ("vehicle.moving", "a vehicle in motion"),
    (
        "vehicle.stopped",
        "a vehicle standing still for now, e.g. waiting at a junction",
    ),
    ("vehicle.parked", "a vehicle parked at the kerb"),
    ("cycle.with_rider", "a bicycle or motorcycle being ridden"),
    (
        "cycle.without_rider",
        "a bicycle or motorcycle without anyone on it",
    ),
    ("pedestrian.sitting_lying_down", "a person sitting or lying"),
    ("pedestrian.standing", "a person standing still"),
    ("pedestrian.moving", "a person walking"),
];

/// Visibility bins: the share of the box the six keyframe images show.
const VISIBILITY: [(&str, &str, &str); 4] = [
    (
        "1",
        "v0-40",
        "0 to 40 % of the object is visible in the camera images",
    ),
    (
        "2",
        "v40-60",
        "40 to 60 % of the object is visible in the camera images",
    ),
    (
        "3",
        "v60-80",
        "60 to 80 % of the object is visible in the camera images",
    ),
    (
        "4",
        "v80-100",
        "80 to 100 % of the object is visible in the camera images",
    ),
];

/// The tables that do not depend on the scenes: categories, attributes, visibility bins and
/// sensors.
pub(super) fn fixed_tables(seed: u64) -> Tables {
    let tok = |name: &str| token(seed, name);
    let mut t = Tables::default();
    for k in &KINDS {
        t.category.push(Category {
            token: tok(&format!("category/{}", k.category)),
            name: k.category.to_string(),
            description: format!("synthetic {} ({})", k.category, k.class),
            index: None,
        });
    }
    for (name, desc) in ATTRIBUTES {
        t.attribute.push(Attribute {
            token: tok(&format!("attribute/{name}")),
            name: name.into(),
            description: desc.into(),
        });
    }
    for (tk, level, desc) in VISIBILITY {
        t.visibility.push(Visibility {
            token: tk.into(),
            level: level.into(),
            description: desc.into(),
        });
    }
    for ch in 0..7 {
        let name = channel_name(ch);
        t.sensor.push(Sensor {
            token: tok(&format!("sensor/{name}")),
            channel: name.into(),
            modality: if ch == LIDAR { "lidar" } else { "camera" }.into(),
        });
    }
    t
}

/// The 13 tables as they will be written.
#[derive(Default)]
pub(super) struct Tables {
    pub(super) category: Vec<Category>,
    pub(super) attribute: Vec<Attribute>,
    pub(super) visibility: Vec<Visibility>,
    pub(super) instance: Vec<Instance>,
    pub(super) sensor: Vec<Sensor>,
    pub(super) calibrated_sensor: Vec<CalibratedSensor>,
    pub(super) ego_pose: Vec<EgoPose>,
    pub(super) log: Vec<Log>,
    pub(super) scene: Vec<Scene>,
    pub(super) sample: Vec<Sample>,
    pub(super) sample_data: Vec<SampleData>,
    pub(super) sample_annotation: Vec<SampleAnnotation>,
    pub(super) map: Vec<Map>,
}

/// The 13 table files, written as JSON arrays a chunk of rows at a time.
pub(super) struct TableStreams {
    files: BTreeMap<&'static str, (crate::store::atomic::AtomicFile, usize)>,
}

/// Each row pretty-printed and indented as `serde_json::to_vec_pretty` prints an array.
fn append_rows<T: Serialize>(
    streams: &mut TableStreams,
    name: &'static str,
    rows: &mut Vec<T>,
) -> Result<()> {
    use std::io::Write;
    let Some((f, n)) = streams.files.get_mut(name) else {
        return Ok(());
    };
    let path = f.path().to_path_buf();
    for row in rows.drain(..) {
        let text = serde_json::to_string_pretty(&row)
            .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        let mut chunk = String::with_capacity(text.len() + 64);
        chunk.push_str(if *n == 0 { "[\n" } else { ",\n" });
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                chunk.push('\n');
            }
            chunk.push_str("  ");
            chunk.push_str(line);
        }
        f.write_all(chunk.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
        *n += 1;
    }
    Ok(())
}

impl TableStreams {
    pub(super) fn create(dir: &Path) -> Result<Self> {
        let mut files = BTreeMap::new();
        for name in crate::formats::nuscenes::TABLE_NAMES {
            let f = crate::store::atomic::AtomicFile::create(&dir.join(format!("{name}.json")))?;
            files.insert(name, (f, 0));
        }
        Ok(Self { files })
    }

    /// Appends every row of `t` and empties it.
    pub(super) fn flush(&mut self, t: &mut Tables) -> Result<()> {
        append_rows(self, "category", &mut t.category)?;
        append_rows(self, "attribute", &mut t.attribute)?;
        append_rows(self, "visibility", &mut t.visibility)?;
        append_rows(self, "instance", &mut t.instance)?;
        append_rows(self, "sensor", &mut t.sensor)?;
        append_rows(self, "calibrated_sensor", &mut t.calibrated_sensor)?;
        append_rows(self, "ego_pose", &mut t.ego_pose)?;
        append_rows(self, "log", &mut t.log)?;
        append_rows(self, "scene", &mut t.scene)?;
        append_rows(self, "sample", &mut t.sample)?;
        append_rows(self, "sample_data", &mut t.sample_data)?;
        append_rows(self, "sample_annotation", &mut t.sample_annotation)?;
        append_rows(self, "map", &mut t.map)
    }

    /// Closes the arrays, moves the files into place and returns the row count per table.
    pub(super) fn finish(self) -> Result<BTreeMap<&'static str, usize>> {
        use std::io::Write;
        let mut counts = BTreeMap::new();
        for (name, (mut f, n)) in self.files {
            let end: &[u8] = if n == 0 { b"[]" } else { b"\n]" };
            let path = f.path().to_path_buf();
            f.write_all(end).map_err(|e| Error::io(&path, e))?;
            f.commit()?;
            counts.insert(name, n);
        }
        Ok(counts)
    }
}
