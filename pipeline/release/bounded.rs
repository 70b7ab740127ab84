//! Reading a release's shards with what they decode to bounded before the memory is taken.
//!
//! A shard's size says little about what it decodes to: a dictionary page holding one 48 MiB
//! string, referenced by every row, is a few KiB on disk and gigabytes once each row gets its
//! own copy. Strings and binaries are therefore read as view arrays, which point into the
//! decoded pages instead of copying them; each value's length, each row's total and each
//! batch's total are checked against the limits (`configs/limits.toml`), and only then are the
//! columns copied out into the ordinary arrays the readers use. A row group whose pages alone
//! exceed the batch limit (its footer says so) is refused before any page is read.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::record_batch::RecordBatchReader;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::store::input::{Limit, RELEASE_BATCH, RELEASE_ROW, RELEASE_STRING};
use crate::{Error, Result};

/// `t` with every string and binary type, at any depth, read as its view type.
fn as_view(t: &DataType) -> DataType {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
        DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
        DataType::List(f) => DataType::List(Arc::new(view_field(f))),
        DataType::LargeList(f) => DataType::LargeList(Arc::new(view_field(f))),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(|f| view_field(f)).collect()),
        other => other.clone(),
    }
}

/// `t` with every view type back to the ordinary one (a release holds no large types).
fn as_plain(t: &DataType) -> DataType {
    match t {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(f) => DataType::List(Arc::new(plain_field(f))),
        DataType::LargeList(f) => DataType::LargeList(Arc::new(plain_field(f))),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(|f| plain_field(f)).collect()),
        other => other.clone(),
    }
}

fn plain_field(f: &Field) -> Field {
    f.clone().with_data_type(as_plain(f.data_type()))
}

fn view_field(f: &Field) -> Field {
    f.clone().with_data_type(as_view(f.data_type()))
}

/// The decoded bytes of each of `a`'s `a.len()` values: a view's length, a fixed width, a
/// list's or struct's children summed.
fn value_bytes(a: &dyn Array) -> Vec<u64> {
    let n = a.len();
    match a.data_type() {
        DataType::Utf8View => {
            let v = a.as_string_view();
            (0..n).map(|i| v.views()[i] as u32 as u64).collect()
        }
        DataType::BinaryView => {
            let v = a.as_binary_view();
            (0..n).map(|i| v.views()[i] as u32 as u64).collect()
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let inner = value_bytes(l.values().as_ref());
            let offs = l.value_offsets();
            (0..n)
                .map(|i| {
                    let (s, e) = (offs[i].max(0) as usize, offs[i + 1].max(0) as usize);
                    inner.get(s..e).map_or(0, |v| v.iter().sum::<u64>()) + 4
                })
                .collect()
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let mut out = vec![0u64; n];
            for c in s.columns() {
                for (o, b) in out.iter_mut().zip(value_bytes(c.as_ref())) {
                    *o += b;
                }
            }
            out
        }
        t => vec![t.primitive_width().unwrap_or(8) as u64; n],
    }
}

/// The longest string or binary value anywhere in `a`, with whether it is a string.
fn longest(a: &dyn Array) -> (u64, bool) {
    match a.data_type() {
        DataType::Utf8View => (
            a.as_string_view()
                .views()
                .iter()
                .map(|v| *v as u32 as u64)
                .max()
                .unwrap_or(0),
            true,
        ),
        DataType::List(_) => longest(a.as_list::<i32>().values().as_ref()),
        DataType::Struct(_) => a
            .as_struct()
            .columns()
            .iter()
            .map(|c| longest(c.as_ref()))
            .max()
            .unwrap_or((0, false)),
        _ => (0, false),
    }
}

fn over(f: &Path, record: String, limit: Limit, had: u64) -> Error {
    limit.exceeded(f, &record, had)
}

/// Batches of shard `f` in its own types, each checked against the limits before its strings
/// are copied out.
pub(crate) struct Bounded {
    file: std::path::PathBuf,
    inner: ParquetRecordBatchReader,
    /// The projected schema in ordinary types (strings, not views).
    schema: SchemaRef,
    /// Rows read before the current batch, to name a row by its index in the shard.
    rows: usize,
}

