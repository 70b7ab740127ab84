//! The one ingest loop. Every source format (nuScenes, Waymo v2, Bench2Drive, Frenetix)
//! implements [`SceneSource`]: it lists its units (scenes, segments, routes, logs), admits each
//! one in list order (names, paths, scene ids taken by earlier units), and assembles an admitted
//! unit into store rows. [`ingest`] does the rest the same way for all of them: the value
//! limits, the store writer, the rejects log, the progress bar and the summary.
//!
//! Units are assembled a chunk at a time, in parallel where the source allows it, and written
//! in list order, so memory holds at most one chunk and the store does not depend on thread
//! timing.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::limits::{self, Kind};
use crate::store::rejects::{Reject, RejectLog};
use crate::store::{SceneData, StoreMeta, StoreWriter};
use crate::{Error, Result};

/// Why a unit was refused before it was assembled: the scene id its reject carries, and the
/// error naming the file.
pub(crate) type Refusal = (String, Error);

/// What an ingest did.
#[derive(Debug, Clone, Default)]
pub struct IngestSummary {
    pub scenes_total: usize,
    pub scenes_written: usize,
    pub rejects: Vec<Reject>,
    pub counts: crate::store::Counts,
    pub unknown_categories: BTreeMap<String, u64>,
    pub renormalised_quaternions: u64,
    pub out: PathBuf,
}

impl fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "ingested {}/{} scenes into {}: {} frames, {} ego poses, {} camera images, {} objects",
            self.scenes_written,
            self.scenes_total,
            self.out.display(),
            c.frames,
            c.ego_poses,
            c.camera_images,
            c.objects
        )?;
        if self.renormalised_quaternions > 0 {
            writeln!(
                f,
                "renormalised {} near-unit quaternions",
                self.renormalised_quaternions
            )?;
        }
        for (cat, n) in &self.unknown_categories {
            writeln!(
                f,
                "unknown category {cat:?} ({n} boxes) mapped to the fallback class"
            )?;
        }
        for r in &self.rejects {
            writeln!(
                f,
                "rejected scene {}: {}",
                r.scene_id.as_deref().unwrap_or("?"),
                r.reason
            )?;
        }
        Ok(())
    }
}

/// A source format, seen as a list of units that each become one scene of the store.
pub trait SceneSource: Sync {
    /// One unit of the source: a scene, a segment, a route or a log.
    type Unit: Sync;
    /// What assembling one unit counted beyond its rows.
    type Stats: Send;

    /// What the progress bar says it ingests.
    fn label(&self) -> &'static str;

    /// The dataset root (no output may lie inside it).
    fn root(&self) -> &Path;

    /// The store's metadata: source, version, root.
    fn meta(&self) -> StoreMeta;

    /// The units, in the order their scenes are written.
    fn units(&self) -> Result<Vec<Self::Unit>>;

    /// Units assembled in parallel between writes; one unless the source's units are small
    /// enough to hold several in memory.
    fn chunk(&self) -> usize {
        1
    }

    /// Checks `unit` before it is assembled, in list order, and returns its scene id. `ids`
    /// holds the ids earlier units took.
    fn admit(&self, unit: &Self::Unit, ids: &mut SceneIds) -> std::result::Result<String, Refusal>;

    /// The scene of an admitted unit, with its statistics; an error rejects the unit.
    fn assemble(&self, unit: &Self::Unit, id: &str) -> Result<(SceneData, Self::Stats)>;

    /// The file a value out of range in rows of `kind` is reported against.
    fn limit_file(&self, unit: &Self::Unit, kind: Kind) -> PathBuf;
}

/// Writes the store of `source` at `out`: every admitted unit that assembles and passes the
/// value limits becomes a scene; every other unit is recorded in the store's rejects with the
/// file and record its error names. `tally` adds a written unit's statistics to the summary.
/// Fails only when the units cannot be listed or the store cannot be written.
pub fn ingest<S: SceneSource>(
    source: &S,
    out: &Path,
    mut tally: impl FnMut(&mut IngestSummary, S::Stats),
) -> Result<IngestSummary> {
    let units = source.units()?;
    crate::store::paths::disjoint(source.root(), "the dataset root", out, "the store")?;
    let mut writer = StoreWriter::create(out, source.meta())?;
    let mut rejects = RejectLog::new();
    let mut summary = IngestSummary {
        scenes_total: units.len(),
        out: out.to_path_buf(),
        ..Default::default()
    };
    let mut ids = SceneIds::default();
    let bar = crate::progress::bar(units.len() as u64, source.label());
    for chunk in units.chunks(source.chunk().max(1)) {
        let admitted: Vec<_> = chunk.iter().map(|u| source.admit(u, &mut ids)).collect();
        let assembled: Vec<std::result::Result<_, Refusal>> = chunk
            .par_iter()
            .zip(admitted.into_par_iter())
            .map(|(unit, a)| {
                let id = a?;
                checked(source, unit, &id).map_err(|e| (id, e))
            })
            .collect();
        for res in assembled {
            match res {
                Ok((data, stats)) => {
                    writer.write_scene(&data)?;
                    summary.scenes_written += 1;
                    tally(&mut summary, stats);
                }
                Err((id, e)) => {
                    log::info!("{}: {id} rejected: {}", e.report(), source.label());
                    rejects.push(reject("ingest", &id, &e));
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let meta = writer.finish(&rejects)?;
    summary.counts = meta.counts;
    summary.rejects = rejects.items().to_vec();
    Ok(summary)
}

/// A unit's scene, held to the value limits.
fn checked<S: SceneSource>(source: &S, unit: &S::Unit, id: &str) -> Result<(SceneData, S::Stats)> {
    let (data, stats) = source.assemble(unit, id)?;
    limits::check(&data, &|k| source.limit_file(unit, k))?;
    Ok((data, stats))
}

/// A scene-level reject carrying the file and record an error names.
pub fn reject(stage: &str, scene: &str, e: &Error) -> Reject {
    let (file, record) = match e {
        Error::Input { file, record, .. } => {
            (Some(file.display().to_string()), Some(record.clone()))
        }
        Error::Json {
            path, line, column, ..
        } => (
            Some(path.display().to_string()),
            Some(format!("{line}:{column}")),
        ),
        Error::Io { path, .. } => (Some(path.display().to_string()), None),
        _ => (None, None),
    };
    Reject {
        stage: stage.into(),
        scene_id: Some(scene.to_string()),
        item: None,
        file,
        record,
        reason: e.report().to_string(),
    }
}

/// The scene ids taken so far, each with the path it came from.
#[derive(Debug, Default)]
pub struct SceneIds(HashMap<String, String>);

impl SceneIds {
    /// Admits `id`, which comes from `origin` (a path), or says which scene already has it.
    pub(crate) fn admit(&mut self, id: &str, origin: &Path) -> std::result::Result<(), String> {
        let here = origin.display().to_string();
        match self.0.get(id) {
            Some(first) => Err(format!(
                "scene id {id} is already taken by {first}: scene ids must be unique"
            )),
            None => {
                self.0.insert(id.to_string(), here);
                Ok(())
            }
        }
    }
}

/// The last component of `p` as UTF-8, or why it is not.
pub fn utf8_name(p: &Path) -> std::result::Result<String, String> {
    let name = p.file_name().unwrap_or(p.as_os_str());
    name.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the name {name:?} is not UTF-8; rename it"))
}
