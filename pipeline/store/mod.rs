//! The canonical scene store: one folder of Arrow IPC files that every source is ingested into
//! and every later stage reads.
//!
//! ```text
//! STORE/scenes.arrow  frames.arrow  ego_poses.arrow  cameras.arrow  objects.arrow
//!       rejects.jsonl  store.json
//! ```
//!
//! Each table file holds exactly one record batch per scene, in the same scene order in every
//! file (a scene without rows still gets an empty batch). A reader can therefore stream the
//! store scene by scene ([`Store::scenes`]) with memory bounded by the largest scene, and a
//! scene's index is the same in every table. `--shard i/N` splits the scenes by what each
//! costs ([`Store::shard_plan`], from the batches' row counts, without decoding them).

pub(crate) mod atomic;
pub(crate) mod cleanup;
pub(crate) mod input;
pub mod lock;
pub(crate) mod nofollow;
pub(crate) mod owner;
pub mod paths;
pub mod rejects;
pub(crate) mod rerun;
pub(crate) mod rows;
pub mod schema;
pub(crate) mod subset;
mod swap;

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use arrow::ipc::reader::FileReader;
use arrow::ipc::writer::FileWriter;
use serde::{Deserialize, Serialize};

pub use rows::{CameraRow, EgoPoseRow, FrameRow, ObjectRow, Pose, SceneRow, StoreRow};
pub use schema::Table;

use crate::shard::{SceneCost, Shard, ShardPlan};
use crate::store::rejects::RejectLog;
use crate::{Error, Result};

/// The `format` string of `store.json`.
pub(crate) const STORE_FORMAT: &str = "drivegen-scene-store";
/// Bumped whenever a table's schema changes incompatibly.
pub(crate) const STORE_FORMAT_VERSION: u32 = 1;

/// Everything the store holds about one scene.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SceneData {
    pub scene: SceneRow,
    pub frames: Vec<FrameRow>,
    pub ego_poses: Vec<EgoPoseRow>,
    pub cameras: Vec<CameraRow>,
    pub objects: Vec<ObjectRow>,
}

impl SceneData {
    /// Fills the scene row's counts and time span from the tables.
    pub fn update_counts(&mut self) {
        let s = &mut self.scene;
        s.num_frames = self.frames.len() as u32;
        s.num_ego_poses = self.ego_poses.len() as u32;
        s.num_camera_images = self.cameras.len() as u32;
        s.num_objects = self.objects.len() as u32;
        let times = self
            .frames
            .iter()
            .map(|f| f.timestamp_us)
            .chain(self.ego_poses.iter().map(|p| p.timestamp_us))
            .chain(self.cameras.iter().map(|c| c.timestamp_us));
        let (lo, hi) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        (s.start_timestamp_us, s.end_timestamp_us) = if lo <= hi { (lo, hi) } else { (0, 0) };
    }
}

/// Row counts per table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub scenes: u64,
    pub frames: u64,
    pub ego_poses: u64,
    pub camera_images: u64,
    pub objects: u64,
}

/// `store.json`: what the store holds and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreMeta {
    pub format: String,
    pub format_version: u32,
    /// `nuscenes`, `waymo`, `carla`, …
    pub source: String,
    /// The source's own version string (e.g. `v1.0-mini`).
    pub source_version: String,
    /// The source root, as given on the command line; `image_path` is relative to it.
    pub source_root: String,
    pub tool: String,
    pub tool_version: String,
    pub counts: Counts,
    pub rejected_scenes: u64,
    /// Whether the ingest refused files that symbolic links lead out of the source root
    /// (`--strict-links`); readers of the store's images keep to the same rule.
    #[serde(default)]
    pub strict_links: bool,
}

impl StoreMeta {
    pub fn new(source: &str, source_version: &str, source_root: &str) -> Self {
        Self {
            format: STORE_FORMAT.into(),
            format_version: STORE_FORMAT_VERSION,
            source: source.into(),
            source_version: source_version.into(),
            source_root: source_root.into(),
            tool: "drivegen".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            counts: Counts::default(),
            rejected_scenes: 0,
            strict_links: false,
        }
    }

