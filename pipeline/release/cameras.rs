//! The stores' camera rows and keyframe keys, one scene at a time, for the release.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::shards::RowOrigin;
use crate::store::{CameraRow, Store, StoreRow, Table};
use crate::{Error, Result};

/// The stores' camera rows, loaded one scene at a time: the questions come scene by scene (the
/// canonical order), and a store's cameras table holds one record batch per scene, in the
/// order of its scenes table. Holding every camera row instead (sweeps included, about six per
/// keyframe image) made the release's memory grow with the dataset.
pub(super) struct SceneCameras {
    /// `scene_id` → (store, batch, the source's own scene key).
    pub(super) scenes: BTreeMap<String, (usize, usize, String)>,
    /// Per store: its cameras and frames tables, and the source's version.
    pub(super) tables: Vec<StoreTables>,
    /// The scene loaded last.
    pub(super) current: Option<Loaded>,
}

pub(super) struct StoreTables {
    pub(super) cameras: arrow::ipc::reader::FileReader<std::fs::File>,
    pub(super) frames: arrow::ipc::reader::FileReader<std::fs::File>,
    pub(super) dir: PathBuf,
    pub(super) version: String,
}

/// One scene's camera rows and keyframe keys.
pub(super) struct Loaded {
    pub(super) scene: String,
    pub(super) store: usize,
    pub(super) cameras: BTreeMap<String, CameraRow>,
    /// `frame_idx` → the source's own key of the frame (nuScenes' sample token).
    pub(super) frames: BTreeMap<u32, String>,
    /// `frame_idx` → the keyframe's cameras in the corrupt stage's order (a robustness
    /// split corrupts a view as part of its frame).
    pub(super) keyframe_cameras: BTreeMap<u32, Vec<String>>,
}

impl SceneCameras {
    pub(super) fn open(stores: &[Store]) -> Result<Self> {
        let mut scenes = BTreeMap::new();
        for (k, store) in stores.iter().enumerate() {
            let rows: Vec<crate::store::SceneRow> = store.read_all(Table::Scenes)?;
            for (batch, r) in rows.into_iter().enumerate() {
                scenes.insert(r.scene_id, (k, batch, r.source_scene_id));
            }
        }
        let tables = stores
            .iter()
            .map(|s| {
                Ok(StoreTables {
                    cameras: s.reader(Table::Cameras)?,
                    frames: s.reader(Table::Frames)?,
                    dir: s.dir().to_path_buf(),
                    version: s.meta().source_version.clone(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            scenes,
            tables,
            current: None,
        })
    }

    /// The row's origin: its store's source version and the source's key of its scene.
    pub(super) fn origin(&self, scene: &str) -> RowOrigin {
        self.scenes
            .get(scene)
            .map(|(k, _, key)| RowOrigin {
                source_version: self.tables[*k].version.clone(),
                source_scene_id: key.clone(),
                tag: Default::default(),
            })
            .unwrap_or_default()
    }

    /// Makes `scene` the loaded one; false when no store has it.
    pub(super) fn load(&mut self, scene: &str) -> Result<bool> {
        if self.current.as_ref().is_some_and(|c| c.scene == scene) {
            return Ok(true);
        }
        let Some(&(k, batch, _)) = self.scenes.get(scene) else {
            return Ok(false);
        };
        let t = &mut self.tables[k];
        let cameras = CameraRow::from_batch(&scene_batch(
            &mut t.cameras,
            &t.dir,
            Table::Cameras,
            batch,
            scene,
        )?)?;
        let frames = crate::store::FrameRow::from_batch(&scene_batch(
            &mut t.frames,
            &t.dir,
            Table::Frames,
            batch,
            scene,
        )?)?;
        let mut keyframe_cameras: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for c in cameras.iter().filter(|c| c.is_keyframe) {
            keyframe_cameras
                .entry(c.frame_idx)
                .or_default()
                .push(c.camera.clone());
        }
        for v in keyframe_cameras.values_mut() {
            v.sort_by_key(|c| (crate::corrupt::camera_rank(c), c.clone()));
        }
        self.current = Some(Loaded {
            scene: scene.to_string(),
            store: k,
            keyframe_cameras,
            cameras: cameras
                .into_iter()
                .map(|c| (c.camera_frame_id.clone(), c))
                .collect(),
            frames: frames
                .into_iter()
                .map(|f| (f.frame_idx, f.source_frame_id))
                .collect(),
        });
        Ok(true)
    }

    /// The camera row `id` of `scene` and the index of its store, if the stores have it.
    pub(super) fn get(&mut self, scene: &str, id: &str) -> Result<Option<(usize, CameraRow)>> {
        if !self.load(scene)? {
            return Ok(None);
        }
        Ok(self
            .current
            .as_ref()
            .and_then(|l| l.cameras.get(id).map(|c| (l.store, c.clone()))))
    }

    /// The cameras of keyframe `frame_idx` of the loaded scene, in the corrupt stage's order.
    pub(super) fn keyframe_cameras(&self, frame_idx: u32) -> Vec<String> {
        self.current
            .as_ref()
            .and_then(|l| l.keyframe_cameras.get(&frame_idx).cloned())
            .unwrap_or_default()
    }

    /// The source's key of keyframe `frame_idx` of the loaded scene (empty when unknown).
    pub(super) fn frame_key(&self, frame_idx: u32) -> String {
        self.current
            .as_ref()
            .and_then(|l| l.frames.get(&frame_idx).cloned())
            .unwrap_or_default()
    }
}

/// Record batch `batch` of a store table: every table holds one batch per scene, in the order
/// of the scenes table.
pub(super) fn scene_batch(
    r: &mut arrow::ipc::reader::FileReader<std::fs::File>,
    dir: &Path,
    table: Table,
    batch: usize,
    scene: &str,
) -> Result<arrow::array::RecordBatch> {
    let file = dir.join(table.file_name());
    let bad = |detail: String| Error::Input {
        file: file.clone(),
        record: format!("record batch {batch} (scene {scene})"),
        detail,
    };
    r.set_index(batch).map_err(|e| bad(e.to_string()))?;
    r.next()
        .ok_or_else(|| bad("missing".into()))?
        .map_err(|e| bad(e.to_string()))
}
