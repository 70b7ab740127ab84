//! The schema of `stsbench_qa.arrow`: the common QA record, then the scenario's own columns.

use std::sync::Arc;

use arrow::array::{ArrayRef, ListBuilder, RecordBatch, StringArray, StringBuilder, UInt32Builder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::mine::Instance;
use crate::qa::QaRecord;
use crate::store::schema::list_utf8;
use crate::tracks::Track;
use crate::Result;

/// The QA columns plus `category`, `role`, `scenario`, `actor_id`, `other_id` (null for
/// single-object scenarios), `window_frames` and `verified_negatives`.
pub fn schema() -> SchemaRef {
    let mut f = crate::qa::record::qa_fields();
    f.extend([
        Field::new("category", DataType::Utf8, false),
        Field::new("role", DataType::Utf8, false),
        Field::new("scenario", DataType::Utf8, false),
        Field::new("actor_id", DataType::Utf8, false),
        Field::new("other_id", DataType::Utf8, true),
        Field::new(
            "window_frames",
            DataType::List(Arc::new(Field::new("item", DataType::UInt32, false))),
            false,
        ),
        list_utf8("verified_negatives"),
    ]);
    Arc::new(Schema::new(f))
}

/// One scene's rows.
pub fn to_batch(rows: &[(QaRecord, &Instance)], tracks: &[Track]) -> Result<RecordBatch> {
    let qa: Vec<QaRecord> = rows.iter().map(|r| r.0.clone()).collect();
    let mut cols = crate::qa::record::columns(&qa);
    let strs = |f: &dyn Fn(&Instance) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| f(r.1))))
    };
    cols.push(strs(&|i| i.role.category().to_string()));
    cols.push(strs(&|i| i.role.name().to_string()));
    cols.push(strs(&|i| i.scenario.name().to_string()));
    cols.push(strs(&|i| tracks[i.actor].id.clone()));
    cols.push(Arc::new(StringArray::from_iter(
        rows.iter().map(|r| r.1.other.map(|o| tracks[o].id.clone())),
    )));
    let mut frames = ListBuilder::new(UInt32Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt32,
        false,
    )));
    let mut negs = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Utf8,
        false,
    )));
    for (_, i) in rows {
        for f in &i.frames {
            frames.values().append_value(*f);
        }
        frames.append(true);
        for n in &i.negatives {
            negs.values().append_value(n.name());
        }
        negs.append(true);
    }
    cols.push(Arc::new(frames.finish()));
    cols.push(Arc::new(negs.finish()));
    Ok(RecordBatch::try_new(schema(), cols)?)
}