    /// This metadata, recording how links under the source root were treated.
    pub(crate) fn with_links(mut self, links: crate::store::paths::Links) -> Self {
        self.strict_links = links.is_strict();
        self
    }
}

/// Writes a store scene by scene into a new folder beside `dir`, which replaces `dir` whole
/// on [`StoreWriter::finish`]: readers and later stages see the old store or the new one,
/// never a mix, and an interrupted or failed ingest leaves the old store as it was.
pub struct StoreWriter {
    dir: PathBuf,
    /// The folder the new store is written in.
    next: PathBuf,
    writers: Vec<FileWriter<atomic::AtomicFile>>,
    meta: StoreMeta,
    /// Locks and marks `dir` until the store is finished: a second writer is refused, and a
    /// folder holding files drivegen did not write is never replaced.
    owned: Option<owner::Owned>,
}

impl StoreWriter {
    pub fn create(dir: &Path, mut meta: StoreMeta) -> Result<Self> {
        // The counts are what this writer writes, whatever the caller's copy says.
        meta.counts = Counts::default();
        meta.rejected_scenes = 0;
        let owned = owner::Owned::claim(dir, "scene store", "the store's tables")?;
        swap::sweep_stale(dir);
        let next = swap::sibling(dir);
        cleanup::create_registered(&next, || std::fs::create_dir_all(&next))
            .map_err(|e| Error::io(&next, e))?;
        let writers = Table::ALL
            .iter()
            .map(|t| {
                let f = atomic::AtomicFile::create(&next.join(t.file_name()))?;
                Ok(FileWriter::try_new(f, &t.schema())?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            dir: dir.to_path_buf(),
            next,
            writers,
            meta,
            owned: Some(owned),
        })
    }

    /// Appends one scene (one batch per table).
    pub fn write_scene(&mut self, s: &SceneData) -> Result<()> {
        let batches = [
            SceneRow::to_batch(std::slice::from_ref(&s.scene))?,
            FrameRow::to_batch(&s.frames)?,
            EgoPoseRow::to_batch(&s.ego_poses)?,
            CameraRow::to_batch(&s.cameras)?,
            ObjectRow::to_batch(&s.objects)?,
        ];
        for (w, b) in self.writers.iter_mut().zip(&batches) {
            w.write(b)?;
        }
        let c = &mut self.meta.counts;
        c.scenes += 1;
        c.frames += s.frames.len() as u64;
        c.ego_poses += s.ego_poses.len() as u64;
        c.camera_images += s.cameras.len() as u64;
        c.objects += s.objects.len() as u64;
        Ok(())
    }

    /// Closes the tables, writes `rejects.jsonl` and `store.json`, and returns the metadata.
    pub fn finish(mut self, rejects: &RejectLog) -> Result<StoreMeta> {
        for mut w in self.writers.drain(..) {
            w.finish()?;
            w.into_inner()?.commit()?;
        }
        rejects.write(&self.next.join(crate::store::rejects::LOG_FILE))?;
        self.meta.rejected_scenes =
            rejects.items().iter().filter(|r| r.item.is_none()).count() as u64;
        let json = serde_json::to_vec_pretty(&self.meta).map_err(|e| Error::Schema {
            table: "store.json".into(),
            detail: e.to_string(),
        })?;
        atomic::write_atomic(&self.next.join("store.json"), &json)?;
        let mut carried = Vec::new();
        if let Some(o) = &self.owned {
            // Entries a forced ingest found and does not replace stay where they were, and
            // stay the user's.
            for name in o.foreign() {
                let (from, to) = (self.dir.join(name), self.next.join(name));
                if !to.exists() {
                    std::fs::rename(&from, &to).map_err(|e| Error::io(&from, e))?;
                    carried.push(name.clone());
                }
            }
        }
        owner::mark_complete(&self.next, "scene store", &carried)?;
        swap::exchange(&self.next, &self.dir)?;
        // `next` now holds the old store, which the claim found to be drivegen's own.
        // A signal from here on would remove the old store, which is the intent anyway.
        std::fs::remove_dir_all(&self.next).map_err(|e| Error::io(&self.next, e))?;
        cleanup::unregister(&self.next);
        self.owned = None;
        Ok(self.meta.clone())
    }
}

impl Drop for StoreWriter {
    fn drop(&mut self) {
        if self.owned.is_some() {
            // Not finished: the new store is abandoned and the old one stays.
            self.writers.clear();
            let _ = std::fs::remove_dir_all(&self.next);
            cleanup::unregister(&self.next);
        }
    }
}

/// An opened store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    meta: StoreMeta,
}

