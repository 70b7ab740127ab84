//! Loading the 13 JSON tables and indexing them by token.
//!
//! A table that is missing or is not valid JSON stops the ingest (nothing can be trusted
//! without it) with an error naming the file, line and column. Problems inside records —
//! a dangling or duplicated token — are not fatal here: the index remembers them, and the
//! scene that touches such a record is rejected when it is assembled.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::formats::nuscenes::*;
use crate::{Error, Result};

/// A table's records and their positions sorted by token: a lookup is a binary search, and
/// the index holds 4 bytes a record instead of a second copy of every token.
#[derive(Debug)]
pub(crate) struct Indexed<T> {
    pub file: PathBuf,
    pub rows: Vec<T>,
    by_token: Vec<u32>,
    duplicates: HashSet<String>,
}

/// Records that carry a token.
pub(crate) trait Token {
    fn token(&self) -> &str;
}

macro_rules! impl_token {
    ($($t:ty),*) => {$(impl Token for $t { fn token(&self) -> &str { &self.token } })*};
}
impl_token!(
    Category,
    Attribute,
    Visibility,
    Instance,
    Sensor,
    CalibratedSensor,
    EgoPose,
    Log,
    Scene,
    Sample,
    SampleData,
    SampleAnnotation,
    Map
);

impl<T: Token> Indexed<T> {
    fn new(file: PathBuf, rows: Vec<T>) -> Result<Self> {
        let n = u32::try_from(rows.len())
            .map_err(|_| Error::input(&file, "table", "more than 4,294,967,295 records"))?;
        let mut by_token: Vec<u32> = (0..n).collect();
        by_token.sort_unstable_by(|&a, &b| rows[a as usize].token().cmp(rows[b as usize].token()));
        let duplicates = by_token
            .windows(2)
            .map(|w| rows[w[0] as usize].token())
            .zip(by_token.iter().skip(1).map(|&i| rows[i as usize].token()))
            .filter(|(a, b)| a == b)
            .map(|(a, _)| a.to_string())
            .collect();
        Ok(Self {
            file,
            rows,
            by_token,
            duplicates,
        })
    }

    fn position(&self, token: &str) -> Option<usize> {
        let i = self
            .by_token
            .binary_search_by(|&i| self.rows[i as usize].token().cmp(token))
            .ok()?;
        Some(self.by_token[i] as usize)
    }

    /// The record with `token`, or an error naming this table's file and the token.
    /// `referrer` says who points at it, for the message.
    pub fn get(&self, token: &str, referrer: &str) -> Result<&T> {
        if self.duplicates.contains(token) {
            return Err(Error::input(
                &self.file,
                token,
                format!("duplicate token (referenced by {referrer})"),
            ));
        }
        match self.position(token) {
            Some(i) => Ok(&self.rows[i]),
            None => Err(Error::input(
                &self.file,
                token,
                format!("dangling token: no such record (referenced by {referrer})"),
            )),
        }
    }

    /// Whether `token` appears more than once.
    pub(crate) fn is_duplicate(&self, token: &str) -> bool {
        self.duplicates.contains(token)
    }
}

/// The tables of one nuScenes version that ingest reads (`map.json` is parsed, so a broken one
/// is named as the devkit would name it, but nothing downstream reads it).
#[derive(Debug)]
pub(crate) struct Tables {
    pub category: Indexed<Category>,
    pub attribute: Indexed<Attribute>,
    pub visibility: Indexed<Visibility>,
    pub instance: Indexed<Instance>,
    pub sensor: Indexed<Sensor>,
    pub calibrated_sensor: Indexed<CalibratedSensor>,
    pub ego_pose: Indexed<EgoPose>,
    pub log: Indexed<Log>,
    pub scene: Indexed<Scene>,
    pub sample: Indexed<Sample>,
    pub sample_data: Indexed<SampleData>,
    pub sample_annotation: Indexed<SampleAnnotation>,
    /// sample token → its sample_data, sorted by (timestamp, token).
    pub data_by_sample: HashMap<String, Vec<usize>>,
    /// sample token → its annotations, in file order.
    pub anns_by_sample: HashMap<String, Vec<usize>>,
}

