//! The tables `drivegen corrupt` writes: `corruptions.arrow` (one row per output image) and
//! the corruption-recognition questions in `corruption_qa.arrow`.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array, UInt8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::Result;

/// One row of `corruptions.arrow`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CorruptionRow {
    /// The source image's scene (empty for an image folder).
    pub scene_id: String,
    /// The source image's id (nuScenes sample_data token, or the path under `--images`).
    pub image_id: String,
    pub camera: String,
    /// The frame the view belongs to (`scene_id/frame_idx`, or the image id).
    pub frame_id: String,
    pub corruption: String,
    pub severity: u8,
    pub seed: u64,
    /// Whether the pixels changed (view-selective corruptions leave some views alone).
    pub applied: bool,
    /// JSON: the parameters and random draws.
    pub params: String,
    /// The source image, as read.
    pub source_path: String,
    /// The written image, relative to the output folder.
    pub output_path: String,
}

/// The schema of `corruptions.arrow`.
pub(crate) fn schema() -> SchemaRef {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Arc::new(Schema::new(vec![
        f("scene_id", DataType::Utf8),
        f("image_id", DataType::Utf8),
        f("camera", DataType::Utf8),
        f("frame_id", DataType::Utf8),
        f("corruption", DataType::Utf8),
        f("severity", DataType::UInt8),
        f("seed", DataType::UInt64),
        f("applied", DataType::Boolean),
        f("params", DataType::Utf8),
        f("source_path", DataType::Utf8),
        f("output_path", DataType::Utf8),
    ]))
}

/// A record batch of [`schema`].
pub fn to_batch(rows: &[CorruptionRow]) -> Result<RecordBatch> {
    let s = |g: &dyn Fn(&CorruptionRow) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(g)))
    };
    Ok(RecordBatch::try_new(
        schema(),
        vec![
            s(&|r| &r.scene_id),
            s(&|r| &r.image_id),
            s(&|r| &r.camera),
            s(&|r| &r.frame_id),
            s(&|r| &r.corruption),
            Arc::new(UInt8Array::from_iter_values(
                rows.iter().map(|r| r.severity),
            )),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.seed))),
            Arc::new(BooleanArray::from(
                rows.iter().map(|r| r.applied).collect::<Vec<_>>(),
            )),
            s(&|r| &r.params),
            s(&|r| &r.source_path),
            s(&|r| &r.output_path),
        ],
    )?)
}
