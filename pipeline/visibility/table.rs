//! The one reader of the visibility table (`schemas/visibility/visibility.json`, written by
//! [`super::output`]): its kept rows, typed, in table order, one scene at a time
//! ([`KeptScenes`]). Set-of-Mark, SIG and MetaVQA all read the table through it.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array};
use arrow::error::ArrowError;
use arrow::ipc::reader::FileReader;

use super::anchor::AnchorRules;
use crate::{Error, Result};

/// A kept row of the visibility table, as written: a box or point is `None` when one of its
/// coordinates is null. No finiteness is checked here; each reader decides what it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptRow {
    /// The row's record batch and its row within the batch (for errors).
    pub batch: usize,
    pub row: usize,
    pub scene_id: String,
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub track_id: String,
    pub annotation_id: String,
    /// `[x0, y0, x1, y1]`, pixels.
    pub amodal: Option<[f64; 4]>,
    /// `[x0, y0, x1, y1]`, pixel edges; `None` without visible pixels.
    pub modal: Option<[f64; 4]>,
    pub visible_pixels: u32,
    /// The Set-of-Mark label anchor.
    pub anchor: Option<[f64; 2]>,
    /// The rule that placed it, as the table names it.
    pub anchor_rule: Option<String>,
}

impl KeptRow {
    /// Names the row in errors: `batch B row R (annotation id)`.
    pub fn record(&self) -> String {
        format!(
            "batch {} row {} ({})",
            self.batch, self.row, self.annotation_id
        )
    }
}

fn column<'a, A: 'static>(b: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a A> {
    b.column_by_name(name)
        .ok_or_else(|| {
            Error::input(
                path,
                format!("column {name}"),
                "missing: not a visibility table",
            )
        })?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| {
            Error::input(
                path,
                format!("column {name}"),
                "has the wrong type for a visibility table",
            )
        })
}

/// The kept rows of a visibility table, read one scene at a time. Opening notes which record
/// batches hold each scene's kept rows (reading only the scene and `kept` columns), so a stage
/// holds one batch and one scene's rows, never the table: memory stays flat as scenes grow.
pub struct KeptScenes {
    path: PathBuf,
    reader: FileReader<File>,
    batches: HashMap<String, Vec<usize>>,
}

impl KeptScenes {
    /// Opens the table at `path`. A reader that uses the anchors passes the rules it draws
    /// under: a table whose anchors were placed under others is refused, naming both rule sets.
    pub fn open(path: &Path, anchors: Option<&AnchorRules>) -> Result<Self> {
        let not_ipc =
            |e: ArrowError| Error::input(path, "file", format!("not an Arrow IPC file: {e}"));
        let reader =
            FileReader::try_new(crate::store::input::open(path)?, None).map_err(not_ipc)?;
        let schema = reader.schema();
        if let Some(rules) = anchors {
            rules.check_table(path, &schema)?;
        }
        let index_of = |n: &str| {
            schema.index_of(n).map_err(|_| {
                Error::input(
                    path,
                    format!("column {n}"),
                    "missing: not a visibility table",
                )
            })
        };
        let projection = vec![index_of("scene_id")?, index_of("kept")?];
        let index = FileReader::try_new(crate::store::input::open(path)?, Some(projection))
            .map_err(not_ipc)?;
        let mut batches: HashMap<String, Vec<usize>> = HashMap::new();
        for (bi, batch) in index.enumerate() {
            let b = batch.map_err(|e| Error::input(path, format!("batch {bi}"), e.to_string()))?;
            let scene = column::<StringArray>(&b, "scene_id", path)?;
            let kept: &BooleanArray = column(&b, "kept", path)?;
            for i in 0..b.num_rows() {
                if kept.is_valid(i) && kept.value(i) {
                    let at = batches.entry(scene.value(i).to_string()).or_default();
                    if at.last() != Some(&bi) {
                        at.push(bi);
                    }
                }
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            batches,
        })
    }

    /// The table's path (for errors).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kept rows of `scene_id`, in table order; none when the table has none.
    pub fn scene(&mut self, scene_id: &str) -> Result<Vec<KeptRow>> {
        let mut out = Vec::new();
        let Some(at) = self.batches.get(scene_id) else {
            return Ok(out);
        };
        for &bi in at {
            let path = self.path.as_path();
            let fail = |e: ArrowError| Error::input(path, format!("batch {bi}"), e.to_string());
            self.reader.set_index(bi).map_err(fail)?;
            let b = match self.reader.next() {
                Some(b) => b.map_err(fail)?,
                None => return Err(Error::input(path, format!("batch {bi}"), "missing")),
            };
            kept_rows(&b, bi, path, Some(scene_id), &mut out)?;
        }
        Ok(out)
    }
}

