//! The tables `sig` writes: `sig_frames.arrow` and `sig_qa.arrow` (the common QA record plus
//! the relation asked about).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray, UInt32Array, UInt8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::frame::SigFrame;
use super::qa::SigQuestion;
use crate::Result;

/// One row of `sig_frames.arrow`.
#[derive(Debug, Clone)]
pub(crate) struct FrameRow {
    pub scene_id: String,
    pub frame_idx: u32,
    pub camera: String,
    pub camera_frame_id: String,
    pub source: String,
    pub sig: SigFrame,
}

pub fn frames_schema() -> SchemaRef {
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    let u = |n: &str| Field::new(n, DataType::UInt32, false);
    Arc::new(Schema::new(vec![
        s("scene_id"),
        u("frame_idx"),
        s("camera"),
        s("camera_frame_id"),
        s("source"),
        s("sig_json"),
        s("objects_json"),
        s("relations_json"),
        s("grid_json"),
        u("num_vehicles"),
        u("outside_grid"),
    ]))
}

pub(crate) fn frames_batch(rows: &[FrameRow], grid_json: &str) -> Result<RecordBatch> {
    let strs = |f: &dyn Fn(&FrameRow) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let cols: Vec<ArrayRef> = vec![
        strs(&|r| r.scene_id.clone()),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.frame_idx),
        )),
        strs(&|r| r.camera.clone()),
        strs(&|r| r.camera_frame_id.clone()),
        strs(&|r| r.source.clone()),
        strs(&|r| r.sig.sig_json().to_string()),
        strs(&|r| json(&r.sig.objects)),
        strs(&|r| json(&r.sig.relations)),
        strs(&|_| grid_json.to_string()),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.sig.objects.len() as u32),
        )),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.sig.outside),
        )),
    ];
    Ok(RecordBatch::try_new(frames_schema(), cols)?)
}

/// JSON text of plain structs and vectors (their serialisation cannot fail).
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

pub fn qa_schema() -> SchemaRef {
    let mut f = crate::qa::record::qa_fields();
    f.extend([
        Field::new("subject_key", DataType::Utf8, false),
        Field::new("object_key", DataType::Utf8, false),
        Field::new("relation", DataType::Utf8, false),
        Field::new("label_id", DataType::UInt8, false),
    ]);
    Arc::new(Schema::new(f))
}

pub(crate) fn qa_batch(qs: &[SigQuestion]) -> Result<RecordBatch> {
    let recs: Vec<crate::qa::QaRecord> = qs.iter().map(|q| q.record.clone()).collect();
    let mut cols = crate::qa::record::columns(&recs);
    cols.push(Arc::new(StringArray::from_iter_values(
        qs.iter().map(|q| q.subject.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        qs.iter().map(|q| q.object.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        qs.iter().map(|q| q.relation),
    )));
    cols.push(Arc::new(UInt8Array::from_iter_values(
        qs.iter().map(|q| q.label_id),
    )));
    Ok(RecordBatch::try_new(qa_schema(), cols)?)
}
