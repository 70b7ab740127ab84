//! A small row-wise table builder for the synthetic writers' Parquet files: columns declared
//! once with their Arrow type (all nullable, as pyarrow writes them), rows pushed as values.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Float64Array, Int32Array, Int64Array,
    Int8Array, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::store::atomic::AtomicFile;
use crate::{Error, Result};

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Utf8,
    Int8,
    Int32,
    Int64,
    F32,
    F64,
    /// `fixed_size_list<double>[16]`, a row-major 4×4.
    Mat16,
    Binary,
}

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    S(String),
    I(i64),
    F(f64),
    Null,
    M([f64; 16]),
    B(Vec<u8>),
}

fn data_type(k: Kind) -> DataType {
    match k {
        Kind::Utf8 => DataType::Utf8,
        Kind::Int8 => DataType::Int8,
        Kind::Int32 => DataType::Int32,
        Kind::Int64 => DataType::Int64,
        Kind::F32 => DataType::Float32,
        Kind::F64 => DataType::Float64,
        Kind::Mat16 => {
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float64, true)), 16)
        }
        Kind::Binary => DataType::Binary,
    }
}

/// The Arrow schema of `columns`.
pub(crate) fn schema(columns: &[(&str, Kind)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, k)| Field::new(*n, data_type(*k), true))
            .collect::<Vec<_>>(),
    ))
}

/// Rows of one table, to be turned into record batches.
#[derive(Debug, Clone)]
pub struct TableBuf {
    columns: Vec<(String, Kind)>,
    rows: Vec<Vec<Val>>,
}

impl TableBuf {
    pub fn new(columns: &[(&str, Kind)]) -> Self {
        Self {
            columns: columns.iter().map(|(n, k)| (n.to_string(), *k)).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<Val>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn schema(&self) -> SchemaRef {
        let cols: Vec<(&str, Kind)> = self.columns.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        schema(&cols)
    }

    /// The rows as one batch; the buffer is emptied.
    pub(crate) fn take_batch(&mut self) -> Result<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for (c, (name, kind)) in self.columns.iter().enumerate() {
            let vals = rows.iter().map(|r| &r[c]);
            let wrong = || Error::Schema {
                table: "synthetic parquet".into(),
                detail: format!("column {name}: a value of the wrong type"),
            };
            let f = |v: &Val| match v {
                Val::F(x) => Ok(Some(*x)),
                Val::I(x) => Ok(Some(*x as f64)),
                Val::Null => Ok(None),
                _ => Err(wrong()),
            };
            let i = |v: &Val| match v {
                Val::I(x) => Ok(Some(*x)),
                Val::Null => Ok(None),
                _ => Err(wrong()),
            };
            let a: ArrayRef = match kind {
                Kind::Utf8 => Arc::new(
                    vals.map(|v| match v {
                        Val::S(s) => Ok(Some(s.as_str())),
                        Val::Null => Ok(None),
                        _ => Err(wrong()),
                    })
                    .collect::<Result<StringArray>>()?,
                ),
                Kind::Int8 => Arc::new(
                    vals.map(|v| i(v).map(|x| x.map(|x| x as i8)))
                        .collect::<Result<Int8Array>>()?,
                ),
                Kind::Int32 => Arc::new(
                    vals.map(|v| i(v).map(|x| x.map(|x| x as i32)))
                        .collect::<Result<Int32Array>>()?,
                ),
                Kind::Int64 => Arc::new(vals.map(i).collect::<Result<Int64Array>>()?),
                Kind::F32 => Arc::new(
                    vals.map(|v| f(v).map(|x| x.map(|x| x as f32)))
                        .collect::<Result<Float32Array>>()?,
                ),
                Kind::F64 => Arc::new(vals.map(f).collect::<Result<Float64Array>>()?),
                Kind::Mat16 => {
                    let mut flat = Vec::with_capacity(rows.len() * 16);
                    for v in vals {
                        match v {
                            Val::M(m) => flat.extend_from_slice(m),
                            _ => return Err(wrong()),
                        }
                    }
                    Arc::new(FixedSizeListArray::try_new(
                        Arc::new(Field::new("item", DataType::Float64, true)),
                        16,
                        Arc::new(Float64Array::from(flat)),
                        None,
                    )?)
                }
                Kind::Binary => Arc::new(
                    vals.map(|v| match v {
                        Val::B(b) => Ok(Some(b.as_slice())),
                        Val::Null => Ok(None),
                        _ => Err(wrong()),
                    })
                    .collect::<Result<BinaryArray>>()?,
                ),
            };
            arrays.push(a);
        }
        Ok(RecordBatch::try_new(self.schema(), arrays)?)
    }
}

/// A Parquet file written atomically, uncompressed (as the Waymo test files are), with row
/// groups of at most `row_group_rows` rows so that neither writer nor reader holds more.
pub(crate) struct ParquetOut {
    writer: ArrowWriter<AtomicFile>,
}

impl ParquetOut {
    pub fn create(path: &Path, schema: SchemaRef, row_group_rows: usize) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .set_created_by("drivegen synth".into())
            .build();
        let file = AtomicFile::create(path)?;
        Ok(Self {
            writer: ArrowWriter::try_new(file, schema, Some(props))?,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer.write(batch)?;
        // Flush at every batch: the caller's batches are its memory bound.
        self.writer.flush()?;
        Ok(())
    }

    pub fn finish(self) -> Result<()> {
        let file = self.writer.into_inner()?;
        file.commit()
    }
}

/// Writes one table as a Parquet file in one go.
pub fn write_table(path: &Path, table: &mut TableBuf) -> Result<()> {
    let mut out = ParquetOut::create(path, table.schema(), 1 << 16)?;
    let batch = table.take_batch()?;
    out.write(&batch)?;
    out.finish()
}
