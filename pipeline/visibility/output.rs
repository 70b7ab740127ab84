//! The table `visibility` writes (one row per camera image and object in its frustum), and
//! the optional 16-bit instance-ID PNGs.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Float64Builder, ListBuilder, RecordBatch, StringArray,
    UInt32Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::anchor::{AnchorRule, AnchorRules, RULES_KEY};
use super::filters::RejectReason;
use super::raster::{RasterOut, EMPTY};
use crate::{Error, Result};

/// One output row.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct VisRow {
    pub scene_id: String,
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub track_id: String,
    pub annotation_id: String,
    /// `Box.corners()` order; `None` behind the near plane.
    pub corners_px: [Option<[f64; 2]>; 8],
    /// `[x0, y0, x1, y1]`, pixels, not clipped to the image.
    pub amodal: [f64; 4],
    pub truncation: f64,
    pub projected_pixels: u32,
    pub visible_pixels: u32,
    pub visible_fraction: f64,
    /// `[x0, y0, x1, y1]`, pixel edges; `None` without visible pixels.
    pub modal: Option<[f64; 4]>,
    pub depth_m: f64,
    pub distance_m: f64,
    /// The Set-of-Mark label anchor, pixel-centre coordinates (see [`super`]).
    pub anchor: Option<[f64; 2]>,
    /// The rule that placed [`Self::anchor`].
    pub anchor_rule: Option<AnchorRule>,
    pub kept: bool,
    pub reject_reason: Option<RejectReason>,
}

const COORDS: [&str; 4] = ["x0", "y0", "x1", "y1"];

/// The schema of the visibility table.
pub(crate) fn schema() -> SchemaRef {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    let mut v = vec![
        f("scene_id", DataType::Utf8, false),
        f("frame_idx", DataType::UInt32, false),
        f("camera", DataType::Utf8, false),
        f("camera_frame_id", DataType::Utf8, false),
        f("track_id", DataType::Utf8, false),
        f("annotation_id", DataType::Utf8, false),
        f(
            "corners_px",
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            false,
        ),
    ];
    v.extend(COORDS.map(|c| f(&format!("amodal_{c}"), DataType::Float64, false)));
    v.extend([
        f("truncation", DataType::Float64, false),
        f("projected_pixels", DataType::UInt32, false),
        f("visible_pixels", DataType::UInt32, false),
        f("visible_fraction", DataType::Float64, false),
    ]);
    v.extend(COORDS.map(|c| f(&format!("modal_{c}"), DataType::Float64, true)));
    v.extend([
        f("depth_m", DataType::Float64, false),
        f("distance_m", DataType::Float64, false),
        f("anchor_x", DataType::Float64, true),
        f("anchor_y", DataType::Float64, true),
        f("anchor_rule", DataType::Utf8, true),
        f("kept", DataType::Boolean, false),
        f("reject_reason", DataType::Utf8, true),
    ]);
    Arc::new(Schema::new(v))
}

/// The schema of a table whose anchors were placed under `rules` (recorded in its metadata).
pub(crate) fn schema_with_rules(rules: &AnchorRules) -> SchemaRef {
    let s = schema();
    let meta: std::collections::HashMap<String, String> =
        [(RULES_KEY.to_string(), rules.to_json())].into();
    Arc::new(Schema::new_with_metadata(s.fields().clone(), meta))
}

/// The record batch of `rows`.
pub fn to_batch(rows: &[VisRow]) -> Result<RecordBatch> {
    let strs = |g: fn(&VisRow) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(g)))
    };
    let f64s = |g: &dyn Fn(&VisRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(g)))
    };
    let opt = |g: &dyn Fn(&VisRow) -> Option<f64>| -> ArrayRef {
        Arc::new(Float64Array::from_iter(rows.iter().map(g)))
    };
    let u32s = |g: fn(&VisRow) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(g)))
    };
    let mut corners = ListBuilder::with_capacity(Float64Builder::new(), rows.len())
        .with_field(Arc::new(Field::new("item", DataType::Float64, true)));
    for r in rows {
        for c in &r.corners_px {
            match c {
                Some([u, v]) => {
                    corners.values().append_value(*u);
                    corners.values().append_value(*v);
                }
                None => {
                    corners.values().append_null();
                    corners.values().append_null();
                }
            }
        }
        corners.append(true);
    }
    let mut cols: Vec<ArrayRef> = vec![
        strs(|r| &r.scene_id),
        u32s(|r| r.frame_idx),
        strs(|r| &r.camera),
        strs(|r| &r.camera_frame_id),
        strs(|r| &r.track_id),
        strs(|r| &r.annotation_id),
        Arc::new(corners.finish()),
    ];
    for k in 0..4 {
        cols.push(f64s(&|r| r.amodal[k]));
    }
    cols.push(f64s(&|r| r.truncation));
    cols.push(u32s(|r| r.projected_pixels));
    cols.push(u32s(|r| r.visible_pixels));
    cols.push(f64s(&|r| r.visible_fraction));
    for k in 0..4 {
        cols.push(opt(&|r| r.modal.map(|m| m[k])));
    }
    cols.push(f64s(&|r| r.depth_m));
    cols.push(f64s(&|r| r.distance_m));
    cols.push(opt(&|r| r.anchor.map(|a| a[0])));
    cols.push(opt(&|r| r.anchor.map(|a| a[1])));
    cols.push(Arc::new(StringArray::from_iter(
        rows.iter().map(|r| r.anchor_rule.map(AnchorRule::as_str)),
    )));
    cols.push(Arc::new(BooleanArray::from_iter(
        rows.iter().map(|r| Some(r.kept)),
    )));
    cols.push(Arc::new(StringArray::from_iter(
        rows.iter()
            .map(|r| r.reject_reason.map(RejectReason::as_str)),
    )));
    Ok(RecordBatch::try_new(schema(), cols)?)
}

pub(crate) use crate::store::paths::safe_name;

/// Writes an instance-ID map as a 16-bit grayscale PNG: 0 where nothing is drawn, else the
/// object index + 1 (the object's position among the image's rows, which are sorted by
/// `annotation_id`), saturating at 65535.
pub(crate) fn write_id_png(path: &Path, r: &RasterOut) -> Result<()> {
    let px: Vec<u16> = r
        .ids
        .iter()
        .map(|&id| {
            if id == EMPTY {
                0
            } else {
                id.saturating_add(1).min(65535) as u16
            }
        })
        .collect();
    let img = image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::from_raw(r.width, r.height, px)
        .ok_or_else(|| {
            Error::Internal(format!("{}: the ID map has the wrong size", path.display()))
        })?;
    crate::store::atomic::write_png(path, img)
}
