//! The tables `egomotion` writes: `clips.arrow` (one row per clip) and `egodyn_qa.arrow` (one
//! common QA record per clip and question).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, Float64Builder, Int64Array, ListBuilder, RecordBatch, StringArray,
    StructArray, UInt32Array,
};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};

use super::config::EgodynConfig;
use super::kinematics::Features;
use super::oracle::Oracle;
use super::prompt::{frame_sentence, question_prompt, select_indices, TrajectoryText};
use super::ClipResult;
use crate::qa::record::{qa_id, set_answer, QaRecord};
use crate::Result;

/// The family name of EgoDyn questions.
pub(crate) const FAMILY: &str = crate::qa::Family::Egodyn.name();

/// The per-sample channels of `clips.arrow`, in column order.
pub const CHANNELS: [&str; 9] = [
    "t",
    "x",
    "y",
    "yaw",
    "speed",
    "accel",
    "jerk",
    "yaw_rate",
    "lat_accel",
];

/// The encodings in the `trajectory_text` struct, in field order.
pub(crate) const ENCODINGS: [&str; 4] = ["summary", "timeseries", "coordinates", "full"];

fn list_f64_field(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("item", DataType::Float64, false))),
        false,
    )
}

fn trajectory_fields() -> Fields {
    Fields::from(
        ENCODINGS
            .iter()
            .map(|n| Field::new(*n, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    )
}

/// The schema of `clips.arrow`.
pub fn clips_schema() -> SchemaRef {
    let mut f = vec![
        Field::new("clip_id", DataType::Utf8, false),
        Field::new("scene_id", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("anchor_timestamp_us", DataType::Int64, false),
        Field::new("anchor_frame_idx", DataType::UInt32, true),
        Field::new("num_source_poses", DataType::UInt32, false),
    ];
    f.extend(CHANNELS.iter().map(|c| list_f64_field(c)));
    f.extend(
        Features::NAMES
            .iter()
            .map(|n| Field::new(*n, DataType::Float64, false)),
    );
    f.push(Field::new(
        "trajectory_text",
        DataType::Struct(trajectory_fields()),
        false,
    ));
    Arc::new(Schema::new(f))
}

/// The `clips.arrow` rows of `clips`, with their trajectory encodings.
pub(crate) fn clips_batch(clips: &[ClipResult], texts: &[TrajectoryText]) -> Result<RecordBatch> {
    let strs = |f: &dyn Fn(&ClipResult) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(clips.iter().map(f)))
    };
    let mut cols: Vec<ArrayRef> = vec![
        strs(&|c| &c.raw.clip_id),
        strs(&|c| &c.raw.scene_id),
        strs(&|c| &c.raw.source),
        Arc::new(Int64Array::from_iter_values(
            clips.iter().map(|c| c.raw.anchor_timestamp_us),
        )),
        Arc::new(UInt32Array::from_iter(
            clips.iter().map(|c| c.raw.anchor_frame_idx),
        )),
        Arc::new(UInt32Array::from_iter_values(
            clips
                .iter()
                .map(|c| c.raw.samples.len().min(u32::MAX as usize) as u32),
        )),
    ];
    for ch in CHANNELS {
        let mut b = ListBuilder::new(Float64Builder::new()).with_field(Arc::new(Field::new(
            "item",
            DataType::Float64,
            false,
        )));
        for c in clips {
            let k = &c.kin;
            let v: &[f64] = match ch {
                "t" => &k.t,
                "x" => &k.x,
                "y" => &k.y,
                "yaw" => &k.yaw,
                "speed" => &k.speed,
                "accel" => &k.accel,
                "jerk" => &k.jerk,
                "yaw_rate" => &k.yaw_rate,
                _ => &k.lat_accel,
            };
            b.values().append_slice(v);
            b.append(true);
        }
        cols.push(Arc::new(b.finish()));
    }
    for (i, _) in Features::NAMES.iter().enumerate() {
        cols.push(Arc::new(Float64Array::from_iter_values(
            clips.iter().map(|c| c.features.values()[i]),
        )));
    }
    let text_cols: Vec<ArrayRef> = (0..ENCODINGS.len())
        .map(|e| {
            Arc::new(StringArray::from_iter_values(texts.iter().map(
                |t| match e {
                    0 => t.summary.as_str(),
                    1 => t.timeseries.as_str(),
                    2 => t.coordinates.as_str(),
                    _ => t.full.as_str(),
                },
            ))) as ArrayRef
        })
        .collect();
    cols.push(Arc::new(StructArray::try_new(
        trajectory_fields(),
        text_cols,
        None,
    )?));
    Ok(RecordBatch::try_new(clips_schema(), cols)?)
}

/// The QA records of one clip: one per question, in config order.
pub(crate) fn qa_records(
    c: &ClipResult,
    oracle: &Oracle,
    cfg: &EgodynConfig,
    config_hash: &str,
) -> Result<Vec<QaRecord>> {
    let shown = select_indices(c.raw.images.len(), cfg.prompt.frames);
    let images: Vec<_> = shown.iter().filter_map(|&i| c.raw.images.get(i)).collect();
    let frame_line = frame_sentence(images.len(), cfg.clips.duration_s);
    let answers = oracle.answers(&c.kin, &c.features);
    let mut out = Vec::with_capacity(oracle.questions.len());
    for (q, a) in oracle.questions.iter().zip(answers) {
        let id = qa_id(
            FAMILY,
            &q.id,
            &[&c.raw.source, &c.raw.scene_id, &c.raw.clip_id],
            None,
            cfg.qa.seed,
        );
        let mut params = q.params.clone();
        if let Some(o) = params.as_object_mut() {
            o.insert("config_hash".into(), serde_json::json!(config_hash));
        }
        let mut evidence = a.evidence;
        if let Some(o) = evidence.as_object_mut() {
            o.insert("label".into(), serde_json::json!(q.label(a.class)));
        }
        let mut r = QaRecord {
            qa_id: id,
            family: FAMILY.into(),
            question_type: q.id.clone(),
            source: c.raw.source.clone(),
            scene_id: c.raw.scene_id.clone(),
            frame_idx: None,
            clip_id: Some(c.raw.clip_id.clone()),
            cameras: images.iter().map(|i| i.camera.clone()).collect(),
            camera_frame_ids: images.iter().map(|i| i.camera_frame_id.clone()).collect(),
            objects: Vec::new(),
            marks: "{}".into(),
            corruption: None,
            severity: None,
            rule: q.rule.type_name().into(),
            params: params.to_string(),
            evidence: evidence.to_string(),
            seed: cfg.qa.seed,
            ..Default::default()
        };
        set_answer(&mut r, &q.choices, a.class, cfg.qa.shuffle_choices)?;
        r.prompt = question_prompt(
            frame_line.as_deref(),
            &q.text,
            &q.definitions,
            &cfg.prompt.answer_instruction,
        );
        out.push(r);
    }
    Ok(out)
}