impl Store {
    /// Opens the store in `dir`, checking its format and every table's schema.
    pub fn open(dir: &Path) -> Result<Self> {
        let meta_path = dir.join("store.json");
        let text = input::read(&meta_path, input::METADATA)?;
        let meta: StoreMeta = serde_json::from_slice(crate::store::input::without_bom(&text))
            .map_err(|e| Error::json(&meta_path, e))?;
        if meta.format != STORE_FORMAT || meta.format_version != STORE_FORMAT_VERSION {
            return Err(Error::input(
                &meta_path,
                "format",
                format!(
                    "not a drivegen scene store of format version {STORE_FORMAT_VERSION} (found {} {})",
                    meta.format, meta.format_version
                ),
            ));
        }
        let store = Self {
            dir: dir.to_path_buf(),
            meta,
        };
        for t in Table::ALL {
            let r = store.reader(t)?;
            schema::check(t.name(), &r.schema(), &t.schema())?;
        }
        store.check_counts()?;
        Ok(store)
    }

    /// Compares `store.json`'s counts with the tables (read from their footers and batch
    /// headers, not their data): a torn or hand-edited store is refused here rather than
    /// losing rows later without a reject.
    fn check_counts(&self) -> Result<()> {
        let meta_path = self.dir.join("store.json");
        let c = &self.meta.counts;
        for (t, want) in [
            (Table::Scenes, c.scenes),
            (Table::Frames, c.frames),
            (Table::EgoPoses, c.ego_poses),
            (Table::Cameras, c.camera_images),
            (Table::Objects, c.objects),
        ] {
            let path = self.table_path(t);
            let (batches, rows) = ipc_counts(&path)?;
            if batches != c.scenes {
                return Err(Error::input(
                    &meta_path,
                    "counts.scenes",
                    format!(
                        "{} scenes, but {} holds {batches} scene batches: the store is torn or \
                         was edited; ingest it again",
                        c.scenes,
                        path.display()
                    ),
                ));
            }
            if rows != want {
                return Err(Error::input(
                    &meta_path,
                    format!("counts.{}", t.name()),
                    format!(
                        "{want} rows, but {} holds {rows}: the store is torn or was edited; \
                         ingest it again",
                        path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// The path of a table's file.
    pub(crate) fn table_path(&self, t: Table) -> PathBuf {
        self.dir.join(t.file_name())
    }

    /// An Arrow IPC reader over one table (one batch per scene).
    pub fn reader(&self, t: Table) -> Result<FileReader<File>> {
        let path = self.table_path(t);
        let f = crate::store::input::open(&path)?;
        FileReader::try_new(f, None).map_err(|e| Error::Schema {
            table: t.name().into(),
            detail: format!("{}: {e}", path.display()),
        })
    }

    /// Reads every row of one table.
    pub fn read_all<R: StoreRow>(&self, t: Table) -> Result<Vec<R>> {
        let mut out = Vec::new();
        for b in self.reader(t)? {
            out.extend(R::from_batch(&b?)?);
        }
        Ok(out)
    }

    /// Streams the store scene by scene.
    pub fn scenes(&self) -> Result<SceneIter> {
        Ok(SceneIter {
            readers: [
                self.reader(Table::Scenes)?,
                self.reader(Table::Frames)?,
                self.reader(Table::EgoPoses)?,
                self.reader(Table::Cameras)?,
                self.reader(Table::Objects)?,
            ],
            dir: self.dir.clone(),
            index: 0,
            only: None,
        })
    }

    /// Streams the scenes `shard` owns under the store's [`Store::shard_plan`]; the others are
    /// skipped before their rows are decoded.
    pub(crate) fn scenes_in(&self, shard: Shard) -> Result<SceneIter> {
        if shard.count <= 1 {
            return self.scenes();
        }
        self.scenes_planned(self.shard_plan(shard.count)?, shard)
    }

    /// Streams the scenes `plan` gives `shard`, for a caller that holds the plan already.
    pub(crate) fn scenes_planned(&self, plan: ShardPlan, shard: Shard) -> Result<SceneIter> {
        let mut it = self.scenes()?;
        if shard.count > 1 {
            it.only = Some((plan, shard));
        }
        Ok(it)
    }

    /// Each scene's cost ([`SceneCost`]: its camera images and boxes), in store order, read
    /// from the batches' headers.
    pub(crate) fn scene_costs(&self) -> Result<Vec<(String, SceneCost)>> {
        let ids: Vec<String> = self
            .read_all::<SceneRow>(Table::Scenes)?
            .into_iter()
            .map(|r| r.scene_id)
            .collect();
        let rows = |t: Table| -> Result<Vec<u64>> {
            let path = self.dir.join(t.file_name());
            let rows = ipc_batch_rows(&path)?;
            if rows.len() != ids.len() {
                return Err(Error::Schema {
                    table: t.name().into(),
                    detail: format!(
                        "{} holds {} scene batches, scenes.arrow {} scenes",
                        path.display(),
                        rows.len(),
                        ids.len()
                    ),
                });
            }
            Ok(rows)
        };
        let images = rows(Table::Cameras)?;
        let boxes = rows(Table::Objects)?;
        Ok(ids
            .into_iter()
            .zip(images.into_iter().zip(boxes))
            .map(|(id, (images, boxes))| (id, SceneCost { images, boxes }))
            .collect())
    }

    /// The split of this store's scenes over `count` shards, balanced by cost. Every task of a
    /// sharded build reads the same store, so each computes the same plan.
    pub fn shard_plan(&self, count: u32) -> Result<ShardPlan> {
        Ok(ShardPlan::balanced(self.scene_costs()?, count))
    }

    /// The rejects recorded at ingest.
    pub fn rejects(&self) -> Result<Vec<crate::store::rejects::Reject>> {
        RejectLog::read(&self.dir.join(crate::store::rejects::LOG_FILE))
    }
}

/// The number of record batches and rows of an Arrow IPC file, read from its footer and the
/// batches' headers without decoding any data.
pub(crate) fn ipc_counts(path: &Path) -> Result<(u64, u64)> {
    let rows = ipc_batch_rows(path)?;
    Ok((rows.len() as u64, rows.iter().sum()))
}

/// The row count of each record batch of an Arrow IPC file, read from its footer and the
/// batches' headers without decoding any data.
pub(crate) fn ipc_batch_rows(path: &Path) -> Result<Vec<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    let bad = |detail: String| Error::input(path, "footer", detail);
    let mut f = crate::store::input::open(path)?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    if len < 10 {
        return Err(bad(format!(
            "{len} bytes is too short for an Arrow IPC file"
        )));
    }
    let mut tail = [0u8; 10];
    f.seek(SeekFrom::End(-10))
        .and_then(|_| f.read_exact(&mut tail))
        .map_err(|e| Error::io(path, e))?;
    let footer_len = arrow::ipc::reader::read_footer_length(tail)
        .map_err(|e| bad(format!("not a complete Arrow IPC file (truncated?): {e}")))?
        as u64;
    if footer_len + 10 > len {
        return Err(bad(format!(
            "footer of {footer_len} bytes is longer than the file"
        )));
    }
    let mut footer = vec![0u8; footer_len as usize];
    f.seek(SeekFrom::End(-10 - footer_len as i64))
        .and_then(|_| f.read_exact(&mut footer))
        .map_err(|e| Error::io(path, e))?;
    let footer =
        arrow::ipc::root_as_footer(&footer).map_err(|e| bad(format!("unreadable footer: {e}")))?;
    let blocks = footer
        .recordBatches()
        .map(|b| b.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let mut rows = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        let meta_len = u64::try_from(b.metaDataLength()).unwrap_or(0);
        let offset = u64::try_from(b.offset()).unwrap_or(u64::MAX);
        if meta_len < 8 || offset.saturating_add(meta_len) > len || meta_len > 1 << 24 {
            return Err(bad(format!("batch {i}: header outside the file")));
        }
        let mut buf = vec![0u8; meta_len as usize];
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| Error::io(path, e))?;
        // A continuation marker (0xFFFFFFFF) precedes the length in current files.
        let start = if buf[..4] == [0xff; 4] { 8 } else { 4 };
        let msg = arrow::ipc::root_as_message(&buf[start..])
            .map_err(|e| bad(format!("batch {i}: unreadable header: {e}")))?;
        let n = msg
            .header_as_record_batch()
            .map(|r| r.length())
            .ok_or_else(|| bad(format!("batch {i} is not a record batch")))?;
        rows.push(u64::try_from(n).map_err(|_| bad(format!("batch {i}: {n} rows")))?);
    }
    Ok(rows)
}

/// Iterator over the scenes of a store, reading the tables in lockstep.
pub struct SceneIter {
    readers: [FileReader<File>; 5],
    dir: PathBuf,
    index: usize,
    /// When set, only the scenes the plan gives this shard.
    only: Option<(ShardPlan, Shard)>,
}

impl SceneIter {
    fn next_batches(&mut self) -> Option<Result<[RecordBatch; 5]>> {
        let mut got: Vec<RecordBatch> = Vec::with_capacity(5);
        for (r, t) in self.readers.iter_mut().zip(Table::ALL) {
            match r.next() {
                Some(Ok(b)) => got.push(b),
                Some(Err(e)) => {
                    return Some(Err(Error::Schema {
                        table: t.name().into(),
                        detail: format!(
                            "{}: scene batch {}: {e}",
                            self.dir.join(t.file_name()).display(),
                            self.index
                        ),
                    }))
                }
                None if got.is_empty() => return None,
                None => {
                    return Some(Err(Error::Schema {
                        table: t.name().into(),
                        detail: format!(
                            "has fewer scene batches than scenes.arrow ({})",
                            self.index
                        ),
                    }))
                }
            }
        }
        got.try_into().ok().map(Ok)
    }
}

impl Iterator for SceneIter {
    type Item = Result<SceneData>;

    fn next(&mut self) -> Option<Self::Item> {
        let batches = loop {
            let batches = match self.next_batches()? {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            self.index += 1;
            let Some((plan, shard)) = &self.only else {
                break batches;
            };
            let id = batches[0]
                .column_by_name("scene_id")
                .and_then(|c| c.as_any().downcast_ref::<arrow::array::StringArray>())
                .filter(|a| arrow::array::Array::len(*a) == 1)
                .map(|a| a.value(0).to_string());
            match id {
                Some(id) if !plan.owns(*shard, &id) => continue,
                // Malformed batches fall through to the checks below, which name the problem.
                _ => break batches,
            }
        };
        Some((|| {
            let mut scenes = SceneRow::from_batch(&batches[0])?;
            if scenes.len() != 1 {
                return Err(Error::Schema {
                    table: "scenes".into(),
                    detail: format!(
                        "batch {} holds {} scene rows, expected 1",
                        self.index - 1,
                        scenes.len()
                    ),
                });
            }
            let scene = scenes.remove(0);
            let data = SceneData {
                frames: FrameRow::from_batch(&batches[1])?,
                ego_poses: EgoPoseRow::from_batch(&batches[2])?,
                cameras: CameraRow::from_batch(&batches[3])?,
                objects: ObjectRow::from_batch(&batches[4])?,
                scene,
            };
            let misplaced = data
                .frames
                .iter()
                .map(|r| &r.scene_id)
                .chain(data.ego_poses.iter().map(|r| &r.scene_id))
                .chain(data.cameras.iter().map(|r| &r.scene_id))
                .chain(data.objects.iter().map(|r| &r.scene_id))
                .find(|id| **id != data.scene.scene_id);
            if let Some(id) = misplaced {
                return Err(Error::Schema {
                    table: "scene store".into(),
                    detail: format!(
                        "batch {} of scene {} holds rows of scene {id}",
                        self.index - 1,
                        data.scene.scene_id
                    ),
                });
            }
            Ok(data)
        })())
    }
}