/// Appends the kept rows of batch `bi` (of `scene`, when given) to `out`.
fn kept_rows(
    b: &RecordBatch,
    bi: usize,
    path: &Path,
    scene_only: Option<&str>,
    out: &mut Vec<KeptRow>,
) -> Result<()> {
    let s = |n: &str| column::<StringArray>(b, n, path);
    let f = |n: &str| column::<Float64Array>(b, n, path);
    let (scene, camera, cfid, track, ann) = (
        s("scene_id")?,
        s("camera")?,
        s("camera_frame_id")?,
        s("track_id")?,
        s("annotation_id")?,
    );
    let frame: &UInt32Array = column(b, "frame_idx", path)?;
    let visible: &UInt32Array = column(b, "visible_pixels", path)?;
    let kept: &BooleanArray = column(b, "kept", path)?;
    let amodal = [
        f("amodal_x0")?,
        f("amodal_y0")?,
        f("amodal_x1")?,
        f("amodal_y1")?,
    ];
    let modal = [
        f("modal_x0")?,
        f("modal_y0")?,
        f("modal_x1")?,
        f("modal_y1")?,
    ];
    let anchor = [f("anchor_x")?, f("anchor_y")?];
    let rule = s("anchor_rule")?;
    for i in 0..b.num_rows() {
        if !(kept.is_valid(i) && kept.value(i)) || scene_only.is_some_and(|x| x != scene.value(i)) {
            continue;
        }
        let get = |c: [&Float64Array; 4]| -> Option<[f64; 4]> {
            c.iter()
                .all(|a| a.is_valid(i))
                .then(|| c.map(|a| a.value(i)))
        };
        out.push(KeptRow {
            batch: bi,
            row: i,
            scene_id: scene.value(i).to_string(),
            frame_idx: frame.value(i),
            camera: camera.value(i).to_string(),
            camera_frame_id: cfid.value(i).to_string(),
            track_id: track.value(i).to_string(),
            annotation_id: ann.value(i).to_string(),
            amodal: get(amodal),
            modal: get(modal),
            visible_pixels: visible.value(i),
            anchor: anchor
                .iter()
                .all(|a| a.is_valid(i))
                .then(|| anchor.map(|a| a.value(i))),
            anchor_rule: rule.is_valid(i).then(|| rule.value(i).to_string()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visibility::output::{schema, to_batch, VisRow};

    /// Every kept row of the table, in table order: the whole-table read the per-scene one must
    /// agree with.
    fn read_kept(path: &Path) -> Result<Vec<KeptRow>> {
        let file = crate::store::input::open(path)?;
        let reader = FileReader::try_new(file, None)
            .map_err(|e| Error::input(path, "file", format!("not an Arrow IPC file: {e}")))?;
        let mut out = Vec::new();
        for (bi, batch) in reader.enumerate() {
            let b = batch.map_err(|e| Error::input(path, format!("batch {bi}"), e.to_string()))?;
            kept_rows(&b, bi, path, None, &mut out)?;
        }
        Ok(out)
    }

    /// A table whose scenes come back to back, interleaved within a batch and split over
    /// batches, as merged or hand-made tables may be: the per-scene reader must return exactly
    /// the whole-table read's rows of each scene, in table order.
    #[test]
    fn a_scene_at_a_time_reads_what_the_whole_table_holds() {
        let row = |scene: &str, n: u32, kept: bool| VisRow {
            scene_id: scene.into(),
            frame_idx: n,
            camera: "CAM_FRONT".into(),
            camera_frame_id: format!("{scene}/{n}"),
            track_id: format!("t{n}"),
            annotation_id: format!("{scene}-a{n}"),
            amodal: [1.0, 2.0, 3.0 + f64::from(n), 4.0],
            visible_pixels: n,
            kept,
            ..Default::default()
        };
        let batches = [
            vec![row("a", 0, true), row("a", 1, false), row("b", 2, true)],
            vec![row("c", 3, true), row("b", 4, true), row("a", 5, true)],
            vec![row("d", 6, false)],
            vec![row("b", 7, true)],
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("visibility.arrow");
        let file = std::fs::File::create(&path).unwrap();
        let mut w = arrow::ipc::writer::FileWriter::try_new(file, &schema()).unwrap();
        for b in &batches {
            w.write(&to_batch(b).unwrap()).unwrap();
        }
        w.finish().unwrap();

        let all = read_kept(&path).unwrap();
        let mut table = KeptScenes::open(&path, None).unwrap();
        // Asked out of table order, and one scene twice, to show the reader seeks.
        for scene in ["b", "a", "d", "c", "b", "nowhere"] {
            let want: Vec<KeptRow> = all
                .iter()
                .filter(|r| r.scene_id == scene)
                .cloned()
                .collect();
            assert_eq!(table.scene(scene).unwrap(), want, "scene {scene}");
        }
        let ids = |v: Vec<KeptRow>| v.into_iter().map(|r| r.frame_idx).collect::<Vec<_>>();
        assert_eq!(ids(table.scene("b").unwrap()), [2, 4, 7]);
        assert_eq!(ids(table.scene("a").unwrap()), [0, 5]);
        assert!(table.scene("d").unwrap().is_empty());
    }
}
