//! Reading the kept rows of a visibility table (`schemas/visibility/visibility.json`).

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, BooleanArray, Float64Array, StringArray, UInt32Array};
use arrow::ipc::reader::FileReader;
use arrow::record_batch::RecordBatch;

use super::graph::KeptMark;
use crate::{Error, Result};

/// A kept row: the image it belongs to and its mark geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptRow {
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub mark: KeptMark,
}

/// Kept rows by scene, in table order.
pub type KeptByScene = HashMap<String, Vec<KeptRow>>;

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

/// Reads every kept row of the visibility table at `path`.
pub fn read_kept(path: &Path) -> Result<KeptByScene> {
    let file = crate::store::input::open(path)?;
    let reader = FileReader::try_new(file, None)
        .map_err(|e| Error::input(path, "file", format!("not an Arrow IPC file: {e}")))?;
    let mut out = KeptByScene::new();
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
        let (ax, ay) = (f("anchor_x")?, f("anchor_y")?);
        for i in 0..b.num_rows() {
            if !(kept.is_valid(i) && kept.value(i)) {
                continue;
            }
            let get4 = |c: &[&Float64Array; 4]| -> Option<[f64; 4]> {
                c.iter()
                    .all(|a| a.is_valid(i))
                    .then(|| [0, 1, 2, 3].map(|k| c[k].value(i)))
            };
            let record = || format!("batch {bi} row {i} ({})", ann.value(i));
            let amodal_box = get4(&amodal)
                .filter(|b| b.iter().all(|v| v.is_finite()))
                .ok_or_else(|| {
                    Error::input(path, record(), "kept row without a finite amodal box")
                })?;
            let anchor = (ax.is_valid(i) && ay.is_valid(i))
                .then(|| [ax.value(i), ay.value(i)])
                .filter(|a| a.iter().all(|v| v.is_finite()));
            out.entry(scene.value(i).to_string())
                .or_default()
                .push(KeptRow {
                    frame_idx: frame.value(i),
                    camera: camera.value(i).to_string(),
                    camera_frame_id: cfid.value(i).to_string(),
                    mark: KeptMark {
                        track_id: track.value(i).to_string(),
                        annotation_id: ann.value(i).to_string(),
                        amodal: amodal_box,
                        modal: get4(&modal).filter(|b| b.iter().all(|v| v.is_finite())),
                        visible_pixels: visible.value(i),
                        anchor,
                    },
                });
        }
    }
    Ok(out)
}