fn read_table<T: DeserializeOwned + Token>(dir: &Path, name: &str) -> Result<Indexed<T>> {
    let path = dir.join(format!("{name}.json"));
    if !path.exists() {
        return Err(Error::input(
            &path,
            name,
            "missing table: nuScenes needs all 13 tables in the version folder",
        ));
    }
    // Parsed as it is read: the file's text is never held whole beside its records.
    let file = crate::store::input::open_limited(&path, crate::store::input::TABLE)?;
    let text = std::io::BufReader::with_capacity(1 << 16, NonFiniteReader::new(file));
    let mut rows: Vec<T> = serde_json::from_reader(text).map_err(|e| Error::json(&path, e))?;
    rows.shrink_to_fit();
    Indexed::new(path, rows)
}

impl Tables {
    /// Reads `<root>/<version>/*.json`.
    pub fn load(root: &Path, version: &str) -> Result<Self> {
        let dir = root.join(version);
        if !dir.is_dir() {
            let found: Vec<String> = std::fs::read_dir(root)
                .map(|rd| {
                    let mut v: Vec<String> = rd
                        .filter_map(|e| e.ok())
                        .filter(|e| e.path().join("scene.json").is_file())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    v.sort();
                    v
                })
                .unwrap_or_default();
            return Err(Error::input(
                &dir,
                version,
                format!(
                    "no such version folder (versions found under {}: {})",
                    root.display(),
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ),
            ));
        }
        // The big tables dominate; parse them on separate threads.
        let ((sample_data, sample_annotation), (ego_pose, rest)) = rayon::join(
            || {
                rayon::join(
                    || read_table::<SampleData>(&dir, "sample_data"),
                    || read_table::<SampleAnnotation>(&dir, "sample_annotation"),
                )
            },
            || {
                rayon::join(
                    || read_table::<EgoPose>(&dir, "ego_pose"),
                    || -> Result<_> {
                        Ok((
                            read_table::<Category>(&dir, "category")?,
                            read_table::<Attribute>(&dir, "attribute")?,
                            read_table::<Visibility>(&dir, "visibility")?,
                            read_table::<Instance>(&dir, "instance")?,
                            read_table::<Sensor>(&dir, "sensor")?,
                            read_table::<CalibratedSensor>(&dir, "calibrated_sensor")?,
                            read_table::<Log>(&dir, "log")?,
                            read_table::<Scene>(&dir, "scene")?,
                            read_table::<Sample>(&dir, "sample")?,
                            read_table::<Map>(&dir, "map")?,
                        ))
                    },
                )
            },
        );
        let (
            category,
            attribute,
            visibility,
            instance,
            sensor,
            calibrated_sensor,
            log,
            scene,
            sample,
            _map,
        ) = rest?;
        let sample_data = sample_data?;
        let sample_annotation = sample_annotation?;
        let ego_pose = ego_pose?;

        let mut data_by_sample: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, sd) in sample_data.rows.iter().enumerate() {
            data_by_sample
                .entry(sd.sample_token.clone())
                .or_default()
                .push(i);
        }
        for v in data_by_sample.values_mut() {
            v.sort_by(|&a, &b| {
                let (a, b) = (&sample_data.rows[a], &sample_data.rows[b]);
                (a.timestamp, &a.token).cmp(&(b.timestamp, &b.token))
            });
        }
        let mut anns_by_sample: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, a) in sample_annotation.rows.iter().enumerate() {
            anns_by_sample
                .entry(a.sample_token.clone())
                .or_default()
                .push(i);
        }
        Ok(Self {
            category,
            attribute,
            visibility,
            instance,
            sensor,
            calibrated_sensor,
            ego_pose,
            log,
            scene,
            sample,
            sample_data,
            sample_annotation,
            data_by_sample,
            anns_by_sample,
        })
    }
}