/// Opens shard `f` for bounded reading: `project` picks the columns from the Parquet schema,
/// `batch_rows` rows per batch.
pub(crate) fn open(
    f: &Path,
    project: impl FnOnce(&parquet::schema::types::SchemaDescriptor) -> ProjectionMask,
    batch_rows: usize,
) -> Result<Bounded> {
    let perr = |e: &dyn std::fmt::Display| super::read::parquet_error(f, e);
    let file = crate::store::input::open(f)?;
    let plain = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| perr(&e))?;
    let declared = plain.schema().clone();
    let mask = project(plain.parquet_schema());
    let batch_limit = RELEASE_BATCH.bytes();
    for (g, rg) in plain.metadata().row_groups().iter().enumerate() {
        let pages: i64 = rg
            .columns()
            .iter()
            .enumerate()
            .filter(|(i, _)| mask.leaf_included(*i))
            .map(|(_, c)| c.uncompressed_size().max(0))
            .sum();
        if pages as u64 > batch_limit {
            return Err(over(
                f,
                format!("row group {g}"),
                RELEASE_BATCH,
                pages as u64,
            ));
        }
    }
    let views = Schema::new_with_metadata(
        declared
            .fields()
            .iter()
            .map(|fl| view_field(fl))
            .collect::<Fields>(),
        declared.metadata().clone(),
    );
    // The footer read once serves both: the shard's own types above, the views below.
    let opts = ArrowReaderOptions::new().with_schema(Arc::new(views));
    let meta =
        ArrowReaderMetadata::try_new(plain.metadata().clone(), opts).map_err(|e| perr(&e))?;
    let file = crate::store::input::open(f)?;
    let inner = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_projection(mask)
        .with_batch_size(batch_rows.max(1))
        .build()
        .map_err(|e| perr(&e))?;
    // The projected columns in ordinary types (a projection may keep part of a struct).
    let schema = Arc::new(Schema::new(
        inner
            .schema()
            .fields()
            .iter()
            .map(|v| plain_field(v))
            .collect::<Fields>(),
    ));
    Ok(Bounded {
        file: f.to_path_buf(),
        inner,
        schema,
        rows: 0,
    })
}

impl Bounded {
    fn check(&self, batch: &RecordBatch) -> Result<()> {
        let f = &self.file;
        let n = batch.num_rows();
        let mut per_row = vec![0u64; n];
        for (col, field) in batch.columns().iter().zip(batch.schema().fields()) {
            let (long, text) = longest(col.as_ref());
            if text && long > RELEASE_STRING.bytes() {
                return Err(over(
                    f,
                    format!("column {} near row {}", field.name(), self.rows),
                    RELEASE_STRING,
                    long,
                ));
            }
            for (r, b) in per_row.iter_mut().zip(value_bytes(col.as_ref())) {
                *r += b;
            }
        }
        if let Some((i, &b)) = per_row
            .iter()
            .enumerate()
            .find(|(_, &b)| b > RELEASE_ROW.bytes())
        {
            return Err(over(f, format!("row {}", self.rows + i), RELEASE_ROW, b));
        }
        let total: u64 = per_row.iter().sum();
        if total > RELEASE_BATCH.bytes() {
            return Err(over(
                f,
                format!("rows {}..{}", self.rows, self.rows + n),
                RELEASE_BATCH,
                total,
            ));
        }
        Ok(())
    }

    /// `batch` in the shard's declared types (its views copied out).
    fn plain(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(c, fl)| arrow::compute::cast(c, fl.data_type()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| super::read::parquet_error(&self.file, &e))?;
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| super::read::parquet_error(&self.file, &e))
    }
}

impl Iterator for Bounded {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = match self.inner.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(super::read::parquet_error(&self.file, &e))),
        };
        let out = self.check(&batch).and_then(|()| self.plain(batch));
        if let Ok(b) = &out {
            self.rows += b.num_rows();
        }
        Some(out)
    }
}
