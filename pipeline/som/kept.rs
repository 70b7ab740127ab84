//! What the Set-of-Mark stage reads of a visibility table: each kept object's box, visible
//! pixels and anchor, grouped by scene and image in table order.

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, BooleanArray, Float64Array, StringArray, UInt32Array};
use arrow::ipc::reader::FileReader;
use arrow::record_batch::RecordBatch;

use crate::visibility::anchor::AnchorRule;
use crate::{Error, Result};

/// One kept row of the table.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Kept {
    pub track_id: String,
    pub annotation_id: String,
    /// `[x0, y0, x1, y1]`, pixels, not clipped.
    pub amodal: [f64; 4],
    /// Pixel edges; `None` without visible pixels.
    pub modal: Option<[u32; 4]>,
    pub visible_pixels: u32,
    /// The anchor pixel and the rule that placed it; `None` without visible pixels.
    pub anchor: Option<([u32; 2], AnchorRule)>,
}

/// A camera image's kept rows.
pub(super) struct Image {
    pub camera_frame_id: String,
    pub rows: Vec<Kept>,
}

/// Kept rows by scene, images in table order (frame, camera, image id), rows in table order.
pub(super) type ByScene = HashMap<String, Vec<Image>>;

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

/// Reads the kept rows of the visibility table at `path`. A value the stage cannot use (a
/// non-finite box, an anchor off the pixel grid, an unknown rule) is refused with its row.
pub(super) fn read(path: &Path) -> Result<ByScene> {
    let file = crate::store::input::open(path)?;
    let reader = FileReader::try_new(file, None)
        .map_err(|e| Error::input(path, "file", format!("not an Arrow IPC file: {e}")))?;
    let mut out = ByScene::new();
    for (bi, batch) in reader.enumerate() {
        let b = batch.map_err(|e| Error::input(path, format!("batch {bi}"), e.to_string()))?;
        let s = |n: &str| column::<StringArray>(&b, n, path);
        let f = |n: &str| column::<Float64Array>(&b, n, path);
        let (scene, cfid, track, ann, rule) = (
            s("scene_id")?,
            s("camera_frame_id")?,
            s("track_id")?,
            s("annotation_id")?,
            s("anchor_rule")?,
        );
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
            let bad = |what: &str| {
                Error::input(
                    path,
                    format!("batch {bi} row {i} ({})", ann.value(i)),
                    what.to_string(),
                )
            };
            let valid4 = |c: &[&Float64Array; 4]| c.iter().all(|a| a.is_valid(i));
            if !valid4(&amodal) {
                return Err(bad("kept row without an amodal box"));
            }
            let amodal_box = [0, 1, 2, 3].map(|k| amodal[k].value(i));
            if amodal_box.iter().any(|v| !v.is_finite()) {
                return Err(bad("kept row with a non-finite amodal box"));
            }
            let pixel = |v: f64| v >= 0.0 && v <= f64::from(u32::MAX) && v.fract() == 0.0;
            let modal_box = if valid4(&modal) {
                let m = [0, 1, 2, 3].map(|k| modal[k].value(i));
                if !m.iter().all(|&v| pixel(v)) {
                    return Err(bad("modal box off the pixel grid"));
                }
                Some(m.map(|v| v as u32))
            } else {
                None
            };
            let anchor = if ax.is_valid(i) && ay.is_valid(i) {
                // Anchors are pixel centres, `i + 0.5`.
                let [x, y] = [ax.value(i) - 0.5, ay.value(i) - 0.5];
                let r = (rule.is_valid(i))
                    .then(|| AnchorRule::parse(rule.value(i)))
                    .flatten()
                    .ok_or_else(|| bad("anchor without a known anchor_rule"))?;
                if !(pixel(x) && pixel(y)) {
                    return Err(bad("anchor off the pixel centres"));
                }
                Some(([x as u32, y as u32], r))
            } else {
                None
            };
            let row = Kept {
                track_id: track.value(i).to_string(),
                annotation_id: ann.value(i).to_string(),
                amodal: amodal_box,
                modal: modal_box,
                visible_pixels: visible.value(i),
                anchor,
            };
            let images = out.entry(scene.value(i).to_string()).or_default();
            match images.last_mut() {
                Some(img) if img.camera_frame_id == cfid.value(i) => img.rows.push(row),
                _ => images.push(Image {
                    camera_frame_id: cfid.value(i).to_string(),
                    rows: vec![row],
                }),
            }
        }
    }
    Ok(out)
}
