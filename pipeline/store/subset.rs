//! A store holding only the scenes one shard owns: what a machine of a sharded build works on,
//! so every stage after it sees a smaller store and needs no shard logic of its own.

use std::path::{Path, PathBuf};

use super::{Store, StoreMeta, StoreWriter};
use crate::shard::{Shard, ShardPlan};
use crate::store::rejects::RejectLog;
use crate::Result;

/// Where `store`'s `image_path`s are relative to, as a path that stays valid from anywhere.
pub(crate) fn absolute_source_root(store: &Store) -> PathBuf {
    let rec = PathBuf::from(&store.meta().source_root);
    let candidates = [
        Some(rec.clone()),
        store.dir().parent().map(|p| p.join(&rec)),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_dir())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .unwrap_or(rec)
}

/// Writes the scenes of `src` that `plan` gives `shard` (and their ingest rejects) into a new
/// store at `dst`; returns its metadata.
pub(crate) fn write_shard(
    src: &Store,
    plan: &ShardPlan,
    dst: &Path,
    shard: Shard,
) -> Result<StoreMeta> {
    let m = src.meta();
    let root = absolute_source_root(src);
    let mut meta = StoreMeta::new(&m.source, &m.source_version, &root.to_string_lossy());
    meta.tool_version = m.tool_version.clone();
    let mut w = StoreWriter::create(dst, meta)?;
    for scene in src.scenes_planned(plan.clone(), shard)? {
        w.write_scene(&scene?)?;
    }
    let mut rejects = RejectLog::new();
    rejects.extend(
        src.rejects()?
            .into_iter()
            .filter(|r| r.scene_id.as_deref().is_none_or(|s| plan.owns(shard, s))),
    );
    w.finish(&rejects)
}
