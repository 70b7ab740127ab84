//! The one reader of the visibility table (`schemas/visibility/visibility.json`, written by
//! [`super::output`]): its kept rows, typed, in table order. Set-of-Mark, SIG and MetaVQA all
//! read the table through it.

use std::path::Path;

use arrow::array::{Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array};
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

/// Every kept row of the visibility table at `path`, in table order. A reader that uses the
/// anchors passes the rules it draws under: a table whose anchors were placed under others is
/// refused, naming both rule sets.
pub fn read_kept(path: &Path, anchors: Option<&AnchorRules>) -> Result<Vec<KeptRow>> {
    let file = crate::store::input::open(path)?;
    let reader = FileReader::try_new(file, None)
        .map_err(|e| Error::input(path, "file", format!("not an Arrow IPC file: {e}")))?;
    if let Some(rules) = anchors {
        rules.check_table(path, &reader.schema())?;
    }
    let mut out = Vec::new();
    for (bi, batch) in reader.enumerate() {
        let b = batch.map_err(|e| Error::input(path, format!("batch {bi}"), e.to_string()))?;
        let s = |n: &str| column::<StringArray>(&b, n, path);
        let f = |n: &str| column::<Float64Array>(&b, n, path);
        let (scene, camera, cfid, track, ann) = (
            s("scene_id")?,
            s("camera")?,
            s("camera_frame_id")?,
            s("track_id")?,
            s("annotation_id")?,
        );
        let frame: &UInt32Array = column(&b, "frame_idx", path)?;
        let visible: &UInt32Array = column(&b, "visible_pixels", path)?;
        let kept: &BooleanArray = column(&b, "kept", path)?;
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
            if !(kept.is_valid(i) && kept.value(i)) {
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
    }
    Ok(out)
}
